"""The public acceptance cases of ``shared/acceptance/horde-ad-cases.md``, through the public API.

Each case (T1 … T22) is one or more tests named after it.  Programs are written in
dualarr's language (``da.build1``, ``x[i]``, ``da.gather``, ``da.scatter``, ``da.where``,
``da.let``, ``da.concatenate`` …) as close to the horde-ad originals
(``test/simplified/*.hs``) as the language allows.  Conventions, as in the acceptance
file: ``rev' f x`` is the gradient of ``sum(f(x))``; ``relu x = (x <= 0 ? 0 : 1) * x``;
``max 0`` is ``da.maximum(0.0, x)`` (a tie sends the gradient to the first argument);
out-of-range reads give 0 (negative indices too), out-of-range scatter writes are
dropped, ``quot a 0 = a`` (dualarr's ``//``; every divisor here is non-negative, so it
agrees with Haskell's ``quot``).  Tolerances: an ``eps`` stated in the acceptance file is
horde-ad's absolute error bound (``abs(a - b) <= eps``); otherwise rtol 1e-10 for float64
and rtol 1e-6 for float32.  Forward values are checked as well (``da.trace(f, *args)``),
against the acceptance file where it states one and against NumPy otherwise.

What dualarr cannot express, and how it is covered instead:

* T7 ``overleaf`` Int64/CInt/Int16/Int8 variants (``rev' @Int64 overleaf`` …, expected
  ``[2]*22 + [1]*6``) and ``testOverleafInt64n``/``CIntn`` (``grad`` of an int-valued
  program, expected zeros): horde-ad differentiates integer-typed programs; dualarr
  differentiates float inputs only (every integer dtype is ``int64`` in the core language
  and an integer argument to ``da.grad`` is a ``da.DualarrError``).  Ported as: the
  integer-typed program traces and gives the right value for each integer dtype, and
  ``da.grad`` rejects the integer argument.  The ``…ToFloatp`` variants
  (``rfromIntegral . overleaf @Int . rfloor`` on Float, expected zeros) are expressible
  and ported with ``da.floor``/``da.to_float``; ``testOverleafCIntToFloatn`` has an
  integer *output* given to ``grad`` and is not ported.
* T14 ``cb14`` at ``Int`` (``rev' @Int concatBuild14``): same reason; ported as the
  integer forward value plus the ``DualarrError``.  ``cb15`` is ``cb14`` at ``Double``.
* T17: the intended ``filter (>= 0)`` has a data-dependent shape (in horde-ad too);
  the ported program is horde-ad's actual one, ``take 12`` of the unravelled vector.
* T21 states only a forward value (float32); it is ported as that, plus one derived
  gradient check (the outputs are a softmax, so the gradient of their sum is 0).
* T22: horde-ad's ``testZero6S`` (rank ~100) exceeds NumPy's 64 dimensions; the other
  zero/empty cases are ported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import dualarr as da

RTOL64 = 1e-10
RTOL32 = 1e-6

F = Callable[..., da.Tensor]


# ======================================================================================
# Helpers
# ======================================================================================


def assert_close(
    actual: Any,
    expected: npt.ArrayLike,
    *,
    dtype: npt.DTypeLike = np.float64,
    rtol: float | None = None,
    eps: float | None = None,
) -> None:
    """``actual`` has ``expected``'s shape and ``dtype`` and matches it.

    ``eps`` is horde-ad's absolute bound; without it the relative tolerance is rtol
    (1e-10 for float64, 1e-6 for float32).  Expected zeros must then be exact zeros.
    """
    want = np.asarray(expected, dtype=dtype)
    got = np.asarray(actual)
    assert got.shape == want.shape, f"shape {got.shape} != expected {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != expected {want.dtype}"
    if eps is not None:
        np.testing.assert_allclose(got, want, rtol=0.0, atol=eps)
    else:
        default = RTOL32 if want.dtype == np.float32 else RTOL64
        np.testing.assert_allclose(got, want, rtol=default if rtol is None else rtol, atol=0.0)


def value(f: F, *args: Any) -> Any:
    """The forward value of ``f`` by tracing and the reference evaluator."""
    return da.trace(f, *args)(*args)


def rev_prime(f: F, *args: Any, argnums: int | tuple[int, ...] = 0) -> Any:
    """horde-ad's ``rev' f x``: the gradient of ``sum(f(x))`` (cotangent all ones)."""

    def summed(*xs: da.Tensor) -> da.Tensor:
        return da.sum(f(*xs))

    return da.grad(summed, argnums=argnums)(*args)


def f64(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return np.asarray(x, dtype=np.float64)


def foldr1(f: Callable[[da.Tensor, da.Tensor], da.Tensor], xs: Sequence[da.Tensor]) -> da.Tensor:
    """Haskell's ``foldr1``: ``f x0 (f x1 (… (f x_{n-2} x_{n-1})))``."""
    acc = xs[-1]
    for x in reversed(xs[:-1]):
        acc = f(x, acc)
    return acc


# ======================================================================================
# T1 foo
# ======================================================================================

FOO_GRAD = (2.4396285219055063, -1.953374825727421, 0.9654825811012627)
FOO_GRAD_F32 = (2.4396284, -1.9533751, 0.96548253)
FOO_VALUE = 4.242393641025528


def foo(x: da.Tensor, y: da.Tensor, z: da.Tensor) -> da.Tensor:
    w = x * da.sin(y)
    return da.atan2(z, w) + z * w  # w is used twice: shared, not duplicated


def foo_let(x: da.Tensor, y: da.Tensor, z: da.Tensor) -> da.Tensor:
    return da.let(x * da.sin(y), lambda w: da.atan2(z, w) + z * w)


def np_foo(x: Any, y: Any, z: Any) -> Any:
    w = x * np.sin(y)
    return np.arctan2(z, w) + z * w


FOOS = pytest.mark.parametrize("fn", [foo, foo_let], ids=["foo", "fooLet"])


def foo_args(shape: tuple[int, ...], dtype: npt.DTypeLike = np.float64) -> tuple[Any, ...]:
    return tuple(np.full(shape, c, dtype=dtype) for c in (1.1, 2.2, 3.3))


@FOOS
@pytest.mark.parametrize("shape", [(), (2, 2), (3, 534, 3)])
def test_t1_foo_value(fn: F, shape: tuple[int, ...]) -> None:
    """T1: foo value per element 4.242393641025528 (testFooMatrix)."""
    assert_close(value(fn, *foo_args(shape)), np.full(shape, FOO_VALUE))


@FOOS
def test_t1_foo_sum_value_on_matrices(fn: F) -> None:
    """T1: elementwise on 2x2 matrices of 1.1/2.2/3.3: sum = 16.96957456410211."""
    summed = value(lambda x, y, z: da.sum(fn(x, y, z)), *foo_args((2, 2)))
    assert_close(summed, 16.96957456410211)


@FOOS
def test_t1_foo_grad(fn: F) -> None:
    """T1: grad foo (1.1,2.2,3.3) = (2.4396285219055063, -1.953374825727421,
    0.9654825811012627), eps 1e-10 (testFoo, testGradFooDouble, testGradFooScalar)."""
    grads = da.grad(fn, argnums=(0, 1, 2))(*foo_args(()))
    assert isinstance(grads, tuple) and len(grads) == 3
    for got, want in zip(grads, FOO_GRAD, strict=True):
        assert_close(got, want, eps=1e-10)


@FOOS
def test_t1_foo_grad_float(fn: F) -> None:
    """T1 Float version: grad foo (1.1,2.2,3.3) = (2.4396284, -1.9533751, 0.96548253)
    (testGradCFooScalar, testFooRrev2)."""
    grads = da.grad(fn, argnums=(0, 1, 2))(*foo_args((), np.float32))
    for got, want in zip(grads, FOO_GRAD_F32, strict=True):
        assert_close(got, want, dtype=np.float32)


@FOOS
@pytest.mark.parametrize("shape", [(2, 2), (3, 534, 3)])
def test_t1_foo_grad_matrix(fn: F, shape: tuple[int, ...]) -> None:
    """T1: grad(sum∘foo) = each element the same triple (testGradFooMatrix, also [3,534,3]
    shaped tensors: testFooS), eps 1e-10."""
    grads = rev_prime(fn, *foo_args(shape), argnums=(0, 1, 2))
    for got, want in zip(grads, FOO_GRAD, strict=True):
        assert_close(got, np.full(shape, want), eps=1e-10)


@FOOS
def test_t1_foo_value_and_grad(fn: F) -> None:
    """T1: value_and_grad of sum∘foo on 2x2 matrices: 16.96957456410211 and the triple."""
    val, grads = da.value_and_grad(lambda x, y, z: da.sum(fn(x, y, z)), argnums=(0, 1, 2))(
        *foo_args((2, 2))
    )
    assert_close(val, 16.96957456410211)
    for got, want in zip(grads, FOO_GRAD, strict=True):
        assert_close(got, np.full((2, 2), want), eps=1e-10)


@FOOS
def test_t1_foo_vjp_matrix(fn: F) -> None:
    """T1: vjp of foo on 2x2 matrices with dret = ones gives the triple elementwise
    (testGradFooMatrixVjp); with dret = 2 everywhere, twice the triple."""
    val, pullback = da.vjp(fn, *foo_args((2, 2)))
    assert_close(val, np.full((2, 2), FOO_VALUE))
    for dret in (1.0, 2.0):
        cts = pullback(np.full((2, 2), dret))
        assert isinstance(cts, tuple) and len(cts) == 3
        for got, want in zip(cts, FOO_GRAD, strict=True):
            assert_close(got, np.full((2, 2), dret * want), eps=1e-10)


@FOOS
def test_t1_foo_jacobian_matrix(fn: F) -> None:
    """T1: foo is elementwise, so its Jacobian in x on 2x2 matrices is diagonal with
    2.4396285219055063 on the diagonal (shape output.shape + input.shape)."""
    jac = da.jacobian(fn, argnums=0)(*foo_args((2, 2)))
    expected = FOO_GRAD[0] * np.eye(4).reshape(2, 2, 2, 2)
    np.testing.assert_allclose(np.asarray(jac), expected, rtol=0.0, atol=1e-10)
    assert np.asarray(jac).shape == (2, 2, 2, 2)


# ======================================================================================
# T2 bar, T3 barF(x, x)
# ======================================================================================

BAR_GRAD = (3.1435239435581166, -1.1053869545195814)


def bar(x: da.Tensor, y: da.Tensor) -> da.Tensor:
    w = foo(x, y, x) * da.sin(y)
    return da.atan2(x, w) + y * w


def np_bar(x: Any, y: Any) -> Any:
    w = np_foo(x, y, x) * np.sin(y)
    return np.arctan2(x, w) + y * w


def test_t2_bar_value() -> None:
    """T2: bar(x,y) = atan2(x,w) + y*w with w = foo(x,y,x)*sin(y), forward at (1.1, 2.2)."""
    assert_close(value(bar, f64(1.1), f64(2.2)), np_bar(1.1, 2.2))


@pytest.mark.parametrize("shape", [(), (52, 2, 2, 1, 1, 3)])
def test_t2_bar_grad(shape: tuple[int, ...]) -> None:
    """T2: grad bar (1.1,2.2) = (3.1435239435581166, -1.1053869545195814), eps 1e-9
    (testBar, testBarS; testBar2S on [52,2,2,1,1,3] tensors, summed)."""
    x, y = np.full(shape, 1.1), np.full(shape, 2.2)
    grads = rev_prime(bar, x, y, argnums=(0, 1))
    for got, want in zip(grads, BAR_GRAD, strict=True):
        assert_close(got, np.full(shape, want), eps=1e-9)


def test_t2_bar_jvp() -> None:
    """T2: jvp bar (1.1,2.2) ds=(0.1,0.2) = 0.09327500345189534, eps 1e-9
    (testBarCFwd, testBarFwd)."""
    val, tangent = da.jvp(bar, (f64(1.1), f64(2.2)), (f64(0.1), f64(0.2)))
    assert_close(val, np_bar(1.1, 2.2))
    assert_close(tangent, 0.09327500345189534, eps=1e-9)


def bar_xx(x: da.Tensor) -> da.Tensor:
    return bar(x, x)


def test_t3_barf_xx_value() -> None:
    """T3: barF(x,x) on x = ones([33,2]), forward."""
    assert_close(value(bar_xx, np.ones((33, 2))), np.full((33, 2), np_bar(1.0, 1.0)))


def test_t3_barf_xx_grad() -> None:
    """T3: x = ones([33,2]); grad sum(bar(x,x)) = 3.6174114266850617 everywhere, eps 1e-9
    (testZero3S)."""
    assert_close(rev_prime(bar_xx, np.ones((33, 2))), np.full((33, 2), 3.6174114266850617),
                 eps=1e-9)


def test_t3_barf_xx_jvp() -> None:
    """T3: jvp of barF(x,x) at ones([33,2]) with ds = 1.1 everywhere -> 3.9791525693535674
    everywhere, eps 1e-9 (testCFwdZero3S)."""
    val, tangent = da.jvp(bar_xx, (np.ones((33, 2)),), (np.full((33, 2), 1.1),))
    assert_close(val, np.full((33, 2), np_bar(1.0, 1.0)))
    assert_close(tangent, np.full((33, 2), 3.9791525693535674), eps=1e-9)


# ======================================================================================
# T5 list product / sums
# ======================================================================================

LIST_FOLDS: dict[str, tuple[Callable[[da.Tensor, da.Tensor], da.Tensor], list[float]]] = {
    # name: (the folded function, the gradient at any point)
    "listSum2r": (lambda x, y: x + 2 * y, [1, 2, 4, 8]),
    "listSum22r": (lambda x, y: 2 * x + 2 * y, [2, 4, 8, 8]),
    "listSumk22r": (lambda x, y: da.let(2.0, lambda k: k * x + k * y), [2, 4, 8, 8]),
    "listSum2xpyr": (lambda x, y: 2 * (x + y), [2, 4, 8, 8]),
    "listSum23r": (lambda x, y: 2 * x + 3 * y, [2, 6, 18, 27]),
}

ABCD = (f64(1.1), f64(2.2), f64(3.3), f64(4.4))


def test_t5_list_prod_value() -> None:
    """T5: prod [1,2,3,4] (foldr1 (*)) = 24."""
    assert_close(value(lambda *xs: foldr1(lambda x, y: x * y, xs), *map(f64, [1, 2, 3, 4])), 24.0)


def test_t5_list_prod_grad() -> None:
    """T5: prod [1,2,3,4] (foldr1 (*)) -> grad [24,12,8,6] (testListProd, testListProdr)."""
    grads = da.grad(lambda a, b, c, d: foldr1(lambda x, y: x * y, [a, b, c, d]),
                    argnums=(0, 1, 2, 3))(*map(f64, [1, 2, 3, 4]))
    for got, want in zip(grads, [24, 12, 8, 6], strict=True):
        assert_close(got, want)


def test_t5_list_prod_grad_vector() -> None:
    """T5: the same product over the elements of one vector [1,2,3,4] -> [24,12,8,6]."""
    grad = da.grad(lambda v: foldr1(lambda x, y: x * y, list(v)))(f64([1, 2, 3, 4]))
    assert_close(grad, [24, 12, 8, 6])


@pytest.mark.parametrize("name", list(LIST_FOLDS))
def test_t5_list_sum_fold_value(name: str) -> None:
    """T5: foldr1 over [a,b,c,d]: the linear folds evaluate to grad · [a,b,c,d]."""
    fn, coeffs = LIST_FOLDS[name]
    got = value(lambda *xs: foldr1(fn, xs), *ABCD)
    assert_close(got, float(np.dot(coeffs, [1.1, 2.2, 3.3, 4.4])))


@pytest.mark.parametrize("name", list(LIST_FOLDS))
def test_t5_list_sum_fold_grad(name: str) -> None:
    """T5: foldr1 (\\x y -> x + 2*y) [a,b,c,d] -> grad (1,2,4,8); foldr1 (\\x y -> 2x+2y)
    -> (2,4,8,8) (also with tlet k = 2, and 2*(x+y)); foldr1 (\\x y -> 2x+3y) ->
    (2,6,18,27) (testListSum2rPP, testListSum22rPP, testListSumk22rPP,
    testListSum2xpyrPP, testListSum23rPP)."""
    fn, coeffs = LIST_FOLDS[name]
    grads = da.grad(lambda a, b, c, d: foldr1(fn, [a, b, c, d]), argnums=(0, 1, 2, 3))(*ABCD)
    for got, want in zip(grads, coeffs, strict=True):
        assert_close(got, want)


def test_t5_list_sum_2xy_grad() -> None:
    """T5 (testListSum2xyrPP): foldr1 (\\x y -> 2*(x*y)) [a,b,c,d] = 8abcd; at [1,2,3,4]
    the gradient is 8 * (24,12,8,6)."""
    grads = da.grad(lambda a, b, c, d: foldr1(lambda x, y: 2 * (x * y), [a, b, c, d]),
                    argnums=(0, 1, 2, 3))(*map(f64, [1, 2, 3, 4]))
    for got, want in zip(grads, [192, 96, 64, 48], strict=True):
        assert_close(got, want)


def test_t5_pair_23_grad() -> None:
    """T5: 2x+3y on a pair -> (2,3) (test23PP)."""
    grads = da.grad(lambda x, y: 2 * x + 3 * y, argnums=(0, 1))(f64(1.1), f64(2.2))
    assert_close(grads[0], 2.0)
    assert_close(grads[1], 3.0)


def test_t5_list_sum_vjp_dret() -> None:
    """T5: foldr1 (+) [a,b,c,d] -> dret each (testListSumrPP); dret = 2.5."""
    val, pullback = da.vjp(lambda a, b, c, d: foldr1(lambda x, y: x + y, [a, b, c, d]), *ABCD)
    assert_close(val, 1.1 + 2.2 + 3.3 + 4.4)
    cts = pullback(f64(2.5))
    assert len(cts) == 4
    for got in cts:
        assert_close(got, 2.5)


# ======================================================================================
# T6 piecewise linear
# ======================================================================================


def piecewise(x: da.Tensor) -> da.Tensor:
    return da.where(x > 0, 2 * x, 5 * x)


def piecewise2(x: da.Tensor) -> da.Tensor:
    return da.where(x > 0, 2.0, 5.0) * x


@pytest.mark.parametrize(
    ("fn", "x", "want_value"), [(piecewise, 42.0, 84.0), (piecewise, -42.0, -210.0),
                                (piecewise2, 42.0, 84.0), (piecewise2, -42.0, -210.0)]
)
def test_t6_piecewise_linear_value(fn: F, x: float, want_value: float) -> None:
    """T6: f(x) = 2x if x>0 else 5x; g(x) = (2 if x>0 else 5)*x, forward."""
    assert_close(value(fn, f64(x)), want_value)


def test_t6_piecewise_linear_grad() -> None:
    """T6: f(x) = 2x if x>0 else 5x; grad at 42 = 2 (testPiecewiseLinear)."""
    assert_close(rev_prime(piecewise, f64(42.0)), 2.0)


def test_t6_piecewise_linear2_grad() -> None:
    """T6: g(x) = (2 if x>0 else 5)*x; grad at -42 = 5 (testPiecewiseLinear2)."""
    assert_close(rev_prime(piecewise2, f64(-42.0)), 5.0)


# ======================================================================================
# T7 overleaf
# ======================================================================================

OVERLEAF_GRAD = [2.0] * 22 + [1.0] * 6


def overleaf(v: da.Tensor) -> da.Tensor:
    return da.sum(da.build1(50, lambda i: v[i % len(v)]))


def overleaf_via_int(v: da.Tensor) -> da.Tensor:
    """``rfromIntegral . overleaf @Int . rfloor``, staying in v's float type."""
    return da.to_float(overleaf(da.floor(v)), v.dtype)


def test_t7_overleaf_value() -> None:
    """T7: overleaf(v) = sum(build(50, λi. v[i rem len(v)])) at v = arange(28)."""
    assert_close(value(overleaf, np.arange(28.0)), float(sum(i % 28 for i in range(50))))


def test_t7_overleaf_grad() -> None:
    """T7: v = arange(28): grad = [2.0]*22 + [1.0]*6 (testOverleaf)."""
    assert_close(rev_prime(overleaf, np.arange(28.0)), OVERLEAF_GRAD)


def test_t7_overleaf_grad1() -> None:
    """T7: v = [27] (len 1): grad = [50] (testOverleafGrad1)."""
    assert_close(value(overleaf, f64([27.0])), 50 * 27.0)
    assert_close(da.grad(overleaf)(f64([27.0])), [50.0])


INT_DTYPES = pytest.mark.parametrize(
    "dtype", [np.int64, np.int32, np.int16, np.int8], ids=["Int64", "CInt", "Int16", "Int8"]
)


@INT_DTYPES
def test_t7_overleaf_int_value(dtype: npt.DTypeLike) -> None:
    """T7 Int64/CInt/Int16/Int8 variants: the integer-typed program (integer elements,
    integer index arithmetic i rem 28) traces and evaluates (dualarr computes in int64)."""
    v = np.arange(28, dtype=dtype)
    got = value(overleaf, v)
    assert np.asarray(got).dtype == np.int64
    assert int(got) == sum(i % 28 for i in range(50))


@INT_DTYPES
def test_t7_overleaf_int_grad_rejected(dtype: npt.DTypeLike) -> None:
    """T7 Int variants (testOverleafInt64p … Int8p: rev' gives [2]*22 + [1]*6 in horde-ad):
    dualarr differentiates float inputs only, so da.grad rejects the integer argument."""
    with pytest.raises(da.DualarrError):
        da.grad(overleaf)(np.arange(28, dtype=dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_t7_overleaf_via_floor_value(dtype: npt.DTypeLike) -> None:
    """T7: rfromIntegral . overleaf @Int . rfloor, forward (Float in horde-ad)."""
    got = value(overleaf_via_int, np.arange(28, dtype=dtype))
    assert_close(got, float(sum(i % 28 for i in range(50))), dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_t7_overleaf_via_floor_grad(dtype: npt.DTypeLike) -> None:
    """T7: via rfloor/rfromIntegral: zeros (testOverleafCIntToFloatp, Int16ToFloatp,
    Int8ToFloatp)."""
    got = rev_prime(overleaf_via_int, np.arange(28, dtype=dtype))
    assert_close(got, np.zeros(28), dtype=dtype)


# ======================================================================================
# T8 relu family
# ======================================================================================

RELU_T = f64([[1.1, -2.2, 0, 4.4], [5.5, 6.6, 7.7, 8.8], [-9.9, -10, 11, 12]])
RELU_GRAD = f64([[1, 0, 0, 1], [1, 1, 1, 1], [0, 0, 1, 1]])


def relu(x: da.Tensor) -> da.Tensor:
    """horde-ad's relu: ``(x <= 0 ? 0 : 1) * x`` (derivative 0 at 0)."""
    return da.where(x <= 0, 0.0, 1.0) * x


def relu_let_cond(x: da.Tensor) -> da.Tensor:
    """testReluSimpler7s: ``map0N (\\x -> let x in if x <= 0 then 0 else x)``."""
    return da.let(x, lambda v: da.where(v <= 0, 0.0, v))


def relu_build(x: da.Tensor) -> da.Tensor:
    """``rmap0N`` as a build over every element, with a scalar cond per element."""
    return da.build(x.shape, lambda *ix: da.where(x[ix] <= 0, 0.0, x[ix]))


def relu_max(x: da.Tensor) -> da.Tensor:
    """reluMax = map (max 0): ``max u v = if u >= v then u else v`` (a tie picks 0)."""
    return da.maximum(0.0, x)


RELUS = pytest.mark.parametrize(
    "fn",
    [relu, relu_let_cond, relu_build, relu_max, da.relu],
    ids=["relu", "relu7s", "reluBuild", "reluMax", "da.relu"],
)


@RELUS
def test_t8_relu_value(fn: F) -> None:
    """T8: relu t = max(t, 0) elementwise."""
    assert_close(value(fn, RELU_T), np.maximum(RELU_T, 0.0))


@RELUS
def test_t8_relu_grad(fn: F) -> None:
    """T8: rev' relu t = [1,0,0,1, 1,1,1,1, 0,0,1,1] (same for reluMax = map (max 0))
    (testReluSimpler, testReluMax)."""
    assert_close(rev_prime(fn, RELU_T), RELU_GRAD)


def scale_replicate(t: da.Tensor, r: da.Tensor) -> da.Tensor:
    """``t * rreplicate 3 (rreplicate 4 r)``."""
    return t * da.replicate(3, da.replicate(4, r))


def scale_lift(t: da.Tensor, r: da.Tensor) -> da.Tensor:
    """``t * rreplicate0N [3, 4] r`` (a rank-0 value lifts to t's shape)."""
    return t * r


@RELUS
@pytest.mark.parametrize("scale", [scale_replicate, scale_lift], ids=["replicate", "replicate0N"])
def test_t8_relu_scaled_value(fn: F, scale: F) -> None:
    """T8: relu(t*r) at r = 7, forward."""
    assert_close(value(lambda t, r: fn(scale(t, r)), RELU_T, f64(7.0)),
                 np.maximum(7.0 * RELU_T, 0.0))


@RELUS
@pytest.mark.parametrize("scale", [scale_replicate, scale_lift], ids=["replicate", "replicate0N"])
def test_t8_relu_scaled_grad(fn: F, scale: F) -> None:
    """T8: grad sum(relu(t*r)) at r=7: dt = [7,0,0,7,7,7,7,7,0,0,7,7], dr = 57.1
    (testReluSimpler3/4/4s/7s, testReluMax3)."""
    dt, dr = rev_prime(lambda t, r: fn(scale(t, r)), RELU_T, f64(7.0), argnums=(0, 1))
    assert_close(dt, 7.0 * RELU_GRAD)
    assert_close(dr, 57.1)


# ======================================================================================
# T9 builds over index arithmetic
# ======================================================================================


def f1(a: da.Tensor) -> da.Tensor:
    return da.sum(da.build1(10, lambda i: a * da.to_float(i)))


def f2(a: da.Tensor) -> da.Tensor:
    def fun1(i: da.Tensor) -> da.Tensor:
        return a * da.to_float(i)

    def fun2(y: da.Tensor) -> Callable[[da.Tensor], da.Tensor]:
        return lambda i: y * da.to_float(i)

    v1a = da.sum(da.build1(10, fun1))
    v1b = da.sum(da.build1(20, fun1))
    v2a = da.sum(da.build1(10, fun2(a)))
    v2b = da.sum(da.build1(20, fun2(a + 1)))
    return v1a + v1b + v2a + v2b


def test_t9_f1_value() -> None:
    """T9: f1(a) = sum(build(10, λi. a*i)) at 1.1 = 49.5."""
    assert_close(value(f1, f64(1.1)), 1.1 * 45)


def test_t9_f1_grad() -> None:
    """T9: f1(a) = sum(build(10, λi. a*i)) -> grad 45 (testF1, testF11)."""
    assert_close(da.grad(f1)(f64(1.1)), 45.0)
    assert_close(rev_prime(f1, f64(1.1)), 45.0)


def test_t9_f2_value() -> None:
    """T9: f2(1.1) = 1.1*45 + 1.1*190 + 1.1*45 + 2.1*190."""
    assert_close(value(f2, f64(1.1)), 1.1 * 45 + 1.1 * 190 + 1.1 * 45 + 2.1 * 190)


def test_t9_f2_grad() -> None:
    """T9: f2(a) = Σ_{i<10} a*i + Σ_{i<20} a*i + Σ_{i<10} a*i + Σ_{i<20} (a+1)*i
    -> grad 470 (testF2, testF21)."""
    assert_close(da.grad(f2)(f64(1.1)), 470.0)


def test_t9_f2_jvp() -> None:
    """T9: f2 jvp with ds=0.1 -> 47 (testF2CFwd)."""
    _, tangent = da.jvp(f2, (f64(1.1),), (f64(0.1),))
    assert_close(tangent, 47.0)


# ======================================================================================
# T13 nested builds / indexing
# ======================================================================================

V5 = f64([1.1, 2.2, 3.3, 4, -5.22])
T16 = f64([5, 2, 6, 1, -2, 0.000001, 0.1, -0.2, 13.1, 9, 8, -4, 34, 2.99432, -33, 26]).reshape(
    2, 2, 1, 2, 2
)


def nested_build_index(v: da.Tensor) -> da.Tensor:
    return da.build1(
        2,
        lambda i2: da.build1(3, lambda i3: da.build1(4, lambda i4: v[i4])[i3])[i2],
    )


def braided(r: da.Tensor) -> da.Tensor:
    return da.build1(
        3,
        lambda i1: da.build1(4, lambda i2: da.from_list([da.to_float(i2), 7.0, r, -0.2])[i1]),
    )


def foo_build0(v: da.Tensor) -> da.Tensor:
    return da.build1(2, lambda _: da.sum_outer(v))


def foo_build_out(v: da.Tensor) -> da.Tensor:
    # v[ix + 1] is out of bounds at ix = 1; the strict cond discards it there.
    return da.build1(2, lambda ix: da.where(ix == 0, v[ix + 1], da.sum_outer(v)))


def test_t13_nested_build_index_value() -> None:
    """T13: nestedBuildIndex(v) = [v[0], v[1]]."""
    assert_close(value(nested_build_index, V5), V5[:2])


def test_t13_nested_build_index_grad() -> None:
    """T13: nestedBuildIndex(v) = build(2, λi2. build(3, λi3. build(4, λi4. v[i4])[i3])[i2]);
    v=[1.1,2.2,3.3,4,-5.22] -> grad [1,1,0,0,0] (testNestedBuildIndex)."""
    assert_close(rev_prime(nested_build_index, V5), [1, 1, 0, 0, 0])


def test_t13_braided_builds_value() -> None:
    """T13: braided(3.4) = rows [0,1,2,3], [7]*4, [3.4]*4."""
    assert_close(value(braided, f64(3.4)), [[0.0, 1.0, 2.0, 3.0], [7.0] * 4, [3.4] * 4])


def test_t13_braided_builds_grad() -> None:
    """T13: braided(r) = build(3, λi1. build(4, λi2. [i2, 7, r, -0.2][i1])) at 3.4
    -> grad 4.0 (testBraidedBuilds1)."""
    assert_close(rev_prime(braided, f64(3.4)), 4.0)


def test_t13_foo_build0_value() -> None:
    """T13: fooBuild0(v) = build(2, λ_. sum_outer(v)) on t16."""
    assert_close(value(foo_build0, T16), np.stack([T16.sum(axis=0)] * 2))


def test_t13_foo_build0_grad() -> None:
    """T13: fooBuild0(v) = build(2, λ_. sum_outer(v)) on t16 ([2,2,1,2,2]) -> grad all 2.0
    (THR testFooBuild0)."""
    assert_close(rev_prime(foo_build0, T16), np.full(T16.shape, 2.0))


def test_t13_foo_build_out_value() -> None:
    """T13: fooBuildOut(v) = [v[1], sum_outer(v)] on t16."""
    assert_close(value(foo_build_out, T16), np.stack([T16[1], T16.sum(axis=0)]))


def test_t13_foo_build_out_grad() -> None:
    """T13: fooBuildOut(v) = build(2, λix. v[ix+1] if ix==0 else sum_outer(v)) on t16
    -> first half 1.0, second half 2.0 (THR testFooBuildOut)."""
    expected = np.concatenate([np.full(8, 1.0), np.full(8, 2.0)]).reshape(T16.shape)
    assert_close(rev_prime(foo_build_out, T16), expected)


# ======================================================================================
# T14 concatBuild series
# ======================================================================================


def gather1r(r: da.Tensor, index: Callable[[da.Tensor], Any]) -> da.Tensor:
    """``gather1(5, [r], λi. [index(i)])``: a gather of shape [5] from the 1-vector [r]."""
    return da.gather(5, da.replicate(1, r), lambda i: (index(i),))


def abcde(r: da.Tensor) -> da.Tensor:
    return da.from_list([r, 1.0, 2.0, 3.0, 4.0])


def cb1(r: da.Tensor) -> da.Tensor:
    return da.build1(
        7,
        lambda i: da.concatenate(
            [da.concatenate([da.replicate(5, r), da.from_list([da.to_float(i)])]),
             da.replicate(13, r)]
        ),
    )


def cb2(r: da.Tensor) -> da.Tensor:
    return da.let(abcde(r), lambda a: da.build1(10, lambda i: da.where(i < 5, a[i], a[i - 5])))


def cb3(r: da.Tensor) -> da.Tensor:
    return da.let(
        abcde(r),
        lambda a: da.build1(
            10, lambda i: da.where(i < 5, a[i], a[i - 5 + (1 // da.imax(1, i - 5))])
        ),
    )


def cb4(r: da.Tensor) -> da.Tensor:
    return da.let(gather1r(r, lambda i: 1 // (4 + i)), lambda a: da.concatenate([a, a]))


def cb5(r: da.Tensor) -> da.Tensor:
    return da.let(
        gather1r(r, lambda i: 1 // (5 + i)),
        lambda a: da.concatenate([a, gather1r(r, lambda i: 1 // (5 + i))]),
    )


def cb6_like(
    r: da.Tensor,
    index_a: Callable[[da.Tensor], Any],
    index_b: Callable[[da.Tensor, da.Tensor], Any],
) -> da.Tensor:
    """``build(7, λj. append(append(append(gather1(5,[r],λi.[index_b(i, j)]), a), [j]),
    replicate(13, r)))`` with ``a = let gather1(5,[r],λi.[index_a(i)])`` inside."""
    return da.build1(
        7,
        lambda j: da.concatenate(
            [
                da.concatenate(
                    [
                        da.let(
                            gather1r(r, index_a),
                            lambda a: da.concatenate(
                                [gather1r(r, lambda i: index_b(i, j)), a]
                            ),
                        ),
                        da.from_list([da.to_float(j)]),
                    ]
                ),
                da.replicate(13, r),
            ]
        ),
    )


def cb6(r: da.Tensor) -> da.Tensor:
    return cb6_like(r, lambda i: 1 // (4 + i), lambda i, j: 1 // (100 * da.imax(1, i - j)))


def cb7(r: da.Tensor) -> da.Tensor:
    return da.build1(
        10,
        lambda j: da.concatenate(
            [da.replicate(5, r), gather1r(r, lambda i: 1 // da.imax(1, j - i))]
        )[j],
    )


def cb8(r: da.Tensor) -> da.Tensor:
    return da.let(
        gather1r(r, lambda i: 1 // (5 - i)),
        lambda a: da.concatenate([a, gather1r(r, lambda i: 1 // (5 - i))]),
    )


def cb9(r: da.Tensor) -> da.Tensor:
    return cb6_like(r, lambda i: 1 // (4 - i), lambda i, j: 1 // (100 * da.imax(0, i - j)))


def cb10(r: da.Tensor) -> da.Tensor:
    return cb6_like(r, lambda _i: 10000, lambda _i, _j: -1)


def cb11(r: da.Tensor) -> da.Tensor:
    return gather1r(r, lambda _i: -1)


def cb12(r: da.Tensor) -> da.Tensor:
    # the core ``index`` with -1, out of range (horde-ad's semantics); ``x[-1]`` would
    # wrap, as in NumPy
    return da.index(da.replicate(1, r), (-1,))


def cb13(r: da.Tensor) -> da.Tensor:
    return da.let(
        abcde(r),
        lambda a: da.build1(10, lambda i: da.where(da.logical_not(i >= 5), a[i], a[i - 5])),
    )


def cb14(r: da.Tensor) -> da.Tensor:
    return da.let(
        da.from_list([r, 1, 2, 3, 4]),
        lambda a: da.build1(10, lambda i: da.where(i < 5, a[i - 5], a[i])),
    )


def cb16(r: da.Tensor) -> da.Tensor:
    return da.from_list([r, r])[0:0]


def all_equal(a: da.Tensor, b: da.Tensor) -> da.Tensor:
    """horde-ad's ``==.`` on whole arrays: true when no element differs (so for empty ones)."""
    return da.sum(a != b) == 0


def cb17(r: da.Tensor) -> da.Tensor:
    return da.where(
        all_equal(da.from_list([r, r])[0:0], da.from_list([r, 0.0])[0:0]),
        da.from_list([r])[0:0],
        da.from_list([0.0])[0:0],
    )


R = 3.4
CB_ROW6 = [R] * 5 + [R] * 5  # cb6: the gather1 part and `a`, both in range

# name: (program, r, expected forward value, expected rev' gradient)
CONCAT_BUILDS: dict[str, tuple[F, float, Any, float]] = {
    "cb1": (cb1, R, [[R] * 5 + [i] + [R] * 13 for i in range(7)], 126),
    "cb2": (cb2, R, [R, 1, 2, 3, 4] * 2, 2),
    "cb3": (cb3, R, [R, 1, 2, 3, 4, 1, 2, 2, 3, 4], 1),
    "cb4": (cb4, R, [R] * 10, 10),
    "cb5": (cb5, R, [R] * 10, 10),
    "cb6": (cb6, R, [CB_ROW6 + [j] + [R] * 13 for j in range(7)], 161),
    "cb7": (cb7, R, [R] * 10, 10),
    "cb8": (cb8, R, [R, R, R, R, 0.0] * 2, 8),
    "cb9": (
        cb9,
        R,
        [
            [R if i > j else 0.0 for i in range(5)]
            + [R, R, R, 0.0, 0.0]
            + [j]
            + [R] * 13
            for j in range(7)
        ],
        122,
    ),
    "cb10": (cb10, R, [[0.0] * 10 + [j] + [R] * 13 for j in range(7)], 91),
    "cb11": (cb11, R, [0.0] * 5, 0),
    "cb12": (cb12, R, 0.0, 0),
    "cb13": (cb13, 100.0, [100, 1, 2, 3, 4] * 2, 2),
    "cb14": (cb14, 100.0, [0.0] * 10, 0),
    "cb16": (cb16, 100.0, np.zeros(0), 0),
    "cb17": (cb17, 100.0, np.zeros(0), 0),
}


@pytest.mark.parametrize("name", list(CONCAT_BUILDS))
def test_t14_concat_build_value(name: str) -> None:
    """T14: the concatBuild programs, forward (out-of-range reads give 0, quot a 0 = a)."""
    fn, r, expected, _ = CONCAT_BUILDS[name]
    assert_close(value(fn, f64(r)), expected)


@pytest.mark.parametrize("name", list(CONCAT_BUILDS))
def test_t14_concat_build_grad(name: str) -> None:
    """T14 (testConcatBuild1..17): rev' at r = 3.4 (cb13/cb14/cb16/cb17 at 100):
    cb1 126, cb2 2, cb3 1, cb4 10, cb5 10, cb6 161, cb7 10, cb8 8, cb9 122, cb10 91,
    cb11 0, cb12 0, cb13 2, cb14 0 (Double: testConcatBuild15), cb16/cb17 0."""
    fn, r, _, expected = CONCAT_BUILDS[name]
    assert_close(rev_prime(fn, f64(r)), expected)


def test_t14_concat_build14_int_value() -> None:
    """T14: cb14 at Int (testConcatBuild14: rev' @Int): the integer program, forward."""
    got = value(cb14, np.int64(100))
    assert np.asarray(got).dtype == np.int64
    np.testing.assert_array_equal(got, np.zeros(10, dtype=np.int64))


def test_t14_concat_build14_int_grad_rejected() -> None:
    """T14: cb14 at Int: horde-ad's rev' @Int gives 0; dualarr differentiates float inputs
    only, so da.grad rejects the integer argument."""
    with pytest.raises(da.DualarrError):
        rev_prime(cb14, np.int64(100))


# ======================================================================================
# T15 gathers, T16 scatters
# ======================================================================================

T72 = np.tile(f64([0.0, 1.0]), (7, 1))  # rreplicate 7 [0, 1]
T62 = np.tile(f64([0.0, 1.0]), (6, 1))  # rreplicate 6 [0, 1]


def gather1(t: da.Tensor) -> da.Tensor:
    return da.gather([2], t[0:4], lambda i2: (i2 + i2, i2))


def gather_nested1(t: da.Tensor) -> da.Tensor:
    inner = da.gather([4], t, lambda k3: (k3,))
    return da.gather([2], inner, lambda i2: (i2 + i2, i2))


def gather2(t: da.Tensor) -> da.Tensor:
    return da.gather([2, 3], t, lambda i1, i2: (i1 + i2 + i1 + i2, i1))


def gather_nested2(t: da.Tensor) -> da.Tensor:
    inner = da.gather([2, 3, 4], t, lambda k1, k2, k3: (k1 + k2 + k3,))
    return da.gather([2, 3], inner, lambda i1, i2: (i1, i2, i1 + i2, i1))


def gather12(t: da.Tensor) -> da.Tensor:
    return da.gather([2, 4], t, lambda i1, k3: (i1 + i1 + i1 + k3, i1))


def gather_nested12(t: da.Tensor) -> da.Tensor:
    inner = da.gather([2, 3, 4], t, lambda k1, k2, k3: (k1 + k2 + k3, k1))
    return da.gather([2], inner, lambda i1: (i1, i1 + i1))


def gather_nested02(v: da.Tensor) -> da.Tensor:
    inner = da.gather([2], v, lambda k3: (k3 + k3,))
    return da.gather([1], inner, lambda i1: (i1 + i1 + i1,))


def gather_reshape22(t: da.Tensor) -> da.Tensor:
    t = da.reshape(t, [2, 2, 3])
    t = da.reshape(t, [3, 1, 1, 4])
    t = da.reshape(t, [1, 12, 1])
    t = da.reshape(t, [3, 1, 2, 1, 1, 2])
    return da.reshape(t, [2, 6])


GATHERS: dict[str, tuple[F, Any, Any, list[float]]] = {
    # name: (program, input, expected forward value, expected rev' flattened)
    "gather1": (gather1, T72, [T72[0, 0], T72[2, 1]], [1.0, 0, 0, 0, 0, 1] + [0.0] * 8),
    "gatherNested1": (
        gather_nested1, T72, [T72[0, 0], T72[2, 1]], [1.0, 0, 0, 0, 0, 1] + [0.0] * 8
    ),
    "gather2": (
        gather2, T72, [[T72[2 * (i1 + i2), i1] for i2 in range(3)] for i1 in range(2)],
        [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1],
    ),
    "gatherNested2": (
        gather_nested2, T72, [[T72[2 * (i1 + i2), i1] for i2 in range(3)] for i1 in range(2)],
        [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1],
    ),
    "gather12": (
        gather12, T72, [[T72[3 * i1 + k3, i1] for k3 in range(4)] for i1 in range(2)],
        [1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1],
    ),
    "gatherNested12": (
        gather_nested12, T72, [[T72[3 * i1 + k3, i1] for k3 in range(4)] for i1 in range(2)],
        [1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1],
    ),
    "gatherNested02": (gather_nested02, np.full(4, 0.1), [0.1], [1, 0, 0, 0]),
    "gatherReshape22": (gather_reshape22, T62, T62.reshape(2, 6), [1] * 12),
}


@pytest.mark.parametrize("name", list(GATHERS))
def test_t15_gather_value(name: str) -> None:
    """T15: the gathers of TestGatherSimplified on t = rreplicate 7 [0,1], forward."""
    fn, t, expected, _ = GATHERS[name]
    assert_close(value(fn, t), expected)


@pytest.mark.parametrize("name", list(GATHERS))
def test_t15_gather_grad(name: str) -> None:
    """T15: gather1(t) = gather([2], t[0:4], λi2. [i2+i2, i2]) -> [1,0,0,0,0,1,0,…]
    (gatherNested1 same); gather2(t) = gather([2,3], t, λ(i1,i2). [2*(i1+i2), i1])
    -> [1,0,0,0,1,1,0,0,1,1,0,0,0,1] (gatherNested2 same); gather12(t) = gather([2,4], t,
    λ(i1,k3). [3*i1+k3, i1]) -> [1,0,1,0,1,0,1,1,0,1,0,1,0,1]; gatherNested02(v4=[0.1]*4)
    -> [1,0,0,0]; gatherReshape22 -> all 1 (testGather*, testGatherNested*)."""
    fn, t, _, expected = GATHERS[name]
    assert_close(rev_prime(fn, t), np.reshape(f64(expected), t.shape))


@pytest.mark.parametrize("inner", [gather1, gather_nested1], ids=["gather1", "gatherNested1"])
def test_t15_gather_build1_grad(inner: F) -> None:
    """T15: build 5 (λi. gather1 t if i>2 else t[i]) -> [3,1,1,1,1,3,0,0,0,0,0,0,0,0]
    (testGatherBuild1, testGatherNestedBuild1)."""

    def fn(t: da.Tensor) -> da.Tensor:
        return da.build1(5, lambda i: da.where(i > 2, inner(t), t[i]))

    expected_value = np.stack([T72[0], T72[1], T72[2], [0.0, 1.0], [0.0, 1.0]])
    assert_close(value(fn, T72), expected_value)
    assert_close(rev_prime(fn, T72), f64([3, 1, 1, 1, 1, 3] + [0] * 8).reshape(7, 2))


@pytest.mark.parametrize(
    ("inner", "expected"),
    [
        (gather2, [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1]),
        (gather_nested2, [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1]),
        (gather_reshape22, [1] * 12),
    ],
    ids=["gather2", "gatherNested2", "gatherReshape22"],
)
def test_t15_gather_build_scaled_grad(inner: F, expected: list[float]) -> None:
    """T15: build 4 (λi. gather2(t * i)) -> the gather2 pattern with 6.0 (testGatherBuild2,
    testGatherNestedBuild2); build 4 (λi. gatherReshape22(t * i)) -> all 6
    (testGatherReshapeBuild22)."""
    t = T62 if inner is gather_reshape22 else T72

    def fn(x: da.Tensor) -> da.Tensor:
        return da.build1(4, lambda i: inner(x * da.to_float(i)))

    expected_value = np.stack([np.asarray(value(inner, t * i)) for i in range(4)])
    assert_close(value(fn, t), expected_value)
    assert_close(rev_prime(fn, t), 6.0 * f64(expected).reshape(t.shape))


@pytest.mark.parametrize("inner", [gather12, gather_nested12], ids=["gather12", "gatherNested12"])
def test_t15_gather_build12_grad(inner: F) -> None:
    """T15 (horde-ad testGatherBuild12, testGatherNestedBuild12; not listed in the acceptance
    file, expected value from horde-ad): (build 5 (λi. gather12 t if i>2 else
    tr (replicate 4 t[i])))[1] -> [0,0,4,4,0,0,0,0,0,0,0,0,0,0]."""

    def fn(t: da.Tensor) -> da.Tensor:
        return da.build1(
            5,
            lambda i: da.where(i > 2, inner(t), da.transpose(da.replicate(4, t[i]), [1, 0])),
        )[1]

    assert_close(value(fn, T72), np.tile(T72[1][:, None], (1, 4)))
    assert_close(rev_prime(fn, T72), f64([0, 0, 4, 4] + [0] * 10).reshape(7, 2))


def scatter1(t: da.Tensor) -> da.Tensor:
    return da.scatter([2], t, lambda i1, i2: (da.imin(i2 + 2 * i1, 1),))


def scatter_nested1(t: da.Tensor) -> da.Tensor:
    inner = da.scatter([7], t, lambda k3: (k3,))
    return da.scatter([2], inner, lambda i1, i2: (i2 // (1 + i1),))


SCATTERS = pytest.mark.parametrize(
    ("fn", "row"),
    [(scatter1, [0.0, 7.0]), (scatter_nested1, [6.0, 1.0])],
    ids=["scatter1", "scatterNested1"],
)


@SCATTERS
def test_t16_scatter_value(fn: F, row: list[float]) -> None:
    """T16: scatter1(t) on t = rreplicate 7 [0,1]: out[min(i2+2*i1, 1)] += t[i1,i2] gives
    [0, 7]; scatterNested1: out[i2 quot (1+i1)] += t[i1,i2] gives [6, 1]."""
    assert_close(value(fn, T72), row)


@SCATTERS
def test_t16_scatter_grad(fn: F, row: list[float]) -> None:
    """T16: scatter1(t) = scatter([2], t, λ(i1,i2). [min(i2+2*i1, 1)]) -> all 1.0 on [7,2]
    (scatterNested1 the same) (testScatter1, testScatterNested1)."""
    assert_close(rev_prime(fn, T72), np.ones((7, 2)))


@SCATTERS
def test_t16_scatter_build1_grad(fn: F, row: list[float]) -> None:
    """T16: build 5 (λi. scatter1 t if i>2 else t[i]) -> [3,3,3,3,3,3,2,2,2,2,2,2,2,2]
    (testScatterBuild1, testScatterNestedBuild1)."""

    def built(t: da.Tensor) -> da.Tensor:
        return da.build1(5, lambda i: da.where(i > 2, fn(t), t[i]))

    assert_close(value(built, T72), np.stack([T72[0], T72[1], T72[2], row, row]))
    assert_close(rev_prime(built, T72), f64([3] * 6 + [2] * 8).reshape(7, 2))


# ======================================================================================
# T17 filterPositiveFail
# ======================================================================================

FILTER_V15 = f64([0.24, 52, -0.5, 0.33, 0.1] * 3)


def filter_positive_fail(v: da.Tensor) -> da.Tensor:
    """Take the first 12 of ``unravel(v)`` and stack them."""
    return da.from_list(list(v)[:12])


@pytest.mark.parametrize(
    ("v", "expected"),
    [
        (FILTER_V15, [1.0] * 12 + [0.0] * 3),
        (f64([0.24, 52]), [1.0, 1.0]),
        (f64([0.24, 52, -0.5]), [1.0, 1.0, 1.0]),
    ],
    ids=["len15", "len2", "len3"],
)
def test_t17_filter_positive_fail(v: npt.NDArray[np.float64], expected: list[float]) -> None:
    """T17: v of length 15 -> grad [1]*12 + [0]*3; length 2 -> [1,1]; length 3 -> [1,1,1]
    (testFilterPositiveFail, …Fail0, …Fail1)."""
    assert_close(value(filter_positive_fail, v), v[:12])
    assert_close(rev_prime(filter_positive_fail, v), expected)


# ======================================================================================
# T20 convolution
# ======================================================================================

T16B = f64([5, 2, 6, 1, -2, 0, 0.1, -0.2, 13.1, 9, 8, -4, 582934, 2.99432, -335, 26]).reshape(
    2, 2, 2, 2
)
KONST_G0_GRAD = [18.1, 29.1, 32.1, 40.1, 582932.0, 582934.99432, 582597.1, 582625.8943200001]


def slicez(shape: tuple[int, ...], d: da.Tensor, base: tuple[Any, ...]) -> da.Tensor:
    """``slicez``: the window of ``d`` of ``shape`` at ``base`` (out-of-range reads 0)."""
    return da.build(shape, lambda *ix: d[tuple(b + k for b, k in zip(base, ix, strict=True))])


def conv2d_preserving(arr_k: da.Tensor, arr_a: da.Tensor) -> da.Tensor:
    """horde-ad's ``conv2dPreserving`` (built via slicez + dot0)."""
    n_imgs, n_cinp, n_ah, n_aw = arr_a.shape
    n_cout, n_cinp_k, n_kh, n_kw = arr_k.shape
    assert n_cinp == n_cinp_k
    sh_k1 = (1, n_cinp, n_kh, n_kw)

    def pixel(i_img: da.Tensor, i_cout: da.Tensor, i_bh: da.Tensor, i_bw: da.Tensor) -> da.Tensor:
        arr_at = slicez(sh_k1, arr_a, (i_img, 0, i_bh, i_bw))
        arr_kt = slicez(sh_k1, arr_k, (i_cout, 0, 0, 0))
        return da.sum(arr_at * arr_kt)

    return da.build((n_imgs, n_cout, n_ah, n_aw), pixel)


def np_conv2d_preserving(k: Any, a: Any) -> Any:
    n_imgs, n_cinp, n_ah, n_aw = a.shape
    n_cout, _, n_kh, n_kw = k.shape
    padded = np.zeros((n_imgs, n_cinp, n_ah + n_kh, n_aw + n_kw))
    padded[:, :, :n_ah, :n_aw] = a
    out = np.zeros((n_imgs, n_cout, n_ah, n_aw))
    for i, o, h, w in np.ndindex(*out.shape):
        out[i, o, h, w] = np.sum(padded[i, :, h : h + n_kh, w : w + n_kw] * k[o])
    return out


def conv2d_b(a: da.Tensor) -> da.Tensor:
    return conv2d_preserving(da.constant(T16B), a)


def conv2d_1(a: da.Tensor) -> da.Tensor:
    return conv2d_preserving(da.constant(f64([[[[-0.2]]]])), a)


def test_t20_conv2d_value() -> None:
    """T20: conv2dPreserving(K, A)[i,co,h,w] = Σ_{c,kh,kw} A[i,c,h+kh,w+kw]*K[co,c,kh,kw],
    forward with K = t16b and A = arange(16)/10 (out-of-range reads 0)."""
    a = np.arange(16.0).reshape(2, 2, 2, 2) / 10
    assert_close(value(conv2d_b, a), np_conv2d_preserving(T16B, a))


def test_t20_konst_g0_rev() -> None:
    """T20: grad_A sum(conv(K=t16b, A=zeros[2,2,2,2])) = [18.1,29.1,32.1,40.1,582932.0,
    582934.99432,582597.1,582625.8943200001]*2, eps 1e-4 (TCS testKonstG0Rev)."""
    got = da.grad(lambda a: da.sum(conv2d_b(a)))(np.zeros((2, 2, 2, 2)))
    assert_close(got, f64(KONST_G0_GRAD * 2).reshape(2, 2, 2, 2), eps=1e-4)


def test_t20_konst_g0_tiny1() -> None:
    """T20: K=[[[[-0.2]]]]: rev' wrt A at zeros[1,1,1,1] -> [-0.2] (TCS testKonstG0Tiny1)."""
    a = np.zeros((1, 1, 1, 1))
    assert_close(value(conv2d_1, a), np.zeros((1, 1, 1, 1)))
    assert_close(rev_prime(conv2d_1, a), f64([-0.2]).reshape(1, 1, 1, 1))


# ======================================================================================
# T21 MNIST forward value
# ======================================================================================


def logistic(x: da.Tensor) -> da.Tensor:
    return 1.0 / (1.0 + da.exp(-x))


def afcnn_mnist2(
    glyph: da.Tensor,
    w1: da.Tensor,
    b1: da.Tensor,
    w2: da.Tensor,
    b2: da.Tensor,
    w3: da.Tensor,
    b3: da.Tensor,
) -> da.Tensor:
    """``afcnnMnist2 logistic softMax1``."""
    hidden1 = logistic(da.matmul(w1, glyph) + b1)
    hidden2 = logistic(da.matmul(w2, hidden1) + b2)
    out = da.matmul(w3, hidden2) + b3
    e = da.exp(out)
    return e / da.sum(e)


def mnist_args() -> tuple[npt.NDArray[np.float32], ...]:
    f32 = np.float32
    return (
        np.array([7, 7, 7], dtype=f32),
        np.tile(np.array([1, 2, 3], dtype=f32), (4, 1)),
        np.array([1, 2, 3, 4], dtype=f32),
        np.tile(np.array([1, 2, 3, 4], dtype=f32), (5, 1)),
        np.arange(1, 6, dtype=f32),
        np.tile(np.arange(1, 6, dtype=f32), (2, 1)),
        np.array([1, 2], dtype=f32),
    )


def test_t21_mnist_fcnn_value() -> None:
    """T21: FCNN afcnnMnist2 logistic softMax1 on glyph [7,7,7] with W1 = rows [1,2,3]×4,
    b1 = [1,2,3,4], W2 = rows [1,2,3,4]×5, b2 = [1..5], W3 = rows [1..5]×2, b3 = [1,2]:
    output [0.26894158, 0.73105836] (Float) (TestMnistPP testVT2OPPNonLin)."""
    assert_close(value(afcnn_mnist2, *mnist_args()), [0.26894158, 0.73105836], dtype=np.float32)


def test_t21_mnist_fcnn_sum_grad_is_zero() -> None:
    """T21 (derived, not in the acceptance file): the outputs are a softmax and sum to 1,
    so the gradient of their sum in every parameter is 0 (float32, up to rounding)."""
    args = mnist_args()
    grads = rev_prime(afcnn_mnist2, *args, argnums=tuple(range(7)))
    assert len(grads) == 7
    for got, arg in zip(grads, args, strict=True):
        got = np.asarray(got)
        assert got.shape == arg.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, np.zeros_like(arg), atol=1e-5)


# ======================================================================================
# T22 zero and empty cases
# ======================================================================================

ZERO_SHAPES = pytest.mark.parametrize(
    "shape", [(), (44,), (33, 2), (0, 2, 4, 0, 1)], ids=["scalar", "44", "33x2", "empty"]
)


def const3(x: da.Tensor) -> da.Tensor:
    return da.constant(np.full(x.shape, 3.0))


def identity(x: da.Tensor) -> da.Tensor:
    return x


@ZERO_SHAPES
def test_t22_zero_const_value(shape: tuple[int, ...]) -> None:
    """T22: the constant function (const 3), forward."""
    assert_close(value(const3, np.full(shape, 42.0)), np.full(shape, 3.0))


@ZERO_SHAPES
def test_t22_zero_const_grad(shape: tuple[int, ...]) -> None:
    """T22: a constant function gives a zero gradient, including for empty shapes such as
    [0,2,4,0,1] (testZeroZ, testZeroS, testZero4s, testZero7S, testZero8, testZero9S)."""
    assert_close(rev_prime(const3, np.full(shape, 42.0)), np.zeros(shape))


@ZERO_SHAPES
def test_t22_zero_const_jvp(shape: tuple[int, ...]) -> None:
    """T22: the forward derivative of a constant function is 0 (testCFwdZeroS,
    testCFwdZero9S)."""
    val, tangent = da.jvp(const3, (np.full(shape, 42.0),), (np.full(shape, 41.0),))
    assert_close(val, np.full(shape, 3.0))
    assert_close(tangent, np.zeros(shape))


@ZERO_SHAPES
def test_t22_identity_grad(shape: tuple[int, ...]) -> None:
    """T22: the identity gives ones (testZero2S, testZero5S)."""
    assert_close(rev_prime(identity, np.full(shape, 42.0)), np.ones(shape))


@ZERO_SHAPES
def test_t22_identity_jvp(shape: tuple[int, ...]) -> None:
    """T22: the forward derivative of the identity is the tangent (testCFwdZero2S: 41)."""
    val, tangent = da.jvp(identity, (np.full(shape, 42.0),), (np.full(shape, 41.0),))
    assert_close(val, np.full(shape, 42.0))
    assert_close(tangent, np.full(shape, 41.0))


def test_t22_zero_const_of_snd_grad() -> None:
    """T22: const 3 . snd on a pair of empty [0,2,4,0,1] arrays: both gradients are empty
    (testZero10S, testZero11S)."""
    shape = (0, 2, 4, 0, 1)

    def fn(x: da.Tensor, y: da.Tensor) -> da.Tensor:
        return const3(y)

    gx, gy = rev_prime(fn, np.full(shape, 42.0), np.full(shape, 21.0), argnums=(0, 1))
    assert_close(gx, np.zeros(shape))
    assert_close(gy, np.zeros(shape))

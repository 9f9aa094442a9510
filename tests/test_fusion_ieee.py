"""Fused kernels compute the unfused program's bits (issue 33, item 3; ``book/api.md``).

The unfused program (one array call per operation) is the fused one's oracle: a kernel
keeps the program's grouping, code generation applies only rewrites exact in IEEE
arithmetic (``t + t = 2.0 * t``), numexpr runs with no optimisation of its own and CuPy
with no fused multiply-add contraction.  On random elementwise programs over NaN, ±inf,
±0, subnormals, 1e300 and 1e22, in float32 and float64, values and gradients are the same
bits (any NaN matching any NaN: a NaN's sign and payload are not values); a
transcendental function computed by another library than the unfused program's (``sin``
and ``cos`` by Intel's Vector Math Library) is within 2 ulp.
"""

from __future__ import annotations

import math
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import dualarr as da
from dualarr.codegen import kernels
from dualarr.codegen.kernels import (
    SCALAR_IN_NUMPY,
    Apply,
    Arg,
    Kernel,
    Literal,
    cupy_source,
    vector_math_ufunc,
)
from dualarr.lang.terms import DType

pytestmark = pytest.mark.usefixtures("fused_small_arrays")  # fusion on for any size

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
SIZE = 6
INPUTS = 3
DTYPES = (np.float64, np.float32)


# -- comparing bits --------------------------------------------------------------------


def assert_same_bits(got: Any, want: Any, what: str = "") -> None:
    """Same dtype and shape, NaN where the other has NaN, the same bits elsewhere (so
    ``-0.0`` is not ``0.0``)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), (what, got, want)
    uint = np.uint64 if want.dtype == np.float64 else np.uint32
    same = got[~nan].view(uint) == want[~nan].view(uint)
    assert np.all(same), (what, got[~nan][~same], want[~nan][~same])


def ulp_distance(got: Any, want: Any) -> list[int]:
    """How many representable numbers apart each pair is (0 for two NaNs and for ±0)."""
    got, want = np.asarray(got), np.asarray(want)
    signed = np.int64 if want.dtype == np.float64 else np.int32
    lowest = int(np.iinfo(signed).min)

    def ordered(a: np.ndarray) -> list[int]:
        return [lowest - i if i < 0 else i for i in a.view(signed).ravel().tolist()]

    both_nan = (np.isnan(got) & np.isnan(want)).ravel().tolist()
    one_nan = (np.isnan(got) ^ np.isnan(want)).ravel().tolist()
    return [
        0 if b else (2**64 if n else abs(g - w))
        for g, w, b, n in zip(ordered(got), ordered(want), both_nan, one_nan, strict=True)
    ]


# -- random elementwise programs -------------------------------------------------------


@dataclass(frozen=True)
class Input:
    index: int


@dataclass(frozen=True)
class Constant:
    value: float


@dataclass(frozen=True)
class Node:
    op: str
    args: tuple[Expr, ...]


Expr = Input | Constant | Node

ARITHMETIC: dict[str, Callable[..., Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a: -a,
    "maximum": lambda a, b: da.maximum(a, b),
    "minimum": lambda a, b: da.minimum(a, b),
    "where": lambda a, b, c, d: da.where(a < b, c, d),
}
FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "exp": da.exp, "log": da.log, "log1p": da.log1p, "expm1": da.expm1, "tanh": da.tanh,
    "sqrt": da.sqrt, "sigmoid": da.sigmoid, "atan": da.atan, "sin": da.sin, "cos": da.cos,
    "cube": lambda a: a ** 3.0, "root": lambda a: a ** 0.5, "square": lambda a: a ** 2.0,
    "exp2": lambda a: 2.0 ** a,
}  # fmt: skip
CONSTANTS = (2.0, 0.5, -3.0, 1.0, 0.1, 1e300, 1e22, 1e17, 1e-310, -0.0, 0.0)
SPECIAL = (math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, -2.2e-308, 1e-310, 1e300,
           -1e300, 1e22, 1e17, 1.0, -1.0, 2.0, 0.1, 3.0, 1e-40, -3e38)  # fmt: skip


def exprs(depth: int, inputs: int = INPUTS) -> st.SearchStrategy[Expr]:
    """A tree over the first ``inputs`` inputs with at most ``depth`` levels of
    arithmetic; a constant is never a whole subtree (so that each operation reads an
    input).  Subtrees recur (``a op a``, ``(a op1 b) op2 b``), as the terms a reverse
    pass adds do: what a regrouping rewrite would see as like terms."""
    leaf = st.integers(0, inputs - 1).map(Input)
    if depth <= 0:
        return leaf
    smaller = exprs(depth - 1, inputs)
    operand = st.one_of(smaller, smaller, st.sampled_from(CONSTANTS).map(Constant))
    binary = st.sampled_from(("add", "sub", "mul", "div", "maximum", "minimum"))
    return st.one_of(
        leaf,
        st.tuples(binary, smaller, operand).map(lambda t: Node(t[0], (t[1], t[2]))),
        st.tuples(binary, operand, smaller).map(lambda t: Node(t[0], (t[1], t[2]))),
        smaller.map(lambda a: Node("neg", (a,))),
        st.tuples(smaller, operand, smaller, operand).map(lambda t: Node("where", t)),
        st.tuples(binary, smaller).map(lambda t: Node(t[0], (t[1], t[1]))),
        st.tuples(binary, binary, operand, smaller, st.booleans()).map(_recurring),
    )


def _recurring(t: tuple[str, str, Expr, Expr, bool]) -> Node:
    """``(a op1 b) op2 b`` or ``b op2 (a op1 b)``."""
    outer, inner, a, b, left = t
    first = Node(inner, (a, b))
    return Node(outer, (first, b) if left else (b, first))


def evaluate(expr: Expr, inputs: Sequence[Any]) -> Any:
    match expr:
        case Input(index=k):
            return inputs[k]
        case Constant(value=value):
            return value
        case Node(op=op, args=args):
            values = [evaluate(a, inputs) for a in args]
            if op in FUNCTIONS:
                return FUNCTIONS[op](values[0])
            return ARITHMETIC[op](*values)


def program(expr: Expr) -> Callable[..., Any]:
    def f(*inputs: Any) -> Any:
        result = evaluate(expr, inputs)
        return result if not isinstance(result, float) else inputs[0] * 0.0 + result

    return f


def arrays(dtype: type[np.floating[Any]]) -> st.SearchStrategy[np.ndarray]:
    """``SIZE`` elements drawn from the special values and from any float of ``dtype``
    (infinities, NaN and subnormals included)."""
    element = st.one_of(
        st.sampled_from(SPECIAL), st.floats(width=64 if dtype is np.float64 else 32)
    )
    return st.lists(element, min_size=SIZE, max_size=SIZE).map(lambda xs: cast(xs, dtype))


def cast(values: list[float], dtype: type[np.floating[Any]]) -> np.ndarray:
    with np.errstate(over="ignore"):  # 1e300 is inf in float32
        return np.array(values).astype(dtype)


def fused_and_unfused(
    f: Callable[..., Any], inputs: Sequence[np.ndarray], cotangent: np.ndarray
) -> tuple[tuple[Any, tuple[Any, ...]], tuple[Any, tuple[Any, ...]], int]:
    """``(value, gradients)`` of the fused and of the unfused gradient program, and how
    many kernels the fused one has."""
    with np.errstate(all="ignore"):  # a constant of 1e300 in a float32 program is inf
        fused = da.pipeline(f, *inputs, fuse=True)
        unfused = da.pipeline(f, *inputs, fuse=False)
        assert unfused.kernels.kernels == ()
        return (
            fused(*inputs, cotangent=cotangent),
            unfused(*inputs, cotangent=cotangent),
            len(fused.kernels.kernels),
        )


# -- the properties --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=120, deadline=None, suppress_health_check=SLOW_OK)
@given(data=st.data())
def test_fused_arithmetic_has_the_unfused_bits(
    dtype: type[np.floating[Any]], data: st.DataObject
) -> None:
    """Values and gradients of a random program over ``+ - * /``, negation, maximum,
    minimum, ``where`` and constants: the same bits fused as unfused."""
    expr = data.draw(exprs(4), label="program")
    inputs = [data.draw(arrays(dtype), label=f"x{k}") for k in range(INPUTS)]
    cotangent = data.draw(arrays(dtype), label="cotangent")
    (value, grads), (want_value, want_grads), count = fused_and_unfused(
        program(expr), inputs, cotangent
    )
    event(f"{np.dtype(dtype).name}: fused kernels {min(count, 3)}")
    assert_same_bits(value, want_value, "value")
    for k, (g, w) in enumerate(zip(grads, want_grads, strict=True)):
        assert_same_bits(g, w, f"gradient {k}")


def applied(name: str) -> st.SearchStrategy[Expr]:
    """``name`` applied to a random arithmetic program, or the product of two such
    applications (so that its result also flows on through arithmetic)."""
    one = exprs(2).map(lambda e: Node(name, (e,)))
    return st.one_of(one, st.tuples(one, exprs(1)).map(lambda t: Node("mul", t)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - SCALAR_IN_NUMPY))
@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)
@given(data=st.data())
def test_a_function_computed_with_the_unfused_programs_library_has_its_bits(
    dtype: type[np.floating[Any]], name: str, data: st.DataObject
) -> None:
    """A transcendental function is NumPy's own ufunc in a kernel of its own, as in the
    unfused program (``pow``, whose NumPy loop rounds otherwise than the C library's, and
    ``sigmoid``, the registry's NumPy calls, included): the same bits.  ``sin`` and
    ``cos`` are the next test's."""
    expr = data.draw(applied(name), label="program")
    inputs = [data.draw(arrays(dtype), label=f"x{k}") for k in range(INPUTS)]
    cotangent = data.draw(arrays(dtype), label="cotangent")
    (value, grads), (want_value, want_grads), _ = fused_and_unfused(
        program(expr), inputs, cotangent
    )
    assert_same_bits(value, want_value, "value")
    for k, (g, w) in enumerate(zip(grads, want_grads, strict=True)):
        assert_same_bits(g, w, f"gradient {k}")


@pytest.mark.parametrize("name", sorted(SCALAR_IN_NUMPY))
@settings(max_examples=60, deadline=None, suppress_health_check=SLOW_OK)
@given(data=st.data())
def test_sin_and_cos_are_within_two_ulp(name: str, data: st.DataObject) -> None:
    """A kernel's ``sin``/``cos`` is Intel's Vector Math Library's SIMD loop
    (``mkl_umath``), or else numexpr's call of the C library, NumPy's float64 loop
    another library's: ``f(t) * w`` and its gradients (``f'(t) * w * c`` and
    ``f(t) * c``, one function each) are within 2 ulp of the unfused program's."""
    event(f"vector math library: {vector_math_ufunc(name) is not None}")
    t = data.draw(exprs(2, INPUTS - 1), label="argument")  # w, the last input, apart
    expr = Node("mul", (Node(name, (t,)), Input(INPUTS - 1)))
    element = st.one_of(st.sampled_from(SPECIAL), st.floats(-1e6, 1e6))
    vectors = st.lists(element, min_size=SIZE, max_size=SIZE).map(np.array)
    inputs = [data.draw(vectors, label=f"x{k}") for k in range(INPUTS)]
    cotangent = data.draw(vectors, label="cotangent")
    (value, grads), (want_value, want_grads), _ = fused_and_unfused(
        program(expr), inputs, cotangent
    )
    assert max(ulp_distance(value, want_value)) <= 2, (value, want_value)
    last = grads[-1], want_grads[-1]  # the factor w: f(t) * c
    assert max(ulp_distance(*last)) <= 2, last
    if isinstance(t, Input):  # f'(x) * (c * w): one function, then one product
        pair = grads[t.index], want_grads[t.index]
        assert max(ulp_distance(*pair)) <= 2, pair


# -- the cases of the issue ------------------------------------------------------------


def sin_of_two_plus_nothing(x: Any, w: Any) -> Any:
    return da.sum(da.sin(2.0 + (x - x)) * w)


def test_two_plus_a_minus_a_keeps_its_grouping_at_1e17() -> None:
    """``2 + (a - a)`` is 2 (not ``2 + a - a``, 0 at ``a = 1e17``): value and gradient
    fused, unfused, interpreted and NumPy's."""
    x = np.full(4, 1e17)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    want = float(np.sum(np.sin(2.0 + (x - x)) * w))
    assert want == pytest.approx(math.sin(2.0) * 10.0)
    results = []
    for mode, fuse in (("compiled", True), ("compiled", False), ("interpret", True)):
        da.clear_caches()
        with da.config.fusing(fuse):
            results.append(
                da.value_and_grad(sin_of_two_plus_nothing, argnums=(0, 1), mode=mode)(x, w)
            )
    (want_value, (want_gx, want_gw)), *others = results  # the first: fused
    assert float(want_value) == want
    np.testing.assert_array_equal(want_gw, np.full(4, math.sin(2.0)))
    np.testing.assert_array_equal(want_gx, np.zeros(4))
    for value, (gx, gw) in others:
        assert_same_bits(value, want_value)
        assert_same_bits(gx, want_gx)
        assert_same_bits(gw, want_gw)
    fused = da.pipeline(sin_of_two_plus_nothing, x, w, fuse=True)
    texts = [kernel.numexpr() for kernel in fused.kernels.kernels]
    assert "2.0 + (x - x)" in texts, texts


def test_a_plus_a_minus_a_at_infinity_is_nan() -> None:
    """``x + x - x`` at ±inf is ``inf - inf``, NaN, as NumPy computes it (not ``x``)."""
    x = np.array([np.inf, -np.inf, 1.0, -0.0])
    with np.errstate(invalid="ignore"):
        want = x + x - x
    for fuse in (True, False):
        da.clear_caches()
        with da.config.fusing(fuse):
            assert_same_bits(da.jit(lambda a: a + a - a)(x), want)
            value, grad = da.value_and_grad(lambda a: da.sum(a + a - a))(x)
        assert math.isnan(float(value))
        assert_same_bits(grad, np.ones(4))


def test_ordinary_values_keep_their_last_bit() -> None:
    """``a - t - t`` is two roundings, ``a - 2.0 * t`` one: the kernel subtracts twice."""

    def f(a: Any, b: Any) -> Any:
        t = a * b
        return a - t - t

    rng = np.random.default_rng(33)
    a, b = rng.normal(size=1000), rng.normal(size=1000)
    t = a * b
    want = a - t - t
    assert not np.array_equal(want, a - 2.0 * t)  # the rewrite would change bits
    with da.config.fusing(True):
        assert_same_bits(da.jit(f)(a, b), want)
    fused = da.pipeline(lambda a, b: da.sum(f(a, b)), a, b, fuse=True)
    assert [str(k.expression) for k in fused.kernels.kernels if "2.0" in k.numexpr()] == []


def test_numexpr_divides_by_a_constant_and_raises_to_a_power_as_numpy() -> None:
    """numexpr's own optimisations are off: ``a / 3.0`` divides (``a * (1 / 3.0)``
    rounds twice) and ``a ** 0.5`` at -0.0 and -inf is NumPy's."""
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.normal(size=2000), [-0.0, -np.inf, np.inf, np.nan, 1e-310]])
    with np.errstate(all="ignore"), da.config.fusing(True):
        assert_same_bits(da.jit(lambda x: (x + 1.0) / 3.0)(a), (a + 1.0) / 3.0)
        assert_same_bits(da.jit(lambda x: (x + 1.0) / 0.0)(a), (a + 1.0) / 0.0)
        for exponent in (0.5, 2.0, 3.0, -1.0, -2.0):
            got = da.jit(lambda x, e=exponent: (x * 1.0) ** e)(a)
            assert_same_bits(got, (a * 1.0) ** exponent, f"** {exponent}")


def test_a_sigmoid_kernel_computes_numpys_exp() -> None:
    """``sigmoid`` alone in its kernel is the registry's NumPy calls (NumPy's ``exp``),
    as in the unfused program, not numexpr's C library ``exp``."""
    x = np.random.default_rng(5).normal(size=5000) * 20.0
    results = []
    for fuse in (True, False):
        da.clear_caches()
        with da.config.fusing(fuse):
            results.append(da.value_and_grad(lambda a: da.sum(da.sigmoid(a * 1.5)))(x))
    (value, grad), (want_value, want_grad) = results
    assert_same_bits(value, want_value)
    assert_same_bits(grad, want_grad)


def test_cupy_kernels_are_compiled_without_fused_multiply_adds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NVRTC contracts ``a * b + c`` into one fused multiply-add by default; the unfused
    program rounds the product: kernels pass ``--fmad=false``."""
    made: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    fake = types.ModuleType("cupy")
    fake.ElementwiseKernel = lambda *args, **kwargs: made.append((args, kwargs))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", fake)
    kernel = Kernel(
        "kernel1", ("a", "b", "c"), (DType.FLOAT64,) * 3,
        Apply("add", (Apply("mul", (Arg(0), Arg(1))), Arg(2))), DType.FLOAT64, (3,),
    )  # fmt: skip
    kernels._cupy_kernel.__wrapped__(cupy_source(kernel), "kernel1")
    ((args, options),) = made
    assert args[2] == "out = a * b + c"
    assert "--fmad=false" in options["options"]


def test_a_negative_literal_keeps_its_grouping() -> None:
    """``a - -2.5``, ``(-2.5) ** a`` and ``-(a - b)`` are written as the tree groups
    them; ``-(a - b)`` is not ``b - a`` (``-0.0`` against ``0.0`` at ``a == b``)."""
    a, b = Arg(0), Arg(1)
    assert kernels.numexpr_text(Apply("neg", (Apply("sub", (a, b)),)), ("a", "b")) == (
        "-(a - b)"
    )
    assert kernels.numexpr_text(Apply("pow", (Literal(-2.5), a)), ("a",)) == "(-2.5) ** a"
    x = np.array([1.0, 0.0, -3.0])
    with da.config.fusing(True):
        got = da.jit(lambda p, q: -(p - q) * 1.0)(x, x.copy())
    assert_same_bits(got, np.full(3, -0.0))


def test_a_large_power_kernel_runs_in_chunks_with_numpys_bits() -> None:
    """``pow`` is NumPy's ufunc alone in its kernel (not numexpr's C library ``pow``,
    1 ulp apart), in chunks on every thread for a large array: the bits of ``x ** 3.0``."""
    from dualarr.codegen.threads import PARALLEL_MIN_SIZE

    x = np.random.default_rng(7).normal(size=PARALLEL_MIN_SIZE + 1000) * 10.0
    with da.config.fusing(True):
        got = da.jit(lambda a: a**3.0 + 1.0)(x)
    assert_same_bits(got, x**3.0 + 1.0)
    fused = da.pipeline(lambda a: da.sum(a**3.0), x, fuse=True)
    assert all("**" not in k.numexpr() or k.operations == 1 for k in fused.kernels.kernels)

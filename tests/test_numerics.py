"""No NaN from derivatives that are 0: constant exponents, pow at a zero base, relu.

* A Delta built from zero Deltas is ``Zero`` (the smart constructor
  :func:`dualarr.ad.delta.pruned`), so pow's exponent term ``x**y · log x`` disappears when
  the exponent is a constant and forward evaluation (jvp) never computes ``log x · 0``.
* ``d/dy x**y`` is ``x**y · log x`` with the log's argument 1 where ``x == 0``
  (JAX's ``_pow_jvp_rhs``): 0 at ``x = 0, y = 2`` on every path, SymPy's included.
* ``relu`` is ``maximum(x, 0)`` in value (``nan`` at ``nan``) and ``select(x > 0, g, 0)``
  in derivative (``jax.nn.relu``): 0 at 0 and at ``nan``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.ad.dual import Dual, DualAlgebra
from dualarr.interp.algebra import IndexFn
from dualarr.interp.evaluate import Interpreter, NumpyAlgebra
from dualarr.lang.terms import Const, DType, Op, Replicate, Term
from dualarr.sympy_reference import sympy_gradient

MODES = ("compiled", "interpret")
SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
SIGNED = np.array([-1.0, 0.0, 2.0])
ZERO, TWO = np.float64(0.0), np.float64(2.0)


def square_sum(x: Any) -> Any:
    return da.sum(x**2)


def layer_norm_loss(x: Any) -> Any:
    """A layer norm (centred, scaled by 1/sqrt(variance + eps)) against fixed weights."""
    centred = x - da.mean(x)
    variance = da.mean(centred**2)
    normed = centred / da.sqrt(variance + 1e-5)
    return da.sum(normed * np.array([0.5, -1.0, 2.0, 1.5]))


def mlp_loss(w: Any, x: Any) -> Any:
    """One hidden relu layer, squared-error loss: constant exponents throughout."""
    hidden = da.relu(da.matmul(w, x))
    return da.mean((hidden - 1.0) ** 2)


def relu_squared(x: Any) -> Any:
    return da.sum(da.relu(x) ** 2)


def concrete_delta(f: Callable[..., Any], *arrays: np.ndarray) -> dl.Delta:
    """The Delta of D with NumPy primals (§6): every argument differentiated."""
    program = da.trace(f, *arrays)
    env = {
        v: Dual(a, dl.Input(k, v.shape, v.dtype))
        for k, (v, a) in enumerate(zip(program.inputs, arrays, strict=True))
    }
    (out,) = Interpreter(DualAlgebra(NumpyAlgebra())).run(list(program.outputs), env)
    assert isinstance(out, Dual)
    return out.delta


def unpruned_nodes(delta: dl.Delta) -> list[dl.Delta]:
    """The nodes the smart constructor would rewrite: linear maps of zeros, Adds of one."""
    return [d for d in dl.delta_postorder([delta]) if dl.pruned(d) is not d]


# -- the smart constructor ----------------------------------------------------------------


def test_linear_maps_of_zero_are_zero() -> None:
    z3, z23 = dl.Zero((3,), DType.FLOAT64), dl.Zero((2, 3), DType.FLOAT64)
    x = dl.Input(0, (3,), DType.FLOAT64)
    index_fn = IndexFn((np.zeros((2, 3), dtype=np.int64),))
    built: list[dl.Delta] = [
        dl.Replicate(2, z3),
        dl.Scale(np.full(3, np.nan), z3),
        dl.Add(z3, dl.Zero((3,), DType.FLOAT64)),
        dl.SumOuter(z23),
        dl.Transpose((1, 0), z23),
        dl.Reshape((6,), z23),
        dl.Index(z23, (np.int64(1),)),
        dl.Gather((2, 3), z3, index_fn, (2, 3)),
        dl.Scatter((3,), z23, index_fn, 2),
        dl.Contract("ij,j->i", z23, np.ones(3)),
        dl.FromList((z3, z3)),
    ]
    for node in built:
        zero = dl.pruned(node)
        assert isinstance(zero, dl.Zero), node
        assert (zero.shape, zero.dtype) == (node.shape, node.dtype)
    assert dl.pruned(dl.Add(z3, x)) is x and dl.pruned(dl.Add(x, z3)) is x
    kept: list[dl.Delta] = [dl.FromList((z3, x)), dl.Scale(np.ones(3), x), dl.Add(x, x), x]
    assert all(dl.pruned(node) is node for node in kept)


@pytest.mark.parametrize("f", [lambda x: x**2, square_sum, relu_squared, layer_norm_loss])
def test_constant_exponents_leave_no_zero_deltas(f: Callable[..., Any]) -> None:
    """Concrete and symbolic Deltas (§6, §7) hold no linear map of zeros, and the
    symbolic one mentions no ``log``: pow's exponent term was never built."""
    x = np.array([-1.0, 0.0, 2.0, 0.5])
    assert unpruned_nodes(concrete_delta(f, x)) == []
    stages = da.pipeline(f, x)
    assert unpruned_nodes(stages.forward.delta) == []
    assert "log" not in str(stages.delta)


# -- 1. constant exponents: no NaN tangents ---------------------------------------------------


def test_jvp_of_square_at_negative_and_zero() -> None:
    value, tangent = da.jvp(lambda x: x**2, (SIGNED,), (np.ones(3),))
    np.testing.assert_array_equal(value, [1.0, 0.0, 4.0])
    np.testing.assert_array_equal(tangent, [-2.0, 0.0, 4.0])


@pytest.mark.parametrize("mode", MODES)
def test_grad_vjp_jacobian_of_square(mode: str) -> None:
    np.testing.assert_array_equal(da.grad(square_sum, mode=mode)(SIGNED), [-2.0, 0.0, 4.0])
    value, pullback = da.vjp(lambda x: x**3, SIGNED, mode=mode)
    np.testing.assert_array_equal(value, [-1.0, 0.0, 8.0])
    (cotangent,) = pullback(np.ones(3))
    np.testing.assert_array_equal(cotangent, [3.0, 0.0, 12.0])
    jacobian = da.jacobian(lambda x: x**2, mode=mode)(SIGNED)
    np.testing.assert_array_equal(jacobian, np.diag([-2.0, 0.0, 4.0]))


@pytest.mark.parametrize("mode", MODES)
def test_jvp_of_grad_with_a_constant_exponent(mode: str) -> None:
    """Second order: the gradient program's own pow terms have constant exponents."""
    hessian_vector = da.jvp(da.grad(lambda x: da.sum(x**3), mode=mode), (SIGNED,), (np.ones(3),))
    np.testing.assert_allclose(hessian_vector[0], 3 * SIGNED**2)
    np.testing.assert_allclose(hessian_vector[1], 6 * SIGNED)


@pytest.mark.parametrize("mode", MODES)
def test_mlp_and_layer_norm_gradients_are_finite(mode: str) -> None:
    w = np.array([[1.0, -1.0], [0.0, 0.0], [-2.0, 0.5]])
    x = np.array([1.0, 1.0])  # hidden pre-activations 0, 0, -1.5: relu's kink
    gw, gx = da.grad(mlp_loss, argnums=(0, 1), mode=mode)(w, x)
    assert np.all(np.isfinite(gw)) and np.all(np.isfinite(gx))
    _, tangent = da.jvp(mlp_loss, (w, x), (np.ones_like(w), np.ones_like(x)))
    assert np.isfinite(tangent)
    point = np.array([-1.0, 0.0, 2.0, 0.5])
    g = da.grad(layer_norm_loss, mode=mode)(point)
    assert np.all(np.isfinite(g))
    _, tangent = da.jvp(layer_norm_loss, (point,), (np.ones(4),))
    np.testing.assert_allclose(tangent, np.sum(g), atol=1e-9)


@pytest.mark.parametrize(
    ("f", "arrays"),
    [
        (relu_squared, (np.array([-1.0, 0.0, 2.0, 0.5]),)),
        (layer_norm_loss, (np.array([-1.0, 0.0, 2.0, 0.5]),)),
        (mlp_loss, (np.array([[1.0, -1.0], [0.5, 0.5], [-2.0, 0.5]]), np.array([1.0, -1.0]))),
    ],
    ids=["relu_squared", "layer_norm", "mlp"],
)
def test_check_grad_passes_with_constant_exponents(
    f: Callable[..., Any], arrays: tuple[np.ndarray, ...]
) -> None:
    report = da.check_grad(f, *arrays)
    assert report.passed, str(report)
    assert all(check.status == "pass" for check in report.checks), str(report)


# -- 2. d/dy x**y at x = 0 ------------------------------------------------------------------


def power(x: Any, y: Any) -> Any:
    return x**y


@pytest.mark.parametrize("mode", MODES)
def test_pow_derivatives_at_a_zero_base(mode: str) -> None:
    gx, gy = da.grad(power, argnums=(0, 1), mode=mode)(ZERO, TWO)
    assert (float(gx), float(gy)) == (0.0, 0.0)
    # away from 0 the rule is unchanged: d/dx = y x**(y-1), d/dy = x**y log x
    base, exponent = np.array([0.0, 3.0, 0.5]), np.array([2.0, 2.0, 3.0])
    gx, gy = da.grad(lambda x, y: da.sum(x**y), argnums=(0, 1), mode=mode)(base, exponent)
    np.testing.assert_allclose(gx, [0.0, 6.0, 0.75])
    np.testing.assert_allclose(gy, [0.0, 9 * np.log(3.0), 0.125 * np.log(0.5)])
    jacobian = da.jacobian(power, argnums=1, mode=mode)(base, exponent)
    np.testing.assert_allclose(jacobian, np.diag(gy))
    _, pullback = da.vjp(power, ZERO, TWO, mode=mode)
    assert [float(c) for c in pullback(np.float64(1.0))] == [0.0, 0.0]


def test_pow_jvp_and_second_derivative_at_a_zero_base() -> None:
    value, tangent = da.jvp(power, (ZERO, TWO), (np.float64(1.0), np.float64(1.0)))
    assert (float(value), float(tangent)) == (0.0, 0.0)
    second = da.grad(da.grad(power, argnums=1), argnums=1)(ZERO, TWO)
    assert float(second) == 0.0


def test_pow_exponent_derivative_of_a_negative_base_is_nan() -> None:
    """As JAX: only x == 0 is special; log of a negative base has no real value."""
    gy = da.grad(power, argnums=1)(np.float64(-2.0), TWO)
    assert np.isnan(gy)


def test_pow_at_a_zero_base_in_the_generated_code() -> None:
    stages = da.pipeline(power, ZERO, TWO)
    value, grads = stages(ZERO, TWO)
    assert float(value) == 0.0 and [float(g) for g in grads] == [0.0, 0.0]
    assert "log" in stages.python  # the exponent's derivative is computed, safely


def test_sympy_pow_derivatives_follow_the_same_convention() -> None:
    symbolic = sympy_gradient(power, ZERO, TWO)
    assert str(symbolic.value) == "x**y"  # the value is SymPy's own power
    value, (gx, gy) = symbolic(ZERO, TWO)
    assert (value, float(gx), float(gy)) == (0.0, 0.0, 0.0)
    value, (gx, gy) = symbolic(np.float64(3.0), TWO)
    assert value == 9.0
    np.testing.assert_allclose([gx, gy], [6.0, 9 * np.log(3.0)])
    report = da.check_grad(power, ZERO, TWO)
    assert report.passed, str(report)
    report = da.check_grad(lambda x, y: da.sum(da.sin(x**y) * y), np.array([0.0, 1.5]), TWO)
    assert report.passed, str(report)


# -- 3. relu at nan ---------------------------------------------------------------------------

SPECIAL = np.array([np.nan, 0.0, 1.0, -2.0, -np.inf, np.inf])
RELU_SLOPE = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 1.0])  # jax.nn.relu's select(x > 0, 1, 0)


def test_relu_value_is_numpy_maximum() -> None:
    np.testing.assert_array_equal(da.trace(da.relu, SPECIAL)(SPECIAL), np.maximum(SPECIAL, 0))
    ints = np.array([3, 0, -2])
    out = da.trace(da.relu, ints)(ints)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [3, 0, 0])


@pytest.mark.parametrize("mode", MODES)
def test_relu_gradient_is_zero_at_zero_and_nan(mode: str) -> None:
    value, g = da.value_and_grad(lambda x: da.sum(da.relu(x)), mode=mode)(SPECIAL)
    assert np.isnan(value)
    np.testing.assert_array_equal(g, RELU_SLOPE)
    for x, slope in [(np.nan, 0.0), (0.0, 0.0), (1.5, 1.0), (-1.5, 0.0)]:  # cond, rank 0
        value, g = da.value_and_grad(da.relu, mode=mode)(np.float64(x))
        np.testing.assert_array_equal(value, np.maximum(x, 0.0))
        assert float(g) == slope
    # a nan value still reaches what it multiplies
    _, gw = da.grad(lambda x, w: da.sum(da.relu(x) * w), argnums=(0, 1), mode=mode)(
        SPECIAL, np.ones(6)
    )
    np.testing.assert_array_equal(gw, np.maximum(SPECIAL, 0))


def test_relu_jvp_at_nan() -> None:
    value, tangent = da.jvp(da.relu, (SPECIAL,), (np.ones(6),))
    np.testing.assert_array_equal(value, np.maximum(SPECIAL, 0))
    np.testing.assert_array_equal(tangent, RELU_SLOPE)


# -- property: random programs raised to constant exponents --------------------------------


def constant_exponent(term: Term, exponent: float, replicated: bool) -> Term:
    """``exponent`` of ``term``'s shape: a NumPy constant, or a replicated scalar as
    traced code builds it (its Delta is then ``Replicate … Zero`` before pruning)."""
    if not replicated:
        return Const(np.full(term.shape, exponent))
    out: Term = Const(np.asarray(exponent))
    for extent in reversed(term.shape):
        out = Replicate(extent, out)
    return out


def central_differences(
    f: Callable[..., Any], arrays: list[np.ndarray], tangents: list[np.ndarray], h: float
) -> np.ndarray:
    """Along ``tangents`` (int inputs, whose tangents are 0, stay put)."""
    program = da.trace(f, *arrays)

    def at(step: float) -> np.ndarray:
        moved = [
            a + step * t if a.dtype.kind == "f" else a
            for a, t in zip(arrays, tangents, strict=True)
        ]
        out: np.ndarray = np.asarray(program(*moved))
        return out

    quotient: np.ndarray = (at(h) - at(-h)) / (2 * h)
    return quotient


def rounding(value: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """A bound on the rounding error of a central difference quotient of ``value``."""
    bound: np.ndarray = 64 * np.finfo(np.float64).eps * np.abs(value) / step
    return bound


@settings(max_examples=150, suppress_health_check=SLOW_OK)
@given(
    programs(float_only=True),
    st.sampled_from([1.0, 2.0, 3.0, 4.0]),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_jvp_with_constant_exponents_has_no_nan(
    gp: GeneratedProgram, exponent: float, replicated: bool, seed: int
) -> None:
    """``T ** c`` for a random program ``T`` and a constant ``c`` (bases of any sign,
    zeros included): where ``T``'s own tangent and the finite differences are finite, the
    tangent is not NaN; it is ``c T**(c-1) dT`` and agrees with finite differences."""
    rng = np.random.default_rng(seed)
    floats = [a.dtype.kind == "f" for a in gp.arrays]
    arrays = [
        np.where(rng.random(a.shape) < 0.25, 0.0, a) if real else a
        for a, real in zip(gp.arrays, floats, strict=True)
    ]
    tangents = [
        rng.normal(size=a.shape) if real else np.zeros(a.shape)
        for a, real in zip(arrays, floats, strict=True)
    ]
    raised = dataclasses.replace(
        gp, term=Op("pow", (gp.term, constant_exponent(gp.term, exponent, replicated)))
    )
    base = gp.function()
    base_value, base_tangent = (np.asarray(v) for v in da.jvp(base, arrays, tangents))
    assume(np.all(np.isfinite(base_value)) and np.max(np.abs(base_value), initial=0.0) < 1e3)
    # central differences of T ** 3 err by about step² · |dT|³ (its third derivative):
    # with a step of 1e-6 they resolve the tangent only while |dT| stays moderate (a loop
    # that doubles its carry each step makes it large: the unrolled program too)
    assume(np.max(np.abs(base_tangent), initial=0.0) < 100)
    f = raised.function()
    value, tangent = (np.asarray(v) for v in da.jvp(f, arrays, tangents))
    np.testing.assert_allclose(value, base_value**exponent, rtol=1e-12)
    fd = central_differences(f, arrays, tangents, 1e-6)
    checked = np.isfinite(base_tangent) & np.isfinite(fd)
    assert not np.any(np.isnan(tangent) & checked), (tangent, fd)
    expected = exponent * base_value ** (exponent - 1) * base_tangent
    np.testing.assert_allclose(tangent[checked], expected[checked], rtol=1e-12, atol=1e-12)
    # where T is differentiable along the tangent (its differences agree with its
    # tangent: no kink), so is T ** c, and the differences agree with the tangent
    # (allowing the quotients' rounding error, about eps * |value| / step)
    base_fd = central_differences(base, arrays, tangents, 1e-6)
    base_allowed = 1e-6 * np.maximum(1.0, np.abs(base_tangent)) + rounding(base_value)
    smooth = checked & (np.abs(base_fd - base_tangent) <= base_allowed)
    allowed = 1e-4 * np.maximum(1.0, np.maximum(np.abs(fd), np.abs(tangent))) + rounding(value)
    assert np.all((np.abs(tangent - fd) <= allowed)[smooth]), (tangent, fd)


@settings(max_examples=60, suppress_health_check=SLOW_OK)
@given(programs(float_only=True), st.sampled_from([2.0, 3.0]))
def test_forward_deltas_are_pruned(gp: GeneratedProgram, exponent: float) -> None:
    """Every node D builds is in pruned form, concrete (§6) and symbolic (§7)."""
    raised = dataclasses.replace(
        gp, term=Op("pow", (gp.term, constant_exponent(gp.term, exponent, True)))
    )
    f = raised.function()
    for delta in (concrete_delta(f, *gp.arrays), da.pipeline(f, *gp.arrays).forward.delta):
        assert unpruned_nodes(delta) == []

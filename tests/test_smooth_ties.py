"""Smooth functions whose lowering has a kink (``max``, ``select``, ``abs``) have the
smooth derivative everywhere, their ties included (issue 33, item 1), and every
derivative order of ``sinc`` is right at its removable singularity 0 (item 6, JAX's
``testSincAtZero``).  Each is checked at its tie points, in both modes and by ``jvp``,
against exact derivatives (50-digit mpmath where there is no closed form)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualarr as da
import dualarr.numpy as dnp

MODES = ["compiled", "interpret"]


def nth_grad(f: Callable[..., Any], order: int, mode: str) -> Callable[..., Any]:
    for _ in range(order):
        f = da.grad(f, mode=mode)
    return f


def sigmoid(t: float) -> float:
    return 1.0 / (1.0 + math.exp(-t))


# --------------------------------------------------------------------------------------
# logaddexp, logaddexp2 and softplus
# --------------------------------------------------------------------------------------

TIES = [0.0, 1.0, -2.5, 40.0, -700.0, 1e300, -1e300]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [dnp.logaddexp, dnp.logaddexp2])
@pytest.mark.parametrize("tie", TIES)
def test_logaddexp_splits_a_tie_evenly(fn: Any, tie: float, mode: str) -> None:
    ga, gb = da.grad(fn, argnums=(0, 1), mode=mode)(tie, tie)
    assert (float(ga), float(gb)) == (0.5, 0.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logaddexp_ties_of_arrays_split_evenly_by_jvp(dtype: Any) -> None:
    x = np.array([0.0, 3.0, -7.0], dtype)
    for fn in (dnp.logaddexp, dnp.logaddexp2):
        _, tangent = da.jvp(fn, (x, x), (np.ones_like(x), np.zeros_like(x)))
        np.testing.assert_array_equal(tangent, np.full(3, 0.5, dtype))


@pytest.mark.parametrize("mode", MODES)
def test_softplus_as_logaddexp_has_the_smooth_derivatives_at_zero(mode: str) -> None:
    def softplus(x: Any) -> Any:
        return dnp.logaddexp(0.0, x)

    # sigma(0), sigma'(0), sigma''(0)
    assert [float(nth_grad(softplus, k, mode)(0.0)) for k in (1, 2, 3)] == [0.5, 0.25, 0.0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("offset", [0.0, 1e-12, -1e-9, 0.3, -2.0, 30.0])
def test_logaddexp_derivatives_near_a_tie_are_the_sigmoids(offset: float, mode: str) -> None:
    a, b = 0.7, 0.7 + offset
    ga, gb = da.grad(dnp.logaddexp, argnums=(0, 1), mode=mode)(a, b)
    assert float(ga) == pytest.approx(sigmoid(a - b), rel=1e-15)
    assert float(gb) == pytest.approx(sigmoid(b - a), rel=1e-15)
    second = nth_grad(lambda t: dnp.logaddexp(t, b), 2, mode)(a)
    assert float(second) == pytest.approx(sigmoid(a - b) * sigmoid(b - a), rel=1e-14)
    g2a, g2b = da.grad(dnp.logaddexp2, argnums=(0, 1), mode=mode)(a, b)
    assert float(g2a) == pytest.approx(1.0 / (1.0 + 2.0 ** (b - a)), rel=1e-15)
    assert float(g2b) == pytest.approx(1.0 / (1.0 + 2.0 ** (a - b)), rel=1e-15)


SPECIAL = [0.0, -0.0, 1.0, -3.5, 40.0, -745.0, 1e300, -1e300, 5e-324, math.inf, -math.inf, math.nan]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_logaddexp_values_are_numpys_bits_at_special_values() -> None:
    pairs = list(itertools.product(SPECIAL, SPECIAL))
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    for fn, reference in ((dnp.logaddexp, np.logaddexp), (dnp.logaddexp2, np.logaddexp2)):
        for got in (fn(a, b), da.jit(fn)(a, b)):
            np.testing.assert_array_equal(got, reference(a, b))


@pytest.mark.parametrize("mode", MODES)
def test_logaddexp_derivative_at_infinities_is_the_limit(mode: str) -> None:
    inf = math.inf
    cases = {
        (inf, 1.0): (1.0, 0.0),
        (1.0, inf): (0.0, 1.0),
        (inf, -inf): (1.0, 0.0),
        (-inf, 2.0): (0.0, 1.0),
        (inf, inf): (0.5, 0.5),
        (-inf, -inf): (0.5, 0.5),
    }
    for (a, b), expected in cases.items():
        for fn in (dnp.logaddexp, dnp.logaddexp2):
            ga, gb = da.grad(fn, argnums=(0, 1), mode=mode)(a, b)
            assert (float(ga), float(gb)) == expected, (fn.__name__, a, b)


@settings(max_examples=80, deadline=None)
@given(
    st.floats(-50.0, 50.0),
    st.sampled_from([0.0, 5e-324, 1e-300, 1e-16, 1e-8, 1e-3]),
    st.sampled_from([1.0, -1.0]),
)
def test_logaddexp_gradient_near_ties_is_continuous(a: float, gap: float, side: float) -> None:
    """Near a tie (gaps down to the least subnormal) the gradient is the sigmoid pair,
    within an ulp: no jump between ``a > b``, ``a == b`` and ``a < b``."""
    b = a + side * gap
    for mode in MODES:
        ga, gb = da.grad(dnp.logaddexp, argnums=(0, 1), mode=mode)(a, b)
        assert float(ga) == pytest.approx(sigmoid(a - b), rel=3e-16, abs=0)
        assert float(ga) + float(gb) == pytest.approx(1.0, rel=3e-16)


# --------------------------------------------------------------------------------------
# logsumexp and softmax (da), equal maxima
# --------------------------------------------------------------------------------------


def softmax_reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return np.asarray(e / np.sum(e))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("row", [[1.0, 1.0, 0.0], [2.0, 2.0, 2.0], [0.0, 0.0], [-5.0, 3.0, 3.0]])
def test_logsumexp_gradient_at_equal_maxima_is_the_softmax(row: list[float], mode: str) -> None:
    x = np.array(row)
    np.testing.assert_allclose(
        da.grad(da.logsumexp, mode=mode)(x), softmax_reference(x), rtol=1e-15
    )
    rows = np.stack([x, x[::-1]])
    g = da.grad(lambda m: da.sum(da.logsumexp(m, axis=1)), mode=mode)(rows)
    np.testing.assert_allclose(g[0], softmax_reference(x), rtol=1e-15)


@pytest.mark.parametrize("mode", MODES)
def test_softmax_jacobian_at_equal_maxima_is_diag_p_minus_ppt(mode: str) -> None:
    x = np.array([1.0, 1.0, 0.0])
    p = softmax_reference(x)
    w = np.array([0.3, -1.0, 2.0])
    g = da.grad(lambda t: da.sum(da.softmax(t) * w), mode=mode)(x)
    np.testing.assert_allclose(g, (np.diag(p) - np.outer(p, p)) @ w, rtol=1e-14, atol=1e-16)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_logsumexp_of_infinities_is_infinite_as_scipys() -> None:
    inf = math.inf
    whole = da.jit(da.logsumexp)
    assert float(whole(np.array([inf, 1.0]))) == inf
    assert float(whole(np.array([-inf, -inf]))) == -inf
    assert float(whole(np.array([-inf, 2.0]))) == 2.0
    rows = da.jit(lambda x: da.logsumexp(x, axis=1))
    np.testing.assert_array_equal(rows(np.array([[1.0, inf], [-inf, -inf]])), [inf, -inf])


# --------------------------------------------------------------------------------------
# hypot, arcsinh, arctanh
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("a, b", [(3.0, 3.0), (3.0, -3.0), (1e300, 1e300), (1e-200, -1e-200)])
def test_hypot_at_equal_magnitudes_has_smooth_derivatives(a: float, b: float, mode: str) -> None:
    h = math.hypot(a, b)
    ga, gb = da.grad(dnp.hypot, argnums=(0, 1), mode=mode)(a, b)
    assert float(ga) == pytest.approx(a / h, rel=1e-15)
    assert float(gb) == pytest.approx(b / h, rel=1e-15)
    second = nth_grad(lambda t: dnp.hypot(t, b), 2, mode)(a)
    assert float(second) == pytest.approx((b / h) ** 2 / h, rel=1e-14)


@pytest.mark.parametrize("mode", MODES)
def test_hypot_derivative_is_finite_at_its_kink_and_at_infinity(mode: str) -> None:
    grad = da.grad(dnp.hypot, argnums=(0, 1), mode=mode)
    assert [float(g) for g in grad(0.0, 0.0)] == [0.0, 0.0]  # jnp.hypot's subgradient
    assert [float(g) for g in grad(math.inf, 1.0)] == [0.0, 0.0]  # jnp.hypot's
    assert [float(g) for g in grad(0.0, 2.0)] == [0.0, 1.0]
    ga, _ = grad(1e-320, 1e-320)  # subnormal: finite, within the argument's few bits
    assert float(ga) == pytest.approx(math.sqrt(0.5), rel=1e-3)


@pytest.mark.parametrize("mode", MODES)
def test_inverse_hyperbolic_functions_have_every_derivative_at_zero(mode: str) -> None:
    # asinh: 1, 0, -1; atanh: 1, 0, 2 (their max(x, 0) halves meet at 0)
    for fn, expected in ((dnp.arcsinh, [1.0, 0.0, -1.0]), (dnp.arctanh, [1.0, 0.0, 2.0])):
        got = [float(nth_grad(fn, k, mode)(0.0)) for k in (1, 2, 3)]
        assert got == pytest.approx(expected, abs=1e-15), fn.__name__


# --------------------------------------------------------------------------------------
# sinc: every derivative order, at 0 and away from it
# --------------------------------------------------------------------------------------


def sinc_derivative(x: float, order: int) -> float:
    """Derivative ``order`` of ``sin(pi x) / (pi x)`` at ``x``, to 50 digits."""
    with mpmath.workdps(50):
        return float(mpmath.diff(lambda t: mpmath.sinc(mpmath.pi * t), mpmath.mpf(x), order))


@pytest.mark.parametrize("mode", MODES)
def test_sinc_at_zero_has_every_derivative_as_jaxs_test(mode: str) -> None:
    # JAX's testSincAtZero: sinc'' (0) = -pi^2/3, sinc''''(0) = pi^4/5
    assert float(nth_grad(dnp.sinc, 1, mode)(0.0)) == 0.0
    assert float(nth_grad(dnp.sinc, 2, mode)(0.0)) == pytest.approx(-(math.pi**2) / 3, rel=1e-15)
    assert float(nth_grad(dnp.sinc, 3, mode)(0.0)) == 0.0
    assert float(nth_grad(dnp.sinc, 4, mode)(0.0)) == pytest.approx(math.pi**4 / 5, rel=1e-15)
    # beyond the built-in records, the next ones are made on first use
    assert float(nth_grad(dnp.sinc, 6, mode)(0.0)) == pytest.approx(-(math.pi**6) / 7, rel=1e-14)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x", [1e-9, -1e-4, 0.3, -0.999, 1.0, 2.5, -7.25, 40.0])
def test_sinc_derivatives_away_from_zero(x: float, mode: str) -> None:
    for order in range(1, 5):
        got = float(nth_grad(dnp.sinc, order, mode)(x))
        scale = math.pi**order / (order + 1)  # the largest magnitude of this derivative
        assert abs(got - sinc_derivative(x, order)) <= 1e-14 * scale, (order, got)


@settings(max_examples=60, deadline=None)
@given(st.floats(-6.0, 6.0), st.integers(1, 4))
def test_sinc_derivative_property(x: float, order: int) -> None:
    got = float(nth_grad(dnp.sinc, order, "compiled")(x))
    scale = math.pi**order / (order + 1)
    assert abs(got - sinc_derivative(x, order)) <= 1e-14 * scale


def test_sinc_values_are_numpys_bits_and_jvp_and_jit_agree() -> None:
    x = np.array([0.0, -0.0, 1e-30, 0.25, 1.0, -3.5, 1e10, math.inf, math.nan])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(dnp.sinc(x), np.sinc(x))
        np.testing.assert_array_equal(da.jit(dnp.sinc)(x), np.sinc(x))
    points = np.array([0.0, 0.5, -1.25])
    value, tangent = da.jvp(dnp.sinc, (points,), (np.ones(3),))
    np.testing.assert_array_equal(value, np.sinc(points))
    np.testing.assert_allclose(
        tangent, [sinc_derivative(float(p), 1) for p in points], rtol=1e-14, atol=1e-16
    )
    batched = da.vmap(lambda t: da.grad(da.grad(dnp.sinc))(t))(points)
    np.testing.assert_allclose(batched, [sinc_derivative(float(p), 2) for p in points], rtol=1e-14)

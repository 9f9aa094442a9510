"""A primitive defined outside the package, with its own derivative, works through every
stage: tracing, printing, the bot, grad/jvp/vjp/jacobian/vmap in both modes, code
generation, drawing, ``check_grad`` (SymPy included) and the array-API path.  The proof
that one record (``da.primitive``) is all a primitive needs."""

from __future__ import annotations

import math
from typing import Any

import array_api_strict as xps
import numpy as np
import pytest

import dualarr as da
from dualarr.lang.primitives import REGISTRY

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def erf_series(xp: Any, x: Any) -> Any:
    """erf by its Taylor series, written once against any array-API namespace: exact to
    rounding for |x| <= 2 (the inputs below)."""
    term = x
    total = x
    for n in range(1, 48):
        term = term * (-(x * x)) / n
        total = total + term / (2 * n + 1)
    return TWO_OVER_SQRT_PI * total


erf = da.primitive(
    "erf",
    erf_series,
    (lambda m, x, y: m.exp(-(x * x)) * TWO_OVER_SQRT_PI,),
    sympy=lambda s, x: s.sp.erf(x),
    doc="The error function.",
)

X = np.array([-1.5, -0.2, 0.0, 0.7, 1.9])
MODES = ["compiled", "interpret"]


def erf_np(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.vectorize(math.erf)(x), dtype=np.float64)


def d_erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(TWO_OVER_SQRT_PI * np.exp(-x * x), dtype=np.float64)


def loss(x: Any) -> Any:
    return da.sum(erf(x) * x)


def test_one_record_in_the_registry() -> None:
    record = REGISTRY["erf"]
    assert record.function == "erf" and record.arity == 1 and record.doc
    assert da.erf is not None and da.erf.__doc__ == "The error function."


def test_tracing_printing_and_the_reference_evaluator() -> None:
    program = da.trace(loss, X)
    assert "erf x" in str(program)
    np.testing.assert_allclose(program(X), np.sum(erf_np(X) * X), rtol=1e-13)
    np.testing.assert_allclose(da.trace(erf, np.arange(3))(np.arange(3)), erf_np(np.arange(3.0)))
    with pytest.raises(da.TracingError, match="takes 1 argument"):
        da.trace(lambda x: erf(x, x), X)


@pytest.mark.parametrize("mode", MODES)
def test_gradients_in_both_modes(mode: str) -> None:
    expected = erf_np(X) + X * d_erf(X)
    np.testing.assert_allclose(da.grad(loss, mode=mode)(X), expected, rtol=1e-12)
    np.testing.assert_allclose(da.jacobian(erf, mode=mode)(X), np.diag(d_erf(X)), rtol=1e-12)
    value, pullback = da.vjp(erf, X, mode=mode)
    np.testing.assert_allclose(value, erf_np(X), rtol=1e-13)
    np.testing.assert_allclose(pullback(np.ones(5))[0], d_erf(X), rtol=1e-12)
    _, tangent = da.jvp(erf, (X,), (np.ones(5),))
    np.testing.assert_allclose(tangent, d_erf(X), rtol=1e-12)
    # second derivative: the partial is itself traced code (erf'' = -2x erf')
    second = da.grad(lambda x: da.grad(lambda y: erf(y))(x), mode=mode)(0.7)
    assert second == pytest.approx(-2 * 0.7 * d_erf(np.array(0.7)), rel=1e-12)


def test_the_bot_and_vmap_vectorise_it() -> None:
    def fig18_erf(x: Any) -> Any:
        n = x.shape[0]
        return da.sum(da.build1(n, lambda i: erf(x[i]) * x[n - 1 - i]))

    p = da.pipeline(fig18_erf, X)
    assert da.is_bot_normal(p.vectorised.term) and "erf" in str(p.vectorised)
    rows = np.stack([X, -X])
    sums = da.vmap(lambda r: da.sum(erf(r)))(rows)
    np.testing.assert_allclose(sums, [np.sum(erf_np(X)), -np.sum(erf_np(X))], atol=1e-14)
    per_row = da.vmap(da.grad(loss))(rows)
    np.testing.assert_allclose(per_row[1], erf_np(-X) + -X * d_erf(X), rtol=1e-12)


def test_generated_code_and_drawing() -> None:
    p = da.pipeline(loss, X)
    assert "implementations['erf'](xp, " in p.python
    value, (gradient,) = p(X)
    assert value == pytest.approx(np.sum(erf_np(X) * X), rel=1e-13)
    np.testing.assert_allclose(gradient, erf_np(X) + X * d_erf(X), rtol=1e-12)
    assert "erf" in p.source.graph().source
    np.testing.assert_allclose(da.jit(da.grad(loss))(X), gradient, rtol=1e-13)


def test_check_grad_with_sympy() -> None:
    report = da.check_grad(loss, X)
    assert report.passed, str(report)
    assert "SymPy" in str(report)


@pytest.mark.parametrize("mode", MODES)
def test_the_array_api_path(mode: str) -> None:
    gradient = da.grad(loss, mode=mode)(xps.asarray(X))
    assert isinstance(gradient, type(xps.asarray(X)))
    host = np.asarray(gradient._array)
    np.testing.assert_allclose(host, erf_np(X) + X * d_erf(X), rtol=1e-12)


def test_defined_again_it_is_a_new_program_and_built_in_names_are_taken() -> None:
    def scaled(k: float) -> Any:
        return da.primitive(
            "scaled_erf",
            lambda xp, x: k * erf_series(xp, x),
            (lambda m, x, y: m.exp(-(x * x)) * (k * TWO_OVER_SQRT_PI),),
        )

    twice = scaled(2.0)
    np.testing.assert_allclose(da.grad(lambda x: da.sum(twice(x)))(X), 2 * d_erf(X), rtol=1e-12)
    thrice = scaled(3.0)  # the same name again: not the cached program of twice
    np.testing.assert_allclose(da.grad(lambda x: da.sum(thrice(x)))(X), 3 * d_erf(X), rtol=1e-12)
    with pytest.raises(da.DualarrError, match="one of dualarr's elementwise primitives"):
        da.primitive("exp", erf_series, (lambda m, x, y: y,))
    with pytest.raises(da.DualarrError, match="one or two arguments"):
        da.primitive("nothing", erf_series, ())

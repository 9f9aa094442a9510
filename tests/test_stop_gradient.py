"""``da.stop_gradient``: the identity whose derivative is 0 (as ``jax.lax.stop_gradient``),
on every path: concrete and compiled gradients, SymPy, traced ``grad``; and the stable
``logsumexp``/``softmax`` that use it for their shift."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dualarr as da

X = np.array([0.3, -1.2, 2.0, 0.7])


@pytest.mark.parametrize("mode", ["compiled", "interpret"])
def test_the_stopped_factor_is_a_constant(mode: str) -> None:
    def f(x: Any) -> Any:
        return da.sum(da.stop_gradient(x) * x)

    assert da.trace(f, X)(X) == pytest.approx(float(X @ X))
    np.testing.assert_allclose(da.grad(f, mode=mode)(X), X, rtol=1e-15)
    np.testing.assert_allclose(da.grad(lambda x: da.sum(da.stop_gradient(x)), mode=mode)(X), 0)


def test_sympy_treats_it_as_a_constant_too() -> None:
    exact = da.sympy_gradient(lambda x: da.sum(da.stop_gradient(x) * da.sin(x)), X)
    value, (gradient,) = exact(X)
    assert value == pytest.approx(float(X @ np.sin(X)))
    np.testing.assert_allclose(gradient, X * np.cos(X), rtol=1e-12)


def test_second_derivatives_see_it() -> None:
    def inner(y: Any) -> Any:
        return da.sum(da.stop_gradient(y) * y * y)  # d/dy = y**2 (the stopped y held)

    def outer(x: Any) -> Any:
        return da.sum(da.grad(inner)(x))

    np.testing.assert_allclose(da.grad(outer)(X), 2 * X, rtol=1e-12)


def test_logsumexp_and_softmax_shift_by_a_stopped_max() -> None:
    """The shift cancels, so the gradient is the softmax, and the gradient program does
    not differentiate through the max (no argmax scatter of zeros)."""
    np.testing.assert_allclose(da.grad(da.logsumexp)(X), np.exp(X) / np.exp(X).sum())
    text = str(da.pipeline(da.logsumexp, X).gradient)
    assert "scatter" not in text and "argmax" in text  # the max is computed, once
    big = np.array([1000.0, 999.0, -5.0])
    assert float(da.trace(da.logsumexp, big)(big)) == pytest.approx(1000.0 + np.log1p(np.exp(-1)))
    soft = da.trace(lambda x: da.softmax(x), big)(big)
    np.testing.assert_allclose(soft, np.exp(big - 1000) / np.exp(big - 1000).sum())
    report = da.check_grad(lambda x: da.sum(da.softmax(x) * x) + da.logsumexp(x * x), X)
    assert report.passed, str(report)

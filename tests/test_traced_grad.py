"""``da.grad``, ``da.vjp``, ``da.jvp`` and ``da.jacobian`` in a trace: ``vmap(grad(f))``
(per-example gradients), ``grad`` of ``grad``, Hessians, ``vmap`` of a pullback.  The
gradient program of §7 is instantiated as terms of the enclosing trace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualarr as da

LOSSES: list[Callable[[Any], Any]] = [
    lambda x: da.sum(x * x * x),
    lambda x: da.sum(da.sin(x) * x),
    lambda x: da.logsumexp(x),
    lambda x: da.sum(da.build1(x.shape[0], lambda i: x[i] * x[x.shape[0] - 1 - i])),
    lambda x: da.max(x) * da.sum(da.tanh(x)),
]


@settings(max_examples=25, deadline=None)
@given(
    which=st.integers(0, len(LOSSES) - 1),
    rows=st.integers(1, 4),
    cols=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_vmap_of_grad_is_the_gradient_of_every_row(
    which: int, rows: int, cols: int, seed: int
) -> None:
    loss = LOSSES[which]
    xs = np.random.default_rng(seed).uniform(-1.5, 1.5, (rows, cols))
    per_row = np.stack([da.grad(loss)(row) for row in xs])
    np.testing.assert_allclose(da.vmap(da.grad(loss))(xs), per_row, rtol=1e-12, atol=1e-12)


def test_vmap_of_grad_with_a_shared_parameter() -> None:
    def loss(w: Any, x: Any) -> Any:
        return da.sum(da.tanh(x * w))

    w, xs = np.linspace(0.5, 1.5, 3), np.arange(6.0).reshape(2, 3) / 4
    got = da.vmap(da.grad(loss), in_axes=(None, 0))(w, xs)
    want = np.stack([da.grad(loss)(w, x) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # the per-example gradients are computed in bulk: no build1 survives the bot
    p = da.pipeline(lambda w, xs: da.vmap(da.grad(loss), in_axes=(None, 0))(w, xs), w, xs)
    assert "build1" not in str(p.vectorised)


def test_grad_of_grad_is_the_second_derivative() -> None:
    x = np.array([0.1, 0.7, -0.4])

    def first(y: Any) -> Any:
        return da.sum(da.grad(lambda z: da.sum(da.sin(z) * z))(y))

    h = 1e-6
    fd = np.array([
        (da.grad(lambda z: da.sum(da.sin(z) * z))(x + h * e)
         - da.grad(lambda z: da.sum(da.sin(z) * z))(x - h * e)).sum() / (2 * h)
        for e in np.eye(3)
    ])
    np.testing.assert_allclose(da.grad(first)(x), fd, rtol=1e-6)
    np.testing.assert_allclose(da.grad(first)(x), 2 * np.cos(x) - x * np.sin(x), rtol=1e-12)


def test_value_and_grad_in_a_trace_returns_both() -> None:
    def both(x: Any) -> Any:
        value, g = da.value_and_grad(lambda y: da.sum(y * y))(x)
        return value + da.sum(g)

    x = np.array([1.0, 2.0])
    assert da.trace(both, x)(x) == pytest.approx(5.0 + 6.0)


def test_jvp_in_a_trace_transposes_the_pullback() -> None:
    def f(y: Any) -> Any:
        return da.sin(y) * da.sum(y * y)

    xs = np.arange(6.0).reshape(2, 3) / 5
    vs = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 1.0]])
    values, tangents = da.vmap(lambda x, v: da.jvp(f, (x,), (v,)))(xs, vs)
    for x, v, value, tangent in zip(xs, vs, values, tangents, strict=True):
        want_value, want_tangent = da.jvp(f, (x,), (v,))
        np.testing.assert_allclose(value, want_value, rtol=1e-12)
        np.testing.assert_allclose(tangent, want_tangent, rtol=1e-12)


def test_hessian_vector_products_both_ways() -> None:
    def f(x: Any) -> Any:
        return da.sum(da.sin(x) * x) * da.sum(x * x)

    x, v = np.array([0.1, 0.5, -0.3]), np.array([1.0, -2.0, 0.5])
    hessian = da.jacobian(da.grad(f))(x)
    forward_over_reverse = da.jvp(da.grad(f), (x,), (v,))[1]
    reverse_over_reverse = da.grad(lambda y: da.sum(da.grad(f)(y) * v))(x)
    np.testing.assert_allclose(forward_over_reverse, hessian @ v, rtol=1e-12)
    np.testing.assert_allclose(reverse_over_reverse, hessian @ v, rtol=1e-12)


def test_vmap_of_a_pullback() -> None:
    def f(y: Any) -> Any:
        return da.sin(y) * da.sum(y)

    xs = np.arange(6.0).reshape(2, 3) / 5
    cts = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0]])

    def pulled(x: Any, ct: Any) -> Any:
        value, pullback = da.vjp(f, x)
        return pullback(ct)[0] + 0.0 * da.sum(value)

    got = da.vmap(pulled)(xs, cts)
    want = np.stack([da.vjp(f, x)[1](ct)[0] for x, ct in zip(xs, cts, strict=True)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_jacobians_in_a_trace() -> None:
    def g(y: Any) -> Any:
        return da.sin(y) * y[0]

    xs = np.arange(6.0).reshape(2, 3) / 5
    per_row = da.vmap(da.jacobian(g))(xs)
    np.testing.assert_allclose(per_row, np.stack([da.jacobian(g)(x) for x in xs]), rtol=1e-12)
    x = xs[1]
    third = da.jacobian(da.jacobian(g))(x)  # d^2 g_i / dx_j dx_k
    h = 1e-5
    fd = np.stack(
        [(da.jacobian(g)(x + h * e) - da.jacobian(g)(x - h * e)) / (2 * h) for e in np.eye(3)],
        axis=-1,
    )
    np.testing.assert_allclose(third, fd, rtol=1e-6, atol=1e-8)
    with pytest.raises(da.UnsupportedError, match="one float output"):
        da.vmap(lambda x: da.vjp(lambda y: (y, y), x)[0][0])(xs)


def test_grad_in_a_trace_keeps_its_errors() -> None:
    with pytest.raises(da.ShapeError, match="grad needs a function returning one rank-0"):
        da.vmap(da.grad(lambda x: x * x))(np.ones((2, 3)))


@pytest.mark.parametrize("mode", ["compiled", "interpret"])
def test_jacobian_of_grad_is_the_hessian(mode: str) -> None:
    def f(x: Any) -> Any:  # not separable: the Hessian has off-diagonal entries
        return da.sum(da.sin(x) * x) * da.sum(x * x) + da.logsumexp(x)

    x = np.array([0.1, 0.5, -0.3, 1.2])
    hessian = da.jacobian(da.grad(f), mode=mode)(x)
    h = 1e-6
    columns = [
        (da.grad(f)(x + h * e) - da.grad(f)(x - h * e)) / (2 * h) for e in np.eye(x.size)
    ]
    np.testing.assert_allclose(hessian, np.stack(columns, axis=1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-12, atol=1e-12)

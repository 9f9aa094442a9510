"""Dual-arrays AD: Delta invariants and sizes, the reverse pass's order, the API's errors,
and the teaching baselines (paper §2, §4, §6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.ad.reverse import ReverseStats, forward, reverse
from dualarr.api import DualRun, dual_run, vectorised_program
from dualarr.interp.evaluate import NumpyAlgebra
from dualarr.lang.terms import DType
from dualarr.teach.baselines import dual_arrays_gradient, scalar_gradient, unvectorised_gradient
from dualarr.teach.examples import fig18


def sum_xy(x: da.Tensor, y: da.Tensor) -> da.Tensor:
    return da.sum(x * y)


def delta_of(f: Callable[..., Any], *args: Any) -> DualRun:
    program = vectorised_program(f, args)
    positions = tuple(k for k, v in enumerate(program.inputs) if v.dtype.is_float)
    return dual_run(program, args, positions)


def test_dual_arrays_delta_size_does_not_depend_on_n() -> None:
    for n_small, n_large in [(10, 10**6)]:
        assert dl.size(delta_of(sum_xy, np.ones(n_small), np.ones(n_small)).deltas) == dl.size(
            delta_of(sum_xy, np.ones(n_large), np.ones(n_large)).deltas
        )
        assert dl.size(delta_of(fig18, np.ones(n_small)).deltas) == dl.size(
            delta_of(fig18, np.ones(n_large)).deltas
        )


def test_scalar_baseline_delta_grows_linearly_with_n() -> None:
    sizes = (10, 20, 40)
    counts = [scalar_gradient(sum_xy, np.ones(n), np.ones(n)).delta_nodes for n in sizes]
    slopes = {
        (counts[k + 1] - counts[k]) / (sizes[k + 1] - sizes[k]) for k in range(len(sizes) - 1)
    }
    assert len(slopes) == 1 and slopes.pop() > 0  # exactly linear in n
    assert counts[2] > 3 * counts[0]
    fixed = [dual_arrays_gradient(sum_xy, np.ones(n), np.ones(n)).delta_nodes for n in (10, 40)]
    assert fixed[0] == fixed[1] < counts[0]


def test_baselines_compute_the_same_gradient_and_report_one_hots() -> None:
    x = np.linspace(-1, 2, 7)
    reports = [g(fig18, x) for g in (scalar_gradient, unvectorised_gradient, dual_arrays_gradient)]
    for report in reports:
        np.testing.assert_allclose(report.gradients[0], 2 * x[::-1])
        assert report.seconds > 0 and "Delta nodes" in str(report)
    unvectorised, vectorised = reports[1], reports[2]
    assert unvectorised.one_hots == 2 * len(x)  # two x[..] reads per element, one-hot each
    assert vectorised.one_hots == 0  # after the bot: a gather, transposed to a scatter


def test_delta_invariants_hold_for_forward_passes() -> None:
    def shared(x: da.Tensor) -> da.Tensor:
        y = x
        for _ in range(50):
            y = da.sin(y) * y + y
        return da.sum(y)

    run = delta_of(shared, np.linspace(0, 1, 4))
    dl.check_invariants(run.deltas)
    x = dl.Input(0, (), DType.FLOAT64)
    inner = dl.Share(5, x)
    with pytest.raises(da.DualarrError, match="Invariant 1"):
        dl.check_invariants([dl.Share(3, dl.Add(inner, x))])
    with pytest.raises(da.DualarrError, match="Invariant 2"):
        dl.check_invariants([dl.Add(dl.Share(7, x), dl.Share(7, dl.Add(x, x)))])


def test_reverse_pass_visits_each_share_once_in_decreasing_order() -> None:
    def shared(x: da.Tensor) -> da.Tensor:
        y = x * 2.0
        for _ in range(30):
            y = 0.5 * (y + y - 1.0)
        return da.sum(y * y)

    run = delta_of(shared, np.linspace(0, 1, 5))
    stats = ReverseStats()
    reverse(NumpyAlgebra(), run.deltas[0], np.ones(()), stats)
    ids = [d.id for d in dl.delta_postorder(run.deltas) if isinstance(d, dl.Share)]
    assert sorted(stats.share_order, reverse=True) == stats.share_order
    assert len(set(stats.share_order)) == len(stats.share_order)
    assert set(stats.share_order) == set(ids)


def test_forward_evaluation_of_delta_is_the_jvp() -> None:
    x = np.linspace(-1, 1, 6)
    t = np.cos(np.arange(6.0))
    run = delta_of(fig18, x)
    got = forward(NumpyAlgebra(), run.deltas[0], {0: t})
    np.testing.assert_allclose(got, np.dot(2 * x[::-1], t))
    _, tangent = da.jvp(fig18, (x,), (t,))
    np.testing.assert_allclose(tangent, got)


def test_jacobian_matches_finite_differences() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        return da.softmax(x) * da.sum(x * x)

    x = np.array([0.3, -1.2, 2.0])
    jac = da.jacobian(f)(x)
    program = da.trace(f, x)
    h = 1e-6
    fd = np.stack([(program(x + h * e) - program(x - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)


def test_grad_argnums_and_value_and_grad() -> None:
    x, y = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    gx, gy = da.grad(sum_xy, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, y)
    np.testing.assert_allclose(gy, x)
    np.testing.assert_allclose(da.grad(sum_xy, argnums=-1)(x, y), x)
    value, g = da.value_and_grad(sum_xy)(x, y)
    assert value == 13.0
    np.testing.assert_allclose(g, y)
    assert g.flags.writeable


def test_grad_errors_name_the_problem() -> None:
    with pytest.raises(da.ShapeError, match=r"rank-0 float, got float64\[2\]"):
        da.grad(lambda x: x * 2.0)(np.ones(2))
    with pytest.raises(da.DtypeError, match=r"argument 1 .* is not a float array"):
        da.grad(lambda x, i: x[i], argnums=1)(np.ones(3), np.int64(1))
    with pytest.raises(da.DualarrError, match="argnums 3 is out of range"):
        da.grad(sum_xy, argnums=3)(np.ones(2), np.ones(2))
    with pytest.raises(da.DualarrError, match="unknown mode"):
        da.grad(sum_xy, mode="symbolic")
    with pytest.raises(da.ShapeError, match="cotangent of shape"):
        da.vjp(lambda x: x * 2.0, np.ones(3))[1](np.ones(4))


def test_integer_arguments_get_no_cotangent() -> None:
    value, pullback = da.vjp(lambda x, i: x[i] * 3.0, np.arange(4.0), np.int64(2))
    gx, gi = pullback(np.ones(()))
    assert value == 6.0 and gi is None
    np.testing.assert_allclose(gx, [0, 0, 3, 0])


def test_gradients_through_gather_scatter_and_cond() -> None:
    x = np.linspace(1, 2, 5)

    def f(x: da.Tensor) -> da.Tensor:
        g = da.gather([3], x, lambda i: (2 * i,))
        s = da.scatter([2], x, lambda i: (i % 2,))
        c = da.where(x[0] > 1.5, x * 2.0, x * x)
        return da.sum(g * g) + da.sum(s * s) + da.sum(c)

    h = 1e-6
    program = da.trace(f, x)
    fd = np.array([(program(x + h * e) - program(x - h * e)) / (2 * h) for e in np.eye(5)])
    np.testing.assert_allclose(da.grad(f)(x), fd, rtol=1e-6)


def test_float32_gradients_stay_float32() -> None:
    x = np.linspace(0, 1, 4, dtype=np.float32)
    g = da.grad(lambda x: da.sum(da.exp(x) * x))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.exp(x) * (1 + x), rtol=1e-6)

"""Loops through AD (#38): gradients of ``da.scan`` equal the unrolled program's and
JAX's ``lax.scan``'s, in both modes; the loop is never unrolled.

The programs are random (:mod:`loop_programs`): several carries (vectors and a scalar),
xs and ys as trees, ``reverse``, ``length`` without xs, a loop invariant read from
outside the body.  The unrolled program is the same body in a Python loop (what tracing
does without ``da.scan``); JAX's values are stored (``data/scan_oracles.json``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loop_programs import LoopCase, draw_case, inputs, program, python_scan

import dualarr as da
import dualarr.numpy as dnp
from dualarr.ad import delta as dl
from dualarr.ad.dual import Dual, DualAlgebra
from dualarr.interp.evaluate import Interpreter, NumpyAlgebra
from dualarr.lang.terms import LoopOutput, MapAccum, Op, count_nodes, postorder

ORACLES = json.loads((Path(__file__).parent / "data" / "scan_oracles.json").read_text())["cases"]
MODES = ("interpret", "compiled")


def _grads(f: Any, args: list[np.ndarray], mode: str) -> tuple[Any, tuple[np.ndarray, ...]]:
    positions = tuple(range(len(args)))
    value, grads = da.value_and_grad(f, argnums=positions, mode=mode)(*args)
    return value, grads


@st.composite
def loop_cases(draw: st.DrawFn) -> LoopCase:
    return draw_case(lambda options: draw(st.sampled_from(list(options))))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=loop_cases(), seed=st.integers(0, 2**16))
def test_scan_gradients_equal_the_unrolled_programs(case: LoopCase, seed: int) -> None:
    args = inputs(case, seed)
    looped = program(case, dnp, da.scan)
    unrolled = program(case, dnp, python_scan)
    want_value, want = _grads(unrolled, args, "interpret")
    for mode in MODES:
        value, got = _grads(looped, args, mode)
        np.testing.assert_allclose(value, want_value, rtol=1e-12, atol=1e-12)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("record", ORACLES, ids=lambda r: f"seed{r['seed']}")
@pytest.mark.parametrize("mode", MODES)
def test_scan_gradients_equal_jax_lax_scan(record: dict[str, Any], mode: str) -> None:
    case = LoopCase.from_json(record["case"])
    args = inputs(case, record["seed"])
    value, grads = _grads(program(case, dnp, da.scan), args, mode)
    np.testing.assert_allclose(value, record["value"], rtol=1e-12)
    for g, w in zip(grads, record["grads"], strict=True):
        np.testing.assert_allclose(np.ravel(g), w, rtol=1e-9, atol=1e-12)


def test_the_oracle_cases_are_the_seeded_draws() -> None:
    """The stored cases are what ``make_scan_oracles.py`` draws (the grammar and the
    oracle file agree), and they cover every feature the issue names."""
    for record in ORACLES:
        drawn = draw_case(random.Random(record["seed"]).choice)
        assert drawn.to_json() == LoopCase.from_json(record["case"]).to_json()
    cases = [LoopCase.from_json(r["case"]) for r in ORACLES]
    assert any(c.reverse for c in cases) and any(not c.reverse for c in cases)
    assert any(c.xs == 0 for c in cases) and any(c.xs == 2 for c in cases)
    assert any(c.carries == 2 for c in cases) and any(len(c.y_exprs) == 2 for c in cases)


def _chain(steps: int) -> Any:
    def f(y0: Any, idx: Any) -> Any:
        def body(y: Any, _: Any) -> Any:
            return dnp.tanh(y * y[::-1] + 0.5 * y[idx]), None

        y, _ = da.scan(body, y0, length=steps)
        return dnp.sum(y)

    return f


def test_the_program_has_the_same_size_at_every_stage_for_100_and_10000_steps() -> None:
    """Counted, not timed: every stage of the pipeline has as many nodes for 10² steps
    as for 10⁴ (the loop is one node whose body is traced once)."""
    y0, idx = np.linspace(-1, 1, 8), np.arange(8)[::-1].copy()

    def sizes(steps: int) -> list[int]:
        p = da.pipeline(_chain(steps), y0, idx)
        counted = [
            count_nodes(p.source.outputs),
            count_nodes(p.vectorised.outputs),
            count_nodes(p.gradient.terms()),
            len(p.python.splitlines()),
            dl.size([p.forward.delta]).nodes,
        ]
        return counted

    assert sizes(100) == sizes(10_000)


def test_the_loops_gradient_is_a_loop_in_the_opposite_direction() -> None:
    y0, idx = np.linspace(-1, 1, 8), np.arange(8)[::-1].copy()
    p = da.pipeline(_chain(50), y0, idx)
    loops = [n for n in postorder(p.gradient.terms()) if isinstance(n, MapAccum)]
    assert {n.reverse for n in loops} == {False, True}  # the primal loop and its transpose
    assert all(n.length == 50 for n in loops)


def test_the_dual_run_saves_the_residuals_in_one_delta_node() -> None:
    """D of a loop (interpret mode): one Delta node for the whole loop, holding one
    stack per residual — the step-dependent primal values the body's Delta mentions:
    here the carry (read reversed and gathered) and tanh's derivative, 1 - y² —
    however many steps."""
    x = np.linspace(0.1, 1.0, 4)
    program_ = da.trace(_chain(30), x, np.arange(4))
    (var, idx_var) = program_.inputs
    alg = DualAlgebra(NumpyAlgebra())
    env = {var: Dual(x, dl.Input(0, var.shape, var.dtype)), idx_var: np.arange(4)}
    (out,) = Interpreter(alg).run(program_.outputs, env)
    loops = [d for d in dl.delta_postorder([out.delta]) if isinstance(d, dl.MapAccum)]
    assert len(loops) == 1
    assert [np.shape(r) for r in loops[0].residuals] == [(30, 4), (30, 4)]
    assert dl.size([out.delta]).nodes < 10


def test_the_linear_loops_do_not_recompute_the_primal() -> None:
    """The cotangent loop reads the residuals: its body has no tanh (the primal's only
    transcendental function) — unlike a loop that would recompute each step."""
    y0, idx = np.linspace(-1, 1, 8), np.arange(8)[::-1].copy()
    p = da.pipeline(_chain(50), y0, idx)
    loops = [n for n in postorder(p.gradient.terms()) if isinstance(n, MapAccum)]
    (backward,) = [n for n in loops if n.reverse]
    (primal,) = [n for n in loops if not n.reverse]

    def ops(loop: MapAccum) -> set[str]:
        return {n.op for n in postorder(list(loop.body)) if isinstance(n, Op)}

    assert "tanh" in ops(primal) and "tanh" not in ops(backward)


def test_vjp_and_jvp_of_a_scan_are_adjoint() -> None:
    rng = np.random.default_rng(3)
    x, w = rng.uniform(-1, 1, (6, 3)), rng.uniform(-1, 1, 3)

    def f(x: Any, w: Any) -> Any:
        def body(c: Any, xi: Any) -> Any:
            c2 = dnp.sin(c * w) + xi
            return c2, c2 * c2

        c, ys = da.scan(body, w, x, reverse=True)
        return dnp.concatenate([c, ys.reshape(-1)])

    tx, tw = rng.uniform(-1, 1, x.shape), rng.uniform(-1, 1, w.shape)
    _, jvp_out = da.jvp(f, (x, w), (tx, tw))
    ct = rng.uniform(-1, 1, jvp_out.shape)
    _, pullback = da.vjp(f, x, w)
    gx, gw = pullback(ct)
    assert np.isclose(np.sum(jvp_out * ct), np.sum(gx * tx) + np.sum(gw * tw), rtol=1e-12)


def test_grad_of_grad_through_a_scan_equals_the_unrolled_programs() -> None:
    rng = np.random.default_rng(4)
    x, w = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, 3)

    def make(scan: Any) -> Any:
        def loss(w: Any) -> Any:
            c, ys = scan(lambda c, xi: (dnp.tanh(c * w + xi), dnp.sum(c * c)), w, x)
            return dnp.sum(c) + dnp.sum(ys)

        def inner(w: Any) -> Any:
            return dnp.sum(da.grad(loss)(w) * w)

        return inner

    for mode in MODES:
        got = da.grad(make(da.scan), mode=mode)(w)
        want = da.grad(make(python_scan), mode=mode)(w)
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_a_scan_inside_a_scan_and_fori_loop() -> None:
    rng = np.random.default_rng(5)
    x, w = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, 2)

    def make(scan: Any) -> Any:
        def f(x: Any, w: Any) -> Any:
            def outer(c: Any, xi: Any) -> Any:
                d, ys = scan(lambda d, xj: (d * w + xj * c, dnp.sum(d)), c, dnp.stack([xi, xi]))
                return dnp.tanh(d), dnp.sum(ys)

            c, ys = scan(outer, w, x)
            return dnp.sum(c) + dnp.sum(ys)

        return f

    for mode in MODES:
        got = da.grad(make(da.scan), argnums=(0, 1), mode=mode)(x, w)
        want = da.grad(make(python_scan), argnums=(0, 1), mode=mode)(x, w)
        for g, h in zip(got, want, strict=True):
            np.testing.assert_allclose(g, h, rtol=1e-10)

    def power(w: Any) -> Any:
        return dnp.sum(da.fori_loop(1, 4, lambda i, c: c * w + i, w))

    np.testing.assert_allclose(da.grad(power)(w), 4 * w**3 + 2 * w + 2, 1e-12)


def test_loop_output_nodes_read_one_loop() -> None:
    x = np.ones((3, 2))

    def f(x: Any) -> Any:
        (a, b), ys = da.scan(lambda c, xi: ((c[0] + xi, c[1] * 2.0), c[0]), (x[0], x[1]), x)
        return a + b + ys[0]

    outs = [n for n in postorder(da.trace(f, x).outputs) if isinstance(n, LoopOutput)]
    assert len({id(o.loop) for o in outs}) == 1


def test_scan_under_jit_jacobian_and_vjp_of_several_outputs() -> None:
    """The transformations of the API over a scan: ``jit`` (compiled once, reused by
    structure), ``jacobian`` and the ``vjp`` of a tuple output."""
    rng = np.random.default_rng(6)
    x, w = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, 3)

    def make(scan: Any) -> Any:
        def f(x: Any, w: Any) -> Any:
            c, ys = scan(lambda c, xi: (dnp.sin(c * w) + xi, c[0] * xi), w, x)
            return c, ys

        return f

    looped, unrolled = make(da.scan), make(python_scan)
    jitted = da.jit(lambda x, w: dnp.sum(looped(x, w)[1]))
    assert np.allclose(jitted(x, w), np.sum(da.trace(unrolled, x, w)(x, w)[1]))
    j_loop = da.jacobian(lambda w: looped(x, w)[0])(w)
    j_unrolled = da.jacobian(lambda w: unrolled(x, w)[0])(w)
    np.testing.assert_allclose(j_loop, j_unrolled, rtol=1e-12)
    (c, ys), pullback = da.vjp(looped, x, w)
    _, pullback2 = da.vjp(unrolled, x, w)
    cts = (np.ones_like(c), rng.uniform(-1, 1, ys.shape))
    for got, want in zip(pullback(cts), pullback2(cts), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_scan_errors_are_named() -> None:
    """Bad loops get a named error that names ``scan`` and the problem."""
    x = np.ones((3, 2))
    with pytest.raises(da.TracingError, match=r"scan.*same structure"):
        da.trace(lambda x: da.scan(lambda c, xi: ((c, c), xi), x[0], x)[0], x)
    with pytest.raises(da.TracingError, match="carry 0 enters the body as float64"):
        da.trace(lambda x: da.scan(lambda c, xi: (dnp.sum(c), xi), x[0], x)[0], x)
    with pytest.raises(da.ShapeError, match="xs 1 has 2 rows"):
        da.trace(lambda x: da.scan(lambda c, r: (c, r[0]), x[0], (x, x[:2]))[0], x)
    with pytest.raises(da.ShapeError, match="needs xs or length"):
        da.trace(lambda x: da.scan(lambda c, r: (c, c), x[0])[0], x)
    with pytest.raises(da.TracingError, match="pair"):
        da.trace(lambda x: da.scan(lambda c, r: c, x[0], x)[0], x)


def test_scan_and_fori_loop_run_at_once_outside_a_trace() -> None:
    """As JAX's, called on arrays (not in a traced function) they run at once."""
    xs = np.arange(6.0).reshape(3, 2)
    carry, ys = da.scan(lambda c, x: (c + x, c * 2.0), np.zeros(2), xs, reverse=True)
    np.testing.assert_array_equal(carry, xs.sum(axis=0))
    np.testing.assert_array_equal(ys, 2.0 * np.array([xs[1] + xs[2], xs[2], np.zeros(2)]))
    assert da.fori_loop(2, 5, lambda i, c: c * 2 + i, 1.0) == ((1.0 * 2 + 2) * 2 + 3) * 2 + 4
    assert da.fori_loop(5, 2, lambda i, c: c + i, 7.0) == 7.0

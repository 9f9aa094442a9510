"""The bot and the simplifier on loops (horde-ad's mapAccum; not in the paper): values kept,
Theorem 5.1 inside loop bodies, one batched loop per loop under a ``build1``, loops never
unrolled, bodies kept closed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dualarr as da
import dualarr.numpy as dnp
from dualarr.interp.evaluate import evaluate_many
from dualarr.lang.program import Program
from dualarr.lang.terms import (
    Build1,
    DType,
    FreeVars,
    IdSupply,
    Index,
    Let,
    LoopOutput,
    MapAccum,
    Op,
    Replicate,
    SumOuter,
    Term,
    Var,
    count_nodes,
    fresh_var,
    loop_outputs,
    postorder,
)
from dualarr.pipeline import vectorise_program
from dualarr.vectorise.bot import NotBotNormal, is_bot_normal, vectorise
from dualarr.vectorise.simplify import simplify

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


def close(got: Any, want: Any) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            close(g, w)
        return
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


def loops_in(terms: Sequence[Term]) -> list[MapAccum]:
    return [n for n in postorder(terms) if isinstance(n, MapAccum)]


def assert_bodies_closed(terms: Sequence[Term]) -> None:
    """Every loop's body reads only its binders (the invariant of ``MapAccum``)."""
    fv = FreeVars()
    for loop in loops_in(terms):
        read = frozenset().union(*(fv(out) for out in loop.body))
        assert read <= set(loop.binders), read - set(loop.binders)


def vectorised(f: Callable[..., Any], *args: Any) -> tuple[Program, Program, list[str]]:
    """``f`` traced, then after the bot and the simplifier; checked: Theorem 5.1 (inside
    loop bodies too), no ``build1`` anywhere, bodies closed, the same values before and
    after, and the same value after every recorded step of the bot."""
    source = da.trace(f, *args)
    program, steps = vectorise_program(source, record=True)
    assert is_bot_normal(program.outputs)
    assert not any(isinstance(n, Build1) for n in postorder(program.outputs))
    assert_bodies_closed(program.outputs)
    want = source(*args)
    close(program(*args), want)
    env = dict(zip(source.inputs, args, strict=True))
    wanted = evaluate_many(list(source.outputs), env)
    for step in steps:
        for got, value in zip(evaluate_many(list(step.whole), env), wanted, strict=True):
            close(got, value)
    return source, program, [s.rule for s in steps]


# --------------------------------------------------------------------------------------
# build1 of a loop
# --------------------------------------------------------------------------------------


@st.composite
def loop_cases(draw: st.DrawFn) -> dict[str, Any]:
    carries = draw(st.integers(1, 3))
    return {
        "k": draw(st.integers(1, 3)),
        "length": draw(st.integers(0, 4)),
        "n": draw(st.integers(1, 3)),
        "reverse": draw(st.booleans()),
        "init_dep": draw(st.lists(st.booleans(), min_size=carries, max_size=carries)),
        "xs_dep": draw(st.booleans()),
        "const_dep": draw(st.booleans()),
        "coupled": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**16)),
    }


def row_loop(case: dict[str, Any]) -> Callable[..., Any]:
    """``build1 k (λi. …)`` over a scan whose initial carries, xs and loop invariant each
    read row ``i`` of ``a`` or not, as the case says; carries coupled in a chain or not
    (so the fixpoint batches a carry whose initial value is the same for every ``i``)."""
    init_dep, xs_dep, const_dep = case["init_dep"], case["xs_dep"], case["const_dep"]
    coupled, reverse = case["coupled"], case["reverse"]

    def f(a: da.Tensor, xs: da.Tensor, w: da.Tensor) -> da.Tensor:
        def row(i: da.Tensor) -> Any:
            ai = a[i]
            inits = tuple((ai if dep else w) * float(m + 1) for m, dep in enumerate(init_dep))
            seq = xs * ai if xs_dep else xs
            scale = ai.sum() if const_dep else w.sum()

            def body(c: tuple[da.Tensor, ...], x: da.Tensor) -> Any:
                new = tuple(
                    dnp.tanh(c[m] * scale + x) * 0.5 + (c[m - 1] if coupled and m else c[m]) * 0.25
                    for m in range(len(c))
                )
                return new, (new[0].sum() + x, c[-1])

            cs, (ys, zs) = da.scan(body, inits, seq, reverse=reverse)
            total = ys.sum(0) + zs.sum(0)
            for c in cs:
                total = total + c
            return total

        return da.build1(a.shape[0], row)

    return f


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW_OK)
@given(loop_cases())
def test_build1_of_a_loop_is_one_batched_loop_with_the_same_values(case: dict[str, Any]) -> None:
    rng = np.random.default_rng(case["seed"])
    k, length, n = case["k"], case["length"], case["n"]
    args = (rng.standard_normal((k, n)), rng.standard_normal((length, n)), rng.random(n))
    _, program, rules = vectorised(row_loop(case), *args)
    (loop,) = loops_in(program.outputs)  # every result of the loop reads the one L'
    assert loop.length == length and loop.reverse == case["reverse"]
    reads_i = any(case["init_dep"]) or case["xs_dep"] or case["const_dep"]
    assert ("build1-mapAccum" in rules) == reads_i  # else the loop is replicated
    # a carry is batched (k in front) exactly when its initial value reads i, or the
    # body makes it from a batched binder (the fixpoint)
    batched = [dep or case["xs_dep"] or case["const_dep"] for dep in case["init_dep"]]
    if case["coupled"]:
        for m in range(1, len(batched)):
            batched[m] = batched[m] or batched[m - 1]
    shapes = [v.shape for v in loop.carry_vars]
    assert shapes == [(k, n) if b else (n,) for b in batched][: len(shapes)]


def test_the_batched_loop_runs_the_loop_dimension_outermost() -> None:
    """xs of ``L'`` are the batched xs transposed to ``(length, k, …)``; its ys are
    ``(length, k, …)``, transposed back to ``(k, length, …)``."""

    def f(a: da.Tensor, xs: da.Tensor) -> da.Tensor:
        def row(i: da.Tensor) -> Any:
            def body(c: da.Tensor, x: da.Tensor) -> Any:
                return dnp.sin(c + x), c * x

            _, ys = da.scan(body, a[i], xs * a[i])
            return ys

        return da.build1(3, row)

    rng = np.random.default_rng(1)
    a, xs = rng.standard_normal((3, 2)), rng.standard_normal((5, 2))
    _, program, _ = vectorised(f, a, xs)
    (loop,) = loops_in(program.outputs)
    assert [x.shape for x in loop.xs] == [(5, 3, 2)]
    assert loop.shapes == ((3, 2), (5, 3, 2))
    assert program.outputs[0].shape == (3, 5, 2)


def test_a_loop_that_does_not_read_the_index_is_replicated() -> None:
    def f(a: da.Tensor, xs: da.Tensor) -> da.Tensor:
        c, _ = da.scan(lambda c, x: (c * x, c), a[0], xs)
        return da.build1(4, lambda i: c * 2.0)

    rng = np.random.default_rng(2)
    _, program, rules = vectorised(f, rng.standard_normal((3, 2)), rng.random((5, 2)))
    assert rules == ["build1-closed"]
    assert len(loops_in(program.outputs)) == 1


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 3), st.booleans(), st.integers(0, 99))
def test_vmap_of_a_scan_is_a_python_loop_over_the_batch(
    batch: int, length: int, n: int, reverse: bool, seed: int
) -> None:
    def f(x: Any, w: Any) -> Any:
        def body(c: Any, row: Any) -> Any:
            c0, c1 = c
            new = dnp.tanh(c0 * w + row)
            return (new, c1 + new.sum()), new * c1

        return da.scan(body, (x[0], x[0].sum()), x, reverse=reverse)

    rng = np.random.default_rng(seed)
    xb, w = rng.standard_normal((batch, length, n)), rng.random(n)
    (c0, c1), ys = da.vmap(f, (0, None))(xb, w)
    for b in range(batch):
        (want0, want1), want_ys = f(xb[b], w)
        close(c0[b], want0)
        close(c1[b], want1)
        close(ys[b], want_ys)
    # mapped along another axis
    moved = np.moveaxis(xb, 0, 2)
    (d0, d1), zs = da.vmap(f, (2, None))(moved, w)
    close(d0, c0)
    close(d1, c1)
    close(zs, ys)


def test_vmap_shares_one_batched_loop_among_the_leaves_of_its_result() -> None:
    """``f`` is traced once, so its loop is batched once for both the carry and the ys."""

    def f(x: Any) -> Any:
        return da.scan(lambda c, row: (c * row, c + row), x[0], x)

    xb = np.random.default_rng(3).random((4, 5, 2))
    _, program, _ = vectorised(lambda x: da.vmap(f)(x), xb)
    assert len(loops_in(program.outputs)) == 1


def test_vmap_of_a_fori_loop() -> None:
    def g(x: Any, w: Any) -> Any:
        return da.fori_loop(1, 7, lambda t, c: dnp.cos(c * w) + t, x)

    rng = np.random.default_rng(4)
    xb, w = rng.standard_normal((3, 4)), rng.random(4)
    got = da.vmap(g, (0, None))(xb, w)
    close(got, np.stack([g(x, w) for x in xb]))
    vectorised(lambda x, w: da.vmap(g, (0, None))(x, w), xb, w)


def test_a_scan_inside_build() -> None:
    def f(a: da.Tensor, b: da.Tensor, xs: da.Tensor) -> da.Tensor:
        def cell(i: da.Tensor, j: da.Tensor) -> Any:
            def body(c: da.Tensor, x: da.Tensor) -> Any:
                return c * a[i] + x * b[j], c

            c, ys = da.scan(body, a[i] * 0.0 + 1.0, xs)
            return c + ys[2] + ys.sum()

        return da.build((a.shape[0], b.shape[0]), cell)

    rng = np.random.default_rng(5)
    a, b, xs = rng.random(3), rng.random(2), rng.random(5)
    _, program, _ = vectorised(f, a, b, xs)
    want = [[_python_cell(a[i], b[j], xs) for j in range(2)] for i in range(3)]
    close(program(a, b, xs), want)


def _python_cell(ai: float, bj: float, xs: np.ndarray) -> float:
    c, ys = 1.0, []
    for x in xs:
        ys.append(c)
        c = c * ai + x * bj
    return c + ys[2] + sum(ys)


def test_a_scan_inside_a_scans_body_under_vmap() -> None:
    def h(x: Any, m: Any) -> Any:
        def outer(c: Any, row: Any) -> Any:
            def inner(d: Any, y: Any) -> Any:
                return d * 0.5 + y * c, d.sum()

            d, ys = da.scan(inner, row, m)
            return c + d.sum(), ys

        return da.scan(outer, x.sum(), m)

    rng = np.random.default_rng(6)
    xb, m = rng.standard_normal((3, 4)), rng.standard_normal((4, 4))
    c, ys = da.vmap(h, (0, None))(xb, m)
    for b in range(3):
        want_c, want_ys = h(xb[b], m)
        close(c[b], want_c)
        close(ys[b], want_ys)
    _, program, _ = vectorised(lambda x, m: da.vmap(h, (0, None))(x, m), xb, m)
    assert len(loops_in(program.outputs)) == 2  # the outer loop and the one in its body


def test_build1_inside_a_scans_body_is_vectorised_inside_the_body() -> None:
    """Theorem 5.1 holds inside loop bodies: the ``build1`` of the body is gone, and
    :func:`is_bot_normal` looks there (it finds the ``build1`` of the traced program)."""

    def f(x: da.Tensor, w: da.Tensor) -> Any:
        def body(c: da.Tensor, row: da.Tensor) -> Any:
            r = da.build1(4, lambda j: dnp.tanh(c[j] * w[j] + row[3 - j]))
            return r, r.sum()

        return da.scan(body, w, x)[1]

    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((5, 4)), rng.random(4)
    source, program, _ = vectorised(f, x, w)
    (loop,) = loops_in(source.outputs)
    assert any(isinstance(n, Build1) for n in postorder(loop.body))
    with pytest.raises(NotBotNormal, match="build1 remains"):
        is_bot_normal(source.outputs)
    assert len(loops_in(program.outputs)) == 1


def test_an_index_of_a_loop_result_stays_and_is_a_normal_form() -> None:
    """An index cannot be pushed into a loop: ``ys[j]`` keeps the loop's result whole
    (Theorem 5.1's normal forms include it); under a ``build1`` reading row ``i`` of a
    loop that reads ``i`` it is the diagonal of the batched result."""

    def f(a: da.Tensor, xs: da.Tensor) -> da.Tensor:
        _, ys = da.scan(lambda c, x: (c + x, c * x), a[0], xs)
        outside = ys[2]

        def row(i: da.Tensor) -> Any:
            _, zs = da.scan(lambda c, x: (c + x, c * x), a[i], xs)
            return zs[i] + outside

        return da.build1(3, row)

    rng = np.random.default_rng(8)
    _, program, rules = vectorised(f, rng.random((3, 2)), rng.random((4, 2)))
    assert "build1-index-diagonal" in rules
    assert any(
        isinstance(n, Index) and isinstance(n.array, LoopOutput) for n in postorder(program.outputs)
    )


def test_the_vectorised_program_has_the_same_size_for_any_number_of_steps() -> None:
    def f(x: Any, w: Any) -> Any:
        def body(c: Any, row: Any) -> Any:
            new = dnp.tanh(c * w + row)
            return new, new.sum()

        c, ys = da.scan(body, x[0], x)
        return c.sum() + ys.sum()

    def size(length: int) -> int:
        xb = np.ones((3, length, 2))
        source = da.trace(lambda x, w: da.vmap(f, (0, None))(x, w), xb, np.ones(2))
        program, _ = vectorise_program(source)
        (loop,) = loops_in(program.outputs)
        assert loop.length == length
        return count_nodes(program.outputs)

    assert size(10) == size(10**4)


# --------------------------------------------------------------------------------------
# The simplifier
# --------------------------------------------------------------------------------------


def test_the_simplifier_simplifies_inside_bodies_and_never_unrolls() -> None:
    def f(x: da.Tensor, w: da.Tensor) -> Any:
        def body(c: da.Tensor, row: da.Tensor) -> Any:
            new = (c * 1.0 + row) * w
            return new, new.sum()

        c, ys = da.scan(body, w, x)
        return c.sum() + ys.sum()

    rng = np.random.default_rng(9)
    args = (rng.standard_normal((6, 3)), rng.random(3))
    source = da.trace(f, *args)
    simplified = simplify(list(source.outputs), source.supply)
    ((before,), (after,)) = loops_in(source.outputs), loops_in(simplified)
    assert after.length == before.length == 6
    assert count_nodes(after.body) < count_nodes(before.body)  # c * 1.0 is c
    assert not any(
        isinstance(n, Op) and n.op == "mul" and n.args[0] is after.carry_vars[0]
        for n in postorder(after.body)
    )
    assert_bodies_closed(simplified)
    env = dict(zip(source.inputs, args, strict=True))
    close(evaluate_many(simplified, env)[0], source(*args))


def test_the_simplifier_reads_passed_through_results_off_the_inputs() -> None:
    """A carry returned unchanged is its initial value; ys that is the xs row is the xs;
    ys that is a loop invariant is it replicated."""

    def f(x: da.Tensor, w: da.Tensor, v: da.Tensor) -> Any:
        def body(c: Any, row: da.Tensor) -> Any:
            kept, grown, _ = c
            return (kept, grown * row + v.sum(), kept), (row, w, grown)

        (kept, grown, last), (rows, ws, gs) = da.scan(body, (w, w, w * 3.0), x)
        return kept, grown, last, rows, ws, gs

    rng = np.random.default_rng(10)
    args = (rng.standard_normal((4, 3)), rng.random(3), rng.random(2))
    source = da.trace(f, *args)
    simplified = simplify(list(source.outputs), source.supply)
    x, w, _ = source.inputs
    kept, grown, last, rows, ws, gs = simplified
    assert kept is w and rows is x
    assert isinstance(ws, Replicate) and ws.array is w
    # the third carry is the previous step's `kept`: not a pass-through of one step
    assert all(isinstance(t, LoopOutput) for t in (grown, last, gs))
    assert len(loops_in(simplified)) == 1
    env = dict(zip(source.inputs, args, strict=True))
    close(tuple(evaluate_many(simplified, env)), source(*args))


def test_the_simplifier_drops_inputs_the_body_never_reads() -> None:
    supply = IdSupply()
    f64 = DType.FLOAT64
    x, w = fresh_var(supply, "x", (4, 3), f64), fresh_var(supply, "w", (3,), f64)
    c, r, unread_r = (fresh_var(supply, h, (3,), f64) for h in ("c", "r", "s"))
    k, unread_k = fresh_var(supply, "k", (3,), f64), fresh_var(supply, "u", (), f64)
    w_sum = SumOuter(w)
    loop = MapAccum(
        4,
        True,
        (c,),
        (r, unread_r),
        (k, unread_k),
        (w,),
        (x, Op("neg", (x,))),
        (Op("exp", (w,)), w_sum),
        (Op("mul", (Op("add", (c, r)), k)), c),
    )
    outputs = list(loop_outputs(loop))
    simplified = simplify(outputs, supply)
    (after,) = loops_in(simplified)
    assert after.x_vars == (r,) and after.xs == (x,)
    assert after.const_vars == (k,) and len(after.consts) == 1
    assert after.reverse and after.length == 4
    env = {x: np.arange(12.0).reshape(4, 3) / 10, w: np.array([0.5, -1.0, 2.0])}
    close(tuple(evaluate_many(simplified, env)), tuple(evaluate_many(outputs, env)))


def test_a_loop_of_no_steps_returns_its_initial_carries() -> None:
    def f(x: da.Tensor, w: da.Tensor) -> Any:
        return da.scan(lambda c, row: (c * row, c), w, x)

    args = (np.ones((0, 2)), np.array([2.0, 3.0]))
    source = da.trace(f, *args)
    carry, ys = simplify(list(source.outputs), source.supply)
    assert carry is source.inputs[1]
    assert ys.shape == (0, 2)


def test_hash_consing_keeps_bodies_closed() -> None:
    """Common subexpressions become one node only over the same children, so a body can
    share with the rest of the program only what reads no variable (a constant computed
    the same way inside and outside); every body still reads only its binders, after
    the simplifier and after the whole pipeline, loops nested and batched."""

    def f(x: Any, w: Any) -> Any:
        outside = dnp.exp(dnp.ones(3) * 2.0) + w

        def body(c: Any, row: Any) -> Any:
            inner, _ = da.scan(lambda d, y: (d * dnp.exp(dnp.ones(3) * 2.0) + y + c, d), row, x)
            return dnp.tanh(c * dnp.exp(dnp.ones(3) * 2.0) + inner), c

        c, ys = da.scan(body, w, x)
        return c + outside + ys.sum(0)

    rng = np.random.default_rng(11)
    args = (rng.standard_normal((3, 3)) * 0.1, rng.random(3) * 0.1)
    source = da.trace(f, *args)
    simplified = simplify(list(source.outputs), source.supply)
    assert len(loops_in(simplified)) == 2
    assert_bodies_closed(simplified)
    # the constant is one node, read inside both bodies and outside
    exps = {n for n in postorder(simplified) if isinstance(n, Op) and n.op == "exp"}
    assert len(exps) == 1
    env = dict(zip(source.inputs, args, strict=True))
    close(evaluate_many(simplified, env)[0], source(*args))
    batch = (np.stack([args[0]] * 2), args[1])
    vectorised(lambda x, w: da.vmap(f, (0, None))(x, w), *batch)


def test_loop_binders_are_not_confused_with_outer_variables() -> None:
    """The body of the batched loop binds new variables of the batched types and reads
    no variable of the program around it."""

    def f(a: da.Tensor, xs: da.Tensor) -> da.Tensor:
        return da.build1(2, lambda i: da.scan(lambda c, x: (c * x + a[i], c), a[i], xs)[0])

    rng = np.random.default_rng(12)
    source, program, _ = vectorised(f, rng.random((2, 3)), rng.random((4, 3)))
    (loop,) = loops_in(program.outputs)
    inputs = set(source.inputs)
    assert all(isinstance(b, Var) and b not in inputs for b in loop.binders)
    assert [b.shape for b in loop.carry_vars] == [(2, 3)]


LOOP_SHAPES: dict[str, Callable[[Any], Any]] = {
    "no carries": lambda a: da.build1(3, lambda i: da.scan(lambda c, x: (c, x * a[i]), (), a)[1]),
    "no xs": lambda a: da.build1(
        3,
        lambda i: da.scan(lambda c, _: (c * 0.5 + a[i], c.sum()), a[i], None, length=4)[1],
    ),
    "an int carry": lambda a: da.build1(
        3,
        lambda i: da.fori_loop(0, 4, lambda t, c: (c[0] + t * i, c[1] * a[i]), (i * 0, a[i]))[1],
    ),
}


@pytest.mark.parametrize("name", sorted(LOOP_SHAPES))
def test_loops_of_every_shape_under_build1(name: str) -> None:
    _, _, rules = vectorised(LOOP_SHAPES[name], np.random.default_rng(13).random((3, 4)))
    assert "build1-mapAccum" in rules


def test_a_loop_reading_a_vectorised_let() -> None:
    """``build1 k (λi. let y = a[i]·a[i] in L(y))``: the loop's initial carry is the
    vectorised let's variable ``y'``; every recorded step keeps the value."""
    supply = IdSupply()
    f64 = DType.FLOAT64
    a = fresh_var(supply, "a", (3, 4), f64)
    i = fresh_var(supply, "i", (), DType.INT64)
    y, c = fresh_var(supply, "y", (4,), f64), fresh_var(supply, "c", (4,), f64)
    loop = MapAccum(3, False, (c,), (), (), (y,), (), (), (Op("mul", (c, c)), Op("add", (c, c))))
    row = Op("add", (LoopOutput(0, loop), SumOuter(LoopOutput(1, loop))))
    term = Build1(3, i, Let(y, Op("mul", (Index(a, (i,)), Index(a, (i,)))), row))
    env = {a: np.random.default_rng(14).random((3, 4))}
    (want,) = evaluate_many([term], env)
    result = vectorise([term], supply, record=True)
    assert is_bot_normal(result.terms)
    close(evaluate_many(list(result.terms), env)[0], want)
    for step in result.steps:
        close(evaluate_many(list(step.whole), env)[0], want)
    (batched,) = loops_in(result.terms)
    assert isinstance(batched.inits[0], Var) and batched.inits[0].shape == (3, 4)

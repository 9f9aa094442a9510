"""The bulk-operation transform: printed results, the rule trace, Theorem 5.1, vmap, pipeline."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.lang import rules
from dualarr.lang.errors import DualarrError
from dualarr.lang.terms import (
    Build1,
    DType,
    FreeVars,
    Gather,
    IdSupply,
    fresh_var,
    postorder,
    term_constructors,
)
from dualarr.teach.examples import fig18
from dualarr.vectorise.bot import (
    BUILD1_INDEX_RULES,
    BUILD1_RULES,
    INDEX_RULES,
    IndexPusher,
    Vectoriser,
    vectorise,
)


@contextlib.contextmanager
def shallow_stack(extra: int = 150) -> Iterator[None]:
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + extra)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def matmul_by_build(a: da.Tensor, b: da.Tensor) -> da.Tensor:
    m, n = a.shape
    p = b.shape[1]
    return da.build((m, p), lambda i, j: da.sum(da.build1(n, lambda k: a[i, k] * b[k, j])))


A = np.arange(6.0).reshape(2, 3)
B = np.arange(12.0).reshape(3, 4) - 5


def test_fig18_becomes_a_dot_product_of_x_and_one_reversing_gather() -> None:
    p = da.pipeline(fig18, np.arange(1.0, 11.0))
    assert str(p.vectorised) == r"\x. dot0 x (gather [10] x (\[i]. [9 - i]))"
    assert float(p.vectorised(np.arange(1.0, 11.0))) == float(p.source(np.arange(1.0, 11.0)))


def test_matmul_by_build_becomes_one_matmul() -> None:
    p = da.pipeline(matmul_by_build, A, B)
    text = str(p.vectorised)
    assert text == r"\a b. matmul2 a b"
    assert "gather" not in text
    np.testing.assert_allclose(p.vectorised(A, B), A @ B)


def test_rule_trace_names_rules_and_every_step_keeps_the_value() -> None:
    p = da.pipeline(fig18, np.arange(1.0, 6.0))
    rules = [s.rule for s in p.bot_steps]
    assert rules == ["build1-op", "build1-index", "build1-index"]
    first = p.bot_steps[0]
    assert str(first.before) == r"build1 5 (\i. x[i] * x[4 - i])"
    assert str(first.after) == r"build1 5 (\i. x[i]) * build1 5 (\i. x[4 - i])"
    x = np.arange(1.0, 6.0)
    env = p.source.bind(x)
    from dualarr.interp.evaluate import evaluate_many

    for step in p.bot_steps:
        assert step.figure in ("Fig. 9", "Fig. 10", "Fig. 11")
        (value,) = evaluate_many(list(step.whole), env)
        assert value == p.source(x)
    final = p.bot_steps[-1].whole[0]
    assert not any(isinstance(n, Build1) for n in postorder([final]))


def test_cond_is_encoded_as_index_of_fromlist() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        return da.build1(4, lambda i: da.where(x[i, 0] > 0.0, x[i], -x[i]))

    x = np.array([[1.0, 2.0], [-1.0, 3.0], [0.5, -2.0], [-3.0, 1.0]])
    p = da.pipeline(f, x)
    assert "build1-cond" in [s.rule for s in p.bot_steps]
    assert "fromList" in str(p.vectorised)
    np.testing.assert_allclose(p.vectorised(x), np.where(x[:, :1] > 0, x, -x))


def test_diagonal_rule_for_a_normal_form_mentioning_i() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        return da.build1(4, lambda i: da.from_list([x[i], x[i] * 2.0])[i % 2])

    x = np.arange(4.0)
    p = da.pipeline(f, x)
    assert "build1-index-diagonal" in [s.rule for s in p.bot_steps]
    np.testing.assert_allclose(p.vectorised(x), [0.0, 2.0, 2.0, 6.0])


def test_is_bot_normal_names_the_offending_subterm() -> None:
    program = da.trace(fig18, np.ones(3))
    with pytest.raises(da.NotBotNormal, match="build1 remains") as info:
        da.is_bot_normal(program)
    assert isinstance(info.value.subterm, Build1)
    program = da.trace(lambda x: (x * 2.0)[1], np.ones(3))
    with pytest.raises(da.NotBotNormal, match="index of a Op"):
        da.is_bot_normal(program.outputs)
    assert da.is_bot_normal(da.pipeline(fig18, np.ones(3)).vectorised)


def test_five_nested_builds_vectorise() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        return da.build(
            (2, 3, 2, 2, 3),
            lambda a, b, c, d, e: x[a, b] * x[c, e] + da.to_float(d - e),
        )

    x = np.arange(6.0).reshape(2, 3)
    with shallow_stack():
        p = da.pipeline(f, x)
    assert da.is_bot_normal(p.vectorised)
    np.testing.assert_allclose(p.vectorised(x), p.source(x))


def test_3500_long_let_chain_inside_a_build_vectorises_without_recursion() -> None:
    def body(v: da.Tensor) -> da.Tensor:
        for _ in range(3500):
            v = da.let(v * 0.5 + 1.0, lambda w: w)  # a let per step, bound value used once
        return v

    def chain(x: da.Tensor) -> da.Tensor:
        def row(i: da.Tensor) -> da.Tensor:
            y = x[i]
            for _ in range(3500):
                y = 0.5 * (y + y - 1.0)  # shared: a let in the printed term
            return y

        return da.build1(3, row)

    x = np.linspace(0, 1, 3)
    with shallow_stack():
        p = da.pipeline(chain, x)
        q = da.pipeline(lambda x: da.build1(3, lambda i: body(x[i])), x)
    np.testing.assert_allclose(p.vectorised(x), p.source(x))
    np.testing.assert_allclose(q.vectorised(x), q.source(x))
    assert not any(isinstance(n, Build1) for n in postorder(p.vectorised.outputs))


def test_vmap_examples_from_the_vmap_post() -> None:
    a0, b0 = np.array([1.0, 2.0, 3.0]), np.array([4.0, 6.0, 8.0])
    np.testing.assert_allclose(da.vmap(lambda a, b: a + b)(a0, b0), [5, 8, 11])
    example2 = da.vmap(lambda a: da.vmap(lambda b: a + b)(b0))(a0)
    np.testing.assert_allclose(example2, [[5, 7, 9], [6, 8, 10], [7, 9, 11]])


def test_vmapped_programs_contain_no_loop() -> None:
    b0 = np.array([4.0, 6.0, 8.0])
    p = da.pipeline(lambda a: da.vmap(lambda x: da.vmap(lambda y: x * y)(b0))(a), np.ones(3))
    assert any(isinstance(n, Build1) for n in postorder(p.source.outputs))
    assert not any(isinstance(n, Build1) for n in postorder(p.vectorised.outputs))


def test_vmap_axes_tuples_and_errors() -> None:
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(da.vmap(lambda r, s: r * s, in_axes=(1, None))(x, 2.0), 2 * x.T)
    sums, doubled = da.vmap(lambda r: (da.sum(r), r * 2))(x)
    np.testing.assert_allclose(sums, x.sum(axis=1))
    np.testing.assert_allclose(doubled, 2 * x)
    with pytest.raises(da.ShapeError, match="one size"):
        da.vmap(lambda a, b: a + b)(np.ones(2), np.ones(3))
    np.testing.assert_allclose(da.vmap(da.sum)(x), x.sum(axis=1))


def test_vectorise_keeps_sharing() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        return da.build1(3, lambda i: da.let(da.exp(x * da.to_float(i)), lambda e: e * e)[0])

    program = da.trace(f, np.ones(4))
    result = vectorise(program.outputs, program.supply)
    exps = [n for n in postorder(result.terms) if getattr(n, "op", None) == "exp"]
    assert len(exps) == 1


def test_gather_of_a_closed_array_needs_no_diagonal() -> None:
    p = da.pipeline(lambda x: da.build1(4, lambda i: da.gather([2], x, lambda j: (i + j,))),
                    np.arange(5.0))
    assert str(p.vectorised) == r"\x. gather [4,2] x (\[i, j]. [i + j])"
    gathers = [n for n in postorder(p.vectorised.outputs) if isinstance(n, Gather)]
    assert len(gathers) == 1


def test_pipeline_prints_its_stages() -> None:
    p = da.pipeline(fig18, np.ones(4))
    text = str(p)
    assert "== source" in text and "== bot_steps" in text and "== vectorised" in text
    assert p.stages == (
        "source", "bot_steps", "vectorised", "forward", "delta", "shared", "gradient",
        "kernels", "python",
    )
    for stage in p.stages:
        assert f"== {stage}" in text
    assert repr(p).startswith("<Pipeline fig18")


def test_a_let_in_an_index_computation_copied_into_a_gather_keeps_its_binding() -> None:
    """The bot copies ``build1``'s index computation into a gather's index function; a
    ``let`` there binds its own variable, which shadows the vectorised ``let`` of the
    same variable (found by Hypothesis: "unbound variable" while evaluating)."""

    def f(x0: Any) -> Any:
        def outer(i: Any) -> Any:
            inner = da.build1(2, lambda j: 0.5 + x0[j, 0])
            c = da.let(x0[i, 0], lambda x: da.logical_and(i < 1, x > 0.0))
            return inner[da.where(c, 1, 0)]

        return da.cos(da.build1(2, outer))

    x = np.array([[0.3], [-0.2]])
    expected = np.cos([0.5 + x[1, 0], 0.5 + x[0, 0]])
    np.testing.assert_allclose(da.trace(f, x)(x), expected)
    np.testing.assert_allclose(da.pipeline(f, x).vectorised(x), expected)
    for mode in ("compiled", "interpret"):
        value, pullback = da.vjp(f, x, mode=mode)
        np.testing.assert_allclose(value, expected)
        gradient = pullback(np.ones(2))[0]
        np.testing.assert_allclose(gradient, [[-np.sin(0.5 + x[0, 0])], [-np.sin(0.5 + x[1, 0])]])


def test_kit_extensions_are_labelled_as_such_and_paper_rules_cite_their_figure() -> None:
    def leaky(x: da.Tensor) -> da.Tensor:
        return da.build1(4, lambda i: da.where(x[i] > 2.0, x[i], 0.5 * x[i]))

    def guarded(x: da.Tensor) -> da.Tensor:
        return da.build1(3, lambda i: da.exp(x * 2.0)[i + 1])

    cond_steps = da.pipeline(leaky, np.arange(4.0)).bot_steps
    guard_steps = da.pipeline(guarded, np.arange(4.0)).bot_steps
    steps = [*cond_steps, *guard_steps]
    cond, guard = cond_steps[0], guard_steps[0]
    assert cond.rule == "build1-cond-scalar"
    assert cond.kind == "extension" and cond.figure == "Fig. 9"
    assert cond.label.startswith("build1-cond-scalar (kit extension of Fig. 9: a select")
    assert guard.rule == "index-op" and guard.kind == "extension" and "bounds guard" in guard.note
    for s in steps:
        if s.kind == "paper":
            assert s.note == "" and s.label == f"{s.rule} ({s.figure})"
    assert str(cond).startswith(f"{cond.number}. {cond.label}\n")


def test_simplification_steps_name_their_rule_and_rebuild_the_program() -> None:
    from dualarr.interp.evaluate import evaluate_many
    from dualarr.lang.terms import IdSupply
    from dualarr.vectorise.simplify import simplification_steps

    x = np.arange(1.0, 6.0)
    p = da.pipeline(fig18, x)
    supply = IdSupply(p.source.supply.next_id)
    terms, steps = simplification_steps(p.bot_steps[-1].whole, supply, first=4)
    assert str(terms[0]) == str(p.vectorised.outputs[0])
    (step,) = steps
    assert (step.number, step.rule, step.kind, step.figure) == (
        4, "sumOuter-contract", "simplification", "simplification"
    )
    assert step.label.startswith("sumOuter-contract (simplification: a sum of products")
    assert str(step.before) == r"sumOuter (x * gather [5] x (\[i]. [4 - i]))"
    assert str(step.after) == r"dot0 x (gather [5] x (\[i]. [4 - i]))"
    assert step.whole == (step.after,)
    env = p.source.bind(x)
    assert evaluate_many(list(step.whole), env)[0] == p.source(x)
    assert p.bot_steps == p.bot_steps[:3]  # the bot's own trace is unchanged
    assert [s.rule for s in p.bot_steps] == ["build1-op", "build1-index", "build1-index"]



def test_every_construct_has_a_rule_in_each_bot_table() -> None:
    """#37: the bot dispatches through its rule tables (Figs. 9, 10 and 11), and each
    construct of the language has a rule in each.  A ``build1`` below the one being
    vectorised is never seen (the bot works bottom-up): its rule is the internal error.
    (A closed ``const``/``iota`` under ``build1`` is replicated or gathered before the
    table is consulted; its rule in the two ``build1`` tables is an assertion.)"""
    constructs = set(term_constructors())
    for table in (BUILD1_RULES, BUILD1_INDEX_RULES, INDEX_RULES):
        assert table in rules.TABLES
        missing = sorted(c.__name__ for c in constructs - set(table))
        assert not missing, f"{table.stage}: no rule for {missing}"
    supply, fv = IdSupply(), FreeVars()
    i = fresh_var(supply, "i", (), DType.INT64)
    inner = Build1(2, i, i)
    vectoriser = Vectoriser(3, fresh_var(supply, "j", (), DType.INT64), supply, fv)
    calls: list[Callable[[], object]] = [
        lambda: BUILD1_RULES[Build1](vectoriser, inner),
        lambda: BUILD1_INDEX_RULES[Build1](vectoriser, inner, (i,)),
        lambda: INDEX_RULES[Build1](IndexPusher(supply, fv), inner, (i,)),
    ]
    for call in calls:
        with pytest.raises(DualarrError, match="inner build1 was not vectorised first"):
            call()

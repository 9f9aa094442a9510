"""Stage (f) of the build-it-yourself track: its checks pass the solution and catch the
mistakes they name (a permutation not inverted, a let that keeps its variable's entry, a
let-form that walks a shared node again, a lowering that copies cotangents); and the
chain is real: on random programs, the gradient program by transposition, built from
stage d's Eq. 6, gives stage d's gradient (Fig. 19) and dualarr's vjp, through stage e's
compiled code too."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dualarr.teach.scratch import delta as D
from dualarr.teach.scratch.checks_f import NO_BUILD1
from dualarr.teach.scratch.grading import Outcome, run_task, tasks_of
from dualarr.teach.scratch.notebooks import notebook_path, stage
from dualarr.teach.scratch.oracle import cases
from dualarr.teach.scratch.terms import Term, subst


@pytest.fixture(scope="module")
def solution() -> dict[str, Any]:
    if not all(notebook_path(s, "reference").exists() for s in "abdef"):
        pytest.skip("the solution notebooks of stages a, b, d, e and f are not generated yet")
    return dict(vars(stage("f", "reference")))


def grade(ns: dict[str, Any], task_id: str) -> Outcome:
    (found,) = [t for t in tasks_of("f") if t.id == task_id]
    return run_task(found, ns)


def test_the_solution_passes_every_task(solution: dict[str, Any]) -> None:
    for t in tasks_of("f"):
        outcome = run_task(t, solution)
        assert outcome.passed, outcome.report()


def test_transposition_gives_stage_d_s_gradient_and_dualarr_s(solution: dict[str, Any]) -> None:
    a, d, e = stage("a", "reference"), stage("d", "reference"), stage("e", "reference")
    for case in cases(81, 25, constructs=NO_BUILD1):
        shapes = {n: tuple(case.env[n].shape) for n in case.inputs}
        ct = case.cotangent()
        results = []
        for p in (solution["gradient_program_by_transposition"](case.term, shapes),
                  d.gradient_program(case.term, shapes)):
            env = {**case.env, p.cotangent: ct}
            for name, bound in p.bindings:
                env[name] = a.evaluate(bound, env)
            results.append([a.evaluate(g, env) for g in p.gradients])
            value, compiled = e.compile_gradient(p)(*(case.env[n] for n in case.inputs), ct)
            assert np.allclose(value, case.value()), case.text
            results.append(list(compiled))
        want = case.vjp(ct)
        for got in results:
            for n, g in zip(case.inputs, got, strict=True):
                assert np.shape(g) == np.shape(want[n]) and np.allclose(g, want[n]), case.text


def test_a_permutation_not_inverted_is_caught(solution: dict[str, Any]) -> None:
    ref = solution

    def transpose(u: Any) -> Any:
        if isinstance(u, D.Transpose):
            return ref["LLet"](ref["LTranspose"](u.perm, ref["Cot"]()), ref["transpose"](u.d))
        return ref["transpose"](u)

    outcome = grade({**solution, "transpose": transpose}, "f.transpose")
    assert not outcome.passed
    assert "rule for Transpose" in outcome.lines[0] and "inverse permutation" in outcome.lines[-1]


def test_a_let_that_keeps_its_variable_is_caught(solution: dict[str, Any]) -> None:
    ref = solution

    def transpose(u: Any) -> Any:
        if isinstance(u, ref["DLet"]):
            shared = ref["LLet"](ref["Lookup"](u.name, ref["Cot"]()), transpose(u.bound))
            return ref["LLet"](transpose(u.body), ref["LPlus"](ref["Cot"](), shared))
        if isinstance(u, D.Add):
            return ref["LPlus"](transpose(u.left), transpose(u.right))
        if isinstance(u, D.Scale):
            return ref["LLet"](ref["LScale"](u.factor, ref["Cot"]()), transpose(u.d))
        return ref["transpose"](u)

    outcome = grade({**solution, "transpose": transpose}, "f.transpose")
    assert not outcome.passed
    assert "still has entries" in outcome.lines[0] and "Lookup" in outcome.lines[-1]


def test_a_let_form_that_walks_shared_nodes_again_is_caught(solution: dict[str, Any]) -> None:
    ref = solution

    def let_form(root: D.Delta) -> Any:
        bound: dict[int, Any] = {}

        def go(u: Any) -> Any:
            if isinstance(u, D.Share):
                bound[u.id] = go(u.d)  # again on every use
                return ref["DVar"](ref["share_name"](u.id))
            return ref["map_delta"](u, go)

        body = go(root)
        for i in sorted(bound, reverse=True):
            body = ref["DLet"](ref["share_name"](i), bound[i], body)
        return body

    outcome = grade({**solution, "let_form": let_form}, "f.let_form")
    assert not outcome.passed
    assert "more than linear" in outcome.lines[0]


def test_a_lowering_that_copies_cotangents_is_caught(solution: dict[str, Any]) -> None:
    def lower(t: Any, c: Any, bindings: list[tuple[str, Term]]) -> Any:
        emitted: list[tuple[str, Term]] = []
        result = solution["lower"](t, c, emitted)
        for name, bound in reversed(emitted):  # every binding inlined at each use
            result = {k: subst(v, name, bound) for k, v in result.items()}
        return result

    outcome = grade({**solution, "lower": lower}, "f.lower")
    assert not outcome.passed
    assert "more than linear" in outcome.lines[0]

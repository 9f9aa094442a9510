"""Stage (b) of the build-it-yourself track: its checks pass the solution and, for a
mistake in one rule of Figs. 9–11, fail naming that rule (the templates are ordered so
that the first one to fail has the broken rule at its head); an unrolled build1, an
index that is never pushed and a key rule replaced by a diagonal are caught too."""

from __future__ import annotations

import types
from typing import Any

import pytest

from dualarr.teach.scratch.checks_b import BULK_HINT
from dualarr.teach.scratch.grading import Outcome, run_task, tasks_of
from dualarr.teach.scratch.notebooks import exported_code, notebook_path, stage


@pytest.fixture(scope="module")
def solution() -> types.ModuleType:
    if not all(notebook_path(s, "reference").exists() for s in "ab"):
        pytest.skip("the solution notebooks of stages a and b are not generated yet")
    return stage("b", "reference")


def grade(ns: dict[str, Any], task_id: str) -> Outcome:
    (found,) = [t for t in tasks_of("b") if t.id == task_id]
    return run_task(found, ns)


def mutant(*edits: tuple[str, str]) -> dict[str, Any]:
    """The solution with each ``old`` replaced by ``new``: a learner's mistake."""
    code = exported_code(notebook_path("b", "reference"))
    code = code.replace('stage("a")', 'stage("a", "reference")')
    for old, new in edits:
        assert old in code, old
        code = code.replace(old, new, 1)
    module = types.ModuleType("scratch_b_mutant")
    exec(compile(code, "<stage b (mutant)>", "exec"), module.__dict__)
    return module.__dict__


def first_line(outcome: Outcome) -> str:
    assert not outcome.passed
    return outcome.lines[0]


def test_the_solution_passes_every_task(solution: types.ModuleType) -> None:
    for t in tasks_of("b"):
        outcome = run_task(t, vars(solution))
        assert outcome.passed, outcome.report()


MISTAKES = [
    ("b.index_rule", "index of cos",
     ("        case Op(op, args) if op in ZERO_PRESERVING:", "        case Op(op, args):")),
    ("b.index_rule", "index of replicate",
     ("            return index_rule(*guarded(body, ix[1:], [(ix[0], k)]))",
      "            return index_rule(body, ix[1:])")),
    ("b.index_rule", "index of build1",
     ("            return index_rule(*guarded(subst(body, i, ix[0]), ix[1:], [(ix[0], k)]))",
      "            return index_rule(subst(body, i, ix[0]), ix[1:])")),
    ("b.index_rule", "index of gather (a full index)",
     ("                return index_rule(*guarded(b, f + ix[m:], bounds))",
      "                return index_rule(b, f + ix[m:])")),
    ("b.index_rule", "index of tr (a full index",
     ("            back = tuple(ix[perm.index(d)] for d in range(len(perm)))",
      "            back = tuple(ix[perm[d]] for d in range(len(perm)))")),
    ("b.index_rule", "index of iota",
     ("            return Cond(in_range(ix[0], n), ix[0], ZERO)", "            return ix[0]")),
    ("b.index_rule", "index of an index",
     ("            return index_rule(b, ix1 + ix)", "            return Index(a, ix)")),
    ("b.build1_rule", "Fig. 9, sumOuter",
     ("            return SumOuter(Transpose((1, 0), build1_rule(k, i, b)))",
      "            return SumOuter(build1_rule(k, i, b))")),
    ("b.build1_rule", "Fig. 9, replicate",
     ("            return Transpose((1, 0), Replicate(n, build1_rule(k, i, b)))",
      "            return Replicate(n, build1_rule(k, i, b))")),
    ("b.build1_rule", "Fig. 9, let",
     ("            row = Index(Var(x2), (Var(i),))", "            row = Var(x2)")),
    ("b.build1_rule", "Fig. 9, cond",
     ("(Cond(c, ZERO, ONE),))", "(Cond(c, ONE, ZERO),))")),
    ("b.build1_rule", "Fig. 9, gather",
     ("            return Gather((k, *shape), build1_rule(k, i, b), (j, *names), f2)",
      "            return Gather((k, *shape), build1_rule(k, i, b), (j, *names), f2[1:])")),
    ("b.build1_rule", "Fig. 11, index of a fromList",
     ("    return Gather((k,), build1_rule(k, i, b), (j,), (Var(j), *rename(ix1, i, j)))",
      "    return Gather((k,), build1_rule(k, i, b), (j,), (ZERO, *rename(ix1, i, j)))")),
    ("b.build1_rule", "Fig. 11 after Fig. 10",
     ("    pushed = index_rule(a, ix)", "    pushed = Index(a, ix)")),
    ("b.bot", "an index of a build1",
     ("        case Index(b, ix):\n            return index_rule(b, ix)\n    return t",
      "    return t")),
    ("b.normal_form", "an index of an index",
     ("        if isinstance(u, Index) and not isinstance(u.array, NORMAL_ARRAYS):\n"
      "            return False", "")),
]


@pytest.mark.parametrize(("task_id", "rule", "edit"), MISTAKES,
                         ids=[f"{t}:{r}" for t, r, _ in MISTAKES])
def test_a_broken_rule_is_named(solution: types.ModuleType, task_id: str, rule: str,
                                edit: tuple[str, str]) -> None:
    assert rule in first_line(grade(mutant(edit), task_id))


def test_an_unrolled_build1_fails_as_not_bulk(solution: types.ModuleType) -> None:
    unrolled = mutant((
        "    if not mentions(e, i):\n        return Replicate(k, e)",
        "    if not mentions(e, i):\n        return Replicate(k, e)\n"
        "    return bot(FromList(tuple(subst(e, i, int_const(n)) for n in range(k))))",
    ))
    outcome = grade(unrolled, "b.build1_rule")
    assert "nodes for k = 3" in first_line(outcome)
    assert outcome.lines[-1].endswith(BULK_HINT)


def test_an_index_never_pushed_fails(solution: types.ModuleType) -> None:
    lazy = mutant(("    if not ix:\n        return a\n    match a:",
                   "    if not ix:\n        return a\n    return stop(a, ix)\n    match a:"))
    assert "index of a variable" in first_line(grade(lazy, "b.index_rule"))

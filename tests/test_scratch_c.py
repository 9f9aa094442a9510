"""Stage (c) of the build-it-yourself track: its checks pass the solution and catch the
mistakes they name (a Delta not shared, ids that shrink toward the root, a reverse pass
that ignores Share, one that rescans the Delta at every step, a tie given to the wrong
argument)."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

from dualarr.teach.scratch import delta as dl
from dualarr.teach.scratch.checks_c import LINEAR_HINT, SHARE_HINT, doubling, sharing_problem
from dualarr.teach.scratch.grading import Outcome, run_task, tasks_of
from dualarr.teach.scratch.notebooks import exported_code, notebook_path, stage


@pytest.fixture(scope="module")
def solution() -> types.ModuleType:
    if not all(notebook_path(s, "reference").exists() for s in "abc"):
        pytest.skip("the solution notebooks of stages a, b and c are not generated yet")
    return stage("c", "reference")


def grade(ns: dict[str, Any], task_id: str) -> Outcome:
    (found,) = [t for t in tasks_of("c") if t.id == task_id]
    return run_task(found, ns)


def mutant(*edits: tuple[str, str]) -> dict[str, Any]:
    """The solution with each ``old`` replaced by ``new``: a learner's mistake."""
    code = exported_code(notebook_path("c", "reference"))
    for stem in "ab":
        code = code.replace(f'stage("{stem}")', f'stage("{stem}", "reference")')
    for old, new in edits:
        assert old in code, old
        code = code.replace(old, new)
    module = types.ModuleType("scratch_c_mutant")
    exec(compile(code, "<stage c (mutant)>", "exec"), module.__dict__)
    return module.__dict__


def test_the_solution_passes_every_task(solution: types.ModuleType) -> None:
    for t in tasks_of("c"):
        outcome = run_task(t, vars(solution))
        assert outcome.passed, outcome.report()


def test_the_doubling_chain_has_a_linear_delta(solution: types.ModuleType) -> None:
    value, delta = solution.forward(doubling(30), {"x0": np.ones(3)})
    assert value == 3.0
    assert sharing_problem(delta) is None
    assert len(list(dl.nodes(delta))) < 4 * 30 + 4
    grads = solution.reverse(delta, np.asarray(1.0), {"x0": (3,)})
    assert np.array_equal(grads["x0"], np.full(3, 2.0**30))


def test_sharing_problems_are_named() -> None:
    x = dl.Input("x")
    shared = dl.Share(1, dl.Scale(np.asarray(2.0), x))
    assert sharing_problem(dl.Share(2, dl.Add(shared, shared))) is None
    unshared = dl.Scale(np.asarray(2.0), x)
    problem = sharing_problem(dl.Share(2, dl.Add(unshared, unshared)))
    assert problem is not None and "used 2 times" in problem
    problem = sharing_problem(dl.SumOuter(shared, 3))
    assert problem is not None and "root" in problem
    problem = sharing_problem(dl.Share(1, dl.Add(dl.Share(5, x), x)))
    assert problem is not None and "Invariant 1" in problem
    problem = sharing_problem(dl.Share(3, dl.Replicate(2, dl.SumOuter(shared, 2))))
    assert problem is not None and "SumOuter" in problem


def test_a_forward_pass_without_share_fails(solution: types.ModuleType) -> None:
    ns = mutant(("    return y, Share(next(_share_ids), delta)", "    return y, delta"))
    outcome = grade(ns, "c.forward")
    assert not outcome.passed and SHARE_HINT in "\n".join(outcome.lines)


def test_shrinking_ids_fail(solution: types.ModuleType) -> None:
    ns = mutant(("itertools.count(1)", "itertools.count(10**9, -1)"))
    outcome = grade(ns, "c.forward")
    assert not outcome.passed and "Invariant 1" in "\n".join(outcome.lines)


def test_a_reverse_pass_blind_to_share_fails(solution: types.ModuleType) -> None:
    ns = mutant(("                if i in accum:\n                    accum[i] = accum[i] + c",
                 "                if True:\n                    eval_delta(c, inner)"))
    outcome = grade(ns, "c.reverse")
    assert not outcome.passed and LINEAR_HINT in "\n".join(outcome.lines)


def test_a_quadratic_reverse_pass_fails(solution: types.ModuleType) -> None:
    rescan = ("        def walk(d: Delta) -> None:\n"
              "            for kid in dl.delta_children(d):\n"
              "                walk(kid)\n\n"
              "        walk(delta)\n"
              "        eval_delta(accum.pop(i), fragments.pop(i))")
    ns = mutant(("        eval_delta(accum.pop(i), fragments.pop(i))", rescan))
    outcome = grade(ns, "c.reverse")
    assert not outcome.passed and LINEAR_HINT in "\n".join(outcome.lines)


def test_a_tie_to_the_second_argument_fails(solution: types.ModuleType) -> None:
    ns = mutant(("x >= z if op", "x > z if op"))
    outcome = grade(ns, "c.op_delta")
    assert not outcome.passed and "maximum" in "\n".join(outcome.lines)


def test_a_wrapped_negative_read_fails(solution: types.ModuleType) -> None:
    ns = mutant(("                if all(0 <= j < n for j, n in zip(ix, shape, strict=False)):\n"
                 "                    one_hot[ix] = c",
                 "                if all(j < n for j, n in zip(ix, shape, strict=False)):\n"
                 "                    one_hot[ix] = c"))
    outcome = grade(ns, "c.reverse")
    assert not outcome.passed and "§5.2" in "\n".join(outcome.lines)

"""Stage (g) of the build-it-yourself track: vmap is build1 plus stage b's bot (the chain is
real), the Haskell notes' zip and cross examples, and the checks catch the mistakes they
name (a build1 left for the bot, nested vmaps where one batch is meant, a gradient
program batched all through, a binding batched only when it reads a batched input
directly)."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

from dualarr.teach.scratch.grading import Outcome, run_task, tasks_of
from dualarr.teach.scratch.notebooks import exported_code, notebook_path, stage
from dualarr.teach.scratch.oracle import cases
from dualarr.teach.scratch.terms import constructs_in


@pytest.fixture(scope="module")
def solution() -> types.ModuleType:
    if not all(notebook_path(s, "reference").exists() for s in "abdg"):
        pytest.skip("the solution notebooks of stages a, b, d and g are not generated yet")
    return stage("g", "reference")


def grade(ns: dict[str, Any], task_id: str) -> Outcome:
    (found,) = [t for t in tasks_of("g") if t.id == task_id]
    return run_task(found, ns)


def mutant(*edits: tuple[str, str]) -> dict[str, Any]:
    """The solution with each ``old`` replaced by ``new``: a learner's mistake."""
    code = exported_code(notebook_path("g", "reference"))
    for stem in "abd":
        code = code.replace(f'stage("{stem}")', f'stage("{stem}", "reference")')
    for old, new in edits:
        assert old in code, old
        code = code.replace(old, new)
    module = types.ModuleType("scratch_g_mutant")
    exec(compile(code, "<stage g (mutant)>", "exec"), module.__dict__)
    return module.__dict__


def test_the_solution_passes_every_task(solution: types.ModuleType) -> None:
    for t in tasks_of("g"):
        outcome = run_task(t, vars(solution))
        assert outcome.passed, outcome.report()


def test_vmap_is_build1_plus_stage_bs_bot(
    solution: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    real = solution.b

    class Counting:
        def bot(self, t: Any) -> Any:
            calls.append(t)
            return real.bot(t)

    case = cases(5, 1)[0]
    monkeypatch.setattr(solution, "b", Counting())
    batched = solution.vmap(case.term, case.inputs[0], 2)
    assert len(calls) == 1 and "Build1" in constructs_in(calls[0])
    assert "Build1" not in constructs_in(batched)


def test_the_haskell_notes_examples(solution: types.ModuleType) -> None:
    a = stage("a", "reference")
    add = a.trace(lambda x, y: x + y, "x", "y")
    pair = {"x": np.array([1.0, 2.0, 3.0]), "y": np.array([4.0, 6.0, 8.0])}
    zipped = a.evaluate(solution.vmap_axes(add, {"x": 0, "y": 0}, 3), pair)
    crossed = a.evaluate(solution.vmap(solution.vmap(add, "y", 3), "x", 3), pair)
    assert np.array_equal(zipped, [5.0, 8.0, 11.0])
    assert np.array_equal(crossed, [[5.0, 7.0, 9.0], [6.0, 8.0, 10.0], [7.0, 9.0, 11.0]])


def test_a_build1_left_for_the_bot_is_named(solution: types.ModuleType) -> None:
    ns = mutant(("return b.bot(Build1(batch, i, subst(", "return (Build1(batch, i, subst("))
    outcome = grade(ns, "g.vmap")
    assert not outcome.passed and "still has a build1" in outcome.lines[0]


def test_nested_vmaps_are_not_one_batch(solution: types.ModuleType) -> None:
    ns = mutant(
        (
            '    i = fresh("b")\n    for name, axis in in_axes.items():',
            '    for name, axis in in_axes.items():\n        i = fresh("b")\n'
            "        t = Build1(batch, i, t) if axis is not None else t",
        ),
        ("    return b.bot(Build1(batch, i, t))", "    return b.bot(t)"),
    )
    outcome = grade(ns, "g.in_axes")
    assert not outcome.passed and "differs from dualarr's value per example" in outcome.lines[0]


def test_shared_bindings_stay_unbatched(solution: types.ModuleType) -> None:
    ns = mutant(("        if any(mentions(bound, n) for n in names):", "        if True:"))
    outcome = grade(ns, "g.vmap_program")
    assert not outcome.passed and "reads no batched name" in outcome.lines[0]


def test_batchedness_flows_through_bindings(solution: types.ModuleType) -> None:
    ns = mutant(("            names.add(name)\n", ""))
    outcome = grade(ns, "g.vmap_program")
    assert not outcome.passed

"""Stage (e) of the build-it-yourself track: its checks pass the solution and catch the
mistakes they name (a buffered scatter, a wrapped negative index, a Python loop over the
elements, a loop in the generated code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dualarr.teach.scratch.checks_e import REFERENCE_RUNTIME, fig18_program
from dualarr.teach.scratch.grading import Outcome, count_lines, run_task, tasks_of
from dualarr.teach.scratch.notebooks import notebook_path, stage


@pytest.fixture(scope="module")
def solution() -> dict[str, Any]:
    if not all(notebook_path(s, "reference").exists() for s in "abde"):
        pytest.skip("the solution notebooks of stages a, b, d and e are not generated yet")
    return dict(vars(stage("e", "reference")))


def grade(ns: dict[str, Any], task_id: str) -> Outcome:
    (found,) = [t for t in tasks_of("e") if t.id == task_id]
    return run_task(found, ns)


def test_the_solution_passes_every_task(solution: dict[str, Any]) -> None:
    for t in tasks_of("e"):
        outcome = run_task(t, solution)
        assert outcome.passed, outcome.report()


def test_fig18_compiles_to_its_gradient(solution: dict[str, Any]) -> None:
    x = np.array([1.0, -2.0, 0.5, 3.0, 0.25])
    value, (grad,) = solution["compile_gradient"](fig18_program(5))(x, 2.0)
    assert np.isclose(value, np.sum(x * x[::-1]))
    assert np.allclose(grad, 4.0 * x[::-1])


def test_a_buffered_scatter_is_caught(solution: dict[str, Any]) -> None:
    def scatter(shape: tuple[int, ...], array: Any, f: Callable[..., Any], rank: int) -> Any:
        array = np.asarray(array)
        safe, ok = solution["in_bounds"](solution["index_grid"](array.shape[:rank], f), shape)
        out = np.zeros(shape + array.shape[rank:], array.dtype)
        out[tuple(j[ok] for j in safe)] += array[ok]  # one write per target survives
        return out

    outcome = grade({**solution, "scatter": scatter}, "e.bulk")
    assert not outcome.passed
    assert any(line.startswith("element:") for line in outcome.lines)


def test_a_wrapped_negative_index_is_caught(solution: dict[str, Any]) -> None:
    def read(array: Any, ix: tuple[Any, ...]) -> Any:
        array = np.asarray(array)
        clipped = (np.minimum(np.asarray(j), n - 1) for j, n in zip(ix, array.shape, strict=False))
        return array[tuple(clipped)]

    assert not grade({**solution, "read": read}, "e.bulk").passed


def test_a_python_loop_over_the_elements_is_caught(solution: dict[str, Any]) -> None:
    def scatter(shape: tuple[int, ...], array: Any, f: Callable[..., Any], rank: int) -> Any:
        array = np.asarray(array)
        out = np.zeros(shape + array.shape[rank:], array.dtype)
        for at in np.ndindex(*array.shape[:rank]):
            target = tuple(int(j) for j in f(*at))
            if all(0 <= j < n for j, n in zip(target, shape, strict=True)):
                out[target] += array[at]
        return out

    outcome = grade({**solution, "scatter": scatter}, "e.bulk")
    assert not outcome.passed
    assert "Python loop" in outcome.lines[0]


def test_a_loop_in_the_generated_code_is_caught(solution: dict[str, Any]) -> None:
    def generate(program: Any) -> str:
        source: str = solution["generate"](program)
        return source.replace("    return", "    for _ in range(1):\n        pass\n    return")

    outcome = grade({**solution, "generate": generate}, "e.generate")
    assert not outcome.passed
    assert "Python loop" in outcome.lines[0]


def test_count_lines_counts_the_learners_lines_only() -> None:
    def looped(n: int) -> int:
        total = 0
        for k in range(n):
            total += k
        return total

    _, small = count_lines(lambda: looped(3))
    _, large = count_lines(lambda: looped(30))
    assert large > small
    gather = REFERENCE_RUNTIME["gather"]

    def reverse(n: int) -> Any:
        return gather((n,), np.arange(n), lambda i: (n - 1 - i,))

    assert count_lines(lambda: reverse(8))[1] == count_lines(lambda: reverse(800))[1]

"""Assignment 4: the sharing bug of scalar dual numbers (§2.5, §2.6)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ad import delta as dl
from ...ad.reverse import ReverseStats, reverse
from ...interp.evaluate import NumpyAlgebra
from ...lang.errors import DualarrError
from .feedback import (
    F64,
    Feedback,
    delta_arithmetic_hints,
    describe_error,
    format_number,
    is_delta,
    not_implemented,
    not_yet,
    passed,
    require_callable,
)

# --------------------------------------------------------------------------------------
# Assignment 4: the sharing bug (§2.5, §2.6)
# --------------------------------------------------------------------------------------


def reverse_visits(d: dl.Delta) -> tuple[dict[int, Any], int]:
    """The reverse pass (Fig. 5) from cotangent 1: the gradients by input and the
    number of Delta nodes it visited."""
    stats = ReverseStats()
    with np.errstate(all="ignore"):
        grads = reverse(NumpyAlgebra(), d, np.ones(()), stats)
    return grads, stats.nodes_visited


class _LeakyNum:
    """Scalar dual numbers without Share (§2.3): the bug of assignment 4."""

    def __init__(self, primal: float, delta: dl.Delta) -> None:
        self.primal, self.delta = primal, delta

    def __add__(self, other: _LeakyNum) -> _LeakyNum:
        return _LeakyNum(self.primal + other.primal, dl.Add(self.delta, other.delta))


def _doubling(num: Callable[[float, dl.Delta], Any], x: float, n: int) -> Any:
    y = num(x, dl.Input(0, (), F64))
    for _ in range(n):
        y = y + y
    return y


def check_visit_formula(visits: Callable[[int], int]) -> Feedback:
    """Check a closed formula for the number of Delta nodes the reverse pass visits
    for ``n`` doublings ``y = y + y`` without Share (§2.5), against the count."""
    require_callable(visits, "visits", "check_visit_formula")
    title = "nodes visited by the reverse pass for n doublings, without Share"
    rows = []
    for n in range(11):
        _, measured = reverse_visits(_doubling(_LeakyNum, 1.0, n).delta)
        try:
            guess = visits(n)
        except NotImplementedError:
            return not_implemented("visits", "your formula")
        except Exception as err:
            return not_yet(title, f"visits({n}) raised {describe_error(err)}")
        rows.append((n, measured, guess))
    wrong = [(n, m, g) for n, m, g in rows if g != m]
    table = "n:        " + " ".join(f"{n:>5}" for n, _, _ in rows) + "\n"
    table += "measured: " + " ".join(f"{m:>5}" for _, m, _ in rows) + "\n"
    table += "yours:    " + " ".join(f"{g!s:>5}" for _, _, g in rows)
    if not wrong:
        return passed(f"{title}: your formula matches for n = 0..10", table)
    hints = [
        "Hint: the Delta of y_n is Add d d with d the Delta of y_(n-1): the node is one "
        "object, but a tree walk goes down both arguments. Write v(n) in terms of v(n - 1), "
        "with v(0) = 1 (the Input), and solve the recurrence."
    ]
    n, m, g = wrong[0]
    return not_yet(f"{title}: wrong for n = {n} (measured {m}, yours {g})", table, *hints)


@dataclass(frozen=True)
class _ChainCase:
    name: str
    x: float
    step: Callable[[Any, Any], Any]
    gradient: Callable[[float, int], float]


_CHAINS = (
    _ChainCase("doubling y = y + y", 1.0, lambda y, x: y + y, lambda x, n: 2.0**n),
    _ChainCase(
        "squaring y = y * y",
        1.01,
        lambda y, x: y * y,
        lambda x, n: 2.0**n * x ** (2**n - 1),
    ),
    _ChainCase(
        "y = y * x + y",
        0.5,
        lambda y, x: y * x + y,
        lambda x, n: (x + 1) ** n + n * x * (x + 1) ** (n - 1),
    ),
)


_CHAIN_NOTES = {
    "squaring y = y * y": " (the product rule of y * y uses the Delta of y twice: does your * "
    "share its result?)",
    "doubling y = y + y": " (y + y uses the Delta of y twice: does your + share its result?)",
}


def check_sharing(num: Callable[[float, dl.Delta], Any]) -> Feedback:
    """Check a scalar dual-number class ``num(primal, delta)`` with ``+`` and ``*``
    (§2.5): on three chains of ``n`` steps the gradients must be right, the Delta must
    satisfy Invariants 1 and 2, and the reverse pass must visit O(n) nodes, not 2^n."""
    require_callable(num, "num", "check_sharing")
    title = "sharing in scalar dual numbers (§2.5)"
    failures: list[str] = []
    hints: list[str] = []
    linear_counts: list[str] = []
    for case in _CHAINS:
        counts: dict[int, int] = {}
        problem = ""
        for n in (6, 12):
            try:
                x = num(case.x, dl.Input(0, (), F64))
                y = x
                for _ in range(n):
                    y = case.step(y, x)
                delta = y.delta
                primal = float(y.primal)
            except NotImplementedError:
                return not_implemented("the dual-number class", "your code")
            except Exception as err:
                problem = f"{case.name}: running it raised {describe_error(err)}"
                hints.extend(delta_arithmetic_hints(err))
                break
            if not is_delta(delta):
                problem = (
                    f"{case.name}: .delta is a {type(delta).__name__}, not a Delta"
                )
                break
            try:
                dl.check_invariants([delta])
            except DualarrError as err:
                problem = f"{case.name}, n = {n}: {err.detail}"
                hints.append(
                    "Hint: every Share needs a fresh id, larger than every id inside it: "
                    "take it from one IdSupply (supply.fresh()) when the node is made "
                    "(Invariants 1 and 2, §2.5)."
                )
                break
            grads, visited = reverse_visits(delta)
            counts[n] = visited
            expected = case.gradient(case.x, n)
            got = float(np.asarray(grads.get(0, 0.0)))
            if not math.isclose(got, expected, rel_tol=1e-9):
                problem = (
                    f"{case.name}, n = {n}: gradient expected {format_number(expected)}, "
                    f"got {format_number(got)}"
                )
                break
            value = case.x
            for _ in range(n):
                value = case.step(value, case.x)
            if not math.isclose(primal, value, rel_tol=1e-12):
                problem = (
                    f"{case.name}, n = {n}: value expected {format_number(value)}, "
                    f"got {format_number(primal)}"
                )
                break
        if problem:
            failures.append(problem)
            continue
        nodes = dl.size([_chain_delta(num, case, 12)]).nodes
        if counts[12] > 3 * counts[6] or counts[12] > 20 * 12 + 20:
            failures.append(
                f"{case.name}: the reverse pass visited {counts[6]} Delta nodes for n = 6 and "
                f"{counts[12]} for n = 12, though the Delta DAG for n = 12 has {nodes} "
                "distinct nodes: exponential, each use of a node walks it again"
                + _CHAIN_NOTES.get(case.name, "")
            )
            hints.append(
                "Hint: give the Delta that each operation returns a Share node with a fresh "
                "id (Fig. 3): the reverse pass then evaluates a shared node once, after "
                "adding up all its cotangents (Fig. 5)."
            )
        else:
            linear_counts.append(f"{case.name}: {counts[6]} visits for n = 6, {counts[12]} "
                                 f"for n = 12")
    if failures:
        return not_yet(
            f"{title}: {len(failures)} of {len(_CHAINS)} chains go wrong",
            *failures,
            *list(dict.fromkeys(hints)),
        )
    return passed(
        f"{title}: right gradients, Invariants 1 and 2 hold, linear reverse passes",
        *linear_counts,
    )


def _chain_delta(num: Callable[[float, dl.Delta], Any], case: _ChainCase, n: int) -> dl.Delta:
    x = num(case.x, dl.Input(0, (), F64))
    y = x
    for _ in range(n):
        y = case.step(y, x)
    delta: dl.Delta = y.delta
    return delta

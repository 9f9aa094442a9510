"""Assignment 6: the transposition rules ``T[·]`` of linear array operations
(paper Fig. 17, §6.3; ``book/rules.md §6.2``).

The student writes, for one Delta node ``d`` (a linear map ``u ↦ d``) and the cotangent
``c`` of its output, the cotangent of its operand ``u`` as a NumPy array.  The checker
tests the adjoint identity ``⟨T[d](c), x⟩ = ⟨c, d(x)⟩`` on random shapes and values and
compares each element with dualarr's rule (:func:`dualarr.ad.reverse.transpose_step`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ad import delta as dl
from ...ad.reverse import forward, transpose_step
from ...interp.algebra import IndexFn
from ...interp.evaluate import NumpyAlgebra
from ...lang.errors import UnsupportedError, format_shape
from .feedback import (
    F64,
    Feedback,
    describe_error,
    format_array,
    format_number,
    format_position,
    mismatched_positions,
    not_yet,
    passed,
    require_callable,
)

SHAPE_OPS = ("SumOuter", "Replicate", "Transpose", "Reshape")
"""The constructors of task 1: operations that move or copy elements."""

INDEX_OPS = ("Index", "Gather", "Scatter")
"""The constructors of task 2: operations that read or write through indices."""

CONSTRUCTORS = ("Scale", *SHAPE_OPS, *INDEX_OPS)
"""Every constructor of the assignment (``Scale`` is its worked example)."""


@dataclass(frozen=True)
class TranspositionCase:
    """One linear map ``d`` (a Delta node over ``Input 0``), described for a learner;
    ``out_of_range``: its index function points outside an array."""

    constructor: str
    description: str
    node: dl.UnaryDelta
    out_of_range: bool = False


def _ints(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def _fn(*components: Any) -> IndexFn[Any]:
    return IndexFn(tuple(_ints(c) for c in components))


def transposition_cases(constructor: str) -> list[TranspositionCase]:
    """The test maps of one constructor: random sizes and values (seeded), and the
    shapes where a typical mistake shows (a permutation that is not its own inverse,
    repeated indices, and indices out of range — past the end, negative, in a leading or
    a later axis — which the total semantics of §5.2 reads as 0 and drops as writes)."""
    rng = np.random.default_rng(sum(map(ord, constructor)))

    def u(*shape: int) -> dl.Input:
        return dl.Input(0, shape, F64)

    def case(description: str, node: dl.UnaryDelta, oob: bool = False) -> TranspositionCase:
        return TranspositionCase(constructor, description, node, oob)

    k, m, p = (int(v) for v in rng.integers(2, 6, size=3))
    match constructor:
        case "Scale":
            return [
                case(f"Scale y u, u : [{m}]", dl.Scale(np.round(rng.normal(size=m), 2), u(m))),
                case(
                    f"Scale y u, u : [{k},{m}]",
                    dl.Scale(np.round(rng.normal(size=(k, m)), 2), u(k, m)),
                ),
            ]
        case "SumOuter":
            return [
                case(f"SumOuter u, u : [{k},{m}]", dl.SumOuter(u(k, m))),
                case(f"SumOuter u, u : [{k},{m},{p}]", dl.SumOuter(u(k, m, p))),
            ]
        case "Replicate":
            return [
                case(f"Replicate {k} u, u : [{m}]", dl.Replicate(k, u(m))),
                case(f"Replicate {p} u, u : [{k},{m}]", dl.Replicate(p, u(k, m))),
            ]
        case "Transpose":
            return [
                case("Tr [1,0] u, u : [2,3]", dl.Transpose((1, 0), u(2, 3))),
                case("Tr [1,2,0] u, u : [2,3,4]", dl.Transpose((1, 2, 0), u(2, 3, 4))),
                case("Tr [2,0,1] u, u : [3,3,3]", dl.Transpose((2, 0, 1), u(3, 3, 3))),
            ]
        case "Reshape":
            return [
                case("Reshape [3,4] u, u : [2,6]", dl.Reshape((3, 4), u(2, 6))),
                case("Reshape [12] u, u : [2,3,2]", dl.Reshape((12,), u(2, 3, 2))),
            ]
        case "Index":
            i, j = int(rng.integers(0, 4)), int(rng.integers(0, 3))
            return [
                case(f"Index u [{i}], u : [4,{m}]", dl.Index(u(4, m), (_ints(i),))),
                case(f"Index u [{j}, 1], u : [3,4,2]", dl.Index(u(3, 4, 2), (_ints(j), _ints(1)))),
                case(
                    f"Index u [4], u : [4,{m}] (a read past the end gives 0)",
                    dl.Index(u(4, m), (_ints(4),)),
                    True,
                ),
                case(
                    f"Index u [-1], u : [4,{m}] (a read at a negative index gives 0)",
                    dl.Index(u(4, m), (_ints(-1),)),
                    True,
                ),
                case(
                    "Index u [1, 4], u : [3,4,2] (out of range in the second axis: gives 0)",
                    dl.Index(u(3, 4, 2), (_ints(1), _ints(4))),
                    True,
                ),
            ]
        case "Gather":
            reads = rng.integers(0, 3, size=5)
            rows = rng.integers(0, 4, size=(2, 2))
            wild = np.array([2, -1, 5, 0, 2])
            return [
                case(
                    f"Gather [5] u (λi. {format_array(reads)}[i]), u : [3] (elements read twice)",
                    dl.Gather((5,), u(3), _fn(reads), (5,)),
                ),
                case(
                    f"Gather [2,2] u (λi j. {format_array(rows)}[i,j]), u : [4,{m}]",
                    dl.Gather((2, 2), u(4, m), _fn(rows), (2, 2, m)),
                ),
                case(
                    f"Gather [5] u (λi. {format_array(wild)}[i]), u : [4] "
                    "(reads out of range give 0)",
                    dl.Gather((5,), u(4), _fn(wild), (5,)),
                    True,
                ),
                case(
                    "Gather [5] u (λi. [4, 1, 4, 0, 3][i]), u : [4] (index 4 is past the end: "
                    "reads 0)",
                    dl.Gather((5,), u(4), _fn([4, 1, 4, 0, 3]), (5,)),
                    True,
                ),
                case(
                    "Gather [4] u (λi. [0, -1, 3, -4][i]), u : [4] (negative indices read 0)",
                    dl.Gather((4,), u(4), _fn([0, -1, 3, -4]), (4,)),
                    True,
                ),
                case(
                    f"Gather [3] u (λi. [1, -1, 4][i]), u : [4,{m}] (rows out of range read 0)",
                    dl.Gather((3,), u(4, m), _fn([1, -1, 4]), (3, m)),
                    True,
                ),
                case(
                    "Gather [5] u (λi. ([0, 1, 2, 2, 1][i], [0, 4, 3, -1, 1][i])), u : [3,4] "
                    "(out of range in the second axis: reads 0)",
                    dl.Gather((5,), u(3, 4), _fn([0, 1, 2, 2, 1], [0, 4, 3, -1, 1]), (5,)),
                    True,
                ),
            ]
        case "Scatter":
            writes = rng.integers(0, 3, size=6)
            rows = rng.integers(0, 4, size=3)
            wild = np.array([1, 4, -1, 0, 1, 3])
            return [
                case(
                    f"Scatter [3] u (λi. {format_array(writes)}[i]), u : [6] "
                    "(writes that meet add up)",
                    dl.Scatter((3,), u(6), _fn(writes), 1),
                ),
                case(
                    f"Scatter [4] u (λi. {format_array(rows)}[i]), u : [3,{m}]",
                    dl.Scatter((4,), u(3, m), _fn(rows), 1),
                ),
                case(
                    f"Scatter [4] u (λi. {format_array(wild)}[i]), u : [6] "
                    "(writes out of range are dropped)",
                    dl.Scatter((4,), u(6), _fn(wild), 1),
                    True,
                ),
                case(
                    "Scatter [4] u (λi. [-1, 2, -4, 0][i]), u : [4] (writes at negative "
                    "indices are dropped)",
                    dl.Scatter((4,), u(4), _fn([-1, 2, -4, 0]), 1),
                    True,
                ),
                case(
                    f"Scatter [4] u (λi. [4, 1, -1][i]), u : [3,{m}] (rows written out of "
                    "range are dropped)",
                    dl.Scatter((4,), u(3, m), _fn([4, 1, -1]), 1),
                    True,
                ),
                case(
                    "Scatter [3,4] u (λi. ([0, 2, 1, 3, 2][i], [3, 0, 4, 1, -1][i])), u : [5] "
                    "(writes out of range in either axis are dropped)",
                    dl.Scatter((3, 4), u(5), _fn([0, 2, 1, 3, 2], [3, 0, 4, 1, -1]), 1),
                    True,
                ),
            ]
        case _:
            raise UnsupportedError(
                f"unknown constructor {constructor!r}; the assignment has "
                + ", ".join(CONSTRUCTORS),
                op="check_transposition_rules",
                location="",
            )


def _hints(
    case: TranspositionCase, c: np.ndarray, got: np.ndarray, x_shape: tuple[int, ...]
) -> list[str]:
    """A hint for a wrong ``T[d](c)``: the typical mistake it shows, else what the
    constructor does."""
    return _recognised(case, c, got, x_shape) or _generic(case)


def _recognised(
    case: TranspositionCase, c: np.ndarray, got: np.ndarray, x_shape: tuple[int, ...]
) -> list[str]:
    """The typical mistake a wrong ``T[d](c)`` shows, if it is one (a hint), else []."""
    d = case.node

    def same(value: Any) -> bool:
        try:
            candidate = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return False
        return candidate.shape == got.shape and bool(np.allclose(candidate, got))

    match d:
        case dl.Scale(factor=y):
            if same(c):
                return ["Hint: the factor is missing: Scale y u multiplies u elementwise by "
                        "y, and the cotangent of u must account for it."]
            with np.errstate(all="ignore"):
                if same(c / y):
                    return ["Hint: you divided by the factor. The transpose of a linear map is "
                            "not its inverse: write ⟨T(c), x⟩ = ⟨c, y * x⟩ elementwise."]
        case dl.Replicate():
            if same(c[0]):
                return ["Hint: u is copied into every row of the output, and every copy "
                        "influences the result; yours takes the cotangent of one row only."]
            if same(np.mean(c, axis=0)):
                return ["Hint: you averaged over the copies; each copy counts in full."]
        case dl.Transpose(perm=p):
            if same(np.transpose(c, p)):
                return [f"Hint: you applied the permutation {list(p)} to c again. Axis q of "
                        "the output is axis p[q] of u: the cotangent has to send each axis "
                        "back where it came from (for a permutation of 3 axes that is not "
                        "the same permutation)."]
        case dl.Reshape():
            if same(np.reshape(c, x_shape, order="F")):
                return ["Hint: Reshape keeps the row-major (C) order of the elements; yours "
                        "reads them in another order."]
        case dl.Index():
            if case.out_of_range:
                return ["Hint: this index points outside u, in some axis: the language is "
                        "total (§5.2), so Index reads zeros there and the output does not "
                        "depend on u at all. An index is out of range when it is negative or "
                        "not below its axis' length (NumPy would wrap a negative index "
                        "around, and raise past the end)."]
        case dl.Gather(fn=fn):
            if case.out_of_range:
                return ["Hint: this index function points outside u: the language is total "
                        "(§5.2), so a gather reads 0 there, and those positions of the output "
                        "do not depend on u. Drop them; an index is out of range when it is "
                        "negative or not below its axis' length, in any axis (NumPy would "
                        "wrap a negative index around)."]
            buffered = np.zeros(x_shape)
            buffered[tuple(_ints(k) for k in fn.components)] += c
            if same(buffered):
                return ["Hint: an element of u read by two positions of the output gets a "
                        "contribution from each, and they must add up. NumPy's `a[idx] += v` "
                        "adds only once at a repeated index (look for NumPy's unbuffered "
                        "in-place operations)."]
        case dl.Scatter():
            if case.out_of_range:
                return ["Hint: this index function points outside the output: the language "
                        "is total (§5.2), so those writes are dropped, and those elements of u "
                        "do not reach the output. An index is out of range when it is negative "
                        "or not below its axis' length, in any axis (NumPy wraps negative "
                        "indices around)."]
        case _:
            pass
    return []


def _generic(case: TranspositionCase) -> list[str]:
    """What the constructor does, as a starting point for its transpose."""
    match case.node:
        case dl.Index():
            return ["Hint: Index u ix reads the part of u at ix: the cotangent of u says how "
                    "each element of u influences the output. Elements that are not read do "
                    "not influence it at all."]
        case dl.Gather():
            return ["Hint: the transpose of a read through an index function is a write "
                    "through the same function (§3.3): each output position i reads u at "
                    "f(i), so its cotangent goes back to f(i)."]
        case dl.Scatter():
            return ["Hint: Scatter writes u[i] into out[f(i)]: each element of u influences "
                    "exactly one element of the output (or none). The transpose of a write "
                    "is a read (§3.3)."]
        case _:
            return [f"Hint: write the adjoint identity ⟨T(c), x⟩ = ⟨c, {case.constructor} … x⟩ "
                    "for a small example by hand, element by element."]


def _shape_hint(case: TranspositionCase) -> str:
    return (
        f"Hint: T[{case.constructor} …] maps the output's cotangent back to the space of "
        "the operand u: it returns an array of u's shape (d.delta.shape)."
    )


def _check_case(
    rule: Callable[[dl.Delta, np.ndarray], Any], case: TranspositionCase, seed: int
) -> tuple[str, list[str]] | None:
    """None when right; else 'not implemented' or the problem and its hints."""
    rng = np.random.default_rng(seed)
    alg = NumpyAlgebra()
    d = case.node
    x = np.round(rng.normal(size=d.delta.shape), 3)
    c = np.round(rng.normal(size=d.shape), 3)
    fx = np.asarray(forward(alg, d, {0: x}), dtype=np.float64)
    expected = np.asarray(transpose_step(alg, d, c), dtype=np.float64)
    try:
        with np.errstate(all="ignore"):
            raw = rule(d, c.copy())
    except NotImplementedError:
        return "not implemented", []
    except Exception as err:
        problem = f"{case.description}: your rule raised {describe_error(err)}"
        return problem, _hints(case, c, np.full(d.delta.shape, np.nan), d.delta.shape)
    try:
        got = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        return (
            f"{case.description}: your rule returned a {type(raw).__name__}, not an array",
            ["Hint: return the cotangent of u as a NumPy array."],
        )
    if got.shape != tuple(d.delta.shape):
        return (
            f"{case.description}: c has shape {format_shape(d.shape)}, your T(c) has shape "
            f"{format_shape(got.shape)}, but u has shape {format_shape(d.delta.shape)}",
            [
                _shape_hint(case),
                *(_hints if case.constructor in INDEX_OPS else _recognised)(
                    case, c, got, tuple(d.delta.shape)
                ),
            ],
        )
    lhs, rhs = float(np.sum(got * x)), float(np.sum(c * fx))
    bad = mismatched_positions(expected, got)
    if not bad and np.isclose(lhs, rhs, rtol=1e-6, atol=1e-9):
        return None
    at = bad[0] if bad else tuple(0 for _ in got.shape)
    lines = [
        f"{case.description}, with x and c random:",
        f"⟨T(c), x⟩ = {format_number(lhs)}, but ⟨c, {case.constructor} … x⟩ = {format_number(rhs)}",
    ]
    if bad:
        lines.append(
            f"element {format_position(at)} of T(c): expected {format_number(expected[at])}, "
            f"yours {format_number(got[at])}"
            + (f" ({len(bad)} of {got.size} elements wrong)" if len(bad) > 1 else "")
        )
    if got.size <= 12:
        lines.append(f"c = {format_array(c)}\nexpected T(c) = {format_array(expected)}\n"
                     f"yours = {format_array(got)}")
    return "\n".join(lines), _hints(case, c, got, tuple(d.delta.shape))


def check_transposition_rules(
    rule: Callable[[dl.Delta, np.ndarray], Any], constructors: Sequence[str] = CONSTRUCTORS
) -> Feedback:
    """Check transposition rules ``rule(d, c)``: for a Delta node ``d`` (the linear map
    ``u ↦ d``, ``u = d.delta``) and a cotangent ``c`` of ``d``'s shape, the cotangent of
    ``u`` (Fig. 17; ``book/rules.md §6.2``).  For each constructor named, on random
    shapes and values: the adjoint identity ``⟨T(c), x⟩ = ⟨c, d(x)⟩`` and agreement with
    dualarr's rule, element by element.
    """
    require_callable(rule, "rule", "check_transposition_rules")
    names = list(constructors)
    cases = {name: transposition_cases(name) for name in names}
    title = "transposition rules T[·]"
    right: list[str] = []
    todo: list[str] = []
    failures: list[str] = []
    hints: list[str] = []
    for name in names:
        outcome = None
        for n, case in enumerate(cases[name]):
            outcome = _check_case(rule, case, 100 * n + len(name))
            if outcome is not None:
                break
        if outcome is None:
            right.append(f"{name} ({len(cases[name])} maps)")
        elif outcome[0] == "not implemented":
            todo.append(name)
        else:
            failures.append(outcome[0])
            hints.extend(outcome[1])
    if not todo and not failures:
        return passed(
            f"{title}: right for {', '.join(names)}",
            "⟨T(c), x⟩ = ⟨c, d(x)⟩ on random values, and T(c) agrees with dualarr's rule "
            "element by element, on " + ", ".join(right),
        )
    details = []
    if right:
        details.append("right: " + ", ".join(right))
    if todo:
        details.append(
            "not implemented yet (NotImplementedError): " + ", ".join(todo)
        )
    details += failures
    wrong = len(todo) + len(failures)
    return not_yet(
        f"{title}: {wrong} of {len(names)} constructor{'s' if len(names) > 1 else ''} "
        "not right yet",
        *details,
        *list(dict.fromkeys(hints)),
    )

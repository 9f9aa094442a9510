"""Exercises of chapter 01 (dual numbers and sharing, §2 of the paper): a ``__sub__`` and
an ``exp`` for scalar dual numbers (Fig. 2), the sizes of a squaring chain (§2.5), a
Delta that breaks Invariant 1, and a Delta on which the evaluation order of Fig. 5
matters."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ad import delta as dl
from ...lang.errors import DualarrError
from ..exercises.feedback import (
    F64,
    Feedback,
    delta_arithmetic_hints,
    describe_error,
    format_number,
    is_delta,
    not_yet,
    passed,
    require_callable,
)

# --------------------------------------------------------------------------------------
# A scalar Fig. 5 evaluator the checkers run on learners' Deltas
# --------------------------------------------------------------------------------------


class _NotScalarDelta(Exception):
    """A Delta node outside the scalar language of Fig. 1(b) plus Share."""


@dataclass(frozen=True)
class _Evaluation:
    """What one reverse pass did: the gradient by input, the Share ids in the order they
    were evaluated (an id twice means a Share was walked twice) and the nodes visited."""

    grad: dict[int, float]
    order: tuple[int, ...]
    visits: int


def _evaluate(root: dl.Delta, last_in_first_out: bool = False) -> _Evaluation:
    """Fig. 5 from cotangent 1: the largest pending Share id first (a max-heap), or the
    most recently found one (a stack) when ``last_in_first_out``."""
    grad: dict[int, float] = {}
    dfrag: dict[int, dl.Delta] = {}
    accum: dict[int, float] = {}
    pending: list[int] = []
    order: list[int] = []
    visits = 0

    def eval_d(c: float, d: dl.Delta) -> None:
        nonlocal visits
        visits += 1
        match d:
            case dl.Zero():
                pass
            case dl.Input(index=n):
                grad[n] = grad.get(n, 0.0) + c
            case dl.Add(left=a, right=b):
                eval_d(c, a)
                eval_d(c, b)
            case dl.Scale(factor=r, delta=a):
                eval_d(_factor(r) * c, a)
            case dl.Share(id=i, delta=a):
                if i not in accum:
                    if last_in_first_out:
                        pending.append(i)
                    else:
                        heapq.heappush(pending, -i)
                    dfrag[i] = a
                accum[i] = accum.get(i, 0.0) + c
            case _:
                raise _NotScalarDelta(type(d).__name__)

    eval_d(1.0, root)
    while pending:
        i = pending.pop() if last_in_first_out else -heapq.heappop(pending)
        order.append(i)
        eval_d(accum.pop(i), dfrag.pop(i))
    return _Evaluation(grad, tuple(order), visits)


def _factor(r: object) -> float:
    """A Scale factor of a scalar Delta as a float."""
    return float(np.asarray(r))


def _scalar_delta_problem(value: object, name: str) -> str | None:
    """Why ``value`` is not a Delta of the scalar language, else ``None``."""
    if not is_delta(value):
        return f"{name} is a {type(value).__name__}, not a Delta"
    allowed = (dl.Zero, dl.Input, dl.Add, dl.Scale, dl.Share)
    for node in dl.delta_postorder([value]):
        if not isinstance(node, allowed):
            return (
                f"{name} holds a {type(node).__name__} node: use only Zero, Input, Add, "
                "Scale and Share (the scalar Deltas of §2)"
            )
    return None


# --------------------------------------------------------------------------------------
# Exercise 1: __sub__ and exp (Fig. 2)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SubExpCase:
    name: str
    uses: str  # "sub", "exp" or "both": which of the learner's rules the case needs
    inputs: tuple[float, ...]
    run: Callable[[Callable[[Any], Any], tuple[Any, ...]], Any]
    value: Callable[[tuple[float, ...]], float]
    gradient: Callable[[tuple[float, ...]], tuple[float, ...]]


_SUB_EXP_CASES = (
    _SubExpCase(
        "x - y at x = 3, y = 2", "sub", (3.0, 2.0),
        lambda exp, v: v[0] - v[1],
        lambda p: p[0] - p[1],
        lambda p: (1.0, -1.0),
    ),
    _SubExpCase(
        "exp(x) at x = 0.5", "exp", (0.5,),
        lambda exp, v: exp(v[0]),
        lambda p: math.exp(p[0]),
        lambda p: (math.exp(p[0]),),
    ),
    _SubExpCase(
        "exp(x - y) * y at x = 1, y = 0.5", "both", (1.0, 0.5),
        lambda exp, v: exp(v[0] - v[1]) * v[1],
        lambda p: math.exp(p[0] - p[1]) * p[1],
        lambda p: (
            math.exp(p[0] - p[1]) * p[1],
            math.exp(p[0] - p[1]) * (1.0 - p[1]),
        ),
    ),
)

_SUB_HINT = (
    "Hint: in a - b the tangent of b counts with the opposite sign. The scalar Delta "
    "language has no subtraction, but it has a constructor that multiplies a Delta by a "
    "number (Fig. 1(b))."
)
_EXP_HINT = (
    "Hint: like sin in Dual, exp multiplies the tangent of its argument by its derivative "
    "at the primal value; the derivative of exp is exp itself."
)


def check_sub_exp(dual: Callable[[float, dl.Delta], Any], exp: Callable[[Any], Any]) -> Feedback:
    """Check a scalar dual-number class ``dual(primal, delta)`` with ``-`` (and ``*``)
    and a function ``exp`` on it (Fig. 2): the primal values, and the gradients that
    the reverse pass computes from their Deltas, on three small programs."""
    require_callable(dual, "dual", "check_sub_exp")
    require_callable(exp, "exp", "check_sub_exp")
    title = "subtraction and exp on dual numbers (Fig. 2)"
    for case in _SUB_EXP_CASES:
        try:
            inputs = tuple(dual(v, dl.Input(k, (), F64)) for k, v in enumerate(case.inputs))
            out = case.run(exp, inputs)
            primal, delta = float(out.primal), out.delta
        except Exception as err:
            hints = delta_arithmetic_hints(err)
            if isinstance(err, TypeError) and "for -" in str(err):
                hints = ["Hint: give the class a __sub__ method, next to __add__ and __mul__."]
            return not_yet(f"{title}: {case.name}", f"it raised {describe_error(err)}", *hints)
        problem = _scalar_delta_problem(delta, "the result's .delta")
        if problem:
            return not_yet(f"{title}: {case.name}", problem)
        expected_value = case.value(case.inputs)
        if not math.isclose(primal, expected_value, rel_tol=1e-9):
            return not_yet(
                f"{title}: {case.name}",
                f"value expected {format_number(expected_value)}, got {format_number(primal)}",
                "Hint: the primal part is the ordinary value: compute it as for plain floats.",
            )
        grad = _evaluate(delta).grad
        got = tuple(grad.get(k, 0.0) for k in range(len(case.inputs)))
        expected = case.gradient(case.inputs)
        if not all(math.isclose(g, e, rel_tol=1e-9, abs_tol=1e-12)
                   for g, e in zip(got, expected, strict=True)):
            hint = {"sub": _SUB_HINT, "exp": _EXP_HINT}.get(case.uses, _SUB_HINT + " " + _EXP_HINT)
            return not_yet(
                f"{title}: {case.name}",
                "gradient expected " + _tuple(expected) + ", got " + _tuple(got)
                + " (the reverse pass of §2.4 on your Delta)",
                hint,
            )
    return passed(f"{title}: values and gradients right on {len(_SUB_EXP_CASES)} programs")


def _tuple(values: tuple[float, ...]) -> str:
    return "(" + ", ".join(format_number(v) for v in values) + ")"


# --------------------------------------------------------------------------------------
# Exercise 2: the squaring chain x = x * x (§2.5)
# --------------------------------------------------------------------------------------


class _Fig2Dual:
    """Scalar dual numbers of Fig. 2, without sharing."""

    def __init__(self, primal: float, delta: dl.Delta) -> None:
        self.primal, self.delta = primal, delta

    def __mul__(self, other: _Fig2Dual) -> _Fig2Dual:
        return _Fig2Dual(
            self.primal * other.primal,
            dl.Add(dl.Scale(other.primal, self.delta), dl.Scale(self.primal, other.delta)),
        )


def _squaring(x: float, n: int) -> _Fig2Dual:
    y = _Fig2Dual(x, dl.Input(0, (), F64))
    for _ in range(n):
        y = y * y
    return y


def _tree_size(root: dl.Delta) -> int:
    size: dict[int, int] = {}
    for d in dl.delta_postorder([root]):
        size[id(d)] = 1 + sum(size[id(k)] for k in dl.delta_children(d))
    return size[id(root)]


def check_square_chain(
    dag_nodes: Callable[[int], int],
    tree_nodes: Callable[[int], int],
    gradient: Callable[[float, int], float],
) -> Feedback:
    """Check closed formulas for the chain ``x = x * x`` run ``n`` times on the dual
    numbers of Fig. 2: the Delta's distinct nodes (its DAG), its nodes seen as a tree
    (what a tree-walking reverse pass visits, §2.5), and the gradient at ``x``."""
    for value, name in ((dag_nodes, "dag_nodes"), (tree_nodes, "tree_nodes"),
                        (gradient, "gradient")):
        require_callable(value, name, "check_square_chain")
    title = "the chain x = x * x"
    counts: list[tuple[str, Callable[[int], int], Callable[[dl.Delta], int], str]] = [
        ("dag_nodes", dag_nodes, lambda d: dl.size([d]).nodes,
         "Hint: the DAG keeps one copy of the previous Delta. Count the new nodes one step "
         "creates: look at what Dual.__mul__ builds around the two Deltas it is given."),
        ("tree_nodes", tree_nodes, _tree_size,
         "Hint: in the tree, one step contains the previous Delta once per mention in the "
         "product rule, plus the new nodes around them. Write t(n) from t(n - 1), with "
         "t(0) = 1 (the Input), and solve the recurrence."),
    ]
    for name, formula, measure, hint in counts:
        for n in range(9):
            measured = measure(_squaring(1.5, n).delta)
            try:
                yours = formula(n)
            except Exception as err:
                return not_yet(f"{title}: {name}({n}) raised {describe_error(err)}")
            if yours != measured:
                return not_yet(
                    f"{title}: {name}({n}) should be {measured}, yours gives {yours}",
                    "measured: " + ", ".join(
                        f"n={k}: {measure(_squaring(1.5, k).delta)}" for k in range(6)
                    ),
                    hint,
                )
    for x in (1.5, 0.9):
        for n in range(6):
            expected = _evaluate(_squaring(x, n).delta).grad[0]
            try:
                yours_g = float(gradient(x, n))
            except Exception as err:
                return not_yet(f"{title}: gradient({x}, {n}) raised {describe_error(err)}")
            if not math.isclose(yours_g, expected, rel_tol=1e-9):
                return not_yet(
                    f"{title}: gradient({x}, {n}) should be {format_number(expected)}, yours gives "
                    f"{format_number(yours_g)}",
                    "Hint: after n steps x has become a power of the input: which power? "
                    "Differentiate that power.",
                )
    return passed(
        f"{title}: DAG, tree and gradient formulas right for n = 0..8",
        "at x = 1.5, n = 4 the gradient is "
        f"{format_number(_evaluate(_squaring(1.5, 4).delta).grad[0])}",
    )


# --------------------------------------------------------------------------------------
# Exercise 3: breaking Invariant 1
# --------------------------------------------------------------------------------------


def check_broken_invariant(delta: object) -> Feedback:
    """Check a scalar Delta that breaks Invariant 1 of §2.5 (a Share below a Share with a
    smaller or equal id) and on which the evaluator of Fig. 5, largest id first, has to
    evaluate one Share more than once."""
    title = "a Delta that breaks Invariant 1"
    if not is_delta(delta):
        return not_yet(title, f"your Delta is a {type(delta).__name__}, not a Delta")
    problem = _scalar_delta_problem(delta, "your Delta")
    if problem:
        return not_yet(title, problem)
    try:
        dl.check_invariants([delta])
        broken = ""
    except DualarrError as err:
        broken = err.detail
    if not broken.startswith("Invariant 1"):
        return not_yet(
            f"{title}: check_invariants accepts it" if not broken else f"{title}: {broken}",
            "Hint: Invariant 1 says every Share id inside Share i is smaller than i; put a "
            "Share with a larger id inside one with a smaller id.",
        )
    result = _evaluate(delta)
    repeated = sorted({i for i in result.order if result.order.count(i) > 1})
    if not repeated:
        return not_yet(
            f"{title}: check_invariants rejects it ({broken}), but every Share is still "
            "evaluated once",
            f"Share ids in evaluation order: {list(result.order)}",
            "Hint: a wrong order only hurts when a Share is taken before all its cotangent "
            "has arrived. Make the Share with the larger id reachable on two paths: once "
            "directly from the root, and once below the Share with the smaller id.",
        )
    truth = _tree_gradient(delta)
    return passed(
        f"{title}: Share {repeated[0]} is evaluated more than once",
        f"Share ids in evaluation order: {list(result.order)}",
        f"the gradient is still {format_number(result.grad.get(0, 0.0))} (a tree walk gives "
        f"{format_number(truth)}): what breaks is the work, each Share is no longer walked once",
    )


def _tree_gradient(root: dl.Delta) -> float:
    """The gradient of input 0 by walking the tree (sharing ignored, always right)."""
    total = 0.0
    stack: list[tuple[float, dl.Delta]] = [(1.0, root)]
    while stack:
        c, d = stack.pop()
        match d:
            case dl.Input(index=0):
                total += c
            case dl.Add(left=a, right=b):
                stack.extend([(c, a), (c, b)])
            case dl.Scale(factor=r, delta=a):
                stack.append((_factor(r) * c, a))
            case dl.Share(delta=a):
                stack.append((c, a))
            case _:
                pass
    return total


# --------------------------------------------------------------------------------------
# Exercise 4: a stack instead of the max-heap
# --------------------------------------------------------------------------------------


def check_order_matters(delta: object) -> Feedback:
    """Check a scalar Delta that satisfies Invariants 1 and 2 and on which Fig. 5 with a
    stack (last in, first out) instead of the max-heap evaluates some Share twice."""
    title = "a Delta on which the order of the reverse pass matters"
    if not is_delta(delta):
        return not_yet(title, f"your Delta is a {type(delta).__name__}, not a Delta")
    problem = _scalar_delta_problem(delta, "your Delta")
    if problem:
        return not_yet(title, problem)
    try:
        dl.check_invariants([delta])
    except DualarrError as err:
        return not_yet(
            f"{title}: {err.detail}",
            "Hint: keep both invariants (make the Deltas with IdSupply, ids growing as you "
            "build upwards): the point is that even a well-formed Delta needs the order.",
        )
    heap, stack = _evaluate(delta), _evaluate(delta, last_in_first_out=True)
    details = (
        f"max-heap: Share order {list(heap.order)}, {heap.visits} nodes visited",
        f"stack:    Share order {list(stack.order)}, {stack.visits} nodes visited",
    )
    if len(stack.order) > len(heap.order):
        return passed(
            f"{title}: with a stack a Share is evaluated more than once",
            *details,
            f"the gradient stays {format_number(stack.grad.get(0, 0.0))}: only the work grows",
        )
    return not_yet(
        f"{title}: the stack evaluates every Share once, as the heap does",
        *details,
        "Hint: a stack takes the Share found last first. Build a Share that is used twice, "
        "once directly and once inside another Share, and choose the order of the Add's "
        "arguments so that the direct use is found last.",
    )

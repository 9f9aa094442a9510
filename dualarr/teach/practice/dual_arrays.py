"""Exercises of chapter 05 (dual arrays, §6 of the paper, Figs. 12–17): the factors of
the rule for ``/``, a one-hot cotangent from an ``Index`` outside ``build1`` (§4.4), a
cotangent accumulated from three uses, the sizes of another chain, and the ``Contract``
node of a matrix–vector product."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ad import delta as dl
from ...ad.dual import Dual, DualAlgebra
from ...ad.reverse import ReverseStats, reverse, reverse_steps
from ...api import dual_run, vectorised_program
from ...interp.evaluate import NumpyAlgebra
from ...lang.functions import sin
from ...lang.functions import sum as sum_all
from ..exercises.feedback import (
    F64,
    Feedback,
    describe_error,
    format_array,
    mismatched_positions,
    not_yet,
    passed,
    require_callable,
)

_X = np.array([0.5, 1.0, 2.0])


def _same(expected: np.ndarray, got: object) -> bool:
    value = np.asarray(got, dtype=float)
    return value.shape == expected.shape and not mismatched_positions(expected, value)


# --------------------------------------------------------------------------------------
# Exercise 1: the rule for /
# --------------------------------------------------------------------------------------


def _division_delta(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, dl.Delta]:
    """The two Scale factors of the Delta of ``x / x`` (numerator's, denominator's)."""
    alg = DualAlgebra(NumpyAlgebra())
    dx = Dual(x, dl.Input(0, x.shape, F64))
    delta = alg.op("div", [dx, dx], F64).delta
    match delta:
        case dl.Share(delta=dl.Add(left=dl.Scale(factor=f1), right=dl.Scale(factor=f2))):
            return np.asarray(f1, dtype=float), np.asarray(f2, dtype=float), delta
        case _:
            raise ValueError(f"unexpected Delta for x / x: {delta}")


def check_div_factors(
    factors: Callable[[np.ndarray], tuple[Any, Any]], gradient: Callable[[np.ndarray], Any]
) -> Feedback:
    """Check ``factors(x)``, the two ``Scale`` factors that the rule for ``/`` puts in the
    Delta of ``x / x`` (the numerator's first), and ``gradient(x)``, what the reverse pass
    gives for ``x / x`` from cotangent 1, against ``DualAlgebra``."""
    require_callable(factors, "factors", "check_div_factors")
    require_callable(gradient, "gradient", "check_div_factors")
    title = "the rule for / on x / x"
    f1, f2, delta = _division_delta(_X)
    try:
        yours = tuple(factors(_X))
    except Exception as err:
        return not_yet(f"{title}: factors(x) raised {describe_error(err)}")
    hint = (
        "Hint: the rule for a / b is the quotient rule: the numerator's tangent is scaled "
        "by the derivative of a / b in a, the denominator's by the derivative in b. "
        "Evaluate both at a = b = x; print(alg.op('div', [dx, dx], F64).delta) shows them."
    )
    for k, (name, expected) in enumerate((("numerator", f1), ("denominator", f2))):
        if len(yours) != 2 or not _same(expected, yours[k]):
            got = format_array(yours[k]) if len(yours) == 2 else f"{len(yours)} factors"
            return not_yet(
                f"{title}: the {name}'s factor at x = {format_array(_X)}",
                f"expected {format_array(expected)}, got {got}",
                hint,
            )
    expected_gradient = np.asarray(reverse(NumpyAlgebra(), delta, np.ones(3))[0])
    try:
        got_gradient = gradient(_X)
    except Exception as err:
        return not_yet(f"{title}: gradient(x) raised {describe_error(err)}")
    if not _same(expected_gradient, got_gradient):
        return not_yet(
            f"{title}: the gradient of x / x at x = {format_array(_X)}",
            f"expected {format_array(expected_gradient)}, "
            f"got {format_array(np.asarray(got_gradient))}",
            "Hint: the reverse pass sends the cotangent through both Scale nodes to the same "
            "Input and adds what arrives. What is the derivative of a constant function?",
        )
    return passed(f"{title}: both factors and the gradient right")


# --------------------------------------------------------------------------------------
# Exercise 2: an Index outside build1
# --------------------------------------------------------------------------------------


def check_one_hot_reads(f: Callable[[Any], Any], predicted: int) -> Feedback:
    """Check ``f(x)``, a program that reads elements of ``x`` with a static index outside
    any ``build1``, and ``predicted``, the number of one-hot cotangents the reverse pass
    materialises for it (``ReverseStats.one_hots``, §4.4)."""
    require_callable(f, "f", "check_one_hot_reads")
    title = "one-hot cotangents of reads outside build1"
    x = np.arange(1.0, 6.0)
    try:
        run = dual_run(vectorised_program(f, (x,)), (x,), (0,))
        stats = ReverseStats()
        reverse(NumpyAlgebra(), run.deltas[0], np.ones(()), stats)
    except Exception as err:
        return not_yet(f"{title}: differentiating your function raised {describe_error(err)}")
    indexes = [d for d in dl.delta_postorder(run.deltas) if isinstance(d, dl.Index)]
    if not indexes:
        return not_yet(
            f"{title}: the Delta of your program has no Index node",
            f"its Delta: {run.deltas[0]}",
            "Hint: read single elements of x with a Python int, like x[2], outside any "
            "build1, and combine them into a scalar.",
        )
    if predicted == stats.one_hots:
        return passed(f"{title}: {stats.one_hots}, one per Index node of the Delta "
                      f"({len(indexes)})")
    return not_yet(
        f"{title}: you predicted {predicted}, the reverse pass made a different number",
        f"the Delta of your program:\n{run.deltas[0]}",
        "Hint: each Index node transposes to one one-hot array, made when its Share is "
        "evaluated (once, whatever the number of uses). Count them in the Delta above.",
    )


# --------------------------------------------------------------------------------------
# Exercise 3: three uses of z
# --------------------------------------------------------------------------------------


def check_accum_prediction(
    thrice: Callable[[Any], Any], predicted: Callable[[np.ndarray], Any]
) -> Feedback:
    """Check ``thrice(x)``, ``twice`` of the chapter with ``z`` used three times
    (``sum(z + z + z)`` with ``z = y * y``, ``y = sin x``), and ``predicted(x)``: the
    cotangent accumulated at ``s1`` (the Delta of ``y``) before it is evaluated."""
    require_callable(thrice, "thrice", "check_accum_prediction")
    require_callable(predicted, "predicted", "check_accum_prediction")
    title = "the cotangent accumulated at s1"
    x = np.arange(1.0, 6.0)
    try:
        program = vectorised_program(thrice, (x,))
        value = float(program(x))
        run = dual_run(program, (x,), (0,))
        steps = list(reverse_steps(NumpyAlgebra(), run.deltas[0], np.ones(())))
    except Exception as err:
        return not_yet(f"{title}: running thrice raised {describe_error(err)}")
    expected_value = float(3 * np.sum(np.sin(x) ** 2))
    if not np.isclose(value, expected_value, rtol=1e-9):
        return not_yet(
            f"{title}: thrice(x) is {value:.6g}, but sum(z + z + z) is {expected_value:.6g}",
            "Hint: keep y = sin(x) and z = y * y from twice, and use z three times in the sum.",
        )
    before = next((s for s in steps if 1 in s.accum), None)
    if before is None:
        return not_yet(f"{title}: no Share 1 in the Delta of thrice",
                       "Hint: compute y = da.sin(x) first, as twice does, so that it gets id 1.")
    expected = np.asarray(before.accum[1])
    try:
        yours = predicted(x)
    except Exception as err:
        return not_yet(f"{title}: predicted(x) raised {describe_error(err)}")
    if _same(expected, yours):
        return passed(f"{title}: your prediction is right", f"accum[1] = {format_array(expected)}")
    return not_yet(
        f"{title}: at x = {format_array(x)}",
        f"expected {format_array(expected)}, got {format_array(np.asarray(yours, dtype=float))}",
        "Hint: accum[1] is the derivative of f in y, all uses added. f adds up z once per "
        "use, and z = y * y: apply the chain rule by hand, as the chapter did for twice.",
    )


# --------------------------------------------------------------------------------------
# Exercise 4: the chain x = sin(x) + x
# --------------------------------------------------------------------------------------


def _sum_chain(k: int) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        for _ in range(k):
            x = sin(x) + x
        return sum_all(x)

    return f


def _tree_size(root: dl.Delta) -> int:
    size: dict[int, int] = {}
    for d in dl.delta_postorder([root]):
        size[id(d)] = 1 + sum(size[id(k)] for k in dl.delta_children(d))
    return size[id(root)]


def check_chain_sizes(
    dag_nodes: Callable[[int], int], tree_nodes: Callable[[int], int]
) -> Feedback:
    """Check closed formulas for the Delta of ``sum`` of the chain ``x = sin(x) + x``
    run ``k`` times (dual arrays): its distinct nodes (the DAG) and its nodes seen as a
    tree."""
    require_callable(dag_nodes, "dag_nodes", "check_chain_sizes")
    require_callable(tree_nodes, "tree_nodes", "check_chain_sizes")
    title = "the chain x = sin(x) + x"
    xs = np.linspace(0.1, 1.0, 4)
    deltas = {
        k: dual_run(vectorised_program(_sum_chain(k), (xs,)), (xs,), (0,)).deltas[0]
        for k in range(1, 9)
    }
    checks: tuple[tuple[str, Callable[[int], int], Callable[[dl.Delta], int], str], ...] = (
        ("dag_nodes", dag_nodes, lambda d: dl.size([d]).nodes,
         "Hint: count the nodes one step adds (the Delta of sin and of +, each with its "
         "Share); the sum and the Input are there once."),
        ("tree_nodes", tree_nodes, _tree_size,
         "Hint: how many times does one step use the previous x? Write t(k) from t(k - 1) "
         "and solve the recurrence, with t(1) from the table."),
    )
    for name, formula, measure, hint in checks:
        for k, delta in deltas.items():
            measured = measure(delta)
            try:
                yours = formula(k)
            except Exception as err:
                return not_yet(f"{title}: {name}({k}) raised {describe_error(err)}")
            if yours != measured:
                table = ", ".join(f"k={j}: {measure(d)}" for j, d in list(deltas.items())[:5])
                return not_yet(
                    f"{title}: {name}({k}) should be {measured}, yours gives {yours}",
                    f"measured: {table}",
                    hint,
                )
    return passed(
        f"{title}: DAG and tree formulas right for k = 1..8",
        "each step still uses the previous x twice (in sin(x) and in + x), so the tree "
        "still doubles; the DAG grows by fewer nodes per step because + has no product "
        "rule: its Delta is a plain Add",
    )


# --------------------------------------------------------------------------------------
# Exercise 5: the Contract node
# --------------------------------------------------------------------------------------


def _shares_with_contract(root: dl.Delta) -> list[int]:
    """Ids of the Share nodes whose own fragment (down to the next Shares) holds a
    Contract."""
    found = []
    for node in dl.delta_postorder([root]):
        if not isinstance(node, dl.Share):
            continue
        stack = list(dl.delta_children(node))
        while stack:
            below = stack.pop()
            if isinstance(below, dl.Contract):
                found.append(node.id)
                break
            if not isinstance(below, dl.Share):
                stack.extend(dl.delta_children(below))
    return found


def check_contract_share(delta: object, answer: object) -> Feedback:
    """Check ``answer``, the id of the Share whose fragment holds the ``Contract`` nodes
    in ``delta`` (the Delta a ``BackpropStepper`` shows)."""
    title = "the Share of the Contract nodes"
    if not isinstance(delta, dl.Share):
        return not_yet(f"{title}: pass the stepper's Delta (stepper.delta), not a "
                       f"{type(delta).__name__}")
    ids = _shares_with_contract(delta)
    if not ids:
        return not_yet(f"{title}: this Delta has no Contract node")
    if answer in ids:
        return passed(f"{title}: s{answer}",
                      "a matrix-vector product is bilinear: one Contract per argument, each "
                      "with the other argument's primal fixed")
    known = sorted({d.id for d in dl.delta_postorder([delta]) if isinstance(d, dl.Share)})
    where = f"there is no Share {answer}" if answer not in known else f"s{answer} holds none"
    return not_yet(
        f"{title}: {where}",
        f"the Share ids are {known}",
        "Hint: print the stepper's Delta (its .delta): one line per Share; or call next() and "
        "read describe() until the Share being evaluated holds a Contract.",
    )

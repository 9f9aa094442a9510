"""Exercises of chapter 03 (why naive array AD fails, §4 of the paper): which methods'
Delta sizes change when the dot product is written another way, the slopes of the Delta
size for a body with more reads (§4.1–4.3), and the one-hot elements of a
matrix–vector product differentiated without the bot (§4.4)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...ad.reverse import reverse
from ...api import dual_run
from ...interp.evaluate import NumpyAlgebra
from ...lang.functions import build1
from ...lang.functions import sum as sum_all
from ...lang.program import trace
from ..baselines import (
    BaselineReport,
    dual_arrays_gradient,
    scalar_gradient,
    unvectorised_gradient,
)
from ..exercises.feedback import (
    Feedback,
    describe_error,
    format_number,
    not_yet,
    passed,
    require_callable,
)

METHODS: dict[str, Callable[..., BaselineReport]] = {
    "scalar_gradient": scalar_gradient,
    "unvectorised_gradient": unvectorised_gradient,
    "dual_arrays_gradient": dual_arrays_gradient,
}
"""The three methods of chapter 03, by name: the keys of a prediction."""

_HOW = {
    "scalar_gradient": "every scalar operation of the program as it runs, element by element",
    "unvectorised_gradient": "the program as written: one Delta per run of a build1 body, "
    "one node per bulk operation elsewhere",
    "dual_arrays_gradient": "the program after the bot and the simplifier, one node per "
    "bulk operation",
}


def _arguments(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.linspace(-1.0, 1.0, n), np.linspace(0.5, 2.0, n)


def _dot(x: Any, y: Any) -> Any:
    n = x.shape[0]
    return sum_all(build1(n, lambda i: x[i] * y[i]))


def _prediction_problem(prediction: object, kind: type) -> str | None:
    if not isinstance(prediction, Mapping) or set(prediction) != set(METHODS):
        return (
            "the prediction should be a dict with the keys "
            + ", ".join(repr(m) for m in METHODS)
        )
    wrong = [k for k, v in prediction.items() if not isinstance(v, kind) or v is None]
    if wrong:
        return f"the prediction for {wrong[0]!r} should be a {kind.__name__}"
    return None


def _nodes(method: str, f: Callable[..., Any], n: int) -> int | str:
    try:
        return METHODS[method](f, *_arguments(n)).delta_nodes
    except Exception as err:
        return f"{method} on your function raised {describe_error(err)}"


# --------------------------------------------------------------------------------------
# Exercise 1: the dot product written another way
# --------------------------------------------------------------------------------------


def check_dot_variant(f: Callable[[Any, Any], Any], changes: Mapping[str, bool]) -> Feedback:
    """Check ``f(x, y)``, a dot product written another way, and ``changes``: for each
    method of :data:`METHODS`, whether its Delta size at ``n = 16`` differs from the
    one of the ``build1`` dot product of the chapter."""
    require_callable(f, "f", "check_dot_variant")
    title = "Delta sizes of your dot product"
    problem = _prediction_problem(changes, bool)
    if problem:
        return not_yet(title, problem)
    x, y = _arguments(5)
    try:
        value = float(trace(f, x, y)(x, y))
    except Exception as err:
        return not_yet(f"{title}: running it raised {describe_error(err)}")
    if not math.isclose(value, float(x @ y), rel_tol=1e-9, abs_tol=1e-12):
        return not_yet(f"{title}: at n = 5 your function gives {format_number(value)}, "
                       f"the dot product is {format_number(float(x @ y))}")
    rows, wrong = [], []
    for method in METHODS:
        ours, yours = _nodes(method, _dot, 16), _nodes(method, f, 16)
        if isinstance(yours, str):
            return not_yet(title, yours)
        changed = ours != yours
        rows.append(f"{method:22} build1 dot: {ours:4} nodes, yours: {yours:4} nodes")
        if changes[method] != changed:
            wrong.append(method)
    if not wrong:
        return passed(f"{title}: all three predictions right (n = 16)", *rows)
    method = wrong[0]
    said = "changes" if changes[method] else "stays the same"
    return not_yet(
        f"{title}: you predicted that the size for {method} {said}; it does not",
        f"Hint: {method} records {_HOW[method]}. Compare what it sees in the two programs, "
        "then run it on both (the `delta_nodes` of its report).",
    )


# --------------------------------------------------------------------------------------
# Exercise 2: the slopes for a body with more reads
# --------------------------------------------------------------------------------------

_SLOPE_SIZES = (4, 8, 16, 32)


def check_slope_prediction(
    f: Callable[[Any, Any], Any], slopes: Mapping[str, int]
) -> Feedback:
    """Check ``slopes``: for each method of :data:`METHODS`, the predicted number of Delta
    nodes per element of ``f(x, y)`` (the slope of the line ``fit_line`` prints)."""
    require_callable(f, "f", "check_slope_prediction")
    title = "the slopes of the Delta sizes"
    problem = _prediction_problem(slopes, int)
    if problem:
        return not_yet(title, problem)
    measured: dict[str, int] = {}
    for method in METHODS:
        counts = [_nodes(method, f, n) for n in _SLOPE_SIZES]
        numbers = [c for c in counts if isinstance(c, int)]
        if len(numbers) < len(counts):
            return not_yet(title, next(c for c in counts if isinstance(c, str)))
        slope = (numbers[1] - numbers[0]) // (_SLOPE_SIZES[1] - _SLOPE_SIZES[0])
        intercept = numbers[0] - slope * _SLOPE_SIZES[0]
        if any(c != slope * n + intercept for c, n in zip(numbers, _SLOPE_SIZES, strict=True)):
            return not_yet(f"{title}: the Delta size of {method} is not a line in n: {numbers}")
        measured[method] = slope
    wrong = [m for m in METHODS if slopes[m] != measured[m]]
    if not wrong:
        return passed(
            f"{title}: all three right",
            *(f"{m:22} {measured[m]} nodes per element" for m in METHODS),
        )
    method = wrong[0]
    hints = {
        "scalar_gradient": "Hint: the scalar method makes no node for reading an element: "
        "each element of an input is one Input node, however often it is read. Add the "
        "scalar operations per element (the body's and the sum's), each with the nodes of "
        "its derivative rule and one Share.",
        "unvectorised_gradient": "Hint: without the bot every read in the body is an Index "
        "node with its Share, and a read written twice is read twice. Add the nodes of the "
        "body's operations, each with its Share, and the sum's.",
        "dual_arrays_gradient": "Hint: after the bot there is no build1 and no read per "
        "element left: how does a program of bulk operations grow with n?",
    }
    return not_yet(
        f"{title}: your slope for {method} is {slopes[method]}, the measured one differs",
        f"at n = {_SLOPE_SIZES[0]} its Delta has {_nodes(method, f, _SLOPE_SIZES[0])} nodes; "
        "yours predicts a line through the counts at every size",
        hints[method],
    )


# --------------------------------------------------------------------------------------
# Exercise 3: one-hot elements of a matrix-vector product
# --------------------------------------------------------------------------------------


class _OneHotCounter(NumpyAlgebra):
    """NumPy arrays, counting the elements of the one-hot cotangents."""

    def __init__(self) -> None:
        super().__init__()
        self.elements = 0

    def one_hot(self, shape: Any, ix: Any, c: Any) -> Any:
        self.elements += math.prod(shape)
        return super().one_hot(shape, ix, c)


def matvec(a: Any, v: Any) -> Any:
    """The sum of the matrix–vector product ``a @ v``, written with nested ``build1``."""
    n, m = a.shape
    return sum_all(build1(n, lambda i: sum_all(build1(m, lambda j: a[i, j] * v[j]))))


def matvec_one_hot_elements(n: int, m: int) -> int:
    """The one-hot elements the reverse pass materialises for :func:`matvec` on an
    ``n × m`` matrix, differentiated without the bot (both arguments)."""
    a, v = np.linspace(-1.0, 1.0, n * m).reshape(n, m), np.linspace(0.5, 1.5, m)
    run = dual_run(trace(matvec, a, v), (a, v), (0, 1))
    counter = _OneHotCounter()
    reverse(counter, run.deltas[0], np.ones(()))
    return counter.elements


def check_matvec_one_hots(formula: Callable[[int, int], int]) -> Feedback:
    """Check a closed formula for :func:`matvec_one_hot_elements` in ``n`` and ``m``."""
    require_callable(formula, "formula", "check_matvec_one_hots")
    title = "one-hot elements of the matrix-vector product, without the bot"
    shapes = ((2, 3), (3, 2), (3, 4), (1, 5), (4, 1))
    rows = []
    for n, m in shapes:
        measured = matvec_one_hot_elements(n, m)
        try:
            yours = formula(n, m)
        except Exception as err:
            return not_yet(f"{title}: formula({n}, {m}) raised {describe_error(err)}")
        rows.append(f"n = {n}, m = {m}: measured {measured}, yours {yours}")
        if yours != measured:
            return not_yet(
                f"{title}: wrong for n = {n}, m = {m} (measured {measured}, yours {yours})",
                *rows,
                "Hint: count the runs of the inner body, and the reads in it. Each read "
                "transposes to a one-hot cotangent as large as the whole array it reads "
                "from, not just the row or the element.",
            )
    return passed(f"{title}: your formula matches on {len(shapes)} shapes", *rows)

"""Assignment 3: a gather program and its gradient (§3.3, §6.3, Fig. 17)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...api import grad
from ...interp.evaluate import evaluate_many
from ...lang import functions as lang
from ...lang.errors import UnsupportedError, format_shape
from ...lang.functions import gather
from ...lang.program import trace
from ...lang.tensor import Tensor
from ...lang.terms import (
    Build1,
    Gather,
    Scatter,
    Term,
    postorder,
)
from ...pipeline import pipeline
from .feedback import (
    Feedback,
    abbreviate_term,
    all_close,
    describe_error,
    format_array,
    format_number,
    format_position,
    mismatched_positions,
    not_implemented,
    not_yet,
    passed,
    require_callable,
)

# --------------------------------------------------------------------------------------
# Assignment 3: a gather program and its gradient (§3.3, §6.3, Fig. 17)
# --------------------------------------------------------------------------------------


def _reference_diffs(x: Tensor) -> Tensor:
    n = x.shape[0]
    return gather((n - 1,), x, lambda i: (i + 1,)) - gather((n - 1,), x, lambda i: (i,))


def _reference_tv(x: Tensor) -> Tensor:
    d = _reference_diffs(x)
    return lang.sum(d * d)


_LENGTHS = (3, 5, 8, 2, 1)
"""The lengths of the test vectors; 1 is the edge where diffs is empty (shape [0])."""

_EMPTY_HINT = (
    "Hint: for x of length 1 there are no differences: diffs(x) has shape [0], tv(x) is an "
    "empty sum, 0, and so is its gradient. A gather of shape [0] reads nothing, and the "
    "scatter that transposes it writes nothing (§3.3, §5.2); the boundary elements must "
    "not assume that a first or last difference exists."
)


def _vectors(seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-6, 7, size=n).astype(np.float64) for n in _LENGTHS]


def check_diffs(diffs: Callable[[Tensor], Tensor]) -> Feedback:
    """Check ``diffs(x)[i] = x[i + 1] - x[i]`` (length ``n - 1``), written with gathers
    (§3.3): traced for several lengths, its values compared with ``np.diff``."""
    require_callable(diffs, "diffs", "check_diffs")
    title = "diffs(x)[i] = x[i + 1] - x[i] with gathers"
    for x in _vectors():
        n = x.shape[0]
        try:
            program = trace(diffs, x)
            got = np.asarray(program(x))
        except NotImplementedError:
            return not_implemented("diffs", "your program")
        except Exception as err:
            return not_yet(
                title,
                f"for x = {format_array(x)}: your program raised {describe_error(err)}",
                *([_EMPTY_HINT] if n == 1 else []),
            )
        expected = np.diff(x)
        if got.shape != expected.shape:
            return not_yet(
                title,
                f"for x of length {n}, your program returns shape {format_shape(got.shape)}; diffs "
                f"has n - 1 = {n - 1} elements",
                _EMPTY_HINT if n == 1
                else "Hint: the first argument of da.gather is the shape of the result.",
            )
        bad = mismatched_positions(expected, got)
        if bad:
            first = bad[0]
            hint = "Hint: out[i] = x[f(i)] for a gather with index function f (§3.3)."
            if all_close(got, -expected):
                hint = (
                    "Hint: every element has the wrong sign: diffs subtracts each element "
                    "from the one after it, as np.diff does."
                )
            elif [p[0] for p in bad] == [n - 2] and got[n - 2] == -x[n - 2]:
                hint = (
                    "Hint: only the last element is wrong, and it is -x[n - 2]: x[i + 1] "
                    "was read out of range (which gives 0, §5.2). Check the index functions."
                )
            return not_yet(
                title,
                f"for x = {format_array(x)}: element {format_position(first)}: "
                f"expected {format_number(expected[first])}, got {format_number(got[first])} "
                f"(all: expected {format_array(expected)}, got {format_array(got)})",
                f"your program: {abbreviate_term(program.outputs[0])}",
                hint,
            )
        nodes = postorder(program.outputs)
        if any(isinstance(t, Build1) for t in nodes):
            return not_yet(
                title,
                f"the values are right, but your program uses build1: {program}",
                "Hint: this assignment is about gather: write diffs with da.gather (or "
                "slices, which are gathers). The bot would turn your build1 into gathers "
                "(see da.pipeline(...).vectorised).",
            )
        if not any(isinstance(t, Gather) for t in nodes):
            return not_yet(title, f"the values are right, but there is no gather: {program}")
    return passed(f"{title}: right for lengths {', '.join(map(str, _LENGTHS))}")


def check_tv_gradient(tv_grad: Callable[[np.ndarray], Any]) -> Feedback:
    """Check a NumPy function predicting the gradient of ``tv(x) = sum(diffs(x) ** 2)``
    against ``da.grad(tv)`` for several lengths (boundaries included)."""
    require_callable(tv_grad, "tv_grad", "check_tv_gradient")
    title = "gradient of tv(x) = sum((x[i + 1] - x[i]) ** 2)"
    expected_grad = grad(_reference_tv)
    for x in _vectors():
        n = x.shape[0]
        expected = np.asarray(expected_grad(x))
        try:
            with np.errstate(all="ignore"):
                got = np.asarray(tv_grad(x.copy()), dtype=np.float64)
        except NotImplementedError:
            return not_implemented("tv_grad", "your NumPy gradient")
        except Exception as err:
            return not_yet(
                title,
                f"for x = {format_array(x)}: tv_grad raised {describe_error(err)}",
                *([_EMPTY_HINT] if n == 1 else []),
            )
        if got.shape != expected.shape:
            return not_yet(
                title,
                f"for x of length {n}, tv_grad returns shape {format_shape(got.shape)}; the "
                f"gradient has the shape of x, {format_shape(expected.shape)}",
                *([_EMPTY_HINT] if n == 1 else []),
            )
        bad = [p[0] for p in mismatched_positions(expected, got)]
        if not bad:
            continue
        lines = [
            f"for x = {format_array(x)}: {len(bad)} of {n} elements differ",
            f"expected (da.grad): {format_array(expected)}",
            f"got (tv_grad):      {format_array(got)}",
        ]
        return not_yet(title, *lines, *_tv_hints(x, expected, got, bad))
    return passed(
        f"{title}: matches da.grad for lengths {', '.join(map(str, _LENGTHS))}",
        "each x[j] is read by two gathers (as x[i + 1] for i = j - 1 and as x[i] for i = j), "
        "so its gradient adds two contributions, except at the ends",
    )


def _tv_hints(x: np.ndarray, expected: np.ndarray, got: np.ndarray, bad: list[int]) -> list[str]:
    n = x.shape[0]
    if n == 1:
        return [_EMPTY_HINT]
    sel = [p for p in range(n) if expected[p] != 0]
    circular = 2 * (x - np.roll(x, 1)) - 2 * (np.roll(x, -1) - x)
    if all_close(got, 0.0):
        return ["Hint: your gradient is 0 everywhere, but tv changes with x. Work out "
                "d tv / d x[j] for one interior j first: which terms (x[i + 1] - x[i]) ** 2 "
                "mention x[j]?"]
    if all_close(got, -expected):
        return ["Hint: every element has the wrong sign: d/dd (d ** 2) = 2 d, and d = x[i+1] "
                "- x[i] depends on x[i + 1] with +1 and on x[i] with -1."]
    roll = ("np.roll wraps around: yours is the gradient of a circular sum that also has the "
            "term (x[0] - x[n - 1]) ** 2. A gather reading out of range gives 0, and the "
            "scatter in its gradient drops such writes (§5.2).")
    if sel and all(all_close(got[p], 0.5 * expected[p]) for p in sel):
        return ["Hint: half the right value everywhere: the derivative of d ** 2 is 2 d."]
    if sel and all(all_close(got[p], 2.0 * expected[p]) for p in sel):
        also = f" (Or, if you used np.roll: {roll})" if all_close(got, circular) else ""
        return ["Hint: twice the right value everywhere: the derivative of d ** 2 is 2 d, "
                "counted once per term." + also]
    if all_close(got, circular):
        return ["Hint: " + roll]
    if n > 2 and set(bad) <= {0, n - 1}:
        return [
            f"Hint: only the boundary element(s) {', '.join(map(str, bad))} are wrong. "
            "x[0] is read only by the gather λ[i]. [i] (at i = 0) and x[n - 1] only by "
            "λ[i]. [i + 1] (at i = n - 2): each gets one contribution, not two. "
            "The scatter that transposes a gather drops writes that fall outside x."
        ]
    return ["Hint: work out d tv / d x[j] by hand for one interior j: which terms "
            "(x[i + 1] - x[i]) ** 2 mention x[j]?"]


ScatterPrediction = tuple[Sequence[int] | int, Callable[[int], Any]]
"""``(target shape, index function)``, e.g. ``((7,), lambda i: (i + 2,))``."""


@dataclass(frozen=True)
class _ScatterInfo:
    shape: tuple[int, ...]
    table: tuple[tuple[int, ...], ...]  # the index function at i = 0, 1, …

    def describe(self) -> str:
        targets = ", ".join(format_position(t) if len(t) > 1 else str(t[0]) for t in self.table)
        last = len(self.table) - 1
        return f"scatter {format_shape(self.shape)} _ (λ[i]. …) sending i = 0..{last} to {targets}"


def _scatters_of(terms: Sequence[Term]) -> list[_ScatterInfo]:
    found = []
    for node in postorder(terms):
        if not isinstance(node, Scatter) or len(node.vars) != 1:
            continue
        count = node.array.shape[0]
        table = []
        for i in range(count):
            env = {node.vars[0]: np.asarray(i, dtype=np.int64)}
            values = evaluate_many(list(node.index), env)
            table.append(tuple(int(v) for v in values))
        found.append(_ScatterInfo(tuple(node.outer_shape), tuple(table)))
    return found


def _predicted(prediction: ScatterPrediction, count: int) -> _ScatterInfo:
    shape, fn = prediction
    dims = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    table = []
    for i in range(count):
        value = fn(i)
        items = value if isinstance(value, tuple | list) else (value,)
        table.append(tuple(int(v) for v in items))
    return _ScatterInfo(dims, tuple(table))


def check_scatter_prediction(
    prediction: Sequence[ScatterPrediction] | Callable[[], Sequence[ScatterPrediction]],
    n: int = 7,
) -> Feedback:
    """Check a prediction of the scatters in the gradient of ``tv`` for ``x`` of length
    ``n``: one ``(target shape, index function)`` per scatter, in any order, as a list or
    as a function of no arguments that returns one.  They are compared with the
    ``shared`` stage of ``da.pipeline(tv, x)`` (the symbolic reverse pass, Fig. 19), where
    every gather has become a scatter (Fig. 17)."""
    title = f"the scatters in the gradient of tv (x of length {n})"
    if callable(prediction):
        try:
            prediction = prediction()
        except NotImplementedError:
            return not_implemented("the prediction", "your list")
        except Exception as err:
            return not_yet(title, f"your prediction raised {describe_error(err)}")
        if isinstance(prediction, str) or not isinstance(prediction, Sequence):
            return not_yet(
                title,
                f"your function returned {prediction!r}, not a list of (target shape, index "
                "function) pairs such as [((7,), lambda i: (i + 2,))]",
            )
    if isinstance(prediction, str) or not isinstance(prediction, Sequence):
        raise UnsupportedError(
            "prediction must be a list of (target shape, index function) pairs, or a "
            "function that returns one",
            op="check_scatter_prediction",
            location="",
        )
    p = pipeline(_reference_tv, np.zeros(n))
    actual = _scatters_of(list(p.shared.gradients))
    count = n - 1
    predicted: list[_ScatterInfo] = []
    for k, item in enumerate(prediction):
        try:
            if not (isinstance(item, tuple) and len(item) == 2 and callable(item[1])):
                return not_yet(
                    title,
                    f"prediction {k} is {item!r}: write (target shape, index function), e.g. "
                    "((7,), lambda i: (i + 2,))",
                )
            predicted.append(_predicted(item, count))
        except NotImplementedError:
            return not_implemented("the prediction", "your list")
        except Exception as err:
            return not_yet(
                title, f"calling the index function of prediction {k} raised "
                f"{describe_error(err)}"
            )
    remaining = list(actual)
    unmatched: list[_ScatterInfo] = []
    for guess in predicted:
        if guess in remaining:
            remaining.remove(guess)
        else:
            unmatched.append(guess)
    if not unmatched and not remaining:
        return passed(
            f"{title}: both predicted",
            *[s.describe() for s in actual],
            "the transpose of gather sh x f is scatter (shape of x) c f: the same index "
            "function, the target shaped like x",
        )
    details = [
        f"the gradient has {len(actual)} scatter(s), you predicted {len(predicted)}"
    ]
    details += [f"yours, not in the gradient: {g.describe()}" for g in unmatched]
    found = len(actual) - len(remaining)
    details.append(
        f"{found} of the gradient's scatters predicted, {len(remaining)} missing"
    )
    hints = []
    shapes = {s.shape for s in actual}
    if any(g.shape not in shapes for g in unmatched):
        hints.append(
            f"Hint: a scatter that transposes a gather writes into an array shaped like "
            f"the gathered array x ({format_shape((n,))}), not like the gather's result "
            f"({format_shape((count,))})."
        )
    tables = {s.table for s in actual}
    inverse = {tuple((t[0] - 1,) for t in table) for table in tables} | {
        tuple((t[0] + 1,) for t in table) for table in tables
    }
    if any(g.table not in tables and g.table in inverse for g in unmatched):
        hints.append(
            "Hint: a scatter needs no inverse of the index function: gather reads "
            "out[i] = x[f(i)], scatter writes out[f(i)] += c[i] with the same f (§3.3)."
        )
    if not hints:
        hints.append(
            "Hint: each gather of x in tv becomes one scatter in the gradient (Fig. 17: the "
            "reverse derivative of Gather is Scatter with the same index function)."
        )
    return not_yet(title, *details, *hints)



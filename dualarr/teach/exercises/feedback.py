"""The verdict of a check (:class:`Feedback`) and the helpers every checker uses to
name what is wrong."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np

from ...ad import delta as dl
from ...lang.errors import DualarrError, UnsupportedError
from ...lang.program import Program, trace
from ...lang.terms import (
    DType,
    Term,
)

F64 = DType.FLOAT64



# --------------------------------------------------------------------------------------
# Feedback
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Feedback:
    """The verdict of one check: ``passed``, a one-line ``title`` and ``details``
    (lines; a line starting with ``Hint:`` is a hint).  Shows itself as text, HTML or
    Markdown in a notebook."""

    passed: bool
    title: str
    details: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return "PASSED" if self.passed else "NOT YET"

    def __str__(self) -> str:
        mark = "✔" if self.passed else "✘"
        lines = [f"{mark} {self.verdict}: {self.title}"]
        for detail in self.details:
            first, *rest = detail.split("\n")
            lines.append(f"  - {first}")
            lines.extend(f"    {line}" for line in rest)
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#cf222e"
        mark = "✔" if self.passed else "✘"
        items = []
        for detail in self.details:
            text = html.escape(detail)
            if detail.startswith("Hint:"):
                text = f"<i>{text}</i>"
            items.append(f"<li style='white-space:pre-wrap;font-family:monospace'>{text}</li>")
        listing = f"<ul>{''.join(items)}</ul>" if items else ""
        return (
            f"<div class='dualarr-feedback' style='border-left:4px solid {colour};"
            "padding:0.2em 0.8em'>"
            f"<b style='color:{colour}'>{mark} {self.verdict}</b>: {html.escape(self.title)}"
            f"{listing}</div>"
        )

    def _repr_markdown_(self) -> str:
        mark = "✔" if self.passed else "✘"
        head = f"**{mark} {self.verdict}**: {_md_escape(self.title)}"
        if not self.details:
            return head
        body = "\n".join(str(self).split("\n")[1:])
        return f"{head}\n\n```text\n{body}\n```"


def graded(feedback: Feedback) -> None:
    """Show a check's verdict in a graded cell: the feedback itself and, when the check
    fails, its text on standard error, which is what an autograder (nbgrader) reads as
    "no points for this cell" (a failure shown only as a cell's value would score).
    The feedback, hints included, stays in the cell's output for the returned report."""
    import sys

    try:
        from IPython.display import display
    except ImportError:  # outside IPython: the text alone
        print(feedback)
    else:
        display(feedback)  # type: ignore[no-untyped-call]
    if not feedback.passed:
        print(str(feedback), file=sys.stderr)


def _md_escape(text: str) -> str:
    for char in "\\`*_[]<>#|":
        text = text.replace(char, "\\" + char)
    return text


def _ok(title: str, *details: str) -> Feedback:
    return Feedback(True, title, tuple(details))


def _fail(title: str, *details: str) -> Feedback:
    return Feedback(False, title, tuple(details))


def _not_implemented(name: str, what: str) -> Feedback:
    return _fail(
        f"{name} is not implemented yet",
        f"It raised NotImplementedError. Replace the `raise NotImplementedError` by {what},"
        " then run this cell again.",
    )


def _require_callable(value: object, name: str, op: str) -> None:
    if not callable(value):
        raise UnsupportedError(
            f"{name} must be a function, got {type(value).__name__}", op=op, location=""
        )


def _describe_error(err: BaseException) -> str:
    """``Type: message`` for an exception raised by student code (no file locations)."""
    if isinstance(err, DualarrError):
        where = f"{err.op}: " if err.op else ""
        return f"{type(err).__name__}: {where}{err.detail}"
    if isinstance(err, RecursionError):
        return "RecursionError: maximum recursion depth exceeded"
    text = str(err).split("\n")[0]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


# -- formatting numbers and arrays ----------------------------------------------------


def _trace(f: Any, *args: np.ndarray) -> Program | str:
    """``f`` traced on ``args``, or what went wrong (a learner's function may raise)."""
    try:
        return trace(f, *args)
    except Exception as err:
        return f"tracing it raised {_describe_error(err)}"


def _num(value: Any) -> str:
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    return f"{v:.6g}"


def _arr(value: Any, limit: int = 12) -> str:
    a = np.asarray(value)
    if a.ndim == 0:
        return _num(a)
    if a.ndim == 1:
        items = [_num(v) for v in a[:limit]]
        if len(a) > limit:
            items.append("…")
        return "[" + ", ".join(items) + "]"
    return "[" + ", ".join(_arr(row, limit) for row in a[:limit]) + "]"


def _pos(position: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(p) for p in position) + "]"


def _close(a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False))


def _mismatches(
    expected: np.ndarray, got: np.ndarray, rtol: float = 1e-6, atol: float = 1e-9
) -> list[tuple[int, ...]]:
    """Positions where ``got`` differs from ``expected`` (non-finite ``got`` counts)."""
    with np.errstate(all="ignore"):
        bad = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    return [tuple(int(i) for i in p) for p in np.argwhere(bad)]


def _short(term: Term, limit: int = 160) -> str:
    text = " ".join(str(term).split())
    return text if len(text) <= limit else text[:limit] + " …"


_DELTA_TYPES: tuple[type, ...] = dl.Delta.__args__
_DELTA_NAMES = frozenset(t.__name__ for t in _DELTA_TYPES)


def _is_delta(value: object) -> TypeGuard[dl.Delta]:
    return isinstance(value, _DELTA_TYPES)


def _delta_arithmetic_hints(err: BaseException) -> list[str]:
    """Hints for student code that computes with Delta nodes as if they were numbers
    (``2.0 * dx``, ``d1 + d2``): a Delta is a term built with the constructors of
    Fig. 14 (``dl.Scale``, ``dl.Add``), which the hints name without giving the rule."""
    if not isinstance(err, TypeError):
        return []
    text = str(err)
    if not any(f"'{name}'" in text for name in _DELTA_NAMES):
        return []
    if any(f"for {op}" in text for op in ("*", "/", "@", "**")) or "unary -" in text:
        return [
            "Hint: a Delta is a term, not a number: arithmetic such as `2.0 * dx` or `-dx` "
            "is not defined on it. Scaling a Delta by a primal factor is the Delta "
            "constructor dl.Scale(factor, dx) (Fig. 14); the factor is a number or an "
            "array of the Delta's shape."
        ]
    if any(f"for {op}" in text for op in ("+", "-")):
        return [
            "Hint: Deltas are not added with `+`: the Delta of a sum is the constructor "
            "dl.Add(d1, d2) (Fig. 14). A difference is a sum with one Delta scaled by -1."
        ]
    return ["Hint: build Deltas with the constructors of Fig. 14 (dl.Scale, dl.Add, …)."]


def _misbuilt_delta(d: dl.Delta) -> str | None:
    """What is wrong when a Delta node holds something that is not a Delta where a
    Delta belongs (``dl.Scale(dx, factor)``, ``dl.Add(d, 0.0)``): a hint, else ``None``."""
    stack: list[object] = [d]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen or not _is_delta(node):
            continue
        seen.add(id(node))
        if isinstance(node, dl.Scale) and not _is_delta(node.delta):
            if _is_delta(node.factor):
                return (
                    "Hint: dl.Scale takes the primal factor first and the Delta second "
                    "(Scale(factor, delta), Fig. 14); yours has them the other way round."
                )
            return (
                f"Hint: the second argument of dl.Scale must be a Delta, not a "
                f"{type(node.delta).__name__}."
            )
        if isinstance(node, dl.Add):
            wrong = [k for k in (node.left, node.right) if not _is_delta(k)]
            if wrong:
                return (
                    f"Hint: dl.Add adds two Deltas; one of yours is a "
                    f"{type(wrong[0]).__name__}. A primal value enters a Delta only as the "
                    "factor of a dl.Scale (Fig. 14)."
                )
        stack.extend(dl.delta_children(node))
    return None

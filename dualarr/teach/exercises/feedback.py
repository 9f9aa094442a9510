"""The verdict of a check (:class:`Feedback`) and the helpers every checker uses to
name what is wrong.

This is the API the checkers of ``dualarr.teach.exercises`` and
``dualarr.teach.practice`` share: verdicts (:func:`passed`, :func:`not_yet`,
:func:`not_implemented`), the learner's errors (:func:`describe_error`,
:func:`trace_or_error`, :func:`require_callable`), numbers, arrays and terms as a check
shows them (:func:`format_number`, :func:`format_array`, :func:`format_position`,
:func:`abbreviate_term`), comparisons (:func:`all_close`, :func:`mismatched_positions`)
and hints about Deltas (Fig. 14: :func:`is_delta`, :func:`delta_arithmetic_hints`,
:func:`misbuilt_delta_hint`)."""

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

__all__ = [
    "Feedback",
    "abbreviate_term",
    "all_close",
    "delta_arithmetic_hints",
    "describe_error",
    "format_array",
    "format_number",
    "format_position",
    "graded",
    "is_delta",
    "misbuilt_delta_hint",
    "mismatched_positions",
    "not_implemented",
    "not_yet",
    "passed",
    "require_callable",
    "trace_or_error",
]



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


def passed(title: str, *details: str) -> Feedback:
    """A passing verdict (``✔ PASSED``): ``title`` and the detail lines."""
    return Feedback(True, title, tuple(details))


def not_yet(title: str, *details: str) -> Feedback:
    """A failing verdict (``✘ NOT YET``): ``title`` and the detail lines that say what is
    wrong (a line starting with ``Hint:`` is a hint)."""
    return Feedback(False, title, tuple(details))


def not_implemented(name: str, what: str) -> Feedback:
    """The verdict for a learner's ``name`` that still raises ``NotImplementedError``: it
    says to replace the ``raise`` by ``what`` (e.g. "the rule of Fig. 14")."""
    return not_yet(
        f"{name} is not implemented yet",
        f"It raised NotImplementedError. Replace the `raise NotImplementedError` by {what},"
        " then run this cell again.",
    )


def require_callable(value: object, name: str, op: str) -> None:
    """Raise :class:`UnsupportedError` (from ``op``) unless the learner's ``name`` is a
    function: a checker calls this before calling what it was given."""
    if not callable(value):
        raise UnsupportedError(
            f"{name} must be a function, got {type(value).__name__}", op=op, location=""
        )


def describe_error(err: BaseException) -> str:
    """``Type: message`` for an exception raised by student code (no file locations)."""
    if isinstance(err, DualarrError):
        where = f"{err.op}: " if err.op else ""
        return f"{type(err).__name__}: {where}{err.detail}"
    if isinstance(err, RecursionError):
        return "RecursionError: maximum recursion depth exceeded"
    text = str(err).split("\n")[0]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


# -- formatting numbers and arrays ----------------------------------------------------


def trace_or_error(f: Any, *args: np.ndarray) -> Program | str:
    """``f`` traced on ``args``, or what went wrong (a learner's function may raise)."""
    try:
        return trace(f, *args)
    except Exception as err:
        return f"tracing it raised {describe_error(err)}"


def format_number(value: Any) -> str:
    """A number as a check shows it: 6 significant digits, or ``0``, ``nan``, ``inf``,
    ``-inf``."""
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    return f"{v:.6g}"


def format_array(value: Any, limit: int = 12) -> str:
    """A number or an array as a check shows it, ``[1, 2.5, …]``: nested brackets per axis,
    each number by :func:`format_number`, at most ``limit`` entries along each axis (``…``
    marks a cut innermost axis)."""
    a = np.asarray(value)
    if a.ndim == 0:
        return format_number(a)
    if a.ndim == 1:
        items = [format_number(v) for v in a[:limit]]
        if len(a) > limit:
            items.append("…")
        return "[" + ", ".join(items) + "]"
    return "[" + ", ".join(format_array(row, limit) for row in a[:limit]) + "]"


def format_position(position: tuple[int, ...]) -> str:
    """An index into an array as a check shows it: ``(1, 2)`` -> ``[1, 2]``."""
    return "[" + ", ".join(str(p) for p in position) + "]"


def all_close(a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """Whether ``a`` and ``b`` agree elementwise to the tolerance checks use (``nan`` never
    agrees)."""
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False))


def mismatched_positions(
    expected: np.ndarray, got: np.ndarray, rtol: float = 1e-6, atol: float = 1e-9
) -> list[tuple[int, ...]]:
    """Positions where ``got`` differs from ``expected`` (non-finite ``got`` counts)."""
    with np.errstate(all="ignore"):
        bad = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    return [tuple(int(i) for i in p) for p in np.argwhere(bad)]


def abbreviate_term(term: Term, limit: int = 160) -> str:
    """A term printed on one line (runs of whitespace collapsed), cut to ``limit``
    characters with `` …`` when longer: what a check quotes of a learner's program."""
    text = " ".join(str(term).split())
    return text if len(text) <= limit else text[:limit] + " …"


_DELTA_TYPES: tuple[type, ...] = dl.Delta.__args__
_DELTA_NAMES = frozenset(t.__name__ for t in _DELTA_TYPES)


def is_delta(value: object) -> TypeGuard[dl.Delta]:
    """Whether ``value`` is a Delta node (one of the constructors of Fig. 14)."""
    return isinstance(value, _DELTA_TYPES)


def delta_arithmetic_hints(err: BaseException) -> list[str]:
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


def misbuilt_delta_hint(d: dl.Delta) -> str | None:
    """What is wrong when a Delta node holds something that is not a Delta where a
    Delta belongs (``dl.Scale(dx, factor)``, ``dl.Add(d, 0.0)``): a hint, else ``None``."""
    stack: list[object] = [d]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen or not is_delta(node):
            continue
        seen.add(id(node))
        if isinstance(node, dl.Scale) and not is_delta(node.delta):
            if is_delta(node.factor):
                return (
                    "Hint: dl.Scale takes the primal factor first and the Delta second "
                    "(Scale(factor, delta), Fig. 14); yours has them the other way round."
                )
            return (
                f"Hint: the second argument of dl.Scale must be a Delta, not a "
                f"{type(node.delta).__name__}."
            )
        if isinstance(node, dl.Add):
            wrong = [k for k in (node.left, node.right) if not is_delta(k)]
            if wrong:
                return (
                    f"Hint: dl.Add adds two Deltas; one of yours is a "
                    f"{type(wrong[0]).__name__}. A primal value enters a Delta only as the "
                    "factor of a dl.Scale (Fig. 14)."
                )
        stack.extend(dl.delta_children(node))
    return None

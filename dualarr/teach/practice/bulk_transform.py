"""Exercises of chapter 04 (the bulk-operation transform, §5 of the paper, Figs. 9–11):
a row softmax written with ``build1``, why a Python ``if`` cannot be vectorised (§5.2),
the diagonal of a ``scatter`` (the 4th rule of Fig. 11), and the bot checked on random
programs of your own."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ...interp.evaluate import evaluate_many
from ...lang.errors import TracingError
from ...lang.program import trace
from ...lang.terms import Build1, Index, Scatter, Term, postorder
from ...pipeline import vectorise_program
from ...vectorise.bot import NotBotNormal, check_bot_normal
from ..exercises.feedback import (
    Feedback,
    describe_error,
    format_array,
    format_number,
    format_position,
    mismatched_positions,
    not_yet,
    passed,
    require_callable,
    trace_or_error,
)


def _terms(roots: Iterable[Term]) -> list[Term]:
    return list(postorder(list(roots)))


# --------------------------------------------------------------------------------------
# Exercise 1: softmax of each row
# --------------------------------------------------------------------------------------


def _softmax_rows(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True))


def check_softmax_rows(f: Callable[[Any], Any]) -> Feedback:
    """Check ``f(a)``, the softmax of each row of a matrix written with ``build1``,
    against NumPy on two matrices; on success lists the bot's rules and the simplified
    program."""
    require_callable(f, "f", "check_softmax_rows")
    title = "softmax of each row"
    shown: tuple[str, ...] = ()
    for shape in ((3, 4), (2, 5)):
        a = np.linspace(-2.0, 2.0, shape[0] * shape[1]).reshape(shape)
        source = trace_or_error(f, a)
        if isinstance(source, str):
            return not_yet(f"{title}: a of shape {list(shape)}", source)
        try:
            got = np.asarray(source(a))
            vectorised, steps = vectorise_program(source, record=True)
            check_bot_normal(list(vectorised.outputs))
        except NotBotNormal as err:
            return not_yet(f"{title}: the vectorised program is not in normal form", str(err))
        except Exception as err:
            return not_yet(f"{title}: a of shape {list(shape)}",
                           f"running it raised {describe_error(err)}")
        expected = _softmax_rows(a)
        if got.shape != expected.shape or mismatched_positions(expected, got):
            where = mismatched_positions(expected, got) if got.shape == expected.shape else []
            detail = (f"at {format_position(where[0])} "
                      f"expected {format_number(expected[where[0]])}, got "
                      f"{format_number(got[where[0]])}" if where else
                      f"shape expected {list(expected.shape)}, got {list(got.shape)}")
            return not_yet(
                f"{title}: a of shape {list(shape)}", detail,
                "Hint: row i of the result is exp(a[i]) divided by the sum of exp(a[i]).",
            )
        if not any(isinstance(t, Build1) for t in _terms(source.outputs)):
            return not_yet(f"{title}: the values are right, but the program has no build1",
                           "Hint: write the loop over the rows with da.build1.")
        rules = Counter(f"{s.figure} {s.rule}" for s in steps)
        shown = (
            "rules applied: " + ", ".join(f"{r} x{n}" for r, n in sorted(rules.items())),
            f"vectorised and simplified: {vectorised}",
        )
    return passed(f"{title}: right on two matrices, and the bot removes every build1", *shown)


# --------------------------------------------------------------------------------------
# Exercise 2: a Python if in build1
# --------------------------------------------------------------------------------------

PYTHON_IF_CHOICES = {
    "a": "Python's `if` is slower than `da.where`, so dualarr refuses it.",
    "b": "While tracing, `i < n` is a traced value without data, so Python cannot pick a "
    "branch; and a branch chosen per index is control flow inside the loop, which the bot "
    "cannot turn into bulk operations: it needs both branches as arrays and an elementwise "
    "selection between them.",
    "c": "The bot has no rule for conditionals, so every conditional must be removed by hand.",
}
"""The choices for :func:`check_python_if`."""

_WHY_NOT = {
    "a": "Speed is not the reason: tracing cannot run the `if` at all. Look at what the "
    "condition is, while tracing, and at what the bot did to `twice` in the chapter.",
    "c": "The bot does have rules for conditionals: look at the rules it applied to "
    "`leaky` and `twice` in the chapter (Fig. 9).",
}


def check_python_if(f: Callable[[Any], Any], answer: str) -> Feedback:
    """Check that tracing ``f`` (``twice`` with a Python ``if``) fails, and ``answer``,
    one of the keys of :data:`PYTHON_IF_CHOICES`: why it cannot be vectorised (§5.2)."""
    require_callable(f, "f", "check_python_if")
    title = "a Python if inside build1"
    try:
        trace(f, np.arange(1.0, 5.0))
    except TracingError as err:
        message = str(err).split("\n")[0]
    except Exception as err:
        return not_yet(f"{title}: tracing raised {describe_error(err)}, not a TracingError",
                       "Hint: use Python's `if` on the loop variable, inside the build1 body.")
    else:
        return not_yet(f"{title}: your function traces without error",
                       "Hint: use Python's `if` on the loop variable, inside the build1 body.")
    if answer not in PYTHON_IF_CHOICES:
        return not_yet(f"{title}: answer should be one of "
                       + ", ".join(repr(k) for k in PYTHON_IF_CHOICES), f"the error: {message}")
    if answer in _WHY_NOT:
        return not_yet(f"{title}: not {answer!r}", f"the error: {message}",
                       "Hint: " + _WHY_NOT[answer])
    return passed(f"{title}: {answer!r}", f"the error: {message}")


# --------------------------------------------------------------------------------------
# Exercise 3: the diagonal of a scatter
# --------------------------------------------------------------------------------------


def _scatter_indexed_in(term: Term) -> tuple[int, Scatter] | None:
    """``(k, b)`` when ``term`` is ``build1 k (λi. b[ix])`` with ``b`` a scatter."""
    match term:
        case Build1(size=k, body=Index(array=Scatter() as b)):
            return k, b
        case _:
            return None


def check_diagonal_of_scatter(f: Callable[..., Any], *args: np.ndarray) -> Feedback:
    """Check ``f(*args)``: a program in which the bot takes the diagonal of a ``scatter``
    (``build1-index-diagonal``, the 4th rule of Fig. 11) and still computes the same
    value; on success compares the memory of the loop and of the vectorised program."""
    require_callable(f, "f", "check_diagonal_of_scatter")
    title = "the diagonal of a scatter (Fig. 11)"
    source = trace_or_error(f, *args)
    if isinstance(source, str):
        return not_yet(title, source)
    try:
        vectorised, steps = vectorise_program(source, record=True)
        expected = np.asarray(source(*args))
        got = np.asarray(vectorised(*args))
    except Exception as err:
        return not_yet(title, f"running it raised {describe_error(err)}")
    if expected.shape != got.shape or mismatched_positions(expected, got):
        return not_yet(f"{title}: the vectorised program computes something else",
                       f"source: {format_array(expected)}", f"vectorised: {format_array(got)}")
    hits = [(s, found) for s in steps if s.rule == "build1-index-diagonal"
            and (found := _scatter_indexed_in(s.before)) is not None]
    if not hits:
        applied = ", ".join(dict.fromkeys(s.rule for s in steps)) or "none"
        return not_yet(
            f"{title}: no build1-index-diagonal on a scatter",
            f"rules applied: {applied}",
            "Hint: the rule applies to build1 k (\\i. b[i]) where b is a scatter that itself "
            "mentions the loop variable i; if b does not mention i, a plain gather (Fig. 11, "
            "build1-index) is enough.",
        )
    step, (k, inner) = hits[0]
    big = [t for t in _terms(vectorised.outputs) if isinstance(t, Scatter)]
    biggest = max(big, key=lambda t: int(np.prod(t.shape))) if big else None
    memory = (
        f"the vectorised program builds a scatter of shape {list(biggest.shape)} "
        f"({int(np.prod(biggest.shape))} elements) at once"
        if biggest is not None else "the vectorised program has no scatter left"
    )
    return passed(
        f"{title}: step {step.number} takes the diagonal of a scatter",
        f"the loop builds {k} scatters of shape {list(inner.shape)}, one per index "
        f"({int(np.prod(inner.shape))} elements each, one at a time); " + memory
        + " (§5.1)",
    )


# --------------------------------------------------------------------------------------
# Exercise 4: the bot on programs of your own
# --------------------------------------------------------------------------------------


def check_bot_preserves(
    program_for: Callable[[int], Callable[..., Any]], seeds: Iterable[int], *args: np.ndarray
) -> Feedback:
    """Check the bot (§5.1) on ``program_for(seed)`` for each seed, traced on ``args``:
    every intermediate program, the bot's result and the simplified result compute the
    value of the source, and the result is in the normal form of Theorem 5.1."""
    require_callable(program_for, "program_for", "check_bot_preserves")
    title = "the bot preserves meaning and reaches normal form"
    rules: Counter[str] = Counter()
    checked = 0
    for seed in seeds:
        source = trace_or_error(program_for(seed), *args)
        if isinstance(source, str):
            return not_yet(f"{title}: seed {seed}", source)
        env = source.bind(*args)
        expected = np.asarray(source(*args))
        try:
            vectorised, steps = vectorise_program(source, record=True)
            check_bot_normal(list(steps[-1].whole) if steps else list(source.outputs))
            values = [evaluate_many(list(s.whole), env)[0] for s in steps]
            values.append(np.asarray(vectorised(*args)))
        except Exception as err:
            return not_yet(f"{title}: seed {seed}", f"the bot raised {describe_error(err)}")
        for number, value in enumerate(values, start=1):
            if not np.allclose(value, expected, rtol=1e-10, atol=1e-10):
                stage = f"after step {number}" if number <= len(steps) else "after simplifying"
                return not_yet(f"{title}: seed {seed}, the value changes {stage}",
                               f"source: {format_array(expected)}",
                               f"then:   {format_array(value)}")
        rules.update(f"{s.figure} {s.rule}" for s in steps)
        checked += 1
    return passed(
        f"{title}: {checked} programs, {sum(rules.values())} rule applications checked",
        "rules: " + ", ".join(f"{r} x{n}" for r, n in sorted(rules.items())),
    )

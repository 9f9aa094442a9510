"""Exercises of chapter 02 (the core array language, §3 of the paper, Fig. 7): a
self-convolution with ``build``, a weighted histogram with ``scatter``, a transposition
written as a ``gather``, ``twice`` with ``concatenate``, the line an error names, NumPy's
own functions on traced values, and a norm written so that it traces."""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ...lang.errors import DualarrError
from ...lang.program import Program, trace
from ...lang.terms import Build1, Gather, Term, Transpose, postorder
from ...pipeline import vectorise_program
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


def _run(program: Program, *args: np.ndarray) -> np.ndarray | str:
    try:
        return np.asarray(program(*args))
    except Exception as err:
        return f"running it raised {describe_error(err)}"


def _terms(program: Program) -> list[Term]:
    return list(postorder(list(program.outputs)))


def _compare(
    title: str, what: str, expected: np.ndarray, got: np.ndarray, hint: str
) -> Feedback | None:
    """A failure naming the first wrong element, or ``None`` when ``got`` is right."""
    if got.shape != expected.shape:
        return not_yet(
            f"{title}: {what}",
            f"shape expected {list(expected.shape)}, got {list(got.shape)}",
            hint,
        )
    wrong = mismatched_positions(expected, got)
    if not wrong:
        return None
    first = wrong[0]
    return not_yet(
        f"{title}: {what}",
        f"{len(wrong)} of {expected.size} elements wrong; at {format_position(first)} expected "
        f"{format_number(expected[first])}, got {format_number(got[first])}",
        f"expected: {format_array(expected)}\ngot:      {format_array(got)}",
        hint,
    )


# --------------------------------------------------------------------------------------
# Exercise 1: the self-convolution
# --------------------------------------------------------------------------------------


def check_self_convolution(f: Callable[[Any], Any]) -> Feedback:
    """Check ``f(x)``, written with ``da.build``/``da.build1``, against
    ``np.convolve(x, x)`` on vectors of several lengths."""
    require_callable(f, "f", "check_self_convolution")
    title = "the self-convolution np.convolve(x, x)"
    hint = (
        "Hint: element k of np.convolve(x, x) adds up the products of two elements of x "
        "whose indices add up to k. Let an inner loop run over the first index and sum "
        "it; reads out of range give 0, so no bounds test is needed."
    )
    for n in (3, 5, 6):
        x = np.linspace(0.5, 2.0, n) ** 2
        program = trace_or_error(f, x)
        if isinstance(program, str):
            return not_yet(f"{title}: x of length {n}", program)
        got = _run(program, x)
        if isinstance(got, str):
            return not_yet(f"{title}: x of length {n}", got)
        failure = _compare(title, f"x = {format_array(x)}", np.convolve(x, x), got, hint)
        if failure:
            return failure
        if not any(isinstance(t, Build1) for t in _terms(program)):
            return not_yet(
                f"{title}: the values are right, but the program has no build1",
                "Hint: the exercise is to write it in the core language: use da.build or "
                "da.build1, as fig18 does.",
            )
    return passed(f"{title}: right for lengths 3, 5 and 6")


# --------------------------------------------------------------------------------------
# Exercise 2: the weighted histogram
# --------------------------------------------------------------------------------------


def check_weighted_histogram(f: Callable[[Any], Any]) -> Feedback:
    """Check ``f(d)``, 10 bins over [0, 1) weighted by the data values, against
    ``np.histogram(d, bins=10, range=(0, 1), weights=d)``, also on data out of range."""
    require_callable(f, "f", "check_weighted_histogram")
    title = "the weighted histogram"
    hint = (
        "Hint: the index function says which bin a point goes to; the array being "
        "scattered says what the point adds to that bin. In a weighted histogram each "
        "point adds its own weight, here its value."
    )
    datasets = {
        "200 uniform points": np.random.default_rng(3).random(200),
        "300 normal points, some out of range": np.random.default_rng(4).normal(0.5, 0.4, 300),
    }
    for name, d in datasets.items():
        program = trace_or_error(f, d)
        if isinstance(program, str):
            return not_yet(f"{title}: {name}", program)
        got = _run(program, d)
        if isinstance(got, str):
            return not_yet(f"{title}: {name}", got)
        expected = np.histogram(d, bins=10, range=(0.0, 1.0), weights=d)[0]
        failure = _compare(title, name, expected, got, hint)
        if failure:
            return failure
    return passed(f"{title}: agrees with np.histogram(..., weights=d) on {len(datasets)} data sets")


# --------------------------------------------------------------------------------------
# Exercise 3: tr as a gather
# --------------------------------------------------------------------------------------


def check_transpose_gather(f: Callable[[Any], Any]) -> Feedback:
    """Check ``f(t)``, a ``da.gather`` with an index function over three variables,
    against ``np.transpose(t, (2, 0, 1))`` on arrays of two shapes."""
    require_callable(f, "f", "check_transpose_gather")
    title = "np.transpose(t, (2, 0, 1)) as a gather"
    hint = (
        "Hint: result dimension q is dimension p[q] of t (p = (2, 0, 1)). Work out one "
        "element by hand: which element of t is np.transpose(t, (2, 0, 1))[1, 0, 2]? The "
        "index function maps the result's position to that position of t."
    )
    for shape in ((2, 3, 4), (3, 1, 2)):
        t = np.arange(float(np.prod(shape))).reshape(shape)
        program = trace_or_error(f, t)
        if isinstance(program, str):
            return not_yet(f"{title}: t of shape {list(shape)}", program)
        terms = _terms(program)
        if not any(isinstance(term, Gather) for term in terms) or any(
            isinstance(term, Transpose) for term in terms
        ):
            return not_yet(
                f"{title}: the program should be one gather, without tr",
                f"your program: {program}",
                "Hint: call da.gather(shape, t, lambda i, j, k: (...)) with the result's "
                "shape and an index function returning a position of t.",
            )
        got = _run(program, t)
        if isinstance(got, str):
            return not_yet(f"{title}: t of shape {list(shape)}", got)
        failure = _compare(
            title, f"t of shape {list(shape)}", np.transpose(t, (2, 0, 1)), got, hint
        )
        if failure:
            return failure
    return passed(f"{title}: right on shapes [2, 3, 4] and [3, 1, 2]")


# --------------------------------------------------------------------------------------
# Exercise 4: twice with concatenate
# --------------------------------------------------------------------------------------


def _twice_where(x: Any) -> Any:
    from ...lang.functions import build1, where

    n = x.shape[0]
    return build1(2 * n, lambda i: where(i < n, x[i], x[i - n]))


def check_concatenate_twice(f: Callable[[Any], Any]) -> Feedback:
    """Check ``f(x)``, ``x`` twice in a row written with ``da.concatenate``, on vectors of
    two lengths; on success shows its vectorised program beside the one of ``twice``
    written with a conditional in ``build1`` (§5.2)."""
    require_callable(f, "f", "check_concatenate_twice")
    title = "twice with da.concatenate"
    hint = (
        "Hint: da.concatenate takes a list of the arrays to put one after the other; "
        "the result of twice is x followed by x itself."
    )
    vectorised = ""
    for n in (4, 10):
        x = np.linspace(-1.0, 1.0, n) + 2.0
        program = trace_or_error(f, x)
        if isinstance(program, str):
            return not_yet(f"{title}: x of length {n}", program)
        got = _run(program, x)
        if isinstance(got, str):
            return not_yet(f"{title}: x of length {n}", got)
        failure = _compare(title, f"x = {format_array(x)}", np.concatenate([x, x]), got, hint)
        if failure:
            return failure
        if n == 10:
            vectorised = str(vectorise_program(program)[0])
    x10 = np.arange(10.0)
    with_where = str(vectorise_program(trace(_twice_where, x10))[0])
    return passed(
        f"{title}: right for lengths 4 and 10; the vectorised programs for length 10:",
        f"with da.concatenate:  {vectorised}",
        f"with where in build1: {with_where}",
    )


# --------------------------------------------------------------------------------------
# Exercise 5: the line an error names
# --------------------------------------------------------------------------------------


def check_error_line(f: Callable[[Any], Any], answer: str) -> Feedback:
    """Check ``answer``, the source line (as text) that the error raised by tracing
    ``f`` on a vector names."""
    require_callable(f, "f", "check_error_line")
    title = "the line the error names"
    try:
        trace(f, np.arange(1.0, 6.0))
    except DualarrError as err:
        location = err.location or ""
        message = str(err)
    else:
        return not_yet(f"{title}: tracing your function raised no error",
                       "Hint: pass the function whose tracing fails (sign_flip).")
    where = re.match(r"(?P<file>.*?):(?P<line>\d+)(?::\s*(?P<text>.*))?$", location)
    named = ""
    if where:
        named = (where["text"] or linecache.getline(where["file"], int(where["line"]))).strip()
    if not named:
        return not_yet(f"{title}: the error names {location!r}, a line that cannot be read")
    if not isinstance(answer, str):
        return not_yet(f"{title}: answer should be a str, the text of the line, got "
                       f"{type(answer).__name__}")
    if answer.strip() == named:
        return passed(f"{title}: {named!r}", f"the whole message:\n{message}")
    return not_yet(
        f"{title}: {answer.strip()!r} is not the line the error names",
        "Hint: print(err) shows the whole message; its last line, after `at`, names where "
        "in your code tracing stopped: a file, a line number and that line.",
    )


# --------------------------------------------------------------------------------------
# Exercise 6: NumPy's own functions on traced values
# --------------------------------------------------------------------------------------


def check_same_program(
    yours: Callable[..., Any], reference: Callable[..., Any], *args: np.ndarray
) -> Feedback:
    """Check that ``yours`` traces, on ``args``, to the same program as ``reference``
    (the same ``numpy_source()``), e.g. NumPy's own function against its
    ``dualarr.numpy`` twin."""
    require_callable(yours, "yours", "check_same_program")
    title = "the same program"
    program, expected = trace_or_error(yours, *args), trace(reference, *args)
    if isinstance(program, str):
        return not_yet(f"{title}: your function", program)
    if program.numpy_source() == expected.numpy_source():
        return passed(f"{title}: numpy_source() is identical",
                      "NumPy's own function, called on a traced value, lands in dualarr.numpy")
    return not_yet(
        f"{title}: the programs differ",
        f"yours:\n{program.numpy_source()}",
        f"reference:\n{expected.numpy_source()}",
    )


def check_norm(f: Callable[[Any], Any]) -> Feedback:
    """Check ``f(x)``, the Euclidean norm of a vector written so that dualarr traces it,
    against ``np.linalg.norm`` and its gradient against ``x / |x|``."""
    require_callable(f, "f", "check_norm")
    title = "the norm of a vector, traced"
    from ...api import grad

    for x in (np.array([3.0, 4.0]), np.linspace(-1.0, 2.0, 7)):
        program = trace_or_error(f, x)
        if isinstance(program, str):
            return not_yet(
                f"{title}: x = {format_array(x)}",
                program,
                "Hint: read the end of the message: it names what to use instead of "
                "np.linalg.multi_dot on traced values.",
            )
        got = _run(program, x)
        if isinstance(got, str):
            return not_yet(f"{title}: x = {format_array(x)}", got)
        failure = _compare(
            title, f"x = {format_array(x)}", np.asarray(np.linalg.norm(x)), got,
            "Hint: the norm is the square root of the sum of the squares.",
        )
        if failure:
            return failure
        gradient = np.asarray(grad(f)(x))
        failure = _compare(title, f"the gradient at x = {format_array(x)}", x / np.linalg.norm(x),
                           gradient, "Hint: the value is right, check the operations used.")
        if failure:
            return failure
    return passed(f"{title}: value and gradient right on two vectors")

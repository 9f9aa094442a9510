"""Exercises of chapter 09 (performance, §1 and §8 of the paper): W4's gradient written
with NumPy's ``@``, W5 with explicit sharing (``da.let``, Fig. 7), W6's gradient as a
scatter-add by hand, and what differs between the notebook's table and the benchmark
script's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ...api import grad
from ...lang import functions as fn
from ...lang.tensor import Tensor
from ...pipeline import pipeline
from ..exercises.feedback import (
    Feedback,
    all_close,
    describe_error,
    format_array,
    format_position,
    mismatched_positions,
    not_yet,
    passed,
    require_callable,
)

# --------------------------------------------------------------------------------------
# Exercise 1: W4's gradient with NumPy's @
# --------------------------------------------------------------------------------------


def w4(m: int, n: int, p: int) -> Callable[[Tensor, Tensor], Tensor]:
    """W4 of the benchmarks: ``sum`` of a matrix product written with ``build``."""

    def f(a: Tensor, b: Tensor) -> Tensor:
        product = fn.build(
            (m, p), lambda i, j: fn.sum(fn.build1(n, lambda k: a[i, k] * b[k, j]))
        )
        return fn.sum(product)

    return f


def check_w4_gradient(w4_gradient: Callable[[Any, Any], tuple[Any, Any]]) -> Feedback:
    """Check ``w4_gradient(a, b)``: the gradient of ``sum(a @ b)`` with respect to ``a``
    and ``b``, against dualarr's gradient of W4 (written with ``build``)."""
    require_callable(w4_gradient, "w4_gradient", "check_w4_gradient")
    title = "W4's gradient with NumPy's @"
    rng = np.random.default_rng(4)
    hint = ("Hint: element a[i, k] meets b[k, j] once for every column j of the result, "
            "each time with the cotangent 1. Write that sum over j as a product with a "
            "matrix of ones, and do the same for b.")
    for m, n, p in ((2, 3, 4), (5, 1, 3)):
        a, b = rng.normal(size=(m, n)), rng.normal(size=(n, p))
        want = grad(w4(m, n, p), argnums=(0, 1))(a, b)
        where = f"input: a : [{m},{n}], b : [{n},{p}]"
        try:
            got = tuple(np.asarray(g, dtype=float) for g in w4_gradient(a, b))
        except Exception as err:
            return not_yet(title, where, f"it raised {describe_error(err)}", hint)
        if len(got) != 2:
            return not_yet(title, where, "expected: a pair (gradient of a, gradient of b)",
                           f"obtained: {len(got)} arrays", hint)
        for name, g, w in zip("ab", got, want, strict=True):
            if g.shape != np.shape(w) or not all_close(g, w):
                return not_yet(title, where, f"expected: d/d{name} = {format_array(w)}",
                               f"obtained: {format_array(g)}", hint)
    return passed(title, "equals dualarr's gradient of W4: the bot turned the builds into the "
                  "same products, so the remaining difference is the cost of a call")


# --------------------------------------------------------------------------------------
# Exercise 2: W5 with explicit sharing
# --------------------------------------------------------------------------------------


def w5(x: Tensor) -> Tensor:
    """W5 of the benchmarks: ``sum(sin(x) * exp(-x*x) + log1p(x*x))``."""
    return fn.sum(fn.sin(x) * fn.exp(-x * x) + fn.log1p(x * x))


def check_w5_with_lets(w5_with_lets: Callable[[Tensor], Tensor]) -> Feedback:
    """Check ``w5_with_lets(x)``: W5 with its intermediates bound by ``da.let`` (a
    ``let`` in the traced source), with the same value and gradient as W5."""
    require_callable(w5_with_lets, "w5_with_lets", "check_w5_with_lets")
    title = "W5 with one da.let per intermediate"
    x = np.linspace(-1.0, 2.0, 7)
    where = "input: x = linspace(-1, 2, 7)"
    try:
        p = pipeline(w5_with_lets, x)
        value, gradient = p.vectorised(x), grad(w5_with_lets)(x)
    except Exception as err:
        return not_yet(title, where, f"it raised {describe_error(err)}",
                       "Hint: da.let(value, lambda v: body) binds value to v in body.")
    reference = pipeline(w5, x)
    want_value, want_gradient = reference.vectorised(x), grad(w5)(x)
    if not all_close(value, want_value):
        return not_yet(title, where, f"expected: the value {format_array(want_value)}",
                       f"obtained: {format_array(value)}", "Hint: the lets must not change what is "
                       "computed: bind x * x once and use it in both places.")
    if not all_close(gradient, want_gradient):
        return not_yet(title, where, f"expected: the gradient {format_array(want_gradient)}",
                       f"obtained: {format_array(gradient)}")
    if "let " not in str(p.source):
        return not_yet(title, where, "expected: a let in the traced source (print(p.source))",
                       "obtained: none", "Hint: bind an intermediate such as x * x with "
                       "da.let(x * x, lambda xx: …) and write the rest of W5 inside the "
                       "lambda, using xx.")
    same = p.python.split("\n", 1)[1] == reference.python.split("\n", 1)[1]
    return passed(title, "same value and gradient as W5; the generated programs are "
                  + ("identical: the simplifier had already found the sharing" if same else
                     "different: compare print(p.python) with W5's to see what the let "
                     "changed"))


# --------------------------------------------------------------------------------------
# Exercise 3: W6's gradient with respect to x, a scatter-add
# --------------------------------------------------------------------------------------


def check_w6_gradient(w6_gradient_x: Callable[[Any, Any, Any], Any]) -> Feedback:
    """Check ``w6_gradient_x(x, idx, w)``: the gradient of ``sum(x[idx] * w)`` with
    respect to ``x`` (the transposed gather: a scatter-add), repeated indices and
    elements never read included."""
    require_callable(w6_gradient_x, "w6_gradient_x", "check_w6_gradient")
    title = "W6's gradient with respect to x"
    cases = (
        (np.arange(4.0), np.array([0, 2, 3]), np.array([1.0, 2.0, 3.0])),
        (np.arange(5.0), np.array([1, 1, 4, 1]), np.array([1.0, 10.0, 100.0, 1000.0])),
    )
    for x, idx, w in cases:
        where = f"input: x = {format_array(x)}, idx = {idx.tolist()}, w = {format_array(w)}"
        want = np.bincount(idx, weights=w, minlength=len(x))
        try:
            got = np.asarray(w6_gradient_x(x.copy(), idx.copy(), w.copy()), dtype=float)
        except Exception as err:
            return not_yet(title, where, f"it raised {describe_error(err)}",
                           "Hint: the gradient has the shape of x.")
        if got.shape != want.shape:
            return not_yet(title, where, f"expected: shape [{len(x)}] (the shape of x)",
                           f"obtained: shape {list(got.shape)}",
                           "Hint: the gradient has one element per element of x, not per "
                           "read: that is why it is a scatter, not a gather.")
        bad = mismatched_positions(want, got)
        if bad:
            assigned = np.zeros(len(x))
            assigned[idx] = w
            hint = (
                "Hint: x[1] is read three times, and each read contributes its weight: "
                "a plain assignment keeps only the last one. That is also why the "
                "transposed gather cannot be a gather: an element of x may receive any "
                "number of contributions."
                if all_close(got, assigned) else
                "Hint: which terms x[idx[q]] * w[q] of the sum read x[k]? Each contributes to "
                "d/dx[k]."
            )
            first = bad[0]
            return not_yet(title, where,
                           f"element {format_position(first)}: "
                           f"expected {format_array(want[first])}, "
                           f"obtained {format_array(got[first])}", hint)
    return passed(title, "a scatter-add: what the generated program does with "
                  "helpers.scatter (np.bincount on NumPy)")


# --------------------------------------------------------------------------------------
# Exercise 4: the notebook's table against the script's
# --------------------------------------------------------------------------------------

TABLE_DIFFERENCES = {
    "processes": "the script runs each library in its own process",
    "sizes": "the script's --quick sizes are not the notebook's",
    "samples": "the script takes another number of timed samples per case",
    "workloads": "the script measures other workloads than W1–W6",
    "correctness": "the script does not check the gradients against NumPy",
}
"""The choices for :func:`check_table_differences`."""

_TRUE_DIFFERENCES = frozenset({"processes", "sizes", "samples"})
# The script (benchmarks/bench_gradients.py): one worker process per library, QUICK
# sizes (W4 (4, 8, 16), …), 3 samples with --quick against the notebook's 5, the same
# six workloads, and check() of every gradient against NumPy's.


def check_table_differences(answer: Iterable[str] | None) -> Feedback:
    """Check the set of :data:`TABLE_DIFFERENCES` that really differ between
    ``python benchmarks/bench_gradients.py --quick`` and the notebook's table."""
    title = "what differs between the script's table and the notebook's"
    choices = ", ".join(repr(k) for k in TABLE_DIFFERENCES)
    chosen = set(answer) if answer is not None and not isinstance(answer, str) else None
    if chosen is None or not chosen <= set(TABLE_DIFFERENCES):
        return not_yet(title, f"obtained: {answer!r}",
                       f"expected: a set of some of {choices}",
                       "Hint: read the script's --help and its QUICK cases, and the cell of "
                       "the notebook that times the libraries.")
    wrong = sorted(chosen - _TRUE_DIFFERENCES)
    missing = len(_TRUE_DIFFERENCES - chosen)
    if wrong or missing:
        details = [f"obtained: {sorted(chosen)}"]
        if wrong:
            details.append(f"not a difference: {', '.join(repr(w) for w in wrong)}")
        if missing:
            details.append(f"expected: {missing} more difference(s)")
        return not_yet(title, *details,
                       "Hint: `python benchmarks/bench_gradients.py --help` lists the "
                       "script's defaults with --quick; compare them with the arguments of "
                       "median_time in the notebook's timing cell, and its CASES with QUICK.")
    return passed(title, "; ".join(TABLE_DIFFERENCES[k] for k in sorted(_TRUE_DIFFERENCES)))

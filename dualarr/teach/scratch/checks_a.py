"""Checks of stage (a): total indexing, the evaluator, tracing and the binding forms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...interp.evaluate import index_array
from .grading import Mismatch, expect_close, task
from .notebooks import stage
from .oracle import as_python, cases
from .terms import Term, show

NO_BINDERS = frozenset({"op", "cond", "index", "sumOuter", "replicate", "tr", "fromList", "iota"})
"""Constructs that trace without a binder (build1, gather, scatter, let bind names)."""

READ_HINT = (
    "§5.2: a read outside the array, in any dimension and for negative indices too, gives "
    "zeros of the subarray's shape and the array's dtype"
)
TRACE_HINT = (
    "Fig. 7: a traced function's operators must build the Op, Index and constants the "
    "program means; a Python int is an int constant, a float a float one"
)
BINDERS_HINT = (
    "§3.3: a binder calls the Python function on tracers of fresh names and binds exactly "
    "those names; gather and scatter take one name per dimension"
)


@task("a.read", names=("read",), title="total indexing (§5.2)", hint=READ_HINT)
def check_read(ns: Mapping[str, Any]) -> str:
    read = ns["read"]
    rng = np.random.default_rng(7)
    outside = 0
    for k in range(400):
        shape = tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(1, 4)))
        array: np.ndarray = (
            rng.integers(-5, 5, size=shape) if k % 3 == 0 else rng.normal(size=shape)
        )
        ix = tuple(int(j) for j in rng.integers(-2, 4, size=rng.integers(0, array.ndim + 1)))
        outside += not all(0 <= j < n for j, n in zip(ix, array.shape, strict=False))
        want = index_array(array, [np.asarray(j) for j in ix])
        got = read(array, ix)
        shown = f"read(array of shape {list(array.shape)}, {ix})"
        expect_close(want, got, what=shown, hint=READ_HINT, program=shown)
        if np.asarray(got).dtype != want.dtype:
            raise Mismatch(f"{shown}: dtype {np.asarray(got).dtype}, expected {want.dtype}",
                           hint=READ_HINT, program=shown)
    return f"400 random reads ({outside} out of range) agree with dualarr's index"


EVALUATE_HINT = (
    "Fig. 7 / §3: check the construct the program uses; §5.2: index, gather and scatter "
    "read through read(), and a scatter drops the writes outside its shape"
)


@task("a.evaluate", names=("evaluate",), title="the evaluator of Fig. 7 (total, §5.2)",
      hint=EVALUATE_HINT)
def check_evaluate(ns: Mapping[str, Any]) -> str:
    evaluate = ns["evaluate"]
    programs = cases(11, 60)
    for case in sorted(programs, key=lambda c: len(show(c.term))):
        expect_close(case.value(), evaluate(case.term, dict(case.env)),
                     what="the value differs from dualarr's", hint=_construct_hint(case.term),
                     program=case.text, inputs=case.env)
    return f"{len(programs)} random programs of every Fig. 7 construct agree with dualarr"


def _construct_hint(term: Term) -> str:
    from .terms import constructs_in

    kinds = ", ".join(sorted(constructs_in(term) - {"Const", "Var"}))
    return f"{EVALUATE_HINT} (this program uses {kinds})"


def _traced_agrees(ns: Mapping[str, Any], constructs: frozenset[str], seed: int,
                   count: int, hint: str) -> int:
    reference = stage("a", "reference")
    api = {name: ns[name] for name in (
        "const", "build1", "gather", "scatter", "sum_outer", "replicate", "transpose",
        "from_list", "iota", "cond", "let", "sin", "cos", "tanh", "maximum", "minimum",
    ) if name in ns}  # fmt: skip
    programs = cases(seed, count, constructs=constructs)
    for case in sorted(programs, key=lambda c: len(show(c.term))):
        f = as_python(case.term, api, case.inputs)
        traced = ns["trace"](f, *case.inputs)
        value = reference.evaluate(traced, dict(case.env))
        expect_close(case.value(), value,
                     what="the traced term's value differs from dualarr's value of the "
                          "program (your term: " + show(traced) + ")",
                     hint=hint, program=case.text, inputs=case.env)
    return len(programs)


@task("a.trace", names=("lift", "op", "Tracer", "trace"),
      title="tracing by operator overloading",
      hint=TRACE_HINT)
def check_trace(ns: Mapping[str, Any]) -> str:
    n = _traced_agrees(ns, NO_BINDERS, 12, 40, hint=TRACE_HINT)
    return (f"{n} random programs without binders, written in Python and traced by your "
            "code, evaluate to dualarr's values")



@task("a.binders", names=("build1", "_index_function", "let"),
      title="build1, gather, scatter and let as functions",
      hint=BINDERS_HINT)
def check_binders(ns: Mapping[str, Any]) -> str:
    n = _traced_agrees(ns, frozenset({"build1", "gather", "scatter", "let", *NO_BINDERS}),
                       13, 40, hint=BINDERS_HINT)
    return (f"{n} random programs with build1, gather, scatter and let, traced by your "
            "code, evaluate to dualarr's values")


"""Exercises of chapter 07 (vmap as ``build1`` plus the bulk-operation transform, §5 and
§9 of the paper): a batched matrix product, three nested vmaps, the Fig. 11 rule that
makes a gather, ``in_axes``, and how the work of the looped and the bulk program grows
with ``n``."""

from __future__ import annotations

import gc
import math
import sys
from collections.abc import Callable, Mapping
from functools import partial
from types import FrameType
from typing import Any

import numpy as np

from ...api import vmap
from ...lang import functions as fn
from ...lang.tensor import Tensor
from ...pipeline import pipeline
from ..exercises.feedback import (
    Feedback,
    all_close,
    describe_error,
    format_array,
    not_yet,
    passed,
    require_callable,
)


def _shape(value: Any) -> str:
    return "[" + ",".join(str(n) for n in np.shape(value)) + "]"


def _compare(
    title: str, where: str, got: Any, want: np.ndarray, hint: str
) -> Feedback | None:
    """A failure when ``got`` is not ``want`` (shape first, then values), else ``None``."""
    if np.shape(got) != want.shape:
        return not_yet(title, where, f"expected: shape {_shape(want)}",
                       f"obtained: shape {_shape(got)}", hint)
    if not all_close(got, want):
        return not_yet(title, where, f"expected: {format_array(want)}",
                       f"obtained: {format_array(got)}", hint)
    return None


# --------------------------------------------------------------------------------------
# Exercise 1: a batched matrix product
# --------------------------------------------------------------------------------------


def check_batched_matmul(batched_matmul: Callable[[Any, Any], Any]) -> Feedback:
    """Check ``batched_matmul(A, B)``: ``A[b] @ B[b]`` for every ``b``, written with
    ``da.vmap`` (the traced source has a ``build1``) and vectorised by the bot (none
    left)."""
    require_callable(batched_matmul, "batched_matmul", "check_batched_matmul")
    title = "a batched matrix product with vmap"
    rng = np.random.default_rng(1)
    hint = ("Hint: map da.matmul over the leading (batch) axis of both arguments: one "
            "vmap, zipping A and B.")
    for shapes in (((5, 2, 3), (5, 3, 4)), ((3, 4, 2), (3, 2, 1))):
        a, b = (rng.normal(size=s) for s in shapes)
        where = f"input: A : {_shape(a)}, B : {_shape(b)}"
        try:
            p = pipeline(batched_matmul, a, b)
            got = np.asarray(p.vectorised(a, b))
        except Exception as err:
            return not_yet(title, where, f"it raised {describe_error(err)}", hint)
        failure = _compare(title, where, got, np.matmul(a, b), hint)
        if failure:
            return failure
        if "build1" not in str(p.source):
            return not_yet(title, where, "expected: a vmap (a build1 in the traced source)",
                           "obtained: no build1", "Hint: use da.vmap rather than a batched "
                           "operation, so that the bot has a loop to remove.")
    rules = ", ".join(dict.fromkeys(step.rule for step in p.bot_steps))
    return passed(title, f"right on 2 batches; the bot's rules: {rules}",
                  f"after simplification: {p.vectorised}")


# --------------------------------------------------------------------------------------
# Exercise 2: three nested vmaps
# --------------------------------------------------------------------------------------


def nested_sum(depth: int) -> Callable[..., Tensor]:
    """``depth`` nested vmaps, one per vector: ``r[i1,…,id] = v1[i1] + … + vd[id]``."""

    def f(*vectors: Tensor) -> Tensor:
        def level(k: int, acc: Tensor | None) -> Tensor:
            if k == depth:
                assert acc is not None
                return acc
            mapped: Tensor = vmap(lambda a: level(k + 1, a if acc is None else acc + a))(
                vectors[k]
            )
            return mapped

        return level(0, None)

    f.__name__ = f"nested_sum{depth}"
    return f


def bot_steps_by_depth(depths: tuple[int, ...] = (1, 2, 3, 4)) -> dict[int, int]:
    """The number of bot steps for :func:`nested_sum` of each depth (vectors of 3)."""
    return {
        d: len(pipeline(nested_sum(d), *(np.arange(3.0) + k for k in range(d))).bot_steps)
        for d in depths
    }


def check_three_way_sum(three_way_sum: Callable[[Any, Any, Any], Any]) -> Feedback:
    """Check ``three_way_sum(a, b, c)``: the table ``a[i] + b[j] + c[k]`` with three
    nested vmaps (three ``build1``s in the traced source)."""
    require_callable(three_way_sum, "three_way_sum", "check_three_way_sum")
    title = "three nested vmaps"
    hint = ("Hint: one vmap zips its arguments (one shared axis); nesting a vmap inside "
            "another gives each argument its own axis. Nest three, one per vector.")
    for lengths in ((3, 3, 3), (2, 3, 4)):
        a, b, c = (np.arange(float(n)) * 10.0**k for k, n in enumerate(lengths))
        where = f"input: vectors of lengths {lengths}"
        want = a[:, None, None] + b[None, :, None] + c[None, None, :]
        try:
            p = pipeline(three_way_sum, a, b, c)
            got = np.asarray(p.vectorised(a, b, c))
        except Exception as err:
            return not_yet(title, where, f"it raised {describe_error(err)}", hint)
        failure = _compare(title, where, got, want, hint)
        if failure:
            return failure
        loops = str(p.source).count("build1")
        if loops != 3:
            return not_yet(title, where, "expected: three build1s in the traced source",
                           f"obtained: {loops}", hint)
    steps = bot_steps_by_depth()
    return passed(title, "right; bot steps by depth of nesting: "
                  + ", ".join(f"{d} → {n}" for d, n in steps.items())
                  + ": each level pushes its build1 through everything the inner ones made")


# --------------------------------------------------------------------------------------
# Exercise 3: the rule that makes a gather (Fig. 11)
# --------------------------------------------------------------------------------------


def first_times_row(m: Tensor) -> Tensor:
    """``vmap(lambda r: r[0] * r)(M)``: every row scaled by its first element."""
    scaled: Tensor = vmap(lambda r: r[0] * r)(m)
    return scaled


def check_gather_rule(answer: object) -> Feedback:
    """Check the name of the bot rule (``p.bot_steps[k].rule``) whose step first makes
    the ``gather`` of ``da.pipeline(first_times_row, M)``."""
    title = "the rule that makes the gather (Fig. 11)"
    p = pipeline(first_times_row, np.arange(12.0).reshape(4, 3))
    rules = list(dict.fromkeys(step.rule for step in p.bot_steps))
    expected = next(step for step in p.bot_steps if "gather" in str(step.after))
    if answer == expected.rule:
        return passed(title, f"{expected.rule}: {expected.before}  ⟶  {expected.after}")
    if not isinstance(answer, str) or answer not in rules:
        return not_yet(title, f"obtained: {answer!r}",
                       f"expected: one of the rules that fire here: {', '.join(rules)}",
                       "Hint: print every step of p.bot_steps with its rule and its after.")
    step = next(s for s in p.bot_steps if s.rule == answer)
    return not_yet(
        title,
        f"obtained: {answer}, whose step rewrites {step.before}  ⟶  {step.after}",
        "expected: the rule whose replacement is the first to contain a gather",
        "Hint: the gather reads M[i, 0] for every i: find the step where a build1 of an "
        "index by the loop variable disappears (Fig. 11).",
    )


# --------------------------------------------------------------------------------------
# Exercise 4: in_axes
# --------------------------------------------------------------------------------------


def check_shifted_rows(shifted_rows: Callable[[Any, Any], Any]) -> Feedback:
    """Check ``shifted_rows(v, M)``: ``M[k] - v`` for every row ``k``, with one vmap that
    maps ``M`` only (``in_axes=(None, 0)``)."""
    require_callable(shifted_rows, "shifted_rows", "check_shifted_rows")
    title = "mapping the second argument only (in_axes)"
    hint = ("Hint: by default vmap maps the leading axis of every argument, so v's 3 "
            "elements would be paired with M's 4 rows. in_axes says, argument by argument, "
            "which axis is mapped, or that it is not mapped at all.")
    rng = np.random.default_rng(2)
    v, m = rng.normal(size=3), rng.normal(size=(4, 3))
    where = f"input: v : {_shape(v)}, M : {_shape(m)}"
    try:
        p = pipeline(shifted_rows, v, m)
        got = np.asarray(p.vectorised(v, m))
    except Exception as err:
        return not_yet(title, where, f"it raised {describe_error(err)}", hint)
    loop = np.array([m[k] - v for k in range(4)])
    failure = _compare(title, where, got, loop, hint)
    if failure:
        return failure
    loops = str(p.source).count("build1")
    if loops != 1:
        return not_yet(title, where, "expected: one vmap (one build1 in the traced source)",
                       f"obtained: {loops}", hint)
    return passed(title, "equals the NumPy loop over the rows", f"vectorised: {p.vectorised}")


# --------------------------------------------------------------------------------------
# Exercise 5: how the work grows with n
# --------------------------------------------------------------------------------------


def outer_sin(a0: Tensor, b0: Tensor) -> Tensor:
    """The chapter's nested example: ``a0[j] * sin(b0[k])`` for every ``j, k``."""
    table: Tensor = vmap(lambda a: vmap(lambda b: a * fn.sin(b))(b0))(a0)
    return table


def python_calls(action: Callable[[], object]) -> int:
    """How many Python functions ``action()`` calls (the garbage collector paused)."""
    calls = 0

    def count(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    previous = sys.getprofile()
    gc.collect()
    gc.disable()
    sys.setprofile(count)
    try:
        action()
    finally:
        sys.setprofile(previous)
        gc.enable()
    return calls


def measured_growth(sizes: tuple[int, int] = (16, 32)) -> dict[str, tuple[int, int]]:
    """Python calls of ``po.source`` and ``po.vectorised`` at two sizes ``n``."""
    counts: dict[str, list[int]] = {"source": [], "vectorised": []}
    for n in sizes:
        x = np.linspace(0.0, 1.0, n)
        po = pipeline(outer_sin, x, x)
        for stage in counts:
            program = getattr(po, stage)
            program(x, x)  # a first run fills caches
            counts[stage].append(python_calls(partial(program, x, x)))
    return {stage: (c[0], c[1]) for stage, c in counts.items()}


def check_growth(prediction: Mapping[str, object]) -> Feedback:
    """Check the exponents ``p`` in "the work grows like nᵖ" predicted for the traced
    source (the evaluator loops) and the vectorised program of ``outer_sin``, measured
    by counting Python calls at ``n = 16`` and ``n = 32``."""
    title = "how the work of each program grows with n"
    sizes = (16, 32)
    counts = measured_growth(sizes)
    hint = {
        "source": "Hint: the reference evaluator runs each build1 as a Python loop that "
        "evaluates its body once per index. How many body evaluations do two nested "
        "loops over n make?",
        "vectorised": "Hint: the bulk program makes the same NumPy calls whatever n is; "
        "only the arrays they get are longer. How does a count that does not change "
        "grow?",
    }
    if not isinstance(prediction, Mapping):
        return not_yet(title, f"obtained: {prediction!r}",
                       "expected: a dict {'source': p, 'vectorised': q}", hint["source"])
    for stage, (small, large) in counts.items():
        exponent = round(math.log2(large / small))
        got = prediction.get(stage)
        if got != exponent:
            return not_yet(
                title,
                f"input: the {stage} program of outer_sin, n = {sizes[0]} and {sizes[1]}",
                "expected: the p with work ∝ nᵖ that counting its Python calls at two "
                "sizes shows (python_calls counts them)",
                f"obtained: {got!r}",
                hint[stage],
            )
    return passed(title, "the looped source does a quadratic amount of Python work, the bulk "
                  "program a constant one: its cost per element is NumPy's")

"""Exercises of chapter 06 (compile-time differentiation, §7 of the paper): where a
derivative factor is bound after extraction (Eq. 6), a program that needs two shares
(§7.2–7.3), how many shares a chain of sums needs, specialising the generated source to
``dt = 1`` (Fig. 21), and timing the compiled and the interpreted gradient."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...ad import delta as dl
from ...ad.share_to_let import check_let_program, share_to_let
from ...api import compiled_gradient, grad
from ...codegen.generate import HELPERS
from ...codegen.kernels import CompiledKernel
from ...lang import functions as fn
from ...lang.errors import DualarrError
from ...lang.tensor import Tensor
from ...lang.terms import Share, Var, postorder
from ...pipeline import Pipeline, pipeline
from ...show.printer import print_term
from ..examples import fig18
from ..exercises.feedback import (
    Feedback,
    describe_error,
    format_array,
    not_yet,
    passed,
    require_callable,
)

# --------------------------------------------------------------------------------------
# Exercise 1: the derivative factor of tanh after extraction (§7.1, Eq. 6)
# --------------------------------------------------------------------------------------


def layer(w: Tensor, v: Tensor) -> Tensor:
    """The network layer of chapter 06: ``sum(tanh(v @ w) ** 2)``."""
    return fn.sum(fn.tanh(fn.matmul(v, w)) ** 2)


def layer_pipeline() -> Pipeline:
    """``da.pipeline(layer, w, v)`` for the chapter's weights (seed 0)."""
    rng = np.random.default_rng(0)
    return pipeline(layer, rng.normal(size=(3, 2)), rng.normal(size=(4, 3)))


def _unshare(d: dl.Delta) -> dl.Delta:
    while isinstance(d, dl.Share):
        d = d.delta
    return d


def _tanh_factor(p: Pipeline) -> str:
    """The binding that the first ``Scale`` above the matmul's Delta multiplies by."""
    for node in dl.delta_postorder([p.delta.delta]):
        if isinstance(node, dl.Scale) and isinstance(_unshare(node.delta), dl.Add):
            factor = node.factor
            if isinstance(factor, Var):
                return factor.hint
    raise DualarrError("the layer's Delta has no Scale of the matmul's Delta")


def check_tanh_factor(answer: object) -> Feedback:
    """Check the name (``"v…"``) of the binding of ``layer_pipeline().delta`` that holds
    the derivative factor of ``tanh`` (Eq. 6: every factor is let-bound)."""
    title = "the derivative factor of tanh after extraction (Eq. 6)"
    p = layer_pipeline()
    bindings = {var.hint: term for var, term in p.delta.bindings}
    names = ", ".join(bindings)
    if not isinstance(answer, str) or answer not in bindings:
        return not_yet(
            title,
            f"obtained: {answer!r}, which is not the name of a binding",
            f"expected: one of the names bound by p.delta: {names}",
            "Hint: print(p.delta) lists the bindings `let v<k> = … in`; answer with a "
            "name, as a string.",
        )
    expected = _tanh_factor(p)
    if answer == expected:
        return passed(
            title,
            f"{answer} = {print_term(bindings[answer])}: the factor 1 - tanh² of the "
            "Scale above the matmul's Delta, computed once with the primal bindings",
        )
    term = print_term(bindings[answer])
    hint = (
        "Hint: that binding is the value of tanh itself. Its derivative is a different "
        "expression of that value, bound further down."
        if term.startswith("tanh")
        else "Hint: in the Delta part of print(p.delta), find the Share of the matmul's "
        "Delta (the Add of two Contracts); tanh's derivative is the factor of the Scale "
        "applied to it first. Which variable does that Scale multiply by?"
    )
    return not_yet(
        title,
        f"obtained: {answer} = {term}",
        "expected: the binding of tanh's derivative factor",
        hint,
    )


# --------------------------------------------------------------------------------------
# Exercise 2: a program whose cotangents need two shares (§7.2–7.3)
# --------------------------------------------------------------------------------------


def _share_ids(p: Pipeline) -> set[int]:
    return {n.id for n in postorder(list(p.shared.gradients)) if isinstance(n, Share)}


def check_two_shares(f: Callable[[Tensor], Tensor]) -> Feedback:
    """Check a function of one vector whose ``shared`` stage holds exactly two share
    ids, whose ``gradient`` stage is a valid let-program (Fig. 20) binding both, and
    whose compiled and interpreted gradients agree."""
    require_callable(f, "f", "check_two_shares")
    title = "a program whose gradient needs two shares (§7.3)"
    x = np.linspace(0.1, 1.0, 4)
    try:
        p = pipeline(f, x)
        ids = _share_ids(p)
    except Exception as err:
        return not_yet(
            title,
            f"input: x = {x}",
            f"it raised {describe_error(err)}",
            "Hint: f takes one float vector and returns a scalar (e.g. ends with da.sum).",
        )
    if len(ids) != 2:
        return not_yet(
            title,
            f"input: x = {x}",
            "expected: 2 share ids in p.shared",
            f"obtained: {len(ids)}",
            "Hint: a share is placed where an Add hands a cotangent that is not a plain "
            "variable to both of its sides. Each step of a chain like the chapter's adds "
            "one more such Add.",
        )
    check_let_program(p.gradient)
    compiled = np.asarray(grad(f)(x))
    interpreted = np.asarray(grad(f, mode="interpret")(x))
    if not np.allclose(compiled, interpreted, rtol=1e-12, atol=1e-12):
        return not_yet(title, "the compiled and the interpreted gradient differ")
    converted = [var.hint for var, _ in share_to_let(p.shared).bindings if var.hint[0] == "c"]
    kept = [var.hint for var, _ in p.gradient.bindings if var.hint[0] == "c"]
    return passed(
        title,
        f"share ids {sorted(ids)}; let conversion binds {', '.join(converted)}, lowest id "
        f"outermost (Fig. 20); after simplification p.gradient keeps "
        f"{', '.join(kept) or 'none of them'} (the simplifier inlines the others); "
        "compiled == interpreted",
    )


# --------------------------------------------------------------------------------------
# Exercise 3: shares of a chain of sums
# --------------------------------------------------------------------------------------


def sum_chain(k: int) -> Callable[[Tensor], Tensor]:
    """``x = sin(x) + x`` repeated ``k`` times, then ``sum``."""

    def f(x: Tensor) -> Tensor:
        for _ in range(k):
            x = fn.sin(x) + x
        return fn.sum(x)

    f.__name__ = f"sum_chain{k}"
    return f


def check_sum_chain_shares(predict: Callable[[int], int]) -> Feedback:
    """Check ``predict(k)``, the number of share ids in the ``shared`` stage of
    ``sum_chain(k)``, for ``k = 1 … 6``."""
    require_callable(predict, "predict", "check_sum_chain_shares")
    title = "shares needed by the chain x = sin(x) + x"
    xs = np.linspace(0.1, 1.0, 4)
    for k in range(1, 7):
        expected = len(_share_ids(pipeline(sum_chain(k), xs)))
        try:
            got = predict(k)
        except Exception as err:
            return not_yet(title, f"input: k = {k}", f"it raised {describe_error(err)}")
        if got != expected:
            return not_yet(
                title,
                f"input: k = {k}",
                f"expected: {expected}",
                f"obtained: {got!r}",
                "Hint: each step's Delta is an Add of the sin path and the x path. Count "
                "the Adds whose cotangent is a computation rather than a plain variable: "
                "print(da.pipeline(sum_chain(1), xs).shared) shows the first one. Compare "
                "with the product chain, whose last Add is reached by a plain variable.",
            )
    return passed(title, "right for k = 1 … 6")


# --------------------------------------------------------------------------------------
# Exercise 4: what specialising to dt = 1 removes (Fig. 21)
# --------------------------------------------------------------------------------------

def chain(k: int) -> Callable[[Tensor], Tensor]:
    """The chapter's chain: ``x = sin(x) * x`` repeated ``k`` times, then ``sum``."""

    def f(x: Tensor) -> Tensor:
        for _ in range(k):
            x = fn.sin(x) * x
        return fn.sum(x)

    f.__name__ = f"chain{k}"
    return f


def _run_source(source: str, p: Pipeline, x: np.ndarray, dt: float) -> tuple[Any, ...]:
    # the fused kernels the source calls by name, as the compiled program has them
    namespace: dict[str, Any] = {k.name: CompiledKernel(k) for k in p.compiled.compiled.kernels}
    exec(compile(source, "<specialised>", "exec"), namespace)
    result: tuple[Any, ...] = namespace[p.gradient.name](np, HELPERS, p.constants, x, dt)
    return result


def _still_reads_dt(source: str) -> str:
    """The first line of the body that mentions ``dt`` (the signature keeps it)."""
    for line in source.splitlines()[1:]:
        if re.search(r"\bdt\b", line):
            return line.strip()
    return ""


def check_specialise(specialise: Callable[[str], str]) -> Feedback:
    """Check ``specialise(source)``: the generated gradient source (``p.python``) with
    the cotangent fixed to ``dt = 1`` (Fig. 21's wrapper, ``unit_cotangent=True``): run
    with ``dt = nan`` it must give the gradient at ``dt = 1``, so it reads ``dt`` nowhere."""
    require_callable(specialise, "specialise", "check_specialise")
    title = "specialising the gradient program to dt = 1"
    xs = np.linspace(0.1, 1.0, 4)
    programs = {"chain(1)": chain(1), "chain(2)": chain(2), "sum_chain(2)": sum_chain(2),
                "fig18": fig18}
    for name, f in programs.items():
        p = pipeline(f, xs, fuse=False)  # text in the source, no kernel to edit apart
        where = f"input: the source of {name}: print(da.pipeline({name}, xs).python)"
        try:
            special = specialise(p.python)
            value, *grads = _run_source(special, p, xs, float("nan"))
        except Exception as err:
            return not_yet(title, where, f"it raised {describe_error(err)}",
                           "Hint: return the whole source, still a valid Python function.")
        want_value, *want_grads = _run_source(p.python, p, xs, 1.0)
        if _still_reads_dt(special) or not all(
            np.all(np.isfinite(np.asarray(g))) for g in (value, *grads)
        ):
            line = _still_reads_dt(special)
            return not_yet(
                title,
                where,
                "expected: a body that never reads dt (run with dt = nan, it gives numbers)",
                f"obtained: the line `{line}` still reads dt" if line else "obtained: nan",
                "Hint: with dt = 1, what is a product with dt? And dt on its own?",
            )
        if not np.allclose(value, want_value) or not all(
            np.allclose(g, w) for g, w in zip(grads, want_grads, strict=True)
        ):
            return not_yet(
                title,
                where,
                f"expected: the gradient {format_array(want_grads[0])} (the original at dt = 1)",
                f"obtained: {format_array(grads[0]) if grads else 'no gradient'}",
                "Hint: remove dt only where the result does not change at dt = 1.",
            )
    p18 = pipeline(fig18, xs)
    unit = compiled_gradient(fig18, (xs,), unit_cotangent=True).source
    return passed(
        title,
        f"right on {len(programs)} programs. dualarr's own specialisation goes further: for "
        f"fig18 it has {len(unit.splitlines())} lines instead of "
        f"{len(p18.python.splitlines())}, because once dt is gone two bindings compute "
        "the same value and the simplifier keeps one",
    )


# --------------------------------------------------------------------------------------
# Exercise 5: timing both modes (open-ended)
# --------------------------------------------------------------------------------------


def check_mode_timing(
    time_modes: Callable[[Callable[[Tensor], Tensor], np.ndarray], Mapping[str, Any]],
) -> Feedback:
    """Check ``time_modes(f, x)``: seconds per gradient of ``f`` at ``x`` for the modes
    ``"compiled"`` and ``"interpret"`` (positive finite numbers); the times themselves
    are the learner's to explain."""
    require_callable(time_modes, "time_modes", "check_mode_timing")
    title = "timing both modes on 10⁴ elements"
    x = np.linspace(0.1, 1.0, 10**4)
    try:
        times = time_modes(chain(8), x)
    except Exception as err:
        return not_yet(title, "input: chain(8), 10⁴ elements", f"it raised {describe_error(err)}")
    hint = (
        "Hint: return a dict {'compiled': seconds, 'interpret': seconds}, each the time "
        "of one gradient (timeit.repeat: the best of several runs, divided by number)."
    )
    if not isinstance(times, Mapping) or set(times) != {"compiled", "interpret"}:
        keys = sorted(times) if isinstance(times, Mapping) else type(times).__name__
        return not_yet(title, "expected: the keys 'compiled' and 'interpret'",
                       f"obtained: {keys}", hint)
    for mode, seconds in times.items():
        if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
            return not_yet(title, f"expected: a positive number of seconds for {mode!r}",
                           f"obtained: {seconds!r}", hint)
    return passed(
        title,
        "both modes timed: now explain their ratio (which work grows with the data, "
        "which is paid once per call?)",
    )

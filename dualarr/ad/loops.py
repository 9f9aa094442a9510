"""The derivatives of a loop, derived from its body by the pipeline itself.

horde-ad's mapAccum rules (``AstMapAccumRDer``, ``DeltaMapAccumR``); the paper has no
loops.  D of a loop (:meth:`dualarr.ad.dual.DualAlgebra.map_accum`) runs the primal loop
saving the carry each step received and makes one Delta node,
:class:`~dualarr.ad.delta.MapAccum`.  Its two linear maps are loops too, over
derivatives of the body that this module derives **once per loop** with the stages of
the pipeline, never by hand per body:

* the body is run with dual arrays over terms (:class:`~dualarr.ad.dual.DualAlgebra`
  over :class:`~dualarr.interp.term_algebra.TermAlgebra`, as the symbolic forward pass
  of §7.1 does): a Delta of each result, over one ``Input`` per binder;
* the **tangent loop** (forward mode) runs, in the loop's direction, the body's
  tangent: ``forward`` (evalFwd) of those Deltas on tangent variables;
* the **cotangent loop** runs in the opposite direction the body's transpose:
  ``reverse_seeds`` (the reverse pass of Fig. 17, in the term algebra) seeded with
  cotangent variables.  It carries the carries' cotangents and adds up the loop
  invariants' cotangents (as JAX's scan transpose does), and stacks the xs'.

Each step recomputes the body's primal from the saved carry (the residuals are the
carries, one stack per carry, as horde-ad's are).  Both derived loops are
:class:`~dualarr.lang.terms.MapAccum` terms, so every stage — evaluation, the symbolic
reverse pass, printing, code generation, and differentiation again — treats them as
any loop.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..interp.algebra import Algebra
from ..interp.evaluate import Interpreter, body_runner
from ..interp.term_algebra import TermAlgebra
from ..lang.terms import (
    IdSupply,
    MapAccum,
    Op,
    Term,
    Var,
    fresh_var,
    zeros,
)
from ..vectorise.bot import vectorise
from ..vectorise.simplify import simplify
from . import delta as dl
from .dual import Dual, DualAlgebra
from .reverse import LOOP_TANGENT, LOOP_TRANSPOSE, CotangentAlgebra, forward, reverse_seeds

__all__ = ["LoopDerivatives", "derivatives"]

_FIRST_ID = 1_000_000
"""Where the ids of the variables a derivation makes start (apart from a program's)."""


@dataclass(frozen=True, eq=False)
class LoopDerivatives:
    """A loop's tangent and cotangent loops (inputs are placeholders: an algebra runs
    them on its own values with ``map_accum``) and which binders and results are float
    (differentiable), by position."""

    tangent: MapAccum
    cotangent: MapAccum
    float_carries: tuple[int, ...]
    float_xs: tuple[int, ...]
    float_consts: tuple[int, ...]
    float_ys: tuple[int, ...]


_DERIVED: weakref.WeakKeyDictionary[MapAccum, LoopDerivatives] = weakref.WeakKeyDictionary()
"""Each loop's derivatives, derived once (a cache: a loop node is immutable)."""


def derivatives(loop: MapAccum) -> LoopDerivatives:
    """The tangent and cotangent loops of ``loop``, derived from its body."""
    found = _DERIVED.get(loop)
    if found is None:
        found = _DERIVED[loop] = _derive(loop)
    return found


def _floats(variables: Sequence[Var] | Sequence[Term]) -> tuple[int, ...]:
    return tuple(k for k, v in enumerate(variables) if v.dtype.is_float)


def _derive(loop: MapAccum) -> LoopDerivatives:
    supply = IdSupply(_FIRST_ID)
    body = simplify(list(vectorise(list(loop.body), supply).terms), supply)
    terms = TermAlgebra(supply)
    duals = DualAlgebra(terms, IdSupply())
    binders = loop.binders
    env: dict[Var, Any] = {
        v: Dual(v, dl.Input(j, v.shape, v.dtype)) if v.dtype.is_float else v
        for j, v in enumerate(binders)
    }
    outs = Interpreter(duals).run(body, env)
    deltas = [out.delta if isinstance(out, Dual) else None for out in outs]
    carries_n, xs_n = len(loop.carry_vars), len(loop.x_vars)
    fc, fx = _floats(loop.carry_vars), _floats(loop.x_vars)
    fk, fy = _floats(loop.const_vars), _floats(loop.ys)
    consts_at = carries_n + xs_n

    def fresh(hint: str, like: Var | Term) -> Var:
        return fresh_var(supply, hint, like.shape, like.dtype)

    # the tangent loop: carries' tangents; slices: saved carries, xs, xs' tangents;
    # invariants: the invariants and their tangents
    tc = [fresh("dc", loop.carry_vars[j]) for j in fc]
    tx = [fresh("dx", loop.x_vars[j]) for j in fx]
    tk = [fresh("dk", loop.const_vars[j]) for j in fk]
    tangents: dict[int, Any] = {
        **{j: v for j, v in zip(fc, tc, strict=True)},
        **{carries_n + j: v for j, v in zip(fx, tx, strict=True)},
        **{consts_at + j: v for j, v in zip(fk, tk, strict=True)},
    }

    def tangent_of(position: int) -> Term:
        delta, out = deltas[position], body[position]
        if delta is None:
            return zeros(out.shape, out.dtype)
        found: Term = forward(terms, delta, tangents)
        return found

    tangent_body = [
        *(tangent_of(j) for j in fc),
        *(tangent_of(carries_n + o) for o in fy),
    ]
    tangent = _template(
        loop,
        supply,
        loop.reverse,
        tuple(tc),
        (*loop.carry_vars, *loop.x_vars, *tx),
        (*loop.const_vars, *tk),
        simplify(tangent_body, supply),
    )

    # the cotangent loop, in the opposite direction: carries' cotangents and the sums
    # of the invariants'; slices: saved carries, xs, ys' cotangents; stacks the xs'
    gc = [fresh("gc", loop.carry_vars[j]) for j in fc]
    gk = [fresh("gk", loop.const_vars[j]) for j in fk]
    gy = [fresh("gy", loop.ys[o]) for o in fy]
    seeds = [
        *((deltas[j], g) for j, g in zip(fc, gc, strict=True)),
        *((deltas[carries_n + o], g) for o, g in zip(fy, gy, strict=True)),
    ]
    grads = reverse_seeds(terms, [(d, g) for d, g in seeds if d is not None])

    def cotangent_of(position: int) -> Term:
        found = grads.get(position)
        var = binders[position]
        return found if found is not None else zeros(var.shape, var.dtype)

    sums: list[Term] = []
    for j, g in zip(fk, gk, strict=True):
        found = grads.get(consts_at + j)
        sums.append(g if found is None else Op("add", (g, found)))
    cotangent_body = [
        *(cotangent_of(j) for j in fc),
        *sums,
        *(cotangent_of(carries_n + j) for j in fx),
    ]
    cotangent = _template(
        loop,
        supply,
        not loop.reverse,
        (*gc, *gk),
        (*loop.carry_vars, *loop.x_vars, *gy),
        loop.const_vars,
        simplify(cotangent_body, supply),
    )
    return LoopDerivatives(tangent, cotangent, fc, fx, fk, fy)


def _template(
    loop: MapAccum,
    supply: IdSupply,
    reverse: bool,
    carry_vars: tuple[Var, ...],
    x_vars: tuple[Var, ...],
    const_vars: tuple[Var, ...],
    body: Sequence[Term],
) -> MapAccum:
    """A loop of ``loop``'s length over placeholder inputs of the binders' types."""

    def placeholder(var: Var, rows: bool) -> Term:
        shape = (loop.length, *var.shape) if rows else var.shape
        return fresh_var(supply, "p", shape, var.dtype)

    return MapAccum(
        loop.length,
        reverse,
        carry_vars,
        x_vars,
        const_vars,
        tuple(placeholder(v, False) for v in carry_vars),
        tuple(placeholder(v, True) for v in x_vars),
        tuple(placeholder(v, False) for v in const_vars),
        tuple(body),
    )


@LOOP_TRANSPOSE.register(dl.MapAccum)
def transpose_loop(
    alg: CotangentAlgebra[Any], d: dl.MapAccum, cotangents: Mapping[int, Any]
) -> list[Any]:
    """The cotangent loop on the saved residuals, xs and invariants: the cotangent
    of each operand Delta (initial carries, xs, invariants; None for int ones)."""
    loop = d.loop
    found = derivatives(loop)
    carries_n = len(loop.carry_vars)

    def cotangent(k: int) -> Any:
        c = cotangents.get(k)
        return c if c is not None else alg.zeros(loop.shapes[k], loop.dtypes[k])

    inputs = [
        *(cotangent(j) for j in found.float_carries),
        *(alg.zeros(loop.const_vars[j].shape, loop.const_vars[j].dtype)
          for j in found.float_consts),
        *d.residuals,
        *d.xs,
        *(cotangent(carries_n + o) for o in found.float_ys),
        *d.consts,
    ]  # fmt: skip
    reverse = found.cotangent
    outs = alg.map_accum(reverse, inputs, body_runner(reverse))
    fc, fk = len(found.float_carries), len(found.float_consts)
    result: list[Any] = [None] * (carries_n + len(loop.x_vars) + len(loop.const_vars))
    for at, j in enumerate(found.float_carries):
        result[j] = outs[at]
    for at, j in enumerate(found.float_consts):
        result[carries_n + len(loop.x_vars) + j] = outs[fc + at]
    for at, j in enumerate(found.float_xs):
        result[carries_n + j] = outs[fc + fk + at]
    return result


@LOOP_TANGENT.register(dl.MapAccum)
def tangent_loop(alg: Algebra[Any], d: dl.MapAccum, tangents: Sequence[Any]) -> list[Any]:
    """The tangent loop on the saved residuals, xs and invariants and the operand
    Deltas' tangents: the tangent of each result (None for int ones)."""
    loop = d.loop
    found = derivatives(loop)
    carries_n, xs_n = len(loop.carry_vars), len(loop.x_vars)
    consts_at = carries_n + xs_n
    inputs = [
        *(tangents[j] for j in found.float_carries),
        *d.residuals,
        *d.xs,
        *(tangents[carries_n + j] for j in found.float_xs),
        *d.consts,
        *(tangents[consts_at + j] for j in found.float_consts),
    ]
    forward_loop = found.tangent
    outs = alg.map_accum(forward_loop, inputs, body_runner(forward_loop))
    result: list[Any] = [None] * len(loop.shapes)
    for at, j in enumerate(found.float_carries):
        result[j] = outs[at]
    for at, o in enumerate(found.float_ys):
        result[carries_n + o] = outs[len(found.float_carries) + at]
    return result

"""D of a loop and its two linear maps, derived from the body by the pipeline itself.

Loops are horde-ad's mapAccum (``AstMapAccumRDer``, ``DeltaMapAccumR``) and JAX's
``lax.scan``; the paper has no loops.  Everything here is derived **once per loop**,
from its body, with the stages of the pipeline — never written per body:

* **the body's Delta.**  The body runs with dual arrays over terms
  (:class:`~dualarr.ad.dual.DualAlgebra` over
  :class:`~dualarr.interp.term_algebra.TermAlgebra`, as the symbolic forward pass of
  §7.1 does): each result's primal as a term and its Delta over one ``Input`` per
  binder (carries, slices, loop invariants).
* **the residuals.**  The primal values that Delta mentions (its factors and the data its
  index functions read, Eq. 6's values) which depend on the step — on a carry or a slice —
  are what the linear maps need of each step.  The **saving loop** is the primal loop
  whose body also returns them: stacked, they are the loop's residuals (JAX's partial
  evaluation of ``scan`` splits a primal scan that saves stacked residuals the same way).
* **the tangent loop** (forward mode) runs, in the loop's direction, ``forward``
  (evalFwd, :mod:`dualarr.ad.reverse`) of the body's Delta on tangent variables;
* **the cotangent loop** runs in the opposite direction the reverse pass of Fig. 17 on
  the body's Delta, seeded with cotangent variables (``reverse_seeds``, in the term
  algebra).  It carries the carries' cotangents, adds up the loop invariants' (as JAX's
  scan transpose does) and stacks the xs'.

In both linear loops each residual is a row read from its stack, so neither recomputes
the body's primal (only elementwise values the Delta alone needs, from the carries: see
:func:`_residuals`).  All three are :class:`~dualarr.lang.terms.MapAccum` terms, so every
stage — evaluation, the symbolic reverse pass, printing, code generation, and D again
(grad of grad) — treats them as any loop.  D of a loop
(:meth:`dualarr.ad.dual.DualAlgebra.map_accum`) runs the saving loop and makes one Delta node,
:class:`~dualarr.ad.delta.MapAccum`; :func:`transpose_loop` and :func:`tangent_loop` (filed
in the reverse pass's tables) run the two linear loops on its residuals.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..interp.algebra import Algebra
from ..interp.evaluate import body_runner
from ..interp.term_algebra import TermAlgebra
from ..lang.terms import (
    FreeVars,
    Gather,
    IdSupply,
    MapAccum,
    Op,
    Replicate,
    Reshape,
    Term,
    Transpose,
    Var,
    children,
    fresh_var,
    postorder,
    rebuild,
    transform,
    zeros,
)
from ..vectorise.bot import vectorise
from ..vectorise.simplify import simplify
from . import delta as dl
from .reverse import LOOP_TANGENT, LOOP_TRANSPOSE, CotangentAlgebra, forward, reverse_seeds

__all__ = ["BodyDerivative", "LoopDerivatives", "derivatives", "tangent_loop", "transpose_loop"]

_FIRST_ID = 1_000_000
"""Where the ids of the variables a derivation makes start (apart from a program's)."""


@dataclass(frozen=True, eq=False)
class LoopDerivatives:
    """A loop's saving, tangent and cotangent loops and which binders and results are
    float (differentiable), by position.  The loops' inputs are placeholders: an algebra
    runs them on its own values (``map_accum``).

    ``saving`` returns the loop's results, then one stack per residual.  ``tangent``
    carries the float carries' tangents; its slices are the residuals, the xs and the
    float xs' tangents; its invariants the invariants and the float ones' tangents; it
    returns the float carries' and float ys' tangents.  ``cotangent`` (the opposite
    direction) carries the float carries' cotangents and the float invariants' sums; its
    slices are the residuals, the xs and the float ys' cotangents; its invariants the
    invariants; it stacks the float xs' cotangents."""

    saving: MapAccum
    tangent: MapAccum
    cotangent: MapAccum
    residuals: int
    float_carries: tuple[int, ...]
    float_xs: tuple[int, ...]
    float_consts: tuple[int, ...]
    float_ys: tuple[int, ...]


BodyDerivative: TypeAlias = Callable[
    [Sequence[Term], Sequence[Var], TermAlgebra], tuple[list[Term], list["dl.Delta | None"]]
]
"""D of a body with terms as primals (the symbolic forward pass of §7.1, run by
:mod:`dualarr.ad.dual`, which uses this module for D of a loop): each result's primal
term and its Delta over one ``Input`` per binder (None for a result that is not float)."""

_DERIVED: weakref.WeakKeyDictionary[MapAccum, LoopDerivatives] = weakref.WeakKeyDictionary()
"""Each loop's derivatives, derived once (a cache: a loop node is immutable)."""


def derivatives(loop: MapAccum, differentiate: BodyDerivative) -> LoopDerivatives:
    """The saving, tangent and cotangent loops of ``loop``, derived from its body with
    ``differentiate`` (D of the body; the first call for a loop derives, later ones
    reuse)."""
    found = _DERIVED.get(loop)
    if found is None:
        found = _DERIVED[loop] = _derive(loop, differentiate)
    return found


def derived(loop: MapAccum) -> LoopDerivatives:
    """The derivatives of a loop D has already differentiated (its Delta exists)."""
    return _DERIVED[loop]


def _floats(variables: Sequence[Var] | Sequence[Term]) -> tuple[int, ...]:
    return tuple(k for k, v in enumerate(variables) if v.dtype.is_float)


def _residuals(
    deltas: Sequence[dl.Delta],
    step_vars: frozenset[Var],
    rows: frozenset[Var],
    primals: Sequence[Term],
    carry_outs: Sequence[Term],
    free: FreeVars,
) -> list[Term]:
    """The primal values the Delta mentions that depend on the step (read a carry or a
    slice), each once: whole factors and indices, and the parts of an index function's
    components that read no variable of its lambda (Eq. 6's rule).  A slice itself
    (``rows``) is not one: the linear loops read the xs.

    A value only the Delta needs (no primal result is computed from it) that is
    elementwise work on what the loop holds anyway — the carries going in and out of
    the step, the slices — is not saved either: its operands are, and the linear loops
    recompute it (``1 - t*t`` of a ``tanh`` that is the next carry), as the unrolled
    program computes it in its reverse pass.  The steps then keep one array each, the
    carry, where saving the value would keep a second."""
    computed = frozenset(postorder(list(primals)))
    held = frozenset((*step_vars, *carry_outs))

    def recomputable(node: Term) -> bool:
        if node in held or not free(node) & step_vars:
            return True
        if node in computed or not isinstance(node, Op | Transpose | Reshape | Replicate):
            return False
        return all(recomputable(kid) for kid in children(node))

    found: dict[Term, None] = {}
    for d in dl.delta_postorder(deltas):
        inner = frozenset(d.fn.variables) if isinstance(d, dl.Gather | dl.Scatter) else frozenset()
        stack = [v for v in dl.primal_values(d) if isinstance(v, Term)]
        while stack:
            node = stack.pop()
            mentioned = free(node)
            if not mentioned & step_vars or node in found or node in rows:
                continue
            if (
                mentioned & inner
                or _view(node, free)
                or (isinstance(node, Op) and node not in computed and recomputable(node))
            ):  # look inside
                stack.extend(children(node))
            else:
                found[node] = None
    return list(found)


def _view(node: Term, free: FreeVars) -> bool:
    """A rearrangement of its operand that reads no data to do it (a transpose, a
    reshape, a replication, a gather at positions its variables alone give): a linear
    loop recomputes it from the residual it reads instead of saving it too."""
    if isinstance(node, Transpose | Reshape | Replicate):
        return True
    if isinstance(node, Gather):
        return all(free(c) <= set(node.vars) for c in node.index)
    return False


def _derive(loop: MapAccum, differentiate: BodyDerivative) -> LoopDerivatives:
    supply = IdSupply(_FIRST_ID)
    body = simplify(list(vectorise(list(loop.body), supply).terms), supply)
    terms = TermAlgebra(supply)
    binders = loop.binders
    primals, deltas = differentiate(body, binders, terms)
    carries_n, xs_n = len(loop.carry_vars), len(loop.x_vars)
    fc, fx = _floats(loop.carry_vars), _floats(loop.x_vars)
    fk, fy = _floats(loop.const_vars), _floats(loop.ys)
    consts_at = carries_n + xs_n

    def fresh(hint: str, like: Var | Term) -> Var:
        return fresh_var(supply, hint, like.shape, like.dtype)

    # the residuals: each becomes a row variable of the two linear loops
    present = [d for d in deltas if d is not None]
    step_vars = frozenset((*loop.carry_vars, *loop.x_vars))
    saved = _residuals(
        present, step_vars, frozenset(loop.x_vars), primals, primals[:carries_n], FreeVars()
    )
    rows = {term: fresh("r", term) for term in saved}
    linear = dl.map_primal_values(present, lambda value: _replaced(value, rows))
    by_position = iter(linear)
    linear_deltas = [None if d is None else next(by_position) for d in deltas]
    saving = _template(
        loop, supply, loop.reverse, loop.carry_vars, loop.x_vars, loop.const_vars,
        (*primals, *saved),
    )  # fmt: skip
    residual_vars = tuple(rows[t] for t in saved)

    # the tangent loop
    tc = [fresh("dc", loop.carry_vars[j]) for j in fc]
    tx = [fresh("dx", loop.x_vars[j]) for j in fx]
    tk = [fresh("dk", loop.const_vars[j]) for j in fk]
    tangents: dict[int, Any] = {
        **{j: v for j, v in zip(fc, tc, strict=True)},
        **{carries_n + j: v for j, v in zip(fx, tx, strict=True)},
        **{consts_at + j: v for j, v in zip(fk, tk, strict=True)},
    }

    def tangent_of(position: int) -> Term:
        delta, out = linear_deltas[position], body[position]
        if delta is None:
            return zeros(out.shape, out.dtype)
        found: Term = forward(terms, delta, tangents)
        return found

    tangent = _template(
        loop, supply, loop.reverse, tuple(tc), (*residual_vars, *loop.x_vars, *tx),
        (*loop.const_vars, *tk),
        simplify([*(tangent_of(j) for j in fc), *(tangent_of(carries_n + o) for o in fy)],
                 supply),
    )  # fmt: skip

    # the cotangent loop, in the opposite direction
    gc = [fresh("gc", loop.carry_vars[j]) for j in fc]
    gk = [fresh("gk", loop.const_vars[j]) for j in fk]
    gy = [fresh("gy", loop.ys[o]) for o in fy]
    seeds = [
        *((linear_deltas[j], g) for j, g in zip(fc, gc, strict=True)),
        *((linear_deltas[carries_n + o], g) for o, g in zip(fy, gy, strict=True)),
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
        loop, supply, not loop.reverse, (*gc, *gk), (*residual_vars, *loop.x_vars, *gy),
        loop.const_vars, simplify(cotangent_body, supply),
    )  # fmt: skip
    return LoopDerivatives(saving, tangent, cotangent, len(saved), fc, fx, fk, fy)


def _replaced(value: Any, rows: Mapping[Term, Var]) -> Any:
    """``value`` with each residual it contains read from its row variable."""
    if not isinstance(value, Term) or not rows:
        return value
    found = rows.get(value)
    if found is not None:
        return found
    return transform([value], lambda node, kids: rows.get(node) or rebuild(node, kids))[0]


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
    """The cotangent loop on the saved residuals: the cotangent of each operand Delta
    (initial carries, xs, invariants; None for int ones) from the results' cotangents."""
    loop = d.loop
    found = derived(loop)
    carries_n, xs_n = len(loop.carry_vars), len(loop.x_vars)

    def cotangent(k: int) -> Any:
        c = cotangents.get(k)
        return c if c is not None else alg.zeros(loop.shapes[k], loop.dtypes[k])

    consts = loop.const_vars
    inputs = [
        *(cotangent(j) for j in found.float_carries),
        *(alg.zeros(consts[j].shape, consts[j].dtype) for j in found.float_consts),
        *d.residuals,
        *d.xs,
        *(cotangent(carries_n + o) for o in found.float_ys),
        *d.consts,
    ]
    reverse = found.cotangent
    outs = alg.map_accum(reverse, inputs, body_runner(reverse))
    fc, fk = len(found.float_carries), len(found.float_consts)
    result: list[Any] = [None] * (carries_n + xs_n + len(consts))
    for at, j in enumerate(found.float_carries):
        result[j] = outs[at]
    for at, j in enumerate(found.float_consts):
        result[carries_n + xs_n + j] = outs[fc + at]
    for at, j in enumerate(found.float_xs):
        result[carries_n + j] = outs[fc + fk + at]
    return result


@LOOP_TANGENT.register(dl.MapAccum)
def tangent_loop(alg: Algebra[Any], d: dl.MapAccum, tangents: Sequence[Any]) -> list[Any]:
    """The tangent loop on the saved residuals: the tangent of each result (None for
    int ones) from the tangent of each operand Delta."""
    loop = d.loop
    found = derived(loop)
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

"""Loops: ``da.scan`` and ``da.fori_loop``, traced once into one loop node.

As ``jax.lax.scan``: ``scan(f, init, xs)`` runs ``carry, y = f(carry, x)`` over the rows
of ``xs`` and returns the final carry and the stacked ``y``; carries, xs and ys are any
trees (tuples, lists, dicts) of arrays.  The body ``f`` is called **once**, on traced
values, so the program's size does not depend on the number of steps: one
:class:`~dualarr.lang.terms.MapAccum` node (horde-ad's
``tmapAccumL``; the paper has no loops).  What the body reads from outside (traced
values of the enclosing program, computed before the loop) becomes the loop's
invariant inputs, so the body is a closed term.

Outside a traced function both run at once on the given arrays (the loop is traced
and evaluated), as JAX's do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optree

from .errors import ShapeError, TracingError
from .program import trace
from .tensor import Tensor, current_trace, ensure_tensor, new_var, param_hints, static_integer
from .terms import (
    FreeVars,
    Iota,
    MapAccum,
    Term,
    Var,
    children,
    loop_outputs,
    postorder,
    rebuild,
    transform,
    type_name,
)

__all__ = ["fori_loop", "scan"]


def scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
) -> tuple[Any, Any]:
    """``(carry, ys)``: ``carry, y = f(carry, x)`` for each row ``x`` of ``xs`` (its
    outer dimension; last row first when ``reverse``), as ``jax.lax.scan``.

    ``length`` is the number of steps when ``xs`` is None (or has no arrays); with
    arrays it must equal their outer dimension.  The body is traced once: a loop of
    10⁴ steps is one node (:class:`~dualarr.lang.terms.MapAccum`)."""
    if not callable(f):
        raise TracingError(f"expected a function, got {type(f).__name__}", op="scan")
    if current_trace() is None:
        return _eager(f, init, xs, length, reverse)
    init_leaves, carry_tree = optree.tree_flatten(init)
    carries = [ensure_tensor(leaf, "scan").term for leaf in init_leaves]
    xs_leaves, xs_tree = optree.tree_flatten(xs)
    xs_terms = [ensure_tensor(leaf, "scan").term for leaf in xs_leaves]
    steps = _length(xs_terms, length)
    carry_hint, x_hint = param_hints(f, 2, "c")
    carry_vars = tuple(new_var("scan", carry_hint, c.shape, c.dtype) for c in carries)
    x_vars = tuple(new_var("scan", x_hint, x.shape[1:], x.dtype) for x in xs_terms)
    carry_in = optree.tree_unflatten(carry_tree, [Tensor(v) for v in carry_vars])
    x_in = optree.tree_unflatten(xs_tree, [Tensor(v) for v in x_vars]) if xs is not None else None
    result = f(carry_in, x_in)
    if not isinstance(result, tuple | list) or len(result) != 2:
        raise TracingError(
            f"the body must return a pair (carry, y), got {type(result).__name__}", op="scan"
        )
    new_carry, y = result
    out_leaves, out_tree = optree.tree_flatten(new_carry)
    if out_tree != carry_tree:
        raise TracingError(
            f"the body must return a carry of the same structure as init: got {out_tree}, "
            f"init is {carry_tree}",
            op="scan",
        )
    carry_outs = [ensure_tensor(leaf, "scan").term for leaf in out_leaves]
    for k, (out, var) in enumerate(zip(carry_outs, carry_vars, strict=True)):
        if out.shape != var.shape or out.dtype != var.dtype:
            raise TracingError(
                f"carry {k} enters the body as {type_name(var.shape, var.dtype)} and leaves "
                f"it as {type_name(out.shape, out.dtype)}: a carry keeps its type "
                "(convert it with astype)",
                op="scan",
            )
    y_leaves, y_tree = optree.tree_flatten(y)
    ys = [ensure_tensor(leaf, "scan").term for leaf in y_leaves]
    binders = (*carry_vars, *x_vars)
    const_vars, consts, body = _lift_invariants([*carry_outs, *ys], binders)
    loop = MapAccum(
        steps,
        bool(reverse),
        carry_vars,
        x_vars,
        const_vars,
        tuple(carries),
        tuple(xs_terms),
        consts,
        body,
    )
    results = [Tensor(t) for t in loop_outputs(loop)]
    return (
        optree.tree_unflatten(carry_tree, results[: len(carries)]),
        optree.tree_unflatten(y_tree, results[len(carries) :]),
    )


def fori_loop(lower: int, upper: int, body: Callable[[Any, Any], Any], init: Any) -> Any:
    """``body(i, carry)`` for ``i`` from ``lower`` to ``upper - 1``: the final carry, as
    ``jax.lax.fori_loop`` with static bounds (a ``scan`` over the step numbers)."""
    start = static_integer(lower, "fori_loop", "lower")
    stop = static_integer(upper, "fori_loop", "upper")
    if not callable(body):
        raise TracingError(f"expected a function, got {type(body).__name__}", op="fori_loop")
    steps = max(stop - start, 0)
    if current_trace() is None:
        final, _ = _eager(
            lambda c, i: (body(i, c), None), init, np.arange(start, start + steps), None, False
        )
        return final
    numbers: Tensor = Tensor(Iota(steps))
    if start:
        numbers = numbers + start
    carry, _ = scan(lambda c, i: (body(i, c), None), init, numbers)
    return carry


def _length(xs: Sequence[Term], length: int | None) -> int:
    if length is not None:
        length = static_integer(length, "scan", "length")
        if length < 0:
            raise ShapeError(f"length must be >= 0, got {length}", op="scan")
    for k, x in enumerate(xs):
        if not x.shape:
            raise ShapeError(
                f"xs {k} is a scalar; each xs needs an outer dimension to scan over",
                op="scan",
                shapes=[x.shape],
            )
        if length is None:
            length = x.shape[0]
        elif x.shape[0] != length:
            raise ShapeError(
                f"xs {k} has {x.shape[0]} rows, but the loop has {length} steps "
                "(every xs has the same outer dimension, equal to length when given)",
                op="scan",
                shapes=[x.shape for x in xs],
            )
    if length is None:
        raise ShapeError("needs xs or length to know how many steps to run", op="scan")
    return length


def _lift_invariants(
    body: Sequence[Term], binders: Sequence[Var]
) -> tuple[tuple[Var, ...], tuple[Term, ...], tuple[Term, ...]]:
    """Close the body: each largest subterm that reads values from outside the loop and
    none of its binders (nor any variable bound inside it) becomes a loop invariant,
    bound to a new variable of the body and computed once, before the loop."""
    free = FreeVars()
    outside = frozenset().union(*(free(t) for t in body)).difference(binders)
    if not outside:
        return (), (), tuple(body)

    def liftable(node: Term) -> bool:
        found = free(node)
        return bool(found) and found <= outside

    chosen: dict[Term, Var] = {}
    for node in postorder(body):
        if liftable(node):
            continue
        for kid in children(node):
            if liftable(kid) and kid not in chosen:
                chosen[kid] = _invariant_var(kid)
    for root in body:
        if liftable(root) and root not in chosen:
            chosen[root] = _invariant_var(root)

    def replace(node: Term, kids: tuple[Term, ...]) -> Term:
        found = chosen.get(node)
        return found if found is not None else rebuild(node, kids)

    closed = transform(body, replace)
    return tuple(chosen.values()), tuple(chosen), tuple(closed)


def _invariant_var(term: Term) -> Var:
    hint = term.hint if isinstance(term, Var) else "k"
    return new_var("scan", hint, term.shape, term.dtype)


def _eager(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any,
    length: int | None,
    reverse: bool,
) -> tuple[Any, Any]:
    """``scan`` outside a trace: the loop traced over the given arrays and evaluated."""
    init_leaves, carry_tree = optree.tree_flatten(init)
    xs_leaves, xs_tree = optree.tree_flatten(xs)
    arrays = [np.asarray(leaf) for leaf in (*init_leaves, *xs_leaves)]
    count = len(init_leaves)
    trees: list[Any] = []

    def program(*leaves: Tensor) -> tuple[Tensor, ...]:
        carry = optree.tree_unflatten(carry_tree, list(leaves[:count]))
        rows = optree.tree_unflatten(xs_tree, list(leaves[count:])) if xs is not None else None
        final, ys = scan(f, carry, rows, length, reverse)
        carry_leaves, _ = optree.tree_flatten(final)
        y_leaves, y_tree = optree.tree_flatten(ys)
        trees.append(y_tree)
        return (*carry_leaves, *y_leaves)

    traced = trace(program, *arrays)
    values = traced(*arrays)
    values = list(values) if isinstance(values, tuple | list) else [values]
    return (
        optree.tree_unflatten(carry_tree, values[:count]),
        optree.tree_unflatten(trees[-1], values[count:]),
    )

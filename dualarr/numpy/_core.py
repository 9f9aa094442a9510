"""What every ``dualarr.numpy`` function shares: eager calls on arrays, axes, operands.

A ``dnp`` function traces: on traced values it builds core terms (paper Fig. 7) like any
``da`` function.  Called on NumPy arrays outside any trace it runs now, as ``jax.numpy``
does: the call is traced on constants and the term evaluated by the reference evaluator.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np
import optree

from ..lang.errors import ShapeError
from ..lang.program import fresh_results
from ..lang.tensor import (
    NumpyCall,
    Tensor,
    TraceContext,
    as_term,
    current_trace,
    enter_trace,
    exit_trace,
    indexing_rule,
)
from ..lang.terms import IdSupply, view

__all__ = ["normalize_axes", "normalize_axis", "numpy_function", "to_tensor"]

P = ParamSpec("P")
R = TypeVar("R")


def numpy_function(fn: Callable[P, R]) -> Callable[P, R]:
    """Mark ``fn`` as a ``dualarr.numpy`` function: traced inside a trace, evaluated now
    (on constants) outside one.  The wrapper keeps ``fn``'s name and signature."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        context = current_trace()
        if context is None:
            result: R = _eager(fn, args, kwargs)
            return result
        context.numpy_depth += 1
        try:
            with indexing_rule(total=False):  # NumPy's indexing, even inside a build
                traced = fn(*args, **kwargs)
        finally:
            context.numpy_depth -= 1
        if context.numpy_depth == 0:  # the user's own call, not one inside dnp
            _record(context, fn.__name__, args, kwargs, traced)
        return traced

    return wrapper


def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor)


def _as_written(tree: Any) -> Any:
    """``tree`` with each traced value replaced by its term."""
    return optree.tree_map(
        lambda v: v.term if isinstance(v, Tensor) else v, tree, is_leaf=_is_tensor
    )


def _record(
    context: TraceContext, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
) -> None:
    leaves: list[Any] = optree.tree_leaves(result, is_leaf=_is_tensor)
    results = tuple(leaf.term for leaf in leaves if isinstance(leaf, Tensor))
    if not results:
        return
    written = tuple(_as_written(a) for a in args)
    named = tuple((k, _as_written(v)) for k, v in kwargs.items())
    context.numpy_calls.append(NumpyCall(name, written, named, results))


def _eager(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    token = enter_trace(TraceContext(IdSupply()))
    try:
        result = fn(*args, **kwargs)
    finally:
        exit_trace(token)
    leaves, tree = optree.tree_flatten(result, is_leaf=lambda x: isinstance(x, Tensor))
    tensors = [k for k, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
    values = view("evaluate")([leaves[k].term for k in tensors], {})
    leaves_in: list[Any] = optree.tree_leaves(args)  # type: ignore[arg-type]
    inputs = [a for a in leaves_in if isinstance(a, np.ndarray)]
    fresh = fresh_results([np.asarray(value) for value in values], inputs)
    for k, value in zip(tensors, fresh, strict=True):  # no result aliases another
        leaves[k] = value
    return optree.tree_unflatten(tree, leaves)


def to_tensor(value: Any, op: str) -> Tensor:
    """A :class:`Tensor` for a Tensor, a number, a NumPy array or a (nested) list or
    tuple, which may hold traced values (stacked as ``numpy.asarray`` does, inside a
    ``dnp`` function: :func:`~dualarr.lang.tensor.as_term`)."""
    if isinstance(value, Tensor):
        return value
    return Tensor(as_term(value, op))


def normalize_axis(axis: Any, ndim: int, op: str, what: str = "axis") -> int:
    """``axis`` in ``[-ndim, ndim)`` as a non-negative int (NumPy's ``AxisError`` as a
    :class:`ShapeError`)."""
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer):
        raise ShapeError(f"{what} must be an int, got {axis!r}", op=op)
    if not -ndim <= axis < ndim:
        raise ShapeError(
            f"{what} {int(axis)} is out of bounds for an array of dimension {ndim}", op=op
        )
    return int(axis) % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int, op: str) -> tuple[int, ...]:
    """``None`` (every axis), an int or a sequence of distinct ints, as sorted
    non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    items: Sequence[Any] = axis if isinstance(axis, tuple | list) else (axis,)
    axes = tuple(normalize_axis(a, ndim, op) for a in items)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"repeated axis in {tuple(items)}", op=op)
    return tuple(sorted(axes))

"""``da.vmap``: a vectorising map written with ``build1`` and removed by the bot (§5).

``vmap(f)(xs)`` means ``build1 n (λi. f(xs[i]))``.  Inside a traced function it builds
exactly that term (so vmaps nest, and the bot of the enclosing pipeline vectorises
them); called on arrays (:func:`dualarr.api.vmap`) it is traced, the bot and the
simplifier run, and the resulting bulk program, which contains no loop over the mapped
dimension, is evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optree

from ..lang.errors import DualarrError, ShapeError, TracingError
from ..lang.functions import transpose
from ..lang.tensor import Tensor, ensure_tensor, indexing_rule, new_var
from ..lang.terms import Build1, DType


def _axis(value: Any) -> bool:
    return value is None or (isinstance(value, int | np.integer) and not isinstance(value, bool))


def _axes(in_axes: Any, count: int) -> list[int | None]:
    """One mapped axis (or None) per argument, from ``in_axes`` as ``jax.vmap`` takes it
    for array arguments: an int, None, or a tuple/list with one of those per argument."""
    if _axis(in_axes):
        return [None if in_axes is None else int(in_axes)] * count
    if not isinstance(in_axes, tuple | list) or not all(_axis(a) for a in in_axes):
        raise DualarrError(
            f"in_axes must be an int, None, or a tuple of ints and Nones (one per "
            f"argument), got {in_axes!r}",
            op="vmap",
        )
    axes = [None if a is None else int(a) for a in in_axes]
    if len(axes) != count:
        raise TracingError(
            f"in_axes has {len(axes)} entries for {count} arguments", op="vmap"
        )
    return axes


def mapped_term(
    f: Callable[..., Any], in_axes: int | Sequence[int | None] | None = 0
) -> Callable[..., Any]:
    """``f`` mapped over axis ``in_axes`` of its arguments (None: not mapped) as a term
    of the running trace: ``build1 n (λi. f(xs[i]))``, one per leaf of ``f``'s result.
    Keyword arguments pass through to ``f`` unmapped.  (:func:`dualarr.api.vmap` runs
    it on arrays.)"""
    if not callable(f):
        raise DualarrError(f"expected a function, got {type(f).__name__}", op="vmap")
    _axes(in_axes, len(in_axes) if isinstance(in_axes, tuple | list) else 1)

    def mapped(*args: Any, **kwargs: Any) -> Any:
        axes = _axes(in_axes, len(args))
        tensors = [ensure_tensor(a, "vmap") for a in args]
        sizes = set()
        moved: list[Tensor] = []
        for t, axis in zip(tensors, axes, strict=True):
            if axis is None:
                moved.append(t)
                continue
            rank = len(t.shape)
            if not -rank <= axis < rank:
                raise ShapeError(
                    f"in_axes {axis} is out of range for an argument of shape {list(t.shape)}",
                    op="vmap",
                    shapes=[t.shape],
                )
            axis %= rank
            sizes.add(t.shape[axis])
            perm = [axis, *[d for d in range(rank) if d != axis]]
            moved.append(transpose(t, perm))
        if len(sizes) != 1:
            raise ShapeError(
                f"mapped axes must have one size, got {sorted(sizes) or 'none'}", op="vmap"
            )
        (n,) = sizes

        # f is traced once, its index variable shared by one build1 per leaf of its
        # result: the bot vectorises them together, so what the leaves share (a loop,
        # say) is vectorised and computed once
        var = new_var("vmap", "i", (), DType.INT64)
        i = Tensor(var)
        with indexing_rule(total=True):  # as build1's body
            picked = [t if axis is None else t[i] for t, axis in zip(moved, axes, strict=True)]
            with indexing_rule(total=False):  # f's indexing is NumPy's, as unmapped
                leaves, tree = optree.tree_flatten(f(*picked, **kwargs))
            bodies = [ensure_tensor(leaf, "vmap").term for leaf in leaves]
        if not bodies:
            raise TracingError("the mapped function returned no array", op="vmap")
        return optree.tree_unflatten(tree, [Tensor(Build1(n, var, body)) for body in bodies])

    mapped.__name__ = f"vmap({getattr(f, '__name__', 'f')})"
    return mapped

"""``da.vmap``: a vectorising map written with ``build1`` and removed by the bot (§5).

``vmap(f)(xs)`` means ``build1 n (λi. f(xs[i]))``.  Inside a traced function it builds
exactly that term (so vmaps nest, and the bot of the enclosing pipeline vectorises
them); called on arrays it traces, runs the bot and the simplifier and evaluates the
resulting bulk program, which contains no loop over the mapped dimension.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .errors import ShapeError, TracingError
from .lang import build1, transpose
from .tensor import _CURRENT, Tensor, ensure_tensor


def _axes(in_axes: int | Sequence[int | None] | None, count: int) -> list[int | None]:
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes] * count
    axes = list(in_axes)
    if len(axes) != count:
        raise TracingError(
            f"in_axes has {len(axes)} entries for {count} arguments", op="vmap"
        )
    return axes


def vmap(
    f: Callable[..., Any], in_axes: int | Sequence[int | None] | None = 0
) -> Callable[..., Any]:
    """Map ``f`` over axis ``in_axes`` of its arguments (None: not mapped), like ``jax.vmap``."""

    def mapped(*args: Any) -> Any:
        if _CURRENT.get() is None:
            return _eager(mapped, args)
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

        outputs: list[int | None] = []

        def row(k: int) -> Callable[[Tensor], Any]:
            def body(i: Tensor) -> Any:
                picked = [t if axis is None else t[i] for t, axis in zip(moved, axes, strict=True)]
                out = f(*picked)
                several = isinstance(out, tuple | list)
                if k == 0:
                    outputs.append(len(out) if several else None)
                return out[k] if several else out

            return body

        first = build1(n, row(0))
        if outputs[0] is None:
            return first
        # a function returning a tuple is mapped once per output
        return (first, *(build1(n, row(k)) for k in range(1, outputs[0])))

    mapped.__name__ = f"vmap({getattr(f, '__name__', 'f')})"
    return mapped


def _eager(mapped: Callable[..., Any], args: Sequence[Any]) -> Any:
    from .evaluate import Evaluator
    from .pipeline import vectorise_program
    from .program import trace

    program = trace(mapped, *args)
    vectorised, _ = vectorise_program(program)
    values = Evaluator().run(list(vectorised.outputs), vectorised.bind(*args))
    if vectorised.tuple_output:
        return tuple(values)
    return values[0]


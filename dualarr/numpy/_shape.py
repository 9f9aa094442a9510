"""Shape manipulation: reshaping, joining, splitting, tiling, rolling, padding, diagonals.

Each function lowers to the core language (paper Fig. 7) at trace time: ``reshape``,
``tr``, ``replicate`` (broadcasting), ``fromList`` (stacking), ``gather`` with a static
index function (slices, ``roll``'s modular index ``(i + n - s) % n``, ``repeat``'s
``i // r`` or a constant index array, ``tile``'s ``i % n``, ``pad``'s edge/reflect/wrap
index arrays, diagonals), ``scatter`` (``diag`` of a vector) and ``where`` on constant
or ``iota``-grid masks (``tril``/``triu``, constant padding).  Static arguments (axes,
shifts, repeats, pad widths, ``k``) are Python ints, checked while tracing; a bad one is
a :class:`ShapeError` (or :class:`UnsupportedError`) naming the NumPy function.
"""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ..lang import functions as F
from ..lang.errors import ShapeError, UnsupportedError
from ..lang.tensor import Operand, Tensor, broadcast_shapes
from ..lang.terms import DType
from ._core import normalize_axes, normalize_axis, numpy_function
from ._creation import (
    arange,
    astype,
    broadcast,
    core_dtype,
    index_grid,
    linspace,
    numpy_dtype_of,
    result_dtype,
    static_int_arg,
    static_shape,
    to_array,
)

__all__ = [
    "array_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_arrays",
    "broadcast_to",
    "c_",
    "column_stack",
    "concatenate",
    "diag",
    "diagflat",
    "diagonal",
    "dsplit",
    "dstack",
    "expand_dims",
    "flip",
    "fliplr",
    "flipud",
    "hsplit",
    "hstack",
    "moveaxis",
    "pad",
    "r_",
    "ravel",
    "repeat",
    "reshape",
    "roll",
    "rot90",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "tile",
    "trace",
    "transpose",
    "tril",
    "triu",
    "vsplit",
    "vstack",
]

IndexMap = Callable[[Tensor], Any]
"""A static index function over one axis: result position (a traced int) → source
position (a traced int, or a Python int)."""


def _tensor(a: Operand, op: str) -> Tensor:
    return to_array(a, None, op)


def _axis_list(axis: Any, ndim: int, op: str, what: str = "axis") -> list[int]:
    """An int or a sequence of distinct ints as non-negative axes, in the given order."""
    items: Sequence[Any] = axis if isinstance(axis, tuple | list) else (axis,)
    axes = [normalize_axis(a, ndim, op, what) for a in items]
    if len(set(axes)) != len(axes):
        raise ShapeError(f"repeated {what} in {tuple(items)}", op=op)
    return axes


def _gather_axes(t: Tensor, sizes: dict[int, int], maps: dict[int, IndexMap]) -> Tensor:
    """One ``gather``: result axis ``d`` has extent ``sizes[d]`` and reads source
    position ``maps[d](i_d)``; other axes read ``i_d``.  The index covers the axes up
    to the last mapped one; the rest is the gather's tail."""
    if not maps:
        return t
    last = max(maps)
    outer = tuple(sizes.get(d, t.shape[d]) for d in range(last + 1))

    def index(*ix: Tensor) -> tuple[Any, ...]:
        return tuple(maps[d](v) if d in maps else v for d, v in enumerate(ix))

    return F.gather(outer, t, index)


def _shifted(offset: int) -> IndexMap:
    """``λi. i + offset``."""
    return lambda i: i + offset


def _modular(n: int, offset: int = 0) -> IndexMap:
    """``λi. (i + offset) % n`` (``0`` when ``n == 1``)."""
    if n == 1:
        return lambda i: 0
    if offset == 0:
        return lambda i: i % n
    return lambda i: (i + offset) % n


def _constant_map(positions: np.ndarray) -> IndexMap:
    """The index map reading a constant int array: ``λi. c[i]``."""
    table = F.constant(np.asarray(positions, dtype=np.int64))
    return lambda i: F.index(table, (i,))


def _as_common(tensors: list[Tensor], dtype: DTypeLike | None, op: str) -> list[Tensor]:
    """The arrays converted to NumPy's common element type (or ``dtype``)."""
    target = result_dtype(tensors, op) if dtype is None else core_dtype(dtype, op)
    return [astype(t, target, op) for t in tensors]


# --------------------------------------------------------------------------------------
# Reshaping and permuting axes
# --------------------------------------------------------------------------------------


@numpy_function
def reshape(a: Operand, shape: int | Sequence[int]) -> Tensor:
    """``a`` in a new shape, row-major (one dimension may be -1): ``reshape``."""
    op = "numpy.reshape"
    t = _tensor(a, op)
    items = list(shape) if isinstance(shape, Sequence) else [shape]
    for d in items:
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < -1:
            raise ShapeError(f"shape must hold ints >= -1, got {shape!r}", op=op)
    if items.count(-1) > 1:
        raise ShapeError("can only specify one unknown dimension (-1)", op=op)
    known = math.prod(int(d) for d in items if d != -1)
    if -1 in items:
        if known == 0 or t.size % known:
            raise ShapeError(f"cannot reshape array of shape {t.shape} into {shape!r}", op=op)
        items[items.index(-1)] = t.size // known
    elif known != t.size:
        raise ShapeError(f"cannot reshape array of shape {t.shape} into {shape!r}", op=op)
    return F.reshape(t, tuple(int(d) for d in items))


@numpy_function
def ravel(a: Operand) -> Tensor:
    """``a`` flattened, row-major: ``reshape [size]``."""
    t = _tensor(a, "numpy.ravel")
    return F.reshape(t, (t.size,))


@numpy_function
def transpose(a: Operand, axes: Sequence[int] | None = None) -> Tensor:
    """``a`` with its axes permuted (reversed by default): ``tr``."""
    op = "numpy.transpose"
    t = _tensor(a, op)
    if axes is None:
        return F.transpose(t)
    perm = _axis_list(axes, t.ndim, op)
    if len(perm) != t.ndim:
        raise ShapeError(f"axes {axes!r} don't match an array of {t.ndim} dimensions", op=op)
    return F.transpose(t, perm)


@numpy_function
def moveaxis(
    a: Operand, source: int | Sequence[int], destination: int | Sequence[int]
) -> Tensor:
    """``a`` with the axes ``source`` moved to ``destination``: ``tr``."""
    op = "numpy.moveaxis"
    t = _tensor(a, op)
    src = _axis_list(source, t.ndim, op, "source")
    dst = _axis_list(destination, t.ndim, op, "destination")
    if len(src) != len(dst):
        raise ShapeError(
            "source and destination must have the same number of elements", op=op
        )
    order = [d for d in range(t.ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return F.transpose(t, order)


@numpy_function
def swapaxes(a: Operand, axis1: int, axis2: int) -> Tensor:
    """``a`` with two axes interchanged: ``tr``."""
    op = "numpy.swapaxes"
    t = _tensor(a, op)
    i, j = normalize_axis(axis1, t.ndim, op, "axis1"), normalize_axis(axis2, t.ndim, op, "axis2")
    perm = list(range(t.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return F.transpose(t, perm)


@numpy_function
def squeeze(a: Operand, axis: int | Sequence[int] | None = None) -> Tensor:
    """``a`` without its size-1 axes (or the given ones, which must have size 1):
    ``reshape``."""
    op = "numpy.squeeze"
    t = _tensor(a, op)
    if axis is None:
        drop = {d for d, n in enumerate(t.shape) if n == 1}
    else:
        drop = set(normalize_axes(axis, t.ndim, op))
        for d in drop:
            if t.shape[d] != 1:
                raise ShapeError(
                    f"cannot select axis {d} to squeeze out: it has size {t.shape[d]}, not 1",
                    op=op,
                    shapes=[t.shape],
                )
    return F.reshape(t, tuple(n for d, n in enumerate(t.shape) if d not in drop))


@numpy_function
def expand_dims(a: Operand, axis: int | Sequence[int]) -> Tensor:
    """``a`` with new size-1 axes at the positions ``axis`` of the result: ``reshape``."""
    op = "numpy.expand_dims"
    t = _tensor(a, op)
    items = axis if isinstance(axis, tuple | list) else (axis,)
    new = set(normalize_axes(axis, t.ndim + len(items), op))
    rest = iter(t.shape)
    return F.reshape(t, tuple(1 if d in new else next(rest) for d in range(t.ndim + len(new))))


def _atleast(arys: tuple[Operand, ...], ndim: int, op: str) -> Tensor | tuple[Tensor, ...]:
    results: list[Tensor] = []
    for a in arys:
        t = _tensor(a, op)
        if t.ndim < ndim:
            shape: tuple[int, ...]
            if ndim == 3 and t.ndim == 2:
                shape = (*t.shape, 1)
            elif ndim == 3 and t.ndim == 1:
                shape = (1, *t.shape, 1)
            else:
                shape = (1,) * (ndim - t.ndim) + t.shape
            t = F.reshape(t, shape)
        results.append(t)
    return results[0] if len(results) == 1 else tuple(results)


@numpy_function
def atleast_1d(*arys: Operand) -> Tensor | tuple[Tensor, ...]:
    """Each argument with at least one dimension (``reshape``); one array or a tuple."""
    return _atleast(arys, 1, "numpy.atleast_1d")


@numpy_function
def atleast_2d(*arys: Operand) -> Tensor | tuple[Tensor, ...]:
    """Each argument with at least two dimensions (a vector becomes a row)."""
    return _atleast(arys, 2, "numpy.atleast_2d")


@numpy_function
def atleast_3d(*arys: Operand) -> Tensor | tuple[Tensor, ...]:
    """Each argument with at least three dimensions (``[n]`` → ``[1,n,1]``, ``[m,n]``
    → ``[m,n,1]``)."""
    return _atleast(arys, 3, "numpy.atleast_3d")


@numpy_function
def broadcast_to(array: Operand, shape: int | Sequence[int]) -> Tensor:
    """``array`` broadcast to ``shape`` by NumPy's rules: the stretched size-1 axes
    dropped (``reshape``), new axes added (``replicate``) and put in place (``tr``)."""
    op = "numpy.broadcast_to"
    return broadcast(_tensor(array, op), static_shape(shape, op), op)


@numpy_function
def broadcast_arrays(*args: Operand) -> tuple[Tensor, ...]:
    """The arguments broadcast against each other (:func:`broadcast_to` each)."""
    op = "numpy.broadcast_arrays"
    tensors = [_tensor(a, op) for a in args]
    shape = broadcast_shapes(op, [t.shape for t in tensors])
    return tuple(broadcast(t, shape, op) for t in tensors)


# --------------------------------------------------------------------------------------
# Joining
# --------------------------------------------------------------------------------------


def _sequence(arrays: Any, op: str) -> list[Tensor]:
    if isinstance(arrays, Tensor) or not isinstance(arrays, Sequence | np.ndarray):
        if isinstance(arrays, Tensor) and arrays.ndim > 0:
            return list(arrays)
        raise ShapeError("expects a sequence of arrays", op=op)
    tensors = [_tensor(a, op) for a in arrays]
    if not tensors:
        raise ShapeError("needs at least one array", op=op)
    return tensors


def _join(tensors: list[Tensor], axis: int, dtype: DTypeLike | None, op: str) -> Tensor:
    """``tensors`` (of one rank) concatenated along ``axis`` (gathers that read out of
    range outside their slot, added; bools joined as ints and compared with 0)."""
    ndim = tensors[0].ndim
    if ndim == 0:
        raise ShapeError("zero-dimensional arrays cannot be concatenated", op=op)
    for t in tensors[1:]:
        if t.ndim != ndim:
            raise ShapeError(
                "all the input arrays must have the same number of dimensions, got shapes "
                + ", ".join(str(s.shape) for s in tensors),
                op=op,
                shapes=[s.shape for s in tensors],
            )
    ax = normalize_axis(axis, ndim, op)
    rest = {t.shape[:ax] + t.shape[ax + 1 :] for t in tensors}
    if len(rest) != 1:
        raise ShapeError(
            f"the input arrays must match except along axis {ax}, got shapes "
            + ", ".join(str(s.shape) for s in tensors),
            op=op,
            shapes=[s.shape for s in tensors],
        )
    parts = _as_common(tensors, dtype, op)
    if len(parts) == 1:
        return parts[0]
    if parts[0].term.dtype is DType.BOOL:
        ints = [astype(p, DType.INT64, op) for p in parts]
        return F.concatenate(ints, ax) != 0
    return F.concatenate(parts, ax)


@numpy_function
def concatenate(
    arrays: Sequence[Operand], axis: int | None = 0, *, dtype: DTypeLike | None = None
) -> Tensor:
    """Join arrays along an existing axis (flattened first when ``axis`` is None): each
    part is a ``gather`` into its slot (out of range, hence 0, elsewhere), added."""
    op = "numpy.concatenate"
    tensors = _sequence(arrays, op)
    if axis is None:
        tensors = [F.reshape(t, (t.size,)) for t in tensors]
        axis = 0
    return _join(tensors, axis, dtype, op)


@numpy_function
def stack(
    arrays: Sequence[Operand], axis: int = 0, *, dtype: DTypeLike | None = None
) -> Tensor:
    """Join arrays of one shape along a new axis: ``fromList`` then ``tr``."""
    op = "numpy.stack"
    tensors = _sequence(arrays, op)
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ShapeError(
            "all input arrays must have the same shape, got "
            + ", ".join(str(t.shape) for t in tensors),
            op=op,
            shapes=[t.shape for t in tensors],
        )
    ax = normalize_axis(axis, tensors[0].ndim + 1, op)
    return F.stack(_as_common(tensors, dtype, op), ax)


@numpy_function
def vstack(tup: Sequence[Operand], *, dtype: DTypeLike | None = None) -> Tensor:
    """Join arrays row-wise (vectors become rows): :func:`concatenate` on axis 0."""
    op = "numpy.vstack"
    parts = [_atleast((t,), 2, op) for t in _sequence(tup, op)]
    return _join([p for p in parts if isinstance(p, Tensor)], 0, dtype, op)


@numpy_function
def hstack(tup: Sequence[Operand], *, dtype: DTypeLike | None = None) -> Tensor:
    """Join arrays column-wise: on axis 0 for vectors, else on axis 1."""
    op = "numpy.hstack"
    parts = [_atleast((t,), 1, op) for t in _sequence(tup, op)]
    tensors = [p for p in parts if isinstance(p, Tensor)]
    return _join(tensors, 0 if tensors[0].ndim == 1 else 1, dtype, op)


@numpy_function
def dstack(tup: Sequence[Operand]) -> Tensor:
    """Join arrays along the third axis (after :func:`atleast_3d`)."""
    op = "numpy.dstack"
    parts = [_atleast((t,), 3, op) for t in _sequence(tup, op)]
    return _join([p for p in parts if isinstance(p, Tensor)], 2, None, op)


@numpy_function
def column_stack(tup: Sequence[Operand]) -> Tensor:
    """Join vectors as columns (and 2-D arrays as they are) along axis 1."""
    op = "numpy.column_stack"
    tensors = []
    for t in _sequence(tup, op):
        if t.ndim < 2:
            t = F.reshape(t, (t.size, 1))
        tensors.append(t)
    return _join(tensors, 1, None, op)


# --------------------------------------------------------------------------------------
# Splitting
# --------------------------------------------------------------------------------------


def _slice_axis(t: Tensor, axis: int, start: int, stop: int) -> Tensor:
    """``t[..., start:stop, ...]`` on ``axis`` (Python's slice rules): a ``gather``."""
    begin, end, _ = slice(start, stop).indices(t.shape[axis])
    length = max(0, end - begin)
    if (begin, length) == (0, t.shape[axis]):
        return t
    return _gather_axes(t, {axis: length}, {axis: _shifted(begin)})


def _split(ary: Operand, sections: Any, axis: int, op: str, *, equal: bool) -> list[Tensor]:
    t = _tensor(ary, op)
    if t.ndim == 0:
        raise ShapeError("cannot split a zero-dimensional array", op=op)
    ax = normalize_axis(axis, t.ndim, op)
    n = t.shape[ax]
    bounds: list[tuple[int, int]]
    if isinstance(sections, int | np.integer) and not isinstance(sections, bool):
        count = int(sections)
        if count <= 0:
            raise ShapeError("number of sections must be larger than 0", op=op)
        if equal and n % count:
            raise ShapeError(
                f"array split does not result in an equal division ({n} into {count})",
                op=op,
            )
        each, extra = divmod(n, count)
        sizes = [each + 1] * extra + [each] * (count - extra)
        starts = np.cumsum([0, *sizes])
        bounds = [(int(a), int(b)) for a, b in itertools.pairwise(starts)]
    elif isinstance(sections, Sequence | np.ndarray) and not isinstance(sections, str):
        points = [static_int_arg(p, op, "split index") for p in sections]
        edges = [0, *points, n]
        bounds = list(itertools.pairwise(edges))
    else:
        raise ShapeError(
            f"indices_or_sections must be an int or a sequence of ints, got {sections!r}",
            op=op,
        )
    return [_slice_axis(t, ax, a, b) for a, b in bounds]


@numpy_function
def split(
    ary: Operand, indices_or_sections: int | Sequence[int], axis: int = 0
) -> list[Tensor]:
    """``ary`` cut into equal sections (an int) or at static indices, along ``axis``:
    one slicing ``gather`` per piece."""
    return _split(ary, indices_or_sections, axis, "numpy.split", equal=True)


@numpy_function
def array_split(
    ary: Operand, indices_or_sections: int | Sequence[int], axis: int = 0
) -> list[Tensor]:
    """As :func:`split`, but ``k`` sections need not divide the axis (the first ones
    are one longer)."""
    return _split(ary, indices_or_sections, axis, "numpy.array_split", equal=False)


def _split_from_rank(
    name: str, ary: Operand, indices_or_sections: int | Sequence[int], rank: int, axis: int
) -> list[Tensor]:
    """``split`` along ``axis`` of an array of rank at least ``rank`` (the h/v/d forms)."""
    op = f"numpy.{name}"
    t = _tensor(ary, op)
    if t.ndim < rank:
        raise ShapeError(f"{name} only works on arrays of {rank} or more dimensions", op=op)
    return _split(t, indices_or_sections, axis, op, equal=True)


@numpy_function
def hsplit(ary: Operand, indices_or_sections: int | Sequence[int]) -> list[Tensor]:
    """:func:`split` along axis 1 (axis 0 for vectors)."""
    axis = 1 if _tensor(ary, "numpy.hsplit").ndim > 1 else 0
    return _split_from_rank("hsplit", ary, indices_or_sections, 1, axis)


@numpy_function
def vsplit(ary: Operand, indices_or_sections: int | Sequence[int]) -> list[Tensor]:
    """:func:`split` along axis 0 of an array of rank >= 2."""
    return _split_from_rank("vsplit", ary, indices_or_sections, 2, 0)


@numpy_function
def dsplit(ary: Operand, indices_or_sections: int | Sequence[int]) -> list[Tensor]:
    """:func:`split` along axis 2 of an array of rank >= 3."""
    return _split_from_rank("dsplit", ary, indices_or_sections, 3, 2)


# --------------------------------------------------------------------------------------
# Repeating, tiling, rolling, rotating, flipping
# --------------------------------------------------------------------------------------


@numpy_function
def repeat(a: Operand, repeats: int | Sequence[int], axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (the flattened array when
    None): a ``gather`` reading ``i // r``, or a constant index array for per-element
    repeats."""
    op = "numpy.repeat"
    t = _tensor(a, op)
    if axis is None:
        t, ax = F.reshape(t, (t.size,)), 0
    else:
        ax = normalize_axis(axis, t.ndim, op)
    if isinstance(repeats, Tensor):
        raise ShapeError("repeats must be static ints, got a traced value", op=op)
    counts = np.asarray(repeats)
    if counts.size == 0 and counts.dtype.kind == "f":
        counts = counts.astype(np.int64)  # [] as repeats for an empty axis
    if counts.dtype.kind not in "iu" or counts.ndim > 1:
        raise ShapeError(f"repeats must be an int or a sequence of ints, got {repeats!r}", op=op)
    if (counts < 0).any():
        raise ShapeError(f"repeats may not contain negative values, got {repeats!r}", op=op)
    n = t.shape[ax]
    if counts.ndim == 1 and counts.size == 1:
        counts = counts.reshape(())
    if counts.ndim == 0:
        r = int(counts)
        if r == 1:
            return t
        if r > 0:
            return _gather_axes(t, {ax: n * r}, {ax: lambda i: i // r})
        counts = np.full(n, r)
    if counts.size != n:
        raise ShapeError(
            f"repeats has {counts.size} entries but axis {ax} has length {n}", op=op
        )
    positions = np.repeat(np.arange(n), counts)
    return _gather_axes(t, {ax: positions.size}, {ax: _constant_map(positions)})


@numpy_function
def tile(A: Operand, reps: int | Sequence[int]) -> Tensor:
    """``A`` repeated ``reps`` times along each axis: one ``gather`` reading ``i % n``."""
    op = "numpy.tile"
    t = _tensor(A, op)
    counts = [reps] if isinstance(reps, int | np.integer) else list(reps)
    counts_int = [static_int_arg(r, op, "reps", minimum=0) for r in counts]
    rank = max(len(counts_int), t.ndim)
    counts_int = [1] * (rank - len(counts_int)) + counts_int
    t = F.reshape(t, (1,) * (rank - t.ndim) + t.shape)
    sizes: dict[int, int] = {}
    maps: dict[int, IndexMap] = {}
    for d, (n, r) in enumerate(zip(t.shape, counts_int, strict=True)):
        if r == 1:
            continue
        sizes[d] = n * r
        maps[d] = _modular(n)
    return _gather_axes(t, sizes, maps)


def _broadcast_static(shift: Any, axis: Any, op: str) -> list[tuple[int, int]]:
    if isinstance(shift, Tensor) or isinstance(axis, Tensor):
        raise ShapeError("shift and axis must be static ints, got a traced value", op=op)
    shifts = np.asarray(shift)
    axes = np.asarray(axis)
    if shifts.dtype.kind not in "iu":
        raise ShapeError(f"shift must be an int or a sequence of ints, got {shift!r}", op=op)
    if axes.dtype.kind not in "iu":
        raise ShapeError(f"axis must be an int or a sequence of ints, got {axis!r}", op=op)
    try:
        pairs = np.broadcast(shifts, axes)
    except ValueError:
        raise ShapeError(
            f"shift {shift!r} and axis {axis!r} do not broadcast together", op=op
        ) from None
    return [(int(s), int(x)) for s, x in pairs]


@numpy_function
def roll(a: Operand, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Tensor:
    """``a`` rolled by ``shift`` along ``axis`` (the flattened array when None): one
    ``gather`` reading ``(i + n - s) % n`` on each rolled axis."""
    op = "numpy.roll"
    t = _tensor(a, op)
    if axis is None:
        flat = F.reshape(t, (t.size,))
        total = builtins.sum(s for s, _ in _broadcast_static(shift, 0, op))
        return F.reshape(roll(flat, total, 0), t.shape)
    offsets: dict[int, int] = {}
    for s, x in _broadcast_static(shift, axis, op):
        d = normalize_axis(x, t.ndim, op)
        offsets[d] = offsets.get(d, 0) + s
    maps: dict[int, IndexMap] = {}
    for d, s in offsets.items():
        n = t.shape[d]
        if n and s % n:
            maps[d] = _modular(n, n - s % n)
    return _gather_axes(t, {}, maps)


@numpy_function
def flip(m: Operand, axis: int | Sequence[int] | None = None) -> Tensor:
    """``m`` reversed along ``axis`` (every axis when None): a ``gather`` reading
    ``n - 1 - i``."""
    op = "numpy.flip"
    t = _tensor(m, op)
    if t.ndim == 0 and axis is None:
        return t
    return F.flip(t, normalize_axes(axis, t.ndim, op))


@numpy_function
def fliplr(m: Operand) -> Tensor:
    """``m`` reversed along axis 1 (rank >= 2)."""
    op = "numpy.fliplr"
    t = _tensor(m, op)
    if t.ndim < 2:
        raise ShapeError("input must be >= 2-d", op=op, shapes=[t.shape])
    return F.flip(t, 1)


@numpy_function
def flipud(m: Operand) -> Tensor:
    """``m`` reversed along axis 0 (rank >= 1)."""
    op = "numpy.flipud"
    t = _tensor(m, op)
    if t.ndim < 1:
        raise ShapeError("input must be >= 1-d", op=op, shapes=[t.shape])
    return F.flip(t, 0)


@numpy_function
def rot90(m: Operand, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Tensor:
    """``m`` rotated by ``k`` quarter turns in the plane ``axes`` (from the first axis
    towards the second): flips and a ``tr``."""
    op = "numpy.rot90"
    t = _tensor(m, op)
    turns = static_int_arg(k, op, "k") % 4
    if not isinstance(axes, tuple | list) or len(axes) != 2:
        raise ShapeError(f"axes must be two axes, got {axes!r}", op=op)
    if t.ndim < 2:
        raise ShapeError("needs an array of rank >= 2", op=op, shapes=[t.shape])
    first, second = _axis_list(axes, t.ndim, op, "axes")
    perm = list(range(t.ndim))
    perm[first], perm[second] = perm[second], perm[first]
    if turns == 0:
        return t
    if turns == 2:
        return F.flip(t, (first, second))
    if turns == 1:
        return F.transpose(F.flip(t, second), perm)
    return F.flip(F.transpose(t, perm), second)


# --------------------------------------------------------------------------------------
# Padding
# --------------------------------------------------------------------------------------


def _pairs(value: Any, ndim: int, what: str, op: str, *, ints: bool) -> list[tuple[Any, Any]]:
    """``value`` broadcast to ``(ndim, 2)`` pairs (before, after) per axis."""
    if isinstance(value, Tensor):
        raise UnsupportedError(f"{what} must be static, got a traced value", op=op)
    array = np.asarray(value)
    if ints and array.dtype.kind not in "iu":
        raise ShapeError(f"{what} must hold ints, got {value!r}", op=op)
    if array.dtype == object:
        raise ShapeError(f"{what} must be numbers, got {value!r}", op=op)
    try:
        pairs = np.broadcast_to(array, (ndim, 2))
    except ValueError:
        raise ShapeError(
            f"{what} {value!r} cannot be broadcast to one (before, after) pair per axis "
            f"of {ndim}",
            op=op,
        ) from None
    return [(pairs[d, 0], pairs[d, 1]) for d in range(ndim)]


def _pad_positions(n: int, before: int, after: int, mode: str, op: str) -> np.ndarray:
    """The source position of each result position along one padded axis."""
    j = np.arange(-before, n + after, dtype=np.int64)
    if n == 0:
        raise ShapeError(f"can't extend an empty axis by padding in mode {mode!r}", op=op)
    if mode == "edge":
        return np.asarray(np.clip(j, 0, n - 1), dtype=np.int64)
    if mode == "wrap":
        return np.asarray(np.mod(j, n), dtype=np.int64)
    if mode == "symmetric":
        m = np.mod(j, 2 * n)
        return np.asarray(np.minimum(m, 2 * n - 1 - m), dtype=np.int64)
    # reflect: period 2n - 2, mirrored about the first and last elements
    if n == 1:
        return np.zeros_like(j)
    m = np.mod(j, 2 * n - 2)
    return np.asarray(np.minimum(m, 2 * n - 2 - m), dtype=np.int64)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap", "empty")


@numpy_function
def pad(array: Operand, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Tensor:
    """``array`` padded by ``pad_width`` (per axis (before, after), NumPy's forms).
    Modes: ``"constant"`` (``constant_values``; a ``gather`` that reads out of range,
    hence 0, in the padding, then ``where`` on a constant mask for other values),
    ``"edge"``, ``"reflect"``, ``"symmetric"``, ``"wrap"`` (a ``gather`` with a constant
    index array per axis) and ``"empty"`` (as constant 0)."""
    op = "numpy.pad"
    t = _tensor(array, op)
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise UnsupportedError(
            f"mode {mode!r} is not supported; the supported modes are "
            + ", ".join(repr(m) for m in _PAD_MODES),
            op=op,
        )
    allowed = {"constant": {"constant_values"}, "reflect": {"reflect_type"}}.get(
        mode, set()
    ) | ({"reflect_type"} if mode == "symmetric" else set())
    unknown = set(kwargs) - allowed
    if unknown:
        raise ShapeError(
            f"unsupported keyword arguments for mode {mode!r}: {sorted(unknown)}", op=op
        )
    if kwargs.get("reflect_type", "even") != "even":
        raise UnsupportedError(
            f"reflect_type {kwargs['reflect_type']!r} is not supported (only 'even')", op=op
        )
    widths = [
        (int(b), int(a)) for b, a in _pairs(pad_width, t.ndim, "pad_width", op, ints=True)
    ]
    if any(b < 0 or a < 0 for b, a in widths):
        raise ShapeError(f"pad_width must not hold negative values, got {pad_width!r}", op=op)
    out_shape = tuple(b + n + a for n, (b, a) in zip(t.shape, widths, strict=True))
    padded = {d: out_shape[d] for d, (b, a) in enumerate(widths) if b or a}
    if mode in ("constant", "empty"):
        maps: dict[int, IndexMap] = {d: _shifted(-widths[d][0]) for d in padded}
        result = _gather_axes(t, padded, maps)
        values = kwargs.get("constant_values", 0)
        pairs = _pairs(values, t.ndim, "constant_values", op, ints=False)
        dtype = t.term.dtype.numpy()
        fill = np.zeros(out_shape, dtype=dtype)
        inside = np.ones(out_shape, dtype=bool)
        for d, ((b, a), (vb, va)) in enumerate(zip(widths, pairs, strict=True)):
            lead = (slice(None),) * d
            fill[(*lead, slice(0, b))] = vb
            fill[(*lead, slice(out_shape[d] - a, out_shape[d]))] = va
            inside[(*lead, slice(0, b))] = False
            inside[(*lead, slice(out_shape[d] - a, out_shape[d]))] = False
        if fill.any():
            result = F.where(F.constant(inside), result, F.constant(fill))
        return result
    maps = {
        d: _constant_map(_pad_positions(t.shape[d], *widths[d], mode, op)) for d in padded
    }
    return _gather_axes(t, padded, maps)


# --------------------------------------------------------------------------------------
# Triangles and diagonals
# --------------------------------------------------------------------------------------


def _triangle(m: Operand, k: int, op: str, lower: bool) -> Tensor:
    t = _tensor(m, op)
    kk = static_int_arg(k, op, "k")
    if t.ndim == 0:
        raise ShapeError("needs an array of rank >= 1", op=op, shapes=[t.shape])
    if t.ndim == 1:
        t = broadcast(t, (t.shape[0], t.shape[0]), op)
    rows, cols = index_grid(*t.shape[-2:])
    keep = cols - rows <= kk if lower else cols - rows >= kk
    zero: bool | int = False if t.term.dtype is DType.BOOL else 0
    return F.where(broadcast(keep, t.shape, op), t, zero)


@numpy_function
def tril(m: Operand, k: int = 0) -> Tensor:
    """``m`` with the elements above the ``k``-th diagonal zeroed (on the last two
    axes): ``where`` on an ``iota``-grid mask."""
    return _triangle(m, k, "numpy.tril", lower=True)


@numpy_function
def triu(m: Operand, k: int = 0) -> Tensor:
    """``m`` with the elements below the ``k``-th diagonal zeroed (on the last two
    axes): ``where`` on an ``iota``-grid mask."""
    return _triangle(m, k, "numpy.triu", lower=False)


def _diagonal(t: Tensor, offset: int, axis1: int, axis2: int, op: str) -> Tensor:
    if t.ndim < 2:
        raise ShapeError("needs an array of rank >= 2", op=op, shapes=[t.shape])
    first = normalize_axis(axis1, t.ndim, op, "axis1")
    second = normalize_axis(axis2, t.ndim, op, "axis2")
    if first == second:
        raise ShapeError("axis1 and axis2 cannot be the same", op=op)
    k = static_int_arg(offset, op, "offset")
    rest = [d for d in range(t.ndim) if d not in (first, second)]
    moved = F.transpose(t, [first, second, *rest])
    n, m = moved.shape[0], moved.shape[1]
    row, col = max(-k, 0), max(k, 0)
    length = max(0, min(n - row, m - col))
    diag = F.gather((length,), moved, lambda i: (i + row, i + col))
    return F.transpose(diag, [*range(1, diag.ndim), 0])


@numpy_function
def diagonal(a: Operand, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """The ``offset`` diagonal of the ``(axis1, axis2)`` planes, as the last axis:
    ``tr`` then a ``gather`` reading ``(i + r, i + c)``."""
    op = "numpy.diagonal"
    return _diagonal(_tensor(a, op), offset, axis1, axis2, op)


@numpy_function
def trace(
    a: Operand,
    offset: int = 0,
    axis1: int = 0,
    axis2: int = 1,
    dtype: DTypeLike | None = None,
) -> Tensor:
    """The sum of the ``offset`` diagonal: :func:`diagonal` then ``sumOuter`` (bools
    count as ints), in ``dtype`` when given (the diagonal converted first, as NumPy's
    sum with a ``dtype``: float32 ↔ float64 included)."""
    op = "numpy.trace"
    diag = _diagonal(_tensor(a, op), offset, axis1, axis2, op)
    target = None if dtype is None else core_dtype(dtype, op)
    if target is not None and target is not DType.BOOL:
        diag = astype(diag, target, op)
    total = F.sum(diag, diag.ndim - 1)
    return total if target is None else astype(total, target, op)


def _diag_matrix(v: Tensor, k: int, op: str) -> Tensor:
    n = v.shape[0] + abs(k)
    row, col = max(-k, 0), max(k, 0)
    if v.term.dtype is DType.BOOL:
        return _diag_matrix(astype(v, DType.INT64, op), k, op) != 0
    return F.scatter((n, n), v, lambda i: (i + row, i + col))


@numpy_function
def diag(v: Operand, k: int = 0) -> Tensor:
    """For a vector, the square matrix with ``v`` on its ``k``-th diagonal (a
    ``scatter``); for a matrix, its ``k``-th diagonal (a ``gather``)."""
    op = "numpy.diag"
    t = _tensor(v, op)
    kk = static_int_arg(k, op, "k")
    if t.ndim == 1:
        return _diag_matrix(t, kk, op)
    if t.ndim == 2:
        return _diagonal(t, kk, 0, 1, op)
    raise ShapeError("input must be 1- or 2-d", op=op, shapes=[t.shape])


@numpy_function
def diagflat(v: Operand, k: int = 0) -> Tensor:
    """The square matrix with the flattened ``v`` on its ``k``-th diagonal."""
    op = "numpy.diagflat"
    t = _tensor(v, op)
    return _diag_matrix(F.reshape(t, (t.size,)), static_int_arg(k, op, "k"), op)


# --------------------------------------------------------------------------------------
# r_ and c_
# --------------------------------------------------------------------------------------


def _slice_range(item: slice, op: str) -> Tensor:
    """``start:stop:step`` as ``arange``; with an imaginary step ``Nj``, ``linspace`` of
    ``N`` points from ``start`` to ``stop`` inclusive."""
    start = 0 if item.start is None else item.start
    step = 1 if item.step is None else item.step
    if isinstance(step, complex | np.complexfloating):
        values = linspace(start, item.stop, int(abs(complex(step))))
        assert isinstance(values, Tensor)
        return values
    if item.stop is None:
        raise ShapeError("a slice in r_/c_ needs a stop", op=op)
    return arange(start, item.stop, step)


@dataclass(frozen=True)
class _Layout:
    """How ``r_``/``c_`` lay their items out (NumPy's ``AxisConcatenator``): the axis
    they are joined along, the least rank each item is raised to, and ``trans1d``, where
    a raised item's own dimensions go (-1: last, after the new extent-1 dimensions)."""

    axis: int
    ndmin: int
    trans1d: int

    def directive(self, item: str, op: str) -> _Layout:
        """The layout a leading directive string asks for: ``'axis'``, ``'axis,ndmin'`` or
        ``'axis,ndmin,trans1d'`` (of four or more fields NumPy reads the first two);
        ``'r'``/``'c'`` (matrix output) are not supported."""
        if item in ("r", "c"):
            raise UnsupportedError(
                f"the directive {item!r} builds a numpy.matrix, which dualarr does not "
                "support (NumPy deprecates it): join arrays instead, e.g. '1,2' for one "
                "row or '0,2,0' for one column of 1-D items",
                op=op,
            )
        fields = item.split(",")
        try:
            numbers = [int(f) for f in fields[: 3 if len(fields) == 3 else 2]]
        except ValueError:
            raise ShapeError(f"unknown special directive {item!r}", op=op) from None
        if len(numbers) == 1:
            return replace(self, axis=numbers[0])
        trans1d = numbers[2] if len(numbers) == 3 else self.trans1d
        return _Layout(numbers[0], numbers[1], trans1d)

    def raise_slice(self, t: Tensor, op: str) -> Tensor:
        """A range raised to rank ``ndmin`` (its values on the last axis), then that axis
        swapped with ``trans1d`` (NumPy's ``swapaxes(-1, trans1d)``)."""
        if self.ndmin <= 1:
            return t
        shape = [1] * (self.ndmin - 1) + [t.size]
        if self.trans1d != -1:
            other = normalize_axis(self.trans1d, self.ndmin, op, "trans1d")
            shape[-1], shape[other] = shape[other], shape[-1]
        return F.reshape(t, tuple(shape))

    def raise_array(self, t: Tensor, op: str) -> Tensor:
        """An array of rank below ``ndmin`` with extent-1 dimensions in front, then (for
        ``trans1d`` other than -1) its own dimensions moved to start at ``trans1d``
        (NumPy's transpose ``[:k1] + [k2:] + [k1:k2]``, ``k2`` the added dimensions)."""
        if t.ndim >= self.ndmin:
            return t
        added = self.ndmin - t.ndim
        raised = F.reshape(t, (1,) * added + t.shape)
        if self.trans1d == -1:
            return raised
        start = self.trans1d + added + 1 if self.trans1d < 0 else self.trans1d
        axes = list(range(self.ndmin))
        perm = axes[:start] + axes[added:] + axes[start:added]
        if sorted(perm) != axes:
            raise ShapeError(
                f"trans1d {self.trans1d} cannot place the {t.ndim} dimension(s) of an item "
                f"raised to rank {self.ndmin}",
                op=op,
                shapes=[t.shape],
            )
        return F.transpose(raised, perm)


@numpy_function
def _concatenate_items(key: Any, layout: _Layout, op: str) -> Tensor:
    """``np.r_[...]`` / ``np.c_[...]`` for arrays, numbers and slices (ranges), after an
    optional leading directive string: each item raised to rank ``ndmin`` as the layout
    says, all converted to NumPy's common element type (NumPy scalars strong, Python
    numbers weak) and joined along ``axis``."""
    if isinstance(key, str):
        raise UnsupportedError(
            "a string alone is numpy.bmat's matrix syntax, which dualarr does not support",
            op=op,
        )
    items = key if isinstance(key, tuple) else (key,)
    parts: list[Tensor] = []
    typed: list[Any] = []
    for k, item in enumerate(items):
        if isinstance(item, str):
            if k != 0:
                raise ShapeError("special directives must be the first entry", op=op)
            layout = layout.directive(item, op)
        elif isinstance(item, slice):
            t = _slice_range(item, op)
            typed.append(t)
            parts.append(layout.raise_slice(t, op))
        elif isinstance(item, bool | int | float | np.generic):
            parts.append(F.constant(np.asarray(item).reshape((1,) * max(layout.ndmin, 0))))
            typed.append(item)
        else:
            t = _tensor(item, op)
            typed.append(t)
            parts.append(layout.raise_array(t, op))
    if not parts:
        raise ShapeError("needs at least one array to concatenate", op=op)
    target = core_dtype(np.result_type(*[numpy_dtype_of(v) for v in typed]), op)
    return _join([astype(p, target, op) for p in parts], layout.axis, None, op)


class _AxisConcatenator:
    """``dnp.r_[a, b, 1:4]`` / ``dnp.c_[a, b]``, with NumPy's leading directive strings
    (``dnp.r_['0,2,0', a, b]``): traced values allowed."""

    def __init__(self, layout: _Layout, name: str) -> None:
        self._layout, self._name = layout, name

    def __getitem__(self, key: Any) -> Tensor:
        return _concatenate_items(key, self._layout, self._name)

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"dualarr.numpy.{self._name.removeprefix('numpy.')}"


r_ = _AxisConcatenator(_Layout(axis=0, ndmin=1, trans1d=-1), "numpy.r_")
"""Join items along the first axis: ``dnp.r_[x, 0.0, 1:3]``, ``dnp.r_['0,2,0', x, y]``."""

c_ = _AxisConcatenator(_Layout(axis=-1, ndmin=2, trans1d=0), "numpy.c_")
"""Join items as columns along the last axis: ``dnp.c_[x, y]``."""

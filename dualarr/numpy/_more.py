"""More of NumPy: ``append``, ``rollaxis``, ``gradient``, ``partition``/``argpartition``,
``searchsorted``, ``lexsort``, ``interp``, ``convolve``/``correlate`` and ``polyval``.

Each lowers to other ``dnp`` functions, hence to the core language (paper Fig. 7):
``append`` is a ``concatenate``, ``rollaxis`` a ``tr``; ``gradient`` is NumPy's own
second-order finite-difference formulas (central inside, one-sided of order
``edge_order`` at the ends, the non-uniform ones for coordinate arrays) written as slices
(``gather``) and arithmetic, joined by ``concatenate``.  ``partition`` returns the sorted
array (``dnp.sort``) and ``argpartition`` the stable ``argsort``: a sorted array is one of
the partitions NumPy allows (its doc: "the ordering of the elements in the two partitions
on the either side of the k-th element ... is undefined").  ``searchsorted`` is two sorts
of a joined array (O((n + m) log(n + m)), no comparison matrix): stably sorted, ``v``
joined before ``a`` (``side='left'``) or after it (``'right'``), an element of ``v``
lands after exactly the elements of ``a`` it counts and the elements of ``v`` it follows,
so its count is its position in the join minus its rank in ``v``.  ``lexsort`` is one
stable ``argsort`` per key, the last key sorted last (NumPy's doc: "the last key is the
primary sort key").  ``interp`` is ``jax.numpy.interp``'s lowering (``searchsorted``,
``take`` of the neighbouring samples, a guarded division), differentiable in ``x``,
``xp`` and ``fp``.  ``correlate``/``convolve`` ``gather`` the ``(len(out), len(v))``
windows of ``a`` (reads outside ``a`` give 0, the total semantics of §5.2) and contract
them with ``v`` (``matmul``): O(n·m) work in two terms.  ``polyval`` is Horner's rule,
as NumPy's.  Integer results (``searchsorted``, ``lexsort``, ``argpartition``) are not
differentiated: ``grad`` of one is a :class:`~dualarr.DtypeError`, as for ``argsort``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..lang import functions as F
from ..lang.errors import DtypeError, ShapeError, UnsupportedError, format_shape
from ..lang.tensor import Operand, Tensor
from ..lang.terms import Const
from ._core import normalize_axis, to_tensor
from ._creation import zeros_like
from ._linalg import matmul
from ._reductions import diff
from ._shape import concatenate, flip, ravel, reshape, transpose
from ._sorting import argsort, sort, take, take_along_axis
from ._ufuncs import abs as abs_
from ._ufuncs import astype, clip, numpy_api, remainder, where

__all__ = [
    "append",
    "argpartition",
    "convolve",
    "correlate",
    "gradient",
    "interp",
    "lexsort",
    "partition",
    "polyval",
    "rollaxis",
    "searchsorted",
]


def _along(t: Tensor, ax: int, start: int | None, stop: int | None) -> Tensor:
    """``t[..., start:stop, ...]`` on dimension ``ax``."""
    key = (slice(None),) * ax + (slice(start, stop),)
    return t[key]


def _one(t: Tensor, ax: int, k: int) -> Tensor:
    """Position ``k`` (negative from the end) of dimension ``ax``, kept as extent 1."""
    return _along(t, ax, k, k + 1 if k != -1 else None)


def _axis(axis: Any, shape: tuple[int, ...], op: str) -> int:
    """:func:`normalize_axis`, its error naming the array's shape."""
    try:
        return normalize_axis(axis, len(shape), op)
    except ShapeError as error:
        raise ShapeError(
            f"{error.detail} (shape {format_shape(shape)})", op=op, shapes=[shape]
        ) from None


def _known(value: Any) -> Any:
    """The value of a constant Tensor, or ``value`` itself when it is not a Tensor."""
    if isinstance(value, Tensor):
        term = value.term
        assert isinstance(term, Const)
        return term.value
    return value


def _float(value: Any, op: str) -> Tensor:
    t = to_tensor(value, op)
    return t if t.dtype.kind == "f" else astype(t, np.float64)


# --------------------------------------------------------------------------------------
# append, rollaxis
# --------------------------------------------------------------------------------------


@numpy_api
def append(arr: Operand, values: Operand, axis: int | None = None) -> Tensor:
    """``values`` joined after ``arr`` along ``axis`` (both flattened for ``None``): a
    ``concatenate``, as NumPy's ``append``."""
    op = "numpy.append"
    a, v = to_tensor(arr, op), to_tensor(values, op)
    if axis is None:
        return concatenate((ravel(a), ravel(v)))
    if a.ndim == 0 or v.ndim == 0:
        raise ShapeError(
            f"zero-dimensional arrays cannot be joined along axis {axis}: shapes "
            f"{format_shape(a.shape)} and {format_shape(v.shape)}",
            op=op,
            shapes=[a.shape, v.shape],
        )
    return concatenate((a, v), axis=axis)


@numpy_api
def rollaxis(a: Operand, axis: int, start: int = 0) -> Tensor:
    """Dimension ``axis`` moved to lie before ``start``: one ``tr`` (NumPy's rule,
    ``start`` in ``[-ndim, ndim]``)."""
    op = "numpy.rollaxis"
    t = to_tensor(a, op)
    n = t.ndim
    ax = _axis(axis, t.shape, op)
    if isinstance(start, bool) or not isinstance(start, int | np.integer):
        raise ShapeError(f"start must be an int, got {start!r}", op=op)
    begin = int(start) + n if start < 0 else int(start)
    if not 0 <= begin < n + 1:
        raise ShapeError(
            f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in",
            op=op,
            shapes=[t.shape],
        )
    if ax < begin:
        begin -= 1
    if ax == begin:
        return t
    axes = [d for d in range(n) if d != ax]
    axes.insert(begin, ax)
    return transpose(t, axes)


# --------------------------------------------------------------------------------------
# gradient
# --------------------------------------------------------------------------------------


def _axis_tuple(axis: Any, shape: tuple[int, ...], op: str) -> list[int]:
    if axis is None:
        return list(range(len(shape)))
    items: Sequence[Any] = axis if isinstance(axis, tuple | list) else (axis,)
    axes = [_axis(a, shape, op) for a in items]
    if len(set(axes)) != len(axes):
        raise ShapeError(f"repeated axis in {tuple(items)}", op=op)
    return axes


Spacing = tuple[bool, Any]
"""``(uniform, value)``: a scalar step (number or rank-0 Tensor), or the 1-D differences
of a coordinate array."""


def _spacing(value: Any, n: int, op: str) -> Spacing:
    rank = value.ndim if isinstance(value, Tensor) else np.ndim(value)
    if rank == 0:
        return True, value
    if rank != 1:
        raise ShapeError("distances must be either scalars or 1d", op=op)
    length = value.shape[0] if isinstance(value, Tensor) else len(value)
    if length != n:
        raise ShapeError(
            f"when 1d, distances must match the length of the corresponding dimension: "
            f"got {length} coordinates for a dimension of {n}",
            op=op,
        )
    if isinstance(value, Tensor) and not isinstance(value.term, Const):
        return False, diff(_float(value, op))
    coordinates = np.asarray(_known(value))
    if coordinates.dtype.kind != "f":
        coordinates = coordinates.astype(np.float64)
    steps = np.diff(coordinates)
    if steps.size and (steps == steps[0]).all():  # NumPy's uniform case
        return True, steps[0]
    return False, F.constant(steps)


def _derivative(t: Tensor, ax: int, uniform: bool, dx: Any, edge_order: int) -> Tensor:
    """NumPy's ``gradient`` along ``ax``: central differences inside, one-sided ones of
    order ``edge_order`` at both ends (non-uniform forms for a coordinate array)."""
    ones = [1] * t.ndim
    ones[ax] = -1
    inner_lo, inner_mid, inner_hi = (
        _along(t, ax, None, -2),
        _along(t, ax, 1, -1),
        _along(t, ax, 2, None),
    )
    if uniform:
        interior = (inner_hi - inner_lo) / (2.0 * dx)
    else:
        dx1, dx2 = dx[:-1], dx[1:]
        a = reshape(-dx2 / (dx1 * (dx1 + dx2)), ones)
        b = reshape((dx2 - dx1) / (dx1 * dx2), ones)
        c = reshape(dx1 / (dx2 * (dx1 + dx2)), ones)
        interior = a * inner_lo + b * inner_mid + c * inner_hi
    if edge_order == 1:
        first_step = dx if uniform else dx[0]
        last_step = dx if uniform else dx[-1]
        first = (_one(t, ax, 1) - _one(t, ax, 0)) / first_step
        last = (_one(t, ax, -1) - _one(t, ax, -2)) / last_step
    else:
        if uniform:
            a0, b0, c0 = -1.5 / dx, 2.0 / dx, -0.5 / dx
            a1, b1, c1 = 0.5 / dx, -2.0 / dx, 1.5 / dx
        else:
            d1, d2 = dx[0], dx[1]
            a0 = -(2.0 * d1 + d2) / (d1 * (d1 + d2))
            b0 = (d1 + d2) / (d1 * d2)
            c0 = -d1 / (d2 * (d1 + d2))
            d1, d2 = dx[-2], dx[-1]
            a1 = d2 / (d1 * (d1 + d2))
            b1 = -(d2 + d1) / (d1 * d2)
            c1 = (2.0 * d2 + d1) / (d2 * (d1 + d2))
        first = a0 * _one(t, ax, 0) + b0 * _one(t, ax, 1) + c0 * _one(t, ax, 2)
        last = a1 * _one(t, ax, -3) + b1 * _one(t, ax, -2) + c1 * _one(t, ax, -1)
    return concatenate((first, interior, last), axis=ax)


@numpy_api
def gradient(
    f: Operand, *varargs: Any, axis: int | Sequence[int] | None = None, edge_order: int = 1
) -> Tensor | tuple[Tensor, ...]:
    """NumPy's ``gradient``: second-order accurate central differences in the interior
    and first- or second-order (``edge_order``) one-sided differences at the boundaries
    (NumPy's doc; Fornberg, *Generation of finite difference formulas on arbitrarily
    spaced grids*, 1988).  ``varargs`` is nothing (spacing 1), one scalar for every
    axis, or one scalar or coordinate array per axis.  One array per axis (a tuple when
    there are several); float32 stays float32, ints and bools give float64."""
    op = "numpy.gradient"
    t = to_tensor(f, op)
    axes = _axis_tuple(axis, t.shape, op)
    if isinstance(edge_order, bool) or edge_order not in (1, 2):
        raise UnsupportedError(f"edge_order must be 1 or 2, got {edge_order!r}", op=op)
    if not varargs:
        spacings: list[Any] = [1.0] * len(axes)
    elif len(varargs) == 1 and (
        varargs[0].ndim == 0 if isinstance(varargs[0], Tensor) else np.ndim(varargs[0]) == 0
    ):
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise ShapeError(
            f"invalid number of arguments: {len(varargs)} spacings for {len(axes)} axes of "
            f"an array of shape {format_shape(t.shape)}",
            op=op,
            shapes=[t.shape],
        )
    otype = t.dtype if t.dtype.kind == "f" else np.dtype(np.float64)
    t = astype(t, otype)
    results = []
    for ax, spacing in zip(axes, spacings, strict=True):
        if t.shape[ax] < edge_order + 1:
            raise ShapeError(
                f"Shape of array too small to calculate a numerical gradient, at least "
                f"(edge_order + 1) = {edge_order + 1} elements are required along axis "
                f"{ax} of shape {format_shape(t.shape)}",
                op=op,
                shapes=[t.shape],
            )
        uniform, dx = _spacing(spacing, t.shape[ax], op)
        results.append(astype(_derivative(t, ax, uniform, dx, edge_order), otype))
    return results[0] if len(results) == 1 else tuple(results)


# --------------------------------------------------------------------------------------
# partition, argpartition, searchsorted, lexsort
# --------------------------------------------------------------------------------------


def _check_partition(a: Tensor, kth: Any, axis: Any, kind: Any, order: Any, op: str) -> None:
    if kind != "introselect":
        raise UnsupportedError(f"kind must be 'introselect', got {kind!r}", op=op)
    if order is not None:
        raise UnsupportedError(
            "order partitions structured arrays by field, and dualarr has no structured arrays",
            op=op,
        )
    if axis is None:
        n = a.size
    else:
        if a.ndim == 0:
            raise ShapeError(
                f"axis {axis} is out of bounds for an array of dimension 0", op=op, shapes=[()]
            )
        n = a.shape[_axis(axis, a.shape, op)]
    if isinstance(kth, Tensor) and not isinstance(kth.term, Const):
        return  # a sorted array is a partition at every kth in range
    ks = np.asarray(_known(kth))
    if ks.dtype.kind not in "iu":
        raise DtypeError(f"Partition index must be integer, got {ks.dtype}", op=op)
    if ks.ndim > 1:
        raise ShapeError("kth must be scalar or 1-D", op=op)
    for k in ks.reshape(-1):
        if not -n <= int(k) < n:
            raise ShapeError(
                f"kth(={int(k)}) out of bounds ({n}) for an array of shape {format_shape(a.shape)}",
                op=op,
                shapes=[a.shape],
            )


@numpy_api
def partition(
    a: Operand,
    kth: int | Sequence[int],
    axis: int | None = -1,
    kind: str = "introselect",
    order: None = None,
) -> Tensor:
    """A partition of ``a`` along ``axis`` at every ``kth``: the sorted array (one of the
    results NumPy allows), so its gradient is ``sort``'s (a gather; transposed, a
    scatter)."""
    op = "numpy.partition"
    t = to_tensor(a, op)
    _check_partition(t, kth, axis, kind, order, op)
    return sort(t, axis)


@numpy_api
def argpartition(
    a: Operand,
    kth: int | Sequence[int],
    axis: int | None = -1,
    kind: str = "introselect",
    order: None = None,
) -> Tensor:
    """Indices that partition ``a`` along ``axis`` at every ``kth``: the stable
    ``argsort`` (one of the results NumPy allows).  An int array."""
    op = "numpy.argpartition"
    t = to_tensor(a, op)
    _check_partition(t, kth, axis, kind, order, op)
    return argsort(t, axis)


def _inverse(permutation: Tensor) -> Tensor:
    """The inverse of a permutation (of the outer dimension): its ``argsort``."""
    return argsort(permutation)


@numpy_api
def searchsorted(a: Operand, v: Operand, side: str = "left", sorter: Operand = None) -> Tensor:
    """Where each element of ``v`` would go in the sorted 1-D ``a`` (the first such place
    for ``side='left'``, the last for ``'right'``): an int array of ``v``'s shape.
    ``sorter`` is the permutation sorting ``a``.  Two sorts of ``v`` and ``a`` joined
    (the module's docstring), never differentiated."""
    op = "numpy.searchsorted"
    if side not in ("left", "right"):
        raise UnsupportedError(f"side must be 'left' or 'right' (got {side!r})", op=op)
    s = to_tensor(a, op)
    if s.ndim != 1:
        raise ShapeError(
            f"a must be 1-D, got shape {format_shape(s.shape)}", op=op, shapes=[s.shape]
        )
    if sorter is not None:
        order = to_tensor(sorter, op)
        if order.shape != s.shape:
            raise ShapeError(
                f"sorter.size must equal a.size: sorter of shape {format_shape(order.shape)} "
                f"for a of shape {format_shape(s.shape)}",
                op=op,
                shapes=[s.shape, order.shape],
            )
        s = take(s, order)
    q = to_tensor(v, op)
    n, m = s.shape[0], q.size
    if n == 0 or m == 0:
        return F.constant(np.zeros(q.shape, dtype=np.int64))
    flat = ravel(q)
    joined = concatenate((flat, s) if side == "left" else (s, flat))
    start = 0 if side == "left" else n
    position = _along(_inverse(argsort(joined)), 0, start, start + m)
    return reshape(position - _inverse(argsort(flat)), q.shape)


@numpy_api
def lexsort(keys: Any, axis: int = -1) -> Tensor:
    """Indices sorting by several keys, the last the primary one: a stable ``argsort``
    by each key in turn, from the first (each composed with the permutation so far by
    ``take_along_axis``).  ``keys`` is a sequence of arrays of one shape, or an array
    whose rows are the keys.  An int array."""
    op = "numpy.lexsort"
    if isinstance(keys, tuple | list):
        columns = [to_tensor(k, op) for k in keys]
    else:
        stacked = to_tensor(keys, op)
        if stacked.ndim == 0:
            raise ShapeError("need sequence of keys with len > 0 in lexsort", op=op)
        columns = [stacked[k] for k in range(stacked.shape[0])]
    if not columns:
        raise ShapeError("need sequence of keys with len > 0 in lexsort", op=op)
    shape = columns[0].shape
    if any(c.shape != shape for c in columns):
        raise ShapeError(
            "all keys need to be the same shape, got "
            + ", ".join(format_shape(c.shape) for c in columns),
            op=op,
            shapes=[c.shape for c in columns],
        )
    if not shape:
        return F.constant(np.asarray(0, dtype=np.int64))
    ax = _axis(axis, shape, op)
    index = argsort(columns[0], ax)
    for key in columns[1:]:
        index = take_along_axis(index, argsort(take_along_axis(key, index, ax), ax), ax)
    return index


# --------------------------------------------------------------------------------------
# interp
# --------------------------------------------------------------------------------------


@numpy_api
def interp(
    x: Operand,
    xp: Operand,
    fp: Operand,
    left: Operand = None,
    right: Operand = None,
    period: float | None = None,
) -> Tensor:
    """The piecewise-linear interpolant through ``(xp, fp)`` (``xp`` increasing) at
    ``x``, ``left``/``right`` (default ``fp[0]``/``fp[-1]``) outside; with ``period``,
    ``x`` and ``xp`` are taken modulo it.  ``jax.numpy.interp``'s lowering: the
    interval from ``searchsorted(xp, x, 'right')``, the neighbouring samples by
    ``take``, a division guarded where two samples coincide.  Float64, as NumPy's;
    differentiable in ``x``, ``xp`` and ``fp`` away from the samples."""
    op = "numpy.interp"
    xs, px, pf = (astype(to_tensor(t, op), np.float64) for t in (x, xp, fp))
    if px.ndim != 1 or pf.ndim != 1:
        raise ShapeError(
            f"xp and fp must be 1-D, got shapes {format_shape(px.shape)} and "
            f"{format_shape(pf.shape)}",
            op=op,
            shapes=[px.shape, pf.shape],
        )
    if px.shape != pf.shape:
        raise ShapeError(
            f"fp and xp are not of the same length: {pf.shape[0]} and {px.shape[0]}",
            op=op,
            shapes=[px.shape, pf.shape],
        )
    if px.shape[0] == 0:
        raise ShapeError("array of sample points is empty", op=op, shapes=[px.shape])
    if period is not None:
        if isinstance(period, Tensor) or not isinstance(period, int | float | np.number):
            raise UnsupportedError(f"period must be a number, got {period!r}", op=op)
        if period == 0:
            raise UnsupportedError("period must be a non-zero value", op=op)
        span = float(abs(period))
        xs, px = remainder(xs, span), remainder(px, span)
        order = argsort(px)
        px, pf = take(px, order), take(pf, order)
        px = concatenate((px[-1:] - span, px, px[0:1] + span))
        pf = concatenate((pf[-1:], pf, pf[0:1]))
    n = px.shape[0]
    if n == 1:
        result = pf[0] + zeros_like(xs)
    else:
        upper = clip(searchsorted(px, xs, side="right"), 1, n - 1)
        lower = upper - 1
        x0, x1 = take(px, lower), take(px, upper)
        f0, f1 = take(pf, lower), take(pf, upper)
        step = x1 - x0
        tiny = abs_(step) <= np.spacing(np.finfo(np.float64).eps)
        result = where(tiny, f0, f0 + (xs - x0) / where(tiny, 1.0, step) * (f1 - f0))
    if period is None:
        result = where(xs < px[0], pf[0] if left is None else _float(left, op), result)
        result = where(xs > px[-1], pf[-1] if right is None else _float(right, op), result)
    return astype(result, np.float64)


# --------------------------------------------------------------------------------------
# correlate, convolve, polyval
# --------------------------------------------------------------------------------------

_MODES = ("valid", "same", "full")


def _window_offset(n: int, m: int, mode: str) -> tuple[int, int]:
    """``(length, offset)`` of NumPy's ``mode`` result inside the full correlation of
    lengths ``n`` and ``m`` (``full[k] = sum_j a[k + j - (m - 1)] v[j]``)."""
    if mode == "full":
        return n + m - 1, 0
    if mode == "valid":
        return abs(n - m) + 1, min(n, m) - 1
    # 'same' centres max(n, m) values: NumPy's C loop (_pyarray_correlate) starts
    # (m - 1) // 2 into the full result, or n // 2 when it swaps a shorter ``a`` with v
    length = max(n, m)
    return length, (m - 1) // 2 if n >= m else n // 2


def _correlate(a: Tensor, v: Tensor, mode: Any, op: str) -> Tensor:
    if mode not in _MODES:
        raise UnsupportedError(
            f"mode must be one of 'valid', 'same', or 'full', got {mode!r} (for shapes "
            f"{format_shape(a.shape)} and {format_shape(v.shape)})",
            op=op,
            shapes=[a.shape, v.shape],
        )
    for name, t in (("a", a), ("v", v)):
        if t.ndim != 1:
            raise ShapeError(
                f"{name} must be 1-D, got shapes {format_shape(a.shape)} and "
                f"{format_shape(v.shape)}",
                op=op,
                shapes=[a.shape, v.shape],
            )
        if t.size == 0:
            raise ShapeError(f"{name} cannot be empty", op=op, shapes=[a.shape, v.shape])
    n, m = a.shape[0], v.shape[0]
    length, offset = _window_offset(n, m, mode)
    shift = offset - (m - 1)
    windows = F.gather((length, m), a, lambda k, j: (k + j + shift,))
    return matmul(windows, v)


@numpy_api
def correlate(a: Operand, v: Operand, mode: str = "valid") -> Tensor:
    """Cross-correlation of two 1-D sequences, ``c[k] = sum_j a[k + j] v[j]`` over the
    ``mode``'s range of ``k`` (NumPy's doc): the windows of ``a`` (a ``gather``, zero
    outside ``a``) contracted with ``v`` (``matmul``), O(n·m)."""
    op = "numpy.correlate"
    return _correlate(to_tensor(a, op), to_tensor(v, op), mode, op)


@numpy_api
def convolve(a: Operand, v: Operand, mode: str = "full") -> Tensor:
    """Discrete linear convolution of two 1-D sequences (scalars are length 1): the
    longer one correlated with the shorter one reversed, as NumPy's."""
    op = "numpy.convolve"
    x, y = to_tensor(a, op), to_tensor(v, op)
    x = reshape(x, (1,)) if x.ndim == 0 else x
    y = reshape(y, (1,)) if y.ndim == 0 else y
    if x.ndim == 1 and y.ndim == 1 and y.shape[0] > x.shape[0]:
        x, y = y, x
    if y.ndim == 1 and y.size:
        y = flip(y)
    return _correlate(x, y, mode, op)


@numpy_api
def polyval(p: Operand, x: Operand) -> Tensor:
    """The polynomial with coefficients ``p`` (highest degree first) at ``x``, by
    Horner's rule from ``zeros_like(x)``, exactly as NumPy's (so its dtype too)."""
    op = "numpy.polyval"
    coefficients, points = to_tensor(p, op), to_tensor(x, op)
    if coefficients.ndim == 0:
        raise ShapeError("p must be a sequence of coefficients, got a scalar", op=op)
    y = zeros_like(points)
    for k in range(coefficients.shape[0]):
        y = y * points + coefficients[k]
    return y

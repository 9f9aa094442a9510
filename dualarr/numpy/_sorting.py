"""NumPy's sorting and selection: ``sort``, ``argsort``, ``take_along_axis``, ``take``.

``argsort`` is the core term ``argsort e`` (:class:`~dualarr.lang.terms.ArgSort`: the
stable ascending permutation along the outermost dimension, an int result never
differentiated, like ``argmax``), the requested axis moved outermost with ``tr``.
``sort`` is the input gathered at that permutation (``take_along_axis`` style), so its
derivative is a ``gather`` through the permutation and its transpose a ``scatter``: no
derivative rule of its own.  ``take`` and ``take_along_axis`` are gathers; their
indices may be NumPy arrays (checked now, negative ones wrapped) or traced int arrays
(negative ones wrapped, out-of-range ones read 0: the totality of §5.2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..lang import functions as F
from ..lang import indexing as ix_
from ..lang.errors import DtypeError, ShapeError, UnsupportedError, format_shape
from ..lang.tensor import Operand, Tensor, broadcast_shapes, cast_to, new_var
from ..lang.terms import ArgSort, Const, DType, Gather, Index, Term, int_const
from ._core import normalize_axis, numpy_function, to_tensor

__all__ = ["argsort", "sort", "take", "take_along_axis"]

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _check_sort_options(op: str, kind: Any, order: Any, stable: Any) -> None:
    if kind not in _KINDS:
        raise UnsupportedError(
            f"kind must be one of {', '.join(repr(k) for k in _KINDS)}, got {kind!r}", op=op
        )
    if order is not None:
        raise UnsupportedError(
            "order sorts structured arrays by field, and dualarr has no structured arrays",
            op=op,
        )
    if stable not in (None, True, False):
        raise UnsupportedError(f"stable must be a bool or None, got {stable!r}", op=op)


def _moved(t: Tensor, axis: int | None, op: str) -> tuple[Tensor, list[int] | None]:
    """``t`` with ``axis`` outermost (flattened for ``None``) and the permutation that puts
    the dimensions back (``None`` when there is nothing to undo)."""
    if axis is None:
        return F.reshape(t, (t.size,)), None
    rank = len(t.shape)
    if rank == 0:
        raise ShapeError(
            f"axis {axis} is out of bounds for an array of dimension 0", op=op, shapes=[()]
        )
    ax = normalize_axis(axis, rank, op)
    perm = [ax, *[d for d in range(rank) if d != ax]]
    back = [perm.index(d) for d in range(rank)]
    return F.transpose(t, perm), back


def _permutation(moved: Tensor) -> Term:
    """``argsort`` of ``moved`` along its outer dimension (bools sorted as 0 and 1)."""
    key = moved.term
    if key.dtype is DType.BOOL:
        key = cast_to(key, DType.INT64, "argsort")
    return ArgSort(key)


def _restore(t: Tensor, back: list[int] | None) -> Tensor:
    return t if back is None else F.transpose(t, back)


@numpy_function
def argsort(
    a: Operand,
    axis: int | None = -1,
    kind: str | None = None,
    order: None = None,
    *,
    stable: bool | None = None,
) -> Tensor:
    """Indices that sort ``a`` along ``axis`` (flattened for ``None``), ascending and
    stable whatever ``kind`` says: the core ``argsort`` after a ``tr`` moving ``axis``
    outermost.  An int array, never differentiated."""
    op = "numpy.argsort"
    _check_sort_options(op, kind, order, stable)
    moved, back = _moved(to_tensor(a, op), axis, op)
    return _restore(Tensor(_permutation(moved)), back)


@numpy_function
def sort(
    a: Operand,
    axis: int | None = -1,
    kind: str | None = None,
    order: None = None,
    *,
    stable: bool | None = None,
) -> Tensor:
    """``a`` sorted along ``axis`` (flattened for ``None``), ascending and stable:
    ``gather sh a (λ[i, js]. [(argsort a)[i, js], js])`` with ``axis`` moved outermost.
    Its gradient flows through the permutation (a gather; transposed, a scatter)."""
    op = "numpy.sort"
    _check_sort_options(op, kind, order, stable)
    moved, back = _moved(to_tensor(a, op), axis, op)
    permutation = _permutation(moved)
    variables = tuple(new_var(op, "i", (), DType.INT64) for _ in moved.shape)
    index: tuple[Term, ...] = (Index(permutation, variables), *variables[1:])
    return _restore(Tensor(Gather(moved.shape, moved.term, variables, index)), back)


# --------------------------------------------------------------------------------------
# take and take_along_axis
# --------------------------------------------------------------------------------------


def _static_indices(value: Any, op: str) -> np.ndarray | None:
    """A NumPy int array for indices known now, or ``None`` for a traced one."""
    if isinstance(value, Tensor):
        if value.term.dtype is not DType.INT64:
            raise DtypeError(
                f"indices must be ints, got {value.term.dtype}{format_shape(value.shape)}",
                op=op,
                shapes=[value.shape],
            )
        if isinstance(value.term, Const):
            return np.asarray(value.term.value, dtype=np.int64)
        return None
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        if array.size == 0 and array.dtype.kind == "f":  # ``[]``: no indices
            return array.astype(np.int64)
        raise DtypeError(f"indices must be ints, got {array.dtype}", op=op)
    return array.astype(np.int64)


def _wrap_static(indices: np.ndarray, n: int, mode: str, op: str, what: str) -> np.ndarray:
    """NumPy's treatment of known indices into a dimension of extent ``n``."""
    if mode == "wrap":
        if n == 0 and indices.size:
            raise ShapeError(f"cannot take from an empty {what}", op=op)
        return np.asarray(indices % n if n else indices, dtype=np.int64)
    if mode == "clip":
        if n == 0 and indices.size:
            raise ShapeError(f"cannot take from an empty {what}", op=op)
        return np.asarray(np.clip(indices, 0, max(n - 1, 0)), dtype=np.int64)
    bad = (indices < -n) | (indices >= n)
    if bad.any():
        raise ShapeError(
            f"index {int(indices[bad].flat[0])} is out of bounds for {what} with size {n}",
            op=op,
        )
    return np.asarray(np.where(indices < 0, indices + n, indices), dtype=np.int64)


def _wrap_traced(i: Term, n: int, mode: str) -> Term:
    """A traced rank-0 index into a dimension of extent ``n``: ``wrap`` is ``i mod n``,
    ``clip`` clamps, ``raise`` wraps negative ones and leaves the rest (out of range
    reads 0, §5.2)."""
    t = Tensor(i)
    if mode == "wrap":
        return F.remainder(t, n).term if n else i
    if mode == "clip":
        return F.imax(F.imin(t, max(n - 1, 0)), 0).term
    return ix_.wrap_negative(i, n)


@numpy_function
def take(a: Operand, indices: Operand, axis: int | None = None, mode: str = "raise") -> Tensor:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` for
    ``None``), as NumPy's ``take``: one ``gather`` whose result has shape
    ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``.  ``mode`` is ``"raise"``
    (known indices checked now; traced ones: negative wrap once, out of range reads 0),
    ``"wrap"`` or ``"clip"``."""
    op = "numpy.take"
    if mode not in ("raise", "wrap", "clip"):
        raise UnsupportedError(f"mode must be 'raise', 'wrap' or 'clip', got {mode!r}", op=op)
    t = to_tensor(a, op)
    if axis is None:
        t = F.reshape(t, (t.size,))
        ax = 0
    else:
        if not t.shape:
            raise ShapeError(f"axis {axis} is out of bounds for a rank-0 array", op=op)
        ax = normalize_axis(axis, len(t.shape), op)
    n = t.shape[ax]
    static = _static_indices(indices, op)
    if static is not None:
        wrapped = _wrap_static(static, n, mode, op, f"axis {ax}")
        index_shape = wrapped.shape
        index_term: Term = Const(wrapped)
    else:
        index_term = to_tensor(indices, op).term
        index_shape = index_term.shape
    pre = t.shape[:ax]
    outer = (*pre, *index_shape)
    variables = tuple(new_var(op, "i", (), DType.INT64) for _ in outer)
    component: Term = Index(index_term, variables[len(pre) :]) if index_shape else index_term
    if static is None:
        component = _wrap_traced(component, n, mode)
    return Tensor(Gather(outer, t.term, variables, (*variables[: len(pre)], component)))


@numpy_function
def take_along_axis(arr: Operand, indices: Operand, axis: int | None = -1) -> Tensor:
    """``arr`` read at ``indices`` along ``axis`` (``out[.., j, ..] = arr[.., indices[..,
    j, ..], ..]``, the other dimensions broadcasting), as NumPy's ``take_along_axis``:
    one ``gather``.  Known indices are checked now; traced ones wrap negative values
    once and read 0 out of range (§5.2)."""
    op = "numpy.take_along_axis"
    t = to_tensor(arr, op)
    static = _static_indices(indices, op)
    index_term: Term = Const(static) if static is not None else to_tensor(indices, op).term
    if axis is None:
        if len(index_term.shape) != 1:
            raise ShapeError(
                f"with axis=None the indices must be 1-D, got shape "
                f"{format_shape(index_term.shape)}",
                op=op,
                shapes=[index_term.shape],
            )
        t = F.reshape(t, (t.size,))
        ax = 0
    else:
        if not t.shape:
            raise ShapeError("needs an array of rank >= 1", op=op, shapes=[()])
        ax = normalize_axis(axis, len(t.shape), op)
    rank = len(t.shape)
    if len(index_term.shape) != rank:
        raise ShapeError(
            f"indices of shape {format_shape(index_term.shape)} and array of shape "
            f"{format_shape(t.shape)} must have the same number of dimensions",
            op=op,
            shapes=[t.shape, index_term.shape],
        )
    n = t.shape[ax]
    if static is not None:
        index_term = Const(_wrap_static(static, n, "raise", op, f"axis {ax}"))
    others = broadcast_shapes(
        op,
        [
            tuple(d for k, d in enumerate(t.shape) if k != ax),
            tuple(d for k, d in enumerate(index_term.shape) if k != ax),
        ],
    )
    outer = (*others[:ax], index_term.shape[ax], *others[ax:])
    variables = tuple(new_var(op, "i", (), DType.INT64) for _ in outer)
    zero = int_const(0)

    def along(shape: tuple[int, ...]) -> tuple[Term, ...]:  # broadcast dimensions read 0
        return tuple(
            v if extent == full else zero
            for v, extent, full in zip(variables, shape, outer, strict=True)
        )

    component: Term = Index(index_term, along(index_term.shape))
    if static is None:
        component = _wrap_traced(component, n, "raise")
    source = list(along(t.shape))
    source[ax] = component
    return Tensor(Gather(outer, t.term, variables, tuple(source)))

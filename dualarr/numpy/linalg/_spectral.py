"""Eigenvalues, singular values, QR and what is built on them: ``eigh``, ``eigvalsh``,
``svd``, ``svdvals``, ``qr``, ``pinv``, ``norm``, ``matrix_norm``, ``vector_norm``,
``cond``, ``matrix_rank`` and ``lstsq``, with NumPy 2.4's names and signatures.

The factorisations are the structural constructs of
:mod:`dualarr.constructs.linalg_spectral` (each packs its factors into one array, read
here with an index and a slice); everything else lowers to ``dnp`` operations on their
factors, as NumPy's own ``numpy/linalg/py`` computes them (``pinv`` and
``lstsq`` from the SVD, ``norm`` from reductions or the singular values).  Batched over
leading axes as NumPy's are (``lstsq`` takes 2-D arrays, as NumPy's).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...constructs.linalg_spectral import Eigh, Qr, Svd
from ...lang.errors import DtypeError, ShapeError, UnsupportedError, format_shape
from ...lang.tensor import Operand, Tensor
from .._core import normalize_axis, numpy_function, to_tensor
from .._creation import asarray, ones_like, zeros, zeros_like
from .._linalg import matmul
from .._reductions import any as any_
from .._reductions import count_nonzero
from .._reductions import max as max_
from .._reductions import min as min_
from .._reductions import sum as sum_
from .._shape import expand_dims, flip, moveaxis, ravel, reshape, swapaxes, transpose, tril, triu
from .._sorting import argsort, sort, take_along_axis
from .._ufuncs import abs as abs_
from .._ufuncs import astype, sign, sqrt, where

__all__ = [
    "EighResult",
    "QRResult",
    "SVDResult",
    "cond",
    "eigh",
    "eigvalsh",
    "lstsq",
    "matrix_norm",
    "matrix_rank",
    "norm",
    "pinv",
    "qr",
    "svd",
    "svdvals",
    "vector_norm",
]

_NO_VALUE: Any = np._NoValue  # NumPy's "argument not given" default (pinv's rtol)


class EighResult(NamedTuple):
    """``eigh``'s result, as NumPy's: ascending eigenvalues, eigenvectors as columns."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class SVDResult(NamedTuple):
    """``svd``'s result, as NumPy's: ``a = U @ (S[..., None] * Vh)``."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class QRResult(NamedTuple):
    """``qr``'s result, as NumPy's."""

    Q: Tensor
    R: Tensor


def _float(a: Operand, op: str) -> Tensor:
    """``a`` as a float tensor (NumPy's ``linalg`` computes integers in float64)."""
    t = to_tensor(a, op)
    if t.dtype.kind == "b" or t.dtype.kind in "iu":
        return astype(t, np.float64)
    if t.dtype.kind != "f" or t.dtype == np.float16:
        raise DtypeError(f"array type {t.dtype} is unsupported in linalg", op=op)
    return t


def _matrices(a: Operand, op: str, *, square: bool = False) -> Tensor:
    t = _float(a, op)
    if t.ndim < 2:
        raise ShapeError(
            f"{t.ndim}-dimensional array given. Array must be at least two-dimensional, "
            f"got shape {format_shape(t.shape)}",
            op=op,
            shapes=[t.shape],
        )
    if square and t.shape[-1] != t.shape[-2]:
        raise ShapeError(
            f"Last 2 dimensions of the array must be square, got shape {format_shape(t.shape)}",
            op=op,
            shapes=[t.shape],
        )
    return t


def _mT(t: Tensor) -> Tensor:
    return swapaxes(t, -1, -2)


# -- eigh, eigvalsh -----------------------------------------------------------------------


def _symmetric(t: Tensor, uplo: Any, op: str) -> Tensor:
    """The symmetric matrix NumPy's ``eigh`` sees: the ``UPLO`` triangle mirrored."""
    if uplo == "L":
        return tril(t) + _mT(tril(t, -1))
    if uplo == "U":
        return triu(t) + _mT(triu(t, 1))
    raise UnsupportedError(f"UPLO argument must be 'L' or 'U', got {uplo!r}", op=op)


def _eigh(a: Operand, uplo: Any, op: str) -> EighResult:
    t = _matrices(a, op, square=True)
    packed = Tensor(Eigh(uplo, _symmetric(t, uplo, op).term))
    return EighResult(packed[0, ..., 0, :], packed[1])


@numpy_function
def eigh(a: Operand, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, reading only the
    ``UPLO`` triangle (NumPy's ``linalg.eigh``); the construct ``eigh`` of the mirrored
    triangle, so gradients are those of NumPy's function of ``a``."""
    return _eigh(a, UPLO, "linalg.eigh")


@numpy_function
def eigvalsh(a: Operand, UPLO: str = "L") -> Tensor:
    """The eigenvalues of ``eigh`` (NumPy's ``linalg.eigvalsh``)."""
    return _eigh(a, UPLO, "linalg.eigvalsh").eigenvalues


# -- svd, svdvals --------------------------------------------------------------------------


def _svd_hermitian(t: Tensor, compute_uv: bool) -> Any:
    """NumPy's ``svd(hermitian=True)``: from ``eigh``, by ``|w|`` descending."""
    w, v = _eigh(t, "L", "linalg.svd")
    s = abs_(w)
    if not compute_uv:
        return flip(sort(s, axis=-1), axis=-1)
    order = flip(argsort(s, axis=-1), axis=-1)
    signs = take_along_axis(sign(w), order, axis=-1)
    s = take_along_axis(s, order, axis=-1)
    u = take_along_axis(v, expand_dims(order, -2), axis=-1)
    vh = _mT(u * expand_dims(signs, -2))
    return SVDResult(u, s, vh)


def _svd(t: Tensor, full_matrices: bool) -> SVDResult:
    *_, m, n = t.shape
    k = min(m, n)
    full = bool(full_matrices) and m != n
    packed = Tensor(Svd(full, t.term))
    if full:
        return SVDResult(packed[0, ..., :m, :m], packed[2, ..., 0, :k], _mT(packed[1, ..., :n, :n]))
    return SVDResult(packed[0, ..., :m, :], packed[2, ..., 0, :], _mT(packed[1, ..., :n, :]))


def _singular_values(t: Tensor) -> Tensor:
    return Tensor(Svd(False, t.term))[2, ..., 0, :]


@numpy_function
def svd(
    a: Operand, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
) -> Any:
    """Singular value decomposition (NumPy's ``linalg.svd``): ``SVDResult(U, S, Vh)``,
    or ``S`` alone without ``compute_uv``.  Differentiable for ``full_matrices=False``, a
    square matrix, or ``compute_uv=False``; ``full_matrices=True`` of a non-square matrix
    gives NumPy's values and its derivative is an :class:`UnsupportedError`, as JAX's."""
    op = "linalg.svd"
    t = _matrices(a, op)
    if hermitian:
        if t.shape[-1] != t.shape[-2]:
            raise ShapeError(
                f"Last 2 dimensions of the array must be square, got shape {format_shape(t.shape)}",
                op=op,
                shapes=[t.shape],
            )
        return _svd_hermitian(t, compute_uv)
    if not compute_uv:
        return _singular_values(t)
    return _svd(t, full_matrices)


@numpy_function
def svdvals(x: Operand, /) -> Tensor:
    """The singular values, descending (NumPy's ``linalg.svdvals``)."""
    return _singular_values(_matrices(x, "linalg.svdvals"))


# -- qr ---------------------------------------------------------------------------------


@numpy_function
def qr(a: Operand, mode: str = "reduced") -> Any:
    """QR decomposition (NumPy's ``linalg.qr``), modes ``'reduced'``, ``'complete'`` and
    ``'r'``; differentiable in modes ``'reduced'`` and ``'r'`` for ``m >= n`` (and
    ``'complete'`` of a square matrix), as JAX's ``qr_jvp_rule``."""
    op = "linalg.qr"
    if mode not in ("reduced", "complete", "r"):
        raise UnsupportedError(
            f"mode {mode!r}: dualarr's qr has modes 'reduced', 'complete' and 'r'", op=op
        )
    t = _matrices(a, op)
    *_, m, n = t.shape
    k = min(m, n)
    complete = mode == "complete" and m > n
    packed = Tensor(Qr("complete" if complete else "reduced", t.term))
    if complete:
        return QRResult(packed[0, ..., :, :m], packed[1, ..., :, :n])
    r = packed[1, ..., :k, :]
    if mode == "r":
        return r
    return QRResult(packed[0, ..., :, :k], r)


# -- pinv, lstsq ----------------------------------------------------------------------------


def _cutoff_inverse(s: Tensor, rcond: Any) -> Tensor:
    """``1/s`` where ``s > rcond · max(s)``, else 0 (NumPy's ``pinv``)."""
    cutoff = expand_dims(rcond, -1) * max_(s, axis=-1, keepdims=True)
    large = s > cutoff
    return where(large, 1 / where(large, s, ones_like(s)), zeros_like(s))


def _pinv(t: Tensor, rcond: Any, hermitian: bool) -> Tensor:
    if hermitian:
        u, s, vh = _svd_hermitian(t, True)
    else:
        u, s, vh = _svd(t, False)
    rcond_t = asarray(rcond, dtype=t.dtype) if not isinstance(rcond, Tensor) else rcond
    inverse = _cutoff_inverse(s, rcond_t)
    return matmul(_mT(vh), expand_dims(inverse, -1) * _mT(u))


@numpy_function
def pinv(
    a: Operand, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NO_VALUE
) -> Tensor:
    """The Moore-Penrose pseudo-inverse from the SVD, singular values at most
    ``rcond · max(s)`` dropped (NumPy's ``linalg.pinv``, its defaults: ``rcond=1e-15``;
    ``rtol=None`` is ``max(m, n) · eps``).  Differentiable where the rank is constant."""
    op = "linalg.pinv"
    t = _matrices(a, op)
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(t.shape[-2:]) * float(np.finfo(t.dtype).eps)
        else:
            rcond = rtol
    elif rtol is not _NO_VALUE:
        raise UnsupportedError("`rtol` and `rcond` can't be both set.", op=op)
    return _pinv(t, rcond, hermitian)


@numpy_function
def lstsq(a: Operand, b: Operand, rcond: Any = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Least squares (NumPy's ``linalg.lstsq``): ``(x, residuals, rank, s)`` for 2-D
    ``a`` and 1-D or 2-D ``b``, ``x = V diag(1/s) U^T b`` over the singular values above
    ``rcond · max(s)`` (``rcond=None``: ``eps · max(m, n)``).  ``x``, ``residuals`` and
    ``s`` are differentiable.  A traced shape cannot depend on the data, so the
    residuals (the squared norms of ``b - a x``' columns) are given whenever ``m > n``,
    as NumPy gives them at full column rank (NumPy gives none when the rank is lower)."""
    op = "linalg.lstsq"
    ta, tb = _float(a, op), _float(b, op)
    dtype = np.result_type(ta.dtype, tb.dtype)
    ta, tb = astype(ta, dtype), astype(tb, dtype)
    one_d = tb.ndim == 1
    if ta.ndim != 2 or tb.ndim not in (1, 2):
        raise ShapeError(
            f"{ta.ndim}-dimensional array given. Array must be two-dimensional",
            op=op,
            shapes=[ta.shape, tb.shape],
        )
    m, n = ta.shape
    if tb.shape[0] != m:
        raise ShapeError("Incompatible dimensions", op=op, shapes=[ta.shape, tb.shape])
    if rcond is None:
        rcond = float(np.finfo(dtype).eps) * max(m, n)
    u, s, vh = _svd(ta, False)
    inverse = _cutoff_inverse(s, asarray(rcond, dtype=dtype))
    rhs = expand_dims(tb, -1) if one_d else tb
    x = matmul(_mT(vh), expand_dims(inverse, -1) * matmul(_mT(u), rhs))
    rank = count_nonzero(inverse != 0)
    residuals = sum_((rhs - matmul(ta, x)) ** 2, axis=0) if m > n else zeros((0,), dtype=dtype)
    return (x[:, 0] if one_d else x), residuals, astype(rank, np.int32), s


# -- norms, cond, matrix_rank -----------------------------------------------------------


def _vector_norm(x: Tensor, ord: Any, axis: int, keepdims: bool, op: str) -> Tensor:
    if ord is None or ord == 2:
        return sqrt(sum_(x * x, axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise UnsupportedError(f"Invalid norm order '{ord}' for vectors", op=op)
    if ord == np.inf:
        return max_(abs_(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return min_(abs_(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return sum_(astype(x != 0, x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return sum_(abs_(x), axis=axis, keepdims=keepdims)
    p = float(ord)
    return sum_(abs_(x) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _svd_norm(x: Tensor, row: int, col: int, reduce: Any) -> Tensor:
    moved = moveaxis(x, (row, col), (-2, -1))
    result: Tensor = reduce(_singular_values(moved), axis=-1)
    return result


def _matrix_norm(x: Tensor, ord: Any, row: int, col: int, op: str) -> Tensor:
    """NumPy's matrix norms over ``(row, col)`` (``numpy/linalg/py``'s ``norm``)."""
    if ord == 2:
        return _svd_norm(x, row, col, max_)
    if ord == -2:
        return _svd_norm(x, row, col, min_)
    if ord in (1, -1):
        reduce = max_ if ord == 1 else min_
        return reduce(sum_(abs_(x), axis=row), axis=col - 1 if col > row else col)
    if ord in (np.inf, -np.inf):
        reduce = max_ if ord == np.inf else min_
        return reduce(sum_(abs_(x), axis=col), axis=row - 1 if row > col else row)
    if ord is None or ord in ("fro", "f"):
        return sqrt(sum_(x * x, axis=(row, col)))
    if ord == "nuc":
        return _svd_norm(x, row, col, sum_)
    raise UnsupportedError(f"Invalid norm order {ord!r} for matrices", op=op)


@numpy_function
def norm(x: Operand, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Matrix or vector norm (NumPy's ``linalg.norm``): every ``ord`` NumPy gives a real
    result for — vectors ``None``/2, ``inf``, ``-inf``, 0, 1 and any ``p``; matrices
    ``'fro'``, ``'nuc'``, 1, -1, 2, -2, ``inf``, ``-inf`` (2, -2 and ``'nuc'`` from the
    singular values)."""
    op = "linalg.norm"
    t = _float(x, op)
    nd = t.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            flat = ravel(t)
            result = sqrt(sum_(flat * flat))
            return reshape(result, (1,) * nd) if keepdims else result
        axes: tuple[int, ...] = tuple(range(nd))
    elif isinstance(axis, tuple | list):
        axes = tuple(axis)
    else:
        axes = (axis,)
    if len(axes) == 1:
        a = normalize_axis(axes[0], nd, op)
        return _vector_norm(t, ord, a, keepdims, op)
    if len(axes) != 2:
        raise ShapeError("Improper number of dimensions to norm.", op=op, shapes=[t.shape])
    row, col = (normalize_axis(a, nd, op) for a in axes)
    if row == col:
        raise ShapeError("Duplicate axes given.", op=op, shapes=[t.shape])
    result = _matrix_norm(t, ord, row, col, op)
    if keepdims:
        shape = list(t.shape)
        shape[row] = shape[col] = 1
        result = reshape(result, tuple(shape))
    return result


@numpy_function
def matrix_norm(x: Operand, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:
    """The norm of the last two axes (NumPy's ``linalg.matrix_norm``)."""
    return norm(_matrices(x, "linalg.matrix_norm"), axis=(-2, -1), keepdims=keepdims, ord=ord)


@numpy_function
def vector_norm(x: Operand, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:
    """The vector norm over ``axis`` (all axes when ``None``, several flattened into
    one), as NumPy's ``linalg.vector_norm``."""
    op = "linalg.vector_norm"
    t = _float(x, op)
    shape = t.shape
    if axis is None:
        flat = ravel(t)
        axes: tuple[int, ...] = tuple(range(t.ndim))
    elif isinstance(axis, tuple | list):
        axes = tuple(normalize_axis(a, t.ndim, op) for a in axis)
        rest = tuple(d for d in range(t.ndim) if d not in axes)
        size = int(np.prod([shape[d] for d in axes]))
        flat = reshape(transpose(t, (*axes, *rest)), (size, *(shape[d] for d in rest)))
    else:
        axes = (normalize_axis(axis, t.ndim, op),)
        result = norm(t, axis=axes[0], ord=ord, keepdims=keepdims)
        return result
    result = norm(flat, axis=0, ord=ord)
    if keepdims:
        result = reshape(result, tuple(1 if d in axes else shape[d] for d in range(t.ndim)))
    return result


@numpy_function
def cond(x: Operand, p: Any = None) -> Tensor:
    """The condition number (NumPy's ``linalg.cond``): ``s_max / s_min`` for ``p`` in
    ``None``, 2 (``s_min / s_max`` for -2); else ``norm(x, p) · norm(x^-1, p)`` with the
    inverse from the SVD (of a square, invertible matrix)."""
    op = "linalg.cond"
    t = _matrices(x, op)
    if p is None or p == 2 or p == -2:
        s = _singular_values(t)
        if p == -2:
            return s[..., -1] / s[..., 0]
        return s[..., 0] / s[..., -1]
    if t.shape[-1] != t.shape[-2]:
        raise ShapeError(
            f"Last 2 dimensions of the array must be square, got shape {format_shape(t.shape)}",
            op=op,
            shapes=[t.shape],
        )
    inverse = _pinv(t, 0.0, False)
    rank = t.ndim
    return norm(t, p, axis=(rank - 2, rank - 1)) * norm(inverse, p, axis=(rank - 2, rank - 1))


@numpy_function
def matrix_rank(
    A: Operand,
    tol: Any = None,
    hermitian: bool = False,
    *,
    rtol: Any = None,
) -> Tensor:
    """The number of singular values above ``tol`` (NumPy's ``linalg.matrix_rank``; by
    default ``max(s) · max(m, n) · eps``): an integer, not differentiated."""
    op = "linalg.matrix_rank"
    t = _float(A, op)
    if t.ndim < 2:
        return astype(any_(t != 0), np.int64)
    s = svd(t, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(t.shape[-2:]) * float(np.finfo(t.dtype).eps)
        else:
            rtol = expand_dims(asarray(rtol, dtype=t.dtype), -1)
        limit = max_(s, axis=-1, keepdims=True) * rtol
    else:
        limit = expand_dims(asarray(tol, dtype=t.dtype), -1)
    return astype(count_nonzero(s > limit, axis=-1), np.int64)

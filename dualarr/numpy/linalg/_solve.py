"""Solves, inverses, determinants and the Cholesky factor (``numpy.linalg``'s names and
signatures, NumPy 2's semantics).

Each lowers onto the constructs of :mod:`dualarr.constructs.linalg_solve` (``solve``,
``inv``, ``logabsdet``, ``signdet``, ``cholesky``: kit extensions, not from the paper)
and ``dnp`` operations: ``det`` is ``sign · exp(log|det|)``, ``matrix_power`` NumPy's
repeated squaring with ``matmul``, ``tensorsolve``/``tensorinv`` reshapes around a
solve and an inverse.  Stacks broadcast over their leading (batch) dimensions as
NumPy's do; integers and bools promote to float64, float32 stays float32.  A shape
NumPy rejects (``LinAlgError``) is a :class:`~dualarr.ShapeError` at trace time; a
singular matrix at run time raises NumPy's ``numpy.linalg.LinAlgError``, as NumPy does.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ...constructs.linalg_solve import Cholesky, Inv, LogAbsDet, SignDet, Solve
from ...lang.errors import DtypeError, ShapeError, format_shape
from ...lang.tensor import Operand, Tensor
from ...lang.terms import DType
from .._core import normalize_axis, numpy_function, to_tensor
from .._creation import astype
from .._linalg import matmul
from .._shape import broadcast_to, reshape, swapaxes, transpose
from .._ufuncs import exp

__all__ = [
    "cholesky",
    "det",
    "inv",
    "matrix_power",
    "slogdet",
    "solve",
    "tensorinv",
    "tensorsolve",
]


class SlogdetResult(NamedTuple):
    """``slogdet``'s result, as NumPy's ``SlogdetResult``: ``(sign, logabsdet)``."""

    sign: Tensor
    logabsdet: Tensor


def _float_type(*tensors: Tensor) -> DType:
    """NumPy's ``linalg`` result type: float32 if every operand is float32, else float64
    (integers and bools promote to float64)."""
    return DType.FLOAT32 if all(t.term.dtype is DType.FLOAT32 for t in tensors) else DType.FLOAT64


def _as(t: Tensor, dtype: DType, op: str) -> Tensor:
    return t if t.term.dtype is dtype else astype(t, dtype, op)


def _stack(a: Operand, op: str, what: str = "a") -> Tensor:
    """``a`` as a float stack of square matrices (NumPy's ``_assert_stacked_square``)."""
    t = to_tensor(a, op)
    shape = t.shape
    if len(shape) < 2:
        raise ShapeError(
            f"{len(shape)}-dimensional array given: {what} {format_shape(shape)} must be at "
            "least two-dimensional",
            op=op,
            shapes=[shape],
        )
    if shape[-1] != shape[-2]:
        raise ShapeError(
            f"last 2 dimensions of {what} {format_shape(shape)} must be square",
            op=op,
            shapes=[shape],
        )
    return t


@numpy_function
def solve(a: Operand, b: Operand) -> Tensor:
    """The solution ``x`` of ``a @ x = b`` (``numpy.linalg.solve``, NumPy 2): ``b`` is a
    vector (broadcast over ``a``'s batch) only when it is one-dimensional, else a stack of
    matrices whose batch dimensions broadcast with ``a``'s.  One ``solve`` construct."""
    op = "numpy.linalg.solve"
    ta, tb = _stack(a, op), to_tensor(b, op)
    dtype = _float_type(ta, tb)
    ta, tb = _as(ta, dtype, op), _as(tb, dtype, op)
    n, batch_a = ta.shape[-1], ta.shape[:-2]
    if len(tb.shape) == 1:
        if tb.shape[0] != n:
            raise ShapeError(
                f"b {format_shape(tb.shape)} does not match a {format_shape(ta.shape)} "
                f"({tb.shape[0]} != {n})",
                op=op,
                shapes=[ta.shape, tb.shape],
            )
        column = broadcast_to(reshape(tb, (n, 1)), (*batch_a, n, 1))
        x = Tensor(Solve(ta.term, column.term))
        return reshape(x, (*batch_a, n))
    if len(tb.shape) == 0 or tb.shape[-2] != n:
        raise ShapeError(
            f"b {format_shape(tb.shape)} is not a stack of {n}-row matrices for a "
            f"{format_shape(ta.shape)} (a one-dimensional b is a vector)",
            op=op,
            shapes=[ta.shape, tb.shape],
        )
    try:
        batch = np.broadcast_shapes(batch_a, tb.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"the batch dimensions of a {format_shape(ta.shape)} and b "
            f"{format_shape(tb.shape)} do not broadcast",
            op=op,
            shapes=[ta.shape, tb.shape],
        ) from None
    ta = ta if ta.shape[:-2] == batch else broadcast_to(ta, (*batch, n, n))
    full_b = (*batch, *tb.shape[-2:])
    tb = tb if tb.shape == full_b else broadcast_to(tb, full_b)
    return Tensor(Solve(ta.term, tb.term))


@numpy_function
def inv(a: Operand) -> Tensor:
    """The inverse of every matrix of a stack (``numpy.linalg.inv``): one ``inv``."""
    op = "numpy.linalg.inv"
    t = _stack(a, op)
    return Tensor(Inv(_as(t, _float_type(t), op).term))


@numpy_function
def slogdet(a: Operand) -> SlogdetResult:
    """``(sign, logabsdet)`` of every matrix of a stack (``numpy.linalg.slogdet``): the
    ``signdet`` and ``logabsdet`` constructs (the sign's derivative is 0)."""
    op = "numpy.linalg.slogdet"
    t = _stack(a, op)
    t = _as(t, _float_type(t), op)
    return SlogdetResult(Tensor(SignDet(t.term)), Tensor(LogAbsDet(t.term)))


@numpy_function
def det(a: Operand) -> Tensor:
    """The determinant of every matrix of a stack (``numpy.linalg.det``), as
    ``sign · exp(log|det|)``: the same LU factorisation NumPy's ``det`` uses."""
    sign, logabsdet = slogdet(a)
    return sign * exp(logabsdet)


@numpy_function
def cholesky(a: Operand, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of every matrix of a stack (``numpy.linalg.cholesky``):
    lower (reading ``a``'s lower triangle) or, with ``upper``, upper (reading its upper
    triangle, as the factor of ``aᵀ`` transposed)."""
    op = "numpy.linalg.cholesky"
    t = _stack(a, op)
    t = _as(t, _float_type(t), op)
    if not upper:
        return Tensor(Cholesky(t.term))
    return swapaxes(Tensor(Cholesky(swapaxes(t, -1, -2).term)), -1, -2)


@numpy_function
def matrix_power(a: Operand, n: int) -> Tensor:
    """``a`` to the integer power ``n`` (``numpy.linalg.matrix_power``): NumPy's binary
    decomposition into ``matmul``s (the same products in the same order), ``n < 0`` by
    the inverse first, ``n == 0`` the identity of ``a``'s type."""
    op = "numpy.linalg.matrix_power"
    t = _stack(a, op)
    try:
        power = operator.index(n)
    except TypeError:
        raise DtypeError(f"exponent must be an integer, got {n!r}", op=op) from None
    if power == 0:
        eye = np.broadcast_to(np.eye(t.shape[-1], dtype=t.dtype), t.shape)
        return to_tensor(np.ascontiguousarray(eye), op)
    if power < 0:
        t, power = inv(t), -power
    if power == 1:
        return t
    if power == 2:
        return matmul(t, t)
    if power == 3:
        return matmul(matmul(t, t), t)
    z: Tensor | None = None
    result: Tensor | None = None
    while power > 0:
        z = t if z is None else matmul(z, z)
        power, bit = divmod(power, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    assert result is not None
    return result


@numpy_function
def tensorinv(a: Operand, ind: int = 2) -> Tensor:
    """The inverse of ``a`` read as a matrix whose rows are its first ``ind`` dimensions
    (``numpy.linalg.tensorinv``): a reshape around one ``inv``."""
    op = "numpy.linalg.tensorinv"
    t = to_tensor(a, op)
    if not isinstance(ind, int) or ind <= 0:
        raise ShapeError(f"invalid ind argument {ind!r}: a positive int", op=op)
    rows, cols = t.shape[:ind], t.shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise ShapeError(
            f"a {format_shape(t.shape)} read with ind={ind} is not square "
            f"({math.prod(rows)} x {math.prod(cols)})",
            op=op,
            shapes=[t.shape],
        )
    inverse = inv(reshape(t, (math.prod(cols), math.prod(rows))))
    return reshape(inverse, (*cols, *rows))


@numpy_function
def tensorsolve(a: Operand, b: Operand, axes: Sequence[int] | None = None) -> Tensor:
    """The ``x`` with ``tensordot(a, x, axes=x.ndim) == b`` (``numpy.linalg.tensorsolve``):
    ``axes`` of ``a`` moved last, then a reshape around one ``solve``."""
    op = "numpy.linalg.tensorsolve"
    ta, tb = to_tensor(a, op), to_tensor(b, op)
    rank = len(ta.shape)
    if axes is not None:
        order = list(range(rank))
        for k in axes:
            axis = normalize_axis(k, rank, op, "axes entry")
            if axis not in order:
                raise ShapeError(f"repeated axis {k} in axes {tuple(axes)}", op=op)
            order.remove(axis)
            order.append(axis)
        ta = transpose(ta, order)
    unknown = ta.shape[len(tb.shape) :]
    size = math.prod(unknown)
    if math.prod(ta.shape) != size**2 or math.prod(tb.shape) != size:
        raise ShapeError(
            f"a {format_shape(ta.shape)} and b {format_shape(tb.shape)} do not give a "
            "square system: prod(a.shape[b.ndim:]) must equal prod(a.shape[:b.ndim])",
            op=op,
            shapes=[ta.shape, tb.shape],
        )
    x = solve(reshape(ta, (size, size)), reshape(tb, (size,)))
    return reshape(x, unknown)

"""Deltas of matrix expressions, for the derivative rules of the linear-algebra constructs.

Not from the paper: a kit extension.  A linear-algebra construct (a solve, a
factorisation) is not linear, so its derivative rule (``DERIVATIVES``, Fig. 14's role)
builds the Delta of its result from the Deltas of its operands with the paper's Delta
constructors (Fig. 16) and the kit's ``Contract``: products with primal matrices are
``Contract`` nodes, elementwise factors and masks ``Scale`` nodes, sums ``Add``.  Every
stage already knows these nodes — the reverse pass and forward evaluation (§4), the
symbolic reverse pass (§7.1), transposition as a linear program (§6), printing — so a
rule written with them is differentiated, transposed and compiled with no stage
changed.  The primal factors come from the dual algebra's primal algebra (arrays in the
concrete pass, terms in the symbolic one), so one rule serves both.

Matrices are stacks: the last two dimensions are the matrix, the others a batch that
every product keeps (NumPy's ``linalg`` broadcasting convention, as ``np.matmul``).
"""

from __future__ import annotations

import string
from typing import Any, TypeGuard

import numpy as np

from ..ad import delta as dl
from ..interp.algebra import Algebra
from ..lang.terms import DType

__all__ = [
    "constant_factor",
    "delta_add",
    "delta_mT",
    "delta_matmul",
    "delta_scale",
    "delta_sum",
]

_BATCH = string.ascii_lowercase[: 26 - 3]  # the batch letters; x, y, z name the matrix


def _letters(rank: int, matrix: str) -> str:
    """The letters of a stack of rank ``rank`` whose last ``len(matrix)`` dimensions are
    ``matrix``: the batch dimensions get the same letters in every operand."""
    batch = rank - len(matrix)
    if batch > len(_BATCH):
        raise ValueError(f"a stack of {batch} batch dimensions is too deep")
    return _BATCH[:batch] + matrix


def _is_delta(value: Any) -> TypeGuard[dl.Delta]:
    return isinstance(value, dl.DeltaBase)


def delta_matmul(left: Any, right: Any) -> dl.Delta:
    """The Delta of ``left @ right`` (batched, as ``np.matmul`` on stacks of matrices of
    equal batch shape) where exactly one side is a Delta and the other a primal matrix:
    one ``Contract`` linear in the Delta.  A ``Zero`` Delta stays ``Zero``."""
    d: dl.Delta
    if _is_delta(left):
        d, f, d_letters, f_letters = left, right, "xy", "yz"
        out_shape = (*d.shape[:-1], f.shape[-1])
    else:
        assert _is_delta(right)
        d, f, d_letters, f_letters = right, left, "yz", "xy"
        out_shape = (*d.shape[:-2], f.shape[-2], d.shape[-1])
    assert not _is_delta(f)
    rank = len(d.shape)
    if isinstance(d, dl.Zero):
        return dl.Zero(out_shape, d.dtype)
    spec = f"{_letters(rank, d_letters)},{_letters(rank, f_letters)}->{_letters(rank, 'xz')}"
    return dl.Contract(spec, d, f)


def delta_mT(d: dl.Delta) -> dl.Delta:
    """The Delta of a stack of matrices transposed (``.mT``): its last two dimensions
    swapped."""
    rank = len(d.shape)
    if isinstance(d, dl.Zero):
        return dl.Zero((*d.shape[:-2], d.shape[-1], d.shape[-2]), d.dtype)
    perm = (*range(rank - 2), rank - 1, rank - 2)
    return dl.Transpose(perm, d)


def delta_scale(factor: Any, d: dl.Delta) -> dl.Delta:
    """``factor ⊙ d``: elementwise by a primal value of ``d``'s shape."""
    if isinstance(d, dl.Zero):
        return d
    return dl.Scale(factor, d)


def delta_add(a: dl.Delta, b: dl.Delta) -> dl.Delta:
    """``a + b``, a ``Zero`` on either side dropped."""
    if isinstance(a, dl.Zero):
        return b
    if isinstance(b, dl.Zero):
        return a
    return dl.Add(a, b)


def delta_sum(*deltas: dl.Delta) -> dl.Delta:
    """The sum of one or more Deltas of one shape, ``Zero`` ones dropped."""
    total = deltas[0]
    for d in deltas[1:]:
        total = delta_add(total, d)
    return total


def constant_factor(alg: Algebra[Any], value: Any, shape: tuple[int, ...], dtype: DType) -> Any:
    """A constant (a mask, ``-1``, ``1/2`` on a diagonal) broadcast to ``shape`` as a
    primal value of element type ``dtype`` in the primal algebra ``alg``: a factor for
    :func:`delta_scale`."""
    array = np.broadcast_to(np.asarray(value, dtype=dtype.numpy()), shape)
    return alg.const(np.ascontiguousarray(array))

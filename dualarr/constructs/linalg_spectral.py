"""The spectral factorisations of ``numpy.linalg`` as structural constructs: ``eigh``,
``svd`` and ``qr``.

Not from the paper: kit extensions (``book/constructs.md``).  A term has one array
result, so each factorisation packs its factors into one array whose *first* dimension
lists the factors (each padded with zeros to one matrix shape), then the stack's batch
dimensions, then the matrix: ``dualarr.numpy.linalg`` reads a factor with an index on
that first dimension and a slice (a gather: a view).

- ``eigh a`` of a symmetric ``a : τ[..., n, n]`` is ``τ[2, ..., n, n]``: factor 0 holds
  the eigenvalues ``w`` (ascending, as LAPACK's ``syevd``) in every row, factor 1 the
  eigenvectors ``V`` (columns).
- ``svd a`` of ``a : τ[..., m, n]`` with ``k = min(m, n)`` and ``L = max(m, n)`` is
  ``τ[3, ..., L, k]`` (reduced): ``U`` (``m × k``), ``V = Vh^T`` (``n × k``), each
  padded to ``L`` rows, and ``s`` (descending) in every row; with ``full_matrices`` it
  is ``τ[3, ..., L, L]`` holding ``U`` (``m × m``), ``V`` (``n × n``) and ``s``.
- ``qr a`` of ``a : τ[..., m, n]`` (``k = min(m, n)``) is ``τ[2, ..., m, n]`` (mode
  ``reduced``): ``Q`` (``m × k``) padded to ``n`` columns and ``R`` (``k × n``) padded
  to ``m`` rows; mode ``complete`` is ``τ[2, ..., m, max(m, n)]``: ``Q`` (``m × m``) and
  ``R`` (``m × n``).

Each has its meaning on arrays (``xp.linalg.eigh``/``svd``/``qr`` of NumPy, CuPy and
``array_api_strict``), its derivative (a JVP built from the operand's Delta with the
Deltas of matrix expressions, :mod:`dualarr.constructs.linear_deltas`, so no transpose
rule is needed: the reverse pass transposes those nodes) and its bot rules.  The
derivatives are the ones JAX implements (``jax/_src/lax/linalg.py``):

- eigh (Giles 2008, *An extended collection of matrix derivative results*, the
  symmetric eigenvalue problem; JAX's ``eigh_jvp_rule``): with ``M = V^T dA V``,
  ``dw = diag M`` and ``dV = V (F ⊙ M)``, ``F_ij = 1/(w_j - w_i)`` off the diagonal and 0
  on it.  As JAX documents, the eigenvector derivative is undefined where two
  eigenvalues coincide (it grows without bound as they meet); at exactly equal ones
  ``F`` is 0 here rather than infinite, so the eigenvalues' derivative ``diag M`` (JAX's
  too) is not turned into NaN by ``0 · ∞`` in the reverse pass.
- svd (Townsend 2016, *Differentiating the singular value decomposition*; JAX's
  ``svd_jvp_rule``): ``dS = U^T dA V``, ``ds = diag dS``, ``F_ij = 1/(s_j^2 - s_i^2)``,
  ``dU = U (F ⊙ (dS s + s dS^T)) + (I - U U^T) dA V / s`` and ``dV = V (F ⊙ (s dS +
  dS^T s)) + (I - V V^T) dA^T U / s`` (the last terms for ``m > n`` and ``n > m``).
  Repeated or zero singular values make ``dU``, ``dV`` undefined, as in JAX.  With
  ``full_matrices`` and ``m != n`` the derivative is an :class:`UnsupportedError`, as
  JAX's (the completed basis is not unique).
- qr (JAX's ``qr_jvp_rule``, mode ``reduced``, ``m >= n``): ``C = Q^T dA R^-1``,
  ``Ω = tril(C, -1) - tril(C, -1)^T``, ``dQ = Q (Ω - C) + dA R^-1``, ``dR = (C - Ω) R``;
  ``R^-1`` is computed from ``svd R`` (this module's own construct).  ``m < n`` and
  ``complete`` with ``m != n``: an :class:`UnsupportedError`, as JAX's.

SymPy has no closed form for these: their meaning on SymPy's object arrays is an
:class:`UnsupportedError`, so ``check_grad`` reports its SymPy check skipped.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ad import delta as dl
from ..ad.dual import DERIVATIVES, Dual, DualAlgebra
from ..interp.algebra import ARRAY_MEANINGS, Algebra
from ..lang import indexing as ix_
from ..lang.errors import DtypeError, ShapeError, UnsupportedError, format_shape
from ..lang.terms import (
    Const,
    DType,
    Gather,
    Index,
    Let,
    Shape,
    Structural,
    Term,
    Transpose,
    fresh_var,
)
from ..vectorise.bot import (
    BUILD1_INDEX_RULES,
    BUILD1_RULES,
    INDEX_RULES,
    IndexPusher,
    Push,
    Rewrite,
    Vec,
    Vectoriser,
)
from ..vectorise.simplify import REWRITE_NAMES, SMART_CONSTRUCTORS, Simplifier, is_small_constant
from .linear_deltas import constant_factor, delta_add, delta_matmul, delta_mT, delta_scale

__all__ = ["Eigh", "Qr", "Svd"]

_KIT = "a linear-algebra factorisation (dualarr.constructs.linalg_spectral), not in the paper"


def _matrix_stack(op: str, shapes: Sequence[Shape], dtypes: Sequence[DType]) -> Shape:
    """The one operand's shape, checked to be a float stack of matrices."""
    (shape,), (dtype,) = shapes, dtypes
    if len(shape) < 2:
        raise ShapeError(
            f"{len(shape)}-dimensional array given; the array must be at least "
            f"two-dimensional, got shape {format_shape(shape)}",
            op=op,
            shapes=[shape],
        )
    if not dtype.is_float:
        raise DtypeError(f"a float array is needed, got {dtype}", op=op)
    return shape


@dataclass(frozen=True, eq=False, repr=False)
class Eigh(Structural):
    """``eigh a``: eigenvalues and eigenvectors of a symmetric stack, packed as
    ``[w in every row, V]`` (a kit construct)."""

    name = "eigh"
    uplo: str  # the triangle LAPACK reads (both hold the same symmetric matrix)
    array: Term

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        if params["uplo"] not in ("L", "U"):
            raise UnsupportedError(
                f"UPLO argument must be 'L' or 'U', got {params['uplo']!r}", op="linalg.eigh"
            )
        shape = _matrix_stack("linalg.eigh", shapes, dtypes)
        if shape[-1] != shape[-2]:
            raise ShapeError(
                f"last 2 dimensions of the array must be square, got {format_shape(shape)}",
                op="linalg.eigh",
                shapes=[shape],
            )
        return (2, *shape), dtypes[0]


@dataclass(frozen=True, eq=False, repr=False)
class Svd(Structural):
    """``svd a``: the singular value decomposition, packed as ``[U, V, s in every row]``
    (a kit construct)."""

    name = "svd"
    full_matrices: bool
    array: Term

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        shape = _matrix_stack("linalg.svd", shapes, dtypes)
        *batch, m, n = shape
        big = max(m, n)
        cols = big if params["full_matrices"] else min(m, n)
        return (3, *batch, big, cols), dtypes[0]


@dataclass(frozen=True, eq=False, repr=False)
class Qr(Structural):
    """``qr a``: the QR decomposition, packed as ``[Q, R]`` (a kit construct)."""

    name = "qr"
    mode: str
    array: Term

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        shape = _matrix_stack("linalg.qr", shapes, dtypes)
        *batch, m, n = shape
        mode = params["mode"]
        if mode not in ("reduced", "complete"):
            raise UnsupportedError(f"mode {mode!r} of the qr construct", op="linalg.qr")
        return (2, *batch, m, n if mode == "reduced" else max(m, n)), dtypes[0]


# -- meanings on arrays -------------------------------------------------------------------


def _numeric(array: Any, op: str) -> None:
    if isinstance(array, np.ndarray) and array.dtype == np.dtype(object):
        raise UnsupportedError(
            f"SymPy cannot evaluate {op}: it has no closed form in general", op=op
        )


def _pad(xp: Any, x: Any, rows: int, cols: int) -> Any:
    """``x`` (a stack of matrices) padded with zeros to ``rows × cols``."""
    *batch, r, c = x.shape
    if r < rows:
        x = xp.concat([x, xp.zeros((*batch, rows - r, c), dtype=x.dtype)], axis=-2)
    if c < cols:
        x = xp.concat([x, xp.zeros((*batch, rows, cols - c), dtype=x.dtype)], axis=-1)
    return x


def _every_row(xp: Any, values: Any, rows: int) -> Any:
    """A stack of vectors ``(..., k)`` repeated in ``rows`` rows: ``(..., rows, k)``."""
    return xp.broadcast_to(
        xp.expand_dims(values, axis=-2), (*values.shape[:-1], rows, values.shape[-1])
    )


@ARRAY_MEANINGS.register(Eigh)
def _eigh(xp: Any, array: Any, *, uplo: str) -> Any:
    """NumPy's (and CuPy's) ``eigh`` reading the ``uplo`` triangle, so that the
    eigenvectors' signs are NumPy's for either; the array API's ``eigh`` has no
    ``UPLO`` and reads the lower one (the same eigenvalues, vectors up to sign)."""
    _numeric(array, "linalg.eigh")
    if uplo == "L":
        w, v = xp.linalg.eigh(array)
    else:
        try:
            w, v = xp.linalg.eigh(array, UPLO=uplo)
        except TypeError:  # an array API namespace: no UPLO
            w, v = xp.linalg.eigh(array)
    return xp.stack([_every_row(xp, w, v.shape[-1]), v])


@ARRAY_MEANINGS.register(Svd)
def _svd(xp: Any, array: Any, *, full_matrices: bool) -> Any:
    _numeric(array, "linalg.svd")
    *_, m, n = array.shape
    big = max(m, n)
    u, s, vh = xp.linalg.svd(array, full_matrices=full_matrices)
    cols = big if full_matrices else min(m, n)
    v = xp.matrix_transpose(vh) if hasattr(xp, "matrix_transpose") else xp.swapaxes(vh, -1, -2)
    parts = [
        _pad(xp, u, big, cols),
        _pad(xp, v, big, cols),
        _pad(xp, _every_row(xp, s, big), big, cols),
    ]
    return xp.stack(parts)


@ARRAY_MEANINGS.register(Qr)
def _qr(xp: Any, array: Any, *, mode: str) -> Any:
    _numeric(array, "linalg.qr")
    *_, m, n = array.shape
    q, r = xp.linalg.qr(array, mode=mode)
    cols = n if mode == "reduced" else max(m, n)
    return xp.stack([_pad(xp, q, m, cols), _pad(xp, r, m, cols)])


# -- matrix algebra on primal values (arrays, or terms in the symbolic pass) --------------

_BATCH = string.ascii_lowercase[:20]


def _spec(rank: int, *operands: str) -> str:
    """A contraction spec over stacks of ``rank`` dimensions: each operand's matrix
    letters (``""`` for a matrix with no batch, written ``'=xy'``) after the batch ones."""
    batch = _BATCH[: rank - 2]
    parts = [p[1:] if p.startswith("=") else batch + p for p in operands]
    return f"{parts[0]},{parts[1]}->{parts[2]}"


def _mT(p: Algebra[Any], x: Any) -> Any:
    rank = len(p.shape(x))
    return p.transpose((*range(rank - 2), rank - 1, rank - 2), x)


def _mm(p: Algebra[Any], a: Any, b: Any) -> Any:
    return p.contract(_spec(len(p.shape(a)), "xy", "yz", "xz"), a, b)


def _rows(p: Algebra[Any], x: Any, count: int, dtype: DType) -> Any:
    """The first ``count`` rows of a stack of matrices (a contraction with a selection
    matrix, ``O(count · rows · cols)``)."""
    shape = p.shape(x)
    if shape[-2] == count:
        return x
    select = constant_factor(p, np.eye(count, shape[-2]), (count, shape[-2]), dtype)
    return p.contract(_spec(len(shape), "=xy", "yz", "xz"), select, x)


def _eye(p: Algebra[Any], shape: Shape, dtype: DType) -> Any:
    return constant_factor(p, np.eye(shape[-2], shape[-1]), shape, dtype)


def _sub(p: Algebra[Any], a: Any, b: Any, dtype: DType) -> Any:
    return p.op("sub", (a, b), dtype)


def _div(p: Algebra[Any], a: Any, b: Any, dtype: DType) -> Any:
    return p.op("div", (a, b), dtype)


def _safe_inverse(p: Algebra[Any], x: Any, dtype: DType) -> Any:
    """``1/x`` where ``x != 0``, and 0 where ``x == 0``: ``F`` of the vector derivatives
    (0 on its diagonal, and 0 at exactly repeated eigenvalues or singular values, where
    the vectors' derivative is undefined: it is then left out rather than made infinite,
    so that the values' derivative, which is defined there, is not poisoned by ``0 · ∞``
    in the reverse pass), and ``1/s`` at a zero singular value."""
    shape = p.shape(x)
    zero = p.full(shape, 0, dtype)
    nonzero = p.op("ne", (x, zero), DType.BOOL)
    safe = p.op("select", (nonzero, x, p.full(shape, 1, dtype)), dtype)
    return p.op("select", (nonzero, _div(p, p.full(shape, 1, dtype), safe, dtype), zero), dtype)


# -- Deltas of the pieces --------------------------------------------------------------


def _diag(alg: DualAlgebra, d: dl.Delta) -> dl.Delta:
    """The diagonal of a stack of square matrices ``(..., k, k) → (..., k)``."""
    k = d.shape[-1]
    eye = constant_factor(alg.p, np.eye(k), (k, k), d.dtype)
    return dl.Contract(_spec(len(d.shape), "xy", "=xy", "y"), d, eye)


def _in_every_row(alg: DualAlgebra, d: dl.Delta, rows: int) -> dl.Delta:
    """``(..., k) → (..., rows, k)``, the vector in every row (an outer product)."""
    ones = constant_factor(alg.p, np.ones(rows), (rows,), d.dtype)
    batch = _BATCH[: len(d.shape) - 1]
    return dl.Contract(f"{batch}y,x->{batch}xy", d, ones)


def _pad_rows(alg: DualAlgebra, d: dl.Delta, rows: int) -> dl.Delta:
    """A stack of matrices padded with zero rows to ``rows`` rows."""
    r = d.shape[-2]
    if r == rows:
        return d
    embed = constant_factor(alg.p, np.eye(rows, r), (rows, r), d.dtype)
    return dl.Contract(_spec(len(d.shape), "yz", "=xy", "xz"), d, embed)


def _negated(alg: DualAlgebra, d: dl.Delta) -> dl.Delta:
    return delta_scale(constant_factor(alg.p, -1.0, d.shape, d.dtype), d)


# -- derivatives (D, Fig. 14's role) ------------------------------------------------------


@DERIVATIVES.register(Eigh)
def _derive_eigh(
    alg: DualAlgebra,
    construct: type[Structural],
    args: Sequence[Any],
    params: Mapping[str, Any],
    y: Any,
) -> Any:
    """``dw = diag M``, ``dV = V (F ⊙ M)`` with ``M = V^T dA V`` (Giles 2008)."""
    (a,) = args
    if not isinstance(a, Dual):
        return y
    p, dtype = alg.p, a.delta.dtype
    w_rows, v = p.element(y, 0), p.element(y, 1)
    n = p.shape(v)[-1]
    m = alg.share_delta(delta_matmul(_mT(p, v), delta_matmul(a.delta, v)))
    f = _safe_inverse(p, _sub(p, w_rows, _mT(p, w_rows), dtype), dtype)
    dw = _in_every_row(alg, _diag(alg, m), n)
    dv = delta_matmul(v, delta_scale(f, m))
    return alg.dual(y, dl.FromList((dw, dv)))


@DERIVATIVES.register(Svd)
def _derive_svd(
    alg: DualAlgebra,
    construct: type[Structural],
    args: Sequence[Any],
    params: Mapping[str, Any],
    y: Any,
) -> Any:
    """Townsend (2016), as JAX's ``svd_jvp_rule`` (the module docstring)."""
    (a,) = args
    if not isinstance(a, Dual):
        return y
    p, dtype, da = alg.p, a.delta.dtype, a.delta
    *_, m, n = da.shape
    k, big = min(m, n), max(m, n)
    if params["full_matrices"] and m != n:
        raise UnsupportedError(
            f"the derivative of svd with full_matrices=True of a non-square matrix "
            f"{format_shape(da.shape)} is not defined (the completed basis is not unique; "
            "JAX's svd_jvp_rule raises too): use full_matrices=False",
            op="linalg.svd",
            shapes=[da.shape],
        )
    u = _rows(p, p.element(y, 0), m, dtype)
    v = _rows(p, p.element(y, 1), n, dtype)
    s_all = p.element(y, 2)  # s_j at [i, j]
    s = _rows(p, s_all, k, dtype)
    d_s = alg.share_delta(delta_matmul(_mT(p, u), delta_matmul(da, v)))
    ds = _in_every_row(alg, _diag(alg, d_s), big)
    s_t = _mT(p, s)
    diffs = p.mul(p.add(s, s_t, dtype), _sub(p, s, s_t, dtype), dtype)  # s_j² - s_i²
    f = _safe_inverse(p, diffs, dtype)
    dss = alg.share_delta(delta_scale(s, d_s))
    sds = alg.share_delta(delta_scale(s_t, d_s))
    du = delta_matmul(u, delta_scale(f, delta_add(dss, delta_mT(dss))))
    dv = delta_matmul(v, delta_scale(f, delta_add(sds, delta_mT(sds))))
    if m > n:  # (I - U U^T) dA V / s
        dav = alg.share_delta(delta_matmul(da, v))
        rest = delta_add(dav, _negated(alg, delta_matmul(u, delta_matmul(_mT(p, u), dav))))
        inverse = _safe_inverse(p, _rows(p, s_all, m, dtype), dtype)
        du = delta_add(du, delta_scale(inverse, rest))
    if n > m:  # (I - V V^T) dA^T U / s
        dau = alg.share_delta(delta_matmul(delta_mT(da), u))
        rest = delta_add(dau, _negated(alg, delta_matmul(v, delta_matmul(_mT(p, v), dau))))
        inverse = _safe_inverse(p, _rows(p, s_all, n, dtype), dtype)
        dv = delta_add(dv, delta_scale(inverse, rest))
    packed = (_pad_rows(alg, du, big), _pad_rows(alg, dv, big), ds)
    return alg.dual(y, dl.FromList(packed))


@DERIVATIVES.register(Qr)
def _derive_qr(
    alg: DualAlgebra,
    construct: type[Structural],
    args: Sequence[Any],
    params: Mapping[str, Any],
    y: Any,
) -> Any:
    """JAX's ``qr_jvp_rule`` (mode reduced, ``m >= n``; the module docstring)."""
    (a,) = args
    if not isinstance(a, Dual):
        return y
    p, dtype, da = alg.p, a.delta.dtype, a.delta
    *batch, m, n = da.shape
    if m < n or (params["mode"] == "complete" and m != n):
        raise UnsupportedError(
            f"the derivative of qr of a {format_shape(da.shape)} matrix in mode "
            f"{params['mode']!r} is not implemented (as in JAX, only m >= n in mode "
            "'reduced', or a square matrix)",
            op="linalg.qr",
            shapes=[da.shape],
        )
    q = p.element(y, 0)  # (m, n)
    r = _rows(p, p.element(y, 1), n, dtype)  # (n, n)
    factors = p.structural(Svd, [r], {"full_matrices": False})  # R^-1 = V diag(1/s) U^T
    ur, vr, sr = (p.element(factors, j) for j in range(3))
    ones = constant_factor(p, 1.0, (*batch, n, n), dtype)
    r_inv = _mm(p, p.mul(vr, _div(p, ones, sr, dtype), dtype), _mT(p, ur))
    dx_rinv = alg.share_delta(delta_matmul(da, r_inv))
    c = alg.share_delta(delta_matmul(_mT(p, q), dx_rinv))
    lower_mask = constant_factor(p, np.tril(np.ones((n, n)), -1), (*batch, n, n), dtype)
    lower = alg.share_delta(delta_scale(lower_mask, c))
    omega = alg.share_delta(delta_add(lower, _negated(alg, delta_mT(lower))))
    c_minus_omega = alg.share_delta(delta_add(c, _negated(alg, omega)))
    dq = delta_add(_negated(alg, delta_matmul(q, c_minus_omega)), dx_rinv)
    dr = delta_matmul(c_minus_omega, r)
    return alg.dual(y, dl.FromList((dq, _pad_rows(alg, dr, m))))


# -- the simplifier (the cleanup of §5.1 and §7.1) -----------------------------------------

_MEANINGS = {Eigh: _eigh, Svd: _svd, Qr: _qr}


@SMART_CONSTRUCTORS.register(Eigh, Svd, Qr)
def _mk_factorisation(s: Simplifier, t: Eigh | Svd | Qr) -> Term:
    """A factorisation of a small constant is folded (by NumPy's ``linalg``, as the
    arrays' meaning computes it); any other stays as it is."""
    if is_small_constant(t.array):
        return Const(np.asarray(_MEANINGS[type(t)](np, t.array.value, **t.params)))
    return t


@REWRITE_NAMES.register(Eigh, Svd, Qr)
def _named_factorisation(before: Eigh | Svd | Qr, after: Term) -> tuple[str, str]:
    return "constant-fold", "a linear-algebra construct of constants, folded"


# -- the bot (§5): Figs. 9-11 ---------------------------------------------------------------

Factorisation = Eigh | Svd | Qr


def _swap01(rank: int) -> tuple[int, ...]:
    return (1, 0, *range(2, rank))


@BUILD1_RULES.register(Eigh, Svd, Qr)
def _build1_factorisation(v: Vectoriser, e: Factorisation) -> Rewrite:
    """``build1 k (λi. f e) = tr (f (build1 k (λi. e)))``: a batched factorisation, its
    factor dimension moved back in front of the new batch one (Fig. 9)."""
    construct, params = type(e), e.params
    return Rewrite(
        f"build1-{e.name}",
        "Fig. 9",
        (Vec(e.array),),
        lambda rs: Transpose(_swap01(len(e.shape) + 1), construct.make([rs[0]], params)),
        _KIT,
    )


def _batch_split(
    a: Factorisation, ix: tuple[Term, ...]
) -> tuple[tuple[Term, ...], tuple[Term, ...]] | None:
    """``index (f e) (p, b..., r...) = index (f (index e b...)) (p', r...)`` when ``ix``
    reaches into the stack's batch dimensions: ``(b..., (p', r...))``.  Out of range,
    ``index e b...`` reads zeros and ``f`` of zeros is not zero (``eigh 0`` has the
    identity as eigenvectors), so ``p'`` is ``p`` made out of range there too: the read
    gives 0, as the total semantics of §5.2 has it."""
    batch = len(a.array.shape) - 2
    taken = min(len(ix) - 1, batch)
    if taken <= 0:
        return None
    outer = ix[1 : 1 + taken]
    part = ix_.poison(ix_.all_in_range(outer, a.array.shape), ix[0])
    return outer, (part, *ix[1 + taken :])


@BUILD1_INDEX_RULES.register(Eigh, Svd, Qr)
def _vindex_factorisation(v: Vectoriser, a: Factorisation, ix: tuple[Term, ...]) -> Rewrite:
    """``B[index (f e) ix]``: an index into the stack's batch dimensions is pushed into
    ``e`` (Fig. 10); one into the factor or matrix dimensions cannot be pushed into a
    factorisation, so it is computed whole, batched, and the diagonal read (Fig. 11,
    horde-ad's rule D)."""
    split = _batch_split(a, ix)
    if split is not None:
        outer, rest = split
        pushed = Index(type(a).make([Index(a.array, outer)], a.params), rest)
        return Rewrite(f"index-{a.name}-batch", "Fig. 10", (Vec(pushed),), lambda rs: rs[0], _KIT)
    k = v.k
    new_i = v.fresh_index_var()
    return v.with_index_function(
        f"index-{a.name}",
        "Fig. 11",
        (Vec(a),),
        ix,
        new_i,
        lambda rs, f2: Gather((k,), rs[0], (new_i,), (new_i, *f2)),
    )


@INDEX_RULES.register(Eigh, Svd, Qr)
def _push_factorisation(p: IndexPusher, a: Factorisation, ix: tuple[Term, ...]) -> Rewrite:
    """``I[f e, ix] = let x = f e in index x ix``: a factorisation is computed whole,
    then indexed (as a loop's result), so the index stays in the normal form of
    Theorem 5.1 (an index of a variable)."""
    split = _batch_split(a, ix)
    if split is not None:  # the batch part pushed into e (Fig. 10)
        outer, rest = split
        construct, params = type(a), a.params

        def assemble(rs: Sequence[Term]) -> Term:
            f = construct.make([rs[0]], params)
            x = fresh_var(p.supply, a.name, f.shape, f.dtype)
            return Let(x, f, Index(x, rest))

        return Rewrite(f"index-{a.name}-batch", "Fig. 10", (Push(a.array, outer),), assemble, _KIT)
    x = fresh_var(p.supply, a.name, a.shape, a.dtype)
    return Rewrite(f"index-{a.name}", "Theorem 5.1", (), lambda _: Let(x, a, Index(x, ix)), _KIT)

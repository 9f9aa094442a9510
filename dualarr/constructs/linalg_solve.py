"""Solves, inverses, log-determinants and the Cholesky factor: structural constructs.

Not from the paper: kit extensions (``book/constructs.md``), the primitives
``dualarr.numpy.linalg`` lowers ``solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``
and ``matrix_power`` onto.  None can be written in the core language at a constant
factor (each is an ``O(n³)`` factorisation: LU with pivoting, or Cholesky's), so each
is a construct with its rules stated once and registered in each stage's table.  Every
one works on stacks: the last two dimensions are the matrix, the leading ones a batch
shared by all operands (NumPy's ``linalg`` convention; the caller broadcasts first).

- ``solve a b``: ``X`` with ``A X = B`` for ``a : τ[..., n, n]``, ``b : τ[..., n, k]``
- ``inv a``: ``A⁻¹``
- ``logabsdet a : τ[...]``: ``log |det A|``; ``signdet a : τ[...]``: the sign of ``det A``
- ``cholesky a``: the lower factor ``L`` of ``A = L Lᵀ``, reading the lower triangle of
  ``A`` only (LAPACK's ``potrf``, as ``numpy.linalg.cholesky``)

Meaning on arrays: ``xp.linalg.<name>`` (NumPy, CuPy and ``array_api_strict`` spell them
alike); on SymPy's object arrays, SymPy's ``Matrix`` per batch element.

D (Fig. 14's role): not linear, so each rule builds its Delta from the operands' Deltas
with :mod:`dualarr.constructs.linear_deltas` (``Contract`` with primal factors, ``Scale``
by masks, ``Transpose``); those nodes are transposed by the reverse pass already, so no
transpose rule is needed.  The formulas are Giles (2008), *An extended collection of
matrix derivative results for forward and reverse mode AD* (its forward-mode results
for the inverse, the determinant and linear equations) and, for the Cholesky factor,
Murray (2016), *Differentiation of the Cholesky decomposition* (its forward mode):

- ``dX = A⁻¹ (dB - dA X)``;  ``d(A⁻¹) = -A⁻¹ dA A⁻¹``
- ``d log|det A| = tr(A⁻¹ dA) = Σ A⁻ᵀ ⊙ dA``;  ``d sign = 0``
- ``dL = L Φ(L⁻¹ S L⁻ᵀ)`` with ``Φ`` the lower triangle, diagonal halved, and
  ``S = tril dA + (tril₋₁ dA)ᵀ`` the symmetric matrix of ``dA``'s lower triangle (the
  only part the factorisation reads: an upper entry has derivative 0)

The bot: Fig. 9, ``build1 k (λi. solve a b) = solve (build1 k (λi. a)) (build1 k (λi.
b))`` (a batched solve), the same for each construct.  An index into the batch
dimensions that is certainly in range is pushed into the operands (out of range it
would solve a zero matrix: not the 0 of §5.2's total semantics, so it is not pushed);
any other index is a normal form of Theorem 5.1's kind: under ``build1`` the construct
is vectorised and its diagonal gathered (horde-ad's rule D), outside one the construct
is ``let``-bound and its variable indexed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ad import delta as dl
from ..ad.dual import DERIVATIVES, Dual, DualAlgebra
from ..interp.algebra import ARRAY_MEANINGS
from ..lang import indexing as ix_
from ..lang.errors import DtypeError, ShapeError, format_shape
from ..lang.terms import (
    Const,
    DType,
    Gather,
    Index,
    Let,
    Shape,
    Structural,
    Term,
    children,
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
    VecIndex,
    Vectoriser,
)
from ..vectorise.simplify import REWRITE_NAMES, SMART_CONSTRUCTORS, Simplifier, is_small_constant
from .linear_deltas import delta_add, delta_matmul, delta_mT, delta_scale

__all__ = ["Cholesky", "Inv", "LogAbsDet", "SignDet", "Solve"]


def _square(op: str, shape: Shape, what: str = "a") -> int:
    """The order ``n`` of a stack of square matrices ``(..., n, n)``."""
    if len(shape) < 2:
        raise ShapeError(
            f"{what} is {len(shape)}-dimensional, {format_shape(shape)}: "
            "a stack of matrices is at least two-dimensional",
            op=op,
            shapes=[shape],
        )
    if shape[-1] != shape[-2]:
        raise ShapeError(
            f"the last two dimensions of {what} {format_shape(shape)} are not square",
            op=op,
            shapes=[shape],
        )
    return shape[-1]


def _float(op: str, dtypes: Sequence[DType]) -> DType:
    if not all(d.is_float for d in dtypes) or len(set(dtypes)) != 1:
        raise DtypeError(
            f"operands must be of one float type, got {', '.join(map(str, dtypes))}", op=op
        )
    return dtypes[0]


def _one_per_matrix(
    op: str, shapes: Sequence[Shape], dtypes: Sequence[DType], *, matrix: bool
) -> tuple[Shape, DType]:
    """The type of a construct of one stack of square float matrices: a matrix (or,
    ``matrix=False``, a number) for each."""
    _square(op, shapes[0])
    return (shapes[0] if matrix else shapes[0][:-2]), _float(op, dtypes)


@dataclass(frozen=True, eq=False, repr=False)
class Solve(Structural):
    """``solve a b``: ``X`` with ``A X = B``, for every matrix of a stack."""

    name = "solve"
    a: Term
    b: Term

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        sa, sb = shapes
        n = _square("linalg.solve", sa)
        if len(sb) != len(sa) or sb[:-2] != sa[:-2] or sb[-2] != n:
            raise ShapeError(
                f"b {format_shape(sb)} is not a stack of {n}-row matrices of a's batch "
                f"shape {format_shape(sa[:-2])}",
                op="linalg.solve",
                shapes=[sa, sb],
            )
        return sb, _float("linalg.solve", dtypes)


@dataclass(frozen=True, eq=False, repr=False)
class Inv(Structural):
    """``inv a``: the inverse of every matrix of a stack."""

    name = "inv"
    a: Term

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        return _one_per_matrix("linalg.inv", shapes, dtypes, matrix=True)


@dataclass(frozen=True, eq=False, repr=False)
class LogAbsDet(Structural):
    """``logabsdet a``: ``log |det A|`` of every matrix of a stack."""

    name = "logabsdet"
    a: Term

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        return _one_per_matrix("linalg.slogdet", shapes, dtypes, matrix=False)


@dataclass(frozen=True, eq=False, repr=False)
class SignDet(Structural):
    """``signdet a``: the sign (``-1``, ``0``, ``1``) of ``det A`` for a stack."""

    name = "signdet"
    a: Term

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        return _one_per_matrix("linalg.slogdet", shapes, dtypes, matrix=False)


@dataclass(frozen=True, eq=False, repr=False)
class Cholesky(Structural):
    """``cholesky a``: the lower Cholesky factor of every matrix of a stack (reading
    its lower triangle)."""

    name = "cholesky"
    a: Term

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        return _one_per_matrix("linalg.cholesky", shapes, dtypes, matrix=True)


LINALG_CONSTRUCTS: tuple[type[Structural], ...] = (Solve, Inv, LogAbsDet, SignDet, Cholesky)


# -- meaning on arrays -----------------------------------------------------------------


def _symbolic(*arrays: Any) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype == object for a in arrays)


def _per_matrix(fn: Callable[..., Any], tail: Shape, *arrays: np.ndarray) -> np.ndarray:
    """``fn`` (on SymPy matrices) applied to every matrix of a stack of object arrays."""
    import sympy

    batch = arrays[0].shape[:-2]
    out = np.empty((*batch, *tail), dtype=object)
    for idx in np.ndindex(*batch):
        value = fn(*(sympy.Matrix(np.asarray(a[idx]).tolist()) for a in arrays))
        if tail:
            out[idx] = np.array(value.tolist(), dtype=object).reshape(tail)
        else:
            out[idx] = value
    return out


@ARRAY_MEANINGS.register(Solve)
def _solve(xp: Any, a: Any, b: Any) -> Any:
    if _symbolic(a, b):
        return _per_matrix(lambda m, r: m.LUsolve(r), b.shape[-2:], a, b)
    return xp.linalg.solve(a, b)


@ARRAY_MEANINGS.register(Inv)
def _inv(xp: Any, a: Any) -> Any:
    if _symbolic(a):
        return _per_matrix(lambda m: m.inv(), a.shape[-2:], a)
    return xp.linalg.inv(a)


def _sympy_det(m: Any) -> Any:
    return m.det(method="berkowitz")


@ARRAY_MEANINGS.register(LogAbsDet)
def _logabsdet(xp: Any, a: Any) -> Any:
    if _symbolic(a):
        import sympy

        return _per_matrix(lambda m: sympy.log(sympy.Abs(_sympy_det(m))), (), a)
    return xp.linalg.slogdet(a)[1]


@ARRAY_MEANINGS.register(SignDet)
def _signdet(xp: Any, a: Any) -> Any:
    if _symbolic(a):
        import sympy

        return _per_matrix(lambda m: sympy.sign(_sympy_det(m)), (), a)
    return xp.linalg.slogdet(a)[0]


@ARRAY_MEANINGS.register(Cholesky)
def _cholesky(xp: Any, a: Any) -> Any:
    if _symbolic(a):
        return _per_matrix(lambda m: m.cholesky(hermitian=False), a.shape[-2:], a)
    return xp.linalg.cholesky(a)


# -- the simplifier (the cleanup of §5.1 and §7.1) --------------------------------------

@SMART_CONSTRUCTORS.register(*LINALG_CONSTRUCTS)
def _mk_solve_family(s: Simplifier, t: Structural) -> Term:
    """A solve, inverse, determinant or factor of small constants is folded (by NumPy's
    ``linalg``, as the arrays' meaning computes it), unless NumPy finds the matrix
    singular: that is the program's error to raise when it runs, not the tracer's."""
    operands = children(t)
    if not all(is_small_constant(kid) for kid in operands):
        return t
    meaning = ARRAY_MEANINGS[type(t)]
    try:
        value = meaning(np, *(kid.value for kid in operands if isinstance(kid, Const)))
    except np.linalg.LinAlgError:
        return t
    return Const(np.asarray(value, dtype=t.dtype.numpy()))


@REWRITE_NAMES.register(*LINALG_CONSTRUCTS)
def _named_solve_family(before: Structural, after: Term) -> tuple[str, str]:
    return "constant-fold", "a linear-algebra construct of constants, folded"


# -- D (Fig. 14's role): Deltas built from the operands' Deltas -------------------------


def _dtype(args: Sequence[Any]) -> DType:
    return next(a.delta.dtype for a in args if isinstance(a, Dual))


def _neg(alg: DualAlgebra, value: Any, dtype: DType) -> Any:
    return alg.p.op("neg", [value], dtype)


def _mT(alg: DualAlgebra, value: Any) -> Any:
    rank = len(alg.p.shape(value))
    return alg.p.transpose((*range(rank - 2), rank - 1, rank - 2), value)


def _mask(alg: DualAlgebra, matrix: np.ndarray, shape: Shape, dtype: DType) -> Any:
    """A constant matrix broadcast over a stack, as a primal factor."""
    array = np.broadcast_to(matrix.astype(dtype.numpy()), shape)
    return alg.p.const(np.ascontiguousarray(array))


@DERIVATIVES.register(Solve)
def _d_solve(
    alg: DualAlgebra,
    construct: type[Structural],
    args: Sequence[Any],
    params: Mapping[str, Any],
    y: Any,
) -> Any:
    """``dX = A⁻¹ dB + (-A⁻¹)(dA X)`` (Giles 2008, linear equations)."""
    a, b = args
    if not isinstance(a, Dual) and not isinstance(b, Dual):
        return y
    dtype = _dtype(args)
    inverse = alg.p.structural(Inv, [alg.prim(a)], {})
    d_b = delta_matmul(inverse, alg.delta_of(b, dtype))
    d_a = alg.delta_of(a, dtype)
    if not isinstance(d_a, dl.Zero):
        d_b = delta_add(d_b, delta_matmul(_neg(alg, inverse, dtype), delta_matmul(d_a, y)))
    return alg.dual(y, d_b)


@DERIVATIVES.register(Inv)
def _d_inv(
    alg: DualAlgebra,
    construct: type[Structural],
    args: Sequence[Any],
    params: Mapping[str, Any],
    y: Any,
) -> Any:
    """``d(A⁻¹) = (-A⁻¹)(dA A⁻¹)`` (Giles 2008, the inverse)."""
    (a,) = args
    if not isinstance(a, Dual):
        return y
    dtype = a.delta.dtype
    return alg.dual(y, delta_matmul(_neg(alg, y, dtype), delta_matmul(a.delta, y)))


@DERIVATIVES.register(LogAbsDet)
def _d_logabsdet(
    alg: DualAlgebra,
    construct: type[Structural],
    args: Sequence[Any],
    params: Mapping[str, Any],
    y: Any,
) -> Any:
    """``d log|det A| = Σ_ij (A⁻¹)_ji dA_ij`` (Giles 2008, the determinant): one contraction."""
    (a,) = args
    if not isinstance(a, Dual):
        return y
    inverse = alg.p.structural(Inv, [a.primal], {})
    batch = "abcdefghijklmnopqrstuvw"[: len(a.delta.shape) - 2]
    spec = f"{batch}xy,{batch}yx->{batch}"
    return alg.dual(y, dl.Contract(spec, a.delta, inverse))


@DERIVATIVES.register(SignDet)
def _d_signdet(
    alg: DualAlgebra,
    construct: type[Structural],
    args: Sequence[Any],
    params: Mapping[str, Any],
    y: Any,
) -> Any:
    """The sign is piecewise constant: its derivative is 0 (where it has one)."""
    (a,) = args
    if not isinstance(a, Dual):
        return y
    return Dual(y, dl.Zero(alg.p.shape(y), a.delta.dtype))


@DERIVATIVES.register(Cholesky)
def _d_cholesky(
    alg: DualAlgebra,
    construct: type[Structural],
    args: Sequence[Any],
    params: Mapping[str, Any],
    y: Any,
) -> Any:
    """``dL = L Φ(L⁻¹ S L⁻ᵀ)``, ``S`` the symmetric matrix of ``dA``'s lower triangle
    (Murray 2016, forward mode)."""
    (a,) = args
    if not isinstance(a, Dual):
        return y
    dtype, shape = a.delta.dtype, alg.p.shape(y)
    n = shape[-1]
    lower, strict = np.tril(np.ones((n, n))), np.tril(np.ones((n, n)), -1)
    d_sym = delta_add(
        delta_scale(_mask(alg, lower, shape, dtype), a.delta),
        delta_mT(delta_scale(_mask(alg, strict, shape, dtype), a.delta)),
    )
    inverse = alg.p.structural(Inv, [y], {})
    middle = delta_matmul(delta_matmul(inverse, d_sym), _mT(alg, inverse))
    phi = delta_scale(_mask(alg, strict + 0.5 * np.eye(n), shape, dtype), middle)
    return alg.dual(y, delta_matmul(y, phi))


# -- the bot (§5): Fig. 9 and Fig. 10 ----------------------------------------------------

_KIT = "a linear-algebra construct (dualarr.constructs.linalg_solve), not in the paper"


@BUILD1_RULES.register(*LINALG_CONSTRUCTS)
def _build1_linalg(v: Vectoriser, e: Structural) -> Rewrite:
    """``build1 k (λi. solve a b) = solve (build1 k (λi. a)) (build1 k (λi. b))``: every
    operand gets the new batch dimension, the construct is batched already."""
    construct, params = type(e), e.params
    kids = children(e)
    return Rewrite(
        f"build1-{e.name}",
        "Fig. 9",
        tuple(Vec(c) for c in kids),
        lambda rs: construct.make(rs, params),
        _KIT,
    )


def _pushable(e: Structural, ix: tuple[Term, ...], known: dict[Any, tuple[int, int]]) -> bool:
    """Does ``ix`` only read batch dimensions, certainly in range?"""
    batch = children(e)[0].shape[:-2]
    return len(ix) <= len(batch) and ix_.provably_in_range(ix, batch, known)


@BUILD1_INDEX_RULES.register(*LINALG_CONSTRUCTS)
def _vindex_linalg(v: Vectoriser, a: Structural, ix: tuple[Term, ...]) -> Rewrite:
    """``B[index (solve a b) ix]``: a batch index in range pushed into the operands;
    otherwise the construct vectorised and its diagonal gathered (rule D)."""
    construct, params = type(a), a.params
    if _pushable(a, ix, v.known_bounds):
        return Rewrite(
            f"index-{a.name}",
            "Fig. 10",
            tuple(VecIndex(c, ix) for c in children(a)),
            lambda rs: construct.make(rs, params),
            _KIT,
        )
    k, new_i = v.k, v.fresh_index_var()
    return v.with_index_function(
        "build1-index-diagonal",
        "Fig. 11",
        (Vec(a),),
        ix,
        new_i,
        lambda rs, f2: Gather((k,), rs[0], (new_i,), (new_i, *f2)),
    )


@INDEX_RULES.register(*LINALG_CONSTRUCTS)
def _push_linalg(p: IndexPusher, a: Structural, ix: tuple[Term, ...]) -> Rewrite:
    """``I[solve a b, ix]``: a batch index in range pushed into the operands; otherwise
    the construct is let-bound and its variable indexed (a normal form)."""
    construct, params = type(a), a.params
    if _pushable(a, ix, p.known_bounds):
        return Rewrite(
            f"index-{a.name}",
            "Fig. 10",
            tuple(Push(c, ix) for c in children(a)),
            lambda rs: construct.make(rs, params),
            _KIT,
        )
    var = fresh_var(p.supply, "m", a.shape, a.dtype)
    return Rewrite(
        f"index-{a.name}-let",
        "Theorem 5.1",
        (),
        lambda _: Let(var, a, Index(var, ix)),
        _KIT,
    )

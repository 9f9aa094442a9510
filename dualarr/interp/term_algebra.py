"""The core language as an algebra of terms: staging (paper App. C.2, App. D).

Interpreting a term in :class:`TermAlgebra` rebuilds it; the point is to run the *same*
derivative rules and reverse pass on terms instead of arrays: ``DualAlgebra(TermAlgebra)``
is the symbolic dual-arrays transformation of §7 (App. D), and the reverse pass of
:mod:`dualarr.ad.reverse` run in this algebra builds the gradient as a term (§7.2).
Sharing is kept: a node is interpreted once, so shared primal values and cotangents are
single nodes of the resulting DAG.  Index functions stay symbolic: ``(variables, index)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..lang.terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Cond,
    Const,
    Contract,
    DType,
    Floor,
    FreeVars,
    FromIntegral,
    FromList,
    Gather,
    IdSupply,
    Index,
    Iota,
    MapAccum,
    Op,
    Replicate,
    Reshape,
    Scatter,
    Shape,
    Share,
    Structural,
    SumOuter,
    Term,
    Transpose,
    Var,
    fresh_var,
    int_const,
    loop_outputs,
    substitute_free,
    zeros,
)
from .algebra import Algebra, BodyRunner, IndexFn


class TermAlgebra(Algebra[Term]):
    """Terms as values: every operation builds a node."""

    @property
    def symbolic_index_functions(self) -> bool:
        return True

    def __init__(self, supply: IdSupply, share_ids: IdSupply | None = None) -> None:
        self.supply = supply
        self.share_ids = share_ids
        self._fv = FreeVars()
        self._grids: list[tuple[Var, ...]] = []

    def shape(self, a: Term) -> Shape:
        return a.shape

    def const(self, value: np.ndarray) -> Term:
        return Const(value)

    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Term:
        term: Term = Const(np.asarray(value, dtype=dtype.numpy()))
        for extent in reversed(shape):
            term = Replicate(extent, term)
        return term

    def zeros(self, shape: Shape, dtype: DType) -> Term:
        return zeros(shape, dtype)

    def iota(self, n: int) -> Term:
        return Iota(n)

    def op(self, name: str, args: Sequence[Term], dtype: DType) -> Term:
        return Op(name, tuple(args))

    def cond(self, c: Term, a: Term, b: Term) -> Term:
        return Cond(c, a, b)

    def from_integral(self, a: Term, dtype: DType) -> Term:
        return FromIntegral(a, dtype)

    def floor(self, a: Term) -> Term:
        return Floor(a)

    def index(self, a: Term, ix: Sequence[Term]) -> Term:
        return Index(a, tuple(ix)) if ix else a

    def _fresh_lambda(self, fn: IndexFn[Term]) -> tuple[tuple[Var, ...], tuple[Term, ...]]:
        """The index function with fresh variables: one binder per variable, even when
        the reverse pass reuses a gather's index function in its scatter."""
        variables, components = fn.variables, fn.components
        if not variables:
            return (), tuple(components)
        renamed = tuple(fresh_var(self.supply, v.hint, (), DType.INT64) for v in variables)
        mapping: dict[Var, Term] = dict(zip(variables, renamed, strict=True))
        # binders inside the components (a gather in an index) get fresh variables too
        return renamed, tuple(substitute_free(list(components), mapping, self._fv, self.supply))

    def gather(self, outer: Shape, a: Term, fn: IndexFn[Term]) -> Term:
        variables, components = self._fresh_lambda(fn)
        return Gather(tuple(outer), a, variables, components)

    def scatter(self, outer: Shape, a: Term, fn: IndexFn[Term], n_vars: int) -> Term:
        variables, components = self._fresh_lambda(fn)
        return Scatter(tuple(outer), a, variables, components)

    def sum_outer(self, a: Term) -> Term:
        return SumOuter(a)

    def replicate(self, count: int, a: Term) -> Term:
        return Replicate(count, a)

    def transpose(self, perm: Sequence[int], a: Term) -> Term:
        return Transpose(tuple(perm), a)

    def reshape(self, shape: Shape, a: Term) -> Term:
        return Reshape(tuple(shape), a)

    def from_list(self, elems: Sequence[Term]) -> Term:
        return FromList(tuple(elems))

    def structural(
        self, construct: type[Structural], args: Sequence[Term], params: Mapping[str, Any]
    ) -> Term:
        return construct.make(args, params)

    def argmin(self, a: Term) -> Term:
        return ArgMin(a)

    def argmax(self, a: Term) -> Term:
        return ArgMax(a)

    def argsort(self, a: Term) -> Term:
        return ArgSort(a)

    def contract(self, spec: str, a: Term, b: Term) -> Term:
        return Contract(spec, a, b)

    def map_accum(self, loop: MapAccum, inputs: Sequence[Term], body: BodyRunner) -> list[Term]:
        """The loop over new inputs: its (closed) body with every binder renamed fresh,
        so that no two loop nodes of a program bind one variable."""
        carries_n, xs_n = len(loop.carry_vars), len(loop.x_vars)
        fresh = {v: fresh_var(self.supply, v.hint, v.shape, v.dtype) for v in loop.binders}
        renamed = substitute_free(list(loop.body), dict(fresh), self._fv, self.supply)

        def binders(variables: tuple[Var, ...]) -> tuple[Var, ...]:
            return tuple(fresh[v] for v in variables)

        new = MapAccum(
            loop.length,
            loop.reverse,
            binders(loop.carry_vars),
            binders(loop.x_vars),
            binders(loop.const_vars),
            tuple(inputs[:carries_n]),
            tuple(inputs[carries_n : carries_n + xs_n]),
            tuple(inputs[carries_n + xs_n :]),
            tuple(renamed),
        )
        return list(loop_outputs(new))

    def share(self, a: Term) -> Term:
        """``share_k a`` with a fresh increasing id (Fig. 19), when shares are explicit."""
        if self.share_ids is None or isinstance(a, (Var, Const, Share)):
            return a
        return Share(self.share_ids.fresh(), a)

    def build1(self, rows: Sequence[Term], shape: Shape, dtype: DType) -> Term:
        return FromList(tuple(rows)) if rows else zeros(shape, dtype)

    def index_point(self, value: int) -> Term:
        return int_const(value)

    def index_grid(self, shape: Shape) -> list[Term] | None:
        variables = tuple(fresh_var(self.supply, "i", (), DType.INT64) for _ in shape)
        self._grids.append(variables)
        return list(variables)

    def index_fn_from_bulk(self, components: Sequence[Term], grid: Shape) -> IndexFn[Term]:
        return IndexFn(tuple(components), self._grids.pop())

    def index_fn_from_points(
        self, columns: Sequence[Sequence[Term]], grid: Shape
    ) -> IndexFn[Term]:
        raise AssertionError("symbolic index functions are never tabulated")

    def index_fn_constant(self, ix: Sequence[Term]) -> IndexFn[Term]:
        return IndexFn(tuple(ix))

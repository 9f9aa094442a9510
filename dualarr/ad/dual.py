"""Dual arrays: the forward transformation D as an algebra (paper §6, Figs. 12–15).

``DualAlgebra(P)`` interprets the core language on pairs ``(primal, Delta)`` whose
primal lives in any algebra ``P``: NumPy arrays for the concrete AD path, terms for the
symbolic path of §7 (App. D) — one implementation of the derivative rules for both.
Float-typed values are :class:`Dual`; int and bool values stay primal (the
non-differentiating transformation N of Fig. 13).  Every Delta a primitive returns is
wrapped in ``Share`` with a fresh, increasing id (Invariant 1 of §2.5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias

from ..interp.algebra import A, Algebra, BodyRunner, IndexFn
from ..interp.evaluate import Interpreter, body_runner
from ..interp.term_algebra import TermAlgebra
from ..lang.primitives import IDENTITY, REGISTRY
from ..lang.rules import RuleTable
from ..lang.terms import (
    DType,
    IdSupply,
    MapAccum,
    Shape,
    Structural,
    Term,
    Var,
    parse_contraction,
)
from . import delta as dl
from .loops import derivatives

DerivativeRule: TypeAlias = Callable[
    ["DualAlgebra", type[Structural], Sequence[Any], Mapping[str, Any], Any], Any
]
"""The forward rule D of a :class:`~dualarr.lang.terms.Structural` construct (Fig. 14):
``(alg, construct, args, params, y)`` with ``args`` the dual (or primal) arguments and
``y`` the primal result, gives the result with its Delta."""

DERIVATIVES: RuleTable[DerivativeRule] = RuleTable("derivative")
"""D of each :class:`~dualarr.lang.terms.Structural` construct."""

def linear_derivative(
    alg: DualAlgebra,
    construct: type[Structural],
    args: Sequence[Any],
    params: Mapping[str, Any],
    y: Any,
) -> Any:
    """D of a construct linear in its one child, as Fig. 14 has it for ``tr`` and
    ``reshape``: the same construct applied to the child's Delta."""
    (a,) = args
    if not isinstance(a, Dual):
        return y
    return alg.dual(y, dl.Structural(construct, tuple(params.items()), a.delta))


@dataclass(frozen=True, eq=False, slots=True)
class Dual(Generic[A]):
    """A dual array: a primal value and the Delta term of its derivative."""

    primal: A
    delta: dl.Delta


class DualAlgebra(Algebra[Any]):
    """The core language on dual arrays over a primal algebra."""

    def __init__(self, primal: Algebra[Any], supply: IdSupply | None = None) -> None:
        self.p = primal
        self.supply = supply if supply is not None else IdSupply()
        self.shared = 0  # number of Share nodes made

    @property
    def symbolic_index_functions(self) -> bool:
        return self.p.symbolic_index_functions

    # -- plumbing ------------------------------------------------------------------

    def share_delta(self, d: dl.Delta) -> dl.Delta:
        """``Share`` a new node, built by the smart constructor :func:`dualarr.ad.delta.pruned`:
        a linear map of zeros stays ``Zero`` (unshared), so a rule never scales it."""
        d = dl.pruned(d)
        if isinstance(d, dl.Zero | dl.Share | dl.Input):
            return d
        self.shared += 1
        return dl.Share(self.supply.fresh(), d)

    @staticmethod
    def prim(v: Any) -> Any:
        return v.primal if isinstance(v, Dual) else v

    def delta_of(self, v: Any, dtype: DType) -> dl.Delta:
        if isinstance(v, Dual):
            return v.delta
        return dl.Zero(self.p.shape(v), dtype)

    def dual(self, primal: Any, delta: dl.Delta) -> Dual[Any]:
        return Dual(primal, self.share_delta(delta))

    def shape(self, a: Any) -> Shape:
        return self.p.shape(self.prim(a))

    # -- leaves ----------------------------------------------------------------------

    def const(self, value: Any) -> Any:
        primal = self.p.const(value)
        dtype = DType.of_numpy(value.dtype)
        return Dual(primal, dl.Zero(tuple(value.shape), dtype)) if dtype.is_float else primal

    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Any:
        primal = self.p.full(shape, value, dtype)
        return Dual(primal, dl.Zero(shape, dtype)) if dtype.is_float else primal

    def iota(self, n: int) -> Any:
        return self.p.iota(n)

    # -- elementwise -----------------------------------------------------------------

    def op(self, name: str, args: Sequence[Any], dtype: DType) -> Any:
        prims = [self.prim(a) for a in args]
        y = self.p.op(name, prims, dtype)
        if not dtype.is_float:  # comparisons, logic, integer arithmetic: N (Fig. 13)
            return y
        m = Math(self.p, self.p.shape(y), dtype)
        values = [Num(m, p) for p in prims]
        terms: list[dl.Delta] = []
        for arg, partial in zip(args, REGISTRY[name].partials, strict=True):
            if partial is None or not isinstance(arg, Dual) or isinstance(arg.delta, dl.Zero):
                continue
            if partial == IDENTITY:
                terms.append(arg.delta)
            else:
                assert callable(partial)
                factor = m.lift(partial(m, *values, Num(m, y)))
                terms.append(dl.Scale(factor.value, arg.delta))
        return self.dual(y, _sum(terms, self.p.shape(y), dtype))

    def cond(self, c: Any, a: Any, b: Any) -> Any:
        pc = self.prim(c)
        y = self.p.cond(pc, self.prim(a), self.prim(b))
        if not isinstance(a, Dual) and not isinstance(b, Dual):
            return y
        shape = self.p.shape(y)
        dtype = (a if isinstance(a, Dual) else b).delta.dtype
        # cond c a b = index (fromList [a, b]) [cond c 0 1]; the selector is never
        # differentiated (book/rules.md §3.3)
        selector = self.p.cond(
            pc, self.p.full((), 0, DType.INT64), self.p.full((), 1, DType.INT64)
        )
        deltas = (self.delta_of(a, dtype), self.delta_of(b, dtype))
        if all(isinstance(d, dl.Zero) for d in deltas) or any(d.shape != shape for d in deltas):
            # (branches of two shapes: an index function evaluated in bulk, its values
            # broadcast over the grid; its floats are floored into indices, never
            # differentiated)
            return Dual(y, dl.Zero(shape, dtype))
        options = dl.FromList(deltas)
        return self.dual(y, dl.Index(self.share_delta(options), (selector,)))

    def from_integral(self, a: Any, dtype: DType) -> Any:
        primal = self.p.from_integral(self.prim(a), dtype)
        if isinstance(a, Dual):  # float32 <-> float64: the tangent converts too
            return self.dual(primal, dl.Convert(dtype, a.delta))
        return Dual(primal, dl.Zero(self.p.shape(primal), dtype))

    def floor(self, a: Any) -> Any:
        return self.p.floor(self.prim(a))

    # -- structure -------------------------------------------------------------------

    def index(self, a: Any, ix: Sequence[Any]) -> Any:
        pix = [self.prim(i) for i in ix]
        y = self.p.index(self.prim(a), pix)
        if not isinstance(a, Dual):
            return y
        return self.dual(y, dl.Index(a.delta, tuple(pix)))

    def gather(self, outer: Shape, a: Any, fn: IndexFn[Any]) -> Any:
        y = self.p.gather(outer, self.prim(a), fn)
        if not isinstance(a, Dual):
            return y
        return self.dual(y, dl.Gather(outer, a.delta, fn, self.p.shape(y)))

    def scatter(self, outer: Shape, a: Any, fn: IndexFn[Any], n_vars: int) -> Any:
        y = self.p.scatter(outer, self.prim(a), fn, n_vars)
        if not isinstance(a, Dual):
            return y
        return self.dual(y, dl.Scatter(outer, a.delta, fn, n_vars))

    def sum_outer(self, a: Any) -> Any:
        y = self.p.sum_outer(self.prim(a))
        return self.dual(y, dl.SumOuter(a.delta)) if isinstance(a, Dual) else y

    def replicate(self, count: int, a: Any) -> Any:
        y = self.p.replicate(count, self.prim(a))
        return self.dual(y, dl.Replicate(count, a.delta)) if isinstance(a, Dual) else y

    def transpose(self, perm: Sequence[int], a: Any) -> Any:
        y = self.p.transpose(perm, self.prim(a))
        return self.dual(y, dl.Transpose(tuple(perm), a.delta)) if isinstance(a, Dual) else y

    def reshape(self, shape: Shape, a: Any) -> Any:
        y = self.p.reshape(shape, self.prim(a))
        return self.dual(y, dl.Reshape(tuple(shape), a.delta)) if isinstance(a, Dual) else y

    def from_list(self, elems: Sequence[Any]) -> Any:
        y = self.p.from_list([self.prim(e) for e in elems])
        duals = [e for e in elems if isinstance(e, Dual)]
        if not duals:
            return y
        dtype = duals[0].delta.dtype
        return self.dual(y, dl.FromList(tuple(self.delta_of(e, dtype) for e in elems)))

    def contract(self, spec: str, a: Any, b: Any) -> Any:
        """Bilinear: ``d(contract a b) = contract da b + contract a db``."""
        pa, pb = self.prim(a), self.prim(b)
        y = self.p.contract(spec, pa, pb)
        left, right, out = parse_contraction(spec)
        terms: list[dl.Delta] = []
        if isinstance(a, Dual) and not isinstance(a.delta, dl.Zero):
            terms.append(dl.Contract(spec, a.delta, pb))
        if isinstance(b, Dual) and not isinstance(b.delta, dl.Zero):
            terms.append(dl.Contract(f"{right},{left}->{out}", b.delta, pa))
        duals = [v for v in (a, b) if isinstance(v, Dual)]
        if not duals:
            return y
        return self.dual(y, _sum(terms, self.p.shape(y), duals[0].delta.dtype))

    def structural(
        self, construct: type[Structural], args: Sequence[Any], params: Mapping[str, Any]
    ) -> Any:
        y = self.p.structural(construct, [self.prim(a) for a in args], params)
        return DERIVATIVES[construct](self, construct, args, params, y)

    def map_accum(self, loop: MapAccum, inputs: Sequence[Any], body: BodyRunner) -> list[Any]:
        """D of a loop (horde-ad's mapAccum; not in the paper): the saving loop of
        :mod:`dualarr.ad.loops` on the primal inputs — the loop's results and one stack
        per residual — and one Delta node holding the stacks.  A loop none of whose
        inputs has a tangent stays primal."""
        prims = [self.prim(a) for a in inputs]
        deltas = [self.delta_of(a, v.dtype) for a, v in zip(inputs, loop.binders, strict=True)]
        if all(isinstance(d, dl.Zero) for d in deltas):
            return self.p.map_accum(loop, prims, body)
        found = derivatives(loop, differentiate_body)
        outs = self.p.map_accum(found.saving, prims, body_runner(found.saving))
        carries_n, xs_n = len(loop.carry_vars), len(loop.x_vars)
        results = len(loop.shapes)
        self.shared += 1
        node = dl.MapAccum(
            self.supply.fresh(),
            loop,
            tuple(outs[results:]),
            tuple(prims[carries_n : carries_n + xs_n]),
            tuple(prims[carries_n + xs_n :]),
            tuple(deltas[:carries_n]),
            tuple(deltas[carries_n : carries_n + xs_n]),
            tuple(deltas[carries_n + xs_n :]),
        )
        return [
            Dual(y, dl.LoopOutput(k, node)) if loop.dtypes[k].is_float else y
            for k, y in enumerate(outs[:results])
        ]

    def argmin(self, a: Any) -> Any:
        return self.p.argmin(self.prim(a))

    def argmax(self, a: Any) -> Any:
        return self.p.argmax(self.prim(a))

    def argsort(self, a: Any) -> Any:
        return self.p.argsort(self.prim(a))

    def build1(self, rows: Sequence[Any], shape: Shape, dtype: DType) -> Any:
        """Element by element (dual arrays without the bot, §4.2): a FromList of rows."""
        y = self.p.build1([self.prim(r) for r in rows], shape, dtype)
        if not dtype.is_float:
            return y
        if not rows:
            return Dual(y, dl.Zero(shape, dtype))
        return self.dual(y, dl.FromList(tuple(self.delta_of(r, dtype) for r in rows)))

    # -- index functions are integer: computed by the primal algebra -------------------

    def index_point(self, value: int) -> Any:
        return self.p.index_point(value)

    def index_grid(self, shape: Shape) -> list[Any] | None:
        return self.p.index_grid(shape)

    def index_fn_from_bulk(self, components: Sequence[Any], grid: Shape) -> IndexFn[Any]:
        return self.p.index_fn_from_bulk([self.prim(c) for c in components], grid)

    def index_fn_from_points(self, columns: Sequence[Sequence[Any]], grid: Shape) -> IndexFn[Any]:
        return self.p.index_fn_from_points(
            [[self.prim(v) for v in column] for column in columns], grid
        )

    def index_fn_constant(self, ix: Sequence[Any]) -> IndexFn[Any]:
        return self.p.index_fn_constant([self.prim(i) for i in ix])


def differentiate_body(
    body: Sequence[Term], binders: Sequence[Var], terms: TermAlgebra
) -> tuple[list[Term], list[dl.Delta | None]]:
    """D of a loop's body with terms as primals (§7.1): each result's primal and its
    Delta over one ``Input`` per binder (None for a result that is not float); what
    :func:`dualarr.ad.loops.derivatives` derives a loop's linear maps from."""
    env: dict[Var, Any] = {
        v: Dual(v, dl.Input(j, v.shape, v.dtype)) if v.dtype.is_float else v
        for j, v in enumerate(binders)
    }
    outs = Interpreter(DualAlgebra(terms, IdSupply())).run(body, env)
    primals = [out.primal if isinstance(out, Dual) else out for out in outs]
    return primals, [out.delta if isinstance(out, Dual) else None for out in outs]


def _sum(terms: list[dl.Delta], shape: Shape, dtype: DType) -> dl.Delta:
    if not terms:
        return dl.Zero(shape, dtype)
    total = terms[0]
    for t in terms[1:]:
        total = dl.Add(total, t)
    return total


# --------------------------------------------------------------------------------------
# The language of derivative rules (Fig. 14, book/rules.md §3.2): the records' partials
# --------------------------------------------------------------------------------------


class Num:
    """A value of a primal algebra in a derivative rule: arithmetic, comparisons and
    the primitives (``m.cos(x)``, ``m.where(c, a, b)``) build it in that algebra, so
    one rule serves NumPy arrays and terms alike.  Python numbers lift to arrays of the
    rule's shape and element type; ``1 / x`` is ``recip x``, ``-x`` is ``neg x``."""

    __slots__ = ("m", "value")

    def __init__(self, m: Math, value: Any) -> None:
        self.m, self.value = m, value

    def _binary(self, name: str, other: Num | float, *, flip: bool = False) -> Num:
        a, b = self, self.m.lift(other)
        return self.m.apply(name, (b, a) if flip else (a, b))

    def __add__(self, other: Num | float) -> Num:
        return self._binary("add", other)

    def __radd__(self, other: float) -> Num:
        return self._binary("add", other, flip=True)

    def __sub__(self, other: Num | float) -> Num:
        return self._binary("sub", other)

    def __rsub__(self, other: float) -> Num:
        return self._binary("sub", other, flip=True)

    def __mul__(self, other: Num | float) -> Num:
        return self._binary("mul", other)

    def __rmul__(self, other: float) -> Num:
        return self._binary("mul", other, flip=True)

    def __truediv__(self, other: Num | float) -> Num:
        return self._binary("div", other)

    def __rtruediv__(self, other: float) -> Num:
        if other == 1:
            return self.m.apply("recip", (self,))
        return self._binary("div", other, flip=True)

    def __pow__(self, other: Num | float) -> Num:
        return self._binary("pow", other)

    def __neg__(self) -> Num:
        return self.m.apply("neg", (self,))

    def __ge__(self, other: Num | float) -> Num:
        return self.m.compare("ge", self, other)

    def __le__(self, other: Num | float) -> Num:
        return self.m.compare("le", self, other)

    def __eq__(self, other: object) -> Num:  # type: ignore[override]
        assert isinstance(other, Num | int | float)
        return self.m.compare("eq", self, other)

    __hash__ = None  # type: ignore[assignment]


class Math:
    """The primitives over :class:`Num` values of one primal algebra, shape and float
    type: ``m.sin(x)``, ``m.where(c, a, b)`` (the ``m`` of a derivative rule)."""

    def __init__(self, algebra: Algebra[Any], shape: Shape, dtype: DType) -> None:
        self.algebra, self.shape, self.dtype = algebra, shape, dtype

    def lift(self, value: Num | float) -> Num:
        if isinstance(value, Num):
            return value
        return Num(self, self.algebra.full(self.shape, value, self.dtype))

    def apply(self, name: str, args: Sequence[Num]) -> Num:
        return Num(self, self.algebra.op(name, [a.value for a in args], self.dtype))

    def compare(self, name: str, a: Num, b: Num | float) -> Num:
        return Num(self, self.algebra.op(name, (a.value, self.lift(b).value), DType.BOOL))

    def where(self, condition: Num, a: Num | float, b: Num | float) -> Num:
        return self.apply("select", (condition, self.lift(a), self.lift(b)))

    def __getattr__(self, name: str) -> Callable[..., Num]:
        """``m.cos`` and every other elementwise primitive, by its core name."""
        return lambda *args: self.apply(name, [self.lift(a) for a in args])

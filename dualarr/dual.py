"""Dual arrays: the forward transformation D as an algebra (paper §6, Figs. 12–15).

``DualAlgebra(P)`` interprets the core language on pairs ``(primal, Delta)`` whose
primal lives in any algebra ``P``: NumPy arrays for the concrete AD path, terms for the
symbolic path of §7 (App. D) — one implementation of the derivative rules for both.
Float-typed values are :class:`Dual`; int and bool values stay primal (the
non-differentiating transformation N of Fig. 13).  Every Delta a primitive returns is
wrapped in ``Share`` with a fresh, increasing id (Invariant 1 of §2.5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from . import delta as dl
from .algebra import A, Algebra, IndexFn
from .core import DType, IdSupply, Shape, parse_contraction


@dataclass(frozen=True, eq=False)
class Dual(Generic[A]):
    """A dual array: a primal value and the Delta term of its derivative."""

    primal: A
    delta: dl.Delta


Factor = Callable[[], Any] | None  # a derivative factor, computed only when needed
IDENTITY: Factor = None


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
        """``Share`` a new node, built by the smart constructor :func:`dualarr.delta.pruned`:
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
        factors = _RULES[name](self, prims, y, dtype)
        terms: list[dl.Delta] = []
        for arg, factor in zip(args, factors, strict=True):
            if factor is False or not isinstance(arg, Dual) or isinstance(arg.delta, dl.Zero):
                continue
            terms.append(arg.delta if factor is IDENTITY else dl.Scale(factor(), arg.delta))
        return self.dual(y, _sum(terms, self.p.shape(y), dtype))

    def cond(self, c: Any, a: Any, b: Any) -> Any:
        pc = self.prim(c)
        y = self.p.cond(pc, self.prim(a), self.prim(b))
        if not isinstance(a, Dual) and not isinstance(b, Dual):
            return y
        shape = self.p.shape(y)
        dtype = (a if isinstance(a, Dual) else b).delta.dtype
        # cond c a b = index (fromList [a, b]) [cond c 0 1]; the selector is never
        # differentiated (RULES §1)
        selector = self.p.cond(
            pc, self.p.full((), 0, DType.INT64), self.p.full((), 1, DType.INT64)
        )
        options = dl.FromList((self.delta_of(a, dtype), self.delta_of(b, dtype)))
        if isinstance(options.deltas[0], dl.Zero) and isinstance(options.deltas[1], dl.Zero):
            return Dual(y, dl.Zero(shape, dtype))
        return self.dual(y, dl.Index(self.share_delta(options), (selector,)))

    def from_integral(self, a: Any, dtype: DType) -> Any:
        primal = self.p.from_integral(self.prim(a), dtype)
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

    def gather(self, outer: Shape, a: Any, fn: IndexFn) -> Any:
        y = self.p.gather(outer, self.prim(a), fn)
        if not isinstance(a, Dual):
            return y
        return self.dual(y, dl.Gather(outer, a.delta, fn, self.p.shape(y)))

    def scatter(self, outer: Shape, a: Any, fn: IndexFn, n_vars: int) -> Any:
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

    def argmin(self, a: Any) -> Any:
        return self.p.argmin(self.prim(a))

    def argmax(self, a: Any) -> Any:
        return self.p.argmax(self.prim(a))

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

    def index_fn_from_bulk(self, components: Sequence[Any], grid: Shape) -> IndexFn:
        return self.p.index_fn_from_bulk([self.prim(c) for c in components], grid)

    def index_fn_from_points(self, columns: Sequence[Sequence[Any]], grid: Shape) -> IndexFn:
        return self.p.index_fn_from_points(
            [[self.prim(v) for v in column] for column in columns], grid
        )

    def index_fn_constant(self, ix: Sequence[Any]) -> IndexFn:
        return self.p.index_fn_constant([self.prim(i) for i in ix])


def _sum(terms: list[dl.Delta], shape: Shape, dtype: DType) -> dl.Delta:
    if not terms:
        return dl.Zero(shape, dtype)
    total = terms[0]
    for t in terms[1:]:
        total = dl.Add(total, t)
    return total


# --------------------------------------------------------------------------------------
# Derivative rules of the elementwise primitives (Fig. 14; RULES §3)
# --------------------------------------------------------------------------------------
# Each rule gives, per argument, IDENTITY, False (no derivative) or a thunk computing the
# factor (in the primal algebra) by which that argument's Delta is scaled.

Rule = Callable[[DualAlgebra, list[Any], Any, DType], list[Any]]


def _rules() -> dict[str, Rule]:
    def k(alg: DualAlgebra, like: Any, value: float, dtype: DType) -> Any:
        return alg.p.full(alg.p.shape(like), value, dtype)

    def f(alg: DualAlgebra, name: str, dtype: DType, *args: Any) -> Any:
        return alg.p.op(name, args, dtype)

    def unary(
        factor: Callable[[DualAlgebra, Any, Any, DType], Any],
    ) -> Rule:
        return lambda alg, xs, y, dt: [lambda: factor(alg, xs[0], y, dt)]

    rules: dict[str, Rule] = {
        "add": lambda alg, xs, y, dt: [IDENTITY, IDENTITY],
        "sub": lambda alg, xs, y, dt: [IDENTITY, lambda: k(alg, y, -1.0, dt)],
        "mul": lambda alg, xs, y, dt: [lambda: xs[1], lambda: xs[0]],
        "div": lambda alg, xs, y, dt: [
            lambda: f(alg, "recip", dt, xs[1]),
            lambda: f(alg, "neg", dt, f(alg, "div", dt, y, xs[1])),
        ],
        # d/dy x**y = x**y · log x with log x read as 0 where x == 0 (JAX's
        # ``log(_replace_zero(x))``): 0 at x = 0 for y > 0, not 0 · -inf
        "pow": lambda alg, xs, y, dt: [
            lambda: f(alg, "mul", dt, xs[1],
                      f(alg, "pow", dt, xs[0], f(alg, "sub", dt, xs[1], k(alg, y, 1.0, dt)))),
            lambda: f(alg, "mul", dt, y, f(alg, "log", dt, _replace_zero(alg, xs[0], dt))),
        ],
        "atan2": lambda alg, xs, y, dt: [
            lambda: f(alg, "div", dt, xs[1], _norm2(alg, xs, dt)),
            lambda: f(alg, "neg", dt, f(alg, "div", dt, xs[0], _norm2(alg, xs, dt))),
        ],
        # ties go to the first argument, as horde-ad's max u v = if u >= v then u else v
        "maximum": lambda alg, xs, y, dt: _mask_pair(alg, f(alg, "ge", DType.BOOL, *xs), y, dt),
        "minimum": lambda alg, xs, y, dt: _mask_pair(alg, f(alg, "le", DType.BOOL, *xs), y, dt),
        "select": lambda alg, xs, y, dt: [False, *_mask_pair(alg, xs[0], y, dt)],
        "neg": lambda alg, xs, y, dt: [lambda: k(alg, y, -1.0, dt)],
        "abs": unary(lambda alg, x, y, dt: f(alg, "sign", dt, x)),
        "sign": lambda alg, xs, y, dt: [False],
        "exp": unary(lambda alg, x, y, dt: y),
        "log": unary(lambda alg, x, y, dt: f(alg, "recip", dt, x)),
        "log1p": unary(
            lambda alg, x, y, dt: f(alg, "recip", dt, f(alg, "add", dt, x, k(alg, x, 1.0, dt)))
        ),
        "expm1": unary(lambda alg, x, y, dt: f(alg, "add", dt, y, k(alg, y, 1.0, dt))),
        "sin": unary(lambda alg, x, y, dt: f(alg, "cos", dt, x)),
        "cos": unary(lambda alg, x, y, dt: f(alg, "neg", dt, f(alg, "sin", dt, x))),
        "tan": unary(
            lambda alg, x, y, dt: f(alg, "add", dt, k(alg, y, 1.0, dt), f(alg, "mul", dt, y, y))
        ),
        "asin": unary(lambda alg, x, y, dt: f(alg, "recip", dt, _sqrt_one_minus_sq(alg, x, dt))),
        "acos": unary(
            lambda alg, x, y, dt: f(
                alg, "neg", dt, f(alg, "recip", dt, _sqrt_one_minus_sq(alg, x, dt))
            )
        ),
        "atan": unary(
            lambda alg, x, y, dt: f(
                alg, "recip", dt, f(alg, "add", dt, k(alg, x, 1.0, dt), f(alg, "mul", dt, x, x))
            )
        ),
        "sinh": unary(lambda alg, x, y, dt: f(alg, "cosh", dt, x)),
        "cosh": unary(lambda alg, x, y, dt: f(alg, "sinh", dt, x)),
        "tanh": unary(
            lambda alg, x, y, dt: f(alg, "sub", dt, k(alg, y, 1.0, dt), f(alg, "mul", dt, y, y))
        ),
        "sqrt": unary(
            lambda alg, x, y, dt: f(alg, "recip", dt, f(alg, "mul", dt, k(alg, y, 2.0, dt), y))
        ),
        "recip": unary(lambda alg, x, y, dt: f(alg, "neg", dt, f(alg, "mul", dt, y, y))),
        "sigmoid": unary(
            lambda alg, x, y, dt: f(alg, "mul", dt, y, f(alg, "sub", dt, k(alg, y, 1.0, dt), y))
        ),
        "stop_gradient": lambda alg, xs, y, dt: [False],  # a constant to differentiation
    }
    return rules


def _replace_zero(alg: DualAlgebra, x: Any, dt: DType) -> Any:
    """``select (x == 0) 1 x``: the argument of the log in pow's exponent rule."""
    zero, one = alg.p.full(alg.p.shape(x), 0.0, dt), alg.p.full(alg.p.shape(x), 1.0, dt)
    return alg.p.op("select", (alg.p.op("eq", (x, zero), DType.BOOL), one, x), dt)


def _norm2(alg: DualAlgebra, xs: list[Any], dt: DType) -> Any:
    sq = [alg.p.op("mul", (x, x), dt) for x in xs]
    return alg.p.op("add", sq, dt)


def _sqrt_one_minus_sq(alg: DualAlgebra, x: Any, dt: DType) -> Any:
    one = alg.p.full(alg.p.shape(x), 1.0, dt)
    return alg.p.op("sqrt", (alg.p.op("sub", (one, alg.p.op("mul", (x, x), dt)), dt),), dt)


def _mask_pair(alg: DualAlgebra, mask: Any, like: Any, dt: DType) -> list[Any]:
    """The 0/1 masks selecting the first and the second argument (Fig. 14: max, min)."""
    shape = alg.p.shape(like)
    one, zero = alg.p.full(shape, 1.0, dt), alg.p.full(shape, 0.0, dt)
    return [
        lambda: alg.p.op("select", (mask, one, zero), dt),
        lambda: alg.p.op("select", (mask, zero, one), dt),
    ]


_RULES = _rules()

"""Transposition as rewriting (``book/rules.md §6``).

A Delta is a linear map from input tangents to the output tangent (§2.3).  Instead of
*evaluating* it backwards (Fig. 17, :mod:`dualarr.ad.reverse`) it can be *rewritten* into
its transpose, a linear program from the output cotangent ``c`` to input cotangents:

1. :func:`to_let_form` — the Delta DAG in let-form (paper Fig. 20): each ``Share id d``
   becomes a binding ``let s<id> = u in …`` and its uses the variable ``s<id>``; the
   bindings are stacked from the lowest id (outermost) to the highest, so each is bound
   before use (Invariant 1).  :data:`LetDelta` mirrors the Delta constructors.
2. :func:`transpose_delta` — the rules ``T[·]`` of ``book/rules.md §6.2``, producing a
   :class:`LinearProgram` in context ``Γ | c : τ ||- T[u] : DMap`` (its typing judgement;
   Γ holds the primal factors, indices and index functions).  DMap is Cayley-transformed:
   a program denotes ``DMap → DMap``, ``0`` is the identity (no statement) and ``+`` is
   composition (concatenation), so the program is a flat statement list, linear in the
   size of the let-form.  Every intermediate cotangent is a named variable ``c<k>``, so
   duplicating ``c`` (``Add``, ``FromList``, ``Let``) costs nothing.
3. :func:`run_linear` — interprets the program in an :class:`~dualarr.interp.algebra.Algebra`,
   returning ``input index ↦ gradient`` like :func:`dualarr.ad.reverse.reverse`.

The program visits the bindings from the highest id down and each node's children in the
order of :func:`dualarr.ad.reverse.eval_delta`, so it performs the reverse pass's additions
in the reverse pass's order.  Every pass here is iterative: chains of thousands of
bindings are fine.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from typing import Any, TypeAlias, cast

import numpy as np

from ..interp.algebra import Algebra
from ..lang.errors import DualarrError, format_shape
from ..lang.terms import DType, Shape, assert_never, parse_contraction, type_name
from . import delta as dl


def _set(node: object, **values: object) -> None:
    for name, value in values.items():
        object.__setattr__(node, name, value)


# --------------------------------------------------------------------------------------
# Let-form linear terms (paper Fig. 20; book/rules.md §6.1)
# --------------------------------------------------------------------------------------


class _ShownLet:
    """``str``/``repr`` of a let-form term, by the iterative printer."""

    def __str__(self) -> str:
        return format_let(cast(LetDelta, self))

    __repr__ = __str__


@dataclass(frozen=True, eq=False, repr=False)
class LZero(_ShownLet):
    """``0`` (of a shape)."""

    shape: Shape
    dtype: DType


@dataclass(frozen=True, eq=False, repr=False)
class LInput(_ShownLet):
    """``dx<n>``: the tangent of the ``n``-th differentiated input (``Input n``)."""

    index: int
    shape: Shape
    dtype: DType


@dataclass(frozen=True, eq=False, repr=False)
class LVar(_ShownLet):
    """``s<n>``: the let-bound variable that replaced ``Share n d`` (named as the Delta
    printer names that node)."""

    name: int
    shape: Shape
    dtype: DType


@dataclass(frozen=True, eq=False, repr=False)
class LLet(_ShownLet):
    """``let s<name> = bound in body``: ``bound`` was the ``d`` of ``Share name d``."""

    name: int
    bound: LetDelta
    body: LetDelta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.body.shape, dtype=self.body.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LAdd(_ShownLet):
    left: LetDelta
    right: LetDelta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.left.shape, dtype=self.left.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LScale(_ShownLet):
    """``factor * delta`` (elementwise, ``factor`` a primal value)."""

    factor: Any
    delta: LetDelta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape, dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LContract(_ShownLet):
    """``contract spec delta factor`` (linear in ``delta``, ``factor`` a primal value)."""

    spec: str
    delta: LetDelta
    factor: Any
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        shape = dl.contraction_shape(self.spec, self.delta.shape, tuple(self.factor.shape))
        _set(self, shape=shape, dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LIndex(_ShownLet):
    delta: LetDelta
    index: tuple[Any, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape[len(self.index) :], dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LGather(_ShownLet):
    outer: Shape
    delta: LetDelta
    fn: Any
    shape: Shape
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, dtype=self.delta.dtype)

    @property
    def width(self) -> int:
        """Number of index components (dimensions of ``delta`` the index selects)."""
        return len(self.delta.shape) - (len(self.shape) - len(self.outer))


@dataclass(frozen=True, eq=False, repr=False)
class LScatter(_ShownLet):
    outer: Shape
    delta: LetDelta
    fn: Any
    n_vars: int
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=(*self.outer, *self.delta.shape[self.n_vars :]), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LSumOuter(_ShownLet):
    delta: LetDelta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape[1:], dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LReplicate(_ShownLet):
    count: int
    delta: LetDelta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=(self.count, *self.delta.shape), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LTranspose(_ShownLet):
    perm: tuple[int, ...]
    delta: LetDelta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=tuple(self.delta.shape[p] for p in self.perm), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LReshape(_ShownLet):
    new_shape: Shape
    delta: LetDelta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=tuple(self.new_shape), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class LFromList(_ShownLet):
    deltas: tuple[LetDelta, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        first = self.deltas[0]
        _set(self, shape=(len(self.deltas), *first.shape), dtype=first.dtype)


LetDelta: TypeAlias = (
    LZero
    | LInput
    | LVar
    | LLet
    | LAdd
    | LScale
    | LContract
    | LIndex
    | LGather
    | LScatter
    | LSumOuter
    | LReplicate
    | LTranspose
    | LReshape
    | LFromList
)
"""A Delta in let-form: ``Share`` replaced by ``LLet``/``LVar`` (paper Fig. 20)."""


def let_children(u: LetDelta) -> tuple[LetDelta, ...]:
    match u:
        case LZero() | LInput() | LVar():
            return ()
        case LLet(bound=a, body=b) | LAdd(left=a, right=b):
            return (a, b)
        case LFromList(deltas=us):
            return us
        case (
            LScale(delta=x)
            | LContract(delta=x)
            | LIndex(delta=x)
            | LGather(delta=x)
            | LScatter(delta=x)
            | LSumOuter(delta=x)
            | LReplicate(delta=x)
            | LTranspose(delta=x)
            | LReshape(delta=x)
        ):
            return (x,)
        case _:
            assert_never(u)


def let_postorder(root: LetDelta) -> list[LetDelta]:
    """Every node of a let-form DAG once, children first (iterative)."""
    order: list[LetDelta] = []
    seen = {id(root)}
    stack: list[tuple[LetDelta, int]] = [(root, 0)]
    while stack:
        node, at = stack[-1]
        kids = let_children(node)
        if at < len(kids):
            stack[-1] = (node, at + 1)
            kid = kids[at]
            if id(kid) not in seen:
                seen.add(id(kid))
                stack.append((kid, 0))
        else:
            stack.pop()
            order.append(node)
    return order


def _convert(d: dl.Delta, kid: Callable[[dl.Delta], LetDelta]) -> LetDelta:
    """One non-Share Delta node as its let-form twin, children already converted."""
    match d:
        case dl.Zero(shape=sh, dtype=dt):
            return LZero(sh, dt)
        case dl.Input(index=n, shape=sh, dtype=dt):
            return LInput(n, sh, dt)
        case dl.Add(left=a, right=b):
            return LAdd(kid(a), kid(b))
        case dl.Scale(factor=s, delta=x):
            return LScale(s, kid(x))
        case dl.Contract(spec=spec, delta=x, factor=f):
            return LContract(spec, kid(x), f)
        case dl.Index(delta=x, index=ix):
            return LIndex(kid(x), ix)
        case dl.Gather(outer=outer, delta=x, fn=fn, shape=sh):
            return LGather(outer, kid(x), fn, sh)
        case dl.Scatter(outer=outer, delta=x, fn=fn, n_vars=n_vars):
            return LScatter(outer, kid(x), fn, n_vars)
        case dl.SumOuter(delta=x):
            return LSumOuter(kid(x))
        case dl.Replicate(count=k, delta=x):
            return LReplicate(k, kid(x))
        case dl.Transpose(perm=p, delta=x):
            return LTranspose(p, kid(x))
        case dl.Reshape(new_shape=sh, delta=x):
            return LReshape(sh, kid(x))
        case dl.FromList(deltas=xs):
            return LFromList(tuple(kid(x) for x in xs))
        case dl.Share():
            raise AssertionError("Share nodes are converted by to_let_form")
        case _:
            assert_never(d)


def to_let_form(delta: dl.Delta) -> LetDelta:
    """Share → let (paper Fig. 20, ``book/rules.md §6.1``): every ``Share id d`` reachable from
    ``delta`` becomes one binding ``let s<id> = d' in …`` and each of its uses ``s<id>``;
    bindings nest from the lowest id (outermost) to the highest.  Checks Invariants 1
    and 2 (§2.5) on the way, since the scoping of the result depends on them."""
    converted: dict[int, LetDelta] = {}
    top_var: dict[int, int] = {}  # node -> largest variable it mentions (-1: none)
    shares: dict[int, dl.Share] = {}
    bindings: dict[int, LetDelta] = {}
    for node in dl.delta_postorder([delta]):
        if isinstance(node, dl.Share):
            other = shares.get(node.id)
            if other is not None and other is not node:
                raise DualarrError(f"Invariant 2: Share id {node.id} names two nodes", op="Delta")
            if top_var[id(node.delta)] >= node.id:
                raise DualarrError(
                    f"Invariant 1: Share {top_var[id(node.delta)]} below Share {node.id}",
                    op="Delta",
                )
            shares[node.id] = node
            bindings[node.id] = converted[id(node.delta)]
            converted[id(node)] = LVar(node.id, node.shape, node.dtype)
            top_var[id(node)] = node.id
        else:
            converted[id(node)] = _convert(node, lambda k: converted[id(k)])
            top_var[id(node)] = max((top_var[id(k)] for k in dl.delta_children(node)), default=-1)
    body = converted[id(delta)]
    for name in sorted(bindings, reverse=True):
        body = LLet(name, bindings[name], body)
    return body


# --------------------------------------------------------------------------------------
# Linear programs: the target language of the transposition (book/rules.md §6.3)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Cot:
    """A cotangent variable: ``c`` (the program's parameter, id 0) or ``c<id>``."""

    id: int
    shape: Shape
    dtype: DType

    def __str__(self) -> str:
        return "c" if self.id == 0 else f"c{self.id}"


@dataclass(frozen=True)
class DVar:
    """The DMap key of let-variable ``s<name>``."""

    name: int

    def __str__(self) -> str:
        return f"s{self.name}"


@dataclass(frozen=True)
class DInput:
    """The DMap key of input ``dx<index>`` (its cotangent is that input's gradient)."""

    index: int

    def __str__(self) -> str:
        return f"dx{self.index}"


DKey: TypeAlias = DVar | DInput


class _ShownLinear:
    """``str``/``repr`` of one piece of a linear program (Γ values printed inline)."""

    def __str__(self) -> str:
        return _format_piece(cast("CExpr | Stmt", self), _Gamma(inline=True))

    __repr__ = __str__


# Cotangent expressions: one linear array operation applied to a cotangent variable.


@dataclass(frozen=True, eq=False, repr=False)
class CScale(_ShownLinear):
    """``y * c``: from ``T[Scale y u]``."""

    factor: Any
    arg: Cot


@dataclass(frozen=True, eq=False, repr=False)
class CContract(_ShownLinear):
    """``contract spec c y``: from ``T[Contract spec u y]`` (the spec transposed)."""

    spec: str
    arg: Cot
    factor: Any


@dataclass(frozen=True, eq=False, repr=False)
class CScatter(_ShownLinear):
    """``Scatter sha c f``: from ``T[Gather sh u f]`` (``sha`` the outer dims of ``u``)."""

    outer: Shape
    arg: Cot
    fn: Any
    n_vars: int


@dataclass(frozen=True, eq=False, repr=False)
class CGather(_ShownLinear):
    """``Gather sha c f``: from ``T[Scatter sh u f]``."""

    outer: Shape
    arg: Cot
    fn: Any


@dataclass(frozen=True, eq=False, repr=False)
class CEmbed(_ShownLinear):
    """``Embed sh ix c``: ``c`` at ``ix`` in zeros of shape ``sh`` (the
    ``oneHot`` of ``book/rules.md §4.1``); from ``T[Index u ix]``."""

    shape: Shape
    index: tuple[Any, ...]
    arg: Cot


@dataclass(frozen=True, eq=False, repr=False)
class CReplicate(_ShownLinear):
    """``Replicate k c``: from ``T[SumOuter u]``."""

    count: int
    arg: Cot


@dataclass(frozen=True, eq=False, repr=False)
class CSumOuter(_ShownLinear):
    """``SumOuter c``: from ``T[Replicate k u]``."""

    arg: Cot


@dataclass(frozen=True, eq=False, repr=False)
class CTranspose(_ShownLinear):
    """``Tr p⁻¹ c``: from ``T[Tr p u]``."""

    perm: tuple[int, ...]
    arg: Cot


@dataclass(frozen=True, eq=False, repr=False)
class CReshape(_ShownLinear):
    """``Reshape (shape u) c``: from ``T[Reshape sh u]``."""

    new_shape: Shape
    arg: Cot


@dataclass(frozen=True, eq=False, repr=False)
class CIndex(_ShownLinear):
    """``Index c [q]``: from ``T[FromList [u0 … un]]``, for element ``q``."""

    arg: Cot
    position: int


CExpr: TypeAlias = (
    CScale
    | CContract
    | CScatter
    | CGather | CEmbed | CReplicate | CSumOuter | CTranspose | CReshape | CIndex
)
"""A cotangent expression: the transpose of one structural Delta constructor."""


# Statements: the Cayley-transformed DMap operations, each a DMap → DMap.


@dataclass(frozen=True, eq=False, repr=False)
class Bind(_ShownLinear):
    """``let c<k> = e``: the linear binding ``let c = e in T[u]`` (SSA: bound once)."""

    target: Cot
    expr: CExpr


@dataclass(frozen=True, eq=False, repr=False)
class Onehot(_ShownLinear):
    """``Onehot n c``: add ``c`` to the DMap at ``n`` (``T[Var n]``, ``T[Input n]``)."""

    key: DKey
    arg: Cot


@dataclass(frozen=True, eq=False, repr=False)
class Lookup(_ShownLinear):
    """``let c<k> = Lookup n``: the cotangent gathered for ``s<n>`` (0 if none)."""

    target: Cot
    key: DVar


@dataclass(frozen=True, eq=False, repr=False)
class Delete(_ShownLinear):
    """``Delete n``: drop ``s<n>`` from the DMap (it goes out of scope)."""

    key: DVar


Stmt: TypeAlias = Bind | Onehot | Lookup | Delete
"""A statement of a linear program: a DMap → DMap (0 = no statement, + = sequencing)."""


@dataclass(frozen=True, eq=False)
class LinearProgram:
    """``Γ | c : τ ||- body : DMap`` — the transpose of a let-form Delta (``book/rules.md §6``).

    Run ``body`` on an empty DMap with ``cotangent`` bound to the output cotangent; the
    final DMap holds only ``dx<n>`` keys: the gradients.
    """

    cotangent: Cot
    body: tuple[Stmt, ...]

    @property
    def inputs(self) -> tuple[int, ...]:
        """The inputs that may receive a contribution, in order of first contribution."""
        seen: dict[int, None] = {}
        for s in self.body:
            if isinstance(s, Onehot) and isinstance(s.key, DInput):
                seen.setdefault(s.key.index)
        return tuple(seen)

    def __len__(self) -> int:
        return len(self.body)

    def __str__(self) -> str:
        return format_program(self)

    __repr__ = __str__


# --------------------------------------------------------------------------------------
# T[·]: transposition as rewriting (book/rules.md §6.2)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Go:
    """Pending ``T[u]`` with the cotangent ``c``."""

    c: Cot
    u: LetDelta


@dataclass(frozen=True)
class _Take:
    """Pending second half of ``T[Let n u1 u2]``: ``Delete n c + (let c = Lookup n c in
    T[u1])``, once ``T[u2]`` is done."""

    name: int
    bound: LetDelta


def transpose_delta(let_delta: LetDelta) -> LinearProgram:
    """``T[u]`` (``book/rules.md §6.2``), with DMap Cayley-transformed:

    - ``T[Zero] = 0`` (no statement); ``T[Add u1 u2] = T[u1] + T[u2]`` (one after the other)
    - ``T[Input n] = Onehot dx<n> c``; ``T[Var n] = Onehot s<n> c``
    - ``T[Let n u1 u2] = let c = T[u2] in Delete n c + (let c = Lookup n c in T[u1])``
    - ``T[Scale y u] = let c = y * c in T[u]``; ``T[Contract "A,B->C" u y] =
      let c = contract "C,B->A" c y in T[u]``
    - ``T[Gather sh u f] = let c = Scatter sha c f in T[u]``,
      ``T[Scatter sh u f] = let c = Gather sha c f in T[u]`` (``sha`` = outer dims of ``u``)
    - ``T[Index u ix] = let c = Embed (shape u) ix c in T[u]``
    - ``T[SumOuter u] = let c = Replicate k c in T[u]``, ``T[Replicate k u] = let c =
      SumOuter c in T[u]``, ``T[Tr p u] = let c = Tr p⁻¹ c in T[u]``,
      ``T[Reshape sh u] = let c = Reshape (shape u) c in T[u]``
    - ``T[FromList [u0 … un]] = Σq (let c = Index c [q] in T[uq])``

    ``let c = e in 0`` is dropped (the rules are linear, so ``T[u] = 0`` makes it dead).
    """
    c0 = Cot(0, let_delta.shape, let_delta.dtype)
    body: list[Stmt] = []
    fresh = count(1)

    def then(expr: CExpr, u: LetDelta) -> None:
        """``let c<k> = expr in T[u]``; nothing when ``u`` is ``Zero``."""
        if not isinstance(u, LZero):
            target = Cot(next(fresh), u.shape, u.dtype)
            body.append(Bind(target, expr))
            work.append(_Go(target, u))

    work: list[_Go | _Take] = [_Go(c0, let_delta)]
    while work:
        item = work.pop()
        if isinstance(item, _Take):
            if not isinstance(item.bound, LZero):
                c = Cot(next(fresh), item.bound.shape, item.bound.dtype)
                body.append(Lookup(c, DVar(item.name)))
                work.append(_Go(c, item.bound))
            body.append(Delete(DVar(item.name)))
            continue
        c, u = item.c, item.u
        match u:
            case LZero():
                pass
            case LInput(index=n):
                body.append(Onehot(DInput(n), c))
            case LVar(name=n):
                body.append(Onehot(DVar(n), c))
            case LAdd(left=a, right=b):
                work.append(_Go(c, b))
                work.append(_Go(c, a))
            case LLet(name=n, bound=u1, body=u2):
                work.append(_Take(n, u1))
                work.append(_Go(c, u2))
            case LScale(factor=y, delta=x):
                then(CScale(y, c), x)
            case LContract(spec=spec, delta=x, factor=y):
                left, right, out = parse_contraction(spec)
                then(CContract(f"{out},{right}->{left}", c, y), x)
            case LIndex(delta=x, index=ix):
                then(CEmbed(x.shape, ix, c), x)
            case LGather(outer=outer, delta=x, fn=fn):
                then(CScatter(x.shape[: u.width], c, fn, len(outer)), x)
            case LScatter(delta=x, fn=fn, n_vars=n_vars):
                then(CGather(x.shape[:n_vars], c, fn), x)
            case LSumOuter(delta=x):
                then(CReplicate(x.shape[0], c), x)
            case LReplicate(delta=x):
                then(CSumOuter(c), x)
            case LTranspose(perm=p, delta=x):
                then(CTranspose(tuple(p.index(q) for q in range(len(p))), c), x)
            case LReshape(delta=x):
                then(CReshape(x.shape, c), x)
            case LFromList(deltas=xs):
                for q, x in enumerate(xs):
                    then(CIndex(c, q), x)
            case _:
                assert_never(u)
    return LinearProgram(c0, tuple(body))


# --------------------------------------------------------------------------------------
# Running a linear program
# --------------------------------------------------------------------------------------


def _apply(alg: Algebra[Any], e: CExpr, c: Any, dtype: DType) -> Any:
    match e:
        case CScale(factor=y):
            return alg.mul(y, c, dtype)
        case CContract(spec=spec, factor=y):
            return alg.contract(spec, c, y)
        case CScatter(outer=outer, fn=fn, n_vars=n_vars):
            return alg.scatter(outer, c, fn, n_vars)
        case CGather(outer=outer, fn=fn):
            return alg.gather(outer, c, fn)
        case CEmbed(shape=sh, index=ix):
            return alg.one_hot(sh, ix, c)
        case CReplicate(count=k):
            return alg.replicate(k, c)
        case CSumOuter():
            return alg.sum_outer(c)
        case CTranspose(perm=p):
            return alg.transpose(p, c)
        case CReshape(new_shape=sh):
            return alg.reshape(sh, c)
        case CIndex(position=q):
            return alg.index(c, [alg.full((), q, DType.INT64)])
        case _:
            assert_never(e)


def _uses(s: Stmt) -> tuple[Cot, ...]:
    match s:
        case Bind(expr=e):
            return (e.arg,)
        case Onehot(arg=c):
            return (c,)
        case Lookup() | Delete():
            return ()
        case _:
            assert_never(s)


def run_linear(program: LinearProgram, algebra: Algebra[Any], cotangent: Any) -> dict[int, Any]:
    """Run ``program`` on one DMap (the Cayley transform: each statement updates it in
    place) with ``c = cotangent``; returns ``input index ↦ gradient`` like
    :func:`dualarr.ad.reverse.reverse`.  A cotangent that is 0 by construction (``Lookup`` of
    a variable nothing reached) is kept symbolic (``None``), so its consequences cost
    nothing, as Share nodes the reverse pass never reaches; a cotangent variable is freed
    after its last use."""
    last_use: dict[int, int] = {}
    for at, s in enumerate(program.body):
        for c in _uses(s):
            last_use[c.id] = at
    cots: dict[int, Any] = {program.cotangent.id: cotangent}
    dmap: dict[DKey, Any] = {}
    for at, s in enumerate(program.body):
        match s:
            case Bind(target=t, expr=e):
                value = cots.get(e.arg.id)
                cots[t.id] = None if value is None else _apply(algebra, e, value, t.dtype)
            case Onehot(key=k, arg=c):
                value = cots.get(c.id)
                if value is not None:
                    old = dmap.get(k)
                    dmap[k] = value if old is None else algebra.add(old, value, c.dtype)
            case Lookup(target=t, key=k):
                cots[t.id] = dmap.get(k)
            case Delete(key=k):
                dmap.pop(k, None)
            case _:
                assert_never(s)
        for c in _uses(s):
            if last_use[c.id] == at:
                cots.pop(c.id, None)
    return {k.index: v for k, v in dmap.items() if isinstance(k, DInput)}


# --------------------------------------------------------------------------------------
# Printing (for students: the notation of book/rules.md §6.2)
# --------------------------------------------------------------------------------------


def _format_number(value: Any) -> str:
    item = value.item() if isinstance(value, np.ndarray | np.generic) else value
    if isinstance(item, bool):
        return str(item)
    if isinstance(item, float):
        return f"{item:g}"
    return str(item)


def _format_array(value: Any) -> str:
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
        if array.ndim == 0:
            return _format_number(array)
        text = np.array2string(
            array, precision=4, threshold=12, edgeitems=3, separator=" ", max_line_width=10**6
        )
        return re.sub(r"\[\s+", "[", " ".join(text.split()))
    return " ".join(str(value).split())


class _Gamma:
    """Names for the non-linear environment Γ: factors ``y<k>``, index functions
    ``f<k>`` and array-valued indices ``i<k>``; small values are printed inline."""

    def __init__(self, inline: bool = False) -> None:
        self.inline = inline
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        self.counts: dict[str, int] = {}
        self.keep: list[object] = []  # keeps named objects alive, so ids stay theirs

    def _name(self, value: object, prefix: str, text: str) -> str:
        if id(value) not in self.names:
            k = self.counts[prefix] = self.counts.get(prefix, 0) + 1
            self.names[id(value)] = f"{prefix}{k}"
            self.keep.append(value)
            self.lines.append(f"{prefix}{k} = {text}")
        return self.names[id(value)]

    def value(self, value: object, prefix: str = "y") -> str:
        if isinstance(value, int | float | bool):
            return _format_number(value)
        if isinstance(value, np.ndarray | np.generic) and np.size(value) == 1:
            return _format_array(value)
        text = _format_array(value)
        if self.inline or len(text) <= 40:
            return f"({text})" if " " in text and not text.startswith("[") else text
        return self._name(value, prefix, text)

    def index(self, ix: tuple[Any, ...]) -> str:
        return "[" + ", ".join(self.value(i, "i") for i in ix) + "]"

    def fn(self, fn: Any) -> str:
        if isinstance(fn, list | tuple):
            parts = [_format_array(np.asarray(comp)) for comp in fn]
            text = parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"
        else:
            text = _format_array(fn)
        if self.inline:
            return f"⟨{text}⟩"
        return self._name(fn, "f", f"λ, tabulated on its grid: {text}")


_ATOM, _APP, _SCALE, _ADD, _LET = 4, 3, 2, 1, 0


def _paren(text: str, prec: int, need: int) -> str:
    return text if prec >= need else f"({text})"


def _format_node(u: LetDelta, done: dict[int, tuple[str, int]], g: _Gamma) -> tuple[str, int]:
    def arg(x: LetDelta, need: int = _ATOM) -> str:
        text, prec = done[id(x)]
        return _paren(text, prec, need)

    match u:
        case LZero():
            return "0", _ATOM
        case LInput(index=n):
            return f"dx{n}", _ATOM
        case LVar(name=n):
            return f"s{n}", _ATOM
        case LLet(name=n, bound=a, body=b):
            return f"let s{n} = {arg(a, _ADD)} in {arg(b, _LET)}", _LET
        case LAdd(left=a, right=b):
            return f"{arg(a, _ADD)} + {arg(b, _ADD)}", _ADD
        case LScale(factor=y, delta=x):
            return f"{g.value(y)} * {arg(x, _SCALE)}", _SCALE
        case LContract(spec=spec, delta=x, factor=y):
            return f"Contract {spec!r} {arg(x)} {g.value(y)}", _APP
        case LIndex(delta=x, index=ix):
            return f"Index {arg(x)} {g.index(ix)}", _APP
        case LGather(outer=outer, delta=x, fn=fn):
            return f"Gather {format_shape(outer)} {arg(x)} {g.fn(fn)}", _APP
        case LScatter(outer=outer, delta=x, fn=fn):
            return f"Scatter {format_shape(outer)} {arg(x)} {g.fn(fn)}", _APP
        case LSumOuter(delta=x):
            return f"SumOuter {arg(x)}", _APP
        case LReplicate(count=k, delta=x):
            return f"Replicate {k} {arg(x)}", _APP
        case LTranspose(perm=p, delta=x):
            return f"Tr {format_shape(p)} {arg(x)}", _APP
        case LReshape(new_shape=sh, delta=x):
            return f"Reshape {format_shape(sh)} {arg(x)}", _APP
        case LFromList(deltas=xs):
            return "FromList [" + ", ".join(arg(x, _LET) for x in xs) + "]", _APP
        case _:
            assert_never(u)


def _format_expr(u: LetDelta, g: _Gamma) -> str:
    done: dict[int, tuple[str, int]] = {}
    for node in let_postorder(u):
        done[id(node)] = _format_node(node, done, g)
    return done[id(u)][0]


def format_let(u: LetDelta) -> str:
    """A let-form term, one binding a line: ``let v3 = y1 * dx0 in`` … (then Γ)."""
    g = _Gamma()
    lines: list[str] = []
    while isinstance(u, LLet):
        lines.append(f"let s{u.name} = {_format_expr(u.bound, g)} in")
        u = u.body
    lines.append(_format_expr(u, g))
    if g.lines:
        lines += ["where", *("  " + line for line in g.lines)]
    return "\n".join(lines)


def _format_piece(piece: CExpr | Stmt, g: _Gamma) -> str:
    match piece:
        case CScale(factor=y, arg=c):
            return f"{g.value(y)} * {c}"
        case CContract(spec=spec, arg=c, factor=y):
            return f"Contract {spec!r} {c} {g.value(y)}"
        case CScatter(outer=outer, arg=c, fn=fn):
            return f"Scatter {format_shape(outer)} {c} {g.fn(fn)}"
        case CGather(outer=outer, arg=c, fn=fn):
            return f"Gather {format_shape(outer)} {c} {g.fn(fn)}"
        case CEmbed(shape=sh, index=ix, arg=c):
            return f"Embed {format_shape(sh)} {g.index(ix)} {c}"
        case CReplicate(count=k, arg=c):
            return f"Replicate {k} {c}"
        case CSumOuter(arg=c):
            return f"SumOuter {c}"
        case CTranspose(perm=p, arg=c):
            return f"Tr {format_shape(p)} {c}"
        case CReshape(new_shape=sh, arg=c):
            return f"Reshape {format_shape(sh)} {c}"
        case CIndex(arg=c, position=q):
            return f"Index {c} [{q}]"
        case Bind(target=t, expr=e):
            return f"let {t} = {_format_piece(e, g)}"
        case Onehot(key=k, arg=c):
            return f"Onehot {k} {c}"
        case Lookup(target=t, key=k):
            return f"let {t} = Lookup {k}"
        case Delete(key=k):
            return f"Delete {k}"
        case _:
            assert_never(piece)


_RULE_OF: dict[type, str] = {
    CScale: "T[Scale y u]",
    CContract: "T[Contract s u y]",
    CScatter: "T[Gather sh u f]",
    CGather: "T[Scatter sh u f]",
    CEmbed: "T[Index u ix]",
    CReplicate: "T[SumOuter u]",
    CSumOuter: "T[Replicate k u]",
    CTranspose: "T[Tr p u]",
    CReshape: "T[Reshape sh u]",
    CIndex: "T[FromList us]",
}


def _rule(s: Stmt) -> str:
    match s:
        case Bind(expr=e):
            return _RULE_OF[type(e)]
        case Onehot(key=k):
            return f"T[Var {k.name}]" if isinstance(k, DVar) else f"T[Input {k.index}]"
        case Lookup(key=k) | Delete(key=k):
            return f"T[Let {k.name} u1 u2]"
        case _:
            assert_never(s)


def format_program(program: LinearProgram) -> str:
    """The program in the notation of the rules, one statement a line, each with the rule of
    ``book/rules.md §6.2`` it comes from; then Γ (``where``)."""
    g = _Gamma()
    c = program.cotangent
    texts = [(_format_piece(s, g), _rule(s)) for s in program.body]
    width = min(max((len(t) for t, _ in texts), default=0), 48)
    lines = [f"Γ | {c} : {type_name(c.shape, c.dtype)} ||- DMap"]
    lines += [f"  {text.ljust(width)}  -- {rule}" for text, rule in texts]
    if not texts:
        lines.append("  0")
    if g.lines:
        lines += ["where", *("  " + line for line in g.lines)]
    return "\n".join(lines)


__all__ = [
    "Bind",
    "CContract",
    "CEmbed",
    "CExpr",
    "CGather",
    "CIndex",
    "CReplicate",
    "CReshape",
    "CScale",
    "CScatter",
    "CSumOuter",
    "CTranspose",
    "Cot",
    "DInput",
    "DKey",
    "DVar",
    "Delete",
    "LAdd",
    "LContract",
    "LFromList",
    "LGather",
    "LIndex",
    "LInput",
    "LLet",
    "LReplicate",
    "LReshape",
    "LScale",
    "LScatter",
    "LSumOuter",
    "LTranspose",
    "LVar",
    "LZero",
    "LetDelta",
    "LinearProgram",
    "Lookup",
    "Onehot",
    "Stmt",
    "format_let",
    "format_program",
    "let_children",
    "let_postorder",
    "run_linear",
    "to_let_form",
    "transpose_delta",
]

"""Transposition as rewriting (``book/rules.md §6``).

A Delta is a linear map from input tangents to the output tangent (§2.3).  Instead of
*evaluating* it backwards (Fig. 17, :mod:`dualarr.ad.reverse`) it can be *rewritten* into
its transpose, a linear program from the output cotangent ``c`` to input cotangents:

1. :func:`to_let_form` — the Delta DAG in let-form (paper Fig. 20): each ``Share id d``
   is a binding ``let s<id> = d in …`` and its uses the variable ``s<id>``; the bindings
   are stacked from the lowest id (outermost) to the highest, so each is bound before
   use (Invariant 1).  It is a view of the Delta, not another term type.
2. :func:`transpose_delta` — the rules ``T[·]`` of ``book/rules.md §6.2``, producing a
   :class:`LinearProgram` in context ``Γ | c : τ ||- T[u] : DMap`` (its typing judgement;
   Γ holds the primal factors, indices and index functions).  DMap is Cayley-transformed:
   a program denotes ``DMap → DMap``, ``0`` is the identity (no statement) and ``+`` is
   composition (concatenation), so the program is a flat statement list, linear in the
   size of the Delta.  The rules are not restated here: the program is what the reverse
   pass of :mod:`dualarr.ad.reverse` does when its algebra (:class:`RecordingAlgebra`)
   writes a statement for each linear operation instead of computing it, and its state
   (:class:`RecordingState`) writes ``Onehot`` for each contribution and ``Lookup`` /
   ``Delete`` when it takes a Share's cotangent.
3. :func:`run_linear` — interprets the program in an :class:`~dualarr.interp.algebra.Algebra`,
   returning ``input index ↦ gradient`` like :func:`dualarr.ad.reverse.reverse`.

So the program visits the bindings from the highest id down and performs the reverse
pass's additions in the reverse pass's order.  Every pass here is iterative: chains of
thousands of bindings are fine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import count
from typing import Any, TypeAlias, cast

import numpy as np

from ..interp.algebra import Algebra, BodyRunner, IndexFn
from ..interp.evaluate import body_runner
from ..lang.errors import format_shape
from ..lang.terms import (
    DType,
    MapAccum,
    Shape,
    Structural,
    assert_never,
    contraction_shape,
    converted_dtype,
    gathered_shape,
    indexed_shape,
    replicated_shape,
    reshaped_shape,
    scattered_shape,
    summed_shape,
    transposed_shape,
    type_name,
)
from . import delta as dl
from .reverse import ReverseState, ReverseStats, reverse_seeds

# --------------------------------------------------------------------------------------
# The let-form view of a Delta (paper Fig. 20; book/rules.md §6.1)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LetForm:
    """A Delta read as nested lets: ``bindings`` (Share id, the Share's operand), lowest
    id first, around ``root``; inside them each Share is its variable ``s<id>``."""

    root: dl.Delta
    bindings: tuple[tuple[int, dl.Delta], ...]

    @property
    def shape(self) -> Shape:
        return self.root.shape

    @property
    def dtype(self) -> DType:
        return self.root.dtype

    def __str__(self) -> str:
        """One binding a line, ``let s3 = Add s1 s2 in``, then the body and Γ."""
        g = _Gamma()
        text = dl.format_delta(
            self.root, g.value, g.fn, lambda i, rhs: f"let s{i} = {rhs} in"
        )
        if g.lines:
            text += "\nwhere\n" + "\n".join("  " + line for line in g.lines)
        return text

    __repr__ = __str__


def to_let_form(delta: dl.Delta) -> LetForm:
    """Share → let (paper Fig. 20, ``book/rules.md §6.1``): every ``Share id d`` reachable
    from ``delta`` is one binding ``let s<id> = d in …``, nested from the lowest id
    (outermost).  Checks Invariants 1 and 2 (§2.5), on which the scoping depends."""
    dl.check_invariants([delta])
    shares = {d.id: d.delta for d in dl.delta_postorder([delta]) if isinstance(d, dl.Share)}
    return LetForm(delta, tuple(sorted(shares.items(), key=lambda item: item[0])))


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
        if self.id < 0:
            return "0"  # a zero cotangent (RecordingAlgebra.zeros): no statement binds it
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


@dataclass(frozen=True)
class DResult:
    """The DMap key of result ``index`` of loop Delta ``s<name>`` (``s<name>.<index>``;
    a loop is horde-ad's mapAccum, not in the paper)."""

    name: int
    index: int

    def __str__(self) -> str:
        return f"s{self.name}.{self.index}"


DKey: TypeAlias = DVar | DInput | DResult


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
class CConvert(_ShownLinear):
    """``Convert (type u) c``: from ``T[Convert t u]``."""

    to: DType
    arg: Cot


@dataclass(frozen=True, eq=False, repr=False)
class CIndex(_ShownLinear):
    """``Index c [q]``: from ``T[FromList [u0 … un]]``, for element ``q``."""

    arg: Cot
    position: int


@dataclass(frozen=True, eq=False, repr=False)
class CStructural(_ShownLinear):
    """``construct params c``: a :class:`~dualarr.lang.terms.Structural` construct on a
    cotangent, from ``T[·]`` of a construct whose transpose rule builds one."""

    construct: type[Structural]
    params: tuple[tuple[str, Any], ...]
    arg: Cot


CExpr: TypeAlias = (
    CScale
    | CContract
    | CScatter
    | CGather | CEmbed | CReplicate | CSumOuter | CTranspose | CReshape | CConvert | CIndex
    | CStructural
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
    key: DVar | DResult


@dataclass(frozen=True, eq=False, repr=False)
class Delete(_ShownLinear):
    """``Delete n``: drop ``s<n>`` from the DMap (it goes out of scope)."""

    key: DVar | DResult


@dataclass(frozen=True, eq=False, repr=False)
class RunLoop(_ShownLinear):
    """``let (c<k>, …) = mapAccum …``: the transpose of a loop's Delta, itself a loop
    over the body's transpose (:mod:`dualarr.ad.loops`; horde-ad's mapAccum, not in the
    paper).  ``inputs`` are the loop's initial carries, xs and invariants: cotangent
    variables (``0`` where none reached) or primal values of Γ (the saved carries)."""

    targets: tuple[Cot, ...]
    loop: MapAccum
    inputs: tuple[Any, ...]


Stmt: TypeAlias = Bind | Onehot | Lookup | Delete | RunLoop
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
# T[·]: the reverse pass, recording (book/rules.md §6.2)
# --------------------------------------------------------------------------------------


class RecordingAlgebra:
    """A :class:`~dualarr.ad.reverse.CotangentAlgebra` whose cotangents are variables
    ``c<k>``: each linear operation appends ``let c<k> = e`` to ``body`` and returns
    ``c<k>``.  ``share`` is free (every cotangent is already named)."""

    def __init__(self) -> None:
        self.body: list[Stmt] = []
        self.fresh = count(1)

    def cotangent(self, shape: Shape, dtype: DType) -> Cot:
        return Cot(next(self.fresh), tuple(shape), dtype)

    def _bind(self, expr: CExpr, shape: Shape, dtype: DType) -> Cot:
        target = self.cotangent(shape, dtype)
        self.body.append(Bind(target, expr))
        return target

    def add(self, a: Cot, b: Cot, dtype: DType) -> Cot:
        raise AssertionError("contributions are added in the DMap (Onehot), not in c")

    def share(self, a: Cot) -> Cot:
        return a

    def mul(self, a: Any, b: Cot, dtype: DType) -> Cot:
        return self._bind(CScale(a, b), b.shape, dtype)

    def one_hot(self, shape: Shape, ix: Sequence[Any], c: Cot) -> Cot:
        return self._bind(CEmbed(shape, tuple(ix), c), shape, c.dtype)

    def gather(self, outer: Shape, a: Cot, fn: Any) -> Cot:
        shape = gathered_shape(tuple(outer), fn.width, a.shape)
        return self._bind(CGather(outer, a, fn), shape, a.dtype)

    def scatter(self, outer: Shape, a: Cot, fn: Any, n_vars: int) -> Cot:
        shape = scattered_shape(tuple(outer), n_vars, a.shape)
        return self._bind(CScatter(outer, a, fn, n_vars), shape, a.dtype)

    def sum_outer(self, a: Cot) -> Cot:
        return self._bind(CSumOuter(a), summed_shape(a.shape), a.dtype)

    def replicate(self, count: int, a: Cot) -> Cot:
        return self._bind(CReplicate(count, a), replicated_shape(count, a.shape), a.dtype)

    def transpose(self, perm: Sequence[int], a: Cot) -> Cot:
        shape = transposed_shape(tuple(perm), a.shape)
        return self._bind(CTranspose(tuple(perm), a), shape, a.dtype)

    def reshape(self, shape: Shape, a: Cot) -> Cot:
        shape = reshaped_shape(tuple(shape), a.shape)
        return self._bind(CReshape(shape, a), shape, a.dtype)

    def from_integral(self, a: Cot, dtype: DType) -> Cot:
        return self._bind(CConvert(dtype, a), a.shape, converted_dtype(a.dtype, dtype))

    def contract(self, spec: str, a: Cot, b: Any) -> Cot:
        shape = contraction_shape(spec, a.shape, tuple(b.shape))
        return self._bind(CContract(spec, a, b), shape, a.dtype)

    def element(self, a: Cot, position: int) -> Cot:
        return self._bind(CIndex(a, position), indexed_shape(1, a.shape), a.dtype)

    def structural(
        self, construct: type[Structural], args: Sequence[Cot], params: Mapping[str, Any]
    ) -> Cot:
        (a,) = args
        shape, dtype = construct.result_type(params, [a.shape], [a.dtype])
        return self._bind(CStructural(construct, tuple(params.items()), a), shape, dtype)

    def zeros(self, shape: Shape, dtype: DType) -> Cot:
        """A cotangent that is 0 by construction: a variable no statement binds."""
        return Cot(-next(self.fresh), tuple(shape), dtype)

    def map_accum(self, loop: MapAccum, inputs: Sequence[Any], body: BodyRunner) -> list[Cot]:
        types = zip(loop.shapes, loop.dtypes, strict=True)
        targets = tuple(self.cotangent(shape, dtype) for shape, dtype in types)
        self.body.append(RunLoop(targets, loop, tuple(inputs)))
        return list(targets)


class RecordingState(ReverseState):
    """The reverse pass's state, writing DMap statements: a contribution is ``Onehot``,
    taking a Share's cotangent is ``Lookup`` then ``Delete`` (``T[Let n u1 u2]``)."""

    def __init__(self, algebra: RecordingAlgebra) -> None:
        super().__init__()
        self.algebra = algebra

    def add_to_input(self, alg: Any, n: int, c: Any, dtype: DType) -> None:
        self.algebra.body.append(Onehot(DInput(n), c))
        self.grad[n] = DInput(n)

    def add_to_share(self, alg: Any, share: dl.Share, c: Any) -> None:
        if share.id not in self.accum:
            super().add_to_share(alg, share, DVar(share.id))
        self.algebra.body.append(Onehot(DVar(share.id), c))

    def add_to_loop(self, alg: Any, loop: dl.MapAccum, k: int, c: Any) -> None:
        collected = self.accum.get(loop.id)
        if collected is None:
            super().add_to_loop(alg, loop, k, DResult(loop.id, k))
        else:
            collected.setdefault(k, DResult(loop.id, k))
        self.algebra.body.append(Onehot(DResult(loop.id, k), c))

    def take_largest(self) -> tuple[int, Any, dl.Delta]:
        i, collected, d = super().take_largest()
        if isinstance(d, dl.MapAccum):  # one cotangent per result that got one
            cotangents: dict[int, Cot] = {}
            for k in sorted(collected):
                c = self.algebra.cotangent(d.shapes[k], d.dtypes[k])
                self.algebra.body += [Lookup(c, DResult(i, k)), Delete(DResult(i, k))]
                cotangents[k] = c
            return i, cotangents, d
        c = self.algebra.cotangent(d.shape, d.dtype)
        self.algebra.body += [Lookup(c, DVar(i)), Delete(DVar(i))]
        return i, c, d


def transpose_delta(delta: dl.Delta | LetForm, stats: ReverseStats | None = None) -> LinearProgram:
    """``T[u]`` (``book/rules.md §6.2``): the reverse pass of Fig. 17 run on the
    cotangent variable ``c`` in a :class:`RecordingAlgebra`, so each of its
    transposition rules (:func:`dualarr.ad.reverse.transpose_step`) writes one statement:

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
      ``T[Reshape sh u] = let c = Reshape (shape u) c in T[u]``, ``T[Convert t u] =
      let c = Convert (type u) c in T[u]``
    - ``T[FromList [u0 … un]] = Σq (let c = Index c [q] in T[uq])``

    ``let c = e in 0`` is dropped (the rules are linear, so ``T[u] = 0`` makes it dead),
    and so is a binding the program never reaches.
    """
    root = delta.root if isinstance(delta, LetForm) else delta
    algebra = RecordingAlgebra()
    c0 = Cot(0, root.shape, root.dtype)
    reverse_seeds(algebra, [(root, c0)], stats, RecordingState(algebra))
    return LinearProgram(c0, tuple(algebra.body))


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
        case CConvert(to=to):
            return alg.from_integral(c, to)
        case CIndex(position=q):
            return alg.index(c, [alg.full((), q, DType.INT64)])
        case CStructural(construct=construct, params=params):
            return alg.structural(construct, [c], dict(params))
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
        case RunLoop(inputs=inputs):
            return tuple(c for c in inputs if isinstance(c, Cot) and c.id >= 0)
        case _:
            assert_never(s)


def _run_loop(algebra: Algebra[Any], s: RunLoop, cots: dict[int, Any]) -> list[Any]:
    """A ``RunLoop`` statement's results (None for all when every cotangent input is 0)."""
    values = [cots.get(x.id) if isinstance(x, Cot) else x for x in s.inputs]
    if all(v is None for v, x in zip(values, s.inputs, strict=True) if isinstance(x, Cot)):
        return [None] * len(s.targets)
    filled = [
        algebra.zeros(x.shape, x.dtype) if isinstance(x, Cot) and v is None else v
        for v, x in zip(values, s.inputs, strict=True)
    ]
    return algebra.map_accum(s.loop, filled, body_runner(s.loop))


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
            case RunLoop(targets=targets):
                for t, value in zip(targets, _run_loop(algebra, s, cots), strict=True):
                    cots[t.id] = value
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

    def fn(self, fn: IndexFn[Any]) -> str:
        parts = [_format_array(np.asarray(comp)) for comp in fn.components]
        text = parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"
        if self.inline:
            return f"⟨{text}⟩"
        return self._name(fn, "f", f"λ, tabulated on its grid: {text}")


_ATOM, _APP, _SCALE, _ADD, _LET = 4, 3, 2, 1, 0


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
        case CConvert(to=to, arg=c):
            return f"Convert {to} {c}"
        case CIndex(arg=c, position=q):
            return f"Index {c} [{q}]"
        case CStructural(construct=construct, params=params, arg=c):
            return f"{construct.heading(dict(params)).capitalize()} {c}"
        case Bind(target=t, expr=e):
            return f"let {t} = {_format_piece(e, g)}"
        case Onehot(key=k, arg=c):
            return f"Onehot {k} {c}"
        case Lookup(target=t, key=k):
            return f"let {t} = Lookup {k}"
        case Delete(key=k):
            return f"Delete {k}"
        case RunLoop(targets=targets, loop=loop, inputs=inputs):
            groups = (len(loop.inits), len(loop.xs), len(loop.consts))
            shown = [str(x) if isinstance(x, Cot) else g.value(x, "r") for x in inputs]
            at, parts = 0, []
            for size in groups:
                parts.append("(" + ", ".join(shown[at : at + size]) + ")")
                at += size
            kind = "mapAccumR" if loop.reverse else "mapAccumL"
            names = ", ".join(str(t) for t in targets)
            return f"let ({names}) = {kind} {loop.length} T[body] {' '.join(parts)}"
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
    CConvert: "T[Convert t u]",
    CIndex: "T[FromList us]",
}


def _rule(s: Stmt) -> str:
    match s:
        case Bind(expr=CStructural(construct=construct)):
            return f"T[{construct.name.capitalize()} u]"
        case Bind(expr=e):
            return _RULE_OF[type(e)]
        case Onehot(key=DResult(name=n, index=k)):
            return f"T[LoopOutput {k} s{n}]"
        case Onehot(key=k):
            return f"T[Var {k.name}]" if isinstance(k, DVar) else f"T[Input {k.index}]"
        case Lookup(key=DResult(name=n)) | Delete(key=DResult(name=n)):
            return f"T[MapAccum] (s{n})"
        case Lookup(key=k) | Delete(key=k):
            return f"T[Let {k.name} u1 u2]"
        case RunLoop():
            return "T[MapAccum]: a loop over T[body]"
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
    "CConvert",
    "CEmbed",
    "CExpr",
    "CGather",
    "CIndex",
    "CReplicate",
    "CReshape",
    "CScale",
    "CScatter",
    "CStructural",
    "CSumOuter",
    "CTranspose",
    "Cot",
    "DInput",
    "DKey",
    "DResult",
    "DVar",
    "Delete",
    "LetForm",
    "LinearProgram",
    "Lookup",
    "Onehot",
    "RecordingAlgebra",
    "RecordingState",
    "RunLoop",
    "Stmt",
    "format_program",
    "run_linear",
    "to_let_form",
    "transpose_delta",
]

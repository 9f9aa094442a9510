"""The reverse pass over Delta terms (paper Fig. 5 and Fig. 17) and its forward twin.

``evalD c d`` pushes the cotangent ``c`` into ``d``; at a ``Share id d'`` it only adds
``c`` to ``accum[id]`` and remembers ``dfrag[id] = d'``.  ``backprop`` then repeatedly
takes the **largest** id left, so every Share node is evaluated exactly once, after all
its uses (Invariant 1 makes that order correct).

The transposition rules (``book/rules.md §6``) are stated once, in :func:`transpose_step`:
the cotangent of a node's operand given the node's cotangent.  They are written against
a :class:`CotangentAlgebra` and the cotangents are collected by a :class:`ReverseState`,
so the same pass computes gradients on NumPy arrays here, builds gradient terms in the
symbolic path (§7.2) and, run in an algebra that records statements, writes the
transposed linear program of :mod:`dualarr.ad.transposition`.  ``forward`` evaluates a
Delta on tangents (the JVP, "evalFwd").
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypeVar

from ..interp.algebra import Algebra, BodyRunner
from ..lang.rules import RuleTable
from ..lang.terms import DType, MapAccum, Shape, Structural, assert_never, parse_contraction
from . import delta as dl

C = TypeVar("C")


class CotangentAlgebra(Protocol[C]):
    """The linear operations the reverse pass applies to cotangents (carrier ``C``);
    factors, indices and index functions are primal values.  Every
    :class:`~dualarr.interp.algebra.Algebra` is one."""

    def add(self, a: C, b: C, dtype: DType) -> C: ...
    def mul(self, a: Any, b: C, dtype: DType) -> C: ...
    def share(self, a: C) -> C: ...
    def one_hot(self, shape: Shape, ix: Sequence[Any], c: C) -> C: ...
    def gather(self, outer: Shape, a: C, fn: Any) -> C: ...
    def scatter(self, outer: Shape, a: C, fn: Any, n_vars: int) -> C: ...
    def sum_outer(self, a: C) -> C: ...
    def replicate(self, count: int, a: C) -> C: ...
    def transpose(self, perm: Sequence[int], a: C) -> C: ...
    def reshape(self, shape: Shape, a: C) -> C: ...
    def from_integral(self, a: C, dtype: DType) -> C: ...
    def contract(self, spec: str, a: C, b: Any) -> C: ...
    def element(self, a: C, position: int) -> C: ...
    def structural(
        self, construct: type[Structural], args: Sequence[C], params: Mapping[str, Any]
    ) -> C: ...
    def zeros(self, shape: Shape, dtype: DType) -> C: ...
    def map_accum(self, loop: MapAccum, inputs: Sequence[Any], body: BodyRunner) -> list[C]: ...


TransposeRule: TypeAlias = Callable[[CotangentAlgebra[Any], dl.Structural, Any], Any]
"""The transposition rule of a linear :class:`~dualarr.lang.terms.Structural` construct:
``(alg, d, c)`` gives the cotangent of ``d``'s operand from ``d``'s cotangent ``c``."""

TRANSPOSE_RULES: RuleTable[TransposeRule] = RuleTable("transpose")
"""``T[construct params u]`` of each :class:`~dualarr.lang.terms.Structural` construct
(``book/rules.md §6.2``), used by the reverse pass and so by the transposition."""


LoopTranspose: TypeAlias = Callable[
    [CotangentAlgebra[Any], dl.MapAccum, Mapping[int, Any]], list[Any]
]
"""The transpose of a loop's Delta (:class:`~dualarr.ad.delta.MapAccum`; horde-ad's
mapAccum, not in the paper): the cotangent of each operand Delta (None where it gets
none) from the cotangents of the loop's results, by result number (a missing one is 0)."""

LoopTangent: TypeAlias = Callable[[Algebra[Any], dl.MapAccum, Sequence[Any]], list[Any]]
"""The tangent of a loop's Delta: the tangent of each result (None for one that is not
float) from the tangent of each operand Delta."""

LOOP_TRANSPOSE: RuleTable[LoopTranspose] = RuleTable("loop transpose")
LOOP_TANGENT: RuleTable[LoopTangent] = RuleTable("loop tangent")
"""A loop Delta's transpose and tangent, both loops over the body's derivatives, filed
by :mod:`dualarr.ad.loops`, which derives them from the body with the pipeline itself."""


@dataclass
class ReverseStats:
    """What one reverse pass did: the evaluation order is part of the paper's claim."""

    share_order: list[int] = field(default_factory=list)  # ids, as evaluated
    nodes_visited: int = 0
    one_hots: int = 0  # one-hot cotangents materialised (transposed Index nodes)

    @property
    def shares_evaluated(self) -> int:
        return len(self.share_order)


@dataclass
class ReverseState:
    """``ES = {grad, dfrag, accum}`` of Fig. 17: the cotangents collected so far, by
    input (``grad``) and by Share id (``accum``), and the pending Share nodes."""

    grad: dict[int, Any] = field(default_factory=dict)
    dfrag: dict[int, dl.Delta] = field(default_factory=dict)
    accum: dict[int, Any] = field(default_factory=dict)
    pending: list[int] = field(default_factory=list)  # max-heap of ids (negated)

    def add_to_input(self, alg: CotangentAlgebra[Any], n: int, c: Any, dtype: DType) -> None:
        """``grad[n] += c``."""
        old = self.grad.get(n)
        self.grad[n] = c if old is None else alg.add(old, c, dtype)

    def add_to_share(self, alg: CotangentAlgebra[Any], share: dl.Share, c: Any) -> None:
        """``accum[id] += c``; the first contribution makes the Share pending."""
        old = self.accum.get(share.id)
        if old is None:
            heapq.heappush(self.pending, -share.id)
            self.dfrag[share.id] = share.delta
        self.accum[share.id] = c if old is None else alg.add(old, c, share.dtype)

    def add_to_loop(self, alg: CotangentAlgebra[Any], loop: dl.MapAccum, k: int, c: Any) -> None:
        """``accum[id][k] += c``: a loop's Delta collects the cotangent of each of its
        results, and is transposed once, when its id is the largest left."""
        collected = self.accum.get(loop.id)
        if collected is None:
            heapq.heappush(self.pending, -loop.id)
            self.dfrag[loop.id] = loop
            collected = self.accum[loop.id] = {}
        old = collected.get(k)
        collected[k] = c if old is None else alg.add(old, c, loop.dtypes[k])

    def take_largest(self) -> tuple[int, Any, dl.Delta]:
        """The pending Share with the largest id: its id, cotangent and fragment."""
        i = -heapq.heappop(self.pending)
        return i, self.accum.pop(i), self.dfrag.pop(i)


def transpose_step(alg: CotangentAlgebra[C], d: dl.UnaryDelta, c: C) -> C:
    """The cotangent of ``d``'s operand, given the cotangent ``c`` of ``d``: the
    transposition rule of the one linear operation ``d`` applies (``book/rules.md
    §6.2``; the cases of Fig. 17)."""
    match d:
        case dl.Scale(factor=s):
            return alg.mul(s, c, d.dtype)  # a diagonal map is its own transpose
        case dl.Index(delta=x, index=ix):
            return alg.one_hot(x.shape, ix, c)
        case dl.Gather(outer=outer, delta=x, fn=fn):
            return alg.scatter(x.shape[: d.width], c, fn, len(outer))
        case dl.Scatter(delta=x, fn=fn, n_vars=n_vars):
            return alg.gather(x.shape[:n_vars], c, fn)
        case dl.SumOuter(delta=x):
            return alg.replicate(x.shape[0], c)
        case dl.Replicate():
            return alg.sum_outer(c)
        case dl.Transpose(perm=p):
            return alg.transpose(tuple(p.index(q) for q in range(len(p))), c)
        case dl.Reshape(delta=x):
            return alg.reshape(x.shape, c)
        case dl.Convert(delta=x):
            return alg.from_integral(c, x.dtype)  # convert back to the operand's type
        case dl.Contract(spec=spec, factor=f):
            left, right, out = parse_contraction(spec)
            return alg.contract(f"{out},{right}->{left}", c, f)
        case dl.Structural(construct=construct):
            operand: C = TRANSPOSE_RULES[construct](alg, d, c)
            return operand
        case _:
            assert_never(d)


def eval_delta(
    alg: CotangentAlgebra[C],
    state: ReverseState,
    c: C,
    d: dl.Delta,
    stats: ReverseStats,
) -> None:
    """``evalD c d``: one cotangent into one Delta, stopping at Share nodes.  A
    cotangent is computed only for an operand that is not ``Zero``."""
    stack: list[tuple[C, dl.Delta]] = [(c, d)]
    while stack:
        c, d = stack.pop()
        stats.nodes_visited += 1
        match d:
            case dl.Zero():
                pass
            case dl.Input(index=n):
                state.add_to_input(alg, n, c, d.dtype)
            case dl.Share():
                state.add_to_share(alg, d, c)
            case dl.LoopOutput(index=k, delta=loop):
                assert isinstance(loop, dl.MapAccum)
                state.add_to_loop(alg, loop, k, c)
            case dl.MapAccum():  # reached from the pending heap: c holds every result's
                cotangents = LOOP_TRANSPOSE[dl.MapAccum](alg, d, c)  # type: ignore[arg-type]
                for kid, ct in zip(dl.delta_children(d), cotangents, strict=True):
                    if ct is not None and not isinstance(kid, dl.Zero):
                        stack.append((ct, kid))
            case dl.Add(left=a, right=b):
                c = alg.share(c)  # one cotangent, two uses (Fig. 19)
                stack.append((c, b))
                stack.append((c, a))
            case dl.FromList(deltas=xs):
                if sum(not isinstance(x, dl.Zero) for x in xs) > 1:
                    c = alg.share(c)
                for q, x in enumerate(xs):
                    if not isinstance(x, dl.Zero):
                        stack.append((alg.element(c, q), x))
            case (
                dl.Scale() | dl.Index() | dl.Gather() | dl.Scatter() | dl.SumOuter()
                | dl.Replicate() | dl.Transpose() | dl.Reshape() | dl.Convert() | dl.Contract()
                | dl.Structural()
            ):
                if isinstance(d, dl.Index):
                    stats.one_hots += 1
                if not isinstance(d.delta, dl.Zero):
                    stack.append((transpose_step(alg, d, c), d.delta))
            case _:
                assert_never(d)


def backprop(
    alg: CotangentAlgebra[Any], state: ReverseState, stats: ReverseStats
) -> ReverseState:
    """Evaluate the pending Share nodes, largest id first, each exactly once."""
    while state.pending:
        i, c, d = state.take_largest()
        stats.share_order.append(i)
        eval_delta(alg, state, c, d, stats)
    return state


@dataclass(frozen=True)
class ReverseStep:
    """The state of the reverse pass after one step: the first step pushes the seed
    cotangent into the root; each later step evaluates one Share node (largest id
    first).  ``grad`` and ``accum`` are snapshots (by input index and by Share id)."""

    number: int
    share_id: int | None  # the Share evaluated in this step (None: the seed step)
    node: dl.Delta  # the Delta the step pushed a cotangent into
    grad: dict[int, Any]
    accum: dict[int, Any]


def reverse_steps(alg: Algebra[Any], d: dl.Delta, cotangent: Any) -> Iterator[ReverseStep]:
    """The reverse pass of Fig. 17 one Share at a time (for teaching and the
    BackpropStepper widget); the last step's ``grad`` is :func:`reverse`'s result."""
    stats = ReverseStats()
    state = ReverseState()
    eval_delta(alg, state, cotangent, d, stats)
    yield ReverseStep(0, None, d, dict(state.grad), dict(state.accum))
    number = 0
    while state.pending:
        i, c, node = state.take_largest()
        number += 1
        eval_delta(alg, state, c, node, stats)
        yield ReverseStep(number, i, node, dict(state.grad), dict(state.accum))


def reverse_seeds(
    alg: CotangentAlgebra[C],
    seeds: Iterable[tuple[dl.Delta, C]],
    stats: ReverseStats | None = None,
    state: ReverseState | None = None,
) -> dict[int, Any]:
    """The reverse pass from several roots at once (one cotangent each, sharing one
    state): the gradient of each input (by its ``Input`` index)."""
    stats = stats if stats is not None else ReverseStats()
    state = state if state is not None else ReverseState()
    for d, cotangent in seeds:
        eval_delta(alg, state, cotangent, d, stats)
    return backprop(alg, state, stats).grad


def reverse(
    alg: CotangentAlgebra[C], d: dl.Delta, cotangent: C, stats: ReverseStats | None = None
) -> dict[int, Any]:
    """``eval c0 d``: the gradient of each input (by its ``Input`` index)."""
    return reverse_seeds(alg, [(d, cotangent)], stats)


def forward(alg: Algebra[Any], d: dl.Delta, tangents: Mapping[int, Any]) -> Any:
    """Evaluate a Delta on input tangents (the JVP): each node once, Shares memoised.

    A zero tangent stays zero through ``Scale`` even where the factor is infinite: a
    derivative factor evaluated where an out-of-range read gave 0 (``sqrt' 0``) must
    not turn the 0 that the read's Delta carries into NaN (the reverse pass drops such
    elements in the transposed scatter, so both passes agree)."""
    values: dict[dl.Delta, Any] = {}
    for node in dl.delta_postorder([d]):
        values[node] = _forward_node(alg, node, values, tangents)
    return values[d]


def _forward_node(
    alg: Algebra[Any], d: dl.Delta, values: dict[dl.Delta, Any], tangents: Mapping[int, Any]
) -> Any:
    def v(x: dl.Delta) -> Any:
        return values[x]

    match d:
        case dl.Zero(shape=shape, dtype=dtype):
            return alg.zeros(shape, dtype)
        case dl.Input(index=n, shape=shape, dtype=dtype):
            return tangents[n] if n in tangents else alg.zeros(shape, dtype)
        case dl.Add(left=a, right=b):
            return alg.add(v(a), v(b), d.dtype)
        case dl.Scale(factor=s, delta=x):
            tangent, zero = v(x), alg.zeros(d.shape, d.dtype)
            still_zero = alg.op("eq", [tangent, zero], DType.BOOL)
            return alg.op("select", [still_zero, zero, alg.mul(s, tangent, d.dtype)], d.dtype)
        case dl.Share(delta=x):
            return v(x)
        case dl.Index(delta=x, index=ix):
            return alg.index(v(x), ix)
        case dl.Gather(outer=outer, delta=x, fn=fn):
            return alg.gather(outer, v(x), fn)
        case dl.Scatter(outer=outer, delta=x, fn=fn, n_vars=n_vars):
            return alg.scatter(outer, v(x), fn, n_vars)
        case dl.SumOuter(delta=x):
            return alg.sum_outer(v(x))
        case dl.Replicate(count=k, delta=x):
            return alg.replicate(k, v(x))
        case dl.Transpose(perm=p, delta=x):
            return alg.transpose(p, v(x))
        case dl.Reshape(new_shape=sh, delta=x):
            return alg.reshape(sh, v(x))
        case dl.Convert(to=to, delta=x):
            return alg.from_integral(v(x), to)
        case dl.Contract(spec=spec, delta=x, factor=f):
            return alg.contract(spec, v(x), f)
        case dl.FromList(deltas=xs):
            return alg.from_list([v(x) for x in xs])
        case dl.Structural(construct=construct, params=params, delta=x):
            return alg.structural(construct, [v(x)], dict(params))
        case dl.MapAccum():
            return LOOP_TANGENT[dl.MapAccum](alg, d, [v(x) for x in dl.delta_children(d)])
        case dl.LoopOutput(index=k, delta=loop):
            return values[loop][k]
        case _:
            assert_never(d)

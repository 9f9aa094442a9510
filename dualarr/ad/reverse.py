"""The reverse pass over Delta terms (paper Fig. 5 and Fig. 17) and its forward twin.

``evalD c d`` pushes the cotangent ``c`` into ``d``; at a ``Share id d'`` it only adds
``c`` to ``accum[id]`` and remembers ``dfrag[id] = d'``.  ``backprop`` then repeatedly
takes the **largest** id left, so every Share node is evaluated exactly once, after all
its uses (Invariant 1 makes that order correct).  The cotangent arithmetic is done in an
:class:`~dualarr.interp.algebra.Algebra`, so the same pass runs on NumPy arrays here and builds
gradient terms in the symbolic path (§7.2).  ``forward`` evaluates a Delta on tangents
(the JVP, "evalFwd").
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..interp.algebra import Algebra
from ..lang.terms import DType, assert_never, parse_contraction
from . import delta as dl


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
    """``ES = {grad, dfrag, accum}`` of Fig. 17."""

    grad: dict[int, Any] = field(default_factory=dict)
    dfrag: dict[int, dl.Delta] = field(default_factory=dict)
    accum: dict[int, Any] = field(default_factory=dict)
    pending: list[int] = field(default_factory=list)  # max-heap of ids (negated)


def _add(alg: Algebra[Any], a: Any | None, b: Any, dtype: DType) -> Any:
    return b if a is None else alg.add(a, b, dtype)


def eval_delta(
    alg: Algebra[Any],
    state: ReverseState,
    c: Any,
    d: dl.Delta,
    stats: ReverseStats,
) -> None:
    """``evalD c d``: one cotangent into one Delta, stopping at Share nodes."""
    stack: list[tuple[Any, dl.Delta]] = [(c, d)]
    while stack:
        c, d = stack.pop()
        stats.nodes_visited += 1
        match d:
            case dl.Zero():
                pass
            case dl.Input(index=n):
                state.grad[n] = _add(alg, state.grad.get(n), c, d.dtype)
            case dl.Add(left=a, right=b):
                c = alg.share(c)  # one cotangent, two uses (Fig. 19)
                stack.append((c, b))
                stack.append((c, a))
            case dl.Scale(factor=s, delta=x):
                stack.append((alg.mul(s, c, d.dtype), x))
            case dl.Share(id=i, delta=x):
                if i not in state.accum:
                    heapq.heappush(state.pending, -i)
                    state.dfrag[i] = x
                state.accum[i] = _add(alg, state.accum.get(i), c, d.dtype)
            case dl.Index(delta=x, index=ix):
                stats.one_hots += 1
                stack.append((alg.one_hot(x.shape, ix, c), x))
            case dl.Gather(outer=outer, delta=x, fn=fn):
                stack.append((alg.scatter(x.shape[: d.width], c, fn, len(outer)), x))
            case dl.Scatter(delta=x, fn=fn, n_vars=n_vars):
                stack.append((alg.gather(x.shape[:n_vars], c, fn), x))
            case dl.SumOuter(delta=x):
                stack.append((alg.replicate(x.shape[0], c), x))
            case dl.Replicate(delta=x):
                stack.append((alg.sum_outer(c), x))
            case dl.Transpose(perm=p, delta=x):
                inverse = tuple(p.index(q) for q in range(len(p)))
                stack.append((alg.transpose(inverse, c), x))
            case dl.Reshape(delta=x):
                stack.append((alg.reshape(x.shape, c), x))
            case dl.Contract(spec=spec, delta=x, factor=f):
                left, right, out = parse_contraction(spec)
                stack.append((alg.contract(f"{out},{right}->{left}", c, f), x))
            case dl.FromList(deltas=xs):
                if sum(not isinstance(x, dl.Zero) for x in xs) > 1:
                    c = alg.share(c)
                for q, x in enumerate(xs):
                    if not isinstance(x, dl.Zero):
                        stack.append((alg.index(c, [alg.full((), q, DType.INT64)]), x))
            case _:
                assert_never(d)


def backprop(
    alg: Algebra[Any], state: ReverseState, stats: ReverseStats
) -> ReverseState:
    """Evaluate the pending Share nodes, largest id first, each exactly once."""
    while state.pending:
        i = -heapq.heappop(state.pending)
        stats.share_order.append(i)
        c = state.accum.pop(i)
        d = state.dfrag.pop(i)
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
        i = -heapq.heappop(state.pending)
        number += 1
        c = state.accum.pop(i)
        node = state.dfrag.pop(i)
        eval_delta(alg, state, c, node, stats)
        yield ReverseStep(number, i, node, dict(state.grad), dict(state.accum))


def reverse(
    alg: Algebra[Any], d: dl.Delta, cotangent: Any, stats: ReverseStats | None = None
) -> dict[int, Any]:
    """``eval c0 d``: the gradient of each input (by its ``Input`` index)."""
    stats = stats if stats is not None else ReverseStats()
    state = ReverseState()
    eval_delta(alg, state, cotangent, d, stats)
    return backprop(alg, state, stats).grad


def forward(alg: Algebra[Any], d: dl.Delta, tangents: Mapping[int, Any]) -> Any:
    """Evaluate a Delta on input tangents (the JVP): each node once, Shares memoised.

    A zero tangent stays zero through ``Scale`` even where the factor is infinite: a
    derivative factor evaluated where an out-of-range read gave 0 (``sqrt' 0``) must
    not turn the 0 that the read's Delta carries into NaN (the reverse pass drops such
    elements in the transposed scatter, so both passes agree)."""
    values: dict[int, Any] = {}
    for node in dl.delta_postorder([d]):
        values[id(node)] = _forward_node(alg, node, values, tangents)
    return values[id(d)]


def _forward_node(
    alg: Algebra[Any], d: dl.Delta, values: dict[int, Any], tangents: Mapping[int, Any]
) -> Any:
    def v(x: dl.Delta) -> Any:
        return values[id(x)]

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
        case dl.Contract(spec=spec, delta=x, factor=f):
            return alg.contract(spec, v(x), f)
        case dl.FromList(deltas=xs):
            return alg.from_list([v(x) for x in xs])
        case _:
            assert_never(d)

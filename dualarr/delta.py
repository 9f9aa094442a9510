"""Delta terms: the dual component of dual arrays (paper §2.3, §6, Fig. 16).

A Delta is a linear function of the program's inputs, recorded as a DAG.  ``Share``
gives a node an identity so that the reverse pass visits it once (§2.5); ids come from an
explicit :class:`dualarr.core.IdSupply` and increase as the forward pass builds them, so
every id inside a ``Share id d`` is smaller than ``id`` (Invariant 1) and one id names
one node (Invariant 2).  Factors and indices hold values of the *primal algebra* (NumPy
arrays on the concrete path, terms on the symbolic path of §7).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .core import DType, Shape, assert_never
from .errors import DualarrError


def _set(node: object, **values: object) -> None:
    for name, value in values.items():
        object.__setattr__(node, name, value)


@dataclass(frozen=True, eq=False)
class Zero:
    """The zero linear map (of a given shape)."""

    shape: Shape
    dtype: DType


@dataclass(frozen=True, eq=False)
class Input:
    """``Input n``: the tangent of the ``n``-th differentiated input."""

    index: int
    shape: Shape
    dtype: DType


@dataclass(frozen=True, eq=False)
class Add:
    """``d1 + d2``."""

    left: Delta
    right: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.left.shape, dtype=self.left.dtype)


@dataclass(frozen=True, eq=False)
class Scale:
    """``factor ⊙ d``: elementwise multiplication by a primal value of ``d``'s shape."""

    factor: Any
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape, dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False)
class Share:
    """``Share id d``: the node ``d``, shared; evaluated once in the reverse pass."""

    id: int
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape, dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False)
class Index:
    """``d[ix]`` with primal index values."""

    delta: Delta
    index: tuple[Any, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape[len(self.index) :], dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False)
class Gather:
    """``gather outer d f`` with ``f`` an evaluated index function of the primal algebra."""

    outer: Shape
    delta: Delta
    fn: Any
    shape: Shape
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, dtype=self.delta.dtype)

    @property
    def width(self) -> int:
        """Number of index components (dimensions of ``delta`` the index selects)."""
        return len(self.delta.shape) - (len(self.shape) - len(self.outer))


@dataclass(frozen=True, eq=False)
class Scatter:
    """``scatter outer d f``: sums ``d`` over its first ``n_vars`` dimensions into ``outer``."""

    outer: Shape
    delta: Delta
    fn: Any
    n_vars: int
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=(*self.outer, *self.delta.shape[self.n_vars :]), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False)
class SumOuter:
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape[1:], dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False)
class Replicate:
    count: int
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=(self.count, *self.delta.shape), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False)
class Transpose:
    perm: tuple[int, ...]
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(
            self,
            shape=tuple(self.delta.shape[p] for p in self.perm),
            dtype=self.delta.dtype,
        )


@dataclass(frozen=True, eq=False)
class Reshape:
    new_shape: Shape
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=tuple(self.new_shape), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False)
class FromList:
    deltas: tuple[Delta, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        first = self.deltas[0]
        _set(self, shape=(len(self.deltas), *first.shape), dtype=first.dtype)


Delta: TypeAlias = (
    Zero
    | Input
    | Add
    | Scale
    | Share
    | Index
    | Gather
    | Scatter
    | SumOuter
    | Replicate
    | Transpose
    | Reshape
    | FromList
)
"""A Delta term (paper Fig. 16, for the core language of Fig. 7)."""


def delta_children(d: Delta) -> tuple[Delta, ...]:
    match d:
        case Zero() | Input():
            return ()
        case Add(left=a, right=b):
            return (a, b)
        case FromList(deltas=ds):
            return ds
        case (
            Scale(delta=x)
            | Share(delta=x)
            | Index(delta=x)
            | Gather(delta=x)
            | Scatter(delta=x)
            | SumOuter(delta=x)
            | Replicate(delta=x)
            | Transpose(delta=x)
            | Reshape(delta=x)
        ):
            return (x,)
        case _:
            assert_never(d)


def delta_postorder(roots: Iterable[Delta]) -> list[Delta]:
    """Every node of a Delta DAG once, children first (iterative)."""
    order: list[Delta] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack: list[tuple[Delta, int]] = [(root, 0)]
        while stack:
            node, at = stack[-1]
            kids = delta_children(node)
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


@dataclass(frozen=True)
class DeltaSize:
    """Node counts of a Delta DAG (shared nodes counted once)."""

    nodes: int
    shares: int

    def __str__(self) -> str:
        return f"{self.nodes} Delta nodes ({self.shares} Share)"


def size(roots: Iterable[Delta]) -> DeltaSize:
    order = delta_postorder(roots)
    return DeltaSize(len(order), sum(isinstance(d, Share) for d in order))


def check_invariants(roots: Iterable[Delta]) -> None:
    """Invariants 1 and 2 of §2.5: ids below a ``Share id`` are smaller than ``id``, and
    one id names one node.  Raises :class:`DualarrError` naming the violation."""
    by_id: dict[int, Share] = {}
    for node in delta_postorder(roots):
        if not isinstance(node, Share):
            continue
        other = by_id.get(node.id)
        if other is not None and other is not node:
            raise DualarrError(f"Invariant 2: Share id {node.id} names two nodes", op="Delta")
        by_id[node.id] = node
        stack = list(delta_children(node))
        seen: set[int] = set()
        while stack:
            below = stack.pop()
            if id(below) in seen:
                continue
            seen.add(id(below))
            if isinstance(below, Share):
                if below.id >= node.id:
                    raise DualarrError(
                        f"Invariant 1: Share {below.id} below Share {node.id}", op="Delta"
                    )
                continue  # its own subtree was checked when it was visited
            stack.extend(delta_children(below))

"""Delta terms of the build-it-yourself track (§6.1, Fig. 12 extended to arrays, Fig. 13).

Given to the learner: a Delta is a program for a linear map from the inputs' tangents to
one value's tangent.  ``Zero``, ``Input``, ``Add``, ``Scale`` and ``Share`` are §2's;
every other array operation of the core language is linear, so its Delta constructor
*is* that operation applied to tangents (§6.1).  The same constructors serve both
stages that build Deltas: in stage (c) (dual arrays) the primal fields hold NumPy arrays
and integers; in stage (d) (compile time, §7) they hold terms of
:mod:`dualarr.teach.scratch.terms`.  Shapes that a transpose needs are stored.

``eq=False``: two nodes are the same node only when they are the same object, which is
what Invariant 2 of §2.5 is about; a ``Share`` node's ``id`` is larger than every id
inside it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeAlias, TypeGuard, get_args

__all__ = [
    "Add", "Delta", "FromList", "Gather", "Index", "Input", "Replicate", "Scale",
    "Scatter", "Share", "SumOuter", "Transpose", "Zero", "delta_children", "nodes",
]  # fmt: skip


@dataclass(frozen=True, eq=False)
class Zero:
    """The tangent of a constant, of this shape."""

    shape: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Input:
    """The tangent of the program's input ``name``."""

    name: str


@dataclass(frozen=True, eq=False)
class Scale:
    """``factor * d`` elementwise; ``factor`` is primal (an array, or a term in (d))."""

    factor: Any
    d: Delta


@dataclass(frozen=True, eq=False)
class Add:
    left: Delta
    right: Delta


@dataclass(frozen=True, eq=False)
class Share:
    """A named node (§2.5): evaluated once by the reverse pass, however often used."""

    id: int
    d: Delta


@dataclass(frozen=True, eq=False)
class Index:
    """``d[index]`` of an array of shape ``source_shape``; ``index`` holds ints (c) or
    int terms (d)."""

    d: Delta
    index: tuple[Any, ...]
    source_shape: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Gather:
    """``gather shape d (λvars. index)`` reading an array of shape ``source_shape``.
    ``env`` gives the primal values of the index function's free variables in (c)
    (``None`` in (d), where they are terms in scope)."""

    shape: tuple[int, ...]
    d: Delta
    vars: tuple[str, ...]
    index: tuple[Any, ...]
    source_shape: tuple[int, ...]
    env: Mapping[str, Any] | None = None


@dataclass(frozen=True, eq=False)
class Scatter:
    """``scatter shape d (λvars. index)`` of an array of shape ``source_shape``."""

    shape: tuple[int, ...]
    d: Delta
    vars: tuple[str, ...]
    index: tuple[Any, ...]
    source_shape: tuple[int, ...]
    env: Mapping[str, Any] | None = None


@dataclass(frozen=True, eq=False)
class SumOuter:
    """The sum along the outermost dimension, of length ``count``."""

    d: Delta
    count: int


@dataclass(frozen=True, eq=False)
class Replicate:
    count: int
    d: Delta


@dataclass(frozen=True, eq=False)
class Transpose:
    perm: tuple[int, ...]
    d: Delta


@dataclass(frozen=True, eq=False)
class FromList:
    elems: tuple[Delta, ...]


Delta: TypeAlias = (
    Zero | Input | Scale | Add | Share | Index | Gather | Scatter | SumOuter | Replicate
    | Transpose | FromList
)  # fmt: skip
"""A Delta term."""

DELTA_TYPES: tuple[type, ...] = get_args(Delta)


def is_delta(value: object) -> TypeGuard[Delta]:
    return isinstance(value, DELTA_TYPES)


def delta_children(d: Delta) -> list[Delta]:
    """The Delta subterms of ``d`` one level down."""
    kids: list[Delta] = []
    for field in fields(d):
        value = getattr(d, field.name)
        if is_delta(value):
            kids.append(value)
        elif isinstance(value, tuple):
            kids.extend(x for x in value if is_delta(x))
    return kids


def nodes(root: Delta) -> Iterator[Delta]:
    """Every distinct node of the Delta DAG (by identity), each once."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(delta_children(node))

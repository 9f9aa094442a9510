"""The core array language (paper §3, Figs. 7–8; ``book/rules.md §1``).

A term is a DAG of frozen dataclasses joined by the :data:`Term` union.  Every node
checks its arguments when it is built and records its ``shape`` and element type
(``dtype``), so an ill-typed term cannot exist.  Nodes compare by identity: a value
used twice is the *same* node, which is how sharing is kept (paper §2.5, App. C.2).

Binders: ``Let`` binds its variable in ``body``; ``Build1`` binds its index variable
in ``body``; ``Gather``/``Scatter`` bind the variables of their index function in
``index``.  Variables carry unique ids drawn from an explicit :class:`IdSupply`.

Every traversal in this module is iterative, so terms of any depth are fine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, NoReturn, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from .errors import (
    DtypeError,
    ShapeError,
    UnsupportedDtypeError,
    UnsupportedError,
    format_shape,
)
from .primitives import REGISTRY, Primitive
from .primitives import OpKind as OpKind
from .structure import Structure, structure_of

Shape = tuple[int, ...]


def assert_never(value: NoReturn) -> NoReturn:
    """Exhaustiveness guard for ``match`` over an ADT (see the ADT seed post)."""
    raise AssertionError(f"unhandled case: {type(value).__name__}")


class DType(Enum):
    """Element types of the core language: floats are differentiable, ints index."""

    FLOAT32 = "float32"
    FLOAT64 = "float64"
    INT64 = "int64"
    BOOL = "bool"

    @property
    def is_float(self) -> bool:
        return self in (DType.FLOAT32, DType.FLOAT64)

    @property
    def is_numeric(self) -> bool:
        return self is not DType.BOOL

    def numpy(self) -> np.dtype[np.generic]:
        return np.dtype(self.value)

    def __str__(self) -> str:
        return self.value

    @staticmethod
    def of_numpy(dtype: npt.DTypeLike, *, what: str = "array", op: str | None = None) -> DType:
        """The core type of a NumPy dtype: any integer kind becomes ``int64``.

        Any other is an :class:`UnsupportedDtypeError` naming it: with ``op``, ``what``
        says what had it (``trace: argument 0 has element type float16 …``); without,
        ``what`` is the operation."""
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise UnsupportedDtypeError(
                f"{dtype!r} is not a NumPy element type", op=op or what
            ) from None
        if dt == np.float64:
            return DType.FLOAT64
        if dt == np.float32:
            return DType.FLOAT32
        if dt.kind in "iu":
            return DType.INT64
        if dt.kind == "b":
            return DType.BOOL
        subject = f"{what} has element type {dt}, which" if op else f"element type {dt}"
        raise UnsupportedDtypeError(
            f"{subject} is not supported (use float32, float64, an integer type or bool)",
            op=op or what,
        )


def type_name(shape: Shape, dtype: DType) -> str:
    """``float64[2,3]``: the type of an array term as printed in messages."""
    return f"{dtype}{format_shape(shape)}"


class IdSupply:
    """An explicit supply of fresh, increasing ids (no module-level counters)."""

    def __init__(self, start: int = 1) -> None:
        self._next = start

    def fresh(self) -> int:
        value = self._next
        self._next += 1
        return value

    @property
    def next_id(self) -> int:
        return self._next


# --------------------------------------------------------------------------------------
# Elementwise operations
# --------------------------------------------------------------------------------------


OPS = REGISTRY
"""Every elementwise primitive of the core language, by name: the records of
:mod:`dualarr.lang.primitives` (arity, dtype rule, infix symbol, …)."""


def _op_result_dtype(spec: Primitive, dtypes: Sequence[DType]) -> DType:
    def bad(expected: str) -> NoReturn:
        got = ", ".join(str(d) for d in dtypes)
        raise DtypeError(f"expects {expected}, got {got}", op=spec.name)

    kind = spec.kind
    if kind is OpKind.FLOAT_UNARY:
        if not dtypes[0].is_float:
            bad("a float argument")
        return dtypes[0]
    if kind is OpKind.NUM_UNARY:
        if not dtypes[0].is_numeric:
            bad("a numeric argument")
        return dtypes[0]
    if kind is OpKind.LOGIC_UNARY:
        if dtypes[0] is not DType.BOOL:
            bad("a bool argument")
        return DType.BOOL
    if kind is OpKind.SELECT:
        if dtypes[0] is not DType.BOOL or dtypes[1] is not dtypes[2]:
            bad("a bool condition and two branches of one element type")
        return dtypes[1]
    a, b = dtypes
    if a is not b:
        bad("arguments of one element type")
    if kind is OpKind.NUM_BINARY:
        if not a.is_numeric:
            bad("numeric arguments")
        return a
    if kind is OpKind.FLOAT_BINARY:
        if not a.is_float:
            bad("float arguments")
        return a
    if kind is OpKind.INT_BINARY:
        if a is not DType.INT64:
            bad("int arguments")
        return a
    if kind is OpKind.COMPARE:
        return DType.BOOL
    if kind is OpKind.LOGIC_BINARY:
        if a is not DType.BOOL:
            bad("bool arguments")
        return DType.BOOL
    assert_never(kind)


# --------------------------------------------------------------------------------------
# The term ADT
# --------------------------------------------------------------------------------------


VIEWS: dict[str, Callable[..., Any]] = {}
"""How terms and Deltas are shown: the printer (``print_term``, ``structure``) and the
drawing (``term_graph``, ``delta_graph``), layers above this one, install themselves
here (:func:`install_views`), so the term types never import them."""


def install_views(**views: Callable[..., Any]) -> None:
    """Make ``views`` the way terms and Deltas print and draw."""
    VIEWS.update(views)


def view(name: str) -> Callable[..., Any]:
    """An installed view (all are, once :mod:`dualarr` is imported)."""
    found = VIEWS.get(name)
    if found is None:
        raise UnsupportedError(f"the view {name} needs dualarr's printer and drawing", op=name)
    return found


class TermBase:
    """Methods shared by every term node: printing and a structured ``repr``.

    Nodes compare and hash by identity (``eq=False``), so the tables of a DAG walk
    (visited sets, memos, hash-consing keys) key on the nodes themselves: no ``id()``
    integer per entry, and a node stays alive while a table refers to it."""

    __slots__ = ()

    def __str__(self) -> str:
        return str(view("print_term")(self))

    def __repr__(self) -> str:
        return str(view("structure")(self))

    def graph(self) -> Any:
        """The term DAG as a graphviz drawing (:mod:`dualarr.show.drawing`)."""
        return view("term_graph")([self])


def _set(node: object, **values: object) -> None:
    for name, value in values.items():
        object.__setattr__(node, name, value)


def _check_index_components(op: str, index: Sequence[Term], array_shape: Shape) -> None:
    for position, component in enumerate(index):
        if component.shape != () or component.dtype is not DType.INT64:
            raise DtypeError(
                f"index component {position} must be a rank-0 int, got "
                f"{type_name(component.shape, component.dtype)}",
                op=op,
                shapes=[array_shape, component.shape],
            )


def _check_vars(op: str, variables: Sequence[Var]) -> None:
    for var in variables:
        if var.shape != () or var.dtype is not DType.INT64:
            raise DtypeError(f"bound index variable {var.hint} must be a rank-0 int", op=op)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Const(TermBase):
    """A constant array (read-only)."""

    value: np.ndarray
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        array = np.array(self.value, copy=True)
        dtype = DType.of_numpy(array.dtype, what="constant")
        array = array.astype(dtype.numpy(), copy=False)
        array.setflags(write=False)
        _set(self, value=array, shape=tuple(array.shape), dtype=dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Var(TermBase):
    """A variable: an input, a ``let``-bound name or a bound index variable.

    ``id`` is unique within a program (from its :class:`IdSupply`); like every node,
    a variable compares by identity, so variables of different traces never mix.
    """

    id: int
    hint: str
    shape: Shape
    dtype: DType


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Op(TermBase):
    """An elementwise primitive ``op(e1..en)``: arguments of one shape (Fig. 7)."""

    op: str
    args: tuple[Term, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        spec = OPS.get(self.op)
        if spec is None:
            raise UnsupportedError(f"unknown elementwise operation {self.op!r}", op=self.op)
        if len(self.args) != spec.arity:
            raise ShapeError(f"takes {spec.arity} arguments, got {len(self.args)}", op=self.op)
        shape = self.args[0].shape
        if any(a.shape != shape for a in self.args):
            shapes = [a.shape for a in self.args]
            raise ShapeError(
                "elementwise arguments must have equal shapes, got "
                + " and ".join(format_shape(s) for s in shapes),
                op=self.op,
                shapes=shapes,
            )
        dtypes = tuple(a.dtype for a in self.args)
        dtype = _RESULT_DTYPES.get((spec.kind, dtypes))
        if dtype is None:
            dtype = _RESULT_DTYPES[spec.kind, dtypes] = _op_result_dtype(spec, dtypes)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)


_RESULT_DTYPES: dict[tuple[OpKind, tuple[DType, ...]], DType] = {}
"""The result types :func:`_op_result_dtype` accepted, by kind and argument types."""


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Cond(TermBase):
    """Strict conditional ``cond c a b``: all three evaluated, ``c`` a rank-0 bool."""

    cond: Term
    if_true: Term
    if_false: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        if self.cond.shape != () or self.cond.dtype is not DType.BOOL:
            raise DtypeError(
                f"condition must be a rank-0 bool, got "
                f"{type_name(self.cond.shape, self.cond.dtype)}",
                op="cond",
                shapes=[self.cond.shape],
            )
        a, b = self.if_true, self.if_false
        if a.shape != b.shape or a.dtype is not b.dtype:
            raise ShapeError(
                f"branches differ: {type_name(a.shape, a.dtype)} and {type_name(b.shape, b.dtype)}",
                op="cond",
                shapes=[a.shape, b.shape],
            )
        _set(self, shape=a.shape, dtype=a.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Let(TermBase):
    """``let var = bound in body``: explicit sharing."""

    var: Var
    bound: Term
    body: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        if self.var.shape != self.bound.shape or self.var.dtype is not self.bound.dtype:
            raise ShapeError(
                f"variable {self.var.hint} : {type_name(self.var.shape, self.var.dtype)} "
                f"bound to {type_name(self.bound.shape, self.bound.dtype)}",
                op="let",
                shapes=[self.var.shape, self.bound.shape],
            )
        _set(self, shape=self.body.shape, dtype=self.body.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Build1(TermBase):
    """``build1 k (λi. body)``: the array ``[body[i:=0], …, body[i:=k-1]]``."""

    size: int
    var: Var
    body: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        if self.size < 0:
            raise ShapeError(f"size must be >= 0, got {self.size}", op="build1")
        _check_vars("build1", [self.var])
        _set(self, shape=(self.size, *self.body.shape), dtype=self.body.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Index(TermBase):
    """``index e ix`` (``e[ix]``): a subarray; zeros when any component is out of range."""

    array: Term
    index: tuple[Term, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _check_index_components("index", self.index, self.array.shape)
        _set(self, shape=indexed_shape(len(self.index), self.array.shape), dtype=self.array.dtype)


def indexed_shape(width: int, shape: Shape, op: str = "index") -> Shape:
    """The shape rule of ``e[ix]`` (``ix`` of ``width`` components), for the term and for
    the Delta it begets: ``ix`` selects at most all of ``shape``'s dimensions; the result
    is the rest of them."""
    if width > len(shape):
        raise ShapeError(
            f"index of length {width} is too long for an array of shape {format_shape(shape)}",
            op=op,
            shapes=[shape],
        )
    return shape[width:]


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Gather(TermBase):
    """``gather sh e (λis. ix)``: ``out[is] = e[ix]`` for ``is`` in ``sh`` (0 when out of range)."""

    outer_shape: Shape
    array: Term
    vars: tuple[Var, ...]
    index: tuple[Term, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _check_vars("gather", self.vars)
        if len(self.vars) != len(self.outer_shape):
            raise ShapeError(
                f"index function takes {len(self.vars)} variables but the gather shape "
                f"{format_shape(self.outer_shape)} has rank {len(self.outer_shape)}",
                op="gather",
                shapes=[self.outer_shape],
            )
        _check_index_components("gather", self.index, self.array.shape)
        shape = gathered_shape(self.outer_shape, len(self.index), self.array.shape)
        _set(self, shape=shape, dtype=self.array.dtype)


def gathered_shape(outer: Shape, width: int, shape: Shape) -> Shape:
    """The shape rule of ``gather outer e f`` (``f`` of ``width`` components), for the
    term and for the Delta it begets: ``f`` indexes ``e`` (:func:`indexed_shape`) at each
    point of ``outer``, a shape; the result is ``outer`` then the dimensions ``f`` does
    not select."""
    tail = indexed_shape(width, shape, "gather")
    _check_dims("gather", outer)
    return (*outer, *tail)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Scatter(TermBase):
    """``scatter sh e (λis. ix)``: ``out[ix] += e[is]``; out-of-range writes are dropped."""

    outer_shape: Shape
    array: Term
    vars: tuple[Var, ...]
    index: tuple[Term, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _check_vars("scatter", self.vars)
        shape = scattered_shape(self.outer_shape, len(self.vars), self.array.shape)
        if len(self.index) != len(self.outer_shape):
            raise ShapeError(
                f"index function returns {len(self.index)} components for the target shape "
                f"{format_shape(self.outer_shape)} of rank {len(self.outer_shape)}",
                op="scatter",
                shapes=[self.outer_shape, self.array.shape],
            )
        if not self.array.dtype.is_numeric:
            raise DtypeError("cannot add up bool values", op="scatter")
        _check_index_components("scatter", self.index, self.outer_shape)
        _check_dims("scatter", self.outer_shape)
        _set(self, shape=shape, dtype=self.array.dtype)


def scattered_shape(outer: Shape, n_vars: int, shape: Shape) -> Shape:
    """The shape rule of ``scatter outer e f`` (``f`` of ``n_vars`` variables), for the
    term and for the Delta it begets: ``f`` maps the first ``n_vars`` dimensions of
    ``shape`` into ``outer``; the result is ``outer`` then the rest of ``shape``."""
    if n_vars > len(shape):
        raise ShapeError(
            f"index function takes {n_vars} variables but the source has shape "
            f"{format_shape(shape)}",
            op="scatter",
            shapes=[shape],
        )
    return (*outer, *shape[n_vars:])


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class SumOuter(TermBase):
    """``sumOuter e``: the sum over the outermost dimension."""

    array: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        shape = summed_shape(self.array.shape)
        if not self.array.dtype.is_numeric:
            raise DtypeError("cannot add up bool values", op="sumOuter")
        _set(self, shape=shape, dtype=self.array.dtype)


def summed_shape(shape: Shape) -> Shape:
    """The shape rule of ``sumOuter e``, for the term and for the Delta it begets: ``e``
    has an outermost dimension; the result is the rest of ``shape``."""
    if not shape:
        raise ShapeError("needs an array of rank >= 1, got rank 0", op="sumOuter")
    return shape[1:]


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Replicate(TermBase):
    """``replicate k e``: ``k`` copies of ``e`` stacked along a new outer dimension."""

    count: int
    array: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=replicated_shape(self.count, self.array.shape), dtype=self.array.dtype)


def replicated_shape(count: int, shape: Shape) -> Shape:
    """The shape rule of ``replicate count e``, for the term and for the Delta it begets:
    ``count`` copies of ``shape`` along a new outer dimension."""
    if count < 0:
        raise ShapeError(f"count must be >= 0, got {count}", op="replicate")
    return (count, *shape)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Transpose(TermBase):
    """``tr p e``: dimension ``q`` of the result is dimension ``p[q]`` of ``e``."""

    perm: tuple[int, ...]
    array: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=transposed_shape(self.perm, self.array.shape), dtype=self.array.dtype)


def transposed_shape(perm: tuple[int, ...], shape: Shape) -> Shape:
    """The shape rule of ``tr perm e``, for the term and for the Delta it begets: ``perm``
    must permute all of ``shape``'s dimensions; dimension ``q`` of the result is dimension
    ``perm[q]`` of ``shape``."""
    if sorted(perm) != list(range(len(shape))):
        raise ShapeError(
            f"{list(perm)} is not a permutation of the {len(shape)} dimensions of "
            f"{format_shape(shape)}",
            op="tr",
            shapes=[shape],
        )
    return tuple(shape[p] for p in perm)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Reshape(TermBase):
    """``reshape sh e``: the same elements in row-major order, in a new shape."""

    new_shape: Shape
    array: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=reshaped_shape(self.new_shape, self.array.shape), dtype=self.array.dtype)


def reshaped_shape(new_shape: Shape, shape: Shape) -> Shape:
    """The shape rule of ``reshape new_shape e``, for the term and for the Delta it begets:
    ``new_shape`` holds as many elements as ``shape``, and is the result."""
    _check_dims("reshape", new_shape)
    if math.prod(new_shape) != math.prod(shape):
        raise ShapeError(
            f"cannot reshape {format_shape(shape)} "
            f"({math.prod(shape)} elements) to {format_shape(new_shape)}",
            op="reshape",
            shapes=[shape, new_shape],
        )
    return tuple(new_shape)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class FromList(TermBase):
    """``fromList [e1..en]``: stack arrays of one shape along a new outer dimension."""

    elems: tuple[Term, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=stacked_shape(self.elems), dtype=self.elems[0].dtype)


class Typed(Protocol):
    """A node with a shape and an element type: a term or a Delta."""

    @property
    def shape(self) -> Shape: ...

    @property
    def dtype(self) -> DType: ...


def stacked_shape(elems: Sequence[Typed]) -> Shape:
    """The shape rule of ``fromList [e1..en]``, for the term and for the Delta it begets:
    at least one element, all of one shape and element type, stacked along a new outer
    dimension."""
    if not elems:
        raise ShapeError("needs at least one element", op="fromList")
    first = elems[0]
    for e in elems[1:]:
        if e.shape != first.shape or e.dtype is not first.dtype:
            raise ShapeError(
                f"elements differ: {type_name(first.shape, first.dtype)} and "
                f"{type_name(e.shape, e.dtype)}",
                op="fromList",
                shapes=[first.shape, e.shape],
            )
    return (len(elems), *first.shape)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Iota(TermBase):
    """``iota n``: the int array ``[0, 1, …, n-1]``."""

    size: int
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        if self.size < 0:
            raise ShapeError(f"size must be >= 0, got {self.size}", op="iota")
        _set(self, shape=(self.size,), dtype=DType.INT64)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class FromIntegral(TermBase):
    """``fromIntegral e``: int to float, elementwise; from a float, the conversion
    between float32 and float64 (NumPy's ``astype``), whose derivative converts the
    tangent the same way."""

    array: Term
    to: DType = DType.FLOAT64
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.array.shape, dtype=converted_dtype(self.array.dtype, self.to))


def converted_dtype(source: DType, to: DType) -> DType:
    """The type rule of ``fromIntegral e`` to ``to``, for the term and for the Delta it
    begets (``convert``): an int or a float becomes the float type ``to``, shape kept."""
    if not to.is_float or not (source is DType.INT64 or source.is_float):
        raise DtypeError(
            f"converts an int or a float to a float, got {source} to {to}",
            op="fromIntegral",
        )
    return to


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Floor(TermBase):
    """``floor e``: float to int (rounding down), elementwise; never differentiated."""

    array: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        if not self.array.dtype.is_float:
            raise DtypeError(f"converts float to int, got {self.array.dtype}", op="floor")
        _set(self, shape=self.array.shape, dtype=DType.INT64)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class ArgMin(TermBase):
    """``argmin e``: for each position of ``e``'s inner shape, the outer index of a least element.

    An int result, never differentiated; ``min`` is ``e`` gathered at it (horde-ad's
    ``rminIndex``), so its gradient goes to one argmin element.
    """

    array: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=_check_reduce("argmin", self.array), dtype=DType.INT64)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class ArgMax(TermBase):
    """``argmax e``: like :class:`ArgMin`, for a greatest element."""

    array: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=_check_reduce("argmax", self.array), dtype=DType.INT64)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class ArgSort(TermBase):
    """``argsort e``: for each position of ``e``'s inner shape, the outer indices that put
    ``e`` in ascending order along its outermost dimension (stable: ties keep their order).

    An int result of ``e``'s shape, never differentiated; ``sort`` is ``e`` gathered at
    it, so its gradient is a gather (its transpose a scatter) through the permutation.
    """

    array: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        if not self.array.shape:
            raise ShapeError("needs an array of rank >= 1, got rank 0", op="argsort")
        if not self.array.dtype.is_numeric:
            raise DtypeError(f"needs numbers, got {self.array.dtype}", op="argsort")
        _set(self, shape=self.array.shape, dtype=DType.INT64)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Contract(TermBase):
    """``contract s a b``: a sum of products of two float arrays (a tensor contraction).

    ``spec`` is einsum notation ``"ij,jk->ik"``.  The gradient simplifier (§7.6, as
    horde-ad's ``AstMatmul2``/``AstDot0``) introduces it for ``sumOuter (a * b)``
    patterns.  Every letter occurs at most once per operand and in exactly two or three
    of (``a``, ``b``, result): no letter is summed over or broadcast from one operand
    alone, so the transpose of a contraction is again a contraction.
    """

    spec: str
    left: Term
    right: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        shape = contraction_shape(self.spec, self.left.shape, self.right.shape)
        if self.left.dtype != self.right.dtype or not self.left.dtype.is_float:
            raise DtypeError("needs two float arrays of one element type", op="contract")
        _set(self, shape=shape, dtype=self.left.dtype)


def contraction_shape(spec: str, left: Shape, right: Shape) -> Shape:
    """The shape rule of ``contract spec a b`` (``a`` of shape ``left``, ``b`` of shape
    ``right``), for the term and for the Delta it begets: ``spec`` is well formed
    (:func:`parse_contraction`), each operand has one letter per dimension, and a letter
    names one size; the result has the sizes of ``spec``'s output letters."""
    shapes = [left, right]
    a, b, out = parse_contraction(spec)
    sizes: dict[str, int] = {}
    for letters, operand in ((a, left), (b, right)):
        if len(letters) != len(operand):
            raise ShapeError(
                f"{spec!r} needs operands of rank {len(a)} and {len(b)}",
                op="contract",
                shapes=shapes,
            )
        for letter, extent in zip(letters, operand, strict=True):
            if sizes.setdefault(letter, extent) != extent:
                raise ShapeError(
                    f"dimension {letter!r} of {spec!r} has two sizes",
                    op="contract",
                    shapes=shapes,
                )
    return tuple(sizes[c] for c in out)


def parse_contraction(spec: str) -> tuple[str, str, str]:
    """The three letter strings of a well-formed contraction spec (see :class:`Contract`)."""
    try:
        operands, out = spec.split("->")
        a, b = operands.split(",")
    except ValueError:
        raise ShapeError(f"malformed contraction {spec!r}", op="contract") from None
    for letters in (a, b, out):
        if len(set(letters)) != len(letters) or (not letters.isalpha() and letters):
            raise ShapeError(f"malformed contraction {spec!r}", op="contract")
    for letter in set(a + b + out):
        if (letter in a) + (letter in b) + (letter in out) < 2:
            raise ShapeError(
                f"dimension {letter!r} of {spec!r} occurs in one place only", op="contract"
            )
    return a, b, out


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Share(TermBase):
    """``share_k e``: explicit global sharing in a gradient term (paper §7.2, Fig. 19).

    The symbolic reverse pass wraps every duplicated cotangent in a ``share`` with a
    fresh, increasing id; let conversion (Fig. 20) turns each into one ``let``.
    """

    id: int
    array: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.array.shape, dtype=self.array.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class Structural(TermBase):
    """A structural construct that lives in a module of its own (``dualarr.constructs``;
    not one of the paper's Fig. 7): a frozen dataclass whose ``Term`` fields are its
    children and whose other fields are its parameters.

    Its shape and element type come from :meth:`result_type`, written once and shared
    by the Delta it begets (:class:`dualarr.ad.delta.Structural`); each stage finds the
    construct's rules in that stage's rule table (:mod:`dualarr.lang.rules`), so adding
    one edits no stage.  ``name`` is how the printer and messages call it."""

    name: ClassVar[str] = ""
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        layout = _STRUCTURE[type(self)]
        kids: tuple[Term, ...] = layout.read(self)
        shape, dtype = self.result_type(
            layout.statics_of(self), [k.shape for k in kids], [k.dtype for k in kids]
        )
        _set(self, shape=shape, dtype=dtype)

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        """The shape and element type of the construct applied to children of these
        shapes and types (a :class:`ShapeError` or :class:`DtypeError` if it does not
        apply): the construct's one shape rule."""
        raise NotImplementedError(f"{cls.__name__} gives no result_type")

    @property
    def params(self) -> dict[str, Any]:
        """The construct's parameters (its fields other than children), by name."""
        return _STRUCTURE[type(self)].statics_of(self)

    @classmethod
    def heading(cls, params: Mapping[str, Any]) -> str:
        """The construct's name and parameters as every view writes them, ``rev 0``
        (a tuple as ``[1,0]``); a Delta capitalises it (``Rev 0``)."""
        shown = (
            format_shape(value) if isinstance(value, tuple) else str(value)
            for value in params.values()
        )
        return " ".join([cls.name, *shown])

    @classmethod
    def make(cls, args: Sequence[Term], params: Mapping[str, Any]) -> Structural:
        """The construct applied to ``args`` (its children, in field order) with
        ``params``: how the term algebra and the rules build one generically."""
        node: Structural = _STRUCTURE[cls].make(args, params)
        return node


@dataclass(frozen=True, eq=False, repr=False, slots=True, weakref_slot=True)
class MapAccum(TermBase):
    """``mapAccumL``/``mapAccumR`` (horde-ad's ``tmapAccumL``/``tmapAccumR``; not in the
    paper, which has no loops): a loop of ``length`` steps whose ``body`` is traced once.

    The body binds the carries (``carry_vars``), one slice of each ``xs`` along its
    outer dimension (``x_vars``) and the loop-invariant values (``const_vars``, bound to
    ``consts``); it returns the next carries, then one row of each ``ys``.  Step ``t``
    reads row ``t`` of every ``xs`` (row ``length-1-t`` when ``reverse``) and writes the
    same row of every ``ys``.  The loop has several results, the final carries then the
    stacked ``ys``: a node of a tuple type, read only through :class:`LoopOutput`."""

    length: int
    reverse: bool
    carry_vars: tuple[Var, ...]
    x_vars: tuple[Var, ...]
    const_vars: tuple[Var, ...]
    inits: tuple[Term, ...]
    xs: tuple[Term, ...]
    consts: tuple[Term, ...]
    body: tuple[Term, ...]
    shapes: tuple[Shape, ...] = field(init=False)
    dtypes: tuple[DType, ...] = field(init=False)

    def __post_init__(self) -> None:
        op = "mapAccum"
        if self.length < 0:
            raise ShapeError(f"length must be >= 0, got {self.length}", op=op)
        carries, n_x = len(self.carry_vars), len(self.x_vars)
        _check_arity(op, "initial carries", len(self.inits), carries)
        _check_arity(op, "xs", len(self.xs), n_x)
        _check_arity(op, "consts", len(self.consts), len(self.const_vars))
        if len(self.body) < carries:
            raise ShapeError(
                f"the body returns {len(self.body)} values, fewer than its {carries} carries",
                op=op,
            )
        for k, (var, init, out) in enumerate(
            zip(self.carry_vars, self.inits, self.body, strict=False)
        ):
            _check_same_type(op, f"initial carry {k}", init, var)
            _check_same_type(op, f"carry {k} returned by the body", out, var)
        for k, (var, x) in enumerate(zip(self.x_vars, self.xs, strict=True)):
            if x.shape[:1] != (self.length,) or x.shape[1:] != var.shape or x.dtype != var.dtype:
                raise ShapeError(
                    f"xs {k} must be {type_name((self.length, *var.shape), var.dtype)} "
                    f"(the loop's length, then a slice), got {type_name(x.shape, x.dtype)}",
                    op=op,
                    shapes=[x.shape, var.shape],
                )
        for k, (var, c) in enumerate(zip(self.const_vars, self.consts, strict=True)):
            _check_same_type(op, f"const {k}", c, var)
        ys = self.body[carries:]
        _set(
            self,
            shapes=(*(v.shape for v in self.carry_vars), *((self.length, *y.shape) for y in ys)),
            dtypes=(*(v.dtype for v in self.carry_vars), *(y.dtype for y in ys)),
        )

    @property
    def binders(self) -> tuple[Var, ...]:
        """Every variable the body binds: carries, slices, then loop invariants."""
        return (*self.carry_vars, *self.x_vars, *self.const_vars)

    @property
    def inputs(self) -> tuple[Term, ...]:
        """The terms bound to :attr:`binders` (the xs whole, one slice per step)."""
        return (*self.inits, *self.xs, *self.consts)

    @property
    def carry_outs(self) -> tuple[Term, ...]:
        return self.body[: len(self.carry_vars)]

    @property
    def ys(self) -> tuple[Term, ...]:
        return self.body[len(self.carry_vars) :]

    @property
    def shape(self) -> Shape:
        raise DtypeError("a loop has several results; read one with LoopOutput", op="mapAccum")

    @property
    def dtype(self) -> DType:
        raise DtypeError("a loop has several results; read one with LoopOutput", op="mapAccum")


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class LoopOutput(TermBase):
    """``loop.k``: result ``k`` of a :class:`MapAccum` (its final carries, then its
    stacked ``ys``)."""

    index: int
    loop: Term
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        loop = self.loop
        if not isinstance(loop, MapAccum):
            raise DtypeError("reads a result of a loop, not of another term", op="loop output")
        if not 0 <= self.index < len(loop.shapes):
            raise ShapeError(
                f"the loop has {len(loop.shapes)} results, no result {self.index}",
                op="loop output",
            )
        _set(self, shape=loop.shapes[self.index], dtype=loop.dtypes[self.index])


def loop_outputs(loop: MapAccum) -> tuple[LoopOutput, ...]:
    """Every result of ``loop``: the final carries, then the stacked ``ys``."""
    return tuple(LoopOutput(k, loop) for k in range(len(loop.shapes)))


def closed_loop(
    loop: MapAccum, free_vars: FreeVars, supply: IdSupply | None = None
) -> tuple[MapAccum, tuple[Var, ...]]:
    """``loop`` with each variable its body reads from outside bound as one more loop
    invariant, and those variables (the values to bind); ``loop`` itself when its body is
    closed (as :func:`dualarr.lang.loops.scan` builds it).  Inside the body each becomes
    a variable of its own (a fresh one from ``supply``; without one, a variable with the
    outer one's id and hint, which holds the same value), so no variable is both bound by
    the loop and free outside."""
    binders = set(loop.binders)
    outside: list[Var] = []
    for out in loop.body:
        outside.extend(v for v in free_vars(out) if v not in binders and v not in outside)
    if not outside:
        return loop, ()
    inner = {
        v: Var(v.id, v.hint, v.shape, v.dtype) if supply is None else fresh_var(
            supply, v.hint, v.shape, v.dtype
        )
        for v in outside
    }
    body = substitute_free(list(loop.body), dict(inner), free_vars)
    closed = MapAccum(
        loop.length,
        loop.reverse,
        loop.carry_vars,
        loop.x_vars,
        (*loop.const_vars, *inner.values()),
        loop.inits,
        loop.xs,
        (*loop.consts, *outside),
        tuple(body),
    )
    return closed, tuple(outside)


def _check_arity(op: str, what: str, got: int, want: int) -> None:
    if got != want:
        raise ShapeError(f"needs {want} {what}, got {got}", op=op)


def _check_same_type(op: str, what: str, term: Term, var: Var) -> None:
    if term.shape != var.shape or term.dtype != var.dtype:
        raise ShapeError(
            f"{what} must be {type_name(var.shape, var.dtype)}, "
            f"got {type_name(term.shape, term.dtype)}",
            op=op,
            shapes=[term.shape, var.shape],
        )


def _check_reduce(op: str, array: Term) -> Shape:
    if not array.shape or array.shape[0] == 0:
        raise ShapeError(
            f"needs a non-empty outer dimension, got {format_shape(array.shape)}",
            op=op,
            shapes=[array.shape],
        )
    if not array.dtype.is_numeric:
        raise DtypeError(f"needs numbers, got {array.dtype}", op=op)
    return array.shape[1:]


def _check_dims(op: str, shape: Shape) -> None:
    if any((not isinstance(d, int)) or d < 0 for d in shape):
        raise ShapeError(f"bad shape {shape!r}", op=op, shapes=[])


Term: TypeAlias = (
    Const
    | Var
    | Op
    | Cond
    | Let
    | Build1
    | Index
    | Gather
    | Scatter
    | SumOuter
    | Replicate
    | Transpose
    | Reshape
    | FromList
    | Iota
    | FromIntegral
    | Floor
    | ArgMin
    | ArgMax
    | ArgSort
    | Contract
    | Share
    | MapAccum
    | LoopOutput
    | Structural
)
"""A term of the core language (paper Fig. 7), or a :class:`Structural` construct of
its own module."""

TERM_TYPES: tuple[type, ...] = Term.__args__


def term_constructors() -> tuple[type, ...]:
    """Every constructor a term can have now: those of Fig. 7 (and the kit's), then each
    :class:`Structural` construct defined so far (not the open base itself) — what a
    complete rule table must cover."""
    found: list[type] = [cls for cls in TERM_TYPES if cls is not Structural]
    stack = list(Structural.__subclasses__())
    while stack:
        cls = stack.pop()
        found.append(cls)
        stack.extend(cls.__subclasses__())
    return tuple(found)


def fresh_var(supply: IdSupply, hint: str, shape: Shape, dtype: DType) -> Var:
    """A new variable with a unique id from ``supply``."""
    return Var(supply.fresh(), hint, tuple(shape), dtype)


# --------------------------------------------------------------------------------------
# Generic structure: children, rebuilding, traversal, free variables
# --------------------------------------------------------------------------------------


class _Structures(dict[type, Structure]):
    """Each constructor's structure, read off its field types the first time one is
    asked for (a new constructor, a :class:`Structural` one included, needs no entry)."""

    def __missing__(self, cls: type) -> Structure:
        found = self[cls] = structure_of(cls, "Term", "tuple[Term, ...]")
        return found


_STRUCTURE = _Structures()


def children(term: Term) -> tuple[Term, ...]:
    """The immediate subterms, in evaluation order (binders' bodies included): the
    constructor's ``Term`` fields in declaration order, a tuple of terms spliced in."""
    kids: tuple[Term, ...] = _STRUCTURE[type(term)].read(term)
    return kids


def with_children(term: Term, kids: Sequence[Term]) -> Term:
    """``term`` rebuilt with new immediate subterms (same order as :func:`children`);
    the constructor checks the new node's types."""
    rebuilt: Term = _STRUCTURE[type(term)].rebuild(term, kids)
    return rebuilt


def bound_vars(term: Term) -> tuple[tuple[Var, ...], tuple[int, ...]]:
    """The variables ``term`` binds and the positions (in :func:`children`) they scope over."""
    match term:
        case Let(var=var):
            return (var,), (1,)
        case Build1(var=var):
            return (var,), (0,)
        case Gather(vars=vs, index=index) | Scatter(vars=vs, index=index):
            return vs, tuple(range(1, 1 + len(index)))
        case MapAccum():
            start = len(term.inits) + len(term.xs) + len(term.consts)
            return term.binders, tuple(range(start, start + len(term.body)))
        case _:
            return (), ()


def postorder(
    roots: Iterable[Term], children_of: Callable[[Term], tuple[Term, ...]] | None = None
) -> list[Term]:
    """Every node reachable from ``roots`` once, children before parents (iterative);
    ``children_of`` replaces :func:`children` (e.g. to follow let-bound variables)."""
    kids_of = children if children_of is None else children_of
    order: list[Term] = []
    seen: set[Term] = set()
    for root in roots:
        if root in seen:
            continue
        stack: list[tuple[Term, Iterator[Term]]] = [(root, iter(kids_of(root)))]
        seen.add(root)
        while stack:
            node, kids = stack[-1]
            for kid in kids:
                if kid not in seen:
                    seen.add(kid)
                    stack.append((kid, iter(kids_of(kid))))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def walk(roots: Iterable[Term], descend: Callable[[Term], bool] | None = None) -> Iterator[Term]:
    """Every node reachable from ``roots`` once, in no particular order (iterative); a
    node's children are visited only where ``descend(node)`` holds.  Lazy: a search that
    stops early visits no more."""
    seen: set[Term] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        yield node
        if descend is None or descend(node):
            stack.extend(children(node))


def count_nodes(roots: Iterable[Term]) -> int:
    """Number of distinct nodes in the DAG (its size, with sharing)."""
    return len(postorder(roots))


_EMPTY: frozenset[Var] = frozenset()


class FreeVars:
    """Memoised free variables of the nodes of a DAG: each node once, its set the union
    of its children's less what it binds.  Variables in ``ignore`` (a program's inputs
    and top-level bindings) count as constants, so each set holds only the variables of
    the binders around its node and the memo stays linear in the DAG's size."""

    def __init__(self, ignore: Iterable[Var] = ()) -> None:
        self._memo: dict[Term, frozenset[Var]] = {}
        self._ignore = frozenset(ignore)

    def __call__(self, term: Term) -> frozenset[Var]:
        memo = self._memo
        cached = memo.get(term)
        if cached is not None:
            return cached
        # iterative post-order that does not descend into memoised nodes
        stack: list[tuple[Term, tuple[Term, ...], int]] = [(term, children(term), 0)]
        pending = {term}
        while stack:
            node, kids, at = stack[-1]
            while at < len(kids):
                kid = kids[at]
                at += 1
                if kid not in memo and kid not in pending:
                    pending.add(kid)
                    stack[-1] = (node, kids, at)
                    stack.append((kid, children(kid), 0))
                    break
            else:
                stack.pop()
                memo[node] = self._compute(node, kids)
        return memo[term]

    def _compute(self, node: Term, kids: tuple[Term, ...]) -> frozenset[Var]:
        if isinstance(node, Var):
            return _EMPTY if node in self._ignore else frozenset((node,))
        if not kids:
            return _EMPTY
        binders, scoped = bound_vars(node)
        result: frozenset[Var] | None = None
        for position, kid in enumerate(kids):
            fv = self._memo[kid]
            if position in scoped and fv:
                fv = fv.difference(binders)
            if not fv:
                continue
            if result is None:
                result = fv
            elif not fv <= result:
                result = result | fv
        return result if result is not None else _EMPTY


def free_vars(term: Term) -> frozenset[Var]:
    """The free variables of one term."""
    return FreeVars()(term)


def transform(
    roots: Sequence[Term], rewrite: Callable[[Term, tuple[Term, ...]], Term]
) -> list[Term]:
    """Rebuild a DAG bottom-up: ``rewrite(node, new_children)`` once per node (sharing kept)."""
    new: dict[Term, Term] = {}
    for node in postorder(roots):
        kids = tuple(new[k] for k in children(node))
        new[node] = rewrite(node, kids)
    return [new[r] for r in roots]


def rebuild(node: Term, kids: tuple[Term, ...]) -> Term:
    """``node`` with ``kids`` as children, reusing ``node`` when nothing changed."""
    old = children(node)
    if len(old) == len(kids) and all(a is b for a, b in zip(old, kids, strict=True)):
        return node
    return with_children(node, kids)


def substitute(roots: Sequence[Term], mapping: dict[Var, Term]) -> list[Term]:
    """Replace free occurrences of variables with terms, keeping sharing."""

    def rewrite(node: Term, kids: tuple[Term, ...]) -> Term:
        if isinstance(node, Var):
            return mapping.get(node, node)
        return rebuild(node, kids)

    return transform(roots, rewrite)


def substitute_free(
    terms: Sequence[Term],
    mapping: dict[Var, Term],
    free_vars: FreeVars,
    supply: IdSupply | None = None,
) -> list[Term]:
    """Replace free variables, rebuilding only the nodes that mention one (sharing kept).

    With a ``supply``, every binder that is rebuilt binds fresh variables, so the copy
    never binds a variable that the original (which may stay in the DAG) binds too.
    """
    mapping = dict(mapping)
    keys = set(mapping)
    renamed: set[Var] = set()  # binders this call renamed
    new: dict[Term, Term] = {}

    def touched(node: Term) -> bool:
        fv = free_vars(node)
        return bool(fv) and not fv.isdisjoint(keys)

    roots = [t for t in terms if touched(t)]
    stack: list[tuple[Term, bool]] = [(t, False) for t in roots]
    while stack:
        node, expanded = stack.pop()
        if node in new:
            continue
        if isinstance(node, Var):
            new[node] = mapping.get(node, node)
            continue
        kids = children(node)
        if not expanded:
            if supply is not None:
                for var in bound_vars(node)[0]:
                    if var not in renamed:  # a binder shadows what the caller mapped it to
                        mapping[var] = fresh_var(supply, var.hint, var.shape, var.dtype)
                        renamed.add(var)
                        keys.add(var)
            stack.append((node, True))
            stack.extend((kid, False) for kid in kids if kid not in new and touched(kid))
            continue
        rebuilt = _rebuild_binding(node, tuple(new.get(kid, kid) for kid in kids), mapping)
        if isinstance(rebuilt, Index) and isinstance(rebuilt.array, Index):  # x'[j][ix]
            rebuilt = Index(rebuilt.array.array, (*rebuilt.array.index, *rebuilt.index))
        new[node] = rebuilt
    return [new.get(t, t) for t in terms]


def distinct_binders(roots: Sequence[Term]) -> list[Term]:
    """Alpha-rename so that every variable is bound by one binder node only.

    A binder reachable both inside and outside a ``build1`` is kept where it is and
    rewritten by the bot inside, so two different nodes can bind the same variable; that
    is harmless for evaluation (scopes are nested terms) but code generation names
    variables, so each such copy gets fresh variables here (sharing kept)."""
    order = postorder(roots)
    owner: dict[Var, Term] = {}
    clashing: set[Term] = set()
    top = 0
    for node in order:
        if isinstance(node, Var):
            top = max(top, node.id)
        for var in bound_vars(node)[0]:
            top = max(top, var.id)
            if owner.setdefault(var, node) is not node:
                clashing.add(node)
    if not clashing:
        return list(roots)
    supply = IdSupply(top + 1)
    fv = FreeVars()

    def rename(node: Term, kids: tuple[Term, ...]) -> Term:
        if node not in clashing:
            return rebuild(node, kids)
        variables, scoped = bound_vars(node)
        mapping: dict[Var, Term] = {
            v: fresh_var(supply, v.hint, v.shape, v.dtype) for v in variables
        }
        inner = substitute_free([kids[k] for k in scoped], mapping, fv, supply)
        new_kids = list(kids)
        for k, term in zip(scoped, inner, strict=True):
            new_kids[k] = term
        return _rebuild_binding(node, tuple(new_kids), mapping)

    return transform(roots, rename)


def _rebuild_binding(node: Term, kids: tuple[Term, ...], mapping: dict[Var, Term]) -> Term:
    """``node`` with new children and, for a binder, its variables renamed by ``mapping``."""

    def renamed(var: Var) -> Var:
        target = mapping.get(var, var)
        return target if isinstance(target, Var) else var

    match node:
        case Let(var=var):
            return Let(renamed(var), kids[0], kids[1])
        case Build1(size=size, var=var):
            return Build1(size, renamed(var), kids[0])
        case Gather(outer_shape=sh, vars=vs):
            return Gather(sh, kids[0], tuple(renamed(v) for v in vs), tuple(kids[1:]))
        case Scatter(outer_shape=sh, vars=vs):
            return Scatter(sh, kids[0], tuple(renamed(v) for v in vs), tuple(kids[1:]))
        case MapAccum():
            loop: Term = _STRUCTURE[MapAccum].rebuild(
                node,
                kids,
                carry_vars=tuple(renamed(v) for v in node.carry_vars),
                x_vars=tuple(renamed(v) for v in node.x_vars),
                const_vars=tuple(renamed(v) for v in node.const_vars),
            )
            return loop
        case _:
            return rebuild(node, kids)


def constant(value: object, dtype: DType | None = None) -> Const:
    """A :class:`Const` from a Python or NumPy value, optionally of a given element type."""
    array = np.asarray(value)
    if dtype is not None:
        array = array.astype(dtype.numpy())
    return Const(array)


def zeros(shape: Shape, dtype: DType) -> Term:
    """An array of zeros: ``replicate`` of a scalar constant (no large constant stored)."""
    term: Term = Const(np.zeros((), dtype=dtype.numpy()))
    for extent in reversed(shape):
        term = Replicate(extent, term)
    return term


def int_const(value: int) -> Const:
    """A rank-0 int constant (for index arithmetic)."""
    return Const(np.asarray(value, dtype=np.int64))


def static_int_value(term: Term) -> int | None:
    """The value of a rank-0 int constant, or None for any other term."""
    if isinstance(term, Const) and term.shape == () and term.dtype is DType.INT64:
        return int(term.value)
    return None


def is_scalar_const(term: Term) -> bool:
    return isinstance(term, Const) and term.shape == ()

"""One language, many interpretations: the core language as an algebra (paper App. C).

An :class:`Algebra` gives a meaning to every construct of the core language on some
carrier ``A``: NumPy arrays (evaluation, :class:`dualarr.interp.evaluate.NumpyAlgebra`), dual
arrays over any primal algebra (:mod:`dualarr.ad.dual`, the AD of §6) and, in later stages,
terms (staging) and SymPy expressions.  :class:`dualarr.interp.evaluate.Interpreter` maps a term
into any algebra; the derivative rules and the reverse pass are written once against
this interface and run on concrete arrays and on terms alike.

Index functions (of ``gather``/``scatter``) are interpreted into an :class:`IndexFn` of the
algebra's carrier: for NumPy, the index components evaluated in bulk on the index grid;
for terms, the components over the lambda's variables.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeAlias, TypeVar

import numpy as np

from ..lang.rules import RuleTable
from ..lang.terms import DType, MapAccum, Shape, Structural, Var

A = TypeVar("A")
A_co = TypeVar("A_co", covariant=True)

BodyRunner: TypeAlias = Callable[["Algebra[Any]", Sequence[Any]], list[Any]]
"""A loop's body as the interpreter runs it: ``run(algebra, values)`` evaluates the
body's results in ``algebra`` with its binders (carries, slices, loop invariants) bound
to ``values`` (:class:`dualarr.lang.terms.MapAccum`)."""


class Shaped(Protocol):
    """An array or a term: anything with a static shape."""

    @property
    def shape(self) -> tuple[int, ...]: ...


PrimalValue: TypeAlias = Shaped | float | int
"""A value of a primal algebra, as a Delta holds it (a factor, an index, a component
of an index function): a NumPy or array-API array on the concrete path, a term on the
symbolic path of §7, a Python number for scalar dual numbers (§2)."""


@dataclass(frozen=True, eq=False)
class IndexFn(Generic[A_co]):
    """An index function ``λvariables. components`` of ``gather``/``scatter`` as an algebra
    interprets it: one component per indexed dimension, in the carrier ``A``.  Concrete
    algebras tabulate it on the index grid (no variables: each component is an array of
    the grid's shape); the term algebra keeps it symbolic over ``variables`` (§7)."""

    components: tuple[A_co, ...]
    variables: tuple[Var, ...] = ()

    @property
    def width(self) -> int:
        """How many dimensions of the indexed array it selects."""
        return len(self.components)


class Algebra(ABC, Generic[A]):
    """The operations of the core language (Fig. 7) on a carrier ``A``.

    Static information (shapes, element types) is passed explicitly, so the same
    methods serve terms being interpreted and values built by derivative rules.  Every
    construct is an abstract method: a carrier that lacks one is reported by mypy and
    cannot be instantiated.
    """

    @property
    def symbolic_index_functions(self) -> bool:
        """Index functions stay symbolic (never tabulated point by point)."""
        return False

    # -- leaves ----------------------------------------------------------------------

    @abstractmethod
    def const(self, value: np.ndarray) -> A:
        raise NotImplementedError

    @abstractmethod
    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> A:
        raise NotImplementedError

    @abstractmethod
    def iota(self, n: int) -> A:
        raise NotImplementedError

    # -- elementwise -----------------------------------------------------------------

    @abstractmethod
    def op(self, name: str, args: Sequence[A], dtype: DType) -> A:
        raise NotImplementedError

    @abstractmethod
    def cond(self, c: A, a: A, b: A) -> A:
        raise NotImplementedError

    @abstractmethod
    def from_integral(self, a: A, dtype: DType) -> A:
        raise NotImplementedError

    @abstractmethod
    def floor(self, a: A) -> A:
        raise NotImplementedError

    # -- structure -------------------------------------------------------------------

    @abstractmethod
    def index(self, a: A, ix: Sequence[A]) -> A:
        raise NotImplementedError

    @abstractmethod
    def gather(self, outer: Shape, a: A, fn: IndexFn[A]) -> A:
        raise NotImplementedError

    @abstractmethod
    def scatter(self, outer: Shape, a: A, fn: IndexFn[A], n_vars: int) -> A:
        raise NotImplementedError

    @abstractmethod
    def sum_outer(self, a: A) -> A:
        raise NotImplementedError

    @abstractmethod
    def replicate(self, count: int, a: A) -> A:
        raise NotImplementedError

    @abstractmethod
    def transpose(self, perm: Sequence[int], a: A) -> A:
        raise NotImplementedError

    @abstractmethod
    def reshape(self, shape: Shape, a: A) -> A:
        raise NotImplementedError

    @abstractmethod
    def from_list(self, elems: Sequence[A]) -> A:
        raise NotImplementedError

    @abstractmethod
    def argmin(self, a: A) -> A:
        raise NotImplementedError

    @abstractmethod
    def argmax(self, a: A) -> A:
        raise NotImplementedError

    @abstractmethod
    def argsort(self, a: A) -> A:
        """The stable ascending sort permutation along the outermost dimension."""
        raise NotImplementedError

    @abstractmethod
    def contract(self, spec: str, a: A, b: A) -> A:
        """A tensor contraction in einsum notation (see :class:`dualarr.lang.terms.Contract`)."""
        raise NotImplementedError

    @abstractmethod
    def structural(
        self, construct: type[Structural], args: Sequence[A], params: Mapping[str, Any]
    ) -> A:
        """A :class:`~dualarr.lang.terms.Structural` construct (one of its own module)
        applied to ``args`` (its children, in order) with ``params``: array carriers
        read its meaning in :data:`ARRAY_MEANINGS`, terms build the node, dual arrays
        read its derivative rule."""
        raise NotImplementedError

    def map_accum(self, loop: MapAccum, inputs: Sequence[A], body: BodyRunner) -> list[A]:
        """A loop (:class:`~dualarr.lang.terms.MapAccum`) on its ``inputs`` (initial
        carries, whole xs, loop invariants): every result, the final carries then the
        stacked ys.  Here step by step, each step running ``body`` in this algebra; the
        term algebra builds the node instead, dual arrays apply its derivative rule."""
        carries_n, xs_n = len(loop.carry_vars), len(loop.x_vars)
        carries = list(inputs[:carries_n])
        xs, consts = inputs[carries_n : carries_n + xs_n], inputs[carries_n + xs_n :]
        rows: list[list[A]] = [[] for _ in loop.ys]
        for t in loop_steps(loop):
            point = self.index_point(t)
            slices = [self.index(x, [point]) for x in xs]
            outs = body(self, [*carries, *slices, *consts])
            carries = outs[:carries_n]
            for row, y in zip(rows, outs[carries_n:], strict=True):
                row.append(y)
        stacked = [
            self.build1(row[::-1] if loop.reverse else row, shape, dtype)
            for row, shape, dtype in zip(
                rows, loop.shapes[carries_n:], loop.dtypes[carries_n:], strict=True
            )
        ]
        return [*carries, *stacked]

    def share(self, a: A) -> A:
        """Mark a value used more than once (§7.2): the identity on concrete arrays; the
        symbolic algebra wraps the term in an explicit ``share``."""
        return a

    @abstractmethod
    def build1(self, rows: Sequence[A], shape: Shape, dtype: DType) -> A:
        """Stack the rows of an element-by-element ``build1`` (``shape`` of the result)."""
        raise NotImplementedError

    # -- index functions --------------------------------------------------------------

    @abstractmethod
    def index_point(self, value: int) -> A:
        """A lambda variable bound to one index value."""
        raise NotImplementedError

    def index_grid(self, shape: Shape) -> list[A] | None:
        """The lambda variables bound to whole grids (bulk evaluation), if supported."""
        return None

    @abstractmethod
    def index_fn_from_bulk(self, components: Sequence[A], grid: Shape) -> IndexFn[A]:
        raise NotImplementedError

    @abstractmethod
    def index_fn_from_points(self, columns: Sequence[Sequence[A]], grid: Shape) -> IndexFn[A]:
        raise NotImplementedError

    @abstractmethod
    def index_fn_constant(self, ix: Sequence[A]) -> IndexFn[A]:
        """The index function of no variables returning ``ix`` (used by one-hot)."""
        raise NotImplementedError

    # -- static facts of values ----------------------------------------------------------

    @abstractmethod
    def shape(self, a: A) -> Shape:
        raise NotImplementedError

    # -- derived, for derivative rules and the reverse pass ------------------------------

    def add(self, a: A, b: A, dtype: DType) -> A:
        return self.op("add", (a, b), dtype)

    def mul(self, a: A, b: A, dtype: DType) -> A:
        return self.op("mul", (a, b), dtype)

    def zeros(self, shape: Shape, dtype: DType) -> A:
        return self.full(shape, 0, dtype)

    def element(self, a: A, position: int) -> A:
        """``a[position]`` along the first dimension, at a static position."""
        return self.index(a, [self.full((), position, DType.INT64)])

    def one_hot(self, shape: Shape, ix: Sequence[A], c: A) -> A:
        """An array of ``shape`` holding ``c`` at ``ix`` (zeros elsewhere, or everywhere
        when ``ix`` is out of range): the transpose of indexing."""
        return self.scatter(shape[: len(ix)], c, self.index_fn_constant(ix), 0)


def loop_steps(loop: MapAccum) -> range:
    """The rows a loop visits, in order: ``0 … length-1``, or backwards when ``reverse``."""
    return range(loop.length - 1, -1, -1) if loop.reverse else range(loop.length)


ArrayMeaning: TypeAlias = Callable[..., Any]
"""The primal meaning of a :class:`~dualarr.lang.terms.Structural` construct on arrays:
``meaning(xp, *children, **params)`` with ``xp`` an array-API namespace (NumPy, CuPy,
``array_api_strict``; NumPy over object arrays for SymPy)."""

ARRAY_MEANINGS: RuleTable[ArrayMeaning] = RuleTable("array meaning")
"""What each :class:`~dualarr.lang.terms.Structural` construct computes on arrays: the
one primal meaning every array algebra, the SymPy algebra and generated code use."""


class MeaningsByName(Mapping[str, ArrayMeaning]):
    """:data:`ARRAY_MEANINGS` by the construct's class name, read when looked up: how
    generated code calls a construct's meaning (``helpers.meanings['Rev'](xp, x,
    axis=0)``), so its source stays valid on its own."""

    def __getitem__(self, name: str) -> ArrayMeaning:
        for construct in ARRAY_MEANINGS:
            if construct.__name__ == name:
                return ARRAY_MEANINGS[construct]
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (construct.__name__ for construct in ARRAY_MEANINGS)

    def __len__(self) -> int:
        return len(ARRAY_MEANINGS)

"""Delta terms: the dual component of dual arrays (paper §2.3, §6, Fig. 16).

A Delta is a linear function of the program's inputs, recorded as a DAG.  ``Share``
gives a node an identity so that the reverse pass visits it once (§2.5); ids come from an
explicit :class:`dualarr.lang.terms.IdSupply` and increase as the forward pass builds them, so
every id inside a ``Share id d`` is smaller than ``id`` (Invariant 1) and one id names
one node (Invariant 2).  Factors and indices hold values of the *primal algebra* (NumPy
arrays on the concrete path, terms on the symbolic path of §7).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, get_args

import array_api_compat
import numpy as np

from ..interp.algebra import IndexFn, PrimalValue, Shaped
from ..lang import terms
from ..lang.errors import DualarrError
from ..lang.structure import Structure, structure_of
from ..lang.terms import (
    DType,
    Shape,
    TermBase,
    assert_never,
    converted_dtype,
    gathered_shape,
    indexed_shape,
    replicated_shape,
    reshaped_shape,
    scattered_shape,
    stacked_shape,
    static_int_value,
    summed_shape,
    transposed_shape,
    view,
)
from ..lang.terms import contraction_shape as contraction_shape


class DeltaBase:
    """Printing shared by every Delta node (iterative, each Share once)."""

    __slots__ = ()

    def __str__(self) -> str:
        return str(view("print_delta")(self))

    def graph(self) -> Any:
        """The Delta DAG as a graphviz drawing (:mod:`dualarr.show.drawing`)."""
        return view("delta_graph")(self)

    def __repr__(self) -> str:
        return f"<Delta {str(self)[:200]}>"


def _set(node: object, **values: object) -> None:
    for name, value in values.items():
        object.__setattr__(node, name, value)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Zero(DeltaBase):
    """The zero linear map (of a given shape)."""

    shape: Shape
    dtype: DType


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Input(DeltaBase):
    """``Input n``: the tangent of the ``n``-th differentiated input."""

    index: int
    shape: Shape
    dtype: DType


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Add(DeltaBase):
    """``d1 + d2``."""

    left: Delta
    right: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.left.shape, dtype=self.left.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Scale(DeltaBase):
    """``factor ⊙ d``: elementwise multiplication by a primal value of ``d``'s shape."""

    factor: PrimalValue
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape, dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Share(DeltaBase):
    """``Share id d``: the node ``d``, shared; evaluated once in the reverse pass."""

    id: int
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape, dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Index(DeltaBase):
    """``d[ix]`` with primal index values."""

    delta: Delta
    index: tuple[PrimalValue, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=indexed_shape(len(self.index), self.delta.shape), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Gather(DeltaBase):
    """``gather outer d f`` with ``f`` an evaluated index function of the primal algebra;
    ``shape``, given by its builder, is the one :func:`~dualarr.lang.terms.gathered_shape`
    gives."""

    outer: Shape
    delta: Delta
    fn: IndexFn[PrimalValue]
    shape: Shape
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        assert self.shape == gathered_shape(self.outer, self.fn.width, self.delta.shape)
        _set(self, dtype=self.delta.dtype)

    @property
    def width(self) -> int:
        """Number of index components (dimensions of ``delta`` the index selects)."""
        return len(self.delta.shape) - (len(self.shape) - len(self.outer))


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Scatter(DeltaBase):
    """``scatter outer d f``: sums ``d`` over its first ``n_vars`` dimensions into ``outer``."""

    outer: Shape
    delta: Delta
    fn: IndexFn[PrimalValue]
    n_vars: int
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        shape = scattered_shape(self.outer, self.n_vars, self.delta.shape)
        _set(self, shape=shape, dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class SumOuter(DeltaBase):
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=summed_shape(self.delta.shape), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Replicate(DeltaBase):
    count: int
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=replicated_shape(self.count, self.delta.shape), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Transpose(DeltaBase):
    perm: tuple[int, ...]
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=transposed_shape(self.perm, self.delta.shape), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Reshape(DeltaBase):
    new_shape: Shape
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=reshaped_shape(self.new_shape, self.delta.shape), dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Convert(DeltaBase):
    """``convert t d``: ``d`` in the float type ``t`` (the derivative of a float32 <->
    float64 conversion); its transpose converts back."""

    to: DType
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=self.delta.shape, dtype=converted_dtype(self.delta.dtype, self.to))


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Contract(DeltaBase):
    """``contract spec d factor``: a contraction (:class:`dualarr.lang.terms.Contract`) linear
    in its first operand, the Delta of either operand of a primal contraction."""

    spec: str
    delta: Delta
    factor: Shaped
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        shape = contraction_shape(self.spec, self.delta.shape, tuple(self.factor.shape))
        _set(self, shape=shape, dtype=self.delta.dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class FromList(DeltaBase):
    deltas: tuple[Delta, ...]
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        _set(self, shape=stacked_shape(self.deltas), dtype=self.deltas[0].dtype)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Structural(DeltaBase):
    """``construct params d``: a structural construct of its own module
    (:class:`dualarr.lang.terms.Structural`, linear in its one child) applied to a Delta:
    the Delta that construct begets.  Its shape and type are the construct's own
    :meth:`~dualarr.lang.terms.Structural.result_type`, the rule its term uses."""

    construct: type[terms.Structural]
    params: tuple[tuple[str, Any], ...]
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        shape, dtype = self.construct.result_type(
            dict(self.params), [self.delta.shape], [self.delta.dtype]
        )
        _set(self, shape=shape, dtype=dtype)

    @property
    def arguments(self) -> dict[str, Any]:
        """The construct's parameters, by name."""
        return dict(self.params)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class MapAccum(DeltaBase):
    """The derivative of a loop (horde-ad's ``DeltaMapAccumL/R``; the paper has no
    loops): a linear map from the tangents of the loop's inputs (initial carries, xs,
    loop invariants: its children, in that order) to the tangents of its results.

    It holds what the forward pass saved: the primal ``loop``, the stacked carries
    each step received (``residuals``, one stack per carry), the primal ``xs`` and the
    loop invariants (``consts``).  Its transpose is a loop in the opposite direction
    running the body's reverse derivative, which :mod:`dualarr.ad.loops` derives from
    the body by the pipeline itself.  Like a ``Share`` it has an ``id`` (from the
    same supply, so Invariant 1 holds): the reverse pass collects the cotangents of
    all its results (:class:`LoopOutput`) and transposes the loop once."""

    id: int
    loop: terms.MapAccum
    residuals: tuple[PrimalValue, ...]
    xs: tuple[PrimalValue, ...]
    consts: tuple[PrimalValue, ...]
    init_deltas: tuple[Delta, ...]
    xs_deltas: tuple[Delta, ...]
    const_deltas: tuple[Delta, ...]

    @property
    def shapes(self) -> tuple[Shape, ...]:
        return self.loop.shapes

    @property
    def dtypes(self) -> tuple[DType, ...]:
        return self.loop.dtypes

    @property
    def shape(self) -> Shape:
        raise DualarrError(
            "a loop's Delta has several results; read one with LoopOutput", op="Delta"
        )

    @property
    def dtype(self) -> DType:
        raise DualarrError(
            "a loop's Delta has several results; read one with LoopOutput", op="Delta"
        )


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class LoopOutput(DeltaBase):
    """``d.k``: the tangent of result ``k`` of a loop (its :class:`MapAccum` Delta)."""

    index: int
    delta: Delta
    shape: Shape = field(init=False)
    dtype: DType = field(init=False)

    def __post_init__(self) -> None:
        loop = self.delta
        if not isinstance(loop, MapAccum):
            raise DualarrError("LoopOutput reads a result of a loop's Delta", op="Delta")
        _set(self, shape=loop.shapes[self.index], dtype=loop.dtypes[self.index])


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
    | Convert
    | FromList
    | Contract
    | Structural
    | MapAccum
    | LoopOutput
)
"""A Delta term (paper Fig. 16, for the core language of Fig. 7, and the Delta of each
:class:`dualarr.lang.terms.Structural` construct)."""

UnaryDelta: TypeAlias = (
    Scale
    | Index
    | Gather
    | Scatter
    | SumOuter
    | Replicate
    | Transpose
    | Reshape
    | Convert
    | Contract
    | Structural
)
"""A node that applies one linear operation to one operand Delta (its ``delta``)."""


_STRUCTURE: dict[type, Structure] = {
    cls: structure_of(cls, "Delta", "tuple[Delta, ...]") for cls in get_args(Delta)
}
"""Each constructor's structure, read off its field types, as for terms: a new Delta
constructor needs no entry in ``delta_children``, ``with_delta_children`` or
``pruned``."""


def delta_children(d: Delta) -> tuple[Delta, ...]:
    """The operand Deltas of a node (its ``Delta`` fields, a tuple of them spliced in)."""
    kids: tuple[Delta, ...] = _STRUCTURE[type(d)].read(d)
    return kids


def with_delta_children(d: Delta, kids: Sequence[Delta], **statics: Any) -> Delta:
    """``d`` rebuilt with new operand Deltas (in :func:`delta_children`'s order) and,
    where given, new values of its other fields."""
    rebuilt: Delta = _STRUCTURE[type(d)].rebuild(d, kids, **statics)
    return rebuilt


def pruned(d: Delta) -> Delta:
    """The smart constructor of every Delta node: a node whose operands are all ``Zero``
    is ``Zero`` itself (each node of Fig. 16 is a linear map, so it maps 0 to 0), and
    ``Add`` with one ``Zero`` operand is the other one.  Applied as the forward pass
    builds each node (children first), it keeps a constant's derivative symbolically
    zero through ``Replicate``, ``Gather``, ``Transpose`` … so a derivative factor such
    as pow's ``y·log x`` is never computed, nor multiplied by a zero tangent (§6)."""
    match d:
        case Zero() | Input() | Share() | MapAccum():
            return d  # a loop's Delta is built only when some input tangent is not Zero
        case Add(left=Zero(), right=b):
            return b
        case Add(left=a, right=Zero()):
            return a
        case Index(delta=inner, index=index) if _statically_out_of_range(index, inner.shape):
            return Zero(d.shape, d.dtype)  # reads 0 (§5.2), whatever the Delta indexed
    if all(isinstance(kid, Zero) for kid in delta_children(d)):
        return Zero(d.shape, d.dtype)
    return d


def _statically_out_of_range(index: tuple[Any, ...], shape: Shape) -> bool:
    """Whether some component of a primal index is a known constant outside ``shape``
    (the concrete path's index values are numbers, the symbolic path's are terms; a
    lazy array's, Dask's, are not read: that would compute them)."""
    for component, extent in zip(index, shape, strict=False):
        value: int | None = None
        if isinstance(component, TermBase):
            value = static_int_value(component)  # type: ignore[arg-type]
        elif isinstance(component, int | np.integer) or (
            getattr(component, "shape", None) == ()
            and not array_api_compat.is_lazy_array(component)
        ):
            value = int(component)  # a number, or a rank-0 array of an eager backend
        if value is not None and not 0 <= value < extent:
            return True
    return False


def delta_postorder(roots: Iterable[Delta]) -> list[Delta]:
    """Every node of a Delta DAG once, children first (iterative)."""
    order: list[Delta] = []
    seen: set[Delta] = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        stack: list[tuple[Delta, int]] = [(root, 0)]
        while stack:
            node, at = stack[-1]
            kids = delta_children(node)
            if at < len(kids):
                stack[-1] = (node, at + 1)
                kid = kids[at]
                if kid not in seen:
                    seen.add(kid)
                    stack.append((kid, 0))
            else:
                stack.pop()
                order.append(node)
    return order


_PRIMAL_KINDS = {
    "PrimalValue": "one", "Shaped": "one", "tuple[PrimalValue, ...]": "many",
    "IndexFn[PrimalValue]": "function",
}  # fmt: skip
"""How a field of a Delta constructor holds primal values, by its declared type: one (a
factor), a tuple (index values), or an index function (its components)."""

_PRIMAL_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    cls: tuple((f.name, _PRIMAL_KINDS[str(f.type)]) for f in dataclasses.fields(cls)
               if f.init and str(f.type) in _PRIMAL_KINDS)
    for cls in get_args(Delta)
}
"""Each constructor's primal fields (name, kind), read off its field types."""


def primal_values(d: Delta) -> tuple[Any, ...]:
    """The primal values a node mentions: factors, index values, index-function results
    (for symbolic Deltas these are terms; the variables of a lambda are not included)."""
    found: list[Any] = []
    for name, kind in _PRIMAL_FIELDS[type(d)]:
        value = getattr(d, name)
        if kind == "one":
            found.append(value)
        elif kind == "many":
            found.extend(value)
        else:
            found.extend(value.components)
    return tuple(found)


def map_primal_values(roots: list[Delta], f: Callable[[Any], Any]) -> list[Delta]:
    """Rebuild a Delta DAG with ``f`` applied to every primal value it mentions (see
    :func:`primal_values`); sharing and Share ids are kept."""
    new: dict[Delta, Delta] = {}
    for d in delta_postorder(roots):
        kids = [new[k] for k in delta_children(d)]
        primals: dict[str, Any] = {}
        for name, kind in _PRIMAL_FIELDS[type(d)]:
            value = getattr(d, name)
            if kind == "one":
                primals[name] = f(value)
            elif kind == "many":
                primals[name] = tuple(f(v) for v in value)
            else:
                primals[name] = _mapped(value, f)
        new[d] = with_delta_children(d, kids, **primals) if kids or primals else d
    return [new[r] for r in roots]


def _mapped(fn: IndexFn[Any], f: Callable[[Any], Any]) -> IndexFn[Any]:
    return IndexFn(tuple(f(c) for c in fn.components), fn.variables)


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
    by_id: dict[int, Share | MapAccum] = {}
    for node in delta_postorder(roots):
        if not isinstance(node, Share | MapAccum):
            continue
        other = by_id.get(node.id)
        if other is not None and other is not node:
            raise DualarrError(f"Invariant 2: Share id {node.id} names two nodes", op="Delta")
        by_id[node.id] = node
        stack = list(delta_children(node))
        seen: set[Delta] = set()
        while stack:
            below = stack.pop()
            if below in seen:
                continue
            seen.add(below)
            if isinstance(below, Share | MapAccum):
                if below.id >= node.id:
                    raise DualarrError(
                        f"Invariant 1: Share {below.id} below Share {node.id}", op="Delta"
                    )
                continue  # its own subtree was checked when it was visited
            stack.extend(delta_children(below))


def _describe_value(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is None:
        return repr(value)
    if len(shape) == 0:
        kind = str(getattr(value, "dtype", ""))
        try:
            number = int(value) if kind.startswith(("int", "uint")) else float(value)
        except (TypeError, ValueError):
            return str(value)
        return repr(number)
    dtype = getattr(value, "dtype", "")
    text = str(value)
    if len(text) <= 40 and "\n" not in text:
        return text
    return f"<{dtype}{list(shape)}>".replace(" ", "")


def format_delta(
    root: Delta,
    describe: Callable[[Any], str] = _describe_value,
    describe_fn: Callable[[IndexFn[Any]], str] = lambda fn: "(λ…)",
    binding: Callable[[int, str], str] = lambda i, rhs: f"s{i} = {rhs}",
) -> str:
    """The Delta DAG in the paper's notation, one line per Share node (id order):
    ``s3 = SumOuter s2`` (or as ``binding`` writes it, e.g. ``let s3 = … in``); other
    nodes are written inline.  A loop's Delta is bound like a Share,
    ``s7 = MapAccumL 5 [init deltas] [xs deltas] [const deltas] residuals […] xs […]
    consts […]`` (its saved primal values by ``describe``), and read as ``s7.0``."""
    order = delta_postorder([root])
    text: dict[Delta, str] = {}
    lines: list[str] = []

    def ref(d: Delta) -> str:
        if isinstance(d, Share | MapAccum):
            return f"s{d.id}"
        inner = text[d]
        return inner if isinstance(d, Zero | Input | LoopOutput) else f"({inner})"

    for d in order:
        match d:
            case Zero(shape=shape):
                text[d] = f"Zero{list(shape)}".replace(" ", "")
            case Input(index=n):
                text[d] = f"Input {n}"
            case Add(left=a, right=b):
                text[d] = f"Add {ref(a)} {ref(b)}"
            case Scale(factor=f, delta=x):
                text[d] = f"Scale {describe(f)} {ref(x)}"
            case Share(id=i, delta=x):
                lines.append(binding(i, text[x]))
                text[d] = f"s{i}"
            case Index(delta=x, index=ix):
                text[d] = f"Index {ref(x)} [{', '.join(describe(i) for i in ix)}]"
            case Gather(outer=outer, delta=x, fn=fn):
                dims = str(list(outer)).replace(" ", "")
                text[d] = f"Gather {dims} {ref(x)} {describe_fn(fn)}"
            case Scatter(outer=outer, delta=x, fn=fn):
                dims = str(list(outer)).replace(" ", "")
                text[d] = f"Scatter {dims} {ref(x)} {describe_fn(fn)}"
            case SumOuter(delta=x):
                text[d] = f"SumOuter {ref(x)}"
            case Replicate(count=k, delta=x):
                text[d] = f"Replicate {k} {ref(x)}"
            case Transpose(perm=p, delta=x):
                text[d] = f"Tr {list(p)} {ref(x)}".replace(", ", ",")
            case Reshape(new_shape=sh, delta=x):
                text[d] = f"Reshape {list(sh)} {ref(x)}".replace(", ", ",")
            case Convert(to=to, delta=x):
                text[d] = f"Convert {to} {ref(x)}"
            case Contract(spec=spec, delta=x, factor=f):
                text[d] = f"Contract {spec!r} {ref(x)} {describe(f)}"
            case FromList(deltas=xs):
                text[d] = "FromList [" + ", ".join(ref(x) for x in xs) + "]"
            case Structural(construct=construct, delta=x):
                text[d] = f"{construct.heading(d.arguments).capitalize()} {ref(x)}"
            case MapAccum(id=i, loop=loop):
                # a loop's Delta is bound like a Share (horde-ad's DeltaMapAccum): its
                # tangent inputs, then the primal values its transpose reads
                deltas = (d.init_deltas, d.xs_deltas, d.const_deltas)
                saved = zip(
                    ("residuals", "xs", "consts"), (d.residuals, d.xs, d.consts), strict=True
                )
                head = f"MapAccum{'R' if loop.reverse else 'L'} {loop.length}"
                rhs = " ".join(
                    [
                        head,
                        *("[" + ", ".join(ref(x) for x in group) + "]" for group in deltas),
                        *(f"{name} [{', '.join(describe(v) for v in vs)}]" for name, vs in saved),
                    ]
                )
                lines.append(binding(i, rhs))
                text[d] = f"s{i}"
            case LoopOutput(index=k, delta=x):
                text[d] = f"{ref(x)}.{k}"
            case _:
                assert_never(d)
    shared = isinstance(root, Share | MapAccum)
    lines.append(ref(root) if shared else text[root])
    return "\n".join(lines)

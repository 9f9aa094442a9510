"""The core language on any array namespace of the Python array API (backend-generic).

Everything here is written against the standard (``xp.take``, ``xp.where``,
``xp.permute_dims``…) through array-api-compat, so the same code runs on NumPy, CuPy and
``array_api_strict`` (which is how the GPU path is proven on a machine without one).
:class:`ArrayAlgebra` is the one reference semantics (NumPy's
:class:`dualarr.interp.evaluate.NumpyAlgebra` is it on the NumPy backend), and
:func:`index_array`, :func:`gather`, :func:`scatter` the one total indexing of §5.2,
which the generated code calls too (:func:`index_helpers`).
What the standard lacks, scatter-add, is one function of the :class:`Backend`: NumPy's
``bincount``/``add.at`` (:mod:`dualarr.interp.backends`), ``cupyx.scatter_add`` for CuPy, and
:func:`scatter_add_by_selection` as the generic fallback; a namespace's faster ways to the
same values (NumPy's range check on the host, unchecked ``take``) are fields of its
backend as well.  This module never calls NumPy itself (a test checks that); index
values and shapes are Python ints or arrays of the namespace.  Totality (§5.2):
out-of-range reads give 0, out-of-range writes are dropped, ``a // 0 == a`` and
``a % 0 == a``.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ..lang.primitives import REGISTRY, NamespaceCall, UserImplementation
from ..lang.terms import DType, MapAccum, Shape, Structural, parse_contraction
from .algebra import (
    ARRAY_MEANINGS,
    Algebra,
    BodyRunner,
    IndexFn,
    MeaningsByName,
    loop_steps,
)

Array = Any
ScatterAdd = Callable[[Any, Array, Array, int], Array]  # (xp, targets, values, size)
InRange = Callable[[Sequence[Array], Shape], "bool | None"]  # (components, extents)
Take = Callable[[Any, Array, Sequence[Array]], Array]  # (xp, array, components in range)


def range_unknown(components: Sequence[Array], extents: Shape) -> None:
    """The generic range check: none (no value is read back to the host), so every
    read and write of an index function goes through the mask of §5.2."""
    return None


def row_major_offset(comps: Sequence[Array], extents: Shape) -> Array:
    """The row-major offset of each multi-index (components in range)."""
    offset = comps[0]
    for comp, extent in zip(comps[1:], extents[1:], strict=True):
        offset = offset * extent + comp
    return offset


def take_by_offset(xp: Any, array: Array, comps: Sequence[Array]) -> Array:
    """``array[comps]`` for components in range of one batch shape ``B``: one ``take`` of
    their row-major offsets along the indexed dimensions flattened into one (the
    result is ``B ++ array.shape[len(comps):]``)."""
    indexed, tail = tuple(array.shape[: len(comps)]), tuple(array.shape[len(comps) :])
    flat = xp.reshape(array, (math.prod(indexed), *tail))
    offsets = xp.reshape(row_major_offset(comps, indexed), (-1,))
    return xp.reshape(xp.take(flat, offsets, axis=0), tuple(comps[0].shape) + tail)


@dataclass(frozen=True)
class Backend:
    """An array namespace, the one primitive the standard does not have, and where a
    namespace has faster ways to the same values, those (NumPy's: a host-side range
    check, unchecked ``take``, Python branches on host scalars)."""

    name: str  # "numpy", "cupy", "array_api_strict", …
    xp: Any  # the (array-api-compat) namespace
    scatter_add: ScatterAdd  # rows of ``values`` added at ``targets`` into ``size`` rows
    # (``values`` of shape (rows, width) gives (size, width); of shape (rows,), (size,))
    in_range: InRange = range_unknown  # every component within its extent, if known
    take: Take = take_by_offset  # ``array[components]``, components in range
    host_branches: bool = False  # a 0-d condition is read on the host for free

    def dtype(self, dtype: DType) -> Any:
        return getattr(self.xp, dtype.value)

    def __repr__(self) -> str:
        return f"<Backend {self.name}>"


def scatter_add_by_selection(xp: Any, targets: Array, values: Array, size: int) -> Array:
    """The generic scatter-add: for each target slot, the sum of the rows sent there,
    selected with ``where`` (never multiplied by 0, so a NaN or inf stays in its slot),
    in chunks of rows.  O(rows × size) work: a fallback for namespaces without a scatter
    primitive (``array_api_strict`` in the tests), not a fast path."""
    if values.ndim == 1:
        summed = scatter_add_by_selection(xp, targets, xp.reshape(values, (-1, 1)), size)
        return xp.reshape(summed, (size,))
    width = values.shape[1]
    out = xp.zeros((size, width), dtype=values.dtype)
    rows = targets.shape[0]
    step = max(1, (1 << 22) // max(size * width, 1))
    slots = xp.reshape(xp.arange(size, dtype=targets.dtype), (1, size, 1))
    zero = xp.zeros((), dtype=values.dtype)
    for start in range(0, rows, step):
        stop = min(start + step, rows)
        chosen = xp.reshape(targets[start:stop], (-1, 1, 1)) == slots
        picked = xp.where(chosen, xp.reshape(values[start:stop, ...], (-1, 1, width)), zero)
        out = out + xp.sum(picked, axis=0)
    return out


# --------------------------------------------------------------------------------------
# Elementwise primitives
# --------------------------------------------------------------------------------------

class ElementwiseOn(dict[str, Callable[..., Array]]):
    """The primitives' implementations (:data:`dualarr.lang.primitives.REGISTRY`) with ``xp``
    bound, each a function of its arguments alone, looked up on first use (so
    primitives registered later are found): the namespace's own function (``np.exp``,
    no wrapper to call through) where the primitive is one.  A user's primitive
    (``da.primitive``) may be defined again: it is looked up on every use, never kept."""

    def __init__(self, xp: Any) -> None:
        super().__init__()
        self.xp = xp

    def __missing__(self, name: str) -> Callable[..., Array]:
        impl = REGISTRY[name].impl
        bound: Callable[..., Array] = (
            getattr(self.xp, impl.name)
            if isinstance(impl, NamespaceCall)
            else functools.partial(impl, self.xp)
        )
        if not isinstance(impl, UserImplementation):
            self[name] = bound
        return bound


@functools.cache
def elementwise_on(xp: Any) -> ElementwiseOn:
    """Every primitive's implementation with ``xp`` bound (:class:`ElementwiseOn`), one
    table per namespace (the algebra and the generated code's helpers share it)."""
    return ElementwiseOn(xp)


def floor_to_int(xp: Any, a: Array) -> Array:
    """``floor`` to int64, NaN to 0 and out-of-range values clipped (total)."""
    bound = 2.0**62
    # one expression, no array of zeros: no intermediate stays alive (NumPy then reuses
    # its buffers: 1.5x faster on large arrays than a named ``safe`` and ``zeros_like``)
    return xp.astype(xp.floor(xp.where(xp.isnan(a), 0.0, xp.clip(a, -bound, bound))), xp.int64)


def primal_helpers(xp: Any) -> dict[str, Any]:
    """The elementwise helpers of generated code over ``xp`` (``helpers.quot``,
    ``.rem``, ``.sigmoid``, ``.floor``, ``.wrap``): the functions above, taking
    array-likes."""
    on = elementwise_on(xp)
    return {
        "quot": lambda a, b: on["quot"](xp.asarray(a), xp.asarray(b)),
        "rem": lambda a, b: on["rem"](xp.asarray(a), xp.asarray(b)),
        "sigmoid": on["sigmoid"],
        "floor": lambda a: floor_to_int(xp, xp.asarray(a)),
        "wrap": lambda j, n: on["wrap"](xp.asarray(j), xp.asarray(n)),
        "elementwise": on,
    }


# --------------------------------------------------------------------------------------
# Index, gather, scatter with the totality semantics
# --------------------------------------------------------------------------------------


def _components(xp: Any, index: Sequence[Array]) -> list[Array]:
    comps = [xp.asarray(c, dtype=xp.int64) for c in index]
    if len({tuple(c.shape) for c in comps}) > 1:
        comps = list(xp.broadcast_arrays(*comps))
    return comps


def _one_int_component(xp: Any, index: Sequence[Array], shape: Shape | None) -> bool:
    """Whether ``index`` is one int64 array (of ``shape``, where given): what a gather,
    index or scatter known to be in range can hand to the backend as it is."""
    if len(index) != 1:
        return False
    comp = index[0]
    if getattr(comp, "dtype", None) != xp.int64 or getattr(comp, "ndim", 0) == 0:
        return False
    return shape is None or tuple(comp.shape) == shape


def _components_over(xp: Any, index: Sequence[Array], shape: Shape) -> list[Array]:
    """The components as int64 arrays of ``shape`` (broadcast where they are not)."""
    comps = [xp.asarray(c, dtype=xp.int64) for c in index]
    return [c if tuple(c.shape) == shape else xp.broadcast_to(c, shape) for c in comps]


def clip_to_range(xp: Any, comps: Sequence[Array], extents: Shape) -> tuple[Array, list[Array]]:
    """Whether each multi-index is in range, and its components with those out of range
    set to 0 (a position every access may read, masked afterwards)."""
    valid: Array = None
    clipped = []
    zero = xp.zeros((), dtype=xp.int64)
    for comp, extent in zip(comps, extents, strict=True):
        ok = (comp >= 0) & (comp < extent)
        valid = ok if valid is None else valid & ok
        clipped.append(xp.where(ok, comp, zero))
    return valid, clipped


def index_array(
    backend: Backend, array: Array, index: Sequence[Array], in_range: bool | None = None
) -> Array:
    """``array[index]`` with zeros where a component is out of range (§5.2).

    Components may be arrays of one batch shape ``B``: the result is
    ``B ++ array.shape[len(index):]`` (bulk indexing, for gathers).  ``in_range``: what
    the caller knows (a range check already made, or constant indices), None to ask
    the backend's check; unknown, the reads go through the mask.
    """
    xp = backend.xp
    array = xp.asarray(array)
    if not index:
        return array
    if in_range and _one_int_component(xp, index, None):
        return backend.take(xp, array, index)  # the common case: no checks to make
    comps = _components(xp, index)
    batch = tuple(comps[0].shape)
    indexed, tail = tuple(array.shape[: len(comps)]), tuple(array.shape[len(comps) :])
    if math.prod(indexed) == 0 or math.prod(batch) == 0:
        return xp.zeros(batch + tail, dtype=array.dtype)
    if in_range is None:
        in_range = backend.in_range(comps, indexed)
    if in_range:
        return backend.take(xp, array, comps)
    valid, clipped = clip_to_range(xp, comps, indexed)
    picked = backend.take(xp, array, clipped)
    mask = xp.reshape(valid, batch + (1,) * len(tail))
    return xp.where(mask, picked, xp.zeros((), dtype=array.dtype))


def gather(
    backend: Backend,
    array: Array,
    index: Sequence[Array],
    outer: Shape,
    in_range: bool | None = None,
) -> Array:
    """``out[is] = array[index[is]]`` over ``outer`` (zeros where out of range, §5.2);
    ``in_range`` as for :func:`index_array`."""
    xp = backend.xp
    array = xp.asarray(array)
    if not index:
        return xp.broadcast_to(array, (*outer, *array.shape))
    if in_range and _one_int_component(xp, index, tuple(outer)):
        return backend.take(xp, array, index)  # the common case: no checks to make
    return index_array(backend, array, _components_over(xp, index, tuple(outer)), in_range)


def scatter(
    backend: Backend,
    source: Array,
    index: Sequence[Array],
    outer: Shape,
    n_vars: int,
    in_range: bool | None = None,
) -> Array:
    """``out[index[is]] += source[is]`` over the first ``n_vars`` dimensions of
    ``source``; out-of-range writes are dropped (§5.2: they add 0 at offset 0 instead,
    the same sums, since a sum that starts at +0 is never -0).  ``in_range`` as for
    :func:`index_array`."""
    xp = backend.xp
    source = xp.asarray(source)
    outer = tuple(outer)
    if (  # the common case: one value per in-range target, handed to the backend
        in_range
        and n_vars == 1 == source.ndim
        and len(outer) == 1
        and source.shape[0]
        and outer[0]
        and _one_int_component(xp, index, tuple(source.shape))
    ):
        return backend.scatter_add(xp, index[0], source, outer[0])
    grid, tail = tuple(source.shape[:n_vars]), tuple(source.shape[n_vars:])
    size, width, rows = math.prod(outer), math.prod(tail), math.prod(grid)
    if size == 0 or rows == 0 or width == 0:
        return xp.zeros(outer + tail, dtype=source.dtype)
    values = xp.reshape(source, (rows, width))
    if index:
        comps = _components_over(xp, index, grid)
        if in_range is None:
            in_range = backend.in_range(comps, outer)
        if not in_range:
            valid, comps = clip_to_range(xp, comps, outer)
            keep = xp.reshape(valid, (-1, 1))
            values = xp.where(keep, values, xp.zeros((), dtype=values.dtype))
        targets = xp.reshape(row_major_offset(comps, outer), (-1,))
    else:  # every value goes to the one target
        targets = xp.zeros((rows,), dtype=xp.int64)
    summed = backend.scatter_add(xp, targets, values, size)
    return xp.reshape(summed, outer + tail)


def index_grid(xp: Any, shape: Shape, *, sparse: bool = False) -> list[Array]:
    """One grid per dimension of ``shape``: the lambda's variables, evaluated in bulk."""
    grids = []
    for axis, extent in enumerate(shape):
        view = [1] * len(shape)
        view[axis] = extent
        grid = xp.reshape(xp.arange(extent, dtype=xp.int64), tuple(view))
        grids.append(grid if sparse else xp.broadcast_to(grid, tuple(shape)))
    return grids


# --------------------------------------------------------------------------------------
# Contraction: one (batched) matmul
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContractionPlan:
    """How :func:`contract` runs one spec on operands of given shapes: permute each
    operand to (batch, rows, summed) / (batch, summed, columns), one ``matmul``, then
    reshape and permute to the result."""

    left_perm: tuple[int, ...] | None
    left_shape: tuple[int, ...]
    right_perm: tuple[int, ...] | None
    right_shape: tuple[int, ...]
    product_shape: tuple[int, ...]
    result_perm: tuple[int, ...] | None


@functools.lru_cache(maxsize=1024)
def contraction_plan(spec: str, a: tuple[int, ...], b: tuple[int, ...]) -> ContractionPlan:
    la, lb, out = parse_contraction(spec)
    size = dict(zip(la, a, strict=True)) | dict(zip(lb, b, strict=True))
    batch = [c for c in out if c in la and c in lb]
    rows = [c for c in la if c in out and c not in lb]
    cols = [c for c in lb if c in out and c not in la]
    summed = [c for c in la if c not in out]

    def extent(letters: list[str]) -> int:
        return math.prod(size[c] for c in letters)

    def perm(letters: str, order: list[str]) -> tuple[int, ...] | None:
        p = tuple(letters.index(c) for c in order)
        return None if p == tuple(range(len(p))) else p

    nb, nr, nc, ns = extent(batch), extent(rows), extent(cols), extent(summed)
    result = batch + rows + cols
    return ContractionPlan(
        perm(la, batch + rows + summed),
        (nb, nr, ns) if batch else (nr, ns),
        perm(lb, batch + summed + cols),
        (nb, ns, nc) if batch else (ns, nc),
        tuple(size[c] for c in result),
        perm("".join(result), list(out)),
    )


def contract(xp: Any, spec: str, a: Array, b: Array) -> Array:
    """``contract spec a b`` (:class:`dualarr.lang.terms.Contract`) as one ``matmul``."""
    plan = contraction_plan(spec, tuple(a.shape), tuple(b.shape))
    if plan.left_perm is not None:
        a = xp.permute_dims(a, plan.left_perm)
    if plan.right_perm is not None:
        b = xp.permute_dims(b, plan.right_perm)
    if len(plan.left_shape) == 2 and plan.left_shape[0] == 1 and plan.right_shape == (
        plan.left_shape[1],
        1,
    ):  # a full inner product: one vecdot (a (1,n)@(n,1) matmul can be much slower)
        product = xp.vecdot(xp.reshape(a, (-1,)), xp.reshape(b, (-1,)))
    else:
        product = xp.matmul(xp.reshape(a, plan.left_shape), xp.reshape(b, plan.right_shape))
    product = xp.reshape(product, plan.product_shape)
    if plan.result_perm is not None:
        product = xp.permute_dims(product, plan.result_perm)
    return product


# --------------------------------------------------------------------------------------
# The algebra
# --------------------------------------------------------------------------------------


class ArrayAlgebra(Algebra[Array]):
    """The core language on the arrays of one backend: the reference semantics (§3, with
    the totality of §5.2), one for every namespace (NumPy's fast paths are fields of
    its :class:`Backend`)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.xp = backend.xp
        self.elementwise = elementwise_on(backend.xp)

    def const(self, value: Any) -> Array:
        return self.xp.asarray(value)

    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Array:
        xp = self.xp
        return xp.broadcast_to(xp.asarray(value, dtype=self.backend.dtype(dtype)), tuple(shape))

    def iota(self, n: int) -> Array:
        return self.xp.arange(n, dtype=self.xp.int64)

    def op(self, name: str, args: Sequence[Array], dtype: DType) -> Array:
        result = self.xp.asarray(self.elementwise[name](*args))
        target = self.backend.dtype(dtype)
        return result if result.dtype == target else self.xp.astype(result, target)

    def cond(self, c: Array, a: Array, b: Array) -> Array:
        """A 0-d condition read on the host where that is free (NumPy: no ``where`` over
        both branches); elsewhere ``where``, never ``bool(c)`` (no device-to-host copy
        to decide a branch), also for batched conditions (bulk index functions)."""
        xp = self.xp
        c, a, b = xp.asarray(c), xp.asarray(a), xp.asarray(b)
        if self.backend.host_branches and not c.shape:
            return a if bool(c) else b
        rank = max(len(a.shape), len(b.shape)) - len(c.shape)
        return xp.where(xp.reshape(c, tuple(c.shape) + (1,) * max(rank, 0)), a, b)

    def from_integral(self, a: Array, dtype: DType) -> Array:
        return self.xp.astype(self.xp.asarray(a), self.backend.dtype(dtype))

    def floor(self, a: Array) -> Array:
        return floor_to_int(self.xp, self.xp.asarray(a))

    def index(self, a: Array, ix: Sequence[Array]) -> Array:
        return index_array(self.backend, a, ix)

    def map_accum(self, loop: MapAccum, inputs: Sequence[Array], body: BodyRunner) -> list[Array]:
        """The loop step by step, each row of the xs read by position (every step's
        row exists) and each ys written into its preallocated stack."""
        xp = self.xp
        carries_n, xs_n = len(loop.carry_vars), len(loop.x_vars)
        carries = [xp.asarray(c) for c in inputs[:carries_n]]
        xs = [xp.asarray(x) for x in inputs[carries_n : carries_n + xs_n]]
        consts = list(inputs[carries_n + xs_n :])
        stacks = [
            xp.empty(shape, dtype=self.backend.dtype(dtype))
            for shape, dtype in zip(loop.shapes[carries_n:], loop.dtypes[carries_n:], strict=True)
        ]
        for t in loop_steps(loop):
            outs = body(self, [*carries, *(x[t, ...] for x in xs), *consts])
            carries = [xp.asarray(c) for c in outs[:carries_n]]
            for stack, y in zip(stacks, outs[carries_n:], strict=True):
                stack[t, ...] = y
        return [*carries, *stacks]

    def gather(self, outer: Shape, a: Array, fn: IndexFn[Array]) -> Array:
        return gather(self.backend, a, fn.components, outer)

    def scatter(self, outer: Shape, a: Array, fn: IndexFn[Array], n_vars: int) -> Array:
        return scatter(self.backend, a, fn.components, outer, n_vars)

    def sum_outer(self, a: Array) -> Array:
        return self.xp.asarray(self.xp.sum(a, axis=0, dtype=a.dtype))

    def replicate(self, count: int, a: Array) -> Array:
        a = self.xp.asarray(a)
        return self.xp.broadcast_to(a, (count, *a.shape))

    def transpose(self, perm: Sequence[int], a: Array) -> Array:
        return self.xp.permute_dims(a, tuple(perm))

    def reshape(self, shape: Shape, a: Array) -> Array:
        return self.xp.reshape(a, tuple(shape))

    def from_list(self, elems: Sequence[Array]) -> Array:
        return self.xp.stack([self.xp.asarray(e) for e in elems])

    def _int64(self, a: Array) -> Array:
        return self.xp.astype(self.xp.asarray(a), self.xp.int64, copy=False)

    def argmin(self, a: Array) -> Array:
        return self._int64(self.xp.argmin(a, axis=0))

    def argmax(self, a: Array) -> Array:
        return self._int64(self.xp.argmax(a, axis=0))

    def argsort(self, a: Array) -> Array:
        return self._int64(self.xp.argsort(a, axis=0, stable=True))

    def contract(self, spec: str, a: Array, b: Array) -> Array:
        return self.xp.asarray(contract(self.xp, spec, a, b))

    def structural(
        self, construct: type[Structural], args: Sequence[Array], params: Mapping[str, Any]
    ) -> Array:
        result: Array = ARRAY_MEANINGS[construct](self.xp, *args, **params)
        return result

    def build1(self, rows: Sequence[Array], shape: Shape, dtype: DType) -> Array:
        if not rows:
            return self.xp.zeros(tuple(shape), dtype=self.backend.dtype(dtype))
        return self.xp.stack([self.xp.asarray(r) for r in rows])

    def shape(self, a: Array) -> Shape:
        return tuple(getattr(a, "shape", ()))

    def index_point(self, value: int) -> Array:
        return self.xp.asarray(value, dtype=self.xp.int64)

    def index_grid(self, shape: Shape) -> list[Array] | None:
        return index_grid(self.xp, shape)

    def index_fn_from_bulk(self, components: Sequence[Array], grid: Shape) -> IndexFn[Array]:
        xp = self.xp
        return IndexFn(tuple(xp.broadcast_to(xp.asarray(c), tuple(grid)) for c in components))

    def index_fn_from_points(
        self, columns: Sequence[Sequence[Array]], grid: Shape
    ) -> IndexFn[Array]:
        xp = self.xp
        return IndexFn(
            tuple(
                xp.reshape(xp.stack([xp.asarray(v, dtype=xp.int64) for v in c]), tuple(grid))
                if c
                else xp.zeros(tuple(grid), dtype=xp.int64)
                for c in columns
            )
        )

    def index_fn_constant(self, ix: Sequence[Array]) -> IndexFn[Array]:
        return IndexFn(tuple(self.xp.asarray(i, dtype=self.xp.int64) for i in ix))


def grid_points(shape: Shape) -> itertools.product[tuple[int, ...]]:
    """Every point of a grid, in row-major order."""
    return itertools.product(*(range(n) for n in shape))


# --------------------------------------------------------------------------------------
# Run-time helpers of generated code (the ``helpers`` argument), for any backend
# --------------------------------------------------------------------------------------


def index_helpers(backend: Backend) -> dict[str, Callable[..., Any]]:
    """The helpers of generated code that read and write through indices (§5.2) on
    ``backend``: ``index``, ``in_range``, ``gather``, ``scatter`` (the functions above)."""
    return {
        "index": functools.partial(index_array, backend),
        "in_range": backend.in_range,
        "gather": functools.partial(gather, backend),
        "scatter": functools.partial(scatter, backend),
    }


def generic_helpers(backend: Backend) -> SimpleNamespace:
    """The ``helpers`` namespace of :mod:`dualarr.codegen.generate` over one backend."""
    xp = backend.xp

    def points(shape: Shape) -> Iterator[tuple[Array, ...]]:
        for point in grid_points(shape):
            yield tuple(xp.asarray(p, dtype=xp.int64) for p in point)

    def columns(count: int) -> list[list[Array]]:
        return [[] for _ in range(count)]

    def from_points(cols: Sequence[Sequence[Array]], shape: Shape) -> list[Array]:
        return [xp.reshape(xp.stack([xp.asarray(v) for v in c]), tuple(shape)) for c in cols]

    return SimpleNamespace(
        **primal_helpers(xp),
        **index_helpers(backend),
        grid=lambda shape: index_grid(xp, shape, sparse=True),
        points=points,
        columns=columns,
        from_points=from_points,
        contract=contract,
        meanings=MeaningsByName(),
    )

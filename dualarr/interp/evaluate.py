"""Reference evaluator of the core language on NumPy (paper §3; ``book/rules.md §1``).

Totality: an out-of-range ``index``/``gather`` reads 0, an out-of-range ``scatter``
write is dropped, integer ``a // 0 == a`` and ``a % 0 == a``; float arithmetic follows
IEEE (``1/0 == inf``) without warnings.  Programs never crash on data.

The DAG is evaluated iteratively, each node once per environment.  Nodes are memoised
at the *level* of their innermost free variable, so inside ``build1`` only the part of
the body that depends on the index variable is recomputed per element (loop-invariant
subterms are computed once).  ``build1`` loops in Python (the bot removes it);
``gather`` and ``scatter`` evaluate their index functions in bulk on index grids.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic

import numpy as np

from ..lang.errors import DualarrError
from ..lang.indexing import is_scalar_index_work
from ..lang.terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Build1,
    Cond,
    Const,
    Contract,
    DType,
    Floor,
    FreeVars,
    FromIntegral,
    FromList,
    Gather,
    Index,
    Iota,
    Let,
    Op,
    Replicate,
    Reshape,
    Scatter,
    Shape,
    Share,
    Structural,
    SumOuter,
    Term,
    Transpose,
    Var,
    assert_never,
    children,
    install_views,
)
from .algebra import ARRAY_MEANINGS, A, Algebra, IndexFn
from .arrays import ArrayAlgebra, Backend, contract, elementwise_on, floor_to_int

Array = np.ndarray

# --------------------------------------------------------------------------------------
# Elementwise primitives with the totality semantics
# --------------------------------------------------------------------------------------


ELEMENTWISE: dict[str, Callable[..., Any]] = elementwise_on(np)
"""NumPy meaning of each elementwise primitive of :data:`dualarr.lang.primitives.REGISTRY`:
each record's array-API implementation (:func:`dualarr.interp.arrays.elementwise_on`)
with ``xp = numpy``."""


def all_in_range(comps: Sequence[Array], shape: Sequence[int]) -> bool:
    """Every component within its extent, no temporary arrays: one reduction over an
    int64 component read as unsigned (a negative one reads as at least 2**63), two
    (``min`` and ``max``) over another."""
    for comp, extent in zip(map(np.asarray, comps), shape, strict=False):
        if not comp.size:
            continue
        if comp.dtype.type is np.int64:
            if comp.view(np.uint64).max() >= extent:
                return False
        elif comp.min() < 0 or comp.max() >= extent:
            return False
    return True


def index_array(
    array: Array, index: Sequence[Array], in_range: bool | None = None
) -> Array:
    """``array[index]`` with zeros where a component is out of range.

    Components may be scalars or arrays of one batch shape ``B``; the result has shape
    ``B ++ array.shape[len(index):]`` (bulk indexing for gathers).  ``in_range``: the
    range check already made (:func:`all_in_range`), None to make it here.
    """
    if not index:
        return array
    if in_range and len(index) == 1:  # one int64 index array known in range: no work
        (comp,) = index
        if type(comp) is np.ndarray and comp.dtype.type is np.int64:
            # ``take`` without its own bounds check ("clip" moves nothing in range)
            picked: Array = array.take(comp, axis=0, mode="clip")
            return picked
    comps = [np.asarray(i, dtype=np.int64) for i in index]
    if len({c.shape for c in comps}) > 1:
        comps = list(np.broadcast_arrays(*comps))
    batch = comps[0].shape
    tail = array.shape[len(index) :]
    if array.size == 0 or math.prod(batch) == 0:
        return np.zeros(batch + tail, dtype=array.dtype)
    if in_range is None:
        in_range = all_in_range(comps, array.shape)
    if in_range:  # the common case: a plain NumPy index
        return array.take(comps[0], axis=0, mode="clip") if len(comps) == 1 else array[tuple(comps)]
    valid = np.ones(batch, dtype=bool)
    clipped = []
    for comp, extent in zip(comps, array.shape, strict=False):
        ok = (comp >= 0) & (comp < extent)
        valid &= ok
        clipped.append(np.where(ok, comp, 0))
    picked = array[tuple(clipped)]
    mask = valid.reshape(batch + (1,) * len(tail))
    return np.where(mask, picked, np.zeros((), dtype=array.dtype))


def scatter_add(
    source: Array,
    index: Sequence[Array],
    outer_shape: tuple[int, ...],
    n_vars: int,
    in_range: bool | None = None,
) -> Array:
    """``out[index[is]] += source[is]`` over the first ``n_vars`` dims of ``source``.

    ``index`` components have shape ``source.shape[:n_vars]``; out-of-range writes drop.
    ``in_range``: the range check already made (:func:`all_in_range`), None to make it.
    """
    if in_range and n_vars == 1 and len(index) == 1 and source.ndim == 1:
        (comp,) = index  # one float64 value per index, all in range: one bincount
        if (
            source.dtype.type is np.float64
            and type(comp) is np.ndarray
            and comp.dtype.type is np.int64
            and comp.shape == source.shape
        ):
            return np.bincount(comp, weights=source, minlength=outer_shape[0])
    grid_shape = source.shape[:n_vars]
    tail = source.shape[n_vars:]
    size, width = math.prod(outer_shape), math.prod(tail)
    comps = [np.broadcast_to(np.asarray(c, dtype=np.int64), grid_shape) for c in index]
    values = source.reshape(math.prod(grid_shape), width)
    if not size or not values.size:
        return np.zeros(outer_shape + tail, dtype=source.dtype)
    if not comps:  # every value goes to the one target
        targets = np.zeros(values.shape[0], dtype=np.int64)
    elif in_range if in_range is not None else all_in_range(comps, outer_shape):
        targets = comps[0].reshape(-1) if len(comps) == 1 else np.ravel_multi_index(
            tuple(comps), outer_shape
        ).reshape(-1)
    else:
        valid = np.ones(grid_shape, dtype=bool)
        linear = np.zeros(grid_shape, dtype=np.int64)
        for comp, extent in zip(comps, outer_shape, strict=True):
            valid &= (comp >= 0) & (comp < extent)
            linear = linear * extent + np.where(valid, comp, 0)
        flat_valid = valid.reshape(-1)
        if not flat_valid.any():
            return np.zeros(outer_shape + tail, dtype=source.dtype)
        targets, values = linear.reshape(-1)[flat_valid], values[flat_valid]
    if width == 1 and source.dtype.kind == "f":
        # one value per target: bincount adds (in order) far faster than add.at
        summed = np.bincount(targets, weights=values[:, 0], minlength=size)
        return summed.astype(source.dtype, copy=False).reshape(outer_shape + tail)
    out = np.zeros((size, width), dtype=source.dtype)
    np.add.at(out, targets, values)
    return out.reshape(outer_shape + tail)


# --------------------------------------------------------------------------------------
# NumPy as an algebra
# --------------------------------------------------------------------------------------


class NumpyAlgebra(Algebra[Array]):
    """The core language on NumPy arrays, with the totality semantics of §5.2."""

    def const(self, value: np.ndarray) -> Array:
        return value

    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Array:
        return np.broadcast_to(np.asarray(value, dtype=dtype.numpy()), shape)

    def iota(self, n: int) -> Array:
        return np.arange(n, dtype=np.int64)

    def op(self, name: str, args: Sequence[Array], dtype: DType) -> Array:
        return np.asarray(ELEMENTWISE[name](*args)).astype(dtype.numpy(), copy=False)

    def cond(self, c: Array, a: Array, b: Array) -> Array:
        cv = np.asarray(c)
        if cv.ndim == 0:  # the usual, unbatched case
            return a if bool(cv) else b
        av, bv = np.asarray(a), np.asarray(b)  # batched (bulk index functions)
        rank = builtins_max(av.ndim, bv.ndim) - cv.ndim
        return np.where(cv.reshape(cv.shape + (1,) * builtins_max(rank, 0)), av, bv)

    def from_integral(self, a: Array, dtype: DType) -> Array:
        return np.asarray(a).astype(dtype.numpy())

    def floor(self, a: Array) -> Array:
        floored: Array = floor_to_int(np, np.asarray(a))
        return floored

    def index(self, a: Array, ix: Sequence[Array]) -> Array:
        return index_array(a, ix)

    def gather(self, outer: Shape, a: Array, fn: IndexFn[Array]) -> Array:
        if not fn.components:  # no components: reads all of ``a`` everywhere
            a = np.asarray(a)
            return np.broadcast_to(a, (*outer, *a.shape))
        return index_array(a, fn.components)

    def scatter(self, outer: Shape, a: Array, fn: IndexFn[Array], n_vars: int) -> Array:
        return scatter_add(np.asarray(a), fn.components, outer, n_vars)

    def sum_outer(self, a: Array) -> Array:
        return np.asarray(np.sum(a, axis=0, dtype=a.dtype))

    def replicate(self, count: int, a: Array) -> Array:
        a = np.asarray(a)
        return np.broadcast_to(a, (count, *a.shape))

    def transpose(self, perm: Sequence[int], a: Array) -> Array:
        return np.transpose(a, perm)

    def reshape(self, shape: Shape, a: Array) -> Array:
        return np.reshape(a, shape)

    def from_list(self, elems: Sequence[Array]) -> Array:
        return np.stack([np.asarray(e) for e in elems])

    def argmin(self, a: Array) -> Array:
        return np.asarray(np.argmin(a, axis=0), dtype=np.int64)

    def argmax(self, a: Array) -> Array:
        return np.asarray(np.argmax(a, axis=0), dtype=np.int64)

    def argsort(self, a: Array) -> Array:
        return np.asarray(np.argsort(a, axis=0, kind="stable"), dtype=np.int64)

    def contract(self, spec: str, a: Array, b: Array) -> Array:
        return np.asarray(contract(np, spec, a, b))

    def structural(
        self, construct: type[Structural], args: Sequence[Array], params: Mapping[str, Any]
    ) -> Array:
        return np.asarray(ARRAY_MEANINGS[construct](np, *args, **params))

    def build1(self, rows: Sequence[Array], shape: Shape, dtype: DType) -> Array:
        if not rows:
            return np.zeros(shape, dtype=dtype.numpy())
        return np.stack([np.asarray(r) for r in rows])

    def shape(self, a: Array) -> Shape:
        return tuple(np.shape(a))

    def index_point(self, value: int) -> Array:
        return np.int64(value)  # type: ignore[return-value]

    def index_grid(self, shape: Shape) -> list[Array] | None:
        return list(np.indices(shape, dtype=np.int64)) if shape else []

    def index_fn_from_bulk(self, components: Sequence[Array], grid: Shape) -> IndexFn[Array]:
        return IndexFn(tuple(np.broadcast_to(np.asarray(c), grid) for c in components))

    def index_fn_from_points(
        self, columns: Sequence[Sequence[Array]], grid: Shape
    ) -> IndexFn[Array]:
        return IndexFn(tuple(np.asarray(c, dtype=np.int64).reshape(grid) for c in columns))

    def index_fn_constant(self, ix: Sequence[Array]) -> IndexFn[Array]:
        return IndexFn(tuple(np.asarray(i, dtype=np.int64) for i in ix))


builtins_max = max


# --------------------------------------------------------------------------------------
# The interpreter
# --------------------------------------------------------------------------------------

Env = dict[Var, tuple[Any, int]]  # variable -> (value, level at which it was bound)


class Interpreter(Generic[A]):
    """Interprets terms in an :class:`Algebra`; reusable across calls.

    The DAG is walked iteratively, each node once per environment; nodes are memoised
    at the level of their innermost free variable, so inside ``build1`` only what
    depends on the index variable is recomputed per element.
    """

    def __init__(self, algebra: Algebra[A]) -> None:
        self.algebra = algebra
        self.free_vars = FreeVars()
        self._bulk_ok: dict[Term, bool] = {}

    def run(
        self,
        roots: Sequence[Term],
        inputs: Mapping[Var, A],
        bindings: Sequence[tuple[Var, Term]] = (),
    ) -> list[A]:
        """``roots`` on ``inputs``, after the top-level ``bindings`` of a let-program
        (Fig. 21), each evaluated once in order into one environment."""
        env: Env = {var: (value, 0) for var, value in inputs.items()}
        memos: list[dict[Term, Any]] = [{}]
        with np.errstate(all="ignore"):
            for var, term in bindings:
                env[var] = (self._eval(term, env, memos), 0)
            return [self._eval(root, env, memos) for root in roots]

    # -- core loop -----------------------------------------------------------------

    def _level(self, node: Term, env: Env, depth: int) -> int:
        if depth == 1:  # no binder is active: everything lives at the top level
            return 0
        level = 0
        for var in self.free_vars(node):
            bound = env.get(var)
            if bound is None:
                raise DualarrError(
                    f"unbound variable {var.hint}#{var.id} while evaluating", op="evaluate"
                )
            level = max(level, bound[1])
        return level

    def _eval(self, root: Term, env: Env, memos: list[dict[Term, Any]]) -> Any:
        """Interpret ``root`` iteratively; recursion only for ``build1`` bodies."""
        levels: dict[Term, int] = {}

        def cached(node: Term) -> bool:
            level = levels.get(node)
            if level is None:
                level = self._level(node, env, len(memos))
                levels[node] = level
            return node in memos[level]

        def store(node: Term, value: Any) -> None:
            memos[levels[node]][node] = value

        def get(node: Term) -> Any:
            return memos[levels[node]][node]

        # stack of (node, state): state 0 = enter, 1 = children done, 2 = let bound done
        stack: list[tuple[Term, int]] = [(root, 0)]
        while stack:
            node, state = stack.pop()
            if state == 0:
                if cached(node):
                    continue
                if isinstance(node, Var):
                    if node not in env:
                        raise DualarrError(
                            f"unbound variable {node.hint}#{node.id} while evaluating",
                            op="evaluate",
                        )
                    store(node, env[node][0])
                    continue
                if isinstance(node, Let):
                    stack.append((node, 2))
                    stack.append((node.bound, 0))
                    continue
                if isinstance(node, Build1 | Gather | Scatter):
                    # only the array argument is evaluated here; bodies and index
                    # functions are evaluated per element / in bulk in _compute
                    stack.append((node, 1))
                    if not isinstance(node, Build1):
                        stack.append((node.array, 0))
                    continue
                stack.append((node, 1))
                for kid in reversed(children(node)):
                    stack.append((kid, 0))
            elif state == 2:
                assert isinstance(node, Let)
                env[node.var] = (get(node.bound), levels[node.bound])
                stack.append((node, 1))
                stack.append((node.body, 0))
            else:
                if cached(node):
                    continue
                store(node, self._compute(node, get, env, memos))
        return get(root)

    def _compute(
        self, node: Term, get: Callable[[Term], Any], env: Env, memos: list[dict[Term, Any]]
    ) -> Any:
        alg = self.algebra
        match node:
            case Const(value=value):
                return alg.const(value)
            case Var():
                return env[node][0]
            case Op(op=op, args=args):
                return alg.op(op, [get(a) for a in args], node.dtype)
            case Cond(cond=c, if_true=a, if_false=b):
                return alg.cond(get(c), get(a), get(b))
            case Let(body=body):
                return get(body)
            case Build1(size=size, var=var, body=body):
                return self._build1(size, var, body, node, env, memos)
            case Index(array=array, index=index):
                return alg.index(get(array), [get(i) for i in index])
            case Gather(outer_shape=sh, array=array, vars=vs, index=index):
                fn = self._index_function(vs, sh, index, env, memos)
                return alg.gather(sh, get(array), fn)
            case Scatter(outer_shape=sh, array=array, vars=vs, index=index):
                grid = array.shape[: len(vs)]
                fn = self._index_function(vs, grid, index, env, memos)
                return alg.scatter(sh, get(array), fn, len(vs))
            case SumOuter(array=a):
                return alg.sum_outer(get(a))
            case Replicate(count=k, array=a):
                return alg.replicate(k, get(a))
            case Transpose(perm=perm, array=a):
                return alg.transpose(perm, get(a))
            case Reshape(new_shape=sh, array=a):
                return alg.reshape(sh, get(a))
            case FromList(elems=elems):
                return alg.from_list([get(e) for e in elems])
            case Iota(size=n):
                return alg.iota(n)
            case FromIntegral(array=a, to=to):
                return alg.from_integral(get(a), to)
            case Floor(array=a):
                return alg.floor(get(a))
            case ArgMin(array=a):
                return alg.argmin(get(a))
            case ArgMax(array=a):
                return alg.argmax(get(a))
            case ArgSort(array=a):
                return alg.argsort(get(a))
            case Contract(spec=spec, left=a, right=b):
                return alg.contract(spec, get(a), get(b))
            case Share(array=a):
                return alg.share(get(a))
            case Structural():
                return alg.structural(type(node), [get(k) for k in children(node)], node.params)
            case _:
                assert_never(node)

    # -- binders -------------------------------------------------------------------

    def _build1(
        self, size: int, var: Var, body: Term, node: Term, env: Env, memos: list[dict[Term, Any]]
    ) -> Any:
        level = len(memos)
        rows = []
        for i in range(size):
            env[var] = (self.algebra.index_point(i), level)
            rows.append(self._eval(body, env, [*memos, {}]))
        env.pop(var, None)
        return self.algebra.build1(rows, node.shape, node.dtype)

    def _index_function(
        self,
        vs: tuple[Var, ...],
        grid_shape: tuple[int, ...],
        index: tuple[Term, ...],
        env: Env,
        memos: list[dict[Term, Any]],
    ) -> IndexFn[A]:
        """Interpret ``λvs. index`` on every point of ``grid_shape`` (in bulk if possible)."""
        alg = self.algebra
        level = len(memos)
        symbolic = alg.symbolic_index_functions
        grids = alg.index_grid(grid_shape)
        if grids is not None and (
            symbolic or all(self._bulk_evaluable(i, frozenset(vs)) for i in index)
        ):
            for var, grid in zip(vs, grids, strict=True):
                env[var] = (grid, level)
            inner = [*memos, {}]
            fn = alg.index_fn_from_bulk([self._eval(i, env, inner) for i in index], grid_shape)
        else:  # an index function with array-valued inner computations: loop
            columns: list[list[Any]] = [[] for _ in index]
            for point in np.ndindex(*grid_shape):
                for var, value in zip(vs, point, strict=True):
                    env[var] = (alg.index_point(value), level)
                inner = [*memos, {}]
                for column, i in zip(columns, index, strict=True):
                    column.append(self._eval(i, env, inner))
            fn = alg.index_fn_from_points(columns, grid_shape)
        for var in vs:
            env.pop(var, None)
        return fn

    def _bulk_evaluable(self, term: Term, lambda_vars: frozenset[Var]) -> bool:
        """Can ``term`` run with its lambda variables bound to whole index grids?"""
        cached = self._bulk_ok.get(term)
        if cached is None:
            cached = is_scalar_index_work(term, lambda_vars, self.free_vars)
            self._bulk_ok[term] = cached
        return cached


def algebra_for(backend: Backend) -> Algebra[Any]:
    """The reference semantics on one backend: NumPy's fast algebra, or the array-API
    one (:class:`dualarr.interp.arrays.ArrayAlgebra`)."""
    return NumpyAlgebra() if backend.name == "numpy" else ArrayAlgebra(backend)


class Evaluator(Interpreter[Array]):
    """The reference evaluator: the core language on the arrays of one backend
    (NumPy unless the inputs are another backend's arrays)."""

    def __init__(self, backend: Backend | None = None) -> None:
        super().__init__(NumpyAlgebra() if backend is None else algebra_for(backend))
        self.backend = backend

    def run(
        self,
        roots: Sequence[Term],
        inputs: Mapping[Var, Any],
        bindings: Sequence[tuple[Var, Term]] = (),
    ) -> list[Array]:
        from .backends import backend_of

        backend = self.backend or backend_of(list(inputs.values()))
        if backend.name != "numpy":
            evaluator = Interpreter(algebra_for(backend))
            arrays = {v: backend.xp.asarray(x) for v, x in inputs.items()}
            values = evaluator.run(roots, arrays, bindings)
            return [backend.xp.asarray(v) for v in values]
        with np.errstate(all="ignore"):
            values = super().run(roots, {v: np.asarray(x) for v, x in inputs.items()}, bindings)
        return [np.asarray(v) for v in values]


def evaluate(term: Term, inputs: Mapping[Var, Any] | None = None) -> Array:
    """Evaluate one term with the given input values (NumPy arrays)."""
    return Evaluator().run([term], inputs or {})[0]


def evaluate_many(terms: Sequence[Term], inputs: Mapping[Var, Any] | None = None) -> list[Array]:
    """Evaluate several terms sharing one memo (shared subterms computed once)."""
    return Evaluator().run(terms, inputs or {})


def _evaluate(outputs: Sequence[Term], env: Mapping[Var, Any]) -> list[Any]:
    """The reference evaluation of a traced program (``Program.__call__``)."""
    return Evaluator().run(outputs, env)


install_views(evaluate=_evaluate)

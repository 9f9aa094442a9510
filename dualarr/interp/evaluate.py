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
    Floor,
    FreeVars,
    FromIntegral,
    FromList,
    Gather,
    Index,
    Iota,
    Let,
    LoopOutput,
    MapAccum,
    Op,
    Replicate,
    Reshape,
    Scatter,
    Share,
    Structural,
    SumOuter,
    Term,
    Transpose,
    Var,
    assert_never,
    children,
    closed_loop,
    install_views,
)
from . import arrays
from .algebra import A, Algebra, BodyRunner, IndexFn
from .arrays import ArrayAlgebra, Backend, elementwise_on
from .backends import all_in_range as all_in_range
from .backends import backend_of, numpy_backend

Array = np.ndarray

# --------------------------------------------------------------------------------------
# NumPy: the array algebra of :mod:`dualarr.interp.arrays` with ``xp = numpy``
# --------------------------------------------------------------------------------------


ELEMENTWISE: dict[str, Callable[..., Any]] = elementwise_on(np)
"""NumPy meaning of each elementwise primitive of :data:`dualarr.lang.primitives.REGISTRY`:
each record's array-API implementation (:func:`dualarr.interp.arrays.elementwise_on`)
with ``xp = numpy``, the table :class:`NumpyAlgebra` computes with."""


class NumpyAlgebra(ArrayAlgebra):
    """The core language on NumPy arrays: :class:`dualarr.interp.arrays.ArrayAlgebra` on
    the NumPy backend (its fast paths are fields of the backend)."""

    def __init__(self) -> None:
        super().__init__(numpy_backend())


def index_array(array: Array, index: Sequence[Array], in_range: bool | None = None) -> Array:
    """``array[index]`` on NumPy, 0 where out of range (§5.2):
    :func:`dualarr.interp.arrays.index_array` on the NumPy backend."""
    picked: Array = arrays.index_array(numpy_backend(), array, index, in_range)
    return picked


def scatter_add(
    source: Array,
    index: Sequence[Array],
    outer_shape: tuple[int, ...],
    n_vars: int,
    in_range: bool | None = None,
) -> Array:
    """``out[index[is]] += source[is]`` on NumPy, out-of-range writes dropped (§5.2):
    :func:`dualarr.interp.arrays.scatter` on the NumPy backend."""
    summed: Array = arrays.scatter(numpy_backend(), source, index, outer_shape, n_vars, in_range)
    return summed


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
                if isinstance(node, MapAccum):  # the body runs per step in _compute
                    stack.append((node, 1))
                    stack.extend((kid, 0) for kid in reversed(node.inputs))
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
            case MapAccum():
                loop, outside = closed_loop(node, self.free_vars)
                values = [*(get(k) for k in node.inputs), *(env[v][0] for v in outside)]
                return alg.map_accum(loop, values, body_runner(loop))
            case LoopOutput(index=k, loop=loop):
                return get(loop)[k]
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


def body_runner(loop: MapAccum) -> BodyRunner:
    """How a loop's body runs in an algebra: its results interpreted with the binders
    bound to one step's values (one interpreter per algebra, kept across steps; the
    body is closed, so nothing outside it is read)."""
    interpreters: dict[int, Interpreter[Any]] = {}

    def run(algebra: Algebra[Any], values: Sequence[Any]) -> list[Any]:
        interpreter = interpreters.get(id(algebra))
        if interpreter is None or interpreter.algebra is not algebra:
            interpreter = interpreters[id(algebra)] = Interpreter(algebra)
        bound = dict(zip(loop.binders, values, strict=True))
        return interpreter.run(loop.body, bound)

    return run


def algebra_for(backend: Backend) -> Algebra[Any]:
    """The reference semantics on one backend
    (:class:`dualarr.interp.arrays.ArrayAlgebra`)."""
    return ArrayAlgebra(backend)


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
        backend = self.backend or backend_of(list(inputs.values()))
        if backend.name != "numpy":
            evaluator = Interpreter(algebra_for(backend))
            on_backend = {v: backend.xp.asarray(x) for v, x in inputs.items()}
            values = evaluator.run(roots, on_backend, bindings)
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

"""Reference evaluator of the core language on NumPy (paper §3; ``RULES.md`` §1).

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
from typing import Any

import numpy as np

from .core import (
    ArgMax,
    ArgMin,
    Build1,
    Cond,
    Const,
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
    SumOuter,
    Term,
    Transpose,
    Var,
    assert_never,
    children,
)
from .errors import DualarrError
from .indexing import is_scalar_index_work

Array = np.ndarray

# --------------------------------------------------------------------------------------
# Elementwise primitives with the totality semantics
# --------------------------------------------------------------------------------------


def _quot(a: Array, b: Array) -> Array:
    """Integer floor division with ``a // 0 == a``."""
    zero = b == 0
    return np.where(zero, a, np.floor_divide(a, np.where(zero, 1, b)))


def _rem(a: Array, b: Array) -> Array:
    """Integer remainder (sign of the divisor, as Python) with ``a % 0 == a``."""
    zero = b == 0
    return np.where(zero, a, np.remainder(a, np.where(zero, 1, b)))


def _sigmoid(x: Array) -> Array:
    return np.asarray(1 / (1 + np.exp(-x)))


def _recip(x: Array) -> Array:
    return 1 / x


ELEMENTWISE: dict[str, Callable[..., Any]] = {
    "exp": np.exp,
    "log": np.log,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
    "recip": _recip,
    "sigmoid": _sigmoid,
    "neg": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "div": np.divide,
    "pow": np.power,
    "atan2": np.arctan2,
    "quot": _quot,
    "rem": _rem,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
    "not": np.logical_not,
    "and": np.logical_and,
    "or": np.logical_or,
    "select": np.where,
}
"""NumPy meaning of each elementwise primitive of :data:`dualarr.core.OPS`."""


def index_array(array: Array, index: Sequence[Array]) -> Array:
    """``array[index]`` with zeros where a component is out of range.

    Components may be scalars or arrays of one batch shape ``B``; the result has shape
    ``B ++ array.shape[len(index):]`` (bulk indexing for gathers).
    """
    if not index:
        return array
    comps = np.broadcast_arrays(*[np.asarray(i, dtype=np.int64) for i in index])
    batch = comps[0].shape
    valid = np.ones(batch, dtype=bool)
    clipped = []
    for comp, extent in zip(comps, array.shape, strict=False):
        ok = (comp >= 0) & (comp < extent)
        valid &= ok
        clipped.append(np.where(ok, comp, 0))
    tail = array.shape[len(index) :]
    if array.size == 0 or math.prod(batch) == 0:
        return np.zeros(batch + tail, dtype=array.dtype)
    picked = array[tuple(clipped)]
    mask = valid.reshape(batch + (1,) * len(tail))
    return np.where(mask, picked, np.zeros((), dtype=array.dtype))


def scatter_add(
    source: Array, index: Sequence[Array], outer_shape: tuple[int, ...], n_vars: int
) -> Array:
    """``out[index[is]] += source[is]`` over the first ``n_vars`` dims of ``source``.

    ``index`` components have shape ``source.shape[:n_vars]``; out-of-range writes drop.
    """
    grid_shape = source.shape[:n_vars]
    tail = source.shape[n_vars:]
    out = np.zeros((math.prod(outer_shape), math.prod(tail)), dtype=source.dtype)
    comps = [np.broadcast_to(np.asarray(c, dtype=np.int64), grid_shape) for c in index]
    valid = np.ones(grid_shape, dtype=bool)
    linear = np.zeros(grid_shape, dtype=np.int64)
    for comp, extent in zip(comps, outer_shape, strict=True):
        valid &= (comp >= 0) & (comp < extent)
        linear = linear * extent + comp
    flat_valid = valid.reshape(-1)
    values = source.reshape(math.prod(grid_shape), math.prod(tail))
    if out.size and flat_valid.any():
        np.add.at(out, linear.reshape(-1)[flat_valid], values[flat_valid])
    return out.reshape(outer_shape + tail)


# --------------------------------------------------------------------------------------
# The evaluator
# --------------------------------------------------------------------------------------

Env = dict[Var, tuple[Any, int]]  # variable -> (value, level at which it was bound)


class Evaluator:
    """Evaluates terms; reusable across calls (free-variable analysis is memoised)."""

    def __init__(self) -> None:
        self.free_vars = FreeVars()
        self._bulk_ok: dict[int, bool] = {}

    def run(self, roots: Sequence[Term], inputs: Mapping[Var, Any]) -> list[Array]:
        env: Env = {var: (np.asarray(value), 0) for var, value in inputs.items()}
        memos: list[dict[int, Any]] = [{}]
        with np.errstate(all="ignore"):
            return [np.asarray(self._eval(root, env, memos)) for root in roots]

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

    def _eval(self, root: Term, env: Env, memos: list[dict[int, Any]]) -> Any:
        """Evaluate ``root`` iteratively; recursion only for ``build1`` bodies."""
        levels: dict[int, int] = {}

        def cached(node: Term) -> tuple[bool, Any]:
            level = levels.get(id(node))
            if level is None:
                level = self._level(node, env, len(memos))
                levels[id(node)] = level
            memo = memos[level]
            if id(node) in memo:
                return True, memo[id(node)]
            return False, None

        def store(node: Term, value: Any) -> None:
            memos[levels[id(node)]][id(node)] = value

        def get(node: Term) -> Any:
            return memos[levels[id(node)]][id(node)]

        # stack of (node, state): state 0 = enter, 1 = children done, 2 = let bound done
        stack: list[tuple[Term, int]] = [(root, 0)]
        while stack:
            node, state = stack.pop()
            if state == 0:
                done, _ = cached(node)
                if done:
                    continue
                if isinstance(node, Var):
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
                bound_value = get(node.bound)
                env[node.var] = (bound_value, levels[id(node.bound)])
                stack.append((node, 1))
                stack.append((node.body, 0))
            else:
                if cached(node)[0]:
                    continue
                store(node, self._compute(node, get, env, memos))
        return get(root)

    def _compute(
        self, node: Term, get: Callable[[Term], Any], env: Env, memos: list[dict[int, Any]]
    ) -> Any:
        match node:
            case Const(value=value):
                return value
            case Var():
                return env[node][0]
            case Op(op=op, args=args):
                return np.asarray(ELEMENTWISE[op](*[get(a) for a in args])).astype(
                    node.dtype.numpy(), copy=False
                )
            case Cond(cond=c, if_true=a, if_false=b):
                cv = np.asarray(get(c))
                av, bv = get(a), get(b)
                if cv.ndim == 0:  # the usual, unbatched case
                    return av if bool(cv) else bv
                return np.where(cv.reshape(cv.shape + (1,) * len(node.shape)), av, bv)
            case Let(body=body):
                return get(body)
            case Build1(size=size, var=var, body=body):
                return self._build1(size, var, body, node, env, memos)
            case Index(array=array, index=index):
                return index_array(get(array), [get(i) for i in index])
            case Gather(outer_shape=sh, array=array, vars=vs, index=index):
                ix = self._index_function(vs, sh, index, env, memos)
                return index_array(get(array), ix)
            case Scatter(outer_shape=sh, array=array, vars=vs, index=index):
                source = get(array)
                ix = self._index_function(vs, source.shape[: len(vs)], index, env, memos)
                return scatter_add(source, ix, sh, len(vs))
            case SumOuter(array=a):
                return np.sum(get(a), axis=0, dtype=node.dtype.numpy())
            case Replicate(array=a):
                return np.broadcast_to(get(a), node.shape)
            case Transpose(perm=perm, array=a):
                return np.transpose(get(a), perm)
            case Reshape(new_shape=sh, array=a):
                return np.reshape(get(a), sh)
            case FromList(elems=elems):
                return np.stack([np.asarray(get(e)) for e in elems])
            case Iota(size=n):
                return np.arange(n, dtype=np.int64)
            case FromIntegral(array=a, to=to):
                return np.asarray(get(a)).astype(to.numpy())
            case Floor(array=a):
                return _floor_to_int(np.asarray(get(a)))
            case ArgMin(array=a):
                return np.argmin(get(a), axis=0).astype(np.int64)
            case ArgMax(array=a):
                return np.argmax(get(a), axis=0).astype(np.int64)
            case _:
                assert_never(node)

    # -- binders -------------------------------------------------------------------

    def _build1(
        self, size: int, var: Var, body: Term, node: Term, env: Env, memos: list[dict[int, Any]]
    ) -> Array:
        level = len(memos)
        values = []
        for i in range(size):
            env[var] = (np.int64(i), level)
            values.append(np.asarray(self._eval(body, env, [*memos, {}])))
        env.pop(var, None)
        if not values:
            return np.zeros(node.shape, dtype=node.dtype.numpy())
        return np.stack(values)

    def _index_function(
        self,
        vs: tuple[Var, ...],
        grid_shape: tuple[int, ...],
        index: tuple[Term, ...],
        env: Env,
        memos: list[dict[int, Any]],
    ) -> list[Array]:
        """Evaluate ``λvs. index`` on every point of ``grid_shape`` at once."""
        if not index:
            return []
        level = len(memos)
        if all(self._bulk_evaluable(i, frozenset(vs)) for i in index):
            grids = list(np.indices(grid_shape, dtype=np.int64)) if grid_shape else []
            for var, grid in zip(vs, grids, strict=True):
                env[var] = (grid, level)
            inner = [*memos, {}]
            result = [
                np.broadcast_to(np.asarray(self._eval(i, env, inner)), grid_shape) for i in index
            ]
        else:  # an index function with array-valued inner computations: loop
            columns: list[list[Any]] = [[] for _ in index]
            for point in np.ndindex(*grid_shape):
                for var, value in zip(vs, point, strict=True):
                    env[var] = (np.int64(value), level)
                inner = [*memos, {}]
                for column, i in zip(columns, index, strict=True):
                    column.append(self._eval(i, env, inner))
            result = [np.asarray(c, dtype=np.int64).reshape(grid_shape) for c in columns]
        for var in vs:
            env.pop(var, None)
        return result

    def _bulk_evaluable(self, term: Term, lambda_vars: frozenset[Var]) -> bool:
        """Can ``term`` run with its lambda variables bound to whole index grids?"""
        cached = self._bulk_ok.get(id(term))
        if cached is None:
            cached = is_scalar_index_work(term, lambda_vars, self.free_vars)
            self._bulk_ok[id(term)] = cached
        return cached


def _floor_to_int(x: Array) -> Array:
    """Float to int, rounding down (totality: ``nan`` becomes 0, ``±inf`` a huge int)."""
    bound = float(2**62)
    safe = np.where(np.isnan(x), 0.0, np.clip(x, -bound, bound))
    return np.floor(safe).astype(np.int64)


def evaluate(term: Term, inputs: Mapping[Var, Any] | None = None) -> Array:
    """Evaluate one term with the given input values (NumPy arrays)."""
    return Evaluator().run([term], inputs or {})[0]


def evaluate_many(terms: Sequence[Term], inputs: Mapping[Var, Any] | None = None) -> list[Array]:
    """Evaluate several terms sharing one memo (shared subterms computed once)."""
    return Evaluator().run(terms, inputs or {})

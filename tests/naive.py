"""A deliberately naive, element-by-element interpreter of the core language: the oracle.

``naive_eval(term, env)`` shares no code with :mod:`dualarr.interp.evaluate`.  It recurses over
the term (no memoisation: shared subterms are simply evaluated again) and computes every
array construct with explicit Python loops over the output (or source) elements
(``np.ndindex``), reading and writing one element at a time:

* elementwise ops apply a NumPy *scalar* function to one element of each argument;
* ``build1`` evaluates its body once per index value and copies the elements in;
* ``index`` / ``gather`` check every index component against its extent by hand and
  read 0 when one is out of range (negative components are out of range);
* ``scatter`` loops over the source elements and adds each one into its target,
  dropping writes whose target is out of range;
* ``sumOuter``, ``replicate``, ``tr``, ``reshape`` (row-major, linearised by hand),
  ``fromList``, ``iota``, ``fromIntegral``, ``floor``, ``argmin``/``argmax`` are loops.

Totality rules (``book/rules.md §1.3``): out-of-range reads give 0, out-of-range scatter
writes are dropped, integer ``a // 0 == a`` and ``a % 0 == a`` (otherwise Python floor
semantics), ``floor`` of nan is 0 and of ±inf is ±2**62; ``argmin``/``argmax`` return the
first position of an extreme value (the first nan, if there is one, as NumPy does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dualarr.constructs import Rev
from dualarr.lang.terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Build1,
    Cond,
    Const,
    DType,
    Floor,
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
    SumOuter,
    Term,
    Transpose,
    Var,
)

Array = np.ndarray
Scalar = Any  # a NumPy scalar (np.float64, np.int64, np.bool_, ...)

_FLOOR_BOUND = float(2**62)


def _quot(a: Scalar, b: Scalar) -> Scalar:
    if b == 0:
        return a
    return np.floor_divide(a, b)


def _rem(a: Scalar, b: Scalar) -> Scalar:
    if b == 0:
        return a
    return np.remainder(a, b)


def _select(c: Scalar, a: Scalar, b: Scalar) -> Scalar:
    return a if bool(c) else b


def _sigmoid(x: Scalar) -> Scalar:
    return 1 / (1 + np.exp(-x))


def _recip(x: Scalar) -> Scalar:
    return 1 / x


def _sinc_derivative(order: int) -> Callable[[Scalar], Scalar]:
    """Derivative ``order`` of NumPy's sinc at a float, exactly rounded: its Maclaurin
    series at 60 digits for ``|x| <= 4`` (a tiny ``x`` keeps its relative accuracy; an odd
    order at ``±0`` is a zero of the series' leading term's sign), mpmath's
    differentiation beyond; nan where the argument is not finite."""

    def derivative(x: Scalar) -> Scalar:
        import mpmath  # type: ignore[import-untyped]  # SymPy's (the symbolic extra)

        x = float(x)
        if not np.isfinite(x):
            return np.nan
        first = (order + 1) // 2  # the series' first term with a non-zero derivative
        if x == 0.0 and order % 2:
            return math.copysign(0.0, (-1.0) ** first * math.copysign(1.0, x))
        with mpmath.workdps(60):
            if abs(x) > 4.0:
                return float(mpmath.diff(lambda t: mpmath.sinc(mpmath.pi * t), x, order))
            t, total = mpmath.mpf(x), mpmath.mpf(0)
            for n in range(first, first + 90):  # d^k/dx^k of (-1)^n (pi x)^2n / (2n+1)!
                power = 2 * n - order
                total += (
                    (-1) ** n * mpmath.pi ** (2 * n) * mpmath.factorial(2 * n)
                    / (mpmath.factorial(power) * mpmath.factorial(2 * n + 1)) * t**power
                )
            return float(total)

    return derivative


SCALAR_OPS: dict[str, Callable[..., Scalar]] = {
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
    "sinc": np.sinc,
    **{f"sinc_d{k}": _sinc_derivative(k) for k in range(1, 5)},
    "stop_gradient": lambda a: a,
    "neg": lambda a: -a,
    "abs": abs,
    "sign": np.sign,
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "div": lambda a, b: a / b,
    "pow": np.power,
    "atan2": np.arctan2,
    "quot": _quot,
    "rem": _rem,
    "wrap": lambda j, n: j + n if j < 0 else j,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "not": lambda a: not bool(a),
    "and": lambda a, b: bool(a) and bool(b),
    "or": lambda a, b: bool(a) or bool(b),
    "select": _select,
}
"""One element at a time: each core elementwise op on NumPy scalars."""


def _zeros(shape: tuple[int, ...], dtype: DType) -> Array:
    return np.zeros(shape, dtype=dtype.numpy())


def _in_range(index: list[int], extents: tuple[int, ...]) -> bool:
    return all(0 <= i < n for i, n in zip(index, extents, strict=False))


def _scalar_int(value: Array) -> int:
    assert value.shape == (), value.shape
    return int(value[()])


def _floor(x: Scalar) -> np.int64:
    v = float(x)
    if math.isnan(v):
        return np.int64(0)
    v = min(max(v, -_FLOOR_BOUND), _FLOOR_BOUND)
    return np.int64(math.floor(v))


def _extreme(values: list[Scalar], better: Callable[[Scalar, Scalar], bool]) -> int:
    best = 0
    for k, v in enumerate(values):
        if isinstance(v, np.floating) and np.isnan(v):
            return k
        if k > 0 and better(v, values[best]):
            best = k
    return best


def naive_eval(term: Term, env: Mapping[Var, Array]) -> Array:
    """Evaluate ``term`` with variables bound by ``env`` (values are NumPy arrays)."""
    with np.errstate(all="ignore"):
        return _eval(term, {var: np.asarray(value) for var, value in env.items()})


def _loop(loop: MapAccum, env: dict[Var, Array]) -> list[Array]:
    """A loop step by step: row t of each xs in, row t of each ys out (§ horde-ad's
    mapAccum), the carries threaded through."""
    carries = [_eval(c, env) for c in loop.inits]
    xs = [_eval(x, env) for x in loop.xs]
    consts = [_eval(k, env) for k in loop.consts]
    n_carries = len(carries)
    ys = [
        _zeros(s, d) for s, d in zip(loop.shapes[n_carries:], loop.dtypes[n_carries:], strict=True)
    ]
    steps = range(loop.length - 1, -1, -1) if loop.reverse else range(loop.length)
    for t in steps:
        values = [*carries, *(x[t] for x in xs), *consts]
        inner = {**env, **dict(zip(loop.binders, values, strict=True))}
        outs = [_eval(b, inner) for b in loop.body]
        carries = outs[:n_carries]
        for y, row in zip(ys, outs[n_carries:], strict=True):
            y[t] = row
    return [*carries, *ys]


def _eval(term: Term, env: dict[Var, Array]) -> Array:
    if isinstance(term, LoopOutput):
        assert isinstance(term.loop, MapAccum)
        return np.array(_loop(term.loop, env)[term.index], dtype=term.dtype.numpy())
    shape, dtype = term.shape, term.dtype
    np_dtype = dtype.numpy()
    match term:
        case Const(value=value):
            out = _zeros(shape, dtype)
            for idx in np.ndindex(*shape):
                out[idx] = value[idx]
            return out
        case Var():
            value = env[term]
            assert value.shape == shape, (term.hint, value.shape, shape)
            return np.array(value, dtype=np_dtype)
        case Op(op=op, args=args):
            values = [_eval(a, env) for a in args]
            fn = SCALAR_OPS[op]
            out = _zeros(shape, dtype)
            for idx in np.ndindex(*shape):
                out[idx] = fn(*[v[idx] for v in values])
            return out
        case Cond(cond=c, if_true=a, if_false=b):
            cv, av, bv = _eval(c, env), _eval(a, env), _eval(b, env)
            return av if bool(cv[()]) else bv
        case Let(var=var, bound=bound, body=body):
            return _eval(body, {**env, var: _eval(bound, env)})
        case Build1(size=size, var=var, body=body):
            out = _zeros(shape, dtype)
            for i in range(size):
                element = _eval(body, {**env, var: np.array(i, dtype=np.int64)})
                for rest in np.ndindex(*body.shape):
                    out[(i, *rest)] = element[rest]
            return out
        case Index(array=array, index=index):
            source = _eval(array, env)
            ix = [_scalar_int(_eval(c, env)) for c in index]
            out = _zeros(shape, dtype)
            if _in_range(ix, source.shape):
                for rest in np.ndindex(*shape):
                    out[rest] = source[(*ix, *rest)]
            return out
        case Gather(outer_shape=outer, array=array, vars=vs, index=index):
            source = _eval(array, env)
            tail = source.shape[len(index) :]
            out = _zeros(shape, dtype)
            for point in np.ndindex(*outer):
                inner = {**env}
                for var, value in zip(vs, point, strict=True):
                    inner[var] = np.array(value, dtype=np.int64)
                ix = [_scalar_int(_eval(c, inner)) for c in index]
                if not _in_range(ix, source.shape):
                    continue
                for rest in np.ndindex(*tail):
                    out[(*point, *rest)] = source[(*ix, *rest)]
            return out
        case Scatter(outer_shape=outer, array=array, vars=vs, index=index):
            source = _eval(array, env)
            grid = source.shape[: len(vs)]
            tail = source.shape[len(vs) :]
            out = _zeros(shape, dtype)
            for point in np.ndindex(*grid):
                inner = {**env}
                for var, value in zip(vs, point, strict=True):
                    inner[var] = np.array(value, dtype=np.int64)
                ix = [_scalar_int(_eval(c, inner)) for c in index]
                if not _in_range(ix, outer):
                    continue
                for rest in np.ndindex(*tail):
                    target = (*ix, *rest)
                    out[target] = out[target] + source[(*point, *rest)]
            return out
        case SumOuter(array=array):
            source = _eval(array, env)
            out = _zeros(shape, dtype)
            for k in range(source.shape[0]):
                for idx in np.ndindex(*shape):
                    out[idx] = out[idx] + source[(k, *idx)]
            return out
        case Replicate(count=count, array=array):
            source = _eval(array, env)
            out = _zeros(shape, dtype)
            for k in range(count):
                for idx in np.ndindex(*source.shape):
                    out[(k, *idx)] = source[idx]
            return out
        case Transpose(perm=perm, array=array):
            source = _eval(array, env)
            out = _zeros(shape, dtype)
            for idx in np.ndindex(*shape):
                src = [0] * len(perm)
                for q, p in enumerate(perm):
                    src[p] = idx[q]
                out[idx] = source[tuple(src)]
            return out
        case Rev(axis=axis, array=array):  # element i along axis is element n - 1 - i
            source = _eval(array, env)
            out = _zeros(shape, dtype)
            for idx in np.ndindex(*shape):
                src = list(idx)
                src[axis] = shape[axis] - 1 - idx[axis]
                out[idx] = source[tuple(src)]
            return out
        case Reshape(new_shape=new_shape, array=array):
            source = _eval(array, env)
            out = _zeros(shape, dtype)
            for idx in np.ndindex(*new_shape):
                linear = 0
                for i, n in zip(idx, new_shape, strict=True):
                    linear = linear * n + i
                src = [0] * source.ndim
                for axis in reversed(range(source.ndim)):
                    src[axis] = linear % source.shape[axis]
                    linear //= source.shape[axis]
                out[idx] = source[tuple(src)]
            return out
        case FromList(elems=elems):
            out = _zeros(shape, dtype)
            for k, elem in enumerate(elems):
                value = _eval(elem, env)
                for idx in np.ndindex(*value.shape):
                    out[(k, *idx)] = value[idx]
            return out
        case Iota(size=size):
            out = _zeros(shape, dtype)
            for k in range(size):
                out[k] = k
            return out
        case FromIntegral(array=array):
            source = _eval(array, env)
            out = _zeros(shape, dtype)
            for idx in np.ndindex(*shape):
                out[idx] = np_dtype.type(source[idx])
            return out
        case Floor(array=array):
            source = _eval(array, env)
            out = _zeros(shape, dtype)
            for idx in np.ndindex(*shape):
                out[idx] = _floor(source[idx])
            return out
        case ArgMin(array=array) | ArgMax(array=array):
            source = _eval(array, env)

            def better(a: Scalar, b: Scalar) -> bool:
                return bool(a < b) if isinstance(term, ArgMin) else bool(a > b)

            out = _zeros(shape, dtype)
            for idx in np.ndindex(*shape):
                column = [source[(k, *idx)] for k in range(source.shape[0])]
                out[idx] = _extreme(column, better)
            return out
        case ArgSort(array=array):
            source = _eval(array, env)
            out = _zeros(shape, dtype)
            for idx in np.ndindex(*shape[1:]):
                column = [source[(k, *idx)] for k in range(shape[0])]
                for rank, k in enumerate(sorted(range(shape[0]), key=lambda k: column[k])):
                    out[(rank, *idx)] = k  # stable: ties keep their order
            return out
        case _:
            raise TypeError(f"naive_eval: unknown term {type(term).__name__}")

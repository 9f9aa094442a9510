"""NumPy's reductions and scans over the core language.

Sums are ``sumOuter`` after a ``tr``/``reshape`` (``da.sum``); ``min``/``max`` gather at
an ``argmin``/``argmax`` (their gradient goes to one element); ``prod`` is a pairwise
product tree (``reshape``, ``tr``, ``index``, ``mul``: log-depth, and no division, so
zeros differentiate correctly); ``cumsum``/``cumprod`` are a work-efficient associative
scan (strided ``gather``s, a recursive combine of adjacent pairs, an interleave by
``fromList``/``reshape``): O(n) work and O(log n) terms.  A ``dtype`` argument converts
the input first, float32 ↔ float64 included, as NumPy's does.  ``median``, ``quantile``
and ``percentile`` sort (``dnp.sort``: an ``argsort`` and a gather, O(n log n), its
gradient a scatter through the permutation) and read the neighbouring order statistics
at static positions, interpolated with static weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..lang import functions as da
from ..lang import indexing as ix_
from ..lang.errors import DtypeError, ShapeError, UnsupportedError
from ..lang.tensor import Tensor, elementwise, join_dtypes, lift_shape
from ..lang.terms import Const, DType, Index, int_const
from ._core import normalize_axes, normalize_axis, to_tensor
from ._sorting import sort, take
from ._ufuncs import convert, is_bool, numpy_api, static_dtype, truthy

__all__ = [
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "average",
    "count_nonzero",
    "cumprod",
    "cumsum",
    "diff",
    "max",
    "mean",
    "median",
    "min",
    "percentile",
    "prod",
    "ptp",
    "quantile",
    "std",
    "sum",
    "var",
]

Axis = int | Sequence[int] | None


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return math.prod(shape[a] for a in axes)


def _keep(result: Tensor, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Tensor:
    """``result`` (the reduced axes gone) with extent-1 dimensions in their place."""
    if not keepdims:
        return result
    return da.reshape(result, tuple(1 if d in axes else n for d, n in enumerate(shape)))


def front(t: Tensor, axes: tuple[int, ...]) -> Tensor:
    """The reduced ``axes`` moved to the front and joined into one (``tr``, ``reshape``)."""
    rest = [d for d in range(len(t.shape)) if d not in axes]
    moved = da.transpose(t, [*axes, *rest])
    joined = (_count(t.shape, axes), *(t.shape[d] for d in rest))
    return da.reshape(moved, joined)


def accumulator(t: Tensor, dtype: Any, op: str) -> Tensor:
    """``t`` in the type a sum or product accumulates in: ``dtype`` when given (None and
    float types are supported; float32 ↔ float64 converts), else bools and ints as int64
    and floats as themselves."""
    if dtype is None:
        return convert(t, DType.INT64, op) if is_bool(t) else t
    target = static_dtype(dtype, op)
    if target is DType.BOOL:
        raise UnsupportedError("a bool accumulator is not supported", op=op)
    if target is DType.INT64 and t.term.dtype.is_float:
        raise UnsupportedError(
            "accumulating floats in an integer type is not supported", op=op
        )
    return convert(t, target, op)


def float_type(t: Tensor, dtype: Any, op: str) -> DType:
    """The float type a mean or variance is computed in: ``dtype`` when given, else ints
    and bools float64 and floats their own."""
    if dtype is not None:
        target = static_dtype(dtype, op)
        if not target.is_float:
            raise UnsupportedError(f"dtype must be a float type here, got {target}", op=op)
        return target
    return t.term.dtype if t.term.dtype.is_float else DType.FLOAT64


def _floating(t: Tensor, dtype: Any, op: str) -> Tensor:
    """``t`` converted to the float type of :func:`float_type` (float32 ↔ float64 too)."""
    return convert(t, float_type(t, dtype, op), op)


def _ones(shape: tuple[int, ...], dtype: np.dtype[Any]) -> Tensor:
    return Tensor(lift_shape(da.constant(np.ones((), dtype)).term, shape))


def _strided(t: Tensor, start: int, step: int, count: int) -> Tensor:
    """``t[start : start + step * count : step]`` along the outer dimension, a ``gather``
    (a read past the end gives 0)."""
    if start == 0 and step == 1 and count == t.shape[0]:
        return t

    def index(i: Tensor) -> Tensor:
        return Tensor(ix_.add(ix_.mul(int_const(step), i.term), int_const(start)))

    return da.gather((count,), t, index)


# --------------------------------------------------------------------------------------
# Sums and means
# --------------------------------------------------------------------------------------


@numpy_api
def sum(a: Any, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """Sum over ``axis`` (every axis by default): ``sumOuter`` after ``tr``/``reshape``.
    Bools and ints sum as int64."""
    op = "numpy.sum"
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    return da.sum(accumulator(t, dtype, op), axes, keepdims)


def _mean(t: Tensor, axes: tuple[int, ...], keepdims: bool) -> Tensor:
    count = _count(t.shape, axes)
    total = da.sum(t, axes, keepdims)
    return total / float(count) if count else total * math.nan


@numpy_api
def mean(a: Any, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis``: the sum divided by the count (ints give float64;
    nan over no elements)."""
    op = "numpy.mean"
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    return _mean(_floating(t, dtype, op), axes, keepdims)


def _variance(
    t: Tensor, target: DType, axes: tuple[int, ...], ddof: float, keepdims: bool, op: str
) -> Tensor:
    """NumPy's ``_var``: the mean in ``target``, the deviations in the common type of
    ``t`` and the mean (float64 for a float64 ``t`` and a float32 ``dtype``), their
    squares converted to ``target`` and summed."""
    centred = t - _mean(convert(t, target, op), axes, True)
    squares = da.sum(convert(centred * centred, target, op), axes, keepdims)
    return squares / float(np.maximum(_count(t.shape, axes) - ddof, 0))


@numpy_api
def var(
    a: Any, axis: Axis = None, dtype: Any = None, ddof: float = 0, keepdims: bool = False
) -> Tensor:
    """Variance over ``axis``: ``sum((a - mean)²) / (N - ddof)`` (ints give float64)."""
    op = "numpy.var"
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    return _variance(t, float_type(t, dtype, op), axes, ddof, keepdims, op)


@numpy_api
def std(
    a: Any, axis: Axis = None, dtype: Any = None, ddof: float = 0, keepdims: bool = False
) -> Tensor:
    """Standard deviation over ``axis``: ``sqrt`` of :func:`var`, with derivative 0
    where the variance is 0 (not ``0 * inf``)."""
    op = "numpy.std"
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    v = _variance(t, float_type(t, dtype, op), axes, ddof, keepdims, op)
    positive = v > 0
    root = da.sqrt(elementwise("select", positive, v, 1.0))
    return elementwise("select", positive, root, v * 0.0)


@numpy_api
def average(
    a: Any,
    axis: Axis = None,
    weights: Any = None,
    returned: bool = False,
    *,
    keepdims: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Weighted mean over ``axis``: ``sum(a * w) / sum(w)`` (the mean without weights).
    1-D ``weights`` run along the one ``axis``; ``returned`` adds the sum of weights."""
    op = "numpy.average"
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    if weights is None:
        avg = _mean(_floating(t, None, op), axes, keepdims)
        scale = da.constant(np.asarray(_count(t.shape, axes), avg.dtype))
    else:
        w = to_tensor(weights, op)
        if w.shape != t.shape:
            if axis is None:
                raise ShapeError(
                    "axis must be specified when shapes of a and weights differ", op=op
                )
            if isinstance(axis, tuple | list) or w.ndim != 1:
                raise ShapeError("1D weights expected when shapes of a and weights differ", op=op)
            ax = normalize_axis(axis, t.ndim, op)
            if w.shape[0] != t.shape[ax]:
                raise ShapeError("length of weights differs from the length of axis", op=op)
            w = da.reshape(w, tuple(t.shape[ax] if d == ax else 1 for d in range(t.ndim)))
        # NumPy's result type: ``result_type(a, weights)``, at least float64 for int or
        # bool ``a``; both are converted to it (float32 ↔ float64 too) before summing
        kind = join_dtypes(op, [t.term.dtype, w.term.dtype])
        if not t.term.dtype.is_float:
            kind = DType.FLOAT64
        t, w = convert(t, kind, op), convert(w, kind, op)
        spread = Tensor(lift_shape(w.term, t.shape))
        total = da.sum(t * spread, axes, keepdims)
        scale = da.sum(spread, axes, keepdims)
        avg = total / scale
    if not returned:
        return avg
    if scale.shape != avg.shape:
        scale = Tensor(lift_shape(scale.term, avg.shape))
    return avg, scale


# --------------------------------------------------------------------------------------
# Products and scans
# --------------------------------------------------------------------------------------


def _halve(t: Tensor) -> tuple[Tensor, Tensor]:
    """An even-length ``t`` as its elements at even and odd outer positions
    (``reshape`` to pairs, ``tr``, ``index``)."""
    n, rest = t.shape[0], t.shape[1:]
    pairs = da.transpose(da.reshape(t, (n // 2, 2, *rest)), (1, 0, *range(2, 2 + len(rest))))
    return Tensor(Index(pairs.term, (int_const(0),))), Tensor(Index(pairs.term, (int_const(1),)))


def _tree_product(t: Tensor) -> Tensor:
    """The product over the outer dimension as a balanced tree of pairwise ``mul``s
    (an odd level is padded with a one)."""
    n, rest = t.shape[0], t.shape[1:]
    if n == 0:
        return _ones(rest, t.dtype)
    while n > 1:
        if n % 2:
            t = da.concatenate([t, _ones((1, *rest), t.dtype)])
            n += 1
        even, odd = _halve(t)
        t, n = even * odd, n // 2
    return Tensor(Index(t.term, (int_const(0),)))


@numpy_api
def prod(a: Any, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """Product over ``axis``: a log-depth tree of pairwise ``mul``s (never divides, so
    the gradient is right where elements are 0).  Bools and ints multiply as int64."""
    op = "numpy.prod"
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    acc = accumulator(t, dtype, op)
    result = _tree_product(front(acc, axes)) if axes else acc
    return _keep(result, t.shape, axes, keepdims)


Combine = Callable[[Tensor, Tensor], Tensor]


def _scan(t: Tensor, combine: Combine) -> Tensor:
    """Inclusive prefix combination along the outer dimension, work-efficient: combine
    adjacent pairs (``x[2i] ∘ x[2i+1]``), scan those recursively (the odd positions),
    then the even positions are ``r[i-1] ∘ x[2i]``; interleave with ``fromList`` and
    ``reshape``.  Each level is a constant number of terms on half the data."""
    n = t.shape[0]
    if n < 2:
        return t
    pairs, evens = n // 2, (n + 1) // 2
    r = _scan(combine(_strided(t, 0, 2, pairs), _strided(t, 1, 2, pairs)), combine)
    first = _strided(t, 0, 1, 1)
    if evens > 1:
        tail = combine(_strided(r, 0, 1, evens - 1), _strided(t, 2, 2, evens - 1))
        e = da.concatenate([first, tail])
    else:
        e = first
    odd = _strided(r, 0, 1, evens)  # padded with a 0 read when n is odd
    woven = da.reshape(da.stack([e, odd], axis=1), (2 * evens, *t.shape[1:]))
    return _strided(woven, 0, 1, n)


def _cumulative(op: str, a: Any, axis: int | None, dtype: Any, combine: Combine) -> Tensor:
    t = to_tensor(a, op)
    if axis is None:
        t = da.reshape(t, (t.size,))
        ax = 0
    else:
        ax = normalize_axis(axis, t.ndim, op)
    acc = accumulator(t, dtype, op)
    if acc.ndim == 0:
        return acc
    perm = [ax, *[d for d in range(acc.ndim) if d != ax]]
    scanned = _scan(da.transpose(acc, perm), combine)
    return da.transpose(scanned, [perm.index(d) for d in range(acc.ndim)])


@numpy_api
def cumsum(a: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    """Cumulative sum along ``axis`` (flattened when None): a work-efficient
    associative scan of ``add`` (O(n) work, O(log n) terms)."""
    return _cumulative("numpy.cumsum", a, axis, dtype, lambda x, y: x + y)


@numpy_api
def cumprod(a: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    """Cumulative product along ``axis`` (flattened when None): a work-efficient
    associative scan of ``mul`` (no division, so zeros differentiate correctly)."""
    return _cumulative("numpy.cumprod", a, axis, dtype, lambda x, y: x * y)


# --------------------------------------------------------------------------------------
# Extrema and their positions
# --------------------------------------------------------------------------------------


def _extremum(op: str, which: str, a: Any, axis: Axis, keepdims: bool) -> Tensor:
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    if t.size == 0 and axes and _count(t.shape, axes) == 0:
        raise ShapeError(
            "zero-size array to reduction operation which has no identity", op=op
        )
    if not axes:
        return t
    if t.size == 0:  # no elements to choose from, none to produce either
        empty = da.sum(t, axes, keepdims)
        return empty != 0 if is_bool(t) else empty
    if is_bool(t):  # min is all, max is any
        count = da.sum(elementwise("not", t) if which == "min" else t, axes, keepdims)
        return count == 0 if which == "min" else count > 0
    result = da.min(t, axes) if which == "min" else da.max(t, axes)
    return _keep(result, t.shape, axes, keepdims)


@numpy_api
def min(a: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Least element over ``axis``, nan propagating: a gather at ``argmin`` (its
    gradient goes to one element)."""
    return _extremum("numpy.min", "min", a, axis, keepdims)


@numpy_api
def max(a: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Greatest element over ``axis``, nan propagating: a gather at ``argmax``."""
    return _extremum("numpy.max", "max", a, axis, keepdims)


@numpy_api
def amin(a: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The same as :func:`min`."""
    return _extremum("numpy.amin", "min", a, axis, keepdims)


@numpy_api
def amax(a: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The same as :func:`max`."""
    return _extremum("numpy.amax", "max", a, axis, keepdims)


@numpy_api
def ptp(a: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Range (peak to peak) over ``axis``: ``max - min``."""
    op = "numpy.ptp"
    t = to_tensor(a, op)
    if is_bool(t):
        raise DtypeError("the range of a bool array is not supported (as in NumPy)", op=op)
    return _extremum(op, "max", t, axis, keepdims) - _extremum(op, "min", t, axis, keepdims)


def _arg(op: str, a: Any, axis: int | None, keepdims: bool) -> Tensor:
    t = to_tensor(a, op)
    if t.size == 0:
        raise ShapeError(f"attempt to get {op[6:]} of an empty sequence", op=op)
    if is_bool(t):
        t = convert(t, DType.INT64, op)
    if axis is None:
        result = da.argmin(t) if op.endswith("argmin") else da.argmax(t)
        return da.reshape(result, (1,) * t.ndim) if keepdims else result
    ax = normalize_axis(axis, t.ndim, op)
    result = da.argmin(t, ax) if op.endswith("argmin") else da.argmax(t, ax)
    return _keep(result, t.shape, (ax,), keepdims)


@numpy_api
def argmin(a: Any, axis: int | None = None, *, keepdims: bool = False) -> Tensor:
    """Index of the first least element along ``axis`` (of the flattened array when
    None): the ``argmin`` construct, an int."""
    return _arg("numpy.argmin", a, axis, keepdims)


@numpy_api
def argmax(a: Any, axis: int | None = None, *, keepdims: bool = False) -> Tensor:
    """Index of the first greatest element along ``axis``: the ``argmax`` construct."""
    return _arg("numpy.argmax", a, axis, keepdims)


# --------------------------------------------------------------------------------------
# Truth tests and differences
# --------------------------------------------------------------------------------------


@numpy_api
def all(a: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Whether every element along ``axis`` is nonzero: no zero counted (``sum`` of
    ``not``), True over no elements."""
    op = "numpy.all"
    t = truthy(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    return da.sum(elementwise("not", t), axes, keepdims) == 0


@numpy_api
def any(a: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Whether some element along ``axis`` is nonzero: a positive count (``sum``)."""
    op = "numpy.any"
    t = truthy(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    return da.sum(t, axes, keepdims) > 0


@numpy_api
def count_nonzero(a: Any, axis: Axis = None, *, keepdims: bool = False) -> Tensor:
    """The number of nonzero elements along ``axis``, an int: ``sum`` of ``a != 0``."""
    op = "numpy.count_nonzero"
    t = truthy(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    return da.sum(t, axes, keepdims)


def _along(t: Tensor, ax: int, start: int, stop: int) -> Tensor:
    """``t`` sliced ``start:stop`` along dimension ``ax`` (a ``gather``)."""
    shape = tuple(stop - start if d == ax else n for d, n in enumerate(t.shape))
    if shape == t.shape:
        return t

    def index(*ix: Tensor) -> tuple[Tensor, ...]:
        return tuple(
            Tensor(ix_.add(v.term, int_const(start))) if d == ax else v
            for d, v in enumerate(ix)
        )

    return da.gather(shape, t, index)


def _edge(value: Any, t: Tensor, ax: int, op: str) -> Tensor:
    """``prepend``/``append``: a scalar stretched to extent 1 along ``ax``, an array
    broadcast to ``t``'s shape off ``ax``."""
    v = to_tensor(value, op)  # a Python number is strong here, as in NumPy's diff
    if v.ndim == 0:
        shape = tuple(1 if d == ax else n for d, n in enumerate(t.shape))
        return Tensor(lift_shape(v.term, shape))
    return v


@numpy_api
def diff(
    a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None
) -> Tensor:
    """The ``n``-th forward difference along ``axis``: ``x[1:] - x[:-1]`` (``gather``s and
    ``sub``; ``!=`` on bools), ``n`` times, after joining ``prepend``/``append``."""
    op = "numpy.diff"
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise ShapeError(f"order must be an int, got {n!r}", op=op)
    if n < 0:
        raise ShapeError(f"order must be non-negative but got {n}", op=op)
    t = to_tensor(a, op)
    if t.ndim == 0:
        raise ShapeError("diff requires input that is at least one dimensional", op=op)
    ax = normalize_axis(axis, t.ndim, op)
    if n == 0:
        return t
    parts = [t]
    if prepend is not None:
        parts.insert(0, _edge(prepend, t, ax, op))
    if append is not None:
        parts.append(_edge(append, t, ax, op))
    if len(parts) > 1:
        joined = da.concatenate(parts, ax)
        if _all_bool(parts) and not is_bool(joined):
            joined = joined != 0
        t = joined
    for _ in range(n):
        length = t.shape[ax]
        if length == 0:
            break
        later, earlier = _along(t, ax, 1, length), _along(t, ax, 0, length - 1)
        t = elementwise("ne", later, earlier) if is_bool(t) else later - earlier
    return t


def _all_bool(parts: Sequence[Tensor]) -> bool:
    return not [p for p in parts if not is_bool(p)]


# --------------------------------------------------------------------------------------
# Order statistics: median, quantile, percentile
# --------------------------------------------------------------------------------------


def no_out(out: Any, op: str) -> None:
    if out is not None:
        raise UnsupportedError(
            "out= writes into an existing array and dualarr arrays are immutable: use the "
            "returned array",
            op=op,
        )


def _ordered(t: Tensor, axes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """``t`` with the reduced ``axes`` joined in front (``tr``, ``reshape``), and that
    sorted along its outer dimension (``dnp.sort``)."""
    joined = front(t, axes)
    return joined, sort(joined, axis=0) if joined.shape[0] > 1 else joined


def _nan_where_nan(result: Tensor, joined: Tensor) -> Tensor:
    """``result`` with nan wherever the slice of ``joined`` it reduces holds a nan, as
    NumPy's: ``select(any(isnan), nan, result)`` (its derivative there is 0)."""
    if not joined.term.dtype.is_float or joined.shape[0] == 0:
        return result
    has_nan = da.sum(joined != joined, 0) > 0
    return elementwise("select", has_nan, math.nan, result)


def kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if d in axes else n for d, n in enumerate(shape))


@numpy_api
def median(
    a: Any,
    axis: Axis = None,
    out: None = None,
    overwrite_input: bool = False,
    keepdims: bool = False,
) -> Tensor:
    """Median over ``axis`` (every axis by default), as NumPy's: the mean of the middle
    one or two order statistics of the sorted ``a`` (:func:`~dualarr.numpy.sort`, so
    O(n log n); the gradient goes to those elements).  Ints and bools give float64; nan
    where the slice holds a nan, and over no elements.  ``overwrite_input`` is a hint
    with nothing to overwrite; ``out`` is not supported."""
    op = "numpy.median"
    no_out(out, op)
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    joined, ordered = _ordered(t, axes)
    m = joined.shape[0]
    middle = take(ordered, np.arange((m - 1) // 2, m // 2 + 1), axis=0) if m > 2 else ordered
    result = _nan_where_nan(_mean(_floating(middle, None, op), (0,), False), joined)
    return da.reshape(result, kept_shape(t.shape, axes)) if keepdims else result


def static_quantiles(q: Any, op: str, percent: bool) -> np.ndarray:
    """``q`` as NumPy's quantile sees it: a static array of rank <= 2 in ``[0, 1]``
    (``q / 100`` for percentiles)."""
    if isinstance(q, Tensor):
        if not isinstance(q.term, Const):
            raise UnsupportedError(
                "q must be static (a number, a list or a NumPy array), got a traced value",
                op=op,
            )
        q = q.term.value
    array = np.asarray(q)
    if array.dtype.kind not in "biuf":
        raise DtypeError(f"q must be real numbers, got {array.dtype}", op=op)
    if percent:
        array = np.asarray(np.true_divide(array, 100))
    if array.ndim > 2:
        raise ShapeError(
            f"q must be a scalar or 1d (rank <= 2 as in NumPy), got rank {array.ndim}", op=op
        )
    if array.size and not (np.all(array >= 0) and np.all(array <= 1)):
        what, bound = ("Percentiles", 100) if percent else ("Quantiles", 1)
        raise ShapeError(f"{what} must be in the range [0, {bound}], got {q!r}", op=op)
    return array


def _lerp_weights(n: int, quantiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's ``linear`` method at the static positions ``(n - 1) q``: the positions of
    the lower and upper neighbours and of the ``base`` (both neighbours the last at or
    past it), stacked, and the weight ``w``: ``_lerp`` is ``lower + (upper - lower) γ``
    below ``γ = 0.5`` and ``upper - (upper - lower)(1 - γ)`` from it on, that is
    ``base + (upper - lower) w`` with ``base`` the upper neighbour and ``w = -(1 - γ)``
    there (γ computed as NumPy does, in ``q``'s float type)."""
    virtual = np.asarray((n - 1) * quantiles)
    above = virtual >= n - 1
    previous = np.where(above, -1, np.floor(virtual)).astype(np.int64)
    following = np.where(above, -1, previous + 1).astype(np.int64)
    gamma = np.asarray(virtual - previous, dtype=virtual.dtype)
    upper = gamma >= 0.5
    weight = np.asarray(np.where(upper, -(1 - gamma), gamma), dtype=virtual.dtype)
    positions = np.stack([previous, following, np.where(upper, following, previous)])
    return positions % n, weight


def _quantile(
    op: str,
    a: Any,
    q: Any,
    axis: Axis,
    out: Any,
    method: str,
    keepdims: bool,
    weights: Any,
    percent: bool,
) -> Tensor:
    """NumPy's ``quantile`` (``percent``: ``percentile``) with the ``linear`` method:
    the sorted ``a`` read at the two neighbouring static positions of each ``q`` by one
    ``gather``, interpolated with static weights (NumPy's ``_lerp``, float32 kept for a
    Python-number ``q``); an int ``q`` reads one position (no interpolation)."""
    no_out(out, op)
    if weights is not None:
        raise UnsupportedError("weights (method='inverted_cdf') are not supported", op=op)
    if method != "linear":
        raise UnsupportedError(
            f"method {method!r} is not supported (only 'linear', NumPy's default)", op=op
        )
    weak = type(q) in (int, float)  # a Python number: NumPy's weak promotion
    quantiles = static_quantiles(q, op, percent)
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    joined, ordered = _ordered(t, axes)
    n = joined.shape[0]
    if n == 0:
        raise ShapeError(
            "cannot take a quantile over no elements (NumPy: index -1 is out of bounds)",
            op=op,
            shapes=[t.shape],
        )
    if quantiles.dtype.kind in "biu":  # integral positions 0 or n - 1: a plain take
        result = take(ordered, ((n - 1) * quantiles).astype(np.int64), axis=0)
    else:
        if is_bool(t):
            raise DtypeError(
                "interpolating between bools subtracts them, which NumPy rejects: convert "
                "a first (astype(a, float))",
                op=op,
            )
        positions, weight = _lerp_weights(n, quantiles)
        target = np.result_type(t.dtype, 1.0 if weak else weight.dtype)
        kind = static_dtype(target, op)
        picked = take(ordered, positions, axis=0)
        lower, upper, base = (Tensor(Index(picked.term, (int_const(k),))) for k in range(3))
        rest = (1,) * (picked.ndim - 1 - quantiles.ndim)
        step = da.constant(weight.astype(target).reshape(weight.shape + rest))
        result = convert(base, kind, op) + convert(upper - lower, kind, op) * step
    result = _nan_where_nan(result, joined)
    if keepdims:
        result = da.reshape(result, quantiles.shape + kept_shape(t.shape, axes))
    return result


@numpy_api
def quantile(
    a: Any,
    q: Any,
    axis: Axis = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: None = None,
) -> Tensor:
    """The ``q``-th quantiles over ``axis`` (NumPy's ``linear`` method): the sorted
    ``a`` (O(n log n)) read at the neighbours of ``(n - 1) q`` and interpolated, so the
    gradient goes to those two elements.  ``q`` is static (a number, list or NumPy
    array of rank <= 2, in ``[0, 1]``); its dimensions come first in the result.
    Result types are NumPy's (float64 for ints; float32 stays float32 for a Python
    number ``q`` or a float32 array); nan where the slice holds a nan.  Other methods,
    ``weights`` and ``out`` are not supported."""
    return _quantile("numpy.quantile", a, q, axis, out, method, keepdims, weights, percent=False)


@numpy_api
def percentile(
    a: Any,
    q: Any,
    axis: Axis = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: None = None,
) -> Tensor:
    """:func:`quantile` at ``q / 100`` (``q`` static, in ``[0, 100]``)."""
    return _quantile("numpy.percentile", a, q, axis, out, method, keepdims, weights, percent=True)

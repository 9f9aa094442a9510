"""NumPy's nan-ignoring reductions and scans over the core language (issue #39).

Each is its plain counterpart (:mod:`dualarr.numpy._reductions`) of the array with the
nans replaced by a ``select``: by the identity for sums, products and scans (0 or 1),
by ``-inf``/``+inf`` for ``nanmax``/``nanmin`` and their positions, and masked out of the
count for means and variances.  The gradient therefore flows to the non-nan elements
only (a ``select``'s derivative), as ``jnp.nansum`` and the others, and
``nanmax``/``nanmin`` send it to the chosen element.  A slice of nans only gives
NumPy's value: nan for ``nanmax``/``nanmin``/``nanmean``/``nanvar``/``nanstd`` and the
order statistics, 0 or 1 for sums and products (NumPy also warns; no warning here).
``nanargmin``/``nanargmax`` of an all-nan slice raise as NumPy's when the array is known
(a constant, or an eager call), and give -1 (as ``jnp.nanargmax``) when it is traced
data.  ``nanmedian``/``nanquantile``/``nanpercentile`` sort (nans last, as
:func:`~dualarr.numpy.sort`) and read the order statistics of the non-nan prefix at
positions computed from its (traced) length: a ``take_along_axis`` at int indices.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..lang import functions as da
from ..lang.errors import ShapeError, UnsupportedError
from ..lang.tensor import Tensor, elementwise, lift_shape
from ..lang.terms import Const, DType
from ._core import normalize_axes, normalize_axis, to_tensor
from ._reductions import (
    Axis,
    accumulator,
    argmax,
    argmin,
    cumprod,
    cumsum,
    float_type,
    front,
    kept_shape,
    max,
    median,
    min,
    no_out,
    percentile,
    prod,
    quantile,
    static_quantiles,
    sum,
)
from ._sorting import sort, take_along_axis
from ._ufuncs import convert, fmax, fmin, numpy_api, static_dtype, truthy

__all__ = [
    "nanargmax",
    "nanargmin",
    "nancumprod",
    "nancumsum",
    "nanmax",
    "nanmean",
    "nanmedian",
    "nanmin",
    "nanpercentile",
    "nanprod",
    "nanquantile",
    "nanstd",
    "nansum",
    "nanvar",
]


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _is_float(t: Tensor) -> bool:
    return t.term.dtype.is_float


def _valid(t: Tensor, where: Any, op: str) -> Tensor | None:
    """Where ``t`` counts: not nan and ``where`` (broadcast); None when every element
    counts (an int or bool ``t`` and no ``where``)."""
    mask = t == t if _is_float(t) else None
    if where is None or where is True:
        return mask
    w = Tensor(lift_shape(truthy(where, op).term, t.shape))
    return w if mask is None else mask & w


def _filled(t: Tensor, mask: Tensor | None, fill: float) -> Tensor:
    """``t`` with ``fill`` where ``mask`` is False (a ``select``: no derivative there)."""
    if mask is None:
        return t
    value = da.constant(np.asarray(fill, t.dtype))
    return elementwise("select", mask, t, value)


def _counts(t: Tensor, mask: Tensor | None, axes: tuple[int, ...], keepdims: bool) -> Tensor:
    """The number of counted elements over ``axes``, an int."""
    if mask is None:
        mask = t == t
    return da.sum(mask, axes, keepdims)


def _full(value: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Tensor:
    return Tensor(lift_shape(da.constant(np.asarray(value, dtype)).term, shape))


def _reduced_shape(
    shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool
) -> tuple[int, ...]:
    if keepdims:
        return kept_shape(shape, axes)
    return tuple(n for d, n in enumerate(shape) if d not in axes)


# --------------------------------------------------------------------------------------
# Sums, products, scans
# --------------------------------------------------------------------------------------


@numpy_api
def nansum(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Tensor:
    """Sum over ``axis`` with nans (and elements where ``where`` is False) counted as 0:
    :func:`~dualarr.numpy.sum` of a ``select``; ``initial`` is added.  An all-nan slice
    sums to 0, as NumPy's."""
    op = "numpy.nansum"
    no_out(out, op)
    t = accumulator(to_tensor(a, op), dtype, op)
    total = sum(_filled(t, _valid(t, where, op), 0.0), axis, keepdims=keepdims)
    return total if initial is None else total + initial


@numpy_api
def nanprod(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Tensor:
    """Product over ``axis`` with nans (and elements where ``where`` is False) counted
    as 1: :func:`~dualarr.numpy.prod` (a product tree, no division) of a ``select``;
    ``initial`` multiplies it."""
    op = "numpy.nanprod"
    no_out(out, op)
    t = accumulator(to_tensor(a, op), dtype, op)
    product = prod(_filled(t, _valid(t, where, op), 1.0), axis, keepdims=keepdims)
    return product if initial is None else product * initial


@numpy_api
def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Tensor:
    """Cumulative sum along ``axis`` (flattened when None) with nans counted as 0:
    :func:`~dualarr.numpy.cumsum` of a ``select``."""
    op = "numpy.nancumsum"
    no_out(out, op)
    t = accumulator(to_tensor(a, op), dtype, op)
    return cumsum(_filled(t, _valid(t, None, op), 0.0), axis)


@numpy_api
def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Tensor:
    """Cumulative product along ``axis`` (flattened when None) with nans counted as 1:
    :func:`~dualarr.numpy.cumprod` of a ``select``."""
    op = "numpy.nancumprod"
    no_out(out, op)
    t = accumulator(to_tensor(a, op), dtype, op)
    return cumprod(_filled(t, _valid(t, None, op), 1.0), axis)


# --------------------------------------------------------------------------------------
# Means and variances
# --------------------------------------------------------------------------------------


def _nan_moments(
    op: str, a: Any, axis: Axis, dtype: Any, where: Any
) -> tuple[Tensor, Tensor | None, tuple[int, ...], Tensor]:
    """The float array, its mask, the reduced axes, and the count (float, kept dims)."""
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    f = convert(t, float_type(t, dtype, op), op)
    mask = _valid(f, where, op)
    count = convert(_counts(f, mask, axes, True), f.term.dtype, op)
    return f, mask, axes, count


def _safe_divide(total: Tensor, count: Tensor) -> Tensor:
    """``total / count``, nan where ``count <= 0`` (a safe divisor, so the derivative of
    the unselected quotient is 0, not nan)."""
    positive = count > 0
    quotient = total / elementwise("select", positive, count, 1.0)
    return elementwise("select", positive, quotient, math.nan)


@numpy_api
def nanmean(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    keepdims: bool = False,
    *,
    where: Any = None,
) -> Tensor:
    """Mean over ``axis`` of the non-nan elements (and where ``where``): their sum over
    their count; nan for a slice with none, as NumPy's.  Ints give float64."""
    op = "numpy.nanmean"
    no_out(out, op)
    f, mask, axes, count = _nan_moments(op, a, axis, dtype, where)
    total = da.sum(_filled(f, mask, 0.0), axes, True)
    result = _safe_divide(total, count)
    return result if keepdims else da.reshape(result, _reduced_shape(f.shape, axes, False))


def _nan_variance(
    op: str,
    a: Any,
    axis: Axis,
    dtype: Any,
    ddof: float,
    keepdims: bool,
    where: Any,
    mean: Any,
    correction: Any,
) -> Tensor:
    """NumPy's ``nanvar``: the squared deviations from the mean of the non-nan elements,
    summed over them and divided by ``count - ddof``; nan where that is not positive."""
    if mean is not None:
        raise UnsupportedError("a precomputed mean= is not supported", op=op)
    if correction is not None:
        if ddof != 0:
            raise ShapeError("ddof and correction can't be provided simultaneously.", op=op)
        ddof = correction
    f, mask, axes, count = _nan_moments(op, a, axis, dtype, where)
    average = _safe_divide(da.sum(_filled(f, mask, 0.0), axes, True), count)
    safe = elementwise("select", average == average, average, 0.0)
    deviation = _filled(f - safe, mask, 0.0)
    squares = da.sum(deviation * deviation, axes, True)
    result = _safe_divide(squares, count - float(ddof))
    return result if keepdims else da.reshape(result, _reduced_shape(f.shape, axes, False))


@numpy_api
def nanvar(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    ddof: float = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: None = None,
    correction: float | None = None,
) -> Tensor:
    """Variance over ``axis`` of the non-nan elements: ``sum((a - m)²) / (n - ddof)``
    over them (``m`` their mean, ``n`` their count), nan where ``n - ddof <= 0``, as
    NumPy's.  ``correction`` is another name for ``ddof``; ``mean=`` is not
    supported."""
    op = "numpy.nanvar"
    no_out(out, op)
    return _nan_variance(op, a, axis, dtype, ddof, keepdims, where, mean, correction)


@numpy_api
def nanstd(
    a: Any,
    axis: Axis = None,
    dtype: Any = None,
    out: None = None,
    ddof: float = 0,
    keepdims: bool = False,
    *,
    where: Any = None,
    mean: None = None,
    correction: float | None = None,
) -> Tensor:
    """Standard deviation over ``axis`` of the non-nan elements: ``sqrt`` of
    :func:`nanvar`, with derivative 0 where the variance is 0."""
    op = "numpy.nanstd"
    no_out(out, op)
    v = _nan_variance(op, a, axis, dtype, ddof, keepdims, where, mean, correction)
    positive = v > 0
    root = da.sqrt(elementwise("select", positive, v, 1.0))
    return elementwise("select", positive, root, v * 0.0)


# --------------------------------------------------------------------------------------
# Extrema and their positions
# --------------------------------------------------------------------------------------


def _nan_extremum(
    op: str,
    which: str,
    a: Any,
    axis: Axis,
    keepdims: bool,
    initial: Any,
    where: Any,
) -> Tensor:
    t = to_tensor(a, op)
    mask = _valid(t, where, op)
    if mask is None and initial is None:
        return (min if which == "min" else max)(t, axis, keepdims=keepdims)
    axes = normalize_axes(axis, t.ndim, op)
    if where is not None and initial is None:
        name = "fmin" if which == "min" else "fmax"
        raise ShapeError(
            f"reduction operation '{name}' does not have an identity, so to use a where "
            "mask one has to specify 'initial'",
            op=op,
        )
    if t.size == 0 and initial is not None:
        return _full(initial, _reduced_shape(t.shape, axes, keepdims), t.dtype)
    if _is_float(t):
        bound = math.inf if which == "min" else -math.inf
    else:
        info = np.iinfo(np.int64)
        bound = float(info.max if which == "min" else info.min)
    filled = _filled(t, mask, bound)
    best = (min if which == "min" else max)(filled, axis, keepdims=keepdims)
    if initial is not None:  # joined as NumPy's fmax/fmin: a nan initial is ignored
        return (fmin if which == "min" else fmax)(best, initial)
    none = _counts(t, mask, axes, keepdims) == 0
    return elementwise("select", none, math.nan, best)


@numpy_api
def nanmax(
    a: Any,
    axis: Axis = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Tensor:
    """Greatest non-nan element over ``axis``: :func:`~dualarr.numpy.max` of the array
    with nans as ``-inf`` (its gradient goes to the chosen element), nan for an all-nan
    slice; ``initial`` joins the comparison (as ``fmax``), and is needed with
    ``where`` (NumPy's rule)."""
    op = "numpy.nanmax"
    no_out(out, op)
    return _nan_extremum(op, "max", a, axis, keepdims, initial, where)


@numpy_api
def nanmin(
    a: Any,
    axis: Axis = None,
    out: None = None,
    keepdims: bool = False,
    initial: Any = None,
    where: Any = None,
) -> Tensor:
    """Least non-nan element over ``axis``: :func:`~dualarr.numpy.min` of the array with
    nans as ``+inf``, nan for an all-nan slice."""
    op = "numpy.nanmin"
    no_out(out, op)
    return _nan_extremum(op, "min", a, axis, keepdims, initial, where)


def _nan_arg(op: str, which: str, a: Any, axis: int | None, keepdims: bool) -> Tensor:
    t = to_tensor(a, op)
    find = argmin if which == "min" else argmax
    if not _is_float(t):
        return find(t, axis, keepdims=keepdims)
    if isinstance(t.term, Const) and t.size:
        value = np.asarray(t.term.value)
        empty = (
            np.all(np.isnan(value))
            if axis is None
            else np.any(np.all(np.isnan(value), axis=normalize_axis(axis, t.ndim, op)))
        )
        if empty:
            raise ShapeError("All-NaN slice encountered", op=op, shapes=[t.shape])
    fill = math.inf if which == "min" else -math.inf
    position = find(_filled(t, t == t, fill), axis, keepdims=keepdims)
    axes = normalize_axes(axis, t.ndim, op)
    none = _counts(t, t == t, axes, keepdims) == 0
    if axis is None and keepdims:
        none = da.reshape(none, position.shape)
    return elementwise("select", none, -1, position)


@numpy_api
def nanargmin(
    a: Any, axis: int | None = None, out: None = None, *, keepdims: bool = False
) -> Tensor:
    """Index of the first least non-nan element along ``axis``: ``argmin`` of the array
    with nans as ``+inf``.  An all-nan slice raises as NumPy's for a known array, and
    gives -1 (``jnp.nanargmin``'s value) for traced data."""
    op = "numpy.nanargmin"
    no_out(out, op)
    return _nan_arg(op, "min", a, axis, keepdims)


@numpy_api
def nanargmax(
    a: Any, axis: int | None = None, out: None = None, *, keepdims: bool = False
) -> Tensor:
    """Index of the first greatest non-nan element along ``axis``: ``argmax`` of the
    array with nans as ``-inf``; all-nan slices as :func:`nanargmin`."""
    op = "numpy.nanargmax"
    no_out(out, op)
    return _nan_arg(op, "max", a, axis, keepdims)


# --------------------------------------------------------------------------------------
# Order statistics
# --------------------------------------------------------------------------------------


def _nan_quantile(
    op: str,
    a: Any,
    quantiles: np.ndarray,
    weak: bool,
    axis: Axis,
    keepdims: bool,
) -> Tensor:
    """NumPy's ``nanquantile`` (``linear`` method) of a float ``a``: each slice sorted
    (nans last), its non-nan count ``c`` (traced), the positions ``(c - 1) q`` split into
    the neighbours ``floor`` and ``floor + 1`` (clamped to ``c - 1``) and the weight
    ``γ``, the neighbours read by ``take_along_axis`` and interpolated as NumPy's
    ``_lerp``; nan for a slice of nans only.  An empty ``a`` gives NumPy's
    ``nanmean(a, axis)`` (nans, without the dimensions of ``q``).  The result type is
    NumPy's for data with a number in every slice (NumPy's own depends on the data
    there: float32 data and a float64 array ``q`` give float32 for a 1-d all-nan
    ``a``)."""
    t = to_tensor(a, op)
    axes = normalize_axes(axis, t.ndim, op)
    joined = front(t, axes)
    n, rest = joined.shape[0], joined.shape[1:]
    target = np.result_type(t.dtype, 1.0 if weak else quantiles.dtype)
    kind = static_dtype(target, op)
    flat_q = quantiles.reshape(-1)
    out_shape = quantiles.shape + (kept_shape(t.shape, axes) if keepdims else rest)
    if t.size == 0:  # NumPy returns nanmean(a, axis, keepdims): no q dimensions
        return _full(math.nan, _reduced_shape(t.shape, axes, keepdims), t.dtype)
    ordered = sort(joined, axis=0) if n > 1 else joined
    count = da.sum(joined == joined, 0)  # an int per slice
    last = da.maximum(count - 1, 0)
    q = da.constant(flat_q.astype(np.float64).reshape((flat_q.size,) + (1,) * len(rest)))
    virtual = convert(count - 1, DType.FLOAT64, op) * q  # (K, *rest)
    below = da.floor(virtual)
    lower = da.minimum(da.maximum(below, 0), last)
    upper = da.minimum(lower + 1, last)
    gamma = convert(virtual - convert(below, DType.FLOAT64, op), kind, op)
    low = convert(take_along_axis(ordered, lower, axis=0), kind, op)
    high = convert(take_along_axis(ordered, upper, axis=0), kind, op)
    difference = high - low
    result = elementwise(
        "select",
        gamma >= 0.5,
        high - difference * (1.0 - gamma),
        low + difference * gamma,
    )
    result = elementwise(
        "select", Tensor(lift_shape(count.term, result.shape)) > 0, result, math.nan
    )
    return da.reshape(result, out_shape)


@numpy_api
def nanmedian(
    a: Any,
    axis: Axis = None,
    out: None = None,
    overwrite_input: bool = False,
    keepdims: bool = False,
) -> Tensor:
    """Median over ``axis`` of the non-nan elements (nan for a slice with none): the
    0.5 quantile of the sorted non-nan prefix (the mean of its middle one or two), an
    O(n log n) sort; ints and bools are :func:`~dualarr.numpy.median`."""
    op = "numpy.nanmedian"
    no_out(out, op)
    t = to_tensor(a, op)
    if not _is_float(t):
        return median(t, axis, keepdims=keepdims)
    return _nan_quantile(op, t, np.asarray(0.5), True, axis, keepdims)


@numpy_api
def nanquantile(
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
    """The ``q``-th quantiles over ``axis`` of the non-nan elements (NumPy's ``linear``
    method; ``q`` static, in ``[0, 1]``, its dimensions first): nan for a slice with
    none.  Other methods, ``weights`` and ``out`` are not supported; ints and bools are
    :func:`~dualarr.numpy.quantile`."""
    return _nan_quantile_api("numpy.nanquantile", a, q, axis, out, method, keepdims, weights, False)


@numpy_api
def nanpercentile(
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
    """:func:`nanquantile` at ``q / 100`` (``q`` static, in ``[0, 100]``)."""
    return _nan_quantile_api(
        "numpy.nanpercentile", a, q, axis, out, method, keepdims, weights, True
    )


def _nan_quantile_api(
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
    no_out(out, op)
    if weights is not None:
        raise UnsupportedError("weights (method='inverted_cdf') are not supported", op=op)
    if method != "linear":
        raise UnsupportedError(
            f"method {method!r} is not supported (only 'linear', NumPy's default)", op=op
        )
    t = to_tensor(a, op)
    if not _is_float(t):
        plain = percentile if percent else quantile
        return plain(t, q, axis, keepdims=keepdims)
    weak = type(q) in (int, float)
    quantiles = static_quantiles(q, op, percent)
    return _nan_quantile(op, t, quantiles, weak, axis, keepdims)

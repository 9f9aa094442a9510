"""Array creation: ``array``, ``zeros``, ``full``, ``linspace``, ``arange``, ``eye``, ``tri`` …

Each function lowers to the core language (paper Fig. 7): a constant for data given as
Python or NumPy values, ``replicate`` of a scalar constant for filled arrays (no large
constant is stored), ``iota`` with elementwise index arithmetic for ranges, and
comparisons of two ``iota`` grids for ``eye``/``tri``.  Inside a trace, ``asarray`` of a
traced value returns it and ``zeros_like`` of one is a constant of its shape and dtype.

Element types are the core language's: ``float32``, ``float64``, ``bool`` and ``int64``
(every NumPy integer type becomes ``int64``, as everywhere in dualarr).  Outside a trace
every function runs now and returns NumPy arrays (:func:`._core.numpy_function`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ..lang import functions as F
from ..lang.errors import DtypeError, ShapeError, UnsupportedError
from ..lang.tensor import Operand, Tensor, broadcast_shapes, cast_to, lift_shape
from ..lang.terms import Const, DType
from ._core import normalize_axis, numpy_function

__all__ = [
    "arange",
    "array",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "full",
    "full_like",
    "identity",
    "linspace",
    "ones",
    "ones_like",
    "tri",
    "zeros",
    "zeros_like",
]


# --------------------------------------------------------------------------------------
# Helpers shared with the other dnp modules
# --------------------------------------------------------------------------------------


def core_dtype(dtype: DTypeLike, op: str) -> DType:
    """The core element type of a NumPy ``dtype`` (an :class:`UnsupportedDtypeError`
    naming ``op`` for float16, complex, strings …)."""
    return DType.of_numpy(dtype, what="dtype", op=op)


def static_shape(shape: Any, op: str) -> tuple[int, ...]:
    """A static shape argument (an int or a sequence of ints, none negative)."""
    items: Sequence[Any]
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        items = (shape,)
    elif isinstance(shape, Sequence | np.ndarray) and not isinstance(shape, str):
        items = list(np.asarray(shape).reshape(-1)) if isinstance(shape, np.ndarray) else shape
    else:
        raise ShapeError(f"shape must be an int or a sequence of ints, got {shape!r}", op=op)
    dims: list[int] = []
    for d in items:
        if isinstance(d, bool) or not isinstance(d, int | np.integer):
            raise ShapeError(f"shape must hold ints, got {d!r} in {shape!r}", op=op)
        if d < 0:
            raise ShapeError(f"negative dimensions are not allowed, got {shape!r}", op=op)
        dims.append(int(d))
    return tuple(dims)


def static_int_arg(value: Any, op: str, what: str, *, minimum: int | None = None) -> int:
    """A static Python/NumPy int argument (``k``, ``N``, ``num`` …), checked."""
    if isinstance(value, Tensor):
        raise UnsupportedError(
            f"{what} must be a static Python int, got a traced value", op=op
        )
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ShapeError(f"{what} must be an int, got {value!r}", op=op)
    if minimum is not None and value < minimum:
        raise ShapeError(f"{what} must be >= {minimum}, got {int(value)}", op=op)
    return int(value)


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, Tensor):
        return True
    if isinstance(value, list | tuple):
        return any(_holds_tensor(v) for v in value)
    return False


def numpy_dtype_of(value: Any) -> np.dtype[Any] | Any:
    """What :func:`numpy.result_type` should see for ``value``: a Tensor's dtype, a
    Python number itself (weakly typed, as NumPy 2 treats it), an array's dtype."""
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, bool | int | float):
        return value
    return np.asarray(value).dtype


def result_dtype(values: Sequence[Any], op: str) -> DType:
    """NumPy's result type of ``values`` as a core type."""
    try:
        dt = np.result_type(*[numpy_dtype_of(v) for v in values])
    except TypeError as error:
        raise DtypeError(f"the arguments have no common element type ({error})", op=op) from None
    return core_dtype(dt, op)


def astype(t: Tensor, target: DType, op: str) -> Tensor:
    """``t`` converted to ``target`` as NumPy's ``astype`` does: bool → number (0/1),
    int → float and float32 ↔ float64 (``fromIntegral``), float → int (truncation
    toward 0, via ``floor``), number → bool (``!= 0``).  A constant converts in NumPy."""
    source = t.term.dtype
    if source is target:
        return t
    if isinstance(t.term, Const):
        return F.constant(np.asarray(t.term.value).astype(target.numpy()))
    if target is DType.BOOL:
        return t != 0
    if source.is_float and target is DType.INT64:
        return F.where(t < 0, -F.floor(-t), F.floor(t))
    return Tensor(cast_to(t.term, target, op))


def to_array(value: Any, dtype: DTypeLike | None, op: str) -> Tensor:
    """A Tensor for ``value`` (a Tensor, a number, an array or a nested list, which may
    hold traced values), of element type ``dtype`` when given."""
    target = None if dtype is None else core_dtype(dtype, op)
    if isinstance(value, Tensor):
        value.check_live(op)
        return value if target is None else astype(value, target, op)
    if isinstance(value, list | tuple) and _holds_tensor(value):
        if not value:
            raise ShapeError("an empty sequence holds no traced value", op=op)
        parts = [to_array(v, None, op) for v in value]
        shapes = {p.shape for p in parts}
        if len(shapes) != 1:
            raise ShapeError(
                "the sequence is ragged: its elements have shapes "
                + ", ".join(str(p.shape) for p in parts),
                op=op,
                shapes=[p.shape for p in parts],
            )
        common = result_dtype(parts, op)
        stacked = F.stack([astype(p, common, op) for p in parts])
        return stacked if target is None else astype(stacked, target, op)
    try:
        array = np.asarray(value, dtype=None if dtype is None else np.dtype(dtype))
    except (TypeError, ValueError) as error:
        raise ShapeError(f"cannot make an array of {value!r}: {error}", op=op) from None
    core_dtype(array.dtype, op)
    return F.constant(array)


def filled(shape: tuple[int, ...], value: Any, dtype: DType) -> Tensor:
    """``replicate`` of a scalar constant: ``shape`` filled with ``value``."""
    return Tensor(lift_shape(Const(np.asarray(value, dtype=dtype.numpy())), shape))


def broadcast(t: Tensor, shape: tuple[int, ...], op: str) -> Tensor:
    """``t`` broadcast to ``shape`` by NumPy's rules (``reshape``, ``replicate``, ``tr``),
    or a :class:`ShapeError` naming ``op``."""
    source = t.shape
    offset = len(shape) - len(source)
    if offset < 0 or any(n not in (1, shape[offset + k]) for k, n in enumerate(source)):
        raise ShapeError(
            f"cannot broadcast an array of shape {source} to {shape}",
            op=op,
            shapes=[source, shape],
        )
    return Tensor(lift_shape(t.term, shape))


def index_grid(n: int, m: int) -> tuple[Tensor, Tensor]:
    """The row and column numbers of an ``n × m`` array: ``tr (replicate m (iota n))``
    and ``replicate n (iota m)``."""
    rows = F.transpose(F.replicate(m, F.iota(n)), (1, 0))
    cols = F.replicate(n, F.iota(m))
    return rows, cols


def _dtype_or(dtype: DTypeLike | None, default: DTypeLike, op: str) -> DType:
    return core_dtype(default if dtype is None else dtype, op)


# --------------------------------------------------------------------------------------
# From data
# --------------------------------------------------------------------------------------


@numpy_function
def array(
    object: Operand, dtype: DTypeLike | None = None, *, copy: bool = True, ndmin: int = 0
) -> Tensor:
    """An array of ``object`` (a number, an array, a nested list, possibly holding traced
    values): a constant, or ``fromList`` of the traced parts; ``ndmin`` prepends size-1
    dimensions (``reshape``).  Values are immutable, so ``copy`` has no effect."""
    op = "numpy.array"
    del copy
    ndmin = static_int_arg(ndmin, op, "ndmin", minimum=0)
    t = to_array(object, dtype, op)
    if t.ndim < ndmin:
        t = F.reshape(t, (1,) * (ndmin - t.ndim) + t.shape)
    return t


@numpy_function
def asarray(a: Operand, dtype: DTypeLike | None = None) -> Tensor:
    """``a`` as an array: a traced value is returned as it is (converted to ``dtype``
    when given), other data becomes a constant."""
    return to_array(a, dtype, "numpy.asarray")


# --------------------------------------------------------------------------------------
# Filled arrays
# --------------------------------------------------------------------------------------


@numpy_function
def zeros(shape: int | Sequence[int], dtype: DTypeLike | None = None) -> Tensor:
    """An array of zeros (float64 by default): ``replicate`` of the constant 0."""
    op = "numpy.zeros"
    return filled(static_shape(shape, op), 0, _dtype_or(dtype, np.float64, op))


@numpy_function
def ones(shape: int | Sequence[int], dtype: DTypeLike | None = None) -> Tensor:
    """An array of ones (float64 by default): ``replicate`` of the constant 1."""
    op = "numpy.ones"
    return filled(static_shape(shape, op), 1, _dtype_or(dtype, np.float64, op))


@numpy_function
def empty(shape: int | Sequence[int], dtype: DTypeLike | None = None) -> Tensor:
    """As :func:`zeros` (values of a new array are never left undefined here)."""
    op = "numpy.empty"
    return filled(static_shape(shape, op), 0, _dtype_or(dtype, np.float64, op))


def _full(shape: tuple[int, ...], fill_value: Operand, dtype: DTypeLike | None, op: str) -> Tensor:
    if isinstance(fill_value, Tensor) or (
        isinstance(fill_value, list | tuple) and _holds_tensor(fill_value)
    ):
        value = to_array(fill_value, dtype, op)
        return broadcast(value, shape, op)
    try:
        array = np.asarray(fill_value, dtype=None if dtype is None else np.dtype(dtype))
    except (TypeError, ValueError) as error:
        raise ShapeError(f"bad fill value {fill_value!r}: {error}", op=op) from None
    kind = core_dtype(array.dtype, op)
    if array.ndim == 0:
        return filled(shape, array, kind)
    return broadcast(F.constant(array), shape, op)


@numpy_function
def full(
    shape: int | Sequence[int], fill_value: Operand, dtype: DTypeLike | None = None
) -> Tensor:
    """``shape`` filled with ``fill_value`` (its dtype by default): ``replicate`` of a
    scalar, or the value (traced ones too) broadcast to ``shape``."""
    op = "numpy.full"
    return _full(static_shape(shape, op), fill_value, dtype, op)


def _like(
    a: Operand, dtype: DTypeLike | None, shape: int | Sequence[int] | None, op: str
) -> tuple[tuple[int, ...], DType]:
    """The shape and element type of an array ``a`` (``dtype``/``shape`` override them)."""
    if isinstance(a, Tensor):
        a.check_live(op)
        own_shape, own_dtype = a.shape, a.term.dtype
    else:
        if _holds_tensor(a):
            held = to_array(a, None, op)
            own_shape, own_dtype = held.shape, held.term.dtype
        else:
            array = np.asarray(a)
            own_shape, own_dtype = tuple(array.shape), core_dtype(array.dtype, op)
    kind = own_dtype if dtype is None else core_dtype(dtype, op)
    return (own_shape if shape is None else static_shape(shape, op)), kind


@numpy_function
def zeros_like(
    a: Operand, dtype: DTypeLike | None = None, shape: int | Sequence[int] | None = None
) -> Tensor:
    """Zeros of ``a``'s shape and dtype: a constant (never depends on ``a``'s values)."""
    sh, kind = _like(a, dtype, shape, "numpy.zeros_like")
    return filled(sh, 0, kind)


@numpy_function
def ones_like(
    a: Operand, dtype: DTypeLike | None = None, shape: int | Sequence[int] | None = None
) -> Tensor:
    """Ones of ``a``'s shape and dtype: ``replicate`` of the constant 1."""
    sh, kind = _like(a, dtype, shape, "numpy.ones_like")
    return filled(sh, 1, kind)


@numpy_function
def empty_like(
    prototype: Operand,
    dtype: DTypeLike | None = None,
    shape: int | Sequence[int] | None = None,
) -> Tensor:
    """As :func:`zeros_like` (NumPy names the array ``prototype`` here)."""
    sh, kind = _like(prototype, dtype, shape, "numpy.empty_like")
    return filled(sh, 0, kind)


@numpy_function
def full_like(
    a: Operand,
    fill_value: Operand,
    dtype: DTypeLike | None = None,
    shape: int | Sequence[int] | None = None,
) -> Tensor:
    """``a``'s shape filled with ``fill_value``, converted to ``a``'s dtype (or
    ``dtype``): a replicated constant, or a traced value broadcast."""
    op = "numpy.full_like"
    sh, kind = _like(a, dtype, shape, op)
    if isinstance(fill_value, Tensor):
        return broadcast(astype(fill_value, kind, op), sh, op)
    return _full(sh, fill_value, kind.numpy(), op)


# --------------------------------------------------------------------------------------
# Ranges
# --------------------------------------------------------------------------------------


def _static_number(value: Any, op: str, what: str) -> int | float:
    if isinstance(value, Tensor):
        raise UnsupportedError(
            f"{what} must be a static Python number (the length of the result depends on "
            "it), got a traced value",
            op=op,
        )
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ShapeError(f"{what} must be an int or a float, got {value!r}", op=op)
    return value


@numpy_function
def arange(
    start_or_stop: int | float,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: DTypeLike | None = None,
) -> Tensor:
    """``[start, start + step, …]`` below ``stop`` (static numbers): ``iota n * step +
    start``, in ints when every argument is an int, else floats."""
    op = "numpy.arange"
    first = _static_number(start_or_stop, op, "start")
    if stop is None:
        begin: int | float = 0
        end = first
    else:
        begin, end = first, _static_number(stop, op, "stop")
    stride = _static_number(step, op, "step")
    if stride == 0:
        raise ShapeError("step must not be zero", op=op)
    if isinstance(begin, int) and isinstance(end, int) and isinstance(stride, int):
        length = len(range(begin, end, stride))
        natural = DType.INT64
    else:
        ratio = (end - begin) / stride
        if not math.isfinite(ratio):
            raise ShapeError(f"the length {ratio} of the range is not finite", op=op)
        length = max(0, math.ceil(ratio))
        natural = DType.FLOAT64
    target = natural if dtype is None else core_dtype(dtype, op)
    work = natural  # NumPy computes (and returns the step) in it, then converts
    positions = F.iota(length)
    if work.is_float:
        values = F.to_float(positions, work.numpy()) * stride + begin
    elif (begin, stride) == (0, 1):
        values = positions
    else:
        values = positions * int(stride) + int(begin)
    return astype(values, target, op)


@numpy_function
def linspace(
    start: Operand,
    stop: Operand,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: DTypeLike | None = None,
    axis: int = 0,
) -> Tensor | tuple[Tensor, Tensor]:
    """``num`` evenly spaced values from ``start`` to ``stop`` (numbers or arrays, traced
    ones too): ``start + to_float(iota num) * step``, the last one ``stop`` itself when
    ``endpoint`` (a ``where`` on a constant mask).  With ``retstep`` also the step."""
    op = "numpy.linspace"
    num = static_int_arg(num, op, "num", minimum=0)
    if not isinstance(endpoint, bool | np.bool_) or not isinstance(retstep, bool | np.bool_):
        raise ShapeError("endpoint and retstep must be bools", op=op)
    natural = result_dtype([start, stop, float(num)], op)
    target = natural if dtype is None else core_dtype(dtype, op)
    work = natural  # NumPy computes (and returns the step) in it, then converts
    lo = astype(to_array(start, None, op), work, op)
    hi = astype(to_array(stop, None, op), work, op)
    shape = broadcast_shapes(op, [lo.shape, hi.shape])
    lo, hi = broadcast(lo, shape, op), broadcast(hi, shape, op)
    divisions = num - 1 if endpoint else num
    delta = hi - lo
    full_shape = (num, *shape)
    positions = broadcast(
        F.reshape(F.to_float(F.iota(num), work.numpy()), (num,) + (1,) * len(shape)),
        full_shape,
        op,
    )
    lo_rows = broadcast(lo, full_shape, op)
    if divisions > 0:
        step = delta / float(divisions)
        values = positions * broadcast(step, full_shape, op) + lo_rows
    else:
        step = filled(shape, np.nan, work)
        values = positions * broadcast(delta, full_shape, op) + lo_rows
    if endpoint and num > 1:
        last = np.zeros(full_shape, dtype=bool)
        last[-1, ...] = True
        values = F.where(F.constant(last), broadcast(hi, full_shape, op), values)
    if not target.is_float:
        values = F.floor(values)
    values = astype(values, target, op)
    ax = normalize_axis(axis, len(full_shape), op)
    if ax:
        values = F.transpose(values, [*range(1, ax + 1), 0, *range(ax + 1, len(full_shape))])
    return (values, step) if retstep else values


# --------------------------------------------------------------------------------------
# Matrices from index grids
# --------------------------------------------------------------------------------------


def _matrix_args(N: Any, M: Any, k: Any, op: str) -> tuple[int, int, int]:
    n = static_int_arg(N, op, "N", minimum=0)
    m = n if M is None else static_int_arg(M, op, "M", minimum=0)
    return n, m, static_int_arg(k, op, "k")


@numpy_function
def eye(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = float) -> Tensor:
    """Ones on the ``k``-th diagonal of an ``N × M`` array: ``cols - rows == k`` on two
    ``iota`` grids, converted to ``dtype``."""
    op = "numpy.eye"
    n, m, kk = _matrix_args(N, M, k, op)
    rows, cols = index_grid(n, m)
    return astype(cols - rows == kk, core_dtype(dtype, op), op)


@numpy_function
def identity(n: int, dtype: DTypeLike | None = None) -> Tensor:
    """The ``n × n`` identity matrix (:func:`eye`)."""
    op = "numpy.identity"
    size = static_int_arg(n, op, "n", minimum=0)
    rows, cols = index_grid(size, size)
    return astype(rows == cols, _dtype_or(dtype, np.float64, op), op)


@numpy_function
def tri(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = float) -> Tensor:
    """Ones at and below the ``k``-th diagonal: ``cols - rows <= k`` on ``iota`` grids."""
    op = "numpy.tri"
    n, m, kk = _matrix_args(N, M, k, op)
    rows, cols = index_grid(n, m)
    return astype(cols - rows <= kk, core_dtype(dtype, op), op)

"""NumPy's elementwise functions (ufuncs) over the core language.

Each function broadcasts and promotes as the core language's elementwise operations do
(NumPy's rules) and lowers to registry primitives (``Op`` terms), ``select`` and the
int/float casts ``floor``/``fromIntegral``; no new term types.  Rounding (``floor``,
``ceil``, ``trunc``, ``rint``) returns floats with derivative 0, as NumPy's do;
``logaddexp`` and the inverse hyperbolic functions are written in numerically stable
forms.  ``astype`` between float32 and float64 is ``fromIntegral``'s float conversion
(its derivative converts the tangent the same way), and mixed float32/float64 operands
promote to float64, as in NumPy.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np

from ..lang import functions as da
from ..lang.errors import (
    DtypeError,
    DualarrError,
    ShapeError,
    UnsupportedDtypeError,
    UnsupportedError,
)
from ..lang.primitives import sinc_derivative
from ..lang.tensor import Tensor, cast_to, common_shape, elementwise, lift_shape, promote
from ..lang.terms import DType, OpKind
from ._core import numpy_function, to_tensor

__all__ = [
    "abs",
    "absolute",
    "add",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "astype",
    "cbrt",
    "ceil",
    "clip",
    "cos",
    "cosh",
    "deg2rad",
    "degrees",
    "divide",
    "equal",
    "exp",
    "exp2",
    "expm1",
    "fabs",
    "float_power",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "greater",
    "greater_equal",
    "heaviside",
    "hypot",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "nan_to_num",
    "negative",
    "not_equal",
    "positive",
    "power",
    "rad2deg",
    "radians",
    "reciprocal",
    "remainder",
    "rint",
    "select",
    "sign",
    "sin",
    "sinc",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "true_divide",
    "trunc",
    "where",
]

P = ParamSpec("P")
R = TypeVar("R")

_LN2 = math.log(2.0)
_WHOLE = float(2**52)
"""Every float of at least this magnitude is a whole number (float32's bound is lower)."""


# --------------------------------------------------------------------------------------
# Shared machinery (used by the reductions too)
# --------------------------------------------------------------------------------------


def numpy_api(fn: Callable[P, R]) -> Callable[P, R]:
    """A ``dualarr.numpy`` function (:func:`numpy_function`) whose errors name it as
    NumPy's: an error of a construct it is written with is raised again, of the same
    class, with ``op="numpy.<name>"``."""
    op = f"numpy.{fn.__name__}"

    @functools.wraps(fn)
    def named(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except DualarrError as error:
            if error.op == op:
                raise
            where = f" (in {error.op})" if error.op and error.op != op else ""
            raise type(error)(
                f"{error.detail}{where}", op=op, shapes=error.shapes, location=error.location
            ) from None

    return numpy_function(named)


def is_bool(t: Tensor) -> bool:
    return t.term.dtype is DType.BOOL


def as_float(x: Any, op: str) -> Tensor:
    """``x`` as a float tensor (ints to float64, as NumPy's float ufuncs); NumPy computes
    bool arguments in float16, which dualarr does not have."""
    t = to_tensor(x, op)
    if is_bool(t):
        raise UnsupportedDtypeError(
            "NumPy computes this function of a bool array in float16, which dualarr does "
            "not support: convert it first (astype(x, float))",
            op=op,
        )
    return t if t.term.dtype.is_float else da.to_float(t)


def operands(op: str, kind: OpKind, *xs: Any) -> list[Tensor]:
    """The operands promoted (Python numbers are weak) and broadcast to one shape."""
    terms = promote(op, kind, list(xs))
    shape = common_shape(op, [t.shape for t in terms])
    return [Tensor(lift_shape(t, shape)) for t in terms]


def float_operands(op: str, *xs: Any) -> list[Tensor]:
    """Operands of a float function: promoted (ints to float64) and broadcast; all-bool
    operands are NumPy's float16 case (unsupported)."""
    raw = [x if isinstance(x, bool | int | float) else to_tensor(x, op) for x in xs]
    if all(isinstance(x, bool) or (isinstance(x, Tensor) and is_bool(x)) for x in raw):
        raise UnsupportedDtypeError(
            "NumPy computes this function of bool arrays in float16, which dualarr does "
            "not support: convert them first (astype(x, float))",
            op=op,
        )
    return operands(op, OpKind.FLOAT_BINARY, *raw)


def truthy(x: Any, op: str) -> Tensor:
    """``x`` as a bool tensor (nonzero is True, as NumPy's logical functions)."""
    t = to_tensor(x, op)
    return t if is_bool(t) else elementwise("ne", t, 0)


def float_floor(x: Tensor) -> Tensor:
    """NumPy's ``floor`` of a float tensor, as a float with derivative 0: ``floor`` to int
    and back; a value already whole (``|x| >= 2**52``), infinite or nan is itself."""
    whole = da.to_float(da.floor(x), x.dtype)
    return elementwise("select", da.abs(x) < _WHOLE, whole, da.stop_gradient(x))


def float_trunc(x: Tensor) -> Tensor:
    """Rounding towards zero, as a float with derivative 0."""
    return elementwise("select", x < 0, -float_floor(-x), float_floor(x))


def static_dtype(dtype: Any, op: str) -> DType:
    """A NumPy dtype argument as a core element type (any integer type is int64)."""
    if isinstance(dtype, Tensor):
        raise DtypeError("dtype must be a static NumPy dtype", op=op)
    if dtype is float:
        return DType.FLOAT64
    if dtype is int:
        return DType.INT64
    if dtype is bool:
        return DType.BOOL
    return DType.of_numpy(dtype, what="dtype", op=op)


def convert(t: Tensor, target: DType, op: str) -> Tensor:
    """``t`` converted to ``target`` as NumPy's ``astype``: to bool is ``!= 0``, float to
    int truncates, int/bool to float and float32 ↔ float64 are ``fromIntegral``."""
    source = t.term.dtype
    if source is target:
        return t
    if target is DType.BOOL:
        return elementwise("ne", t, 0)
    if source.is_float and not target.is_float:  # float -> int, towards zero
        return elementwise(
            "select", t < 0, -da.floor(-t), da.floor(t)
        )
    return Tensor(cast_to(t.term, target, op))


def _ones_like(t: Tensor) -> Tensor:
    return Tensor(lift_shape(da.constant(np.ones((), t.dtype)).term, t.shape))


# --------------------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------------------


def _both_bool(x1: Any, x2: Any, op: str) -> tuple[Tensor, Tensor] | None:
    a = to_tensor(x1, op) if not isinstance(x1, bool) else None
    b = to_tensor(x2, op) if not isinstance(x2, bool) else None
    if (a is None or is_bool(a)) and (b is None or is_bool(b)):
        ta, tb = operands(op, OpKind.LOGIC_BINARY, x1, x2)
        return ta, tb
    return None


@numpy_api
def add(x1: Any, x2: Any) -> Tensor:
    """Elementwise ``x1 + x2`` (the ``add`` primitive; logical or on bools, as NumPy)."""
    return elementwise("add", x1, x2)


@numpy_api
def subtract(x1: Any, x2: Any) -> Tensor:
    """Elementwise ``x1 - x2`` (the ``sub`` primitive; an error on bools, as NumPy)."""
    return elementwise("sub", x1, x2)


@numpy_api
def multiply(x1: Any, x2: Any) -> Tensor:
    """Elementwise ``x1 * x2`` (the ``mul`` primitive; logical and on bools)."""
    return elementwise("mul", x1, x2)


@numpy_api
def divide(x1: Any, x2: Any) -> Tensor:
    """Elementwise true division ``x1 / x2`` (the ``div`` primitive; ints give float64)."""
    a, b = float_operands("numpy.divide", x1, x2)
    return elementwise("div", a, b)


@numpy_api
def true_divide(x1: Any, x2: Any) -> Tensor:
    """Elementwise true division, the same as :func:`divide`."""
    a, b = float_operands("numpy.true_divide", x1, x2)
    return elementwise("div", a, b)


@numpy_api
def negative(x: Any) -> Tensor:
    """Elementwise ``-x`` (the ``neg`` primitive)."""
    t = to_tensor(x, "numpy.negative")
    if is_bool(t):
        raise DtypeError(
            "the negative of a bool array is not supported (as in NumPy): use logical_not",
            op="numpy.negative",
        )
    return elementwise("neg", t)


@numpy_api
def positive(x: Any) -> Tensor:
    """Elementwise ``+x``: ``x`` itself."""
    t = to_tensor(x, "numpy.positive")
    if is_bool(t):
        raise DtypeError("positive of a bool array is not supported", op="numpy.positive")
    return t


def _int_power(base: Tensor, exponent: Tensor | int) -> Tensor:
    """Integer power by repeated squaring: for a static exponent its bits, for a traced
    one all 63 bits (``select`` on each), so it wraps on overflow as NumPy's does.  A
    negative traced exponent gives 0 (NumPy raises; traced programs never do)."""
    if isinstance(exponent, int):
        if exponent < 0:
            raise UnsupportedError(
                "integers to negative integer powers are not allowed (as in NumPy)",
                op="numpy.power",
            )
        result = _ones_like(base)
        square = base
        first = True
        while exponent:
            if exponent & 1:
                result = square if first else result * square
                first = False
            exponent >>= 1
            if exponent:
                square = square * square
        return result
    e = exponent
    result = _ones_like(base) * _ones_like(e)
    square = base
    for bit in range(63):
        odd = elementwise("rem", e, 2) == 1
        result = elementwise("select", odd, result * square, result)
        if bit < 62:
            square = square * square
            e = elementwise("quot", e, 2)
    return elementwise("select", exponent < 0, 0, result)


def _int_like(v: Any) -> bool:
    if isinstance(v, Tensor):
        return not v.term.dtype.is_float
    return isinstance(v, int)


def _bool_like(v: Any) -> bool:
    return isinstance(v, bool) or (isinstance(v, Tensor) and is_bool(v))


@numpy_api
def power(x1: Any, x2: Any) -> Tensor:
    """Elementwise ``x1 ** x2``: the ``pow`` primitive on floats; on ints repeated
    squaring with ``mul`` (NumPy's int result)."""
    op = "numpy.power"
    a = x1 if isinstance(x1, int | float) else to_tensor(x1, op)
    b = x2 if isinstance(x2, int | float) else to_tensor(x2, op)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = to_tensor(a, op)
    if _int_like(a) and _int_like(b):
        if _bool_like(a) and _bool_like(b):
            raise DtypeError("bool ** bool is not supported (as in NumPy)", op=op)
        if isinstance(a, Tensor) and isinstance(b, int):
            return _int_power(Tensor(cast_to(a.term, DType.INT64, op)), int(b))
        ta, tb = operands(op, OpKind.INT_BINARY, a, b)
        return _int_power(ta, tb)
    return elementwise("pow", a, b)


@numpy_api
def float_power(x1: Any, x2: Any) -> Tensor:
    """Elementwise ``x1 ** x2`` computed in float64 (the ``pow`` primitive; float32
    operands are converted to float64 first, as NumPy's)."""
    op = "numpy.float_power"
    a, b = float_operands(op, x1, x2)
    return elementwise("pow", convert(a, DType.FLOAT64, op), convert(b, DType.FLOAT64, op))


@numpy_api
def square(x: Any) -> Tensor:
    """Elementwise ``x * x`` (``mul``; keeps int types)."""
    t = to_tensor(x, "numpy.square")
    if is_bool(t):
        raise UnsupportedDtypeError(
            "NumPy squares a bool array in int8, which dualarr does not support",
            op="numpy.square",
        )
    return t * t


@numpy_api
def reciprocal(x: Any) -> Tensor:
    """Elementwise ``1 / x`` (the ``recip`` primitive); on ints NumPy's integer
    reciprocal (``x`` where ``|x| == 1``, else 0)."""
    t = to_tensor(x, "numpy.reciprocal")
    if is_bool(t):
        raise UnsupportedDtypeError(
            "NumPy computes the reciprocal of a bool array in int8", op="numpy.reciprocal"
        )
    if not t.term.dtype.is_float:
        return elementwise("select", da.abs(t) == 1, t, 0)
    return da.recip(t)


def _float_unary(name: str, primitive: str, doc: str) -> Callable[[Any], Tensor]:
    op = f"numpy.{name}"

    def fn(x: Any) -> Tensor:
        return elementwise(primitive, as_float(x, op))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return numpy_api(fn)


sqrt = _float_unary("sqrt", "sqrt", "Elementwise square root (the ``sqrt`` primitive).")
exp = _float_unary("exp", "exp", "Elementwise ``e**x`` (the ``exp`` primitive).")
expm1 = _float_unary("expm1", "expm1", "Elementwise ``e**x - 1`` (the ``expm1`` primitive).")
log = _float_unary("log", "log", "Elementwise natural logarithm (the ``log`` primitive).")
log1p = _float_unary("log1p", "log1p", "Elementwise ``log(1 + x)`` (the ``log1p`` primitive).")
sin = _float_unary("sin", "sin", "Elementwise sine (the ``sin`` primitive).")
cos = _float_unary("cos", "cos", "Elementwise cosine (the ``cos`` primitive).")
tan = _float_unary("tan", "tan", "Elementwise tangent (the ``tan`` primitive).")
arcsin = _float_unary("arcsin", "asin", "Elementwise arcsine (the ``asin`` primitive).")
arccos = _float_unary("arccos", "acos", "Elementwise arccosine (the ``acos`` primitive).")
arctan = _float_unary("arctan", "atan", "Elementwise arctangent (the ``atan`` primitive).")
sinh = _float_unary("sinh", "sinh", "Elementwise hyperbolic sine (the ``sinh`` primitive).")
cosh = _float_unary("cosh", "cosh", "Elementwise hyperbolic cosine (the ``cosh`` primitive).")
tanh = _float_unary("tanh", "tanh", "Elementwise hyperbolic tangent (the ``tanh`` primitive).")


@numpy_api
def cbrt(x: Any) -> Tensor:
    """Elementwise cube root: ``sign(x) * |x| ** (1/3)`` (``pow``)."""
    t = as_float(x, "numpy.cbrt")
    root = elementwise("pow", da.abs(t), 1.0 / 3.0)
    return elementwise("select", t < 0, -root, root)


@numpy_api
def exp2(x: Any) -> Tensor:
    """Elementwise ``2 ** x`` (the ``pow`` primitive)."""
    return elementwise("pow", 2.0, as_float(x, "numpy.exp2"))


@numpy_api
def log2(x: Any) -> Tensor:
    """Elementwise base-2 logarithm: ``log(x) / log(2)``."""
    return da.log(as_float(x, "numpy.log2")) * (1.0 / _LN2)


@numpy_api
def log10(x: Any) -> Tensor:
    """Elementwise base-10 logarithm: ``log(x) / log(10)``."""
    return da.log(as_float(x, "numpy.log10")) * (1.0 / math.log(10.0))


@numpy_api
def arctan2(x1: Any, x2: Any) -> Tensor:
    """Elementwise arctangent of ``x1 / x2`` in the right quadrant (``atan2``)."""
    a, b = float_operands("numpy.arctan2", x1, x2)
    return elementwise("atan2", a, b)


_BIG = 1e8
"""Above this magnitude ``asinh``/``acosh`` are ``log(2|x|)`` to within rounding."""


def _asinh_nonneg(a: Tensor) -> Tensor:
    """``asinh(a)`` for ``a >= 0``: ``log1p(a + a²/(1 + sqrt(1 + a²)))`` (accurate near
    0) below :data:`_BIG`, ``log(a) + log 2`` above; each branch sees clamped arguments so
    the other's derivative is finite."""
    small = da.minimum(a, _BIG)
    near = da.log1p(small + small * small / (1.0 + da.sqrt(1.0 + small * small)))
    far = da.log(da.maximum(a, _BIG)) + _LN2
    return elementwise("select", a <= _BIG, near, far)


@numpy_api
def arcsinh(x: Any) -> Tensor:
    """Elementwise inverse hyperbolic sine, odd and stable: ``±g(|x|)`` with ``g`` a
    ``log1p`` form near 0 and ``log(2|x|)`` for large ``|x|``."""
    t = as_float(x, "numpy.arcsinh")
    positive_part = _asinh_nonneg(da.maximum(t, 0.0))
    negative_part = -_asinh_nonneg(da.maximum(-t, 0.0))
    result = elementwise("select", t < 0, negative_part, positive_part)
    return elementwise("select", t == t, result, t)  # nan stays nan


@numpy_api
def arccosh(x: Any) -> Tensor:
    """Elementwise inverse hyperbolic cosine: ``log1p(t + sqrt(2t + t²))`` with
    ``t = x - 1`` (accurate near 1), ``log(x) + log 2`` for large ``x``; nan below 1."""
    t = as_float(x, "numpy.arccosh")
    u = da.minimum(t, _BIG) - 1.0
    near = da.log1p(u + da.sqrt(u * (u + 2.0)))
    far = da.log(da.maximum(t, _BIG)) + _LN2
    return elementwise("select", t <= _BIG, near, far)


def _atanh_nonneg(a: Tensor) -> Tensor:
    """``atanh(a)`` for ``a >= 0``: ``log1p(2a / (1 - a)) / 2`` (``1 - a`` is exact near 1)."""
    return 0.5 * da.log1p(2.0 * a / (1.0 - a))


@numpy_api
def arctanh(x: Any) -> Tensor:
    """Elementwise inverse hyperbolic tangent, odd and stable: ``±log1p(2|x| / (1 -
    |x|)) / 2``."""
    t = as_float(x, "numpy.arctanh")
    positive_part = _atanh_nonneg(da.maximum(t, 0.0))
    negative_part = -_atanh_nonneg(da.maximum(-t, 0.0))
    result = elementwise("select", t < 0, negative_part, positive_part)
    return elementwise("select", t == t, result, t)


@numpy_api
def abs(x: Any) -> Tensor:
    """Elementwise absolute value (the ``abs`` primitive; keeps int and bool types)."""
    t = to_tensor(x, "numpy.abs")
    return t if is_bool(t) else da.abs(t)


@numpy_api
def absolute(x: Any) -> Tensor:
    """Elementwise absolute value, the same as :func:`abs`."""
    t = to_tensor(x, "numpy.absolute")
    return t if is_bool(t) else da.abs(t)


@numpy_api
def fabs(x: Any) -> Tensor:
    """Elementwise absolute value as a float (``abs``; ints give float64)."""
    return da.abs(as_float(x, "numpy.fabs"))


@numpy_api
def sign(x: Any) -> Tensor:
    """Elementwise sign, -1, 0 or 1 (nan for nan; the ``sign`` primitive)."""
    t = to_tensor(x, "numpy.sign")
    if is_bool(t):
        raise DtypeError("the sign of a bool array is not supported", op="numpy.sign")
    return da.sign(t)


def _rounding(name: str, doc: str, rule: Callable[[Tensor], Tensor]) -> Callable[[Any], Tensor]:
    op = f"numpy.{name}"

    def fn(x: Any) -> Tensor:
        t = to_tensor(x, op)
        return rule(t) if t.term.dtype.is_float else t

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return numpy_api(fn)


floor = _rounding(
    "floor",
    "Elementwise rounding down, a float for a float (derivative 0): ``floor`` to int and "
    "``fromIntegral`` back, the value itself where already whole.  Ints stay.",
    float_floor,
)
ceil = _rounding(
    "ceil",
    "Elementwise rounding up, ``-floor(-x)``, a float for a float (derivative 0).",
    lambda t: -float_floor(-t),
)
trunc = _rounding(
    "trunc",
    "Elementwise rounding towards zero, a float for a float (derivative 0).",
    float_trunc,
)


@numpy_api
def rint(x: Any) -> Tensor:
    """Elementwise rounding to the nearest whole number, halves to even (derivative 0):
    ``floor(x)`` plus one where the fraction ``x - floor(x)`` (exact) is above one half,
    or is one half and ``floor(x)`` odd.  Ints give float64."""
    t = as_float(x, "numpy.rint")
    low = da.floor(t)  # an int
    fraction = t - da.to_float(low, t.dtype)
    odd = elementwise("rem", low, 2) == 1
    up = (fraction > 0.5) | ((fraction == 0.5) & odd)
    rounded = da.to_float(low + elementwise("select", up, 1, 0), t.dtype)
    return elementwise("select", da.abs(t) < _WHOLE, rounded, da.stop_gradient(t))


@numpy_api
def deg2rad(x: Any) -> Tensor:
    """Degrees to radians: ``x * (pi / 180)``."""
    return as_float(x, "numpy.deg2rad") * (math.pi / 180.0)


@numpy_api
def radians(x: Any) -> Tensor:
    """Degrees to radians, the same as :func:`deg2rad`."""
    return as_float(x, "numpy.radians") * (math.pi / 180.0)


@numpy_api
def rad2deg(x: Any) -> Tensor:
    """Radians to degrees: ``x * (180 / pi)``."""
    return as_float(x, "numpy.rad2deg") * (180.0 / math.pi)


@numpy_api
def degrees(x: Any) -> Tensor:
    """Radians to degrees, the same as :func:`rad2deg`."""
    return as_float(x, "numpy.degrees") * (180.0 / math.pi)


# --------------------------------------------------------------------------------------
# Extrema, clipping, selection
# --------------------------------------------------------------------------------------


@numpy_api
def maximum(x1: Any, x2: Any) -> Tensor:
    """Elementwise maximum, nan propagating (the ``maximum`` primitive; a tie's
    derivative goes to ``x1``).  On bools, logical or."""
    return elementwise("maximum", x1, x2)


@numpy_api
def minimum(x1: Any, x2: Any) -> Tensor:
    """Elementwise minimum, nan propagating (the ``minimum`` primitive).  On bools,
    logical and."""
    return elementwise("minimum", x1, x2)


def _nan_ignoring(op: str, primitive: str, logic: str, x1: Any, x2: Any) -> Tensor:
    bools = _both_bool(x1, x2, op)
    if bools is not None:
        return elementwise(logic, *bools)
    a, b = operands(op, OpKind.NUM_BINARY, x1, x2)
    best = elementwise(primitive, a, b)
    if not a.term.dtype.is_float:
        return best
    return elementwise("select", b != b, a, elementwise("select", a != a, b, best))


@numpy_api
def fmax(x1: Any, x2: Any) -> Tensor:
    """Elementwise maximum ignoring nan (the other argument where one is nan):
    ``maximum`` under two ``select``s."""
    return _nan_ignoring("numpy.fmax", "maximum", "or", x1, x2)


@numpy_api
def fmin(x1: Any, x2: Any) -> Tensor:
    """Elementwise minimum ignoring nan: ``minimum`` under two ``select``s."""
    return _nan_ignoring("numpy.fmin", "minimum", "and", x1, x2)


@numpy_api
def clip(
    a: Any,
    a_min: Any = None,
    a_max: Any = None,
    *,
    min: Any = None,
    max: Any = None,
) -> Tensor:
    """``minimum(maximum(a, a_min), a_max)``; a ``None`` bound is no bound (``min``/``max``
    are NumPy 2's other spellings of the bounds)."""
    op = "numpy.clip"
    if a_min is not None and min is not None:
        raise DtypeError("pass a_min or min, not both", op=op)
    if a_max is not None and max is not None:
        raise DtypeError("pass a_max or max, not both", op=op)
    low = a_min if a_min is not None else min
    high = a_max if a_max is not None else max
    result = to_tensor(a, op)
    if low is not None:
        result = elementwise("maximum", result, low)
    if high is not None:
        result = elementwise("minimum", result, high)
    return result


@numpy_api
def where(condition: Any, x: Any = None, y: Any = None, /) -> Tensor:
    """``x`` where ``condition`` (nonzero) holds, else ``y``, broadcast together: the
    ``select`` primitive (strict: both evaluated).  The one-argument form (``nonzero``)
    has a data-dependent shape and is not supported."""
    op = "numpy.where"
    if x is None or y is None:
        raise UnsupportedError(
            "where(condition) without x and y is nonzero(condition), whose shape depends "
            "on the data: pass both x and y",
            op=op,
        )
    return elementwise("select", truthy(condition, op), x, y)


@numpy_api
def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Tensor:
    """The first choice whose condition holds, else ``default``: nested ``select``
    primitives, the last condition innermost."""
    op = "numpy.select"
    conditions, choices = list(condlist), list(choicelist)
    if len(conditions) != len(choices):
        raise ShapeError(
            f"list of cases must be same length as list of conditions, got "
            f"{len(choices)} and {len(conditions)}",
            op=op,
        )
    if not conditions:
        raise ShapeError("select with an empty condition list is not possible", op=op)
    tensors = [to_tensor(c, op) for c in conditions]
    for k, c in enumerate(tensors):
        if not is_bool(c):
            raise DtypeError(f"invalid entry {k} in condlist: should be boolean ndarray", op=op)
    result: Any = default
    for c, v in zip(reversed(tensors), reversed(choices), strict=True):
        result = elementwise("select", c, v, result)
    assert isinstance(result, Tensor)
    return result


@numpy_api
def logaddexp(x1: Any, x2: Any) -> Tensor:
    """``log(exp(x1) + exp(x2))``, stably and with the smooth derivative everywhere:
    see :func:`_log_add`.  The value is NumPy's (``max + log1p(exp(-|x1 - x2|))``, and
    ``x1 + log 2`` at a tie)."""
    a, b = float_operands("numpy.logaddexp", x1, x2)
    return _log_add(a, b, da.exp, da.expm1, da.log1p)


@numpy_api
def logaddexp2(x1: Any, x2: Any) -> Tensor:
    """``log2(2**x1 + 2**x2)``, stably and with the smooth derivative everywhere: see
    :func:`_log_add`.  The value is NumPy's (``max + log1p(2**-|x1 - x2|) / log 2``, and
    ``x1 + 1`` at a tie)."""
    a, b = float_operands("numpy.logaddexp2", x1, x2)
    return _log_add(
        a,
        b,
        lambda t: elementwise("pow", 2.0, t),
        lambda t: elementwise("pow", 2.0, t) - 1.0,
        lambda t: da.log1p(t) * (1.0 / _LN2),
    )


def _log_add(
    a: Tensor,
    b: Tensor,
    power: Callable[[Tensor], Tensor],
    power_minus_one: Callable[[Tensor], Tensor],
    log1p_base: Callable[[Tensor], Tensor],
) -> Tensor:
    """``log_B(B**a + B**b)`` (``power(t) = B**t``, ``log1p_base(t) = log_B(1 + t)``) as
    ``m + log1p_base(B**(lo - m) + (B**(hi - m) - 1))``, with ``hi``/``lo`` the larger
    and smaller argument (a ``select`` on ``a >= b``, each argument to its own slot) and
    the shift ``m = stop_gradient(hi)``.  Its value is ``hi + log1p_base(B**(lo - hi))``,
    NumPy's bits (``B**0 - 1`` is exactly 0); as a function of ``a`` and ``b``
    it is ``log_B(B**a + B**b)`` itself on both sides of the ``select``, so every
    derivative is the smooth one, a tie included (``(1/2, 1/2)``, where a ``max`` or
    ``|a - b|`` in the derivative gives ``(1, 0)``: book/rules.md §3.2, as JAX's
    ``custom_jvp``).  Where the larger argument is not finite (an argument +inf, both
    -inf, nan) the result is the larger one, ``+-inf`` or nan as NumPy's; the smooth side
    then reads 0s, so its derivative is finite and the unselected side adds 0 (the
    double ``where``)."""
    finite = (a < math.inf) & (b < math.inf) & ((a > -math.inf) | (b > -math.inf))
    safe_a = elementwise("select", finite, a, 0.0)
    safe_b = elementwise("select", finite, b, 0.0)
    first = safe_a >= safe_b
    hi = elementwise("select", first, safe_a, safe_b)
    lo = elementwise("select", first, safe_b, safe_a)
    m = da.stop_gradient(hi)
    smooth = m + log1p_base(power(lo - m) + power_minus_one(hi - m))
    larger = elementwise("select", a > b, a, elementwise("select", b > a, b, 0.5 * a + 0.5 * b))
    return elementwise("select", finite, smooth, larger)


@numpy_api
def nan_to_num(
    x: Any,
    copy: bool = True,
    nan: float = 0.0,
    posinf: float | None = None,
    neginf: float | None = None,
) -> Tensor:
    """nan, +inf and -inf replaced (by ``nan``, the largest and the least finite value
    by default): three ``select``s.  Int and bool arrays are unchanged."""
    t = to_tensor(x, "numpy.nan_to_num")
    if not t.term.dtype.is_float:
        return t
    info = np.finfo(t.dtype)
    high = float(info.max) if posinf is None else posinf
    low = float(info.min) if neginf is None else neginf
    result = elementwise("select", t != t, nan, t)
    result = elementwise("select", t == math.inf, high, result)
    return elementwise("select", t == -math.inf, low, result)


# --------------------------------------------------------------------------------------
# Division with remainder, hypot, heaviside, sinc
# --------------------------------------------------------------------------------------


def _int_by_zero(a: Tensor, b: Tensor, result: Tensor) -> Tensor:
    """NumPy's integer division by 0 is 0 (the core language's total rule gives ``a``)."""
    return elementwise("select", b == 0, 0, result)


def _division(op: str, x1: Any, x2: Any) -> tuple[Tensor, Tensor]:
    if _both_bool(x1, x2, op) is not None:
        raise UnsupportedDtypeError(
            "NumPy divides bool arrays in int8, which dualarr does not support", op=op
        )
    a, b = operands(op, OpKind.NUM_BINARY, x1, x2)
    return a, b


@numpy_api
def remainder(x1: Any, x2: Any) -> Tensor:
    """Elementwise remainder with the sign of the divisor: ``x1 - x2 * floor(x1 / x2)``
    on floats (derivative 1 and ``-floor(x1 / x2)``), ``rem`` on ints (0 for ``x % 0``,
    as NumPy)."""
    a, b = _division("numpy.remainder", x1, x2)
    result = da.remainder(a, b)
    return result if a.term.dtype.is_float else _int_by_zero(a, b, result)


@numpy_api
def mod(x1: Any, x2: Any) -> Tensor:
    """The same as :func:`remainder`."""
    a, b = _division("numpy.mod", x1, x2)
    result = da.remainder(a, b)
    return result if a.term.dtype.is_float else _int_by_zero(a, b, result)


@numpy_api
def fmod(x1: Any, x2: Any) -> Tensor:
    """Elementwise remainder with the sign of the dividend: ``x1 - x2 * trunc(x1 / x2)``
    on floats, ``rem`` corrected towards zero on ints (0 for ``x % 0``)."""
    a, b = _division("numpy.fmod", x1, x2)
    if a.term.dtype.is_float:
        return a - b * float_trunc(a / b)
    r = elementwise("rem", a, b)
    fix = (r != 0) & ((r < 0) != (a < 0))
    return _int_by_zero(a, b, elementwise("select", fix, r - b, r))


@numpy_api
def floor_divide(x1: Any, x2: Any) -> Tensor:
    """Elementwise ``floor(x1 / x2)``: on floats ``floor`` of ``div`` as a float
    (derivative 0), on ints ``quot`` (0 for ``x // 0``, as NumPy)."""
    a, b = _division("numpy.floor_divide", x1, x2)
    result = da.floor_divide(a, b)
    return result if a.term.dtype.is_float else _int_by_zero(a, b, result)


@numpy_api
def hypot(x1: Any, x2: Any) -> Tensor:
    """``sqrt(x1² + x2²)`` without overflow: both scaled by ``s = max(|x1|, |x2|)``
    (under ``stop_gradient``, so every derivative is exact, a tie ``|x1| == |x2|``
    included), a subnormal ``s`` first by an exact power of two (so ``1 / s`` in the
    derivative does not overflow).  An infinite argument gives inf, nan gives nan and
    ``(0, 0)`` gives 0 with derivative 0 (the kink's, as ``jnp.hypot``'s); where it
    does not divide, the division reads 1s (so its derivative adds 0, not nan).  The
    derivative at a subnormal ``s`` is within the few bits such an argument has."""
    a, b = float_operands("numpy.hypot", x1, x2)
    info = np.finfo(a.dtype)
    scale = da.stop_gradient(da.maximum(da.abs(a), da.abs(b)))
    divides = (scale > 0) & (scale < math.inf)
    lift = da.constant(np.asarray(2.0 ** (info.nmant + 1), a.dtype))
    factor = elementwise("select", scale < float(info.tiny), lift, 1.0)
    safe = elementwise("select", divides, scale * factor, 1.0)
    p = elementwise("select", divides, a, 1.0) * factor / safe
    q = elementwise("select", divides, b, 1.0) * factor / safe
    result = elementwise("select", divides, safe * da.sqrt(p * p + q * q) / factor, scale)
    infinite = (da.abs(a) == math.inf) | (da.abs(b) == math.inf)
    return elementwise("select", infinite, math.inf, result)


@numpy_api
def heaviside(x1: Any, x2: Any) -> Tensor:
    """The step function: 0 for ``x1 < 0``, ``x2`` at 0, 1 for ``x1 > 0`` (nan for nan):
    nested ``select``s."""
    a, b = float_operands("numpy.heaviside", x1, x2)
    step = elementwise("select", a < 0, 0.0, elementwise("select", a > 0, 1.0, b))
    return elementwise("select", a != a, a, step)


@numpy_api
def sinc(x: Any) -> Tensor:
    """``sin(pi x) / (pi x)``, 1 at 0: the ``sinc`` primitive (NumPy's bits), whose
    partial is the primitive of its first derivative, and so on
    (:func:`dualarr.lang.primitives.sinc_derivative`), so every derivative order is
    right at the removable singularity 0, as ``jnp.sinc``'s (a ``select`` with a safe
    divisor gives 0 for the second derivative there, not ``-pi**2 / 3``)."""
    return elementwise(sinc_derivative(0), as_float(x, "numpy.sinc"))


# --------------------------------------------------------------------------------------
# Predicates, comparisons and logic (bool results, no derivative)
# --------------------------------------------------------------------------------------


@numpy_api
def isnan(x: Any) -> Tensor:
    """Elementwise ``x != x`` (False for ints and bools)."""
    t = to_tensor(x, "numpy.isnan")
    return t != t


@numpy_api
def isinf(x: Any) -> Tensor:
    """Elementwise ``|x| == inf`` (False for ints and bools)."""
    t = to_tensor(x, "numpy.isinf")
    if not t.term.dtype.is_float:
        return t != t
    return da.abs(t) == math.inf


@numpy_api
def isfinite(x: Any) -> Tensor:
    """Elementwise ``|x| < inf`` (False for nan; True for ints and bools)."""
    t = to_tensor(x, "numpy.isfinite")
    if not t.term.dtype.is_float:
        return t == t
    return da.abs(t) < math.inf


def _comparison(name: str, primitive: str, symbol: str) -> Callable[[Any, Any], Tensor]:
    def fn(x1: Any, x2: Any) -> Tensor:
        return elementwise(primitive, x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``x1 {symbol} x2``, a bool (the ``{primitive}`` primitive)."
    return numpy_api(fn)


equal = _comparison("equal", "eq", "==")
not_equal = _comparison("not_equal", "ne", "!=")
less = _comparison("less", "lt", "<")
less_equal = _comparison("less_equal", "le", "<=")
greater = _comparison("greater", "gt", ">")
greater_equal = _comparison("greater_equal", "ge", ">=")


@numpy_api
def logical_and(x1: Any, x2: Any) -> Tensor:
    """Elementwise logical and of the truth values (nonzero is True): ``and``."""
    op = "numpy.logical_and"
    return elementwise("and", truthy(x1, op), truthy(x2, op))


@numpy_api
def logical_or(x1: Any, x2: Any) -> Tensor:
    """Elementwise logical or of the truth values: ``or``."""
    op = "numpy.logical_or"
    return elementwise("or", truthy(x1, op), truthy(x2, op))


@numpy_api
def logical_xor(x1: Any, x2: Any) -> Tensor:
    """Elementwise logical exclusive or of the truth values: ``ne`` on bools."""
    op = "numpy.logical_xor"
    return elementwise("ne", truthy(x1, op), truthy(x2, op))


@numpy_api
def logical_not(x: Any) -> Tensor:
    """Elementwise logical not of the truth value: ``not``."""
    return elementwise("not", truthy(x, "numpy.logical_not"))


# --------------------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------------------


@numpy_api
def astype(x: Any, dtype: Any, /, *, copy: bool = True) -> Tensor:
    """``x`` as ``dtype``: to bool ``x != 0``; float to int rounds towards zero
    (``floor``); int and bool to float, and float32 ↔ float64, ``fromIntegral``; bool to
    int ``select``.  Every integer type is the core language's int64."""
    op = "numpy.astype"
    return convert(to_tensor(x, op), static_dtype(dtype, op), op)



# --------------------------------------------------------------------------------------
# Floating-point manipulation and more ufuncs (issue #39): copysign, ldexp, signbit,
# nextafter, spacing, isclose, divmod, modf
# --------------------------------------------------------------------------------------

__all__ += [
    "copysign",
    "divmod",
    "isclose",
    "ldexp",
    "modf",
    "nextafter",
    "signbit",
    "spacing",
]


def _sign_bit(t: Tensor) -> Tensor:
    """Whether the float ``t`` is negative, ``-0.0`` included (``1 / -0.0`` is ``-inf``):
    ``t < 0 | (t == 0 & 1 / t < 0)``.  A nan's sign bit is not observable by arithmetic,
    so a negative nan counts as positive (NumPy reads the bit)."""
    zero = t == 0
    inverse = 1.0 / elementwise("select", zero, t, 1.0)
    return (t < 0) | (zero & (inverse < 0))


@numpy_api
def signbit(x: Any) -> Tensor:
    """Elementwise whether the sign bit is set: ``x < 0``, and ``x == -0.0`` (told from
    ``+0.0`` by ``1 / x``).  A bool, with no derivative; ints and bools compare with 0.
    A negative nan's bit is not observable without a bit cast: it gives False where
    NumPy gives True."""
    t = to_tensor(x, "numpy.signbit")
    if not t.term.dtype.is_float:
        return t < 0 if not is_bool(t) else t != t
    return _sign_bit(t)


@numpy_api
def copysign(x1: Any, x2: Any) -> Tensor:
    """``|x1|`` with the sign of ``x2`` (``-0.0`` negative): ``select(signbit(x2), -|x1|,
    |x1|)``, as ``jnp.copysign``, so the derivative wrt ``x1`` is ``sign(x1)`` times the
    sign taken and wrt ``x2`` is 0.  A negative nan ``x2`` counts as positive
    (:func:`signbit`)."""
    a, b = float_operands("numpy.copysign", x1, x2)
    magnitude = da.abs(a)
    return elementwise("select", _sign_bit(da.stop_gradient(b)), -magnitude, magnitude)


def _power_of_two(exponent: Tensor, dtype: DType) -> Tensor:
    """``2.0 ** exponent`` for an int ``exponent``, exact (``pow`` of 2 to a whole
    float)."""
    two = da.constant(np.asarray(2.0, dtype.numpy()))
    return elementwise("pow", two, da.to_float(exponent, dtype.numpy()))


@numpy_api
def ldexp(x1: Any, x2: Any) -> Tensor:
    """``x1 * 2**x2`` for an int ``x2``, rounded once as NumPy's: ``x1`` times the exact
    power ``2**x2`` where that is a normal float64; beyond (``|x2| > 1022``) times two
    exact powers ``2**h`` and ``2**(x2 - h)``, ``h = x2 // 2``, so the result is NumPy's
    where ``2**x2`` alone over- or underflows.  float32 is computed in float64 and
    rounded once at the end.  A zero, infinite or nan ``x1`` is itself.  Derivative
    ``2**x2`` wrt ``x1``; ``x2`` is an int (a float ``x2`` is NumPy's ``TypeError``, here
    a :class:`DtypeError`)."""
    op = "numpy.ldexp"
    b = x2 if isinstance(x2, int) and not isinstance(x2, bool) else to_tensor(x2, op)
    if isinstance(b, Tensor) and b.term.dtype is not DType.INT64:
        raise DtypeError(f"the exponent x2 must be an int array, got {b.term.dtype}", op=op)
    a = as_float(x1, op)
    exponent = to_tensor(b, op)
    shape = common_shape(op, [a.shape, exponent.shape])
    a, exponent = Tensor(lift_shape(a.term, shape)), Tensor(lift_shape(exponent.term, shape))
    wide = convert(a, DType.FLOAT64, op)
    clamped = da.minimum(da.maximum(exponent, -1022), 1023)
    once = wide * _power_of_two(clamped, DType.FLOAT64)
    half = da.floor_divide(exponent, 2)
    twice = wide * _power_of_two(half, DType.FLOAT64) * _power_of_two(
        exponent - half, DType.FLOAT64
    )
    plain = (wide == 0) | (da.abs(wide) == math.inf) | (wide != wide) | (clamped == exponent)
    return convert(elementwise("select", plain, once, twice), a.term.dtype, op)


def _next_toward(x: Tensor, y: Tensor) -> Tensor:
    """The float next to ``x`` in the direction of ``y`` (no derivative): ``x`` plus or
    minus the spacing of floats at ``|x|``, ``2**(e - p)`` for ``e`` the exponent of
    ``|x|`` (``floor(log2|x|)``, corrected by one either way by comparing with ``2**e``,
    and at least the least normal exponent, so subnormals step by the least subnormal)
    and ``p`` the mantissa bits; towards zero from a power of two the step is half as
    large.  From 0 the step is the least subnormal, signed as ``y``; from ``±inf`` it is
    ``±max``; ``x == y`` gives ``y``; nan gives nan.  The sums are exact (a float plus
    its own spacing)."""
    info = np.finfo(x.dtype)
    dtype = x.term.dtype
    p, low_exponent = int(info.nmant), int(info.minexp)
    magnitude = da.abs(x)
    finite = magnitude < math.inf
    clamped = da.minimum(
        da.maximum(elementwise("select", finite, magnitude, 1.0), float(info.tiny)),
        float(info.max),
    )
    exponent = da.floor(da.log(clamped) * (1.0 / _LN2))
    exponent = exponent - elementwise("select", _power_of_two(exponent, dtype) > clamped, 1, 0)
    exponent = exponent + elementwise(
        "select", _power_of_two(exponent + 1, dtype) <= clamped, 1, 0
    )
    exponent = da.maximum(exponent, low_exponent)
    up = _power_of_two(exponent - p, dtype)
    boundary = (magnitude == _power_of_two(exponent, dtype)) & (exponent > low_exponent)
    down = elementwise("select", boundary, _power_of_two(exponent - p - 1, dtype), up)
    away = (y > x) == (x > 0)
    step = elementwise("select", away, up, down)
    result = x + elementwise("select", y > x, step, -step)
    zeros = da.constant(np.asarray([0.0, -0.0], x.dtype))  # towards 0 keeps x's sign
    result = elementwise(
        "select", result == 0, elementwise("select", x < 0, zeros[1], zeros[0]), result
    )
    tiny = da.constant(np.nextafter(np.zeros((), x.dtype), np.ones((), x.dtype)))
    result = elementwise("select", x == 0, elementwise("select", y > 0, tiny, -tiny), result)
    largest = da.constant(np.asarray(info.max, x.dtype))
    result = elementwise(
        "select", finite, result, elementwise("select", x > 0, largest, -largest)
    )
    result = elementwise("select", x == y, y, result)
    return elementwise("select", (x != x) | (y != y), x + y, result)


@numpy_api
def nextafter(x1: Any, x2: Any) -> Tensor:
    """The next float after ``x1`` towards ``x2``, elementwise: ``x1`` plus a step
    computed from ``|x1|`` (:func:`_next_toward`: ``log``, ``floor``, ``pow`` of 2 and
    ``select``s, no bit cast).  Its derivative is 1 wrt ``x1`` (the step is constant
    between floats) and 0 wrt ``x2``."""
    a, b = float_operands("numpy.nextafter", x1, x2)
    fixed = da.stop_gradient(a)
    exact = _next_toward(fixed, da.stop_gradient(b))
    step = exact - fixed
    # from an infinite or nan x1, and to a signed zero, the value is the exact one
    moves = (da.abs(fixed) < math.inf) & (exact != 0)
    return elementwise("select", moves, a + step, exact)


@numpy_api
def spacing(x: Any) -> Tensor:
    """The distance from ``x`` to the next float away from zero (towards ``-inf`` for
    ``x < 0``, so ``spacing(-1) < 0``, ``spacing(-0.0) > 0`` as NumPy's): the step of
    :func:`nextafter`, derivative 0; nan for ``±inf`` and nan, inf at the largest
    float."""
    t = da.stop_gradient(as_float(x, "numpy.spacing"))
    infinities = da.constant(np.asarray([-math.inf, math.inf], t.dtype))
    target = elementwise("select", t < 0, infinities[0], infinities[1])
    return _next_toward(t, Tensor(lift_shape(target.term, t.shape))) - t


@numpy_api
def isclose(
    a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False
) -> Tensor:
    """Elementwise ``|a - b| <= atol + rtol * |b|`` for finite ``b``, or ``a == b`` (so
    equal infinities are close), as NumPy's ``isclose`` (ints and bools compared as
    float64); nans are close to each other only with ``equal_nan``.  A bool, with no
    derivative."""
    op = "numpy.isclose"
    raw = [v if isinstance(v, int | float) else to_tensor(v, op) for v in (a, b)]
    floats = [
        convert(v, DType.FLOAT64, op) if isinstance(v, Tensor) and not v.term.dtype.is_float
        else v
        for v in raw
    ]
    x, y = (da.stop_gradient(t) for t in operands(op, OpKind.NUM_BINARY, *floats))
    finite = da.abs(y) < math.inf
    close = (da.abs(x - y) <= atol + rtol * da.abs(y)) & finite
    result: Tensor = close | (x == y)
    if equal_nan:
        result = result | ((x != x) & (y != y))
    return result


@numpy_api
def divmod(x1: Any, x2: Any) -> tuple[Tensor, Tensor]:
    """``(floor_divide(x1, x2), remainder(x1, x2))``, NumPy's two-output ufunc."""
    return floor_divide(x1, x2), remainder(x1, x2)


@numpy_api
def modf(x: Any) -> tuple[Tensor, Tensor]:
    """The fractional and whole parts of ``x``, both with the sign of ``x``:
    ``(x - trunc(x), trunc(x))``, the fraction of ``±inf`` being ``±0``.  The
    fraction's derivative is 1, the whole part's 0.  Ints give float64."""
    t = as_float(x, "numpy.modf")
    whole = float_trunc(t)
    fraction = t - whole
    zeros = da.constant(np.asarray([0.0, -0.0], t.dtype))
    zero = elementwise("select", _sign_bit(da.stop_gradient(t)), zeros[1], zeros[0])
    fixed = da.stop_gradient(t)
    # a zero fraction of a finite x: ±0 (x's sign) with derivative 1, as jnp.modf's
    tied = elementwise("select", _sign_bit(fixed), -(fixed - t), t - fixed)
    signed = elementwise("select", fraction == 0, tied, fraction)
    signed = elementwise("select", da.abs(t) == math.inf, zero, signed)
    return signed, elementwise("select", whole == 0, zero, whole)

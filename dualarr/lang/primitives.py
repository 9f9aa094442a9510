"""One record per elementwise primitive (paper Fig. 7's ``op``, Fig. 14's derivatives).

Every interpretation of an elementwise primitive reads its :class:`Primitive` record
in :data:`REGISTRY`, and nothing else: the term constructor (arity and element types),
tracing (``da.exp``, NumPy ufuncs on traced values), the printer and the drawing (infix
symbol), the evaluator and the array-API algebra (``impl``), generated code (the
namespace function, or ``helpers.elementwise``), dual arrays (``partials``, book/rules.md
§3.2), the bot (``zero_preserving``) and the SymPy interpretation (``sympy``).  Adding
a primitive is one :func:`register` call (``da.primitive`` for users), as JAX's
primitive tables.

Implementations are written against an array-API namespace ``xp`` (NumPy, CuPy,
``array_api_strict``): ``impl(xp, *args)``, total (book/rules.md §1.3).  Partial
derivatives are functions ``f(m, *args, y)`` over any algebra, written with operators
and ``m.<primitive>`` (:class:`dualarr.ad.dual.Math`): ``sigmoid`` is ``y * (1 - y)``.
SymPy spellings are ``f(s, *args)`` with ``s`` the SymPy interpretation's toolkit
(``s.sp`` is SymPy itself).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .errors import DualarrError

Array = Any


class OpKind(Enum):
    """How an elementwise primitive types its arguments (its dtype rule)."""

    FLOAT_UNARY = "float -> float"
    NUM_UNARY = "num -> num"
    NUM_BINARY = "num, num -> num"
    FLOAT_BINARY = "float, float -> float"
    INT_BINARY = "int, int -> int"
    COMPARE = "a, a -> bool"
    LOGIC_UNARY = "bool -> bool"
    LOGIC_BINARY = "bool, bool -> bool"
    SELECT = "bool, a, a -> a"

    @property
    def arity(self) -> int:
        if self in (OpKind.FLOAT_UNARY, OpKind.NUM_UNARY, OpKind.LOGIC_UNARY):
            return 1
        return 3 if self is OpKind.SELECT else 2


IDENTITY = "identity"
"""A partial derivative of 1: the argument's Delta passes unchanged (no ``Scale``)."""

Partial = Callable[..., Any] | str | None
"""One argument's partial derivative: ``f(m, *args, y)`` giving the factor that scales
that argument's Delta (a value of ``m`` or a number), :data:`IDENTITY`, or None where
the result does not depend on the argument differentiably."""


@dataclass(frozen=True)
class NamespaceCall:
    """An implementation that is one function of the namespace, ``xp.<name>(*args)``
    (generated code spells it so)."""

    name: str

    def __call__(self, xp: Any, *args: Array) -> Array:
        return getattr(xp, self.name)(*args)


@dataclass(frozen=True)
class Primitive:
    """An elementwise primitive: everything every interpretation needs to know."""

    name: str
    """The core-language name, as printed (``exp``, ``add``)."""
    kind: OpKind
    """Arity and dtype rule."""
    impl: Callable[..., Array]
    """``impl(xp, *args)``: the primal meaning on arrays of a namespace, total."""
    partials: tuple[Partial, ...] = ()
    """One per argument for a float-valued primitive (empty for int and bool ones)."""
    sympy: Callable[..., Any] | None = None
    """``sympy(s, *args)``: the meaning on SymPy expressions (None: not available)."""
    doc: str = ""
    function: str | None = None
    """The name of its tracing function (``da.exp``), or None (written as an operator)."""
    infix: str | None = None
    precedence: int = 10
    zero_preserving: bool = False
    """``op(+0, …, +0) == +0`` (sign included): indexing commutes with it even out of
    range, where every argument reads 0 (the bot, book/rules.md §2.2)."""
    ufuncs: tuple[str, ...] = ()
    """The NumPy ufuncs that mean the same on traced values (``np.exp(t)``)."""

    @property
    def arity(self) -> int:
        return self.kind.arity


REGISTRY: dict[str, Primitive] = {}
"""Every elementwise primitive, by core name."""


BUILT_IN: frozenset[str] = frozenset()
"""The names of dualarr's own primitives (filled below): a user's primitive may not
take one of them, but may be defined again (a re-run notebook cell)."""


def register(primitive: Primitive) -> Primitive:
    """Add ``primitive`` to :data:`REGISTRY` (a built-in name is defined once)."""
    known = REGISTRY.get(primitive.name)
    if known is not None and known != primitive and primitive.name in BUILT_IN:
        raise DualarrError(
            f"{primitive.name!r} is one of dualarr's elementwise primitives; choose another name",
            op="primitive",
        )
    if not primitive.name.isidentifier():
        raise DualarrError(
            f"a primitive's name must be an identifier, got {primitive.name!r}", op="primitive"
        )
    expected = primitive.arity if primitive.kind.name.startswith(("FLOAT", "NUM")) else 0
    if primitive.partials and len(primitive.partials) != primitive.arity:
        raise DualarrError(
            f"{primitive.name} takes {primitive.arity} arguments but has "
            f"{len(primitive.partials)} partial derivatives",
            op="primitive",
        )
    if expected and not primitive.partials:
        raise DualarrError(
            f"{primitive.name} has float results: give one partial derivative per argument",
            op="primitive",
        )
    REGISTRY[primitive.name] = primitive
    return primitive


# --------------------------------------------------------------------------------------
# Implementations that are not one namespace function
# --------------------------------------------------------------------------------------
# Python scalars in ``where`` (array API 2024.12): no array of ones or zeros to allocate.


def _quot(xp: Any, a: Array, b: Array) -> Array:
    """Integer floor division with ``a // 0 == a``."""
    zero = b == 0
    return xp.where(zero, a, xp.floor_divide(a, xp.where(zero, 1, b)))


def _rem(xp: Any, a: Array, b: Array) -> Array:
    """Integer remainder (the sign of the divisor, as Python) with ``a % 0 == a``."""
    zero = b == 0
    return xp.where(zero, a, xp.remainder(a, xp.where(zero, 1, b)))


def _sigmoid(xp: Any, a: Array) -> Array:
    return 1.0 / (1.0 + xp.exp(-a))


def _recip(xp: Any, a: Array) -> Array:
    return 1.0 / a


def _identity(xp: Any, a: Array) -> Array:
    return a


# --------------------------------------------------------------------------------------
# The built-in primitives
# --------------------------------------------------------------------------------------

_U, _N = OpKind.FLOAT_UNARY, OpKind.NUM_UNARY


def _unary(
    name: str,
    partial: Partial,
    sympy: Callable[..., Any],
    doc: str,
    *,
    kind: OpKind = _U,
    impl: Callable[..., Array] | None = None,
    function: str | None = None,
    zero: bool = False,
    ufunc: str | None = None,
) -> Primitive:
    return register(
        Primitive(
            name,
            kind,
            impl if impl is not None else NamespaceCall(name),
            (partial,),
            sympy,
            doc,
            function=function if function is not None else name,
            zero_preserving=zero,
            ufuncs=() if ufunc == "" else (ufunc if ufunc is not None else name,),
        )
    )


_unary("exp", lambda m, x, y: y, lambda s, x: s.sp.exp(x), "Elementwise e**x.")
_unary("log", lambda m, x, y: 1 / x, lambda s, x: s.sp.log(x), "Elementwise natural logarithm.")
_unary(
    "log1p",
    lambda m, x, y: 1 / (x + 1),
    lambda s, x: s.sp.log(1 + x),
    "Elementwise log(1 + x).",
    zero=True,
)
_unary(
    "expm1",
    lambda m, x, y: y + 1,
    lambda s, x: s.sp.exp(x) - 1,
    "Elementwise e**x - 1.",
    zero=True,
)
_unary("sin", lambda m, x, y: m.cos(x), lambda s, x: s.sp.sin(x), "Elementwise sine.", zero=True)
_unary("cos", lambda m, x, y: -m.sin(x), lambda s, x: s.sp.cos(x), "Elementwise cosine.")
_unary(
    "tan", lambda m, x, y: 1 + y * y, lambda s, x: s.sp.tan(x), "Elementwise tangent.", zero=True
)
_unary(
    "asin",
    lambda m, x, y: 1 / m.sqrt(1 - x * x),
    lambda s, x: s.sp.asin(x),
    "Elementwise arcsine.",
    zero=True,
    ufunc="arcsin",
)
_unary(
    "acos",
    lambda m, x, y: -(1 / m.sqrt(1 - x * x)),
    lambda s, x: s.sp.acos(x),
    "Elementwise arccosine.",
    ufunc="arccos",
)
_unary(
    "atan",
    lambda m, x, y: 1 / (1 + x * x),
    lambda s, x: s.sp.atan(x),
    "Elementwise arctangent.",
    zero=True,
    ufunc="arctan",
)
_unary(
    "sinh",
    lambda m, x, y: m.cosh(x),
    lambda s, x: s.sp.sinh(x),
    "Elementwise hyperbolic sine.",
    zero=True,
)
_unary(
    "cosh", lambda m, x, y: m.sinh(x), lambda s, x: s.sp.cosh(x), "Elementwise hyperbolic cosine."
)
_unary(
    "tanh",
    lambda m, x, y: 1 - y * y,
    lambda s, x: s.sp.tanh(x),
    "Elementwise hyperbolic tangent.",
    zero=True,
)
_unary(
    "sqrt",
    lambda m, x, y: 1 / (2 * y),
    lambda s, x: s.sp.sqrt(x),
    "Elementwise square root.",
    zero=True,
)
_unary(
    "recip",
    lambda m, x, y: -(y * y),
    lambda s, x: 1 / x,
    "Elementwise 1/x.",
    impl=_recip,
    ufunc="reciprocal",
)
_unary(
    "sigmoid",
    lambda m, x, y: y * (1 - y),
    lambda s, x: 1 / (1 + s.sp.exp(-x)),
    "Elementwise logistic function 1/(1 + e**-x).",
    impl=_sigmoid,
    ufunc="",
)
_unary(
    "stop_gradient",
    None,  # a constant to differentiation
    lambda s, x: s.stop_gradient(x),
    "The identity, seen by differentiation as a constant (derivative 0), like "
    "``jax.lax.stop_gradient``.",
    impl=_identity,
    ufunc="",
)
_unary(
    "neg",
    lambda m, x, y: -1,
    lambda s, x: -x,
    "Elementwise negation.",
    kind=_N,
    impl=NamespaceCall("negative"),
    function="negative",
    ufunc="negative",
)
_unary(
    "abs",
    lambda m, x, y: m.sign(x),
    lambda s, x: s.absolute(x),
    "Elementwise absolute value.",
    kind=_N,
    zero=True,
    ufunc="absolute",
)
_unary("sign", None, lambda s, x: s.sign(x), "Elementwise sign (-1, 0 or 1).", kind=_N, zero=True)
register(
    Primitive(
        "not",
        OpKind.LOGIC_UNARY,
        NamespaceCall("logical_not"),
        sympy=lambda s, x: s.sp.Not(x),
        doc="Elementwise logical not (bool).",
        function="logical_not",
        ufuncs=("logical_not",),
    )
)


def _binary(
    name: str,
    kind: OpKind,
    impl: Callable[..., Array],
    sympy: Callable[..., Any],
    partials: tuple[Partial, ...] = (),
    *,
    infix: str | None = None,
    precedence: int = 10,
    function: str | None = None,
    zero: bool = False,
    ufunc: str | tuple[str, ...] = (),
    doc: str = "",
) -> Primitive:
    ufuncs = (ufunc,) if isinstance(ufunc, str) else ufunc
    return register(
        Primitive(name, kind, impl, partials, sympy, doc, function, infix, precedence, zero, ufuncs)
    )


_B, _F = OpKind.NUM_BINARY, OpKind.FLOAT_BINARY
_binary(
    "add", _B, NamespaceCall("add"), lambda s, a, b: a + b, (IDENTITY, IDENTITY),
    infix="+", precedence=6, zero=True, ufunc="add",
)  # fmt: skip
_binary(
    "sub", _B, NamespaceCall("subtract"), lambda s, a, b: a - b,
    (IDENTITY, lambda m, a, b, y: -1),
    infix="-", precedence=6, zero=True, ufunc="subtract",
)  # fmt: skip
_binary(
    "mul", _B, NamespaceCall("multiply"), lambda s, a, b: a * b,
    (lambda m, a, b, y: b, lambda m, a, b, y: a),
    infix="*", precedence=7, zero=True, ufunc="multiply",
)  # fmt: skip
# ties go to the first argument, as horde-ad's max u v = if u >= v then u else v
_binary(
    "maximum", _B, NamespaceCall("maximum"), lambda s, a, b: s.piecewise_first(a, b, ">="),
    (lambda m, a, b, y: m.where(a >= b, 1, 0), lambda m, a, b, y: m.where(a >= b, 0, 1)),
    function="maximum", zero=True, ufunc="maximum",
    doc="Elementwise maximum (at a tie the derivative goes to the first argument).",
)  # fmt: skip
_binary(
    "minimum", _B, NamespaceCall("minimum"), lambda s, a, b: s.piecewise_first(a, b, "<="),
    (lambda m, a, b, y: m.where(a <= b, 1, 0), lambda m, a, b, y: m.where(a <= b, 0, 1)),
    function="minimum", zero=True, ufunc="minimum",
    doc="Elementwise minimum (at a tie the derivative goes to the first argument).",
)  # fmt: skip
_binary(
    "div", _F, NamespaceCall("divide"), lambda s, a, b: a / b,
    (lambda m, a, b, y: 1 / b, lambda m, a, b, y: -(y / b)),
    infix="/", precedence=7, ufunc=("divide", "true_divide"),
)  # fmt: skip
# d/dy x**y = x**y · log x with log x read as 0 where x == 0 (JAX's
# ``log(_replace_zero(x))``): 0 at x = 0 for y > 0, not 0 · -inf
_binary(
    "pow", _F, NamespaceCall("pow"), lambda s, a, b: s.exponent_pow(a, b),
    (
        lambda m, x, e, y: e * x ** (e - 1),
        lambda m, x, e, y: y * m.log(m.where(x == 0, 1, x)),
    ),
    infix="**", precedence=9, ufunc="power",
)  # fmt: skip
_binary(
    "atan2", _F, NamespaceCall("atan2"), lambda s, a, b: s.sp.atan2(a, b),
    (
        lambda m, a, b, y: b / (a * a + b * b),
        lambda m, a, b, y: -(a / (a * a + b * b)),
    ),
    function="atan2", zero=True, ufunc="arctan2",
    doc="Elementwise arctangent of y/x with the quadrant of (x, y): atan2(y, x).",
)  # fmt: skip
_binary(
    "quot", OpKind.INT_BINARY, _quot, lambda s, a, b: s.total_quot(a, b),
    infix="//", precedence=7, zero=True, ufunc="floor_divide",
)  # fmt: skip
_binary(
    "rem", OpKind.INT_BINARY, _rem, lambda s, a, b: s.total_rem(a, b),
    infix="%", precedence=7, zero=True, ufunc="remainder",
)  # fmt: skip
for _name, _ns, _symbol, _zero, _ufunc in (
    ("lt", "less", "<", True, "less"),
    ("le", "less_equal", "<=", False, "less_equal"),
    ("gt", "greater", ">", True, "greater"),
    ("ge", "greater_equal", ">=", False, "greater_equal"),
    ("eq", "equal", "==", False, "equal"),
    ("ne", "not_equal", "!=", True, "not_equal"),
):
    _binary(
        _name, OpKind.COMPARE, NamespaceCall(_ns),
        (lambda symbol: lambda s, a, b: s.compare(symbol, a, b))(_symbol),
        infix=_symbol, precedence=4, zero=_zero, ufunc=_ufunc,
    )  # fmt: skip
_binary(
    "and", OpKind.LOGIC_BINARY, NamespaceCall("logical_and"), lambda s, a, b: s.sp.And(a, b),
    infix="&&", precedence=3, zero=True, function="logical_and", ufunc="logical_and",
    doc="Elementwise logical and (bool).",
)  # fmt: skip
_binary(
    "or", OpKind.LOGIC_BINARY, NamespaceCall("logical_or"), lambda s, a, b: s.sp.Or(a, b),
    infix="||", precedence=2, zero=True, function="logical_or", ufunc="logical_or",
    doc="Elementwise logical or (bool).",
)  # fmt: skip
register(
    Primitive(
        "select",
        OpKind.SELECT,
        NamespaceCall("where"),
        (
            None,  # the condition is not differentiated
            lambda m, c, a, b, y: m.where(c, 1, 0),
            lambda m, c, a, b, y: m.where(c, 0, 1),
        ),
        lambda s, c, a, b: s.sp.Piecewise((a, c), (b, True)),
        zero_preserving=True,
    )
)

BUILT_IN = frozenset(REGISTRY)

__all__ = [
    "BUILT_IN",
    "IDENTITY",
    "REGISTRY",
    "NamespaceCall",
    "OpKind",
    "Partial",
    "Primitive",
    "register",
]

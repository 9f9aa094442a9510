"""One record per elementwise primitive (paper Fig. 7's ``op``, Fig. 14's derivatives).

Every interpretation of an elementwise primitive reads its :class:`Primitive` record
in :data:`REGISTRY`, and nothing else: the term constructor (arity and element types),
tracing (``da.exp``, NumPy ufuncs on traced values), the printer and the drawing (infix
symbol), the evaluator and the array-API algebra (``impl``), generated code (the
namespace function, or the implementation bound into the program), fused kernels (their
spelling ``kernel``, or the expansion of a :class:`Formula`, and ``kernel_cost``), dual
arrays (``partials``, book/rules.md §3.2), the bot (``zero_preserving``) and the SymPy
interpretation (``sympy``).  Adding a primitive is one :func:`register` call (for users
``da.primitive``, through :func:`define`, which checks the record where it is defined and
its implementation and partials where they run), as JAX's primitive tables.

Implementations are written against an array-API namespace ``xp`` (NumPy, CuPy,
``array_api_strict``): ``impl(xp, *args)``, total (book/rules.md §1.3); a primitive
that is an expression of others is a :class:`Formula`, written once over any namespace
(``sigmoid`` is ``1 / (1 + m.exp(-a))``), from which its implementation, its SymPy
spelling and its fused kernel's expansion all follow.  Partial
derivatives are functions ``f(m, *args, y)`` over any algebra, written with operators
and ``m.<primitive>`` (:class:`dualarr.ad.dual.Math`): ``sigmoid`` is ``y * (1 - y)``.
SymPy spellings are ``f(s, *args)`` with ``s`` the SymPy interpretation's toolkit
(``s.sp`` is SymPy itself).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .errors import (
    PartialDerivativeError,
    PrimitiveDefinitionError,
    PrimitiveResultError,
    format_shape,
    traceback_location,
)

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
class Formula:
    """An implementation that is an expression of other primitives, written once as
    ``expression(m, *args)`` over a namespace ``m``: an array namespace (NumPy, CuPy,
    ``array_api_strict``: the implementation), SymPy (the SymPy spelling) or a fused
    kernel's expression builder (its expansion, :mod:`dualarr.codegen.kernels`).  It is
    written with Python's arithmetic operators, integer literals (exact in SymPy, weak
    scalars of the array API) and the functions SymPy and NumPy both name as the
    registry does (``m.exp``, ``m.log``, ``m.sqrt``, ``m.sin``...)."""

    expression: Callable[..., Any]

    def __call__(self, xp: Any, *args: Array) -> Array:
        return self.expression(xp, *args)

    def sympy(self, s: Any, *args: Any) -> Any:
        """The SymPy spelling: the expression over SymPy itself (``s.sp``)."""
        return self.expression(s.sp, *args)


@dataclass(frozen=True)
class Infix:
    """A fused kernel's ``a op b``: the operator in numexpr's (Python's) syntax, and in
    C for CuPy (None: the same; a name, ``pow``, is a call)."""

    numexpr: str
    c: str | None = None


@dataclass(frozen=True)
class Prefix:
    """A fused kernel's ``op a`` (numexpr, and C: None for the same)."""

    numexpr: str
    c: str | None = None


@dataclass(frozen=True)
class Call:
    """A fused kernel's ``f(a, ...)`` (numexpr's function, and C's: None for the same)."""

    numexpr: str
    c: str | None = None


@dataclass(frozen=True)
class Where:
    """A fused kernel's ``where(c, a, b)``; C ``(c ? a : b)``."""


KernelSpelling = Infix | Prefix | Call | Where
"""How a fused kernel writes a primitive (:mod:`dualarr.codegen.kernels`)."""


class KernelCost(Enum):
    """What a primitive costs a fused kernel, per element (``benchmarks/bench_kernels.py``,
    ``results/kernels.txt``), in increasing order: a :class:`Formula` costs at least what
    the costliest primitive it applies costs."""

    CHEAP = 0
    """Arithmetic, comparisons, logic: fused, and a shared value applying it is
    recomputed by each kernel that reads it (as XLA does)."""
    TRANSCENDENTAL = 1
    """A function numexpr computes as NumPy does (``sqrt``, correctly rounded): fused,
    but a shared value applying it is stored once, not recomputed."""
    SCALAR_LOOP = 2
    """Transcendental, alone in its kernel, where NumPy's float64 loop is scalar (libm
    per element, one core: ``sin``, ``cos``): a vector math library's SIMD loop when
    one is installed, else numexpr, which calls the same C library on every core."""
    NUMPY_LOOP = 3
    """Transcendental, alone in its kernel: NumPy's SIMD loop computes it 2.7-4.8x
    faster than numexpr's scalar libm call, more than fusing saves, and it is the
    unfused program's bits (NumPy's ufunc, or the implementation calling NumPy's)."""


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
    """``sympy(s, *args)``: the meaning on SymPy expressions (None: the :class:`Formula`'s
    spelling when ``impl`` is one, else not available)."""
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
    kernel: KernelSpelling | None = None
    """How a fused kernel writes it; None: a :class:`Formula`'s expansion, or no kernel
    holds it (its result is an argument of the next one: ``maximum``, NumPy's NaN rule;
    integer ``quot``; a user's own)."""
    kernel_cost: KernelCost = KernelCost.CHEAP
    """What it costs a fused kernel (:class:`KernelCost`)."""

    def __post_init__(self) -> None:
        if self.sympy is None and isinstance(self.impl, Formula):
            object.__setattr__(self, "sympy", self.impl.sympy)

    @property
    def arity(self) -> int:
        return self.kind.arity


REGISTRY: dict[str, Primitive] = {}
"""Every elementwise primitive, by core name."""


BUILT_IN: frozenset[str] = frozenset()
"""The names of dualarr's own primitives (filled below): a user's primitive may not
take one of them, but may be defined again (a re-run notebook cell)."""


generation = 0
"""How many times a primitive has been defined again with another record (a re-run
notebook cell): part of ``da.jit``'s cache key, so a jitted function traces again."""


def register(primitive: Primitive) -> Primitive:
    """Add ``primitive`` to :data:`REGISTRY` (a built-in name is defined once; a user's
    name again replaces its record, and counts in :data:`generation`)."""
    global generation
    name = primitive.name
    if not isinstance(name, str) or not name.isidentifier():
        raise PrimitiveDefinitionError(
            f"a primitive's name is a string that is a Python identifier, got {name!r} "
            f"({type(name).__name__})",
            primitive=str(name),
        )
    known = REGISTRY.get(name)
    if known is not None and known != primitive and name in BUILT_IN:
        raise PrimitiveDefinitionError(
            f"{name!r} is one of dualarr's elementwise primitives; choose another name",
            primitive=name,
        )
    expected = primitive.arity if primitive.kind.name.startswith(("FLOAT", "NUM")) else 0
    if primitive.partials and len(primitive.partials) != primitive.arity:
        raise PrimitiveDefinitionError(
            f"{name} takes {primitive.arity} arguments but has "
            f"{len(primitive.partials)} partial derivatives",
            primitive=name,
        )
    if expected and not primitive.partials:
        raise PrimitiveDefinitionError(
            f"{name} has float results: give one partial derivative per argument",
            primitive=name,
        )
    if known is not None and known != primitive:
        generation += 1
    REGISTRY[name] = primitive
    return primitive


# --------------------------------------------------------------------------------------
# A user's primitive (``da.primitive``): checked where it is defined and where it runs
# --------------------------------------------------------------------------------------


def _defined_at(function: Any) -> str | None:
    """``file:line`` where ``function`` is defined, when it has Python code."""
    code = getattr(function, "__code__", None)
    return None if code is None else f"{code.co_filename}:{code.co_firstlineno}"


def _broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The broadcast shape of ``shapes`` (the array API's rule), or None."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[int] = []
    for axis in range(-rank, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def _library(value: Any) -> str:
    return type(value).__module__.split(".")[0]


def _same_backend(primitive: str, function: Callable[..., Any], args: Sequence[Any],
                  result: Any) -> None:
    """A NumPy result for arguments of another array library (Dask, CuPy) is a
    :class:`~dualarr.lang.errors.PrimitiveResultError`: NumPy has computed a lazy Dask
    array, or the result has left the device, where ``xp`` would have kept it."""
    foreign = [a for a in args if hasattr(a, "shape") and _library(a) != "numpy"]
    if foreign and _library(result) == "numpy" and hasattr(result, "shape"):
        where = _defined_at(function)
        kind = type(foreign[0])
        raise PrimitiveResultError(
            f"its implementation{f' ({where})' if where else ''} returned a NumPy array "
            f"for arguments of {kind.__module__}.{kind.__name__}: it computes with the "
            "namespace it is given (xp.exp(x), not np.exp(x) or np.asarray(x)), so that "
            "the result stays where its arguments are (on Dask: lazy)",
            primitive=primitive,
        )


@dataclass(frozen=True)
class UserImplementation:
    """A user's ``impl(xp, *args)``, checked on every call: an elementwise result has its
    arguments' broadcast shape (:class:`~dualarr.lang.errors.PrimitiveResultError`
    otherwise, instead of a silently broadcast wrong value)."""

    primitive: str
    function: Callable[..., Array]

    def __call__(self, xp: Any, *args: Array) -> Array:
        result = self.function(xp, *args)
        _same_backend(self.primitive, self.function, args, result)
        shapes = [tuple(getattr(a, "shape", ())) for a in args]
        expected = _broadcast(shapes)
        if expected is None:  # arguments that do not broadcast: the namespace's own error
            return result
        got = getattr(result, "shape", None)
        if got is None and isinstance(result, numbers.Number) and not expected:
            return result
        if got is None or tuple(got) != expected:
            what = f"shape {format_shape(got)}" if got is not None else type(result).__name__
            where = _defined_at(self.function)
            raise PrimitiveResultError(
                f"its implementation{f' ({where})' if where else ''} returned {what} for "
                f"arguments of shape {', '.join(format_shape(s) for s in shapes)}; an "
                f"elementwise implementation returns one element per element: shape "
                f"{format_shape(expected)}",
                primitive=self.primitive,
            )
        return result


@dataclass(frozen=True)
class UserPartial:
    """A user's partial derivative ``f(m, *args, y)``, checked on every call: it is
    written over the algebra ``m`` and returns a value of it or a number
    (:class:`~dualarr.lang.errors.PartialDerivativeError` otherwise: ``np.cos(x)`` for
    ``m.cos(x)``, a ``None`` that would be a NaN gradient)."""

    primitive: str
    position: int
    function: Callable[..., Any]

    def __call__(self, m: Any, *args: Any) -> Any:
        which = f"its partial derivative in argument {self.position + 1}"
        try:
            result = self.function(m, *args)
        except (TypeError, AttributeError) as error:
            raise PartialDerivativeError(
                f"{which} failed: {error}.  A partial is written over the algebra m it is "
                "given, with operators and m.<primitive> (m.cos(x), not np.cos(x) or "
                "math.cos(x))",
                primitive=self.primitive,
                location=traceback_location(error.__traceback__) or _defined_at(self.function),
            ) from None
        if isinstance(result, (numbers.Real, type(args[0]))):
            return result
        raise PartialDerivativeError(
            f"{which} returned {type(result).__name__}; it returns a value of the algebra "
            "m (built from its arguments with operators and m.<primitive>) or a number",
            primitive=self.primitive,
            location=_defined_at(self.function),
        )


def _check_takes(name: str, what: str, function: Any, count: int, spelled: str) -> None:
    """A :class:`PrimitiveDefinitionError` when ``function`` cannot take ``count``
    positional arguments."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return  # a builtin without a signature: its call will tell
    try:
        signature.bind(*range(count))
    except TypeError:
        raise PrimitiveDefinitionError(
            f"{what} takes {spelled} ({count} arguments), got a function of {signature}",
            primitive=name,
        ) from None


_USER_KINDS = {1: OpKind.FLOAT_UNARY, 2: OpKind.FLOAT_BINARY}


def define(
    name: str,
    impl: Callable[..., Array],
    partials: Sequence[Partial],
    *,
    sympy: Callable[..., Any] | None = None,
    doc: str = "",
    zero_preserving: bool = False,
) -> Primitive:
    """The record of a user's float primitive (``da.primitive``), checked and registered:
    its implementation and partials are wrapped in :class:`UserImplementation` and
    :class:`UserPartial`.  Defined again under the same name, the new record replaces
    the old one everywhere (compiled programs are keyed on the record)."""
    if not isinstance(name, str):
        raise PrimitiveDefinitionError(
            f"a primitive's name is a string, got {name!r} ({type(name).__name__})",
            primitive=repr(name),
        )
    if not callable(impl):
        raise PrimitiveDefinitionError(
            f"impl is a function of (xp, *args), got {type(impl).__name__}", primitive=name
        )
    if not isinstance(partials, tuple | list):
        hint = ": write (partial,)" if callable(partials) else ""
        raise PrimitiveDefinitionError(
            "partials is a tuple with one partial derivative per argument, got "
            f"{type(partials).__name__}{hint}",
            primitive=name,
        )
    if len(partials) not in _USER_KINDS:
        raise PrimitiveDefinitionError(
            f"a primitive takes one or two arguments (one partial each), got {len(partials)} "
            "partials",
            primitive=name,
        )
    arity = len(partials)
    _check_takes(name, "impl", impl, arity + 1, "(xp, *args)")
    wrapped: list[Partial] = []
    for k, partial in enumerate(partials):
        if partial is None or (isinstance(partial, str) and partial == IDENTITY):
            wrapped.append(partial)
            continue
        if not callable(partial):
            raise PrimitiveDefinitionError(
                f"partial {k + 1} is a function f(m, *args, y), IDENTITY or None, got "
                f"{type(partial).__name__}",
                primitive=name,
            )
        _check_takes(name, f"partial {k + 1}", partial, arity + 2, "(m, *args, y)")
        wrapped.append(UserPartial(name, k, partial))
    if sympy is not None and not callable(sympy):
        raise PrimitiveDefinitionError(
            f"sympy is a function of (s, *args) or None, got {type(sympy).__name__}",
            primitive=name,
        )
    return register(
        Primitive(
            name,
            _USER_KINDS[arity],
            UserImplementation(name, impl),
            tuple(wrapped),
            sympy,
            doc or f"The user-defined elementwise primitive {name}.",
            function=name,
            zero_preserving=zero_preserving,
        )
    )


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


def _wrap(xp: Any, j: Array, n: Array) -> Array:
    """NumPy's wrap of an index ``j`` into an axis of extent ``n``: ``j + n`` where
    ``j < 0``, else ``j`` (what is still out of range stays so)."""
    return xp.where(j < 0, j + n, j)


# --------------------------------------------------------------------------------------
# The built-in primitives
# --------------------------------------------------------------------------------------

_U, _N = OpKind.FLOAT_UNARY, OpKind.NUM_UNARY
_LOOP, _SCALAR_LOOP = KernelCost.NUMPY_LOOP, KernelCost.SCALAR_LOOP


def _unary(
    name: str,
    partial: Partial,
    sympy: Callable[..., Any] | None,
    doc: str,
    *,
    kind: OpKind = _U,
    impl: Callable[..., Array] | None = None,
    function: str | None = None,
    zero: bool = False,
    ufunc: str | None = None,
    kernel: KernelSpelling | None = None,
    cost: KernelCost = KernelCost.CHEAP,
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
            kernel=kernel,
            kernel_cost=cost,
        )
    )


_unary(
    "exp", lambda m, x, y: y, lambda s, x: s.sp.exp(x), "Elementwise e**x.",
    kernel=Call("exp"), cost=_LOOP,
)  # fmt: skip
_unary(
    "log", lambda m, x, y: 1 / x, lambda s, x: s.sp.log(x), "Elementwise natural logarithm.",
    kernel=Call("log"), cost=_LOOP,
)  # fmt: skip
_unary(
    "log1p",
    lambda m, x, y: 1 / (x + 1),
    lambda s, x: s.sp.log(1 + x),
    "Elementwise log(1 + x).",
    zero=True,
    kernel=Call("log1p"),
    cost=_LOOP,
)
_unary(
    "expm1",
    lambda m, x, y: y + 1,
    lambda s, x: s.sp.exp(x) - 1,
    "Elementwise e**x - 1.",
    zero=True,
    kernel=Call("expm1"),
    cost=_LOOP,
)
_unary(
    "sin", lambda m, x, y: m.cos(x), lambda s, x: s.sp.sin(x), "Elementwise sine.", zero=True,
    kernel=Call("sin"), cost=_SCALAR_LOOP,
)  # fmt: skip
_unary(
    "cos", lambda m, x, y: -m.sin(x), lambda s, x: s.sp.cos(x), "Elementwise cosine.",
    kernel=Call("cos"), cost=_SCALAR_LOOP,
)  # fmt: skip
_unary(
    "tan", lambda m, x, y: 1 + y * y, lambda s, x: s.sp.tan(x), "Elementwise tangent.", zero=True,
    kernel=Call("tan"), cost=_LOOP,
)  # fmt: skip
_unary(
    "asin",
    lambda m, x, y: 1 / m.sqrt(1 - x * x),
    lambda s, x: s.sp.asin(x),
    "Elementwise arcsine.",
    zero=True,
    ufunc="arcsin",
    kernel=Call("arcsin", "asin"),
    cost=_LOOP,
)
_unary(
    "acos",
    lambda m, x, y: -(1 / m.sqrt(1 - x * x)),
    lambda s, x: s.sp.acos(x),
    "Elementwise arccosine.",
    ufunc="arccos",
    kernel=Call("arccos", "acos"),
    cost=_LOOP,
)
_unary(
    "atan",
    lambda m, x, y: 1 / (1 + x * x),
    lambda s, x: s.sp.atan(x),
    "Elementwise arctangent.",
    zero=True,
    ufunc="arctan",
    kernel=Call("arctan", "atan"),
    cost=_LOOP,
)
_unary(
    "sinh",
    lambda m, x, y: m.cosh(x),
    lambda s, x: s.sp.sinh(x),
    "Elementwise hyperbolic sine.",
    zero=True,
    kernel=Call("sinh"),
    cost=_LOOP,
)
_unary(
    "cosh", lambda m, x, y: m.sinh(x), lambda s, x: s.sp.cosh(x), "Elementwise hyperbolic cosine.",
    kernel=Call("cosh"), cost=_LOOP,
)  # fmt: skip
_unary(
    "tanh",
    lambda m, x, y: 1 - y * y,
    lambda s, x: s.sp.tanh(x),
    "Elementwise hyperbolic tangent.",
    zero=True,
    kernel=Call("tanh"),
    cost=_LOOP,
)
_unary(
    "sqrt",
    lambda m, x, y: 1 / (2 * y),
    lambda s, x: s.sp.sqrt(x),
    "Elementwise square root.",
    zero=True,
    kernel=Call("sqrt"),
    cost=KernelCost.TRANSCENDENTAL,
)
# expressions of other primitives: a Formula's SymPy spelling (None here) and fused
# kernel's expansion are the formula's, over SymPy and over a kernel's expressions
_unary(
    "recip",
    lambda m, x, y: -(y * y),
    None,
    "Elementwise 1/x.",
    impl=Formula(lambda m, a: 1 / a),
    ufunc="reciprocal",
)
_unary(
    "sigmoid",
    lambda m, x, y: y * (1 - y),
    None,
    "Elementwise logistic function 1/(1 + e**-x).",
    impl=Formula(lambda m, a: 1 / (1 + m.exp(-a))),
    ufunc="",
)
_unary(
    "stop_gradient",
    None,  # a constant to differentiation
    lambda s, x: s.stop_gradient(x),
    "The identity, seen by differentiation as a constant (derivative 0), like "
    "``jax.lax.stop_gradient``.",
    impl=Formula(lambda m, a: a),
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
    kernel=Prefix("-"),
)
_unary(
    "abs",
    lambda m, x, y: m.sign(x),
    lambda s, x: s.absolute(x),
    "Elementwise absolute value.",
    kind=_N,
    zero=True,
    ufunc="absolute",
    kernel=Call("abs", "fabs"),
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
        kernel=Prefix("~", "!"),
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
    kernel: KernelSpelling | None = None,
    cost: KernelCost = KernelCost.CHEAP,
) -> Primitive:
    ufuncs = (ufunc,) if isinstance(ufunc, str) else ufunc
    return register(
        Primitive(
            name, kind, impl, partials, sympy, doc, function, infix, precedence, zero, ufuncs,
            kernel, cost,
        )
    )  # fmt: skip


_B, _F = OpKind.NUM_BINARY, OpKind.FLOAT_BINARY
_binary(
    "add", _B, NamespaceCall("add"), lambda s, a, b: a + b, (IDENTITY, IDENTITY),
    infix="+", precedence=6, zero=True, ufunc="add", kernel=Infix("+"),
)  # fmt: skip
_binary(
    "sub", _B, NamespaceCall("subtract"), lambda s, a, b: a - b,
    (IDENTITY, lambda m, a, b, y: -1),
    infix="-", precedence=6, zero=True, ufunc="subtract", kernel=Infix("-"),
)  # fmt: skip
_binary(
    "mul", _B, NamespaceCall("multiply"), lambda s, a, b: a * b,
    (lambda m, a, b, y: b, lambda m, a, b, y: a),
    infix="*", precedence=7, zero=True, ufunc="multiply", kernel=Infix("*"),
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
    infix="/", precedence=7, ufunc=("divide", "true_divide"), kernel=Infix("/"),
)  # fmt: skip
# d/dy x**y = x**y · log x with log x read as 0 where x == 0 (JAX's
# ``log(_replace_zero(x))``): 0 at x = 0 for y > 0, not 0 · -inf
_binary(
    "pow", _F, NamespaceCall("pow"), lambda s, a, b: s.exponent_pow(a, b),
    (
        lambda m, x, e, y: e * x ** (e - 1),
        lambda m, x, e, y: y * m.log(m.where(x == 0, 1, x)),
    ),
    infix="**", precedence=9, ufunc="power", kernel=Infix("**", "pow"), cost=_LOOP,
)  # fmt: skip
_binary(
    "atan2", _F, NamespaceCall("atan2"), lambda s, a, b: s.sp.atan2(a, b),
    (
        lambda m, a, b, y: b / (a * a + b * b),
        lambda m, a, b, y: -(a / (a * a + b * b)),
    ),
    function="atan2", zero=True, ufunc="arctan2",
    doc="Elementwise arctangent of y/x with the quadrant of (x, y): atan2(y, x).",
    kernel=Call("arctan2", "atan2"), cost=_LOOP,
)  # fmt: skip
_binary(
    "quot", OpKind.INT_BINARY, _quot, lambda s, a, b: s.total_quot(a, b),
    infix="//", precedence=7, zero=True, ufunc="floor_divide",
)  # fmt: skip
_binary(
    "rem", OpKind.INT_BINARY, _rem, lambda s, a, b: s.total_rem(a, b),
    infix="%", precedence=7, zero=True, ufunc="remainder",
)  # fmt: skip
_binary(
    "wrap", OpKind.INT_BINARY, _wrap, lambda s, j, n: s.wrap_index(j, n), zero=True,
    doc="An index j wrapped into an axis of extent n as NumPy wraps it: j + n where j < 0 "
    "(dualarr.numpy's indexing of traced indices; book/rules.md §1.3).",
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
        infix=_symbol, precedence=4, zero=_zero, ufunc=_ufunc, kernel=Infix(_symbol),
    )  # fmt: skip
_binary(
    "and", OpKind.LOGIC_BINARY, NamespaceCall("logical_and"), lambda s, a, b: s.sp.And(a, b),
    infix="&&", precedence=3, zero=True, function="logical_and", ufunc="logical_and",
    doc="Elementwise logical and (bool).", kernel=Infix("&", "&&"),
)  # fmt: skip
_binary(
    "or", OpKind.LOGIC_BINARY, NamespaceCall("logical_or"), lambda s, a, b: s.sp.Or(a, b),
    infix="||", precedence=2, zero=True, function="logical_or", ufunc="logical_or",
    doc="Elementwise logical or (bool).", kernel=Infix("|", "||"),
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
        kernel=Where(),
    )
)

# --------------------------------------------------------------------------------------
# sinc and its derivatives: a removable singularity, every derivative order right at 0
# --------------------------------------------------------------------------------------
# JAX's ``jnp.sinc`` is right at 0 to every order through a custom_jvp whose rule calls
# the next Maclaurin coefficient (``_sinc_maclaurin(k + 1, x)``); here each derivative is
# a primitive of its own whose partial is the next one, so the rule is one line over any
# algebra and every stage (bot, codegen, SymPy) sees ordinary records.


def _sinc_maclaurin(order: int) -> float:
    """The ``order``-th derivative of ``sin(y) / y`` at 0: ``(-1)**(k/2) / (k + 1)`` for
    even ``k``, 0 for odd."""
    return 0.0 if order % 2 else (-1.0) ** (order // 2) / (order + 1)


@dataclass(frozen=True)
class SincDerivative:
    """``impl`` of the ``order``-th derivative of NumPy's sinc, ``sin(pi x) / (pi x)``:
    ``pi**k g⁽ᵏ⁾(pi x)`` with ``g(y) = sin(y) / y``.  Order 0 is NumPy's bits (1 at 0).
    Order ``k >= 1``: the Maclaurin series ``sum_n g⁽ᵏ⁺ⁿ⁾(0) yⁿ / n!`` (Horner in
    ``y²``) below :attr:`series_limit`, where the closed form cancels, and above it the
    closed form by Leibniz's rule on ``y g = sin``: ``g⁽ʲ⁾ = (sin⁽ʲ⁾(y) - j g⁽ʲ⁻¹⁾) / y``
    (within 1e-14 of 50-digit values for ``k <= 10``)."""

    order: int

    @property
    def series_limit(self) -> float:
        return max(4.0, self.order / 2.0)

    def coefficients(self) -> tuple[float, ...]:
        """``a_i`` of ``g⁽ᵏ⁾(y) = y**p sum_i a_i y**(2i)`` (``p = k % 2``), to the last
        term that matters below the series limit."""
        k, p, limit = self.order, self.order % 2, self.series_limit
        terms: list[float] = []
        i = 0
        while True:
            n = p + 2 * i
            a = _sinc_maclaurin(k + n) / math.factorial(n)
            terms.append(a)
            if len(terms) >= 2 and abs(a) * limit**n < 1e-20:
                return tuple(terms)
            i += 1

    def __call__(self, xp: Any, x: Array) -> Array:
        k = self.order
        if k == 0:
            zero = x == 0
            y = math.pi * xp.where(zero, 1.0, x)
            return xp.where(zero, 1.0, xp.sin(y) / y)
        y = math.pi * x
        near = xp.abs(y) < self.series_limit
        ys = xp.where(near, y, 0.0)
        squares = ys * ys
        terms = self.coefficients()
        series = terms[-1] * squares + terms[-2]
        for a in reversed(terms[:-2]):
            series = series * squares + a
        if k % 2:
            series = series * ys
        yc = xp.where(near, self.series_limit, y)
        sin, cos = xp.sin(yc), xp.cos(yc)
        closed = sin / yc
        for j in range(1, k + 1):
            closed = ((sin, cos, -sin, -cos)[j % 4] - j * closed) / yc
        return math.pi**k * xp.where(near, series, closed)


def _sinc_sympy(order: int) -> Callable[..., Any]:
    """SymPy spelling of sinc's ``order``-th derivative: its exact value at 0, SymPy's
    derivative of ``sin(pi z) / (pi z)`` elsewhere."""

    def spelling(s: Any, x: Any) -> Any:
        sp = s.sp
        z = sp.Dummy("z")
        away = sp.diff(sp.sin(sp.pi * z) / (sp.pi * z), z, order).subs(z, x)
        at_zero = 0 if order % 2 else sp.Rational((-1) ** (order // 2), order + 1) * sp.pi**order
        return sp.Piecewise((at_zero, sp.Eq(x, 0)), (away, True))

    return spelling


@functools.cache
def sinc_derivative(order: int) -> str:
    """The name of the record of NumPy's sinc (``order`` 0, ``sinc``) or of its
    ``order``-th derivative (``sinc_d<order>``), registered on first use: its partial is
    the record of the next order, so differentiating any number of times (``grad`` of
    ``grad``, a Taylor jet) meets the right value at 0, JAX's ``testSincAtZero``."""
    name = "sinc" if order == 0 else f"sinc_d{order}"
    doc = (
        "NumPy's normalised sinc, sin(pi x) / (pi x), 1 at 0."
        if order == 0
        else f"Derivative {order} of NumPy's sinc (its value at 0 included)."
    )
    register(
        Primitive(
            name,
            _U,
            SincDerivative(order),
            (lambda m, x, y: getattr(m, sinc_derivative(order + 1))(x),),
            _sinc_sympy(order),
            doc,
            function=name,
        )
    )
    return name


for _order in range(5):  # sinc and derivatives 1-4 are built in; higher ones on first use
    sinc_derivative(_order)


BUILT_IN = frozenset(REGISTRY)

__all__ = [
    "BUILT_IN",
    "IDENTITY",
    "REGISTRY",
    "NamespaceCall",
    "OpKind",
    "Partial",
    "Primitive",
    "SincDerivative",
    "UserImplementation",
    "UserPartial",
    "define",
    "generation",
    "register",
    "sinc_derivative",
]

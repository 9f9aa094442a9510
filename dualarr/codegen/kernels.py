"""Fused kernels: one elementwise expression over a few arrays, many back ends.

A kernel is the fusion of a tree of elementwise operations of the let-program
(:mod:`dualarr.codegen.generate` groups them): its :data:`KernelExpr` reads the kernel's
arguments (:class:`Arg`), scalar literals (:class:`Literal`) and applies primitives
(:class:`Apply`).  The expression is written once and read by every interpretation:

- :func:`numexpr_text`: the expression of a prebuilt ``numexpr.NumExpr`` (NumPy, CPU,
  multi-threaded, one pass over memory);
- :func:`cupy_source`: the parameters and C operation of a ``cupy.ElementwiseKernel``;
- :func:`evaluate_kernel`: the registry's implementations over any array namespace
  (``array_api_strict``, and the meaning the other two must agree with).

How a kernel writes a primitive and what it costs are fields of the primitive's record
(:data:`dualarr.lang.primitives.REGISTRY`): its spelling (``kernel``), or the expansion
of its :class:`~dualarr.lang.primitives.Formula` (:func:`kernel_spelling`), and its
``kernel_cost`` (:func:`kernel_cost`); :data:`FUSABLE`, :data:`UNFUSED` and
:data:`SCALAR_IN_NUMPY` are read from the records.

A kernel computes the same bits as the unfused program (one array call per operation,
its oracle): its source keeps the program's grouping (each operand of an infix operator
is parenthesised unless the tree groups it so), code generation applies only rewrites
exact in IEEE arithmetic (:func:`combine_like_terms`: ``t + t`` is ``2.0 * t``), numexpr
compiles it with no optimisation of its own (by default it turns ``a / c`` into
``a * (1 / c)`` and ``a ** 3`` into ``a * (a * a)``, both rounded otherwise), and CuPy
compiles it with no contraction into fused multiply-adds (``--fmad=false``).  A kernel
holds float64 and boolean work only: float32 programs run unfused.  Transcendental
functions are NumPy's own ufuncs, as in the unfused program (:data:`UNFUSED`), except
``sin`` and ``cos`` on NumPy (:data:`SCALAR_IN_NUMPY`): Intel's Vector Math Library's
loops when it is installed, within 2 ulp of NumPy's (each is within 1 ulp of the exact
value; ``tests/test_fusion_ieee.py``), else numexpr's calls of the C library's ``sin``
and ``cos``, which NumPy's float64 loops call too (the same bits on x86-64 Linux).

:class:`CompiledKernel` is what generated code calls, ``k1(xp, a, b)``: numexpr when
``xp`` is NumPy (or NumPy's own ufunc for a function of :data:`UNFUSED`, or any one
operation, alone: :func:`numpy_ufunc`, on every core for a large array:
:mod:`dualarr.codegen.threads`),
a CuPy kernel on CuPy, one NumPy kernel per chunk on Dask (:func:`dask_kernel`),
:func:`evaluate_kernel` otherwise.  On NumPy a call site writes
into its last result once that result is dropped (:class:`dualarr.codegen.buffers.SpareBuffer`).
"""

from __future__ import annotations

import functools
import importlib
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..lang.config import config
from ..lang.primitives import (
    REGISTRY,
    Call,
    Formula,
    Infix,
    KernelCost,
    KernelSpelling,
    NamespaceCall,
    OpKind,
    Prefix,
    Where,
)
from ..lang.terms import DType, Shape, assert_never
from .buffers import SpareBuffer
from .threads import PARALLEL_MIN_SIZE, PARALLEL_MIN_SIZE_CHEAP, run_in_chunks

__all__ = [
    "FUSABLE",
    "SCALAR_IN_NUMPY",
    "UNFUSED",
    "Apply",
    "Arg",
    "CompiledKernel",
    "Kernel",
    "KernelExpr",
    "Literal",
    "combine_like_terms",
    "cupy_source",
    "dask_kernel",
    "evaluate_kernel",
    "kernel_cost",
    "kernel_spelling",
    "numexpr_text",
    "numpy_ufunc",
    "substitute_args",
    "vector_math_ufunc",
]


@dataclass(frozen=True)
class Arg:
    """The kernel's argument number ``index``."""

    index: int


@dataclass(frozen=True)
class Literal:
    """A finite scalar constant, written into the kernel's source."""

    value: float | bool


@dataclass(frozen=True)
class Apply:
    """A primitive of the registry applied elementwise."""

    op: str
    args: tuple[KernelExpr, ...]


KernelExpr = Arg | Literal | Apply


# --------------------------------------------------------------------------------------
# Spellings: the records' (numexpr's Python-like syntax and C for CuPy), and formulas
# --------------------------------------------------------------------------------------

# precedences (higher binds tighter), Python's order: numexpr parses Python expressions
_CMP, _OR, _AND, _ADD, _MUL, _UNARY, _POW, _ATOM = 3, 4, 5, 6, 7, 8, 9, 12

_PYTHON_PRECEDENCE = {
    "<": _CMP, "<=": _CMP, ">": _CMP, ">=": _CMP, "==": _CMP, "!=": _CMP,
    "|": _OR, "&": _AND, "+": _ADD, "-": _ADD, "*": _MUL, "/": _MUL, "**": _POW,
}  # fmt: skip
"""The precedence of each infix operator of numexpr's syntax (Python's grammar)."""


@dataclass(frozen=True)
class Expand:
    """A primitive whose implementation is a :class:`~dualarr.lang.primitives.Formula`,
    spelled as the formula's kernel expression of its arguments (``recip a = 1 / a``,
    ``sigmoid a = 1 / (1 + exp(-a))``, ``stop_gradient a = a``)."""

    template: KernelExpr  # over Arg(0), Arg(1), ...


Spelling = KernelSpelling | Expand


@dataclass(frozen=True)
class _Built:
    """A kernel expression a formula builds: Python's arithmetic applies the registry's
    arithmetic primitives, and a number is a literal (as on traced values)."""

    expr: KernelExpr

    def _apply(self, op: str, other: _Built | float, *, flip: bool = False) -> _Built:
        b = other.expr if isinstance(other, _Built) else _literal(other)
        return _Built(Apply(op, (b, self.expr) if flip else (self.expr, b)))

    def __add__(self, other: _Built | float) -> _Built:
        return self._apply("add", other)

    def __radd__(self, other: float) -> _Built:
        return self._apply("add", other, flip=True)

    def __sub__(self, other: _Built | float) -> _Built:
        return self._apply("sub", other)

    def __rsub__(self, other: float) -> _Built:
        return self._apply("sub", other, flip=True)

    def __mul__(self, other: _Built | float) -> _Built:
        return self._apply("mul", other)

    def __rmul__(self, other: float) -> _Built:
        return self._apply("mul", other, flip=True)

    def __truediv__(self, other: _Built | float) -> _Built:
        return self._apply("div", other)

    def __rtruediv__(self, other: float) -> _Built:
        return self._apply("div", other, flip=True)

    def __pow__(self, other: _Built | float) -> _Built:
        return self._apply("pow", other)

    def __rpow__(self, other: float) -> _Built:
        return self._apply("pow", other, flip=True)

    def __neg__(self) -> _Built:
        return _Built(Apply("neg", (self.expr,)))


def _literal(value: float) -> Literal:
    return Literal(value if isinstance(value, bool) else float(value))


class _KernelNamespace:
    """The ``m`` of a formula building a kernel expression: ``m.exp(a)`` applies the
    registry's ``exp``."""

    def __getattr__(self, name: str) -> Callable[..., _Built]:
        if name not in REGISTRY:
            raise AttributeError(f"no elementwise primitive {name!r}")
        return lambda *args: _Built(Apply(name, tuple(a.expr for a in args)))


@functools.cache
def _expansion(formula: Formula, arity: int) -> Expand | None:
    """``formula`` as a kernel expression of ``arity`` arguments, or None where a kernel
    cannot hold it (it applies a primitive no kernel holds, or a function or operator
    that is no primitive: its implementation then runs on its own)."""
    try:
        built = formula.expression(_KernelNamespace(), *(_Built(Arg(k)) for k in range(arity)))
    except (AttributeError, TypeError):
        return None
    if not isinstance(built, _Built):
        return None
    if not all(kernel_spelling(op) is not None for op in _applied(built.expr)):
        return None
    return Expand(built.expr)


def _applied(expr: KernelExpr) -> Iterator[str]:
    """The primitives ``expr`` applies (each once per application)."""
    if isinstance(expr, Apply):
        yield expr.op
        for arg in expr.args:
            yield from _applied(arg)


def kernel_spelling(op: str) -> Spelling | None:
    """How a kernel writes the primitive ``op``: its record's spelling, the expansion of
    its :class:`~dualarr.lang.primitives.Formula`, or None where no kernel holds it (its
    result is an argument of the next kernel)."""
    record = REGISTRY.get(op)
    if record is None:
        return None
    if record.kernel is not None:
        return record.kernel
    if isinstance(record.impl, Formula):
        return _expansion(record.impl, record.arity)
    return None


def kernel_cost(op: str) -> KernelCost:
    """What ``op`` costs a kernel: its record's cost, or that of the costliest primitive
    its formula applies (``sigmoid``: ``exp``'s)."""
    spelling = kernel_spelling(op)
    inner = _applied(spelling.template) if isinstance(spelling, Expand) else ()
    return max((REGISTRY[op].kernel_cost, *map(kernel_cost, inner)), key=lambda c: c.value)


class _Fusable(Mapping[str, Spelling]):
    """The primitives a kernel can hold, with their spellings (:func:`kernel_spelling`),
    read from the registry when used."""

    def __getitem__(self, op: str) -> Spelling:
        spelling = kernel_spelling(op)
        if spelling is None:
            raise KeyError(op)
        return spelling

    def __contains__(self, op: object) -> bool:
        return isinstance(op, str) and kernel_spelling(op) is not None

    def __iter__(self) -> Iterator[str]:
        return (op for op in list(REGISTRY) if kernel_spelling(op) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


_Name = TypeVar("_Name")


class _FusableWhere(AbstractSet[str]):
    """The primitives a kernel can hold whose :func:`kernel_cost` is one of ``costs``,
    read from the registry when used."""

    def __init__(self, *costs: KernelCost) -> None:
        self._costs = costs

    def __contains__(self, op: object) -> bool:
        return isinstance(op, str) and op in FUSABLE and kernel_cost(op) in self._costs

    def __iter__(self) -> Iterator[str]:
        return (op for op in FUSABLE if kernel_cost(op) in self._costs)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @classmethod
    def _from_iterable(cls, names: Iterable[_Name]) -> frozenset[_Name]:
        return frozenset(names)  # ``UNFUSED - SCALAR_IN_NUMPY``: a plain set


FUSABLE: Mapping[str, Spelling] = _Fusable()
"""The primitives a kernel can contain, and how each back end spells them: those whose
record has a kernel spelling, or a formula over such primitives.  Another one
(``maximum``: NumPy's NaN rule; integer ``quot``/``rem``; a user's own) ends a kernel:
its result is an argument of the next one."""

UNFUSED: AbstractSet[str] = _FusableWhere(KernelCost.NUMPY_LOOP, KernelCost.SCALAR_LOOP)
"""Functions left to an array library, each a kernel of its own (its operands are
arguments, never fused expressions): their records' cost is ``NUMPY_LOOP``
(:class:`~dualarr.lang.primitives.KernelCost`: NumPy's SIMD loops compute them faster
than numexpr's scalar libm calls, more than fusing saves; on a large array they run on
every core, :mod:`dualarr.codegen.threads`) or ``SCALAR_LOOP``.  On NumPy such a kernel
computes what the unfused program computes, bit for bit: NumPy's ufunc (``numpy.power``'s
loops, say, differ from the C library's ``pow`` by 1 ulp, and use ``x * x`` for
``x ** 2.0``), or the registry's implementation where that is no one ufunc
(``sigmoid``).  ``sin`` and ``cos`` (:data:`SCALAR_IN_NUMPY`) are a vector math
library's loops when one is installed (:func:`vector_math_ufunc`)."""

SCALAR_IN_NUMPY: AbstractSet[str] = _FusableWhere(KernelCost.SCALAR_LOOP)
"""Functions whose NumPy float64 loop is scalar (libm per element, one core: 8 ns an
element; cost ``SCALAR_LOOP``).  Alone in a kernel they are Intel's Vector Math Library's
SIMD loops when the ``vml`` extra (``mkl_umath``) is installed (5x faster, on every core,
within 1 ulp), and otherwise run on numexpr, which spreads the libm calls over every
core."""

VECTOR_MATH_MODULE = "mkl_umath"
"""The module of :func:`vector_math_ufunc`: NumPy ufuncs computed by Intel's Vector Math
Library (``pip install 'dualarr[vml]'``)."""


def vector_math_ufunc(op: str) -> np.ufunc | None:
    """The vector math library's ufunc of ``op``, a function of :data:`SCALAR_IN_NUMPY`
    (its namespace function's name), or None: another function, ``config.vector_math``
    off, or the library not installed (or its shared libraries missing).  Imported on
    first use: a program without ``sin`` or ``cos`` never loads it."""
    if op not in SCALAR_IN_NUMPY or not config.vector_math:
        return None
    impl = REGISTRY[op].impl
    return _library_ufunc(impl.name) if isinstance(impl, NamespaceCall) else None


@functools.cache
def _library_ufunc(name: str) -> np.ufunc | None:
    # One MKL thread per call (unless the environment already says otherwise): a large
    # array runs in chunks on dualarr's threads, as NumPy's own loops do, instead of on
    # OpenMP threads that spin for 200 ms after each call, beside numexpr's and ours
    # (W5's gradient: 11 ms against 8 ms on 2 cores, ``benchmarks/results/gradients.txt``).
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    try:
        module = importlib.import_module(VECTOR_MATH_MODULE)
    except (ImportError, OSError):
        return None
    ufunc = getattr(module, name, None)
    return ufunc if isinstance(ufunc, np.ufunc) else None


_SYNTAX_FUNCTIONS = frozenset(
    {"where", "sum", "prod", "pow", "True", "False", "None", "abs", "fabs"}
)
_C_RESERVED = frozenset(
    {"i", "n", "_ind", "out", "int", "float", "double", "bool", "char", "long", "short",
     "if", "else", "for", "while", "do", "return", "switch", "case", "default", "break",
     "continue", "void", "const", "static", "struct", "union", "signed", "unsigned",
     "sizeof", "goto", "auto", "register", "volatile", "extern", "enum", "typedef", "true",
     "false"}
)


def _names_a_function(name: str) -> bool:
    """Whether a kernel's syntax takes ``name``: one of its words, or a function a
    record's spelling calls (numexpr's or C's)."""
    return name in _SYNTAX_FUNCTIONS or any(
        isinstance(spelling := record.kernel, Call) and name in (spelling.numexpr, spelling.c)
        for record in REGISTRY.values()
    )


def substitute_args(
    template: KernelExpr, args: Sequence[KernelExpr] | Mapping[int, KernelExpr]
) -> KernelExpr:
    """``template`` with each ``Arg(k)`` replaced by ``args[k]``."""
    match template:
        case Arg(index=k):
            return args[k]
        case Literal():
            return template
        case Apply(op=op, args=inner):
            return Apply(op, tuple(substitute_args(a, args) for a in inner))
        case _:
            assert_never(template)


# --------------------------------------------------------------------------------------
# Algebraic cleanup: only rewrites exact in IEEE arithmetic
# --------------------------------------------------------------------------------------

_KIND_PRESERVING = (OpKind.NUM_UNARY, OpKind.NUM_BINARY)
_BOOL_VALUED = (OpKind.COMPARE, OpKind.LOGIC_UNARY, OpKind.LOGIC_BINARY)


def _float_valued(expr: KernelExpr, float_args: Sequence[bool]) -> bool:
    """Whether ``expr`` computes floats (not booleans), its arguments' kinds given: by
    its primitive's dtype rule (a formula's primitive: by its expansion)."""
    match expr:
        case Arg(index=k):
            return float_args[k]
        case Literal(value=value):
            return not isinstance(value, bool)
        case Apply(op=op, args=args):
            spelling = kernel_spelling(op)
            if isinstance(spelling, Expand):
                return _float_valued(substitute_args(spelling.template, args), float_args)
            kind = REGISTRY[op].kind
            if kind in _BOOL_VALUED:
                return False
            if kind is OpKind.SELECT:
                return any(_float_valued(a, float_args) for a in args[1:])
            if kind in _KIND_PRESERVING:
                return any(_float_valued(a, float_args) for a in args)
            return True
        case _:
            assert_never(expr)


def combine_like_terms(expr: KernelExpr, float_args: Sequence[bool]) -> KernelExpr:
    """``expr`` with each float sum of a term and itself, ``t + t``, as ``2.0 * t``, so
    that the kernel computes ``t`` once: a reverse pass adds one contribution per use of
    a value (Fig. 19), and ``x * x`` contributes ``x * c`` twice.  The rewrite is exact in
    IEEE arithmetic (``t + t`` and ``2t`` are one rounding of the same number, and
    overflow, NaN, ±inf and ±0 alike); nothing else is regrouped, since the unfused
    program is the fused one's oracle (``book/api.md``): ``a - t - t`` is not
    ``a - 2.0 * t`` (two roundings against one), ``2 + (a - a)`` is not ``2 + a - a``
    (0 at ``a = 1e17``), ``a + a - a`` is not ``a`` (NaN at ``a = inf``) and ``-(a - b)``
    is not ``b - a`` (``+0`` against ``-0``).  ``float_args``: which arguments are
    floats (booleans add as logical or)."""
    match expr:
        case Arg() | Literal():
            return expr
        case Apply(op=op, args=args):
            inner = tuple(combine_like_terms(a, float_args) for a in args)
            if op == "add" and inner[0] == inner[1] and _float_valued(expr, float_args):
                return Apply("mul", (Literal(2.0), inner[0]))
            return Apply(op, inner)
        case _:
            assert_never(expr)


def _literal_text(value: float | bool, c: bool) -> str:
    if isinstance(value, bool):
        return ("true" if value else "false") if c else ("True" if value else "False")
    text = repr(float(value))
    return text


def _render(expr: KernelExpr, names: Sequence[str], c: bool) -> tuple[str, int]:
    """The source of ``expr`` and its precedence (numexpr's syntax, or C's)."""
    match expr:
        case Arg(index=k):
            return names[k], _ATOM
        case Literal(value=value):
            text = _literal_text(value, c)
            return text, _UNARY if text.startswith("-") else _ATOM
        case Apply(op=op, args=args):
            return _render_apply(FUSABLE[op], args, names, c)
        case _:
            assert_never(expr)


def _symbol(spelling: Infix | Prefix | Call, c: bool) -> str:
    """The spelling's operator or function in C, or in numexpr."""
    return spelling.c if c and spelling.c is not None else spelling.numexpr


def _render_apply(
    spelling: Spelling, args: tuple[KernelExpr, ...], names: Sequence[str], c: bool
) -> tuple[str, int]:
    def sub(arg: KernelExpr, need: int) -> str:
        text, precedence = _render(arg, names, c)
        return f"({text})" if precedence < need else text

    match spelling:
        case Infix():
            a, b = args
            symbol, p = _symbol(spelling, c), _PYTHON_PRECEDENCE[spelling.numexpr]
            if symbol.isidentifier():  # C's ``pow(a, b)``
                return f"{symbol}({sub(a, 0)}, {sub(b, 0)})", _ATOM
            if p in (_CMP, _AND, _OR):  # never rely on chained or mixed logical parsing
                return f"{sub(a, _ATOM)} {symbol} {sub(b, _ATOM)}", p
            if p == _POW:
                return f"{sub(a, p + 1)} ** {sub(b, p)}", p
            return f"{sub(a, p)} {symbol} {sub(b, p + 1)}", p
        case Prefix():
            symbol = _symbol(spelling, c)
            # ``-(-a)``, never ``--a`` (C's decrement)
            return f"{symbol}{sub(args[0], _UNARY + 1 if symbol == '-' else _ATOM)}", _UNARY
        case Call():
            return f"{_symbol(spelling, c)}(" + ", ".join(sub(a, 0) for a in args) + ")", _ATOM
        case Where():
            cond, a, b = args
            if c:
                return f"({sub(cond, 0)} ? {sub(a, 0)} : {sub(b, 0)})", _ATOM
            return f"where({sub(cond, 0)}, {sub(a, 0)}, {sub(b, 0)})", _ATOM
        case Expand(template=template):
            return _render(substitute_args(template, args), names, c)
        case _:
            assert_never(spelling)


def numexpr_text(expr: KernelExpr, names: Sequence[str]) -> str:
    """``expr`` as a numexpr expression over the argument ``names``."""
    return _render(expr, names, c=False)[0]


def _count(expr: KernelExpr) -> tuple[int, bool]:
    """How many operations ``expr`` applies, and whether one is transcendental."""
    match expr:
        case Arg() | Literal():
            return 0, False
        case Apply(op=op, args=args):
            counts = [_count(a) for a in args]
            costly = kernel_cost(op) is not KernelCost.CHEAP
            return 1 + sum(n for n, _ in counts), costly or any(t for _, t in counts)
        case _:
            assert_never(expr)


@dataclass(frozen=True)
class Kernel:
    """``name(params) = expression``: an elementwise result of ``dtype`` and ``shape``
    from arguments of ``param_dtypes`` (broadcast as NumPy does)."""

    name: str
    params: tuple[str, ...]
    param_dtypes: tuple[DType, ...]
    expression: KernelExpr
    dtype: DType
    shape: Shape

    @property
    def operations(self) -> int:
        """How many elementwise operations the kernel fuses into one pass."""
        return _count(self.expression)[0]

    def numexpr(self) -> str:
        return numexpr_text(self.expression, self.params)

    def __str__(self) -> str:
        shape = ",".join(str(d) for d in self.shape)
        return (
            f"{self.name}({', '.join(self.params)}) = {self.numexpr()}"
            f"    : {self.dtype}[{shape}]"
        )


def transcendental(expr: KernelExpr) -> bool:
    """Whether ``expr`` applies a primitive too costly to compute twice (its cost is not
    ``CHEAP``, :class:`~dualarr.lang.primitives.KernelCost`): a shared expression
    applying one is stored once, not recomputed by each kernel that reads it."""
    return _count(expr)[1]


def numpy_ufunc(expr: KernelExpr) -> tuple[np.ufunc, tuple[int | float | bool, ...]] | None:
    """The NumPy ufunc of a kernel that is one primitive over its arguments (a function
    of :data:`UNFUSED`, or one operation left alone: ``dt * w``), and what it is called
    with (an argument's number, or a literal's value); None for any other kernel.  Such
    a kernel is NumPy's SIMD loop writing into the site's buffer
    (:class:`dualarr.codegen.buffers.SpareBuffer`): one operation costs numexpr more
    (its virtual machine, its threads) than it saves.  ``sin`` and ``cos`` are the vector
    math library's ufuncs (:func:`vector_math_ufunc`), or None without one."""
    if not isinstance(expr, Apply):
        return None
    if expr.op in SCALAR_IN_NUMPY:
        ufunc = vector_math_ufunc(expr.op)
    else:
        impl = REGISTRY[expr.op].impl
        ufunc = getattr(np, impl.name, None) if isinstance(impl, NamespaceCall) else None
    if not isinstance(ufunc, np.ufunc):
        return None
    plan: list[int | float | bool] = []
    for arg in expr.args:
        match arg:
            case Arg(index=k):
                plan.append(k)
            case Literal(value=value):
                plan.append(float(value) if not isinstance(value, bool) else value)
            case Apply():
                return None
            case _:
                assert_never(arg)
    return ufunc, tuple(plan)


def kernel_parameter_name(preferred: str, index: int) -> str:
    """``preferred`` when it is a plain name no kernel syntax reserves, else ``a<index>``."""
    if (
        preferred.isidentifier()
        and not _names_a_function(preferred)
        and preferred not in _C_RESERVED
        and not preferred.startswith("_")
    ):
        return preferred
    return f"a{index}"


def literal_value(value: Any) -> float | bool | None:
    """A scalar a kernel can carry as a literal (finite floats and booleans), or None.
    Negative zero is an argument: numexpr reads the literal ``-0.0`` as ``0.0``, which
    ``atan2``, ``1 / x`` and ``copysign``-like selections tell apart."""
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.floating | float):
        f = float(value)
        if f == 0.0 and math.copysign(1.0, f) < 0.0:
            return None
        return f if math.isfinite(f) else None
    return None


# --------------------------------------------------------------------------------------
# CuPy: ElementwiseKernel source
# --------------------------------------------------------------------------------------

_C_TYPES = {"float64": "float64", "float32": "float32", "bool": "bool", "int64": "int64"}


def cupy_source(kernel: Kernel) -> tuple[str, str, str]:
    """``(in_params, out_params, operation)`` of ``cupy.ElementwiseKernel`` for
    ``kernel``: typed parameters, one output ``out`` and the C expression."""
    names = [kernel_parameter_name(p, k) for k, p in enumerate(kernel.params)]
    in_params = ", ".join(
        f"{_C_TYPES[str(t)]} {n}" for n, t in zip(names, kernel.param_dtypes, strict=True)
    )
    out_params = f"{_C_TYPES[str(kernel.dtype)]} out"
    operation = f"out = {_render(kernel.expression, names, c=True)[0]}"
    return in_params, out_params, operation


# --------------------------------------------------------------------------------------
# The reference meaning: the registry's implementations over any namespace
# --------------------------------------------------------------------------------------


def evaluate_kernel(expr: KernelExpr, xp: Any, args: Sequence[Any]) -> Any:
    """``expr`` on arrays of the namespace ``xp``, one array operation per primitive."""
    match expr:
        case Arg(index=k):
            return args[k]
        case Literal(value=value):  # kernels compute in float64 and bool
            return xp.asarray(value, dtype=xp.bool if isinstance(value, bool) else xp.float64)
        case Apply(op=op, args=inner):
            return REGISTRY[op].impl(xp, *(evaluate_kernel(a, xp, args) for a in inner))
        case _:
            assert_never(expr)


# --------------------------------------------------------------------------------------
# The callable of generated code
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _numexpr_kernel(expression: str, signature: tuple[tuple[str, str], ...]) -> Any:
    import numexpr

    types = {"float64": np.float64, "bool": bool}  # numexpr's names for its kinds
    # optimization="none": numexpr's own rewrites (``a / c`` as ``a * (1 / c)``, integral
    # and half-integral powers as products and ``sqrt``) round otherwise than NumPy
    return numexpr.NumExpr(
        expression, signature=[(n, types[t]) for n, t in signature], optimization="none"
    )


def _numexpr_options(expression: str) -> dict[str, Any]:
    """The keywords a prebuilt ``NumExpr`` needs with ``out=`` (as ``numexpr.evaluate``
    passes them): element order kept, safe casting, and whether it calls Intel's VML."""
    from numexpr import necompiler

    _, uses_vml = necompiler.getExprNames(expression, {})
    return {"order": "K", "casting": "safe", "ex_uses_vml": uses_vml}



_NUMEXPR_LOCK = threading.Lock()
"""One numexpr evaluation at a time: its virtual machine's per-program and thread-pool
state is not safe under concurrent calls from Python threads (two threads calling one
kernel corrupt the heap), and each evaluation already runs on every core."""


CUPY_OPTIONS = ("--fmad=false",)
"""NVRTC's options for a kernel: IEEE rounding of each operation, as the unfused program."""


@functools.lru_cache(maxsize=4096)
def _cupy_kernel(source: tuple[str, str, str], name: str) -> Any:
    import cupy

    in_params, out_params, operation = source
    # no contraction of ``a * b + c`` into one fused multiply-add (NVRTC's default): the
    # unfused program rounds the product, one CuPy call per operation
    return cupy.ElementwiseKernel(
        in_params, out_params, operation, name, options=CUPY_OPTIONS
    )


def _sealed_function(expr: KernelExpr) -> bool:
    """Whether ``expr`` is a function of :data:`UNFUSED` whose NumPy loop is vectorised
    (not ``sin`` or ``cos``, which numexpr computes with NumPy's C library when no vector
    math library is installed)."""
    return isinstance(expr, Apply) and kernel_cost(expr.op) is KernelCost.NUMPY_LOOP


class CompiledKernel:
    """A :class:`Kernel` ready to run: ``kernel(xp, *arrays)``."""

    __slots__ = (
        "_chunked", "_cupy", "_numexpr", "_options", "_registry", "_spare", "_ufunc", "kernel"
    )

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._spare = SpareBuffer()
        self._ufunc = numpy_ufunc(kernel.expression)
        # a large one-function kernel runs on every core (:mod:`dualarr.codegen.threads`)
        costly = transcendental(kernel.expression)
        self._chunked = self._ufunc is not None and math.prod(kernel.shape) >= (
            PARALLEL_MIN_SIZE if costly else PARALLEL_MIN_SIZE_CHEAP
        )
        self._cupy: Any = None
        self._numexpr: Any = None
        self._options: dict[str, Any] = {}
        # a function of UNFUSED that is no one ufunc (``sigmoid``): the registry's NumPy
        # calls, as the unfused program makes them (not numexpr's C library ``exp``)
        self._registry = self._ufunc is None and _sealed_function(kernel.expression)
        if self._ufunc is None and not self._registry:
            signature = tuple(
                (n, str(t)) for n, t in zip(kernel.params, kernel.param_dtypes, strict=True)
            )
            expression = kernel.numexpr()
            self._numexpr = _numexpr_kernel(expression, signature)
            self._options = _numexpr_options(expression)

    def __call__(self, xp: Any, *arrays: Any) -> Any:
        if xp is np:
            if self._registry:
                return evaluate_kernel(self.kernel.expression, np, arrays)
            out = self._spare.take()
            if self._ufunc is not None:
                ufunc, plan = self._ufunc
                operands = [arrays[p] if type(p) is int else p for p in plan]
                if self._chunked:
                    if out is None:
                        out = np.empty(self.kernel.shape, self.kernel.dtype.numpy())
                    if run_in_chunks(ufunc, operands, out):
                        return self._spare.keep(out)
                return self._spare.keep(ufunc(*operands, out=out))
            with _NUMEXPR_LOCK:
                if out is None:
                    result = self._numexpr(*arrays)
                else:
                    result = self._numexpr(*arrays, out=out, **self._options)
            return self._spare.keep(result)
        namespace = getattr(xp, "__name__", "").split(".")
        if "cupy" in namespace:  # cupy, array_api_compat.cupy
            if self._cupy is None:
                self._cupy = _cupy_kernel(cupy_source(self.kernel), self.kernel.name)
            return self._cupy(*arrays)
        if "dask" in namespace:  # array_api_compat.dask.array
            return dask_kernel(self.kernel, xp, arrays)
        return evaluate_kernel(self.kernel.expression, xp, arrays)

    def on_blocks(self, blocks: Sequence[Any]) -> Any:
        """The kernel on NumPy blocks of its arguments (one chunk each, any shape):
        NumPy's calls as :meth:`__call__` makes them, into a new array (no buffer kept:
        a scheduler may run several blocks at once and holds every result)."""
        if self._registry:
            return evaluate_kernel(self.kernel.expression, np, blocks)
        if self._ufunc is not None:
            ufunc, plan = self._ufunc
            return ufunc(*(blocks[p] if type(p) is int else p for p in plan))
        with _NUMEXPR_LOCK:
            return self._numexpr(*blocks)

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.kernel}>"


# --------------------------------------------------------------------------------------
# On Dask: one task per chunk
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _compiled_for_blocks(kernel: Kernel) -> CompiledKernel:
    """The kernel compiled once per process (a Dask worker builds its own from the
    picklable :class:`Kernel` its tasks carry)."""
    return CompiledKernel(kernel)


def kernel_on_blocks(kernel: Kernel, *blocks: Any) -> Any:
    """One Dask task: ``kernel`` on one chunk of each argument (NumPy arrays)."""
    return _compiled_for_blocks(kernel).on_blocks(blocks)


def dask_kernel(kernel: Kernel, xp: Any, arrays: Sequence[Any]) -> Any:
    """``kernel`` on Dask arrays: where the chunks line up (every argument of the
    kernel's shape chunked alike), one ``map_blocks`` task per chunk running the NumPy
    kernel (numexpr, or NumPy's ufunc) on that chunk, the others broadcast to the same
    chunks; else one Dask operation per primitive (:func:`evaluate_kernel`), which
    Dask rechunks as it needs.  The same NumPy calls per element as on NumPy, so the
    same bits."""
    dsa: Any = importlib.import_module("dask.array")  # untyped
    shape = tuple(kernel.shape)
    full = [a for a in arrays if isinstance(a, dsa.Array) and tuple(a.shape) == shape]
    if not shape or not full or any(a.chunks != full[0].chunks for a in full):
        return evaluate_kernel(kernel.expression, xp, arrays)
    chunks = full[0].chunks
    operands = [
        a if isinstance(a, dsa.Array) and tuple(a.shape) == shape
        else dsa.broadcast_to(dsa.asarray(a), shape, chunks=chunks)
        for a in arrays
    ]
    dtype = kernel.dtype.numpy()
    return dsa.map_blocks(
        kernel_on_blocks, kernel, *operands, dtype=dtype,
        meta=np.empty((0,) * len(shape), dtype=dtype), token=f"dualarr-{kernel.name}",
    )

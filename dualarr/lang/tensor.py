"""Traced values: :class:`Tensor` wraps a core term while a function is traced.

Tracing is a deep embedding (paper App. B): running the user's Python function on
``Tensor`` values builds the core-language DAG.  A Python value used twice is one node,
so sharing is kept without any ``let`` written by the user (App. C.2).  Shapes are
static; Python control flow on traced values is an error that points to ``da.where``.

Lifting rules (as NumPy/JAX users expect, within the core language's rules):
Python scalars take the element type of the other operand; int and float operands
promote to float; bool operands in arithmetic count as 0/1; rank-0 values lift to the
other operand's shape with ``replicate``; shapes broadcast by NumPy's rules, lowered to
``reshape``, ``replicate`` and ``tr`` (:func:`lift_shape`).
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import inspect
import reprlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import (
    DtypeError,
    DualarrError,
    ShapeError,
    TracingError,
    UnsupportedError,
    format_shape,
)
from .primitives import REGISTRY
from .terms import (
    OPS,
    Const,
    DType,
    FromIntegral,
    IdSupply,
    Op,
    OpKind,
    Replicate,
    Reshape,
    Term,
    Transpose,
    Var,
    fresh_var,
    type_name,
)


@dataclass(frozen=True, eq=False)
class NumpyCall:
    """One ``dualarr.numpy`` call as the user wrote it while tracing: the function's
    name, its arguments (traced values as their terms) and the terms it returned, which
    are its lowering to the core language."""

    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    results: tuple[Term, ...]


@dataclass(eq=False)
class TraceContext:
    """State of one trace: the id supply for the variables it creates, whether the
    trace is still running (a traced value used after its trace ended is an error), and
    the ``dualarr.numpy`` calls the user made (outermost ones, in order)."""

    supply: IdSupply
    active: bool = True
    numpy_calls: list[NumpyCall] = field(default_factory=list)
    numpy_depth: int = 0
    captured: dict[int, tuple[np.ndarray, Const]] = field(default_factory=dict)
    """The constant each captured NumPy array became, by the array's identity: an array
    used many times is one node (and one copy), as a traced value used twice is."""
    total_indexing: bool = False
    """Which rule ``x[...]`` with a traced index follows now (DESIGN §2 "Totality"): the
    paper's total one (§5.2) inside the index function of a core binder (``build``,
    ``build1``, ``map``, ``gather``, ``scatter``), NumPy's (negative indices wrap)
    everywhere else: at the top of a traced function, in ``vmap``'s function and inside
    ``dualarr.numpy`` (:func:`indexing_rule`)."""


_CURRENT: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar(
    "dualarr_trace", default=None
)


def current_context(op: str) -> TraceContext:
    """The active trace; ``op`` names the construct that needs one (for the message)."""
    ctx = _CURRENT.get()
    if ctx is None:
        raise TracingError(
            f"{op} builds a traced program and must run inside a function passed to "
            "da.trace, da.grad, da.pipeline, …",
            op=op,
        )
    return ctx


def current_trace() -> TraceContext | None:
    """The running trace, or None outside any."""
    return _CURRENT.get()


def enter_trace(ctx: TraceContext) -> contextvars.Token[TraceContext | None]:
    return _CURRENT.set(ctx)


def exit_trace(token: contextvars.Token[TraceContext | None]) -> None:
    context = _CURRENT.get()
    if context is not None:
        context.active = False
    _CURRENT.reset(token)


@contextlib.contextmanager
def indexing_rule(*, total: bool) -> Iterator[None]:
    """Run the block with ``x[...]``'s traced indices following the paper's total rule
    (``total=True``: out of range, negative included, reads 0) or NumPy's (negative
    indices wrap; what is still out of range reads 0).  Outside a trace it does nothing.
    """
    context = _CURRENT.get()
    if context is None:
        yield
        return
    before = context.total_indexing
    context.total_indexing = total
    try:
        yield
    finally:
        context.total_indexing = before


def new_var(op: str, hint: str, shape: tuple[int, ...], dtype: DType) -> Var:
    return fresh_var(current_context(op).supply, hint, shape, dtype)


def param_hints(f: Callable[..., Any], count: int, default: str) -> list[str]:
    """Names of ``f``'s first ``count`` positional parameters (for readable printing)."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return [default] * count
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            break
    names = [n if n.isidentifier() and not n.startswith("_") else default for n in names]
    return (names + [default] * count)[:count]


def positional_arity(f: Callable[..., Any]) -> int | None:
    """Number of positional parameters of ``f``, or None when it takes ``*args``."""
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return None
    count = 0
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            return None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            count += 1
    return count


def check_arity(
    f: Any, count: int, op: str, expected: str, error: type[DualarrError] = ShapeError
) -> None:
    """An ``error`` naming ``op``, before ``f`` is called, when ``f`` is not a function
    that takes ``count`` positional arguments (``expected`` says what they are)."""
    if not callable(f):
        raise TracingError(
            f"expected a function taking {expected}, got {type(f).__name__}", op=op
        )
    try:
        signature = inspect.signature(f)
    except (TypeError, ValueError):
        return  # no signature to check (a builtin): the call itself reports a mismatch
    try:
        signature.bind(*range(count))
    except TypeError:
        name = getattr(f, "__name__", type(f).__name__)
        shown = f"lambda {signature}" if name == "<lambda>" else f"{name}{signature}"
        raise error(
            f"the function must take {expected}, but {shown} cannot be called with "
            f"{count} argument{'' if count == 1 else 's'}",
            op=op,
        ) from None


# --------------------------------------------------------------------------------------
# Lifting Python values and promoting element types
# --------------------------------------------------------------------------------------

Operand = Any  # Tensor | Python scalar | NumPy array


def constant_array(value: Any, op: str, what: str = "the constant") -> np.ndarray:
    """``np.asarray(value)`` for a constant or an input (``what``), with named errors for
    a list holding traced values, ragged nesting and an unsupported element type."""

    def held() -> TracingError:
        return TracingError(
            f"{what} is a {type(value).__name__} holding traced values: use da.from_list / "
            "da.stack",
            op=op,
        )

    try:
        array = np.asarray(value)
    except TracingError:  # from a Tensor's __array__
        if _holds_tensor(value):
            raise held() from None
        raise
    except ValueError as error:
        if _holds_tensor(value):
            raise held() from None
        raise ShapeError(
            f"{what} ({reprlib.repr(value)}) is a ragged nested list: {_ragged(value, error)}; "
            "an array needs equal lengths along each dimension",
            op=op,
        ) from None
    if array.dtype == object and _holds_tensor(value):
        raise held()
    DType.of_numpy(array.dtype, what=what, op=op)
    return array


def _holds_tensor(value: Any) -> bool:
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            return True
        if isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, np.ndarray) and item.dtype == object:
            stack.extend(item.flat)
    return False


def _ragged(value: Any, error: ValueError) -> str:
    """Where nested lists stop being rectangular (NumPy's message when that is unclear)."""

    def nested(v: Any) -> bool:
        return isinstance(v, list | tuple) or (isinstance(v, np.ndarray) and v.ndim > 0)

    level: list[Any] = [value]
    dim = 0
    while level and all(nested(v) for v in level):
        lengths = sorted({len(v) for v in level})
        if len(lengths) > 1:
            shown = ", ".join(map(str, lengths[:-1])) + f" and {lengths[-1]}"
            return f"dimension {dim} has lengths {shown}"
        level = [x for v in level for x in v]
        dim += 1
    if any(nested(v) for v in level):
        return f"dimension {dim} mixes numbers and lists"
    return str(error)


def as_term(value: Operand, op: str = "constant") -> Term:
    """The term of a Tensor, or a constant for a Python/NumPy value."""
    if isinstance(value, Tensor):
        value.check_live(op)
        return value.term
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return _captured(value, op)
    if isinstance(value, list | tuple) and (stacked := _numpy_sequence(value, op)) is not None:
        return stacked
    if isinstance(value, bool | int | float | np.generic | np.ndarray | list | tuple):
        return _new_const(value, op)
    raise TracingError(f"expected an array or a number, got {type(value).__name__}", op=op)


def _numpy_sequence(value: list[Any] | tuple[Any, ...], op: str) -> Term | None:
    """Inside ``dualarr.numpy`` a (nested) list or tuple holding traced values is an
    array-like, as in NumPy: ``numpy.asarray`` of it (``fromList`` of the parts with
    NumPy's promotion; a ragged one is a :class:`ShapeError` naming ``op``).  Elsewhere
    None: the core's functions ask for ``da.stack`` (:func:`constant_array`)."""
    context = _CURRENT.get()
    asarray = _NUMPY_FUNCTIONS.get("asarray")
    if context is None or context.numpy_depth == 0 or asarray is None:
        return None
    if not _holds_tensor(value):
        return None
    try:
        stacked = asarray(value)
    except DualarrError as error:
        raise type(error)(
            error.detail, op=op, shapes=error.shapes, location=error.location
        ) from None
    assert isinstance(stacked, Tensor)
    return stacked.term


def _captured(value: np.ndarray, op: str) -> Const:
    """The constant of a captured array: the one made at its first use in this trace
    while its contents are unchanged (so a mutated array is a new constant)."""
    ctx = _CURRENT.get()
    seen = ctx.captured.get(id(value)) if ctx is not None else None
    if seen is not None and seen[0] is value and np.array_equal(seen[1].value, value):
        return seen[1]
    const = _new_const(value, op)
    if ctx is not None:
        ctx.captured[id(value)] = (value, const)  # held: its id is not reused meanwhile
    return const


def _new_const(value: Any, op: str) -> Const:
    """A constant of ``value`` (integers widened to int64)."""
    array = constant_array(value, op)
    return Const(array.astype(np.int64) if array.dtype.kind in "iu" else array)


def _weak_const(value: bool | int | float, dtype: DType) -> Const:
    return Const(np.asarray(value, dtype=dtype.numpy()))


def cast_to(term: Term, dtype: DType, op: str) -> Term:
    """Promote ``term`` to ``dtype`` (int/bool → float, bool → int)."""
    if term.dtype is dtype:
        return term
    if term.dtype is DType.BOOL and dtype.is_numeric:
        one, zero = _weak_const(1, dtype), _weak_const(0, dtype)
        return Op("select", (term, lift_shape(one, term.shape), lift_shape(zero, term.shape)))
    if term.dtype is DType.INT64 and dtype.is_float:
        return FromIntegral(term, dtype)
    if term.dtype.is_float and dtype.is_float:  # float32 <-> float64
        return FromIntegral(term, dtype)
    raise DtypeError(f"cannot use a {term.dtype} value where {dtype} is needed", op=op)


def lift_shape(term: Term, shape: tuple[int, ...]) -> Term:
    """Broadcast ``term`` to ``shape`` by NumPy's rules, in core terms (§3, Fig. 7): drop
    the size-1 dimensions that stretch (``reshape``), add each new or stretched dimension
    with ``replicate`` (outermost), then put the dimensions in place (``tr``)."""
    if term.shape == shape:
        return term
    source = term.shape
    offset = len(shape) - len(source)
    if offset < 0 or any(
        n != shape[offset + k] and n != 1 for k, n in enumerate(source)
    ):
        raise AssertionError(f"{source} does not broadcast to {shape}")
    kept = [d for d in range(len(shape)) if d >= offset and source[d - offset] == shape[d]]
    stretched = [d for d in range(len(shape)) if d not in kept]
    kept_shape = tuple(shape[d] for d in kept)
    if kept_shape != source:
        term = Reshape(kept_shape, term)
    for d in reversed(stretched):
        term = Replicate(shape[d], term)
    layout = stretched + kept  # the dimension of ``shape`` each current one holds
    if layout != sorted(layout):
        term = Transpose(tuple(layout.index(d) for d in range(len(shape))), term)
    return term


def broadcast_shapes(op: str, shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes`` (right-aligned; a dimension of 1 stretches), or a
    :class:`ShapeError` naming ``op`` and the shapes."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[int] = []
    for k in range(rank):
        extents = {s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0}
        extents.discard(1)
        if len(extents) > 1:
            raise ShapeError(
                "operands could not be broadcast together with shapes "
                + " and ".join(format_shape(x) for x in shapes)
                + f" (dimension {k - rank} has extents {sorted(extents)})",
                op=op,
                shapes=shapes,
            )
        result.append(extents.pop() if extents else 1)
    return tuple(result)


def join_dtypes(op: str, dtypes: Sequence[DType]) -> DType:
    """NumPy's promotion of array element types: bool < int64 < float32 < float64, and
    float32 with int64 is float64 (``np.result_type``)."""
    floats = {d for d in dtypes if d.is_float}
    if floats:
        if DType.FLOAT64 in floats or DType.INT64 in dtypes:
            return DType.FLOAT64
        return DType.FLOAT32
    if DType.INT64 in dtypes:
        return DType.INT64
    return DType.BOOL


def _weak_type(value: bool | int | float) -> DType:
    if isinstance(value, bool):
        return DType.BOOL
    return DType.INT64 if isinstance(value, int) else DType.FLOAT64


def promote(op: str, kind: OpKind, operands: Sequence[Operand]) -> list[Term]:
    """The operands as terms of one element type (no shape lifting).

    Python numbers are "weak": they adopt the other operands' element type.
    """
    terms: list[Term | None] = [  # a NumPy scalar (np.float64 is a float) is strong
        None if _is_weak(x) else _operand_term(x, op) for x in operands
    ]
    strong = [t.dtype for t in terms if t is not None]
    weak = [_weak_type(x) for x, t in zip(operands, terms, strict=True) if t is None]
    target = _target_dtype(op, kind, strong, weak)
    return [
        cast_to(t if t is not None else _weak_const(x, target), target, op)
        for x, t in zip(operands, terms, strict=True)
    ]


def _is_weak(value: Operand) -> bool:
    """A Python number: it adopts the other operands' element type (NEP 50)."""
    return isinstance(value, bool | int | float) and not isinstance(value, np.generic)


def _operand_term(value: Operand, op: str) -> Term:
    if isinstance(value, list | tuple) and (stacked := _numpy_sequence(value, op)) is not None:
        return stacked
    if isinstance(value, list | tuple | np.ndarray):
        value = constant_array(value, op, "the operand")
    return as_term(value, op)


def elementwise(op: str, *operands: Operand) -> Tensor:
    """Apply an elementwise primitive with scalar lifting and type promotion."""
    spec = OPS[op]
    if spec.kind is OpKind.SELECT:
        cond = as_term(operands[0], op)
        if cond.dtype is not DType.BOOL:
            raise DtypeError(f"condition must be bool, got {cond.dtype}", op="where")
        args = [cond, *promote(op, spec.kind, operands[1:])]
    else:
        if op in _BOOL_ARITHMETIC and _all_bool(op, operands):
            op = _bool_arithmetic(op)
        args = promote(op, OPS[op].kind, operands)
    shape = common_shape(op, [a.shape for a in args])
    return Tensor(Op(op, tuple(lift_shape(a, shape) for a in args)))


_BOOL_ARITHMETIC: dict[str, str | None] = {
    "add": "or",
    "maximum": "or",
    "mul": "and",
    "minimum": "and",
    "sub": None,
    "neg": None,
}
"""NumPy's arithmetic on bool arrays alone: ``+``/``maximum`` are logical or, ``*``/
``minimum`` logical and, and ``-`` is an error (``np.subtract`` rejects bools)."""


def _all_bool(op: str, operands: Sequence[Operand]) -> bool:
    return all(
        isinstance(x, bool) if _is_weak(x) else _operand_term(x, op).dtype is DType.BOOL
        for x in operands
    )


def _logical_xor(a: Operand, b: Operand) -> Tensor:
    """``a ^ b`` on bool values: ``ne`` (bitwise xor of integers is not in the language)."""
    if not _all_bool("ne", (a, b)):
        raise UnsupportedError("`^` is logical xor on bool values only", op="xor")
    return elementwise("ne", a, b)


def _bool_arithmetic(op: str) -> str:
    logical = _BOOL_ARITHMETIC[op]
    if logical is None:
        raise DtypeError(
            "boolean subtract and negative are not supported (as in NumPy): use "
            "logical_xor (`^`) or logical_not (`~`), or convert with astype(int)",
            op=op,
        )
    return logical


def _target_dtype(
    op: str, kind: OpKind, strong: Sequence[DType], weak: Sequence[DType]
) -> DType:
    """The element type every argument is promoted to before applying ``op``."""
    if strong:
        target = join_dtypes(op, strong)
        if DType.FLOAT64 in weak and not target.is_float:
            target = DType.FLOAT64
        elif DType.INT64 in weak and target is DType.BOOL:
            target = DType.INT64
    else:
        target = join_dtypes(op, weak)
    if kind in (OpKind.LOGIC_UNARY, OpKind.LOGIC_BINARY):
        if target is not DType.BOOL:
            raise DtypeError(f"needs bool arguments, got {target}", op=op)
        return target
    if kind in (OpKind.SELECT, OpKind.COMPARE):
        return target
    if kind is OpKind.INT_BINARY:
        if target.is_float:
            symbol = "//" if op == "quot" else "%"
            raise UnsupportedError(
                f"`{symbol}` is integer arithmetic (index computations); for floats use "
                "da.floor(x / y) and x - y * da.to_float(da.floor(x / y))",
                op=op,
            )
        return DType.INT64
    if kind in (OpKind.FLOAT_UNARY, OpKind.FLOAT_BINARY) and not target.is_float:
        return DType.FLOAT64
    return DType.INT64 if target is DType.BOOL else target


def common_shape(op: str, shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The shape elementwise ``op`` works at: the operands' shapes broadcast together."""
    return broadcast_shapes(op, shapes)


# --------------------------------------------------------------------------------------
# The traced value
# --------------------------------------------------------------------------------------

def _primitive_of_ufunc(name: str) -> str | None:
    """The primitive whose record names the NumPy ufunc ``name`` (``np.exp`` → exp)."""
    for primitive in REGISTRY.values():
        if name in primitive.ufuncs:
            return primitive.name
    return None


_NUMPY_FUNCTIONS: dict[str, Callable[..., Any]] = {}
"""``dualarr.numpy`` by name: what NumPy's functions and ufuncs mean on traced values.
:mod:`dualarr.numpy`, the layer above, installs it (:func:`install_numpy_functions`)."""


def install_numpy_functions(functions: dict[str, Callable[..., Any]]) -> None:
    """Make ``functions`` (NumPy names) what NumPy calls on traced values dispatch to."""
    _NUMPY_FUNCTIONS.update(functions)


_PRODUCTS = frozenset({"matmul", "dot", "vdot", "inner", "multi_dot", "tensordot", "vecdot"})
"""NumPy's products: their errors on traced values suggest ``da.matmul`` (``a @ b``)."""


def unsupported_numpy(spelled: str, name: str, reason: str) -> UnsupportedError:
    """The error for a NumPy function with no lowering: it names the function and the
    nearest ``dualarr.numpy`` spelling."""
    near = difflib.get_close_matches(name, list(_NUMPY_FUNCTIONS), n=3, cutoff=0.6)
    hint = (
        f"; the nearest dualarr.numpy functions are {', '.join(f'dnp.{n}' for n in near)}"
        if near
        else "; write it with dualarr.numpy (import dualarr.numpy as dnp) or da.build"
    )
    if name.rsplit(".", 1)[-1] in _PRODUCTS:
        hint += "; for a matrix product of traced values write da.matmul(a, b) or a @ b"
    why = f" (called {reason})" if reason else ""
    return UnsupportedError(
        f"this NumPy function{why} has no lowering to the core language on traced "
        f"values{hint}",
        op=spelled,
    )


_ARRAY_METHODS: dict[str, Callable[..., Tensor]] = {}
"""The language functions behind :class:`Tensor`'s array methods (``x[i]``, ``x @ y``,
``x.sum()``, ``x // y``): :mod:`dualarr.lang.functions`, the layer above, installs them
(:func:`install_array_methods`), as JAX's ``array_methods`` do for its tracers, so
this module never imports the functions written on top of it."""


def install_array_methods(**functions: Callable[..., Tensor]) -> None:
    """Make ``functions`` the meaning of :class:`Tensor`'s array methods."""
    _ARRAY_METHODS.update(functions)


def array_method(name: str) -> Callable[..., Tensor]:
    """The installed function behind one array method."""
    function = _ARRAY_METHODS.get(name)
    if function is None:
        raise UnsupportedError(
            f"the array method {name} needs dualarr.lang.functions (import dualarr)", op=name
        )
    return function


def _matmul(a: Operand, b: Operand) -> Tensor:
    """``a @ b``: the core matmul (ranks 1–2); a batched product (an operand of rank 3 or
    more) follows ``numpy.matmul`` through ``dualarr.numpy`` when it is installed."""
    batched = any((len(x.shape) if isinstance(x, Tensor) else np.ndim(x)) > 2 for x in (a, b))
    function = _NUMPY_FUNCTIONS.get("matmul") if batched else None
    return (function or array_method("matmul"))(a, b)


class Tensor:
    """A traced array: a node of the program being traced, with a static shape."""

    __slots__ = ("term", "trace")
    __array_priority__ = 1000

    def __init__(self, term: Term) -> None:
        self.term = term
        self.trace = _CURRENT.get()

    def check_live(self, op: str) -> None:
        """A :class:`TracingError` when this value's trace has ended (a leaked tracer)."""
        if self.trace is not None and not self.trace.active:
            raise TracingError(
                f"a traced {type_name(self.shape, self.term.dtype)} value is used after the "
                "trace that made it ended (it leaked out of the traced function, e.g. "
                "through a global or a list): return it from the function instead",
                op=op,
                shapes=[self.shape],
            )

    # -- static facts ------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self.term.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.term.dtype.numpy()

    @property
    def ndim(self) -> int:
        return len(self.term.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.term.shape, dtype=np.int64))

    def __repr__(self) -> str:
        text = str(self.term)
        if len(text) > 200:
            text = text[:200] + " …"
        return f"Tensor({type_name(self.shape, self.term.dtype)}: {text})"

    # -- Python protocols that cannot work on traced values -----------------------------

    def _no(self, what: str, hint: str) -> TracingError:
        return TracingError(
            f"{what} of a traced {type_name(self.shape, self.term.dtype)} value is not known "
            f"while tracing; {hint}",
            op=what,
            shapes=[self.shape],
        )

    def __bool__(self) -> bool:
        raise self._no(
            "bool()",
            "Python `if`/`while`/`and`/`or` cannot branch on it: use da.where(cond, a, b) "
            "(a strict conditional, both branches evaluated)",
        )

    def __len__(self) -> int:
        if not self.shape:
            raise self._no("len()", "a rank-0 value has no length; shapes are static: use x.shape")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape:
            raise self._no("iteration", "a rank-0 value cannot be iterated; use x.shape")
        return (self[k] for k in range(self.shape[0]))

    def __int__(self) -> int:
        raise self._no("int()", "use da.floor(x) for an int-valued term, x.shape for sizes")

    def __float__(self) -> float:
        raise self._no("float()", "use da.to_float(x) for a float-valued term")

    def __index__(self) -> int:
        raise self._no(
            "__index__", "sizes must be static Python ints; use x.shape or traced indexing x[i]"
        )

    def __complex__(self) -> complex:
        raise self._no("complex()", "complex numbers are not supported")

    def __format__(self, spec: str) -> str:
        raise self._no(
            "format()",
            "formatting needs a concrete value: show the traced term with str(x), repr(x) "
            "or f\"{x!r}\", or format the arrays the program returns",
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise self._no(
            "conversion to a NumPy array",
            "use dualarr functions (da.exp, da.sum, …) inside traced code; a NumPy "
            "array's own method converts a traced argument (W.dot(x)): for a matrix "
            "product write W @ x or da.matmul(W, x)",
        )

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy's ufuncs on traced values (``np.exp(t)``, ``W @ t``): the ``dualarr.numpy``
        function of the same name, else the registry primitive naming that ufunc."""
        name = getattr(ufunc, "__name__", str(ufunc))
        if method == "__call__" and not kwargs:
            function = _NUMPY_FUNCTIONS.get(name)
            if function is not None:
                return function(*inputs)
            op = _primitive_of_ufunc(name)
            if op is not None and op not in ("quot", "rem"):
                return elementwise(op, *inputs)
        spelled = f"numpy.{name}" if method == "__call__" else f"numpy.{name}.{method}"
        reason = f"with {', '.join(sorted(kwargs))}" if method == "__call__" and kwargs else ""
        raise unsupported_numpy(spelled, name, reason)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy's functions on traced values (``np.sum(t)``, ``np.stack([t, u])``): the
        ``dualarr.numpy`` function of the same name."""
        name = getattr(func, "__name__", str(func))
        module = getattr(func, "__module__", "") or ""
        qualified = name if module in ("numpy", "") else f"{module.removeprefix('numpy.')}.{name}"
        function = _NUMPY_FUNCTIONS.get(qualified)
        if function is None:
            raise unsupported_numpy(f"numpy.{qualified}", qualified, "")
        return function(*args, **kwargs)

    # -- arithmetic ----------------------------------------------------------------------

    def __add__(self, other: Operand) -> Tensor:
        return elementwise("add", self, other)

    def __radd__(self, other: Operand) -> Tensor:
        return elementwise("add", other, self)

    def __sub__(self, other: Operand) -> Tensor:
        return elementwise("sub", self, other)

    def __rsub__(self, other: Operand) -> Tensor:
        return elementwise("sub", other, self)

    def __mul__(self, other: Operand) -> Tensor:
        return elementwise("mul", self, other)

    def __rmul__(self, other: Operand) -> Tensor:
        return elementwise("mul", other, self)

    def __truediv__(self, other: Operand) -> Tensor:
        return elementwise("div", self, other)

    def __rtruediv__(self, other: Operand) -> Tensor:
        return elementwise("div", other, self)

    def __floordiv__(self, other: Operand) -> Tensor:
        return array_method("floor_divide")(self, other)

    def __rfloordiv__(self, other: Operand) -> Tensor:
        return array_method("floor_divide")(other, self)

    def __mod__(self, other: Operand) -> Tensor:
        return array_method("remainder")(self, other)

    def __rmod__(self, other: Operand) -> Tensor:
        return array_method("remainder")(other, self)

    def __pow__(self, other: Operand) -> Tensor:
        return elementwise("pow", self, other)

    def __rpow__(self, other: Operand) -> Tensor:
        return elementwise("pow", other, self)

    def __neg__(self) -> Tensor:
        return elementwise("neg", self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return elementwise("abs", self)

    def __lt__(self, other: Operand) -> Tensor:
        return elementwise("lt", self, other)

    def __le__(self, other: Operand) -> Tensor:
        return elementwise("le", self, other)

    def __gt__(self, other: Operand) -> Tensor:
        return elementwise("gt", self, other)

    def __ge__(self, other: Operand) -> Tensor:
        return elementwise("ge", self, other)

    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        return elementwise("eq", self, other)

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        return elementwise("ne", self, other)

    def __hash__(self) -> int:
        raise self._no(
            "hash()",
            "traced values are unhashable (like JAX's tracers): key dicts and sets by id(x)",
        )

    def __and__(self, other: Operand) -> Tensor:
        return elementwise("and", self, other)

    def __rand__(self, other: Operand) -> Tensor:
        return elementwise("and", other, self)

    def __or__(self, other: Operand) -> Tensor:
        return elementwise("or", self, other)

    def __xor__(self, other: Operand) -> Tensor:
        return _logical_xor(self, other)

    def __rxor__(self, other: Operand) -> Tensor:
        return _logical_xor(other, self)

    def __ror__(self, other: Operand) -> Tensor:
        return elementwise("or", other, self)

    def __invert__(self) -> Tensor:
        if self.term.dtype is not DType.BOOL:
            raise UnsupportedError("`~` is logical not on bool values only", op="not")
        return elementwise("not", self)

    def __matmul__(self, other: Operand) -> Tensor:
        return _matmul(self, other)

    def __rmatmul__(self, other: Operand) -> Tensor:
        return _matmul(other, self)

    # -- indexing and array methods --------------------------------------------------------

    def __getitem__(self, item: Any) -> Tensor:
        """``x[...]``: NumPy's indexing; a traced index wraps as NumPy's does except in a
        core binder's index function (the paper's total rule, :func:`indexing_rule`)."""
        return array_method("getitem")(self, item)

    @property
    def T(self) -> Tensor:
        return array_method("transpose")(self)

    # NumPy's array methods: the ``dualarr.numpy`` function of the same name

    def _numpy(self, name: str) -> Callable[..., Any]:
        function = _NUMPY_FUNCTIONS.get(name)
        if function is None:
            raise UnsupportedError(
                f"the array method {name} needs dualarr.numpy (import dualarr)", op=name
            )
        return function

    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
        return self._numpy("sum")(self, axis=axis, dtype=dtype, keepdims=keepdims)  # type: ignore[no-any-return]

    def mean(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
        return self._numpy("mean")(self, axis=axis, dtype=dtype, keepdims=keepdims)  # type: ignore[no-any-return]

    def prod(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
        return self._numpy("prod")(self, axis=axis, dtype=dtype, keepdims=keepdims)  # type: ignore[no-any-return]

    def var(
        self, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False
    ) -> Tensor:
        return self._numpy("var")(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)  # type: ignore[no-any-return]

    def std(
        self, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False
    ) -> Tensor:
        return self._numpy("std")(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)  # type: ignore[no-any-return]

    def max(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return self._numpy("max")(self, axis=axis, keepdims=keepdims)  # type: ignore[no-any-return]

    def min(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return self._numpy("min")(self, axis=axis, keepdims=keepdims)  # type: ignore[no-any-return]

    def argmax(self, axis: Any = None) -> Tensor:
        return self._numpy("argmax")(self, axis)  # type: ignore[no-any-return]

    def argmin(self, axis: Any = None) -> Tensor:
        return self._numpy("argmin")(self, axis)  # type: ignore[no-any-return]

    def cumsum(self, axis: Any = None) -> Tensor:
        return self._numpy("cumsum")(self, axis)  # type: ignore[no-any-return]

    def cumprod(self, axis: Any = None) -> Tensor:
        return self._numpy("cumprod")(self, axis)  # type: ignore[no-any-return]

    def all(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return self._numpy("all")(self, axis=axis, keepdims=keepdims)  # type: ignore[no-any-return]

    def any(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return self._numpy("any")(self, axis=axis, keepdims=keepdims)  # type: ignore[no-any-return]

    def clip(self, min: Any = None, max: Any = None) -> Tensor:
        return self._numpy("clip")(self, min, max)  # type: ignore[no-any-return]

    def astype(self, dtype: Any) -> Tensor:
        return self._numpy("astype")(self, dtype)  # type: ignore[no-any-return]

    def ravel(self) -> Tensor:
        return self._numpy("ravel")(self)  # type: ignore[no-any-return]

    def flatten(self) -> Tensor:
        return self._numpy("ravel")(self)  # type: ignore[no-any-return]

    def squeeze(self, axis: Any = None) -> Tensor:
        return self._numpy("squeeze")(self, axis)  # type: ignore[no-any-return]

    def swapaxes(self, axis1: int, axis2: int) -> Tensor:
        return self._numpy("swapaxes")(self, axis1, axis2)  # type: ignore[no-any-return]

    def dot(self, b: Any) -> Tensor:
        return self._numpy("dot")(self, b)  # type: ignore[no-any-return]

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
        return self._numpy("diagonal")(self, offset, axis1, axis2)  # type: ignore[no-any-return]

    def repeat(self, repeats: Any, axis: Any = None) -> Tensor:
        return self._numpy("repeat")(self, repeats, axis)  # type: ignore[no-any-return]

    def sort(self, axis: int = -1) -> Tensor:
        return self._numpy("sort")(self, axis)  # type: ignore[no-any-return]

    def argsort(self, axis: int = -1) -> Tensor:
        return self._numpy("argsort")(self, axis)  # type: ignore[no-any-return]

    def reshape(self, *shape: Any) -> Tensor:
        target = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple | list) else shape
        return array_method("reshape")(self, tuple(target))

    def transpose(self, *perm: int) -> Tensor:
        return array_method("transpose")(self, perm or None)


def ensure_tensor(value: Operand, op: str) -> Tensor:
    """A Tensor for a Tensor, Python number or NumPy array argument."""
    return value if isinstance(value, Tensor) else Tensor(as_term(value, op))


def static_integer(value: Any, op: str, what: str, expected: str = "an int") -> int:
    """A static (Python or NumPy) int, or a clear error for a traced value or another
    type (``expected`` says what was wanted)."""
    if isinstance(value, Tensor):
        raise TracingError(
            f"{what} must be a static Python int (shapes are static), got a traced "
            f"{type_name(value.shape, value.term.dtype)} value",
            op=op,
        )
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ShapeError(f"{what} must be {expected}, got {value!r}", op=op)
    return int(value)


def static_int(value: Any, op: str, what: str) -> int:
    """A static (Python) non-negative int, or a clear error for a traced one."""
    value = static_integer(value, op, what)
    if value < 0:
        raise ShapeError(f"{what} must be >= 0, got {value}", op=op)
    return int(value)

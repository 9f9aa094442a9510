"""The Python spellings of the core language (README, "Writing programs"; ``book/rules.md §1``).

Each function builds core terms (paper Fig. 7) from traced :class:`Tensor` values:
``build1``/``build``/``map``, indexing, ``gather``/``scatter``, ``let``, ``where``,
``sum_outer``/``replicate``/``transpose``/``reshape``, casts, and the derived operations
that are sugar over them (``sum``, ``mean``, ``min``/``max``, ``dot``, ``matmul``,
``softmax``, ``logsumexp``, ``concatenate``).
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any

import numpy as np

from . import indexing as ix_
from .errors import (
    DtypeError,
    IndexOutOfRangeError,
    ShapeError,
    TracingError,
    UnsupportedError,
    format_shape,
)
from .primitives import REGISTRY, Partial, define
from .program import fresh_result
from .tensor import (
    Operand,
    Tensor,
    TraceContext,
    as_term,
    cast_to,
    check_arity,
    common_shape,
    constant_array,
    current_trace,
    elementwise,
    enter_trace,
    exit_trace,
    indexing_rule,
    install_array_methods,
    lift_shape,
    new_var,
    param_hints,
    positional_arity,
    promote,
    static_int,
    static_integer,
)
from .tensor import ensure_tensor as _ensure_tensor
from .terms import (
    ArgMax,
    ArgMin,
    Build1,
    Cond,
    Const,
    DType,
    Floor,
    FromList,
    Gather,
    IdSupply,
    Index,
    Iota,
    Let,
    OpKind,
    Replicate,
    Reshape,
    Scatter,
    SumOuter,
    Term,
    Transpose,
    Var,
    int_const,
    type_name,
    view,
)

IndexFn = Callable[..., Any]


def ensure_tensor(value: Operand, op: str) -> Tensor:
    """The Tensor for an argument of ``op``; a list or array is checked first (ragged
    nesting, traced values inside, element type) so the error names ``op``."""
    if isinstance(value, list | tuple | np.ndarray):
        value = constant_array(value, op, "the argument")
    return _ensure_tensor(value, op)


def _variables(count: int, what: str = "index variable") -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"

# --------------------------------------------------------------------------------------
# Constants and simple constructors
# --------------------------------------------------------------------------------------


def constant(value: Any, dtype: Any = None) -> Tensor:
    """A constant array (``c`` in Fig. 7).  Works outside a trace too."""
    array = constant_array(value, "constant")
    if dtype is not None:
        DType.of_numpy(dtype, what="dtype", op="constant")
        array = array.astype(dtype)
    return Tensor(as_term(array, "constant"))


def iota(n: int) -> Tensor:
    """``iota n``: the int array ``[0, 1, …, n-1]``."""
    return Tensor(Iota(static_int(n, "iota", "size")))


def to_float(x: Operand, dtype: Any = np.float64) -> Tensor:
    """int (or bool) → float, elementwise (``fromIntegral``)."""
    t = ensure_tensor(x, "to_float")
    target = DType.of_numpy(dtype, what="to_float")
    if not target.is_float:
        raise DtypeError(f"target type must be a float type, got {target}", op="to_float")
    if t.term.dtype.is_float:
        if t.term.dtype is not target:
            raise DtypeError(
                f"converting {t.term.dtype} to {target} is not supported", op="to_float"
            )
        return t
    return Tensor(cast_to(t.term, target, "to_float"))


def floor(x: Operand) -> Tensor:
    """float → int, rounding down (``floor``); never differentiated."""
    t = ensure_tensor(x, "floor")
    if t.term.dtype is DType.INT64:
        return t
    if t.term.dtype is DType.BOOL:
        return Tensor(cast_to(t.term, DType.INT64, "floor"))
    return Tensor(Floor(t.term))


# --------------------------------------------------------------------------------------
# Elementwise operations
# --------------------------------------------------------------------------------------


def _traced(name: str) -> Callable[..., Tensor]:
    """The tracing function of the registered elementwise primitive ``name`` (its
    record's function name and docstring).  It reads the record when called, so a
    primitive defined again (``da.primitive``) is the new one through every function
    of that name.  Called on arrays and numbers outside any trace it computes the value
    now, as ``jax.numpy``'s functions do (:func:`_evaluated_now`)."""
    record = REGISTRY[name]

    def fn(*operands: Operand) -> Any:
        current = REGISTRY[name]
        if len(operands) != current.arity:
            raise TracingError(
                f"takes {current.arity} argument{'s' if current.arity != 1 else ''}, got "
                f"{len(operands)}",
                op=current.function or name,
            )
        if current_trace() is None and not builtins.any(isinstance(o, Tensor) for o in operands):
            return _evaluated_now(name, operands)
        return elementwise(name, *operands)

    fn.__name__ = fn.__qualname__ = record.function or name
    fn.__doc__ = record.doc
    return fn


def _evaluated_now(name: str, operands: Sequence[Operand]) -> Any:
    """The primitive ``name`` on constant operands: traced on them and evaluated by the
    reference evaluator (the same promotion and broadcasting as under a trace); a
    NumPy array sharing no memory with an argument."""
    token = enter_trace(TraceContext(IdSupply()))
    try:
        term = elementwise(name, *operands).term
    finally:
        exit_trace(token)
    (value,) = view("evaluate")([term], {})
    return fresh_result(np.asarray(value), [o for o in operands if isinstance(o, np.ndarray)])


# the built-in primitives' tracing functions, typed (a primitive registered later is
# found by name too: ``__getattr__`` below)
exp: Callable[[Operand], Tensor] = _traced("exp")
stop_gradient: Callable[[Operand], Tensor] = _traced("stop_gradient")
log: Callable[[Operand], Tensor] = _traced("log")
log1p: Callable[[Operand], Tensor] = _traced("log1p")
expm1: Callable[[Operand], Tensor] = _traced("expm1")
sin: Callable[[Operand], Tensor] = _traced("sin")
cos: Callable[[Operand], Tensor] = _traced("cos")
tan: Callable[[Operand], Tensor] = _traced("tan")
asin: Callable[[Operand], Tensor] = _traced("asin")
acos: Callable[[Operand], Tensor] = _traced("acos")
atan: Callable[[Operand], Tensor] = _traced("atan")
sinh: Callable[[Operand], Tensor] = _traced("sinh")
cosh: Callable[[Operand], Tensor] = _traced("cosh")
tanh: Callable[[Operand], Tensor] = _traced("tanh")
sqrt: Callable[[Operand], Tensor] = _traced("sqrt")
recip: Callable[[Operand], Tensor] = _traced("recip")
sigmoid: Callable[[Operand], Tensor] = _traced("sigmoid")
abs: Callable[[Operand], Tensor] = _traced("abs")
sign: Callable[[Operand], Tensor] = _traced("sign")
negative: Callable[[Operand], Tensor] = _traced("neg")
logical_not: Callable[[Operand], Tensor] = _traced("not")
atan2: Callable[[Operand, Operand], Tensor] = _traced("atan2")
maximum: Callable[[Operand, Operand], Tensor] = _traced("maximum")
minimum: Callable[[Operand, Operand], Tensor] = _traced("minimum")
logical_and: Callable[[Operand, Operand], Tensor] = _traced("and")
logical_or: Callable[[Operand, Operand], Tensor] = _traced("or")


def __getattr__(name: str) -> Callable[..., Tensor]:
    """The tracing function of a primitive registered under the function name ``name``
    (``da.erf`` once ``erf`` is in the registry)."""
    for record in REGISTRY.values():
        if record.function == name:
            return _traced(record.name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def primitive(
    name: str,
    impl: Callable[..., Any],
    partials: Sequence[Partial],
    *,
    sympy: Callable[..., Any] | None = None,
    doc: str = "",
    zero_preserving: bool = False,
) -> Callable[..., Tensor]:
    """A new elementwise float primitive, working through every stage (tracing,
    printing, the bot, dual arrays in both modes, code generation, drawing, SymPy and
    ``check_grad``): one record in :data:`dualarr.lang.primitives.REGISTRY`.

    ``impl(xp, *args)`` computes it on arrays of an array-API namespace ``xp``;
    ``partials`` gives, per argument, its partial derivative ``f(m, *args, y)`` written
    with operators and ``m.<primitive>`` over any algebra (``lambda m, x, y: m.exp(-x *
    x) * 1.1283791670955126`` for ``erf``), :data:`dualarr.lang.primitives.IDENTITY` or None;
    ``sympy(s, *args)`` its SymPy spelling (``lambda s, x: s.sp.erf(x)``), needed by
    ``check_grad``'s exact cross-check.  Returns the tracing function (``erf(x)``); it
    is also ``da.<name>``.  Called on arrays outside any trace it computes the value.

    Defined again under the same name (a re-run notebook cell), the new definition
    replaces the old one at once, in every mode and transformation: compiled programs
    are keyed on the record (:mod:`dualarr.lang.closure`), generated code binds the
    implementation it was compiled with, and ``da.jit`` traces again.  A compiled
    program made before keeps the old definition whole (value and derivative), and a
    :class:`~dualarr.Pipeline` made before refuses to build a stage from it.

    Misuse is a :class:`~dualarr.lang.errors.PrimitiveError` naming the primitive: a
    name that is not a string identifier or partials that are not a tuple
    (:class:`~dualarr.lang.errors.PrimitiveDefinitionError`, where it is defined); a
    partial that fails on the algebra (``np.cos(x)`` for ``m.cos(x)``) or returns
    ``None`` (:class:`~dualarr.lang.errors.PartialDerivativeError`, at the partial's
    line); an implementation whose result is not its arguments' shape
    (:class:`~dualarr.lang.errors.PrimitiveResultError`)."""
    define(name, impl, partials, sympy=sympy, doc=doc, zero_preserving=zero_preserving)
    return _traced(name)


_WHOLE = float(2**52)  # every float at least this large is a whole number


def floor_divide(a: Operand, b: Operand) -> Tensor:
    """``a // b``: on ints ``quot`` (total: ``a // 0 == a``, §5.2); on floats NumPy's
    ``floor_divide`` as ``to_float(floor(a / b))``, with derivative 0.  A quotient that is
    not finite, or already whole (``|a / b| >= 2**52``), is ``a / b`` itself, so
    ``a // 0.0`` is ±inf or nan as in NumPy."""
    ta, tb = _division_operands("quot", a, b)
    if not ta.term.dtype.is_float:
        return elementwise("quot", ta, tb)
    return _float_quotient(ta, tb)


def remainder(a: Operand, b: Operand) -> Tensor:
    """``a % b``: on ints ``rem`` (total: ``a % 0 == a``, §5.2); on floats NumPy's
    ``remainder`` (the sign of ``b``) as ``a - b * (a // b)``: derivative 1 in ``a`` and
    ``-(a // b)`` in ``b``; ``a % 0.0`` is nan as in NumPy."""
    ta, tb = _division_operands("rem", a, b)
    if not ta.term.dtype.is_float:
        return elementwise("rem", ta, tb)
    return ta - tb * _float_quotient(ta, tb)


def _division_operands(op: str, a: Operand, b: Operand) -> tuple[Tensor, Tensor]:
    """``a`` and ``b`` promoted to one element type and lifted to one shape (errors name
    ``op``, not the operations ``//`` and ``%`` are composed of)."""
    ta, tb = promote(op, OpKind.NUM_BINARY, [a, b])
    shape = common_shape(op, [ta.shape, tb.shape])
    return Tensor(lift_shape(ta, shape)), Tensor(lift_shape(tb, shape))


def _float_quotient(a: Tensor, b: Tensor) -> Tensor:
    q = a / b
    whole = to_float(floor(q), q.dtype)
    return elementwise("select", abs(q) < _WHOLE, whole, stop_gradient(q))


def imax(a: Operand, b: Operand) -> Tensor:
    """Maximum of integer (index) values."""
    return _int_op("maximum", "imax", a, b)


def imin(a: Operand, b: Operand) -> Tensor:
    """Minimum of integer (index) values."""
    return _int_op("minimum", "imin", a, b)


def _int_op(op: str, name: str, a: Operand, b: Operand) -> Tensor:
    result = elementwise(op, a, b)
    if result.term.dtype is not DType.INT64:
        raise DtypeError(f"needs int arguments, got {result.term.dtype}", op=name)
    return result


def relu(x: Operand) -> Tensor:
    """``max(x, 0)``, differentiated as ``where(x > 0, dx, 0)``: derivative 0 at 0 (as
    horde-ad's and ``jax.nn.relu``'s), and at ``nan`` the value ``nan`` (as NumPy's
    ``maximum``) with derivative 0 (as ``jax.nn.relu``'s rule ``select(x > 0, g, 0)``).
    The else branch is ``maximum(x, 0)`` under ``stop_gradient``: 0 for ``x <= 0``,
    ``nan`` for ``nan``, and a zero Delta, so the derivative is the cond's (Fig. 15).
    Integer arrays (no ``nan``, no derivative) keep their dtype: ``where(x > 0, x, 0)``."""
    t = ensure_tensor(x, "relu")
    if not t.term.dtype.is_float:
        return where(t > 0, t, 0)
    return where(t > 0, t, stop_gradient(maximum(t, 0)))


def where(cond: Operand, a: Operand, b: Operand) -> Tensor:
    """Strict selection: both branches are evaluated (``cond`` of Fig. 7).

    A rank-0 condition selects whole arrays (``cond c a b``); a condition of the
    branches' shape selects elementwise.
    """
    c = ensure_tensor(cond, "where")
    if c.term.dtype is not DType.BOOL:
        raise DtypeError(
            f"condition must be bool (a comparison), got {type_name(c.shape, c.term.dtype)}",
            op="where",
            shapes=[c.shape],
        )
    if c.shape == ():
        ta, tb = promote("where", OpKind.SELECT, [a, b])
        shape = common_shape("where", [ta.shape, tb.shape])  # the branches broadcast
        return Tensor(Cond(c.term, lift_shape(ta, shape), lift_shape(tb, shape)))
    return elementwise("select", c, a, b)


def _lift(term: Term, shape: tuple[int, ...]) -> Term:
    for extent in reversed(shape):
        term = Replicate(extent, term)
    return term


# --------------------------------------------------------------------------------------
# Binders: build1, build, map, let
# --------------------------------------------------------------------------------------


def build1(n: int, f: Callable[[Tensor], Operand]) -> Tensor:
    """``build1 n (λi. f(i))``: the array ``[f(0), …, f(n-1)]`` (Fig. 7)."""
    size = static_int(n, "build1", "size")
    check_arity(f, 1, "build1", "1 index variable (λi. e)")
    (hint,) = param_hints(f, 1, "i")
    var = new_var("build1", hint, (), DType.INT64)
    with indexing_rule(total=True):
        body = ensure_tensor(f(Tensor(var)), "build1")
    return Tensor(Build1(size, var, body.term))


def _static_shape(shape: Any, op: str, *, infer: bool = False) -> list[int]:
    """A static shape (an int or a sequence of ints) as a list; with ``infer`` one
    dimension may be -1."""
    if isinstance(shape, Tensor | int | np.integer):
        items: list[Any] = [shape]
    elif isinstance(shape, Sequence) and not isinstance(shape, str):
        items = list(shape)
    else:
        raise ShapeError(
            f"shape must be an int or a sequence of ints, got {shape!r}", op=op
        )
    dims: list[int] = []
    for k, d in enumerate(items):
        minus_one = isinstance(d, int | np.integer) and not isinstance(d, bool) and d == -1
        what = f"dimension {k} of the shape" if len(items) > 1 else "the shape"
        dims.append(-1 if infer and minus_one else static_int(d, op, what))
    return dims


def build(shape: Sequence[int] | int, f: Callable[..., Operand]) -> Tensor:
    """``build sh (λi j …. f(i, j, …))``: nested ``build1``, outermost dimension first."""
    sizes = _static_shape(shape, "build")
    check_arity(
        f,
        len(sizes),
        "build",
        f"{_variables(len(sizes))}, one per dimension of the shape {format_shape(sizes)}",
    )
    hints = param_hints(f, len(sizes), "i")
    variables = [new_var("build", h, (), DType.INT64) for h in hints]
    with indexing_rule(total=True):
        body = ensure_tensor(f(*[Tensor(v) for v in variables]), "build").term
    for size, var in zip(reversed(sizes), reversed(variables), strict=True):
        body = Build1(size, var, body)
    return Tensor(body)


def map(f: Callable[[Tensor], Operand], x: Operand) -> Tensor:
    """``build1 k (λi. f(x[i]))``: apply ``f`` to each row of ``x`` (its outer dimension)."""
    t = ensure_tensor(x, "map")
    if not t.shape:
        raise ShapeError("needs an array of rank >= 1, got rank 0", op="map", shapes=[t.shape])
    check_arity(f, 1, "map", "1 argument (a row of x)", TracingError)
    return build1(t.shape[0], lambda i: f(t[i]))


def let(value: Operand, body: Callable[[Tensor], Operand]) -> Tensor:
    """``let v = value in body(v)``: explicit sharing (Fig. 7)."""
    bound = ensure_tensor(value, "let").term
    check_arity(body, 1, "let", "1 argument (the bound value v)", TracingError)
    (hint,) = param_hints(body, 1, "v")
    var = new_var("let", hint, bound.shape, bound.dtype)
    result = ensure_tensor(body(Tensor(var)), "let")
    return Tensor(Let(var, bound, result.term))


# --------------------------------------------------------------------------------------
# Indexing, gather and scatter
# --------------------------------------------------------------------------------------


def _index_term(value: Any, op: str, position: int) -> Term:
    """A rank-0 int term for one index component."""
    if isinstance(value, bool):
        raise DtypeError(f"index component {position} is a bool", op=op)
    if isinstance(value, int | np.integer):
        return Const(np.asarray(value, dtype=np.int64))
    if isinstance(value, Tensor):
        term = value.term
        if term.dtype is not DType.INT64:
            hint = " (use da.floor to turn floats into ints)" if term.dtype.is_float else ""
            raise DtypeError(
                f"index component {position} must be an int, got "
                f"{type_name(term.shape, term.dtype)}{hint}",
                op=op,
                shapes=[term.shape],
            )
        if term.shape != ():
            raise ShapeError(
                f"index component {position} must be rank 0, got shape "
                f"{format_shape(term.shape)}",
                op=op,
                shapes=[term.shape],
            )
        return term
    raise DtypeError(
        f"index component {position} must be an int, got {type(value).__name__}", op=op
    )


def _index_components(result: Any, op: str) -> tuple[Term, ...]:
    items = tuple(result) if isinstance(result, tuple | list) else (result,)
    return tuple(_index_term(v, op, k) for k, v in enumerate(items))


def index(x: Operand, ix: Sequence[Any]) -> Tensor:
    """``index x ix``: the subarray at ``ix`` (zeros when out of range, §5.2)."""
    t = ensure_tensor(x, "index")
    return Tensor(Index(t.term, _index_components(tuple(ix), "index")))


def gather(shape: Sequence[int] | int, x: Operand, f: IndexFn) -> Tensor:
    """``gather sh x (λis. f(is))``: ``out[is] = x[f(is)]`` for ``is`` in ``sh``.

    ``f`` gets one int per dimension of ``sh`` and returns a tuple of ints (a prefix
    index into ``x``); out-of-range reads give 0.
    """
    t = ensure_tensor(x, "gather")
    outer = tuple(_static_shape(shape, "gather"))
    check_arity(
        f,
        len(outer),
        "gather",
        f"{_variables(len(outer))}, one per dimension of the shape {format_shape(outer)}",
    )
    hints = param_hints(f, len(outer), "i")
    variables = tuple(new_var("gather", h, (), DType.INT64) for h in hints)
    with indexing_rule(total=True):
        components = _index_components(f(*[Tensor(v) for v in variables]), "gather")
    return Tensor(Gather(outer, t.term, variables, components))


def scatter(shape: Sequence[int] | int, x: Operand, f: IndexFn) -> Tensor:
    """``scatter sh x (λis. f(is))``: ``out[f(is)] += x[is]``; out-of-range writes drop.

    ``f`` takes one int per leading dimension of ``x`` it ranges over (all of them when
    it takes ``*args``; at least one unless ``x`` is rank 0) and returns a full index
    into ``sh``.
    """
    t = ensure_tensor(x, "scatter")
    outer = tuple(_static_shape(shape, "scatter"))
    arity = positional_arity(f)
    n_vars = len(t.shape) if arity is None else arity
    if n_vars > len(t.shape) or (n_vars == 0 and t.shape):
        expected = (
            f"1 to {len(t.shape)}, one per leading dimension it ranges over"
            if t.shape
            else "none"
        )
        raise ShapeError(
            f"index function takes {n_vars} variables but the source has shape "
            f"{format_shape(t.shape)}: it must take {expected}",
            op="scatter",
            shapes=[t.shape],
        )
    check_arity(
        f,
        n_vars,
        "scatter",
        f"{_variables(n_vars)}, one per leading dimension of the source "
        f"{format_shape(t.shape)} it ranges over",
    )
    hints = param_hints(f, n_vars, "i")
    variables = tuple(new_var("scatter", h, (), DType.INT64) for h in hints)
    with indexing_rule(total=True):
        components = _index_components(f(*[Tensor(v) for v in variables]), "scatter")
    return Tensor(Scatter(outer, t.term, variables, components))


def _affine(v: Term, start: int, step: int) -> Term:
    """``start + step * v`` as a readable index term (``v + 1``, ``4 - v``, ``2 * v``)."""
    scaled = ix_.mul(int_const(builtins.abs(step)), v)
    if step < 0:
        return ix_.sub(int_const(start), scaled)
    return ix_.add(scaled, int_const(start))



# --------------------------------------------------------------------------------------
# x[...]: NumPy's rules, and the paper's total rules for traced indices in core binders
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Slice:
    """A slice over one axis: result position ``k`` reads ``start + step * k``."""

    start: int
    step: int
    length: int
    full: bool

    def lower(self, gather: _GatherBuilder) -> None:
        """A result axis of ``length`` whose variable ``k`` reads ``start + step * k``."""
        gather.components.append(_affine(gather.fresh(self.length), self.start, self.step))


@dataclass(frozen=True)
class _NewAxis:
    """``None`` / ``np.newaxis``: a size-1 result axis that no index component reads."""

    def lower(self, gather: _GatherBuilder) -> None:
        """A size-1 result axis, read by no component."""
        gather.fresh(1)


@dataclass(frozen=True)
class _Int:
    """A rank-0 int component: a static int (already wrapped) or a traced int."""

    term: Term

    @property
    def shape(self) -> tuple[int, ...]:
        return self.term.shape

    def lower(self, gather: _GatherBuilder) -> None:
        """The int itself; beside an array it is advanced (rank 0 in the broadcast), and
        the broadcast dimensions may go in its place."""
        if gather.fancy:
            gather.broadcast_variables()
        gather.components.append(self.term)


@dataclass(frozen=True, eq=False)
class _StaticArray:
    """A constant int array component (a list, an array or one axis of a mask) over
    ``axis`` of size ``size``; its entries are checked and wrapped once broadcast."""

    value: np.ndarray
    axis: int
    size: int

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)

    def lower(self, gather: _GatherBuilder) -> None:
        """The array, its negative entries wrapped, read at the broadcast position."""
        wrapped = np.where(self.value < 0, self.value + self.size, self.value)
        gather.components.append(Index(Const(wrapped), gather.read_at(self.shape)))


@dataclass(frozen=True)
class _TracedArray:
    """A traced int array component over an axis of ``size`` (its negative entries
    already wrapped where NumPy's rule holds): what is out of range reads 0 (§5.2)."""

    term: Term
    size: int

    @property
    def shape(self) -> tuple[int, ...]:
        return self.term.shape

    def lower(self, gather: _GatherBuilder) -> None:
        """The array read at the broadcast position."""
        gather.components.append(Index(self.term, gather.read_at(self.shape)))


_Part = _Slice | _NewAxis | _Int | _StaticArray | _TracedArray
_Advanced = _Int | _StaticArray | _TracedArray  # the parts NumPy calls advanced indices
_Item = None | EllipsisType | slice | int | Tensor | np.ndarray  # one index component, checked
_VALID = (
    "only ints, slices, `...`, None (np.newaxis), int arrays, constant bool masks and "
    "traced ints are valid indices"
)


def getitem(t: Tensor, item: Any) -> Tensor:
    """``x[...]``, lowered to one ``index`` or one ``gather`` (a ``reshape`` adds new axes
    to a plain ``index``).  Two rules, side by side:

    - **static** components (Python/NumPy ints, slices, ``None``/``np.newaxis``, ``...``,
      int arrays or lists, constant bool masks) follow NumPy exactly: negative ints
      wrap; int arrays broadcast together and their dimensions go in place when the
      advanced components (ints too, once an array is present) are adjacent, else
      first; a mask is its ``np.nonzero``.  Out of range: :class:`IndexOutOfRangeError`
      while tracing.
    - **traced** components (rank-0 ints, int arrays) follow NumPy too (negative
      indices wrap, as in ``jax.numpy``), except inside the index function of a core
      binder (``build``, ``build1``, ``map``, ``gather``, ``scatter``), where they
      follow the paper (§5.2) and do not wrap (:func:`~dualarr.lang.tensor.indexing_rule`).
      Out of range after that (no data-dependent error is possible while tracing): the
      read gives 0 and its gradient is 0, as ``jnp.take(mode="fill", fill_value=0)``.

    Scalar bools (``x[True]``) and traced masks (data-dependent shapes) are unsupported.
    """
    shape = t.shape
    context = current_trace()
    wrap = context is None or not context.total_indexing
    given = item if isinstance(item, tuple) else (item,)
    items = [_index_item(v, k) for k, v in enumerate(given)]
    if builtins.sum(1 for v in items if isinstance(v, EllipsisType)) > 1:
        raise ShapeError("an index can hold at most one `...`", op="index", shapes=[shape])
    used = builtins.sum(_axes_used(v) for v in items)
    if used > len(shape):
        raise ShapeError(
            f"too many indices for an array of shape {format_shape(shape)}: it has "
            f"{len(shape)} dimension{'' if len(shape) == 1 else 's'}, but {used} were indexed",
            op="index",
            shapes=[shape],
        )
    parts: list[tuple[int, _Part]] = []  # (position in the index, part), in axis order
    axis = 0
    for position, v in enumerate(items):
        if v is None:
            parts.append((position, _NewAxis()))
            continue
        if isinstance(v, EllipsisType):
            for _ in range(len(shape) - used):
                parts.append((position, _Slice(0, 1, shape[axis], True)))
                axis += 1
            continue
        if isinstance(v, np.ndarray) and v.dtype == np.bool_:
            covered = shape[axis : axis + v.ndim]
            # as in NumPy, a mask dimension of size 0 matches any size (it selects nothing)
            if any(m not in (0, n) for m, n in zip(v.shape, covered, strict=True)):
                raise ShapeError(
                    f"bool mask of shape {format_shape(v.shape)} does not match the "
                    f"indexed dimensions {format_shape(covered)} (axes {axis}.."
                    f"{axis + v.ndim - 1}) of shape {format_shape(shape)}",
                    op="index",
                    shapes=[shape, v.shape],
                )
            for positions in np.nonzero(v):
                part = _StaticArray(positions.astype(np.int64), axis, shape[axis])
                parts.append((position, part))
                axis += 1
            continue
        parts.append((position, _part(v, axis, shape, wrap)))
        axis += 1
    while axis < len(shape):
        parts.append((len(items), _Slice(0, 1, shape[axis], True)))
        axis += 1
    return _lower(t, parts)


def _index_item(value: Any, position: int) -> _Item:
    """One component of an index, checked and normalised (arrays to int64 or bool)."""
    if value is None or isinstance(value, EllipsisType):
        return value
    if isinstance(value, bool | np.bool_):
        raise UnsupportedError(
            f"index component {position} is the bool {value!r}: a scalar bool index is "
            "not supported (use None for a new axis, or da.where to select)",
            op="index",
        )
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, slice):
        return slice(*(_slice_bound(b, position) for b in (value.start, value.stop, value.step)))
    if isinstance(value, Tensor):
        term = as_term(value, "index")
        if term.dtype is DType.INT64:
            return value
        if term.dtype is DType.BOOL:
            raise UnsupportedError(
                f"index component {position} is a traced bool mask: its result shape "
                "would depend on the data; use da.where(mask, x, 0) instead",
                op="index",
                shapes=[term.shape],
            )
        raise DtypeError(
            f"index component {position} must be an int, got "
            f"{type_name(term.shape, term.dtype)} (use da.floor to turn floats into ints)",
            op="index",
            shapes=[term.shape],
        )
    if isinstance(value, list | tuple | np.ndarray):
        array = constant_array(value, "index", f"index component {position}")
        if array.dtype == np.bool_:
            if array.ndim == 0:
                raise UnsupportedError(
                    f"index component {position} is a rank-0 bool array: a scalar bool "
                    "index is not supported",
                    op="index",
                )
            return array
        if array.dtype.kind in "iu" or (array.size == 0 and not isinstance(value, np.ndarray)):
            return int(array) if array.ndim == 0 else array.astype(np.int64)
        raise DtypeError(
            f"index component {position} is an array of {array.dtype}: arrays used as "
            "indices must hold ints (or bools, as a mask)",
            op="index",
            shapes=[array.shape],
        )
    if hasattr(type(value), "__index__"):
        return operator.index(value)
    raise DtypeError(
        f"{_VALID}; index component {position} is a {type(value).__name__}", op="index"
    )


def _slice_bound(bound: Any, position: int) -> int | None:
    """A slice's start, stop or step: None or a static int."""
    if bound is None:
        return None
    if isinstance(bound, Tensor):
        raise TracingError(
            f"the slice in index component {position} has a traced bound: slice bounds "
            "are static ints (shapes are static); use da.gather for a traced offset, "
            "e.g. da.gather((n,), x, lambda k: (start + k,))",
            op="index",
        )
    if isinstance(bound, int | np.integer) or hasattr(type(bound), "__index__"):
        return operator.index(bound)
    raise DtypeError(
        f"the slice in index component {position} has a bound of type "
        f"{type(bound).__name__}: slice bounds must be ints or None",
        op="index",
    )


def _axes_used(item: _Item) -> int:
    """How many axes of the array an index component consumes."""
    if item is None or isinstance(item, EllipsisType):
        return 0
    if isinstance(item, np.ndarray) and item.dtype == np.bool_:
        return item.ndim
    return 1


def _part(item: _Item, axis: int, shape: tuple[int, ...], wrap: bool) -> _Part:
    """The part for one component over ``axis`` (not None, ``...`` or a mask); a traced
    one wraps negative indices when ``wrap`` (the primitive ``wrap``, which generated
    code computes once per index array, :mod:`dualarr.codegen.generate`)."""
    size = shape[axis]
    if isinstance(item, slice):
        if item.step == 0:
            raise ShapeError("slice step cannot be zero", op="index", shapes=[shape])
        start, stop, step = item.indices(size)
        length = len(range(start, stop, step))
        return _Slice(start, step, length, (start, stop, step) == (0, size, 1))
    if isinstance(item, int):
        if not -size <= item < size:
            raise IndexOutOfRangeError(item, axis, shape)
        return _Int(int_const(item + size if item < 0 else item))
    if isinstance(item, Tensor):
        if item.shape:
            if not wrap or ix_.never_negative(item.term):
                return _TracedArray(item.term, size)
            return _TracedArray(elementwise("wrap", item, size).term, size)
        return _Int(ix_.wrap_negative(item.term, size) if wrap else item.term)
    assert isinstance(item, np.ndarray)
    return _StaticArray(item, axis, size)


def _lower(t: Tensor, parts: list[tuple[int, _Part]]) -> Tensor:
    """The core term of an index whose parts (with their positions in the index) are
    resolved against ``t``'s shape: an ``index`` where the index is plain, else a
    ``gather`` (trailing whole axes are the tail of either)."""
    fancy = any(isinstance(p, _StaticArray | _TracedArray) for _, p in parts)
    parts = _without_whole_tail(parts)
    if not fancy and _is_plain(parts):
        return _lower_to_index(t, [p for _, p in parts])
    return _lower_to_gather(t, parts, fancy)


def _without_whole_tail(parts: list[tuple[int, _Part]]) -> list[tuple[int, _Part]]:
    """``parts`` without the whole slices that end it."""
    end = len(parts)
    while end and _is_whole(parts[end - 1][1]):
        end -= 1
    return parts[:end]


def _is_whole(part: _Part) -> bool:
    """A slice over a whole axis."""
    return isinstance(part, _Slice) and part.full


def _is_plain(parts: list[tuple[int, _Part]]) -> bool:
    """Ints on leading axes, whole slices, new axes: an ``index`` (and a ``reshape``)."""
    sliced = False
    for _, p in parts:
        if isinstance(p, _Slice):
            if not p.full:
                return False
            sliced = True
        elif isinstance(p, _Int) and sliced:
            return False
    return True


def _lower_to_index(t: Tensor, parts: list[_Part]) -> Tensor:
    """A plain index (:func:`_is_plain`): ``index`` by its ints, and a ``reshape`` where
    new axes add size-1 dimensions."""
    consumed = builtins.sum(1 for p in parts if not isinstance(p, _NewAxis))
    ints = tuple(p.term for p in parts if isinstance(p, _Int))
    term = Index(t.term, ints) if ints else t.term
    dims = tuple(
        p.length if isinstance(p, _Slice) else 1 for p in parts if isinstance(p, _NewAxis | _Slice)
    )
    new_shape = (*dims, *t.shape[consumed:])
    return Tensor(term if term.shape == new_shape else Reshape(new_shape, term))


def _lower_to_gather(t: Tensor, parts: list[tuple[int, _Part]], fancy: bool) -> Tensor:
    """One ``gather``, its components one a part (each part's ``lower``).  With arrays
    (``fancy``) the advanced parts broadcast together, and their dimensions go in
    place when the parts are adjacent in the index, else first (NumPy's rule)."""
    advanced = [(k, p) for k, p in parts if fancy and isinstance(p, _Advanced)]
    broadcast = _broadcast(t.shape, [a for _, a in advanced])
    if math.prod(broadcast) > 0:  # NumPy checks array entries only when it reads some
        for _, a in advanced:
            if isinstance(a, _StaticArray):
                _check_entries(a, t.shape)
    gather = _GatherBuilder(broadcast, fancy)
    places = sorted({k for k, _ in advanced})
    if places and places != list(range(places[0], places[-1] + 1)):  # not adjacent
        gather.broadcast_variables()
    for _, p in parts:
        p.lower(gather)
    return Tensor(
        Gather(
            tuple(gather.outer), t.term, tuple(gather.variables), tuple(gather.components)
        )
    )


@dataclass
class _GatherBuilder:
    """The gather an index lowers to, built part by part in axis order: its outer shape,
    its variables (one per outer axis) and its index components."""

    broadcast: tuple[int, ...]
    fancy: bool
    outer: list[int] = field(default_factory=list)
    variables: list[Var] = field(default_factory=list)
    components: list[Term] = field(default_factory=list)
    joint: list[Var] | None = None  # the broadcast dimensions' variables, once placed

    def fresh(self, size: int) -> Var:
        """The variable of a new outer axis of ``size``."""
        self.outer.append(size)
        self.variables.append(new_var("index", "i", (), DType.INT64))
        return self.variables[-1]

    def broadcast_variables(self) -> list[Var]:
        """The variables of the advanced parts' broadcast dimensions, placed as outer
        axes where first asked for."""
        if self.joint is None:
            self.joint = [self.fresh(n) for n in self.broadcast]
        return self.joint

    def read_at(self, own: tuple[int, ...]) -> tuple[Term, ...]:
        """Where an advanced part of shape ``own`` is read at the broadcast position: its
        dimensions align with the trailing ones of the broadcast; size-1 ones read 0."""
        joint = self.broadcast_variables()
        offset = len(self.broadcast) - len(own)
        return tuple(
            joint[offset + d] if n == self.broadcast[offset + d] else int_const(0)
            for d, n in enumerate(own)
        )


def _broadcast(shape: tuple[int, ...], parts: list[_Advanced]) -> tuple[int, ...]:
    """NumPy's broadcast of the advanced components' shapes (ints are rank 0)."""
    shapes = [p.shape for p in parts]
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(
            "shape mismatch: the index arrays cannot be broadcast together; their shapes "
            "are " + " ".join(format_shape(s) for s in shapes),
            op="index",
            shapes=[shape, *shapes],
        ) from None


def _check_entries(part: _StaticArray, shape: tuple[int, ...]) -> None:
    """NumPy's bounds check of a static int array over its axis."""
    bad = (part.value < -part.size) | (part.value >= part.size)
    if bad.any():
        raise IndexOutOfRangeError(int(part.value[bad].flat[0]), part.axis, shape)


# --------------------------------------------------------------------------------------
# Structural operations
# --------------------------------------------------------------------------------------


def sum_outer(x: Operand) -> Tensor:
    """``sumOuter x``: sum over the outermost dimension."""
    t = ensure_tensor(x, "sum_outer")
    return Tensor(SumOuter(_numeric(t.term, "sum_outer")))


def replicate(n: int, x: Operand) -> Tensor:
    """``replicate n x``: ``n`` copies of ``x`` along a new outer dimension."""
    t = ensure_tensor(x, "replicate")
    return Tensor(Replicate(static_int(n, "replicate", "count"), t.term))


def transpose(x: Operand, perm: Sequence[int] | None = None) -> Tensor:
    """``tr perm x``: dimension ``q`` of the result is dimension ``perm[q]`` of ``x``
    (NumPy's convention; reversed dimensions by default)."""
    t = ensure_tensor(x, "transpose")
    rank = len(t.shape)
    p = tuple(range(rank - 1, -1, -1)) if perm is None else tuple(int(a) for a in perm)
    p = tuple(a + rank if a < 0 else a for a in p)
    if p == tuple(range(rank)):
        return t
    return Tensor(Transpose(p, t.term))


def reshape(x: Operand, shape: Sequence[int] | int) -> Tensor:
    """``reshape sh x``: row-major; one dimension may be -1 (inferred)."""
    t = ensure_tensor(x, "reshape")
    dims = _static_shape(shape, "reshape", infer=True)
    if dims.count(-1) > 1:
        raise ShapeError("at most one dimension may be -1", op="reshape", shapes=[t.shape])
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        total = math.prod(t.shape)
        if known == 0 or total % known:
            raise ShapeError(
                f"cannot reshape {format_shape(t.shape)} to {dims}",
                op="reshape",
                shapes=[t.shape],
            )
        dims[dims.index(-1)] = total // known
    new_shape = tuple(dims)
    if new_shape == t.shape:
        return t
    return Tensor(Reshape(new_shape, t.term))


def from_list(xs: Sequence[Operand]) -> Tensor:
    """``fromList [x1..xn]``: stack values of one shape along a new outer dimension."""
    if not xs:
        raise ShapeError("needs at least one element", op="from_list")
    terms = promote("from_list", OpKind.SELECT, list(xs))
    return Tensor(FromList(tuple(terms)))


def stack(xs: Sequence[Operand], axis: int = 0) -> Tensor:
    """Stack along a new dimension ``axis`` (``fromList`` then ``tr``)."""
    stacked = from_list(xs)
    rank = len(stacked.shape)
    axis = _axis(axis, rank, "stack")
    if axis == 0:
        return stacked
    perm = list(range(1, rank))
    perm.insert(axis, 0)
    return transpose(stacked, perm)


def concatenate(xs: Sequence[Operand], axis: int = 0) -> Tensor:
    """Join arrays along an existing dimension.

    Along the outer dimension each part is placed by a gather that reads out of range
    (hence 0) outside its slot, and the parts are added: ``append a b =
    gather [n+m] a (λ[i]. [i]) + gather [n+m] b (λ[i]. [i-n])``.
    """
    tensors = [ensure_tensor(x, "concatenate") for x in xs]
    if not tensors:
        raise ShapeError("needs at least one array", op="concatenate")
    rank = len(tensors[0].shape)
    if rank == 0:
        raise ShapeError("cannot concatenate rank-0 values", op="concatenate")
    axis = _axis(axis, rank, "concatenate")
    if axis != 0:
        perm = [axis, *[d for d in range(rank) if d != axis]]
        inverse = [perm.index(d) for d in range(rank)]
        joined = concatenate([transpose(t, perm) for t in tensors], 0)
        return transpose(joined, inverse)
    tails = {t.shape[1:] for t in tensors}
    if len(tails) != 1:
        raise ShapeError(
            "arrays differ beyond the joined dimension: "
            + ", ".join(format_shape(t.shape) for t in tensors),
            op="concatenate",
            shapes=[t.shape for t in tensors],
        )
    if len(tensors) == 1:
        return tensors[0]
    total = builtins.sum(t.shape[0] for t in tensors)
    result: Tensor | None = None
    offset = 0
    for t in tensors:
        var = new_var("concatenate", "i", (), DType.INT64)
        part = Tensor(Gather((total,), t.term, (var,), (_affine(var, -offset, 1),)))
        result = part if result is None else result + part
        offset += t.shape[0]
    assert result is not None
    return result


def flip(x: Operand, axis: int | Sequence[int] | None = None) -> Tensor:
    """Reverse the order of elements along ``axis`` (every axis when ``None``), as
    ``numpy.flip``: ``gather (shape x) x (λis. [n−1−i for the flipped axes, i else])``.
    Its transpose is the same flip (the simplifier turns the scatter back into it)."""
    t = ensure_tensor(x, "flip")
    rank = len(t.shape)
    if rank == 0:
        return t
    axes = _axes(axis, rank, "flip")
    variables = tuple(new_var("flip", "i", (), DType.INT64) for _ in t.shape)
    index = tuple(
        _affine(v, n - 1, -1) if d in axes else v
        for d, (v, n) in enumerate(zip(variables, t.shape, strict=True))
    )
    return Tensor(Gather(t.shape, t.term, variables, index))


# --------------------------------------------------------------------------------------
# Reductions and derived operations
# --------------------------------------------------------------------------------------


def _axis(axis: Any, rank: int, op: str, expected: str = "an int") -> int:
    """One axis, negative ones counted from the end, as a non-negative int."""
    axis = static_integer(axis, op, "axis", expected)
    if not -rank <= axis < rank:
        raise ShapeError(f"axis {axis} is out of range for rank {rank}", op=op)
    return int(axis) + rank if axis < 0 else int(axis)


def _axes(axis: Any, rank: int, op: str) -> tuple[int, ...]:
    """``None`` (every axis), one axis or a tuple of distinct axes, as NumPy takes them."""
    if axis is None:
        return tuple(range(rank))
    raw = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
    axes = tuple(_axis(a, rank, op, "an int, a tuple of ints or None") for a in raw)
    for k, a in enumerate(axes):
        if a in axes[:k]:
            raise ShapeError(f"axis {raw[k]} is repeated in {raw} (rank {rank})", op=op)
    return axes


def _numeric(term: Term, op: str) -> Term:
    return cast_to(term, DType.INT64, op) if term.dtype is DType.BOOL else term


def _move_to_front(t: Tensor, axes: tuple[int, ...]) -> Tensor:
    rest = [d for d in range(len(t.shape)) if d not in axes]
    return transpose(t, [*axes, *rest])


def sum(
    x: Operand, axis: int | Sequence[int] | None = None, keepdims: bool = False
) -> Tensor:
    """Sum over ``axis`` (all by default): ``sumOuter`` after a transpose/reshape."""
    t = ensure_tensor(x, "sum")
    t = Tensor(_numeric(t.term, "sum"))
    rank = len(t.shape)
    axes = _axes(axis, rank, "sum")
    if not axes:
        result = t
    elif len(axes) == rank and rank > 1:
        result = Tensor(SumOuter(Reshape((math.prod(t.shape),), t.term)))
    else:
        moved = _move_to_front(t, axes)
        term = moved.term
        if len(axes) > 1:
            term = Reshape((math.prod(moved.shape[: len(axes)]), *moved.shape[len(axes) :]), term)
        result = Tensor(SumOuter(term))
    return _keepdims(result, t.shape, axes) if keepdims else result


def _keepdims(result: Tensor, shape: tuple[int, ...], axes: tuple[int, ...]) -> Tensor:
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    return reshape(result, kept)


def mean(x: Operand, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis`` (all by default)."""
    t = ensure_tensor(x, "mean")
    axes = _axes(axis, len(t.shape), "mean")
    count = math.prod(t.shape[a] for a in axes)
    total = sum(t, axes, keepdims)
    if not total.term.dtype.is_float:
        total = to_float(total)
    return total / float(count) if count else total * float("nan")


def argmin(x: Operand, axis: int | None = None) -> Tensor:
    """Index of a least element (flattened when ``axis`` is None), an int."""
    return _arg("argmin", x, axis)


def argmax(x: Operand, axis: int | None = None) -> Tensor:
    """Index of a greatest element (flattened when ``axis`` is None), an int."""
    return _arg("argmax", x, axis)


def _arg(op: str, x: Operand, axis: int | None) -> Tensor:
    t = ensure_tensor(x, op)
    node = ArgMin if op == "argmin" else ArgMax
    if axis is None:
        flat = reshape(t, (t.size,)) if len(t.shape) != 1 else t
        return Tensor(node(flat.term))
    moved = _move_to_front(t, (_axis(axis, len(t.shape), op),))
    return Tensor(node(moved.term))


def min(
    x: Operand, axis: int | Sequence[int] | None = None, keepdims: bool = False
) -> Tensor:
    """Least element over ``axis`` (an int, a tuple of ints or all by default); its
    gradient goes to one argmin."""
    return _extremum("min", x, axis, keepdims)


def max(
    x: Operand, axis: int | Sequence[int] | None = None, keepdims: bool = False
) -> Tensor:
    """Greatest element over ``axis`` (an int, a tuple of ints or all by default); its
    gradient goes to one argmax."""
    return _extremum("max", x, axis, keepdims)


def _extremum(op: str, x: Operand, axis: int | Sequence[int] | None, keepdims: bool) -> Tensor:
    """The reduced axes moved to the front and joined into one, then an argmin/argmax
    over it selects the elements (by an index, or a gather over the other axes)."""
    t = ensure_tensor(x, op)
    rank = len(t.shape)
    axes = _axes(axis, rank, op)
    if not axes:
        return t
    if t.size == 0:
        raise ShapeError(
            f"reduction over an empty array of shape {format_shape(t.shape)}",
            op=op,
            shapes=[t.shape],
        )
    node = ArgMin if op == "min" else ArgMax
    if len(axes) == rank:
        flat = reshape(t, (t.size,)) if rank != 1 else t
        result = Tensor(Index(flat.term, (node(flat.term),)))
    else:
        moved = _move_to_front(t, axes)
        rest = moved.shape[len(axes) :]
        if len(axes) > 1:
            moved = reshape(moved, (math.prod(moved.shape[: len(axes)]), *rest))
        best = node(moved.term)
        variables = tuple(new_var(op, "i", (), DType.INT64) for _ in rest)
        which = Index(best, variables)
        result = Tensor(Gather(rest, moved.term, variables, (which, *variables)))
    return _keepdims(result, t.shape, axes) if keepdims else result


def dot(a: Operand, b: Operand) -> Tensor:
    """NumPy's ``dot`` for ranks 0–2 (a contraction over the last/first dimension)."""
    ta, tb = ensure_tensor(a, "dot"), ensure_tensor(b, "dot")
    if ta.shape == () or tb.shape == ():
        return ta * tb
    return matmul(ta, tb)


def matmul(a: Operand, b: Operand) -> Tensor:
    """Matrix product for ranks 1–2, written with replicate, tr, * and sumOuter."""
    ta, tb = ensure_tensor(a, "matmul"), ensure_tensor(b, "matmul")
    ra, rb = len(ta.shape), len(tb.shape)
    if ra == 0 or rb == 0 or ra > 2 or rb > 2:
        raise UnsupportedError(
            f"matmul supports ranks 1 and 2, got {format_shape(ta.shape)} @ "
            f"{format_shape(tb.shape)}; use da.build for batched products",
            op="matmul",
            shapes=[ta.shape, tb.shape],
        )
    inner_a = ta.shape[-1]
    inner_b = tb.shape[0]
    if inner_a != inner_b:
        raise ShapeError(
            f"inner dimensions differ: {format_shape(ta.shape)} @ {format_shape(tb.shape)}",
            op="matmul",
            shapes=[ta.shape, tb.shape],
        )
    if ra == 1 and rb == 1:
        return sum_outer(ta * tb)
    if ra == 2 and rb == 1:  # [m,n] @ [n] -> [m]
        m = ta.shape[0]
        return sum_outer(transpose(ta * replicate(m, tb), (1, 0)))
    if ra == 1 and rb == 2:  # [n] @ [n,p] -> [p]
        p = tb.shape[1]
        return sum_outer(transpose(replicate(p, ta), (1, 0)) * tb)
    m, p = ta.shape[0], tb.shape[1]
    lhs = transpose(replicate(p, transpose(ta, (1, 0))), (1, 2, 0))  # [n,m,p]: a[i,k] at k,i,j
    rhs = transpose(replicate(m, tb), (1, 0, 2))  # [n,m,p]: b[k,j] at k,i,j
    return sum_outer(lhs * rhs)


def _expand(t: Tensor, axis: int, n: int) -> Tensor:
    """Insert a dimension of extent ``n`` at ``axis`` by replication."""
    rank = len(t.shape) + 1
    rep = replicate(n, t)
    perm = list(range(1, rank))
    perm.insert(axis, 0)
    return transpose(rep, perm)


def _finite_shift(m: Tensor) -> Tensor:
    """The maximum ``m`` as the shift of :func:`logsumexp`, under ``stop_gradient``: 0
    where it is not finite (an element +inf, all -inf, nan), as JAX's, so that
    ``inf - inf`` never makes a nan where the result is +-inf."""
    return stop_gradient(elementwise("select", abs(m) < math.inf, m, 0.0))


def logsumexp(x: Operand, axis: int | None = None) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis`` (all by default), computed stably: the maximum
    is subtracted under ``stop_gradient`` (it cancels), so the derivative is the smooth
    softmax everywhere, equal maxima included (book/rules.md §1.2); +inf for an element
    +inf, -inf for all -inf, as ``scipy.special.logsumexp``."""
    t = ensure_tensor(x, "logsumexp")
    if not t.term.dtype.is_float:
        t = to_float(t)
    # the shift m cancels, so its derivative is 0: stop_gradient keeps the gradient
    # program from differentiating through the max (an argmax scatter of zeros)
    if axis is None:
        flat = reshape(t, (t.size,))
        m = _finite_shift(max(flat))
        return m + log(sum(exp(flat - m)))
    ax = _axis(axis, len(t.shape), "logsumexp")
    m = _finite_shift(max(t, ax))
    shifted = t - _expand(m, ax, t.shape[ax])
    return m + log(sum(exp(shifted), ax))


def softmax(x: Operand, axis: int = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis``, computed stably."""
    t = ensure_tensor(x, "softmax")
    if not t.term.dtype.is_float:
        t = to_float(t)
    if t.shape == ():
        raise ShapeError("needs an array of rank >= 1", op="softmax")
    ax = _axis(axis, len(t.shape), "softmax")
    n = t.shape[ax]
    e = exp(t - _expand(stop_gradient(max(t, ax)), ax, n))  # the shift cancels
    return e / _expand(sum(e, ax), ax, n)


install_array_methods(
    floor_divide=floor_divide,
    remainder=remainder,
    matmul=matmul,
    getitem=getitem,
    transpose=transpose,
    sum=sum,
    mean=mean,
    max=max,
    min=min,
    reshape=reshape,
)

__all__ = [
    "Tensor",
    "abs",
    "acos",
    "argmax",
    "argmin",
    "asin",
    "atan",
    "atan2",
    "build",
    "build1",
    "concatenate",
    "constant",
    "cos",
    "cosh",
    "dot",
    "exp",
    "expm1",
    "flip",
    "floor",
    "floor_divide",
    "from_list",
    "gather",
    "imax",
    "imin",
    "index",
    "iota",
    "let",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logsumexp",
    "map",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "negative",
    "primitive",
    "recip",
    "relu",
    "remainder",
    "replicate",
    "reshape",
    "scatter",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "softmax",
    "sqrt",
    "stack",
    "stop_gradient",
    "sum",
    "sum_outer",
    "tan",
    "tanh",
    "to_float",
    "transpose",
    "where",
]

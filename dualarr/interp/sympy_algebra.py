"""The core language in SymPy: exact symbolic values, to cross-check every stage.

One more carrier of the core language (paper App. C; "one language, many interpretations",
:mod:`dualarr.interp.algebra`): :class:`SympyAlgebra` interprets any term on NumPy *object*
arrays of SymPy expressions for float values, while int and bool values stay ordinary
NumPy arrays, so indices, index functions and shapes remain concrete and the structural
constructs (``index``, ``gather``, ``scatter``, ``sumOuter``, ``tr``, ``reshape`` …) run
as in the reference evaluator, with its totality semantics (§5.2).

Comparisons of symbolic floats become SymPy relations and a strict conditional
(``cond``/``select``) on one becomes a ``Piecewise``, so a program with ``where`` has one
closed form valid for every input.  What has no closed form raises
:class:`~dualarr.lang.errors.UnsupportedError`: ``argmin``/``argmax`` of symbolic values and
indices computed from float data (``floor`` of an input used as an index).  SymPy has
no signed zero: ``atan2(0, -0.0)`` is ``pi`` in IEEE arithmetic, ``atan2(0, 0)`` here.

:func:`dualarr.sympy_reference.sympy_gradient` builds exact gradients on it.  SymPy is an
optional dependency (``dualarr[symbolic]``); it is imported on first use.
"""

from __future__ import annotations

import functools
import importlib.util
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np

from ..lang.errors import UnsupportedError
from ..lang.optional import require
from ..lang.primitives import REGISTRY
from ..lang.terms import DType, Shape, Structural, Term, Var, assert_never
from .algebra import ARRAY_MEANINGS, Algebra, IndexFn
from .arrays import contract
from .evaluate import ELEMENTWISE, Interpreter, NumpyAlgebra, index_array, scatter_add

__all__ = [
    "SYMPY_INPUT_LIMIT",
    "SympyAlgebra",
    "as_symbolic",
    "evaluate_symbolic",
    "exponent_pow_function",
    "stop_gradient_function",
    "subexpressions",
    "sympy_available",
    "sympy_module",
    "sympy_operations",
]

SYMPY_INPUT_LIMIT = 400
"""The most float input scalars :func:`dualarr.sympy_reference.sympy_gradient` (and
``da.check_grad``) accepts:
one symbol each, one derivative each."""

Array = np.ndarray
Expr = Any  # a SymPy expression (SymPy has no type stubs)

_FLOOR_BOUND = 2**62  # floor of ±inf, as ``dualarr.interp.arrays.floor_to_int``


def sympy_available() -> bool:
    """Is SymPy installed (the ``symbolic`` extra)?"""
    return importlib.util.find_spec("sympy") is not None


def sympy_module() -> Any:
    """The ``sympy`` module, imported on first use."""
    return require("sympy", extra="symbolic", feature="sympy")


# --------------------------------------------------------------------------------------
# Elements: SymPy numbers, relations and expressions
# --------------------------------------------------------------------------------------


def _float_constant(value: float) -> Expr:
    """A float as an exact SymPy number: integral values as integers (``2*x``, not
    ``2.0*x``), others as the 53-bit ``Float`` holding the very same binary value."""
    sp = sympy_module()
    if math.isnan(value):
        return sp.nan
    if math.isinf(value):
        return sp.oo if value > 0 else -sp.oo
    if value.is_integer() and abs(value) < 2**53:
        return sp.Integer(int(value))
    return sp.Float(value)


def _element(value: Any) -> Expr:
    """One array element (NumPy scalar, Python number or SymPy object) as SymPy."""
    sp = sympy_module()
    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, bool | np.bool_):
        return sp.true if value else sp.false
    if isinstance(value, int | np.integer):
        return sp.Integer(int(value))
    return _float_constant(float(value))


def _is_symbolic(value: Any) -> bool:
    """Does the value hold SymPy objects (an object array) rather than plain numbers?"""
    return np.asarray(value).dtype == object


def as_symbolic(value: Any) -> Array:
    """The value as an object array of SymPy objects (numbers converted)."""
    array = np.asarray(value)
    out = np.empty(array.shape, dtype=object)
    for index, item in np.ndenumerate(array):
        out[index] = _element(item)
    return out


def _is_number(value: Expr) -> bool:
    """A SymPy object without free symbols: a number (``2``, ``sin(1)``, ``nan``) or a
    truth value."""
    sp = sympy_module()
    if isinstance(value, sp.logic.boolalg.BooleanAtom):
        return True
    return bool(getattr(value, "is_number", False))


def _numeric_value(value: Expr, dtype: DType) -> Any:
    """A numeric SymPy object as a NumPy scalar of ``dtype`` (``nan`` where SymPy's
    number has no real value, such as ``zoo``; integers clipped as ``floor`` clips)."""
    sp = sympy_module()
    if isinstance(value, sp.logic.boolalg.BooleanAtom):
        return np.bool_(bool(value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    match dtype:
        case DType.FLOAT32 | DType.FLOAT64:
            return np.float64(number)
        case DType.INT64:
            if value.is_Integer:
                return np.int64(max(-_FLOOR_BOUND, min(_FLOOR_BOUND, int(value))))
            if not math.isfinite(number):
                return np.int64(0)
            return np.int64(max(-_FLOOR_BOUND, min(_FLOOR_BOUND, int(number))))
        case DType.BOOL:
            return np.bool_(number != 0)
        case _:
            assert_never(dtype)


def _concrete(value: Any, dtype: DType) -> Array | None:
    """The value as a plain NumPy array of ``dtype`` when every element is a number,
    ``None`` when some element depends on a symbol."""
    array = np.asarray(value)
    if array.dtype != object:
        return array.astype(dtype.numpy(), copy=False)
    out = np.empty(array.shape, dtype=dtype.numpy())
    for index, item in np.ndenumerate(array):
        item = _element(item)
        if not _is_number(item):
            return None
        out[index] = _numeric_value(item, dtype)
    return out


def _is_truth_value(value: Any) -> bool:
    """A SymPy truth value (``true``, a relation, ``And`` …); not a symbol, although
    SymPy's ``Symbol`` is a ``Boolean`` too."""
    sp = sympy_module()
    return isinstance(value, sp.logic.boolalg.Boolean) and not isinstance(value, sp.Expr)


def _zero_like(array: Array) -> Expr:
    """The zero of an object array's element type: ``false`` for truth values."""
    sp = sympy_module()
    boolean = any(_is_truth_value(item) for item in array.flat)
    return sp.false if boolean else sp.Integer(0)


def _fill_zeros(result: Array, like: Array) -> Array:
    """Replace the plain ``0`` that NumPy's structural functions write into an object
    array (out-of-range reads, empty sums) by the SymPy zero of ``like``'s elements."""
    sp = sympy_module()
    if result.dtype != object:
        return result
    zero = _zero_like(like)
    out = np.empty(result.shape, dtype=object)
    for index, item in np.ndenumerate(result):
        if not isinstance(item, sp.Basic):
            item = zero if item == 0 else _element(item)
        out[index] = item
    return out


def _elementwise(function: Callable[..., Expr], arrays: Sequence[Array]) -> Array:
    """``function`` applied element by element (broadcasting) into an object array."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    out = np.empty(shape, dtype=object)
    if out.size:
        out[...] = np.frompyfunc(function, len(arrays), 1)(*arrays)
    return out


# --------------------------------------------------------------------------------------
# The elementwise primitives in SymPy
# --------------------------------------------------------------------------------------


class SympyToolkit:
    """What the records' SymPy spellings (:attr:`dualarr.lang.primitives.Primitive.sympy`)
    use beyond SymPy itself (``s.sp``).

    ``maximum``/``minimum`` are ``Piecewise`` on ``a >= b``/``a <= b`` rather than
    ``Max``/``Min``: a tie then goes to the first argument, as dualarr's (and horde-ad's)
    derivative rule says, where ``Max``'s derivative would be ``Heaviside(0) = 1/2``.
    ``abs`` and ``sign`` are ``Piecewise`` with the middle case 0, so their derivatives
    (``sign`` and 0, Fig. 14) hold for arguments SymPy cannot prove real.  Integer
    ``quot``/``rem`` keep the totality rule ``a // 0 == a % 0 == a`` (§5.2).
    """

    def __init__(self) -> None:
        self.sp = sympy_module()

    def sign(self, x: Expr) -> Expr:
        sp = self.sp
        return sp.Piecewise((1, sp.Gt(x, 0)), (-1, sp.Lt(x, 0)), (0, True))

    def absolute(self, x: Expr) -> Expr:
        sp = self.sp
        return sp.Piecewise((x, sp.Gt(x, 0)), (-x, sp.Lt(x, 0)), (0, True))

    def piecewise_first(self, a: Expr, b: Expr, relation: str) -> Expr:
        """``a`` where ``a >= b`` (``<=``), else ``b``: maximum and minimum."""
        sp = self.sp
        test = sp.Ge(a, b) if relation == ">=" else sp.Le(a, b)
        return sp.Piecewise((a, test), (b, True))

    def total_quot(self, a: Expr, b: Expr) -> Expr:
        sp = self.sp
        return sp.Piecewise((a, sp.Eq(b, 0)), (sp.floor(a / b), True))

    def wrap_index(self, j: Expr, n: Expr) -> Expr:
        """NumPy's wrap of an index: ``j + n`` where ``j < 0``, else ``j``."""
        sp = self.sp
        return sp.Piecewise((j + n, sp.Lt(j, 0)), (j, True))

    def total_rem(self, a: Expr, b: Expr) -> Expr:
        sp = self.sp
        return sp.Piecewise((a, sp.Eq(b, 0)), (sp.Mod(a, b), True))

    def compare(self, symbol: str, a: Expr, b: Expr) -> Expr:
        """A comparison; on truth values as NumPy orders bools (False < True)."""
        sp = self.sp
        if _is_truth_value(a) or _is_truth_value(b):
            on_truth = {
                "<": lambda: sp.And(sp.Not(a), b),
                "<=": lambda: sp.Or(sp.Not(a), b),
                ">": lambda: sp.And(a, sp.Not(b)),
                ">=": lambda: sp.Or(a, sp.Not(b)),
                "==": lambda: sp.Equivalent(a, b),
                "!=": lambda: sp.Xor(a, b),
            }
            return on_truth[symbol]()
        relations = {
            "<": sp.Lt, "<=": sp.Le, ">": sp.Gt, ">=": sp.Ge, "==": sp.Eq, "!=": sp.Ne
        }  # fmt: skip
        return relations[symbol](a, b)

    def stop_gradient(self, x: Expr) -> Expr:
        return stop_gradient_function()(x)

    def exponent_pow(self, a: Expr, b: Expr) -> Expr:
        return exponent_pow_function()(a, b)


@cache
def sympy_toolkit() -> SympyToolkit:
    return SympyToolkit()


def sympy_operations() -> dict[str, Callable[..., Expr]]:
    """SymPy meaning of each elementwise primitive that has one: its record's spelling
    (:data:`dualarr.lang.primitives.REGISTRY`) over :class:`SympyToolkit`."""
    toolkit = sympy_toolkit()
    return {
        name: functools.partial(p.sympy, toolkit)
        for name, p in REGISTRY.items()
        if p.sympy is not None
    }


def _is_real_result(value: Expr) -> bool:
    """Is an operation's result on numbers a real number or a truth value?"""
    sp = sympy_module()
    if isinstance(value, sp.logic.boolalg.BooleanAtom):
        return True
    if _is_truth_value(value) or value is sp.nan or isinstance(value, sp.AccumBounds):
        return False  # cos(oo) is AccumBounds(-1, 1); IEEE says nan
    return value.is_extended_real is True


def _apply(name: str, dtype: DType, args: Sequence[Expr]) -> Expr:
    """``name(*args)`` in SymPy.  On numbers SymPy is exact, but where it has no real
    answer (``1/0`` is ``zoo``, ``log(-1)`` is ``I*pi``, comparing ``nan`` raises) the
    reference evaluator's IEEE result is taken instead (``inf``, ``nan``, ``False``)."""
    numeric = all(_is_number(a) for a in args)
    try:
        spelling = REGISTRY[name].sympy
        if spelling is None:
            raise UnsupportedError(
                f"the primitive {name} has no SymPy spelling (give one to da.primitive)",
                op=name,
            )
        result = spelling(sympy_toolkit(), *args)
    except (TypeError, ValueError, ZeroDivisionError) as error:
        if numeric:
            return _ieee(name, dtype, args)
        shown = ", ".join(str(a) for a in args)
        raise UnsupportedError(f"SymPy cannot compute {name}({shown}): {error}", op=name) from None
    if numeric and not _is_real_result(result):
        return _ieee(name, dtype, args)
    sp = sympy_module()
    new_parts = subexpressions([result], known=args)  # the arguments are real already
    if not numeric and any(p is sp.zoo or isinstance(p, sp.AccumBounds) for p in new_parts):
        shown = ", ".join(str(a) for a in args)
        raise UnsupportedError(
            f"SymPy's {name}({shown}) is {result}, not a real closed form (a division by "
            "an exact zero, or a function of an infinity)",
            op=name,
        )
    return result


def _ieee(name: str, dtype: DType, args: Sequence[Expr]) -> Expr:
    """``name(*args)`` on numbers with NumPy, as the reference evaluator computes it
    (integers stay integers in integer arithmetic)."""
    sp = sympy_module()
    integral = dtype in (DType.INT64, DType.BOOL)
    values = [
        _numeric_value(a, DType.INT64 if integral and a.is_Integer else DType.FLOAT64)
        for a in args
    ]
    result = np.asarray(ELEMENTWISE[name](*values))[()]
    match dtype:
        case DType.BOOL:
            return sp.true if bool(result) else sp.false
        case DType.INT64:
            return sp.Integer(int(result))
        case DType.FLOAT32 | DType.FLOAT64:
            return _float_constant(float(result))
        case _:
            assert_never(dtype)


# --------------------------------------------------------------------------------------
# SymPy as an algebra
# --------------------------------------------------------------------------------------


class SympyAlgebra(Algebra[Array]):
    """The core language on object arrays of SymPy expressions (App. C).

    Float values are object arrays of SymPy expressions; int and bool values are plain
    NumPy arrays while they are known numbers (indices, index functions, shapes, integer
    arithmetic on them) and object arrays only where they depend on a symbol (a
    comparison of symbolic floats, ``floor`` of one).  Such a value can be compared,
    selected on (``Piecewise``) and converted back to float, but not used as an index.
    """

    def __init__(self) -> None:
        sympy_module()  # a clear error now when SymPy is missing
        self.concrete: Algebra[Array] = NumpyAlgebra()

    # -- helpers ------------------------------------------------------------------------

    @staticmethod
    def _settle(value: Array, dtype: DType) -> Array:
        """An int or bool result as a plain NumPy array when it is known."""
        known = _concrete(value, dtype)
        return value if known is None else known

    @staticmethod
    def _index(value: Any, what: str) -> Array:
        """Index values must be known integers: a symbolic one has no array position."""
        known = _concrete(value, DType.INT64)
        if known is None:
            raise UnsupportedError(
                f"the {what} depends on float inputs (floor, argmin/argmax or a comparison "
                "of symbolic values): SymPy evaluates programs whose indices are known "
                "integers only",
                op=what,
            )
        return known

    # -- leaves -------------------------------------------------------------------------

    def const(self, value: np.ndarray) -> Array:
        return as_symbolic(value) if value.dtype.kind == "f" else value

    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Array:
        if dtype.is_float:
            return np.full(shape, _float_constant(float(value)), dtype=object)
        return np.full(shape, value, dtype=dtype.numpy())

    def iota(self, n: int) -> Array:
        return np.arange(n, dtype=np.int64)

    # -- elementwise --------------------------------------------------------------------

    def op(self, name: str, args: Sequence[Array], dtype: DType) -> Array:
        arrays = [np.asarray(a) for a in args]
        if not dtype.is_float and not any(_is_symbolic(a) for a in arrays):
            return self.concrete.op(name, arrays, dtype)  # integer and logic: NumPy

        def element(*xs: Expr) -> Expr:
            return _apply(name, dtype, xs)

        result = _elementwise(element, [as_symbolic(a) for a in arrays])
        return result if dtype.is_float else self._settle(result, dtype)

    def cond(self, c: Array, a: Array, b: Array) -> Array:
        cv = np.asarray(c)
        if not _is_symbolic(cv):
            return self.concrete.cond(cv, a, b)
        av, bv = np.asarray(a), np.asarray(b)
        rank = max(av.ndim, bv.ndim) - cv.ndim
        selector = cv.reshape(cv.shape + (1,) * max(rank, 0))

        def element(*xs: Expr) -> Expr:
            return _apply("select", DType.FLOAT64, xs)

        result = _elementwise(element, [selector, as_symbolic(av), as_symbolic(bv)])
        if not _is_symbolic(av) and not _is_symbolic(bv):
            return self._settle(result, DType.of_numpy(av.dtype))
        return result

    def from_integral(self, a: Array, dtype: DType) -> Array:
        sp = sympy_module()
        array = np.asarray(a)
        if not _is_symbolic(array):
            return as_symbolic(array.astype(np.int64))

        def to_number(x: Expr) -> Expr:
            if _is_truth_value(x):
                return sp.Piecewise((1, x), (0, True))
            return x

        return _elementwise(to_number, [array])

    def floor(self, a: Array) -> Array:
        sp = sympy_module()

        def floor_of(x: Expr) -> Expr:
            if not _is_number(x):
                return sp.floor(x)
            number = _numeric_value(x, DType.FLOAT64)
            if math.isnan(number):
                return sp.Integer(0)
            if math.isinf(number):
                return sp.Integer(_FLOOR_BOUND if number > 0 else -_FLOOR_BOUND)
            return sp.Integer(max(-_FLOOR_BOUND, min(_FLOOR_BOUND, int(sp.floor(x)))))

        return self._settle(_elementwise(floor_of, [as_symbolic(a)]), DType.INT64)

    # -- structure ----------------------------------------------------------------------

    def index(self, a: Array, ix: Sequence[Array]) -> Array:
        array = np.asarray(a)
        picked = index_array(array, [self._index(i, "index") for i in ix])
        return _fill_zeros(np.asarray(picked), array)

    def gather(self, outer: Shape, a: Array, fn: IndexFn[Array]) -> Array:
        array = np.asarray(a)
        if not fn.components:
            return np.broadcast_to(array, (*outer, *array.shape))
        return _fill_zeros(np.asarray(index_array(array, fn.components)), array)

    def scatter(self, outer: Shape, a: Array, fn: IndexFn[Array], n_vars: int) -> Array:
        array = np.asarray(a)
        return _fill_zeros(scatter_add(array, fn.components, tuple(outer), n_vars), array)

    def sum_outer(self, a: Array) -> Array:
        sp = sympy_module()
        array = np.asarray(a)
        if not _is_symbolic(array):
            return self.concrete.sum_outer(array)
        rest = array.shape[1:]
        columns = array.reshape(array.shape[0], math.prod(rest))
        out = np.empty(columns.shape[1], dtype=object)
        for j in range(columns.shape[1]):
            out[j] = sp.Add(*(_element(x) for x in columns[:, j]))
        return out.reshape(rest)

    def replicate(self, count: int, a: Array) -> Array:
        array = np.asarray(a)
        return np.broadcast_to(array, (count, *array.shape))

    def transpose(self, perm: Sequence[int], a: Array) -> Array:
        return np.transpose(a, perm)

    def reshape(self, shape: Shape, a: Array) -> Array:
        return np.reshape(a, shape)

    def from_list(self, elems: Sequence[Array]) -> Array:
        arrays = [np.asarray(e) for e in elems]
        if any(_is_symbolic(a) for a in arrays):
            return np.stack([as_symbolic(a) for a in arrays])
        return np.stack(arrays)

    def _arg(self, a: Array, which: str) -> Array:
        array = np.asarray(a)
        known = _concrete(array, DType.FLOAT64) if _is_symbolic(array) else array
        if known is None:
            raise UnsupportedError(
                f"{which} of symbolic values has no closed form (which element is "
                f"{'where' if which == 'argsort' else 'extreme'} depends on the inputs): "
                "SymPy cannot evaluate this program; "
                "check its gradient with finite differences instead",
                op=which,
                shapes=[array.shape],
            )
        if which == "argsort":
            return np.asarray(np.argsort(known, axis=0, kind="stable"), dtype=np.int64)
        pick = np.argmin if which == "argmin" else np.argmax
        return np.asarray(pick(known, axis=0), dtype=np.int64)

    def argmin(self, a: Array) -> Array:
        return self._arg(a, "argmin")

    def argmax(self, a: Array) -> Array:
        return self._arg(a, "argmax")

    def argsort(self, a: Array) -> Array:
        return self._arg(a, "argsort")

    def contract(self, spec: str, a: Array, b: Array) -> Array:
        left, right = as_symbolic(a), as_symbolic(b)
        return _fill_zeros(np.asarray(contract(np, spec, left, right)), left)

    def structural(
        self, construct: type[Structural], args: Sequence[Array], params: Mapping[str, Any]
    ) -> Array:
        """Structural constructs move elements: NumPy's meaning on object arrays."""
        return np.asarray(ARRAY_MEANINGS[construct](np, *(as_symbolic(a) for a in args), **params))

    def build1(self, rows: Sequence[Array], shape: Shape, dtype: DType) -> Array:
        if not rows:
            return self.full(shape, 0, dtype)
        return self.from_list(rows)

    def shape(self, a: Array) -> Shape:
        return tuple(np.shape(a))

    # -- index functions: known integers, evaluated as by the reference evaluator --------

    def index_point(self, value: int) -> Array:
        return self.concrete.index_point(value)

    def index_grid(self, shape: Shape) -> list[Array] | None:
        return self.concrete.index_grid(shape)

    def index_fn_from_bulk(self, components: Sequence[Array], grid: Shape) -> IndexFn[Array]:
        known = [self._index(c, "index function") for c in components]
        return self.concrete.index_fn_from_bulk(known, grid)

    def index_fn_from_points(
        self, columns: Sequence[Sequence[Array]], grid: Shape
    ) -> IndexFn[Array]:
        known = [[self._index(v, "index function") for v in column] for column in columns]
        return self.concrete.index_fn_from_points(known, grid)

    def index_fn_constant(self, ix: Sequence[Array]) -> IndexFn[Array]:
        return self.concrete.index_fn_constant([self._index(i, "index") for i in ix])


def evaluate_symbolic(roots: Sequence[Term], inputs: Mapping[Var, Any]) -> list[Array]:
    """Interpret terms in :class:`SympyAlgebra`; float inputs are object arrays of SymPy
    expressions (symbols, usually), int and bool inputs plain arrays."""
    return Interpreter(SympyAlgebra()).run(list(roots), dict(inputs))


# --------------------------------------------------------------------------------------
# Symbolic gradients
# --------------------------------------------------------------------------------------


def subexpressions(expressions: Sequence[Expr], known: Sequence[Expr] = ()) -> Iterator[Expr]:
    """Every distinct subexpression once, except those of ``known``: SymPy's own walks
    (``has``, ``replace``, ``free_symbols``) visit the expression *tree*, exponentially
    many nodes for a DAG with sharing (a network's layers)."""
    seen: set[Expr] = set(known)
    stack = list(expressions)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        yield node
        stack.extend(node.args)


@cache
def stop_gradient_function() -> Any:
    """``stop_gradient``: the identity with derivative 0 (a constant to ``diff``),
    replaced by its argument before lambdify."""
    sp = sympy_module()

    def fdiff(self: Expr, argindex: int = 1) -> Expr:
        return sp.Integer(0)

    def eval(cls: Any, x: Expr) -> Expr | None:
        return x if x.is_number else None

    return type("stop_gradient", (sp.Function,), {"fdiff": fdiff, "eval": classmethod(eval)})


@cache
def exponent_pow_function() -> Any:
    """The ``pow`` primitive with a symbolic exponent: SymPy's ``x**y`` (printed so,
    lambdified so by :func:`_for_numpy`) whose derivatives are dualarr's pow rule
    (Fig. 14), JAX's ``y * x**(y - 1)`` and ``x**y * log(x)`` with the log's argument 1
    where ``x == 0`` (``_replace_zero``): both 0 at ``x = 0, y = 2``, where SymPy's own
    ``y*x**y/x`` and ``x**y*log(x)`` are ``nan``.  With a numeric exponent it is plain
    ``x**y`` (no exponent to differentiate)."""
    sp = sympy_module()

    def eval(cls: Any, base: Expr, exponent: Expr) -> Expr | None:
        return base**exponent if not exponent.free_symbols else None

    def fdiff(self: Expr, argindex: int = 1) -> Expr:
        base, exponent = self.args
        if argindex == 1:
            return exponent * base ** (exponent - 1)
        nonzero = sp.Piecewise((sp.Integer(1), sp.Eq(base, 0)), (base, True))
        return base**exponent * sp.log(nonzero)

    def as_power(self: Expr, printer: Any) -> str:
        return str(printer.doprint(sp.Pow(*self.args)))

    methods = {"eval": classmethod(eval), "fdiff": fdiff, "_sympystr": as_power, "nargs": 2}
    return type("ExponentPow", (sp.Function,), methods)

"""Smart constructors for index arithmetic (rank-0 int terms), folding constants.

The rewriting passes (bot, simplifier) build index terms such as ``j * 4 + k`` or
``0 <= j && j < n``; these helpers keep them readable (``i + 0`` is ``i``) and never
change their meaning.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .primitives import REGISTRY
from .terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Cond,
    Const,
    DType,
    Floor,
    FreeVars,
    FromIntegral,
    FromList,
    Gather,
    Index,
    Iota,
    Let,
    MapAccum,
    Op,
    Replicate,
    Reshape,
    Share,
    SumOuter,
    Term,
    Transpose,
    Var,
    int_const,
    postorder,
    rebuild,
    static_int_value,
    transform,
)


def _bool(value: bool) -> Const:
    return Const(np.asarray(value, dtype=np.bool_))


def add(a: Term, b: Term) -> Term:
    va, vb = static_int_value(a), static_int_value(b)
    if va is not None and vb is not None:
        return int_const(va + vb)
    if va == 0:
        return b
    if vb == 0:
        return a
    if vb is not None and vb < 0:
        return Op("sub", (a, int_const(-vb)))
    return Op("add", (a, b))


def sub(a: Term, b: Term) -> Term:
    va, vb = static_int_value(a), static_int_value(b)
    if va is not None and vb is not None:
        return int_const(va - vb)
    if vb == 0:
        return a
    return Op("sub", (a, b))


def mul(a: Term, b: Term) -> Term:
    va, vb = static_int_value(a), static_int_value(b)
    if va is not None and vb is not None:
        return int_const(va * vb)
    if va == 1:
        return b
    if vb == 1:
        return a
    if va == 0 or vb == 0:
        return int_const(0)
    return Op("mul", (a, b))


def quot(a: Term, b: Term) -> Term:
    """Floor division with the totality rule ``a // 0 == a``."""
    va, vb = static_int_value(a), static_int_value(b)
    if va is not None and vb is not None:
        return int_const(va if vb == 0 else va // vb)
    if vb == 1:
        return a
    return Op("quot", (a, b))


def rem(a: Term, b: Term) -> Term:
    """Remainder with the totality rule ``a % 0 == a``."""
    va, vb = static_int_value(a), static_int_value(b)
    if va is not None and vb is not None:
        return int_const(va if vb == 0 else va % vb)
    if vb == 1:
        return int_const(0)
    return Op("rem", (a, b))


def wrap_negative(j: Term, extent: int) -> Term:
    """NumPy's wrap of one index into a dimension of ``extent``: ``j + extent`` when
    ``j < 0``, else ``j`` (the primitive ``wrap``; what is still out of range stays
    out of range, so a read gives 0 and a write is dropped, §5.2).  A constant folds, and
    an index that is never negative is returned as it is."""
    value = static_int_value(j)
    if value is not None:
        return int_const(value + extent if value < 0 else value)
    if never_negative(j):
        return j
    return Op("wrap", (j, int_const(extent)))


_NONNEGATIVE_OPS = frozenset({"add", "mul", "quot", "rem", "minimum"})
"""Int primitives whose result is never negative when no argument is."""

_LOOK_DEPTH = 8
"""How deep :func:`never_negative` looks into a term (it runs once per traced index)."""


def never_negative(term: Term, depth: int = _LOOK_DEPTH) -> bool:
    """Is every element of the int ``term`` certainly ``>= 0``?  A cheap, conservative
    look at the top ``depth`` levels: constants, ``iota``, ``argmin``/``argmax``/
    ``argsort``, reads from such arrays (out of range reads 0) and sums, products,
    quotients, remainders and minima of such terms."""
    if term.dtype is not DType.INT64 or depth == 0:
        return False
    deeper = depth - 1
    match term:
        case Const(value=value):
            return bool((np.asarray(value) >= 0).all())
        case Iota() | ArgMin() | ArgMax() | ArgSort():
            return True
        case Index(array=array) | Gather(array=array):
            return never_negative(array, deeper)
        case (
            Replicate(array=inner)
            | Transpose(array=inner)
            | Reshape(array=inner)
            | SumOuter(array=inner)
            | Share(array=inner)
            | Let(body=inner)
        ):
            return never_negative(inner, deeper)
        case Op(op="maximum", args=args):
            return any(never_negative(a, deeper) for a in args)
        case Op(op="select", args=(_, a, b)) | Cond(if_true=a, if_false=b):
            return never_negative(a, deeper) and never_negative(b, deeper)
        case Op(op=op, args=args) if op in _NONNEGATIVE_OPS:
            return all(never_negative(a, deeper) for a in args)
        case FromList(elems=elems):
            return all(never_negative(e, deeper) for e in elems)
        case _:
            return False


def logical_and(a: Term, b: Term) -> Term:
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Const) and x.shape == () and x.dtype is DType.BOOL:
            return y if bool(x.value) else _bool(False)
    return Op("and", (a, b))


def in_range(j: Term, extent: int) -> Term:
    """``0 <= j && j < extent`` (a constant when ``j`` is one)."""
    value = static_int_value(j)
    if value is not None:
        return _bool(0 <= value < extent)
    return Op("and", (Op("le", (int_const(0), j)), Op("lt", (j, int_const(extent)))))


def all_in_range(index: Sequence[Term], shape: Sequence[int]) -> Term:
    ok: Term = _bool(True)
    for j, extent in zip(index, shape, strict=False):
        ok = logical_and(ok, in_range(j, extent))
    return ok


def is_true(term: Term) -> bool:
    return isinstance(term, Const) and term.dtype is DType.BOOL and bool(term.value)


def poison(ok: Term, component: Term) -> Term:
    """``component`` when ``ok`` holds, else ``-1`` (out of range, so a read gives 0)."""
    if is_true(ok):
        return component
    return Cond(ok, component, int_const(-1))


def strides(shape: Sequence[int]) -> list[int]:
    """Row-major strides (in elements)."""
    result = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        result[d] = result[d + 1] * shape[d + 1]
    return result


def linearise(index: Sequence[Term], shape: Sequence[int]) -> Term:
    """The row-major offset of ``index`` in ``shape``."""
    offset: Term = int_const(0)
    for j, stride in zip(index, strides(shape), strict=True):
        offset = add(offset, mul(j, int_const(stride)))
    return offset


def delinearise(offset: Term, shape: Sequence[int]) -> list[Term]:
    """The index of a row-major ``offset`` in ``shape`` (inverse of :func:`linearise`)."""
    comps: list[Term] = []
    for d, stride in enumerate(strides(shape)):
        c = quot(offset, int_const(stride))
        if d > 0:
            c = rem(c, int_const(shape[d]))
        comps.append(c)
    return comps


def is_scalar_index_work(term: Term, variables: frozenset[Var] | set[Var], fv: FreeVars) -> bool:
    """Is every part of ``term`` that depends on ``variables`` rank-0 elementwise work?

    That is the usual index arithmetic (affine, modular, min/max, comparisons, lookups in
    arrays that do not depend on ``variables``).  Such a term can be evaluated for a whole
    grid of index values at once, and can stay inside a gather's index function; any
    other dependence (an array computed from the variables) must be vectorised.
    """
    dependent = set(variables)
    order = postorder([term])
    position = {n: k for k, n in enumerate(order)}
    lets = sorted((n for n in order if isinstance(n, Let)), key=lambda n: position[n.bound])
    for let in lets:
        if not fv(let.bound).isdisjoint(dependent):
            dependent.add(let.var)
    for node in order:
        if fv(node).isdisjoint(dependent):
            continue
        if (
            not isinstance(node, Var | Const | Op | Cond | Let | Index | FromIntegral | Floor)
            or node.shape != ()
        ):
            return False
        if isinstance(node, Index) and not fv(node.array).isdisjoint(dependent):
            return False
    return True


def zero_preserving(op: str) -> bool:
    """Whether ``op(+0, …, +0) == +0`` (the sign of zero included: ``neg`` is not,
    ``-0.0`` divides differently), as its record says: indexing commutes with it even
    out of range, where every argument reads 0."""
    return REGISTRY[op].zero_preserving


def bounds(term: Term, known: dict[Var, tuple[int, int]]) -> tuple[int, int] | None:
    """An interval holding every value of the index term ``term``, or None if unknown."""
    memo: dict[Term, tuple[int, int] | None] = {}
    for node in postorder([term]):
        memo[node] = _node_bounds(node, known, memo)
    return memo[term]


def _node_bounds(
    node: Term, known: dict[Var, tuple[int, int]], memo: dict[Term, tuple[int, int] | None]
) -> tuple[int, int] | None:
    if isinstance(node, MapAccum) or node.shape != () or node.dtype is not DType.INT64:
        return None  # (a loop has several results: one of them, LoopOutput, has a type)
    value = static_int_value(node)
    if value is not None:
        return (value, value)
    if isinstance(node, Var):
        return known.get(node)
    if not isinstance(node, Op) or len(node.args) != 2:
        return None
    a, b = (memo.get(x) for x in node.args)
    if a is None or b is None:
        return None
    if node.op == "add":
        return (a[0] + b[0], a[1] + b[1])
    if node.op == "sub":
        return (a[0] - b[1], a[1] - b[0])
    if node.op == "mul":
        products = [x * y for x in a for y in b]
        return (min(products), max(products))
    if node.op == "minimum":
        return (min(a[0], b[0]), min(a[1], b[1]))
    if node.op == "maximum":
        return (max(a[0], b[0]), max(a[1], b[1]))
    if node.op == "quot" and b[0] == b[1] and b[0] > 0:
        return (a[0] // b[0], a[1] // b[0])
    if node.op == "rem" and b[0] == b[1] and b[0] > 0:
        return (0, b[0] - 1)
    if node.op == "wrap" and b[0] == b[1]:  # j + n where j < 0: each part's interval
        parts = [(max(a[0], 0), a[1])] if a[1] >= 0 else []
        if a[0] < 0:
            parts.append((a[0] + b[0], min(a[1], -1) + b[0]))
        return (min(p[0] for p in parts), max(p[1] for p in parts))
    return None


def compare_intervals(op: str, a: tuple[int, int], b: tuple[int, int]) -> bool | None:
    """``x op y`` for every ``x`` in the interval ``a`` and ``y`` in ``b`` (``op`` one of
    ``lt le gt ge eq ne``), or None when the intervals do not decide it."""
    (lo_a, hi_a), (lo_b, hi_b) = a, b
    apart, single = hi_a < lo_b or hi_b < lo_a, lo_a == hi_a == lo_b == hi_b
    decided: dict[str, tuple[bool, bool]] = {  # (always true, always false)
        "lt": (hi_a < lo_b, lo_a >= hi_b),
        "le": (hi_a <= lo_b, lo_a > hi_b),
        "gt": (lo_a > hi_b, hi_a <= lo_b),
        "ge": (lo_a >= hi_b, hi_a < lo_b),
        "eq": (single, apart),
        "ne": (apart, single),
    }
    always, never = decided[op]
    return True if always else False if never else None


def decide_bounds(term: Term, known: dict[Var, tuple[int, int]]) -> Term:
    """``term`` (a rank-0 index term) with each comparison that the variables' ``known``
    intervals decide made a constant, and the ``&&``, ``||``, ``!``, ``select`` and
    ``cond`` over such constants folded: the bounds checks of totality (§5.2) that an
    index function's own variables settle (``0 <= i && i < n`` for ``i`` over ``[0, n)``)."""

    def fold(node: Term, kids: tuple[Term, ...]) -> Term:
        node = rebuild(node, kids)
        match node:
            case Op(op="lt" | "le" | "gt" | "ge" | "eq" | "ne" as op, args=(a, b)) if (
                node.shape == ()
            ):
                ra, rb = bounds(a, known), bounds(b, known)
                value = None if ra is None or rb is None else compare_intervals(op, ra, rb)
                return node if value is None else _bool(value)
            case Op(op="and" | "or" as op, args=(a, b)):
                absorbing = op == "or"
                for this, other in ((a, b), (b, a)):
                    if isinstance(this, Const) and this.shape == ():
                        return this if bool(this.value) is absorbing else other
                return node
            case Op(op="not", args=(Const(value=v) as c,)) if c.shape == ():
                return _bool(not bool(v))
            case Op(op="select", args=(Const(value=v) as c, a, b)) if c.shape == ():
                return a if bool(v) else b
            case Cond(cond=Const(value=v) as c, if_true=a, if_false=b) if c.shape == ():
                return a if bool(v) else b
            case _:
                return node

    return transform([term], fold)[0]


def provably_in_range(
    index: Sequence[Term], shape: Sequence[int], known: dict[Var, tuple[int, int]]
) -> bool:
    """Is every component of ``index`` certainly within ``shape``?"""
    for j, extent in zip(index, shape, strict=False):
        interval = bounds(j, known)
        if interval is None or interval[0] < 0 or interval[1] >= extent:
            return False
    return True


def affine_form(term: Term, variables: tuple[Var, ...]) -> tuple[Var, int, int] | None:
    """``term`` as ``sign * v + shift`` for one lambda variable ``v``, if it is one."""
    if isinstance(term, Var) and term in variables:
        return term, 1, 0
    if isinstance(term, Op) and term.op in ("add", "sub") and len(term.args) == 2:
        a, b = term.args
        ka, kb = static_int_value(a), static_int_value(b)
        if term.op == "add":
            if isinstance(b, Var) and b in variables and ka is not None:
                return b, 1, ka
            if isinstance(a, Var) and a in variables and kb is not None:
                return a, 1, kb
        else:
            if isinstance(b, Var) and b in variables and ka is not None:
                return b, -1, ka
            if isinstance(a, Var) and a in variables and kb is not None:
                return a, 1, -kb
    return None

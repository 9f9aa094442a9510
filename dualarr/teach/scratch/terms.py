"""The mini language of the build-it-yourself track: the core terms of Fig. 7.

Given to the learner (every stage reads and writes these terms): one frozen dataclass per
production of Fig. 7, the union :data:`Term`, and the generic walks that every stage
needs (children, substitution, fresh names, a printer in the paper's notation).  The
stages themselves (tracing, evaluation, the bot, differentiation, code generation,
transposition, vmap) are what the learner writes, in ``notebooks/from-scratch/``.

Every name is bound once in a program (the random programs come that way and the stages
draw fresh names), so substitution never renames a binder.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from typing import Any, TypeAlias, TypeGuard, assert_never, get_args

import numpy as np

__all__ = [
    "Build1", "Cond", "Const", "FromList", "Gather", "GradientProgram", "Index", "Iota",
    "Let", "Op", "Replicate", "Scatter", "SumOuter", "Term", "Transpose", "Var", "children",
    "constructs_in", "float_const", "fresh", "from_plain", "int_const", "map_children",
    "mentions", "show", "subst", "subterms",
]  # fmt: skip

Array: TypeAlias = np.ndarray


@dataclass(frozen=True)
class Const:
    """A constant array (a scalar is an array of rank 0)."""

    value: Array


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Op:
    """An elementwise primitive (``add``, ``sin``, ``lt``, ``quot``, ...) on arrays of one shape."""

    op: str
    args: tuple[Term, ...]


@dataclass(frozen=True)
class Let:
    name: str
    bound: Term
    body: Term


@dataclass(frozen=True)
class Cond:
    """The strict conditional of §5.2: all three evaluated, then one branch picked."""

    cond: Term
    if_true: Term
    if_false: Term


@dataclass(frozen=True)
class Build1:
    """``build1 k (λi. e)``: the array ``[e[i:=0], ..., e[i:=k-1]]``."""

    size: int
    var: str
    body: Term


@dataclass(frozen=True)
class Index:
    """``e[j1, ..., jm]``: a subarray, zeros when out of range (§5.2)."""

    array: Term
    index: tuple[Term, ...]


@dataclass(frozen=True)
class Gather:
    """``gather sh e (λis. ix)``: ``out[is] = e[ix]`` for ``is`` in ``sh`` (§3.3)."""

    shape: tuple[int, ...]
    array: Term
    vars: tuple[str, ...]
    index: tuple[Term, ...]


@dataclass(frozen=True)
class Scatter:
    """``scatter sh e (λis. ix)``: ``out[ix] += e[is]``; ``out`` has outer shape ``sh``."""

    shape: tuple[int, ...]
    array: Term
    vars: tuple[str, ...]
    index: tuple[Term, ...]


@dataclass(frozen=True)
class SumOuter:
    """The sum along the outermost dimension."""

    array: Term


@dataclass(frozen=True)
class Replicate:
    """``count`` copies, stacked along a new outermost dimension."""

    count: int
    array: Term


@dataclass(frozen=True)
class Transpose:
    """``tr perm e``: permutes the leading ``len(perm)`` dimensions."""

    perm: tuple[int, ...]
    array: Term


@dataclass(frozen=True)
class FromList:
    """Arrays of one shape stacked along a new outermost dimension."""

    elems: tuple[Term, ...]


@dataclass(frozen=True)
class Iota:
    """``[0, ..., size-1]`` (int)."""

    size: int


Term: TypeAlias = (
    Const | Var | Op | Let | Cond | Build1 | Index | Gather | Scatter | SumOuter
    | Replicate | Transpose | FromList | Iota
)  # fmt: skip
"""A term of the core language (Fig. 7)."""

TERM_TYPES: tuple[type, ...] = get_args(Term)


def is_term(value: object) -> TypeGuard[Term]:
    return isinstance(value, TERM_TYPES)


def int_const(value: int) -> Const:
    return Const(np.asarray(value, dtype=np.int64))


def float_const(value: float) -> Const:
    return Const(np.asarray(value, dtype=np.float64))


# --------------------------------------------------------------------------------------
# Walking terms generically: the children are the fields that hold terms
# --------------------------------------------------------------------------------------


def children(t: Term) -> list[Term]:
    """The subterms of ``t`` one level down, in field order."""
    kids: list[Term] = []
    for field in fields(t):
        value = getattr(t, field.name)
        if is_term(value):
            kids.append(value)
        elif isinstance(value, tuple):
            kids.extend(x for x in value if is_term(x))
    return kids


def map_children(t: Term, f: Callable[[Term], Term]) -> Term:
    """``t`` with ``f`` applied to each child."""

    def go(value: Any) -> Any:
        if is_term(value):
            return f(value)
        return tuple(map(go, value)) if isinstance(value, tuple) else value

    return replace(t, **{field.name: go(getattr(t, field.name)) for field in fields(t)})


def subterms(t: Term) -> Iterator[Term]:
    """Every subterm, ``t`` first (a shared subterm once per occurrence)."""
    stack = [t]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def mentions(t: Term, name: str) -> bool:
    """Whether ``Var(name)`` occurs in ``t``."""
    return any(isinstance(u, Var) and u.name == name for u in subterms(t))


def subst(t: Term, name: str, new: Term) -> Term:
    """``t[name := new]`` (names are bound once: no capture to avoid)."""
    if isinstance(t, Var) and t.name == name:
        return new
    return map_children(t, lambda c: subst(c, name, new))


def constructs_in(t: Term) -> set[str]:
    """The names of the constructors that occur in ``t``."""
    return {type(u).__name__ for u in subterms(t)}


_fresh_ids = itertools.count(1)


def fresh(hint: str) -> str:
    """A name no program uses: ``hint`` and a prime and a number (``i'3``)."""
    return f"{hint}'{next(_fresh_ids)}"


# --------------------------------------------------------------------------------------
# The paper's notation, and dualarr's programs read as terms
# --------------------------------------------------------------------------------------

INFIX = {"add": "+", "sub": "-", "mul": "*", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
         "quot": "//", "rem": "%"}  # fmt: skip


def show(t: Term) -> str:
    """``t`` in the paper's notation."""

    def atom(u: Term) -> str:
        return show(u) if isinstance(u, Const | Var | Index | Iota) else f"({show(u)})"

    def seq(items: tuple[Any, ...]) -> str:
        return ", ".join(x if isinstance(x, str) else show(x) for x in items)

    match t:
        case Const(value):
            return str(np.asarray(value).tolist())
        case Var(name):
            return name
        case Op(op, (a, b)) if op in INFIX:
            return f"{atom(a)} {INFIX[op]} {atom(b)}"
        case Op(op, args):
            return " ".join([op, *map(atom, args)])
        case Let(name, bound, body):
            return f"let {name} = {show(bound)} in {show(body)}"
        case Cond(c, a, b):
            return f"cond {atom(c)} {atom(a)} {atom(b)}"
        case Build1(k, i, body):
            return f"build1 {k} (λ{i}. {show(body)})"
        case Index(a, ix):
            return f"{atom(a)}[{seq(ix)}]"
        case Gather(shape, a, names, f):
            return f"gather {list(shape)} {atom(a)} (λ[{seq(names)}]. [{seq(f)}])"
        case Scatter(shape, a, names, f):
            return f"scatter {list(shape)} {atom(a)} (λ[{seq(names)}]. [{seq(f)}])"
        case SumOuter(a):
            return f"sumOuter {atom(a)}"
        case Replicate(k, a):
            return f"replicate {k} {atom(a)}"
        case Transpose(perm, a):
            return f"tr {list(perm)} {atom(a)}"
        case FromList(elems):
            return f"fromList [{seq(elems)}]"
        case Iota(n):
            return f"iota {n}"
        case _:
            assert_never(t)


def from_plain(p: Any) -> Term:
    """The term for a dualarr program in the plain tuple form of
    :func:`dualarr.teach.scratch_support.plain`."""
    match p:
        case ("const", value):
            return Const(np.asarray(value))
        case ("var", name):
            return Var(name)
        case ("op", op, args):
            return Op(op, tuple(map(from_plain, args)))
        case ("let", name, bound, body):
            return Let(name, from_plain(bound), from_plain(body))
        case ("cond", c, a, b):
            return Cond(from_plain(c), from_plain(a), from_plain(b))
        case ("build1", k, i, body):
            return Build1(k, i, from_plain(body))
        case ("index", a, ix):
            return Index(from_plain(a), tuple(map(from_plain, ix)))
        case ("gather", shape, a, names, f):
            return Gather(tuple(shape), from_plain(a), tuple(names), tuple(map(from_plain, f)))
        case ("scatter", shape, a, names, f):
            return Scatter(tuple(shape), from_plain(a), tuple(names), tuple(map(from_plain, f)))
        case ("sumOuter", a):
            return SumOuter(from_plain(a))
        case ("replicate", k, a):
            return Replicate(k, from_plain(a))
        case ("tr", perm, a):
            return Transpose(tuple(perm), from_plain(a))
        case ("fromList", elems):
            return FromList(tuple(map(from_plain, elems)))
        case ("iota", n):
            return Iota(n)
    raise ValueError(f"not a plain term: {p!r}")


@dataclass(frozen=True)
class GradientProgram:
    """A gradient program as Fig. 21 returns it, with its sharing as lets (§7.4): the
    inputs, the cotangent's name, ``let`` bindings in dependency order, then the primal
    result and one gradient per input (terms over the inputs, the cotangent and the bound
    names; no ``Let``, ``Build1``)."""

    inputs: tuple[str, ...]
    cotangent: str
    bindings: tuple[tuple[str, Term], ...]
    primal: Term
    gradients: tuple[Term, ...]

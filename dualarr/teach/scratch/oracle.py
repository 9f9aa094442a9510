"""dualarr as the oracle of the build-it-yourself track: its random programs, read as the
mini language's terms, with dualarr's value and gradient of each.

The checks of every stage run the learner's code on these programs; :class:`Case`
carries what a report names (the program in the paper's notation, the inputs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..scratch_support import FIG7_CONSTRUCTS, RandomProgram, random_programs
from .terms import Term, from_plain, show

__all__ = ["Case", "as_python", "cases"]

Array = np.ndarray


@dataclass(frozen=True)
class Case:
    """One random program: as a mini-language term, its inputs, and dualarr's answers."""

    number: int
    term: Term
    env: dict[str, Array]
    random: RandomProgram

    @property
    def text(self) -> str:
        """The program in the paper's notation, with its number."""
        return f"#{self.number}: {show(self.term)}"

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(self.env)

    def value(self) -> Array:
        """dualarr's value of the program (its evaluator on its own terms)."""
        return np.asarray(self.random.program(*self.random.arrays))

    def cotangent(self, seed: int = 0) -> Array:
        """A random cotangent for the output (multiples of 1/8: exact arithmetic)."""
        rng = np.random.default_rng(seed + self.number)
        shape = np.shape(self.value())
        return np.asarray(rng.integers(-16, 17, size=shape) / 8.0)

    def vjp(self, cotangent: Array) -> dict[str, Array]:
        """dualarr's gradient of ``<cotangent, program(inputs)>`` for each input."""
        return _vjp(self.random, cotangent)


def _vjp(random: RandomProgram, cotangent: Array) -> dict[str, Array]:
    from ...pipeline import compile_gradient, vectorise_program

    vectorised, _ = vectorise_program(random.program)
    compiled = compile_gradient(vectorised)
    _, grads = compiled(*random.arrays, cotangent=np.asarray(cotangent, dtype=np.float64))
    names = random.names()
    return {
        names[var]: np.asarray(g)
        for var, g in zip(random.program.inputs, grads, strict=True)
    }


@functools.cache
def _drawn(
    seed: int, count: int, constructs: frozenset[str], outer_build1: bool, depth: int
) -> tuple[RandomProgram, ...]:
    return tuple(random_programs(seed, count, constructs=constructs,
                                 outer_build1=outer_build1, depth=depth))


def cases(
    seed: int,
    count: int,
    *,
    constructs: Collection[str] = FIG7_CONSTRUCTS,
    outer_build1: bool = False,
    depth: int = 4,
) -> list[Case]:
    """``count`` random programs of dualarr's core language (float64 output), as
    :class:`Case` s; reproducible from ``seed``."""
    drawn = _drawn(seed, count, frozenset(constructs), outer_build1, depth)
    return [Case(k, from_plain(p.plain()), p.env(), p) for k, p in enumerate(drawn)]


def as_python(term: Term, api: Mapping[str, Any], inputs: Sequence[str]) -> Callable[..., Any]:
    """A Python function that builds ``term`` through a tracing ``api`` (stage (a)'s
    ``build1``, ``gather``, ``scatter``, ``sum_outer``, ``replicate``, ``transpose``,
    ``from_list``, ``iota``, ``cond``, ``let``, ``const``, the elementwise functions, and
    operators on traced values): what a user would write by hand.  Its parameters are
    the ``inputs``, in order."""
    from . import terms as t

    binary = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
              "mul": lambda a, b: a * b, "quot": lambda a, b: a // b,
              "rem": lambda a, b: a % b, "lt": lambda a, b: a < b,
              "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
              "ge": lambda a, b: a >= b}  # fmt: skip

    def build(u: Term, scope: dict[str, Any]) -> Any:
        match u:
            case t.Const(value):
                return api["const"](value)
            case t.Var(name):
                return scope[name]
            case t.Op(op, args):
                values = [build(a, scope) for a in args]
                if op in binary:
                    return binary[op](*values)
                if op == "neg":
                    return -values[0]
                return api[op](*values)
            case t.Let(name, bound, body):
                return api["let"](build(bound, scope), lambda v: build(body, {**scope, name: v}))
            case t.Cond(c, a, b):
                return api["cond"](build(c, scope), build(a, scope), build(b, scope))
            case t.Build1(k, i, body):
                return api["build1"](k, lambda j: build(body, {**scope, i: j}))
            case t.Index(a, ix):
                array = build(a, scope)
                return array[tuple(build(j, scope) for j in ix)]
            case t.Gather(shape, a, names, f) | t.Scatter(shape, a, names, f):

                def index_function(*js: Any) -> tuple[Any, ...]:
                    inner = {**scope, **dict(zip(names, js, strict=True))}
                    return tuple(build(j, inner) for j in f)

                if isinstance(u, t.Gather):
                    return api["gather"](shape, build(a, scope), index_function)
                return api["scatter"](shape, build(a, scope), index_function, len(names))
            case t.SumOuter(a):
                return api["sum_outer"](build(a, scope))
            case t.Replicate(k, a):
                return api["replicate"](k, build(a, scope))
            case t.Transpose(perm, a):
                return api["transpose"](perm, build(a, scope))
            case t.FromList(elems):
                return api["from_list"]([build(e, scope) for e in elems])
            case t.Iota(n):
                return api["iota"](n)
        raise TypeError(f"not a term: {u!r}")

    def function(*args: Any) -> Any:
        return build(term, dict(zip(inputs, args, strict=True)))

    return function



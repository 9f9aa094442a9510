"""Support for the "Build it yourself" notebooks: random core programs and a plain view.

The notebooks in ``notebooks/from-scratch/`` have the learner write each stage of the pipeline
over a toy term type of their own; dualarr is only the oracle.  To compare like with
like, both sides read the *same* program: :func:`random_programs` draws well-typed
programs of the core language (paper Fig. 7, as dualarr terms), and :func:`plain` turns
a dualarr term into nested tuples that a notebook converts to its own toy type in a few
lines of ``match``.

The plain view (one tuple per node, the first field naming the construct)::

    ("const", array)                 ("var", name)
    ("op", name, (arg, ...))         ("let", name, bound, body)
    ("cond", c, a, b)                ("build1", k, name, body)
    ("index", array, (ix, ...))      ("sumOuter", array)
    ("gather", shape, array, (name, ...), (ix, ...))
    ("scatter", shape, array, (name, ...), (ix, ...))
    ("replicate", k, array)          ("tr", perm, array)
    ("fromList", (elem, ...))        ("iota", n)

Names are unique in a program (a variable's hint, with its id where two variables share
a hint), so a learner's substitution never needs to rename; in the random programs they
are also the names that ``str(program)`` prints.  The generator follows the paper's
total semantics (§5.2): indices are often out of range, integer ``quot``/``rem`` by
zero occur; float comparisons read only input data (exact values), so a
vectorised program, whose sums may round differently, takes the same branches.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..lang.errors import UnsupportedError
from ..lang.program import Program
from ..lang.terms import (
    Build1,
    Cond,
    Const,
    DType,
    FromList,
    Gather,
    IdSupply,
    Index,
    Iota,
    Let,
    Op,
    Replicate,
    Scatter,
    Shape,
    SumOuter,
    Term,
    Transpose,
    Var,
    bound_vars,
    children,
    fresh_var,
    postorder,
)

__all__ = [
    "FIG7_CONSTRUCTS",
    "PlainTerm",
    "RandomProgram",
    "plain",
    "plain_names",
    "random_programs",
    "variables_of",
]

PlainTerm = tuple[object, ...]
"""A term as nested tuples (see the module docstring for the grammar)."""

FIG7_CONSTRUCTS: frozenset[str] = frozenset(
    {
        "op", "cond", "let", "build1", "index", "gather", "scatter", "sumOuter",
        "replicate", "tr", "fromList", "iota",
    }
)  # fmt: skip
"""The constructs :func:`random_programs` can draw (the plain view's names)."""

NAMES = {"input": "xy", "index": "ijklmnpq", "let": "uvwabcde"}
"""The hints of the drawn variables, by kind."""
F64 = DType.FLOAT64
I64 = DType.INT64
FLOAT_UNARY = ("sin", "cos", "tanh", "neg")
FLOAT_BINARY = ("add", "sub", "mul", "maximum")


def plain_names(variables: Iterable[Var]) -> dict[Var, str]:
    """A unique name per variable: its hint where no other variable has that hint, else
    the hint and the variable's id (``i4``)."""
    distinct = list(dict.fromkeys(variables))
    hints = Counter(var.hint for var in distinct)
    return {var: var.hint if hints[var.hint] == 1 else f"{var.hint}{var.id}" for var in distinct}


def variables_of(term: Term) -> list[Var]:
    """Every variable of ``term``, bound or free, in a fixed order."""
    found: list[Var] = []
    for node in postorder([term]):
        found.extend(bound_vars(node)[0])
        if isinstance(node, Var):
            found.append(node)
    return found


def plain(term: Term, names: Mapping[Var, str] | None = None) -> PlainTerm:
    """``term`` as nested tuples (the module docstring's grammar); shared subterms are
    copied.  Variables are named by ``names`` (default: :func:`plain_names` of the
    term's variables).  Raises :class:`UnsupportedError` for a construct outside the
    grammar."""
    named = plain_names(variables_of(term)) if names is None else names
    done: dict[int, PlainTerm] = {}
    for node in postorder([term]):
        kids = [done[id(kid)] for kid in children(node)]
        done[id(node)] = _plain_node(node, kids, named)
    return done[id(term)]


def _plain_node(node: Term, kids: Sequence[PlainTerm], names: Mapping[Var, str]) -> PlainTerm:
    match node:
        case Const(value=value):
            return ("const", value)
        case Var():
            return ("var", names[node])
        case Op(op=op):
            return ("op", op, tuple(kids))
        case Let(var=var):
            return ("let", names[var], kids[0], kids[1])
        case Cond():
            return ("cond", kids[0], kids[1], kids[2])
        case Build1(size=size, var=var):
            return ("build1", size, names[var], kids[0])
        case Index():
            return ("index", kids[0], tuple(kids[1:]))
        case Gather(outer_shape=sh, vars=vs) | Scatter(outer_shape=sh, vars=vs):
            name = "gather" if isinstance(node, Gather) else "scatter"
            return (name, sh, kids[0], tuple(names[v] for v in vs), tuple(kids[1:]))
        case SumOuter():
            return ("sumOuter", kids[0])
        case Replicate(count=count):
            return ("replicate", count, kids[0])
        case Transpose(perm=perm):
            return ("tr", perm, kids[0])
        case FromList():
            return ("fromList", tuple(kids))
        case Iota(size=size):
            return ("iota", size)
        case _:
            raise UnsupportedError(
                f"{type(node).__name__} has no plain form (it is not in the toy grammar)",
                op="plain",
            )


@dataclass(frozen=True)
class RandomProgram:
    """A random closed program and input arrays for it."""

    program: Program
    arrays: tuple[np.ndarray, ...]

    @property
    def term(self) -> Term:
        """The output term (a dualarr term)."""
        return self.program.term

    def names(self) -> dict[Var, str]:
        """The plain name of each variable (inputs first)."""
        return plain_names([*self.program.inputs, *variables_of(self.term)])

    def plain(self) -> PlainTerm:
        """The output term as nested tuples (:func:`plain`)."""
        return plain(self.term, self.names())

    def env(self) -> dict[str, np.ndarray]:
        """The input arrays by their plain names."""
        names = self.names()
        return {
            names[var]: array for var, array in zip(self.program.inputs, self.arrays, strict=True)
        }

    def __str__(self) -> str:
        return str(self.program)


def random_programs(
    seed: int,
    count: int,
    *,
    constructs: Collection[str] = FIG7_CONSTRUCTS,
    outer_build1: bool = False,
    depth: int = 4,
) -> list[RandomProgram]:
    """``count`` random well-typed programs (float64 output, float64 inputs of rank 0–2,
    dimensions 1–3, values multiples of 1/8 in [-2, 2]), reproducible from ``seed``.

    ``constructs`` (a subset of :data:`FIG7_CONSTRUCTS`) limits what is drawn besides
    variables (read with ``index``, or spread with ``replicate``, where their shape asks
    for it), constants and index arithmetic; ``outer_build1`` makes every output a
    ``build1`` (programs for the bulk-operation transform); ``depth`` bounds nesting.
    """
    unknown = set(constructs) - FIG7_CONSTRUCTS
    if unknown:
        raise UnsupportedError(f"unknown constructs {sorted(unknown)}", op="random_programs")
    rng = np.random.default_rng(seed)
    return [
        _ProgramDrawer(rng, frozenset(constructs)).draw(outer_build1, depth)
        for _ in range(count)
    ]


@dataclass(frozen=True)
class _Scope:
    """Variables in scope, with the extent of each index variable, and the loop work."""

    floats: tuple[Var, ...] = ()
    exact: tuple[Var, ...] = ()  # input variables: their values are exact data
    indices: tuple[tuple[Var, int], ...] = ()
    work: int = 1

    def with_float(self, var: Var) -> _Scope:
        return _Scope((var, *self.floats), self.exact, self.indices, self.work)

    def with_indices(self, pairs: Sequence[tuple[Var, int]]) -> _Scope:
        work = self.work * math.prod(extent for _, extent in pairs)
        return _Scope(self.floats, self.exact, (*pairs, *self.indices), work)


MAX_WORK = 40
"""The most elements a loop nest (build1, gather, scatter) may range over."""


class _ProgramDrawer:
    """Draws one program: a typed, top-down random choice among the allowed constructs."""

    def __init__(self, rng: np.random.Generator, constructs: frozenset[str]) -> None:
        self.rng = rng
        self.allowed = constructs
        self.supply = IdSupply()
        self.used: Counter[str] = Counter()

    def var(self, kind: str, shape: Shape = (), dtype: DType = I64) -> Var:
        """A fresh variable with a hint no other variable of the program has."""
        letters = NAMES[kind]
        n = self.used[kind]
        self.used[kind] += 1
        hint = letters[n] if n < len(letters) else f"{letters[0]}{n}"
        return fresh_var(self.supply, hint, shape, dtype)

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, n: int) -> int:
        return int(self.rng.integers(n))

    def dims(self, rank: int) -> Shape:
        return tuple(int(d) for d in self.rng.integers(1, 4, size=rank))

    def draw(self, outer_build1: bool, depth: int) -> RandomProgram:
        inputs = [
            self.var("input", self.dims(self.pick(3)), F64)
            for _ in range(1 + self.pick(2))
        ]
        scope = _Scope(floats=tuple(inputs), exact=tuple(inputs))
        shape = self.dims(1 + self.pick(2) if outer_build1 else self.pick(3))
        if outer_build1:
            term = self.build1(shape, scope, depth - 1)
        else:
            options = self.options(shape, scope)
            term = self.constructs()[options[self.pick(len(options))]](shape, scope, depth - 1)
        arrays = tuple(self.rng.integers(-16, 17, size=v.shape) / 8.0 for v in inputs)
        program = Program("random", tuple(inputs), (term,), False, self.supply)
        return RandomProgram(program, arrays)

    # -- float terms --------------------------------------------------------------------

    def float_term(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        options = self.options(shape, scope) if depth > 0 else []
        if not options or self.chance(0.2):
            return self.leaf(shape, scope)
        draw_construct = self.constructs()[options[self.pick(len(options))]]
        return draw_construct(shape, scope, depth - 1)

    def constructs(self) -> dict[str, Callable[[Shape, _Scope, int], Term]]:
        """How each construct is drawn, by its plain name."""
        return {
            "op": self.op, "cond": self.cond, "let": self.let, "build1": self.build1,
            "index": self.index, "gather": self.gather, "scatter": self.scatter,
            "sumOuter": self.sum_outer, "replicate": self.replicate, "tr": self.tr,
            "fromList": self.stack,
        }  # fmt: skip

    def options(self, shape: Shape, scope: _Scope) -> list[str]:
        rank = len(shape)
        loops_ok = scope.work * max(1, math.prod(shape)) <= MAX_WORK
        usable = {
            "op": True,
            "cond": True,
            "let": True,
            "build1": rank >= 1 and loops_ok,
            "index": rank <= 2,
            "gather": rank <= 2 and loops_ok,
            "scatter": rank >= 1 and loops_ok,
            "sumOuter": rank <= 2,
            "replicate": rank >= 1,
            "tr": rank >= 2,
            "fromList": rank >= 1,
        }
        return [name for name, ok in usable.items() if ok and name in self.allowed]

    def leaf(self, shape: Shape, scope: _Scope) -> Term:
        """A constant, or a variable of a type ending in ``shape``, indexed down to it."""
        fitting = [v for v in scope.floats if v.shape[len(v.shape) - len(shape) :] == shape]
        if not fitting and shape and self.chance(0.7):
            return Replicate(shape[0], self.leaf(shape[1:], scope))  # reads data more often
        if not fitting or self.chance(0.15):
            return Const(self.rng.integers(-8, 9, size=shape) / 4.0)
        newest_first = fitting[0] if self.chance(0.5) else None  # let-bound names get used
        var = newest_first or fitting[self.pick(len(fitting))]
        prefix = var.shape[: len(var.shape) - len(shape)]
        if not prefix:
            return var
        return Index(var, tuple(self.index_term(extent, scope, 1) for extent in prefix))

    def op(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        if self.chance(0.4):
            name = FLOAT_UNARY[self.pick(len(FLOAT_UNARY))]
            return Op(name, (self.float_term(shape, scope, depth),))
        name = FLOAT_BINARY[self.pick(len(FLOAT_BINARY))]
        left, right = (self.float_term(shape, scope, depth) for _ in range(2))
        return Op(name, (left, right))

    def cond(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        return Cond(
            self.bool_term(scope, depth),
            self.float_term(shape, scope, depth),
            self.float_term(shape, scope, depth),
        )

    def let(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        bound_shape = self.dims(self.pick(3))
        bound = self.float_term(bound_shape, scope, depth)
        var = self.var("let", bound_shape, F64)
        return Let(var, bound, self.float_term(shape, scope.with_float(var), depth))

    def build1(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        var = self.var("index")
        inner = scope.with_indices([(var, shape[0])])
        return Build1(shape[0], var, self.float_term(shape[1:], inner, depth))

    def index(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        prefix = self.dims(1 + self.pick(3 - len(shape)))
        array = self.float_term((*prefix, *shape), scope, depth)
        return Index(array, tuple(self.index_term(extent, scope, depth) for extent in prefix))

    def gather(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        split = self.pick(len(shape) + 1)
        outer, tail = shape[:split], shape[split:]
        prefix = self.dims(1 + self.pick(3 - len(tail)))
        variables = [(self.var("index"), extent) for extent in outer]
        inner = scope.with_indices(variables)
        index = tuple(self.index_term(extent, inner, depth) for extent in prefix)
        array = self.float_term((*prefix, *tail), scope, depth)
        return Gather(outer, array, tuple(v for v, _ in variables), index)

    def scatter(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        split = 1 + self.pick(len(shape))
        outer, tail = shape[:split], shape[split:]
        source = self.dims(1 + self.pick(3 - len(tail)))
        variables = [(self.var("index"), extent) for extent in source]
        inner = scope.with_indices(variables)
        index = tuple(self.index_term(extent, inner, depth) for extent in outer)
        array = self.float_term((*source, *tail), scope, depth)
        return Scatter(outer, array, tuple(v for v, _ in variables), index)

    def sum_outer(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        return SumOuter(self.float_term((*self.dims(1), *shape), scope, depth))

    def replicate(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        return Replicate(shape[0], self.float_term(shape[1:], scope, depth))

    def tr(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        perm = tuple(int(p) for p in self.rng.permutation(len(shape)))
        source = [0] * len(shape)
        for q, p in enumerate(perm):
            source[p] = shape[q]
        return Transpose(perm, self.float_term(tuple(source), scope, depth))

    def stack(self, shape: Shape, scope: _Scope, depth: int) -> Term:
        return FromList(tuple(self.float_term(shape[1:], scope, depth) for _ in range(shape[0])))

    # -- index arithmetic and conditions -----------------------------------------------

    def index_term(self, extent: int, scope: _Scope, depth: int) -> Term:
        """A rank-0 int meant for a dimension of ``extent``: mostly in range, sometimes
        not (the total semantics reads 0 there)."""
        roll = self.pick(10)
        if not scope.indices or roll == 0:
            if self.chance(0.15):  # out of range: reads 0
                return _int(-1 if self.chance(0.5) else extent)
            return _int(self.pick(extent))
        var, size = scope.indices[self.pick(len(scope.indices))]
        match roll:
            case 1:
                return Op("sub", (_int(extent - 1), var))  # reversed
            case 2:
                return Op("rem", (Op("add", (Op("mul", (var, _int(2))), _int(1))), _int(extent)))
            case 3:
                return Op("add", (var, _int(int(self.rng.integers(-1, 2)))))
            case 4:
                return Op("quot", (var, _int(self.pick(3))))  # quot by 0 is the identity
            case 5 if len(scope.indices) > 1:
                other, _ = scope.indices[self.pick(len(scope.indices))]
                return Op("minimum", (Op("add", (var, other)), _int(extent - 1)))
            case 6 if "cond" in self.allowed and depth > 0:
                return Cond(
                    self.bool_term(scope, depth - 1),
                    self.index_term(extent, scope, depth - 1),
                    self.index_term(extent, scope, depth - 1),
                )
            case 7 if "iota" in self.allowed:
                return Index(Iota(size), (Op("rem", (var, _int(extent))),))
            case _:
                return var

    def bool_term(self, scope: _Scope, depth: int) -> Term:
        """A rank-0 bool: compares index arithmetic, or input data with a constant."""
        if scope.indices and self.chance(0.6):
            _, size = scope.indices[self.pick(len(scope.indices))]
            compared = self.index_term(size, scope, depth)
            return Op("lt" if self.chance(0.5) else "ge", (compared, _int(self.pick(size + 1))))
        exact = _Scope(floats=scope.exact, exact=scope.exact, indices=scope.indices)
        data = self.leaf((), exact)
        threshold = Const(np.asarray(self.rng.integers(-4, 5) / 4.0))
        return Op("gt" if self.chance(0.5) else "le", (data, threshold))


def _int(value: int) -> Const:
    return Const(np.asarray(value, dtype=np.int64))

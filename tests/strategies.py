"""Hypothesis strategies for random, well-typed core-language programs.

Terms are built *directly* with the constructors of :mod:`dualarr.lang.terms`, typed by
construction: :meth:`TermGen.gen_term` is asked for a term of a given shape and element
type in a scope (:class:`Env`) and picks one of the constructs able to produce it, drawing
the arguments' types first and recursing.  Every node checks its types when it is built,
so a generator bug shows up as an exception while drawing.

Main entry: :func:`programs` draws a :class:`GeneratedProgram` (float64 inputs of rank 0..3
with dims 1..4, optionally an int64 input for data-dependent indexing, the output term
and the input arrays).  ``gp.program()`` wraps it in a :class:`dualarr.lang.program.Program`,
``gp.function()`` gives a Python function for ``dualarr.trace``.  Smaller building
blocks: :func:`shapes`, :func:`terms`, :func:`index_terms`.

What the generated terms cover (all of :data:`dualarr.lang.terms.Term` and all of
:data:`dualarr.lang.terms.OPS`):

* elementwise ops: every float unary op, on safe arguments where needed (``log(1 + x*x)``,
  ``sqrt(1 + x*x)``, ``log1p(x*x)``, ``asin(tanh x / 2)``, ``tan(tanh x)``,
  ``recip(1 + x*x)``, ``exp``/``sinh``/``cosh``/``expm1`` of bounded arguments); ``neg``,
  ``abs``, ``sign``; ``add sub mul maximum minimum``; ``div`` by safe denominators
  (``1 + y*y``, ``2 + cos y``); ``pow`` with a base ≥ 1; ``atan2``; int ``quot``/``rem``
  by constants and data, zero included; all six comparisons; ``not and or``; ``select``;
* ``Cond`` whose condition compares index variables (``i < 2``, ``(i + j) % 2 == 0``) or
  data; ``Let`` (bodies that use the variable several times, lets of ints and of
  non-scalar arrays); ``Build1`` nested up to 3 deep (parameter);
* ``Index`` with index arithmetic (``+ - * // %``, ``minimum``/``maximum``, constants that
  are negative or too large), data-dependent indices (an int input array, ``Floor`` of
  float data, ``ArgMin``/``ArgMax``/``ArgSort``); ``Gather`` / ``Scatter`` with affine and modular
  index functions (``[2*i + j - 1, i % 3]``) over inputs or subterms, including index
  functions that contain array computations;
* ``Rev`` (a construct of its own module, reversal along a random axis)
* ``SumOuter``, ``Replicate``, ``Transpose`` (random permutations), ``Reshape`` (random
  refactorisations), ``FromList``, ``Iota`` (as int, and cast with ``FromIntegral``),
  ``FromIntegral``, ``Floor``, ``ArgMin``/``ArgMax``/``ArgSort``;
* DAG sharing: with ``sharing=True`` a previously drawn subterm whose free variables are
  in scope is reused (the same node twice), besides the explicit ``Let``.

Numerical hygiene, so that a reference evaluator and an element-by-element oracle agree to
1e-9: input floats lie in [-2, 2] (no subnormals), risky functions get safe arguments,
and every float that feeds a *discontinuous* use (``Floor``, ``ArgMin``/``ArgMax``/``ArgSort``,
comparisons, ``sign``, ``atan2``, an unguarded ``div``) is drawn in "exact" mode: built
only from inputs, constants and IEEE-exact operations (``+ - * /``, ``abs``, ``max``/
``min``, data movement), never through a reduction (``SumOuter``/``Scatter``) whose
summation order could differ by an ulp.  Sizes are bounded: every intermediate has at most
``max_elems`` elements (shrunk inside loops by the product of the enclosing extents), so
an example evaluates in milliseconds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dualarr.constructs import Rev
from dualarr.lang.primitives import BUILT_IN
from dualarr.lang.program import Program
from dualarr.lang.tensor import Tensor, new_var
from dualarr.lang.terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Build1,
    Cond,
    Const,
    DType,
    Floor,
    FreeVars,
    FromIntegral,
    FromList,
    Gather,
    IdSupply,
    Index,
    Iota,
    Let,
    LoopOutput,
    MapAccum,
    Op,
    Replicate,
    Reshape,
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
    rebuild,
    substitute,
    transform,
)

__all__ = [
    "Binding",
    "Env",
    "GenConfig",
    "GeneratedProgram",
    "TermGen",
    "build_nesting",
    "constructs",
    "index_terms",
    "programs",
    "rename_bound_vars",
    "shapes",
    "shared_nodes",
    "terms",
]

Draw = st.DrawFn

F64 = DType.FLOAT64
I64 = DType.INT64
BOOL = DType.BOOL

FLOAT_CONSTS: tuple[float, ...] = (0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1.5, -0.25, 0.75)
INT_CONSTS: tuple[int, ...] = (0, 1, 2, -1, 3, 4, -2, 5)
FLOAT_UNARY: tuple[str, ...] = (
    "sin", "cos", "tanh", "atan", "sigmoid", "neg", "abs", "exp", "log",
    "sqrt", "log1p", "expm1", "tan", "asin", "acos", "sinh", "cosh", "recip", "stop_gradient",
    "sinc", "sinc_d1", "sinc_d2", "sinc_d3", "sinc_d4",
)  # fmt: skip


# --------------------------------------------------------------------------------------
# Scopes and configuration
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Binding:
    """A variable in scope.

    ``extent``: for an index variable (of ``build1`` or an index function), its values
    range over ``[0, extent)``.  ``exact``: for a float variable, whether its value was
    computed without reductions (so it may feed ``floor``, comparisons, ...).
    """

    var: Var
    extent: int | None = None
    exact: bool = True


@dataclass(frozen=True)
class Env:
    """The scope of a term being generated: bindings (innermost first) and loop context.

    ``work`` is the product of the extents of the enclosing loops (``build1`` bodies and
    index functions are evaluated once per point), ``builds`` the ``build1`` nesting.
    """

    bindings: tuple[Binding, ...] = ()
    work: int = 1
    builds: int = 0

    def bind(self, *new: Binding, work: int = 1, builds: int = 0) -> Env:
        return Env((*new, *self.bindings), self.work * max(1, work), self.builds + builds)

    @property
    def var_ids(self) -> frozenset[int]:
        return frozenset(b.var.id for b in self.bindings)

    def index_vars(self) -> list[Binding]:
        """Rank-0 int variables (index variables first, then let-bound ints)."""
        scalars = [b for b in self.bindings if b.var.shape == () and b.var.dtype is I64]
        return sorted(scalars, key=lambda b: b.extent is None)

    def usable(self, shape: Shape, dtype: DType, exact: bool) -> list[Binding]:
        """Bindings that a leaf of this type can read (indexed or replicated)."""
        found = []
        for b in self.bindings:
            if b.var.dtype is not dtype or (exact and not b.exact):
                continue
            vs = b.var.shape
            if _is_suffix(shape, vs) or _is_suffix(vs, shape):
                found.append(b)
        return found


@dataclass(frozen=True)
class GenConfig:
    """Size limits and options of the term generator."""

    max_elems: int = 200
    max_build_nesting: int = 3
    max_dim: int = 4
    sharing: bool = True
    loops: bool = True


def _is_suffix(small: Shape, big: Shape) -> bool:
    return len(small) <= len(big) and tuple(big[len(big) - len(small) :]) == tuple(small)


def _prod(shape: Sequence[int]) -> int:
    return math.prod(shape)


# --------------------------------------------------------------------------------------
# Small strategies
# --------------------------------------------------------------------------------------


def shapes(
    min_rank: int = 0, max_rank: int = 3, min_dim: int = 1, max_dim: int = 4
) -> st.SearchStrategy[Shape]:
    """Array shapes: rank in ``[min_rank, max_rank]``, each dim in ``[min_dim, max_dim]``."""
    return st.lists(st.integers(min_dim, max_dim), min_size=min_rank, max_size=max_rank).map(tuple)


def float_arrays(shape: Shape) -> st.SearchStrategy[np.ndarray]:
    """float64 arrays with every element drawn from [-2, 2] (no subnormals)."""
    return hnp.arrays(
        np.float64,
        shape,
        elements=st.floats(-2.0, 2.0, allow_subnormal=False),
        fill=st.nothing(),
    )


def int_arrays(shape: Shape, lo: int = -2, hi: int = 6) -> st.SearchStrategy[np.ndarray]:
    """int64 arrays in ``[lo, hi]``: as indices, a mix of in- and out-of-range values."""
    return hnp.arrays(np.int64, shape, elements=st.integers(lo, hi), fill=st.nothing())


# --------------------------------------------------------------------------------------
# The term generator
# --------------------------------------------------------------------------------------


def _const(value: float | int | bool, dtype: DType) -> Const:
    return Const(np.asarray(value, dtype=dtype.numpy()))


def _op(name: str, *args: Term) -> Op:
    return Op(name, tuple(args))


class TermGen:
    """Draws typed terms with Hypothesis' ``draw``; variables come from ``supply``.

    ``stats`` counts the constructs chosen (``"shared"`` for reuses of a drawn subterm,
    ``"let_multi_use"`` for lets whose body reads the variable at least twice).
    """

    def __init__(self, draw: Draw, supply: IdSupply, config: GenConfig | None = None) -> None:
        self.draw = draw
        self.supply = supply
        self.config = config or GenConfig()
        self.stats: Counter[str] = Counter()
        # (shape, dtype) -> [(term, ids of its free variables, exact, work)]
        self._pool: dict[tuple[Shape, DType], list[tuple[Term, frozenset[int], bool, int]]] = {}
        self._free = FreeVars()

    # -- drawing helpers -------------------------------------------------------------

    def _int(self, lo: int, hi: int) -> int:
        return int(self.draw(st.integers(lo, hi)))

    def _flip(self, one_in: int = 2) -> bool:
        """True with probability about ``1/one_in`` (shrinks to False)."""
        return self._int(0, one_in - 1) == one_in - 1

    def _pick(self, items: Sequence[Any]) -> Any:
        return items[self._int(0, len(items) - 1)]

    def _choose(self, options: Sequence[tuple[str, int]]) -> str:
        names = [name for name, weight in options for _ in range(weight)]
        return str(self.draw(st.sampled_from(names)))

    def _fresh(self, hint: str, shape: Shape = (), dtype: DType = I64) -> Var:
        return fresh_var(self.supply, hint, shape, dtype)

    def _limit(self, env: Env, shape: Shape) -> int:
        """Largest element count allowed for an intermediate here."""
        return max(_prod(shape), self.config.max_elems // env.work, 4)

    def _dims(self, count: int, room: int) -> tuple[int, ...]:
        """Up to ``count`` dims (at least one) whose product is at most ``room``."""
        dims: list[int] = []
        for _ in range(count):
            top = min(self.config.max_dim, room // max(1, _prod(dims)))
            if top < 1:
                break
            dims.append(self._int(1, top))
        return tuple(dims) if dims else (1,)

    def full(self, shape: Shape, value: float | int | bool, dtype: DType = F64) -> Term:
        """A constant of ``shape``: a NumPy constant or a replicated scalar (as traced)."""
        if not shape or self._flip():
            return Const(np.full(shape, value, dtype=dtype.numpy()))
        term: Term = _const(value, dtype)
        for extent in reversed(shape):
            term = Replicate(extent, term)
        return term

    def constant(self, shape: Shape, dtype: DType) -> Term:
        """A random constant array of small values."""
        n = _prod(shape)
        if n > 1 and self._flip(3):
            base = {F64: FLOAT_CONSTS, I64: INT_CONSTS, BOOL: (False, True)}[dtype]
            return self.full(shape, self._pick(base), dtype)
        if dtype is BOOL:
            values: list[Any] = [self._flip() for _ in range(n)] if n <= 16 else []
        elif dtype is I64:
            values = [self._int(-2, 5) for _ in range(n)] if n <= 16 else []
        else:
            values = [self._pick(FLOAT_CONSTS) for _ in range(n)] if n <= 16 else []
        if n > 16:  # a seeded pattern keeps the choice sequence short
            rng = np.random.default_rng(self._int(0, 2**16))
            if dtype is BOOL:
                values = list(rng.integers(0, 2, n).astype(bool))
            elif dtype is I64:
                values = list(rng.integers(-2, 6, n))
            else:
                values = list(rng.choice(np.array(FLOAT_CONSTS), n))
        return Const(np.array(values, dtype=dtype.numpy()).reshape(shape))

    # -- the main entry ----------------------------------------------------------------

    def gen_term(
        self,
        shape: Shape,
        dtype: DType,
        env: Env,
        depth: int,
        exact: bool = False,
        *,
        top: bool = False,
    ) -> Term:
        """A term of type ``dtype[shape]`` whose free variables are bound in ``env``.

        ``exact``: a float term computed without reductions or transcendental functions
        (bit-identical under any evaluation order; needed under discontinuous uses).
        ``top``: the root of a program (never a bare leaf when ``depth > 0``).
        """
        shape = tuple(shape)
        if dtype is not F64:
            exact = True  # ints and bools are always exact
        shared = None if top else self._reuse(shape, dtype, env, exact)
        if shared is not None:
            return shared
        if depth <= 0:
            return self.leaf(shape, dtype, env, exact)
        options = self._options(shape, dtype, env, exact)
        if top:
            options = [o for o in options if o[0] != "leaf"]
        name = self._choose(options)
        self.stats[name] += 1
        method: Callable[[Shape, DType, Env, int, bool], Term] = getattr(self, "_g_" + name)
        term = method(shape, dtype, env, depth - 1, exact)
        assert term.shape == shape and term.dtype is dtype, (name, term.shape, shape)
        if self.config.sharing and not isinstance(term, Const | Var):
            fv = frozenset(v.id for v in self._free(term))
            self._pool.setdefault((shape, dtype), []).append((term, fv, exact, env.work))
        return term

    def _reuse(self, shape: Shape, dtype: DType, env: Env, exact: bool) -> Term | None:
        if not self.config.sharing:
            return None
        entries = self._pool.get((shape, dtype))
        if not entries:
            return None
        in_scope = env.var_ids
        # in scope, exact enough, and not too costly to evaluate once per loop iteration
        fits = [
            t
            for t, fv, ex, work in entries
            if fv <= in_scope and (ex or not exact) and work * 8 >= env.work
        ]
        if not fits or not self._flip(6):
            return None
        self.stats["shared"] += 1
        return self._pick(fits)  # type: ignore[no-any-return]

    def _options(self, shape: Shape, dtype: DType, env: Env, exact: bool) -> list[tuple[str, int]]:
        rank = len(shape)
        can_build = bool(shape) and env.builds < self.config.max_build_nesting
        opts: list[tuple[str, int]] = [("leaf", 2)]
        if dtype is F64:
            opts += [("float_unary", 4), ("float_binary", 4), ("from_integral", 1)]
        elif dtype is I64:
            opts += [("int_unary", 1), ("int_binary", 3), ("floor", 2), ("arg", 2)]
            if rank == 1:
                opts.append(("iota", 2))
        else:
            opts += [("compare", 4), ("logic", 2)]
        opts += [("select", 1), ("cond", 1), ("let", 2), ("index", 2), ("gather", 3)]
        opts += [("reshape", 1)]
        if dtype is not BOOL and not (dtype is F64 and exact):
            opts += [("scatter", 1), ("sum_outer", 1)]
        if can_build:
            opts.append(("build1", 4 if env.builds == 0 else 8))
            if rank >= 2 and env.builds + 2 <= self.config.max_build_nesting:
                opts.append(("build_nest", 2))
        if shape:
            opts.append(("replicate", 1))
            if 1 <= shape[0] <= 4:
                opts.append(("from_list", 1))
        if rank >= 2:
            opts.append(("transpose", 2))
        if shape:
            opts.append(("rev", 1))
        if self.config.loops and env.work <= 16:
            opts.append(("loop", 1))
        return opts

    # -- leaves ------------------------------------------------------------------------

    def leaf(self, shape: Shape, dtype: DType, env: Env, exact: bool = False) -> Term:
        """A term without nested structure: a variable (indexed/replicated) or a constant."""
        usable = env.usable(shape, dtype, exact)
        opts: list[tuple[str, int]] = [("const", 2)]
        if usable:
            opts.append(("var", 8))
        idx = env.index_vars()
        if shape == () and idx and dtype is not BOOL:
            opts.append(("index_var", 4))
        if shape == () and dtype is BOOL and idx:
            opts.append(("compare_index", 4))
        if len(shape) == 1 and dtype is not BOOL:
            opts.append(("iota", 1))
        choice = self._choose(opts)
        self.stats["leaf_" + choice] += 1
        if choice == "var":  # favour the innermost binding (let / build1 variables)
            binding = usable[0] if self._flip() else self._pick(usable)
            return self.use_binding(binding, shape, env)
        if choice == "index_var":
            term: Term = self.index_expr(4, env, 0)
            return term if dtype is I64 else FromIntegral(term)
        if choice == "compare_index":
            return self._compare_index(env)
        if choice == "iota":
            self.stats["iota"] += 1
            iota = Iota(shape[0])
            return iota if dtype is I64 else FromIntegral(iota)
        return self.constant(shape, dtype)

    def use_binding(self, binding: Binding, shape: Shape, env: Env) -> Term:
        """Read ``binding`` at ``shape``: index away its outer dims or replicate it up."""
        var = binding.var
        vs = var.shape
        if vs == shape:
            return var
        if _is_suffix(shape, vs):
            prefix = vs[: len(vs) - len(shape)]
            return Index(var, tuple(self.index_expr(p, env, 0) for p in prefix))
        term: Term = var
        if not _is_suffix(vs, shape):  # unrelated shapes: read one element, replicate it
            term = Index(var, tuple(self.index_expr(p, env, 0) for p in vs))
            vs = ()
        for extent in reversed(shape[: len(shape) - len(vs)]):
            term = Replicate(extent, term)
        return term

    # -- index expressions -------------------------------------------------------------

    def index_expr(self, extent: int, env: Env, depth: int) -> Term:
        """A rank-0 int term meant as an index into a dim of size ``extent``.

        Mostly affine/modular arithmetic on the index variables in scope, with constants
        that may be negative or too large; at ``depth > 0`` also data-dependent indices
        (an int array, ``floor`` of float data, ``argmin``/``argmax``), ``cond`` and any
        int term.
        """
        idx = env.index_vars()
        opts: list[tuple[str, int]] = [("const", 2)]
        if idx:
            opts += [("var", 4), ("affine", 3), ("mod", 3), ("quot", 3), ("clamp", 2)]
        if depth > 0:
            opts += [("floor", 1), ("arg", 1), ("cond", 1), ("general", 1)]
            ints = [b for b in env.bindings if b.var.dtype is I64 and b.var.shape != ()]
            if ints:
                opts.append(("data", 3))
        choice = self._choose(opts)
        self.stats["ix_" + choice] += 1
        if choice == "const":
            return _const(self._int(-2, extent + 1), I64)
        if choice == "var":
            v: Term = self._pick(idx).var
            if self._flip(3):
                v = _op(self._pick(("add", "sub")), v, _const(self._int(1, 2), I64))
            return v
        if choice in ("affine", "mod", "quot", "clamp"):
            term = self._affine(idx)
            if choice == "mod":
                return _op("rem", term, _const(self._pick((extent, 2, 3, 0, -2)), I64))
            if choice == "quot":
                return _op("quot", term, _const(self._pick((2, 3, 0, -2, 1)), I64))
            if choice == "clamp":
                hi = _op("minimum", term, _const(self._pick((extent - 1, extent)), I64))
                return _op("maximum", hi, _const(self._pick((0, -1)), I64)) if self._flip() else hi
            return term
        if choice == "floor":
            self.stats["floor"] += 1
            x = self.gen_term((), F64, env, depth - 1, exact=True)
            scaled = _op("mul", x, _const(self._pick((1.0, 2.0, 2.5)), F64))
            shifted = _op("add", scaled, _const(self._pick((0.0, 1.0, 2.0)), F64))
            return Floor(shifted)
        if choice == "arg":
            self.stats["arg"] += 1
            k = self._int(1, 4)
            src_dtype = self._pick((F64, I64))
            src = self.gen_term((k,), src_dtype, env, depth - 1, exact=True)
            if self._flip():  # one position of the sorting permutation
                return Index(ArgSort(src), (_const(self._int(0, k - 1), I64),))
            return ArgMin(src) if self._flip() else ArgMax(src)
        if choice == "data":
            ints = [b for b in env.bindings if b.var.dtype is I64 and b.var.shape != ()]
            b = self._pick(ints)
            prefix = b.var.shape
            return Index(b.var, tuple(self.index_expr(p, env, depth - 1) for p in prefix))
        if choice == "cond":
            c = self.gen_term((), BOOL, env, depth - 1)
            return Cond(
                c, self.index_expr(extent, env, depth - 1), self.index_expr(extent, env, depth - 1)
            )
        return self.gen_term((), I64, env, depth - 1)

    def _affine(self, idx: Sequence[Binding]) -> Term:
        """``a*i + b*j + c`` over index variables, with small coefficients."""
        first: Term = self._pick(idx).var
        a = self._pick((1, 2, -1, 3))
        term: Term = first if a == 1 else _op("mul", _const(a, I64), first)
        if self._flip():
            second: Term = self._pick(idx).var
            b = self._pick((1, -1, 2))
            term = _op("add", term, second if b == 1 else _op("mul", _const(b, I64), second))
        c = self._int(-2, 2)
        if c:
            term = _op("add", term, _const(c, I64))
        return term

    def _compare_index(self, env: Env) -> Term:
        """A rank-0 bool about the index variables: ``i < 2``, ``(i + j) % 2 == 0``."""
        idx = env.index_vars()
        term = self._affine(idx)
        if self._flip():
            term = _op("rem", term, _const(2, I64))
            return _op(self._pick(("eq", "ne")), term, _const(0, I64))
        name = self._pick(("lt", "le", "gt", "ge", "eq", "ne"))
        self.stats["compare"] += 1
        return _op(name, term, _const(self._int(0, 3), I64))

    # -- constructs --------------------------------------------------------------------

    def _g_leaf(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        return self.leaf(shape, dtype, env, exact)

    def _g_float_unary(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        if exact:
            name = self._pick(("neg", "abs", "sign"))
            return _op(name, self.gen_term(shape, dtype, env, depth, exact=True))
        # rotated by the number of choices made so far: Hypothesis favours small choices,
        # and the rotation spreads that bias over all 18 ops instead of the first few
        k = self._int(0, len(FLOAT_UNARY) - 1) + self.stats.total()
        name = FLOAT_UNARY[k % len(FLOAT_UNARY)]
        self.stats["op_" + name] += 1
        x = self.gen_term(shape, dtype, env, depth)

        def one_plus_square(t: Term) -> Term:
            return _op("add", self.full(shape, 1.0), _op("mul", t, t))

        def bounded(t: Term) -> Term:
            kind = self._pick(("tanh", "sin", "negabs"))
            if kind == "negabs":
                return _op("neg", _op("abs", t))
            return _op(kind, t)

        if name in ("log", "sqrt", "recip"):
            return _op(name, one_plus_square(x))
        if name == "log1p":
            return _op(name, _op("mul", x, x))
        if name in ("exp", "expm1", "sinh", "cosh"):
            return _op(name, bounded(x))
        if name == "tan":
            return _op(name, _op("tanh", x))
        if name in ("asin", "acos"):
            return _op(name, _op("mul", _op("tanh", x), self.full(shape, 0.5)))
        if name == "stop_gradient":  # x - sg x + sg x: the value and derivative of x
            stopped = _op(name, x)
            return _op("add", _op("sub", x, stopped), stopped)
        return _op(name, x)

    def _g_float_binary(
        self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool
    ) -> Term:
        names: tuple[str, ...] = ("add", "sub", "mul", "maximum", "minimum", "div")
        if not exact:
            names += ("pow", "atan2", "div_raw")
        name = self._pick(names)
        self.stats["op_" + name] += 1
        if name == "atan2":  # discontinuous across y = 0 for x < 0: exact arguments
            a = self.gen_term(shape, dtype, env, depth, exact=True)
            b = self.gen_term(shape, dtype, env, depth, exact=True)
            return _op("atan2", a, b)
        if name == "div_raw":  # unguarded division by exact data (inf/nan are fine)
            a = self.gen_term(shape, dtype, env, depth)
            b = self.gen_term(shape, dtype, env, depth, exact=True)
            return _op("div", a, b)
        a = self.gen_term(shape, dtype, env, depth, exact)
        b = self.gen_term(shape, dtype, env, depth, exact)
        if name == "div":
            if exact or self._flip():
                denominator: Term = _op("add", self.full(shape, 1.0), _op("mul", b, b))
            else:
                denominator = _op("add", self.full(shape, 2.0), _op("cos", b))
            return _op("div", a, denominator)
        if name == "pow":
            base = _op("add", self.full(shape, 1.0), _op("mul", a, a))
            if self._flip():
                exponent: Term = _op("tanh", b)
            else:
                exponent = self.full(shape, self._pick((2.0, 0.5, -1.0)))
            return _op("pow", base, exponent)
        return _op(name, a, b)

    def _g_from_integral(
        self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool
    ) -> Term:
        return FromIntegral(self.gen_term(shape, I64, env, depth))

    def _g_int_unary(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        name = self._pick(("neg", "abs", "sign"))
        return _op(name, self.gen_term(shape, I64, env, depth))

    def _g_int_binary(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        name = self._pick(("add", "sub", "mul", "maximum", "minimum", "quot", "rem", "wrap"))
        self.stats["op_" + name] += 1
        a = self.gen_term(shape, I64, env, depth)
        if name in ("quot", "rem", "wrap") and self._flip():
            b: Term = self.full(shape, self._pick((2, 3, 0, -2)), I64)
        else:
            b = self.gen_term(shape, I64, env, depth)
        return _op(name, a, b)

    def _g_floor(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        x = self.gen_term(shape, F64, env, depth, exact=True)
        if self._flip():
            x = _op("mul", x, self.full(shape, 2.0))
        return Floor(x)

    def _g_arg(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        room = self._limit(env, shape) // max(1, _prod(shape))
        k = self._int(1, max(1, min(4, room)))
        if shape and self._flip():  # the sorting permutation of a source of this shape
            return ArgSort(self.gen_term(shape, self._pick((F64, I64)), env, depth, exact=True))
        src = self.gen_term((k, *shape), self._pick((F64, I64)), env, depth, exact=True)
        return ArgMin(src) if self._flip() else ArgMax(src)

    def _g_iota(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        return Iota(shape[0])

    def _g_compare(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        if shape == () and env.index_vars() and self._flip():
            return self._compare_index(env)
        arg_dtype = self._pick((F64, I64))
        a = self.gen_term(shape, arg_dtype, env, depth, exact=True)
        if self._flip():
            b = self.constant(shape, arg_dtype)
        else:
            b = self.gen_term(shape, arg_dtype, env, depth, exact=True)
        name = self._pick(("lt", "le", "gt", "ge", "eq", "ne"))
        self.stats["op_" + name] += 1
        return _op(name, a, b)

    def _g_logic(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        name = self._pick(("not", "and", "or"))
        a = self.gen_term(shape, BOOL, env, depth)
        if name == "not":
            return _op("not", a)
        return _op(name, a, self.gen_term(shape, BOOL, env, depth))

    def _g_select(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        c = self.gen_term(shape, BOOL, env, depth)
        a = self.gen_term(shape, dtype, env, depth, exact)
        b = self.gen_term(shape, dtype, env, depth, exact)
        return _op("select", c, a, b)

    def _g_cond(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        if env.index_vars() and self._flip():
            c = self._compare_index(env)
        else:
            c = self.gen_term((), BOOL, env, depth)
        a = self.gen_term(shape, dtype, env, depth, exact)
        b = self.gen_term(shape, dtype, env, depth, exact)
        return Cond(c, a, b)

    def _g_let(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        limit = self._limit(env, shape)
        kind = self._int(0, 3)
        if kind == 0:
            bshape: Shape = shape
        elif kind == 1:
            bshape = ()
        elif kind == 2 and len(shape) < 3 and _prod(shape) * 2 <= limit:
            bshape = (self._int(1, min(4, limit // max(1, _prod(shape)))), *shape)
        else:
            bshape = self._dims(self._int(1, 2), limit)
        bdtype = dtype if dtype is not BOOL and self._flip(4) else self._pick((F64, F64, I64))
        # exact when it may have to be floored/compared to be read at another type
        bexact = exact or bdtype is not F64 or dtype is not F64 or self._flip(3)
        bound = self.gen_term(bshape, bdtype, env, depth, bexact)
        var = self._fresh("x", bshape, bdtype)
        inner = env.bind(Binding(var, None, bexact))
        body = self.gen_term(shape, dtype, inner, depth, exact)
        if self._flip() or var.id not in {v.id for v in self._free(body)}:
            other = self.gen_term(shape, dtype, inner, depth, exact)
            if var.id not in {v.id for v in self._free(other)}:
                other = self._read_as(var, shape, dtype, inner)
            if dtype is BOOL:
                body = _op(self._pick(("and", "or")), body, other)
            else:
                body = _op(self._pick(("add", "mul", "maximum")), body, other)
        if _uses(body, var) >= 2:
            self.stats["let_multi_use"] += 1
        return Let(var, bound, body)

    def _read_as(self, var: Var, shape: Shape, dtype: DType, env: Env) -> Term:
        """Read ``var`` as a term of type ``dtype[shape]`` (converting its element type)."""
        term = self.use_binding(Binding(var), shape, env)
        if var.dtype is dtype:
            return term
        if dtype is BOOL:
            return _op("gt", term, self.full(shape, 0, var.dtype))
        if dtype is F64:
            return FromIntegral(term)
        return Floor(term)

    def _g_build1(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        k = shape[0]
        var = self._fresh("i")
        inner = env.bind(Binding(var, k), work=k, builds=1)
        body = self.gen_term(shape[1:], dtype, inner, depth, exact)
        return Build1(k, var, body)

    def _g_build_nest(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        """Two or three ``build1`` nested directly (one depth level for all of them)."""
        room = self.config.max_build_nesting - env.builds
        count = self._int(2, min(len(shape), room))
        vs = [self._fresh(f"i{k}") for k in range(count)]
        inner = env.bind(
            *(Binding(v, e) for v, e in zip(vs, shape, strict=False)),
            work=_prod(shape[:count]),
            builds=count,
        )
        term = self.gen_term(shape[count:], dtype, inner, depth, exact)
        for v, extent in reversed(list(zip(vs, shape, strict=False))):
            term = Build1(extent, v, term)
        return term

    def _g_index(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        room = self._limit(env, shape) // max(1, _prod(shape))
        prefix = self._dims(self._int(1, 2), room)
        if len(prefix) + len(shape) > 4:
            prefix = prefix[:1]
        array = self.gen_term((*prefix, *shape), dtype, env, depth, exact)
        index = tuple(self.index_expr(p, env, depth) for p in prefix)
        return Index(array, index)

    def _g_gather(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        n = self._int(1, len(shape)) if shape and not self._flip(8) else 0
        outer, tail = shape[:n], shape[n:]
        room = self._limit(env, shape) // max(1, _prod(tail))
        prefix = self._dims(self._int(1, 2), room)
        if len(prefix) + len(tail) > 4:
            prefix = prefix[:1]
        source = self.gen_term((*prefix, *tail), dtype, env, depth, exact)
        vs = tuple(self._fresh(f"i{k}") for k in range(n))
        inner = env.bind(
            *(Binding(v, e) for v, e in zip(vs, outer, strict=True)), work=max(1, _prod(outer))
        )
        index = tuple(self.index_expr(p, inner, depth) for p in prefix)
        return Gather(outer, source, vs, index)

    def _g_scatter(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        m = self._int(1, len(shape)) if shape and not self._flip(8) else 0
        outer, tail = shape[:m], shape[m:]
        room = self._limit(env, shape) // max(1, _prod(tail))
        grid = self._dims(self._int(1, 2), room)
        if len(grid) + len(tail) > 4:
            grid = grid[:1]
        source = self.gen_term((*grid, *tail), dtype, env, depth)
        vs = tuple(self._fresh(f"j{k}") for k in range(len(grid)))
        inner = env.bind(
            *(Binding(v, e) for v, e in zip(vs, grid, strict=True)), work=max(1, _prod(grid))
        )
        index = tuple(self.index_expr(o, inner, depth) for o in outer)
        return Scatter(outer, source, vs, index)

    def _g_sum_outer(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        room = self._limit(env, shape) // max(1, _prod(shape))
        k = self._int(1, max(1, min(4, room)))
        if len(shape) >= 3:
            k = min(k, 2)
        return SumOuter(self.gen_term((k, *shape), dtype, env, depth))

    def _g_replicate(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        return Replicate(shape[0], self.gen_term(shape[1:], dtype, env, depth, exact))

    def _g_transpose(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        perm = tuple(self.draw(st.permutations(range(len(shape)))))
        source = [0] * len(shape)
        for q, p in enumerate(perm):
            source[p] = shape[q]
        return Transpose(perm, self.gen_term(tuple(source), dtype, env, depth, exact))

    def _g_rev(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        """``rev_a e``, a construct of its own module (``dualarr/constructs/rev.py``)."""
        axis = self._int(0, len(shape) - 1)
        return Rev(axis, self.gen_term(shape, dtype, env, depth, exact))

    def _g_loop(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        """One result of a loop (horde-ad's mapAccum; ``da.scan``): a final carry, or the
        stacked ys when ``shape`` has an outer dimension.  The body is closed: it reads
        its carries, one row of an xs and a loop invariant computed outside."""
        self.stats["loop"] += 1
        as_ys = bool(shape) and shape[0] <= 3 and self._flip()
        length = shape[0] if as_ys else self._int(1, 3)
        carry_shape = self._dims(self._int(0, 1), 4) if as_ys else shape
        carry_dtype = self._pick((F64, dtype)) if as_ys else dtype
        carry_exact = exact or carry_dtype is not F64
        carry = self._fresh("c", carry_shape, carry_dtype)
        binders = [Binding(carry, None, carry_exact)]
        inits = (self.gen_term(carry_shape, carry_dtype, env, depth, carry_exact),)
        xs: tuple[Term, ...] = ()
        x_vars: tuple[Var, ...] = ()
        if self._flip():
            row = self._dims(self._int(0, 1), 3)
            x_var = self._fresh("x", row, F64)
            xs, x_vars = (self.gen_term((length, *row), F64, env, depth, exact),), (x_var,)
            binders.append(Binding(x_var, None, exact))
        consts: tuple[Term, ...] = ()
        const_vars: tuple[Var, ...] = ()
        if self._flip():
            k_shape = self._dims(self._int(0, 1), 3)
            k_var = self._fresh("k", k_shape, F64)
            consts, const_vars = (self.gen_term(k_shape, F64, env, depth, exact),), (k_var,)
            binders.append(Binding(k_var, None, exact))
        body_env = Env(tuple(binders), env.work * max(1, length), env.builds)
        body: list[Term] = [self.gen_term(carry_shape, carry_dtype, body_env, depth, carry_exact)]
        if as_ys:
            body.append(self.gen_term(shape[1:], dtype, body_env, depth, exact))
        loop = MapAccum(
            length, self._flip(), (carry,), x_vars, const_vars, inits, xs, consts, tuple(body)
        )
        return LoopOutput(1 if as_ys else 0, loop)

    def _g_reshape(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        n = _prod(shape)
        rank = self._int(0 if n == 1 else 1, 3)
        dims: list[int] = []
        rest = n
        for _ in range(max(0, rank - 1)):
            divisors = [d for d in range(1, rest + 1) if rest % d == 0] if rest else [0, 1, 2]
            d = self._pick(divisors)
            dims.append(d)
            rest = rest // d if d else self._int(0, 3)
        if rank >= 1:
            dims.append(rest)
        return Reshape(shape, self.gen_term(tuple(dims), dtype, env, depth, exact))

    def _g_from_list(self, shape: Shape, dtype: DType, env: Env, depth: int, exact: bool) -> Term:
        elems = tuple(self.gen_term(shape[1:], dtype, env, depth, exact) for _ in range(shape[0]))
        return FromList(elems)


def _uses(term: Term, var: Var) -> int:
    """How many edges of the DAG ``term`` point at ``var``."""
    count = 0
    for node in postorder([term]):
        count += sum(1 for kid in children(node) if isinstance(kid, Var) and kid.id == var.id)
    return count + (1 if isinstance(term, Var) and term.id == var.id else 0)


# --------------------------------------------------------------------------------------
# Public strategies
# --------------------------------------------------------------------------------------


def _supply_after(env: Env) -> IdSupply:
    return IdSupply(max((b.var.id for b in env.bindings), default=0) + 1)


@st.composite
def terms(
    draw: Draw,
    shape: Shape,
    dtype: DType = F64,
    env: Env | None = None,
    depth: int = 3,
    supply: IdSupply | None = None,
    config: GenConfig | None = None,
) -> Term:
    """A term of type ``dtype[shape]`` over the variables of ``env``.

    Without ``supply``, new variables get ids above those in ``env``.
    """
    env = env or Env()
    gen = TermGen(draw, supply or _supply_after(env), config)
    return gen.gen_term(tuple(shape), dtype, env, depth)


@st.composite
def index_terms(
    draw: Draw,
    env: Env,
    extent: int = 4,
    depth: int = 1,
    supply: IdSupply | None = None,
) -> Term:
    """A rank-0 int term to index a dim of size ``extent`` (may be out of range)."""
    gen = TermGen(draw, supply or _supply_after(env))
    return gen.index_expr(extent, env, depth)


@dataclass(frozen=True, eq=False)
class GeneratedProgram:
    """A generated closed program: input variables, output term and input values."""

    inputs: tuple[Var, ...]
    term: Term
    arrays: tuple[np.ndarray, ...]
    supply: IdSupply
    stats: Counter[str] = field(default_factory=Counter)
    name: str = "generated"

    def env(self) -> dict[Var, np.ndarray]:
        """The inputs bound to their arrays (for ``evaluate`` / ``naive_eval``)."""
        return dict(zip(self.inputs, self.arrays, strict=True))

    def program(self) -> Program:
        """The program ``λinputs. term`` (sharing the generator's id supply)."""
        return Program(self.name, self.inputs, (self.term,), False, self.supply)

    def function(self) -> Callable[..., Tensor]:
        """A Python function for ``dualarr.trace``: it rebuilds ``term`` over the traced
        inputs (bound variables renamed with the trace's own fresh ids)."""
        inputs, term = self.inputs, self.term

        def generated(*xs: Tensor) -> Tensor:
            renamed = rename_bound_vars(
                term, lambda v: new_var("generated", v.hint, v.shape, v.dtype)
            )
            mapping: dict[Var, Term] = {v: x.term for v, x in zip(inputs, xs, strict=True)}
            return Tensor(substitute([renamed], mapping)[0])

        generated.__name__ = self.name
        return generated

    def __repr__(self) -> str:
        params = ", ".join(f"{v.hint}#{v.id}: {v.dtype}{list(v.shape)}" for v in self.inputs)
        arrays = "\n".join(
            f"  {v.hint}#{v.id} = {np.array2string(a, precision=17, separator=', ')}"
            for v, a in zip(self.inputs, self.arrays, strict=True)
        )
        return (
            f"GeneratedProgram(({params}) -> {self.term.dtype}{list(self.term.shape)}\n"
            f"  term = {self.term}\n  structure = {self.term!r}\n{arrays})"
        )


def rename_bound_vars(term: Term, fresh: Callable[[Var], Var]) -> Term:
    """``term`` with every bound variable (let, build1, index functions) renamed."""
    renamed: dict[Var, Var] = {}
    for node in postorder([term]):
        for v in bound_vars(node)[0]:
            if v not in renamed:
                renamed[v] = fresh(v)

    def rewrite(node: Term, kids: tuple[Term, ...]) -> Term:
        match node:
            case Var():
                return renamed.get(node, node)
            case Let(var=v):
                return Let(renamed[v], kids[0], kids[1])
            case Build1(size=k, var=v):
                return Build1(k, renamed[v], kids[0])
            case Gather(outer_shape=sh, vars=vs):
                return Gather(sh, kids[0], tuple(renamed[v] for v in vs), tuple(kids[1:]))
            case Scatter(outer_shape=sh, vars=vs):
                return Scatter(sh, kids[0], tuple(renamed[v] for v in vs), tuple(kids[1:]))
            case MapAccum():
                c, x = len(node.inits), len(node.xs)
                k = c + x + len(node.consts)
                return MapAccum(
                    node.length,
                    node.reverse,
                    tuple(renamed[v] for v in node.carry_vars),
                    tuple(renamed[v] for v in node.x_vars),
                    tuple(renamed[v] for v in node.const_vars),
                    kids[:c],
                    kids[c : c + x],
                    kids[c + x : k],
                    kids[k:],
                )
            case _:
                return rebuild(node, kids)

    return transform([term], rewrite)[0]


@st.composite
def programs(
    draw: Draw,
    max_depth: int = 5,
    max_inputs: int = 3,
    int_input: bool | None = None,
    float_only: bool = False,
    output_shapes: st.SearchStrategy[Shape] | None = None,
    sharing: bool = True,
    max_elems: int = 200,
    max_build_nesting: int = 3,
    min_dim: int = 1,
) -> GeneratedProgram:
    """A random closed program over float64 inputs (and maybe one int64 input).

    ``max_depth`` bounds the nesting of constructs; ``int_input`` forces (True) or forbids
    (False) an int64 input array (None: drawn); ``float_only`` makes the output float64
    (otherwise about one in eight outputs is int64 or bool); ``output_shapes`` defaults to
    :func:`shapes`; ``sharing`` lets the generator reuse drawn subterms (DAG sharing);
    ``min_dim=0`` also draws empty inputs and outputs (dims of size 0).
    """
    supply = IdSupply()
    n_inputs = draw(st.integers(1, max_inputs))
    in_shapes = [draw(shapes(min_dim=min_dim)) for _ in range(n_inputs)]
    inputs = [fresh_var(supply, f"x{k}", sh, F64) for k, sh in enumerate(in_shapes)]
    has_int = draw(st.booleans()) if int_input is None else int_input
    if has_int:
        ishape = draw(shapes(min_rank=1, max_rank=2, min_dim=min_dim))
        inputs.append(fresh_var(supply, "n", ishape, I64))
    out_shape = draw(output_shapes if output_shapes is not None else shapes(min_dim=min_dim))
    out_dtype = F64
    if not float_only:
        out_dtype = draw(st.sampled_from((F64,) * 14 + (I64, BOOL)))
    config = GenConfig(max_elems=max_elems, max_build_nesting=max_build_nesting, sharing=sharing)
    gen = TermGen(draw, supply, config)
    env = Env(tuple(Binding(v) for v in reversed(inputs)))
    term = gen.gen_term(out_shape, out_dtype, env, max_depth, top=True)
    arrays: list[np.ndarray] = []
    for v in inputs:
        strategy = float_arrays(v.shape) if v.dtype is F64 else int_arrays(v.shape)
        arrays.append(draw(strategy))
    return GeneratedProgram(tuple(inputs), term, tuple(arrays), supply, gen.stats)


# --------------------------------------------------------------------------------------
# Inspecting generated terms
# --------------------------------------------------------------------------------------


def constructs(term: Term) -> Counter[str]:
    """How many distinct nodes of each constructor (and ``op:<name>`` per op) ``term`` has."""
    counts: Counter[str] = Counter()
    for node in postorder([term]):
        counts[type(node).__name__] += 1
        if isinstance(node, Op):
            counts["op:" + node.op] += 1
    return counts


def shared_nodes(term: Term) -> int:
    """Number of non-variable nodes reachable along two or more edges (DAG sharing)."""
    parents: Counter[int] = Counter()
    for node in postorder([term]):
        for kid in children(node):
            parents[id(kid)] += 1
    return sum(
        1
        for node in postorder([term])
        if parents[id(node)] >= 2 and not isinstance(node, Var | Const)
    )


def build_nesting(term: Term) -> int:
    """The deepest nesting of ``build1`` in ``term``."""
    depth: dict[int, int] = {}
    for node in postorder([term]):
        below = max((depth[id(k)] for k in children(node)), default=0)
        depth[id(node)] = below + isinstance(node, Build1)
    return depth[id(term)]


ALL_OPS: frozenset[str] = BUILT_IN
"""The names of every built-in elementwise op of the core language (primitives that
tests register, as users do, are not drawn)."""

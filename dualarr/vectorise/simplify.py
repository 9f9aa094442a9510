"""Simplification of bulk terms (the cleanup after the bot, paper §5.1 and §7.1).

Each rule is local and meaning-preserving, including out-of-range reads (which give 0).
Rules and their origin:

* gather of gather fuses into one gather (horde-ad ``AstSimplify``: ``astGatherR`` of
  ``AstGather``), the inner index guarded when it might be out of range;
* a gather whose index function is the identity is its array (§7.1, "can be simplified");
* a gather that only permutes dimensions is a ``tr`` (horde-ad ``astGatherCase`` →
  ``astTransposeAsGather`` read backwards);
* a gather whose index ignores one of its variables is a ``replicate`` of a smaller gather
  (horde-ad ``gatherFromNF`` / ``astGather`` with an unused variable);
* a gather of a ``replicate`` at an in-range position reads the replicated array;
* ``sumOuter (replicate n e)`` is ``e * n`` (horde-ad ``astSum`` of ``AstReplicate``);
* ``(iota n)[j]`` is ``j`` when ``j`` is in range (horde-ad ``astIndex`` of ``AstIota``);
* ``a * 1``, ``1 * a``, ``a / 1`` are ``a`` and ``a * -1`` is ``-a`` (exact in IEEE);
* loops (horde-ad's mapAccum; not in the paper) are simplified inside their bodies and
  never unrolled: an input the body never reads is dropped, and a result the body
  passes through reads the loop's input (a carry returned unchanged is its initial
  value; a row of ys that is an xs row, a loop invariant or closed is that xs, or the
  invariant replicated);
* constant folding (elementwise operations, casts and indexing of constants, ``cond`` on
  a constant), composition of ``tr`` and of ``reshape``, identity ``tr``/``reshape``;
* dead ``let``s (the bound variable unused) are dropped;
* common subexpressions are shared: nodes of equal structure over the same children
  become one node (hash-consing);
* ``sumOuter`` of a product of replicated arrays is a contraction (``dot0``, matmul; a
  kit extension, as horde-ad's ``contractAst``).  ``contractions=False`` leaves sums of
  products as they are, so that differentiation builds the paper's Delta constructors
  (``SumOuter``, ``Add``, ``Scale``, ``Gather``: Fig. 18) instead of ``Contract``.

The pass is bottom-up over the DAG (linear, sharing kept); a rule builds its result from
already simplified parts and simplifies only the few nodes it creates.  Each construct's
rules are one function of :data:`SMART_CONSTRUCTORS`, the names the rule trace gives its
rewrites one of :data:`REWRITE_NAMES`, and its static integer bounds one of
:data:`INT_RANGES`: a new construct registers a rule in each.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import fields
from typing import Any, TypeAlias, TypeGuard

import numpy as np

from ..interp.evaluate import ELEMENTWISE, index_array
from ..lang import indexing as ix_
from ..lang.rules import RuleTable
from ..lang.terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Build1,
    Cond,
    Const,
    Contract,
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
    Share,
    Structural,
    SumOuter,
    Term,
    TermBase,
    Transpose,
    Var,
    children,
    fresh_var,
    parse_contraction,
    postorder,
    rebuild,
    static_int_value,
    substitute_free,
    transform,
)
from ..lang.trampoline import collector_paused
from .bot import INDEX_NORMAL_FORMS, BotStep, IndexPusher, Push

_FOLD_LIMIT = 64  # fold constants of at most this many elements (keeps terms readable)


def is_small_constant(term: Term) -> TypeGuard[Const]:
    """A constant small enough for a smart constructor to fold an operation on it
    (at most 64 elements: folded terms stay readable)."""
    return isinstance(term, Const) and term.value.size <= _FOLD_LIMIT


def _small_consts(terms: Sequence[Term]) -> bool:
    return all(is_small_constant(t) for t in terms)


def _position_of(var: Var, terms: Sequence[Term]) -> int | None:
    for position, term in enumerate(terms):
        if term is var:
            return position
    return None


class Simplifier:
    """Bottom-up simplification of a term DAG."""

    def __init__(
        self, supply: IdSupply, *, contractions: bool = True, cleanup: bool = False
    ) -> None:
        self.supply = supply
        self.contractions = contractions  # sumOuter of a product → contract (kit extension)
        # the exact IEEE rewrites of :meth:`_cleanup` (for the gradient program, §7.6)
        self.cleanup = cleanup
        self.fv = FreeVars()
        self.table: dict[Hashable, Term] = {}  # structure -> the one node (hash-consing)
        # node -> its simple form, across runs: a simple node maps to itself, so a
        # second run (after let inlining, say) visits only the nodes it has not seen
        self.done: dict[Term, Term] = {}
        # told ``(node, node over simple children, its simple form)`` for each node of
        # the outermost run that a rule rewrote (the steps of :func:`simplification_steps`)
        self.on_rewrite: Callable[[Term, Term, Term], None] | None = None
        self._depth = 0

    def run(self, roots: Sequence[Term]) -> list[Term]:
        done = self.done
        self._depth += 1
        try:
            for node in postorder(roots, lambda n: () if n in done else children(n)):
                if node in done:
                    continue
                self.rebuild(node, tuple(done[k] for k in children(node)))
        finally:
            self._depth -= 1
        return [done[r] for r in roots]

    def rebuild(self, node: Term, kids: tuple[Term, ...]) -> Term:
        """``node`` over simple ``kids``, simplified (and remembered)."""
        built = rebuild(node, kids)
        made = self.mk(built)
        simple = self.canonical(made)
        if made is not built and self.on_rewrite is not None and self._depth == 1:
            self.on_rewrite(node, built, simple)
        self.done[node] = simple
        self.done.setdefault(simple, simple)
        return simple

    def canonical(self, t: Term) -> Term:
        """Common subexpressions become one node: equal structure over the same
        children (compared by identity)."""
        key = _structure(t)
        if key is None:
            return t
        return self.table.setdefault(key, t)

    # -- one node, children already simple --------------------------------------------

    def mk(self, t: Term) -> Term:
        """The smart constructor: ``t``, whose children are already simple, after the
        rules of its construct (:data:`SMART_CONSTRUCTORS`)."""
        return SMART_CONSTRUCTORS[type(t)](self, t)

    def simplified_node(self, t: Term) -> Term:
        """A node a rule creates, simplified and shared."""
        return self.canonical(self.mk(t))


SmartConstructor: TypeAlias = Callable[[Simplifier, Any], Term]

SMART_CONSTRUCTORS: RuleTable[SmartConstructor] = RuleTable("simplification")
"""The smart constructor of each construct: what :meth:`Simplifier.mk` does to a node
whose children are already simplified (the rules of the module docstring; the cleanup
after the bot, paper §5.1 and §7.1).  A rule builds its result from simple parts and
passes the few nodes it creates through ``mk`` again."""


@SMART_CONSTRUCTORS.register(
    Const, Var, Iota, Build1, FromList, Share, Replicate, ArgMin, ArgMax, ArgSort, Structural
)
def _mk_as_is(s: Simplifier, t: Term) -> Term:
    """Constructs no rule rewrites stay as they are (a construct of its own module,
    unless it files a smart constructor)."""
    return t


@SMART_CONSTRUCTORS.register(MapAccum)
def _mk_map_accum(s: Simplifier, t: MapAccum) -> Term:
    """An xs or a loop invariant the body never reads is dropped (horde-ad's mapAccum;
    not in the paper).  The body was simplified as any children; the loop stays one
    node, never unrolled."""
    read = frozenset().union(*(s.fv(out) for out in t.body))
    xs = [m for m, var in enumerate(t.x_vars) if var in read]
    consts = [m for m, var in enumerate(t.const_vars) if var in read]
    if len(xs) == len(t.xs) and len(consts) == len(t.consts):
        return t
    return MapAccum(
        t.length,
        t.reverse,
        t.carry_vars,
        tuple(t.x_vars[m] for m in xs),
        tuple(t.const_vars[m] for m in consts),
        t.inits,
        tuple(t.xs[m] for m in xs),
        tuple(t.consts[m] for m in consts),
        t.body,
    )


@SMART_CONSTRUCTORS.register(LoopOutput)
def _mk_loop_output(s: Simplifier, t: LoopOutput) -> Term:
    """A result the body passes through, read off the loop's inputs (exact: no
    arithmetic moves): a final carry is its initial value when the body returns the
    carry unchanged or the loop has no steps, and a loop invariant (or a closed value)
    the body returns when it has steps; ys whose row is the xs row is that xs, and ys
    whose row is a loop invariant (or closed) is it replicated ``length`` times
    (horde-ad's mapAccum; not in the paper)."""
    loop = t.loop
    assert isinstance(loop, MapAccum)
    n, out = t.index, loop.body[t.index]
    if n < len(loop.carry_vars):
        if out is loop.carry_vars[n] or loop.length == 0:
            return loop.inits[n]
        passed = _invariant_value(s, loop, out)
        return t if passed is None else passed
    for var, xs in zip(loop.x_vars, loop.xs, strict=True):
        if out is var:
            return xs
    passed = _invariant_value(s, loop, out)
    return t if passed is None else Replicate(loop.length, passed)


def _invariant_value(s: Simplifier, loop: MapAccum, out: Term) -> Term | None:
    """The value outside the loop of a body term that is the same at every step: a loop
    invariant's variable, or a closed term; None for any other."""
    for var, const in zip(loop.const_vars, loop.consts, strict=True):
        if out is var:
            return const
    return out if not s.fv(out) else None


@SMART_CONSTRUCTORS.register(Contract)
def _mk_contract(s: Simplifier, t: Contract) -> Term:
    """A contraction with a rank-0 operand is a scaling of the other."""
    scaled = _scale_of_contraction(t.spec, t.left, t.right)
    return t if scaled is None else s.mk(scaled)


@SMART_CONSTRUCTORS.register(Cond)
def _mk_cond(s: Simplifier, t: Cond) -> Term:
    """A ``cond`` on a constant is its branch."""
    if isinstance(t.cond, Const):
        return t.if_true if bool(t.cond.value) else t.if_false
    return t


@SMART_CONSTRUCTORS.register(Let)
def _mk_let(s: Simplifier, t: Let) -> Term:
    """A dead ``let`` (its variable unused) is its body."""
    if t.var not in s.fv(t.body):
        return t.body
    return t


@SMART_CONSTRUCTORS.register(SumOuter)
def _mk_sum_outer(s: Simplifier, t: SumOuter) -> Term:
    """``sumOuter (replicate n e) = e * n`` (horde-ad ``astSum``); with ``contractions``
    a sum of products is a contraction (:func:`_contraction_of_sum`)."""
    a = t.array
    if isinstance(a, Replicate):
        e = a.array
        return s.mk(Op("mul", (e, _filled(e.shape, a.count, e.dtype))))
    contracted = _contraction_of_sum(a) if s.contractions else None
    return t if contracted is None else contracted


@SMART_CONSTRUCTORS.register(Transpose)
def _mk_transpose(s: Simplifier, t: Transpose) -> Term:
    """``tr`` of the identity is its array, ``tr p (tr q e) = tr (q ∘ p) e``, a ``tr``
    of a small constant is folded and a ``tr`` of a contraction permutes its result."""
    p, a = t.perm, t.array
    if p == tuple(range(len(p))):
        return a
    if isinstance(a, Transpose):
        return s.mk(Transpose(tuple(a.perm[q] for q in p), a.array))
    if is_small_constant(a):
        return Const(np.transpose(a.value, p))
    if isinstance(a, Contract):
        left, right, out = parse_contraction(a.spec)
        spec = f"{left},{right}->{''.join(out[q] for q in p)}"
        return Contract(spec, a.left, a.right)
    return t


@SMART_CONSTRUCTORS.register(Reshape)
def _mk_reshape(s: Simplifier, t: Reshape) -> Term:
    """A ``reshape`` to the same shape is its array, two compose, and a ``reshape`` of a
    small constant is folded."""
    sh, a = t.new_shape, t.array
    if sh == a.shape:
        return a
    if isinstance(a, Reshape):
        return s.mk(Reshape(sh, a.array))
    if is_small_constant(a):
        return Const(np.reshape(a.value, sh))
    return t


@SMART_CONSTRUCTORS.register(FromIntegral)
def _mk_from_integral(s: Simplifier, t: FromIntegral) -> Term:
    """The cast of a small constant, folded."""
    a = t.array
    if is_small_constant(a):
        return Const(a.value.astype(t.to.numpy()))
    return t


@SMART_CONSTRUCTORS.register(Floor)
def _mk_floor(s: Simplifier, t: Floor) -> Term:
    """The floor of a small constant, folded."""
    a = t.array
    if is_small_constant(a):
        return Const(np.floor(a.value).astype(np.int64))
    return t


# -- elementwise operations -----------------------------------------------------------


@SMART_CONSTRUCTORS.register(Op)
def _mk_op(s: Simplifier, t: Op) -> Term:
    """Constant folding, bounds checks that the ranges decide, integer index arithmetic
    in its normal form, the exact IEEE identities (and with ``cleanup`` those of
    :func:`_cleanup`)."""
    op, args = t.op, t.args
    if _small_consts(args):
        values = [a.value for a in args]  # type: ignore[union-attr]
        with np.errstate(all="ignore"):
            folded = np.asarray(ELEMENTWISE[op](*values)).astype(t.dtype.numpy())
        return Const(folded)
    decided = _decided_by_ranges(t, op, args)
    if decided is not None:
        return decided
    if t.shape == () and t.dtype is DType.INT64 and len(args) == 2:
        return _index_arithmetic(t)
    if t.dtype.is_float and s.cleanup:
        cleaned = _cleanup(s, t, op, args)
        if cleaned is not t:
            return cleaned
    if t.dtype.is_float and len(args) == 2:
        return _float_identity(t, op, args)
    return t


_INDEX_ARITHMETIC: dict[str, Callable[[Term, Term], Term]] = {
    "add": ix_.add, "sub": ix_.sub, "mul": ix_.mul, "quot": ix_.quot, "rem": ix_.rem
}
"""The normalising constructors of :mod:`dualarr.lang.indexing`, by operation."""


def _index_arithmetic(t: Op) -> Term:
    """A rank-0 integer ``a op b`` in the normal form of :mod:`dualarr.lang.indexing`;
    ``t`` itself when it is in that form already (so simplification is idempotent)."""
    normalise = _INDEX_ARITHMETIC.get(t.op)
    if normalise is None:
        return t
    a, b = t.args
    result = normalise(a, b)
    same = (
        isinstance(result, Op)
        and result.op == t.op
        and all(x is y for x, y in zip(result.args, t.args, strict=True))
    )
    return t if same else result


def _cleanup(s: Simplifier, t: Op, op: str, args: tuple[Term, ...]) -> Term:
    """Algebraic cleanup of a gradient program, each rewrite exact in IEEE
    arithmetic (round-to-nearest is symmetric, ``a - b`` is ``a + -b``):
    ``--a = a``; ``a + a = 2·a``; ``a + -b = a - b``, ``-a + b = b - a``,
    ``a - -b = a + b``; ``-a · b = a · -b = -(a·b)``, ``-a · -b = a·b`` (so for
    ``/``), which gathers the negations a reverse pass leaves into one."""
    if op == "neg":
        inner = _negated(args[0])
        return inner if inner is not None and inner.shape == t.shape else t
    if len(args) != 2 or args[0].shape != t.shape or args[1].shape != t.shape:
        return t
    a, b = args
    neg_a, neg_b = _negated(a), _negated(b)
    if op == "add":
        if a is b:
            return s.simplified_node(Op("mul", (_filled(t.shape, 2.0, t.dtype), a)))
        if neg_b is not None:
            return s.simplified_node(Op("sub", (a, neg_b)))
        if neg_a is not None:
            return s.simplified_node(Op("sub", (b, neg_a)))
    elif op == "sub" and neg_b is not None:
        return s.simplified_node(Op("add", (a, neg_b)))
    elif op in ("mul", "div") and (neg_a is not None or neg_b is not None):
        product = s.simplified_node(Op(op, (neg_a if neg_a is not None else a,
                                            neg_b if neg_b is not None else b)))
        return product if neg_a is not None and neg_b is not None else Op("neg", (product,))
    return t


# -- indexing, gathers and scatters ---------------------------------------------------


@SMART_CONSTRUCTORS.register(Index)
def _mk_index(s: Simplifier, t: Index) -> Term:
    """An empty index is its array; an index a rewrite uncovered is pushed down again
    (Fig. 10); indexing a small constant is folded and ``(iota n)[k]`` is ``k``."""
    a, ix = t.array, t.index
    if not ix:
        return a
    if not isinstance(a, (*INDEX_NORMAL_FORMS, Iota)):  # iota: see _iota_lookups
        # a rule below made the indexed array a non-normal form (a scatter of a
        # permutation became its array, say): push the index down again (Fig. 10)
        pushed = IndexPusher(s.supply, s.fv).solve(Push(a, ix))
        return s.run([pushed])[0]
    if isinstance(a, Const) and _small_consts(ix):
        values = [np.asarray(c.value) for c in ix]  # type: ignore[union-attr]
        return Const(index_array(a.value, values))
    if isinstance(a, Iota):
        (j,) = ix
        value = static_int_value(j)
        if value is not None:
            return Const(np.asarray(value if 0 <= value < a.size else 0, dtype=np.int64))
    return t


@SMART_CONSTRUCTORS.register(Gather)
def _mk_gather(s: Simplifier, t: Gather) -> Term:
    """The gather rules of the module docstring, in turn: the index function simplified
    (``(iota n)[j] = j``, bounds checks decided), a rank-0 gather as an ``index``, a
    gather of a gather fused, a variable ignored, a permutation, a replicate read."""
    sh, a, vs, ix = t.outer_shape, t.array, t.vars, t.index
    known = {v: (0, extent - 1) for v, extent in zip(vs, sh, strict=True)}
    # (iota n)[j] = j inside the index function, when j is in range; bounds checks
    # that the variables' ranges decide are constants
    new_ix = tuple(ix_.decide_bounds(c, known) for c in _iota_lookups(ix, known))
    if any(n is not o for n, o in zip(new_ix, ix, strict=True)):
        return s.mk(Gather(sh, a, vs, new_ix))
    if not vs:  # gather [] a (λ[]. ix) = index a ix, pushed to a normal form
        if isinstance(a, Var | Const | FromList | Scatter):
            return s.mk(Index(a, ix))
        pushed = IndexPusher(s.supply, s.fv).solve(Push(a, ix))
        return s.run([pushed])[0]
    if isinstance(a, Gather):
        fused = _fuse(s, sh, vs, ix, a, known)
        if fused is not None:
            return s.mk(fused)
    replicated = _gather_ignoring_a_variable(s, t)
    if replicated is not None:
        return replicated
    permuted = _gather_permuting(s, t)
    if permuted is not None:
        return permuted
    if isinstance(a, Replicate) and ix and ix_.provably_in_range(ix[:1], a.shape, known):
        return s.mk(Gather(sh, a.array, vs, ix[1:]))
    return t


def _gather_ignoring_a_variable(s: Simplifier, t: Gather) -> Term | None:
    """A gather whose index ignores one of its variables is a ``replicate`` of a smaller
    gather (moved to that variable's place)."""
    sh, vs, ix = t.outer_shape, t.vars, t.index
    used = set().union(*(s.fv(c) for c in ix)) if ix else set()
    for q, v in enumerate(vs):
        if v not in used:  # the result does not depend on this variable: replicate
            inner = s.mk(Gather(sh[:q] + sh[q + 1 :], t.array, vs[:q] + vs[q + 1 :], ix))
            rank = len(t.shape)
            replicated: Term = Replicate(sh[q], inner)
            if q:
                replicated = s.mk(
                    Transpose((*range(1, q + 1), 0, *range(q + 1, rank)), replicated)
                )
            return replicated
    return None


def _gather_permuting(s: Simplifier, t: Gather) -> Term | None:
    """A gather that reads its array at a permutation of its variables (the identity
    included) is a ``tr``."""
    sh, a, vs, ix = t.outer_shape, t.array, t.vars, t.index
    positions = [_position_of(v, ix) for v in vs]
    if len(ix) == len(vs) and all(p is not None for p in positions):
        perm = tuple(p for p in positions if p is not None)
        extents_match = all(sh[q] == a.shape[d] for q, d in enumerate(perm))
        if extents_match:  # identity or a permutation of dimensions
            tail = tuple(range(len(vs), len(a.shape)))
            return s.mk(Transpose((*perm, *tail), a))
    return None


def _iota_lookups(ix: tuple[Term, ...], known: dict[Var, tuple[int, int]]) -> tuple[Term, ...]:
    """``(iota n)[j]`` in an index function is ``j`` where ``j`` is in range."""
    result = []
    for comp in ix:
        if isinstance(comp, Index) and isinstance(comp.array, Iota) and len(comp.index) == 1:
            j = comp.index[0]
            if ix_.provably_in_range((j,), comp.array.shape, known):
                result.append(j)
                continue
        result.append(comp)
    return tuple(result)


def _fuse(
    s: Simplifier,
    sh: tuple[int, ...],
    vs: tuple[Var, ...],
    f: tuple[Term, ...],
    inner: Gather,
    known: dict[Var, tuple[int, int]],
) -> Term | None:
    """``gather sh (gather sh2 b f2) f`` as one gather over ``b``."""
    sh2, b, vs2, f2 = inner.outer_shape, inner.array, inner.vars, inner.index
    n2 = len(sh2)
    extra: tuple[Var, ...] = ()
    if len(f) < n2:
        extra = tuple(fresh_var(s.supply, v.hint, (), DType.INT64) for v in vs2[len(f) :])
    args = (*f[:n2], *extra)
    comps = list(substitute_free(f2, dict(zip(vs2, args, strict=True)), s.fv, s.supply))
    comps += list(f[n2:])
    if not comps:
        return None
    bounds = dict(known)
    bounds.update({v: (0, sh2[len(f) + q] - 1) for q, v in enumerate(extra)})
    if not ix_.provably_in_range(f[:n2], sh2, bounds):
        comps[0] = ix_.poison(ix_.all_in_range(f[:n2], sh2), comps[0])
    outer = (*sh, *sh2[len(f) :]) if extra else sh
    return Gather(outer, b, (*vs, *extra), tuple(comps))


@SMART_CONSTRUCTORS.register(Scatter)
def _mk_scatter(s: Simplifier, t: Scatter) -> Term:
    """A scatter whose index function is a bijection of its grid onto ``sh`` writes
    every target exactly once: it is the gather of the inverse function (horde-ad
    turns such scatters into gathers; the transpose of ``gather`` of a permutation)."""
    sh, a, vs, ix = t.outer_shape, t.array, t.vars, t.index
    grid = a.shape[: len(vs)]
    known = {v: (0, extent - 1) for v, extent in zip(vs, grid, strict=True)}
    decided = tuple(ix_.decide_bounds(c, known) for c in ix)
    if any(d is not c for d, c in zip(decided, ix, strict=True)):
        return s.mk(Scatter(sh, a, vs, decided))
    if len(ix) != len(vs) or not vs:
        return t
    inverse: list[Term | None] = [None] * len(vs)
    new_vars = tuple(fresh_var(s.supply, "j", (), DType.INT64) for _ in ix)
    for position, component in enumerate(ix):
        form = ix_.affine_form(component, vs)
        if form is None:
            return t
        var, sign, shift = form
        q = vs.index(var)
        extent = sh[position]
        if inverse[q] is not None or grid[q] != extent:
            return t
        j: Term = new_vars[position]
        if sign == 1 and shift == 0:  # j = v
            inverse[q] = j
        elif sign == -1 and shift == extent - 1:  # j = (n - 1) - v
            inverse[q] = ix_.sub(Const(np.asarray(shift, dtype=np.int64)), j)
        else:
            return t
    components = tuple(c for c in inverse if c is not None)
    return s.mk(Gather(sh, a, new_vars, components))


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _replicated_view(t: Term) -> tuple[Term, list[int | None]]:
    """``t`` as ``tr``/``replicate`` of a base array: for each dimension of ``t``, the
    base dimension it shows (None where ``t`` is replicated)."""
    ops: list[Transpose | Replicate] = []
    base = t
    while isinstance(base, Transpose | Replicate):
        ops.append(base)
        base = base.array
    view: list[int | None] = list(range(len(base.shape)))
    for op in reversed(ops):
        view = [None, *view] if isinstance(op, Replicate) else [view[p] for p in op.perm]
    return base, view


INT_RANGES: RuleTable[Callable[[Any], tuple[int, int] | None]] = RuleTable("int range")
"""The static bounds ``(low, high)`` of each construct's integer values, or None where
they are not known: how the bounds checks that totality leaves (§5.2) are decided."""


def _int_range(term: Term) -> tuple[int, int] | None:
    """Static bounds of an int array term (:data:`INT_RANGES`)."""
    return INT_RANGES[type(term)](term)


@INT_RANGES.register(Const)
def _range_of_const(t: Const) -> tuple[int, int] | None:
    """A small integer constant is within its least and greatest elements."""
    v = t.value
    if v.dtype.kind in "iu" and 0 < v.size <= _FOLD_LIMIT:
        return int(v.min()), int(v.max())
    return None


@INT_RANGES.register(Iota)
def _range_of_iota(t: Iota) -> tuple[int, int] | None:
    """``iota n`` is in ``[0, n-1]``."""
    return (0, t.size - 1) if t.size > 0 else None


@INT_RANGES.register(Replicate, Transpose, Reshape)
def _range_of_rearranged(t: Replicate | Transpose | Reshape) -> tuple[int, int] | None:
    """Replicated and rearranged arrays keep their bounds."""
    return _int_range(t.array)


@INT_RANGES.register(Op)
def _range_of_op(t: Op) -> tuple[int, int] | None:
    """``-``, ``+``, ``-`` and ``*`` combine the bounds of their operands."""
    if t.op == "neg" and len(t.args) == 1:
        r = _int_range(t.args[0])
        return None if r is None else (-r[1], -r[0])
    if t.op not in ("add", "sub", "mul") or len(t.args) != 2:
        return None
    ra, rb = _int_range(t.args[0]), _int_range(t.args[1])
    if ra is None or rb is None:
        return None
    if t.op == "add":
        return ra[0] + rb[0], ra[1] + rb[1]
    if t.op == "sub":
        return ra[0] - rb[1], ra[1] - rb[0]
    corners = [x * y for x in ra for y in rb]
    return min(corners), max(corners)


@INT_RANGES.register(
    Var, Cond, Let, Build1, Index, Gather, Scatter, SumOuter, FromList, FromIntegral, Floor,
    ArgMin, ArgMax, ArgSort, Contract, Share, MapAccum, LoopOutput, Structural,
)
def _range_unknown(t: Term) -> tuple[int, int] | None:
    """Bounds not known statically (a construct of its own module: unless it says)."""
    return None


def _bool_constant(term: Term) -> bool | None:
    """The value of a boolean term that is one constant everywhere, else None."""
    while isinstance(term, Replicate | Transpose | Reshape):
        term = term.array
    if isinstance(term, Const) and term.value.dtype == np.bool_ and term.value.size > 0:
        if bool(term.value.all()):
            return True
        if not bool(term.value.any()):
            return False
    return None


def _negated(term: Term) -> Term | None:
    """``a`` when ``term`` is ``-a``."""
    if isinstance(term, Op) and term.op == "neg":
        return term.args[0]
    return None


def _filled(shape: Shape, value: float, dtype: DType) -> Term:
    """``value`` replicated to ``shape`` (a scalar constant the code generator broadcasts)."""
    term: Term = Const(np.asarray(value, dtype=dtype.numpy()))
    for extent in reversed(shape):
        term = Replicate(extent, term)
    return term


def _full_bool(shape: Shape, value: bool) -> Term:
    term: Term = Const(np.asarray(value))
    for extent in reversed(shape):
        term = Replicate(extent, term)
    return term


def _decided_by_ranges(t: Op, op: str, args: tuple[Term, ...]) -> Term | None:
    """Bounds checks that the shapes already decide (e.g. ``0 <= iota 4`` and
    ``iota 4 < replicate 4 5``, left by the totality of indexing, §5.2) become constants,
    and ``&&``, ``||``, ``!`` and ``select`` with a constant condition disappear."""
    if op in ("lt", "le", "gt", "ge", "eq", "ne") and t.shape != ():
        ra, rb = _int_range(args[0]), _int_range(args[1])
        if ra is None or rb is None:
            return None
        value = ix_.compare_intervals(op, ra, rb)
        return None if value is None else _full_bool(t.shape, value)
    if op in ("and", "or"):
        a, b = (_bool_constant(x) for x in args)
        absorbing = op == "or"  # x || true = true, x && false = false
        for known, other in ((a, args[1]), (b, args[0])):
            if known is absorbing:
                return _full_bool(t.shape, absorbing)
            if known is not None:
                return other
        return None
    if op == "not":
        a = _bool_constant(args[0])
        return None if a is None else _full_bool(t.shape, not a)
    if op == "select":
        c = _bool_constant(args[0])
        return None if c is None else (args[1] if c else args[2])
    return None


def _scalar_constant(term: Term) -> float | None:
    """The value of a (replicated) rank-0 float constant."""
    while isinstance(term, Replicate):
        term = term.array
    if isinstance(term, Const) and term.shape == () and term.dtype.is_float:
        return float(term.value)
    return None


def _float_identity(t: Op, op: str, args: tuple[Term, ...]) -> Term:
    """Exact identities of IEEE arithmetic: ``a * 1 = 1 * a = a / 1 = a`` and
    ``a * -1 = -1 * a = -a`` (``a + 0`` is not ``a`` for ``a = -0.0``)."""
    a, b = args
    ka, kb = _scalar_constant(a), _scalar_constant(b)
    if op == "mul":
        if kb == 1.0 and a.shape == t.shape:
            return a
        if ka == 1.0 and b.shape == t.shape:
            return b
        if kb == -1.0 and a.shape == t.shape:
            return Op("neg", (a,))
        if ka == -1.0 and b.shape == t.shape:
            return Op("neg", (b,))
    if op == "div" and kb == 1.0 and a.shape == t.shape:
        return a
    return t


def _field_key(value: object) -> Hashable:
    if isinstance(value, TermBase):
        return value  # hashed and compared by identity
    if isinstance(value, tuple):
        return tuple(_field_key(v) for v in value)
    return value


def _structure(t: Term) -> Hashable | None:
    """A hashable description of ``t`` in terms of its children's identities; a gather
    or scatter up to the names of its lambda's variables (alpha-equivalence)."""
    if isinstance(t, Var):
        return None
    if isinstance(t, Const):
        v = t.value
        return None if v.size > 4096 else ("Const", v.dtype.str, v.shape, v.tobytes())
    if isinstance(t, Gather | Scatter):
        position = {v: k for k, v in enumerate(t.vars)}
        components = tuple(_alpha_key(c, position) for c in t.index)
        if any(c is None for c in components):
            return None
        return (type(t), t.outer_shape, t.array, len(t.vars), components)
    return (type(t), *(_field_key(getattr(t, name)) for name in _INIT_FIELDS[type(t)]))


class _InitFields(dict[type, tuple[str, ...]]):
    """The constructor fields of each term class (what makes two nodes the same), read
    the first time a class is met (a construct of its own module needs no entry)."""

    def __missing__(self, cls: type) -> tuple[str, ...]:
        names = self[cls] = tuple(f.name for f in fields(cls) if f.init)
        return names


_INIT_FIELDS = _InitFields()


def _alpha_key(term: Term, position: dict[Var, int], budget: int = 64) -> Hashable | None:
    """A small index component's structure, bound variables by position (None if big)."""
    stack: list[Term] = [term]
    order: list[Term] = []
    while stack:
        node = stack.pop()
        order.append(node)
        if len(order) > budget:
            return None
        if isinstance(node, Var):
            continue
        if isinstance(node, Gather | Scatter | Build1 | Let | MapAccum):
            return None  # inner binders: compare by identity only
        stack.extend(children(node))
    keys: dict[Term, Hashable] = {}
    for node in reversed(order):
        if isinstance(node, Var):
            keys[node] = ("bound", position[node]) if node in position else node
        elif isinstance(node, Const):
            keys[node] = _structure(node) or node
        else:
            kids = tuple(keys[k] for k in children(node))
            static = tuple(
                _field_key(getattr(node, f.name))
                for f in fields(node)
                if f.init and not isinstance(getattr(node, f.name), TermBase | tuple)
            )
            keys[node] = (type(node), static, kids)
    return keys[term]


def _scale_of_contraction(spec: str, a: Term, b: Term) -> Term | None:
    """A contraction with a rank-0 operand is an elementwise scaling of the other."""
    left, right, out = parse_contraction(spec)
    if left and right:
        return None
    scalar, array, letters = (a, b, right) if not left else (b, a, left)
    for extent in reversed(array.shape):
        scalar = Replicate(extent, scalar)
    product: Term = Op("mul", (scalar, array))
    perm = tuple(letters.index(c) for c in out)
    return Transpose(perm, product) if perm != tuple(range(len(perm))) else product


def _contraction_of_sum(a: Term) -> Term | None:
    """``sumOuter`` of a (transposed) product of replicated arrays is a contraction
    (``book/rules.md §5.5``: recognising dot/matmul as horde-ad's ``contractAst`` does), or of a
    contraction whose outer result dimension occurs in both operands."""
    if isinstance(a, Contract):
        left, right, out = parse_contraction(a.spec)
        if out and out[0] in left and out[0] in right:
            return Contract(f"{left},{right}->{out[1:]}", a.left, a.right)
        return None
    axis = list(range(len(a.shape)))  # dimension k of a is dimension axis[k] of the product
    product: Term = a
    while isinstance(product, Transpose):
        axis = [product.perm[k] for k in axis]
        product = product.array
    if not (
        isinstance(product, Op)
        and product.op == "mul"
        and product.dtype.is_float
        and len(product.shape) <= len(_LETTERS)
    ):
        return None
    (x, vx), (y, vy) = (_replicated_view(arg) for arg in product.args)
    letter = _LETTERS[: len(product.shape)]
    if any(vx[k] is None and vy[k] is None for k in range(len(letter))):
        return None  # a dimension replicated in both factors
    summed = axis[0]
    if vx[summed] is None or vy[summed] is None:
        return None  # summing one factor only: not a contraction
    if any(vx[k] is not None and vy[k] is not None for k in axis[1:]):
        return None  # a batch dimension: elementwise product is as good
    spec_x = "".join(letter[vx.index(j)] for j in range(len(x.shape)))
    spec_y = "".join(letter[vy.index(j)] for j in range(len(y.shape)))
    out = "".join(letter[k] for k in axis[1:])
    return Contract(f"{spec_x},{spec_y}->{out}", x, y)


def simplify(
    roots: Sequence[Term], supply: IdSupply, *, contractions: bool = True
) -> list[Term]:
    """Simplify a term DAG (see the module docstring for the rules); without
    ``contractions`` a sum of products stays a ``sumOuter`` (the paper's Fig. 18)."""
    with collector_paused():
        return Simplifier(supply, contractions=contractions).run(roots)


# --------------------------------------------------------------------------------------
# The simplification as steps (after the bot's, for the BotStepper)
# --------------------------------------------------------------------------------------


def simplification_steps(
    roots: Sequence[Term], supply: IdSupply, first: int = 1, *, contractions: bool = True
) -> tuple[list[Term], list[BotStep]]:
    """:func:`simplify` on ``roots`` (the bot's result), with each node a rule rewrote as
    a :class:`BotStep` of kind ``"simplification"`` numbered from ``first``: the node
    before (over its simplified operands) and after, the rule's name and origin, and the
    whole program after the step.  Not a rule of the paper: the cleanup of §5.1/§7.1.
    ``contractions`` as for :func:`simplify`."""
    originals = tuple(roots)
    simplifier = Simplifier(supply, contractions=contractions)
    rewritten: dict[Term, tuple[int, Term]] = {}  # original node -> (step number, simple)
    steps: list[BotStep] = []

    def whole(upto: int) -> tuple[Term, ...]:
        def rewrite(node: Term, kids: tuple[Term, ...]) -> Term:
            done = rewritten.get(node)
            return done[1] if done is not None and done[0] <= upto else rebuild(node, kids)

        return tuple(transform(originals, rewrite))

    def record(node: Term, before: Term, after: Term) -> None:
        number = first + len(steps)
        rewritten[node] = (number, after)
        rule, note = simplification_rule(before, after)
        steps.append(
            BotStep(
                number, rule, "simplification", lambda: before, lambda: after,
                lambda: whole(number), "simplification", note,
            )
        )

    simplifier.on_rewrite = record
    with collector_paused():
        terms = simplifier.run(originals)
    return terms, steps


REWRITE_NAMES: RuleTable[Callable[[Any, Term], tuple[str, str]]] = RuleTable(
    "simplification naming"
)
"""The name and origin of each rewrite of a construct's smart constructor
(:data:`SMART_CONSTRUCTORS`), told apart by the constructs involved: the steps of
:func:`simplification_steps` (the cleanup of §5.1/§7.1).  Constructs whose smart
constructor leaves them as they are have none."""


def simplification_rule(before: Term, after: Term) -> tuple[str, str]:
    """The name and origin of the simplification that turned ``before`` into ``after``
    (the rules of the module docstring; :data:`REWRITE_NAMES`)."""
    return REWRITE_NAMES[type(before)](before, after)


@REWRITE_NAMES.register(SumOuter)
def _named_sum_outer(before: SumOuter, after: Term) -> tuple[str, str]:
    """Summing replicas is a multiplication; otherwise the sum was a contraction."""
    if isinstance(before.array, Replicate):
        return "sumOuter-replicate", "sumOuter (replicate n e) is e * n (horde-ad astSum)"
    return "sumOuter-contract", (
        "a sum of products is a contraction, dot or matmul; a kit extension, as "
        "horde-ad's contractAst, book/rules.md §5.5"
    )


@REWRITE_NAMES.register(MapAccum)
def _named_map_accum(before: MapAccum, after: Term) -> tuple[str, str]:
    return "loop-unused-input", (
        "an input the loop's body never reads is dropped (horde-ad's mapAccum; not in the paper)"
    )


@REWRITE_NAMES.register(LoopOutput)
def _named_loop_output(before: LoopOutput, after: Term) -> tuple[str, str]:
    return "loop-passthrough", (
        "a result the loop's body passes through is read off its inputs (horde-ad's "
        "mapAccum; not in the paper)"
    )


@REWRITE_NAMES.register(Contract)
def _named_contract(before: Contract, after: Term) -> tuple[str, str]:
    return "contract-scale", "a contraction with a rank-0 operand is a scaling"


@REWRITE_NAMES.register(Gather)
def _named_gather(before: Gather, after: Term) -> tuple[str, str]:
    """Told apart by what the gather became."""
    if isinstance(before.array, Gather) and isinstance(after, Gather):
        return "gather-gather", "a gather of a gather fuses into one (horde-ad astGather)"
    if isinstance(after, Transpose):
        return "gather-tr", "a gather that permutes dimensions is a tr"
    if isinstance(after, Replicate):
        return "gather-replicate", "a gather ignoring a variable is a replicate"
    if not isinstance(after, Gather):
        return "gather-identity", "a gather with the identity index is its array (§7.1)"
    return "gather-index", "the gather's index function, simplified"


@REWRITE_NAMES.register(Scatter)
def _named_scatter(before: Scatter, after: Term) -> tuple[str, str]:
    return "scatter-bijection", "a scatter of a bijection is a gather of its inverse"


@REWRITE_NAMES.register(Let)
def _named_let(before: Let, after: Term) -> tuple[str, str]:
    return "dead-let", "a let whose variable is unused is dropped"


@REWRITE_NAMES.register(Cond)
def _named_cond(before: Cond, after: Term) -> tuple[str, str]:
    return "cond-constant", "a cond on a constant is its branch"


@REWRITE_NAMES.register(Index)
def _named_index(before: Index, after: Term) -> tuple[str, str]:
    """Folded to a constant, or pushed down again."""
    if isinstance(after, Const):
        return "constant-fold", "indexing a constant, folded"
    return "index-push", "the index pushed down again (Fig. 10)"


@REWRITE_NAMES.register(Transpose, Reshape)
def _named_rearrangement(before: Transpose | Reshape, after: Term) -> tuple[str, str]:
    return "tr-reshape", "tr and reshape composed, identities dropped, constants folded"


@REWRITE_NAMES.register(FromIntegral, Floor)
def _named_cast(before: FromIntegral | Floor, after: Term) -> tuple[str, str]:
    return "constant-fold", "a cast of a constant, folded"


@REWRITE_NAMES.register(Op)
def _named_op(before: Op, after: Term) -> tuple[str, str]:
    """Told apart by the result and the operation."""
    if isinstance(after, Const):
        return "constant-fold", "an operation on constants, folded"
    if before.op in ("lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not"):
        return "bounds-decided", "a bounds check that the shapes decide (§5.2)"
    if before.op == "select":
        return "select-decided", "a select on a known condition is its branch"
    if before.dtype.is_float:
        return "arithmetic", "a * 1, 1 * a, a / 1 are a; a * -1 is -a (exact in IEEE)"
    return "index-arithmetic", "integer index arithmetic, normalised"

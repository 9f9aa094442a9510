"""The bulk-operation transform (bot): eliminate ``build1`` (paper §5, Figs. 9–11).

``B[e]`` stands for ``build1 k (λi. e)``.  The bot pushes ``build1`` down through every
construct (Fig. 9), pushes ``index`` down when an indexed array mentions ``i`` (Fig. 10),
and turns indexing whose index alone mentions ``i`` into one ``gather`` (Fig. 11).  When
an indexed array is a normal form that mentions ``i`` (a ``fromList``, a ``scatter`` or a
``let``-bound variable), the array is vectorised and its diagonal taken (horde-ad's rule
D).  ``cond c a b`` is encoded as ``index (fromList [a, b]) [cond c 0 1]``.

Loops (horde-ad's mapAccum; not in the paper): a ``build1`` in a loop's body is
vectorised there like any other, and ``build1 k (λi. L.n)`` for a loop ``L`` whose
inputs mention ``i`` reads result ``n`` of one batched loop ``L'`` (every result of ``L``
the same ``L'``): the loop dimension stays outermost, the batch dimension is inside it,
and the body of ``L'`` is the bot of ``build1 k`` over ``L``'s body.  An index of a
loop's result cannot be pushed into the loop: it is a normal form.

The transform works bottom-up: the body of an inner ``build1`` is vectorised before the
outer one, so a rule never meets a ``build1`` below it (``book/rules.md §2``).  It is
memoised on the DAG (a shared subterm is vectorised once, sharing kept) and trampolined
(:mod:`dualarr.lang.trampoline`), so 3,500-deep ``let`` chains need no deep Python stack.

Each rule application can be recorded as a :class:`BotStep` (rule name, the rewritten
subterm before and after, and the whole program after the step, computed on demand).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..lang import indexing as ix_
from ..lang.errors import DualarrError
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
    Share,
    SumOuter,
    Term,
    Transpose,
    Var,
    assert_never,
    bound_vars,
    children,
    fresh_var,
    int_const,
    parse_contraction,
    postorder,
    rebuild,
    substitute_free,
    transform,
    zeros,
)
from ..lang.trampoline import collector_paused, run

# --------------------------------------------------------------------------------------
# Requests (one per pending ``build1``) and rewrites (one per rule application)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Vec:
    """``B[body]``: vectorise ``build1 k (λi. body)``."""

    body: Term


@dataclass(frozen=True, eq=False)
class VecIndex:
    """``B[index array ix]``: vectorise ``build1 k (λi. array[ix])``."""

    array: Term
    index: tuple[Term, ...]


@dataclass(frozen=True, eq=False)
class Push:
    """``I[array, ix]``: push ``index array ix`` down to a normal form (Fig. 10)."""

    array: Term
    index: tuple[Term, ...]


Request = Vec | VecIndex | Push


def _request_key(request: Request) -> Hashable:
    match request:
        case Vec(body=body):
            return ("vec", body)  # terms hash and compare by identity
        case VecIndex(array=array, index=index):
            return ("vindex", array, *index)
        case Push(array=array, index=index):
            return ("push", array, *index)
        case _:
            assert_never(request)


@dataclass(frozen=True, eq=False)
class Rewrite:
    """One rule application: the sub-requests still to vectorise and how to assemble."""

    rule: str
    figure: str
    requests: tuple[Request, ...]
    assemble: Callable[[Sequence[Term]], Term]
    extension: str = ""  # what the kit adds to the paper's rule ("" for the paper's own)


def _same(results: Sequence[Term]) -> Term:
    return results[0]


# What the kit adds to the paper's rules (``Rewrite.extension``, shown as the step's note)
_GUARD = "a bounds guard, as op(0, …, 0) may not be 0 where the index is out of range"
_HOIST = "hoisting, an array computed in the index is vectorised once and let-bound"
_ARG = "argmin/argmax/argsort, which the paper's language does not have"
_CONTRACT = "contraction, as horde-ad's contractAst (book/rules.md §5.5)"
_LOOP = (
    "loops (horde-ad's mapAccum; not in the paper): one loop over batched carries, "
    "the batch dimension inside the loop dimension"
)


# --------------------------------------------------------------------------------------
# The rule trace
# --------------------------------------------------------------------------------------


@dataclass(eq=False)
class BotStep:
    """One rule application of the bot.

    ``before`` is the subterm rewritten (``build1 k (λi. …)``), ``after`` its
    replacement, in which the remaining ``build1``s are still to be vectorised;
    ``whole`` is the program after this step (built on first access).

    ``kind`` says whose rule it is: ``"paper"`` (``figure`` cites it), ``"extension"``
    (the kit's addition to the rule of ``figure``, named by ``note``: a select for a
    scalar cond, a bounds guard, hoisting, contraction …) or ``"simplification"`` (the
    cleanup after the bot, :func:`dualarr.vectorise.simplify.simplification_steps`).
    ``label`` says it in words.
    """

    number: int
    rule: str
    figure: str
    before_thunk: Callable[[], Term]
    after_thunk: Callable[[], Term]
    whole_thunk: Callable[[], tuple[Term, ...]]
    kind: str = "paper"
    note: str = ""
    _cache: dict[str, object] = field(default_factory=dict)

    def _get(self, name: str, thunk: Callable[[], object]) -> object:
        if name not in self._cache:
            self._cache[name] = thunk()
        return self._cache[name]

    @property
    def before(self) -> Term:
        return self._get("before", self.before_thunk)  # type: ignore[return-value]

    @property
    def after(self) -> Term:
        return self._get("after", self.after_thunk)  # type: ignore[return-value]

    @property
    def whole(self) -> tuple[Term, ...]:
        return self._get("whole", self.whole_thunk)  # type: ignore[return-value]

    @property
    def label(self) -> str:
        """The rule and whose it is: ``build1-op (Fig. 9)``, ``build1-cond-scalar (kit
        extension of Fig. 9: …)``, ``sumOuter-contract (simplification: …)``."""
        if self.kind == "simplification":
            return f"{self.rule} (simplification: {self.note})"
        if self.kind == "extension":
            return f"{self.rule} (kit extension of {self.figure}: {self.note})"
        return f"{self.rule} ({self.figure})"

    def __repr__(self) -> str:
        return f"<BotStep {self.number}: {self.label}>"

    def __str__(self) -> str:
        return f"{self.number}. {self.label}\n  {self.before}\n  ⟶ {self.after}"


# --------------------------------------------------------------------------------------
# Vectorising one build1
# --------------------------------------------------------------------------------------


def _swap01(rank: int) -> tuple[int, ...]:
    return (1, 0, *range(2, rank))


def _to_position(m: int, rank: int) -> tuple[int, ...]:
    """The permutation moving dimension 0 to position ``m``: ``[1..m, 0, m+1..]``."""
    return (*range(1, m + 1), 0, *range(m + 1, rank))


class _Input(Enum):
    """What an input of a loop becomes in the batched loop (:class:`_LoopPlan`)."""

    KEEP = "keep"  # its binder is not batched
    REPLICATE = "replicate"  # a carry batched by the fixpoint only
    VECTORISE = "vectorise"  # B[input]
    TRANSPOSE = "transpose"  # B[xs], the loop dimension moved outermost


@dataclass(frozen=True, eq=False)
class _LoopPlan:
    """How ``build1 k (λi. …)`` vectorises a loop ``L`` whose inputs mention ``i``
    (:meth:`Vectoriser.loop_plan`): the binders and body of the batched loop ``L'``,
    which results of ``L'`` are batched (the others are ``L``'s, the same for every
    ``i``), and what each input of ``L`` becomes (``keep``, ``replicate``, or the next
    of ``requests`` vectorised, then ``transpose``d for an xs)."""

    loop: MapAccum
    binders: tuple[Var, ...]
    body: tuple[Term, ...]
    outputs: tuple[bool, ...]
    modes: tuple[_Input, ...]
    requests: tuple[Request, ...]


class Rewriter:
    """Plumbing shared by the bot's two rewriters: requests solved by rules, memoised and
    trampolined; each rule application reported to ``on_rule`` (for the trace)."""

    def __init__(self, supply: IdSupply, free_vars: FreeVars, hint: str = "i") -> None:
        self.supply = supply
        self.fv = free_vars
        self.hint = hint
        self.on_rule: Callable[[Request, Rewrite], None] | None = None
        # told of each rewriter this one starts (the bot of a loop's body, for the trace)
        self.on_spawn: Callable[[Rewriter], None] | None = None
        self.memo: dict[Hashable, Term] = {}
        self.known_bounds: dict[Var, tuple[int, int]] = {}

    def rule(self, request: Request) -> Rewrite:
        raise NotImplementedError

    def index_op(
        self,
        rule: str,
        a: Op,
        ix: tuple[Term, ...],
        make: Callable[[Term, tuple[Term, ...]], Request],
    ) -> Rewrite:
        """``index op(e1..en) ix = op(index e1 ix ..)`` (Fig. 10).

        Out of range every argument reads 0, so this is exact only when ``op(0..0) == 0``
        or the index is certainly in range; otherwise the result is guarded by a strict
        ``cond`` on the index being in range.
        """
        op, args = a.op, a.args
        requests = tuple(make(arg, ix) for arg in args)
        if ix_.zero_preserving(op) or ix_.provably_in_range(ix, a.shape, self.known_bounds):
            return Rewrite(rule, "Fig. 10", requests, lambda rs: Op(op, tuple(rs)))
        ok = ix_.all_in_range(ix, a.shape)
        shape = a.shape[len(ix) :]
        return Rewrite(
            rule, "Fig. 10", requests,
            lambda rs: self.guard(ok, Op(op, tuple(rs)), shape),
            _GUARD,
        )

    def guard(self, ok: Term, term: Term, shape: tuple[int, ...]) -> Term:
        """``term`` where ``ok`` holds, zeros elsewhere (the meaning of an out-of-range read)."""
        return Cond(ok, term, zeros(shape, term.dtype)) if not ix_.is_true(ok) else term

    def placeholder(self, request: Request) -> Term:
        """The term a pending request stands for (shown in the rule trace)."""
        raise NotImplementedError

    def solve(self, request: Request) -> Term:
        return run(request, self._solve, _request_key, self.memo)  # type: ignore[no-any-return]

    def _solve(self, request: Request) -> Generator[Request, Term, Term]:
        rewrite = self.rule(request)
        if self.on_rule is not None and rewrite.rule:
            self.on_rule(request, rewrite)
        results: list[Term] = []
        for sub in rewrite.requests:
            results.append((yield sub))
        return rewrite.assemble(results)

    def fresh_index_var(self) -> Var:
        return fresh_var(self.supply, self.hint, (), DType.INT64)

    def index_transpose(self, perm: tuple[int, ...], b: Term, ix: tuple[Term, ...]) -> Term:
        """``index (tr p b) ix``: permute a full index; a partial one becomes a gather."""
        rank = len(perm)
        m = len(ix)
        rest_vars = tuple(self.fresh_index_var() for _ in range(m, rank))
        full = (*ix, *rest_vars)
        comps = tuple(full[perm.index(d)] for d in range(rank))
        if not rest_vars:
            result: Term = Index(b, comps)
        else:
            shape = tuple(b.shape[perm[q]] for q in range(m, rank))
            result = Gather(shape, b, rest_vars, comps)
        return result

    def index_reshape(self, sh: tuple[int, ...], b: Term, ix: tuple[Term, ...]) -> Term:
        """``index (reshape sh b) ix``: linearise the index, then split it by ``b``'s shape."""
        m = len(ix)
        rest_vars = tuple(self.fresh_index_var() for _ in range(m, len(sh)))
        ok = ix_.all_in_range(ix, sh)
        comps = ix_.delinearise(ix_.linearise((*ix, *rest_vars), sh), b.shape)
        result: Term
        if not rest_vars:
            result = _guarded_index(b, tuple(comps), ok)
        elif comps:
            comps[0] = ix_.poison(ok, comps[0])
            result = Gather(sh[m:], b, rest_vars, tuple(comps))
        else:  # a rank-0 array reshaped: every in-range index reads it
            result = Cond(ok, Gather(sh[m:], b, rest_vars, ()), zeros(sh[m:], b.dtype))
        return result

    def index_gather(
        self,
        sh: tuple[int, ...],
        b: Term,
        vs: tuple[Var, ...],
        f: tuple[Term, ...],
        ix: tuple[Term, ...],
    ) -> Term:
        """``index (gather sh b f) ix = index b (f ix)`` (a smaller gather when partial)."""
        n, m = len(sh), len(ix)
        ok = ix_.all_in_range(ix[:n], sh)
        if m >= n:
            comps = substitute_free(
                f, dict(zip(vs, ix[:n], strict=True)), self.fv, self.supply
            )
            result = _guarded_index(b, (*comps, *ix[n:]), ok)
        else:
            rest_vars = tuple(self.fresh_index_var() for _ in range(m, n))
            mapping = dict(zip(vs, (*ix, *rest_vars), strict=True))
            comps = substitute_free(f, mapping, self.fv, self.supply)
            if comps:
                comps[0] = ix_.poison(ok, comps[0])
                result = Gather(sh[m:], b, rest_vars, tuple(comps))
            else:
                inner = Gather(sh[m:], b, rest_vars, ())
                result = Cond(ok, inner, zeros(inner.shape, inner.dtype))
        return result




class Vectoriser(Rewriter):
    """``B[·]`` for one ``build1 k (λi. body)`` whose body is already ``build1``-free."""

    def __init__(self, size: int, var: Var, supply: IdSupply, free_vars: FreeVars) -> None:
        super().__init__(supply, free_vars, var.hint)
        self.k = size
        self.i = var
        self.dependent: set[Var] = {var}
        self.vectorised_let: dict[Var, Var] = {}  # x ↦ x' (x stands for x'[i])
        self.known_bounds = {var: (0, size - 1)}
        self.loop_plans: dict[Term, _LoopPlan] = {}  # a loop L ↦ how B[L] is built
        self.loops: dict[tuple[Term, ...], MapAccum] = {}  # (L, its batched inputs) ↦ L'

    def run(self, body: Term) -> Term:
        return self.solve(Vec(body))

    def placeholder(self, request: Request) -> Term:
        """``build1 k (λi. e)`` for a pending request, closed over vectorised lets."""
        body = request.body if isinstance(request, Vec) else Index(request.array, request.index)
        free = self.fv(body)
        for x, xv in self.vectorised_let.items():
            if x in free:
                body = Let(x, Index(xv, (self.i,)), body)
        return Build1(self.k, self.i, body)

    def depends(self, term: Term) -> bool:
        fv = self.fv(term)
        return bool(fv) and not fv.isdisjoint(self.dependent)

    def bind_let(self, var: Var, bound: Term) -> Var:
        """The variable a ``let`` binds after vectorisation (``x'`` when ``bound`` needs ``i``)."""
        if not self.depends(bound):
            return var
        if var not in self.vectorised_let:
            self.vectorised_let[var] = fresh_var(
                self.supply, var.hint, (self.k, *var.shape), var.dtype
            )
            self.dependent.add(var)
        return self.vectorised_let[var]

    def rename(self, terms: Sequence[Term], new_i: Var) -> tuple[Term, ...]:
        """``terms[i := new_i]``, with each vectorised ``let`` variable ``x := x'[new_i]``."""
        mapping: dict[Var, Term] = {self.i: new_i}
        for x, xv in self.vectorised_let.items():
            mapping[x] = Index(xv, (new_i,))
        return tuple(substitute_free(terms, mapping, self.fv, self.supply))

    def with_index_function(
        self,
        rule: str,
        figure: str,
        base: tuple[Request, ...],
        index: tuple[Term, ...],
        new_i: Var,
        make: Callable[[Sequence[Term], tuple[Term, ...]], Term],
        lambda_vars: tuple[Var, ...] = (),
    ) -> Rewrite:
        """A rewrite whose result has an index function over ``new_i`` built from ``index``.

        Index arithmetic that mentions ``i`` is renamed to ``new_i``.  An array computed
        from ``i`` inside the index (say ``argmax (x * i)``) is vectorised instead,
        let-bound to ``c`` and read as ``c[new_i]``, so the index function stays cheap
        scalar work and the result stays in normal form.
        """
        hoisted: dict[Term, tuple[Term, Var]] = {}
        bound = set(lambda_vars)
        stack = list(index)
        while stack:
            node = stack.pop()
            if node in hoisted or not self.depends(node):
                continue
            fv = self.fv(node)
            heavy = (node.shape != () and not isinstance(node, Var)) or isinstance(
                node,
                SumOuter | ArgMin | ArgMax | ArgSort | Gather | Scatter | Reshape | Transpose
                | LoopOutput,
            )
            if heavy and fv.isdisjoint(bound):
                var = fresh_var(self.supply, "c", (self.k, *node.shape), node.dtype)
                hoisted[node] = (node, var)
                continue
            bound.update(bound_vars(node)[0])  # a let or lambda inside the index: not hoisted
            stack.extend(children(node))
        if hoisted:
            mapping_terms = list(index)
            replaced = _replace_nodes(
                mapping_terms, {key: Index(var, (self.i,)) for key, (_, var) in hoisted.items()}
            )
            index = tuple(replaced)
        comps = self.rename(index, new_i)
        heavy_list = list(hoisted.values())
        n_base = len(base)

        def assemble(results: Sequence[Term]) -> Term:
            term = make(results[:n_base], comps)
            for (_, var), value in zip(
                reversed(heavy_list), reversed(results[n_base:]), strict=True
            ):
                term = Let(var, value, term)
            return term

        return Rewrite(
            rule, figure, (*base, *(Vec(node) for node, _ in heavy_list)), assemble,
            _HOIST if heavy_list else "",
        )

    # -- Fig. 9: push build1 down (the rules: BUILD1_RULES) ----------------------------

    def rule(self, request: Request) -> Rewrite:
        if isinstance(request, VecIndex):
            return self.index_rule(request.array, request.index)
        if isinstance(request, Push):
            raise AssertionError("index pushing outside build1 is the IndexPusher's")
        e = request.body
        if not self.depends(e):
            k = self.k
            return Rewrite("build1-closed", "Fig. 9", (), lambda _: Replicate(k, e))
        return BUILD1_RULES[type(e)](self, e)

    def let_rule(
        self, rule: str, x: Var, bound: Term, body: Request, figure: str
    ) -> Rewrite:
        """``B[let x = e1 in e2] = let x' = B[e1] in B[e2[x := x'[i]]]`` (Fig. 9; reached
        from ``index (let …) ix``, the let rule of Fig. 10)."""
        new_var = self.bind_let(x, bound)
        if new_var is x:  # the bound value does not mention i: the let stays outside B
            return Rewrite(rule, figure, (body,), lambda rs: Let(x, bound, rs[0]))
        return Rewrite(
            rule, figure, (Vec(bound), body),
            lambda rs: Let(new_var, rs[0], rs[1]),
        )

    # -- loops (horde-ad's mapAccum; not in the paper) -----------------------------------

    def loop_plan(self, loop: MapAccum) -> _LoopPlan:
        """How ``B[L]`` is built for a loop ``L`` whose inputs mention ``i`` (once per
        loop: every result of ``L`` reads the one batched loop ``L'``)."""
        plan = self.loop_plans.get(loop)
        if plan is None:
            plan = self.loop_plans[loop] = self._plan_loop(loop)
        return plan

    def _plan_loop(self, loop: MapAccum) -> _LoopPlan:
        """The binders of ``L'`` and its body.

        A binder is batched (a new variable with the batch dimension ``k`` in front)
        when its input mentions ``i``, and a carry also when the body's next value of it
        reads a batched binder (a fixpoint).  The body of ``L'`` is the bot of
        ``build1 k (λj. out[b := b'[j]])`` for each output ``out`` that reads a batched
        binder (every batched carry's, so its type stays that of its binder); the other
        outputs stay as they are."""
        k, fv = self.k, self.fv
        batched = {b for b, x in zip(loop.binders, loop.inputs, strict=True) if self.depends(x)}
        changed = True
        while changed:
            changed = False
            for var, out in zip(loop.carry_vars, loop.carry_outs, strict=True):
                if var not in batched and not fv(out).isdisjoint(batched):
                    batched.add(var)
                    changed = True
        binders = tuple(
            fresh_var(self.supply, b.hint, (k, *b.shape), b.dtype) if b in batched else b
            for b in loop.binders
        )
        carries = len(loop.carry_vars)
        outputs = tuple(
            (loop.carry_vars[n] in batched) if n < carries else not fv(out).isdisjoint(batched)
            for n, out in enumerate(loop.body)
        )
        j = self.fresh_index_var()
        mapping: dict[Var, Term] = {
            b: Index(new, (j,))
            for b, new in zip(loop.binders, binders, strict=True)
            if b in batched
        }
        wanted = [out for out, yes in zip(loop.body, outputs, strict=True) if yes]
        inner = Vectoriser(k, j, self.supply, fv)
        if self.on_spawn is not None:
            self.on_spawn(inner)
        done = iter([inner.run(t) for t in substitute_free(wanted, mapping, fv, self.supply)])
        body = tuple(
            next(done) if yes else out for out, yes in zip(loop.body, outputs, strict=True)
        )
        modes: list[_Input] = []
        requests: list[Request] = []
        xs = range(carries, carries + len(loop.xs))
        for position, (b, x) in enumerate(zip(loop.binders, loop.inputs, strict=True)):
            if b not in batched:
                modes.append(_Input.KEEP)
            elif not self.depends(x):  # a carry batched by the fixpoint only
                modes.append(_Input.REPLICATE)
            else:
                modes.append(_Input.TRANSPOSE if position in xs else _Input.VECTORISE)
                requests.append(Vec(x))
        return _LoopPlan(loop, binders, body, outputs, tuple(modes), tuple(requests))

    def batched_loop(self, plan: _LoopPlan, vectorised: Sequence[Term]) -> MapAccum:
        """``L'`` over the vectorised inputs (one per request of the plan, in order):
        inits ``B[init]`` (a replicate if only the fixpoint batched it), xs ``B[x]``
        with the loop dimension moved outermost, consts ``B[const]``; memoised, so every
        result of ``L`` reads the same ``L'``."""
        key = (plan.loop, *vectorised)
        found = self.loops.get(key)
        if found is not None:
            return found
        loop, k = plan.loop, self.k
        given = iter(vectorised)
        inputs: list[Term] = []
        for mode, x in zip(plan.modes, loop.inputs, strict=True):
            match mode:
                case _Input.KEEP:
                    inputs.append(x)
                case _Input.REPLICATE:
                    inputs.append(Replicate(k, x))
                case _Input.VECTORISE:
                    inputs.append(next(given))
                case _Input.TRANSPOSE:  # (k, length, …) → (length, k, …)
                    r = next(given)
                    inputs.append(Transpose(_swap01(len(r.shape)), r))
                case _:
                    assert_never(mode)
        carries, n_x = len(loop.carry_vars), len(loop.x_vars)
        binders = plan.binders
        found = MapAccum(
            loop.length,
            loop.reverse,
            binders[:carries],
            binders[carries : carries + n_x],
            binders[carries + n_x :],
            tuple(inputs[:carries]),
            tuple(inputs[carries : carries + n_x]),
            tuple(inputs[carries + n_x :]),
            plan.body,
        )
        self.loops[key] = found
        return found

    # -- Fig. 10 and 11: push index down, or gather (the rules: BUILD1_INDEX_RULES) ------

    def index_rule(self, a: Term, ix: tuple[Term, ...]) -> Rewrite:
        k = self.k
        if not ix:
            return Rewrite("index-nil", "Fig. 10", (Vec(a),), _same)
        if not self.depends(a):
            # Fig. 11, the key rule: only the index mentions i; one gather.
            if len(ix) == 1 and ix[0] is self.i and a.shape[:1] == (k,):
                return Rewrite("build1-index", "Fig. 11", (), lambda _: a)  # identity gather
            new_i = self.fresh_index_var()
            return self.with_index_function(
                "build1-index", "Fig. 11", (), ix, new_i,
                lambda _, f2: Gather((k,), a, (new_i,), f2),
            )
        return BUILD1_INDEX_RULES[type(a)](self, a, ix)


def _inner_build1(*_: object) -> Rewrite:
    raise DualarrError("internal: an inner build1 was not vectorised first", op="bot")


# --------------------------------------------------------------------------------------
# Fig. 9: B[e] per construct of the body
# --------------------------------------------------------------------------------------

Build1Rule = Callable[[Vectoriser, Any], Rewrite]

BUILD1_RULES: RuleTable[Build1Rule] = RuleTable("build1")
"""The ``build1`` rules of Fig. 9 (§5.1), one per construct of the body: ``rule(v, e)``
rewrites ``build1 k (λi. e)`` for a body ``e`` that mentions ``i`` (a closed body is
``build1-closed``, in :meth:`Vectoriser.rule`); ``v`` is the :class:`Vectoriser`."""


@BUILD1_RULES.register(Var)
def _build1_var(v: Vectoriser, e: Var) -> Rewrite:
    k = v.k
    if e is v.i:
        return Rewrite("build1-var", "Fig. 9", (), lambda _: Iota(k))
    xv = v.vectorised_let[e]
    return Rewrite("build1-let-var", "Fig. 9", (), lambda _: xv)


@BUILD1_RULES.register(Op)
def _build1_op(v: Vectoriser, e: Op) -> Rewrite:
    op = e.op
    return Rewrite(
        "build1-op", "Fig. 9", tuple(Vec(a) for a in e.args), lambda rs: Op(op, tuple(rs))
    )


@BUILD1_RULES.register(Cond)
def _build1_cond(v: Vectoriser, e: Cond) -> Rewrite:
    c, a, b = e.cond, e.if_true, e.if_false
    if a.shape == ():
        # a scalar (e.g. index-valued) cond: an elementwise selection of the rows
        return Rewrite(
            "build1-cond-scalar", "Fig. 9", (Vec(c), Vec(a), Vec(b)),
            lambda rs: Op("select", tuple(rs)),
            "a select for a scalar cond, an elementwise choice without fromList",
        )
    selector = Cond(c, int_const(0), int_const(1))
    options = FromList((a, b))
    return Rewrite("build1-cond", "Fig. 9", (VecIndex(options, (selector,)),), _same)


@BUILD1_RULES.register(Let)
def _build1_let(v: Vectoriser, e: Let) -> Rewrite:
    return v.let_rule("build1-let", e.var, e.bound, Vec(e.body), "Fig. 9")


@BUILD1_RULES.register(Index)
def _build1_index(v: Vectoriser, e: Index) -> Rewrite:
    return v.index_rule(e.array, e.index)


@BUILD1_RULES.register(Gather)
def _build1_gather(v: Vectoriser, e: Gather) -> Rewrite:
    k, sh, array, vs = v.k, e.outer_shape, e.array, e.vars
    new_i = v.fresh_index_var()
    if not v.depends(array):  # gather of a closed array: no diagonal needed
        return v.with_index_function(
            "build1-gather", "Fig. 9", (), e.index, new_i,
            lambda _, f2: Gather((k, *sh), array, (new_i, *vs), f2), vs,
        )
    return v.with_index_function(
        "build1-gather", "Fig. 9", (Vec(array),), e.index, new_i,
        lambda rs, f2: Gather((k, *sh), rs[0], (new_i, *vs), (new_i, *f2)), vs,
    )


@BUILD1_RULES.register(Scatter)
def _build1_scatter(v: Vectoriser, e: Scatter) -> Rewrite:
    k, sh, vs = v.k, e.outer_shape, e.vars
    new_i = v.fresh_index_var()
    return v.with_index_function(
        "build1-scatter", "Fig. 9", (Vec(e.array),), e.index, new_i,
        lambda rs, f2: Scatter((k, *sh), rs[0], (new_i, *vs), (new_i, *f2)), vs,
    )


@BUILD1_RULES.register(SumOuter)
def _build1_sum_outer(v: Vectoriser, e: SumOuter) -> Rewrite:
    return Rewrite(
        "build1-sumOuter", "Fig. 9", (Vec(e.array),),
        lambda rs: SumOuter(Transpose(_swap01(len(rs[0].shape)), rs[0])),
    )


@BUILD1_RULES.register(Replicate)
def _build1_replicate(v: Vectoriser, e: Replicate) -> Rewrite:
    n = e.count
    return Rewrite(
        "build1-replicate", "Fig. 9", (Vec(e.array),),
        lambda rs: Transpose(_swap01(len(rs[0].shape) + 1), Replicate(n, rs[0])),
    )


@BUILD1_RULES.register(Transpose)
def _build1_transpose(v: Vectoriser, e: Transpose) -> Rewrite:
    p = e.perm
    return Rewrite(
        "build1-tr", "Fig. 9", (Vec(e.array),),
        lambda rs: Transpose((0, *(q + 1 for q in p)), rs[0]),
    )


@BUILD1_RULES.register(Reshape)
def _build1_reshape(v: Vectoriser, e: Reshape) -> Rewrite:
    k, sh = v.k, e.new_shape
    return Rewrite(
        "build1-reshape", "Fig. 9", (Vec(e.array),), lambda rs: Reshape((k, *sh), rs[0])
    )


@BUILD1_RULES.register(FromList)
def _build1_from_list(v: Vectoriser, e: FromList) -> Rewrite:
    return Rewrite(
        "build1-fromList", "Fig. 9", tuple(Vec(x) for x in e.elems),
        lambda rs: Transpose(_swap01(len(rs[0].shape) + 1), FromList(tuple(rs))),
    )


@BUILD1_RULES.register(FromIntegral)
def _build1_from_integral(v: Vectoriser, e: FromIntegral) -> Rewrite:
    to = e.to
    return Rewrite(
        "build1-fromIntegral", "Fig. 9", (Vec(e.array),), lambda rs: FromIntegral(rs[0], to)
    )


@BUILD1_RULES.register(Floor)
def _build1_floor(v: Vectoriser, e: Floor) -> Rewrite:
    return Rewrite("build1-floor", "Fig. 9", (Vec(e.array),), lambda rs: Floor(rs[0]))


@BUILD1_RULES.register(ArgMin)
def _build1_arg_min(v: Vectoriser, e: ArgMin) -> Rewrite:
    return Rewrite(
        "build1-argmin", "Fig. 9", (Vec(e.array),),
        lambda rs: ArgMin(Transpose(_swap01(len(rs[0].shape)), rs[0])),
        _ARG,
    )


@BUILD1_RULES.register(ArgMax)
def _build1_arg_max(v: Vectoriser, e: ArgMax) -> Rewrite:
    return Rewrite(
        "build1-argmax", "Fig. 9", (Vec(e.array),),
        lambda rs: ArgMax(Transpose(_swap01(len(rs[0].shape)), rs[0])),
        _ARG,
    )


@BUILD1_RULES.register(ArgSort)
def _build1_arg_sort(v: Vectoriser, e: ArgSort) -> Rewrite:
    # sort along the element's outer dimension, batch inside
    return Rewrite(
        "build1-argsort", "Fig. 9", (Vec(e.array),),
        lambda rs: Transpose(
            _swap01(len(rs[0].shape)), ArgSort(Transpose(_swap01(len(rs[0].shape)), rs[0]))
        ),
        _ARG,
    )


@BUILD1_RULES.register(Contract)
def _build1_contract(v: Vectoriser, e: Contract) -> Rewrite:
    spec = e.spec
    left, right, out = parse_contraction(spec)
    z = next(c for c in _SPEC_LETTERS if c not in spec)
    return Rewrite(
        "build1-contract", "Fig. 9", (Vec(e.left), Vec(e.right)),
        lambda rs: Contract(f"{z}{left},{z}{right}->{z}{out}", rs[0], rs[1]),
        _CONTRACT,
    )


@BUILD1_RULES.register(Share)
def _build1_share(v: Vectoriser, e: Share) -> Rewrite:
    return Rewrite("build1-share", "§7.2", (Vec(e.array),), _same)


@BUILD1_RULES.register(LoopOutput)
def _build1_loop_output(v: Vectoriser, e: LoopOutput) -> Rewrite:
    """``B[L.n]`` for a loop ``L`` whose inputs mention ``i`` (horde-ad's mapAccum; not
    in the paper): result ``n`` of one batched loop ``L'`` (:meth:`Vectoriser.loop_plan`),
    shared by every result of ``L``.  A batched carry of ``L'`` is ``(k, …)`` already;
    its stacked ys are ``(length, k, …)``, transposed back to ``(k, length, …)``; a
    result that reads no batched binder is the same for every ``i``: replicated."""
    loop = e.loop
    assert isinstance(loop, MapAccum)
    plan = v.loop_plan(loop)
    k, n, carries = v.k, e.index, len(loop.carry_vars)

    def assemble(results: Sequence[Term]) -> Term:
        out = LoopOutput(n, v.batched_loop(plan, results))
        if not plan.outputs[n]:
            return Replicate(k, out)
        if n < carries:
            return out
        return Transpose(_swap01(len(out.shape)), out)

    return Rewrite("build1-mapAccum", "Fig. 9", plan.requests, assemble, _LOOP)


def _loop_itself(*_: object) -> Rewrite:
    raise DualarrError(
        "internal: a loop has several results and is read only through LoopOutput", op="bot"
    )


BUILD1_RULES.register(MapAccum)(_loop_itself)
BUILD1_RULES.register(Build1)(_inner_build1)


@BUILD1_RULES.register(Const, Iota)
def _build1_of_closed(v: Vectoriser, e: Const | Iota) -> Rewrite:
    raise AssertionError("closed terms are replicated")


# --------------------------------------------------------------------------------------
# Figs. 10 and 11 under build1: B[index a ix] per construct of the array a
# --------------------------------------------------------------------------------------

Build1IndexRule = Callable[[Vectoriser, Any, tuple[Term, ...]], Rewrite]

BUILD1_INDEX_RULES: RuleTable[Build1IndexRule] = RuleTable("build1 index")
"""``B[index a ix]`` per construct of an array ``a`` that mentions ``i`` (a non-empty
``ix``): ``rule(v, a, ix)`` pushes the index down (Fig. 10) and goes on vectorising, or,
at a normal form, vectorises ``a`` and takes the diagonal (Fig. 11, horde-ad's rule D).
A closed ``a`` is Fig. 11's one gather, in :meth:`Vectoriser.index_rule`."""


@BUILD1_INDEX_RULES.register(Index)
def _vindex_index(v: Vectoriser, a: Index, ix: tuple[Term, ...]) -> Rewrite:
    return Rewrite("index-index", "Fig. 10", (VecIndex(a.array, (*a.index, *ix)),), _same)


@BUILD1_INDEX_RULES.register(Op)
def _vindex_op(v: Vectoriser, a: Op, ix: tuple[Term, ...]) -> Rewrite:
    op, args = a.op, a.args
    if ix_.zero_preserving(op) or ix_.provably_in_range(ix, a.shape, v.known_bounds):
        return Rewrite(
            "index-op", "Fig. 10", tuple(VecIndex(arg, ix) for arg in args),
            lambda rs: Op(op, tuple(rs)),
        )
    # out of range every argument reads 0 but op(0..0) may not be 0: guard
    inner = Op(op, tuple(Index(arg, ix) for arg in args))
    guarded = v.guard(ix_.all_in_range(ix, a.shape), inner, inner.shape)
    return Rewrite("index-op", "Fig. 10", (Vec(guarded),), _same, _GUARD)


@BUILD1_INDEX_RULES.register(Let)
def _vindex_let(v: Vectoriser, a: Let, ix: tuple[Term, ...]) -> Rewrite:
    return v.let_rule("index-let", a.var, a.bound, VecIndex(a.body, ix), "Fig. 10")


@BUILD1_INDEX_RULES.register(Cond)
def _vindex_cond(v: Vectoriser, a: Cond, ix: tuple[Term, ...]) -> Rewrite:
    pushed = Cond(a.cond, Index(a.if_true, ix), Index(a.if_false, ix))
    return Rewrite("index-cond", "Fig. 10", (Vec(pushed),), _same)


@BUILD1_INDEX_RULES.register(Replicate)
def _vindex_replicate(v: Vectoriser, a: Replicate, ix: tuple[Term, ...]) -> Rewrite:
    guarded = _guarded_index(a.array, ix[1:], ix_.in_range(ix[0], a.count))
    return Rewrite("index-replicate", "Fig. 10", (Vec(guarded),), _same)


@BUILD1_INDEX_RULES.register(SumOuter)
def _vindex_sum_outer(v: Vectoriser, a: SumOuter, ix: tuple[Term, ...]) -> Rewrite:
    b = a.array
    pushed = SumOuter(Index(Transpose(_to_position(len(ix), len(b.shape)), b), ix))
    return Rewrite("index-sumOuter", "Fig. 10", (Vec(pushed),), _same)


@BUILD1_INDEX_RULES.register(ArgMin, ArgMax)
def _vindex_arg_extremum(v: Vectoriser, a: ArgMin | ArgMax, ix: tuple[Term, ...]) -> Rewrite:
    b = a.array
    pushed = type(a)(Index(Transpose(_to_position(len(ix), len(b.shape)), b), ix))
    return Rewrite("index-argmin", "Fig. 10", (Vec(pushed),), _same, _ARG)


@BUILD1_INDEX_RULES.register(Transpose)
def _vindex_transpose(v: Vectoriser, a: Transpose, ix: tuple[Term, ...]) -> Rewrite:
    pushed = v.index_transpose(a.perm, a.array, ix)
    return Rewrite("index-tr", "Fig. 10", (Vec(pushed),), _same)


@BUILD1_INDEX_RULES.register(Reshape)
def _vindex_reshape(v: Vectoriser, a: Reshape, ix: tuple[Term, ...]) -> Rewrite:
    pushed = v.index_reshape(a.new_shape, a.array, ix)
    return Rewrite("index-reshape", "Fig. 10", (Vec(pushed),), _same)


@BUILD1_INDEX_RULES.register(Gather)
def _vindex_gather(v: Vectoriser, a: Gather, ix: tuple[Term, ...]) -> Rewrite:
    pushed = v.index_gather(a.outer_shape, a.array, a.vars, a.index, ix)
    return Rewrite("index-gather", "Fig. 10", (Vec(pushed),), _same)


@BUILD1_INDEX_RULES.register(FromIntegral)
def _vindex_from_integral(v: Vectoriser, a: FromIntegral, ix: tuple[Term, ...]) -> Rewrite:
    to = a.to
    return Rewrite(
        "index-fromIntegral", "Fig. 10", (VecIndex(a.array, ix),),
        lambda rs: FromIntegral(rs[0], to),
    )


@BUILD1_INDEX_RULES.register(Floor)
def _vindex_floor(v: Vectoriser, a: Floor, ix: tuple[Term, ...]) -> Rewrite:
    return Rewrite("index-floor", "Fig. 10", (VecIndex(a.array, ix),), lambda rs: Floor(rs[0]))


@BUILD1_INDEX_RULES.register(Var, FromList, Scatter, Contract, Share, ArgSort, LoopOutput)
def _vindex_diagonal(v: Vectoriser, a: Term, ix: tuple[Term, ...]) -> Rewrite:
    """A normal form that mentions ``i``: vectorise it and take the diagonal (rule D)."""
    k = v.k
    new_i = v.fresh_index_var()
    return v.with_index_function(
        "build1-index-diagonal", "Fig. 11", (Vec(a),), ix, new_i,
        lambda rs, f2: Gather((k,), rs[0], (new_i,), (new_i, *f2)),
    )


BUILD1_INDEX_RULES.register(Build1)(_inner_build1)
BUILD1_INDEX_RULES.register(MapAccum)(_loop_itself)


@BUILD1_INDEX_RULES.register(Const, Iota)
def _vindex_of_closed(v: Vectoriser, a: Const | Iota, ix: tuple[Term, ...]) -> Rewrite:
    raise AssertionError("closed terms are gathered")


# --------------------------------------------------------------------------------------
# Fig. 10 outside build1: push index down
# --------------------------------------------------------------------------------------


class IndexPusher(Rewriter):
    """``I[e, ix]``: push ``index e ix`` down until the indexed array is a variable, a
    constant, a ``fromList`` or a ``scatter`` (Fig. 10), outside any ``build1``."""

    def placeholder(self, request: Request) -> Term:
        assert isinstance(request, Push)
        return Index(request.array, request.index)

    def then(self, rule: str, term: Term) -> Rewrite:
        """Continue pushing when ``term`` is again an ``index``."""
        if isinstance(term, Index):
            return Rewrite(rule, "Fig. 10", (Push(term.array, term.index),), _same)
        return Rewrite(rule, "Fig. 10", (), lambda _: term)

    def rule(self, request: Request) -> Rewrite:
        assert isinstance(request, Push)
        a, ix = request.array, request.index
        if not ix:
            return Rewrite("index-nil", "Fig. 10", (), lambda _: a)
        return INDEX_RULES[type(a)](self, a, ix)


INDEX_NORMAL_FORMS = (
    Var, Const, FromList, Scatter, Contract, Share, ArgMin, ArgMax, ArgSort, LoopOutput
)
"""What ``index`` may be applied to in the normal form of Theorem 5.1 (and after); a
loop's result (horde-ad's mapAccum, not in the paper) is computed whole, then indexed:
an index cannot be pushed into a loop."""


PushRule = Callable[[IndexPusher, Any, tuple[Term, ...]], Rewrite]

INDEX_RULES: RuleTable[PushRule] = RuleTable("index")
"""The index-pushing rules of Fig. 10 (§5.2), one per construct of the indexed array:
``rule(p, a, ix)`` rewrites ``index a ix`` (a non-empty ``ix``) outside any ``build1``;
at a normal form of Theorem 5.1 it stops.  ``p`` is the :class:`IndexPusher`."""


@INDEX_RULES.register(*INDEX_NORMAL_FORMS)
def _push_normal_form(p: IndexPusher, a: Term, ix: tuple[Term, ...]) -> Rewrite:
    return Rewrite("", "Theorem 5.1", (), lambda _: Index(a, ix))  # normal form


@INDEX_RULES.register(Index)
def _push_index(p: IndexPusher, a: Index, ix: tuple[Term, ...]) -> Rewrite:
    return Rewrite("index-index", "Fig. 10", (Push(a.array, (*a.index, *ix)),), _same)


@INDEX_RULES.register(Op)
def _push_op(p: IndexPusher, a: Op, ix: tuple[Term, ...]) -> Rewrite:
    return p.index_op("index-op", a, ix, Push)


@INDEX_RULES.register(Let)
def _push_let(p: IndexPusher, a: Let, ix: tuple[Term, ...]) -> Rewrite:
    x, bound = a.var, a.bound
    return Rewrite(
        "index-let", "Fig. 10", (Push(a.body, ix),), lambda rs: Let(x, bound, rs[0])
    )


@INDEX_RULES.register(Cond)
def _push_cond(p: IndexPusher, a: Cond, ix: tuple[Term, ...]) -> Rewrite:
    c = a.cond
    return Rewrite(
        "index-cond", "Fig. 10", (Push(a.if_true, ix), Push(a.if_false, ix)),
        lambda rs: Cond(c, rs[0], rs[1]),
    )


@INDEX_RULES.register(Replicate)
def _push_replicate(p: IndexPusher, a: Replicate, ix: tuple[Term, ...]) -> Rewrite:
    return p.then(
        "index-replicate", _guarded_index(a.array, ix[1:], ix_.in_range(ix[0], a.count))
    )


@INDEX_RULES.register(SumOuter)
def _push_sum_outer(p: IndexPusher, a: SumOuter, ix: tuple[Term, ...]) -> Rewrite:
    moved = Transpose(_to_position(len(ix), len(a.array.shape)), a.array)
    return Rewrite(
        "index-sumOuter", "Fig. 10", (Push(moved, ix),), lambda rs: SumOuter(rs[0])
    )


@INDEX_RULES.register(Transpose)
def _push_transpose(p: IndexPusher, a: Transpose, ix: tuple[Term, ...]) -> Rewrite:
    return p.then("index-tr", p.index_transpose(a.perm, a.array, ix))


@INDEX_RULES.register(Reshape)
def _push_reshape(p: IndexPusher, a: Reshape, ix: tuple[Term, ...]) -> Rewrite:
    return p.then("index-reshape", p.index_reshape(a.new_shape, a.array, ix))


@INDEX_RULES.register(Gather)
def _push_gather(p: IndexPusher, a: Gather, ix: tuple[Term, ...]) -> Rewrite:
    return p.then(
        "index-gather", p.index_gather(a.outer_shape, a.array, a.vars, a.index, ix)
    )


@INDEX_RULES.register(Iota)
def _push_iota(p: IndexPusher, a: Iota, ix: tuple[Term, ...]) -> Rewrite:
    j, n = ix[0], a.size
    return Rewrite(
        "index-iota", "Fig. 10", (), lambda _: Cond(ix_.in_range(j, n), j, int_const(0))
    )


@INDEX_RULES.register(FromIntegral)
def _push_from_integral(p: IndexPusher, a: FromIntegral, ix: tuple[Term, ...]) -> Rewrite:
    to = a.to
    return Rewrite(
        "index-fromIntegral", "Fig. 10", (Push(a.array, ix),),
        lambda rs: FromIntegral(rs[0], to),
    )


@INDEX_RULES.register(Floor)
def _push_floor(p: IndexPusher, a: Floor, ix: tuple[Term, ...]) -> Rewrite:
    return Rewrite("index-floor", "Fig. 10", (Push(a.array, ix),), lambda rs: Floor(rs[0]))


INDEX_RULES.register(Build1)(_inner_build1)
INDEX_RULES.register(MapAccum)(_loop_itself)

_SPEC_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _guarded_index(b: Term, comps: tuple[Term, ...], ok: Term) -> Term:
    """``b[comps]`` when ``ok``, else zeros: the first component is made out of range."""
    if comps:
        return Index(b, (ix_.poison(ok, comps[0]), *comps[1:]))
    if ix_.is_true(ok):
        return b
    return Cond(ok, b, zeros(b.shape, b.dtype))


def _replace_nodes(terms: Sequence[Term], replacement: dict[Term, Term]) -> list[Term]:
    """Replace the given nodes (by identity), rebuilding their ancestors."""
    new: dict[Term, Term] = {}
    for node in postorder(terms):
        if node in replacement:
            new[node] = replacement[node]
            continue
        rebuilt = rebuild(node, tuple(new[kid] for kid in children(node)))
        if isinstance(rebuilt, Index) and isinstance(rebuilt.array, Index):
            rebuilt = Index(rebuilt.array.array, (*rebuilt.array.index, *rebuilt.index))
        new[node] = rebuilt
    return [new[t] for t in terms]


# --------------------------------------------------------------------------------------
# The whole program
# --------------------------------------------------------------------------------------


@dataclass
class BotResult:
    """Vectorised output terms and, when recorded, the rule trace."""

    terms: tuple[Term, ...]
    steps: list[BotStep]


class _Recorder:
    """Collects rule applications and rebuilds the whole program after any of them."""

    def __init__(self, roots: Sequence[Term]) -> None:
        self.roots = tuple(roots)
        self.steps: list[BotStep] = []
        # per (rewriter, request key): (step number, rewrite)
        self.applied: dict[Hashable, tuple[int, Rewrite]] = {}
        # each job: the original node, its rewriter, and its root request
        self.jobs: list[tuple[Term, Rewriter, Request]] = []

    def watch(self, original: Term, rewriter: Rewriter, root: Request) -> None:
        self.jobs.append((original, rewriter, root))
        self.listen(rewriter)

    def listen(self, rewriter: Rewriter) -> None:
        """Record ``rewriter``'s rule applications, and those of the rewriters it starts
        (the bot of a loop's body: its steps come before the loop's own, and the whole
        program after one of them is the program before the loop's step)."""
        rewriter.on_rule = lambda request, rewrite: self.on_rule(rewriter, request, rewrite)
        rewriter.on_spawn = self.listen

    def on_rule(self, rewriter: Rewriter, request: Request, rewrite: Rewrite) -> None:
        number = len(self.steps) + 1
        self.applied[(rewriter, _request_key(request))] = (number, rewrite)
        self.steps.append(
            BotStep(
                number,
                rewrite.rule,
                rewrite.figure,
                lambda: rewriter.placeholder(request),
                lambda: rewrite.assemble([rewriter.placeholder(r) for r in rewrite.requests]),
                lambda: self.whole(number),
                "extension" if rewrite.extension else "paper",
                rewrite.extension,
            )
        )

    def expand(self, rewriter: Rewriter, request: Request, upto: int) -> Term:
        """The request's term after the steps numbered ``<= upto``."""

        def solve(req: Request) -> Generator[Request, Term, Term]:
            applied = self.applied.get((rewriter, _request_key(req)))
            if applied is None or applied[0] > upto:
                rewrite = rewriter.rule(req) if isinstance(req, Push) else None
                if rewrite is not None and not rewrite.rule:  # already a normal form
                    return rewrite.assemble([])
                return rewriter.placeholder(req)
            rewrite = applied[1]
            results: list[Term] = []
            for sub in rewrite.requests:
                results.append((yield sub))
            return rewrite.assemble(results)

        return run(request, solve, _request_key)  # type: ignore[no-any-return]

    def whole(self, upto: int) -> tuple[Term, ...]:
        replaced: dict[Term, Term] = {}
        for original, rewriter, root in self.jobs:
            first = self.applied.get((rewriter, _request_key(root)))
            if first is None or first[0] > upto:
                continue
            replaced[original] = self.expand(rewriter, root, upto)

        def rewrite(node: Term, kids: tuple[Term, ...]) -> Term:
            if node in replaced:
                return replaced[node]
            return rebuild(node, kids)

        return tuple(transform(self.roots, rewrite))


def vectorise(
    roots: Sequence[Term], supply: IdSupply, *, record: bool = False
) -> BotResult:
    """The bot on the DAG ``roots``: every ``build1`` eliminated (bottom-up) and every
    ``index`` pushed to a normal form; sharing kept."""
    with collector_paused():
        return _vectorise(roots, supply, record)


def _vectorise(roots: Sequence[Term], supply: IdSupply, record: bool) -> BotResult:
    free_vars = FreeVars()
    recorder = _Recorder(roots) if record else None
    new: dict[Term, Term] = {}
    # build1s binding the same variable (vmap's, one per leaf of a result) share one
    # vectoriser: what their bodies share is vectorised once
    vectorisers: dict[tuple[int, Var], Vectoriser] = {}
    for node in postorder(roots):
        kids = tuple(new[k] for k in children(node))
        result = rebuild(node, kids)
        if isinstance(result, Build1):
            vectoriser = vectorisers.get((result.size, result.var))
            if vectoriser is None:
                vectoriser = Vectoriser(result.size, result.var, supply, free_vars)
                vectorisers[result.size, result.var] = vectoriser
            if recorder is not None:
                recorder.watch(node, vectoriser, Vec(result.body))
            result = vectoriser.run(result.body)
        elif isinstance(result, Index) and not isinstance(
            result.array, Var | Const | FromList | Scatter
        ):
            pusher = IndexPusher(supply, free_vars)
            request = Push(result.array, result.index)
            if recorder is not None:
                recorder.watch(node, pusher, request)
            result = pusher.solve(request)
        new[node] = result
    terms = tuple(new[r] for r in roots)
    return BotResult(terms, recorder.steps if recorder is not None else [])


# --------------------------------------------------------------------------------------
# Theorem 5.1: the normal form
# --------------------------------------------------------------------------------------


class NotBotNormal(DualarrError):
    """A term is not in the bot's normal form (Theorem 5.1)."""

    def __init__(self, message: str, subterm: Term) -> None:
        super().__init__(message, op="is_bot_normal", location="")
        self.subterm = subterm


def check_bot_normal(roots: Sequence[Term]) -> None:
    """Raise :class:`NotBotNormal` naming the offending subterm unless Theorem 5.1 holds:
    no ``build1``, and every ``index`` is of a variable, a constant, a ``fromList`` or a
    ``scatter`` (or a ``contract``/``share``, which only simplification introduces, an
    ``argmin``/``argmax``/``argsort``: integer results, computed in bulk once, then
    indexed, or a loop's result).  The bodies of loops are checked too: they are
    children like any other."""
    for node in postorder(roots):
        if isinstance(node, Build1):
            raise NotBotNormal(f"build1 remains: {_short(node)}", node)
        if isinstance(node, Index) and not isinstance(node.array, INDEX_NORMAL_FORMS):
            raise NotBotNormal(
                f"index of a {type(node.array).__name__} (not a normal form): {_short(node)}",
                node,
            )


def is_bot_normal(term: Term | Sequence[Term] | object) -> bool:
    """Theorem 5.1 check on a term, terms or a program; raises :class:`NotBotNormal`
    (with the offending subterm) when the check fails."""
    roots = _roots_of(term)
    check_bot_normal(roots)
    return True


def _roots_of(value: object) -> list[Term]:
    outputs = getattr(value, "outputs", None)
    if outputs is not None:
        return list(outputs)
    if isinstance(value, list | tuple):
        return list(value)
    return [value]  # type: ignore[list-item]


def _short(term: Term) -> str:
    text = str(term)
    return text if len(text) <= 300 else text[:300] + " …"

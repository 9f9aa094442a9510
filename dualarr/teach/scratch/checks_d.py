"""Checks of stage (d): compile-time differentiation (§7) — the forward pass on terms
(Fig. 14 with symbolic primals), the separated form of Eq. 6, the symbolic reverse pass
(Fig. 19), share→let (Fig. 20, linear, §7.4) and the wrapper (Fig. 21).

Each task is graded on its own: what a task consumes comes from the reference of the
stages before it and of this stage's other tasks (``stage("d", "reference")``), rebuilt
with the learner's own classes where a notebook defines one (a notebook's ``Share`` term
is not the reference notebook's ``Share``).  The learner's terms are run by stage a's
reference evaluator, binding by binding, and compared with dualarr's value and vjp on
random build1-free programs (and, for the wrapper, on the reference bot's outputs).
Counted work: a let chain whose every value is used twice (forward, extraction, reverse
pass and wrapper must stay linear in it, §7.2) and a doubling chain of shares (share→let
must walk each fragment once, §7.4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Any

import numpy as np

import dualarr as da

from ..scratch_support import FIG7_CONSTRUCTS
from . import delta as dl
from .grading import Mismatch, count_calls, expect_close, task
from .notebooks import notebook_path, stage
from .oracle import Case, cases
from .terms import (
    Build1,
    Const,
    Gather,
    Let,
    Op,
    Scatter,
    SumOuter,
    Term,
    Transpose,
    Var,
    children,
    constructs_in,
    is_term,
    map_children,
    show,
)  # fmt: skip

Array = np.ndarray
Shapes = dict[str, tuple[int, ...]]
Bindings = list[tuple[str, Term]]

BUILD1_FREE = FIG7_CONSTRUCTS - {"build1"}
"""The random programs here are build1-free already (the bot's output language)."""
DT = "dt"
"""The cotangent's name when a check builds the gradient program's pieces itself."""
GROWTH = 3.0
"""Doubling the chain may at most multiply the work or the size by this (linear: 2)."""
SIZE_LIMIT = 2_000_000
"""A term walk stops counting here (an exponential term is reported, not walked)."""

FORWARD_HINT = (
    "Fig. 14 with terms as primals (§7.1): a construct's primal is the same construct over "
    "its children's primal terms, its Delta stage c's rule with terms where c had arrays "
    "(factors, indices, index functions); ints and bools get no Delta (Fig. 13); at a tie, "
    "maximum and minimum give the derivative to the first argument"
)
LET_HINT = (
    "§7.1: a let shares through the environment: every use of the variable is the same "
    "dual term (one Python object), never a copy or a second pass over the bound term"
)
INVARIANT_HINT = (
    "§2.5, Invariants 1 and 2: every Delta a rule builds goes through share_delta, whose "
    "ids are fresh and larger than every id inside; a variable passes its dual term on"
)
EXTRACT_HINT = (
    "Eq. 6 (§7.1, §7.6): every node used more than once, the primal result and every term "
    "the Delta holds become let bindings, in dependency order, unless they are variables, "
    "constants, or have a free variable other than the inputs; the Delta then holds the "
    "rewritten terms"
)
SHARING_HINT = (
    "§7.1: a node of the primal DAG that is used more than once must become one binding; "
    "rebuilt at each use, a let chain's primal doubles with every let"
)
REVERSE_HINT = (
    "Fig. 19: Fig. 17's reverse pass with terms as cotangents: each Delta constructor sends "
    "its child the term of its transpose (total: a read out of range had no effect, §5.2); "
    "grad and accum add terms; each Share node once, the largest id first"
)
REVERSE_LINEAR_HINT = (
    "§2.5 and Fig. 19: a Share node of the Delta only accumulates its cotangent; backprop "
    "then evaluates each once, the largest id first, each step in constant work (a heap, "
    "not a scan)"
)
DUPLICATION_HINT = (
    "§7.2-7.3: Add and FromList hand one cotangent to several places; on terms that copies "
    "its computation at each, so it must be shared (a fresh, increasing id) before it is "
    "passed on; a Share node of the Delta is still evaluated once"
)
SHARE_TO_LET_HINT = (
    "Fig. 20: each share becomes a variable, its fragment (itself unshared) collected once "
    "per id; the fragments are bound from the lowest id to the highest, so each comes "
    "after those it reads"
)
LINEAR_SHARE_HINT = (
    "§7.4: a share met a second time is only its variable: its fragment must not be "
    "walked (or unshared) again"
)
PROGRAM_HINT = (
    "Fig. 21: the primal bindings of Eq. 6, then the cotangent bindings of share→let; the "
    "primal result and one gradient per input in the inputs' order (zeros where the output "
    "does not depend on it), over the inputs and the cotangent's variable"
)


# --------------------------------------------------------------------------------------
# Programs, references and running terms
# --------------------------------------------------------------------------------------


def _reference() -> ModuleType:
    return stage("d", "reference")


def _evaluate() -> Callable[[Term, dict[str, Array]], Array]:
    evaluate: Callable[[Term, dict[str, Array]], Array] = stage("a", "reference").evaluate
    return evaluate


def _programs(seed: int, count: int, constructs: frozenset[str] = BUILD1_FREE) -> list[Case]:
    found = cases(seed, count, constructs=constructs)
    return sorted(found, key=lambda c: len(show(c.term)))


def _shapes(case: Any) -> Shapes:
    return {name: tuple(case.env[name].shape) for name in case.inputs}


def _hint(term: Term, hint: str) -> str:
    kinds = ", ".join(sorted(constructs_in(term) - {"Const", "Var"}))
    return f"{hint} (this program uses {kinds})" if kinds else hint


def _brief(t: Any, limit: int = 160) -> str:
    if not is_term(t):
        return repr(t)[:limit]
    if _size([t], limit=2000) >= 2000:
        return "<a term of over 2000 nodes>"
    text = show(t)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_share(t: Any) -> bool:
    """A ``share_id t`` term of a notebook (an ``Op`` subclass named ``Share``)."""
    return isinstance(t, Op) and type(t).__name__ == "Share" and isinstance(
        getattr(t, "id", None), int)


def _size(roots: Iterable[Any], limit: int = SIZE_LIMIT) -> int:
    """The nodes of ``roots`` as trees, each ``share`` id entered once (stops at
    ``limit``)."""
    entered: set[int] = set()
    stack = list(roots)
    count = 0
    while stack and count < limit:
        node = stack.pop()
        count += 1
        if _is_share(node):
            if node.id in entered:
                continue
            entered.add(node.id)
        if is_term(node):
            stack.extend(children(node))
    return count


def _free(t: Term) -> set[str]:
    """The free variables of a share-free term (binders: let, build1, index functions)."""
    match t:
        case Var(name):
            return {name}
        case Let(name, bound, body):
            return _free(bound) | (_free(body) - {name})
        case Build1(_, name, body):
            return _free(body) - {name}
        case Gather(_, array, names, ix) | Scatter(_, array, names, ix):
            inner: set[str] = set().union(*(_free(j) for j in ix)) if ix else set()
            return _free(array) | (inner - set(names))
    return set().union(*(_free(k) for k in children(t))) if children(t) else set()


def _check_closed(t: Any, scope: set[str], where: str, hint: str, program: str) -> None:
    """``t`` is a term without let, build1 or share whose free variables are in scope."""
    if not is_term(t):
        raise Mismatch(f"{where} is not a term of the core language: {_brief(t)}",
                       hint=hint, program=program)
    if _size([t]) >= SIZE_LIMIT:
        raise Mismatch(f"{where} has over {SIZE_LIMIT} nodes as a tree", hint=hint,
                       program=program)
    stack: list[Any] = [t]
    while stack:
        node = stack.pop()
        if _is_share(node):
            raise Mismatch(f"{where} still holds {node.op} (your term: {_brief(t)})",
                           hint=hint, program=program)
        if isinstance(node, Let | Build1):
            raise Mismatch(f"{where} holds a {type(node).__name__} (your term: {_brief(t)})",
                           hint=hint, program=program)
        stack.extend(children(node))
    unbound = _free(t) - scope
    if unbound:
        raise Mismatch(f"{where} reads {', '.join(sorted(unbound))}, bound nowhere before it "
                       f"(your term: {_brief(t)})", hint=hint, program=program)


def _check_bindings(bindings: Any, scope: set[str], what: str, hint: str,
                    program: str) -> set[str]:
    """Each binding closed over the scope and the earlier bindings, each name new; the
    scope after them."""
    scope = set(scope)
    try:
        pairs = [(name, bound) for name, bound in bindings]
    except (TypeError, ValueError) as error:
        raise Mismatch(f"{what} are not (name, term) pairs: {error}", hint=hint,
                       program=program) from error
    for name, bound in pairs:
        if not isinstance(name, str):
            raise Mismatch(f"{what}: a binding's name is {name!r}, not a str", hint=hint,
                           program=program)
        _check_closed(bound, scope, f"the binding of {name}", hint, program)
        if name in scope:
            raise Mismatch(f"{what}: {name} is bound twice", hint=hint, program=program)
        scope.add(name)
    return scope


def _run(bindings: Bindings, env: dict[str, Array], hint: str,
         program: str) -> dict[str, Array]:
    """The environment after evaluating ``bindings`` in order."""
    evaluate = _evaluate()
    env = dict(env)
    for name, bound in bindings:
        try:
            env[name] = np.asarray(evaluate(bound, env))
        except KeyError as error:
            raise Mismatch(f"the binding of {name} reads {error}, which is not bound before "
                           f"it (its term: {_brief(bound)})", hint=hint,
                           program=program) from error
        except Exception as error:
            raise Mismatch(f"stage a's evaluator fails on the binding of {name} "
                           f"({type(error).__name__}: {error}; its term: {_brief(bound)})",
                           hint=hint, program=program) from error
    return env


def _expect_gradients(case: Any, env: dict[str, Array], gradients: Sequence[Term],
                      cotangent: Array, hint: str, what: str) -> None:
    evaluate = _evaluate()
    want = case.vjp(cotangent)
    for name, g in zip(case.inputs, gradients, strict=True):
        try:
            got = evaluate(g, env)
        except KeyError as error:
            raise Mismatch(f"the gradient of {name} reads {error}, which is bound nowhere "
                           f"(its term: {_brief(g)})", hint=hint, program=case.text,
                           inputs=case.env) from error
        except Exception as error:
            raise Mismatch(f"stage a's evaluator fails on the gradient of {name} "
                           f"({type(error).__name__}: {error}; its term: {_brief(g)})",
                           hint=hint, program=case.text, inputs=case.env) from error
        expect_close(want[name], got, what=f"{what}: the gradient of {name} (for the "
                     f"cotangent {np.round(cotangent, 3).tolist()}) differs from dualarr's",
                     hint=hint, program=case.text, inputs=case.env)


ELEMENTWISE: dict[str, Callable[..., Any]] = {
    "add": lambda x, z: x + z, "sub": lambda x, z: x - z, "mul": lambda x, z: x * z,
    "maximum": da.maximum, "minimum": da.minimum, "neg": lambda x: -x, "sin": da.sin,
    "cos": da.cos, "tanh": da.tanh,
}  # fmt: skip
"""The float operations of the mini language, written with dualarr (the oracle)."""

ARITHMETIC = frozenset({"op", "let", "cond", "index", "sumOuter", "replicate", "fromList", "tr"})
"""Constructs of programs with more elementwise arithmetic than the whole set gives."""


@dataclass(frozen=True)
class Handmade:
    """A program the random ones rarely draw (elementwise operations with ties, cyclic
    transpositions), with dualarr's vjp of the same function written with dualarr."""

    term: Term
    env: dict[str, Array]
    function: Callable[..., Any]

    @property
    def text(self) -> str:
        return show(self.term)

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(self.env)

    def value(self) -> Array:
        return np.asarray(_evaluate()(self.term, dict(self.env)))

    def cotangent(self) -> Array:
        rng = np.random.default_rng(len(self.text))
        return np.asarray(rng.integers(-8, 9, size=np.shape(self.value())) / 4.0)

    def vjp(self, cotangent: Array) -> dict[str, Array]:
        _, pullback = da.vjp(self.function, *self.env.values())
        return dict(zip(self.env, pullback(cotangent), strict=True))


def _elementwise() -> list[Handmade]:
    """Each float operation on arrays of rank 0-2, ties in about half the elements."""
    rng = np.random.default_rng(31)
    found = []
    for op, f in ELEMENTWISE.items():
        names = ("x",) if op in ("neg", "sin", "cos", "tanh") else ("x", "z")
        for rank in range(3):
            shape = tuple(int(n) for n in rng.integers(1, 4, size=rank))
            xs = [np.asarray(rng.integers(-4, 5, size=shape) / 4.0) for _ in names]
            if len(xs) == 2:  # ties in about half the elements
                xs[1] = np.where(rng.random(shape) < 0.5, xs[0], xs[1])
            term = Op(op, tuple(Var(n) for n in names))
            found.append(Handmade(term, dict(zip(names, xs, strict=True)), f))
    return found


def _transpositions() -> list[Handmade]:
    """``tr`` by cyclic permutations, of all the dimensions or of the leading ones."""
    x = np.arange(24.0).reshape(2, 3, 4) / 8.0
    found = []
    for perm in ((1, 2, 0), (2, 0, 1), (1, 0)):
        axes = (*perm, *range(len(perm), 3))
        found.append(Handmade(SumOuter(Transpose(perm, Var("x"))), {"x": x},
                              lambda x, axes=axes: da.sum(da.transpose(x, axes), axis=0)))
    return found


def _zeros(shape: tuple[int, ...]) -> Const:
    return Const(np.zeros(shape))


def _reference_gradients(ref: ModuleType, delta: dl.Delta,
                         shapes: Shapes) -> tuple[Bindings, list[Term]]:
    """The reference's Fig. 19 and Fig. 20 on a Delta: cotangent bindings, gradients."""
    grads = ref.reverse_symbolic(delta, Var(DT))
    shared, outs = ref.share_to_let([grads.get(n, _zeros(s)) for n, s in shapes.items()])
    return list(shared), list(outs)


def _unshare(roots: Sequence[Any]) -> tuple[Bindings, list[Term]]:
    """Fig. 20, for reading the learner's terms with ``share`` (any notebook's class)."""
    fragments: dict[int, tuple[str, Term]] = {}

    def go(t: Any) -> Any:
        if _is_share(t):
            if t.id not in fragments:
                inner = go(t.args[0])
                fragments[t.id] = (f"share#{t.id}", inner)
            return Var(fragments[t.id][0])
        return map_children(t, go) if is_term(t) else t

    outs = [go(r) for r in roots]
    return [fragments[i] for i in sorted(fragments)], outs


def _converted(roots: Sequence[Term], share_class: Any) -> list[Term]:
    """``roots`` with every ``share`` rebuilt in the learner's ``Share`` class (same ids,
    one object per id)."""
    made: dict[int, Term] = {}

    def go(t: Any) -> Term:
        if _is_share(t):
            if t.id not in made:
                made[t.id] = share_class(t.op, (go(t.args[0]),), t.id)
            return made[t.id]
        return map_children(t, go)

    return [go(r) for r in roots]


def _share_ids(roots: Sequence[Any]) -> set[int]:
    found: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if _is_share(node):
            if node.id in found:
                continue
            found.add(node.id)
        if is_term(node):
            stack.extend(children(node))
    return found


# --------------------------------------------------------------------------------------
# The chains of the counted-work checks
# --------------------------------------------------------------------------------------


def _product_chain(n: int) -> Term:
    """``let y1 = sin x * x in ... let yn = sin y(n-1) * y(n-1) in sumOuter yn``."""
    body: Term = SumOuter(Var(f"y{n}"))
    for k in range(n, 0, -1):
        prev = Var(f"y{k - 1}" if k > 1 else "x")
        body = Let(f"y{k}", Op("mul", (Op("sin", (prev,)), prev)), body)
    return body


def _sum_chain(n: int) -> Term:
    """``let y1 = x + x in ... let yn = y(n-1) + y(n-1) in sumOuter yn``."""
    body: Term = SumOuter(Var(f"y{n}"))
    for k in range(n, 0, -1):
        prev = Var(f"y{k - 1}" if k > 1 else "x")
        body = Let(f"y{k}", Op("add", (prev, prev)), body)
    return body


CHAIN_X = np.array([0.5, -1.25, 1.0])


@dataclass(frozen=True)
class Chain:
    """A let chain whose every value is used twice: ``sin y * y`` or ``y + y``."""

    kind: str
    n: int

    @property
    def term(self) -> Term:
        return (_product_chain if self.kind == "product" else _sum_chain)(self.n)

    @property
    def text(self) -> str:
        step = "sin y{k} * y{k}" if self.kind == "product" else "y{k} + y{k}"
        first, last = step.format(k=0).replace("y0", "x"), step.format(k=self.n - 1)
        return f"let y1 = {first} in ... let y{self.n} = {last} in sumOuter y{self.n}"

    def expected(self, dt: float) -> tuple[Array, Array]:
        y, slope = CHAIN_X.copy(), np.ones(3)
        for _ in range(self.n):
            if self.kind == "product":
                slope = slope * (np.cos(y) * y + np.sin(y))
                y = np.sin(y) * y
            else:
                slope, y = 2 * slope, 2 * y
        return np.asarray(y.sum()), dt * slope


def _chains(measure: Callable[[Chain], int], what: str, hint: str) -> str:
    """``measure`` on both chains at n = 6 and 12, which must grow about linearly; what
    was measured, as text."""
    said = []
    for kind in ("product", "sum"):
        counts = {n: measure(Chain(kind, n)) for n in (6, 12)}
        _growth(counts, f"{what} on a let chain", hint, Chain(kind, 12).text)
        said.append(f"{counts[6]} → {counts[12]}")
    return " and ".join(said)


def _growth(counts: Mapping[int, int], what: str, hint: str, program: str) -> None:
    (small, a), (large, b) = sorted(counts.items())
    if b > GROWTH * max(a, 1):
        raise Mismatch(f"{what}: {a} at n = {small}, {b} at n = {large}: it grows faster "
                       "than the program (doubling n should about double it)", hint=hint,
                       program=program)


def _invariants(root: Any, hint: str, program: str) -> None:
    """Invariants 1 and 2 of §2.5 on a Delta: one node per id, inner ids smaller."""
    highest: dict[int, int] = {}
    owner: dict[int, int] = {}
    for node in _delta_postorder(root):
        inner = max((highest[id(k)] for k in dl.delta_children(node)), default=0)
        if isinstance(node, dl.Share):
            if owner.setdefault(node.id, id(node)) != id(node):
                raise Mismatch(f"two different Delta nodes are Share {node.id}",
                               hint=hint, program=program)
            if inner >= node.id:
                raise Mismatch(f"Share {node.id} holds Share {inner}, whose id is not smaller",
                               hint=hint, program=program)
            inner = node.id
        highest[id(node)] = inner


def _delta_postorder(root: Any) -> list[Any]:
    order: list[Any] = []
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in dl.delta_children(node))
    return order


# --------------------------------------------------------------------------------------
# d.forward_terms
# --------------------------------------------------------------------------------------


@task("d.forward_terms", names=("op_delta", "forward_terms"),
      title="Fig. 14 on terms: primal terms and symbolic Deltas", hint=FORWARD_HINT)
def check_forward_terms(ns: Mapping[str, Any]) -> str:
    ref, evaluate = _reference(), _evaluate()
    dual, forward_terms = ns["Dual"], ns["forward_terms"]
    programs = [*_programs(41, 30), *_programs(47, 20, ARITHMETIC)]
    problems: list[Any] = [*_elementwise(), *_transpositions(), *programs]
    for case in problems:
        shapes, hint = _shapes(case), _hint(case.term, FORWARD_HINT)
        y = forward_terms(case.term, {n: dual(Var(n), dl.Input(n), s) for n, s in shapes.items()})
        if not is_term(getattr(y, "primal", None)):
            raise Mismatch(f"the primal of your dual term is not a term: {_brief(y)}",
                           hint=hint, program=case.text)
        if not dl.is_delta(getattr(y, "delta", None)):
            raise Mismatch(f"a float program's dual term has the Delta {y.delta!r}",
                           hint=hint, program=case.text)
        value = case.value()
        if tuple(y.shape) != value.shape:
            raise Mismatch(f"your dual term's shape is {list(y.shape)}, the value's "
                           f"{list(value.shape)}", hint=hint, program=case.text)
        for node in dl.nodes(y.delta):
            for p in ref.primal_values(node):
                if not is_term(p):
                    raise Mismatch(f"a {type(node).__name__} of your Delta holds "
                                   f"{_brief(p)}, not a term", hint=hint, program=case.text)
        _invariants(y.delta, INVARIANT_HINT, case.text)
        try:
            eq6 = ref.extract(ref.Dual(y.primal, y.delta, tuple(y.shape)), shapes)
            shared, outs = _reference_gradients(ref, eq6.delta, shapes)
            cotangent = case.cotangent()
            env = _run([*eq6.bindings, *shared], {**case.env, DT: cotangent}, hint, case.text)
            primal = evaluate(eq6.primal, env)
        except Mismatch:
            raise
        except Exception as error:
            raise Mismatch(f"the reference stages could not differentiate your dual term "
                           f"({type(error).__name__}: {error})", hint=hint,
                           program=case.text) from error
        expect_close(value, primal, what="the value of your primal term differs from dualarr's",
                     hint=hint, program=case.text, inputs=case.env)
        _expect_gradients(case, env, outs, cotangent, hint, "through your Delta")
    def calls(chain: Chain) -> int:
        env = {"x": dual(Var("x"), dl.Input("x"), (3,))}
        return count_calls(lambda: forward_terms(chain.term, env))[1]

    counted = _chains(calls, "your forward pass's Python calls", LET_HINT)
    return (f"{len(ELEMENTWISE)} elementwise operations (ties included), cyclic "
            f"transpositions and {len(programs)} "
            "random build1-free programs: your primal terms evaluate to dualarr's values and "
            "your Deltas (reversed by the reference) give its gradients; let chains of 6 "
            f"and 12 take {counted} calls")


# --------------------------------------------------------------------------------------
# d.extract
# --------------------------------------------------------------------------------------


def _check_eq6(eq6: Any, shapes: Shapes, hint: str, program: str) -> set[str]:
    """The form of Eq. 6: bindings in dependency order, the primal a variable or a
    constant, every Scale factor a variable or a constant, every other term the Delta
    holds closed over the bindings (and its own index function's variables)."""
    try:
        bindings, primal, delta = eq6
    except (TypeError, ValueError) as error:
        raise Mismatch(f"extract returned {type(eq6).__name__}, not (bindings, primal, delta)",
                       hint=hint, program=program) from error
    scope = _check_bindings(bindings, set(shapes), "the primal bindings", hint, program)
    if not isinstance(primal, Var | Const):
        raise Mismatch(f"the primal result is not a variable or a constant (Eq. 6): "
                       f"{_brief(primal)}", hint=hint, program=program)
    _check_closed(primal, scope, "the primal result", hint, program)
    if not dl.is_delta(delta):
        raise Mismatch(f"the Delta is {delta!r}", hint=hint, program=program)
    for node in dl.nodes(delta):
        if isinstance(node, dl.Scale) and not isinstance(node.factor, Var | Const):
            raise Mismatch(f"a Scale factor is the computation {_brief(node.factor)}, not a "
                           "variable (exception 2 of §7.1)", hint=hint, program=program)
        own = set(node.vars) if isinstance(node, dl.Gather | dl.Scatter) else set()
        values = [node.factor] if isinstance(node, dl.Scale) else []
        if isinstance(node, dl.Index | dl.Gather | dl.Scatter):
            values += list(node.index)
        for value in values:
            _check_closed(value, scope | own, f"a term of the Delta's {type(node).__name__}",
                          hint, program)
    return scope


@task("d.extract", names=("extract",), title="the separated form of Eq. 6",
      hint=EXTRACT_HINT)
def check_extract(ns: Mapping[str, Any]) -> str:
    ref, evaluate = _reference(), _evaluate()
    dual, extract = ns["Dual"], ns["extract"]

    def extracted(term: Term, shapes: Shapes) -> Any:
        env = {n: ref.Dual(Var(n), dl.Input(n), s) for n, s in shapes.items()}
        y = ref.forward_terms(term, env)
        return extract(dual(y.primal, y.delta, tuple(y.shape)), tuple(shapes))

    programs = _programs(42, 40)
    for case in programs:
        shapes, hint = _shapes(case), _hint(case.term, EXTRACT_HINT)
        eq6 = extracted(case.term, shapes)
        _check_eq6(eq6, shapes, hint, case.text)
        bindings, primal, delta = eq6
        shared, outs = _reference_gradients(ref, delta, shapes)
        cotangent = case.cotangent()
        env = _run([*bindings, *shared], {**case.env, DT: cotangent}, hint, case.text)
        expect_close(case.value(), evaluate(primal, env),
                     what="the value of the primal bindings and result differs from dualarr's",
                     hint=hint, program=case.text, inputs=case.env)
        _expect_gradients(case, env, outs, cotangent, hint, "through your extracted Delta")
    def size(chain: Chain) -> int:
        bindings, primal, _ = extracted(chain.term, {"x": (3,)})
        return _size([primal, *(bound for _, bound in bindings)])

    counted = _chains(size, "the size of your primal bindings", SHARING_HINT)
    return (f"{len(programs)} random programs: your Eq. 6 binds in dependency order, its "
            "Scale factors are variables, its values and gradients are dualarr's; let "
            f"chains of 6 and 12 bind {counted} nodes")


# --------------------------------------------------------------------------------------
# d.reverse_symbolic
# --------------------------------------------------------------------------------------


@task("d.reverse_symbolic", names=("reverse_symbolic",),
      title="the symbolic reverse pass with share (Fig. 19)", hint=REVERSE_HINT)
def check_reverse_symbolic(ns: Mapping[str, Any]) -> str:
    ref = _reference()
    reverse_symbolic = ns["reverse_symbolic"]
    programs = _programs(43, 40)
    problems: list[Any] = [*_transpositions(), *programs]
    for case in problems:
        shapes, hint = _shapes(case), _hint(case.term, REVERSE_HINT)
        eq6 = ref.delta_program(case.term, shapes)
        grads = reverse_symbolic(eq6.delta, Var(DT))
        if not isinstance(grads, Mapping) or not set(grads) <= set(shapes):
            raise Mismatch(f"reverse_symbolic returned {_brief(grads)}, not a dict from input "
                           f"names ({', '.join(shapes)}) to terms", hint=hint,
                           program=case.text)
        roots = [grads.get(n, _zeros(s)) for n, s in shapes.items()]
        if _size(roots) >= SIZE_LIMIT:
            raise Mismatch(f"your gradient terms have over {SIZE_LIMIT} nodes",
                           hint=DUPLICATION_HINT, program=case.text)
        shared, outs = _unshare(roots)
        scope = set(shapes) | {DT} | {name for name, _ in eq6.bindings}
        scope = _check_bindings(shared, scope, "your shared cotangents", hint, case.text)
        for name, g in zip(shapes, outs, strict=True):
            _check_closed(g, scope, f"the gradient of {name}", hint, case.text)
        cotangent = case.cotangent()
        env = _run([*eq6.bindings, *shared], {**case.env, DT: cotangent}, hint, case.text)
        _expect_gradients(case, env, outs, cotangent, hint, "your gradient terms")
    def reversed_chain(chain: Chain) -> tuple[Any, int]:
        delta = ref.delta_program(chain.term, {"x": (3,)}).delta
        return count_calls(lambda: reverse_symbolic(delta, Var(DT)))

    calls = _chains(lambda c: reversed_chain(c)[1], "your reverse pass's Python calls",
                    REVERSE_LINEAR_HINT)
    sizes = _chains(lambda c: _size(list(reversed_chain(c)[0].values())),
                    "the size of your gradient terms (each share counted once)",
                    DUPLICATION_HINT)
    return (f"{len(programs)} random programs and cyclic transpositions: your gradient "
            "terms, their shares bound "
            "lowest id first, give dualarr's gradients; on let chains of 6 and 12 they have "
            f"{sizes} nodes ({calls} calls)")


# --------------------------------------------------------------------------------------
# d.share_to_let
# --------------------------------------------------------------------------------------


def _doubling_shares(n: int, share_term: Callable[[Term], Term]) -> Term:
    s = share_term(Var("x"))
    for _ in range(n - 1):
        s = share_term(Op("add", (s, s)))
    return s


@task("d.share_to_let", names=("share_to_let",), title="share→let, linear (Fig. 20, §7.4)",
      hint=SHARE_TO_LET_HINT)
def check_share_to_let(ns: Mapping[str, Any]) -> str:
    ref = _reference()
    share_to_let, share_class = ns["share_to_let"], ns["Share"]
    programs = _programs(44, 40)
    shares = 0
    for case in programs:
        shapes, hint = _shapes(case), _hint(case.term, SHARE_TO_LET_HINT)
        eq6 = ref.delta_program(case.term, shapes)
        grads = ref.reverse_symbolic(eq6.delta, Var(DT))
        roots = _converted([grads.get(n, _zeros(s)) for n, s in shapes.items()], share_class)
        ids = _share_ids(roots)
        shares += len(ids)
        result = share_to_let(roots)
        try:
            shared, outs = result
            shared, outs = list(shared), list(outs)
        except (TypeError, ValueError) as error:
            raise Mismatch(f"share_to_let returned {_brief(result)}, not (bindings, roots)",
                           hint=hint, program=case.text) from error
        if len(outs) != len(roots):
            raise Mismatch(f"{len(roots)} roots went in, {len(outs)} came out", hint=hint,
                           program=case.text)
        if len(shared) != len(ids):
            raise Mismatch(f"the gradients hold {len(ids)} distinct shares, and you made "
                           f"{len(shared)} bindings", hint=hint, program=case.text)
        scope = set(shapes) | {DT} | {name for name, _ in eq6.bindings}
        scope = _check_bindings(shared, scope, "your cotangent bindings", hint, case.text)
        for name, g in zip(shapes, outs, strict=True):
            _check_closed(g, scope, f"the gradient of {name}", hint, case.text)
        cotangent = case.cotangent()
        env = _run([*eq6.bindings, *shared], {**case.env, DT: cotangent}, hint, case.text)
        _expect_gradients(case, env, outs, cotangent, hint, "after your share→let")
    for kind in ("product", "sum"):
        chain = Chain(kind, 12)
        eq6 = ref.delta_program(chain.term, {"x": (3,)})
        grads = ref.reverse_symbolic(eq6.delta, Var(DT))
        shared, (out,) = share_to_let(_converted([grads["x"]], share_class))
        env = _run([*eq6.bindings, *shared], {"x": CHAIN_X, DT: np.asarray(0.75)},
                   SHARE_TO_LET_HINT, chain.text)
        expect_close(chain.expected(0.75)[1], _evaluate()(out, env),
                     what="the gradient after your share→let", hint=SHARE_TO_LET_HINT,
                     program=chain.text, inputs={"x": CHAIN_X})
    calls = {}
    evaluate = _evaluate()
    x = np.array([1.0, -0.5])
    for n in (4, 8, 16):
        root = _doubling_shares(n, ns["share_term"])
        result, calls[n] = count_calls(partial(share_to_let, [root]))
        shared, (out,) = result
        text = f"s1 = share x, s(k+1) = share (s(k) + s(k)), up to s{n}"
        if n > 4:
            _growth({n // 2: calls[n // 2], n: calls[n]},
                    "your share→let's Python calls on a doubling chain of shares",
                    LINEAR_SHARE_HINT, text)
        if len(shared) != n:
            raise Mismatch(f"{n} shares went in, {len(shared)} bindings came out",
                           hint=SHARE_TO_LET_HINT, program=text)
        env = _run(list(shared), {"x": x}, SHARE_TO_LET_HINT, text)
        expect_close(2.0 ** (n - 1) * x, evaluate(out, env), what=f"the value of s{n}",
                     hint=SHARE_TO_LET_HINT, program=text, inputs={"x": x})
    return (f"{len(programs)} random gradients ({shares} shares) and two let chains: your "
            "bindings come in dependency order and give the gradients; doubling chains of "
            f"4, 8 and 16 shares take {calls[4]}, {calls[8]} and {calls[16]} calls (linear, "
            "§7.4)")


# --------------------------------------------------------------------------------------
# d.gradient_program
# --------------------------------------------------------------------------------------


def _bot_outputs(seed: int, count: int) -> list[tuple[Case, Term]]:
    """Random programs with build1 and the reference bot's output of each (none until
    stage b's solution notebook exists)."""
    if not notebook_path("b", "reference").exists():
        return []
    bot = stage("b", "reference").bot
    found = sorted(cases(seed, count), key=lambda c: len(show(c.term)))
    return [(case, bot(case.term)) for case in found]


def _check_program(p: Any, case: Case, term: Term, hint: str) -> None:
    shapes = _shapes(case)
    for field in ("inputs", "cotangent", "bindings", "primal", "gradients"):
        if not hasattr(p, field):
            raise Mismatch(f"gradient_program returned {type(p).__name__}, without "
                           f"{field}: not a GradientProgram", hint=hint, program=case.text)
    if tuple(p.inputs) != tuple(shapes):
        raise Mismatch(f"the program's inputs are {list(p.inputs)}, expected "
                       f"{list(shapes)}", hint=hint, program=case.text)
    if not isinstance(p.cotangent, str) or p.cotangent in shapes:
        raise Mismatch(f"the cotangent's name {p.cotangent!r} is not a new name", hint=hint,
                       program=case.text)
    if len(p.gradients) != len(shapes):
        raise Mismatch(f"{len(p.gradients)} gradients for {len(shapes)} inputs", hint=hint,
                       program=case.text)
    scope = _check_bindings(p.bindings, {*shapes, p.cotangent}, "the program's bindings",
                            hint, case.text)
    _check_closed(p.primal, scope, "the primal result", hint, case.text)
    for name, g in zip(shapes, p.gradients, strict=True):
        _check_closed(g, scope, f"the gradient of {name}", hint, case.text)
    cotangent = case.cotangent()
    env = _run(list(p.bindings), {**case.env, p.cotangent: cotangent}, hint, case.text)
    expect_close(case.value(), _evaluate()(p.primal, env),
                 what="the program's primal result differs from dualarr's value", hint=hint,
                 program=case.text, inputs=case.env)
    _expect_gradients(case, env, list(p.gradients), cotangent, hint, "the program")


@task("d.gradient_program", names=("gradient_program",),
      title="the gradient program of Fig. 21", hint=PROGRAM_HINT)
def check_gradient_program(ns: Mapping[str, Any]) -> str:
    gradient_program = ns["gradient_program"]
    programs = _programs(45, 30)
    for case in programs:
        hint = _hint(case.term, PROGRAM_HINT)
        _check_program(gradient_program(case.term, _shapes(case)), case, case.term, hint)
    vectorised = _bot_outputs(46, 15)
    for case, term in vectorised:
        hint = _hint(term, PROGRAM_HINT)
        p = gradient_program(term, _shapes(case))
        _check_program(p, case, term, f"{hint}; the program is the reference bot's output "
                       f"{_brief(term, 300)}")
    def program(chain: Chain) -> tuple[Any, int]:
        p, calls = count_calls(lambda: gradient_program(chain.term, {"x": (3,)}))
        return p, calls

    calls = _chains(lambda c: program(c)[1], "your gradient_program's Python calls", LET_HINT)

    def size(chain: Chain) -> int:
        p = program(chain)[0]
        size = _size([p.primal, *p.gradients, *(bound for _, bound in p.bindings)])
        if size < SIZE_LIMIT:
            env = _run(list(p.bindings), {"x": CHAIN_X, p.cotangent: np.asarray(0.75)},
                       PROGRAM_HINT, chain.text)
            value, grad = chain.expected(0.75)
            expect_close(value, _evaluate()(p.primal, env), what="the chain's value",
                         hint=PROGRAM_HINT, program=chain.text, inputs={"x": CHAIN_X})
            expect_close(grad, _evaluate()(p.gradients[0], env), what="the chain's gradient",
                         hint=PROGRAM_HINT, program=chain.text, inputs={"x": CHAIN_X})
        return size

    sizes = _chains(size, "the size of your gradient program", DUPLICATION_HINT)
    bot = f" and {len(vectorised)} bot outputs" if vectorised else ""
    return (f"{len(programs)} random build1-free programs{bot}: your gradient programs are "
            "closed, share-free and give dualarr's values and gradients; on let chains of 6 "
            f"and 12 they have {sizes} nodes ({calls} calls: linear, §7.2)")

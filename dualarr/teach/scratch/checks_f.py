"""Checks of stage (f): transposition as a linear language (the rules of
``book/rules.md §6``).

Each task is graded on its own: the Deltas come from stage d's reference (its forward
pass on terms and the extraction to Eq. 6), the let-forms and transposed programs that a
later task consumes from this stage's reference, rebuilt with the learner's own classes
(:func:`converted`: a notebook's ``DLet`` is not the reference notebook's ``DLet``).  The
learner's transposed programs are run by :func:`run_linear`, an evaluator of the linear
language on arrays that reads constructs by their class names.  What a program means is
checked with the adjoint identity ``⟨T[u](c), x⟩ = ⟨c, u(x)⟩`` and with dualarr's vjp.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from types import ModuleType
from typing import Any

import numpy as np

from . import delta as D
from .grading import Mismatch, count_calls, expect_close, task
from .notebooks import references, stage
from .oracle import Case, cases
from .terms import (
    Const,
    Gather,
    GradientProgram,
    Index,
    Op,
    Replicate,
    Scatter,
    SumOuter,
    Term,
    Transpose,
    Var,
    constructs_in,
    int_const,
    is_term,
    show,
)

Array = np.ndarray
Shapes = dict[str, tuple[int, ...]]

NO_BUILD1 = frozenset({
    "op", "cond", "let", "index", "gather", "scatter", "sumOuter", "replicate", "tr",
    "fromList", "iota",
})  # fmt: skip
"""The constructs of the random programs here: stage d's input is build1-free."""

LINEAR_NAMES = (
    "Cot", "LZero", "LPlus", "LScale", "LLet", "Onehot", "Delete", "Lookup", "LIndex",
    "LGather", "LScatter", "LSumOuter", "LReplicate", "LTranspose",
)  # fmt: skip
"""The constructs of the linear target language (given in the notebook)."""

LET_FORM_NAMES = ("DVar", "DLet")

LET_FORM_HINT = (
    "Fig. 20 on Deltas (§2.5): each Share id becomes one DLet named share_name(id), bound "
    "once however often it is used, the lowest id outermost, every use a DVar; remember "
    "what an id became so a shared node is walked once"
)
TRANSPOSE_HINT = (
    "the transposition rules T[·] of transpose-issue.txt (book/rules.md §6): check the rule "
    "of each construct the Delta uses"
)
LOWER_HINT = (
    "run the linear program on terms: c is a term, a DMap a dict of terms; an array "
    "cotangent bound by a linear let is emitted as one binding and used as its variable "
    "(§7.3's sharing point); a missing entry is a zero cotangent"
)
WRAPPER_HINT = (
    "Fig. 21 by transposition: stage d's Eq. 6 (primal bindings, primal, Delta), then "
    "let-form, T[·] and the lowering with the cotangent's variable; primal bindings first, "
    "a zero gradient of the input's shape for an input the Delta never reaches"
)

RULE_HINTS = {
    "Zero": "T[Zero] = 0: a zero tangent passes no cotangent to anything",
    "Input": "T[Input n]: the cotangent c is recorded under the input's name (a one-entry "
             "DMap)",
    "Add": "T[Add u1 u2]: both summands receive the same cotangent c, and their DMaps are "
           "added",
    "Scale": "T[Scale y u]: the cotangent is scaled by the same primal y before it goes "
             "on to u",
    "DLet": "T[Let n u1 u2]: transpose the body first (a DMap); the entry of n goes "
            "through u1 once (Lookup), the other entries pass on (Delete), and the two "
            "DMaps are added; T[Var n] records c under n",
    "Index": "T[Index u ix sha]: the adjoint of reading at ix puts c at ix in zeros of "
             "the array's shape (a scatter whose index function binds no variable); "
             "out-of-range writes are dropped",
    "Gather": "T[Gather sh u f sha]: a gather's cotangent goes back through a scatter of "
              "the same index function into the gathered array's shape, where reads of "
              "one element add up",
    "Scatter": "T[Scatter sh u f sha]: a scatter's cotangent is read back through a "
               "gather of the same index function over the scattered array's index space",
    "SumOuter": "T[SumOuter u k]: every row of the summed array receives c (the adjoint "
                "of a sum is a copy)",
    "Replicate": "T[Replicate k u]: the copies' cotangents are added up (the adjoint of "
                 "a copy is a sum)",
    "Transpose": "T[Transpose p u]: transpose c back, by the inverse permutation of p "
                 "(not p itself, unless p is its own inverse)",
    "FromList": "T[FromList us]: component q receives element q of c, and the components' "
                "DMaps are added",
}


# --------------------------------------------------------------------------------------
# The reference stages, and rebuilding reference objects with the learner's classes
# --------------------------------------------------------------------------------------


def reference_f() -> ModuleType:
    return stage("f", "reference")


def evaluator() -> Callable[[Term, dict[str, Array]], Array]:
    evaluate: Callable[[Term, dict[str, Array]], Array] = stage("a", "reference").evaluate
    return evaluate


def delta_program(t: Term, shapes: Shapes) -> tuple[tuple[tuple[str, Term], ...], Term, Any]:
    """Eq. 6 of ``t`` by stage d's reference: primal bindings, primal, symbolic Delta."""
    bindings, primal, delta = stage("d", "reference").delta_program(t, dict(shapes))
    return tuple(bindings), primal, delta


def converted(value: Any, ns: Mapping[str, Any]) -> Any:
    """``value`` (a let-form Delta or a linear term of the reference notebook) rebuilt with
    the classes of the namespace ``ns``; Delta nodes and terms keep their classes."""
    if isinstance(value, tuple):
        return tuple(converted(v, ns) for v in value)
    if not dataclasses.is_dataclass(value) or isinstance(value, type) or is_term(value):
        return value
    kids = {f.name: converted(getattr(value, f.name), ns) for f in dataclasses.fields(value)}
    name = type(value).__name__
    if name in (*LINEAR_NAMES, *LET_FORM_NAMES) and not isinstance(value, D.DELTA_TYPES):
        return ns[name](**kids)
    return dataclasses.replace(value, **kids)




# --------------------------------------------------------------------------------------
# Meanings on arrays: a Delta forwards a tangent, a linear term transposes a cotangent
# --------------------------------------------------------------------------------------


def primal_env(bindings: Sequence[tuple[str, Term]], env: Mapping[str, Array]
               ) -> dict[str, Array]:
    """The inputs and the values of Eq. 6's primal bindings."""
    evaluate = evaluator()
    scope = dict(env)
    for name, bound in bindings:
        scope[name] = evaluate(bound, scope)
    return scope


def jvp(u: Any, tangents: Mapping[str, Array], env: Mapping[str, Array]) -> Array:
    """The tangent that the Delta ``u`` (a DAG with ``Share``, or in let-form) gives for
    the inputs' ``tangents``; primal fields are evaluated in ``env``."""
    evaluate = evaluator()
    memo: dict[int, Array] = {}
    scope: dict[str, Array] = {}

    def on(u: Any, value: Array, make: Callable[[Term], Term]) -> Array:
        return np.asarray(evaluate(make(Const(value)), dict(env)))

    def go(u: Any) -> Array:
        match type(u).__name__:
            case "Zero":
                return np.zeros(u.shape)
            case "Input":
                return np.asarray(tangents[u.name])
            case "DVar":
                return scope[u.name]
            case "DLet":
                scope[u.name] = go(u.bound)
                return go(u.body)
            case "Share":
                if u.id not in memo:
                    memo[u.id] = go(u.d)
                return memo[u.id]
            case "Scale":
                return np.asarray(evaluate(u.factor, dict(env)) * go(u.d))
            case "Add":
                return np.asarray(go(u.left) + go(u.right))
            case "Index":
                return on(u, go(u.d), lambda c: Index(c, u.index))
            case "Gather":
                return on(u, go(u.d), lambda c: Gather(u.shape, c, u.vars, u.index))
            case "Scatter":
                return on(u, go(u.d), lambda c: Scatter(u.shape, c, u.vars, u.index))
            case "SumOuter":
                return np.asarray(go(u.d).sum(axis=0))
            case "Replicate":
                return np.stack([go(u.d)] * u.count)
            case "Transpose":
                value = go(u.d)
                return np.transpose(value, (*u.perm, *range(len(u.perm), value.ndim)))
            case "FromList":
                return np.stack([go(v) for v in u.elems])
        raise TypeError(f"not a Delta: {u!r}")

    return go(u)


class Ill(Exception):
    """A linear term that is not well formed (an unknown construct, a type error)."""


def run_linear(t: Any, c: Array, env: Mapping[str, Array]) -> dict[str, Array]:
    """The DMap that the linear term ``t`` gives for the cotangent ``c`` (constructs read
    by their class names; a missing entry is ``None``, the zero cotangent)."""
    evaluate = evaluator()

    def on(value: Any, make: Callable[[Term], Term]) -> Any:
        if value is None:
            return None
        return np.asarray(evaluate(make(Const(np.asarray(value))), dict(env)))

    def dmap(value: Any, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise Ill(f"{what} of a {type(value).__name__}, where a DMap is needed")
        return value

    def go(u: Any, c: Any) -> Any:
        kind = type(u).__name__
        match kind:
            case "Cot":
                return c
            case "LZero":
                return {}
            case "LPlus":
                total = dict(dmap(go(u.left, c), "LPlus"))
                for name, value in dmap(go(u.right, c), "LPlus").items():
                    if total.get(name) is None:
                        total[name] = value
                    elif value is not None:
                        total[name] = np.asarray(total[name] + value)
                return total
            case "LScale":
                value = go(u.arg, c)
                return None if value is None else np.asarray(evaluate(u.factor, dict(env))
                                                              * value)
            case "LLet":
                value = go(u.bound, c)
                return {} if value is None else go(u.body, value)
            case "Onehot":
                return {u.name: go(u.arg, c)}
            case "Delete":
                return {k: v for k, v in dmap(go(u.arg, c), "Delete").items() if k != u.name}
            case "Lookup":
                return dmap(go(u.arg, c), "Lookup").get(u.name)
            case "LIndex":
                return on(go(u.arg, c), lambda a: Index(a, u.index))
            case "LGather":
                return on(go(u.arg, c), lambda a: Gather(u.shape, a, u.vars, u.index))
            case "LScatter":
                return on(go(u.arg, c), lambda a: Scatter(u.shape, a, u.vars, u.index))
            case "LSumOuter":
                return on(go(u.arg, c), SumOuter)
            case "LReplicate":
                return on(go(u.arg, c), lambda a: Replicate(u.count, a))
            case "LTranspose":
                return on(go(u.arg, c), lambda a: Transpose(u.perm, a))
        raise Ill(f"a {kind}, which is not a construct of the linear language "
                  f"({', '.join(LINEAR_NAMES)})")

    try:
        result = go(t, c)
    except (TypeError, ValueError, AttributeError, KeyError) as error:
        raise Ill(f"it does not run: {type(error).__name__}: {error}") from error
    return dmap(result, "the whole program")


def size(value: Any) -> int:
    """The number of nodes of a let-form Delta, a linear term or a term."""
    if isinstance(value, tuple):
        return sum(size(v) for v in value)
    if isinstance(value, np.ndarray) or not dataclasses.is_dataclass(value):
        return 0
    return 1 + sum(size(getattr(value, f.name)) for f in dataclasses.fields(value))


# --------------------------------------------------------------------------------------
# Deltas to check on: one per rule, random programs', and a doubling chain
# --------------------------------------------------------------------------------------


def _floats(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    return np.asarray(rng.integers(-16, 17, size=shape) / 8.0)


def rule_deltas() -> list[tuple[str, Any, Shapes]]:
    """Small Deltas (DAGs) over inputs, each exercising one rule: (rule, Delta, shapes)."""
    rng = np.random.default_rng(61)
    x, y = D.Input("x"), D.Input("y")
    i = Var("i'f")
    k3, k2 = Const(_floats(rng, (3,))), Const(_floats(rng, (2,)))
    shared = D.Share(1, D.Scale(k3, x))
    twice = D.Share(2, D.Add(shared, D.Scale(Const(_floats(rng, (3,))), shared)))
    m32: Shapes = {"x": (3, 2)}
    wrap = Op("rem", (Op("add", (i, int_const(1))), int_const(3)))
    return [
        ("Zero", D.Zero((3,)), {"x": (3,)}),
        ("Input", x, {"x": (2, 3)}),
        ("Add", D.Add(x, D.Add(y, x)), {"x": (3,), "y": (3,)}),
        ("Scale", D.Scale(k3, x), {"x": (3,)}),
        ("DLet", D.Share(3, D.Add(twice, shared)), {"x": (3,)}),
        ("Index", D.Index(x, (int_const(1),), (3, 2)), m32),
        ("Index", D.Add(D.Index(x, (int_const(-1),), (3, 2)),
                        D.Index(x, (int_const(2),), (3, 2))), m32),
        ("Index", D.Index(x, (int_const(2), int_const(1)), (3, 2)), m32),
        ("Gather", D.Gather((4,), x, (i.name,), (wrap,), (3, 2)), m32),
        ("Gather", D.Gather((3,), x, (i.name,), (Op("sub", (i, int_const(1))),), (3, 2)), m32),
        ("Scatter", D.Scatter((2,), x, (i.name,), (Op("quot", (i, int_const(2))),), (3, 2)),
         m32),
        ("SumOuter", D.SumOuter(x, 3), m32),
        ("Replicate", D.Replicate(2, x), {"x": (3,)}),
        ("Transpose", D.Transpose((1, 2, 0), x), {"x": (2, 3, 4)}),
        ("Transpose", D.Transpose((1, 0), x), {"x": (2, 3, 4)}),
        ("FromList", D.FromList((y, D.Scale(k2, x), D.Zero((2,)))), {"x": (2,), "y": (2,)}),
    ]


def chain_delta(n: int) -> D.Delta:
    """``s_k = Share k (Add s_{k-1} (Scale y s_{k-1}))`` over ``Input x``, ``n`` links: a
    DAG of ``n`` nodes whose tree has ``2^n`` leaves."""
    d: D.Delta = D.Input("x")
    for k in range(1, n + 1):
        d = D.Share(k, D.Add(d, D.Scale(Const(np.asarray([0.5, -1.0])), d)))
    return d


def program_cases(seed: int, count: int) -> list[tuple[Case, Shapes, Any]]:
    """Random build1-free programs with their shapes and Eq. 6 (stage d's reference)."""
    found = []
    for case in sorted(cases(seed, count, constructs=NO_BUILD1), key=lambda c: len(show(c.term))):
        shapes = {n: tuple(case.env[n].shape) for n in case.inputs}
        found.append((case, shapes, delta_program(case.term, shapes)))
    return found


def _share_ids(root: Any) -> set[int]:
    return {u.id for u in D.nodes(root) if isinstance(u, D.Share)}


def _walk(u: Any) -> Iterator[Any]:
    yield u
    if dataclasses.is_dataclass(u) and not is_term(u):
        for f in dataclasses.fields(u):
            value = getattr(u, f.name)
            for v in value if isinstance(value, tuple) else (value,):
                if dataclasses.is_dataclass(v) and not is_term(v):
                    yield from _walk(v)


def _inner(p: Any) -> tuple[list[Any], Any]:
    """The ``DLet`` s around the body of a let-form, outermost first, and the body."""
    lets = []
    while type(p).__name__ == "DLet":
        lets.append(p)
        p = p.body
    return lets, p


def _random_tangents(shapes: Shapes, seed: int) -> dict[str, Array]:
    rng = np.random.default_rng(seed)
    return {n: _floats(rng, s) for n, s in shapes.items()}


# --------------------------------------------------------------------------------------
# The tasks
# --------------------------------------------------------------------------------------


@task("f.let_form", names=("let_form",), title="the Delta DAG as nested lets (Fig. 20)",
      hint=LET_FORM_HINT)
def check_let_form(ns: Mapping[str, Any]) -> str:
    let_form = ns["let_form"]
    share_name = reference_f().share_name
    programs = program_cases(71, 50)
    for case, shapes, (bindings, _, delta) in programs:
        got = let_form(delta)
        shown = "let_form(Delta of Eq. 6)"
        lets, body = _inner(got)
        left = [type(u).__name__ for u in _walk(got) if isinstance(u, D.Share)]
        if left:
            raise Mismatch(f"{shown} still has {len(left)} Share node(s)", hint=LET_FORM_HINT,
                           program=case.text)
        ids = sorted(_share_ids(delta))
        names = [u.name for u in lets]
        if names != [share_name(i) for i in ids]:
            raise Mismatch(f"{shown}: lets of {names} around the body, expected one let per "
                           f"Share, lowest id outermost: {[share_name(i) for i in ids]}",
                           hint=LET_FORM_HINT, program=case.text)
        inner = [u for u in _walk(body) if type(u).__name__ == "DLet"]
        if inner:
            raise Mismatch(f"{shown}: a DLet ({inner[0].name}) inside the body; every let "
                           "goes around it", hint=LET_FORM_HINT, program=case.text)
        env = primal_env(bindings, case.env)
        tangents = _random_tangents(shapes, case.number)
        try:
            obtained = jvp(got, tangents, env)
        except KeyError as missing:
            raise Mismatch(f"{shown}: the variable {missing} is used outside its let",
                           hint=LET_FORM_HINT, program=case.text) from None
        expect_close(jvp(delta, tangents, env), obtained,
                     what=f"{shown}: its tangent differs from the Delta's, for random input "
                          "tangents",
                     hint=LET_FORM_HINT, program=case.text, inputs=tangents)
    (_, small), (_, large) = (count_calls(partial(let_form, chain_delta(n))) for n in (6, 12))
    if large > 3 * small + 40:
        raise Mismatch(
            f"let_form made {small} calls for a chain of 6 shared nodes and {large} for 12: "
            "more than linear (§2.5: each Share is walked once, however often it is used)",
            hint=LET_FORM_HINT, program="s_k = Share k (Add s_{k-1} (Scale y s_{k-1}))")
    return (f"{len(programs)} Deltas of random programs (stage d's Eq. 6): one let per Share, "
            f"lowest id outermost, same tangent; linear work on a doubling chain ({small} and "
            f"{large} calls for 6 and 12 links)")


def _adjoint(transposed: Any, u: Any, shapes: Shapes, env: Mapping[str, Array],
             cotangent: Array | None, seed: int, what: str, hint: str, program: str,
             expected: Callable[[Array], Mapping[str, Array]]) -> None:
    """The adjoint identity ``⟨T[u](c), x⟩ = ⟨c, u(x)⟩`` of ``transposed`` against the
    Delta ``u`` on random tangents ``x``, then its DMap entry by entry against
    ``expected(c)``."""
    tangents = _random_tangents(shapes, seed)
    forward = jvp(u, tangents, env)
    c = _floats(np.random.default_rng(seed + 1), forward.shape) if cotangent is None else cotangent
    try:
        dmap = run_linear(transposed, c, env)
    except Ill as error:
        raise Mismatch(f"{what}: {error}", hint=hint, program=program) from None
    extra = sorted(set(dmap) - set(shapes))
    if extra:
        raise Mismatch(f"{what}: the DMap still has entries for {extra}, which are not inputs",
                       hint=hint, program=program)
    got = {n: np.zeros(s) if dmap.get(n) is None else np.asarray(dmap[n])
           for n, s in shapes.items()}
    for n, s in shapes.items():
        if got[n].shape != s:
            raise Mismatch(f"{what}: the cotangent of {n} has shape {list(got[n].shape)}, "
                           f"expected {list(s)}", hint=hint, program=program)
    lhs = float(np.sum(c * forward))
    rhs = float(sum(np.sum(got[n] * tangents[n]) for n in shapes))
    identity = f"⟨c, u(x)⟩ = {lhs:.6g} but ⟨T[u](c), x⟩ = {rhs:.6g}"
    given = expected(c)
    want = {n: np.zeros(s) if given.get(n) is None else np.asarray(given[n])
            for n, s in shapes.items()}
    if not np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9):
        for n in shapes:
            expect_close(want[n], got[n], what=f"{what}: the adjoint identity fails, "
                         f"{identity}; the cotangent of {n}", hint=hint, program=program,
                         inputs={"c": c, **{f"x ({n})": v for n, v in tangents.items()}})
        raise Mismatch(f"{what}: the adjoint identity fails, {identity}", hint=hint,
                       program=program, inputs={"c": c})
    for n in shapes:
        expect_close(want[n], got[n], what=f"{what}: the cotangent of {n}", hint=hint,
                     program=program, inputs={"c": c})


@task("f.transpose", names=("transpose",), title="the transposition rules T[·]",
      hint=TRANSPOSE_HINT)
def check_transpose(ns: Mapping[str, Any]) -> str:
    transpose = ns["transpose"]
    ref = reference_f()
    for rule, delta, shapes in rule_deltas():
        reference = ref.transpose(ref.let_form(delta))
        u = converted(ref.let_form(delta), ns)
        program = "u = " + ref.show_let_form(ref.let_form(delta)).replace("\n", " ")
        _adjoint(transpose(u), u, shapes, {}, None, len(program), f"T[u], the rule for {rule}",
                 f"{RULE_HINTS[rule]} ({TRANSPOSE_HINT})", program,
                 partial(run_linear, reference, env={}))
    programs = program_cases(72, 50)
    for case, shapes, (bindings, _, delta) in programs:
        u = converted(ref.let_form(delta), ns)
        env = primal_env(bindings, case.env)
        ct = case.cotangent()
        used = ", ".join(sorted({type(v).__name__ for v in _walk(u)} - {"DVar"}))
        _adjoint(transpose(u), u, shapes, env, ct, case.number,
                 "T[Delta of Eq. 6] against dualarr's vjp",
                 f"{TRANSPOSE_HINT}; this Delta uses {used}", case.text,
                 case.vjp)
    small, large = (size(transpose(converted(ref.let_form(chain_delta(n)), ns)))
                    for n in (6, 12))
    if large > 3 * small:
        raise Mismatch(
            f"T[·] of a chain of 6 lets has {small} nodes, of 12 lets {large}: more than "
            "linear; each rule transposes each subterm once (a let's bound once, however "
            "often its variable is used)", hint=RULE_HINTS["DLet"],
            program="s_k = Share k (Add s_{k-1} (Scale y s_{k-1}))")
    return (f"the adjoint identity for each of the {len(RULE_HINTS)} rules, and T[·] of "
            f"{len(programs)} random programs' Deltas (stage d's Eq. 6) gives dualarr's vjp; "
            f"linear size on a doubling chain ({small} and {large} nodes for 6 and 12 links)")


def _lower_cases(ns: Mapping[str, Any]) -> list[tuple[str, Any, Array, Shapes]]:
    """(construct, linear term over ``Cot()``, cotangent, the DMap's shapes)."""
    L = {name: ns[name] for name in LINEAR_NAMES}
    c = L["Cot"]()
    rng = np.random.default_rng(73)
    k = Const(_floats(rng, (3,)))
    i = Var("i'f")

    def one(arg: Any) -> Any:
        return L["Onehot"]("x", arg)

    split = L["LLet"](L["LPlus"](L["Onehot"]("δ1", c), one(c)),
                      L["LPlus"](L["Delete"]("δ1", c),
                                 L["LLet"](L["Lookup"]("δ1", c), L["Onehot"]("y", c))))
    missing = L["LLet"](one(c), L["LPlus"](L["Delete"]("δ1", c),
                                           L["LLet"](L["Lookup"]("δ1", c),
                                                     L["Onehot"]("y", c))))
    x3: Shapes = {"x": (3,)}
    xy3: Shapes = {"x": (3,), "y": (3,)}
    return [
        ("Cot and Onehot", one(c), _floats(rng, (3,)), x3),
        ("LZero", L["LPlus"](L["LZero"](), one(c)), _floats(rng, (3,)), x3),
        ("LPlus", L["LPlus"](one(c), L["LPlus"](one(L["LScale"](k, c)), L["Onehot"]("y", c))),
         _floats(rng, (3,)), xy3),
        ("LScale", one(L["LScale"](k, c)), _floats(rng, (3,)), x3),
        ("LLet", L["LLet"](L["LScale"](k, c), L["LPlus"](one(c), one(L["LScale"](k, c)))),
         _floats(rng, (3,)), x3),
        ("Delete and Lookup", split, _floats(rng, (3,)), xy3),
        ("Lookup of a missing entry", missing, _floats(rng, (3,)), xy3),
        ("LIndex", one(L["LIndex"](c, (int_const(1),))), _floats(rng, (2, 3)), x3),
        ("LGather", one(L["LGather"]((3,), c, (i.name,), (Op("sub", (int_const(2), i)),))),
         _floats(rng, (3,)), x3),
        ("LScatter", one(L["LScatter"]((3,), c, (i.name,), (Op("quot", (i, int_const(2))),))),
         _floats(rng, (4,)), x3),
        ("LSumOuter", one(L["LSumOuter"](c)), _floats(rng, (2, 3)), x3),
        ("LReplicate", one(L["LReplicate"](3, c)), _floats(rng, ()), x3),
        ("LTranspose", one(L["LTranspose"]((1, 0), c)), _floats(rng, (3, 1)), {"x": (1, 3)}),
    ]


def _lowered(lower: Callable[..., Any], t: Any, c: Array, env: Mapping[str, Array],
             shapes: Shapes, what: str, hint: str, program: str) -> tuple[dict[str, Array], int]:
    """Run the learner's ``lower`` on ``t`` with the cotangent variable ``dt``; the values
    of the DMap's entries (by stage a's reference evaluator), and the output's size."""
    evaluate = evaluator()
    bindings: list[tuple[str, Term]] = []
    got = lower(t, Var("dt'f"), bindings)
    if not isinstance(got, dict):
        raise Mismatch(f"{what}: lower gave a {type(got).__name__}, expected a DMap (dict)",
                       hint=hint, program=program)
    names = [n for n, _ in bindings]
    if len(set(names)) != len(names) or set(names) & {*env, "dt'f"}:
        raise Mismatch(f"{what}: the bindings' names {names} are not fresh", hint=hint,
                       program=program)
    scope = {**env, "dt'f": c}
    for name, bound in bindings:
        if not is_term(bound) or "Let" in constructs_in(bound):
            raise Mismatch(f"{what}: binding {name} = {bound!r} is not a let-free term",
                           hint=hint, program=program)
        try:
            scope[name] = evaluate(bound, scope)
        except KeyError as missing:
            raise Mismatch(f"{what}: binding {name} = {show(bound)} reads {missing} before "
                           "it is bound", hint=hint, program=program) from None
    values = {}
    for name, term in got.items():
        if term is None:
            continue
        if not is_term(term):
            raise Mismatch(f"{what}: the entry of {name} is a {type(term).__name__}, expected "
                           "a term", hint=hint, program=program)
        values[name] = np.asarray(evaluate(term, scope))
    extra = sorted(set(values) - set(shapes))
    if extra:
        raise Mismatch(f"{what}: entries for {extra}, expected only {sorted(shapes)}",
                       hint=hint, program=program)
    return values, size(tuple(b for _, b in bindings)) + size(tuple(got.values()))


@task("f.lower", names=("lower",), title="running the linear program on terms",
      hint=LOWER_HINT)
def check_lower(ns: Mapping[str, Any]) -> str:
    lower = ns["lower"]
    ref = reference_f()
    for construct, t, c, shapes in _lower_cases(ns):
        program = ref.show_linear(converted(t, vars(ref))).replace("\n", " ")
        hint = f"the construct {construct}: {LOWER_HINT}"
        want = run_linear(t, c, {})
        got, _ = _lowered(lower, t, c, {}, shapes, f"lower on {construct}", hint, program)
        for n in shapes:
            expected = np.zeros(shapes[n]) if want.get(n) is None else want[n]
            expect_close(expected, got.get(n, np.zeros(shapes[n])),
                         what=f"lower on {construct}: the entry of {n}", hint=hint,
                         program=program, inputs={"dt": c})
    programs = program_cases(74, 50)
    for case, shapes, (bindings, _, delta) in programs:
        t = converted(ref.transpose(ref.let_form(delta)), ns)
        env = primal_env(bindings, case.env)
        ct = case.cotangent()
        got, _ = _lowered(lower, t, ct, env, shapes, "lower(T[Delta of Eq. 6])", LOWER_HINT,
                          case.text)
        want = case.vjp(ct)
        for n in shapes:
            expect_close(want[n], got.get(n, np.zeros(shapes[n])),
                         what=f"lower(T[Delta of Eq. 6]): the gradient of {n} differs from "
                              "dualarr's vjp", hint=LOWER_HINT, program=case.text,
                         inputs={**case.env, "dt": ct})
    chain = {n: converted(ref.transpose(ref.let_form(chain_delta(n))), ns) for n in (6, 12)}
    ct = np.asarray([1.0, 0.5])
    sizes = []
    for t in chain.values():
        (_, grown), calls = count_calls(partial(
            _lowered, lower, t, ct, {}, {"x": (2,)}, "lower on a doubling chain", LOWER_HINT,
            "chain"))
        sizes.append((grown, calls))
    (small, small_calls), (large, large_calls) = sizes
    if large > 3 * small or large_calls > 3 * small_calls + 40:
        raise Mismatch(
            f"the lowered program of a chain of 6 shared tangents has {small} nodes "
            f"({small_calls} calls), of 12: {large} ({large_calls} calls): more than linear; "
            "a cotangent used twice must be bound once, not copied",
            hint=LOWER_HINT, program="s_k = Share k (Add s_{k-1} (Scale y s_{k-1}))")
    return (f"each of the {len(_lower_cases(ns))} constructs, and the transposed Deltas of "
            f"{len(programs)} random programs lowered to terms give dualarr's vjp; linear size "
            f"on a doubling chain ({small} and {large} nodes for 6 and 12 links)")


def _run_program(p: GradientProgram, env: Mapping[str, Array]
                 ) -> tuple[Array, list[Array]]:
    scope = primal_env(p.bindings, env)
    evaluate = evaluator()
    return evaluate(p.primal, scope), [evaluate(g, scope) for g in p.gradients]


@task("f.gradient_program_by_transposition", names=("gradient_program_by_transposition",),
      title="the gradient program by transposition (Fig. 21)", hint=WRAPPER_HINT)
def check_gradient_program(ns: Mapping[str, Any]) -> str:
    wrapper = ns["gradient_program_by_transposition"]
    d = stage("d", "reference")
    programs = sorted(cases(75, 50, constructs=NO_BUILD1), key=lambda c: len(show(c.term)))
    with references([wrapper], ("d",)):
        for case in programs:
            shapes = {n: tuple(case.env[n].shape) for n in case.inputs}
            shown = f"gradient_program_by_transposition(program, {shapes})"
            got = wrapper(case.term, shapes)
            if not isinstance(got, GradientProgram):
                raise Mismatch(f"{shown}: a {type(got).__name__}, expected a GradientProgram",
                               hint=WRAPPER_HINT, program=case.text)
            if tuple(got.inputs) != tuple(case.inputs) or len(got.gradients) != len(shapes):
                raise Mismatch(f"{shown}: gradients for {list(got.inputs)}, expected one for "
                               f"each of {list(case.inputs)}", hint=WRAPPER_HINT,
                               program=case.text)
            ct = case.cotangent()
            try:
                primal, gradients = _run_program(got, {**case.env, got.cotangent: ct})
            except KeyError as missing:
                raise Mismatch(f"{shown}: the program reads {missing} before it is bound",
                               hint=WRAPPER_HINT, program=case.text) from None
            expect_close(case.value(), primal, what=f"{shown}: the primal differs from "
                         "dualarr's value", hint=WRAPPER_HINT, program=case.text,
                         inputs=case.env)
            want = case.vjp(ct)
            reverse = d.gradient_program(case.term, shapes)
            _, by_fig19 = _run_program(reverse, {**case.env, reverse.cotangent: ct})
            for k, n in enumerate(case.inputs):
                expect_close(want[n], gradients[k], what=f"{shown}: the gradient of {n} "
                             "differs from dualarr's vjp", hint=WRAPPER_HINT,
                             program=case.text, inputs={**case.env, "cotangent": ct})
                expect_close(by_fig19[k], gradients[k], what=f"{shown}: the gradient of {n} "
                             "differs from stage d's (Fig. 19)", hint=WRAPPER_HINT,
                             program=case.text, inputs={**case.env, "cotangent": ct})
    return (f"{len(programs)} random build1-free programs: the primal is dualarr's value, and "
            "every gradient equals dualarr's vjp and stage d's gradient program (Fig. 19)")

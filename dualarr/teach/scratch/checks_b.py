"""Checks of stage (b): the bulk-operation transform (§5, Figs. 9–11) and Theorem 5.1.

Every rule of Figs. 9, 10 and 11 is exercised by a small program made for it (a
*template*), in an order in which the rules a template also needs below its head were
tested by the templates before: the first template that fails names its rule in the
hint.  Then the learner's code runs on dualarr's random programs.  Values are computed
by the reference evaluator of stage (a) (the transformed term) and by dualarr (the
source program); a transformed term must also be in the normal form of Theorem 5.1,
and the ``build1`` rules must work in bulk: their output may not grow with ``k``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..scratch_support import FIG7_CONSTRUCTS
from .grading import Mismatch, expect_close, learner_error_lines, task
from .notebooks import stage
from .oracle import Case, cases
from .terms import (
    Build1,
    Cond,
    Const,
    FromList,
    Gather,
    Index,
    Iota,
    Let,
    Op,
    Replicate,
    Scatter,
    SumOuter,
    Term,
    Transpose,
    Var,
    float_const,
    int_const,
    is_term,
    map_children,
    show,
    subst,
    subterms,
)

Array = np.ndarray
Evaluate = Callable[[Term, dict[str, Array]], Array]

NORMAL_ARRAYS = (Var, Const, FromList, Scatter)
"""What ``index`` may be applied to in the normal form (Theorem 5.1, property 2)."""

ENV: dict[str, Array] = {
    "x": np.array([0.5, -1.0, 1.5, 2.0]),
    "y": np.arange(-5, 7).reshape(3, 4) / 4.0,
    "s": np.asarray(0.75),
}
"""The inputs of every template: a vector, a matrix and a scalar."""

X, Y, S, I = Var("x"), Var("y"), Var("s"), Var("i")  # noqa: E741

NORMAL_FORM_HINT = (
    "Theorem 5.1: (1) no build1 anywhere, and (2) every index, those inside the index "
    "functions of gather and scatter included, is of a variable, a constant, a fromList "
    "or a scatter"
)
INDEX_HINT = (
    "Fig. 10: push the index one level down per rule until it meets a normal form; "
    "§5.2: a read outside an array is 0, also after the rewrite"
)
BUILD1_HINT = (
    "Fig. 9 pushes build1 down one construct at a time; Fig. 11 turns build1 of index "
    "into a gather (only the index mentions i) or, after Fig. 10 pushed the index, the "
    "diagonal of the vectorised array; b.index_rule must pass first"
)
BOT_HINT = (
    "§5: bottom-up, children first (map_children), so an inner build1 is gone before "
    "the outer one; a Build1 goes to build1_rule, an Index to index_rule (outside every "
    "build1 too); b.index_rule and b.build1_rule must pass first"
)
BULK_HINT = (
    "§5: the bot turns the loop into bulk operations over all of 0 … k-1 at once; a "
    "term that grows with k unrolls the build1 instead"
)


def c(n: int) -> Const:
    return int_const(n)


def op(name: str, *args: Term) -> Op:
    return Op(name, args)


def at(a: Term, *ix: Term | int) -> Index:
    return Index(a, tuple(c(j) if isinstance(j, int) else j for j in ix))


def _evaluate() -> Evaluate:
    evaluate: Evaluate = stage("a", "reference").evaluate
    return evaluate


def brief(t: Any, limit: int = 300) -> str:
    """A term in the paper's notation, cut short."""
    text = show(t) if is_term(t) else repr(t)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def size(t: Term) -> int:
    return sum(1 for _ in subterms(t))


def offence(t: Term, build1_allowed: bool = False) -> str | None:
    """What breaks Theorem 5.1 in ``t`` (``None``: nothing)."""
    for u in subterms(t):
        if isinstance(u, Build1) and not build1_allowed:
            return f"a build1 is left (property 1): {brief(u, 120)}"
        if isinstance(u, Index) and not isinstance(u.array, NORMAL_ARRAYS):
            return (f"an index of {type(u.array).__name__} is left (property 2): "
                    f"{brief(u, 120)}")
    return None


@contextmanager
def attributed(rule: str, hint: str, program: str) -> Iterator[None]:
    """Report an exception raised while ``rule`` is checked (by the learner's code, or by
    the evaluator on the learner's term) as a :class:`Mismatch` that names the rule."""
    try:
        yield
    except (Mismatch, NotImplementedError, RecursionError):
        raise
    except Exception as error:
        lines = learner_error_lines(error)
        raise Mismatch(f"{rule}: " + "; ".join(" ".join(ln.split()) for ln in lines),
                       hint=hint, program=program) from error


def value_of(result: Term, env: Mapping[str, Array], evaluate: Evaluate, what: str,
             hint: str, program: str) -> Array:
    """The value of the learner's term (the reference evaluator); a term it cannot
    evaluate (a free variable, shapes that do not fit) is reported as such."""
    try:
        return evaluate(result, dict(env))
    except (KeyError, ValueError, TypeError, IndexError, np.exceptions.AxisError) as error:
        raise Mismatch(f"{what}: the term returned cannot be evaluated "
                       f"({type(error).__name__}: {error})", hint=hint, program=program,
                       obtained=brief(result)) from error


def expect_term(result: Any, what: str, hint: str, program: str) -> Term:
    if not is_term(result):
        raise Mismatch(f"{what}: returned a {type(result).__name__}, expected a term",
                       hint=hint, program=program)
    return result


def expect_normal(result: Term, what: str, hint: str, program: str,
                  build1_allowed: bool = False) -> None:
    found = offence(result, build1_allowed)
    if found is not None:
        raise Mismatch(f"{what}: {found}", hint=hint, program=program,
                       obtained=brief(result))


def push_indices(t: Term, index_rule: Callable[[Term, tuple[Term, ...]], Term]) -> Term:
    """``t`` with every ``Index`` pushed by ``index_rule``, bottom-up (no build1 rule)."""
    t = map_children(t, lambda u: push_indices(u, index_rule))
    return index_rule(t.array, t.index) if isinstance(t, Index) else t


def below_index(t: Term, kind: type) -> bool:
    """Whether some ``Index`` of ``t`` still has a ``kind`` node in its array."""
    return any(isinstance(u, Index) and any(isinstance(w, kind) for w in subterms(u.array))
               for u in subterms(t))


# --------------------------------------------------------------------------------------
# b.normal_form
# --------------------------------------------------------------------------------------


def _normal_form_examples() -> list[tuple[str, Term]]:
    made: list[tuple[str, Term]] = [
        ("an index of a variable", at(Y, 1, 2)),
        ("an index of a constant", at(Const(np.arange(4.0)), 2)),
        ("an index of a fromList", at(FromList((X, X)), 1, 0)),
        ("an index of a scatter", at(Scatter((2,), X, ("p",), (op("rem", Var("p"), c(2)),)), 1)),
        ("an index of an index", at(at(Y, 1), 2)),
        ("an index of an operation", at(op("sin", X), 1)),
        ("an index of iota inside a gather's index function",
         Gather((2,), X, ("p",), (at(Iota(4), Var("p")),))),
        ("an index of a gather inside a scatter's index function",
         Scatter((3,), X, ("p",), (at(Gather((4,), Iota(4), ("q",), (Var("q"),)), Var("p")),))),
        ("a build1", Build1(3, "i", at(X, I))),
        ("a build1 inside a let", Let("u", Build1(4, "i", at(X, I)), op("sin", Var("u")))),
        ("a gather and a transposition", Transpose((1, 0), Gather((2, 3), Y, ("p", "q"),
                                                                 (Var("q"), Var("p"))))),
    ]
    normal = cases(41, 25, constructs=FIG7_CONSTRUCTS - {"build1", "index", "iota"})
    other = cases(42, 25, outer_build1=True)
    for case in [*normal, *other]:
        made.extend((f"a subterm of {case.text}", u) for u in subterms(case.term))
    return made


@task("b.normal_form", names=("is_normal_form",), title="Theorem 5.1, as a check",
      hint=NORMAL_FORM_HINT)
def check_normal_form(ns: Mapping[str, Any]) -> str:
    is_normal_form = ns["is_normal_form"]
    examples = _normal_form_examples()
    counts = {True: 0, False: 0}
    for where, term in examples:
        want = offence(term) is None
        got = is_normal_form(term)
        counts[want] += 1
        if not isinstance(got, bool | np.bool_) or bool(got) != want:
            raise Mismatch(
                f"is_normal_form: {got!r} for {where}, expected {want}"
                + ("" if want else f" ({offence(term)})"),
                hint=NORMAL_FORM_HINT, program=brief(term), expected=want, obtained=got,
            )
    return (f"{len(examples)} terms ({counts[True]} in normal form, {counts[False]} not) "
            "judged as Theorem 5.1 says")


# --------------------------------------------------------------------------------------
# b.index_rule: Fig. 10
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexTemplate:
    """``index array ix`` for each ``ix``: a rule of Fig. 10 at the head."""

    rule: str
    hint: str
    array: Term
    indices: tuple[tuple[Term | int, ...], ...]
    pushed_past: type | None = None  # the construct the index must go past (no ``stop``)
    keep: bool = False  # a normal form: left as it is


def _index_templates() -> list[IndexTemplate]:
    p, q = Var("p"), Var("q")
    j = SumOuter(Replicate(2, c(1)))  # 2, as a term
    mat = Const(np.arange(12.0).reshape(3, 4) / 8.0)
    guard = "use the given guarded: the rewritten read must still be 0 out of range"
    gather = Gather((2, 3), Y, ("p", "q"), (q, op("add", p, c(1))))
    return [
        IndexTemplate("Fig. 10, index with no components",
                      "Fig. 10: index e [] is e itself", op("sin", X), ((),)),
        IndexTemplate("Theorem 5.1, index of a variable",
                      "Theorem 5.1: Fig. 10 has no rule for an index of a variable: it is a "
                      "normal form, leave it as it is", Y, ((1,), (2, 3), (3, 0)), keep=True),
        IndexTemplate("Theorem 5.1, index of a constant",
                      "Theorem 5.1: an index of a constant is a normal form, leave it",
                      mat, ((2, 1), (-1,)), keep=True),
        IndexTemplate("Theorem 5.1, index of a fromList",
                      "Theorem 5.1: an index of a fromList is a normal form, leave it",
                      FromList((X, op("neg", X))), ((1, 2), (0,), (2, 0)), keep=True),
        IndexTemplate("Theorem 5.1, index of a scatter",
                      "Theorem 5.1: an index of a scatter is a normal form, leave it",
                      Scatter((3,), X, ("p",), (op("rem", p, c(3)),)), ((1,), (3,)), keep=True),
        IndexTemplate("Fig. 10, index of an index",
                      "Fig. 10: two indices in a row are one longer index (then go on "
                      "pushing)", at(Y, 1), ((2,), (5,)), Index),
        IndexTemplate("Fig. 10, index of an elementwise operation",
                      "Fig. 10: an elementwise operation in ZERO_PRESERVING commutes with "
                      "indexing: the index goes into every argument",
                      op("mul", Y, op("sin", Y)), ((2, 1), (3, 1), (1,)), Op),
        IndexTemplate("Fig. 10 and §5.2, index of cos (op(0) ≠ 0)",
                      "§5.2: out of range the read is 0 but cos 0 = 1: for an operation "
                      "outside ZERO_PRESERVING, stop at a normal form (the given stop)",
                      op("cos", Y), ((2, 1), (3, 1), (-1,), (1,))),
        IndexTemplate("Fig. 10, index of let",
                      "Fig. 10: the index goes into the body of the let; the bound term "
                      "stays", Let("u", op("sin", Y), op("mul", Var("u"), Y)),
                      ((1,), (1, 2), (4,)), Let),
        IndexTemplate("Fig. 10, index of cond",
                      "Fig. 10: the index goes into both branches of the cond",
                      Cond(op("gt", S, float_const(0.0)), X, op("neg", X)), ((2,), (7,)), Cond),
        IndexTemplate("Fig. 10, index of cond (the second branch)",
                      "Fig. 10: the index goes into both branches of the cond",
                      Cond(op("lt", S, float_const(0.0)), X, op("neg", X)), ((2,), (7,)), Cond),
        IndexTemplate("Fig. 10, index of replicate",
                      "Fig. 10: every row of replicate k e is e: drop the first component; "
                      + guard, Replicate(3, X), ((1, 2), (4, 2), (-1, 0), (1,), (3,)),
                      Replicate),
        IndexTemplate("Fig. 10, index of replicate (nested)",
                      "Fig. 10: every row of replicate k e is e; " + guard,
                      Replicate(2, Replicate(3, S)), ((1, 2), (1, 3), (2, 1)), Replicate),
        IndexTemplate("Fig. 10, index of build1",
                      "Fig. 10: build1 k (λi. e) at [j, …] is e with i := j, at the rest of "
                      "the index; " + guard,
                      Build1(3, "i2", op("add", at(Y, Var("i2")), Replicate(4, S))),
                      ((1, 2), (3, 0), (-1, 0), (1,), (5,), (2, 9)), Build1),
        IndexTemplate("Fig. 10, index of sumOuter",
                      "Fig. 10 needs shape here, which our terms lack: stop at a normal form "
                      "(the given stop)", SumOuter(Y), ((2,), (4,))),
        IndexTemplate("Fig. 10, index of tr (a full index)",
                      "Fig. 10: a full index of tr p e reads e with the components put back: "
                      "component q of the index is dimension p[q] of e",
                      Transpose((1, 0), Y), ((3, 2), (1, 0), (4, 0)), Transpose),
        IndexTemplate("Fig. 10, index of tr (a full index, rank 3)",
                      "Fig. 10: a full index of tr p e reads e with the components put back: "
                      "component q of the index is dimension p[q] of e",
                      Transpose((2, 0, 1), Replicate(2, Y)), ((1, 0, 1), (3, 1, 0)), Transpose),
        IndexTemplate("Fig. 10, index of tr (a partial index over dimensions left in place)",
                      "Fig. 10: when p starts with 0, 1, … as far as the index reaches, index "
                      "e and transpose what is left", Transpose((0, 2, 1), Replicate(2, Y)),
                      ((1,), (2,)), Transpose),
        IndexTemplate("Fig. 10, index of tr (a partial index)",
                      "Fig. 10 needs shape for this partial index: stop at a normal form",
                      Transpose((1, 0), Y), ((2,), (5,))),
        IndexTemplate("Fig. 10, index of gather (a full index)",
                      "Fig. 10: index j of gather sh e (λis. f) reads e at f with is := j; "
                      "out of sh the read is 0 even where f lands inside e: " + guard,
                      gather, ((1, 2), (2, 0), (0, 3), (-1, 1)), Gather),
        IndexTemplate("Fig. 10, index of gather (a longer index)",
                      "Fig. 10: the components past sh index what e[f] leaves; " + guard,
                      Gather((2,), Y, ("p",), (op("sub", c(2), p),)), ((1, 3), (2, 1)),
                      Gather),
        IndexTemplate("Fig. 10, index of gather (a partial index)",
                      "Fig. 10: fewer components than sh has dimensions give a smaller gather "
                      "over the dimensions left; " + guard, gather, ((1,), (2,)), Gather),
        IndexTemplate("Fig. 10, index of iota",
                      "Fig. 10: iota n at j is j where 0 <= j < n, and 0 elsewhere",
                      Iota(4), ((2,), (4,), (-1,)), Iota),
        IndexTemplate("Fig. 10, index of iota (index arithmetic)",
                      "Fig. 10: iota n at j is j where 0 <= j < n, and 0 elsewhere",
                      Iota(3), ((op("sub", c(1), j),), (op("add", j, c(2)),))),
    ]


def _check_index_template(template: IndexTemplate, index_rule: Any, evaluate: Evaluate) -> None:
    for raw in template.indices:
        ix = tuple(c(j) if isinstance(j, int) else j for j in raw)
        source = Index(template.array, ix)
        with attributed(template.rule, template.hint, show(source)):
            _check_index_once(template, ix, source, index_rule, evaluate)


def _check_index_once(template: IndexTemplate, ix: tuple[Term, ...], source: Index,
                      index_rule: Any, evaluate: Evaluate) -> None:
    program = show(source)
    what = f"{template.rule}: index_rule({show(template.array)}, {list(map(show, ix))})"
    result = expect_term(index_rule(template.array, ix), what, template.hint, program)
    expect_normal(result, what, template.hint, program, build1_allowed=True)
    got = value_of(result, ENV, evaluate, what, template.hint, program)
    expect_close(evaluate(source, dict(ENV)), got,
                 what=f"{what} = {brief(result)}: the value differs",
                 hint=template.hint, program=program, inputs=ENV)
    if template.keep and not (isinstance(result, Index)
                              and type(result.array) is type(template.array)):
        raise Mismatch(f"{what}: rewritten to {brief(result)}", hint=template.hint,
                       program=program)
    if template.pushed_past is not None and below_index(result, template.pushed_past):
        raise Mismatch(
            f"{what}: the index did not go past the {template.pushed_past.__name__} "
            f"({brief(result)})", hint=template.hint, program=program)


@task("b.index_rule", names=("index_rule",), title="pushing index down (Fig. 10)",
      hint=INDEX_HINT)
def check_index_rule(ns: Mapping[str, Any]) -> str:
    index_rule = ns["index_rule"]
    evaluate = _evaluate()
    templates = _index_templates()
    for template in templates:
        _check_index_template(template, index_rule, evaluate)
    programs = sorted(cases(21, 40), key=lambda case: len(show(case.term)))
    for case in programs:
        what = "every index pushed with your index_rule"
        with attributed(what, INDEX_HINT, case.text):
            pushed = push_indices(case.term, index_rule)
            expect_normal(pushed, what, INDEX_HINT, case.text, build1_allowed=True)
            got = value_of(pushed, case.env, evaluate, what, INDEX_HINT, case.text)
            expect_close(case.value(), got,
                         what=f"{what} ({brief(pushed)}): the value differs from dualarr's",
                         hint=INDEX_HINT, program=case.text, inputs=case.env)
    return (f"{len(templates)} rules of Fig. 10, each on its own program, and "
            f"{len(programs)} random programs: same values, every index in normal form")


# --------------------------------------------------------------------------------------
# b.build1_rule: Figs. 9 and 11
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Build1Template:
    """``build1 k (λi. body)`` for each body: a rule of Fig. 9 or 11 at the head."""

    rule: str
    hint: str
    bodies: tuple[Term, ...]
    head: Callable[[Term], bool] | None = None  # what the rule's result must look like
    head_says: str = ""


def _one_gather(t: Term) -> bool:
    return isinstance(t, Gather) and isinstance(t.array, Var | Const)


def _pushed(t: Term) -> bool:
    return not isinstance(t, Gather)


def _build1_templates() -> list[Build1Template]:
    p, u, w = Var("p"), Var("u"), Var("w")
    scaled = op("mul", X, Replicate(4, at(X, I)))  # a vector that mentions i
    diagonal = ("Fig. 11: an index of a normal form that mentions i: vectorise the array "
                "itself and read its diagonal, row i' at the index with i := i'")
    return [
        Build1Template("Fig. 11, index of a variable (the key rule)",
                       "Fig. 11: when only the index mentions i, the loop is one gather over "
                       "k whose index function is the index with i renamed",
                       (at(X, I), at(Y, op("sub", c(2), I)), at(X, op("add", I, c(2))),
                        at(Y, c(1), I)), _one_gather, "one gather of the array itself"),
        Build1Template("Fig. 11, index of a constant (the key rule)",
                       "Fig. 11: when only the index mentions i, the loop is one gather",
                       (at(Const(np.arange(5.0)), op("add", I, c(1))),), _one_gather,
                       "one gather of the array itself"),
        Build1Template("Fig. 9, a body without i",
                       "Fig. 9: a body that does not mention i is the same in every row",
                       (op("mul", at(X, c(1)), S), S, Y)),
        Build1Template("Fig. 9, the variable i", "Fig. 9: the body i builds iota k", (I,)),
        Build1Template("Fig. 9, an elementwise operation",
                       "Fig. 9: build1 of an operation is the operation on the built arguments",
                       (op("sin", at(X, I)), op("add", at(X, I), op("mul", S, at(Y, c(0), I))),
                        op("mul", I, I))),
        Build1Template("Fig. 9, replicate",
                       "Fig. 9: replicate n of the built array has n outermost; move k back "
                       "to the front with a transposition",
                       (Replicate(2, at(X, I)), Replicate(3, op("mul", at(Y, I), X)))),
        Build1Template("Fig. 9, let",
                       "Fig. 9: build the bound array once for every i under a fresh name x', "
                       "and let the body read its row i (x := x'[i]); a bound term without i "
                       "stays outside",
                       (Let("u", op("mul", at(X, I), float_const(2.0)), op("add", u, at(X, I))),
                        Let("u", op("sin", X), at(u, I)),
                        Let("u", Replicate(2, at(X, I)), op("sub", at(u, c(1)), at(u, c(0)))))),
        Build1Template("Fig. 9, sumOuter",
                       "Fig. 9: the built array has k outermost; the sum is over the next "
                       "dimension, so transpose before summing",
                       (SumOuter(scaled), SumOuter(at(Y, I)))),
        Build1Template("Fig. 9, tr",
                       "Fig. 9: k stays in front, and the permutation moves one place along",
                       (Transpose((1, 0), op("mul", Y, Replicate(3, Replicate(4, at(X, I))))),)),
        Build1Template("Fig. 9, fromList",
                       "Fig. 9: stack the built elements, then bring k to the front",
                       (FromList((at(X, I), S, at(X, op("sub", c(3), I)))),)),
        Build1Template("Fig. 9, gather",
                       "Fig. 9: one more outer dimension over a fresh variable i', which also "
                       "picks row i' of the built array; i in the index function becomes i'",
                       (Gather((2,), X, ("p",), (op("add", p, I),)),
                        Gather((2,), scaled, ("p",), (op("sub", c(3), p),)),
                        Gather((2,), Y, ("p",), (op("rem", op("add", p, I), c(3)),)))),
        Build1Template("Fig. 9, scatter",
                       "Fig. 9: one more outer dimension over a fresh variable i', which also "
                       "picks row i' of the built array; i in the index function becomes i'",
                       (Scatter((3,), scaled, ("p",), (op("rem", op("add", p, I), c(3)),)),
                        Scatter((2,), X, ("p",), (op("rem", op("add", p, I), c(2)),)))),
        Build1Template("Fig. 11, index of a fromList that mentions i", diagonal,
                       (at(FromList((scaled, X)), op("rem", I, c(2)), I),
                        at(FromList((at(X, I), S)), op("rem", I, c(2))))),
        Build1Template("Fig. 11, index of a scatter that mentions i", diagonal,
                       (at(Scatter((4,), scaled, ("p",), (op("sub", c(3), p),)), I),)),
        Build1Template("Fig. 9, cond",
                       "Fig. 9: the strict cond is an index of fromList [a, b] at cond c 0 1, "
                       "which Fig. 11 vectorises",
                       (Cond(op("lt", I, c(2)), at(X, I), at(X, op("sub", I, c(2)))),
                        Cond(op("gt", at(X, I), float_const(0.0)), at(X, I), S),
                        Cond(op("lt", I, c(1)), S, op("neg", S)))),
        Build1Template("Fig. 11 after Fig. 10, an indexed array that mentions i",
                       "Fig. 11: when the array mentions i, push the index into it first "
                       "(index_rule), then vectorise what comes out",
                       (at(op("sin", scaled), op("sub", c(3), I)),
                        at(Let("w", scaled, op("tanh", w)), I),
                        at(Replicate(2, scaled), c(1), I)), _pushed,
                       "the index pushed into the array, not a diagonal of all of it"),
        Build1Template("Fig. 11 after Fig. 10, an indexed cos that mentions i",
                       "Fig. 11: push the index into the array first (index_rule, which stops "
                       "at cos), then vectorise what comes out",
                       (at(op("cos", scaled), op("add", I, c(1))),)),
    ]


def _check_build1(build1_rule: Any, k: int, body: Term, rule: str, hint: str,
                  evaluate: Evaluate, expected: Array | None = None,
                  inputs: Mapping[str, Array] = ENV, program: str | None = None) -> Term:
    source = Build1(k, "i", body)
    shown = program or show(source)
    what = f"{rule}: build1_rule({k}, 'i', {brief(body, 120)})"
    with attributed(rule, hint, shown):
        result = expect_term(build1_rule(k, "i", body), what, hint, shown)
        expect_normal(result, what, hint, shown)
        want = evaluate(source, dict(inputs)) if expected is None else expected
        got = value_of(result, inputs, evaluate, what, hint, shown)
        expect_close(want, got,
                     what=f"{what} = {brief(result)}: the value differs", hint=hint,
                     program=shown, inputs=inputs)
    return result


@task("b.build1_rule", names=("build1_rule", "build1_index_rule"),
      title="pushing build1 down (Figs. 9 and 11)", hint=BUILD1_HINT)
def check_build1_rule(ns: Mapping[str, Any]) -> str:
    build1_rule = ns["build1_rule"]
    evaluate = _evaluate()
    templates = _build1_templates()
    for template in templates:
        for body in template.bodies:
            small, large = (_check_build1(build1_rule, k, body, template.rule, template.hint,
                                          evaluate) for k in (3, 7))
            if size(small) != size(large):
                raise Mismatch(
                    f"{template.rule}: build1_rule gives {size(small)} nodes for k = 3 and "
                    f"{size(large)} for k = 7", hint=BULK_HINT,
                    program=show(Build1(3, "i", body)), obtained=brief(large))
            if template.head is not None and not template.head(small):
                raise Mismatch(f"{template.rule}: expected {template.head_says}, got "
                               f"{brief(small)}", hint=template.hint,
                               program=show(Build1(3, "i", body)))
    programs = sorted(cases(22, 40, constructs=FIG7_CONSTRUCTS - {"build1"}, outer_build1=True),
                      key=lambda case: len(show(case.term)))
    index_rule = ns["index_rule"]
    for case in programs:
        assert isinstance(case.term, Build1)
        body = push_indices(case.term.body, index_rule)
        _check_build1(build1_rule, case.term.size, subst_var(body, case.term.var, "i"),
                      "a random program", BUILD1_HINT, evaluate, expected=case.value(),
                      inputs=case.env, program=case.text)
    rules = sum(len(t.bodies) for t in templates)
    return (f"{len(templates)} rules of Figs. 9 and 11 on {rules} bodies, and "
            f"{len(programs)} random programs: same values, normal form, output size "
            "independent of k")


def subst_var(t: Term, old: str, new: str) -> Term:
    """``t`` with the variable ``old`` named ``new`` (the template's ``i``)."""
    return t if old == new else subst(t, old, Var(new))


# --------------------------------------------------------------------------------------
# b.bot
# --------------------------------------------------------------------------------------


def _bot_templates() -> list[tuple[str, Term]]:
    j, ell = Var("j"), Var("l")
    return [
        ("a build1 in a build1",
         Build1(2, "i", Build1(3, "j", op("mul", at(X, I), at(Y, j, I))))),
        ("a build1 in a let in a build1",
         Build1(3, "i", Let("u", Build1(4, "j", op("mul", at(X, j), at(X, I))),
                            SumOuter(Var("u"))))),
        ("a build1 inside an index", at(X, SumOuter(Build1(3, "l", ell)))),
        ("a build1 in an index function, in a build1",
         Build1(2, "i", Gather((2,), X, ("p",), (op("add", Var("p"), SumOuter(
             Build1(2, "l", op("mul", ell, I)))),)))),
        ("an index of a build1", at(Build1(3, "i", op("mul", at(X, I), S)), 1)),
        ("an index of an operation, outside any build1", at(op("sin", Y), 1, 2)),
    ]


@task("b.bot", names=("bot",), title="the bot, bottom-up", hint=BOT_HINT)
def check_bot(ns: Mapping[str, Any]) -> str:
    bot = ns["bot"]
    evaluate = _evaluate()
    for where, term in _bot_templates():
        program = show(term)
        with attributed(f"bot of {where}", BOT_HINT, program):
            result = expect_term(bot(term), f"bot of {where}", BOT_HINT, program)
            expect_normal(result, f"bot of {where}", BOT_HINT, program)
            got = value_of(result, ENV, evaluate, f"bot of {where}", BOT_HINT, program)
            expect_close(evaluate(term, dict(ENV)), got,
                         what=f"bot of {where} = {brief(result)}: the value differs",
                         hint=BOT_HINT, program=program, inputs=ENV)
    programs: Sequence[Case] = [*cases(23, 40, outer_build1=True), *cases(24, 20)]
    for case in sorted(programs, key=lambda case: len(show(case.term))):
        with attributed("bot of a random program", BOT_HINT, case.text):
            result = expect_term(bot(case.term), "bot", BOT_HINT, case.text)
            expect_normal(result, "bot", BOT_HINT, case.text)
            got = value_of(result, case.env, evaluate, "bot", BOT_HINT, case.text)
            expect_close(case.value(), got,
                         what=f"bot: {brief(result)}: the value differs from dualarr's",
                         hint=BOT_HINT, program=case.text, inputs=case.env)
    return (f"{len(_bot_templates())} nested programs and {len(programs)} random programs: "
            "no build1 left, every index in normal form (Theorem 5.1), dualarr's values")

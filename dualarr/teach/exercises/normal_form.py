"""Assignment 9: the normal form of the bulk-operation transform (§5.1, Theorem 5.1).

The student writes the check of Theorem 5.1 over dualarr's terms: property (1), no
``build1`` occurs, and property (2), every ``index`` is applied to a normal form.  The
checkers run the student's function on random programs before and after the bot (and
after the simplifier) and on hand-made terms that hide a ``build1`` or a bad ``index``
where a quick walk does not look (a ``let``'s bound value, a ``gather``'s index
function, a ``cond``'s condition, 2,000 ``let``s deep), and compare its verdict with
dualarr's :func:`dualarr.vectorise.bot.check_bot_normal`.  The hand-made terms also
cover the edges: an ``index`` of every construct that is, or is not, a normal form (so a
check that lists the constructs it rejects fails), indices out of range (normal: the
language is total, §5.2) and a ``build1`` of size 0 (not normal).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...lang import functions as lang
from ...lang.program import trace
from ...lang.tensor import Tensor
from ...lang.terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Build1,
    Cond,
    Contract,
    DType,
    Floor,
    FromIntegral,
    FromList,
    Gather,
    IdSupply,
    Index,
    Iota,
    Let,
    Op,
    Replicate,
    Reshape,
    Scatter,
    Share,
    SumOuter,
    Term,
    Transpose,
    Var,
    children,
    constant,
    fresh_var,
    int_const,
    postorder,
    static_int_value,
)
from ...vectorise.bot import INDEX_NORMAL_FORMS, NotBotNormal, check_bot_normal, vectorise
from ...vectorise.simplify import simplify
from .feedback import (
    Feedback,
    abbreviate_term,
    describe_error,
    not_implemented,
    not_yet,
    passed,
    require_callable,
)

F64 = DType.FLOAT64
I64 = DType.INT64

NormalFormCheck = Callable[[Term], bool]
"""``check(term)``: True when ``term`` has the property, False when not."""


@dataclass(frozen=True)
class NormalFormCase:
    """One test term: ``name`` says what it is (``"random program 3, after the bot"``,
    ``"build1 in the index function of a gather"``)."""

    name: str
    term: Term
    hand_made: bool = False


# --------------------------------------------------------------------------------------
# Random programs: 1 to 3 stages, each a float[n,m] -> float[n,m] function
# --------------------------------------------------------------------------------------


def _rows(t: Tensor, v: Tensor) -> Tensor:
    return lang.build1(t.shape[0], lambda i: lang.sin(t[i]) * v)


def _reversed(t: Tensor, v: Tensor) -> Tensor:
    n = t.shape[0]
    return lang.build1(n, lambda i: t[n - 1 - i])


def _scaled_row(t: Tensor, v: Tensor) -> Tensor:
    return t + lang.replicate(t.shape[0], (t * 2.0)[1])


def _let_bound(t: Tensor, v: Tensor) -> Tensor:
    return lang.let(t * 2.0, lambda y: y + lang.sin(y))


def _shifted(t: Tensor, v: Tensor) -> Tensor:
    n, m = t.shape
    return lang.gather((n, m), t, lambda a, b: (n - 1 - a, (b + 1) % m))


def _selected(t: Tensor, v: Tensor) -> Tensor:
    return lang.build1(t.shape[0], lambda i: lang.where(i < 2, t[i], -t[i]))


def _nested(t: Tensor, v: Tensor) -> Tensor:
    n, m = t.shape
    return lang.build1(n, lambda i: lang.build1(m, lambda j: t[i, j] * v[j]))


def _columns(t: Tensor, v: Tensor) -> Tensor:
    return lang.transpose(lang.build1(t.shape[1], lambda j: lang.transpose(t)[j] + 1.0))


def _row_dots(t: Tensor, v: Tensor) -> Tensor:
    n, m = t.shape
    return lang.build1(n, lambda i: lang.replicate(m, lang.sum(t[i] * v)))


def _row_maxima(t: Tensor, v: Tensor) -> Tensor:
    n, m = t.shape
    return lang.build1(n, lambda i: lang.replicate(m, t[i][lang.argmax(t[i])]))


_STAGES: tuple[Callable[[Tensor, Tensor], Tensor], ...] = (
    _rows, _reversed, _scaled_row, _let_bound, _shifted, _selected, _nested, _columns,
    _row_dots, _row_maxima,
)


def _random_function(rng: np.random.Generator) -> Callable[[Tensor, Tensor], Tensor]:
    count = int(rng.integers(1, 4))
    stages = [_STAGES[int(s)] for s in rng.choice(len(_STAGES), size=count, replace=False)]

    def program(x: Tensor, v: Tensor) -> Tensor:
        t = x
        for stage in stages:
            t = stage(t, v)
        return t

    program.__name__ = "_".join(stage.__name__.strip("_") for stage in stages)
    return program


def random_program_cases(count: int = 24, seed: int = 0) -> list[NormalFormCase]:
    """``count`` random programs, each as traced (before the bot), after the bot, and
    after the bot and the simplifier."""
    rng = np.random.default_rng(seed)
    cases: list[NormalFormCase] = []
    for number in range(count):
        n, m = (int(d) for d in rng.integers(3, 6, size=2))
        f = _random_function(rng)
        source = trace(f, np.zeros((n, m)), np.zeros(m))
        after_bot = vectorise(source.outputs, source.supply).terms
        simplified = simplify(list(after_bot), source.supply)
        label = f"random program {number} ({f.__name__})"
        cases.append(NormalFormCase(f"{label}, before the bot", source.outputs[0]))
        cases.append(NormalFormCase(f"{label}, after the bot", after_bot[0]))
        cases.append(NormalFormCase(f"{label}, after the bot and simplification", simplified[0]))
    return cases


# --------------------------------------------------------------------------------------
# Hand-made terms
# --------------------------------------------------------------------------------------


def _let_chain(x: Var, depth: int, bottom: Term, supply: IdSupply) -> Term:
    """``let y1 = x + 1 in let y2 = y1 + 1 in … in yN + bottom``: ``depth`` lets."""
    one = Replicate(x.shape[0], constant(1.0))
    variables = [x]
    bounds: list[Term] = []
    for _ in range(depth):
        bounds.append(Op("add", (variables[-1], one)))
        variables.append(fresh_var(supply, "y", x.shape, F64))
    term: Term = Op("add", (variables[-1], bottom))
    for var, bound in zip(reversed(variables[1:]), reversed(bounds), strict=True):
        term = Let(var, bound, term)
    return term


def hand_made_cases() -> list[NormalFormCase]:
    """Terms that hide a ``build1`` or an ``index`` of a non-normal form where a quick
    walk does not look, and normal terms that a too strict check rejects."""
    s = IdSupply()
    x = fresh_var(s, "x", (4,), F64)
    m = fresh_var(s, "m", (3, 4), F64)

    def ivar(hint: str) -> Var:
        return fresh_var(s, hint, (), I64)

    def loop(body: Callable[[Var], Term], size: int = 4) -> Build1:
        i = ivar("i")
        return Build1(size, i, body(i))

    def let(hint: str, bound: Term, body: Callable[[Var], Term]) -> Let:
        y = fresh_var(s, hint, bound.shape, bound.dtype)
        return Let(y, bound, body(y))

    def rev(i: Var) -> Term:
        return Op("sub", (int_const(3), i))

    reversed_x = loop(lambda i: Index(x, (rev(i),)))
    twice = Op("mul", (x, Replicate(4, constant(2.0))))
    j = ivar("j")
    j2 = ivar("j")
    j3 = ivar("j")
    k = ivar("k")
    k2 = ivar("k")
    positive = Op("gt", (Index(x, (int_const(0),)), constant(0.0)))
    iotas = Op("add", (Iota(4), Iota(4)))
    shifted = Op("rem", (Op("add", (k2, int_const(1))), int_const(4)))
    scattered = Scatter((4,), twice, (k2,), (shifted,))
    cases: list[tuple[str, Term]] = [
        # property (1): a build1 somewhere
        ("build1 at the root", reversed_x),
        ("build1 in the bound value of a let", let("y", reversed_x, lambda y: Op("add", (y, x)))),
        ("build1 in the body of a let", let("y", Op("sin", (x,)), lambda y: Op(
            "add", (y, loop(lambda i: Index(y, (rev(i),))))))),
        ("build1 in the index function of a gather", Gather(
            (3,), x, (j,), (ArgMax(loop(lambda i: Op("mul", (
                Index(x, (i,)), FromIntegral(j, F64))))),))),
        ("build1 in the index function of a scatter", Scatter(
            (4,), Index(m, (int_const(0),)), (k,), (ArgMax(loop(lambda i: Index(m, (i, k)), 3)),))),
        ("build1 in the condition of a cond", Cond(
            Op("gt", (SumOuter(reversed_x), constant(0.0))), x, Op("neg", (x,)))),
        ("build1 in a branch of a cond", Cond(positive, x, reversed_x)),
        ("build1 in an element of a fromList", FromList((x, loop(lambda i: Op(
            "mul", (Index(x, (i,)), Index(x, (i,)))))))),
        ("build1 in the index of an index", Index(x, (ArgMax(reversed_x),))),
        ("build1 under 2,000 lets", _let_chain(x, 2000, reversed_x, s)),
        # property (2): an index of a construct that is not a normal form
        ("index of an elementwise operation", Index(Op("add", (x, x)), (int_const(1),))),
        ("index of a transposition", Index(Transpose((1, 0), m), (int_const(0),))),
        ("index of an index", Index(Index(m, (int_const(0),)), (int_const(1),))),
        ("index of a let", Index(let("y", Op("sin", (x,)), lambda y: y), (int_const(2),))),
        ("index of a replicate", Index(Replicate(3, x), (int_const(1),))),
        ("index of iota", Index(Iota(4), (int_const(2),))),
        ("index of a gather", Index(Gather((3,), x, (j2,), (Op("add", (j2, int_const(1))),)),
                                    (int_const(0),))),
        ("index of a sumOuter", Index(SumOuter(m), (int_const(1),))),
        ("index of a cond", Index(Cond(positive, x, Op("neg", (x,))), (int_const(0),))),
        ("index of an elementwise operation in the index function of a gather",
         Gather((3,), x, (j3,), (Index(iotas, (j3,)),))),
        ("index of a transposition in the bound value of a let",
         let("y", Index(Transpose((1, 0), m), (int_const(1),)), lambda y: Op("mul", (y, y)))),
        # normal forms
        ("gather of a transposed array", Gather(
            (4, 3), Transpose((1, 0), m), (k, j), (k, j))),
        ("scatter of an elementwise operation", scattered),
        ("index of a let-bound variable", let("y", Op("sin", (x,)), lambda y: Index(
            y, (int_const(1),)))),
        ("index of a constant", Index(constant(np.arange(4.0)), (int_const(2),))),
        ("index of a fromList", Index(
            FromList((x, Op("neg", (x,)))), (int_const(1), int_const(2)))),
        ("index of a scatter", Index(scattered, (int_const(0),))),
        ("index of an argmax (dualarr)", Index(ArgMax(m), (int_const(1),))),
        ("index of a contract (dualarr)", Index(Contract("ij,j->i", m, x), (int_const(0),))),
        ("index of a share (dualarr)", Index(Share(s.fresh(), twice), (int_const(3),))),
        ("a let chain 2,000 deep", _let_chain(x, 2000, x, s)),
        # the edges (#36): every construct an index may stand on, or not; the total
        # semantics (§5.2): an index out of range is no violation; an empty build1 is one
        ("index of a reshape", Index(Reshape((4, 3), m), (int_const(1),))),
        ("index of a fromIntegral", Index(FromIntegral(Iota(4)), (int_const(2),))),
        ("index of a floor", Index(Floor(x), (int_const(0),))),
        ("index of an argmin (dualarr)", Index(ArgMin(m), (int_const(2),))),
        ("index of an argsort (dualarr)", Index(ArgSort(x), (int_const(1),))),
        ("an index out of range (§5.2), of a variable", Op("add", (
            Index(m, (int_const(3),)), Index(m, (int_const(-1),))))),
        ("an index out of range (§5.2), of a constant",
         Index(constant(np.arange(4.0)), (int_const(9),))),
        ("index of an elementwise operation in the index of an index",
         Index(x, (Index(iotas, (int_const(1),)),))),
        ("build1 over an empty range (size 0)", loop(lambda i: Index(x, (rev(i),)), 0)),
    ]
    return [NormalFormCase(name, term, hand_made=True) for name, term in cases]


@functools.cache
def normal_form_cases() -> tuple[NormalFormCase, ...]:
    """Every test term of the checkers: the hand-made terms, then random programs."""
    return (*hand_made_cases(), *random_program_cases())


# --------------------------------------------------------------------------------------
# dualarr's verdicts, and where a violation lies
# --------------------------------------------------------------------------------------


def first_build1(term: Term) -> Build1 | None:
    """The first ``build1`` in post-order (property (1) of Theorem 5.1 fails there)."""
    return next((n for n in postorder([term]) if isinstance(n, Build1)), None)


def first_violation(term: Term) -> Term | None:
    """dualarr's verdict (:func:`check_bot_normal`): the offending subterm, or None."""
    try:
        check_bot_normal([term])
    except NotBotNormal as err:
        return err.subterm
    return None


def _labelled_children(node: Term) -> list[tuple[str, Term]]:
    """The immediate subterms of ``node``, each with the place it has in ``node``."""
    match node:
        case Let(bound=bound, body=body):
            return [("the bound value of a let", bound), ("the body of a let", body)]
        case Build1(body=body):
            return [("the body of a build1", body)]
        case Gather(array=a, index=f) | Scatter(array=a, index=f):
            kind = "gather" if isinstance(node, Gather) else "scatter"
            return [(f"the array of a {kind}", a)] + [
                (f"the index function of a {kind}", c) for c in f
            ]
        case Index(array=a, index=ix):
            return [("the array of an index", a)] + [("the index of an index", c) for c in ix]
        case Cond(cond=c, if_true=p, if_false=q):
            return [("the condition of a cond", c), ("a branch of a cond", p),
                    ("a branch of a cond", q)]
        case FromList(elems=elems):
            return [("an element of a fromList", e) for e in elems]
        case Op(op=op, args=args):
            return [(f"an argument of {op}", a) for a in args]
        case _:
            return [(f"the argument of {_construct(node)}", kid) for kid in children(node)]


def _construct(term: Term) -> str:
    """``an elementwise operation (add)``, ``a tr``: the construct heading ``term``."""
    if isinstance(term, Op):
        return f"an elementwise operation ({term.op})"
    kind = _CONSTRUCT_NAMES.get(type(term).__name__, type(term).__name__)
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


_CONSTRUCT_NAMES = {
    "Let": "let", "Cond": "cond", "Gather": "gather", "Index": "index", "Iota": "iota",
    "Build1": "build1", "Scatter": "scatter", "FromList": "fromList", "Var": "variable",
    "Const": "constant", "SumOuter": "sumOuter", "Replicate": "replicate", "Transpose": "tr",
    "Reshape": "reshape", "FromIntegral": "fromIntegral", "Floor": "floor",
    "ArgMin": "argmin", "ArgMax": "argmax", "ArgSort": "argsort", "Contract": "contract",
    "Share": "share",
}


def _where(root: Term, target: Term) -> list[str]:
    """The places on a path from ``root`` down to ``target``, innermost first."""
    parent: dict[int, tuple[Term, str]] = {}
    stack = [root]
    seen = {id(root)}
    while stack:
        node = stack.pop()
        if node is target:
            break
        for label, kid in _labelled_children(node):
            if id(kid) not in seen:
                seen.add(id(kid))
                parent[id(kid)] = (node, label)
                stack.append(kid)
    places: list[str] = []
    at = target
    while id(at) in parent:
        at, label = parent[id(at)]
        if not places or places[-1] != label:
            places.append(label)
    return places


def _place_text(places: Sequence[str]) -> str:
    if not places:
        return "at the root of the term"
    if len(places) > 4:
        places = [*places[:3], f"… ({len(places) - 3} more places)"]
    return "in " + ", in ".join(places)


# --------------------------------------------------------------------------------------
# The checkers
# --------------------------------------------------------------------------------------


def _run_student(check: NormalFormCheck, term: Term) -> bool | str:
    """The student's verdict, or the text of what went wrong."""
    try:
        verdict = check(term)
    except NotImplementedError:
        raise
    except RecursionError:
        return "RecursionError: maximum recursion depth exceeded"
    except Exception as err:
        return describe_error(err)
    if isinstance(verdict, bool | np.bool_):
        return bool(verdict)
    return f"returned {verdict!r} (a {type(verdict).__name__}), not True or False"


_RARE_ARRAYS = (Reshape, FromIntegral, Floor)
"""Constructs an index is seldom applied to in a program, and that are not normal forms:
a check that lists the constructs it rejects (rather than those it accepts) forgets them."""


def _missed_hint(offender: Term, places: Sequence[str]) -> str:
    if isinstance(offender, Index) and isinstance(offender.array, _RARE_ARRAYS):
        return (
            f"Hint: here an index is applied to {_construct(offender.array)} "
            f"({_place_text(places)}), which is not one of the normal forms listed above. "
            "Theorem 5.1 names the constructs an index may stand on; every other construct "
            "of the language makes the term not normal, the rarely used ones included."
        )
    if isinstance(offender, Index):
        return (
            f"Hint: property (2) restricts what index may be applied to, and here an index is "
            f"applied to {_construct(offender.array)} ({_place_text(places)}), which is not "
            "one of the normal forms listed above. Does your function look at what every "
            "index is applied to?"
        )
    if isinstance(offender, Build1) and offender.size == 0:
        return (
            "Hint: a build1 over an empty range (size 0) is a build1 all the same: property "
            "(1) is about whether the construct occurs, not about how many elements it makes."
        )
    if not places:
        return "Hint: this term *is* a build1: your function does not look at the term itself."
    return (
        f"Hint: Theorem 5.1 speaks of every subterm, and there is a build1 "
        f"{_place_text(places)}. Does your walk reach every one of these places? "
        "core.children(t) lists every immediate subterm of t."
    )


_EXTENSION_FORMS = (Contract, Share, ArgMin, ArgMax, ArgSort)


def _out_of_range(term: Term) -> bool:
    """Whether ``term`` has an index with a constant component outside its dimension."""
    for node in postorder([term]):
        if isinstance(node, Index):
            for component, dim in zip(node.index, node.array.shape, strict=False):
                value = static_int_value(component)
                if value is not None and not 0 <= value < dim:
                    return True
    return False


_OUT_OF_RANGE_HINT = (
    "Hint: an index out of range is no error in the paper's language: a read outside an "
    "array gives zeros (its total semantics, §5.2), and Theorem 5.1 does not look at the "
    "index's value, only at where a build1 occurs and at what an index is applied to."
)


def _rejected_hints(term: Term, property_one: bool) -> list[str]:
    if _out_of_range(term):
        return [_OUT_OF_RANGE_HINT]
    if property_one:
        return [
            "Hint: property (1) is only about build1; this term has none. Which subterm did "
            "your function object to?"
        ]
    hints = []
    nodes = postorder([term])
    if any(
        isinstance(n, Gather | Scatter) and not isinstance(n.array, INDEX_NORMAL_FORMS)
        for n in nodes
    ):
        hints.append(
            "Hint: property (2) restricts what index is applied to; gather and scatter are "
            "other constructs, which may read any array (they take whole arrays at once)."
        )
    if any(isinstance(n, Index) and isinstance(n.array, _EXTENSION_FORMS) for n in nodes):
        hints.append(
            "Hint: dualarr's normal form also lets index stand on the constructs its bot and "
            "simplifier add (see the list in the text above), besides the paper's four."
        )
    return hints or [
        "Hint: dualarr accepts this term: no build1, and every index is of a normal form. "
        "Which subterm did your function object to?"
    ]


def _check(check: NormalFormCheck, property_one: bool, title: str) -> Feedback:
    cases = normal_form_cases()
    failures: list[str] = []
    hints: list[str] = []
    wrong = 0
    for case in cases:
        offender = first_build1(case.term) if property_one else first_violation(case.term)
        expected = offender is None
        try:
            got = _run_student(check, case.term)
        except NotImplementedError:
            return not_implemented(title, "your function")
        if got == expected and isinstance(got, bool):
            continue
        wrong += 1
        if len(failures) >= 4:
            continue
        shown = f"{case.name}:\n  {abbreviate_term(case.term, 200)}"
        if isinstance(got, str):
            failures.append(f"{shown}\nyour function: {got}")
            if "RecursionError" in got:
                hints.append(
                    "Hint: a recursive walk cannot go 2,000 lets deep (Python's recursion "
                    "limit). core.postorder([t]) visits every node once, without recursion."
                )
            elif "returned" in got:
                hints.append("Hint: return True (normal) or False (not normal), for every term.")
            continue
        verdict = "normal" if expected else "not normal"
        if offender is not None:
            places = _where(case.term, offender)
            failures.append(
                f"{shown}\nexpected False ({verdict}: {abbreviate_term(offender, 80)} "
                f"{_place_text(places)}), your function says True"
            )
            hints.append(_missed_hint(offender, places))
        else:
            failures.append(f"{shown}\nexpected True ({verdict}), your function says False")
            hints.extend(_rejected_hints(case.term, property_one))
    if wrong:
        more = [f"… and {wrong - len(failures)} more"] if wrong > len(failures) else []
        return not_yet(
            f"{title}: wrong on {wrong} of {len(cases)} terms",
            *failures,
            *more,
            *list(dict.fromkeys(hints))[:2],
        )
    randoms = sum(1 for c in cases if not c.hand_made)
    return passed(
        f"{title}: agrees with dualarr on all {len(cases)} terms ({randoms // 3} random "
        f"programs before and after the bot, {len(cases) - randoms} hand-made terms)"
    )


def check_no_build1(check: NormalFormCheck) -> Feedback:
    """Check ``check(term)``, property (1) of Theorem 5.1 (no ``build1`` occurs in
    ``term``), against dualarr on random programs and hand-made terms."""
    require_callable(check, "check", "check_no_build1")
    return _check(check, True, "property (1): no build1")


def check_normal_form(check: NormalFormCheck) -> Feedback:
    """Check ``check(term)``, the whole of Theorem 5.1 as dualarr states it
    (:func:`dualarr.vectorise.bot.check_bot_normal`), on random programs before and after
    the bot and on hand-made terms."""
    require_callable(check, "check", "check_normal_form")
    return _check(check, False, "Theorem 5.1: the normal form")

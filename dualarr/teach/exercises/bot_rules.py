"""Assignment 1: the bulk-operation transform (§5, Figs. 9–11): ``build1`` of ``index``
becomes a ``gather`` and ``build1`` of ``sumOuter`` a transposed ``sumOuter``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...lang import functions as lang
from ...lang.errors import UnsupportedError, format_shape
from ...lang.functions import build1
from ...lang.program import Program, trace
from ...lang.tensor import Tensor
from ...lang.terms import (
    TERM_TYPES,
    Build1,
    FreeVars,
    FromIntegral,
    Gather,
    IdSupply,
    Index,
    Op,
    Replicate,
    SumOuter,
    Term,
    Transpose,
    Var,
    children,
    postorder,
    rebuild,
    type_name,
)
from ...vectorise.bot import (
    BUILD1_RULES,
    NotBotNormal,
    Request,
    Vec,
    Vectoriser,
    check_bot_normal,
)
from .feedback import (
    Feedback,
    abbreviate_term,
    describe_error,
    format_array,
    format_number,
    format_position,
    mismatched_positions,
    not_implemented,
    not_yet,
    passed,
    require_callable,
)

# --------------------------------------------------------------------------------------
# Assignment 1: the bulk-operation transform (§5, Figs. 9–11)
# --------------------------------------------------------------------------------------

IndexRule = Callable[[int, Var, Index], Term]
"""``rule(k, i, e)``: ``build1 k (λi. e)`` for ``e = a[ix]`` where ``a`` does not
mention ``i`` (Fig. 11), vectorised."""

SumOuterRule = Callable[[int, SumOuter, Callable[[Term], Term]], Term]
"""``rule(k, e, vec)``: ``build1 k (λi. e)`` for ``e = sumOuter a`` (Fig. 9), given
``vec(a)``, which is ``build1 k (λi. a)`` vectorised (shape ``[k, *a.shape]``)."""


def _reference_index_rule(k: int, i: Var, e: Index) -> Term:
    """Fig. 11 as the assignment states it: the gather binds the loop variable ``i``
    itself (dualarr's rule, ``build1-index``, binds a fresh one and hoists arrays computed
    in the index), so the teaching bot's terms read as the student's solution does."""
    return Gather((k,), e.array, (i,), e.index)


_BY_THE_ENGINE = (Var, Op, SumOuter, Transpose, Replicate, FromIntegral)
"""The constructs the teaching bot vectorises by dualarr's own rule of Fig. 9
(:data:`dualarr.vectorise.bot.BUILD1_RULES`; ``sumOuter`` when no rule is given)."""


class _RuleFailed(Exception):
    """A student rule raised, returned something that is not a term, or a wrong term."""

    def __init__(self, where: str, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.where = where
        self.message = message
        self.hint = hint


class _NotImplementedRule(Exception):
    pass


class _TeachingVectoriser:
    """``B[e]`` for one ``build1 k (λi. e)`` whose body has no ``build1`` left."""

    def __init__(
        self,
        k: int,
        i: Var,
        fv: FreeVars,
        index_rule: IndexRule,
        sum_outer_rule: SumOuterRule | None,
        student: str | None,
    ) -> None:
        self.k, self.i, self.fv = k, i, fv
        self.index_rule, self.sum_outer_rule = index_rule, sum_outer_rule
        # dualarr's B[·] for this build1, whose rules the teaching bot calls (they take
        # no fresh variables, so the supply stays unused)
        self.engine = Vectoriser(k, i, IdSupply(), fv)
        self.student = student  # which rule is the student's ("index", "sumOuter")
        self.memo: dict[int, tuple[Term, Term]] = {}

    def vec(self, e: Term) -> Term:
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        result = self._vec(e)
        self.memo[id(e)] = (e, result)
        return result

    def _vec(self, e: Term) -> Term:
        k, i = self.k, self.i
        if i not in self.fv(e):  # Fig. 9: the body does not mention i
            return Replicate(k, e)
        sum_outer_rule = self.sum_outer_rule
        match e:
            case Index(array=a) if i not in self.fv(a):
                return self._apply("index", lambda: self.index_rule(k, i, e), e)
            case SumOuter() if sum_outer_rule is not None:
                return self._apply("sumOuter", lambda: sum_outer_rule(k, e, self.vec), e)
            case Gather(outer_shape=sh, array=a, vars=vs, index=f) if i not in self.fv(a):
                return Gather((k, *sh), a, (i, *vs), f)  # binds i, as the index rule does
            case _ if isinstance(e, _BY_THE_ENGINE):
                rewrite = BUILD1_RULES[type(e)](self.engine, e)
                return rewrite.assemble([self.vec(_body(r)) for r in rewrite.requests])
            case _:
                raise _BotGap(
                    f"the teaching bot has no rule for {type(e).__name__} under build1 "
                    "(it knows op, index of an array without i, sumOuter, gather, tr, "
                    "replicate); da.pipeline runs the full bot",
                    op="teaching_bot",
                    location="",
                )

    def _apply(self, rule: str, call: Callable[[], Term], before: Term) -> Term:
        mine = rule == self.student
        try:
            result = call()
        except NotImplementedError:
            if mine:
                raise _NotImplementedRule() from None
            raise
        except (_RuleFailed, _BotGap):
            raise
        except Exception as err:
            if not mine:
                raise
            raise self._failed(before, f"your rule raised {describe_error(err)}") from None
        if not mine:
            return result
        if not isinstance(result, TERM_TYPES):
            raise self._failed(
                before,
                f"your rule returned a {type(result).__name__}, not a term of the core language",
                "Hint: build the result from the classes of dualarr.lang.terms (Gather, SumOuter, "
                "Transpose, …).",
            )
        if any(isinstance(n, Build1) for n in postorder([result])):
            raise self._failed(
                before,
                f"your result still contains build1: {abbreviate_term(result)}",
                "Hint: the bot must eliminate build1 (Theorem 5.1, property 1), not rebuild it.",
            )
        if self.i in self.fv(result):
            name = self.i.hint
            raise self._failed(
                before,
                f"your result mentions the loop variable {name} free: {abbreviate_term(result)}\n"
                f"The build1 that bound {name} is gone, so {name} has no value.",
                "Hint: after the rule nothing may depend on one value of i. Fig. 11 moves the "
                "whole index into the index function of a gather, which binds its own variable.",
            )
        expected_shape = (self.k, *before.shape)
        if result.shape != expected_shape or result.dtype is not before.dtype:
            raise self._failed(
                before,
                f"that build1 has type {type_name(expected_shape, before.dtype)}, but your "
                f"result has type {type_name(result.shape, result.dtype)}: "
                f"{abbreviate_term(result)}",
            )
        return result

    def _failed(self, before: Term, message: str, hint: str = "") -> _RuleFailed:
        where = f"build1 {self.k} (λ{self.i.hint}. {abbreviate_term(before)})"
        return _RuleFailed(where, f"vectorising {where}:\n{message}", hint)


def _body(request: Request) -> Term:
    assert isinstance(request, Vec)  # the rules of _BY_THE_ENGINE push build1 only
    return request.body


class _BotGap(UnsupportedError):
    """The teaching bot meets a construct it has no rule for (not the student's fault)."""


def _bot_roots(value: Program | Term | Sequence[Term]) -> list[Term]:
    if isinstance(value, Program):
        return list(value.outputs)
    if isinstance(value, TERM_TYPES):
        return [value]  # type: ignore[list-item]
    return list(value)  # type: ignore[arg-type]


def _teaching_bot(
    roots: Sequence[Term],
    index_rule: IndexRule,
    sum_outer_rule: SumOuterRule | None,
    student: str | None,
) -> list[Term]:
    fv = FreeVars()
    new: dict[int, Term] = {}
    for node in postorder(roots):
        result = rebuild(node, tuple(new[id(kid)] for kid in children(node)))
        if isinstance(result, Build1):
            vectoriser = _TeachingVectoriser(
                result.size, result.var, fv, index_rule, sum_outer_rule, student
            )
            result = vectoriser.vec(result.body)
        new[id(node)] = result
    return [new[id(r)] for r in roots]


def teaching_bot(
    program: Program | Term | Sequence[Term],
    *,
    index_rule: IndexRule | None = None,
    sum_outer_rule: SumOuterRule | None = None,
) -> Program | list[Term]:
    """A small bot (§5.1) for the constructs of the assignment: every ``build1``,
    innermost first, is pushed through ``op``, ``gather``, ``tr``, ``replicate`` and
    ``fromIntegral`` (Fig. 9), eliminated at a closed body (``replicate``) or at ``i``
    (``iota``), and handed to ``index_rule`` (Fig. 11) or ``sum_outer_rule`` (Fig. 9).
    Without rules, the reference ones are used (for ``sumOuter``, dualarr's own,
    :data:`~dualarr.vectorise.bot.BUILD1_RULES`).  A program gives a program."""
    for name, rule in (("index_rule", index_rule), ("sum_outer_rule", sum_outer_rule)):
        if rule is not None:
            require_callable(rule, name, "teaching_bot")
    terms = _teaching_bot(
        _bot_roots(program),
        index_rule or _reference_index_rule,
        sum_outer_rule,
        None,
    )
    if isinstance(program, Program):
        return Program(
            program.name, program.inputs, tuple(terms), program.tuple_output, program.supply
        )
    return terms


@dataclass(frozen=True)
class _BotCase:
    name: str
    function: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...]


def _reverse(x: Tensor) -> Tensor:
    n = x.shape[0]
    return build1(n, lambda i: x[n - 1 - i])


def _fig18_products(x: Tensor) -> Tensor:
    n = x.shape[0]
    return build1(n, lambda i: x[i] * x[n - 1 - i])


def _even_elements(x: Tensor) -> Tensor:
    return build1(4, lambda i: x[2 * i])  # x has 6 elements: element 3 reads x[6], out of range


def _shifted_window(x: Tensor) -> Tensor:
    return build1(6, lambda i: x[i - 1])  # x has 4 elements: reads x[-1] and x[4], out of range


def _one_element(a: Tensor) -> Tensor:
    return build1(1, lambda i: a[i + 1, 2 - i])  # a loop of size 1


def _rows_reversed(a: Tensor) -> Tensor:
    return build1(3, lambda i: a[2 - i] * 2.0)


def _anti_diagonal(a: Tensor) -> Tensor:
    return build1(3, lambda i: a[i, 2 - i])


def _matvec(a: Tensor, v: Tensor) -> Tensor:
    return build1(a.shape[0], lambda i: lang.sum(a[i] * v))


def _column_sums(a: Tensor) -> Tensor:
    return build1(a.shape[1], lambda j: lang.sum(build1(a.shape[0], lambda i: a[i, j])))


def _plane_row_sums(t: Tensor) -> Tensor:
    return build1(t.shape[0], lambda i: lang.sum(t[i], axis=0))


INDEX_CASES = (
    _BotCase("reverse", _reverse, ((5,),)),
    _BotCase("fig18_products", _fig18_products, ((5,),)),
    _BotCase("even_elements", _even_elements, ((6,),)),
    _BotCase("rows_reversed", _rows_reversed, ((3, 4),)),
    _BotCase("anti_diagonal", _anti_diagonal, ((3, 3),)),
    _BotCase("shifted_window", _shifted_window, ((4,),)),
    _BotCase("one_element", _one_element, ((3, 3),)),
)
"""Test programs for the index rule: ``build1`` of indexing only (Fig. 11), reads out of
range (before the start and past the end: 0 by the total semantics, §5.2) and a loop of
size 1 included."""

SUM_OUTER_CASES = (
    _BotCase("matvec", _matvec, ((3, 4), (4,))),
    _BotCase("matvec_square", _matvec, ((3, 3), (3,))),
    _BotCase("column_sums", _column_sums, ((3, 4),)),
    _BotCase("plane_row_sums", _plane_row_sums, ((2, 3, 4),)),
)
"""Test programs for the sumOuter rule (Fig. 9), nested and of rank 3 included."""


def _sample(shapes: Sequence[tuple[int, ...]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-5, 6, size=shape).astype(np.float64) for shape in shapes]


def _call_signature(program: Program, args: Sequence[np.ndarray]) -> str:
    names = [v.hint for v in program.inputs]
    return ", ".join(f"{n} = {format_array(a)}" for n, a in zip(names, args, strict=True))


def _check_bot_rule(
    rule: Callable[..., Term], which: str, cases: Sequence[_BotCase], title: str
) -> Feedback:
    index_rule: IndexRule = rule if which == "index" else _reference_index_rule
    sum_rule: SumOuterRule | None = rule if which == "sumOuter" else None
    failures: list[str] = []
    hints: list[str] = []
    example = ""
    for case in cases:
        args = _sample(case.shapes, seed=len(case.name))
        program = trace(case.function, *args)
        try:
            terms = _teaching_bot(program.outputs, index_rule, sum_rule, which)
        except _NotImplementedRule:
            return not_implemented(title, "your rule")
        except _RuleFailed as err:
            failures.append(f"{case.name}: {err.message}")
            if err.hint:
                hints.append(err.hint)
            else:
                hints.extend(_bot_hints(which, err.message))
            continue
        except _BotGap as err:
            failures.append(
                f"{case.name}: your rule called vec on a term it cannot vectorise: {err.detail}"
            )
            continue
        vectorised = Program(program.name, program.inputs, tuple(terms), False, program.supply)
        try:
            check_bot_normal(terms)
        except NotBotNormal as err:
            failures.append(f"{case.name}: not in the normal form of Theorem 5.1: {err.detail}")
            continue
        expected = np.asarray(program(*args))
        try:
            got = np.asarray(vectorised(*args))
        except Exception as err:
            failures.append(
                f"{case.name}: evaluating your vectorised program raised {describe_error(err)}"
                f"\nyour bot:   {abbreviate_term(terms[0])}"
            )
            continue
        if got.shape != expected.shape:
            failures.append(
                f"{case.name}: your vectorised program has shape {format_shape(got.shape)}, "
                f"the source {format_shape(expected.shape)}\n"
                f"your bot:   {abbreviate_term(terms[0])}"
            )
            continue
        bad = mismatched_positions(expected, got)
        outside = _reads_outside(program, args) if which == "index" else set()
        if bad and all(p in outside for p in bad):  # right in range, wrong out of range
            first = bad[0]
            failures.append(
                f"{case.name}({_call_signature(program, args)}): "
                f"element {format_position(first)} reads outside the array: "
                f"expected 0 (total indexing, §5.2), got {format_number(got[first])}"
                f"\nsource:     {abbreviate_term(program.outputs[0])}\n"
                f"your bot:   {abbreviate_term(terms[0])}"
            )
            hints.append(_OUT_OF_RANGE_HINT)
            continue
        if bad:
            first = bad[0]
            failures.append(
                f"{case.name}({_call_signature(program, args)}): {len(bad)} of {expected.size} "
                f"elements differ; element {format_position(first)}: "
                f"expected {format_number(expected[first])}, "
                f"got {format_number(got[first])}\n"
                f"source:     {abbreviate_term(program.outputs[0])}\n"
                f"your bot:   {abbreviate_term(terms[0])}"
            )
            hints.extend(_bot_value_hints(which, expected, got))
            continue
        if not example:
            example = (f"e.g. {case.name}: {abbreviate_term(program.outputs[0])}  ⟶  "
                       f"{abbreviate_term(terms[0])}")
    if failures:
        unique_hints = list(dict.fromkeys(hints))
        return not_yet(
            f"{title}: {len(failures)} of {len(cases)} test programs go wrong",
            *failures,
            *unique_hints,
        )
    return passed(
        f"{title}: all {len(cases)} test programs vectorise, with equal values and no build1 "
        "left",
        example,
    )


_OUT_OF_RANGE_HINT = (
    "Hint: indexing is total (§5.2): a read outside the array gives 0, and a gather reads "
    "out of range exactly as index does. The rule of Fig. 11 needs no guard: an index that "
    "is clamped, wrapped or otherwise changed reads a real element where the source reads 0."
)


def _reads_outside(program: Program, args: Sequence[np.ndarray]) -> set[tuple[int, ...]]:
    """The elements of an index test program that read out of range: on inputs of ones,
    a product of reads is 1 (or a constant) where every read is in range, 0 elsewhere."""
    ones = [np.ones_like(a) for a in args]
    value = np.asarray(program(*ones))
    return {tuple(int(i) for i in p) for p in np.argwhere(value == 0)}


def _bot_hints(which: str, message: str) -> list[str]:
    if which == "sumOuter":
        if "RecursionError" in message:
            return [
                "Hint: your rule calls vec on the sumOuter itself (which calls your rule "
                "again). Call vec on the array that is summed, e.array."
            ]
        if "permutation" in message:
            return [
                "Hint: a permutation lists every dimension of vec(e.array) once, so for rank "
                "r it has r entries. Which two dimensions change places, and which stay?"
            ]
        if "has type" in message:
            return [
                "Hint: vec(e.array) has the loop dimension (size k) outermost and the "
                "dimension that sumOuter sums second. sumOuter sums the outermost one: move "
                "the summed dimension to the front first (Fig. 9, build1 of sumOuter)."
            ]
    if which == "index" and "has type" in message:
        return [
            "Hint: build1 k (λi. a[ix]) has shape [k] ++ (the shape of a[ix]): a gather of "
            "outer shape [k] whose index function has one variable."
        ]
    if which == "index" and "rank-0 int" in message:
        return [
            "Hint: an index is a tuple of rank-0 int terms. A whole array of indices "
            "(iota k) is the job of gather's index function, not of index."
        ]
    return []


def _bot_value_hints(which: str, expected: np.ndarray, got: np.ndarray) -> list[str]:
    if which == "sumOuter":
        return [
            "Hint: the shape is right but the values are not: your sumOuter adds up over the "
            "loop index i (dimension 0 of vec(e.array)) instead of over the dimension that "
            "sumOuter a sums (Fig. 9, build1 of sumOuter)."
        ]
    return [
        "Hint: out[i] must be a[ix] with the loop variable's value i: the index function of "
        "your gather must compute the original index ix (Fig. 11, build1 of index)."
    ]


def check_bot_index_rule(rule: IndexRule) -> Feedback:
    """Check ``rule(k, i, e)`` for ``build1 k (λi. a[ix])`` with ``a`` not mentioning
    ``i`` (Fig. 11, the key rule): on five programs, the vectorised result must have no
    ``build1``, no free ``i``, and evaluate to the source's values."""
    require_callable(rule, "rule", "check_bot_index_rule")
    return _check_bot_rule(rule, "index", INDEX_CASES, "B[index a ix] (Fig. 11)")


def check_bot_sum_outer_rule(rule: SumOuterRule) -> Feedback:
    """Check ``rule(k, e, vec)`` for ``build1 k (λi. sumOuter a)`` (Fig. 9) on four
    programs (a non-square and a square matrix-vector product, nested builds, rank 3)."""
    require_callable(rule, "rule", "check_bot_sum_outer_rule")
    return _check_bot_rule(rule, "sumOuter", SUM_OUTER_CASES, "B[sumOuter a] (Fig. 9)")



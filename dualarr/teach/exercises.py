"""Checkers for the classroom assignments (``notebooks/assignments/``).

Every ``check_*`` function runs a student's answer on test programs and returns a
:class:`Feedback`: passed or not, and *what* is wrong — which program or input, which
element, the expected and the computed value, which rule of the paper is involved, and a
hint.  A wrong answer never raises (an exception raised by the answer is reported too);
only misuse does (e.g. a checker given something that is not a function).

The assignments:

1. the bulk-operation transform (§5): ``build1`` of ``index`` becomes a ``gather``
   (Fig. 11) and ``build1`` of ``sumOuter`` a transposed ``sumOuter`` (Fig. 9) —
   :func:`check_bot_index_rule`, :func:`check_bot_sum_outer_rule`, run by
   :func:`teaching_bot`;
2. a Delta rule for a new primitive (§2.3, §6.3, Fig. 14) — :func:`check_delta_rule`;
3. a gather program and its gradient (§3.3, §6.3, Fig. 17) — :func:`check_diffs`,
   :func:`check_tv_gradient`, :func:`check_scatter_prediction`;
4. the sharing bug of scalar dual numbers (§2.5, §2.6) — :func:`check_visit_formula`,
   :func:`check_sharing`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np

from ..ad import delta as dl
from ..ad.dual import Dual, DualAlgebra
from ..ad.reverse import ReverseStats, forward, reverse
from ..api import grad
from ..interp.evaluate import NumpyAlgebra, evaluate_many
from ..lang import functions as lang
from ..lang.errors import DualarrError, UnsupportedError, format_shape
from ..lang.functions import build1, gather
from ..lang.program import Program, trace
from ..lang.tensor import Tensor
from ..lang.terms import (
    TERM_TYPES,
    Build1,
    DType,
    FreeVars,
    FromIntegral,
    Gather,
    Index,
    Iota,
    Op,
    Replicate,
    Scatter,
    SumOuter,
    Term,
    Transpose,
    Var,
    children,
    postorder,
    rebuild,
    type_name,
)
from ..pipeline import pipeline
from ..vectorise.bot import NotBotNormal, check_bot_normal

__all__ = [
    "Feedback",
    "check_bot_index_rule",
    "check_bot_sum_outer_rule",
    "check_delta_rule",
    "check_diffs",
    "check_scatter_prediction",
    "check_sharing",
    "check_tv_gradient",
    "check_visit_formula",
    "reverse_visits",
    "teaching_bot",
]

F64 = DType.FLOAT64

# --------------------------------------------------------------------------------------
# Feedback
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Feedback:
    """The verdict of one check: ``passed``, a one-line ``title`` and ``details``
    (lines; a line starting with ``Hint:`` is a hint).  Shows itself as text, HTML or
    Markdown in a notebook."""

    passed: bool
    title: str
    details: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return "PASSED" if self.passed else "NOT YET"

    def __str__(self) -> str:
        mark = "✔" if self.passed else "✘"
        lines = [f"{mark} {self.verdict}: {self.title}"]
        for detail in self.details:
            first, *rest = detail.split("\n")
            lines.append(f"  - {first}")
            lines.extend(f"    {line}" for line in rest)
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#cf222e"
        mark = "✔" if self.passed else "✘"
        items = []
        for detail in self.details:
            text = html.escape(detail)
            if detail.startswith("Hint:"):
                text = f"<i>{text}</i>"
            items.append(f"<li style='white-space:pre-wrap;font-family:monospace'>{text}</li>")
        listing = f"<ul>{''.join(items)}</ul>" if items else ""
        return (
            f"<div class='dualarr-feedback' style='border-left:4px solid {colour};"
            "padding:0.2em 0.8em'>"
            f"<b style='color:{colour}'>{mark} {self.verdict}</b>: {html.escape(self.title)}"
            f"{listing}</div>"
        )

    def _repr_markdown_(self) -> str:
        mark = "✔" if self.passed else "✘"
        head = f"**{mark} {self.verdict}**: {_md_escape(self.title)}"
        if not self.details:
            return head
        body = "\n".join(str(self).split("\n")[1:])
        return f"{head}\n\n```text\n{body}\n```"


def _md_escape(text: str) -> str:
    for char in "\\`*_[]<>#|":
        text = text.replace(char, "\\" + char)
    return text


def _ok(title: str, *details: str) -> Feedback:
    return Feedback(True, title, tuple(details))


def _fail(title: str, *details: str) -> Feedback:
    return Feedback(False, title, tuple(details))


def _not_implemented(name: str, what: str) -> Feedback:
    return _fail(
        f"{name} is not implemented yet",
        f"It raised NotImplementedError. Replace the `raise NotImplementedError` by {what},"
        " then run this cell again.",
    )


def _require_callable(value: object, name: str, op: str) -> None:
    if not callable(value):
        raise UnsupportedError(
            f"{name} must be a function, got {type(value).__name__}", op=op, location=""
        )


def _describe_error(err: BaseException) -> str:
    """``Type: message`` for an exception raised by student code (no file locations)."""
    if isinstance(err, DualarrError):
        where = f"{err.op}: " if err.op else ""
        return f"{type(err).__name__}: {where}{err.detail}"
    if isinstance(err, RecursionError):
        return "RecursionError: maximum recursion depth exceeded"
    text = str(err).split("\n")[0]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


# -- formatting numbers and arrays ----------------------------------------------------


def _num(value: Any) -> str:
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    return f"{v:.6g}"


def _arr(value: Any, limit: int = 12) -> str:
    a = np.asarray(value)
    if a.ndim == 0:
        return _num(a)
    if a.ndim == 1:
        items = [_num(v) for v in a[:limit]]
        if len(a) > limit:
            items.append("…")
        return "[" + ", ".join(items) + "]"
    return "[" + ", ".join(_arr(row, limit) for row in a[:limit]) + "]"


def _pos(position: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(p) for p in position) + "]"


def _close(a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False))


def _mismatches(
    expected: np.ndarray, got: np.ndarray, rtol: float = 1e-6, atol: float = 1e-9
) -> list[tuple[int, ...]]:
    """Positions where ``got`` differs from ``expected`` (non-finite ``got`` counts)."""
    with np.errstate(all="ignore"):
        bad = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    return [tuple(int(i) for i in p) for p in np.argwhere(bad)]


# --------------------------------------------------------------------------------------
# Assignment 1: the bulk-operation transform (§5, Figs. 9–11)
# --------------------------------------------------------------------------------------

IndexRule = Callable[[int, Var, Index], Term]
"""``rule(k, i, e)``: ``build1 k (λi. e)`` for ``e = a[ix]`` where ``a`` does not
mention ``i`` (Fig. 11), vectorised."""

SumOuterRule = Callable[[int, SumOuter, Callable[[Term], Term]], Term]
"""``rule(k, e, vec)``: ``build1 k (λi. e)`` for ``e = sumOuter a`` (Fig. 9), given
``vec(a)``, which is ``build1 k (λi. a)`` vectorised (shape ``[k, *a.shape]``)."""


def _swap01(rank: int) -> tuple[int, ...]:
    return (1, 0, *range(2, rank))


def _reference_index_rule(k: int, i: Var, e: Index) -> Term:
    return Gather((k,), e.array, (i,), e.index)


def _reference_sum_outer_rule(k: int, e: SumOuter, vec: Callable[[Term], Term]) -> Term:
    va = vec(e.array)
    return SumOuter(Transpose(_swap01(len(va.shape)), va))


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
        sum_outer_rule: SumOuterRule,
        student: str | None,
    ) -> None:
        self.k, self.i, self.fv = k, i, fv
        self.index_rule, self.sum_outer_rule = index_rule, sum_outer_rule
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
        match e:
            case Var():
                return Iota(k)
            case Op(op=op, args=args):
                return Op(op, tuple(self.vec(a) for a in args))
            case Index(array=a) if i not in self.fv(a):
                return self._apply("index", lambda: self.index_rule(k, i, e), e)
            case SumOuter():
                return self._apply("sumOuter", lambda: self.sum_outer_rule(k, e, self.vec), e)
            case Gather(outer_shape=sh, array=a, vars=vs, index=f) if i not in self.fv(a):
                return Gather((k, *sh), a, (i, *vs), f)
            case Transpose(perm=p, array=a):
                return Transpose((0, *(q + 1 for q in p)), self.vec(a))
            case Replicate(count=n, array=a):
                va = self.vec(a)
                return Transpose(_swap01(len(va.shape) + 1), Replicate(n, va))
            case FromIntegral(array=a, to=to):
                return FromIntegral(self.vec(a), to)
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
            raise self._failed(before, f"your rule raised {_describe_error(err)}") from None
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
                f"your result still contains build1: {_short(result)}",
                "Hint: the bot must eliminate build1 (Theorem 5.1, property 1), not rebuild it.",
            )
        if self.i in self.fv(result):
            name = self.i.hint
            raise self._failed(
                before,
                f"your result mentions the loop variable {name} free: {_short(result)}\n"
                f"The build1 that bound {name} is gone, so {name} has no value.",
                "Hint: after the rule nothing may depend on one value of i. Fig. 11 moves the "
                "whole index into the index function of a gather, which binds its own variable.",
            )
        expected_shape = (self.k, *before.shape)
        if result.shape != expected_shape or result.dtype is not before.dtype:
            raise self._failed(
                before,
                f"that build1 has type {type_name(expected_shape, before.dtype)}, but your "
                f"result has type {type_name(result.shape, result.dtype)}: {_short(result)}",
            )
        return result

    def _failed(self, before: Term, message: str, hint: str = "") -> _RuleFailed:
        where = f"build1 {self.k} (λ{self.i.hint}. {_short(before)})"
        return _RuleFailed(where, f"vectorising {where}:\n{message}", hint)


class _BotGap(UnsupportedError):
    """The teaching bot meets a construct it has no rule for (not the student's fault)."""


def _short(term: Term, limit: int = 160) -> str:
    text = " ".join(str(term).split())
    return text if len(text) <= limit else text[:limit] + " …"


def _bot_roots(value: Program | Term | Sequence[Term]) -> list[Term]:
    if isinstance(value, Program):
        return list(value.outputs)
    if isinstance(value, TERM_TYPES):
        return [value]  # type: ignore[list-item]
    return list(value)  # type: ignore[arg-type]


def _teaching_bot(
    roots: Sequence[Term],
    index_rule: IndexRule,
    sum_outer_rule: SumOuterRule,
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
    Without rules, the reference ones are used.  A program gives a program."""
    for name, rule in (("index_rule", index_rule), ("sum_outer_rule", sum_outer_rule)):
        if rule is not None:
            _require_callable(rule, name, "teaching_bot")
    terms = _teaching_bot(
        _bot_roots(program),
        index_rule or _reference_index_rule,
        sum_outer_rule or _reference_sum_outer_rule,
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
    return build1(4, lambda i: x[2 * i])


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
    _BotCase("even_elements", _even_elements, ((7,),)),
    _BotCase("rows_reversed", _rows_reversed, ((3, 4),)),
    _BotCase("anti_diagonal", _anti_diagonal, ((3, 3),)),
)
"""Test programs for the index rule: ``build1`` of indexing only (Fig. 11)."""

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
    return ", ".join(f"{n} = {_arr(a)}" for n, a in zip(names, args, strict=True))


def _check_bot_rule(
    rule: Callable[..., Term], which: str, cases: Sequence[_BotCase], title: str
) -> Feedback:
    index_rule: IndexRule = rule if which == "index" else _reference_index_rule
    sum_rule: SumOuterRule = rule if which == "sumOuter" else _reference_sum_outer_rule
    failures: list[str] = []
    hints: list[str] = []
    example = ""
    for case in cases:
        args = _sample(case.shapes, seed=len(case.name))
        program = trace(case.function, *args)
        try:
            terms = _teaching_bot(program.outputs, index_rule, sum_rule, which)
        except _NotImplementedRule:
            return _not_implemented(title, "your rule")
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
                f"{case.name}: evaluating your vectorised program raised {_describe_error(err)}"
                f"\nyour bot:   {_short(terms[0])}"
            )
            continue
        if got.shape != expected.shape:
            failures.append(
                f"{case.name}: your vectorised program has shape {format_shape(got.shape)}, "
                f"the source {format_shape(expected.shape)}\nyour bot:   {_short(terms[0])}"
            )
            continue
        bad = _mismatches(expected, got)
        if bad:
            first = bad[0]
            failures.append(
                f"{case.name}({_call_signature(program, args)}): {len(bad)} of {expected.size} "
                f"elements differ; element {_pos(first)}: expected {_num(expected[first])}, "
                f"got {_num(got[first])}\n"
                f"source:     {_short(program.outputs[0])}\n"
                f"your bot:   {_short(terms[0])}"
            )
            hints.extend(_bot_value_hints(which, expected, got))
            continue
        if not example:
            example = f"e.g. {case.name}: {_short(program.outputs[0])}  ⟶  {_short(terms[0])}"
    if failures:
        unique_hints = list(dict.fromkeys(hints))
        return _fail(
            f"{title}: {len(failures)} of {len(cases)} test programs go wrong",
            *failures,
            *unique_hints,
        )
    return _ok(
        f"{title}: all {len(cases)} test programs vectorise, with equal values and no build1 "
        "left",
        example,
    )


def _bot_hints(which: str, message: str) -> list[str]:
    if which == "sumOuter":
        if "RecursionError" in message:
            return [
                "Hint: your rule calls vec on the sumOuter itself (which calls your rule "
                "again). Call vec on the array that is summed, e.array."
            ]
        if "permutation" in message:
            return [
                "Hint: a permutation lists every dimension of vec(e.array): for rank r it is "
                "(1, 0, 2, …, r - 1)."
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
    _require_callable(rule, "rule", "check_bot_index_rule")
    return _check_bot_rule(rule, "index", INDEX_CASES, "B[index a ix] (Fig. 11)")


def check_bot_sum_outer_rule(rule: SumOuterRule) -> Feedback:
    """Check ``rule(k, e, vec)`` for ``build1 k (λi. sumOuter a)`` (Fig. 9) on four
    programs (a non-square and a square matrix-vector product, nested builds, rank 3)."""
    _require_callable(rule, "rule", "check_bot_sum_outer_rule")
    return _check_bot_rule(rule, "sumOuter", SUM_OUTER_CASES, "B[sumOuter a] (Fig. 9)")


# --------------------------------------------------------------------------------------
# Assignment 2: a Delta rule for a new primitive (§2.3, §6.3, Fig. 14)
# --------------------------------------------------------------------------------------


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.logaddexp(0.0, x))


def _cube(x: np.ndarray) -> np.ndarray:
    return np.asarray(x**3)


def _hypot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.hypot(a, b))


@dataclass(frozen=True)
class _DeltaOp:
    name: str
    formula: str
    function: Callable[..., np.ndarray]
    points: tuple[tuple[float, ...], ...]  # one tuple per argument

    @property
    def arity(self) -> int:
        return len(self.points)


DELTA_OPS: dict[str, _DeltaOp] = {
    "softplus": _DeltaOp(
        "softplus",
        "softplus(x) = log(1 + exp(x))",
        _softplus,
        ((-800.0, -30.0, -1.0, 0.0, 0.5, 3.0, 30.0, 800.0),),
    ),
    "cube": _DeltaOp(
        "cube", "cube(x) = x ** 3", _cube, ((-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0),)
    ),
    "hypot": _DeltaOp(
        "hypot",
        "hypot(a, b) = sqrt(a ** 2 + b ** 2)",
        _hypot,
        ((3.0, -3.0, 0.001, 0.0, 2.0, 1e200), (4.0, 4.0, 2.0, 5.0, -0.5, 1e200)),
    ),
}
"""The primitives of assignment 2, with their test points (edge cases included)."""

_DELTA_TYPES: tuple[type, ...] = dl.Delta.__args__


def _is_delta(value: object) -> TypeGuard[dl.Delta]:
    return isinstance(value, _DELTA_TYPES)


def _finite_differences(op: _DeltaOp, xs: Sequence[np.ndarray], k: int) -> np.ndarray:
    """Central differences of an elementwise op in its argument ``k``, point by point."""
    h = 1e-6 * np.maximum(1.0, np.abs(xs[k]))
    up = [x + h if j == k else x for j, x in enumerate(xs)]
    down = [x - h if j == k else x for j, x in enumerate(xs)]
    with np.errstate(all="ignore"):
        return np.asarray((op.function(*up) - op.function(*down)) / (2 * h))


def _point(op: _DeltaOp, xs: Sequence[np.ndarray], p: int) -> str:
    names = ("x",) if op.arity == 1 else ("a", "b")
    return ", ".join(f"{n} = {_num(x[p])}" for n, x in zip(names, xs, strict=True))


def _delta_hints(
    op: _DeltaOp,
    xs: Sequence[np.ndarray],
    y: np.ndarray,
    expected: np.ndarray,
    got: np.ndarray,
    bad: Sequence[int],
    arg: str,
) -> list[str]:
    """What a wrong derivative (``got`` against finite differences) looks like."""

    def near(a: Any, b: Any) -> bool:
        return _close(a, b, rtol=1e-5, atol=1e-7)

    with np.errstate(all="ignore"):
        if not np.isfinite(got[list(bad)]).all():
            p = next(p for p in bad if not np.isfinite(got[p]))
            reason = {
                "softplus": "exp(x) overflows to inf for large x, and inf / inf is nan. "
                "Write the factor so that it never overflows: 1 / (1 + exp(-x)) does not, "
                "and neither does exp(x - y) with the output y that your rule is given.",
                "cube": "is there a division by x? At x = 0 it gives nan. Write the factor "
                "without dividing.",
                "hypot": "a * a overflows for a = 1e200 (and 0 / 0 is nan). Divide by the "
                "output y = hypot(a, b), which your rule is given, instead of recomputing it.",
            }[op.name]
            return [f"Hint: at {_point(op, xs, p)} your derivative is {_num(got[p])}: {reason}"]
        huge = all(max(abs(float(x[p])) for x in xs) > 1e100 for p in bad)
        if op.name == "hypot" and huge:
            return [
                "Hint: only the point a = b = 1e200 is wrong: a * a overflows to inf there, so "
                "a / sqrt(a * a + b * b) is 0. Divide by the output y = hypot(a, b), which your "
                "rule is given, instead of recomputing it."
            ]
        if near(got, 0.0):
            return [
                f"Hint: the derivative {arg} is 0 everywhere: your Delta does not use the "
                "Delta of that argument (a primitive of several arguments adds one Scale per "
                "argument, like mul in Fig. 14)."
            ]
        if near(got, 1.0):
            delta = "dx" if op.arity == 1 else "d_" + arg[-1]
            return [
                f"Hint: the derivative {arg} is 1 everywhere: the Delta of the argument is "
                f"passed through unscaled. Scale it by the derivative: dl.Scale(factor, {delta})."
            ]
        if near(got, -expected):
            return ["Hint: every value has the wrong sign."]
        if near(got, y):
            return [
                "Hint: your factor is the output y itself: that is the rule for exp "
                "(d exp(x) = exp(x) dx), not for this function."
            ]
        sel = [p for p in bad if abs(expected[p]) > 1e-6]
        if len(sel) >= 2:
            ratios = got[sel] / expected[sel]
            if abs(ratios[0]) > 1e-6 and near(ratios, ratios[0]):
                return [f"Hint: your derivative is {_num(ratios[0])} times the right one."]
    if op.arity == 1:
        return [
            "Hint: a one-argument primitive's Delta is Scale(f'(x), dx) (Fig. 14): work out "
            f"f'(x) for {op.formula} by hand and check it at one test point."
        ]
    return [
        "Hint: hypot's Delta is Add(Scale(∂f/∂a, da), Scale(∂f/∂b, db)), like mul's in "
        "Fig. 14: work out both partial derivatives by hand."
    ]


def _approx(value: Any) -> str:
    """A finite-difference value, with its noise below 1e-9 shown as 0."""
    return "0" if abs(float(value)) < 1e-9 else _num(value)


def check_delta_rule(op: str, rule: Callable[..., Any]) -> Feedback:
    """Check a Delta rule for a new elementwise primitive (§6.3, Fig. 14).

    ``op`` is ``"softplus"``, ``"cube"`` (one argument: ``rule(x, y, dx)``) or
    ``"hypot"`` (``rule(a, b, y, d_a, d_b)``), where ``x``/``a``/``b`` are the primal
    inputs, ``y`` the primal output and ``dx``/``d_a``/``d_b`` the inputs' Deltas; the rule
    returns the output's Delta.  Its forward evaluation (the derivative), its reverse
    pass (Fig. 5) and a small program using it are compared with central finite
    differences at test points that include edge cases.
    """
    spec = DELTA_OPS.get(op)
    if spec is None:
        raise UnsupportedError(
            f"unknown primitive {op!r}; the assignment has {', '.join(DELTA_OPS)}",
            op="check_delta_rule",
            location="",
        )
    _require_callable(rule, "rule", "check_delta_rule")
    title = f"Delta rule for {spec.formula}"
    xs = [np.array(p, dtype=np.float64) for p in spec.points]
    m = xs[0].shape[0]
    with np.errstate(all="ignore"):
        y = spec.function(*xs)
    inputs = [dl.Input(k, (m,), F64) for k in range(spec.arity)]
    try:
        with np.errstate(all="ignore"):
            d = rule(*[x.copy() for x in xs], y.copy(), *inputs)
    except NotImplementedError:
        return _not_implemented(title, "your Delta rule")
    except Exception as err:
        return _fail(title, f"your rule raised {_describe_error(err)}")
    if not _is_delta(d):
        return _fail(
            title,
            f"your rule returned a {type(d).__name__}, not a Delta",
            "Hint: the rule returns the Delta of the output, built from the Deltas it is "
            "given, e.g. dl.Scale(factor, dx) (Fig. 14); the factor is a primal array.",
        )
    if tuple(d.shape) != (m,):
        return _fail(
            title,
            f"your Delta has shape {format_shape(d.shape)}, the output has shape "
            f"{format_shape((m,))}",
        )
    names = ("x",) if spec.arity == 1 else ("a", "b")
    failures: list[str] = []
    hints: list[str] = []
    alg = NumpyAlgebra()
    columns = []
    # tangents of distinct values, so a Delta mixing the points is caught too
    weights = np.linspace(1.0, 2.0, m)
    for k in range(spec.arity):
        tangents = {j: weights if j == k else np.zeros(m) for j in range(spec.arity)}
        try:
            with np.errstate(all="ignore"):
                jvp = np.asarray(forward(alg, d, tangents), dtype=np.float64)
                got = np.broadcast_to(jvp, (m,)) / weights
        except Exception as err:
            return _fail(title, f"evaluating your Delta raised {_describe_error(err)}")
        columns.append(got)
        expected = _finite_differences(spec, xs, k)
        bad = [p[0] for p in _mismatches(expected, got, rtol=1e-5, atol=1e-7)]
        arg = f"by {names[k]}" if spec.arity > 1 else ""
        for p in bad[:3]:
            failures.append(
                f"derivative{' ' + arg if arg else ''} at {_point(spec, xs, p)}: expected "
                f"{_approx(expected[p])} (finite differences), got {_num(got[p])}"
            )
        if len(bad) > 3:
            failures.append(f"… and {len(bad) - 3} more of the {m} test points")
        if bad:
            hints.extend(_delta_hints(spec, xs, y, expected, got, bad, arg or "d/dx"))
    if failures:
        return _fail(title, *failures, *list(dict.fromkeys(hints)))
    # the reverse pass (Fig. 5) must give the same derivative: the transpose of a diagonal
    try:
        with np.errstate(all="ignore"):
            grads = reverse(alg, dl.Share(10**9, d), weights)
    except Exception as err:
        return _fail(title, f"the reverse pass over your Delta raised {_describe_error(err)}")
    for k in range(spec.arity):
        vjp = np.asarray(grads.get(k, 0.0), dtype=np.float64)
        got = np.broadcast_to(vjp, (m,)) / weights
        if not _close(got, columns[k], rtol=1e-9):
            p = _mismatches(columns[k], got)[0][0]
            return _fail(
                title,
                f"the reverse pass disagrees with the forward derivative by {names[k]} at "
                f"{_point(spec, xs, p)}: {_num(got[p])} against {_num(columns[k][p])}",
                "Hint: an elementwise primitive's Delta is a Scale (and Add) of its arguments' "
                "Deltas, nothing else.",
            )
    return _composition_check(spec, rule, title)


def _composition_check(spec: _DeltaOp, rule: Callable[..., Any], title: str) -> Feedback:
    """``sum(op(w * x, x))`` (or ``sum(op(w * x))``) on dual arrays: the rule's Delta
    must compose with the others (use the argument's Delta, not its own Input)."""
    rng = np.random.default_rng(7)
    x0 = rng.uniform(0.5, 2.0, size=4)
    w = np.array([1.5, -0.5, 2.0, 1.0])

    def primal(x: np.ndarray) -> float:
        args = (w * x,) if spec.arity == 1 else (w * x, x)
        return float(np.sum(spec.function(*args)))

    alg = DualAlgebra(NumpyAlgebra())
    x = Dual(x0, dl.Input(0, (4,), F64))
    t = alg.op("mul", [alg.const(w), x], F64)
    args = [t] if spec.arity == 1 else [t, x]
    prims = [np.asarray(a.primal) for a in args]
    y = spec.function(*prims)
    try:
        with np.errstate(all="ignore"):
            d = rule(*prims, y, *[a.delta for a in args])
            out = alg.sum_outer(alg.dual(y, d))
            g = np.asarray(reverse(NumpyAlgebra(), out.delta, np.ones(())).get(0, 0.0))
    except Exception as err:
        return _fail(title, f"inside a program, your rule raised {_describe_error(err)}")
    h = 1e-6
    expected = np.array(
        [(primal(x0 + h * e) - primal(x0 - h * e)) / (2 * h) for e in np.eye(4)]
    )
    call = "sum(op(w * x))" if spec.arity == 1 else "sum(op(w * x, x))"
    if not _close(g, expected, rtol=1e-5, atol=1e-7):
        return _fail(
            title,
            "your rule is right on its own, but not inside a program: the gradient of "
            f"{call} at x = {_arr(np.round(x0, 4))}, w = {_arr(w)} is {_arr(np.round(g, 6))}; "
            f"finite differences give {_arr(np.round(expected, 6))}",
            "Hint: build the Delta from the Delta arguments you are given (they are not "
            "always Input nodes): the chain rule happens by scaling them.",
        )
    points = ", ".join(_num(v) for v in spec.points[0])
    return _ok(
        f"{title}: right at every test point",
        f"forward derivative and reverse pass match finite differences at x = {points}"
        if spec.arity == 1
        else f"both partial derivatives match finite differences at {len(spec.points[0])} "
        "points (1e200 included)",
        f"and the gradient of {call} matches finite differences",
    )


# --------------------------------------------------------------------------------------
# Assignment 3: a gather program and its gradient (§3.3, §6.3, Fig. 17)
# --------------------------------------------------------------------------------------


def _reference_diffs(x: Tensor) -> Tensor:
    n = x.shape[0]
    return gather((n - 1,), x, lambda i: (i + 1,)) - gather((n - 1,), x, lambda i: (i,))


def _reference_tv(x: Tensor) -> Tensor:
    d = _reference_diffs(x)
    return lang.sum(d * d)


_LENGTHS = (3, 5, 8, 2)


def _vectors(seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-6, 7, size=n).astype(np.float64) for n in _LENGTHS]


def check_diffs(diffs: Callable[[Tensor], Tensor]) -> Feedback:
    """Check ``diffs(x)[i] = x[i + 1] - x[i]`` (length ``n - 1``), written with gathers
    (§3.3): traced for several lengths, its values compared with ``np.diff``."""
    _require_callable(diffs, "diffs", "check_diffs")
    title = "diffs(x)[i] = x[i + 1] - x[i] with gathers"
    for x in _vectors():
        n = x.shape[0]
        try:
            program = trace(diffs, x)
            got = np.asarray(program(x))
        except NotImplementedError:
            return _not_implemented("diffs", "your program")
        except Exception as err:
            return _fail(title, f"for x = {_arr(x)}: your program raised {_describe_error(err)}")
        expected = np.diff(x)
        if got.shape != expected.shape:
            return _fail(
                title,
                f"for x of length {n}, your program returns shape {format_shape(got.shape)}; diffs "
                f"has n - 1 = {n - 1} elements",
                "Hint: the first argument of da.gather is the shape of the result.",
            )
        bad = _mismatches(expected, got)
        if bad:
            first = bad[0]
            hint = "Hint: out[i] = x[f(i)] for a gather with index function f (§3.3)."
            if _close(got, -expected):
                hint = "Hint: every element has the wrong sign: it is x[i + 1] - x[i]."
            elif [p[0] for p in bad] == [n - 2] and got[n - 2] == -x[n - 2]:
                hint = (
                    "Hint: only the last element is wrong, and it is -x[n - 2]: x[i + 1] "
                    "was read out of range (which gives 0, §5.2). Check the index functions."
                )
            return _fail(
                title,
                f"for x = {_arr(x)}: element {_pos(first)}: expected {_num(expected[first])}, "
                f"got {_num(got[first])} (all: expected {_arr(expected)}, got {_arr(got)})",
                f"your program: {_short(program.outputs[0])}",
                hint,
            )
        nodes = postorder(program.outputs)
        if any(isinstance(t, Build1) for t in nodes):
            return _fail(
                title,
                f"the values are right, but your program uses build1: {program}",
                "Hint: this assignment is about gather: write diffs with da.gather (or "
                "slices, which are gathers). The bot would turn your build1 into gathers "
                "(see da.pipeline(...).vectorised).",
            )
        if not any(isinstance(t, Gather) for t in nodes):
            return _fail(title, f"the values are right, but there is no gather: {program}")
    return _ok(f"{title}: right for lengths {', '.join(map(str, _LENGTHS))}")


def check_tv_gradient(tv_grad: Callable[[np.ndarray], Any]) -> Feedback:
    """Check a NumPy function predicting the gradient of ``tv(x) = sum(diffs(x) ** 2)``
    against ``da.grad(tv)`` for several lengths (boundaries included)."""
    _require_callable(tv_grad, "tv_grad", "check_tv_gradient")
    title = "gradient of tv(x) = sum((x[i + 1] - x[i]) ** 2)"
    expected_grad = grad(_reference_tv)
    for x in _vectors():
        n = x.shape[0]
        expected = np.asarray(expected_grad(x))
        try:
            with np.errstate(all="ignore"):
                got = np.asarray(tv_grad(x.copy()), dtype=np.float64)
        except NotImplementedError:
            return _not_implemented("tv_grad", "your NumPy gradient")
        except Exception as err:
            return _fail(title, f"for x = {_arr(x)}: tv_grad raised {_describe_error(err)}")
        if got.shape != expected.shape:
            return _fail(
                title,
                f"for x of length {n}, tv_grad returns shape {format_shape(got.shape)}; the "
                f"gradient has the shape of x, {format_shape(expected.shape)}",
            )
        bad = [p[0] for p in _mismatches(expected, got)]
        if not bad:
            continue
        lines = [
            f"for x = {_arr(x)}: {len(bad)} of {n} elements differ",
            f"expected (da.grad): {_arr(expected)}",
            f"got (tv_grad):      {_arr(got)}",
        ]
        return _fail(title, *lines, *_tv_hints(x, expected, got, bad))
    return _ok(
        f"{title}: matches da.grad for lengths {', '.join(map(str, _LENGTHS))}",
        "each x[j] is read by two gathers (as x[i + 1] for i = j - 1 and as x[i] for i = j), "
        "so its gradient adds two contributions, except at the ends",
    )


def _tv_hints(x: np.ndarray, expected: np.ndarray, got: np.ndarray, bad: list[int]) -> list[str]:
    n = x.shape[0]
    sel = [p for p in range(n) if expected[p] != 0]
    circular = 2 * (x - np.roll(x, 1)) - 2 * (np.roll(x, -1) - x)
    if _close(got, 0.0):
        return ["Hint: your gradient is 0 everywhere, but tv changes with x. Work out "
                "d tv / d x[j] for one interior j first: which terms (x[i + 1] - x[i]) ** 2 "
                "mention x[j]?"]
    if _close(got, -expected):
        return ["Hint: every element has the wrong sign: d/dd (d ** 2) = 2 d, and d = x[i+1] "
                "- x[i] depends on x[i + 1] with +1 and on x[i] with -1."]
    roll = ("np.roll wraps around: yours is the gradient of a circular sum that also has the "
            "term (x[0] - x[n - 1]) ** 2. A gather reading out of range gives 0, and the "
            "scatter in its gradient drops such writes (§5.2).")
    if sel and all(_close(got[p], 0.5 * expected[p]) for p in sel):
        return ["Hint: half the right value everywhere: the derivative of d ** 2 is 2 d."]
    if sel and all(_close(got[p], 2.0 * expected[p]) for p in sel):
        also = f" (Or, if you used np.roll: {roll})" if _close(got, circular) else ""
        return ["Hint: twice the right value everywhere: the derivative of d ** 2 is 2 d, "
                "counted once per term." + also]
    if _close(got, circular):
        return ["Hint: " + roll]
    if n > 2 and set(bad) <= {0, n - 1}:
        return [
            f"Hint: only the boundary element(s) {', '.join(map(str, bad))} are wrong. "
            "x[0] is read only by the gather λ[i]. [i] (at i = 0) and x[n - 1] only by "
            "λ[i]. [i + 1] (at i = n - 2): each gets one contribution, not two. "
            "The scatter that transposes a gather drops writes that fall outside x."
        ]
    return ["Hint: work out d tv / d x[j] by hand for one interior j: which terms "
            "(x[i + 1] - x[i]) ** 2 mention x[j]?"]


ScatterPrediction = tuple[Sequence[int] | int, Callable[[int], Any]]
"""``(target shape, index function)``, e.g. ``((7,), lambda i: (i + 2,))``."""


@dataclass(frozen=True)
class _ScatterInfo:
    shape: tuple[int, ...]
    table: tuple[tuple[int, ...], ...]  # the index function at i = 0, 1, …

    def describe(self) -> str:
        targets = ", ".join(_pos(t) if len(t) > 1 else str(t[0]) for t in self.table)
        last = len(self.table) - 1
        return f"scatter {format_shape(self.shape)} _ (λ[i]. …) sending i = 0..{last} to {targets}"


def _scatters_of(terms: Sequence[Term]) -> list[_ScatterInfo]:
    found = []
    for node in postorder(terms):
        if not isinstance(node, Scatter) or len(node.vars) != 1:
            continue
        count = node.array.shape[0]
        table = []
        for i in range(count):
            env = {node.vars[0]: np.asarray(i, dtype=np.int64)}
            values = evaluate_many(list(node.index), env)
            table.append(tuple(int(v) for v in values))
        found.append(_ScatterInfo(tuple(node.outer_shape), tuple(table)))
    return found


def _predicted(prediction: ScatterPrediction, count: int) -> _ScatterInfo:
    shape, fn = prediction
    dims = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    table = []
    for i in range(count):
        value = fn(i)
        items = value if isinstance(value, tuple | list) else (value,)
        table.append(tuple(int(v) for v in items))
    return _ScatterInfo(dims, tuple(table))


def check_scatter_prediction(prediction: Sequence[ScatterPrediction], n: int = 7) -> Feedback:
    """Check a prediction of the scatters in the gradient of ``tv`` for ``x`` of length
    ``n``: one ``(target shape, index function)`` per scatter, in any order.  They are
    compared with the ``shared`` stage of ``da.pipeline(tv, x)`` (the symbolic reverse
    pass, Fig. 19), where every gather has become a scatter (Fig. 17)."""
    if isinstance(prediction, str) or not isinstance(prediction, Sequence):
        raise UnsupportedError(
            "prediction must be a list of (target shape, index function) pairs",
            op="check_scatter_prediction",
            location="",
        )
    title = f"the scatters in the gradient of tv (x of length {n})"
    p = pipeline(_reference_tv, np.zeros(n))
    actual = _scatters_of(list(p.shared.gradients))
    count = n - 1
    predicted: list[_ScatterInfo] = []
    for k, item in enumerate(prediction):
        try:
            if not (isinstance(item, tuple) and len(item) == 2 and callable(item[1])):
                return _fail(
                    title,
                    f"prediction {k} is {item!r}: write (target shape, index function), e.g. "
                    "((7,), lambda i: (i + 2,))",
                )
            predicted.append(_predicted(item, count))
        except NotImplementedError:
            return _not_implemented("the prediction", "your list")
        except Exception as err:
            return _fail(
                title, f"calling the index function of prediction {k} raised "
                f"{_describe_error(err)}"
            )
    remaining = list(actual)
    unmatched: list[_ScatterInfo] = []
    for guess in predicted:
        if guess in remaining:
            remaining.remove(guess)
        else:
            unmatched.append(guess)
    if not unmatched and not remaining:
        return _ok(
            f"{title}: both predicted",
            *[s.describe() for s in actual],
            "the transpose of gather sh x f is scatter (shape of x) c f: the same index "
            "function, the target shaped like x",
        )
    details = [
        f"the gradient has {len(actual)} scatter(s), you predicted {len(predicted)}"
    ]
    details += [f"yours, not in the gradient: {g.describe()}" for g in unmatched]
    found = len(actual) - len(remaining)
    details.append(
        f"{found} of the gradient's scatters predicted, {len(remaining)} missing"
    )
    hints = []
    shapes = {s.shape for s in actual}
    if any(g.shape not in shapes for g in unmatched):
        hints.append(
            f"Hint: a scatter that transposes a gather writes into an array shaped like "
            f"the gathered array x ({format_shape((n,))}), not like the gather's result "
            f"({format_shape((count,))})."
        )
    tables = {s.table for s in actual}
    inverse = {tuple((t[0] - 1,) for t in table) for table in tables} | {
        tuple((t[0] + 1,) for t in table) for table in tables
    }
    if any(g.table not in tables and g.table in inverse for g in unmatched):
        hints.append(
            "Hint: a scatter needs no inverse of the index function: gather reads "
            "out[i] = x[f(i)], scatter writes out[f(i)] += c[i] with the same f (§3.3)."
        )
    if not hints:
        hints.append(
            "Hint: each gather of x in tv becomes one scatter in the gradient (Fig. 17: the "
            "reverse derivative of Gather is Scatter with the same index function)."
        )
    return _fail(title, *details, *hints)


# --------------------------------------------------------------------------------------
# Assignment 4: the sharing bug (§2.5, §2.6)
# --------------------------------------------------------------------------------------


def reverse_visits(d: dl.Delta) -> tuple[dict[int, Any], int]:
    """The reverse pass (Fig. 5) from cotangent 1: the gradients by input and the
    number of Delta nodes it visited."""
    stats = ReverseStats()
    with np.errstate(all="ignore"):
        grads = reverse(NumpyAlgebra(), d, np.ones(()), stats)
    return grads, stats.nodes_visited


class _LeakyNum:
    """Scalar dual numbers without Share (§2.3): the bug of assignment 4."""

    def __init__(self, primal: float, delta: dl.Delta) -> None:
        self.primal, self.delta = primal, delta

    def __add__(self, other: _LeakyNum) -> _LeakyNum:
        return _LeakyNum(self.primal + other.primal, dl.Add(self.delta, other.delta))


def _doubling(num: Callable[[float, dl.Delta], Any], x: float, n: int) -> Any:
    y = num(x, dl.Input(0, (), F64))
    for _ in range(n):
        y = y + y
    return y


def check_visit_formula(visits: Callable[[int], int]) -> Feedback:
    """Check a closed formula for the number of Delta nodes the reverse pass visits
    for ``n`` doublings ``y = y + y`` without Share (§2.5), against the count."""
    _require_callable(visits, "visits", "check_visit_formula")
    title = "nodes visited by the reverse pass for n doublings, without Share"
    rows = []
    for n in range(11):
        _, measured = reverse_visits(_doubling(_LeakyNum, 1.0, n).delta)
        try:
            guess = visits(n)
        except NotImplementedError:
            return _not_implemented("visits", "your formula")
        except Exception as err:
            return _fail(title, f"visits({n}) raised {_describe_error(err)}")
        rows.append((n, measured, guess))
    wrong = [(n, m, g) for n, m, g in rows if g != m]
    table = "n:        " + " ".join(f"{n:>5}" for n, _, _ in rows) + "\n"
    table += "measured: " + " ".join(f"{m:>5}" for _, m, _ in rows) + "\n"
    table += "yours:    " + " ".join(f"{g!s:>5}" for _, _, g in rows)
    if not wrong:
        return _ok(f"{title}: your formula matches for n = 0..10", table)
    hints = [
        "Hint: the Delta of y_n is Add d d with d the Delta of y_(n-1): the node is one "
        "object, but a tree walk goes down both arguments. Write v(n) in terms of v(n - 1), "
        "with v(0) = 1 (the Input), and solve the recurrence."
    ]
    n, m, g = wrong[0]
    return _fail(f"{title}: wrong for n = {n} (measured {m}, yours {g})", table, *hints)


@dataclass(frozen=True)
class _ChainCase:
    name: str
    x: float
    step: Callable[[Any, Any], Any]
    gradient: Callable[[float, int], float]


_CHAINS = (
    _ChainCase("doubling y = y + y", 1.0, lambda y, x: y + y, lambda x, n: 2.0**n),
    _ChainCase(
        "squaring y = y * y",
        1.01,
        lambda y, x: y * y,
        lambda x, n: 2.0**n * x ** (2**n - 1),
    ),
    _ChainCase(
        "y = y * x + y",
        0.5,
        lambda y, x: y * x + y,
        lambda x, n: (x + 1) ** n + n * x * (x + 1) ** (n - 1),
    ),
)


_CHAIN_NOTES = {
    "squaring y = y * y": " (the product rule of y * y uses the Delta of y twice: does your * "
    "share its result?)",
    "doubling y = y + y": " (y + y uses the Delta of y twice: does your + share its result?)",
}


def check_sharing(num: Callable[[float, dl.Delta], Any]) -> Feedback:
    """Check a scalar dual-number class ``num(primal, delta)`` with ``+`` and ``*``
    (§2.5): on three chains of ``n`` steps the gradients must be right, the Delta must
    satisfy Invariants 1 and 2, and the reverse pass must visit O(n) nodes, not 2^n."""
    _require_callable(num, "num", "check_sharing")
    title = "sharing in scalar dual numbers (§2.5)"
    failures: list[str] = []
    hints: list[str] = []
    linear_counts: list[str] = []
    for case in _CHAINS:
        counts: dict[int, int] = {}
        problem = ""
        for n in (6, 12):
            try:
                x = num(case.x, dl.Input(0, (), F64))
                y = x
                for _ in range(n):
                    y = case.step(y, x)
                delta = y.delta
                primal = float(y.primal)
            except NotImplementedError:
                return _not_implemented("the dual-number class", "your code")
            except Exception as err:
                problem = f"{case.name}: running it raised {_describe_error(err)}"
                break
            if not _is_delta(delta):
                problem = (
                    f"{case.name}: .delta is a {type(delta).__name__}, not a Delta"
                )
                break
            try:
                dl.check_invariants([delta])
            except DualarrError as err:
                problem = f"{case.name}, n = {n}: {err.detail}"
                hints.append(
                    "Hint: every Share needs a fresh id, larger than every id inside it: "
                    "take it from one IdSupply (supply.fresh()) when the node is made "
                    "(Invariants 1 and 2, §2.5)."
                )
                break
            grads, visited = reverse_visits(delta)
            counts[n] = visited
            expected = case.gradient(case.x, n)
            got = float(np.asarray(grads.get(0, 0.0)))
            if not math.isclose(got, expected, rel_tol=1e-9):
                problem = (
                    f"{case.name}, n = {n}: gradient expected {_num(expected)}, got {_num(got)}"
                )
                break
            value = case.x
            for _ in range(n):
                value = case.step(value, case.x)
            if not math.isclose(primal, value, rel_tol=1e-12):
                problem = f"{case.name}, n = {n}: value expected {_num(value)}, got {_num(primal)}"
                break
        if problem:
            failures.append(problem)
            continue
        nodes = dl.size([_chain_delta(num, case, 12)]).nodes
        if counts[12] > 3 * counts[6] or counts[12] > 20 * 12 + 20:
            failures.append(
                f"{case.name}: the reverse pass visited {counts[6]} Delta nodes for n = 6 and "
                f"{counts[12]} for n = 12, though the Delta DAG for n = 12 has {nodes} "
                "distinct nodes: exponential, each use of a node walks it again"
                + _CHAIN_NOTES.get(case.name, "")
            )
            hints.append(
                "Hint: give the Delta that each operation returns a Share node with a fresh "
                "id (Fig. 3): the reverse pass then evaluates a shared node once, after "
                "adding up all its cotangents (Fig. 5)."
            )
        else:
            linear_counts.append(f"{case.name}: {counts[6]} visits for n = 6, {counts[12]} "
                                 f"for n = 12")
    if failures:
        return _fail(
            f"{title}: {len(failures)} of {len(_CHAINS)} chains go wrong",
            *failures,
            *list(dict.fromkeys(hints)),
        )
    return _ok(
        f"{title}: right gradients, Invariants 1 and 2 hold, linear reverse passes",
        *linear_counts,
    )


def _chain_delta(num: Callable[[float, dl.Delta], Any], case: _ChainCase, n: int) -> dl.Delta:
    x = num(case.x, dl.Input(0, (), F64))
    y = x
    for _ in range(n):
        y = case.step(y, x)
    delta: dl.Delta = y.delta
    return delta

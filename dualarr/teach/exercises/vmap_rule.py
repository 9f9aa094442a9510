"""Assignment 8: batching rules for ``da.vmap`` (§5.1, Fig. 9; §9).

``vmap(f)(x)`` is ``build1 n (λi. f(x[i]))`` followed by the bulk-operation transform
(``dualarr/vectorise/vmap.py``), so a *batching rule* for a construct is its ``build1``
rule of Fig. 9: given the construct's argument batched (the loop dimension first), give
the construct's result batched.  The student writes the rules for ``tr`` and
``replicate``; :func:`teaching_vmap` runs dualarr's bot with them, and the checkers
compare the result with a Python loop over the batch and with :func:`dualarr.api.vmap`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...api import vmap
from ...lang import functions as lang
from ...lang.errors import format_shape
from ...lang.program import Program, trace
from ...lang.tensor import Tensor
from ...lang.terms import (
    TERM_TYPES,
    Build1,
    Const,
    FreeVars,
    FromList,
    IdSupply,
    Index,
    Replicate,
    Scatter,
    Term,
    Transpose,
    Var,
    children,
    postorder,
    rebuild,
    type_name,
)
from ...vectorise.bot import (
    IndexPusher,
    NotBotNormal,
    Push,
    Request,
    Rewrite,
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

TransposeRule = Callable[[int, Transpose, Term], Term]
"""``rule(k, e, batched)``: ``build1 k (λi. e)`` for ``e = tr p a``, given
``batched = build1 k (λi. a)`` vectorised (shape ``[k, *a.shape]``)."""

ReplicateRule = Callable[[int, Replicate, Term], Term]
"""``rule(k, e, batched)``: ``build1 k (λi. e)`` for ``e = replicate n a``, given
``batched = build1 k (λi. a)`` vectorised (shape ``[k, *a.shape]``)."""


# --------------------------------------------------------------------------------------
# dualarr's bot with the student's rule for one construct
# --------------------------------------------------------------------------------------


class _RuleFailed(Exception):
    """A student rule raised, returned something that is not a term, or a wrong term."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class _NotImplementedRule(Exception):
    pass


@dataclass(frozen=True)
class _Rules:
    """The batching rules given for ``tr`` and ``replicate`` (``None``: dualarr's own,
    :data:`dualarr.vectorise.bot.BUILD1_RULES`)."""

    transpose: TransposeRule | None
    replicate: ReplicateRule | None
    student: str | None  # whose rule is checked: "tr", "replicate" or None

    def given(self, which: str) -> Callable[[int, Any, Term], Term] | None:
        return self.transpose if which == "tr" else self.replicate


_TAUGHT = {"build1-tr": "tr", "build1-replicate": "replicate"}
"""The rewrites of Fig. 9 whose result the batching rule of ``tr``/``replicate`` gives."""


class _BatchingVectoriser(Vectoriser):
    """dualarr's ``B[·]`` (:class:`dualarr.vectorise.bot.Vectoriser`) with the result of
    ``build1`` of ``tr`` and of ``replicate`` made by the rules of :class:`_Rules`."""

    def __init__(
        self, size: int, var: Var, supply: IdSupply, free_vars: FreeVars, rules: _Rules
    ) -> None:
        super().__init__(size, var, supply, free_vars)
        self.rules = rules

    def rule(self, request: Request) -> Rewrite:
        rewrite = super().rule(request)
        which = _TAUGHT.get(rewrite.rule)
        given = self.rules.given(which) if which is not None else None
        if which is None or given is None:
            return rewrite
        assert isinstance(request, Vec)
        e = request.body
        return replace(rewrite, assemble=lambda rs: self._apply(which, given, e, rs[0]))

    def _apply(
        self, which: str, rule: Callable[[int, Any, Term], Term], e: Term, batched: Term
    ) -> Term:
        mine = which == self.rules.student
        k = self.k
        try:
            result = rule(k, e, batched)
        except NotImplementedError:
            if mine:
                raise _NotImplementedRule() from None
            raise
        except Exception as err:
            if not mine:
                raise
            raise self._failed(
                e, batched, f"your rule raised {describe_error(err)}",
                _error_hint(which, str(err)),
            ) from None
        if not mine:
            return result
        if not isinstance(result, TERM_TYPES):
            raise self._failed(
                e, batched,
                f"your rule returned a {type(result).__name__}, not a term of the core language",
                "Hint: build the result from the classes of dualarr.lang.terms (core.Transpose, "
                "core.Replicate, …) applied to `batched`.",
            )
        if any(isinstance(n, Build1) for n in postorder([result])):
            raise self._failed(
                e, batched, f"your result still contains build1: {abbreviate_term(result)}",
                "Hint: a batching rule removes the loop (Theorem 5.1, property 1); it may not "
                "rebuild it.",
            )
        if self.depends(result):
            raise self._failed(
                e, batched,
                f"your result mentions the loop variable {self.i.hint}: {abbreviate_term(result)}\n"
                f"The build1 that bound {self.i.hint} is gone, so {self.i.hint} has no value.",
                "Hint: e.array is the argument for *one* value of the loop variable. The "
                "argument for all of them at once is `batched`.",
            )
        expected = (k, *e.shape)
        if result.shape != expected or result.dtype is not e.dtype:
            raise self._failed(
                e, batched,
                f"that build1 has type {type_name(expected, e.dtype)}, but your result has "
                f"type {type_name(result.shape, result.dtype)}: {abbreviate_term(result)}",
                _shape_hint(which, expected, result.shape),
            )
        return result

    def _failed(self, e: Term, batched: Term, message: str, hint: str) -> _RuleFailed:
        where = f"build1 {self.k} (λ{self.i.hint}. {abbreviate_term(e)})"
        return _RuleFailed(
            f"batching {where}\n  with batched : {type_name(batched.shape, batched.dtype)}:\n"
            f"{message}",
            hint,
        )


def _error_hint(which: str, message: str) -> str:
    if which == "tr" and "perm" in message.lower():
        return (
            "Hint: `batched` has one dimension more than e.array (the batch, in front), so "
            "a permutation of `batched` lists every one of its dimensions once: one entry "
            "more than e.perm."
        )
    if "RecursionError" in message:
        return "Hint: your rule calls itself; build the result from `batched` directly."
    return ""


def _shape_hint(which: str, expected: tuple[int, ...], got: tuple[int, ...]) -> str:
    same_dims = sorted(expected) == sorted(got)
    if which == "tr":
        if same_dims:
            return (
                "Hint: all the right dimensions, in the wrong order. Dimension 0 of `batched` "
                "is the batch, so every dimension of e.array sits one place further right in "
                "`batched`; the batch must stay dimension 0 of the result, followed by the "
                "element's dimensions in the order tr p puts them (Fig. 9, build1 of tr)."
            )
        return (
            "Hint: the result of build1 k (λi. tr p a) is k copies of tr p a, one per i: "
            "it has the batch dimension k first, then the shape of tr p a."
        )
    if same_dims:
        return (
            "Hint: all the right dimensions, in the wrong order. replicate n puts its new "
            "dimension in front, so replicating `batched` puts the copies *before* the "
            "batch dimension; vmap's result has the batch dimension first (Fig. 9, build1 "
            "of replicate)."
        )
    return (
        "Hint: the result of build1 k (λi. replicate n a) has the batch dimension k first, "
        "then n copies, then the shape of a."
    )


def _vectorise(roots: Sequence[Term], supply: IdSupply, rules: _Rules) -> list[Term]:
    """dualarr's bot (:func:`dualarr.vectorise.bot.vectorise`, without the rule trace),
    every ``build1`` vectorised by :class:`_BatchingVectoriser`."""
    free_vars = FreeVars()
    new: dict[int, Term] = {}
    for node in postorder(roots):
        result = rebuild(node, tuple(new[id(kid)] for kid in children(node)))
        if isinstance(result, Build1):
            vectoriser = _BatchingVectoriser(result.size, result.var, supply, free_vars, rules)
            result = vectoriser.run(result.body)
        elif isinstance(result, Index) and not isinstance(
            result.array, Var | Const | FromList | Scatter
        ):
            result = IndexPusher(supply, free_vars).solve(Push(result.array, result.index))
        new[id(node)] = result
    return [new[id(r)] for r in roots]


def _mapped_source(f: Callable[..., Any], in_axes: Any, args: Sequence[np.ndarray]) -> Program:
    def mapped(*xs: Tensor) -> Any:
        return vmap(f, in_axes)(*xs)

    mapped.__name__ = f"vmap({getattr(f, '__name__', 'f')})"
    return trace(mapped, *args)


def teaching_vmap(
    f: Callable[..., Any],
    *args: Any,
    in_axes: int | Sequence[int | None] | None = 0,
    transpose_rule: TransposeRule | None = None,
    replicate_rule: ReplicateRule | None = None,
) -> Program:
    """``vmap(f)`` on ``args`` as a program: ``build1 n (λi. f(xs[i]))`` (``da.vmap`` traced)
    vectorised by dualarr's bot (§5), with the batching rules of ``tr`` and ``replicate``
    (Fig. 9) given here (without them, dualarr's own).  No simplification runs."""
    require_callable(f, "f", "teaching_vmap")
    for name, rule in (("transpose_rule", transpose_rule), ("replicate_rule", replicate_rule)):
        if rule is not None:
            require_callable(rule, name, "teaching_vmap")
    arrays = [np.asarray(a, dtype=np.float64) for a in args]
    source = _mapped_source(f, in_axes, arrays)
    rules = _Rules(transpose_rule, replicate_rule, None)
    terms = _vectorise(source.outputs, source.supply, rules)
    return Program(source.name, source.inputs, tuple(terms), source.tuple_output, source.supply)


# --------------------------------------------------------------------------------------
# Test cases: a function of one batch element, where the batch axis is, random shapes
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VmapCase:
    """``vmap(function, in_axes)`` on arguments of ``shapes(rng)`` (the batch axis of
    argument ``a`` at ``in_axes[a]``)."""

    name: str
    function: Callable[..., Tensor]
    in_axes: tuple[int | None, ...]
    shapes: Callable[[np.random.Generator], tuple[tuple[int, ...], ...]]


def _distinct(rng: np.random.Generator, count: int) -> list[int]:
    return [int(d) for d in rng.choice(np.arange(2, 7), size=count, replace=False)]


def _matrix_transpose(m: Tensor) -> Tensor:
    return lang.transpose(m)


def _rotate_dims(t: Tensor) -> Tensor:
    return lang.transpose(t, (1, 2, 0)) * 2.0


def _rotate_back(t: Tensor) -> Tensor:
    return lang.transpose(t, (2, 0, 1)) - t


def _symmetric_part(m: Tensor) -> Tensor:
    return (m + lang.transpose(m)) * 0.5


def _repeat_rows(v: Tensor) -> Tensor:
    return lang.replicate(3, v) * 2.0


def _repeat_matrix(m: Tensor) -> Tensor:
    return lang.replicate(2, lang.sin(m))


def _outer_sum(v: Tensor) -> Tensor:
    n = v.shape[0]
    return lang.replicate(n, v) + lang.transpose(lang.replicate(n, v))


def _shapes_batch_first_matrix(rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
    b, r, c = _distinct(rng, 3)
    return ((b, r, c),)


def _shapes_batch_middle_matrix(rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
    b, r, c = _distinct(rng, 3)
    return ((r, b, c),)


def _shapes_batch_last_rank3(rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
    b, p, q, r = _distinct(rng, 4)
    return ((p, q, r, b),)


def _shapes_cube(rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
    n = int(rng.integers(2, 5))
    return ((n, n, n, n),)


def _shapes_square_batch_last(rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
    n, b = _distinct(rng, 2)
    return ((n, n, b),)


def _shapes_vectors(rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
    b, m = _distinct(rng, 2)
    return ((b, m),)


def _shapes_vectors_three(rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
    (m,) = _distinct(rng, 1)
    return ((3, m),)


def _shapes_vectors_square(rng: np.random.Generator) -> tuple[tuple[int, ...], ...]:
    n = int(rng.integers(2, 6))
    return ((n, n),)


TRANSPOSE_CASES = (
    VmapCase("matrix_transpose", _matrix_transpose, (0,), _shapes_batch_first_matrix),
    VmapCase("matrix_transpose", _matrix_transpose, (1,), _shapes_batch_middle_matrix),
    VmapCase("rotate_dims", _rotate_dims, (-1,), _shapes_batch_last_rank3),
    VmapCase("rotate_back", _rotate_back, (0,), _shapes_cube),
    VmapCase("symmetric_part", _symmetric_part, (2,), _shapes_square_batch_last),
)
"""Test cases for the batching rule of ``tr``: rank 2 and 3, the batch axis first, in
the middle and last, and cubes, where a wrong permutation still has the right shape."""

REPLICATE_CASES = (
    VmapCase("repeat_rows", _repeat_rows, (0,), _shapes_vectors),
    VmapCase("repeat_rows", _repeat_rows, (1,), _shapes_vectors_three),
    VmapCase("repeat_matrix", _repeat_matrix, (1,), _shapes_batch_middle_matrix),
    VmapCase("outer_sum", _outer_sum, (0,), _shapes_vectors_square),
)
"""Test cases for the batching rule of ``replicate``: vectors and matrices, the batch
axis first and second, and ``outer_sum`` on square input, where the batch and the copies
have one size."""


def _sample(case: VmapCase, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.round(rng.normal(size=shape), 2) for shape in case.shapes(rng)]


def _loop(case: VmapCase, args: Sequence[np.ndarray]) -> np.ndarray:
    """The reference: ``f`` on each batch element in a Python loop, stacked on axis 0."""
    sizes = {a.shape[axis] for a, axis in zip(args, case.in_axes, strict=True) if axis is not None}
    (n,) = sizes
    rows = []
    for b in range(n):
        picked = [
            a if axis is None else np.take(a, b, axis=axis)
            for a, axis in zip(args, case.in_axes, strict=True)
        ]
        rows.append(np.asarray(trace(case.function, *picked)(*picked)))
    return np.stack(rows)


def _in_axes_text(case: VmapCase) -> str:
    axes = case.in_axes[0] if len(case.in_axes) == 1 else case.in_axes
    return f"vmap({case.name}, in_axes={axes})"


def _check_batching_rule(
    rule: Callable[..., Term], which: str, cases: Sequence[VmapCase], seeds: int, title: str
) -> Feedback:
    rules = _Rules(
        rule if which == "tr" else None, rule if which == "replicate" else None, which
    )
    failures: list[str] = []
    hints: list[str] = []
    runs = 0
    example = ""
    for number, case in enumerate(cases):
        for seed in range(seeds):
            runs += 1
            args = _sample(case, seed=100 * number + seed)
            where = f"{_in_axes_text(case)} on x : {format_shape(args[0].shape)}"
            source = _mapped_source(case.function, case.in_axes, args)
            try:
                terms = _vectorise(source.outputs, source.supply, rules)
            except _NotImplementedRule:
                return not_implemented(title, "your rule")
            except _RuleFailed as err:
                failures.append(f"{where}: {err.message}")
                if err.hint:
                    hints.append(err.hint)
                break
            except Exception as err:  # the bot stumbled on a term the rule returned
                failures.append(
                    f"{where}: vectorising with your rule raised {describe_error(err)}"
                )
                break
            try:
                check_bot_normal(terms)
            except NotBotNormal as err:
                failures.append(f"{where}: not in the normal form of Theorem 5.1: {err.detail}")
                break
            program = Program(source.name, source.inputs, tuple(terms), False, source.supply)
            expected = _loop(case, args)
            library = np.asarray(vmap(case.function, case.in_axes)(*args))
            try:
                got = np.asarray(program(*args))
            except Exception as err:
                failures.append(
                    f"{where}: evaluating your vectorised program raised "
                    f"{describe_error(err)}\nyour bot:   {abbreviate_term(terms[0])}"
                )
                break
            bad = mismatched_positions(expected, got)
            if got.shape == expected.shape and not bad:
                if not example:
                    example = (f"e.g. {abbreviate_term(source.outputs[0])}  ⟶  "
                               f"{abbreviate_term(terms[0])}")
                continue
            if got.shape != expected.shape:
                detail = (
                    f"your vectorised program gives shape {format_shape(got.shape)}, "
                    f"the loop {format_shape(expected.shape)}"
                )
            else:
                first = bad[0]
                detail = (
                    f"{len(bad)} of {expected.size} elements differ; "
                    f"element {format_position(first)}: "
                    f"the loop gives {format_number(expected[first])} (so does da.vmap: "
                    f"{format_number(library[first])}), yours {format_number(got[first])}"
                )
                hints.append(_value_hint(which))
            failures.append(
                f"{where}, x = {format_array(args[0], 4)}:\n{detail}\n"
                f"source:     {abbreviate_term(source.outputs[0])}\n"
                f"your bot:   {abbreviate_term(terms[0])}"
            )
            break
    if failures:
        return not_yet(
            f"{title}: {len(failures)} of {len(cases)} test cases go wrong",
            *failures,
            *dict.fromkeys(hints),
        )
    return passed(
        f"{title}: {runs} vmaps on random shapes and values agree with a Python loop over the "
        "batch and with da.vmap, with no build1 left",
        example,
    )


def _value_hint(which: str) -> str:
    if which == "tr":
        return (
            "Hint: the shapes fit but the values do not; with equal dimensions a wrong "
            "permutation still has the right shape. Dimension q of tr p a is dimension p[q] "
            "of a: check the direction of your permutation, with the batch dimension kept "
            "first (Fig. 9, build1 of tr)."
        )
    return (
        "Hint: the shapes fit but the values do not: here the number of copies equals the "
        "batch size, so copies and batch can trade places unnoticed by the shape. Element "
        "[b, c] of the result must be element b of the batch (any copy c)."
    )


def check_transpose_batching_rule(rule: TransposeRule) -> Feedback:
    """Check ``rule(k, e, batched)``, the batching rule of ``tr p`` (Fig. 9): ``da.vmap``
    through it, on random shapes and values with the batch axis first, in the middle and
    last, must agree with a Python loop over the batch and with ``da.vmap``."""
    require_callable(rule, "rule", "check_transpose_batching_rule")
    return _check_batching_rule(rule, "tr", TRANSPOSE_CASES, 3, "batching rule of tr (Fig. 9)")


def check_replicate_batching_rule(rule: ReplicateRule) -> Feedback:
    """Check ``rule(k, e, batched)``, the batching rule of ``replicate n`` (Fig. 9), as
    :func:`check_transpose_batching_rule` does (the rule of ``tr`` is dualarr's)."""
    require_callable(rule, "rule", "check_replicate_batching_rule")
    return _check_batching_rule(
        rule, "replicate", REPLICATE_CASES, 3, "batching rule of replicate (Fig. 9)"
    )

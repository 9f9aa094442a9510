"""Assignments 05–07 (``notebooks/assignments/``): share → let, the transposition rules and
the reverse pass over array Deltas.  Every checker passes the solution, fails each stub and
each typical wrong answer with the intended message, and its hints guide without giving
the answer."""

from __future__ import annotations

import heapq
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.ad.reverse import forward, transpose_step
from dualarr.ad.transposition import to_let_form
from dualarr.interp.evaluate import NumpyAlgebra
from dualarr.teach.exercises import Feedback
from dualarr.teach.exercises.array_reverse_pass import (
    check_reverse_pass,
    library_gradient,
    operand_cotangent,
    without_shares,
)
from dualarr.teach.exercises.let_conversion import (
    check_let_conversion,
    delta_cases,
    doubling_chain,
    fibonacci_chain,
    format_let_form,
    let_edge_cases,
    random_delta,
    run_metered,
)
from dualarr.teach.exercises.transposition_rules import (
    CONSTRUCTORS,
    INDEX_OPS,
    SHAPE_OPS,
    check_transposition_rules,
    transposition_cases,
)

Bindings = tuple[list[tuple[int, dl.Delta]], dl.Delta]
Rule = Callable[[dl.Delta, np.ndarray], Any]


def failed_with(feedback: Feedback, *fragments: str) -> None:
    """``feedback`` is a failure whose text contains every fragment."""
    text = str(feedback)
    assert not feedback.passed, text
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"


def hints_of(feedback: Feedback) -> list[str]:
    return [d for d in feedback.details if d.startswith("Hint:")]


def no_answer_in_hints(feedback: Feedback, answers: list[str]) -> None:
    """The feedback has a hint, and no hint spells out a solution fragment."""
    hints = hints_of(feedback)
    assert hints, str(feedback)
    for hint in hints:
        flat = hint.replace(" ", "")
        assert not any(a.replace(" ", "") in flat for a in answers), hint


def not_implemented(*args: Any) -> Any:
    raise NotImplementedError


@pytest.mark.parametrize(
    "check",
    [
        check_let_conversion,
        check_transposition_rules,
        check_reverse_pass,
        lambda value: check_reverse_pass(value, shared=False),
    ],
)
def test_misuse_raises_a_dualarr_error(check: Callable[[Any], Feedback]) -> None:
    with pytest.raises(da.DualarrError, match="must be a function"):
        check(42)


def test_unknown_constructor_is_misuse() -> None:
    with pytest.raises(da.UnsupportedError, match="unknown constructor 'Contract'"):
        check_transposition_rules(lambda d, c: c, ["Contract"])


# --------------------------------------------------------------------------------------
# The shared machinery: the work meter and the test Deltas
# --------------------------------------------------------------------------------------


def test_work_meter_counts_lines_and_stops_runaway_code() -> None:
    def loop(n: int) -> int:
        total = 0
        for k in range(n):
            total += k
        return total

    small, large = run_metered(lambda: loop(100), 10**6), run_metered(lambda: loop(200), 10**6)
    assert small.result == 4950 and not small.exceeded and small.error is None
    assert 1.8 < large.lines / small.lines < 2.2
    endless = run_metered(lambda: loop(10**9), 5_000)
    assert endless.exceeded and endless.result is None and endless.lines > 5_000


def test_work_meter_reports_errors_and_restores_the_trace_function() -> None:
    before = sys.gettrace()

    def broken() -> None:
        raise ValueError("no")

    failed = run_metered(broken, 1_000)
    assert isinstance(failed.error, ValueError) and not failed.exceeded
    assert sys.gettrace() is before


@given(st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_random_deltas_keep_the_invariants_and_the_reverse_pass_is_linear(seed: int) -> None:
    d = random_delta(seed)
    dl.check_invariants([d])
    assert d.shape == (3,) and isinstance(d, dl.Share)
    x0, x1 = np.random.default_rng(seed).normal(size=(3,)), np.ones((2, 3))
    c = np.arange(3.0)
    grads = library_gradient(d, c)
    tangent = forward(NumpyAlgebra(), d, {0: x0, 1: x1})
    lhs = sum(float(np.sum(grads[k] * x)) for k, x in ((0, x0), (1, x1)) if k in grads)
    assert np.isclose(lhs, float(np.sum(c * tangent)))
    assert not any(isinstance(n, dl.Share) for n in dl.delta_postorder([without_shares(d)]))


def test_chains_and_cases() -> None:
    assert dl.size([doubling_chain(10)]).shares == 11
    assert dl.size([fibonacci_chain(10)]).shares == 12
    names = [name for name, _ in delta_cases()]
    assert len(names) == len(set(names)) >= 15
    chain = doubling_chain(2)
    assert format_let_form(list(to_let_form(chain).bindings), chain) == (
        "let s1 = Input 0 in\nlet s2 = Add s1 s1 in\nlet s3 = Add s2 s2 in\ns3"
    )


# --------------------------------------------------------------------------------------
# Assignment 5: share → let
# --------------------------------------------------------------------------------------


def let_form(delta: dl.Delta) -> Bindings:
    fragments: dict[int, dl.Delta] = {}
    stack, seen = [delta], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dl.Share):
            fragments[node.id] = node.delta
        stack.extend(dl.delta_children(node))
    return sorted(fragments.items()), delta


def tree_walk(delta: dl.Delta) -> Bindings:
    fragments: dict[int, dl.Delta] = {}

    def walk(node: dl.Delta) -> None:
        if isinstance(node, dl.Share):
            fragments[node.id] = node.delta
        for kid in dl.delta_children(node):
            walk(kid)

    walk(delta)
    return sorted(fragments.items()), delta


LET_ANSWERS = ["sorted(", "seen", "id(node)", "delta_postorder", "to_let_form"]


def test_let_conversion_solution_passes() -> None:
    feedback = check_let_conversion(let_form)
    assert feedback.passed, str(feedback)
    assert "lowest id first" in str(feedback)


def test_let_conversion_accepts_any_dependency_order_and_a_let_form_object() -> None:
    def postorder(delta: dl.Delta) -> Bindings:
        order = dl.delta_postorder([delta])
        return [(n.id, n.delta) for n in order if isinstance(n, dl.Share)], delta

    feedback = check_let_conversion(postorder)
    assert feedback.passed and "before it is used" in str(feedback), str(feedback)
    assert check_let_conversion(to_let_form).passed


def test_let_conversion_stub() -> None:
    failed_with(check_let_conversion(not_implemented), "share → let is not implemented yet")


def test_let_conversion_exponential_walk() -> None:
    feedback = check_let_conversion(tree_walk)
    failed_with(feedback, "the work is not linear", "more than 30", "exponentially many paths")
    no_answer_in_hints(feedback, LET_ANSWERS)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda d: (let_form(d)[0][::-1], d), ["uses s4 before it is bound", "Invariant 1"]),
        (
            lambda d: (let_form(d)[0] + let_form(d)[0], d),
            ["bound more than once: s1 (2 times)", "Remember which ids"],
        ),
        (
            lambda d: (
                [(k, next(n for n in dl.delta_postorder([d]) if getattr(n, "id", None) == k))
                 for k, _ in let_form(d)[0]],
                d,
            ),
            ["`let s1 = s1`", "the Share itself becomes the variable"],
        ),
        (
            lambda d: (let_form(d)[0][-1:], d),
            ["never bound, though the Delta has", "looks into the whole DAG"],
        ),
        (lambda d: (let_form(d)[0] + [(99, d)], d), ["no Share of the Delta has that id: s99"]),
        (
            lambda d: (let_form(d)[0], d.delta if isinstance(d, dl.Share) else d),
            ["the body is the operand of the root Share", "the root of the Delta"],
        ),
        (lambda d: let_form(d)[0], ["not a pair (bindings, body)"]),
        (lambda d: ([(str(k), f) for k, f in let_form(d)[0]], d), ["not an int"]),
        (lambda d: ([(k, 1.0) for k, _ in let_form(d)[0]], d), ["binds a float, not a Delta"]),
        (lambda d: 1 / 0, ["raised ZeroDivisionError"]),
    ],
    ids=[
        "highest first", "twice", "share itself", "root only", "extra", "body", "no pair",
        "string id", "not a delta", "raises",
    ],
)
def test_let_conversion_wrong_answers(
    answer: Callable[[dl.Delta], Any], fragments: list[str]
) -> None:
    feedback = check_let_conversion(answer)
    failed_with(feedback, *fragments)
    if hints_of(feedback):
        no_answer_in_hints(feedback, LET_ANSWERS)


# The edges of Fig. 20 (#36): a Delta with nothing to bind, a Share whose operand is a Share
# (its binding is a variable), and a chain deeper than Python's recursion limit.


def looking_through_shares(delta: dl.Delta) -> Bindings:
    fragments: dict[int, dl.Delta] = {}
    stack, seen = [delta], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dl.Share):
            fragment = node.delta
            while isinstance(fragment, dl.Share):
                fragment = fragment.delta
            fragments[node.id] = fragment
            stack.append(fragment)
        else:
            stack.extend(dl.delta_children(node))
    return sorted(fragments.items()), delta


def recursive_walk(delta: dl.Delta) -> Bindings:
    fragments: dict[int, dl.Delta] = {}
    seen: set[int] = set()

    def walk(node: dl.Delta) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, dl.Share):
            fragments[node.id] = node.delta
        for kid in dl.delta_children(node):
            walk(kid)

    walk(delta)
    return sorted(fragments.items()), delta


def test_let_conversion_edges_are_checked() -> None:
    names = [name for name, _ in let_edge_cases()]
    assert any("nothing to bind" in name for name in names)
    assert any("operand is a Share" in name for name in names)
    feedback = check_let_conversion(let_form)
    assert feedback.passed and "a chain of 3000 steps converts" in str(feedback), str(feedback)


def test_let_conversion_looking_through_a_share_fails() -> None:
    feedback = check_let_conversion(looking_through_shares)
    failed_with(
        feedback,
        "a Share whose operand is a Share",
        "s2 is bound to 'Input 0', not to the operand of Share 2",
        "`let s2 = s1`",
        "the loss of sharing of §2.5",
    )
    no_answer_in_hints(feedback, LET_ANSWERS)


def test_let_conversion_recursion_fails_on_a_long_chain() -> None:
    feedback = check_let_conversion(recursive_walk)
    assert feedback.title.endswith("but not on a long chain"), str(feedback)
    failed_with(
        feedback,
        "doubling chain y = y + y of 3000 steps",
        "raised RecursionError",
        "sys.getrecursionlimit()",
    )
    no_answer_in_hints(feedback, LET_ANSWERS)


# --------------------------------------------------------------------------------------
# Assignment 6: transposition rules
# --------------------------------------------------------------------------------------


def in_range(components: tuple[Any, ...], shape: tuple[int, ...]) -> np.ndarray:
    ok = np.ones(np.shape(components[0]), dtype=bool)
    for component, extent in zip(components, shape, strict=False):
        ok &= (component >= 0) & (component < extent)
    return ok


def transpose_rule(d: dl.Delta, c: np.ndarray) -> np.ndarray:
    match d:
        case dl.Scale(factor=y):
            return np.asarray(y * c)
        case dl.SumOuter(delta=u):
            return np.broadcast_to(c, u.shape).copy()
        case dl.Replicate():
            return np.asarray(c.sum(axis=0))
        case dl.Transpose(perm=p):
            return np.transpose(c, np.argsort(p))
        case dl.Reshape(delta=u):
            return c.reshape(u.shape)
        case dl.Index(delta=u, index=ix):
            out = np.zeros(u.shape)
            at = tuple(int(np.asarray(i)) for i in ix)
            if in_range(at, u.shape):
                out[at] = c
            return out
        case dl.Gather(delta=u, fn=fn):
            ok = in_range(fn.components, u.shape)
            out = np.zeros(u.shape)
            np.add.at(out, tuple(np.asarray(k)[ok] for k in fn.components), c[ok])
            return out
        case dl.Scatter(delta=u, fn=fn):
            ok = in_range(fn.components, d.outer)
            out = np.zeros(u.shape)
            out[ok] = c[tuple(np.asarray(k)[ok] for k in fn.components)]
            return out
        case _:
            raise NotImplementedError


def with_mistake(constructor: type, wrong: Rule) -> Rule:
    def rule(d: dl.Delta, c: np.ndarray) -> Any:
        return wrong(d, c) if isinstance(d, constructor) else transpose_rule(d, c)

    return rule


RULE_ANSWERS = [
    "argsort", "add.at", "sum(axis=0)", "broadcast_to", "y * c", "y*c", "c.sum",
    "np.transpose(c,", "inverse permutation",
]


def test_transposition_solution_passes_every_constructor() -> None:
    feedback = check_transposition_rules(transpose_rule)
    assert feedback.passed, str(feedback)
    assert all(name in str(feedback) for name in CONSTRUCTORS)


@pytest.mark.parametrize("constructor", CONSTRUCTORS)
def test_transposition_cases_satisfy_the_adjoint_identity_with_dualarrs_rule(
    constructor: str,
) -> None:
    alg = NumpyAlgebra()
    rng = np.random.default_rng(0)
    for case in transposition_cases(constructor):
        d = case.node
        x, c = rng.normal(size=d.delta.shape), rng.normal(size=d.shape)
        lhs = np.sum(np.asarray(transpose_step(alg, d, c)) * x)
        assert np.isclose(lhs, np.sum(c * forward(alg, d, {0: x}))), case.description


def test_transposition_stubs() -> None:
    def scale_only(d: dl.Delta, c: np.ndarray) -> Any:
        if isinstance(d, dl.Scale):
            return d.factor * c
        raise NotImplementedError

    failed_with(
        check_transposition_rules(scale_only, SHAPE_OPS),
        "4 of 4 constructors not right yet",
        "not implemented yet (NotImplementedError): SumOuter, Replicate, Transpose, Reshape",
    )
    failed_with(
        check_transposition_rules(not_implemented, INDEX_OPS),
        "not implemented yet (NotImplementedError): Index, Gather, Scatter",
    )
    partly = check_transposition_rules(scale_only)
    failed_with(partly, "right: Scale (2 maps)", "7 of 8 constructors")


def buffered_gather(d: dl.Delta, c: np.ndarray) -> Any:
    assert isinstance(d, dl.Gather)
    out = np.zeros(d.delta.shape)
    out[tuple(np.asarray(k) for k in d.fn.components)] += c
    return out


def unchecked_gather(d: dl.Delta, c: np.ndarray) -> Any:
    assert isinstance(d, dl.Gather)
    out = np.zeros(d.delta.shape)
    np.add.at(out, tuple(np.asarray(k) for k in d.fn.components), c)
    return out


def unchecked_scatter(d: dl.Delta, c: np.ndarray) -> Any:
    assert isinstance(d, dl.Scatter)
    return c[tuple(np.clip(np.asarray(k), -1, c.shape[0] - 1) for k in d.fn.components)]


@pytest.mark.parametrize(
    ("constructor", "wrong", "fragments"),
    [
        (dl.Scale, lambda d, c: c, ["the factor is missing"]),
        (dl.Scale, lambda d, c: c / d.factor, ["you divided by the factor", "not its inverse"]),
        (dl.SumOuter, lambda d, c: c, ["but u has shape", "returns an array of u's shape"]),
        (dl.Replicate, lambda d, c: c[0], ["one row only"]),
        (dl.Replicate, lambda d, c: c.mean(axis=0), ["you averaged"]),
        (dl.Transpose, lambda d, c: np.transpose(c, d.perm), ["applied the permutation [1, 2, 0]"]),
        (
            dl.Reshape,
            lambda d, c: np.reshape(c, d.delta.shape, order="F"),
            ["row-major (C) order"],
        ),
        (dl.Index, lambda d, c: c, ["Index u ix reads the part of u at ix"]),
        (dl.Gather, buffered_gather, ["(elements read twice)", "adds only once"]),
        (dl.Gather, unchecked_gather, ["raised IndexError", "points outside u"]),
        (
            dl.Gather,
            lambda d, c: c[: d.delta.shape[0]],
            ["a write through the same function"],
        ),
        (dl.Scatter, unchecked_scatter, ["points outside the output"]),
        (dl.Scatter, lambda d, c: np.zeros(d.delta.shape), ["The transpose of a write is a read"]),
        (dl.Scale, lambda d, c: "no", ["returned a str, not an array"]),
    ],
    ids=[
        "scale no factor", "scale divides", "sumouter shape", "replicate first row",
        "replicate mean", "transpose same perm", "reshape F order", "index shape",
        "gather buffered", "gather unchecked", "gather reads", "scatter unchecked",
        "scatter zeros", "not an array",
    ],
)
def test_transposition_wrong_answers(
    constructor: type, wrong: Rule, fragments: list[str]
) -> None:
    name = constructor.__name__
    feedback = check_transposition_rules(with_mistake(constructor, wrong), [name])
    failed_with(feedback, "1 of 1 constructor not right yet", *fragments)
    no_answer_in_hints(feedback, RULE_ANSWERS)


def test_transposition_failure_names_input_expected_and_obtained() -> None:
    first_row = with_mistake(dl.Replicate, lambda d, c: c[0])
    feedback = check_transposition_rules(first_row, ["Replicate"])
    failed_with(feedback, "Replicate 2 u, u : [3]", "⟨T(c), x⟩ =", "expected T(c) =", "yours =")


# Out-of-range indices (#36): the language is total (§5.2): Index and Gather read 0 outside
# the array, and Scatter drops the writes outside the output. An answer without the range
# guard, or with half of it, fails on a named case with a hint naming §5.2.


def unguarded_index(d: dl.Delta, c: np.ndarray) -> Any:
    assert isinstance(d, dl.Index)
    out = np.zeros(d.delta.shape)
    out[tuple(int(np.asarray(i)) for i in d.index)] = c
    return out


def index_guarding_the_first_axis_only(d: dl.Delta, c: np.ndarray) -> Any:
    assert isinstance(d, dl.Index)
    out = np.zeros(d.delta.shape)
    at = tuple(int(np.asarray(i)) for i in d.index)
    if 0 <= at[0] < d.delta.shape[0]:
        out[at] = c
    return out


def guarded_with(bound: Callable[[np.ndarray, int], np.ndarray], axes: int | None = None) -> Rule:
    """A Gather or Scatter rule whose range guard keeps the indices ``k`` with
    ``bound(k, length)``, on the first ``axes`` components (all: None)."""

    def rule(d: dl.Delta, c: np.ndarray) -> Any:
        assert isinstance(d, dl.Gather | dl.Scatter)
        components = tuple(np.asarray(k) for k in d.fn.components)
        extents = d.delta.shape if isinstance(d, dl.Gather) else d.outer
        ok = np.ones(components[0].shape, dtype=bool)
        for k, n in list(zip(components, extents, strict=False))[:axes]:
            ok &= bound(k, n)
        picked = tuple(k[ok] for k in components)
        out = np.zeros(d.delta.shape)
        if isinstance(d, dl.Gather):
            np.add.at(out, picked, c[ok])
        else:
            out[ok] = c[picked]
        return out

    return rule


GUARDED = guarded_with(lambda k, n: (k >= 0) & (k < n))
UPPER_ONLY = guarded_with(lambda k, n: k < n)
OFF_BY_ONE = guarded_with(lambda k, n: (k >= 0) & (k <= n))
FIRST_AXIS_ONLY = guarded_with(lambda k, n: (k >= 0) & (k < n), axes=1)


@pytest.mark.parametrize(
    ("constructor", "wrong", "fragments"),
    [
        (dl.Index, unguarded_index, ["Index u [4], u : [4,", "raised IndexError"]),
        (dl.Index, index_guarding_the_first_axis_only, ["Index u [1, 4], u : [3,4,2]"]),
        (dl.Gather, unchecked_gather, ["reads out of range give 0", "raised IndexError"]),
        (dl.Gather, UPPER_ONLY, ["Gather [5] u (λi. [2, -1, 5, 0, 2][i])", "expected 0"]),
        (dl.Gather, OFF_BY_ONE, ["(index 4 is past the end: reads 0)", "raised IndexError"]),
        (dl.Gather, FIRST_AXIS_ONLY, ["out of range in the second axis", "raised IndexError"]),
        (dl.Scatter, UPPER_ONLY, ["writes out of range are dropped", "expected 0"]),
        (dl.Scatter, FIRST_AXIS_ONLY, ["Scatter [3,4] u", "in either axis are dropped"]),
    ],
    ids=[
        "index unguarded", "index first axis", "gather unguarded", "gather negative",
        "gather off by one", "gather first axis", "scatter negative", "scatter first axis",
    ],
)
def test_transposition_answers_without_the_range_guard_fail_naming_the_total_semantics(
    constructor: type, wrong: Rule, fragments: list[str]
) -> None:
    name = constructor.__name__
    feedback = check_transposition_rules(with_mistake(constructor, wrong), [name])
    failed_with(feedback, "1 of 1 constructor not right yet", *fragments)
    (hint,) = hints_of(feedback)
    assert "total (§5.2)" in hint and "out" in hint, hint
    no_answer_in_hints(feedback, RULE_ANSWERS)


def test_transposition_checks_reads_and_writes_out_of_range() -> None:
    for name in INDEX_OPS:
        wild = [case for case in transposition_cases(name) if case.out_of_range]
        assert len(wild) >= 3, name
    for constructor in (dl.Gather, dl.Scatter):  # the guard of every axis passes
        feedback = check_transposition_rules(with_mistake(constructor, GUARDED), INDEX_OPS)
        assert feedback.passed, str(feedback)


# --------------------------------------------------------------------------------------
# Assignment 7: the reverse pass
# --------------------------------------------------------------------------------------


def reverse_tree(delta: dl.Delta, c: np.ndarray) -> dict[int, np.ndarray]:
    grad: dict[int, np.ndarray] = {}
    stack = [(c, delta)]
    while stack:
        c, d = stack.pop()
        match d:
            case dl.Zero():
                pass
            case dl.Input(index=n):
                grad[n] = grad[n] + c if n in grad else c
            case dl.Share(delta=below):
                stack.append((c, below))
            case dl.Add(left=a, right=b):
                stack += [(c, a), (c, b)]
            case dl.FromList(deltas=rows):
                stack += [(c[q], row) for q, row in enumerate(rows)]
            case _:
                assert isinstance(d, dl.UnaryDelta)  # no loop in these programs
                stack.append((operand_cotangent(d, c), d.delta))
    return grad


def reverse_pass(delta: dl.Delta, c: np.ndarray) -> dict[int, np.ndarray]:
    grad: dict[int, np.ndarray] = {}
    accum: dict[int, np.ndarray] = {}
    fragment: dict[int, dl.Delta] = {}
    pending: list[int] = []

    def eval_delta(c: np.ndarray, d: dl.Delta) -> None:
        stack = [(c, d)]
        while stack:
            c, d = stack.pop()
            match d:
                case dl.Zero():
                    pass
                case dl.Input(index=n):
                    grad[n] = grad[n] + c if n in grad else c
                case dl.Share(id=i, delta=below):
                    if i in accum:
                        accum[i] = accum[i] + c
                    else:
                        accum[i], fragment[i] = c, below
                        heapq.heappush(pending, -i)
                case dl.Add(left=a, right=b):
                    stack += [(c, a), (c, b)]
                case dl.FromList(deltas=rows):
                    stack += [(c[q], row) for q, row in enumerate(rows)]
                case _:
                    assert isinstance(d, dl.UnaryDelta)  # no loop in these programs
                    stack.append((operand_cotangent(d, c), d.delta))

    eval_delta(c, delta)
    while pending:
        i = -heapq.heappop(pending)
        eval_delta(accum.pop(i), fragment.pop(i))
    return grad


def pass_picking(pick: Callable[[dict[int, Any]], int], done_set: bool, overwrite: bool) -> Rule:
    """Fig. 17 with another choice of the next Share, a set of evaluated Shares (that
    drops later contributions) or an accumulator that keeps only the last one."""

    def run(delta: dl.Delta, c: np.ndarray) -> dict[int, np.ndarray]:
        grad: dict[int, np.ndarray] = {}
        accum: dict[int, np.ndarray] = {}
        fragment: dict[int, dl.Delta] = {}
        done: set[int] = set()

        def eval_delta(c: np.ndarray, d: dl.Delta) -> None:
            match d:
                case dl.Zero():
                    pass
                case dl.Input(index=n):
                    grad[n] = grad[n] + c if n in grad else c
                case dl.Share(id=i, delta=below):
                    if i in done:
                        return
                    accum[i] = c if overwrite or i not in accum else accum[i] + c
                    fragment[i] = below
                case dl.Add(left=a, right=b):
                    eval_delta(c, a)
                    eval_delta(c, b)
                case dl.FromList(deltas=rows):
                    for q, row in enumerate(rows):
                        eval_delta(c[q], row)
                case _:
                    assert isinstance(d, dl.UnaryDelta)  # no loop in these programs
                    eval_delta(operand_cotangent(d, c), d.delta)

        eval_delta(c, delta)
        while accum:
            i = pick(accum)
            if done_set:
                done.add(i)
            eval_delta(accum.pop(i), fragment.pop(i))
        return grad

    return run


PASS_ANSWERS = ["max(", "heapq", "heappush", "largest id", "decreasing", "accum[id] +="]


def test_reverse_pass_solutions_pass() -> None:
    for answer, shared in ((reverse_tree, False), (reverse_pass, False), (reverse_pass, True)):
        feedback = check_reverse_pass(answer, shared=shared)
        assert feedback.passed, str(feedback)
    assert check_reverse_pass(pass_picking(max, False, False)).passed


def test_reverse_pass_stubs() -> None:
    for shared in (False, True):
        failed_with(
            check_reverse_pass(not_implemented, shared=shared),
            "the reverse pass is not implemented yet",
        )


def test_reverse_pass_that_walks_through_shares_is_exponential() -> None:
    feedback = check_reverse_pass(reverse_tree)
    failed_with(feedback, "right gradients, but the work is not linear", "more than 30")
    no_answer_in_hints(feedback, PASS_ANSWERS)


def test_reverse_pass_smallest_id_first_reevaluating_is_exponential() -> None:
    failed_with(check_reverse_pass(pass_picking(min, False, False)), "the work is not linear")


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (pass_picking(min, True, False), ["expected 14.28, got 0", "before all of its cotangent"]),
        (
            pass_picking(lambda accum: next(iter(accum)), True, False),
            ["before all of its cotangent"],
        ),
        (pass_picking(max, False, True), ["one Share used twice", "must add up in accum[id]"]),
    ],
    ids=["smallest first", "first collected first", "overwrite accum"],
)
def test_reverse_pass_wrong_orders_and_accumulation(
    answer: Rule, fragments: list[str]
) -> None:
    feedback = check_reverse_pass(answer)
    failed_with(feedback, "on Delta DAGs", *fragments)
    no_answer_in_hints(feedback, PASS_ANSWERS)


def test_reverse_pass_evaluating_each_share_at_its_first_use() -> None:
    def eager(delta: dl.Delta, c: np.ndarray) -> dict[int, np.ndarray]:
        grad: dict[int, np.ndarray] = {}
        done: set[int] = set()
        stack = [(c, delta)]
        while stack:
            c, d = stack.pop()
            match d:
                case dl.Share(id=i, delta=below):
                    if i not in done:
                        done.add(i)
                        stack.append((c, below))
                case dl.Input(index=n):
                    grad[n] = grad[n] + c if n in grad else c
                case dl.Add(left=a, right=b):
                    stack += [(c, a), (c, b)]
                case dl.FromList(deltas=rows):
                    stack += [(c[q], row) for q, row in enumerate(rows)]
                case dl.Zero():
                    pass
                case _:
                    assert isinstance(d, dl.UnaryDelta)  # no loop in these programs
                    stack.append((operand_cotangent(d, c), d.delta))
        return grad

    failed_with(check_reverse_pass(eager), "before all of its cotangent had arrived")


def test_reverse_tree_wrong_answers() -> None:
    def overwrite_inputs(delta: dl.Delta, c: np.ndarray) -> dict[int, np.ndarray]:
        grad: dict[int, np.ndarray] = {}

        def walk(c: np.ndarray, d: dl.Delta) -> None:
            if isinstance(d, dl.Input):
                grad[d.index] = c
            elif isinstance(d, dl.Add):
                walk(c, d.left)
                walk(c, d.right)
            elif isinstance(d, dl.FromList):
                for q, row in enumerate(d.deltas):
                    walk(c[q], row)
            elif not isinstance(d, dl.Zero):
                assert isinstance(d, dl.UnaryDelta)  # not Share/Input; no loop
                walk(operand_cotangent(d, c), d.delta)

        walk(c, delta)
        return grad

    def whole_cotangent_to_rows(delta: dl.Delta, c: np.ndarray) -> dict[int, np.ndarray]:
        if isinstance(delta, dl.FromList):
            grads = [reverse_tree(row, c) for row in delta.deltas]
            return {k: v for g in grads for k, v in g.items()}
        return reverse_tree(delta, c)

    failed_with(
        check_reverse_pass(overwrite_inputs, shared=False),
        "on Add (Input 0) (Scale [2,-1,0.5] (Input 0))",
        "Input 0, element [0]: expected",
        "must collect both contributions",
    )
    failed_with(
        check_reverse_pass(whole_cotangent_to_rows, shared=False),
        "FromList [Input 0",
        "has shape [2,3], but Input 0 has shape [3]",
        "receives row q of the cotangent",
    )
    failed_with(
        check_reverse_pass(lambda d, c: {0: c}, shared=False),
        "on Scale [2,-1,0.5] (Input 0)",
        "operand_cotangent(d, c)",
    )


def test_reverse_pass_malformed_results() -> None:
    failed_with(check_reverse_pass(lambda d, c: [c]), "returned a list, not a dict")
    failed_with(check_reverse_pass(lambda d, c: {"x": c}), "use the Input's index")
    failed_with(
        check_reverse_pass(lambda d, c: library_gradient(d, c) | {7: c}),
        "there is no Input 7 in this Delta",
    )
    failed_with(check_reverse_pass(lambda d, c: {}), "no gradient for Input 0")
    failed_with(check_reverse_pass(lambda d, c: 1 / 0), "raised ZeroDivisionError")


# Assignment 7 at the edges (#36): rows with a dimension of size 1, gathers, scatters and
# indices out of range, negative or repeated (the total semantics, §5.2), and cotangents
# added into in place. Each wrong answer fails on a named Delta with a hint naming the rule.


def own_rule(bound: Callable[[np.ndarray, int], np.ndarray] | None) -> Rule:
    """Index, Gather and Scatter transposed by hand (the rest by operand_cotangent), with
    a range guard keeping the indices ``k`` with ``bound(k, length)`` (None: no guard)."""

    def keep(k: np.ndarray, n: int) -> np.ndarray:
        return np.ones(k.shape, dtype=bool) if bound is None else bound(k, n)

    def rule(d: dl.Delta, c: np.ndarray) -> Any:
        match d:
            case dl.Gather(delta=u, fn=fn):
                (k,) = (np.asarray(a) for a in fn.components)
                ok = keep(k, u.shape[0])
                out = np.zeros(u.shape)
                np.add.at(out, k[ok], np.asarray(c)[ok])
                return out
            case dl.Scatter(fn=fn, outer=outer):
                (k,) = (np.asarray(a) for a in fn.components)
                ok = keep(k, outer[0])
                return np.where(ok, np.asarray(c)[np.where(ok, k, 0)], 0.0)
            case dl.Index(delta=u, index=ix):
                out = np.zeros(u.shape)
                at = tuple(int(np.asarray(i)) for i in ix)
                if all(keep(np.asarray(a), n) for a, n in zip(at, u.shape, strict=False)):
                    out[at] = c
                return out
        assert isinstance(d, dl.UnaryDelta)  # not Zero/Input/Add/Share/FromList; no loop
        return operand_cotangent(d, c)

    return rule


def reverse_variant(
    rule: Callable[[Any, np.ndarray], Any] = operand_cotangent,
    split_rows: Callable[[np.ndarray, int], np.ndarray] = lambda c, q: c[q],
    in_place_accum: bool = False,
    in_place_grad: bool = False,
) -> Rule:
    """The solution's reverse pass with one of its pieces replaced."""

    def run(delta: dl.Delta, c: np.ndarray) -> dict[int, np.ndarray]:
        grad: dict[int, np.ndarray] = {}
        accum: dict[int, np.ndarray] = {}
        fragment: dict[int, dl.Delta] = {}
        stack: list[tuple[np.ndarray, dl.Delta]] = []

        def push(c: np.ndarray, d: dl.Delta) -> None:
            stack.append((c, d))
            while stack:
                c, d = stack.pop()
                match d:
                    case dl.Zero():
                        pass
                    case dl.Input(index=n):
                        if n not in grad:
                            grad[n] = c
                        elif in_place_grad:
                            grad[n] += c
                        else:
                            grad[n] = grad[n] + c
                    case dl.Share(id=i, delta=below):
                        if i not in accum:
                            accum[i], fragment[i] = c, below
                        elif in_place_accum:
                            accum[i] += c
                        else:
                            accum[i] = accum[i] + c
                    case dl.Add(left=a, right=b):
                        stack.extend([(c, a), (c, b)])
                    case dl.FromList(deltas=rows):
                        stack.extend((split_rows(c, q), row) for q, row in enumerate(rows))
                    case _:
                        assert isinstance(d, dl.UnaryDelta)  # no loop in these programs
                        stack.append((rule(d, c), d.delta))

        push(c, delta)
        while accum:
            i = max(accum)
            push(accum.pop(i), fragment.pop(i))
        return grad

    return run


def squeezed(c: np.ndarray, q: int) -> np.ndarray:
    return np.squeeze(c[q : q + 1])


def test_reverse_pass_variant_of_the_solution_passes() -> None:
    for shared in (False, True):
        feedback = check_reverse_pass(reverse_variant(), shared=shared)
        assert feedback.passed, str(feedback)
        guarded = reverse_variant(rule=own_rule(lambda k, n: (k >= 0) & (k < n)))
        feedback = check_reverse_pass(guarded, shared=shared)
        assert feedback.passed, str(feedback)


def test_reverse_pass_rows_with_a_dimension_of_size_one() -> None:
    answer = reverse_variant(split_rows=squeezed)
    for shared, fragment in (
        (False, "on FromList [Input 0, Scale [[2,-1,0.5]] (Input 1)], Input 0, Input 1 : [1,3]"),
        (True, "on one Share of shape [1,3] used as both rows of a FromList"),
    ):
        feedback = check_reverse_pass(answer, shared=shared)
        failed_with(
            feedback, fragment, "has shape [3], but Input 0 has shape [1,3]",
            "its dimensions of size 1 included",
        )
        no_answer_in_hints(feedback, [*PASS_ANSWERS, "squeeze", "c[q]"])


@pytest.mark.parametrize(
    ("bound", "fragments"),
    [
        (None, ["a repeated, a too large and a negative index", "raised IndexError"]),
        (lambda k, n: k < n, ["Gather [4] (Input 0)", "element [2]: expected 0"]),
        (lambda k, n: k >= 0, ["a repeated, a too large and a negative index", "IndexError"]),
    ],
    ids=["unguarded", "negative indices wrap", "too large indices"],
)
def test_reverse_pass_index_rules_at_the_edges_of_the_total_semantics(
    bound: Callable[[np.ndarray, int], np.ndarray] | None, fragments: list[str]
) -> None:
    feedback = check_reverse_pass(reverse_variant(rule=own_rule(bound)), shared=False)
    failed_with(feedback, *fragments, "the language is total (§5.2)", "operand_cotangent(d, c)")
    no_answer_in_hints(feedback, PASS_ANSWERS)


def test_reverse_pass_task1_runs_the_edge_deltas() -> None:
    from dualarr.teach.exercises.array_reverse_pass import _dag_cases, _tree_cases

    names = [name for name, _, _ in _tree_cases()]
    assert any("[1,3]" in name for name in names)
    assert sum("Gather" in n or "Scatter" in n or "Index" in n for n in names) >= 3
    assert any("[1,3]" in name for name, _ in _dag_cases())


def test_reverse_pass_adding_into_a_shared_cotangent_in_place() -> None:
    accum = check_reverse_pass(reverse_variant(in_place_accum=True))
    failed_with(accum, "on Delta DAGs", "adds into the very array object you stored")
    assert "before all of its cotangent" not in str(accum)  # not the order's hint
    no_answer_in_hints(accum, PASS_ANSWERS)
    grad = check_reverse_pass(reverse_variant(in_place_grad=True), shared=False)
    failed_with(grad, "output array is read-only", "adds into the very array object")


# --------------------------------------------------------------------------------------
# The student notebooks: every check cell fails on the stubs, and says why
# --------------------------------------------------------------------------------------

ASSIGNMENTS = Path(__file__).resolve().parent.parent / "notebooks" / "assignments"


def _code_cells(notebook: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [
        ("".join(cell["source"]), cell.get("metadata", {}).get("tags", []))
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
    ]


@pytest.mark.parametrize(
    "name", ["05-let-conversion", "06-transposition-rules", "07-array-reverse-pass"]
)
def test_student_check_cells_fail_on_the_stubs(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook = json.loads((ASSIGNMENTS / f"{name}.ipynb").read_text(encoding="utf-8"))
    cells = _code_cells(notebook)
    assert "raise NotImplementedError" in "".join(source for source, _ in cells)
    checks = [source for source, tags in cells if "check" in tags]
    if not checks:  # a hand-kept student notebook: its stored outputs
        stored = [
            cell for cell in notebook["cells"]
            if cell["cell_type"] == "code" and "".join(cell["source"]).startswith("check_")
        ]
        assert stored
        texts = [
            "".join("".join(o.get("data", {}).get("text/plain", "")) for o in cell["outputs"])
            for cell in stored
        ]
        assert all(text.startswith(("✘ NOT YET", "✔ PASSED")) for text in texts), texts
        assert sum(text.startswith("✘ NOT YET") for text in texts) >= len(texts) - 1
        return
    # Generated from notebooks/assignments/source: run it, every stub raising. A check
    # cell is graded(check_…(…)), and writes its failure to stderr (no points).
    assert all(source.startswith("graded(check_") for source in checks), checks
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for source, tags in cells:
        exec(compile(source, f"{name}.ipynb", "exec"), namespace)
        err = capsys.readouterr().err
        if "check" in tags:
            assert err.startswith("✘ NOT YET"), (source, err)

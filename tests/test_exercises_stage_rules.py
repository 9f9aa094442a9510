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
            out[tuple(int(np.asarray(i)) for i in ix)] = c
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
                assert not isinstance(d, dl.Share | dl.Input)
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


# --------------------------------------------------------------------------------------
# The student notebooks: every check cell stores its stub's failure
# --------------------------------------------------------------------------------------

ASSIGNMENTS = Path(__file__).resolve().parent.parent / "notebooks" / "assignments"


@pytest.mark.parametrize(
    "name", ["05-let-conversion", "06-transposition-rules", "07-array-reverse-pass"]
)
def test_student_check_cells_store_the_stubs_failure(name: str) -> None:
    notebook = json.loads((ASSIGNMENTS / f"{name}.ipynb").read_text(encoding="utf-8"))
    checks = [
        cell
        for cell in notebook["cells"]
        if cell["cell_type"] == "code" and "".join(cell["source"]).startswith("check_")
    ]
    assert checks
    failing = 0
    for cell in checks:
        text = "".join(
            "".join(output.get("data", {}).get("text/plain", ""))
            for output in cell["outputs"]
        )
        assert text.startswith(("✘ NOT YET", "✔ PASSED")), text
        failing += text.startswith("✘ NOT YET")
    assert failing >= len(checks) - 1  # 06 shows its worked example (Scale) passing
    assert "raise NotImplementedError" in "".join(
        "".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"
    )

"""``dualarr.teach.exercises``: every checker passes the solution and fails typical wrong
answers with a message that says what is wrong (the classroom assignments in
``notebooks/assignments/``)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualarr as da
import dualarr.teach.exercises
from dualarr.ad import delta as dl
from dualarr.lang import terms as core
from dualarr.lang.terms import DType, IdSupply
from dualarr.teach.exercises import (
    Feedback,
    check_bot_index_rule,
    check_bot_sum_outer_rule,
    check_delta_rule,
    check_diffs,
    check_scatter_prediction,
    check_sharing,
    check_tv_gradient,
    check_visit_formula,
    reverse_visits,
    teaching_bot,
)
from dualarr.teach.exercises.bot_rules import INDEX_CASES, SUM_OUTER_CASES

F64 = DType.FLOAT64
Vec = Callable[[core.Term], core.Term]


def failed_with(feedback: Feedback, *fragments: str) -> None:
    """``feedback`` is a failure whose text contains every fragment."""
    text = str(feedback)
    assert not feedback.passed, text
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"


def not_implemented(*args: Any) -> Any:
    raise NotImplementedError


# --------------------------------------------------------------------------------------
# Feedback
# --------------------------------------------------------------------------------------


def test_module_is_importable_as_a_submodule() -> None:
    assert dualarr.teach.exercises.check_sharing is check_sharing
    assert set(dualarr.teach.exercises.__all__) >= {"Feedback", "check_delta_rule", "teaching_bot"}


def test_feedback_renders_as_text_html_and_markdown() -> None:
    feedback = Feedback(False, "a <title>", ("detail 1\nsecond line", "Hint: try *this*"))
    text = str(feedback)
    assert text.startswith("✘ NOT YET: a <title>")
    assert "  - detail 1\n    second line" in text
    html = feedback._repr_html_()
    assert "&lt;title&gt;" in html and "<i>Hint: try *this*</i>" in html
    markdown = feedback._repr_markdown_()
    assert markdown.startswith("**✘ NOT YET**: a \\<title\\>") and "```text" in markdown
    assert str(Feedback(True, "done")) == "✔ PASSED: done"
    assert Feedback(True, "done")._repr_markdown_() == "**✔ PASSED**: done"


@given(st.text(max_size=40), st.lists(st.text(max_size=40), max_size=3), st.booleans())
@settings(max_examples=40)
def test_feedback_html_escapes_everything(title: str, details: list[str], passed: bool) -> None:
    out = Feedback(passed, title, tuple(details))._repr_html_()
    assert html.escape(title) in out
    assert all(html.escape(detail) in out for detail in details)
    tags = set(re.findall(r"<(/?[a-z]+)", out))
    assert tags <= {"div", "/div", "b", "/b", "ul", "/ul", "li", "/li", "i", "/i"}


def test_pretty_printing_uses_the_text() -> None:
    class Printer:
        def __init__(self) -> None:
            self.out = ""

        def text(self, value: str) -> None:
            self.out += value

    printer = Printer()
    Feedback(True, "ok", ("x",))._repr_pretty_(printer, False)
    assert printer.out == "✔ PASSED: ok\n  - x"


@pytest.mark.parametrize(
    "check",
    [
        check_bot_index_rule,
        check_bot_sum_outer_rule,
        check_diffs,
        check_tv_gradient,
        check_visit_formula,
        check_sharing,
        lambda value: check_delta_rule("cube", value),
    ],
)
def test_misuse_raises_a_dualarr_error(check: Callable[[Any], Feedback]) -> None:
    with pytest.raises(da.DualarrError, match="must be a function"):
        check(42)


def test_misuse_of_delta_and_scatter_checks() -> None:
    with pytest.raises(da.UnsupportedError, match="unknown primitive 'tanh'"):
        check_delta_rule("tanh", lambda x, y, dx: dx)
    with pytest.raises(da.UnsupportedError, match="list of"):
        check_scatter_prediction("scatter")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# Assignment 1: bot rules
# --------------------------------------------------------------------------------------


def index_rule(k: int, i: core.Var, e: core.Index) -> core.Term:
    return core.Gather((k,), e.array, (i,), e.index)


def sum_outer_rule(k: int, e: core.SumOuter, vec: Vec) -> core.Term:
    va = vec(e.array)
    return core.SumOuter(core.Transpose((1, 0, *range(2, len(va.shape))), va))


def test_bot_index_rule_solution_passes() -> None:
    feedback = check_bot_index_rule(index_rule)
    assert feedback.passed, str(feedback)
    assert "gather [5] x (\\[i]. [4 - i])" in str(feedback)


def test_bot_index_rule_leaving_i_free() -> None:
    failed_with(
        check_bot_index_rule(lambda k, i, e: e),
        "7 of 7 test programs go wrong",
        "reverse: vectorising build1 5 (λi. x[4 - i])",
        "your result mentions the loop variable i free: x[4 - i]",
        "Hint: after the rule nothing may depend on one value of i",
    )


def test_bot_index_rule_ignoring_the_index() -> None:
    failed_with(
        check_bot_index_rule(lambda k, i, e: core.Gather((k,), e.array, (i,), (i,))),
        "reverse(x = [5, 1, 2, 4, 1]): 4 of 5 elements differ; element [0]: expected 1, got 5",
        "your bot:   gather [5] x (\\[i]. [i])",
        "anti_diagonal: vectorising build1 3 (λi. a[i, 2 - i])",
        "that build1 has type float64[3], but your result has type float64[3,3]",
        "the index function of your gather must compute the original index ix",
    )


def test_bot_index_rule_other_mistakes() -> None:
    failed_with(
        check_bot_index_rule(lambda k, i, e: core.Index(e.array, (core.Iota(k),))),
        "your rule raised DtypeError: index: index component 0 must be a rank-0 int",
        "A whole array of indices (iota k) is the job of gather's index function",
    )
    failed_with(
        check_bot_index_rule(lambda k, i, e: core.Build1(k, i, e)),
        "your result still contains build1",
        "Theorem 5.1",
    )
    failed_with(
        check_bot_index_rule(lambda k, i, e: 3.0),  # type: ignore[arg-type,return-value]
        "your rule returned a float, not a term of the core language",
    )
    failed_with(check_bot_index_rule(not_implemented), "is not implemented yet")


def _guarded_index_rule(guard: str) -> Callable[[int, core.Var, core.Index], core.Term]:
    """An index rule that keeps reads in range: clamps or wraps (as NumPy) each index."""

    def rule(k: int, i: core.Var, e: core.Index) -> core.Term:
        extent = e.array.shape
        guarded: list[core.Term] = []
        for d, j in enumerate(e.index):
            top = core.constant(extent[d] - 1)
            if guard == "clamp":
                inner = core.Op("minimum", (j, top))
                guarded.append(core.Op("maximum", (inner, core.constant(0))))
            else:
                guarded.append(core.Op("wrap", (j, core.constant(extent[d]))))
        return core.Gather((k,), e.array, (i,), tuple(guarded))

    return rule


@pytest.mark.parametrize(
    ("guard", "fragments"),
    [
        (
            "clamp",
            [
                "2 of 7 test programs go wrong",
                "even_elements(x = [4, 4, 4, 4, -5, 3]): element [3] reads outside the array: "
                "expected 0 (total indexing, §5.2), got 3",
                "shifted_window(x = [-4, 4, 2, -2]): element [0] reads outside the array",
            ],
        ),
        (
            "wrap",
            [
                "1 of 7 test programs go wrong",
                "shifted_window(x = [-4, 4, 2, -2]): element [0] reads outside the array: "
                "expected 0 (total indexing, §5.2), got -2",
            ],
        ),
    ],
)
def test_bot_index_rule_out_of_range_edges(guard: str, fragments: list[str]) -> None:
    """Issue #36's gap in assignment 01: the index rule was never run on a read out of
    range, so a rule that clamps or wraps the index (reading a real element where the
    total semantics, §5.2, gives 0) passed.  Now it fails, named, with a hint that names
    the rule and not the answer; the solution passes every edge case."""
    feedback = check_bot_index_rule(_guarded_index_rule(guard))
    failed_with(feedback, *fragments, "Hint: indexing is total (§5.2)")
    assert "e.index" not in str(feedback) and "Gather((k,)" not in str(feedback)
    names = {case.name for case in INDEX_CASES}
    assert {"even_elements", "shifted_window", "one_element"} <= names
    assert check_bot_index_rule(index_rule).passed


def test_bot_sum_outer_rule_solution_passes() -> None:
    feedback = check_bot_sum_outer_rule(sum_outer_rule)
    assert feedback.passed, str(feedback)
    assert "all 4 test programs" in str(feedback)


def test_bot_sum_outer_rule_without_transpose() -> None:
    failed_with(
        check_bot_sum_outer_rule(lambda k, e, vec: core.SumOuter(vec(e.array))),
        "matvec: vectorising build1 3 (λi. sumOuter (a[i] * v))",
        "that build1 has type float64[3], but your result has type float64[4]",
        "matvec_square(a = [[4, 4, 4], [4, -5, 3], [5, -3, -4]], v = [-5, 3, 5]): 3 of 3 "
        "elements differ; element [0]: expected 12, got -65",
        "move the summed dimension to the front first",
        "your sumOuter adds up over the loop index i",
    )


def test_bot_sum_outer_rule_stub_and_recursion() -> None:
    failed_with(
        check_bot_sum_outer_rule(lambda k, e, vec: vec(e.array)),
        "4 of 4 test programs go wrong",
        "but your result has type float64[3,4]",
    )
    failed_with(
        check_bot_sum_outer_rule(lambda k, e, vec: core.SumOuter(vec(e))),
        "your rule raised RecursionError",
        "Call vec on the array that is summed, e.array",
    )
    failed_with(check_bot_sum_outer_rule(not_implemented), "is not implemented yet")

    def odd_vec(k: int, e: core.SumOuter, vec: Vec) -> core.Term:
        return vec(core.Cond(core.constant(True), e.array, e.array))

    failed_with(
        check_bot_sum_outer_rule(odd_vec),
        "matvec: your rule called vec on a term it cannot vectorise: the teaching bot has no "
        "rule for Cond",
    )


@given(st.permutations(range(3)).filter(lambda p: tuple(p) != (1, 0, 2)))
@settings(max_examples=5)
def test_bot_sum_outer_rule_wrong_rank3_permutation(perm: list[int]) -> None:
    def rule(k: int, e: core.SumOuter, vec: Vec) -> core.Term:
        va = vec(e.array)
        chosen = tuple(perm) if len(va.shape) == 3 else (1, 0)
        return core.SumOuter(core.Transpose(chosen, va))

    failed_with(check_bot_sum_outer_rule(rule), "1 of 4 test programs go wrong", "plane_row_sums")


def test_bot_rank2_permutation_on_rank3() -> None:
    def rule(k: int, e: core.SumOuter, vec: Vec) -> core.Term:
        return core.SumOuter(core.Transpose((1, 0), vec(e.array)))

    failed_with(
        check_bot_sum_outer_rule(rule),
        "tr: [1, 0] is not a permutation of the 3 dimensions of [2,3,4]",
        "for rank r it has r entries",
    )
    assert "(1, 0, 2" not in str(check_bot_sum_outer_rule(rule))  # a hint, not the answer


@pytest.mark.parametrize("case", [*INDEX_CASES, *SUM_OUTER_CASES], ids=lambda c: c.name)
@given(seed=st.integers(0, 2**16))
@settings(max_examples=10)
def test_teaching_bot_preserves_values(case: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=shape) for shape in case.shapes]
    source = da.trace(case.function, *args)
    vectorised = teaching_bot(source)
    assert isinstance(vectorised, da.Program)
    assert da.is_bot_normal(vectorised)
    np.testing.assert_allclose(vectorised(*args), source(*args), rtol=1e-12)
    assert np.allclose(da.pipeline(case.function, *args).vectorised(*args), source(*args))


def test_teaching_bot_terms_and_gaps() -> None:
    x = np.arange(4.0)
    program = da.trace(lambda x: da.build1(4, lambda i: x[3 - i] * 2.0), x)
    terms = teaching_bot(list(program.outputs), index_rule=index_rule)
    assert isinstance(terms, list) and "gather [4] x" in str(terms[0])
    conditional = da.trace(lambda x: da.build1(4, lambda i: da.where(x[i] > 1.0, x[i], 0.0)), x)
    with pytest.raises(da.UnsupportedError, match="no rule for Cond"):
        teaching_bot(conditional)


# --------------------------------------------------------------------------------------
# Assignment 2: Delta rules
# --------------------------------------------------------------------------------------


def softplus_rule(x: np.ndarray, y: np.ndarray, dx: dl.Delta) -> dl.Delta:
    return dl.Scale(np.exp(x - y), dx)


def cube_rule(x: np.ndarray, y: np.ndarray, dx: dl.Delta) -> dl.Delta:
    return dl.Scale(3.0 * x * x, dx)


def hypot_rule(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, d_a: dl.Delta, d_b: dl.Delta
) -> dl.Delta:
    return dl.Add(dl.Scale(a / y, d_a), dl.Scale(b / y, d_b))


@pytest.mark.parametrize(
    ("op", "rule"), [("softplus", softplus_rule), ("cube", cube_rule), ("hypot", hypot_rule)]
)
def test_delta_rule_solutions_pass(op: str, rule: Callable[..., Any]) -> None:
    feedback = check_delta_rule(op, rule)
    assert feedback.passed, str(feedback)
    assert "matches finite differences" in str(feedback)


def test_softplus_sigmoid_as_one_over_one_plus_exp_passes() -> None:
    assert check_delta_rule("softplus", lambda x, y, dx: dl.Scale(1 / (1 + np.exp(-x)), dx)).passed


def test_softplus_wrong_answers() -> None:
    failed_with(
        check_delta_rule("softplus", lambda x, y, dx: dl.Scale(np.exp(x) / (1 + np.exp(x)), dx)),
        "derivative at x = 800: expected 1 (finite differences), got nan",
        "exp(x) overflows to inf for large x",
    )
    failed_with(
        check_delta_rule("softplus", lambda x, y, dx: dl.Scale(y, dx)),
        "derivative at x = 0: expected 0.5 (finite differences), got 0.693147",
        "that is the rule for exp",
    )
    failed_with(
        check_delta_rule("softplus", lambda x, y, dx: dl.Scale(-np.exp(x - y), dx)),
        "every value has the wrong sign",
    )
    failed_with(
        check_delta_rule("softplus", lambda x, y, dx: dx),
        "the derivative d/dx is 1 everywhere",
        "… and 3 more of the 8 test points",
    )
    failed_with(
        check_delta_rule("softplus", lambda x, y, dx: np.exp(x - y)),
        "your rule returned a ndarray, not a Delta",
    )
    failed_with(check_delta_rule("softplus", not_implemented), "is not implemented yet")
    failed_with(
        check_delta_rule("softplus", lambda x, y, dx: 1 / 0),
        "your rule raised ZeroDivisionError: division by zero",
    )


@pytest.mark.parametrize(
    ("op", "rule", "fragments"),
    [
        ("cube", lambda x, y, dx: 2.0 * dx, ["unsupported operand", "dl.Scale(factor, dx)"]),
        ("cube", lambda x, y, dx: 3.0 * x * x * dx, ["'Input'", "dl.Scale(factor, dx)"]),
        ("softplus", lambda x, y, dx: dx * 0.5, ["dl.Scale(factor, dx)"]),
        ("softplus", lambda x, y, dx: -dx, ["unary -", "dl.Scale"]),
        (
            "hypot",
            lambda a, b, y, d_a, d_b: dl.Scale(a / y, d_a) + dl.Scale(b / y, d_b),  # type: ignore[operator]
            ["for +: 'Scale' and 'Scale'", "dl.Add(d1, d2)"],
        ),
        (
            "softplus",
            lambda x, y, dx: dl.Scale(dx, np.exp(x - y)),
            ["not a Delta where a Delta belongs", "factor first and the Delta second"],
        ),
        (
            "softplus",
            lambda x, y, dx: dl.Add(dl.Scale(np.exp(x - y), dx), 0.0),  # type: ignore[arg-type]
            ["dl.Add adds two Deltas; one of yours is a float"],
        ),
    ],
    ids=["2.0 * dx", "x * x * dx", "dx * 0.5", "-dx", "Scale + Scale", "Scale swapped",
         "Add a float"],
)
def test_a_rule_computing_with_deltas_as_numbers_is_pointed_to_the_constructors(
    op: str, rule: Callable[..., Any], fragments: list[str]
) -> None:
    failed_with(check_delta_rule(op, rule), *fragments)


@pytest.mark.parametrize(
    ("op", "rule"),
    [
        ("softplus", lambda x, y, dx: dl.Scale(np.exp(x) / (1 + np.exp(x)), dx)),
        ("hypot", lambda a, b, y, d_a, d_b: dl.Add(
            dl.Scale(a / np.sqrt(a * a + b * b), d_a), dl.Scale(b / np.sqrt(a * a + b * b), d_b)
        )),
        ("cube", lambda x, y, dx: dl.Scale(3.0 * y / x, dx)),
        ("cube", lambda x, y, dx: 2.0 * dx),
    ],
    ids=["softplus overflow", "hypot overflow", "cube divides by x", "float times Delta"],
)
def test_delta_rule_hints_guide_without_giving_the_solution(
    op: str, rule: Callable[..., Any]
) -> None:
    feedback = check_delta_rule(op, rule)
    hints = [d for d in feedback.details if d.startswith("Hint:")]
    assert not feedback.passed and hints, str(feedback)
    solutions = ["exp(x - y)", "1 / (1 + exp(-x))", "a / y", "b / y", "3 * x", "3.0 * x", "x ** 2"]
    for hint in hints:
        assert not any(s.replace(" ", "") in hint.replace(" ", "") for s in solutions), hint


def test_rule_that_ignores_its_delta_argument() -> None:
    def own_input(x: np.ndarray, y: np.ndarray, dx: dl.Delta) -> dl.Delta:
        return dl.Scale(np.exp(x - y), dl.Input(0, x.shape, F64))

    failed_with(
        check_delta_rule("softplus", own_input),
        "your rule is right on its own, but not inside a program",
        "build the Delta from the Delta arguments you are given",
    )


def test_rule_with_a_wrong_shape() -> None:
    failed_with(
        check_delta_rule("cube", lambda x, y, dx: dl.SumOuter(dx)),
        "your Delta has shape [], the output has shape [7]",
    )


@pytest.mark.parametrize(
    ("op", "rule", "fragments"),
    [
        (
            "softplus",
            lambda x, y, dx: dl.Scale(
                np.array([np.exp(v - w) for v, w in zip(x, y, strict=True)]), dx
            ),
            ["on a single number (rank 0), x = 0.5: your rule raised TypeError"],
        ),
        (
            "cube",
            lambda x, y, dx: dl.Scale(np.vectorize(lambda v: 3.0 * v * v)(x), dx),
            ["on an empty array (shape [0]), x = []: your rule raised ValueError"],
        ),
        (
            "cube",
            lambda x, y, dx: dl.Scale((3.0 * x * x).reshape(-1), dx),
            ["on a single number (rank 0), x = 0.5: your Delta, run forward, gives the "
             "derivative [0.75] of shape [1]; finite differences give 0.75 of shape []"],
        ),
        (
            "hypot",
            lambda a, b, y, d_a, d_b: dl.Add(
                dl.Scale(np.fromiter((p / q for p, q in zip(a, y, strict=True)), float), d_a),
                dl.Scale(b / y, d_b),
            ),
            ["on a single number (rank 0), a = 2, b = -0.5: your rule raised TypeError"],
        ),
        (
            "cube",
            lambda x, y, dx: (
                dl.Scale(3.0 * x[0] * x[0], dl.SumOuter(dx)) if x.ndim == 2
                else dl.Scale(3.0 * x * x, dx)
            ),
            ["on a matrix (shape [2,3]), x = [[-2, -1, -0.5], [0, 0.5, 1]]: your rule "
             "returned a Delta of shape [3], the output has shape [2,3]"],
        ),
    ],
    ids=["loop on rank 0", "np.vectorize on empty", "reshape on rank 0", "fromiter",
         "rank 2"],
)
def test_delta_rule_shape_edges(op: str, rule: Callable[..., Any], fragments: list[str]) -> None:
    """Issue #36's gap in assignment 02: a rule was only run on vectors of test points,
    so a rule that loops over the elements (or reshapes to one dimension) passed, though
    an elementwise primitive's rule runs on every shape (da.grad of a scalar function
    gives it rank 0).  Now a single number, an empty array and a matrix are checked."""
    feedback = check_delta_rule(op, rule)
    failed_with(feedback, *fragments, "Hint: an elementwise primitive's Delta rule runs on "
                "arrays of every shape")
    hints = [d for d in feedback.details if d.startswith("Hint:")]
    solutions = ["exp(x - y)", "a / y", "b / y", "3 * x", "3.0 * x", "x ** 2"]
    assert not any(s.replace(" ", "") in h.replace(" ", "") for s in solutions for h in hints)
    rules: dict[str, Callable[..., Any]] = {
        "softplus": softplus_rule, "cube": cube_rule, "hypot": hypot_rule
    }
    good = rules[op]
    passed = check_delta_rule(op, good)
    assert passed.passed and "a single number (rank 0), an empty array and a matrix" in str(passed)


def test_cube_wrong_answers() -> None:
    failed_with(
        check_delta_rule("cube", lambda x, y, dx: dl.Scale(3 * y / x, dx)),
        "derivative at x = 0: expected 0 (finite differences), got nan",
        "is there a division by x?",
    )
    failed_with(
        check_delta_rule("cube", lambda x, y, dx: dl.Scale(3 * x, dx)),
        "derivative at x = -2: expected 12 (finite differences), got -6",
        "work out f'(x) for cube(x) = x ** 3 by hand",
    )


@given(st.floats(-10, 10).filter(lambda c: min(abs(c - 1), abs(c), abs(c + 1)) > 0.01))
@settings(max_examples=15)
def test_cube_rule_off_by_a_constant(c: float) -> None:
    failed_with(
        check_delta_rule("cube", lambda x, y, dx: dl.Scale(c * 3.0 * x * x, dx)),
        "times the right one",
    )


def test_hypot_wrong_answers() -> None:
    failed_with(
        check_delta_rule("hypot", lambda a, b, y, d_a, d_b: dl.Scale(a / y, d_a)),
        "derivative by b at a = 3, b = 4: expected 0.8 (finite differences), got 0",
        "the derivative by b is 0 everywhere",
    )

    def recomputing(
        a: np.ndarray, b: np.ndarray, y: np.ndarray, d_a: dl.Delta, d_b: dl.Delta
    ) -> dl.Delta:
        r = np.sqrt(a * a + b * b)
        return dl.Add(dl.Scale(a / r, d_a), dl.Scale(b / r, d_b))

    failed_with(
        check_delta_rule("hypot", recomputing),
        "derivative by a at a = 1e+200, b = 1e+200: expected 0.707107",
        "a * a overflows to inf there",
    )
    failed_with(
        check_delta_rule(
            "hypot", lambda a, b, y, d_a, d_b: dl.Add(dl.Scale(b / y, d_a), dl.Scale(a / y, d_b))
        ),
        "derivative by a at a = 3, b = 4: expected 0.6 (finite differences), got 0.8",
        "work out both partial derivatives",
    )


# --------------------------------------------------------------------------------------
# Assignment 3: gather program and its gradient
# --------------------------------------------------------------------------------------


def diffs(x: da.Tensor) -> da.Tensor:
    n = x.shape[0]
    return da.gather(n - 1, x, lambda i: (i + 1,)) - da.gather(n - 1, x, lambda i: (i,))


def tv_grad(x: np.ndarray) -> np.ndarray:
    d = np.diff(x)
    g = np.zeros_like(x)
    g[1:] += 2 * d
    g[:-1] -= 2 * d
    return g


def test_diffs_solutions_pass() -> None:
    assert check_diffs(diffs).passed
    assert check_diffs(lambda x: x[1:] - x[:-1]).passed


def test_diffs_wrong_answers() -> None:
    failed_with(
        check_diffs(lambda x: -diffs(x)),
        "for x = [4, -5, -4]: element [0]: expected -9, got 9 (all: expected [-9, 1], got [9, -1])",
        "every element has the wrong sign",
    )

    def too_long(x: da.Tensor) -> da.Tensor:
        n = x.shape[0]
        return da.gather(n, x, lambda i: (i + 1,)) - da.gather(n, x, lambda i: (i,))

    failed_with(
        check_diffs(too_long),
        "for x of length 3, your program returns shape [3]; diffs has n - 1 = 2 elements",
    )
    failed_with(
        check_diffs(lambda x: da.build1(x.shape[0] - 1, lambda i: x[i + 1] - x[i])),
        "the values are right, but your program uses build1",
    )
    failed_with(check_diffs(not_implemented), "diffs is not implemented yet")
    failed_with(
        check_diffs(lambda x: x + x[:2]),
        "your program raised ShapeError: add: operands could not be broadcast together",
    )


def test_diffs_reading_out_of_range() -> None:
    def shifted(x: da.Tensor) -> da.Tensor:
        n = x.shape[0]
        return da.gather(n - 1, x, lambda i: (i + 2,)) - da.gather(n - 1, x, lambda i: (i + 1,))

    failed_with(check_diffs(shifted), "(all: expected [-9, 1], got [1, 4])", "out[i] = x[f(i)]")


def test_tv_gradient_solution_passes() -> None:
    feedback = check_tv_gradient(tv_grad)
    assert feedback.passed, str(feedback)


@pytest.mark.parametrize(
    ("answer", "fragments"),
    [
        (lambda x: -tv_grad(x), ["got (tv_grad):      [-18, 20, -2]", "wrong sign"]),
        (lambda x: tv_grad(x) / 2, ["half the right value"]),
        (lambda x: tv_grad(x) * 2, ["twice the right value"]),
        (lambda x: np.zeros_like(x), ["your gradient is 0 everywhere"]),
        (
            lambda x: 2 * (x - np.roll(x, 1)) - 2 * (np.roll(x, -1) - x),
            ["expected (da.grad): [18, -20, 2]", "got (tv_grad):      [34, -20, -14]", "np.roll"],
        ),
        (lambda x: tv_grad(x)[:-1], ["tv_grad returns shape [2]; the gradient has the shape"]),
        (not_implemented, ["tv_grad is not implemented yet"]),
    ],
)
def test_tv_gradient_wrong_answers(
    answer: Callable[[np.ndarray], Any], fragments: list[str]
) -> None:
    failed_with(check_tv_gradient(answer), *fragments)


def test_tv_gradient_boundary_mistake() -> None:
    def interior_only(x: np.ndarray) -> np.ndarray:
        g = tv_grad(x)
        if x.shape[0] > 2:
            g[0] = g[-1] = 0.0
        return g

    failed_with(
        check_tv_gradient(interior_only),
        "for x = [4, -5, -4]: 2 of 3 elements differ",
        "only the boundary element(s) 0, 2 are wrong",
    )


@given(st.integers(0, 7), st.floats(0.5, 100) | st.floats(-100, -0.5))
@settings(max_examples=15)
def test_tv_gradient_names_the_wrong_element(j: int, error: float) -> None:
    def perturbed(x: np.ndarray) -> np.ndarray:
        g = tv_grad(x)
        g[j % x.shape[0]] += error
        return g

    failed_with(check_tv_gradient(perturbed), "for x = [4, -5, -4]: 1 of 3 elements differ")


def test_tv_gradient_of_a_single_element() -> None:
    """Issue #36's gap in assignment 03: the lengths stopped at 2, so a gradient that
    writes both ends by hand (reading d[0] and d[-1], which a single element does not
    have) passed.  Length 1 (diffs of shape [0], tv = 0, gradient 0) is now checked."""

    def ends_by_hand(x: np.ndarray) -> np.ndarray:
        d = np.diff(x)
        g = np.empty_like(x)
        g[0], g[-1] = -2 * d[0], 2 * d[-1]
        g[1:-1] = 2 * d[:-1] - 2 * d[1:]
        return g

    failed_with(
        check_tv_gradient(ends_by_hand),
        "for x = [-6]: tv_grad raised IndexError",
        "Hint: for x of length 1 there are no differences",
    )
    failed_with(
        check_tv_gradient(lambda x: tv_grad(x) if x.shape[0] > 1 else np.ones(1)),
        "for x = [-6]: 1 of 1 elements differ",
        "Hint: for x of length 1 there are no differences",
    )
    assert "lengths 3, 5, 8, 2, 1" in str(check_tv_gradient(tv_grad))
    assert check_tv_gradient(tv_grad).passed
    assert "lengths 3, 5, 8, 2, 1" in str(check_diffs(diffs))


def test_scatter_prediction_as_a_function() -> None:
    """The student notebook's task 3 is a function (a stub that raises must not stop the
    notebook): the checker calls it, and a stub is a failing verdict, not an error."""
    assert check_scatter_prediction(lambda: [(7, lambda i: i), (7, lambda i: i + 1)]).passed
    failed_with(check_scatter_prediction(not_implemented), "the prediction is not implemented")
    def raises() -> Any:
        return 1 / 0

    def not_a_list() -> Any:
        return 7

    failed_with(check_scatter_prediction(raises), "your prediction raised ZeroDivisionError")
    failed_with(check_scatter_prediction(not_a_list), "your function returned 7, not a list")
    failed_with(
        check_scatter_prediction(lambda: [(7, lambda i: i - 1), (7, lambda i: i)]),
        "a scatter needs no inverse of the index function",
    )


def test_scatter_prediction_solution_passes_in_any_spelling() -> None:
    assert check_scatter_prediction([((7,), lambda i: (i + 1,)), ((7,), lambda i: (i,))]).passed
    assert check_scatter_prediction([(7, lambda i: i), (7, lambda i: i + 1)]).passed
    assert check_scatter_prediction([(5, lambda i: i), ([5], lambda i: [i + 1])], n=5).passed


def test_scatter_prediction_wrong_answers() -> None:
    failed_with(
        check_scatter_prediction([(7, lambda i: i - 1), (7, lambda i: i)]),
        "yours, not in the gradient: scatter [7] _ (λ[i]. …) sending i = 0..5 to -1, 0, 1, 2, 3, 4",
        "a scatter needs no inverse of the index function",
    )
    failed_with(
        check_scatter_prediction([(6, lambda i: i + 1), (6, lambda i: i)]),
        "0 of the gradient's scatters predicted, 2 missing",
        "writes into an array shaped like the gathered array x ([7])",
    )
    failed_with(
        check_scatter_prediction([(7, lambda i: i + 1)]),
        "the gradient has 2 scatter(s), you predicted 1",
        "1 of the gradient's scatters predicted, 1 missing",
    )
    failed_with(
        check_scatter_prediction([(7, lambda i: i + 1), (7, lambda i: i), (7, lambda i: i)]),
        "you predicted 3",
    )
    failed_with(check_scatter_prediction([(7, lambda i: i // 0)]), "raised ZeroDivisionError")
    failed_with(check_scatter_prediction([7]), "prediction 0 is 7: write (target shape")  # type: ignore[list-item]


# --------------------------------------------------------------------------------------
# Assignment 4: sharing
# --------------------------------------------------------------------------------------


class Leaky:
    def __init__(self, primal: float, delta: dl.Delta) -> None:
        self.primal, self.delta = primal, delta

    def make(self, primal: float, delta: dl.Delta) -> Leaky:
        return type(self)(primal, delta)

    def wrap(self, d: dl.Delta) -> dl.Delta:
        return d

    def __add__(self, other: Leaky) -> Leaky:
        return self.make(self.primal + other.primal, self.wrap(dl.Add(self.delta, other.delta)))

    def __mul__(self, other: Leaky) -> Leaky:
        rule = dl.Add(dl.Scale(other.primal, self.delta), dl.Scale(self.primal, other.delta))
        return self.make(self.primal * other.primal, self.wrap(rule))


SUPPLY = IdSupply()


class Shared(Leaky):
    def wrap(self, d: dl.Delta) -> dl.Delta:
        return dl.Share(SUPPLY.fresh(), d)


class AddOnly(Shared):
    def __mul__(self, other: Leaky) -> Leaky:
        rule = dl.Add(dl.Scale(other.primal, self.delta), dl.Scale(self.primal, other.delta))
        return self.make(self.primal * other.primal, rule)


class ConstantId(Leaky):
    def wrap(self, d: dl.Delta) -> dl.Delta:
        return dl.Share(0, d)


class CountingDown(Leaky):
    next_id = 10**6

    def wrap(self, d: dl.Delta) -> dl.Delta:
        CountingDown.next_id -= 1
        return dl.Share(CountingDown.next_id, d)


class WrongProductRule(Shared):
    def __mul__(self, other: Leaky) -> Leaky:
        rule = dl.Add(dl.Scale(self.primal, self.delta), dl.Scale(other.primal, other.delta))
        return self.make(self.primal * other.primal, self.wrap(rule))


def test_sharing_solution_passes() -> None:
    feedback = check_sharing(Shared)
    assert feedback.passed, str(feedback)
    assert "doubling y = y + y: 19 visits for n = 6, 37 for n = 12" in str(feedback)


def test_sharing_bug_is_reported_as_exponential() -> None:
    failed_with(
        check_sharing(Leaky),
        "3 of 3 chains go wrong",
        "doubling y = y + y: the reverse pass visited 127 Delta nodes for n = 6 and 8191 for "
        "n = 12, though the Delta DAG for n = 12 has 13 distinct nodes",
        "does your + share its result?",
        "Hint: give the Delta that each operation returns a Share node with a fresh id",
    )


def test_sharing_wrong_fixes() -> None:
    failed_with(
        check_sharing(AddOnly),
        "1 of 3 chains go wrong",
        "squaring y = y * y: the reverse pass visited 253",
        "does your * share its result?",
    )
    failed_with(
        check_sharing(ConstantId),
        "doubling y = y + y, n = 6: Invariant 2: Share id 0 names two nodes",
        "take it from one IdSupply",
    )
    failed_with(check_sharing(CountingDown), "Invariant 1: Share 999999 below Share 999998")
    failed_with(
        check_sharing(WrongProductRule),
        "y = y * x + y, n = 6: gradient expected",
    )
    failed_with(check_sharing(not_implemented), "is not implemented yet")


def test_sharing_class_without_a_delta() -> None:
    class NoDelta:
        def __init__(self, primal: float, delta: dl.Delta) -> None:
            self.primal, self.delta = primal, float(primal)

        def __add__(self, other: NoDelta) -> NoDelta:
            return NoDelta(self.primal + other.primal, dl.Zero((), F64))

        def __mul__(self, other: NoDelta) -> NoDelta:
            return NoDelta(self.primal * other.primal, dl.Zero((), F64))

    failed_with(check_sharing(NoDelta), ".delta is a float, not a Delta")


def test_visit_formula() -> None:
    assert check_visit_formula(lambda n: 2 ** (n + 1) - 1).passed
    failed_with(
        check_visit_formula(lambda n: 2 * n + 1),
        "wrong for n = 2 (measured 7, yours 5)",
        "measured:     1     3     7    15",
        "solve the recurrence",
    )
    failed_with(check_visit_formula(lambda n: 2**n), "wrong for n = 1 (measured 3, yours 2)")
    failed_with(check_visit_formula(not_implemented), "visits is not implemented yet")


@given(st.integers(0, 10))
@settings(max_examples=11)
def test_reverse_visits_counts_the_tree_walk(n: int) -> None:
    y = Leaky(1.0, dl.Input(0, (), F64))
    for _ in range(n):
        y = y + y
    grads, visits = reverse_visits(y.delta)
    assert float(grads[0]) == 2.0**n
    assert visits == 2 ** (n + 1) - 1

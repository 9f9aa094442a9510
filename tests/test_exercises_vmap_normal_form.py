"""Assignments 08 (batching rules for vmap) and 09 (the normal form of Theorem 5.1): the
solutions pass, the stubs and typical wrong answers fail with the intended feedback, the
hints do not give the answer away, and a wrong answer never raises."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.lang import terms as core
from dualarr.lang.errors import DualarrError
from dualarr.teach.exercises import Feedback
from dualarr.teach.exercises.normal_form import (
    check_no_build1,
    check_normal_form,
    first_violation,
    hand_made_cases,
    normal_form_cases,
    random_program_cases,
)
from dualarr.teach.exercises.vmap_rule import (
    REPLICATE_CASES,
    TRANSPOSE_CASES,
    check_replicate_batching_rule,
    check_transpose_batching_rule,
    teaching_vmap,
)


def failed_with(feedback: Feedback, *fragments: str) -> None:
    """``feedback`` is a failure whose text contains every fragment."""
    text = str(feedback)
    assert not feedback.passed, text
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"


def hints(feedback: Feedback) -> str:
    return "\n".join(d for d in feedback.details if d.startswith("Hint:"))


def not_implemented(*args: Any) -> Any:
    raise NotImplementedError


# --------------------------------------------------------------------------------------
# Assignment 08: batching rules
# --------------------------------------------------------------------------------------


def transpose_rule(k: int, e: core.Transpose, batched: core.Term) -> core.Term:
    return core.Transpose((0, *(d + 1 for d in e.perm)), batched)


def replicate_rule(k: int, e: core.Replicate, batched: core.Term) -> core.Term:
    rank = len(batched.shape) + 1
    return core.Transpose((1, 0, *range(2, rank)), core.Replicate(e.count, batched))


def transpose_stub(k: int, e: core.Transpose, batched: core.Term) -> core.Term:
    return core.Transpose(e.perm, batched)


def batch_last(k: int, e: core.Transpose, batched: core.Term) -> core.Term:
    return core.Transpose((*(d + 1 for d in e.perm), 0), batched)


def inverse_perm(k: int, e: core.Transpose, batched: core.Term) -> core.Term:
    inverse = tuple(e.perm.index(d) for d in range(len(e.perm)))
    return core.Transpose((0, *(d + 1 for d in inverse)), batched)


def copies_first(k: int, e: core.Replicate, batched: core.Term) -> core.Term:
    return core.Replicate(e.count, batched)


def test_batching_rule_solutions_pass() -> None:
    tr = check_transpose_batching_rule(transpose_rule)
    rep = check_replicate_batching_rule(replicate_rule)
    assert tr.passed, str(tr)
    assert rep.passed, str(rep)
    assert "agree with a Python loop" in tr.title and "da.vmap" in rep.title


def test_batching_rule_stubs_fail_with_the_intended_message() -> None:
    failed_with(
        check_transpose_batching_rule(transpose_stub),
        "is not a permutation", "one entry more than e.perm",
    )
    failed_with(check_replicate_batching_rule(not_implemented), "is not implemented yet")
    failed_with(check_transpose_batching_rule(not_implemented), "is not implemented yet")


def test_batch_dimension_in_the_wrong_place() -> None:
    feedback = check_transpose_batching_rule(batch_last)
    failed_with(feedback, "all the right dimensions, in the wrong order", "rotate_back")
    failed_with(feedback, "the loop gives", "so does da.vmap")


def test_inverse_permutation_is_caught_by_rank3_rotations_only() -> None:
    feedback = check_transpose_batching_rule(inverse_perm)
    failed_with(feedback, "rotate_dims", "rotate_back", "2 of 5 test cases")
    assert "matrix_transpose" not in str(feedback)


def test_replicate_copies_before_the_batch() -> None:
    feedback = check_replicate_batching_rule(copies_first)
    failed_with(feedback, "repeat_rows", "outer_sum", "copies and batch can trade places")
    failed_with(feedback, "replicate n puts its new dimension in front")


def rebuilt_loop(k: int, batched: core.Term) -> core.Term:
    """A wrong rule that builds the loop again: ``build1 k (λj. batched[j])``."""
    j = core.fresh_var(core.IdSupply(), "j", (), core.DType.INT64)
    return core.Build1(k, j, core.Index(batched, (j,)))


@pytest.mark.parametrize(
    ("rule", "fragment"),
    [
        (lambda k, e, b: e, "mentions the loop variable"),
        (lambda k, e, b: b, "has type"),
        (lambda k, e, b: None, "not a term of the core language"),
        (lambda k, e, b: 1 / 0, "ZeroDivisionError"),
        (lambda k, e, b: rebuilt_loop(k, b), "still contains build1"),
    ],
)
def test_wrong_batching_rules_never_raise(
    rule: Callable[[int, Any, core.Term], Any], fragment: str
) -> None:
    for check in (check_transpose_batching_rule, check_replicate_batching_rule):
        failed_with(check(rule), fragment)




def test_batching_hints_do_not_give_the_answer() -> None:
    text = "\n".join(
        hints(feedback)
        for feedback in (
            check_transpose_batching_rule(transpose_stub),
            check_transpose_batching_rule(batch_last),
            check_transpose_batching_rule(inverse_perm),
            check_replicate_batching_rule(copies_first),
            check_replicate_batching_rule(lambda k, e, b: b),
        )
    )
    assert text
    for answer in ("(0,", "+ 1 for", "d + 1", "q + 1", "(1, 0", "[1,0", "Transpose(("):
        assert answer not in text, answer


def test_misuse_raises_a_dualarr_error() -> None:
    with pytest.raises(DualarrError):
        check_transpose_batching_rule(42)  # type: ignore[arg-type]
    with pytest.raises(DualarrError):
        check_replicate_batching_rule("rule")  # type: ignore[arg-type]
    with pytest.raises(DualarrError):
        teaching_vmap(lambda v: v, np.ones((2, 3)), transpose_rule=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", [*TRANSPOSE_CASES, *REPLICATE_CASES], ids=lambda c: c.name)
@pytest.mark.parametrize("seed", [0, 7])
def test_teaching_vmap_agrees_with_da_vmap_and_a_loop(case: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=shape) for shape in case.shapes(rng)]
    program = teaching_vmap(case.function, *args, in_axes=case.in_axes)
    assert da.is_bot_normal(program)
    got = program(*args)
    (axis,) = case.in_axes
    loop = np.stack(
        [
            np.asarray(da.trace(case.function, row)(row))
            for row in np.moveaxis(args[0], axis, 0)
        ]
    )
    assert np.allclose(got, loop)
    assert np.allclose(got, da.vmap(case.function, case.in_axes)(*args))


def test_teaching_vmap_uses_the_rules_given() -> None:
    x = np.arange(6.0).reshape(2, 3)
    mine = teaching_vmap(
        lambda v: da.replicate(2, v), x,
        transpose_rule=transpose_rule, replicate_rule=replicate_rule,
    )
    assert str(mine) == "\\x. tr [1,0,2] (replicate 2 x)"
    assert np.array_equal(mine(x), np.stack([np.stack([r, r]) for r in x]))


# --------------------------------------------------------------------------------------
# Assignment 09: the normal form
# --------------------------------------------------------------------------------------

INDEXABLE = (
    core.Var, core.Const, core.FromList, core.Scatter,
    core.Contract, core.Share, core.ArgMin, core.ArgMax, core.ArgSort,
)
PAPER_FOUR = (core.Var, core.Const, core.FromList, core.Scatter)


def no_build1(term: core.Term) -> bool:
    return not any(isinstance(node, core.Build1) for node in core.postorder([term]))


def normal_with(forms: tuple[type, ...], gathers_too: bool = False) -> Callable[[core.Term], bool]:
    def check(term: core.Term) -> bool:
        for node in core.postorder([term]):
            if isinstance(node, core.Build1):
                return False
            restricted = isinstance(node, core.Index) or (
                gathers_too and isinstance(node, core.Gather)
            )
            if restricted and isinstance(node, core.Index | core.Gather) and not isinstance(
                node.array, forms
            ):
                return False
        return True

    return check


is_normal = normal_with(INDEXABLE)


def root_only(term: core.Term) -> bool:
    return not isinstance(term, core.Build1)


def recursive_walk(term: core.Term) -> bool:
    if isinstance(term, core.Build1):
        return False
    return all(recursive_walk(kid) for kid in core.children(term))


def shallow_walk(term: core.Term) -> bool:
    if isinstance(term, core.Build1):
        return False
    kids: list[core.Term] = []
    for name in ("array", "body", "args"):
        value = getattr(term, name, ())
        kids.extend(value if isinstance(value, tuple) else [value])
    return all(shallow_walk(kid) for kid in kids)


def test_normal_form_solutions_pass() -> None:
    one = check_no_build1(no_build1)
    both = check_normal_form(is_normal)
    assert one.passed, str(one)
    assert both.passed, str(both)
    assert "agrees with dualarr on all" in both.title


def test_the_cases_cover_both_verdicts() -> None:
    cases = normal_form_cases()
    hand = [c for c in cases if c.hand_made]
    assert {first_violation(c.term) is None for c in hand} == {True, False}
    for case in random_program_cases(count=8, seed=3):
        if "after" in case.name:
            assert first_violation(case.term) is None, case.name
    before = [c for c in cases if "before the bot" in c.name]
    assert any(first_violation(c.term) is None for c in before)
    assert any(first_violation(c.term) is not None for c in before)


def test_normal_form_stubs_fail_with_the_intended_message() -> None:
    feedback = check_no_build1(root_only)
    failed_with(
        feedback, "build1 in the bound value of a let", "expected False",
        "your function says True", "Does your walk reach every one of these places?",
    )
    failed_with(check_normal_form(not_implemented), "is not implemented yet")
    failed_with(check_no_build1(not_implemented), "is not implemented yet")


def test_walks_that_miss_places_or_recurse() -> None:
    failed_with(
        check_no_build1(shallow_walk),
        "build1 in the index function of a gather", "build1 in the bound value of a let",
        "in the index function of a gather",
    )
    failed_with(
        check_no_build1(recursive_walk), "RecursionError", "2 of", "core.postorder",
    )


def test_normal_form_typical_wrong_answers() -> None:
    failed_with(
        check_normal_form(no_build1), "index of an elementwise operation", "property (2)",
        "applied to an elementwise operation (add)",
    )
    failed_with(
        check_normal_form(normal_with(PAPER_FOUR)), "index of an argmax (dualarr)",
        "expected True (normal)", "dualarr's normal form also",
    )
    failed_with(
        check_normal_form(normal_with(INDEXABLE, gathers_too=True)),
        "gather of a transposed array", "gather and scatter are other constructs",
    )
    failed_with(check_no_build1(is_normal), "property (1) is only about build1")


@pytest.mark.parametrize(
    ("check", "fragment"),
    [
        (lambda t: None, "returned None (a NoneType), not True or False"),
        (lambda t: "yes", "not True or False"),
        (lambda t: t.array, "AttributeError"),
        (lambda t: np.bool_(True), "expected False"),
    ],
)
def test_wrong_normal_form_checks_never_raise(
    check: Callable[[core.Term], Any], fragment: str
) -> None:
    failed_with(check_normal_form(check), fragment)
    failed_with(check_no_build1(check), fragment)


def test_normal_form_hints_do_not_give_the_answer() -> None:
    text = "\n".join(
        hints(feedback)
        for feedback in (
            check_no_build1(root_only),
            check_no_build1(shallow_walk),
            check_normal_form(no_build1),
            check_normal_form(normal_with(PAPER_FOUR)),
            check_normal_form(normal_with(INDEXABLE, gathers_too=True)),
        )
    )
    assert text
    for answer in ("isinstance", "core.Build1", "Contract", "ArgMax", "Share", "any("):
        assert answer not in text, answer


def test_normal_form_misuse_raises_a_dualarr_error() -> None:
    with pytest.raises(DualarrError):
        check_normal_form(None)  # type: ignore[arg-type]
    with pytest.raises(DualarrError):
        check_no_build1(3)  # type: ignore[arg-type]


def test_hand_made_names_say_what_is_hidden() -> None:
    for case in hand_made_cases():
        violation = first_violation(case.term)
        if case.name.startswith("build1"):
            assert isinstance(violation, core.Build1), case.name
        elif case.name.startswith("index of a") and "(dualarr)" not in case.name:
            normal = case.name in {
                "index of a let-bound variable", "index of a constant", "index of a fromList",
                "index of a scatter",
            }
            assert (violation is None) == normal, case.name


# --------------------------------------------------------------------------------------
# Assignment 09 at the edges (#36): an index of every construct, indices out of range
# (normal: the language is total, §5.2), a build1 of size 0 (not normal)
# --------------------------------------------------------------------------------------

PUSHED = (
    core.Op, core.Transpose, core.Index, core.Let, core.Replicate, core.Iota,
    core.Gather, core.SumOuter, core.Cond, core.Build1,
)


def rejects_a_list(term: core.Term) -> bool:
    """Lists the constructs an index may not stand on (the ones the bot pushes through)."""
    return not any(
        isinstance(node, core.Build1)
        or (isinstance(node, core.Index) and isinstance(node.array, PUSHED))
        for node in core.postorder([term])
    )


def rejects_out_of_range(term: core.Term) -> bool:
    if not is_normal(term):
        return False
    for node in core.postorder([term]):
        if isinstance(node, core.Index):
            for component, dim in zip(node.index, node.array.shape, strict=False):
                value = core.static_int_value(component)
                if value is not None and not 0 <= value < dim:
                    return False
    return True


def test_every_construct_is_the_array_of_an_index_in_some_case() -> None:
    arrays = {
        type(node.array)
        for case in normal_form_cases()
        for node in core.postorder([case.term])
        if isinstance(node, core.Index)
    }
    # every construct of terms.py (a Structural construct of its own module, such as rev,
    # and loops, beyond the paper, are not part of the assignment's language)
    closed = set(core.TERM_TYPES) - {core.Structural, core.MapAccum, core.LoopOutput}
    assert closed - arrays == set(), closed - arrays


def test_a_check_that_lists_what_it_rejects_fails_on_the_rare_constructs() -> None:
    feedback = check_normal_form(rejects_a_list)
    failed_with(
        feedback, "wrong on 3 of", "index of a reshape", "index of a fromIntegral",
        "index of a floor", "Theorem 5.1 names the constructs an index may stand on",
    )


def test_the_normal_forms_of_dualarr_all_count() -> None:
    argmax_only = normal_with((*PAPER_FOUR, core.Contract, core.Share, core.ArgMax))
    failed_with(
        check_normal_form(argmax_only), "wrong on 2 of", "index of an argmin (dualarr)",
        "index of an argsort (dualarr)", "dualarr's normal form also",
    )


def test_an_index_out_of_range_is_normal() -> None:
    feedback = check_normal_form(rejects_out_of_range)
    failed_with(
        feedback, "an index out of range (§5.2), of a variable", "expected True (normal)",
        "its total semantics, §5.2",
    )


def test_a_build1_of_size_0_is_a_build1() -> None:
    def sized(term: core.Term) -> bool:
        return not any(
            isinstance(n, core.Build1) and n.size > 0 for n in core.postorder([term])
        )

    failed_with(
        check_no_build1(sized), "wrong on 1 of", "build1 over an empty range (size 0)",
        "a build1 all the same",
    )


def test_edge_hints_do_not_give_the_answer() -> None:
    text = "\n".join(
        hints(feedback)
        for feedback in (
            check_normal_form(rejects_a_list),
            check_normal_form(rejects_out_of_range),
            check_no_build1(lambda t: not any(
                isinstance(n, core.Build1) and n.size > 0 for n in core.postorder([t])
            )),
        )
    )
    assert text.count("Hint:") >= 3
    for answer in ("isinstance", "core.Build1", "Contract", "ArgMax", "Share", "any(", "Reshape"):
        assert answer not in text, answer


# --------------------------------------------------------------------------------------
# The student notebooks of 08 and 09, generated from notebooks/assignments/source: every
# check cell is graded(check_…(…)) and fails on the stubs, on stderr (no points); the rest
# of the notebook runs with every stub raising
# --------------------------------------------------------------------------------------

ASSIGNMENTS = Path(__file__).resolve().parent.parent / "notebooks" / "assignments"


@pytest.mark.parametrize("name", ["08-vmap-rule", "09-normal-form"])
def test_generated_student_notebook_fails_every_check_on_the_stubs(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook = json.loads((ASSIGNMENTS / f"{name}.ipynb").read_text(encoding="utf-8"))
    cells = [
        ("".join(cell["source"]), cell.get("metadata", {}).get("tags", []))
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
    ]
    every = "".join(source for source, _ in cells)
    assert "raise NotImplementedError()" in every and "BEGIN SOLUTION" not in every
    checks = [source for source, tags in cells if "check" in tags]
    assert len(checks) == 2 and all(s.startswith("graded(check_") for s in checks), checks
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for source, tags in cells:
        exec(compile(source, f"{name}.ipynb", "exec"), namespace)
        err = capsys.readouterr().err
        if "check" in tags:
            assert err.startswith("✘ NOT YET") and "not implemented yet" in err, (source, err)
        else:
            assert not err, (source, err)

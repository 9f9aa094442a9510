"""The checked exercises of chapters 06–10 (``dualarr.teach.practice``): a right answer
passes, the notebook's placeholder fails with the intended hint, and no hint gives the
answer away."""

from __future__ import annotations

import dataclasses
import re
import timeit
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

import numpy as np
import pytest

import dualarr as da
import dualarr.api
from dualarr.ad import delta as dl
from dualarr.ad.reverse import forward
from dualarr.ad.transposition import LinearProgram
from dualarr.check import FINITE_DIFFERENCES, SYMPY, GradCheckReport
from dualarr.interp.evaluate import NumpyAlgebra
from dualarr.lang.primitives import REGISTRY
from dualarr.teach.exercises import Feedback
from dualarr.teach.practice import (
    compile_time,
    performance,
    sympy_checks,
    transposition_practice,
    vmap_practice,
)


def hints(feedback: Feedback) -> list[str]:
    return [d for d in feedback.details if d.startswith("Hint:")]


def assert_not_yet(feedback: Feedback, *, hint: str, answer: str) -> None:
    """The verdict fails, shows in text as ``✘ NOT YET``, has a hint containing ``hint``
    and no hint containing ``answer``."""
    assert not feedback.passed, feedback
    assert str(feedback).startswith("✘ NOT YET")
    found = hints(feedback)
    assert found and any(hint in h for h in found), feedback
    assert all(answer not in h for h in found), feedback


def assert_passed(feedback: Feedback) -> None:
    assert feedback.passed, feedback
    assert str(feedback).startswith("✔ PASSED")


# --------------------------------------------------------------------------------------
# Chapter 06
# --------------------------------------------------------------------------------------


def test_tanh_factor() -> None:
    assert_passed(compile_time.check_tanh_factor("v4"))
    assert_not_yet(compile_time.check_tanh_factor("v1"), hint="value of tanh", answer="v4")
    assert_not_yet(compile_time.check_tanh_factor("v5"), hint="Scale", answer="v4")
    assert_not_yet(compile_time.check_tanh_factor(None), hint="as a string", answer="v4")


def test_two_shares() -> None:
    def example(x: da.Tensor) -> da.Tensor:
        y = x * x + x
        return da.sum(y * y * x)

    assert_passed(compile_time.check_two_shares(example))
    assert_passed(compile_time.check_two_shares(compile_time.chain(3)))
    assert_not_yet(compile_time.check_two_shares(compile_time.chain(2)),
                   hint="Add", answer="chain(3)")


def test_sum_chain_shares() -> None:
    assert_passed(compile_time.check_sum_chain_shares(lambda k: k))
    assert_not_yet(compile_time.check_sum_chain_shares(lambda k: k - 1),
                   hint="plain variable", answer="shares = k")


def _specialise(source: str) -> str:
    head, _, body = source.partition("\n")
    body = re.sub(r"\(dt \* (\w+)\)", r"\1", body)
    body = re.sub(r"dt \* ", "", body)
    body = re.sub(r" \* dt\b", "", body)
    body = re.sub(r"\bdt\b", "1.0", body)
    return head + "\n" + body


def test_specialise() -> None:
    assert_passed(compile_time.check_specialise(_specialise))
    feedback = compile_time.check_specialise(lambda source: source)
    assert_not_yet(feedback, hint="product with dt", answer="re.sub")
    assert "still reads dt" in str(feedback)
    doubled = compile_time.check_specialise(lambda source: source.replace("dt *", "2.0 *"))
    assert not doubled.passed and "expected: the gradient" in str(doubled)


def test_mode_timing() -> None:
    def time_modes(f: Callable[..., Any], x: np.ndarray) -> dict[str, float]:
        seconds = {}
        for mode in ("compiled", "interpret"):
            gradient = da.grad(f, mode=mode)
            gradient(x)
            seconds[mode] = min(timeit.repeat(partial(gradient, x), number=1, repeat=2))
        return seconds

    assert_passed(compile_time.check_mode_timing(time_modes))
    assert_not_yet(compile_time.check_mode_timing(lambda f, x: {"compiled": 1.0}),
                   hint="'interpret'", answer="timeit.repeat(lambda")


# --------------------------------------------------------------------------------------
# Chapter 07
# --------------------------------------------------------------------------------------


def test_batched_matmul() -> None:
    assert_passed(vmap_practice.check_batched_matmul(lambda a, b: da.vmap(da.matmul)(a, b)))
    feedback = vmap_practice.check_batched_matmul(lambda a, b: da.matmul(a[0], b[0]))
    assert_not_yet(feedback, hint="leading (batch) axis", answer="vmap(da.matmul)")
    assert "expected: shape [5,2,4]" in str(feedback)


def _three_way_sum(a: da.Tensor, b: da.Tensor, c: da.Tensor) -> da.Tensor:
    inner: Callable[[da.Tensor, da.Tensor], da.Tensor] = lambda x, y: da.vmap(  # noqa: E731
        lambda z: x + y + z
    )(c)
    table: da.Tensor = da.vmap(lambda x: da.vmap(lambda y: inner(x, y))(b))(a)
    return table


def test_three_way_sum() -> None:
    feedback = vmap_practice.check_three_way_sum(_three_way_sum)
    assert_passed(feedback)
    assert "1 → 1, 2 → 7, 3 → 17" in str(feedback)
    zipped = vmap_practice.check_three_way_sum(
        lambda a, b, c: da.vmap(lambda x, y, z: x + y + z)(a, b, c)
    )
    assert_not_yet(zipped, hint="Nest three", answer="vmap(lambda x: da.vmap")


def test_gather_rule() -> None:
    assert_passed(vmap_practice.check_gather_rule("build1-index"))
    expected_hints = {"": "p.bot_steps", "build1-op": "Fig. 11", "index-index": "Fig. 11"}
    for wrong, hint in expected_hints.items():
        assert_not_yet(vmap_practice.check_gather_rule(wrong), hint=hint, answer="build1-index")


def test_shifted_rows() -> None:
    right = vmap_practice.check_shifted_rows(
        lambda v, m: da.vmap(lambda v, row: row - v, in_axes=(None, 0))(v, m)
    )
    assert_passed(right)
    placeholder = vmap_practice.check_shifted_rows(
        lambda v, m: da.vmap(lambda v, row: row - v)(v, m)
    )
    assert_not_yet(placeholder, hint="in_axes", answer="(None, 0)")
    assert "ShapeError" in str(placeholder)


def test_growth() -> None:
    assert_passed(vmap_practice.check_growth({"source": 2, "vectorised": 0}))
    assert_not_yet(vmap_practice.check_growth({"source": None, "vectorised": None}),
                   hint="nested loops", answer="p = 2")
    assert_not_yet(vmap_practice.check_growth({"source": 2, "vectorised": 1}),
                   hint="does not change", answer="p = 0")


# --------------------------------------------------------------------------------------
# Chapter 08
# --------------------------------------------------------------------------------------


def _scatter_cotangent(c: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
    gradient = np.zeros(n)
    inside = (index >= 0) & (index < n)
    np.add.at(gradient, index[inside], c[inside])
    return gradient


def test_scatter_cotangent() -> None:
    check = transposition_practice.check_scatter_cotangent
    assert_passed(check(_scatter_cotangent))
    assert_not_yet(check(lambda c, index, n: np.zeros(n)), hint="element that read",
                   answer="np.add.at")

    def assigned(c: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
        gradient = np.zeros(n)
        inside = (index >= 0) & (index < n)
        gradient[index[inside]] = c[inside]
        return gradient

    assert_not_yet(check(assigned), hint="both reach it", answer="np.add.at")

    def wraps(c: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
        gradient = np.zeros(n)
        np.add.at(gradient, index[index < n], c[index < n])
        return gradient

    assert_not_yet(check(wraps), hint="negative index", answer="index >= 0")


def _onehot_counts(delta: dl.Delta) -> dict[int, int]:
    counts: dict[int, int] = {}
    walked: set[int] = set()

    def walk(node: dl.Delta) -> None:
        for child in dl.delta_children(node):
            if isinstance(child, dl.Share):
                counts[child.id] = counts.get(child.id, 0) + 1
                if child.id in walked:
                    continue
                walked.add(child.id)
            walk(child)

    if isinstance(delta, dl.Share):
        counts[delta.id] = 1
        walked.add(delta.id)
    walk(delta)
    return counts


def test_onehot_counts() -> None:
    check = transposition_practice.check_onehot_counts
    assert_passed(check(_onehot_counts))
    assert_not_yet(check(lambda delta: {}), hint="per *use*", answer="{1: 2")


def test_transposed_spec() -> None:
    def transposed(spec: str) -> str:
        inputs, output = spec.split("->")
        first, second = inputs.split(",")
        return f"{output},{second}->{first}"

    assert_passed(transposition_practice.check_transposed_spec(transposed))
    assert_not_yet(transposition_practice.check_transposed_spec(lambda spec: spec),
                   hint="indices of u", answer="a,b->ab")

    def swaps_operands(spec: str) -> str:
        inputs, output = spec.split("->")
        first, second = inputs.split(",")
        return f"{second},{output}->{first}"

    assert not transposition_practice.check_transposed_spec(swaps_operands).passed


def test_adjoint_sides() -> None:
    check = transposition_practice.check_adjoint_sides
    assert_passed(check(transposition_practice.adjoint_sides))
    assert_not_yet(check(lambda delta, program, v, u: (0.0, 0.0)), hint="run_linear",
                   answer="np.sum(np.asarray(forward")

    def both_from_the_delta(
        delta: dl.Delta, program: LinearProgram, v: Mapping[int, np.ndarray], u: np.ndarray
    ) -> tuple[float, float]:
        left = float(np.sum(np.asarray(forward(NumpyAlgebra(), delta, dict(v))) * u))
        return left, left  # never runs the program: the third case catches it

    assert not check(both_from_the_delta).passed


def test_scatter_fate() -> None:
    check = transposition_practice.check_scatter_fate
    assert_passed(check("gather"))
    assert_not_yet(check(""), hint="3 - j", answer="'gather'")
    assert_not_yet(check("scatter"), hint="3 - j", answer="gather")


# --------------------------------------------------------------------------------------
# Chapter 09
# --------------------------------------------------------------------------------------


def test_w4_gradient() -> None:
    def by_hand(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ones = np.ones((a.shape[0], b.shape[1]))
        return ones @ b.T, a.T @ ones

    assert_passed(performance.check_w4_gradient(by_hand))
    assert_not_yet(
        performance.check_w4_gradient(lambda a, b: (np.zeros_like(a), np.zeros_like(b))),
        hint="matrix of ones", answer="b.T",
    )


def test_w5_with_lets() -> None:
    def with_lets(x: da.Tensor) -> da.Tensor:
        shared: da.Tensor = da.let(
            x * x, lambda xx: da.sum(da.sin(x) * da.exp(-xx) + da.log1p(xx))
        )
        return shared

    assert_passed(performance.check_w5_with_lets(with_lets))
    assert_not_yet(performance.check_w5_with_lets(performance.w5), hint="da.let(x * x",
                   answer="da.log1p(xx)")

    def changed(x: da.Tensor) -> da.Tensor:
        shared: da.Tensor = da.let(x * x, lambda xx: da.sum(da.sin(x) * da.exp(-xx)))
        return shared

    assert_not_yet(performance.check_w5_with_lets(changed), hint="must not change",
                   answer="log1p")


def test_w6_gradient() -> None:
    check = performance.check_w6_gradient
    assert_passed(check(lambda x, idx, w: np.bincount(idx, weights=w, minlength=len(x))))
    assert_not_yet(check(lambda x, idx, w: np.zeros_like(x)), hint="read x[k]",
                   answer="bincount")

    def assigned(x: np.ndarray, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
        gradient = np.zeros_like(x)
        gradient[idx] = w
        return gradient

    assert_not_yet(check(assigned), hint="cannot be a gather", answer="bincount")
    assert_not_yet(check(lambda x, idx, w: w), hint="per element of x", answer="bincount")


def test_table_differences() -> None:
    check = performance.check_table_differences
    assert_passed(check({"processes", "sizes", "samples"}))
    placeholder = check(set())
    assert_not_yet(placeholder, hint="--help", answer="processes")
    assert "3 more" in str(placeholder)
    assert "'workloads'" in str(check({"processes", "workloads"}))
    assert not check("processes").passed


# --------------------------------------------------------------------------------------
# Chapter 10
# --------------------------------------------------------------------------------------


def _with_broken_exp(f: Callable[..., Any], *arrays: Any) -> GradCheckReport:
    real = REGISTRY["exp"]
    dualarr.api.clear_caches()
    try:
        REGISTRY["exp"] = dataclasses.replace(real, partials=(lambda m, x, y: 2 * y,))
        return da.check_grad(f, *arrays)
    finally:
        REGISTRY["exp"] = real
        dualarr.api.clear_caches()


def test_broken_exp() -> None:
    pytest.importorskip("sympy")
    real = REGISTRY["exp"]
    assert_passed(sympy_checks.check_broken_exp(_with_broken_exp))
    assert_not_yet(sympy_checks.check_broken_exp(lambda f, *arrays: da.check_grad(f, *arrays)),
                   hint="dataclasses.replace", answer="2 * y")

    def never_restores(f: Callable[..., Any], *arrays: Any) -> GradCheckReport:
        REGISTRY["exp"] = dataclasses.replace(real, partials=(lambda m, x, y: 2 * y,))
        dualarr.api.clear_caches()
        return da.check_grad(f, *arrays)

    assert_not_yet(sympy_checks.check_broken_exp(never_restores), hint="finally",
                   answer="2 * y")
    assert REGISTRY["exp"] is real
    assert np.allclose(da.grad(lambda v: da.sum(da.exp(v)))(np.zeros(2)), 1.0)


@pytest.mark.parametrize(
    ("check", "right"),
    [
        (sympy_checks.check_tie_failures, {SYMPY}),
        (sympy_checks.check_singular_failures, {FINITE_DIFFERENCES}),
    ],
)
def test_which_checks_fail(
    check: Callable[[Iterable[str] | None], Feedback], right: set[str]
) -> None:
    pytest.importorskip("sympy")  # the answers count SymPy's check
    assert_passed(check(right))
    (name,) = right
    assert_not_yet(check(set()), hint="Hint", answer=name)
    too_many = check(set(sympy_checks.CHECK_NAMES))
    assert not too_many.passed and "these pass" in str(too_many)
    assert not check("nonsense").passed


def test_simplified_dy() -> None:
    sp = pytest.importorskip("sympy")
    exact = sympy_checks.exact_foo_dy()
    for form in (sp.simplify(exact), sp.together(exact), exact):
        assert_passed(sympy_checks.check_simplified_dy(form))
    assert_not_yet(sympy_checks.check_simplified_dy(None), hint="sp.simplify",
                   answer=str(sp.simplify(exact)))
    assert_not_yet(sympy_checks.check_simplified_dy(exact + 1), hint="must not change",
                   answer=str(sp.simplify(exact)))

"""``da.check_grad``: the compiled gradient cross-checked against SymPy, finite
differences, the interpreted reverse pass and the jvp/vjp adjoint identity."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs
from test_sympy_backend import ACCEPTANCE_CASES, CASE_IDS, Case, foo, relu

import dualarr as da
import dualarr.api
import dualarr.check
from dualarr.check import (
    ADJOINT,
    FD_ELEMENT_LIMIT,
    FINITE_DIFFERENCES,
    INTERPRETED,
    SYMPY,
    CheckResult,
    GradCheckReport,
)
from dualarr.lang.primitives import REGISTRY

T = da.Tensor
CHECK_NAMES = (SYMPY, FINITE_DIFFERENCES, INTERPRETED, ADJOINT)


@pytest.fixture
def fresh_caches() -> Iterator[None]:
    """Compiled gradients are cached per function and types: none may outlive a test
    that changes a derivative rule."""
    dualarr.api.clear_caches()
    yield
    dualarr.api.clear_caches()


# ======================================================================================
# The acceptance cases pass every check
# ======================================================================================


@pytest.mark.parametrize("case", ACCEPTANCE_CASES, ids=CASE_IDS)
def test_check_grad_passes_on_acceptance_cases(case: Case) -> None:
    report = da.check_grad(case.function, *case.arrays)
    assert report.passed, str(report)
    assert tuple(c.name for c in report.checks) == CHECK_NAMES
    assert not any(c.skipped for c in report.checks), str(report)


def _smooth_at(program: Callable[..., Any], arrays: tuple[np.ndarray, ...]) -> bool:
    """Central differences with steps 1e-4 and 1e-6 agree at every element: the program
    has no jump (``sign``, ``floor``, a comparison) within a step of the point."""
    for k, array in enumerate(arrays):
        if not np.issubdtype(array.dtype, np.floating):
            continue
        for element in np.ndindex(array.shape):
            slopes = []
            for step in (1e-4, 1e-6):
                moved = [list(arrays), list(arrays)]
                for sign, args in zip((1, -1), moved, strict=True):
                    shifted = np.array(array, dtype=np.float64)
                    shifted[element] += sign * step
                    args[k] = shifted
                high, low = (float(np.sum(program(*args))) for args in moved)
                slopes.append((high - low) / (2 * step))
            if not np.isclose(slopes[0], slopes[1], rtol=1e-3, atol=1e-3):
                return False
    return True


@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(programs(float_only=True, output_shapes=st.just(())))
def test_finite_differences_and_interpreted_pass_on_generated_programs(
    gp: GeneratedProgram,
) -> None:
    """Where the compiled gradient is finite (not at a singular point such as 0/0) and
    the function is smooth around the point (not at a jump such as ``sign 0``)."""
    f = gp.function()
    stages = da.pipeline(f, *gp.arrays)
    value, grads = stages(*gp.arrays)
    assume(np.isfinite(value) and all(np.all(np.isfinite(g)) for g in grads))
    assume(_smooth_at(stages.source, gp.arrays))
    report = da.check_grad(f, *gp.arrays, sympy_limit=0)
    assert report.check(FINITE_DIFFERENCES).passed, str(report)
    assert report.check(INTERPRETED).passed, str(report)


def test_report_text_and_html_name_every_check() -> None:
    report = da.check_grad(foo, np.float64(1.1), np.float64(2.2), np.float64(3.3))
    assert isinstance(report, GradCheckReport) and report.passed
    text, page = str(report), report._repr_html_()
    assert text.splitlines()[0] == (
        "check_grad foo(x : float64[], y : float64[], z : float64[]) -> float64[]: PASSED"
    )
    for name in CHECK_NAMES:
        assert name in text and name in page
        assert report.check(name).status == "pass"
        assert re.search(re.escape(name) + r"\s+pass\s", text), text
    assert page.count(">pass</td>") == 4 and page.startswith("<table")
    assert "FAIL" not in text and "FAIL" not in page


def test_kinks_accept_either_one_sided_derivative() -> None:
    """relu at 0: the one-sided differences are 0 and 1, the compiled gradient 0."""
    t = np.array([[1.5, -2.0, 0.0]])
    report = da.check_grad(lambda x: da.sum(relu(x)), t)
    assert report.passed, str(report)
    assert "1 element at kinks" in report.check(FINITE_DIFFERENCES).detail


def test_a_nan_gradient_at_a_singular_point_is_reported() -> None:
    """sqrt at 0 times 0: the compiled gradient is nan (0 * inf), SymPy's 0; finite
    differences cannot tell (sqrt of a negative number) and say so."""
    report = da.check_grad(lambda x: da.sqrt(x[0]) * 0.0 + da.sum(x), np.array([0.0, 1.0]))
    assert not report.passed
    sympy_check = report.check(SYMPY)
    assert "input 0 (x) element [0]: compiled nan vs SymPy 1" in sympy_check.detail
    assert "is the point singular" in sympy_check.detail
    assert "1 element not checked (non-finite differences)" in report.check(
        FINITE_DIFFERENCES
    ).detail


def test_tolerance_override() -> None:
    report = da.check_grad(lambda x: da.sum(da.exp(x)), np.ones(3), rtol=1e-3, atol=1e-4)
    assert report.passed
    assert all("rtol 0.001, atol 0.0001" in c.detail for c in report.checks[:3]), str(report)


# ======================================================================================
# Skipping SymPy, with the reason
# ======================================================================================


def test_sympy_skipped_above_the_limit() -> None:
    report = da.check_grad(lambda x: da.sum(da.sin(x) * x), np.linspace(-1, 1, 12), sympy_limit=10)
    sympy_check = report.check(SYMPY)
    assert sympy_check.skipped and sympy_check.passed and sympy_check.status == "skipped"
    assert "12 float input scalars exceed the SymPy limit of 10" in sympy_check.detail
    assert report.passed
    assert "skipped" in str(report) and ">skipped</td>" in report._repr_html_()
    assert "SymPy limit" in str(report)


def test_sympy_skipped_for_argmax_of_inputs() -> None:
    report = da.check_grad(lambda x: da.max(x) * da.sum(x), np.array([0.5, 2.0, -1.0]))
    sympy_check = report.check(SYMPY)
    assert sympy_check.skipped
    assert "SymPy cannot evaluate this program" in sympy_check.detail
    assert "argmax of symbolic values" in sympy_check.detail
    assert report.passed, str(report)


def test_large_inputs_use_random_directions() -> None:
    x = np.linspace(-2, 2, FD_ELEMENT_LIMIT + 1)
    report = da.check_grad(lambda v: da.sum(da.sin(v) * v), x)
    assert report.passed, str(report)
    assert report.check(SYMPY).skipped
    assert "random directions" in report.check(FINITE_DIFFERENCES).detail


# ======================================================================================
# A wrong derivative rule is caught and located
# ======================================================================================


_SIN_WITH_WRONG_SIGN = dataclasses.replace(
    REGISTRY["sin"], partials=(lambda m, x, y: -m.cos(x),)
)
"""``sin`` with d sin x = -cos x: a sign error in one derivative rule (Fig. 14)."""


def test_a_sign_error_in_one_rule_fails_and_names_the_input(
    monkeypatch: pytest.MonkeyPatch, fresh_caches: None
) -> None:
    def weights_and_angles(weights: T, angles: T) -> T:
        return da.sum(weights * angles) + da.sum(da.sin(angles))

    monkeypatch.setitem(REGISTRY, "sin", _SIN_WITH_WRONG_SIGN)
    arrays = (np.array([0.5, -1.0, 2.0]), np.array([0.3, 1.0, 1.5]))
    report = da.check_grad(weights_and_angles, *arrays)
    assert not report.passed
    for name in (SYMPY, FINITE_DIFFERENCES):
        failed = report.check(name)
        assert not failed.passed and failed.status == "FAIL"
        assert "input 1 (angles) element [" in failed.detail, failed.detail
        assert "input 0" not in failed.detail, failed.detail
        assert failed.max_abs_error > 0.1
    # the interpreted reverse pass and jvp use the same (wrong) rule: they agree
    assert report.check(INTERPRETED).passed and report.check(ADJOINT).passed
    assert "FAILED" in str(report) and "FAIL" in report._repr_html_()


def test_the_worst_element_is_named(
    monkeypatch: pytest.MonkeyPatch, fresh_caches: None
) -> None:
    """The angle with the largest cos (0 of 0.1, 1.4, 3.0) has the largest error."""

    def angles_only(angles: T) -> T:
        return da.sum(da.sin(angles))

    monkeypatch.setitem(REGISTRY, "sin", _SIN_WITH_WRONG_SIGN)
    report = da.check_grad(angles_only, np.array([1.4, 0.1, 3.0]))
    assert "input 0 (angles) element [1]" in report.check(SYMPY).detail


def test_rules_are_restored_after_a_broken_rule_test(fresh_caches: None) -> None:
    """Runs after the broken-rule tests (file order): the real rule is back."""
    assert da.check_grad(lambda a: da.sum(da.sin(a)), np.array([0.3, 1.0])).passed


# ======================================================================================
# float32
# ======================================================================================


def test_float32_inputs_use_float32_tolerances() -> None:
    args = tuple(np.float32(v) for v in (1.1, 2.2, 3.3))
    _, grads = da.pipeline(foo, *args)(*args)
    assert all(np.asarray(g).dtype == np.float32 for g in grads)
    report = da.check_grad(foo, *args)
    assert report.passed, str(report)
    assert "rtol 0.01, atol 0.01" in report.check(FINITE_DIFFERENCES).detail
    assert "evaluated in float64" in report.check(FINITE_DIFFERENCES).detail
    assert "rtol 0.0001" in report.check(SYMPY).detail


def _afcnn_mnist2(
    glyph: T, w1: T, b1: T, w2: T, b2: T, w3: T, b3: T
) -> T:
    """T21's ``afcnnMnist2 logistic softMax1``, summed."""

    def logistic(x: T) -> T:
        return 1.0 / (1.0 + da.exp(-x))

    hidden1 = logistic(da.matmul(w1, glyph) + b1)
    hidden2 = logistic(da.matmul(w2, hidden1) + b2)
    e = da.exp(da.matmul(w3, hidden2) + b3)
    return da.sum(e / da.sum(e))


def test_float32_mnist_network() -> None:
    """T21 in float32 (its sum is 1: every gradient is 0 up to rounding); SymPy is
    skipped to keep the test fast."""
    f32 = np.float32
    args = (
        np.array([7, 7, 7], dtype=f32),
        np.tile(np.array([1, 2, 3], dtype=f32), (4, 1)),
        np.array([1, 2, 3, 4], dtype=f32),
        np.tile(np.array([1, 2, 3, 4], dtype=f32), (5, 1)),
        np.arange(1, 6, dtype=f32),
        np.tile(np.arange(1, 6, dtype=f32), (2, 1)),
        np.array([1, 2], dtype=f32),
    )
    report = da.check_grad(_afcnn_mnist2, *args, sympy_limit=0)
    assert report.passed, str(report)
    assert report.check(SYMPY).skipped


# ======================================================================================
# What check_grad refuses
# ======================================================================================


@pytest.mark.parametrize(
    ("function", "arrays", "message"),
    [
        (lambda x: x * 2.0, (np.ones(2),), "rank-0 float output"),
        (lambda x: da.floor(x[0]), (np.ones(2),), "rank-0 float output"),
        (lambda x: (da.sum(x), da.sum(x)), (np.ones(2),), "returns 2 values"),
        (lambda n: da.to_float(n) * 2.0, (np.int64(3),), "no float input"),
        (lambda x: da.sum(x), (da.ShapeSpec((2,)),), "not ShapeSpecs"),
    ],
    ids=["vector", "int", "tuple", "int-input", "shapespec"],
)
def test_check_grad_errors(
    function: Callable[..., Any], arrays: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(da.DualarrError, match=message):
        da.check_grad(function, *arrays)


def test_check_result_rows() -> None:
    row = CheckResult("c", False, 1.0, 0.5, "input 0 (x) element [2]: …")
    assert row.status == "FAIL" and not row.skipped
    report = GradCheckReport("f", "(x : float64[3]) -> float64[]", (row,))
    assert not report.passed
    assert "FAILED" in str(report) and "1.0e+00" in str(report)
    with pytest.raises(KeyError):
        report.check("missing")


def test_a_sign_error_on_a_large_input_is_caught_along_random_directions(
    monkeypatch: pytest.MonkeyPatch, fresh_caches: None
) -> None:
    def many_angles(angles: T) -> T:
        return da.sum(da.sin(angles))

    monkeypatch.setitem(REGISTRY, "sin", _SIN_WITH_WRONG_SIGN)
    report = da.check_grad(many_angles, np.linspace(0.0, 1.0, FD_ELEMENT_LIMIT + 1))
    failed = report.check(FINITE_DIFFERENCES)
    assert not failed.passed
    assert "input 0 (angles) along a random direction" in failed.detail


def test_an_adjoint_mismatch_is_localised(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled vjp that doubles its cotangents breaks <c, jvp(t)> = <vjp(c), t>; the
    check names the input and the worst element (found with one jvp per element)."""
    real_vjp = da.vjp

    def doubled_vjp(f: Callable[..., Any], *args: Any, mode: str = "compiled") -> Any:
        value, pullback = real_vjp(f, *args, mode=mode)
        if mode != "compiled":
            return value, pullback

        def doubled(*cts: Any) -> tuple[Any, ...]:
            return tuple(None if g is None else 2 * g for g in pullback(*cts))

        return value, doubled

    monkeypatch.setattr(dualarr.check, "vjp", doubled_vjp)
    report = da.check_grad(
        lambda u, v: da.sum(u * u) + da.sum(v), np.array([1.0, -3.0]), np.ones(2)
    )
    failed = report.check(ADJOINT)
    assert not failed.passed
    assert "input 0 (u): <c, jvp(t)>" in failed.detail
    assert "worst element [1]" in failed.detail
    assert report.check(INTERPRETED).passed

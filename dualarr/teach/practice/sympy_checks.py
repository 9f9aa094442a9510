"""Exercises of chapter 10 (checking gradients with SymPy and ``check_grad``): a broken
``exp`` rule caught by the report, which checks notice a changed convention at a tie, a
simplified exact derivative, and what the report says at a singular point."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...api import clear_caches
from ...check import ADJOINT, FINITE_DIFFERENCES, INTERPRETED, SYMPY, GradCheckReport, check_grad
from ...lang import functions as fn
from ...lang.primitives import REGISTRY
from ...lang.tensor import Tensor
from ...sympy_reference import sympy_gradient
from ..exercises.feedback import (
    Feedback,
    describe_error,
    not_yet,
    passed,
    require_callable,
)

if TYPE_CHECKING:
    import sympy as sp

CHECK_NAMES = (SYMPY, FINITE_DIFFERENCES, INTERPRETED, ADJOINT)
"""The names of the four cross-checks of ``da.check_grad``, in the report's order."""

# --------------------------------------------------------------------------------------
# Exercise 1: a broken exp rule
# --------------------------------------------------------------------------------------


def weights_and_growth(weights: Tensor, rates: Tensor) -> Tensor:
    """``sum(weights * rates) + sum(exp(rates))``: ``exp`` touches input 1 only."""
    return fn.sum(weights * rates) + fn.sum(fn.exp(rates))


def check_broken_exp(
    check_with_broken_exp: Callable[..., GradCheckReport],
) -> Feedback:
    """Check ``check_with_broken_exp(f, *arrays)``: ``da.check_grad(f, *arrays)`` run with
    a wrong derivative rule for ``exp`` installed, which must fail naming the input that
    ``exp`` touches, and leave the real rule (and correct gradients) behind."""
    require_callable(check_with_broken_exp, "check_with_broken_exp", "check_broken_exp")
    title = "a broken exp rule caught by check_grad"
    arrays = (np.array([0.5, -1.0, 2.0]), np.array([0.3, 1.0, 1.5]))
    where = "input: weights_and_growth(weights, rates), exp applied to rates only"
    real_rule = REGISTRY["exp"]
    try:
        report = check_with_broken_exp(weights_and_growth, *arrays)
    except Exception as err:
        return not_yet(title, where, f"it raised {describe_error(err)}")
    finally:
        left_broken = REGISTRY["exp"] is not real_rule
        REGISTRY["exp"] = real_rule
        clear_caches()
    if left_broken:
        return not_yet(title, where, "expected: the real exp rule back in REGISTRY afterwards",
                       "obtained: your rule was still installed (the checker put it back)",
                       "Hint: restore the rule in a finally: block, so that it comes back "
                       "even when check_grad raises.")
    if not isinstance(report, GradCheckReport):
        return not_yet(title, where, "expected: the report of da.check_grad",
                       f"obtained: a {type(report).__name__}")
    if report.passed:
        return not_yet(title, where, "expected: a FAILED report", "obtained: PASSED",
                       "Hint: was your rule installed while check_grad ran? Replace "
                       "REGISTRY['exp'] by a copy with other partials (dataclasses.replace), "
                       "clear the caches, then call da.check_grad.")
    failing = [c for c in report.checks if c.status == "FAIL"]
    if not any("input 1 (rates)" in c.detail for c in failing) or any(
        "input 0" in c.detail for c in failing
    ):
        return not_yet(title, where, "expected: failures that name input 1 (rates) only",
                       "obtained: " + "; ".join(f"{c.name}: {c.detail}" for c in failing))
    return passed(title, "the report names input 1 (rates), the only input exp touches; "
                  f"failed: {', '.join(c.name for c in failing)}")


# --------------------------------------------------------------------------------------
# Exercises 2 and 4: which checks fail
# --------------------------------------------------------------------------------------


def _failing(report: GradCheckReport) -> frozenset[str]:
    return frozenset(c.name for c in report.checks if c.status == "FAIL")


def _check_prediction(
    title: str, where: str, predicted: Iterable[str] | None, actual: frozenset[str], hint: str
) -> Feedback:
    names = ", ".join(repr(n) for n in CHECK_NAMES)
    chosen = (
        set(predicted) if predicted is not None and not isinstance(predicted, str) else None
    )
    if chosen is None or not chosen <= set(CHECK_NAMES):
        return not_yet(title, where, f"obtained: {predicted!r}",
                       f"expected: a set of some of {names} (SYMPY, FINITE_DIFFERENCES, "
                       "INTERPRETED, ADJOINT)", hint)
    if chosen == actual:
        return passed(title, "failing: " + (", ".join(sorted(actual)) or "none")
                      + "; the others pass")
    passing = sorted(chosen - actual)
    details = [where, f"obtained: {sorted(chosen)}"]
    if passing:
        details.append(f"these pass: {', '.join(passing)}")
    if actual - chosen:
        details.append(f"expected: {len(actual - chosen)} more failing check(s)")
    return not_yet(title, *details, hint)


def maximum_second_at_ties(f: Callable[..., Tensor], *arrays: Any) -> GradCheckReport:
    """``da.check_grad(f, *arrays)`` with the ``maximum`` rule's masks swapped, so that
    at a tie the derivative goes to the second argument (the real rule is restored)."""
    real_rule = REGISTRY["maximum"]
    swapped = dataclasses.replace(
        real_rule,
        partials=(
            lambda m, a, b, y: m.where(a >= b, 0, 1),
            lambda m, a, b, y: m.where(a >= b, 1, 0),
        ),
    )
    clear_caches()
    try:
        REGISTRY["maximum"] = swapped
        return check_grad(f, *arrays)
    finally:
        REGISTRY["maximum"] = real_rule
        clear_caches()


def _twice_maximum(a: Tensor, b: Tensor) -> Tensor:
    return 2.0 * fn.maximum(a, b)


def check_tie_failures(predicted: Iterable[str] | None) -> Feedback:
    """Check the set of check names that fail for ``2 * maximum(a, b)`` at the tie
    ``a = b = 1`` once the ``maximum`` rule gives ties to the second argument."""
    actual = _failing(maximum_second_at_ties(_twice_maximum, np.float64(1.0), np.float64(1.0)))
    return _check_prediction(
        "which checks notice the second argument winning ties",
        "input: 2 * maximum(a, b) at a = b = 1, the masks of maximum's rule swapped",
        predicted,
        actual,
        "Hint: ask of each check whether it uses dualarr's rule (then it agrees with the "
        "compiled gradient, whatever the rule says), and if not, which convention at a "
        "tie it holds: exactly one, or any value between the one-sided derivatives?",
    )


def _reciprocal_sum(v: Tensor) -> Tensor:
    return fn.sum(1.0 / v)


def check_singular_failures(predicted: Iterable[str] | None) -> Feedback:
    """Check the set of check names that fail for ``sum(1 / v)`` at ``v = [0, 1, 2]``."""
    actual = _failing(check_grad(_reciprocal_sum, np.array([0.0, 1.0, 2.0])))
    return _check_prediction(
        "which checks fail at a singular point",
        "input: sum(1 / v) at v = [0, 1, 2]",
        predicted,
        actual,
        "Hint: at v = 0 the exact derivative -1/v² is -inf. Which checks compute it the "
        "same way as the compiled gradient, and which compare it with numbers taken on "
        "both sides of the pole?",
    )


# --------------------------------------------------------------------------------------
# Exercise 3: a simplified exact derivative (open-ended)
# --------------------------------------------------------------------------------------


def foo(x: Tensor, y: Tensor, z: Tensor) -> Tensor:
    """The horde-ad example of chapter 10: ``atan2(z, x sin y) + z x sin y``."""
    w = x * fn.sin(y)
    return fn.atan2(z, w) + z * w


def exact_foo_dy() -> sp.Expr:
    """SymPy's ∂foo/∂y, unsimplified, in the symbols ``x``, ``y``, ``z`` (SymPy is the
    optional ``symbolic`` extra: imported here, not with the module)."""
    import sympy as sp

    exact = sympy_gradient(foo, np.float64(1.1), np.float64(2.2), np.float64(3.3))
    expr: sp.Expr = sp.sympify(np.asarray(exact.gradient("y")).item())
    return expr


def check_simplified_dy(simplified: object) -> Feedback:
    """Check a SymPy expression equal to ∂foo/∂y (at six points), and say how long it is
    against SymPy's unsimplified one (``sp.count_ops``)."""
    import sympy as sp

    title = "a simplified ∂foo/∂y"
    exact = exact_foo_dy()
    symbols = sorted(exact.free_symbols, key=str)
    if not isinstance(simplified, sp.Expr):
        return not_yet(title, f"obtained: a {type(simplified).__name__}",
                       "expected: a SymPy expression in x, y, z",
                       "Hint: start from da.sympy_gradient(foo, …).gradient('y') (its .item() "
                       "is the expression) and call sp.simplify on it.")
    extra = sorted(str(s) for s in simplified.free_symbols - set(symbols))
    if extra:
        return not_yet(title, f"obtained: an expression in {extra}",
                       "expected: an expression in x, y, z only")
    given = sp.lambdify(symbols, simplified, "numpy")
    reference = sp.lambdify(symbols, exact, "numpy")
    rng = np.random.default_rng(5)
    for point in rng.uniform(0.3, 2.0, size=(6, 3)):
        want, got = float(reference(*point)), float(given(*point))
        if not np.isclose(got, want, rtol=1e-9, atol=1e-12):
            return not_yet(title, f"input: (x, y, z) = {tuple(round(float(p), 4) for p in point)}",
                           f"expected: {want:.6g}", f"obtained: {got:.6g}",
                           "Hint: simplifying must not change the value anywhere.")
    before, after = sp.count_ops(exact), sp.count_ops(simplified)
    return passed(title, f"equal to SymPy's ∂foo/∂y at 6 points; {after} operations against "
                  f"the {before} of SymPy's unsimplified expression (sp.count_ops)")

"""The bot on generated programs: same values before and after, and Theorem 5.1 holds."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from strategies import GeneratedProgram, programs

from dualarr.interp.evaluate import evaluate_many
from dualarr.lang.terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Build1,
    Const,
    FromList,
    Index,
    Scatter,
    Var,
    postorder,
)
from dualarr.vectorise.bot import is_bot_normal, vectorise
from dualarr.vectorise.simplify import simplify

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@settings(max_examples=500, suppress_health_check=SLOW_OK)
@given(programs())
def test_bot_preserves_values_and_reaches_normal_form(gp: GeneratedProgram) -> None:
    env = gp.env()
    (before,) = evaluate_many([gp.term], env)
    result = vectorise([gp.term], gp.supply)
    assert is_bot_normal(result.terms)
    (after,) = evaluate_many(list(result.terms), env)
    assert_same(after, before)
    simplified = simplify(list(result.terms), gp.supply)
    assert is_bot_normal(simplified)
    (after_simplify,) = evaluate_many(simplified, env)
    assert_same(after_simplify, before)


@settings(max_examples=60, suppress_health_check=SLOW_OK)
@given(programs(max_depth=4))
def test_every_recorded_step_keeps_the_programs_value(gp: GeneratedProgram) -> None:
    env = gp.env()
    (before,) = evaluate_many([gp.term], env)
    result = vectorise([gp.term], gp.supply, record=True)
    needs_work = any(
        isinstance(n, Build1)
        or (
            isinstance(n, Index)
            and not isinstance(
                n.array, Var | Const | FromList | Scatter | ArgMin | ArgMax | ArgSort
            )
        )
        for n in postorder([gp.term])
    )
    assert bool(result.steps) == needs_work
    for step in result.steps:
        (value,) = evaluate_many(list(step.whole), env)
        assert_same(value, before)
        assert step.rule and step.figure.startswith("Fig.")

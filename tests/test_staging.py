"""The same derivative rules and reverse pass on terms (App. D): symbolic gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs

import dualarr as da
from dualarr import symbolic as sym
from dualarr.api import vectorised_program
from dualarr.codegen import compile_program
from dualarr.core import Term, Var, bound_vars, postorder
from dualarr.evaluate import evaluate_many
from dualarr.examples import fig18
from dualarr.printer import print_program


def symbolic_gradient(
    f: Callable[..., Any], args: tuple[Any, ...]
) -> tuple[list[Var], list[Term]]:
    """(inputs + [dt], [value, gradient per float input]) as terms."""
    result = sym.symbolic_gradient(vectorised_program(f, args))
    return list(result.gradient.inputs), list(result.gradient.outputs)


def test_fig18_symbolic_gradient_is_a_term_with_one_gather_and_its_scatter() -> None:
    x = np.arange(1.0, 6.0)
    inputs, terms = symbolic_gradient(fig18, (x,))
    text = print_program(inputs, terms, tuple_output=True)
    assert "gather [5] x" in text and "scatter [5]" in text and "4 - " in text
    value, gradient = evaluate_many(terms, {inputs[0]: x, inputs[1]: np.float64(1.0)})
    assert value == 35.0
    np.testing.assert_allclose(gradient, 2 * x[::-1])


def test_every_variable_is_bound_once() -> None:
    x = np.arange(1.0, 6.0)
    _, terms = symbolic_gradient(fig18, (x,))
    binders = [v for n in postorder(terms) for v in bound_vars(n)[0]]
    assert len(binders) == len({v.id for v in binders})


SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=200, suppress_health_check=SLOW_OK)
@given(programs(float_only=True, output_shapes=st.just(())))
def test_symbolic_gradient_equals_the_concrete_one(gp: GeneratedProgram) -> None:
    f = gp.function()
    arrays = tuple(gp.arrays)
    inputs, terms = symbolic_gradient(f, arrays)
    env: dict[Var, Any] = {v: a for v, a in zip(inputs[:-1], arrays, strict=True)}
    env[inputs[-1]] = np.float64(1.0)
    value, *grads = evaluate_many(terms, env)
    positions = [k for k, v in enumerate(inputs[:-1]) if v.dtype.is_float]
    concrete_value, pullback = da.vjp(f, *arrays)
    cotangents = pullback(np.float64(1.0))
    np.testing.assert_allclose(value, concrete_value, rtol=1e-9, equal_nan=True)
    for k, g in zip(positions, grads, strict=True):
        np.testing.assert_allclose(
            np.broadcast_to(g, arrays[k].shape), cotangents[k], rtol=1e-9, atol=1e-12,
            equal_nan=True,
        )


@settings(max_examples=200, suppress_health_check=SLOW_OK)
@given(programs(float_only=True, output_shapes=st.just(())))
def test_generated_code_of_the_symbolic_gradient_equals_the_concrete_one(
    gp: GeneratedProgram,
) -> None:
    f = gp.function()
    arrays = tuple(gp.arrays)
    result = sym.symbolic_gradient(vectorised_program(f, arrays))
    compiled = compile_program(result.gradient.inputs, result.gradient.outputs)
    value, *grads = compiled(*arrays, np.float64(1.0))
    concrete_value, pullback = da.vjp(f, *arrays)
    cotangents = pullback(np.float64(1.0))
    np.testing.assert_allclose(value, concrete_value, rtol=1e-9, equal_nan=True)
    for k, g in zip(result.positions, grads, strict=True):
        np.testing.assert_allclose(
            np.broadcast_to(g, arrays[k].shape), cotangents[k], rtol=1e-9, atol=1e-12,
            equal_nan=True,
        )

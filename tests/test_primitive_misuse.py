"""A user's primitive (``da.primitive``) is never served stale and never misused in
silence (issue 33, items 2 and 5).

Defined again under the same name (a re-run notebook cell), the new definition is the
one every mode and transformation computes with, fused and unfused, value and
derivative alike; a compiled program made before keeps the old definition whole, never
half of each.  A definition that cannot work is a named :class:`PrimitiveError` where
it is made, a partial or an implementation that misbehaves is one where it runs, and a
primitive called on arrays outside any trace computes its value."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualarr as da
from dualarr.api import cache_size
from dualarr.lang.errors import (
    PartialDerivativeError,
    PrimitiveDefinitionError,
    PrimitiveError,
    PrimitiveRedefinedError,
    PrimitiveResultError,
)
from dualarr.lang.primitives import IDENTITY

X = np.array([-1.5, -0.2, 0.3, 0.7, 1.9])
ROWS = np.stack([X, 2 * X, -X])
NAME = "scaled_cube"


def define_cube(k: float) -> Callable[..., Any]:
    """``k * x**3`` under one name: each call is a new definition (a re-run cell)."""
    return da.primitive(
        NAME,
        lambda xp, x: k * (x * x * x),
        (lambda m, x, y: (3.0 * k) * (x * x),),
    )


def cube(x: Any) -> Any:
    """The primitive as the learner's code calls it: by its current definition."""
    return getattr(da, NAME)(x)


def loss(x: Any) -> Any:
    return da.sum(cube(x) * x)


def expected(k: float, x: np.ndarray) -> dict[str, Any]:
    """What the scaled cube of ``k`` gives: its value, the loss and their derivatives."""
    return {
        "cube": k * x**3,
        "d_cube": 3.0 * k * x**2,
        "loss": k * np.sum(x**4),
        "d_loss": 4.0 * k * x**3,
    }


def run_all(x: np.ndarray) -> Iterator[tuple[str, Any, str]]:
    """``(what, result, expected key)`` for every mode and transformation."""
    for mode in ("compiled", "interpret"):
        yield f"grad {mode}", da.grad(loss, mode=mode)(x), "d_loss"
        value, gradient = da.value_and_grad(loss, mode=mode)(x)
        yield f"value_and_grad {mode} value", value, "loss"
        yield f"value_and_grad {mode} grad", gradient, "d_loss"
        value, pullback = da.vjp(cube, x, mode=mode)
        yield f"vjp {mode} value", value, "cube"
        yield f"vjp {mode} pullback", pullback(np.ones_like(x))[0], "d_cube"
        yield f"jacobian {mode}", np.diag(da.jacobian(cube, mode=mode)(x)), "d_cube"
    value, tangent = da.jvp(cube, (x,), (np.ones_like(x),))
    yield "jvp value", value, "cube"
    yield "jvp tangent", tangent, "d_cube"
    yield "vmap", da.vmap(cube)(np.stack([x, x]))[1], "cube"
    yield "vmap grad", da.vmap(da.grad(loss))(np.stack([x, x]))[1], "d_loss"
    yield "jit", da.jit(loss)(x), "loss"
    yield "jit grad", da.jit(da.grad(loss))(x), "d_loss"
    pipeline = da.pipeline(loss, x)
    value, (gradient,) = pipeline(x)
    yield "pipeline value", value, "loss"
    yield "pipeline grad", gradient, "d_loss"
    yield "trace", da.trace(loss, x)(x), "loss"
    yield "eager", cube(x), "cube"


@pytest.fixture(params=[True, False], ids=["fused", "unfused"])
def fuse(request: pytest.FixtureRequest) -> Iterator[bool]:
    with da.config.fusing(request.param):
        yield request.param


# ---------------------------------------------------------------- item 2: redefinition


@settings(max_examples=8, deadline=None)
@given(st.lists(st.sampled_from([1.0, 2.0, -0.5, 3.0]), min_size=2, max_size=3))
def test_every_mode_computes_with_the_current_definition(scales: list[float]) -> None:
    for fused in (True, False):
        with da.config.fusing(fused):
            for k in scales:
                define_cube(k)
                want = expected(k, X)
                for what, got, key in run_all(X):
                    np.testing.assert_allclose(
                        got, want[key], rtol=1e-12, atol=1e-12, err_msg=f"{what}, k={k}"
                    )


def test_a_jitted_function_traces_again_after_a_redefinition(fuse: bool) -> None:
    define_cube(1.0)
    jitted, jitted_grad = da.jit(loss), da.jit(da.grad(loss))
    np.testing.assert_allclose(jitted(X), expected(1.0, X)["loss"], rtol=1e-13)
    np.testing.assert_allclose(jitted_grad(X), expected(1.0, X)["d_loss"], rtol=1e-13)
    define_cube(2.0)
    np.testing.assert_allclose(jitted(X), expected(2.0, X)["loss"], rtol=1e-13)
    np.testing.assert_allclose(jitted_grad(X), expected(2.0, X)["d_loss"], rtol=1e-13)


def test_a_program_compiled_before_keeps_the_old_definition_whole(fuse: bool) -> None:
    define_cube(1.0)
    old = da.pipeline(loss, X)
    old(X)  # compiled now, with the first definition
    define_cube(2.0)
    value, (gradient,) = old(X)
    assert value == pytest.approx(expected(1.0, X)["loss"], rel=1e-13)
    np.testing.assert_allclose(gradient, expected(1.0, X)["d_loss"], rtol=1e-13)
    assert "implementations['scaled_cube'](xp, " in old.python


def test_a_pipeline_refuses_a_stage_from_a_redefined_primitive() -> None:
    define_cube(1.0)
    stale = da.pipeline(loss, X)
    define_cube(2.0)
    with pytest.raises(PrimitiveRedefinedError, match="scaled_cube was defined again") as error:
        stale(X)
    assert error.value.primitive == NAME
    with pytest.raises(PrimitiveRedefinedError):
        _ = stale.gradient


def test_the_same_definition_again_is_the_same_program() -> None:
    impl = lambda xp, x: x * x * x  # noqa: E731
    partial = lambda m, x, y: 3.0 * (x * x)  # noqa: E731
    da.primitive("same_cube", impl, (partial,))
    da.grad(lambda x: da.sum(da.same_cube(x)))(X)
    before = cache_size()
    da.primitive("same_cube", impl, (partial,))
    np.testing.assert_allclose(da.grad(lambda x: da.sum(da.same_cube(x)))(X), 3 * X**2)
    assert cache_size() == before


# ---------------------------------------------------------------- item 5: misuse


def located_here(error: PrimitiveError) -> bool:
    return error.location is not None and "test_primitive_misuse.py" in error.location


@pytest.mark.parametrize("name", [3, None, b"erf2", ("erf2",)])
def test_a_name_that_is_not_a_string_is_a_definition_error(name: Any) -> None:
    with pytest.raises(PrimitiveDefinitionError, match="name is a string") as error:
        da.primitive(name, lambda xp, x: x, (lambda m, x, y: 1.0,))
    assert located_here(error.value)


def test_a_name_that_is_not_an_identifier_is_a_definition_error() -> None:
    with pytest.raises(PrimitiveDefinitionError, match="identifier") as error:
        da.primitive("my erf", lambda xp, x: x, (lambda m, x, y: 1.0,))
    assert error.value.primitive == "my erf" and located_here(error.value)


@pytest.mark.parametrize(
    ("partials", "message"),
    [
        (lambda m, x, y: 1.0, r"got function: write \(partial,\)"),
        ("identity", "got str"),
        (None, "got NoneType"),
        ((1.0,), "partial 1 is a function"),
        ((lambda m, x: 1.0,), r"partial 1 takes \(m, \*args, y\)"),
    ],
    ids=["a bare function", "a string", "None", "a number", "a partial without y"],
)
def test_partials_not_a_tuple_of_functions_is_a_definition_error(
    partials: Any, message: str
) -> None:
    with pytest.raises(PrimitiveDefinitionError, match=message) as error:
        da.primitive("bad_partials", lambda xp, x: x, partials)
    assert error.value.primitive == "bad_partials" and located_here(error.value)


def test_an_implementation_of_the_wrong_arity_is_a_definition_error() -> None:
    with pytest.raises(PrimitiveDefinitionError, match=r"impl takes \(xp, \*args\)"):
        da.primitive("bad_impl", lambda x: x, (lambda m, x, y: 1.0,))
    not_a_function: Any = "sin"
    with pytest.raises(PrimitiveDefinitionError, match="impl is a function"):
        da.primitive("bad_impl", not_a_function, (lambda m, x, y: 1.0,))


def numpy_cos_partial() -> Callable[..., Any]:
    return da.primitive("numpy_sin", lambda xp, x: xp.sin(x), (lambda m, x, y: np.cos(x),))


def math_cos_partial() -> Callable[..., Any]:
    return da.primitive("math_sin", lambda xp, x: xp.sin(x), (lambda m, x, y: math.cos(x),))


DIFFERENTIATE: dict[str, Callable[[Callable[..., Any]], Any]] = {
    "grad compiled": lambda f: da.grad(lambda x: da.sum(f(x)))(X),
    "grad interpret": lambda f: da.grad(lambda x: da.sum(f(x)), mode="interpret")(X),
    "jvp": lambda f: da.jvp(f, (X,), (np.ones_like(X),)),
    "jit grad": lambda f: da.jit(da.grad(lambda x: da.sum(f(x))))(X),
}


@pytest.mark.parametrize("define", [numpy_cos_partial, math_cos_partial], ids=["np", "math"])
@pytest.mark.parametrize("how", list(DIFFERENTIATE))
def test_a_partial_not_written_over_the_algebra_names_its_line(
    define: Callable[[], Callable[..., Any]], how: str, fuse: bool
) -> None:
    f = define()
    with pytest.raises(PartialDerivativeError, match=r"m\.cos\(x\), not np\.cos") as error:
        DIFFERENTIATE[how](f)
    assert error.value.primitive in ("numpy_sin", "math_sin")
    assert error.value.location is not None and ".cos(x)" in error.value.location


@pytest.mark.parametrize("result", [None, "1.0", [1.0]], ids=["None", "a string", "a list"])
@pytest.mark.parametrize("how", list(DIFFERENTIATE))
def test_a_partial_that_returns_no_value_is_an_error_not_a_nan(
    result: Any, how: str, fuse: bool
) -> None:
    f = da.primitive("no_partial", lambda xp, x: xp.sin(x), (lambda m, x, y: result,))
    with pytest.raises(PartialDerivativeError, match="returned") as error:
        DIFFERENTIATE[how](f)
    assert error.value.primitive == "no_partial" and located_here(error.value)


def test_partials_that_are_numbers_identity_or_none_still_work() -> None:
    shifted = da.primitive("shifted", lambda xp, a, b: a + 2.0 * xp.floor(b), (IDENTITY, None))
    twice = da.primitive("twice", lambda xp, x: 2.0 * x, (lambda m, x, y: 2,))
    ga, gb = da.grad(lambda a, b: da.sum(shifted(a, b) * twice(a)), argnums=(0, 1))(X, X)
    np.testing.assert_allclose(ga, 2 * (X + 2 * np.floor(X)) + 2 * X, rtol=1e-13)
    np.testing.assert_allclose(gb, 0.0)


RUN: dict[str, Callable[[Callable[..., Any]], Any]] = {  # each one needs the value
    "grad compiled": lambda f: da.grad(lambda x: da.sum(f(x) * x))(X),
    "grad interpret": lambda f: da.grad(lambda x: da.sum(f(x) * x), mode="interpret")(X),
    "jit grad": lambda f: da.jit(da.grad(lambda x: da.sum(f(x) * x)))(X),
    "jvp": lambda f: da.jvp(f, (X,), (np.ones_like(X),)),
    "value_and_grad compiled": lambda f: da.value_and_grad(lambda x: da.sum(f(x)))(X),
    "vjp interpret": lambda f: da.vjp(f, X, mode="interpret"),
    "jit": lambda f: da.jit(f)(X),
    "vmap": lambda f: da.vmap(f)(ROWS),
    "trace": lambda f: da.trace(f, X)(X),
    "eager": lambda f: f(X),
}


@pytest.mark.parametrize(
    "impl",
    [lambda xp, x: xp.sum(x), lambda xp, x: x[:2], lambda xp, x: None],
    ids=["a reduction", "a slice", "None"],
)
@pytest.mark.parametrize("how", list(RUN))
def test_an_implementation_of_the_wrong_shape_is_an_error_not_a_value(
    impl: Callable[..., Any], how: str, fuse: bool
) -> None:
    f = da.primitive("wrong_shape", impl, (lambda m, x, y: 1.0,))
    with pytest.raises(PrimitiveResultError, match=r"returns one element per element") as error:
        RUN[how](f)
    assert isinstance(error.value, da.ShapeError) and error.value.primitive == "wrong_shape"
    assert "test_primitive_misuse.py" in str(error.value)  # the implementation's line


# ---------------------------------------------------------------- calls outside a trace


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-3.0, 3.0), min_size=0, max_size=6))
def test_a_primitive_on_arrays_outside_a_trace_computes_its_value(values: list[float]) -> None:
    define_cube(1.5)
    x = np.asarray(values, dtype=np.float64)
    result = cube(x)
    assert isinstance(result, np.ndarray) and result.shape == x.shape
    np.testing.assert_allclose(result, 1.5 * x**3, rtol=1e-13)
    np.testing.assert_allclose(da.exp(x), np.exp(x), rtol=1e-15)


def test_an_eager_result_is_a_fresh_array_and_numbers_promote() -> None:
    same = da.primitive("same", lambda xp, x: x, (IDENTITY,))
    assert not np.shares_memory(same(X), X)
    halve = da.primitive("halve", lambda xp, x: x / 2, (lambda m, x, y: 0.5,))
    assert halve(3).dtype == np.float64 and float(halve(3)) == 1.5
    assert isinstance(da.exp(0.0), np.ndarray) and float(da.exp(0.0)) == 1.0


def test_inside_a_trace_a_primitive_still_builds_terms() -> None:
    define_cube(1.0)
    program = da.trace(lambda x: cube(x) + cube(np.ones(5)), X)
    assert "scaled_cube" in str(program)
    np.testing.assert_allclose(program(X), X**3 + 1.0, rtol=1e-13)

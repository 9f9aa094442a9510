"""NumPy broadcasting for every elementwise operation, lowered to reshape, replicate and
transpose at trace time (DESIGN §2), with values, gradients, jvp/vjp and vmap checked
against NumPy by ``numpy_conformance``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from numpy_conformance import conforms

import dualarr as da
from dualarr.lang.terms import Op, Replicate, Reshape, Transpose, Var, postorder
from dualarr.numpy._core import numpy_function

BINARY: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "add": (lambda a, b: a + b, np.add),
    "subtract": (lambda a, b: a - b, np.subtract),
    "multiply": (lambda a, b: a * b, np.multiply),
    "divide": (lambda a, b: a / b, np.divide),
    "maximum": (da.maximum, np.maximum),
    "atan2": (da.atan2, np.arctan2),
}


def _data(shape: tuple[int, ...], seed: int, dtype: Any) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.0, shape).astype(dtype)


@settings(max_examples=25)
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_side=0, max_side=3, max_dims=3),
    name=st.sampled_from(sorted(BINARY)),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_binary_operations_broadcast_as_numpy(shapes: Any, name: str, dtype: Any) -> None:
    ours, theirs = BINARY[name]
    a = _data(shapes.input_shapes[0], 1, dtype)
    b = _data(shapes.input_shapes[1], 2, dtype) + np.asarray(0.25, dtype)  # no ties
    conforms(numpy_function(ours), theirs, [a, b])



@settings(max_examples=25)
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_side=0, max_side=3, max_dims=3),
    name=st.sampled_from(sorted(BINARY)),
    dtypes=st.sampled_from(
        [
            (np.float32, np.float64),
            (np.float64, np.float32),
            (np.float32, np.int64),
            (np.int64, np.float32),
        ]
    ),
)
def test_mixed_float_widths_promote_to_float64(shapes: Any, name: str, dtypes: Any) -> None:
    """float32 with float64, or with an int64 array, computes in float64 (NumPy's
    ``result_type``); the float32 argument's gradient is float32."""
    ours, theirs = BINARY[name]
    a, b = (  # arrays even of rank 0 (a NumPy scalar would not be an argument)
        np.asarray(_data(shape, seed, np.float64) + shift).astype(dtype)
        for shape, seed, dtype, shift in zip(
            shapes.input_shapes, (1, 2), dtypes, (0.0, 0.25), strict=True
        )
    )
    a, b = (x + 2 if x.dtype.kind == "i" else x for x in (a, b))  # ints 2 to 4
    conforms(numpy_function(ours), theirs, [a, b])
    program = da.trace(ours, a, b)
    assert program(a, b).dtype == np.result_type(a, b) == np.float64


@settings(max_examples=15)
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, min_side=1, max_side=3, max_dims=3))
def test_where_broadcasts_its_condition_and_branches(shapes: Any) -> None:
    c_shape, a_shape, b_shape = shapes.input_shapes
    condition = np.random.default_rng(0).uniform(size=c_shape) > 0.5
    a, b = _data(a_shape, 3, np.float64), _data(b_shape, 4, np.float64)

    def where(x: Any, y: Any) -> Any:
        return da.where(condition, x, y)

    conforms(
        numpy_function(where),
        lambda x, y: np.where(condition, x, y),
        [a, b],
    )


def test_centering_rows_is_the_first_line_a_numpy_user_writes() -> None:
    x = np.arange(12.0).reshape(3, 4)

    def centred(x: Any) -> Any:
        return da.sum((x - da.mean(x, axis=1, keepdims=True)) ** 2)

    expected = 2 * (x - x.mean(axis=1, keepdims=True))
    for mode in ("compiled", "interpret"):
        np.testing.assert_allclose(da.grad(centred, mode=mode)(x), expected, atol=1e-12)


def test_broadcasting_lowers_to_core_constructs_only() -> None:
    program = da.trace(lambda a, b: a * b, np.ones((3, 1)), np.ones(4))
    kinds = {type(node) for node in postorder(program.outputs)}
    assert kinds == {Var, Reshape, Replicate, Transpose, Op}
    assert str(program) == r"\a b. tr [1,0] (replicate 4 (reshape [3] a)) * replicate 3 b"


@pytest.mark.parametrize(
    ("left", "right"), [((3,), (4,)), ((2, 3), (3, 2)), ((2, 1, 3), (4, 2))]
)
def test_shapes_that_do_not_broadcast_name_the_operation_and_shapes(
    left: tuple[int, ...], right: tuple[int, ...]
) -> None:
    with pytest.raises(da.ShapeError, match=r"add: operands could not be broadcast together"):
        da.trace(lambda a, b: a + b, np.ones(left), np.ones(right))


@pytest.mark.parametrize(
    ("value", "scalar", "dtype"),
    [
        (np.arange(3), 2.5, np.float64),  # int array, Python float: float64 (NEP 50)
        (np.arange(3.0, dtype=np.float32), 2.0, np.float32),  # a Python float is weak
        (np.arange(3.0, dtype=np.float32), 2, np.float32),
        (np.array([True, False]), 2, np.int64),
        (np.arange(3), np.arange(3.0), np.float64),
        (np.array([True, False]), np.arange(2), np.int64),
        (np.arange(3.0, dtype=np.float32), np.float64(2.0), np.float64),  # NumPy scalars
        (np.arange(3.0), np.float32(2.0), np.float64),  # are strong (NEP 50)
    ],
)
def test_element_types_promote_as_numpy(value: Any, scalar: Any, dtype: Any) -> None:
    program = da.trace(lambda x: x * scalar, value)
    result = program(value)
    assert result.dtype == dtype
    np.testing.assert_allclose(result, np.multiply(value, scalar))


BOOL_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "multiply": lambda a, b: a * b,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "xor": lambda a, b: a ^ b,
}


@pytest.mark.parametrize("name", sorted(BOOL_ARITHMETIC))
@pytest.mark.parametrize("other", ["array", "python bool"])
def test_arithmetic_on_bools_is_numpys_logic_not_integer_counts(name: str, other: str) -> None:
    """``(x > 0) + (x > 1)`` is a bool array in NumPy (logical or), never the count 0/1/2."""
    f = BOOL_ARITHMETIC[name]
    x = np.array([-1.0, 0.5, 2.0, 3.0])
    second: Callable[[Any], Any] = (lambda v: v > 1) if other == "array" else (lambda v: True)
    program = da.trace(lambda v: f(v > 0, second(v)), x)
    expected = np.asarray(f(x > 0, second(x)))
    got = program(x)
    assert got.dtype == expected.dtype == np.bool_
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "f", [lambda v: (v > 0) - (v > 1), lambda v: -(v > 0), lambda v: (v > 0) ^ 1]
)
def test_numpys_rejected_bool_arithmetic_is_a_named_error(f: Callable[[Any], Any]) -> None:
    with pytest.raises(da.DualarrError, match="bool"):
        da.trace(f, np.ones(3))

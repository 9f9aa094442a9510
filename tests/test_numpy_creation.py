"""``dualarr.numpy`` array creation against NumPy (values, dtypes, gradients, vmap; the
conformance check of ``numpy_conformance``), inside and outside traces, and errors."""

from __future__ import annotations

import inspect
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_conformance import check_gradients, conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.errors import DtypeError, ShapeError, UnsupportedError
from dualarr.numpy import _creation

EXAMPLES = settings(max_examples=12, deadline=None)
FLOATS = st.sampled_from([np.float32, np.float64])
DTYPES = st.sampled_from([None, np.float32, np.float64, np.int64, bool])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@st.composite
def arrays(draw: st.DrawFn, min_dims: int = 0, max_dims: int = 3) -> np.ndarray:
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=4))
    return draw(hnp.arrays(draw(FLOATS), shape, elements=st.floats(-4, 4, width=32)))


def _same(got: Any, expected: Any) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12)


def _traced(f: Any) -> Any:
    """``f()`` built inside a trace (of a dummy input) and evaluated."""
    dummy = np.zeros(1)
    return da.trace(lambda _: f(), dummy)(dummy)


@pytest.mark.parametrize("name", _creation.__all__)
def test_signature_follows_numpy(name: str) -> None:
    ours = list(inspect.signature(getattr(dnp, name)).parameters)
    theirs = list(inspect.signature(getattr(np, name)).parameters)
    it = iter(theirs)
    assert all(p in it for p in ours), (ours, theirs)
    assert ours[0] == theirs[0]
    assert getattr(dnp, name).__doc__


# --------------------------------------------------------------------------------------
# Filled arrays
# --------------------------------------------------------------------------------------


@EXAMPLES
@given(SHAPES, DTYPES)
def test_zeros_ones_empty_full(shape: tuple[int, ...], dtype: Any) -> None:
    for ours, theirs in ((dnp.zeros, np.zeros), (dnp.ones, np.ones)):
        _same(ours(shape, dtype), theirs(shape, dtype))
        _same(_traced(lambda f=ours: f(shape, dtype)), theirs(shape, dtype))
    empty = dnp.empty(shape, dtype)
    assert empty.shape == shape and empty.dtype == np.empty(shape, dtype).dtype
    _same(dnp.full(shape, 3, dtype), np.full(shape, 3, dtype))
    _same(dnp.full(shape, 2.5), np.full(shape, 2.5))
    _same(dnp.full(shape, True), np.full(shape, True))


@EXAMPLES
@given(st.data())
def test_full_of_a_traced_value(data: st.DataObject) -> None:
    x = data.draw(arrays(max_dims=2))
    shape = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2))) + x.shape
    conforms(lambda a: dnp.full(shape, a), lambda a: np.full(shape, a), [x])
    ones = np.ones(shape, x.dtype)
    if x.dtype == np.float64:  # NumPy's float32 result would spoil its finite differences
        conforms(lambda a: dnp.full_like(ones, a), lambda a: np.full_like(ones, a), [x])
    else:
        _same(_traced(lambda: dnp.full_like(ones, x)), np.full_like(ones, x))


@EXAMPLES
@given(arrays(), DTYPES)
def test_like_functions(x: np.ndarray, dtype: Any) -> None:
    for ours, theirs in (
        (dnp.zeros_like, np.zeros_like),
        (dnp.ones_like, np.ones_like),
    ):
        _same(ours(x, dtype), theirs(x, dtype))
        _same(ours(x, shape=(2, 1)), theirs(x, shape=(2, 1)))
        conforms(lambda a, f=ours: f(a) + a, lambda a, f=theirs: f(a) + a, [x])
    _same(dnp.full_like(x, 1.5, dtype), np.full_like(x, 1.5, dtype))
    _same(dnp.full_like(x, 7), np.full_like(x, 7))
    assert dnp.empty_like(x, dtype).shape == x.shape
    assert dnp.empty_like(x, dtype).dtype == np.empty_like(x, dtype).dtype


@EXAMPLES
@given(SHAPES, st.integers(0, 2**32 - 1))
def test_traced_values_convert_between_float_widths(shape: tuple[int, ...], seed: int) -> None:
    """``asarray``/``array``/``full_like`` of a traced float convert float32 ↔ float64
    (NumPy's ``astype``); mixed widths in one ``array`` are float64."""
    x64 = np.random.default_rng(seed).uniform(-2, 2, shape)
    x32 = x64.astype(np.float32)
    f32, f64 = np.float32, np.float64
    conforms(lambda a: dnp.asarray(a, f64), lambda a: np.asarray(a, f64), [x32])
    conforms(lambda a: dnp.array(a, f64, ndmin=2), lambda a: np.array(a, f64, ndmin=2), [x32])
    conforms(lambda a, b: dnp.array([a, b]), lambda a, b: np.array([a, b]), [x32, x64])
    conforms(lambda a, b: dnp.array([b, a]), lambda a, b: np.array([b, a]), [x32, x64])
    conforms(lambda a: dnp.full_like(x64, a), lambda a: np.full_like(x64, a), [x32])
    conforms(lambda a: dnp.full((2, *shape), a, f64), lambda a: np.full((2, *shape), a, f64), [x32])
    # to float32: NumPy's rounding spoils finite differences of its own function, so the
    # gradient is checked against the float64 function's (the conversion's derivative)
    narrowing = [
        (lambda a: dnp.asarray(a, f32), lambda a: np.asarray(a, f32), lambda a: a),
        (lambda a: dnp.array([a], f32), lambda a: np.array([a], f32), lambda a: np.array([a])),
        (lambda a: dnp.full_like(x32, a), lambda a: np.full_like(x32, a), lambda a: a),
    ]
    for ours, theirs, wide in narrowing:
        conforms(ours, theirs, [x64], gradients=False)
        check_gradients(ours, wide, [x64])
    grad = da.grad(lambda a: da.sum(dnp.asarray(a, f64) * 2.0))(x32)
    assert grad.dtype == np.float32
    np.testing.assert_array_equal(grad, np.full(shape, 2.0, np.float32))
    assert da.trace(lambda a: dnp.asarray(a, f32), x64)(x64).dtype == np.float32
    conforms(  # computed in NumPy's natural type (float64 here), then converted
        lambda a, b: dnp.linspace(a, b, 3, dtype=f64),
        lambda a, b: np.linspace(a, b, 3, dtype=f64),
        [x32, x64 + 1],
    )
    conforms(
        lambda a: dnp.linspace(a, 3.0, 4, dtype=f32),
        lambda a: np.linspace(a, 3.0, 4, dtype=f32),
        [x64],
        gradients=False,
    )
    step = dnp.linspace(0, 1, 5, retstep=True, dtype=f32)[1]
    step_np = np.linspace(0, 1, 5, retstep=True, dtype=f32)[1]
    assert np.asarray(step).dtype == np.asarray(step_np).dtype == np.float64


def test_like_functions_in_a_trace_are_constants() -> None:
    x = np.arange(3.0, dtype=np.float32)
    text = str(da.trace(lambda a: dnp.zeros_like(a), x))
    assert "replicate 3 0.0" in text
    grad = da.grad(lambda a: da.sum(dnp.ones_like(a) * a + dnp.zeros_like(a)))(x)
    np.testing.assert_array_equal(grad, np.ones(3, np.float32))
    assert da.trace(lambda a: dnp.ones_like(a, dtype=int), x)(x).dtype == np.int64


# --------------------------------------------------------------------------------------
# From data
# --------------------------------------------------------------------------------------


@EXAMPLES
@given(arrays(), st.sampled_from([None, np.float64, np.int64, bool]), st.integers(0, 4))
def test_array_and_asarray_of_data(x: np.ndarray, dtype: Any, ndmin: int) -> None:
    _same(dnp.array(x, dtype, ndmin=ndmin), np.array(x, dtype, ndmin=ndmin))
    _same(dnp.asarray(x.tolist(), dtype), np.asarray(x.tolist(), dtype))
    _same(dnp.array(x.tolist()), np.array(x.tolist()))
    _same(_traced(lambda: dnp.array(x, dtype)), np.array(x, dtype))


@EXAMPLES
@given(arrays())
def test_array_of_traced_values(x: np.ndarray) -> None:
    conforms(lambda a: dnp.array([a, a * 2, a]), lambda a: np.array([a, a * 2, a]), [x])
    conforms(lambda a: dnp.array(a, ndmin=4), lambda a: np.array(a, ndmin=4), [x])
    conforms(dnp.asarray, np.asarray, [x])
    conforms(lambda a: dnp.asarray(a, np.int64), lambda a: np.asarray(a, np.int64), [x])
    conforms(lambda a: dnp.asarray(a, bool), lambda a: np.asarray(a, bool), [x])


def test_asarray_in_a_trace_returns_the_traced_value() -> None:
    seen: list[bool] = []

    def f(a: Any) -> Any:
        seen.append(dnp.asarray(a) is a)
        return dnp.asarray(a)

    da.trace(f, np.ones(2))
    assert seen == [True]
    traced = da.trace(lambda a: dnp.array([[a[0], 1.0], [2.0, a[1]]]), np.ones(2))
    np.testing.assert_array_equal(traced(np.array([5.0, 6.0])), [[5.0, 1.0], [2.0, 6.0]])


# --------------------------------------------------------------------------------------
# Ranges
# --------------------------------------------------------------------------------------


@EXAMPLES
@given(
    st.integers(-6, 6),
    st.one_of(st.none(), st.integers(-6, 9)),
    st.integers(-3, 3).filter(bool),
    st.sampled_from([None, np.float64, np.int64, np.float32]),
)
def test_arange_ints(start: int, stop: int | None, step: int, dtype: Any) -> None:
    if stop is None:
        _same(dnp.arange(abs(start), dtype=dtype), np.arange(abs(start), dtype=dtype))
        return
    _same(dnp.arange(start, stop, step, dtype=dtype), np.arange(start, stop, step, dtype=dtype))
    _same(_traced(lambda: dnp.arange(start, stop, step)), np.arange(start, stop, step))


@EXAMPLES
@given(
    st.floats(-5, 5, width=16),
    st.floats(-5, 5, width=16),
    st.sampled_from([0.25, -0.5, 0.75, 1.0]),
)
def test_arange_floats(start: float, stop: float, step: float) -> None:
    _same(dnp.arange(start, stop, step), np.arange(start, stop, step))
    got = dnp.arange(start, stop, step, dtype=np.float32)
    expected = np.arange(start, stop, step, dtype=np.float32)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@EXAMPLES
@given(st.data())
def test_linspace(data: st.DataObject) -> None:
    x = data.draw(arrays(max_dims=2))
    y = (x + x.dtype.type(1.5)).astype(x.dtype)
    num = data.draw(st.integers(0, 6))
    endpoint = data.draw(st.booleans())
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    conforms(
        lambda a, b: dnp.linspace(a, b, num, endpoint, axis=axis),
        lambda a, b: np.linspace(a, b, num, endpoint, axis=axis),
        [x, y],
    )
    conforms(
        lambda a: dnp.linspace(a, 2.0, num, endpoint, retstep=True)[0],
        lambda a: np.linspace(a, 2.0, num, endpoint, retstep=True)[0],
        [x],
    )


@EXAMPLES
@given(
    st.floats(-5, 5, width=16),
    st.floats(-5, 5, width=16),
    st.integers(0, 8),
    st.booleans(),
    st.sampled_from([None, np.float32, np.int64]),
)
def test_linspace_of_numbers(
    start: float, stop: float, num: int, endpoint: bool, dtype: Any
) -> None:
    got: Any = dnp.linspace(start, stop, num, endpoint, dtype=dtype)
    expected = np.linspace(start, stop, num, endpoint, dtype=dtype)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    values, step = dnp.linspace(start, stop, num, endpoint, retstep=True)
    values_np, step_np = np.linspace(start, stop, num, endpoint, retstep=True)
    np.testing.assert_allclose(values, values_np, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(step, step_np, rtol=1e-12, atol=1e-12)


def test_linspace_gradient_reaches_both_ends() -> None:
    def f(a: Any, b: Any) -> Any:
        return da.sum(dnp.linspace(a, b, 5) * np.arange(1.0, 6.0))

    ga, gb = da.grad(f, argnums=(0, 1))(np.float64(1.0), np.float64(3.0))
    t = np.linspace(0, 1, 5)
    np.testing.assert_allclose(ga, np.sum((1 - t) * np.arange(1.0, 6.0)))
    np.testing.assert_allclose(gb, np.sum(t * np.arange(1.0, 6.0)))


# --------------------------------------------------------------------------------------
# eye, identity, tri
# --------------------------------------------------------------------------------------


@EXAMPLES
@given(
    st.integers(0, 5),
    st.one_of(st.none(), st.integers(0, 5)),
    st.integers(-6, 6),
    st.sampled_from([float, np.float32, np.int64, bool]),
)
def test_eye_identity_tri(n: int, m: int | None, k: int, dtype: Any) -> None:
    _same(dnp.eye(n, m, k, dtype), np.eye(n, m, k, dtype))
    _same(dnp.tri(n, m, k, dtype), np.tri(n, m, k, dtype))
    _same(dnp.identity(n, dtype), np.identity(n, dtype))
    _same(dnp.eye(n), np.eye(n))
    _same(_traced(lambda: dnp.eye(n, m, k=k)), np.eye(n, m, k=k))
    _same(_traced(lambda: dnp.tri(n, m, k)), np.tri(n, m, k))


def test_eye_is_a_mask_of_iota_grids() -> None:
    text = str(da.trace(lambda a: dnp.eye(3) * a, np.ones((3, 3))))
    assert "iota" in text
    x = np.arange(9.0).reshape(3, 3)
    conforms(
        lambda a: dnp.eye(3) * a + dnp.tri(3, k=-1),
        lambda a: np.eye(3) * a + np.tri(3, k=-1),
        [x],
    )


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: dnp.zeros((2, -1)), "zeros"),
        (lambda: dnp.ones("3"), "ones"),  # type: ignore[arg-type]
        (lambda: dnp.full((2,), [1.0, 2.0, 3.0]), "full"),
        (lambda: dnp.arange(0, 5, 0), "arange"),
        (lambda: dnp.arange("a"), "arange"),  # type: ignore[arg-type]
        (lambda: dnp.linspace(0, 1, -1), "linspace"),
        (lambda: dnp.linspace(0, 1, 5, axis=2), "linspace"),
        (lambda: dnp.eye(-1), "eye"),
        (lambda: dnp.eye(2, k=1.5), "eye"),  # type: ignore[arg-type]
        (lambda: dnp.tri(2, -3), "tri"),
        (lambda: dnp.identity(2.0), "identity"),  # type: ignore[arg-type]
        (lambda: dnp.array([[1.0], [2.0, 3.0]]), "array"),
        (lambda: dnp.array([1.0], ndmin=-1), "array"),
    ],
)
def test_errors_name_the_function(call: Any, name: str) -> None:
    with pytest.raises(ShapeError, match=rf"numpy\.{name}"):
        call()


def test_unsupported_inputs() -> None:
    with pytest.raises(DtypeError, match=r"numpy\.zeros"):
        dnp.zeros(2, dtype=np.complex128)
    with pytest.raises(UnsupportedError, match=r"numpy\.arange"):
        da.trace(lambda a: dnp.arange(a[0]), np.ones(2))


def test_eager_results_are_fresh_numpy_arrays() -> None:
    x = np.arange(3.0)
    out = dnp.asarray(x)
    assert isinstance(out, np.ndarray) and out is not x
    np.testing.assert_array_equal(out, x)
    assert isinstance(dnp.zeros(3), np.ndarray)

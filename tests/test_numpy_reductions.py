"""``dualarr.numpy``'s reductions and scans conform to NumPy (values with exact shape and
dtype, eager and traced; gradients against finite differences; jvp/vjp adjointness;
vmap) on Hypothesis-drawn shapes (size-0 and size-1 axes), axes (None, negative ints,
tuples), ``keepdims`` and float32/float64; ``cumsum`` is a log-size scan."""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, valid_tuple_axes
from numpy_conformance import check_gradients, conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.errors import ShapeError
from dualarr.lang.terms import count_nodes
from dualarr.numpy import _reductions


def bound(module: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """``module.name`` with its arguments after the first fixed."""
    function = getattr(module, name)
    return lambda v: function(v, *args, **kwargs)


FLOATS = st.sampled_from([np.float32, np.float64])
SHAPES = array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@st.composite
def axes(draw: Any, ndim: int) -> Any:
    """None, an int (negative too) or a tuple of distinct ints (negative too)."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or ndim == 0:
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    return draw(valid_tuple_axes(ndim))


def reduced(shape: tuple[int, ...], axis: Any) -> int:
    if axis is None:
        return math.prod(shape)
    items = axis if isinstance(axis, tuple) else (axis,)
    return math.prod(shape[a] for a in items)


REDUCTIONS = ["sum", "mean", "prod", "var", "std", "min", "max", "amin", "amax", "ptp"]


@pytest.mark.parametrize("name", REDUCTIONS)
@settings(max_examples=12)
@given(data=st.data(), shape=SHAPES, dtype=FLOATS, keepdims=st.booleans())
def test_reduction_conforms(
    name: str, data: st.DataObject, shape: tuple[int, ...], dtype: Any, keepdims: bool
) -> None:
    axis = data.draw(axes(len(shape)), label="axis")
    if name in ("mean", "var", "std", "min", "max", "amin", "amax", "ptp"):
        assume(reduced(shape, axis) > 0)  # NumPy: nan with a warning, or an error
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.uniform(-2.0, 2.0, shape).astype(dtype)
    if name == "prod":
        x = (rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)).astype(dtype)

    def ours(v: Any) -> Any:
        return getattr(dnp, name)(v, axis=axis, keepdims=keepdims)

    def theirs(v: Any) -> Any:
        return getattr(np, name)(v, axis=axis, keepdims=keepdims)

    conforms(ours, theirs, [x])


@settings(max_examples=12)
@given(data=st.data(), shape=SHAPES, dtype=FLOATS, ddof=st.integers(0, 1))
def test_var_std_ddof(data: st.DataObject, shape: tuple[int, ...], dtype: Any, ddof: int) -> None:
    axis = data.draw(axes(len(shape)), label="axis")
    assume(reduced(shape, axis) > ddof)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.uniform(-2.0, 2.0, shape).astype(dtype)
    for name in ("var", "std"):
        conforms(
            bound(dnp, name, axis, ddof=ddof),
            bound(np, name, axis, ddof=ddof),
            [x],
        )


@settings(max_examples=12)
@given(data=st.data(), shape=SHAPES)
def test_integer_and_bool_reductions(data: st.DataObject, shape: tuple[int, ...]) -> None:
    axis = data.draw(axes(len(shape)), label="axis")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    i = rng.integers(-3, 4, shape)
    b = rng.random(shape) < 0.5
    for x in (i, b):
        for name in ("sum", "prod", "all", "any", "count_nonzero"):
            conforms(
                bound(dnp, name, axis),
                bound(np, name, axis),
                [x],
                gradients=False,
            )
        if reduced(shape, axis) > 0:
            for name in ("mean", "var", "std", "min", "max"):
                conforms(
                    bound(dnp, name, axis, keepdims=True),
                    bound(np, name, axis, keepdims=True),
                    [x],
                    gradients=False,
                )
    f64 = np.float64
    conforms(lambda v: dnp.sum(v, axis, dtype=f64), lambda v: np.sum(v, axis, dtype=f64), [i])
    conforms(lambda v: dnp.prod(v, axis, f64), lambda v: np.prod(v, axis, f64), [b])
    conforms(lambda v: dnp.cumsum(v, dtype=f64), lambda v: np.cumsum(v, dtype=f64), [i])
    x32 = rng.uniform(-2, 2, shape).astype(np.float32)
    f32 = np.float32
    # (no finite differences: NumPy's sum in float32 rounds the perturbed float64 input)
    conforms(
        lambda v: dnp.sum(v, axis, dtype=f32),
        lambda v: np.sum(v, axis, dtype=f32),
        [x32],
        gradients=False,
    )



@settings(max_examples=10)
@given(data=st.data(), shape=SHAPES)
def test_dtype_argument_converts_between_float_widths(
    data: st.DataObject, shape: tuple[int, ...]
) -> None:
    """``dtype=float64`` of a float32 array (and float32 of a float64 one) converts
    first, as NumPy's; gradients come back in the input's dtype."""
    axis = data.draw(axes(len(shape)), label="axis")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x64 = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    x32 = x64.astype(np.float32)
    f32, f64 = np.float32, np.float64
    names = ["sum", "prod"] + (["mean", "var", "std"] if reduced(shape, axis) > 0 else [])
    for name in names:
        conforms(bound(dnp, name, axis, dtype=f64), bound(np, name, axis, dtype=f64), [x32])
        conforms(
            bound(dnp, name, axis, dtype=f32),
            bound(np, name, axis, dtype=f32),
            [x64],
            gradients=False,
        )
        assert dnp.sum(x32, axis, dtype=f64).dtype == np.float64
        if name in ("sum", "mean"):  # NumPy's float32 result spoils finite differences
            check_gradients(bound(dnp, name, axis, dtype=f32), bound(np, name, axis), [x64])
    scan = 0 if shape else None
    for name in ("cumsum", "cumprod"):
        conforms(bound(dnp, name, scan, f64), bound(np, name, scan, f64), [x32])
    if math.prod(shape):
        grad = da.grad(lambda v: da.sum(dnp.sum(v, axis, dtype=f64)))(x32)
        assert grad.dtype == np.float32
        np.testing.assert_array_equal(grad, np.ones(shape, np.float32))


@settings(max_examples=12)
@given(shape=SHAPES, seed=st.integers(0, 2**32 - 1), zeros=st.integers(1, 3))
def test_prod_gradient_with_zeros(shape: tuple[int, ...], seed: int, zeros: int) -> None:
    assume(math.prod(shape) > 0)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 1.5, shape)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, min(zeros, flat.size), replace=False)] = 0.0
    conforms(dnp.prod, np.prod, [x])
    if x.ndim:
        conforms(lambda v: dnp.prod(v, -1), lambda v: np.prod(v, -1), [x])
        conforms(lambda v: dnp.cumprod(v, 0), lambda v: np.cumprod(v, 0), [x])


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@settings(max_examples=15)
@given(data=st.data(), shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=9))
def test_scan_conforms(name: str, data: st.DataObject, shape: tuple[int, ...]) -> None:
    dtype = data.draw(FLOATS, label="dtype")
    choices = [None, *range(-len(shape), len(shape))]
    axis = data.draw(st.sampled_from(choices), label="axis")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = (rng.uniform(0.6, 1.4, shape) * rng.choice([-1.0, 1.0], shape)).astype(dtype)
    conforms(
        lambda v: getattr(dnp, name)(v, axis),
        lambda v: getattr(np, name)(v, axis),
        [x],
    )


def test_cumsum_is_a_log_size_scan() -> None:
    sizes = {}
    for n in (64, 4096):
        program = da.trace(lambda v: dnp.cumsum(v), np.ones(n))
        sizes[n] = count_nodes(program.outputs)
    # 6 more doublings cost a constant number of nodes each, not 64x the nodes
    assert sizes[4096] - sizes[64] <= 6 * (sizes[64] // 5)
    assert sizes[4096] < 3 * sizes[64]
    n = 1000
    w = np.random.default_rng(0).standard_normal(n)
    x = np.random.default_rng(1).standard_normal(n)
    grad = da.grad(lambda v: da.sum(dnp.cumsum(v) * w), mode="compiled")(x)
    np.testing.assert_allclose(grad, np.cumsum(w[::-1])[::-1], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dnp.cumsum(x), np.cumsum(x), rtol=1e-10, atol=1e-10)


@settings(max_examples=12)
@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
def test_diff(data: st.DataObject, shape: tuple[int, ...]) -> None:
    dtype = data.draw(FLOATS, label="dtype")
    n = data.draw(st.integers(0, 3), label="n")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    edges = data.draw(st.sampled_from(["none", "scalar", "array"]), label="edges")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.uniform(-2, 2, shape).astype(dtype)
    kwargs: dict[str, Any] = {}
    if edges == "scalar":  # NumPy's diff makes them float64 arrays: float32 x widens
        kwargs = {"prepend": 0.5, "append": -1.0}
    elif edges == "array":
        side = tuple(2 if d == axis % len(shape) else k for d, k in enumerate(shape))
        kwargs = {"append": rng.uniform(-2, 2, side).astype(dtype)}
    conforms(lambda v: dnp.diff(v, n, axis, **kwargs), lambda v: np.diff(v, n, axis, **kwargs), [x])
    b = rng.random(shape) < 0.5
    conforms(lambda v: dnp.diff(v, n, axis), lambda v: np.diff(v, n, axis), [b], gradients=False)


@settings(max_examples=12)
@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
def test_average(data: st.DataObject, shape: tuple[int, ...]) -> None:
    dtype = data.draw(FLOATS, label="dtype")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.uniform(-2, 2, shape).astype(dtype)
    axis = data.draw(axes(len(shape)), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    full = rng.uniform(0.5, 2, shape).astype(dtype)
    np_any: Any = np  # NumPy's stubs want a literal ``keepdims``; ours is a drawn bool

    def pair(f: Any) -> Any:
        return lambda v, w: np.stack(np.broadcast_arrays(*f(v, axis, w, True, keepdims=keepdims)))

    conforms(lambda v: dnp.average(v, axis), lambda v: np.average(v, axis), [x])
    conforms(
        lambda v, w: dnp.average(v, axis, w, keepdims=keepdims),
        lambda v, w: np_any.average(v, axis, w, keepdims=keepdims),
        [x, full],
    )
    got = dnp.average(x, axis, full, returned=True, keepdims=keepdims)
    want = np_any.average(x, axis, full, returned=True, keepdims=keepdims)
    for g, e in zip(got, want, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=2e-4)
    one = data.draw(st.integers(-len(shape), len(shape) - 1), label="one axis")
    line = rng.uniform(0.5, 2, shape[one]).astype(dtype)
    conforms(
        lambda v, w: dnp.average(v, one, w),
        lambda v, w: np.average(v, one, w),
        [x, line],
    )
    other = np.float64 if dtype == np.float32 else np.float32
    conforms(  # mixed float widths average in float64
        lambda v, w: dnp.average(v, axis, w, keepdims=keepdims),
        lambda v, w: np_any.average(v, axis, w, keepdims=keepdims),
        [x, full.astype(other)],
    )
    ints = rng.integers(-3, 4, shape)
    for weights in (full.astype(np.float32), line.astype(np.float32)):
        where = axis if weights.shape == shape else one
        conforms(  # ints with float32 weights: float64 (NumPy's result_type(a, w, f8))
            lambda w, a=where: dnp.average(ints, a, w),
            lambda w, a=where: np.average(ints, a, w),
            [weights],
        )
        got = dnp.average(ints, where, weights, returned=True)
        want = np.average(ints, where, weights, returned=True)
        for g, e in zip(got, want, strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype == np.float64
            np.testing.assert_allclose(g, e, rtol=1e-6)


@settings(max_examples=12)
@given(data=st.data(), shape=array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
def test_argmin_argmax(data: st.DataObject, shape: tuple[int, ...]) -> None:
    dtype = data.draw(FLOATS, label="dtype")
    axis = data.draw(st.sampled_from([None, *range(-len(shape), len(shape))]), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    for x in (rng.uniform(-2, 2, shape).astype(dtype), rng.integers(0, 3, shape)):
        for name in ("argmin", "argmax"):
            conforms(
                bound(dnp, name, axis, keepdims=keepdims),
                bound(np, name, axis, keepdims=keepdims),
                [x],
                gradients=False,
            )


def test_errors_name_the_function() -> None:
    with pytest.raises(ShapeError) as axis_info:
        dnp.sum(np.ones((2, 3)), axis=2)
    assert axis_info.value.op == "numpy.sum"
    with pytest.raises(ShapeError) as empty_info:
        dnp.max(np.ones((0, 3)), axis=0)
    assert empty_info.value.op == "numpy.max"
    with pytest.raises(ShapeError) as arg_info:
        dnp.argmin(np.ones(0))
    assert arg_info.value.op == "numpy.argmin"
    with pytest.raises(ShapeError) as repeat_info:
        dnp.mean(np.ones((2, 3)), axis=(1, -1))
    assert repeat_info.value.op == "numpy.mean"
    with pytest.raises(ShapeError) as weights_info:
        dnp.average(np.ones((2, 3)), weights=np.ones(3))
    assert weights_info.value.op == "numpy.average"


UNSUPPORTED_PARAMETERS = {"out", "where", "initial", "mean", "correction"}


@pytest.mark.parametrize("name", _reductions.__all__)
def test_signature_is_numpys(name: str) -> None:
    ours = list(inspect.signature(getattr(dnp, name)).parameters)
    theirs = list(inspect.signature(getattr(np, name)).parameters)
    assert [p for p in theirs if p in ours] == ours, (ours, theirs)
    assert set(theirs) - set(ours) <= UNSUPPORTED_PARAMETERS, (ours, theirs)
    function = getattr(dnp, name)
    assert function.__doc__ and function.__name__ == name

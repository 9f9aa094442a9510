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
from dualarr.lang.errors import DtypeError, ShapeError, UnsupportedError
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


# --------------------------------------------------------------------------------------
# median, quantile, percentile
# --------------------------------------------------------------------------------------


def distinct(seed: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Values without ties (sort is differentiable there), well apart for float32."""
    rng = np.random.default_rng(seed)
    size = math.prod(shape)
    values = rng.permutation(size).astype(np.float64) - size / 2
    if np.dtype(dtype).kind == "f":
        values = values * 0.5 + rng.uniform(0.0, 0.1, size)
    return values.reshape(shape).astype(dtype)


def numpy_orders(shape: tuple[int, ...], axis: Any) -> bool:
    """Whether NumPy's median/quantile over ``axis`` work: elements to order (else nan
    with a warning, or an IndexError), and not a tuple other than one axis of an empty
    array (NumPy fails to reshape that)."""
    several = isinstance(axis, tuple) and len(axis) != 1
    return reduced(shape, axis) > 0 and (math.prod(shape) > 0 or not several)


def percent(q: Any) -> Any:
    """``100 q`` of the kind of ``q`` (a Python number stays one, an array keeps its
    type)."""
    return q * 100 if isinstance(q, int | float) else np.multiply(q, 100, dtype=np.asarray(q).dtype)


QUANTILES = st.one_of(
    st.floats(0.0, 1.0),  # a Python float: weak, float32 stays float32
    st.sampled_from([0, 1]),  # an int: one order statistic, no interpolation
    st.lists(st.floats(0.0, 1.0), min_size=0, max_size=3),
    st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2).map(
        lambda q: np.asarray(q, np.float32).reshape(2, 1)  # rank 2, float32
    ),
    st.floats(0.0, 1.0).map(np.float64),  # a NumPy scalar: strong
)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), shape=SHAPES, dtype=FLOATS, keepdims=st.booleans(), q=QUANTILES)
def test_median_quantile_percentile_conform(
    data: st.DataObject, shape: tuple[int, ...], dtype: Any, keepdims: bool, q: Any
) -> None:
    axis = data.draw(axes(len(shape)), label="axis")
    assume(reduced(shape, axis) > 0)  # NumPy: nan with a warning, or an IndexError
    assume(numpy_orders(shape, axis))
    x = distinct(data.draw(st.integers(0, 2**32 - 1), label="seed"), shape, dtype)
    conforms(
        lambda v: dnp.median(v, axis, keepdims=keepdims),
        lambda v: np.median(v, axis, keepdims=keepdims),
        [x],
    )
    conforms(
        lambda v: dnp.quantile(v, q, axis, keepdims=keepdims),
        lambda v: np.quantile(v, q, axis, keepdims=keepdims),
        [x],
    )
    p = percent(q)
    conforms(
        lambda v: dnp.percentile(v, p, axis, keepdims=keepdims),
        lambda v: np.percentile(v, p, axis, keepdims=keepdims),
        [x],
    )


@settings(max_examples=12, deadline=None)
@given(data=st.data(), shape=SHAPES, q=QUANTILES)
def test_median_quantile_of_ints_and_bools(
    data: st.DataObject, shape: tuple[int, ...], q: Any
) -> None:
    """Ints interpolate in float64 (an int ``q`` reads an int); bools have a median (a
    mean of bools) and int-``q`` quantiles, as in NumPy."""
    axis = data.draw(axes(len(shape)), label="axis")
    assume(numpy_orders(shape, axis))
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    i = distinct(seed, shape, np.int64) * 3 - 1
    b = np.random.default_rng(seed).random(shape) < 0.5
    conforms(bound(dnp, "quantile", q, axis), bound(np, "quantile", q, axis), [i])
    for x in (i, b):
        conforms(bound(dnp, "median", axis), bound(np, "median", axis), [x])
    if np.asarray(q).dtype.kind in "iu":
        conforms(bound(dnp, "quantile", q, axis), bound(np, "quantile", q, axis), [b])


def test_quantile_result_types_are_numpys() -> None:
    x32 = np.array([3.0, 1.0, 2.0, 5.0], np.float32)
    i = np.array([3, 1, 2, 5])
    cases: list[tuple[Any, Any]] = [
        (x32, 0.3),  # weak Python float: float32
        (x32, np.float64(0.3)),  # a NumPy float64 scalar is strong: float64
        (x32, [0.3]),  # a list is a float64 array
        (x32, np.array([0.3], np.float32)),
        (x32, 1),
        (i, 0.5),
        (i, 1),  # an int position: int64
        (i, np.array([0.5], np.float32)),
    ]
    for x, q in cases:
        for f, g in ((dnp.quantile, np.quantile), (dnp.percentile, np.percentile)):
            qq = q if f is dnp.quantile else percent(q)
            got, want = np.asarray(f(x, qq)), np.asarray(g(x, qq))
            assert got.dtype == want.dtype, (x.dtype, q, got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want)
    assert dnp.median(x32).dtype == np.float32
    assert dnp.median(i).dtype == np.float64


def test_median_quantile_nan_and_empty() -> None:
    x = np.array([[1.0, np.nan, 3.0], [4.0, 2.0, 6.0]])
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(dnp.median(x, axis), np.median(x, axis))
        q = [0.0, 0.4, 1.0]
        np.testing.assert_array_equal(dnp.quantile(x, q, axis), np.quantile(x, q, axis))
        traced = da.trace(lambda a, axis=axis, q=q: dnp.quantile(a, q, axis), x)(x)
        np.testing.assert_array_equal(traced, np.quantile(x, q, axis))
    # the gradient of a nan slice's result is 0, the others' go to their order statistics
    grad = da.grad(lambda a: da.sum(dnp.median(a, axis=1)))(x)
    np.testing.assert_array_equal(grad, [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want = np.median(np.ones((0, 3)), axis=0)
    np.testing.assert_array_equal(dnp.median(np.ones((0, 3)), axis=0), want)
    assert dnp.quantile(np.ones((3, 0)), 0.5, axis=0).shape == (0,)


def test_median_gradient_goes_to_the_middle_elements() -> None:
    x = np.array([4.0, -1.0, 7.0, 2.0, 0.5])
    grad = da.grad(lambda a: dnp.median(a))(x)
    np.testing.assert_array_equal(grad, [0.0, 0.0, 0.0, 1.0, 0.0])
    even = x[:4]
    np.testing.assert_array_equal(da.grad(lambda a: dnp.median(a))(even), [0.5, 0, 0, 0.5])
    # quantile 0.25 of 5 values: position 1 exactly; 0.3: 1.2, between 0.5 and 2.0
    grad = da.grad(lambda a: dnp.quantile(a, 0.3))(x)
    np.testing.assert_allclose(grad, [0.0, 0.0, 0.0, 0.2, 0.8])
    program = da.trace(lambda a: dnp.quantile(a, [0.1, 0.9]), x)
    assert "argsort" in str(program)
    # NumPy's own functions on traced values dispatch to these
    np.testing.assert_allclose(da.trace(lambda a: np.median(a), x)(x), np.median(x))
    np.testing.assert_allclose(
        da.trace(lambda a: np.percentile(a, [10, 50]), x)(x), np.percentile(x, [10, 50])
    )


loose: Any = dnp  # unsupported arguments on purpose: no static types for them


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: loose.median(np.ones(3), out=np.ones(())), UnsupportedError, "median"),
        (lambda: loose.quantile(np.ones(3), 0.5, out=np.ones(())), UnsupportedError, "quantile"),
        (lambda: dnp.quantile(np.ones(3), 0.5, method="nearest"), UnsupportedError, "quantile"),
        (lambda: loose.quantile(np.ones(3), 0.5, weights=np.ones(3)), UnsupportedError, "quantile"),
        (lambda: dnp.quantile(np.ones(3), 1.5), ShapeError, "quantile"),
        (lambda: dnp.quantile(np.ones(3), [0.5, np.nan]), ShapeError, "quantile"),
        (lambda: dnp.percentile(np.ones(3), -1), ShapeError, "percentile"),
        (lambda: dnp.quantile(np.ones(3), np.full((1, 1, 1), 0.5)), ShapeError, "quantile"),
        (lambda: dnp.quantile(np.ones(3), "half"), DtypeError, "quantile"),
        (lambda: dnp.quantile(np.ones((0, 2)), 0.5, axis=0), ShapeError, "quantile"),
        (lambda: dnp.quantile(np.array([True, False]), 0.5), DtypeError, "quantile"),
        (lambda: dnp.median(np.ones((2, 3)), axis=2), ShapeError, "median"),
        (lambda: dnp.median(np.ones((2, 3)), axis=(0, -2)), ShapeError, "median"),
        (
            lambda: da.trace(lambda a, q: dnp.quantile(a, q), np.ones(3), np.array(0.5))(
                np.ones(3), np.array(0.5)
            ),
            UnsupportedError,
            "quantile",
        ),
    ],
)
def test_median_quantile_errors(call: Any, error: type[Exception], name: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, da.DualarrError)
    assert info.value.op == f"numpy.{name}"

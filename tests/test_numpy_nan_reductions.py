"""The nan-ignoring reductions and scans conform to NumPy (issue #39): values with exact
shape and dtype (eager and traced) on arrays holding nans, in float32 and float64, over
every kind of ``axis`` with ``keepdims``, size-0 axes included; gradients against central
differences of NumPy's (a nan element's difference is 0, so the gradient flows to the
non-nan elements only, as ``jnp.nansum``'s), jvp/vjp adjointness and vmap; all-nan
slices give NumPy's values (NumPy also warns); Hypothesis-drawn shapes."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, valid_tuple_axes
from numpy_conformance import check_values, check_vmap, conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.errors import ShapeError, UnsupportedError

FLOATS = [np.float32, np.float64]
REDUCTIONS = ["nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd", "nanmedian"]
SCANS = ["nancumsum", "nancumprod"]
ARGS = ["nanargmin", "nanargmax"]
QUANTILES = ["nanquantile", "nanpercentile"]


def with_nans(shape: tuple[int, ...], dtype: Any, seed: int, rate: float = 0.3) -> np.ndarray:
    """Distinct values in general position (no ties), about ``rate`` of them nan, and at
    least one non-nan element in every line along every axis (a line of nans loses the
    nan at its start)."""
    rng = np.random.default_rng(seed)
    x = rng.permutation(np.arange(1, math.prod(shape) + 1)).reshape(shape) * 0.137 + 0.05
    x = np.asarray(x * rng.choice([-1.0, 1.0], shape), dtype=dtype)
    nans = rng.random(shape) < rate
    for d in range(x.ndim):
        lines = np.moveaxis(nans, d, -1)  # a view: writes go to nans
        lines[..., 0][lines.all(axis=-1)] = False
    x[nans] = np.nan
    return x


def bound(name: str, module: Any, **kwargs: Any) -> Any:
    function = getattr(module, name)
    return lambda v: function(v, **kwargs)


def nan_conforms(dnp_f: Any, np_f: Any, x: np.ndarray, *, gradients: bool = True) -> None:
    """The conformance harness on ``x`` with its nans: values (eager, traced) and vmap;
    and every check, gradients included, on the function of the non-nan elements
    ``v -> f(where(isnan(x), nan, v))`` at ``v = nan_to_num(x)`` (central differences
    need a finite point: they are 0 at the nan positions, so the gradient must be)."""
    check_values(dnp_f, quiet(np_f), [x])
    check_vmap(dnp_f, quiet(np_f), [x])
    mask = np.isnan(x)
    filled = np.where(mask, np.asarray(0.5, x.dtype), x)
    conforms(
        lambda v: dnp_f(dnp.where(mask, np.asarray(np.nan, x.dtype), v)),
        quiet(lambda v: np_f(np.where(mask, np.asarray(np.nan, v.dtype), v))),
        [filled],
        gradients=gradients,
    )


def quiet(f: Any) -> Any:
    """``f`` with NumPy's all-nan warnings silenced (the values are what is compared)."""

    def g(*args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return f(*args)

    return g


CASES = [
    ((6,), None, False),
    ((6,), 0, True),
    ((3, 4), None, True),
    ((3, 4), 0, False),
    ((3, 4), -1, True),
    ((3, 4), (0, 1), False),
    ((2, 3, 4), (0, 2), True),
    ((2, 3, 4), 1, False),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize(("shape", "axis", "keepdims"), CASES)
def test_reduction_conforms(
    name: str, dtype: Any, shape: tuple[int, ...], axis: Any, keepdims: bool
) -> None:
    x = with_nans(shape, dtype, seed=len(shape) + 7 * (axis % 3 if isinstance(axis, int) else 3))
    kwargs: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
    if name in ("nanvar", "nanstd"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            finite = np.all(np.isfinite(np.nanvar(x, axis=axis, ddof=1)))
        kwargs["ddof"] = 1 if finite else 0  # n - ddof > 0 in every slice
    if name == "nanmedian" and axis == (0, 1):
        kwargs["axis"] = (1, 0)  # an unsorted tuple
    if name == "nanprod":
        x = (x / np.nanmax(np.abs(x)) * 1.5).astype(dtype)  # products of moderate size
    nan_conforms(bound(name, dnp, **kwargs), bound(name, np, **kwargs), x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", SCANS)
@pytest.mark.parametrize(
    ("shape", "axis"), [((7,), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 2), None)]
)
def test_scan_conforms(name: str, dtype: Any, shape: tuple[int, ...], axis: Any) -> None:
    x = with_nans(shape, dtype, seed=11)
    if name == "nancumprod":
        x = (x / np.nanmax(np.abs(x)) * 1.5).astype(dtype)
    nan_conforms(bound(name, dnp, axis=axis), bound(name, np, axis=axis), x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ARGS)
@pytest.mark.parametrize(
    ("shape", "axis", "keepdims"),
    [((6,), None, False), ((3, 4), 0, True), ((3, 4), -1, False), ((2, 3, 4), None, True)],
)
def test_argument_positions_conform(
    name: str, dtype: Any, shape: tuple[int, ...], axis: Any, keepdims: bool
) -> None:
    x = with_nans(shape, dtype, seed=5)
    nan_conforms(
        bound(name, dnp, axis=axis, keepdims=keepdims),
        bound(name, np, axis=axis, keepdims=keepdims),
        x,
        gradients=False,
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", QUANTILES)
@pytest.mark.parametrize(
    ("q", "axis", "keepdims"),
    [
        (0.3, None, False),
        (0.5, 0, True),
        ([0.1, 0.75, 1.0], -1, False),
        (np.array([[0.0, 0.4], [0.65, 0.9]]), 1, True),
        (np.float32(0.25), (0, 1), False),
    ],
)
def test_quantiles_conform(name: str, dtype: Any, q: Any, axis: Any, keepdims: bool) -> None:
    x = with_nans((3, 5), dtype, seed=13)
    if name == "nanpercentile":
        q = q * 100 if not isinstance(q, list) else [v * 100 for v in q]
    kwargs = {"axis": axis, "keepdims": keepdims}
    nan_conforms(
        lambda v: getattr(dnp, name)(v, q, **kwargs),
        lambda v: getattr(np, name)(v, q, **kwargs),
        x,
    )


# --------------------------------------------------------------------------------------
# All-nan slices, size-0 axes, where/initial/dtype, ints
# --------------------------------------------------------------------------------------


def all_nan_rows(dtype: Any) -> np.ndarray:
    x = with_nans((4, 3), dtype, seed=3, rate=0.0)
    x[1] = np.nan
    x[3, :2] = np.nan
    return x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", [*REDUCTIONS, *SCANS])
def test_all_nan_slices_give_numpys_values(name: str, dtype: Any) -> None:
    x = all_nan_rows(dtype)
    for axis in (1, None):
        kwargs = {"axis": axis}
        with warnings.catch_warnings(record=True):  # NumPy warns for some of them
            warnings.simplefilter("always")
            expected = getattr(np, name)(x, **kwargs)
        check_values(bound(name, dnp, **kwargs), quiet(bound(name, np, **kwargs)), [x])
        # and the gradient is finite, and 0 at every nan
        if name in ("nanvar", "nanstd", "nanmean", "nanmax", "nanmin", "nanmedian"):
            continue  # a nan output in the loss: no finite loss to differentiate
        g = da.grad(lambda v, n=name, k=kwargs: da.sum(getattr(dnp, n)(v, **k)))(x)
        assert np.all(np.isfinite(g)) and np.all(g[np.isnan(x)] == 0)
        assert np.shape(expected) == np.shape(getattr(dnp, name)(x, **kwargs))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "nanmedian"])
def test_gradient_is_zero_on_an_all_nan_slice_and_flows_elsewhere(name: str, dtype: Any) -> None:
    """Rows of nans give nan outputs; a loss that reads only the other rows has a
    finite gradient, 0 at every nan, equal to the gradient on those rows alone."""
    x = all_nan_rows(dtype)
    rows = np.array([0, 2, 3])

    def loss(v: Any) -> Any:
        return da.sum(getattr(dnp, name)(v, axis=1)[rows])

    def alone(v: Any) -> Any:
        return da.sum(getattr(dnp, name)(v, axis=1))

    g = da.grad(loss)(x)
    assert np.all(np.isfinite(g)) and np.all(g[np.isnan(x)] == 0)
    np.testing.assert_allclose(g[rows], da.grad(alone)(x[rows]), rtol=1e-6)


@pytest.mark.parametrize("name", ["nanmean", "nanmax", "nanvar", "nanstd", "nanmedian"])
def test_numpy_warns_on_an_all_nan_slice_and_the_value_is_nan(name: str) -> None:
    x = all_nan_rows(np.float64)
    with pytest.warns(RuntimeWarning):
        expected = getattr(np, name)(x, axis=1)
    got = getattr(dnp, name)(x, axis=1)
    assert np.isnan(got[1]) and np.isnan(expected[1])
    np.testing.assert_allclose(got, expected)


@pytest.mark.parametrize("name", ARGS)
def test_all_nan_argument_raises_when_known_and_is_minus_one_when_traced(name: str) -> None:
    x = all_nan_rows(np.float64)
    with pytest.raises(ValueError, match="All-NaN"):
        getattr(np, name)(x, axis=1)
    with pytest.raises(ShapeError, match="All-NaN"):
        getattr(dnp, name)(x, axis=1)
    traced = da.jit(lambda v: getattr(dnp, name)(v, axis=1))(x)
    np.testing.assert_array_equal(traced, [getattr(np, name)(x[0]), -1, getattr(np, name)(x[2]), 2])


@pytest.mark.parametrize("name", [*REDUCTIONS, *QUANTILES])
def test_size_zero_axes(name: str) -> None:
    x = np.zeros((0, 3))
    for axis in (0, 1):
        args = (0.5 if name == "nanquantile" else 50,) if name in QUANTILES else ()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                expected = getattr(np, name)(x, *args, axis=axis)
        except ValueError:
            with pytest.raises(ShapeError):
                getattr(dnp, name)(x, *args, axis=axis)
            continue
        got = getattr(dnp, name)(x, *args, axis=axis)
        assert np.shape(got) == np.shape(expected) and np.asarray(got).dtype == expected.dtype
        np.testing.assert_allclose(got, expected)


def test_where_initial_dtype_and_ddof() -> None:
    x = with_nans((4, 5), np.float64, seed=21)
    x[:2] = np.where(np.isnan(x[:2]), 0.31 + 0.1 * np.arange(5), x[:2])  # columns: 2 numbers
    w = np.random.default_rng(2).random((4, 5)) < 0.6
    w[:, 0] = True
    w[((w & ~np.isnan(x)).sum(axis=1) < 2)] = True  # two counted elements in every row
    assert np.all((~np.isnan(x)).sum(axis=0) >= 2) and np.all((w & ~np.isnan(x)).sum(1) >= 2)
    cases: list[tuple[str, dict[str, Any]]] = [
        ("nansum", {"axis": 1, "where": w}),
        ("nansum", {"axis": 0, "initial": 2.5}),
        ("nansum", {"dtype": np.float32}),
        ("nanprod", {"axis": 1, "where": w, "initial": 0.5}),
        ("nanmean", {"axis": 1, "where": w}),
        ("nanmean", {"dtype": np.float32, "axis": 0}),
        ("nanvar", {"axis": 1, "where": w, "ddof": 1}),
        ("nanstd", {"axis": 0, "correction": 1}),
        ("nanmax", {"axis": 1, "where": w, "initial": -100.0}),
        ("nanmin", {"axis": 0, "initial": -0.01}),
        ("nancumsum", {"axis": 0, "dtype": np.float32}),
    ]
    for name, kwargs in cases:
        # a float32 accumulator of float64 data: central differences in float32 are noise
        single = kwargs.get("dtype") is np.float32
        nan_conforms(bound(name, dnp, **kwargs), bound(name, np, **kwargs), x, gradients=not single)


def test_int_and_bool_arrays_are_the_plain_reductions() -> None:
    ints = np.array([[3, -1, 4], [1, 5, -9]])
    bools = ints > 0
    for name in [*REDUCTIONS, *SCANS, *ARGS]:
        for a in (ints, bools):
            if name in ("nanvar", "nanstd", "nanmedian", "nanmean", "nanprod") and a is bools:
                a = ints  # NumPy's bool arithmetic here is not all supported
            got, expected = getattr(dnp, name)(a, axis=1), getattr(np, name)(a, axis=1)
            assert np.asarray(got).dtype == expected.dtype, name
            np.testing.assert_allclose(got, expected)
    for name in QUANTILES:
        q = 0.4 if name == "nanquantile" else 40
        np.testing.assert_allclose(
            getattr(dnp, name)(ints, q, axis=0), getattr(np, name)(ints, q, axis=0)
        )


def test_unsupported_arguments_are_named_errors() -> None:
    x = with_nans((3,), np.float64, seed=1)
    with pytest.raises(UnsupportedError, match="out="):
        dnp.nansum(x, out=np.zeros(()))  # type: ignore[arg-type]
    with pytest.raises(UnsupportedError, match="mean="):
        dnp.nanvar(x, mean=np.zeros(()))  # type: ignore[arg-type]
    with pytest.raises(UnsupportedError, match="method"):
        dnp.nanquantile(x, 0.5, method="nearest")
    with pytest.raises(ShapeError, match="in the range"):
        dnp.nanquantile(x, 1.5)


# --------------------------------------------------------------------------------------
# Hypothesis
# --------------------------------------------------------------------------------------

SHAPES = array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)


@st.composite
def axes(draw: Any, ndim: int) -> Any:
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    return draw(valid_tuple_axes(ndim, min_size=1))


@pytest.mark.parametrize(
    "name", ["nansum", "nanmean", "nanmax", "nanvar", "nanmedian", "nanprod", "nanquantile"]
)
@settings(max_examples=15)
@given(data=st.data(), shape=SHAPES, dtype=st.sampled_from(FLOATS), keepdims=st.booleans())
def test_drawn_shapes_values(
    name: str, data: Any, shape: tuple[int, ...], dtype: Any, keepdims: bool
) -> None:
    axis = data.draw(axes(len(shape)))
    counted = (
        math.prod(shape)
        if axis is None
        else math.prod(shape[a] for a in (axis if isinstance(axis, tuple) else (axis,)))
    )
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.uniform(-1.5, 1.5, shape).astype(dtype)
    x[rng.random(shape) < 0.4] = np.nan
    if name == "nanmax" and counted == 0 and x.size:
        with pytest.raises(ShapeError):
            dnp.nanmax(x, axis=axis, keepdims=keepdims)
        return
    if name == "nanmax" and x.size == 0 and counted == 0:
        return
    kwargs: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
    if name == "nanquantile":
        # a Python number: NumPy's result type for an array q of float32 data depends
        # on the data (float32 when a 1-d slice is all nan, else float64)
        kwargs["q"] = 0.3
    check_values(bound(name, dnp, **kwargs), quiet(bound(name, np, **kwargs)), [x])


def test_extrema_with_where_need_initial_as_in_numpy() -> None:
    x = np.array([[1.0, np.nan], [3.0, 4.0]])
    w = np.array([[True, False], [True, True]])
    for name in ("nanmax", "nanmin"):
        with pytest.raises(ValueError, match="initial"):
            getattr(np, name)(x, axis=1, where=w)
        with pytest.raises(ShapeError, match="initial"):
            getattr(dnp, name)(x, axis=1, where=w)
        for initial in (-5.0, 5.0, np.nan):
            kwargs = {"axis": 1, "where": w, "initial": initial}
            np.testing.assert_array_equal(
                getattr(dnp, name)(x, **kwargs), getattr(np, name)(x, **kwargs)
            )
    all_nan = np.array([np.nan, np.nan])
    np.testing.assert_array_equal(dnp.nanmin(all_nan, initial=3.0), np.nanmin(all_nan, initial=3.0))
    np.testing.assert_array_equal(dnp.nanmax(np.zeros((0, 2)), axis=0, initial=1.0), [1.0, 1.0])

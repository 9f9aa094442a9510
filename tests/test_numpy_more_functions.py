"""``dnp.append``, ``rollaxis``, ``gradient``, ``partition``/``argpartition``,
``searchsorted``, ``lexsort``, ``interp``, ``convolve``/``correlate`` and ``polyval``
conform to NumPy (values with exact shape and dtype, eager and traced; gradients against
central differences in both modes; jvp/vjp adjointness; vmap against a loop) on
Hypothesis-drawn shapes, float32 and float64; integer results give no gradient; the
sequence operations cost a size-independent number of terms; errors are named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from numpy_conformance import conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.errors import DtypeError, ShapeError, UnsupportedError
from dualarr.lang.terms import Contract, Gather, count_nodes, postorder

SETTINGS = settings(max_examples=25, deadline=None)
FLOATS = st.sampled_from([np.float32, np.float64])
SHAPES = array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)


def rng_of(data: st.DataObject) -> np.random.Generator:
    return np.random.default_rng(data.draw(st.integers(0, 2**31 - 1), label="seed"))


def distinct(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Values without ties, well apart for float32 (sorting is differentiable there)."""
    size = int(np.prod(shape))
    values = rng.permutation(size).astype(np.float64) - size / 2
    values = values * 0.5 + rng.uniform(0.0, 0.1, size)
    return values.reshape(shape).astype(dtype)


# --------------------------------------------------------------------------------------
# append, rollaxis
# --------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), shape=SHAPES, dtype=FLOATS)
def test_append_conforms(data: st.DataObject, shape: tuple[int, ...], dtype: Any) -> None:
    rng = rng_of(data)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    other = list(shape)
    if axis is not None:
        other[axis] = data.draw(st.integers(0, 3))
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(other).astype(data.draw(FLOATS))
    conforms(
        lambda a, b: dnp.append(a, b, axis=axis), lambda a, b: np.append(a, b, axis=axis), (x, y)
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_append_scalars_and_lists(dtype: Any) -> None:
    x = np.arange(6.0, dtype=dtype).reshape(2, 3)
    conforms(lambda a: dnp.append(a, 1.5), lambda a: np.append(a, 1.5), (x,))
    conforms(lambda a: dnp.append(a, [[7, 8, 9]], 0), lambda a: np.append(a, [[7, 8, 9]], 0), (x,))


@SETTINGS
@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=4, max_side=3), dtype=FLOATS)
def test_rollaxis_conforms(data: st.DataObject, shape: tuple[int, ...], dtype: Any) -> None:
    n = len(shape)
    axis = data.draw(st.integers(-n, n - 1))
    start = data.draw(st.integers(-n, n))
    x = rng_of(data).standard_normal(shape).astype(dtype)
    conforms(lambda a: dnp.rollaxis(a, axis, start), lambda a: np.rollaxis(a, axis, start), (x,))


# --------------------------------------------------------------------------------------
# gradient
# --------------------------------------------------------------------------------------


def stacked(module: Any, *spacing: Any, h: bool = False, **kwargs: Any) -> Callable[..., Any]:
    """``gradient`` with the per-axis results stacked (one array for the harness); with
    ``h`` the spacing is the function's second argument."""

    def f(a: Any, *step: Any) -> Any:
        result = module.gradient(a, *(step if h else spacing), **kwargs)
        return module.stack(result) if isinstance(result, tuple) else result

    return f


@SETTINGS
@given(
    data=st.data(),
    shape=array_shapes(min_dims=1, max_dims=3, min_side=3, max_side=5),
    dtype=FLOATS,
    edge_order=st.sampled_from([1, 2]),
)
def test_gradient_uniform_spacing(
    data: st.DataObject, shape: tuple[int, ...], dtype: Any, edge_order: Any
) -> None:
    rng = rng_of(data)
    x = rng.standard_normal(shape).astype(dtype)
    form = data.draw(st.sampled_from(["none", "one", "each"]))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    count = len(shape) if axis is None else 1
    spacing: tuple[Any, ...] = {
        "none": (),
        "one": (0.5,),
        "each": tuple(float(s) for s in rng.uniform(0.5, 2.0, count)),
    }[form]
    conforms(
        stacked(dnp, *spacing, axis=axis, edge_order=edge_order),
        stacked(np, *spacing, axis=axis, edge_order=edge_order),
        (x,),
    )


@SETTINGS
@given(
    data=st.data(),
    shape=array_shapes(min_dims=1, max_dims=2, min_side=3, max_side=5),
    dtype=FLOATS,
    edge_order=st.sampled_from([1, 2]),
)
def test_gradient_coordinates_are_differentiable(
    data: st.DataObject, shape: tuple[int, ...], dtype: Any, edge_order: Any
) -> None:
    """A coordinate array per axis (non-uniform), differentiated with the values."""
    rng = rng_of(data)
    x = rng.standard_normal(shape).astype(dtype)
    axis = data.draw(st.integers(0, len(shape) - 1))
    coordinates = np.cumsum(rng.uniform(0.5, 1.5, shape[axis])).astype(data.draw(FLOATS))
    conforms(
        lambda a, c: dnp.gradient(a, c, axis=axis, edge_order=edge_order),
        lambda a, c: np.gradient(a, c, axis=axis, edge_order=edge_order),
        (x, coordinates),
    )


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_known_coordinates_uniform_and_not(edge_order: Any) -> None:
    x = np.random.default_rng(0).standard_normal((4, 5))
    for coordinates in (np.arange(5) * 0.25, np.array([0.0, 1.0, 1.5, 3.0, 3.2])):
        conforms(
            stacked(dnp, 2.0, coordinates, edge_order=edge_order),
            stacked(np, 2.0, coordinates, edge_order=edge_order),
            (x,),
        )


def test_gradient_ints_size_zero_and_exact_quadratic() -> None:
    ints = np.array([[1, 4, 9, 16], [2, 3, 5, 8]])
    conforms(stacked(dnp), stacked(np), (ints,))
    empty = np.zeros((0, 4))
    conforms(lambda a: dnp.gradient(a, axis=1), lambda a: np.gradient(a, axis=1), (empty,))
    # second-order edges are exact on a quadratic (NumPy's doc)
    t = np.array([0.0, 0.3, 1.0, 1.6, 2.0])
    got = np.asarray(dnp.gradient(t**2, t, edge_order=2))
    np.testing.assert_allclose(got, 2 * t, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------------------
# partition, argpartition
# --------------------------------------------------------------------------------------


def assert_partitioned(out: np.ndarray, a: np.ndarray, kth: Any, axis: int | None) -> None:
    """At each ``kth`` the element NumPy puts there, nothing larger before, nothing
    smaller after, and a permutation of ``a`` along ``axis``."""
    if axis is None:
        a, axis = a.reshape(-1), 0
    moved, source = np.moveaxis(out, axis, -1), np.moveaxis(a, axis, -1)
    expected = np.moveaxis(np.partition(a, kth, axis=axis), axis, -1)
    np.testing.assert_array_equal(np.sort(moved, -1), np.sort(source, -1))
    for k in np.atleast_1d(kth):
        k = int(k) % moved.shape[-1]
        pivot = moved[..., k : k + 1]
        np.testing.assert_array_equal(moved[..., k], expected[..., k])
        assert (moved[..., :k] <= pivot).all() and (moved[..., k + 1 :] >= pivot).all()


@SETTINGS
@given(data=st.data(), shape=SHAPES, dtype=FLOATS)
def test_partition_and_argpartition(
    data: st.DataObject, shape: tuple[int, ...], dtype: Any
) -> None:
    x = distinct(rng_of(data), shape, dtype)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = x.size if axis is None else shape[axis]
    if n == 0:
        with pytest.raises(ShapeError, match=r"numpy\.partition.*out of bounds"):
            dnp.partition(x, 0, axis)
        return
    kth = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(-n, n - 1), min_size=1)))
    out = np.asarray(dnp.partition(x, kth, axis))
    assert_partitioned(out, x, kth, axis)
    index = np.asarray(dnp.argpartition(x, kth, axis))
    assert index.dtype == np.int64
    flat = x.reshape(-1) if axis is None else x
    assert_partitioned(np.take_along_axis(flat, index, -1 if axis is None else axis), x, kth, axis)
    # the values (and the derivative, a gather through the permutation) are sort's
    conforms(lambda a: dnp.partition(a, kth, axis), lambda a: np.sort(a, axis), (x,))
    conforms(
        lambda a: dnp.argpartition(a, kth, axis),
        lambda a: np.argsort(a, axis, kind="stable"),
        (x,),
    )


def test_integer_results_are_not_differentiated() -> None:
    """As ``argsort``: ``grad`` of an int result is a named DtypeError, and an int
    result used as an index passes the gradient through the gather only."""
    x = np.array([0.3, -1.0, 2.0, 0.5])
    v = np.array([0.0, 1.0])
    for f in (
        lambda a: dnp.argpartition(a, 1),
        lambda a: dnp.searchsorted(np.sort(a), v),
        lambda a: dnp.lexsort([a, -a]),
    ):
        with pytest.raises(DtypeError, match="float output"):
            da.grad(lambda a, f=f: da.sum(f(a)))(x)
    g = da.grad(lambda a: da.sum(dnp.take(a, dnp.argpartition(a, 1)[:2])))(x)
    np.testing.assert_array_equal(g, [1.0, 1.0, 0.0, 0.0])  # the two smallest
    g = da.grad(lambda a: da.sum(a * dnp.searchsorted(v, a)))(x)
    np.testing.assert_array_equal(g, np.searchsorted(v, x))


# --------------------------------------------------------------------------------------
# searchsorted, lexsort
# --------------------------------------------------------------------------------------


@SETTINGS
@given(
    data=st.data(),
    n=st.integers(0, 8),
    v_shape=array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4),
    dtype=FLOATS,
    side=st.sampled_from(["left", "right"]),
)
def test_searchsorted_conforms(
    data: st.DataObject, n: int, v_shape: tuple[int, ...], dtype: Any, side: Any
) -> None:
    rng = rng_of(data)
    # small integers: many ties within a and between a and v
    a = np.sort(rng.integers(-3, 4, n)).astype(dtype)
    v = rng.integers(-4, 5, v_shape).astype(data.draw(FLOATS))
    conforms(
        lambda s, q: dnp.searchsorted(s, q, side), lambda s, q: np.searchsorted(s, q, side), (a, v)
    )
    ints = (a.astype(np.int64), v.astype(np.int64))
    conforms(
        lambda s, q: dnp.searchsorted(s, q, side), lambda s, q: np.searchsorted(s, q, side), ints
    )
    order = rng.permutation(n)
    shuffled = np.empty_like(a)
    shuffled[order] = a
    got = dnp.searchsorted(shuffled, v, side, sorter=order)
    np.testing.assert_array_equal(got, np.searchsorted(shuffled, v, side, sorter=order))


def test_searchsorted_is_a_sort_not_a_comparison_matrix() -> None:
    sizes = {}
    for n in (8, 512):
        a, v = np.arange(float(n)), np.linspace(0.0, n, 2 * n)
        program = da.trace(lambda s, q: dnp.searchsorted(s, q), a, v)
        sizes[n] = count_nodes(program.outputs)
        np.testing.assert_array_equal(program(a, v), np.searchsorted(a, v))
    assert sizes[512] == sizes[8]


@SETTINGS
@given(
    data=st.data(),
    shape=array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5),
    keys=st.integers(1, 3),
)
def test_lexsort_conforms(data: st.DataObject, shape: tuple[int, ...], keys: int) -> None:
    rng = rng_of(data)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    columns = [rng.integers(0, 3, shape).astype(data.draw(FLOATS)) for _ in range(keys)]
    conforms(lambda *ks: dnp.lexsort(ks, axis), lambda *ks: np.lexsort(ks, axis), tuple(columns))
    stacked_keys = np.stack(columns)
    np.testing.assert_array_equal(dnp.lexsort(stacked_keys, axis), np.lexsort(stacked_keys, axis))


# --------------------------------------------------------------------------------------
# interp
# --------------------------------------------------------------------------------------


@SETTINGS
@given(
    data=st.data(),
    n=st.integers(1, 7),
    x_shape=array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4),
    dtype=FLOATS,
)
def test_interp_conforms(data: st.DataObject, n: int, x_shape: tuple[int, ...], dtype: Any) -> None:
    """Differentiable in x, xp and fp; x drawn away from the samples (kinks there)."""
    rng = rng_of(data)
    xp = np.cumsum(rng.uniform(1.0, 2.0, n)).astype(dtype)
    fp = rng.standard_normal(n).astype(dtype)
    cells = rng.integers(-1, n, x_shape)
    x = np.take(np.concatenate([[xp[0] - 1.0], xp]), cells + 1) + rng.uniform(0.2, 0.8, x_shape)
    x = x.astype(data.draw(FLOATS))
    edges = data.draw(st.sampled_from([(None, None), (-5.0, 7.0)]))
    conforms(
        lambda a, b, c: dnp.interp(a, b, c, *edges),
        lambda a, b, c: np.interp(a, b, c, *edges),
        (x, xp, fp),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interp_period_and_samples(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    xp = np.array([190.0, -190.0, 350.0, -350.0], dtype=dtype)  # unsorted, NumPy's doc
    fp = rng.standard_normal(4).astype(dtype)
    x = np.array([-180.0, -170.0, -185.0, 185.0, -10.0, -5.0, 0.0, 365.0], dtype=dtype) + 0.5
    conforms(
        lambda a, b, c: dnp.interp(a, b, c, period=360),
        lambda a, b, c: np.interp(a, b, c, period=360),
        (x, xp, fp),
    )
    # at the samples themselves the values are fp exactly
    grid, values = np.array([0.0, 1.0, 3.0]), np.array([2.0, -1.0, 4.0])
    np.testing.assert_array_equal(dnp.interp(grid, grid, values), values)


# --------------------------------------------------------------------------------------
# correlate, convolve, polyval
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["correlate", "convolve"])
@SETTINGS
@given(
    data=st.data(),
    n=st.integers(1, 7),
    m=st.integers(1, 7),
    mode=st.sampled_from(["full", "same", "valid"]),
    dtypes=st.sampled_from(
        [(np.float64,) * 2, (np.float32,) * 2, (np.float32, np.float64), (np.int64, np.float32)]
    ),
)
def test_correlate_and_convolve_conform(
    name: str, data: st.DataObject, n: int, m: int, mode: str, dtypes: tuple[Any, Any]
) -> None:
    rng = rng_of(data)
    a = (rng.standard_normal(n) * 3).astype(dtypes[0])
    v = (rng.standard_normal(m) * 3).astype(dtypes[1])
    conforms(
        lambda x, y: getattr(dnp, name)(x, y, mode),
        lambda x, y: getattr(np, name)(x, y, mode),
        (a, v),
    )
    ints = (a.astype(np.int64), v.astype(np.int64))
    conforms(
        lambda x, y: getattr(dnp, name)(x, y, mode),
        lambda x, y: getattr(np, name)(x, y, mode),
        ints,
    )


def test_correlate_is_one_gather_and_one_contraction() -> None:
    sizes = {}
    for n in (16, 1024):
        a, v = np.ones(n), np.ones(5)
        program = da.trace(lambda x, y: dnp.convolve(x, y, "same"), a, v)
        terms = postorder(program.outputs)
        assert [type(t) for t in terms].count(Contract) == 1
        assert any(isinstance(t, Gather) and t.shape == (n, 5) for t in terms)
        sizes[n] = len(terms)
    assert sizes[16] == sizes[1024]


@SETTINGS
@given(
    data=st.data(),
    degree=st.integers(0, 5),
    x_shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
    dtypes=st.sampled_from(
        [(np.float64,) * 2, (np.float32,) * 2, (np.float64, np.float32), (np.int64, np.float32)]
    ),
)
def test_polyval_conforms(
    data: st.DataObject, degree: int, x_shape: tuple[int, ...], dtypes: tuple[Any, Any]
) -> None:
    rng = rng_of(data)
    p = (rng.standard_normal(degree + 1) * 2).astype(dtypes[0])
    x = rng.uniform(-1.5, 1.5, x_shape).astype(dtypes[1])
    conforms(dnp.polyval, np.polyval, (p, x))
    conforms(
        lambda y: dnp.polyval([1.0, -2.0, 0.5], y), lambda y: np.polyval([1.0, -2.0, 0.5], y), (x,)
    )


def test_polyval_of_coefficient_rows() -> None:
    """Rows of a 2-D ``p`` are coefficients broadcast against ``x`` (NumPy's loop)."""
    rng = np.random.default_rng(2)
    conforms(dnp.polyval, np.polyval, (rng.standard_normal((3, 4)), rng.standard_normal(4)))


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------

X = np.arange(6.0).reshape(2, 3)
HALF: Any = 0.5  # not an index

ERRORS: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (lambda: dnp.append(X, np.ones((2, 2)), axis=0), ShapeError, r"numpy\.append.*\(2, 2\)"),
    (lambda: dnp.append(X, X, axis=2), ShapeError, r"numpy\.append.*axis 2"),
    (lambda: dnp.rollaxis(X, 2), ShapeError, r"numpy\.rollaxis.*axis 2.*\[2,3\]"),
    (lambda: dnp.rollaxis(X, 0, 3), ShapeError, r"numpy\.rollaxis.*start"),
    (lambda: dnp.gradient(X[:, :1], axis=1), ShapeError, r"numpy\.gradient.*\[2,1\]"),
    (lambda: dnp.gradient(X, 1.0, 2.0, 3.0), ShapeError, r"numpy\.gradient.*3 spacings"),
    (lambda: dnp.gradient(X, edge_order=3), UnsupportedError, r"numpy\.gradient.*edge_order"),
    (lambda: dnp.gradient(X, [0.0, 1.0], axis=1), ShapeError, r"numpy\.gradient.*2 coord"),
    (lambda: dnp.gradient(X, axis=(0, 0)), ShapeError, r"numpy\.gradient.*repeated"),
    (lambda: dnp.gradient(X, axis=-3), ShapeError, r"numpy\.gradient.*axis -3.*\[2,3\]"),
    (lambda: dnp.partition(X, 3), ShapeError, r"numpy\.partition.*kth\(=3\).*\[2,3\]"),
    (lambda: dnp.argpartition(X, 0, axis=2), ShapeError, r"numpy\.argpartition.*axis 2.*\[2,3\]"),
    (lambda: dnp.partition(X, 0, kind="quick"), UnsupportedError, r"numpy\.partition"),
    (lambda: dnp.partition(X, HALF), DtypeError, r"numpy\.partition.*integer"),
    (lambda: dnp.searchsorted(X, 1.0), ShapeError, r"numpy\.searchsorted.*\[2,3\]"),
    (lambda: dnp.searchsorted(X[0], 1.0, "middle"), UnsupportedError, r"numpy\.searchsorted"),
    (
        lambda: dnp.searchsorted(X[0], 1.0, sorter=[0, 1]),
        ShapeError,
        r"numpy\.searchsorted.*sorter.*\[2\].*\[3\]",
    ),
    (lambda: dnp.lexsort([X, X[0]]), ShapeError, r"numpy\.lexsort.*\[2,3\], \[3\]"),
    (lambda: dnp.lexsort([]), ShapeError, r"numpy\.lexsort.*len > 0"),
    (lambda: dnp.lexsort([X], axis=2), ShapeError, r"numpy\.lexsort.*axis 2.*\[2,3\]"),
    (lambda: dnp.interp(1.0, [0.0, 1.0], [1.0]), ShapeError, r"numpy\.interp.*same length"),
    (lambda: dnp.interp(1.0, X, X), ShapeError, r"numpy\.interp.*\[2,3\]"),
    (lambda: dnp.interp(1.0, [], []), ShapeError, r"numpy\.interp.*empty"),
    (lambda: dnp.interp(1.0, [0.0], [1.0], period=0), UnsupportedError, r"numpy\.interp.*period"),
    (lambda: dnp.correlate(X, X[0]), ShapeError, r"numpy\.correlate.*\[2,3\]"),
    (lambda: dnp.correlate(X[0], []), ShapeError, r"numpy\.correlate.*v cannot be empty"),
    (lambda: dnp.convolve([], X[0]), ShapeError, r"numpy\.convolve.*cannot be empty"),
    (
        lambda: dnp.convolve(X[0], X[0], "middle"),
        UnsupportedError,
        r"numpy\.convolve.*mode.*\[3\] and \[3\]",
    ),
    (lambda: dnp.polyval(2.0, X), ShapeError, r"numpy\.polyval"),
]


@pytest.mark.parametrize(("call", "error", "pattern"), ERRORS)
def test_errors_name_the_function_and_shapes(
    call: Callable[[], Any], error: type[Exception], pattern: str
) -> None:
    with pytest.raises(error, match=pattern):
        call()


def test_errors_inside_a_trace() -> None:
    with pytest.raises(ShapeError, match=r"numpy\.convolve.*\[2,3\]"):
        da.trace(lambda a: dnp.convolve(a, a), X)
    with pytest.raises(ShapeError, match=r"numpy\.gradient"):
        da.grad(lambda a: da.sum(dnp.gradient(a[:, :1], axis=1)))(X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spacing_given_as_a_rank_0_array_is_differentiated(dtype: Any) -> None:
    x = np.random.default_rng(4).standard_normal((3, 4)).astype(dtype)
    for edge_order in (1, 2):
        conforms(
            stacked(dnp, edge_order=edge_order, h=True),
            stacked(np, edge_order=edge_order, h=True),
            (x, np.asarray(0.5, dtype)),
        )


def test_searchsorted_and_interp_with_nan_as_numpy() -> None:
    """NaN sorts last, as in NumPy; a NaN point interpolates to NaN."""
    a = np.array([1.0, 2.0, np.nan])
    v = np.array([np.nan, 1.5, 3.0, -np.inf, np.inf, 2.0])
    for side in ("left", "right"):
        np.testing.assert_array_equal(dnp.searchsorted(a, v, side), np.searchsorted(a, v, side))
    x = np.array([0.5, 1.5, np.nan])
    np.testing.assert_array_equal(dnp.interp(x, [1.0, 2.0], [3.0, 4.0]), [3.0, 3.5, np.nan])


LOSSES: dict[str, Callable[[Any], Any]] = {
    "gradient": lambda a: dnp.gradient(a, [0.0, 1.0, 1.5, 3.0], edge_order=2),
    "partition": lambda a: dnp.partition(a, 1),
    "interp": lambda a: dnp.interp(a, [-1.0, 0.0, 2.0], [1.0, -2.0, 0.5]),
    "convolve": lambda a: dnp.convolve(a, [1.0, -2.0], "same"),
    "correlate": lambda a: dnp.correlate(a, [1.0, -2.0, 0.5], "full"),
    "polyval": lambda a: dnp.polyval([0.5, -1.0, 2.0], a),
    "append": lambda a: dnp.append(a, [1.0, 2.0]) * dnp.append(a, a[:2]),
    "rollaxis": lambda a: dnp.rollaxis(a[None, :], 1),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_stage_sees_core_terms(name: str) -> None:
    """The vmapped loss goes through the pipeline: the bot reaches its normal form, the
    gradient prints and generates code, and the value and gradient equal eager ones."""
    f = LOSSES[name]
    batch = np.array([[0.3, -0.8, 1.7, 0.9], [1.1, -0.4, 0.2, 2.3]])

    def loss(b: Any) -> Any:
        return da.sum(da.vmap(f)(b) ** 2)

    p = da.pipeline(loss, batch)
    assert da.is_bot_normal(p.vectorised)
    assert str(p.gradient) and "def " in p.python
    assert da.trace(f, batch[0]).graph().source
    value, (grad,) = p(batch)
    np.testing.assert_allclose(value, sum(float(np.sum(np.asarray(f(b)) ** 2)) for b in batch))
    np.testing.assert_allclose(grad, da.grad(loss, mode="interpret")(batch), rtol=1e-12)


NUMPY_CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "append": lambda m, a: m.append(a, a[::-1]),
    "rollaxis": lambda m, a: m.rollaxis(m.reshape(a, (2, 3)), 1),
    "gradient": lambda m, a: m.gradient(a, 0.5, edge_order=2),
    "partition": lambda m, a: m.partition(a, 2)[2] * a,  # the k-th is determined
    "interp": lambda m, a: m.interp(a, [-1.0, 0.5, 2.0], [0.0, 1.0, -1.0]),
    "convolve": lambda m, a: m.convolve(a, [1.0, 0.5]),
    "correlate": lambda m, a: m.correlate(a, [1.0, 0.5], "same"),
    "polyval": lambda m, a: m.polyval([2.0, -1.0, 0.5], a),
    "searchsorted": lambda m, a: a * m.searchsorted([0.0, 1.0], a),
    "lexsort": lambda m, a: m.take(a, m.lexsort((a, a > 0))),
    "argpartition": lambda m, a: m.take(a, m.argpartition(a, 3)[3]) * a,
}


@pytest.mark.parametrize("name", sorted(NUMPY_CALLS))
def test_numpy_calls_on_traced_values_route_to_dualarr_numpy(name: str) -> None:
    """``np.<name>`` on a traced value is ``dnp.<name>``, so NumPy code differentiates."""
    x = np.array([0.3, -0.8, 1.7, 0.9, 1.1, -0.4])
    f = NUMPY_CALLS[name]
    np.testing.assert_allclose(da.trace(lambda a: f(np, a), x)(x), f(np, x))
    want = da.grad(lambda a: da.sum(f(dnp, a) ** 2))(x)
    np.testing.assert_allclose(da.grad(lambda a: da.sum(f(np, a) ** 2))(x), want)

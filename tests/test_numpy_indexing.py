"""``x[...]`` on traced values: NumPy's semantics for static indices (ints that wrap,
slices with any step, ``None``, ``...``, int arrays that broadcast, constant bool masks,
out-of-range errors at trace time); traced ones wrap as NumPy's do, except in a core
binder's index function, where the paper's total semantics hold (§5.2).

A Hypothesis property compares values, shapes, dtypes and gradients (both modes) with
NumPy over random shapes and random index tuples; explicit cases pin the NumPy rules
that are easy to get wrong (where the broadcast dimensions of advanced indices go).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dualarr as da
from dualarr.lang.terms import Gather, Index, Reshape, Term, postorder

T = da.Tensor
X = np.arange(5 * 6 * 7, dtype=np.float64).reshape(5, 6, 7)


def values(shape: tuple[int, ...], dtype: str) -> npt.NDArray[Any]:
    """Distinct entries, so a wrong read shows."""
    flat = np.arange(int(np.prod(shape)), dtype=np.float64)
    if dtype == "float64":
        return (flat * 0.5 + 1.0).reshape(shape)
    if dtype == "bool":
        mask: npt.NDArray[np.bool_] = flat % 3 == 0
        return mask.reshape(shape)
    ints: npt.NDArray[np.int64] = flat.astype(np.int64) * 3 - 7
    return ints.reshape(shape)


def expected_gradient(
    x: npt.NDArray[np.float64], idx: Any, w: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """The gradient of ``sum(x[idx] ** 2 * w)``: ``2 x[idx] w`` added into each element
    read (repeated reads add up)."""
    read = np.arange(x.size).reshape(x.shape)[idx]
    grad = np.zeros(x.size)
    np.add.at(grad, np.ravel(read), np.ravel(2.0 * x[idx] * w))
    return grad.reshape(x.shape)


# -- random index tuples ----------------------------------------------------------------


@st.composite
def index_entries(draw: st.DrawFn, size: int) -> int:
    """An int for an axis of ``size``: mostly in range (negative too), sometimes not."""
    if size > 0 and draw(st.integers(0, 9)) > 0:
        return draw(st.integers(-size, size - 1))
    return draw(st.integers(-size - 2, size + 1))


@st.composite
def index_items(
    draw: st.DrawFn, shape: tuple[int, ...], axis: int, ellipsis: bool
) -> tuple[Any, int]:
    """One index component for ``shape`` at about ``axis`` (mostly a valid one), and how
    many axes it uses; ``ellipsis``: the index has one already."""
    kinds = ["int", "np_int", "slice", "slice", "none", "array", "list", "mask"]
    if not ellipsis:
        kinds.append("ellipsis")
    if axis >= len(shape) and draw(st.integers(0, 9)) > 0:  # no axis left: mostly valid
        kinds = ["none"] if ellipsis else ["none", "ellipsis"]
    kind = draw(st.sampled_from(kinds))
    size = shape[axis] if axis < len(shape) else draw(st.integers(0, 3))
    if kind in ("int", "np_int"):
        k = draw(index_entries(size))
        return (np.int64(k) if kind == "np_int" else k), 1
    if kind == "slice":
        bound = st.none() | st.integers(-size - 2, size + 2)
        step = st.none() | st.integers(-3, 3).filter(lambda s: s != 0)
        return slice(draw(bound), draw(bound), draw(step)), 1
    if kind == "none":
        return None, 0
    if kind == "ellipsis":
        return Ellipsis, 0
    if kind in ("array", "list"):
        arr_shape = draw(st.lists(st.integers(0, 3), min_size=0, max_size=2))
        count = int(np.prod(arr_shape))
        entries = draw(st.lists(index_entries(size), min_size=count, max_size=count))
        arr = np.asarray(entries, dtype=np.int64).reshape(arr_shape)
        return (arr.tolist() if kind == "list" and arr.ndim > 0 else arr), 1
    rank = draw(st.integers(1, max(1, min(2, len(shape) - axis))))
    mask_shape = tuple(shape[axis : axis + rank])
    if len(mask_shape) < rank or draw(st.integers(0, 19)) == 0:  # sometimes mismatching
        mask_shape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=2)))
    count = int(np.prod(mask_shape))
    flat = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    mask = np.asarray(flat, dtype=np.bool_).reshape(mask_shape)
    return (mask.tolist() if draw(st.booleans()) else mask), len(mask_shape)


@st.composite
def index_cases(draw: st.DrawFn) -> tuple[tuple[int, ...], Any, str]:
    """A shape (rank 0-3, size-0 and size-1 axes), an index for it and an element type."""
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3, 4]), min_size=0, max_size=3)))
    count = draw(st.integers(0, len(shape) + 1))
    items: list[Any] = []
    axis = 0
    for _ in range(count):
        item, used = draw(index_items(shape, axis, any(i is Ellipsis for i in items)))
        items.append(item)
        axis += used
    idx: Any = tuple(items)
    if len(items) == 1 and draw(st.booleans()):
        idx = items[0]  # x[item] rather than x[(item,)]
    dtype = draw(st.sampled_from(["float64", "float64", "float64", "int64", "bool"]))
    return shape, idx, dtype


@given(index_cases())
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_static_indexing_matches_numpy(case: tuple[tuple[int, ...], Any, str]) -> None:
    shape, idx, dtype = case
    x = values(shape, dtype)
    try:
        expected = np.asarray(x[idx])
    except (IndexError, ValueError, TypeError):
        with pytest.raises(da.DualarrError):
            da.trace(lambda v: v[idx], x)
        return
    got = da.trace(lambda v: v[idx], x)(x)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    if dtype != "float64" or expected.size == 0:
        return
    w = np.random.default_rng(expected.size).standard_normal(expected.shape)

    def f(v: T) -> T:
        return da.sum((v[idx]) ** 2 * w)

    want = expected_gradient(x, idx, w)
    np.testing.assert_allclose(da.grad(f)(x), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(da.grad(f, mode="interpret")(x), want, rtol=1e-12, atol=1e-12)


def item_axes(rank: int, items: tuple[Any, ...]) -> list[int]:
    """The first array axis each index component reads (NumPy's expansion of ``...``)."""
    used = [0 if i is None or i is Ellipsis else np.ndim(i) if _is_mask(i) else 1 for i in items]
    axes: list[int] = []
    axis = 0
    for item, n in zip(items, used, strict=True):
        axes.append(axis)
        axis += rank - sum(used) if item is Ellipsis else n
    return axes


def _is_mask(item: Any) -> bool:
    return isinstance(item, list | np.ndarray) and np.asarray(item).dtype == np.bool_


@given(index_cases(), st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_traced_ints_in_range_index_as_numpy(
    case: tuple[tuple[int, ...], Any, str], data: st.DataObject
) -> None:
    """In-range traced int components (wrapped to non-negative) give NumPy's result
    shapes too: a traced int counts as an advanced component as a static one does."""
    shape, idx, _ = case
    x = values(shape, "float64")
    items = idx if isinstance(idx, tuple) else (idx,)
    try:
        expected = np.asarray(x[idx])
    except (IndexError, ValueError, TypeError):
        return
    traced: list[npt.NDArray[np.int64]] = []
    where: list[int] = []
    for k, (item, axis) in enumerate(zip(items, item_axes(len(shape), items), strict=True)):
        if item is None or item is Ellipsis or isinstance(item, slice) or _is_mask(item):
            continue
        if shape[axis] > 0 and data.draw(st.booleans()):
            traced.append(np.asarray(item, dtype=np.int64) % shape[axis])
            where.append(k)

    def f(v: T, *ints: T) -> T:
        parts = list(items)
        for k, t in zip(where, ints, strict=True):
            parts[k] = t
        return v[tuple(parts)]

    got = da.trace(f, x, *traced)(x, *traced)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


# -- explicit cases --------------------------------------------------------------------


def run(f: Any, x: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return np.asarray(da.trace(f, x)(x))


def terms_of(f: Any, x: npt.NDArray[Any]) -> list[Term]:
    return list(postorder(list(da.trace(f, x).outputs)))


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("mixed, adjacent advanced (int + array)", (3, slice(2, None), [1, 3])),
        ("last column", (slice(None), -1)),
        ("reversed", slice(None, None, -1)),
        ("new axis after ...", (Ellipsis, None)),
        ("non-adjacent advanced go first", ([0, 2], slice(None), [1, 1])),
        ("negative step, bounds", (slice(-1, 0, -2), 4)),
        ("empty slice", slice(3, 1)),
        ("broadcast arrays", (np.array([[0], [4]]), slice(None), np.array([1, 2, -1]))),
        ("new axis splits advanced", ([0, 1], None, [2, 3])),
        ("ellipsis in the middle", (1, Ellipsis, [0, -1])),
        ("np.int64 index", np.int64(-2)),
        ("list of lists", [[0, 1], [-1, -2]]),
    ],
)
def test_examples_match_numpy(name: str, index: Any) -> None:
    got = run(lambda x: x[index], X)
    expected = X[index]
    assert got.shape == expected.shape, name
    np.testing.assert_array_equal(got, expected)


def test_mixed_index_shape_is_numpys() -> None:
    assert run(lambda x: x[3, 2:, [1, 3]], X).shape == (2, 4)
    assert run(lambda x: x[[0, 2], :, [1, 1]], X).shape == (2, 6)
    assert run(lambda x: x[:, 0, None, [0, 1]], np.zeros((3, 4, 5, 6))).shape == (2, 3, 1, 6)


def test_mask_is_nonzero_of_it() -> None:
    mask = X[:, :, 0] % 3 == 0
    np.testing.assert_array_equal(run(lambda x: x[mask], X), X[mask])
    as_list = [True, False, True, True, False]
    np.testing.assert_array_equal(run(lambda x: x[as_list, 2], X), X[as_list, 2])


def test_static_indices_lower_to_index_gather_reshape_with_readable_constants() -> None:
    assert isinstance(da.trace(lambda x: x[-1], X).outputs[0], Index)
    assert str(da.trace(lambda x: x[-1, 2], X)).endswith("x[4, 2]")
    assert isinstance(da.trace(lambda x: x[None, ..., None], X).outputs[0], Reshape)
    gathered = da.trace(lambda x: x[[0, -1], 1:], X).outputs[0]
    assert isinstance(gathered, Gather)
    assert "[0, 4]" in str(da.trace(lambda x: x[[0, -1], 1:], X))  # wrapped constant
    whole = da.trace(lambda x: x[..., :], X)
    assert whole.outputs[0] is whole.inputs[0]  # nothing to index


@pytest.mark.parametrize("index", [5, -4])
def test_out_of_range_static_int_raises(index: int) -> None:
    v = np.arange(3.0)
    with pytest.raises(da.IndexOutOfRangeError) as info:
        da.trace(lambda x: x[index], v)
    message = str(info.value)
    assert f"index {index} is out of bounds for axis 0 with size 3" in message
    assert message.startswith("index:")
    assert isinstance(info.value, da.ShapeError)
    assert isinstance(info.value, da.DualarrError)
    assert (info.value.index, info.value.axis) == (index, 0)


def test_out_of_range_array_entry_names_its_axis() -> None:
    with pytest.raises(da.IndexOutOfRangeError, match="index 7 is out of bounds for axis 2"):
        da.trace(lambda x: x[:, :, [0, 7]], X)
    with pytest.raises(da.IndexOutOfRangeError, match="index -6 is out of bounds for axis 0"):
        da.trace(lambda x: x[[-6]], X)


@pytest.mark.parametrize(
    ("index", "error", "match"),
    [
        ((0, 0, 0, 0), da.ShapeError, "too many indices"),
        ((Ellipsis, 0, Ellipsis), da.ShapeError, "at most one"),
        (([0, 1], [0, 1, 2]), da.ShapeError, "broadcast"),
        (slice(None, None, 0), da.ShapeError, "step cannot be zero"),
        (True, da.UnsupportedError, "bool"),
        (np.array([True, False]), da.ShapeError, "mask"),
        (1.0, da.DtypeError, "valid indices"),
        (np.array([0.0, 1.0]), da.DtypeError, "ints"),
    ],
)
def test_bad_static_indices_raise_named_errors(index: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        da.trace(lambda x: x[index], X)


def test_traced_indices_are_total_in_binders_and_wrap_elsewhere() -> None:
    """Inside a core binder the paper's rule (no wrapping, §5.2); elsewhere NumPy's
    (negative wraps), and what is still out of range reads 0 (tests/
    test_numpy_traced_indices.py has the properties)."""
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(run(lambda x: da.build1(3, lambda i: x[i - 1]), v), [0, 1, 2])
    np.testing.assert_array_equal(run(lambda x: da.build1(3, lambda i: x[i + 1]), v), [2, 3, 0])
    traced = da.trace(lambda x, i: x[i], v, np.int64(-1))
    assert traced(v, np.int64(-1)) == 3.0  # NumPy's rule: a negative traced index wraps
    idx = np.array([2, -1, 5, -4], dtype=np.int64)
    got = da.trace(lambda x, j: x[j, None], v, idx)(v, idx)
    np.testing.assert_array_equal(got, [[3.0], [3.0], [0.0], [0.0]])


def test_traced_and_static_arrays_broadcast_together() -> None:
    idx = np.array([[0], [2]], dtype=np.int64)
    got = da.trace(lambda x, j: x[j, :, [1, 2, 3]], X, idx)(X, idx)
    np.testing.assert_array_equal(got, X[idx, :, [1, 2, 3]])


def test_gradient_of_repeated_reads_adds_up() -> None:
    v = np.array([1.0, 2.0, 3.0])
    g = da.grad(lambda x: da.sum(x[[0, 0, -1]] * x[::-1][None]))(v)
    expected = np.zeros(3)
    np.add.at(expected, [0, 0, 2], v[::-1])
    np.add.at(expected, [2, 1, 0], v[[0, 0, 2]])
    np.testing.assert_allclose(g, expected)


def test_vmap_of_indexing_is_a_loop() -> None:
    def f(row: T) -> T:
        return row[-1, ::-2, None] * row[[0, 2], 1:3].sum() + row[..., [1, -1]][:, 0]

    xs = X[:4]
    expected = np.stack([np.asarray(da.trace(f, x)(x)) for x in xs])
    np.testing.assert_allclose(da.vmap(f)(xs), expected)
    loop_grad = np.stack([da.grad(lambda r: da.sum(f(r)))(x) for x in xs])
    np.testing.assert_allclose(da.grad(lambda b: da.sum(da.vmap(f)(b)))(xs), loop_grad)

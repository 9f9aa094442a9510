"""``dualarr.numpy`` shape functions against NumPy (values, gradients, vmap; the
conformance check of ``numpy_conformance``), their lowerings and their errors."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_conformance import check_gradients, conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.errors import ShapeError, UnsupportedError
from dualarr.numpy import _shape

EXAMPLES = settings(max_examples=10, deadline=None)
FLOATS = st.sampled_from([np.float32, np.float64])


@st.composite
def arrays(
    draw: st.DrawFn, min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 4
) -> np.ndarray:
    """A float32 or float64 array (size-0 and size-1 axes included)."""
    shape = draw(
        hnp.array_shapes(
            min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
        )
    )
    dtype = draw(FLOATS)
    elements = st.floats(-4, 4, allow_nan=False, width=32)
    return draw(hnp.arrays(dtype, shape, elements=elements))


def axis_of(data: st.DataObject, ndim: int) -> int:
    """A valid axis, negative ones included."""
    return data.draw(st.integers(-ndim, ndim - 1))


# --------------------------------------------------------------------------------------
# Signatures
# --------------------------------------------------------------------------------------


def _is_subsequence(ours: list[str], theirs: list[str]) -> bool:
    it = iter(theirs)
    return all(name in it for name in ours)


@pytest.mark.parametrize("name", [n for n in _shape.__all__ if n not in ("r_", "c_")])
def test_signature_follows_numpy(name: str) -> None:
    ours = list(inspect.signature(getattr(dnp, name)).parameters)
    theirs = list(inspect.signature(getattr(np, name)).parameters)
    assert _is_subsequence(ours, theirs), (ours, theirs)
    assert ours[0] == theirs[0]
    assert getattr(dnp, name).__doc__


# --------------------------------------------------------------------------------------
# Reshaping and permuting axes
# --------------------------------------------------------------------------------------


@EXAMPLES
@given(st.data())
def test_reshape(data: st.DataObject) -> None:
    x = data.draw(arrays())
    shape = list(x.shape[::-1])
    if shape and x.size:
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    conforms(lambda a: dnp.reshape(a, tuple(shape)), lambda a: np.reshape(a, tuple(shape)), [x])


@EXAMPLES
@given(arrays())
def test_ravel(x: np.ndarray) -> None:
    conforms(dnp.ravel, np.ravel, [x])


@EXAMPLES
@given(st.data())
def test_transpose(data: st.DataObject) -> None:
    x = data.draw(arrays())
    perm = data.draw(st.permutations(range(x.ndim)))
    axes = tuple(p - x.ndim if data.draw(st.booleans()) else p for p in perm)
    conforms(lambda a: dnp.transpose(a, axes), lambda a: np.transpose(a, axes), [x])
    conforms(dnp.transpose, np.transpose, [x])


@EXAMPLES
@given(st.data())
def test_moveaxis_swapaxes(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=1))
    src = data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=1, unique=True))
    dst = data.draw(
        st.lists(st.integers(0, x.ndim - 1), min_size=len(src), max_size=len(src), unique=True)
    )
    dst = [d - x.ndim for d in dst]
    conforms(lambda a: dnp.moveaxis(a, src, dst), lambda a: np.moveaxis(a, src, dst), [x])
    i, j = axis_of(data, x.ndim), axis_of(data, x.ndim)
    conforms(lambda a: dnp.swapaxes(a, i, j), lambda a: np.swapaxes(a, i, j), [x])


@EXAMPLES
@given(st.data())
def test_squeeze_expand_dims(data: st.DataObject) -> None:
    x = data.draw(arrays(max_side=2))
    conforms(dnp.squeeze, np.squeeze, [x])
    ones = [d for d, n in enumerate(x.shape) if n == 1]
    if ones:
        ax = data.draw(st.sampled_from(ones)) - x.ndim
        conforms(lambda a: dnp.squeeze(a, ax), lambda a: np.squeeze(a, ax), [x])
    new = tuple(data.draw(st.lists(st.integers(-x.ndim - 2, x.ndim + 1), max_size=2, unique=True)))
    if len({d % (x.ndim + len(new)) for d in new}) == len(new) and all(
        -x.ndim - len(new) <= d < x.ndim + len(new) for d in new
    ):
        conforms(lambda a: dnp.expand_dims(a, new), lambda a: np.expand_dims(a, new), [x])


@EXAMPLES
@given(arrays(max_dims=3))
def test_atleast(x: np.ndarray) -> None:
    conforms(dnp.atleast_1d, np.atleast_1d, [x])
    conforms(dnp.atleast_2d, np.atleast_2d, [x])
    conforms(dnp.atleast_3d, np.atleast_3d, [x])
    conforms(
        lambda a: dnp.atleast_2d(a, a)[1], lambda a: np.atleast_2d(a, a)[1], [x]
    )


@EXAMPLES
@given(st.data())
def test_broadcast_to_and_arrays(data: st.DataObject) -> None:
    x = data.draw(arrays(max_dims=2, max_side=3))
    target = tuple(
        data.draw(st.lists(st.integers(0, 3), max_size=2))
        + [n if n != 1 else data.draw(st.integers(0, 3)) for n in x.shape]
    )
    conforms(lambda a: dnp.broadcast_to(a, target), lambda a: np.broadcast_to(a, target), [x])
    y = np.ones(target[-x.ndim - 1 :] if target else (), dtype=x.dtype) * x.dtype.type(0.5)
    conforms(
        lambda a, b: dnp.broadcast_arrays(a, b)[0],
        lambda a, b: np.broadcast_arrays(a, b)[0],
        [x, y],
    )


# --------------------------------------------------------------------------------------
# Joining and splitting
# --------------------------------------------------------------------------------------


@EXAMPLES
@given(st.data())
def test_concatenate(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=1))
    ax = axis_of(data, x.ndim)
    other = list(x.shape)
    other[ax] = data.draw(st.integers(0, 3))
    y = np.linspace(-1, 1, int(np.prod(other))).reshape(other).astype(x.dtype)
    conforms(
        lambda a, b: dnp.concatenate([a, b, a], axis=ax),
        lambda a, b: np.concatenate([a, b, a], axis=ax),
        [x, y],
    )
    conforms(
        lambda a, b: dnp.concatenate((a, b), axis=None),
        lambda a, b: np.concatenate((a, b), axis=None),
        [x, y],
    )


@EXAMPLES
@given(st.data())
def test_stack_family(data: st.DataObject) -> None:
    x = data.draw(arrays(max_dims=3))
    y = (x * 2 + 1).astype(x.dtype)
    ax = data.draw(st.integers(-x.ndim - 1, x.ndim))
    conforms(lambda a, b: dnp.stack([a, b], ax), lambda a, b: np.stack([a, b], ax), [x, y])
    for ours, theirs in (
        (dnp.vstack, np.vstack),
        (dnp.hstack, np.hstack),
        (dnp.dstack, np.dstack),
    ):
        conforms(
            lambda a, b, f=ours: f([a, b]), lambda a, b, f=theirs: f([a, b]), [x, y]
        )
    if x.ndim <= 2:
        conforms(
            lambda a, b: dnp.column_stack((a, b)), lambda a, b: np.column_stack((a, b)), [x, y]
        )


@EXAMPLES
@given(st.data())
def test_joining_mixed_float_widths(data: st.DataObject) -> None:
    """float32 joined with float64 (or an int64 array) is float64, as in NumPy; an
    explicit ``dtype`` converts every part, float64 → float32 included."""
    x = data.draw(arrays(min_dims=1, max_dims=2))
    x32, x64 = x.astype(np.float32), (x * 2 + 1).astype(np.float64)
    ints = np.arange(x.size).reshape(x.shape)
    ax = axis_of(data, x.ndim)
    joins: list[tuple[Callable[..., Any], Callable[..., Any]]] = [
        (lambda a, b: dnp.concatenate([a, b, a], ax), lambda a, b: np.concatenate([a, b, a], ax)),
        (lambda a, b: dnp.stack([a, b], ax), lambda a, b: np.stack([a, b], ax)),
        (lambda a, b: dnp.vstack([b, a]), lambda a, b: np.vstack([b, a])),
        (lambda a, b: dnp.hstack([a, b]), lambda a, b: np.hstack([a, b])),
        (lambda a, b: dnp.column_stack([a, b]), lambda a, b: np.column_stack([a, b])),
    ]
    for ours, theirs in joins:
        conforms(ours, theirs, [x32, x64])
        conforms(lambda a, f=ours: f(a, ints), lambda a, f=theirs: f(a, ints), [x32])
        assert np.asarray(ours(x32, x64)).dtype == np.float64
    if x.ndim == 1:
        conforms(lambda a, b: dnp.r_[a, b], lambda a, b: np.r_[a, b], [x32, x64])
        conforms(lambda a, b: dnp.c_[a, b], lambda a, b: np.c_[a, b], [x32, x64])
    f32 = np.float32
    # to float32: NumPy's rounding spoils finite differences of its own function, so the
    # gradient is checked against the float64 join's (the conversion's derivative)
    conforms(
        lambda a, b: dnp.concatenate([a, b], ax, dtype=f32),
        lambda a, b: np.concatenate([a, b], ax, dtype=f32),
        [x32, x64],
        gradients=False,
    )
    check_gradients(
        lambda a, b: dnp.concatenate([a, b], ax, dtype=f32),
        lambda a, b: np.concatenate([a, b], ax),
        [x32, x64],
    )
    conforms(
        lambda a, b: dnp.stack([a, b], dtype=np.float64),
        lambda a, b: np.stack([a, b], dtype=np.float64),
        [x32, x32],
    )
    grads = da.grad(lambda a, b: da.sum(dnp.concatenate([a, b], ax)), argnums=(0, 1))(x32, x64)
    assert [g.dtype for g in grads] == [np.float32, np.float64]


@EXAMPLES
@given(st.data())
def test_split(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=1))
    ax = axis_of(data, x.ndim)
    n = x.shape[ax]
    sections = data.draw(st.sampled_from([d for d in range(1, 5) if n % d == 0]))
    for k in range(sections):
        conforms(
            lambda a, k=k: dnp.split(a, sections, axis=ax)[k],
            lambda a, k=k: np.split(a, sections, axis=ax)[k],
            [x],
        )
    parts = data.draw(st.integers(1, 5))
    k = data.draw(st.integers(0, parts - 1))
    conforms(
        lambda a: dnp.array_split(a, parts, ax)[k],
        lambda a: np.array_split(a, parts, ax)[k],
        [x],
    )
    points = data.draw(st.lists(st.integers(-5, 5), max_size=3))
    k = data.draw(st.integers(0, len(points)))
    conforms(
        lambda a: dnp.split(a, points, ax)[k], lambda a: np.split(a, points, ax)[k], [x]
    )


def test_hsplit_vsplit_dsplit() -> None:
    x = np.arange(24.0).reshape(2, 4, 3)
    for name, arg in (("hsplit", 2), ("vsplit", [1]), ("dsplit", 3)):
        ours, theirs = getattr(dnp, name)(x, arg), getattr(np, name)(x, arg)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(dnp.hsplit(np.arange(4.0), 2)[1], [2.0, 3.0])
    with pytest.raises(ShapeError, match=r"numpy\.vsplit"):
        dnp.vsplit(np.arange(4.0), 2)
    with pytest.raises(ShapeError, match=r"numpy\.split.*equal division"):
        dnp.split(np.arange(5.0), 2)


@EXAMPLES
@given(st.data())
def test_r_and_c(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=1, max_dims=1))
    y = data.draw(hnp.arrays(x.dtype, x.shape, elements=st.floats(-2, 2, width=32)))
    conforms(lambda a: dnp.r_[a, 2.5], lambda a: np.r_[a, 2.5], [x])
    # a range is an int64 (or float64) array: a float32 x widens to float64
    conforms(lambda a: dnp.r_[a, 2.5, 0:3], lambda a: np.r_[a, 2.5, 0:3], [x])
    conforms(lambda a: dnp.r_[a, 0:1:3j], lambda a: np.r_[a, 0:1:3j], [x])
    conforms(lambda a, b: dnp.r_[a, b], lambda a, b: np.r_[a, b], [x, y])
    conforms(lambda a, b: dnp.c_[a, b], lambda a, b: np.c_[a, b], [x, y])
    conforms(lambda a, b: dnp.c_[a, b, a], lambda a, b: np.c_[a, b, a], [x, y])


def test_r_c_explicit() -> None:
    np.testing.assert_array_equal(dnp.r_[1:4, 7, 0:1:3j], np.r_[1:4, 7, 0:1:3j])
    assert dnp.r_[1, 2].dtype == np.r_[1, 2].dtype
    np.testing.assert_array_equal(dnp.c_[1, 2], np.c_[1, 2])
    x = np.ones((2, 2))
    np.testing.assert_array_equal(dnp.c_[x, x], np.c_[x, x])
    for key in [
        ("0,2", [1, 2], [3, 4]),
        ("1,2", [1, 2], [3, 4]),
        ("0,2,0", [1, 2], [3, 4]),
        ("-1,3,1", np.ones((2, 3)), np.zeros((1, 2, 3))),
        np.s_["0,3,0", 1:4, 0:1:3j],
        (" 1 ", [[1]], [[2.5]]),
        ("1,2,1,9", [1], [2]),  # NumPy reads the first three fields
        np.s_[1:2:5j, 7],
        (slice(0, 3, np.complex64(3j)),),
        (np.float64(1.5), np.array([1.0], np.float32)),  # a NumPy scalar is strong
        (1.5, np.array([1.0], np.float32)),  # a Python number is weak
    ]:
        got, want = dnp.r_[key], np.r_[key]
        assert got.shape == want.shape and got.dtype == want.dtype, key
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(dnp.c_["0", np.ones(2), [3.0]], np.c_["0", np.ones(2), [3.0]])
    assert repr(dnp.r_) == "dualarr.numpy.r_"


@pytest.mark.parametrize(
    ("key", "error"),
    [
        (("r", [1, 2]), UnsupportedError),  # matrix output
        (("c", [1, 2]), UnsupportedError),
        ("0,2", UnsupportedError),  # a string alone is numpy.bmat's syntax
        (("0", "1", [1]), ShapeError),  # a directive after the first entry
        (("0,", [1]), ShapeError),
        (("x", [1]), ShapeError),
        (("0,2,x", [1]), ShapeError),
        (("0,2,2", [1]), ShapeError),  # trans1d past the raised rank
        (np.s_["1,2,-3", 0:3], ShapeError),
        (("0,0", 1, 2), ShapeError),  # rank-0 items
        ((), ShapeError),
        (("0,2",), ShapeError),  # nothing to join
    ],
)
def test_r_directive_errors(key: Any, error: type[Exception]) -> None:
    if error is ShapeError:  # NumPy refuses these too (its matrix output is unsupported)
        with pytest.raises(ValueError):
            np.r_[key]
    with pytest.raises(error, match=r"numpy\.r_"):
        dnp.r_[key]


@st.composite
def directives(draw: st.DrawFn) -> str:
    """``'axis'``, ``'axis,ndmin'`` or ``'axis,ndmin,trans1d'`` with small values
    (negative ones and ones out of range included)."""
    fields = [draw(st.integers(-3, 2))]
    if draw(st.booleans()):
        fields.append(draw(st.integers(0, 3)))
        if draw(st.booleans()):
            fields.append(draw(st.integers(-4, 3)))
    return ",".join(str(f) for f in fields)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), directive=directives())
def test_r_and_c_directives(data: st.DataObject, directive: str) -> None:
    """``r_``/``c_`` after a drawn directive, with arrays of ranks 0-2, a number and a
    range: NumPy's result (values, shape, dtype, gradients, vmap), or an error where
    NumPy raises one."""
    x = data.draw(arrays(max_dims=2, min_side=1, max_side=3))
    if data.draw(st.booleans(), label="same shape"):
        y = data.draw(hnp.arrays(data.draw(FLOATS), x.shape, elements=st.floats(-2, 2, width=32)))
    else:
        y = data.draw(arrays(min_dims=x.ndim, max_dims=x.ndim, min_side=1, max_side=3))
    extras: list[Any] = data.draw(
        st.lists(st.sampled_from([2.5, slice(0, 2), slice(0, 1, 2j), np.float32(1.0)]), max_size=2)
    )
    for ours, theirs in ((dnp.r_, np.r_), (dnp.c_, np.c_)):

        def ours_f(a: Any, b: Any, ours: Any = ours) -> Any:
            return ours[(directive, a, *extras, b)]

        def theirs_f(a: Any, b: Any, theirs: Any = theirs) -> Any:
            return theirs[(directive, a, *extras, b)]

        try:
            theirs_f(x, y)
        except Exception:  # NumPy refuses: so must dualarr, with a named error
            with pytest.raises(da.DualarrError):
                ours_f(x, y)
            continue
        conforms(ours_f, theirs_f, [x, y])


# --------------------------------------------------------------------------------------
# Repeating, tiling, rolling, rotating, flipping
# --------------------------------------------------------------------------------------


@EXAMPLES
@given(st.data())
def test_repeat(data: st.DataObject) -> None:
    x = data.draw(arrays())
    r = data.draw(st.integers(0, 3))
    conforms(lambda a: dnp.repeat(a, r), lambda a: np.repeat(a, r), [x])
    if x.ndim:
        ax = axis_of(data, x.ndim)
        per = data.draw(
            st.lists(st.integers(0, 3), min_size=x.shape[ax], max_size=x.shape[ax])
        )
        conforms(lambda a: dnp.repeat(a, r, ax), lambda a: np.repeat(a, r, ax), [x])
        conforms(lambda a: dnp.repeat(a, per, ax), lambda a: np.repeat(a, per, ax), [x])


@EXAMPLES
@given(st.data())
def test_tile(data: st.DataObject) -> None:
    x = data.draw(arrays())
    reps = tuple(data.draw(st.lists(st.integers(0, 3), max_size=4)))
    conforms(lambda a: dnp.tile(a, reps), lambda a: np.tile(a, reps), [x])
    conforms(lambda a: dnp.tile(a, 2), lambda a: np.tile(a, 2), [x])


@EXAMPLES
@given(st.data())
def test_roll(data: st.DataObject) -> None:
    x = data.draw(arrays())
    shift = data.draw(st.integers(-9, 9))
    conforms(lambda a: dnp.roll(a, shift), lambda a: np.roll(a, shift), [x])
    if x.ndim:
        axes = data.draw(st.lists(st.integers(-x.ndim, x.ndim - 1), min_size=1, max_size=3))
        shifts = data.draw(st.lists(st.integers(-9, 9), min_size=len(axes), max_size=len(axes)))
        conforms(lambda a: dnp.roll(a, shifts, axes), lambda a: np.roll(a, shifts, axes), [x])
        conforms(
            lambda a: dnp.roll(a, shift, axes), lambda a: np.roll(a, shift, axes), [x]
        )


@EXAMPLES
@given(st.data())
def test_rot90_and_flips(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=2))
    k = data.draw(st.integers(-5, 5))
    i = axis_of(data, x.ndim)
    j = data.draw(st.sampled_from([d for d in range(x.ndim) if d != i % x.ndim]))
    conforms(lambda a: dnp.rot90(a, k, (i, j)), lambda a: np.rot90(a, k, (i, j)), [x])
    conforms(dnp.fliplr, np.fliplr, [x])
    conforms(dnp.flipud, np.flipud, [x])
    conforms(dnp.flip, np.flip, [x])
    conforms(lambda a: dnp.flip(a, (i, j)), lambda a: np.flip(a, (i, j)), [x])


# --------------------------------------------------------------------------------------
# Padding
# --------------------------------------------------------------------------------------


@EXAMPLES
@given(st.data())
def test_pad_modes(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=1, min_side=1))
    widths = [tuple(data.draw(st.lists(st.integers(0, 6), min_size=2, max_size=2)))
              for _ in range(x.ndim)]
    mode: Any = data.draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]))
    conforms(
        lambda a: dnp.pad(a, widths, mode), lambda a: np.pad(a, widths, mode), [x]
    )
    w = data.draw(st.integers(0, 3))
    conforms(lambda a: dnp.pad(a, w, mode), lambda a: np.pad(a, w, mode), [x])


@EXAMPLES
@given(st.data())
def test_pad_constant_values(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=1))
    widths = data.draw(st.lists(st.integers(0, 3), min_size=2, max_size=2))
    values = data.draw(
        st.one_of(
            st.floats(-3, 3, width=16),
            st.lists(st.floats(-3, 3, width=16), min_size=2, max_size=2),
        )
    )
    conforms(
        lambda a: dnp.pad(a, widths, constant_values=values),
        lambda a: np.pad(a, widths, constant_values=values),
        [x],
    )


def test_pad_explicit() -> None:
    x = np.arange(6.0).reshape(2, 3)
    for mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
        widths = ((3, 1), (4, 7))
        np.testing.assert_array_equal(dnp.pad(x, widths, mode), np.pad(x, widths, mode))
    b = np.array([True, False])
    np.testing.assert_array_equal(
        dnp.pad(b, 1, constant_values=True), np.pad(b, 1, constant_values=True)
    )
    i = np.array([1, 2, 3])
    got = dnp.pad(i, 2, constant_values=7)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.pad(i, 2, constant_values=7))
    with pytest.raises(UnsupportedError, match=r"numpy\.pad"):
        dnp.pad(x, 1, "median")
    with pytest.raises(ShapeError, match=r"numpy\.pad"):
        dnp.pad(x, -1)
    with pytest.raises(ShapeError, match=r"numpy\.pad"):
        dnp.pad(x, ((1, 2), (1, 2), (1, 2)))
    with pytest.raises(ShapeError, match=r"numpy\.pad"):
        dnp.pad(np.zeros((0, 2)), 1, "edge")


def test_pad_and_roll_lower_to_gathers() -> None:
    x = np.arange(5.0)
    rolled = str(da.trace(lambda a: dnp.roll(a, 2), x))
    assert "gather" in rolled, rolled
    assert "gather" in str(da.trace(lambda a: dnp.pad(a, 2, "reflect"), x))
    assert "gather" in str(da.trace(lambda a: dnp.pad(a, (1, 2)), x))
    assert "gather" in str(da.trace(lambda a: dnp.repeat(a, 2), x))
    assert "gather" in str(da.trace(lambda a: dnp.tile(a, 2), x))
    assert "scatter" in str(da.trace(lambda a: dnp.diag(a), x))


def test_term_size_does_not_grow_with_the_array() -> None:
    def size(n: int, f: Any) -> int:
        return int(da.trace(f, np.zeros(n)).size)

    for f in (
        lambda a: dnp.roll(a, 3),
        lambda a: dnp.pad(a, 3, "symmetric"),
        lambda a: dnp.repeat(a, 2),
        lambda a: dnp.tile(a, 3),
        lambda a: dnp.diag(a),
    ):
        assert size(4, f) == size(40, f)


# --------------------------------------------------------------------------------------
# Triangles and diagonals
# --------------------------------------------------------------------------------------


@EXAMPLES
@given(st.data())
def test_tril_triu(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=1))
    k = data.draw(st.integers(-4, 4))
    conforms(lambda a: dnp.tril(a, k), lambda a: np.tril(a, k), [x])
    conforms(lambda a: dnp.triu(a, k), lambda a: np.triu(a, k), [x])


@EXAMPLES
@given(st.data())
def test_diagonal_and_trace(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=2))
    offset = data.draw(st.integers(-4, 4))
    i = axis_of(data, x.ndim)
    j = data.draw(st.sampled_from([d - x.ndim for d in range(x.ndim) if d != i % x.ndim]))
    conforms(
        lambda a: dnp.diagonal(a, offset, i, j), lambda a: np.diagonal(a, offset, i, j), [x]
    )
    conforms(lambda a: dnp.trace(a, offset, i, j), lambda a: np.trace(a, offset, i, j), [x])
    f64 = np.float64  # the diagonal converted to dtype, then summed (float32 widens)
    conforms(
        lambda a: dnp.trace(a, offset, i, j, f64),
        lambda a: np.trace(a, offset, i, j, f64),
        [x.astype(np.float32)],
    )


@EXAMPLES
@given(st.data())
def test_diag_diagflat(data: st.DataObject) -> None:
    x = data.draw(arrays(min_dims=1, max_dims=2))
    k = data.draw(st.integers(-3, 3))
    conforms(lambda a: dnp.diag(a, k), lambda a: np.diag(a, k), [x])
    conforms(lambda a: dnp.diagflat(a, k), lambda a: np.diagflat(a, k), [x])


def test_diag_trace_dtypes() -> None:
    b = np.array([[True, False], [True, True]])
    assert dnp.trace(b) == np.trace(b) and dnp.trace(b).dtype == np.trace(b).dtype
    np.testing.assert_array_equal(dnp.diag(np.array([True, False])), np.diag([True, False]))
    i = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(dnp.tril(i), np.tril(i))
    assert dnp.tril(i).dtype == np.int64


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda x: dnp.roll(x, 1, axis=3), "roll"),
        (lambda x: dnp.transpose(x, (0, 0)), "transpose"),
        (lambda x: dnp.transpose(x, (0,)), "transpose"),
        (lambda x: dnp.moveaxis(x, 0, 5), "moveaxis"),
        (lambda x: dnp.swapaxes(x, 0, -3), "swapaxes"),
        (lambda x: dnp.squeeze(x, 0), "squeeze"),
        (lambda x: dnp.expand_dims(x, 3), "expand_dims"),
        (lambda x: dnp.reshape(x, (4, 4)), "reshape"),
        (lambda x: dnp.broadcast_to(x, (3,)), "broadcast_to"),
        (lambda x: dnp.concatenate([x, x[0]]), "concatenate"),
        (lambda x: dnp.concatenate([x, x], axis=2), "concatenate"),
        (lambda x: dnp.stack([x, x[0]]), "stack"),
        (lambda x: dnp.split(x, 0), "split"),
        (lambda x: dnp.repeat(x, -1), "repeat"),
        (lambda x: dnp.repeat(x, [1, 2, 3], axis=0), "repeat"),
        (lambda x: dnp.tile(x, -1), "tile"),
        (lambda x: dnp.rot90(x, 1, (0, 0)), "rot90"),
        (lambda x: dnp.flip(x, 2), "flip"),
        (lambda x: dnp.fliplr(x[0]), "fliplr"),
        (lambda x: dnp.diagonal(x, 0, 1, 1), "diagonal"),
        (lambda x: dnp.trace(x[0]), "trace"),
        (lambda x: dnp.diag(x[0, 0]), "diag"),
        (lambda x: dnp.tril(x[0, 0]), "tril"),
        (lambda x: dnp.pad(x, 1.5), "pad"),
    ],
)
def test_errors_name_the_function(call: Any, name: str) -> None:
    x = np.ones((2, 3))
    with pytest.raises(ShapeError, match=rf"numpy\.{name}"):
        call(x)
    with pytest.raises(ShapeError, match=rf"numpy\.{name}"):
        da.trace(call, x)


def test_traced_static_arguments_are_rejected() -> None:
    x = np.ones(3)
    with pytest.raises((ShapeError, UnsupportedError), match=r"numpy\.roll"):
        da.trace(lambda a: dnp.roll(a, da.floor(a[0])), x)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedError, match=r"numpy\.pad"):
        da.trace(lambda a: dnp.pad(a, 1, "linear_ramp"), x)


def test_eager_results_are_numpy_arrays() -> None:
    x = np.arange(6.0).reshape(2, 3)
    out = dnp.roll(x, 1)
    assert isinstance(out, np.ndarray)
    parts = dnp.split(x, 3, axis=1)
    assert isinstance(parts, list) and all(isinstance(p, np.ndarray) for p in parts)
    assert isinstance(dnp.broadcast_arrays(x, x[0]), tuple)

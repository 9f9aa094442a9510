"""``dnp.sort``/``argsort``/``take``/``take_along_axis`` conform to NumPy, and the core
``argsort`` term they lower to goes through every stage: the bot (vmap), both
differentiation modes (the gradient of ``sort`` is a gather through the permutation),
code generation on NumPy and the array API, printing and drawing."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import array_api_strict as xs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_conformance import conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.terms import ArgSort, Gather, postorder

SETTINGS = settings(max_examples=15, deadline=None)
DTYPES = (np.float32, np.float64, np.int64)


def distinct(data: st.DataObject, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Values without ties (sort is differentiable there), well apart for float32."""
    seed = data.draw(st.integers(0, 2**31 - 1), label="seed")
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    values = rng.permutation(size).astype(np.float64) - size / 2
    if np.dtype(dtype).kind == "f":
        values = values * 0.5 + rng.uniform(0.0, 0.1, size)
    return values.reshape(shape).astype(dtype)


def shapes(data: st.DataObject, min_rank: int = 1) -> tuple[int, ...]:
    rank = data.draw(st.integers(min_rank, 3))
    return tuple(data.draw(st.integers(0, 4)) for _ in range(rank))


def axes(data: st.DataObject, rank: int) -> int | None:
    return data.draw(st.one_of(st.none(), st.integers(-rank, rank - 1)))


# --------------------------------------------------------------------------------------
# sort and argsort
# --------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_sort(data: st.DataObject, dtype: Any) -> None:
    x = distinct(data, shapes(data), dtype)
    axis = axes(data, x.ndim)
    conforms(lambda a: dnp.sort(a, axis), lambda a: np.sort(a, axis), (x,))


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_argsort(data: st.DataObject, dtype: Any) -> None:
    x = distinct(data, shapes(data), dtype)
    axis = axes(data, x.ndim)
    conforms(  # dualarr sorts stably (ties keep their order)
        lambda a: dnp.argsort(a, axis),
        lambda a: np.argsort(a, axis, kind="stable"),
        (x,),
        gradients=False,
    )


@SETTINGS
@given(data=st.data())
def test_argsort_is_stable_on_ties(data: st.DataObject) -> None:
    shape = shapes(data)
    x = np.asarray(data.draw(st.lists(st.integers(0, 2), min_size=int(np.prod(shape)),
                                      max_size=int(np.prod(shape))))).reshape(shape)
    axis = axes(data, x.ndim)
    want = np.argsort(x, axis=axis, kind="stable")
    np.testing.assert_array_equal(dnp.argsort(x, axis, kind="quicksort"), want)
    np.testing.assert_array_equal(da.trace(lambda a: dnp.argsort(a, axis), x)(x), want)
    np.testing.assert_array_equal(dnp.sort(x, axis), np.sort(x, axis))


def test_sort_of_bools() -> None:
    x = np.array([[True, False, True], [False, False, True]])
    np.testing.assert_array_equal(dnp.sort(x), np.sort(x))
    np.testing.assert_array_equal(dnp.argsort(x, axis=0), np.argsort(x, axis=0, kind="stable"))


def test_sort_prints_and_draws_argsort() -> None:
    x = np.array([3.0, 1.0, 2.0])
    program = da.trace(lambda a: dnp.sort(a), x)
    assert "argsort" in str(program)
    kinds = {type(n) for n in postorder(program.outputs)}
    assert {ArgSort, Gather} <= kinds
    assert "argsort" in program.graph().source
    assert "ArgSort" in repr(program.outputs[0])  # the structured form


def test_the_gradient_of_sort_is_a_scatter_through_the_permutation() -> None:
    x = np.array([[3.0, -1.0], [1.0, 5.0], [2.0, 0.5]])
    w = np.arange(6.0).reshape(3, 2)

    def loss(a: Any) -> Any:
        return da.sum(dnp.sort(a, axis=0) * w)

    order = np.argsort(x, axis=0)
    want = np.zeros_like(x)
    np.put_along_axis(want, order, w, axis=0)
    for mode in ("compiled", "interpret"):
        np.testing.assert_allclose(da.grad(loss, mode=mode)(x), want)
    p = da.pipeline(loss, x)
    assert "argsort" in str(p.gradient)
    assert "xp.argsort(" in p.python and "stable=True" in p.python
    assert "scatter" in str(p.gradient)  # the transpose of the gather


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from((np.float32, np.float64)))
def test_vmap_of_sort_equals_a_loop(data: st.DataObject, dtype: Any) -> None:
    shape = shapes(data)
    batch = distinct(data, (3, *shape), dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    got = da.vmap(lambda a: dnp.sort(a, axis))(batch)
    np.testing.assert_array_equal(got, np.stack([np.sort(b, axis) for b in batch]))
    got_order = da.vmap(lambda a: dnp.argsort(a, axis))(batch)
    np.testing.assert_array_equal(got_order, np.stack([np.argsort(b, axis) for b in batch]))


def test_vmap_of_plain_sort() -> None:
    batch = np.random.default_rng(0).standard_normal((4, 5))
    np.testing.assert_array_equal(da.vmap(dnp.sort)(batch), np.stack([np.sort(b) for b in batch]))
    w = np.arange(20.0).reshape(4, 5)
    p = da.pipeline(lambda a: da.sum(da.vmap(dnp.sort)(a) * w), batch)
    assert "build1-argsort" in [step.rule for step in p.bot_steps]
    assert da.is_bot_normal(p.vectorised)
    _, (grad,) = p(batch)
    want = np.zeros_like(batch)
    np.put_along_axis(want, np.argsort(batch, axis=1), w, axis=1)
    np.testing.assert_allclose(grad, want)


def test_argsort_inside_build_is_vectorised() -> None:
    x = np.random.default_rng(1).standard_normal((3, 4))

    def f(a: Any) -> Any:  # argsort of a row that depends on i, read at i
        return da.build1(3, lambda i: dnp.argsort(da.index(a, (i,)) * da.to_float(i + 1))[i])

    p = da.pipeline(lambda a: da.sum(da.to_float(f(a)) * a[0, :3]), x)
    assert da.is_bot_normal(p.vectorised)
    want = np.array([np.argsort(x[i] * (i + 1))[i] for i in range(3)])
    np.testing.assert_array_equal(da.trace(f, x)(x), want)


def test_sort_on_the_array_api() -> None:
    x = np.array([[0.3, -1.0, 2.0], [1.5, 0.1, -0.7]])

    def loss(a: Any) -> Any:
        return da.sum(dnp.sort(a, axis=1) * np.array([1.0, 2.0, 3.0]))

    program = da.trace(lambda a: dnp.argsort(a, axis=1), x)
    got = program(xs.asarray(x))
    np.testing.assert_array_equal(np.asarray(got._array), np.argsort(x, axis=1))
    want = da.grad(loss)(x)
    strict_grad = da.grad(loss)(xs.asarray(x))
    np.testing.assert_allclose(np.asarray(strict_grad._array), want)
    interpreted = da.grad(loss, mode="interpret")(xs.asarray(x))
    np.testing.assert_allclose(np.asarray(interpreted._array), want)


# --------------------------------------------------------------------------------------
# take_along_axis and take
# --------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_take_along_axis(data: st.DataObject, dtype: Any) -> None:
    x = distinct(data, shapes(data), dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    index_shape = [1 if data.draw(st.booleans()) else d for d in x.shape]
    index_shape[axis] = data.draw(st.integers(0, 4)) if n else 0
    rng = np.random.default_rng(data.draw(st.integers(0, 100)))
    idx = rng.integers(-n, max(n, 1), index_shape) if n else np.zeros(index_shape, np.int64)
    conforms(
        lambda a: dnp.take_along_axis(a, idx, axis),
        lambda a: np.take_along_axis(a, idx, axis),
        (x,),
    )
    flat_idx = rng.integers(-x.size, max(x.size, 1), 3) if x.size else np.zeros(0, np.int64)
    conforms(
        lambda a: dnp.take_along_axis(a, flat_idx, None),
        lambda a: np.take_along_axis(a, flat_idx, None),
        (x,),
    )


@SETTINGS
@given(
    data=st.data(), dtype=st.sampled_from(DTYPES), mode=st.sampled_from(("raise", "wrap", "clip"))
)
def test_take_static_indices(data: st.DataObject, dtype: Any, mode: str) -> None:
    x = distinct(data, shapes(data), dtype)
    axis = axes(data, x.ndim)
    n = x.size if axis is None else x.shape[axis]
    if n == 0:
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 100)))
    index_shape = tuple(data.draw(st.integers(0, 3)) for _ in range(data.draw(st.integers(0, 2))))
    low, high = (-n, n) if mode == "raise" else (-2 * n - 1, 2 * n + 2)
    idx: np.ndarray | int = rng.integers(low, high, index_shape)
    if not index_shape:
        idx = int(idx)
    np_any: Any = np  # NumPy's stubs want a literal ``mode``; ours is a drawn str
    conforms(
        lambda a: dnp.take(a, idx, axis, mode), lambda a: np_any.take(a, idx, axis, mode=mode), (x,)
    )


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_take_traced_indices(mode: str) -> None:
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 3], [-1, 2], [-4, 1]])
    np_any: Any = np  # NumPy's stubs want a literal ``mode``; ours is a parameter str
    want = np_any.take(x, idx, axis=1, mode=mode)
    program = da.trace(lambda a, i: dnp.take(a, i, axis=1, mode=mode), x, idx)
    np.testing.assert_array_equal(program(x, idx), want)
    grad = da.grad(lambda a, i: da.sum(dnp.take(a, i, axis=1, mode=mode)))(x, idx)
    expected = np.zeros_like(x)
    columns = np_any.take(np.arange(4), idx, mode=mode).ravel()
    np.add.at(expected, (slice(None), columns), 1.0)  # type: ignore[arg-type]  # stubs: no tuples
    np.testing.assert_allclose(grad, expected)
    # traced indices out of range read 0 under "raise" (totality, §5.2)
    far = np.array([[5, 0]])
    total = da.trace(lambda a, i: dnp.take(a, i, axis=1), x, far)(x, far)
    np.testing.assert_array_equal(total[:, 0, 0], 0.0)


def test_take_along_axis_traced_indices_from_argsort() -> None:
    x = np.random.default_rng(2).standard_normal((3, 4))

    def f(a: Any) -> Any:
        return dnp.take_along_axis(a, dnp.argsort(a, axis=0), axis=0)

    np.testing.assert_allclose(da.trace(f, x)(x), np.sort(x, axis=0))
    conforms(f, lambda a: np.sort(a, axis=0), (x,))


# --------------------------------------------------------------------------------------
# interface and errors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sort", "argsort", "take", "take_along_axis"])
def test_signatures_follow_numpy(name: str) -> None:
    ours = inspect.signature(getattr(dnp, name)).parameters
    theirs = inspect.signature(getattr(np, name)).parameters
    assert list(ours) == [p for p in theirs if p in ours]
    for p in ours:
        assert ours[p].default == theirs[p].default, p
        assert ours[p].kind == theirs[p].kind, p
    assert getattr(dnp, name).__doc__


M = np.ones((2, 3))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: dnp.sort(np.float64(1.0)), "numpy.sort"),
        (lambda: dnp.sort(np.ones(3), axis=1), "numpy.sort"),
        (lambda: dnp.sort(np.ones(3), kind="bogo"), "numpy.sort"),
        (lambda: dnp.argsort(np.ones(3), order="f"), "numpy.argsort"),  # type: ignore[arg-type]
        (lambda: dnp.take(np.ones(3), [3]), "numpy.take"),
        (lambda: dnp.take(np.ones(3), [0.5]), "numpy.take"),
        (lambda: dnp.take(np.ones(3), [0], mode="fold"), "numpy.take"),
        (lambda: dnp.take(np.ones(3), [0], axis=1), "numpy.take"),
        (lambda: dnp.take_along_axis(M, np.zeros(2, np.int64), 1), "numpy.take_along_axis"),
        (lambda: dnp.take_along_axis(M, np.full((2, 1), 3), 1), "numpy.take_along_axis"),
        (lambda: dnp.take_along_axis(M, np.zeros((3, 1), np.int64), 1), "numpy.take_along_axis"),
        (lambda: dnp.take_along_axis(M, np.zeros((2, 1)), 1), "numpy.take_along_axis"),
        (lambda: dnp.take_along_axis(M, np.zeros((2, 1), np.int64), None), "numpy.take_along_axis"),
    ],
)
def test_errors_name_the_function(call: Callable[[], Any], name: str) -> None:
    with pytest.raises(da.DualarrError) as info:
        call()
    assert name in str(info.value)

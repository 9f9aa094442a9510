"""A one-function kernel (``exp``, ``log1p``, ``x * y``… alone) on several cores
(:mod:`dualarr.codegen.threads`).

Properties: the chunked ufunc writes the same bits as one call over the whole array, for
any length (chunks need not divide it), with scalar operands, views of any strides
(``x[::-1]``, a transpose, a strided ``out``) and operands broadcast along the rows; an
operand it cannot split leaves it undone for the single call; NumPy's error state of the
caller holds on every thread (an invalid value in the last chunk raises under
``np.errstate(invalid="raise")`` and is silent under ``"ignore"``); a process that is not
the one that made the pool makes its own; and a large gradient through sealed kernels
equals the unfused program's bit for bit.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualarr as da
import dualarr.numpy as dnp
from dualarr.codegen import threads
from dualarr.codegen.kernels import Apply, Arg, CompiledKernel, Kernel
from dualarr.codegen.threads import PARALLEL_MIN_SIZE, run_in_chunks
from dualarr.lang.terms import DType

UFUNCS = [np.sin, np.cos, np.exp, np.log1p, np.tanh, np.arctan2, np.power]


@pytest.fixture()
def two_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool of two threads whatever the machine has (numexpr's setting)."""
    import numexpr

    monkeypatch.setattr(numexpr, "get_num_threads", lambda: 2)
    monkeypatch.setattr(threads, "_POOL", threads._Pool())


@pytest.mark.usefixtures("two_threads")
@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 5000),
    st.sampled_from(UFUNCS),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_chunks_write_the_bits_of_one_call(
    size: int, ufunc: np.ufunc, seed: int, scalar_second: bool
) -> None:
    rng = np.random.default_rng(seed)
    operands: list[Any] = [rng.uniform(-3.0, 3.0, size)]
    if ufunc.nin == 2:
        operands.append(0.75 if scalar_second else rng.uniform(0.5, 2.0, size))
    with np.errstate(all="ignore"):
        expected = ufunc(*operands)
        out = np.full(size, np.nan)
        assert run_in_chunks(ufunc, operands, out)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.usefixtures("two_threads")
def test_views_and_broadcast_operands_are_cut_by_rows() -> None:
    x = np.linspace(0.0, 1.0, 4096)
    grid = np.linspace(-1.0, 1.0, 64 * 48).reshape(64, 48)
    cases: list[tuple[np.ufunc, list[Any], np.ndarray]] = [
        (np.sin, [x[::-1]], np.zeros(4096)),  # a reversed view
        (np.add, [x, x[:1]], np.zeros(4096)),  # one element, broadcast
        (np.sin, [x], np.zeros((2, 4096))[0, :]),  # a row of a larger array as out
        (np.multiply, [x[::2], 2.0], np.zeros((4096, 2))[::2, 0]),  # strided out
        (np.multiply, [grid, grid[:, :1]], np.zeros((64, 48))),  # a column, broadcast
        (np.subtract, [grid, grid[0]], np.zeros((64, 48))),  # a row, broadcast
        (np.add, [grid[::-1].T, 1.0], np.zeros((48, 64))),  # a transposed view
    ]
    for ufunc, operands, out in cases:
        assert run_in_chunks(ufunc, operands, out)
        np.testing.assert_array_equal(out, ufunc(*operands))


@pytest.mark.usefixtures("two_threads")
def test_operands_it_cannot_split_are_left_to_the_single_call() -> None:
    x = np.linspace(0.0, 1.0, 4096)
    out = np.zeros(4096)
    assert not run_in_chunks(np.sin, [[0.5] * 4096], out)  # a list
    assert not run_in_chunks(np.sin, [x], np.zeros(()))  # no rows
    assert not run_in_chunks(np.add, [x, x[:2]], out)  # rows NumPy would not broadcast
    assert np.all(out == 0.0)


@pytest.mark.usefixtures("two_threads")
def test_the_callers_error_state_holds_on_every_thread() -> None:
    x = np.ones(PARALLEL_MIN_SIZE)
    x[-1] = -1.0  # log of a negative number, in the last chunk (another thread's)
    out = np.empty_like(x)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        run_in_chunks(np.log, [x], out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(invalid="ignore"):
            assert run_in_chunks(np.log, [x], out)
    assert np.isnan(out[-1]) and np.all(out[:-1] == 0.0)


def test_another_process_makes_its_own_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    import numexpr

    monkeypatch.setattr(numexpr, "get_num_threads", lambda: 2)
    pool = threads._Pool()
    first = pool.executor()
    assert first is not None and pool.executor() is first
    monkeypatch.setattr(os, "getpid", lambda: -7)  # as a forked child sees itself
    assert pool.executor() is not first


def test_one_thread_runs_nothing_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    import numexpr

    monkeypatch.setattr(numexpr, "get_num_threads", lambda: 1)
    monkeypatch.setattr(threads, "_POOL", threads._Pool())
    assert not run_in_chunks(np.sin, [np.zeros(10)], np.zeros(10))


@pytest.mark.usefixtures("two_threads")
def test_a_large_sealed_kernel_runs_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    shape = (PARALLEL_MIN_SIZE + 3,)
    kernel = Kernel("k1", ("x",), (DType.FLOAT64,), Apply("exp", (Arg(0),)), DType.FLOAT64, shape)
    compiled = CompiledKernel(kernel)
    calls: list[int] = []

    def counting(ufunc: np.ufunc, operands: Any, out: np.ndarray) -> bool:
        calls.append(1)
        return run_in_chunks(ufunc, operands, out)

    monkeypatch.setattr("dualarr.codegen.kernels.run_in_chunks", counting)
    x = np.linspace(-4.0, 4.0, shape[0])
    np.testing.assert_array_equal(compiled(np, x), np.exp(x))
    assert calls == [1]


@pytest.mark.usefixtures("two_threads")
def test_a_large_gradient_through_sealed_kernels_equals_the_unfused_one() -> None:
    def w5(x: Any) -> Any:
        return dnp.sum(dnp.sin(x) * dnp.exp(-x * x) + dnp.log1p(x * x))

    x = np.random.default_rng(3).standard_normal(PARALLEL_MIN_SIZE + 1000)
    da.clear_caches()
    with da.config.fusing(True):
        fused = da.jit(da.grad(w5))(x)
    with da.config.fusing(False):
        unfused = da.jit(da.grad(w5))(x)
    da.clear_caches()
    np.testing.assert_allclose(fused, unfused, rtol=1e-12, atol=1e-14)


@pytest.mark.usefixtures("two_threads")
@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 1000), st.booleans())
def test_a_large_in_range_take_runs_in_chunks_with_the_bits_of_one_call(
    seed: int, extra: int, reversed_view: bool
) -> None:
    """A gather of a large in-range int64 index takes on every thread: the same array
    as one ``take``, for a length chunks need not divide and a strided array; rows of a
    matrix, and a small index, are left to the single call."""
    rng = np.random.default_rng(seed)
    array = rng.standard_normal(5000)
    array = array[::-1] if reversed_view else array
    index = rng.integers(0, 5000, threads.PARALLEL_MIN_SIZE_CHEAP + extra)
    taken = threads.take_rows(array, index)
    assert taken is not None
    np.testing.assert_array_equal(taken, array.take(index, axis=0))
    assert threads.take_rows(array, index[:1000]) is None
    assert threads.take_rows(array.reshape(1000, 5), index % 1000) is None


@pytest.mark.usefixtures("two_threads")
def test_a_large_gather_gradient_equals_numpys() -> None:
    """W6's gradient at a million indices (its gather in chunks) is NumPy's: the
    gathered values for ``w``, a scatter-add for ``x``."""
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal(1000), rng.standard_normal(threads.PARALLEL_MIN_SIZE_CHEAP + 7)
    idx = rng.integers(0, 1000, w.size)
    gx, gw = da.jit(da.grad(lambda x, i, w: da.sum(x[i] * w), argnums=(0, 2)))(x, idx, w)
    np.testing.assert_array_equal(gw, x[idx])
    np.testing.assert_allclose(gx, np.bincount(idx, weights=w, minlength=1000), rtol=1e-12)

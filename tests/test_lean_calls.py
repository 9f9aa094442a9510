"""The cached path of ``da.jit``: per call only the generated function and the copies
that keep results from aliasing inputs (counted in bytes, never timed)."""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
from bench_gradients import _chain_gradient, chain_function

import dualarr as da
import dualarr.numpy as dnp


def w1(x: Any, y: Any) -> Any:
    return dnp.sum(x * y)


def peak_bytes(call: Any) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_cached_call_allocates_only_its_results() -> None:
    x, y = np.linspace(0.0, 1.0, 1000), np.linspace(1.0, 2.0, 1000)
    g = da.jit(da.grad(w1, (0, 1)))
    g(x, y)  # traced and compiled once
    results = 2 * x.nbytes  # grad x is y and grad y is x: each copied once
    assert peak_bytes(lambda: g(x, y)) <= results + 4096


def test_results_never_alias_inputs_and_follow_call_time_data() -> None:
    x, y = np.linspace(0.0, 1.0, 50), np.linspace(1.0, 2.0, 50)
    g = da.jit(da.grad(w1, (0, 1)))
    gx, gy = g(x, y)
    assert not np.shares_memory(gx, y) and not np.shares_memory(gy, x)
    y[:] = 7.0
    gx, _ = g(x, y)
    np.testing.assert_array_equal(gx, np.full(50, 7.0))
    gx[:] = 0.0  # writable, and writing to it changes no input
    assert np.all(y == 7.0)


def test_the_cache_follows_the_fusion_settings() -> None:
    x = np.linspace(0.1, 0.9, 64)

    def f(x: Any) -> Any:
        return dnp.sum(dnp.sin(x) * dnp.cos(x) + x * x)

    g = da.jit(da.grad(f))
    fused = g(x)
    with da.config.fusing(False):
        unfused = g(x)
    np.testing.assert_allclose(fused, unfused, rtol=1e-13)
    assert da.pipeline(f, x, fuse=True).kernels.kernels
    assert not da.pipeline(f, x, fuse=False).kernels.kernels


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_fuse_min_size_takes_a_non_negative_int(bad: Any) -> None:
    with pytest.raises(da.DualarrError, match="fuse_min_size takes a non-negative int"):
        da.config.update("fuse_min_size", bad)


@pytest.mark.parametrize("segment", [None, 40])
def test_a_long_program_frees_each_value_after_its_last_use(
    segment: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Generated code drops each temporary after its last reader (``del``; between the
    segments of a long body, the names no later segment reads), so a 60-step chain holds
    what the hand-written gradient holds: each step's output, not each step's
    temporaries (bytes counted, never timed)."""
    from dualarr.codegen import generate

    if segment is not None:
        monkeypatch.setattr(generate, "SEGMENT_STATEMENTS", segment)
    steps, n = 60, 2000
    rng = np.random.default_rng(0)
    x, idx = rng.standard_normal(n), rng.permutation(n)
    by_hand = _chain_gradient(steps)  # the benchmarks' chain C and its NumPy gradient
    with da.config.fusing(False):
        g = da.jit(da.grad(chain_function(steps, dnp.tanh, lambda y: y[::-1], dnp.sum)))
        np.testing.assert_allclose(g(x, idx), by_hand(x, idx)[0])
        held = peak_bytes(lambda: g(x, idx))
    hand_held = peak_bytes(lambda: by_hand(x, idx))
    assert held <= 1.25 * hand_held, (held, hand_held)

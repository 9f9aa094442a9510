"""Recycled result buffers (:class:`dualarr.codegen.buffers.SpareBuffer`).

Each kernel call site of a fused program keeps the array it last returned and writes
the next result into it once nothing else refers to it.  The properties: a result the
caller still holds (itself, or a view of it) is never overwritten, whatever is called
after it; a result the caller dropped is written into again (a steady loop allocates
no new kernel outputs); results equal the unfused program's on every call, from any
number of threads; and a primitive NumPy computes faster alone (``exp``, ``log1p`` …)
is its own kernel, run as NumPy's ufunc into the site's buffer.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs
from test_ad_properties import jittered

import dualarr as da
from dualarr.codegen.buffers import SpareBuffer
from dualarr.codegen.kernels import (
    SCALAR_IN_NUMPY,
    UNFUSED,
    Apply,
    Arg,
    CompiledKernel,
    Kernel,
    Literal,
    numpy_ufunc,
)
from dualarr.lang.terms import DType

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
F64 = DType.FLOAT64


pytestmark = pytest.mark.usefixtures("fused_small_arrays")  # fusion on for any size


def w5(x: Any) -> Any:
    return da.sum(da.sin(x) * da.exp(-x * x) + da.log1p(x * x))


def w5_gradient(x: np.ndarray) -> np.ndarray:
    e = np.exp(-x * x)
    gradient: np.ndarray = np.cos(x) * e - 2.0 * x * np.sin(x) * e + 2.0 * x / (1.0 + x * x)
    return gradient


X = np.linspace(-1.0, 1.0, 257)


# -- the site: held results are never taken, dropped ones are ------------------------


def test_a_site_hands_back_its_array_only_when_nothing_else_holds_it() -> None:
    site = SpareBuffer()
    assert site.take() is None
    first = site.keep(np.zeros(4))
    assert site.take() is None  # ``first`` still refers to it
    view = site.keep(first)[1:]
    del first
    assert site.take() is None  # a view's base is a reader too
    site.keep(view.base)
    del view
    again = site.take()
    assert again is not None and again.shape == (4,)
    assert site.take() is None  # taken: the site is empty until it keeps again


def test_a_site_keeps_only_arrays() -> None:
    site = SpareBuffer()
    assert site.keep(np.float64(1.5)) == 1.5
    assert site.take() is None


def compiled(expression: Any, params: tuple[str, ...], shape: tuple[int, ...]) -> CompiledKernel:
    kernel = Kernel("kernel1", params, (F64,) * len(params), expression, F64, shape)
    return CompiledKernel(kernel)


@pytest.mark.parametrize("ufunc_kernel", [False, True], ids=["numexpr", "ufunc"])
def test_a_kernel_writes_into_its_last_result_once_it_is_dropped(ufunc_kernel: bool) -> None:
    expression = (
        Apply("exp", (Arg(0),)) if ufunc_kernel
        else Apply("add", (Apply("mul", (Arg(0), Arg(0))), Literal(1.0)))
    )
    kernel = compiled(expression, ("x",), X.shape)
    want = np.exp(X) if ufunc_kernel else X * X + 1.0
    held = kernel(np, X)
    address = held.ctypes.data
    second = kernel(np, X)
    assert second.ctypes.data != address  # ``held`` is still the caller's
    np.testing.assert_array_equal(held, want)
    del held, second
    addresses = set()
    for _ in range(4):
        result = kernel(np, X)
        np.testing.assert_array_equal(result, want)
        addresses.add(result.ctypes.data)
        del result
    assert len(addresses) == 1


def test_primitives_numpy_runs_faster_are_kernels_of_one_ufunc() -> None:
    for op in sorted(UNFUSED - SCALAR_IN_NUMPY):
        plan = numpy_ufunc(Apply(op, tuple(Arg(k) for k in range(2 if op == "atan2" else 1))))
        assert (plan is None) == (op == "sigmoid"), op  # NumPy has no sigmoid ufunc
    ufunc, arguments = numpy_ufunc(Apply("atan2", (Arg(0), Literal(2.0)))) or (None, ())
    assert ufunc is np.atan2 and arguments == (0, 2.0)
    assert numpy_ufunc(Apply("sin", (Arg(0),))) != (np.sin, (0,))  # NumPy's is scalar
    assert numpy_ufunc(Apply("exp", (Apply("neg", (Arg(0),)),))) is None
    kernel = compiled(Apply("atan2", (Arg(0), Literal(2.0))), ("x",), X.shape)
    np.testing.assert_array_equal(kernel(np, X), np.atan2(X, 2.0))


def test_w5_calls_exp_log1p_sin_and_cos_as_kernels_of_their_own() -> None:
    fused = da.pipeline(w5, X, fuse=True)
    alone = [k for k in fused.kernels.kernels if isinstance(k.expression, Apply)
             and k.expression.op in UNFUSED]
    assert sorted(k.expression.op for k in alone) == [  # type: ignore[union-attr]
        "cos", "exp", "log1p", "sin"
    ]
    for kernel in alone:
        assert all(isinstance(a, Arg) for a in kernel.expression.args)  # type: ignore[union-attr]
    assert "xp.exp(" not in fused.python and "xp.log1p(" not in fused.python


# -- whole programs: held results survive, dropped ones are reused -------------------


def test_a_held_gradient_survives_later_calls_and_a_dropped_one_is_reused() -> None:
    gradient = da.jit(da.grad(w5))
    inputs = [X * s for s in (1.0, 0.5, -0.25, 2.0)]
    held = [gradient(x) for x in inputs]
    views = [gradient(x)[::3] for x in inputs]  # only a view survives
    for x, g, v in zip(inputs, held, views, strict=True):
        np.testing.assert_allclose(g, w5_gradient(x), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(v, w5_gradient(x)[::3], rtol=1e-12, atol=1e-12)
    assert len({g.ctypes.data for g in held}) == len(held)
    del held, views
    addresses = set()
    for x in inputs * 2:
        g = gradient(x)
        np.testing.assert_allclose(g, w5_gradient(x), rtol=1e-12, atol=1e-12)
        addresses.add(g.ctypes.data)
        del g
    assert len(addresses) == 1  # written into the same buffer every time


def test_a_result_passed_back_in_is_read_not_overwritten() -> None:
    step = da.jit(lambda y: da.sin(y) * y + 0.5 * y)
    y = X.copy()
    for _ in range(6):
        want = np.sin(y) * y + 0.5 * y
        y = step(y)
        np.testing.assert_array_equal(y, want)


def test_concurrent_calls_from_threads_each_get_their_own_result() -> None:
    gradient = da.jit(da.grad(w5))
    inputs = [X * (1.0 + k / 8.0) for k in range(8)]
    wants = [w5_gradient(x) for x in inputs]
    failures: list[str] = []

    def worker(k: int) -> None:
        for _ in range(40):
            got = gradient(inputs[k])
            if not np.allclose(got, wants[k], rtol=1e-12, atol=1e-12):
                failures.append(f"thread {k}")
                return

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(inputs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert failures == []


@settings(max_examples=100, deadline=None, suppress_health_check=SLOW_OK)
@given(programs(float_only=True), st.integers(0, 2**32 - 1), st.lists(st.booleans(), min_size=4,
       max_size=4))
def test_random_programs_keep_every_held_result_intact(
    gp: GeneratedProgram, seed: int, keep: list[bool]
) -> None:
    rng = np.random.default_rng(seed)
    f = gp.function()
    fused = da.pipeline(f, *gp.arrays, fuse=True)
    unfused = da.pipeline(f, *gp.arrays, fuse=False)
    held: list[tuple[Any, list[np.ndarray]]] = []
    for hold in keep:
        arrays = jittered(gp, rng)
        with np.errstate(all="ignore"):
            value = np.asarray(unfused.source(*arrays))
        assume(np.all(np.isfinite(value)) and np.max(np.abs(value), initial=0.0) < 1e6)
        got = fused(*arrays)
        want = unfused(*arrays)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-9)
        for g, w in zip(got[1], want[1], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)
        if hold:
            held.append((got, [np.array(g, copy=True) for g in (got[0], *got[1])]))
        del got
    for got, snapshot in held:
        for g, s in zip((got[0], *got[1]), snapshot, strict=True):
            np.testing.assert_array_equal(g, s)


@pytest.mark.parametrize("jitted", [True, False], ids=["jit", "grad"])
def test_copies_of_inputs_go_to_recycled_buffers_and_survive_while_held(jitted: bool) -> None:
    """``grad(sum(a * b))`` is ``(b, a)``: results that would alias an input are copies,
    written into the output's buffer once the caller has dropped the previous one."""
    gradient = da.grad(lambda a, b: da.sum(a * b), argnums=(0, 1))
    if jitted:
        gradient = da.jit(gradient)
    pairs = [(X * s, X + s) for s in (1.0, 2.0, 3.0)]
    held = [gradient(a, b) for a, b in pairs]
    for (a, b), (ga, gb) in zip(pairs, held, strict=True):
        np.testing.assert_array_equal(ga, b)
        np.testing.assert_array_equal(gb, a)
        for g in (ga, gb):
            assert not np.shares_memory(g, a) and not np.shares_memory(g, b)
    del held
    addresses = set()
    y = X
    for a, b in pairs * 2:
        ga, gb = gradient(a, b)
        np.testing.assert_array_equal(ga, b)
        np.testing.assert_array_equal(gb, a)
        addresses.add(ga.ctypes.data)
        del ga, gb
        previous = y.copy()
        y = gradient(y, b)[1]  # ``y = g(y)``: a copy of the input, never written into it
        np.testing.assert_array_equal(y, previous)
    assert len(addresses) == 1

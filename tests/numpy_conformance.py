"""The conformance check every ``dualarr.numpy`` function passes (issue: NumPy front end).

``conforms(dnp_f, np_f, args)`` checks, for one call on concrete arguments:

1. values: ``dnp_f(*args)`` outside a trace, and traced (``da.trace``) then evaluated,
   equal NumPy's ``np_f(*args)`` with its exact shape and dtype;
2. gradients: ``da.grad`` of ``sum(dnp_f(*args) * w)`` with respect to every float array
   argument, compiled and interpreted, equal central finite differences of NumPy's;
3. the jvp/vjp adjoint identity ``<jvp(t), c> == <t, vjp(c)>``;
4. ``da.vmap`` over a batch of three perturbed arguments equals a Python loop of NumPy.

Points where the function is not differentiable (``abs`` at 0, ties in ``sort``) are
the caller's to avoid: draw data in general position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import dualarr as da

Function = Callable[..., Any]


def _is_float_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _float_positions(args: Sequence[Any]) -> list[int]:
    return [k for k, a in enumerate(args) if _is_float_array(a)]


def _tolerance(args: Sequence[Any], result: Any = None) -> tuple[float, float]:
    """Loose when a float32 array is involved: an argument, or NumPy's result (a float64
    argument converted to float32)."""
    single = any(_is_float_array(a) and a.dtype == np.float32 for a in [*args, result])
    return (2e-4, 2e-4) if single else (1e-7, 1e-9)


def check_values(dnp_f: Function, np_f: Function, args: Sequence[Any]) -> None:
    """``dnp_f`` equals ``np_f`` eagerly and traced, with NumPy's shape and dtype."""
    expected = np.asarray(np_f(*args))
    rtol, atol = _tolerance(args, expected)
    eager = np.asarray(dnp_f(*args))
    positions = _float_positions(args) or [
        k for k, a in enumerate(args) if isinstance(a, np.ndarray)
    ]

    def traced(*arrays: Any) -> Any:
        full = list(args)
        for k, a in zip(positions, arrays, strict=True):
            full[k] = a
        return dnp_f(*full)

    arrays = [args[k] for k in positions]
    through_trace = np.asarray(da.trace(traced, *arrays)(*arrays)) if arrays else eager
    for got in (eager, through_trace):
        assert got.shape == expected.shape, (got.shape, expected.shape)
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def _weights(shape: tuple[int, ...], dtype: Any, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(dtype)


def _finite_differences(
    np_f: Function, args: Sequence[Any], position: int, w: np.ndarray
) -> np.ndarray:
    """Central differences of ``sum(np_f(*args) * w)`` in float64."""
    x = np.asarray(args[position], dtype=np.float64)
    grad = np.zeros_like(x)
    h = 1e-6 * np.maximum(1.0, np.abs(x))
    for index in np.ndindex(x.shape):
        values = []
        for sign in (1.0, -1.0):
            moved = x.copy()
            moved[index] += sign * h[index]
            full = [
                np.asarray(a, dtype=np.float64) if _is_float_array(a) else a for a in args
            ]
            full[position] = moved
            values.append(float(np.sum(np.asarray(np_f(*full), dtype=np.float64) * w)))
        grad[index] = (values[0] - values[1]) / (2 * h[index])
    return grad


def check_gradients(dnp_f: Function, np_f: Function, args: Sequence[Any]) -> None:
    """Compiled and interpreted gradients equal finite differences of NumPy's function,
    and the jvp/vjp adjoint identity holds."""
    positions = _float_positions(args)
    expected_out = np.asarray(np_f(*args))
    if not positions or expected_out.dtype.kind != "f" or expected_out.size == 0:
        return
    w = _weights(expected_out.shape, expected_out.dtype)
    single = expected_out.dtype == np.float32

    def loss(*arrays: Any) -> Any:
        full = list(args)
        for k, a in zip(positions, arrays, strict=True):
            full[k] = a
        return da.sum(dnp_f(*full) * w)

    arrays = [args[k] for k in positions]
    argnums = tuple(range(len(positions)))
    rtol, atol = (5e-3, 5e-3) if single else (1e-5, 1e-6)
    for mode in ("compiled", "interpret"):
        grads = da.grad(loss, argnums=argnums, mode=mode)(*arrays)
        for k, g in zip(positions, grads, strict=True):
            fd = _finite_differences(np_f, args, k, w.astype(np.float64))
            assert np.asarray(g).shape == np.shape(args[k])
            np.testing.assert_allclose(g, fd, rtol=rtol, atol=atol, err_msg=f"{mode}, arg {k}")

    def output(*xs: Any) -> Any:
        full = list(args)
        for k, a in zip(positions, xs, strict=True):
            full[k] = a
        return dnp_f(*full)

    rng = np.random.default_rng(3)
    tangents = [rng.standard_normal(np.shape(a)).astype(a.dtype) for a in arrays]
    _, jvp_out = da.jvp(output, arrays, tangents)
    _, pullback = da.vjp(output, *arrays)
    cotangent = rng.standard_normal(expected_out.shape).astype(expected_out.dtype)
    vjp_out = pullback(cotangent)
    left = float(np.sum(np.asarray(jvp_out, dtype=np.float64) * cotangent))
    right = sum(
        float(np.sum(np.asarray(t, dtype=np.float64) * np.asarray(c, dtype=np.float64)))
        for t, c in zip(tangents, vjp_out, strict=True)
    )
    np.testing.assert_allclose(left, right, rtol=rtol * 10, atol=atol * 10)


def check_vmap(dnp_f: Function, np_f: Function, args: Sequence[Any]) -> None:
    """``da.vmap`` over three perturbed copies of the float arguments equals a loop."""
    positions = _float_positions(args)
    if not positions:
        return
    batches = [
        np.stack([args[k] + np.asarray(0.01 * j, args[k].dtype) for j in range(3)])
        for k in positions
    ]

    def one(*xs: Any) -> Any:
        full = list(args)
        for k, a in zip(positions, xs, strict=True):
            full[k] = a
        return dnp_f(*full)

    got = np.asarray(da.vmap(one)(*batches))
    expected = []
    for j in range(3):
        full = list(args)
        for k, b in zip(positions, batches, strict=True):
            full[k] = b[j]
        expected.append(np.asarray(np_f(*full)))
    rtol, atol = _tolerance(args, expected[0])
    np.testing.assert_allclose(got, np.stack(expected), rtol=rtol, atol=atol)


def conforms(
    dnp_f: Function,
    np_f: Function,
    args: Sequence[Any],
    *,
    gradients: bool = True,
    vmap: bool = True,
) -> None:
    """Every check of the module docstring (``gradients``/``vmap`` off for a function
    with no float output or one whose batch rule differs, e.g. shape-dependent)."""
    check_values(dnp_f, np_f, args)
    if gradients:
        check_gradients(dnp_f, np_f, args)
    if vmap:
        check_vmap(dnp_f, np_f, args)

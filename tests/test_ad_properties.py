"""Dual-arrays AD on generated programs: gradients against central finite differences,
jvp against finite differences, and the adjoint identity <c, jvp(t)> = <vjp(c), t>."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs

import dualarr as da
from dualarr.lang.terms import DType

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def jittered(gp: GeneratedProgram, rng: np.random.Generator) -> list[np.ndarray]:
    """The drawn inputs moved to a random point (away from ties and kinks)."""
    return [
        a + rng.uniform(-0.05, 0.05, a.shape) if v.dtype is DType.FLOAT64 else a
        for v, a in zip(gp.inputs, gp.arrays, strict=True)
    ]


def float_positions(gp: GeneratedProgram) -> list[int]:
    return [k for k, v in enumerate(gp.inputs) if v.dtype is DType.FLOAT64]


def directional_fd(
    program: da.Program, arrays: list[np.ndarray], tangent: dict[int, np.ndarray],
    c: np.ndarray, h: float,
) -> float:
    def at(sign: float) -> float:
        moved = [a + sign * h * tangent[k] if k in tangent else a for k, a in enumerate(arrays)]
        return float(np.sum(c * program(*moved)))

    return (at(1.0) - at(-1.0)) / (2 * h)


def close(a: float, b: float, scale: float, rtol: float) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b), scale)


@settings(max_examples=500, suppress_health_check=SLOW_OK)
@given(programs(float_only=True), st.integers(0, 2**32 - 1))
def test_gradients_agree_with_finite_differences(gp: GeneratedProgram, seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrays = jittered(gp, rng)
    f = gp.function()
    program = da.trace(f, *arrays)
    value = program(*arrays)
    assume(np.all(np.isfinite(value)) and np.max(np.abs(value), initial=0.0) < 1e6)
    c = rng.normal(size=value.shape)
    positions = float_positions(gp)
    tangent = {k: rng.normal(size=arrays[k].shape) for k in positions}

    out, pullback = da.vjp(f, *arrays, mode="interpret")
    np.testing.assert_allclose(out, value, rtol=1e-9, atol=1e-9)
    cotangents = pullback(c)
    reverse = sum(float(np.sum(cotangents[k] * tangent[k])) for k in positions)

    _, tangent_out = da.jvp(f, arrays, [tangent.get(k, np.zeros(a.shape))
                                        for k, a in enumerate(arrays)])
    forward = float(np.sum(c * tangent_out))
    scale = float(np.sum(np.abs(c)))
    # a derivative that is not finite (atan2 at (0, 0), say) is a point where f has none
    assume(np.isfinite(forward) and np.isfinite(reverse))
    # the adjoint identity holds exactly (up to rounding), kinks or not
    assert close(forward, reverse, scale, 1e-8), (forward, reverse)

    fd = directional_fd(program, arrays, tangent, c, 1e-6)
    fd_half = directional_fd(program, arrays, tangent, c, 5e-7)
    assume(close(fd, fd_half, scale, 1e-5))  # skip the rare point next to a kink
    assert close(reverse, fd, scale, 1e-4), (reverse, fd)  # the gradient (vjp)
    assert close(forward, fd, scale, 1e-4), (forward, fd)  # the jvp


@settings(max_examples=100, suppress_health_check=SLOW_OK)
@given(programs(float_only=True, output_shapes=st.just(())), st.integers(0, 2**32 - 1))
def test_grad_of_scalar_programs_matches_vjp(gp: GeneratedProgram, seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrays = jittered(gp, rng)
    positions = float_positions(gp)
    f = gp.function()
    value, grads = da.value_and_grad(f, tuple(positions))(*arrays)
    out, pullback = da.vjp(f, *arrays, mode="interpret")
    cotangents: tuple[Any, ...] = pullback(np.ones(()))
    np.testing.assert_allclose(value, out, rtol=1e-12, equal_nan=True)
    for k, g in zip(positions, grads, strict=True):
        np.testing.assert_allclose(g, cotangents[k], rtol=1e-12, atol=1e-12, equal_nan=True)

"""Gradients of programs written in plain NumPy style through ``dualarr.numpy``.

Two programs a NumPy user writes, differentiated by dualarr's compiled gradient
(``da.jit(da.grad(f))``, the cached path, and ``da.grad(f)``, traced per call), against
the gradient written by hand in NumPy and against ``jax.jit(jax.grad(f))`` with
``jax.numpy`` when JAX is installed (float64):

- ``attention``: layer norm, then one head of softmax attention, ``sum((a @ v) ** 2)``
  with respect to the input, the three projections and the norm's scale;
- ``conv1d``: a 5-tap convolution written with ``pad(mode="edge")`` and slices,
  ``sum(tanh(y) ** 2)`` with respect to the signal and the taps;
- ``linalg``: a batched solve and a log-determinant, ``sum(solve(a, b) ** 2) +
  sum(slogdet(a).logabsdet)`` over a stack of matrices ``a`` (size × 16 × 16) and
  right-hand sides ``b`` (size × 16 × 4), with respect to both.

Every gradient is checked against the hand-written one first.  Reports the median
milliseconds per gradient and the ratios to hand-written NumPy.  Usage:
``python benchmarks/bench_numpy.py [--quick] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import statistics
import time
from collections.abc import Callable
from datetime import date
from typing import Any

import numpy as np

import dualarr as da
import dualarr.numpy as dnp

Arrays = tuple[np.ndarray, ...]
EPS = 1e-5


def attention(xp: Any) -> Callable[..., Any]:
    """Layer norm + one attention head over the namespace ``xp`` (dnp or jax.numpy)."""

    def f(x: Any, wq: Any, wk: Any, wv: Any, gamma: Any) -> Any:
        mu = xp.mean(x, axis=-1, keepdims=True)
        h = (x - mu) / xp.sqrt(xp.var(x, axis=-1, keepdims=True) + EPS) * gamma
        q, k, v = h @ wq, h @ wk, h @ wv
        s = q @ xp.transpose(k) / np.sqrt(wq.shape[1])
        e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
        a = e / xp.sum(e, axis=-1, keepdims=True)
        return xp.sum((a @ v) ** 2)

    return f


def attention_numpy_gradient(x: Any, wq: Any, wk: Any, wv: Any, gamma: Any) -> Arrays:
    mu = x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + EPS)
    xhat = (x - mu) / sigma
    h = xhat * gamma
    q, k, v = h @ wq, h @ wk, h @ wv
    scale = 1.0 / np.sqrt(wq.shape[1])
    s = q @ k.T * scale
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    a = e / e.sum(axis=-1, keepdims=True)
    o = a @ v
    do = 2.0 * o
    d_a = do @ v.T
    dv = a.T @ do
    ds = a * (d_a - np.sum(d_a * a, axis=-1, keepdims=True)) * scale
    dq, dk = ds @ k, ds.T @ q
    dh = dq @ wq.T + dk @ wk.T + dv @ wv.T
    dgamma = np.sum(dh * xhat, axis=0)
    dxhat = dh * gamma
    dx = (dxhat - dxhat.mean(axis=-1, keepdims=True)
          - xhat * np.mean(dxhat * xhat, axis=-1, keepdims=True)) / sigma
    return dx, h.T @ dq, h.T @ dk, h.T @ dv, dgamma


def conv1d(xp: Any) -> Callable[..., Any]:
    """A 5-tap convolution with edge padding and slices, over ``xp``."""

    def f(x: Any, w: Any) -> Any:
        n = x.shape[0]
        p = xp.pad(x, 2, mode="edge")
        y = w[0] * p[0:n] + w[1] * p[1 : n + 1] + w[2] * p[2 : n + 2]
        y = y + w[3] * p[3 : n + 3] + w[4] * p[4 : n + 4]
        return xp.sum(xp.tanh(y) ** 2)

    return f


def conv1d_numpy_gradient(x: Any, w: Any) -> Arrays:
    n = x.shape[0]
    p = np.pad(x, 2, mode="edge")
    y = sum(w[j] * p[j : j + n] for j in range(5))
    t = np.tanh(y)
    g = 2.0 * t * (1.0 - t * t)
    dw = np.array([np.sum(g * p[j : j + n]) for j in range(5)])
    dp = np.zeros_like(p)
    for j in range(5):
        dp[j : j + n] += w[j] * g
    dx = dp[2:-2].copy()
    dx[0] += dp[0] + dp[1]
    dx[-1] += dp[-1] + dp[-2]
    return dx, dw


def solve_logdet(xp: Any) -> Callable[..., Any]:
    """A batched solve and log-determinant over ``xp`` (dnp or jax.numpy)."""

    def f(a: Any, b: Any) -> Any:
        _, logabsdet = xp.linalg.slogdet(a)
        return xp.sum(xp.linalg.solve(a, b) ** 2) + xp.sum(logabsdet)

    return f


def solve_logdet_numpy_gradient(a: Any, b: Any) -> Arrays:
    """``X = A⁻¹B``: ``∂/∂B = A⁻ᵀ 2X``, ``∂/∂A = -(A⁻ᵀ 2X) Xᵀ + A⁻ᵀ`` (Giles 2008)."""
    x = np.linalg.solve(a, b)
    inverse_t = np.swapaxes(np.linalg.inv(a), -1, -2)
    gb = inverse_t @ (2.0 * x)
    return -gb @ np.swapaxes(x, -1, -2) + inverse_t, gb


LINALG_N, LINALG_K = 16, 4


def inputs(name: str, size: int) -> Arrays:
    rng = np.random.default_rng(0)
    if name == "linalg":
        n = LINALG_N
        a = rng.standard_normal((size, n, n)) + n * np.eye(n)  # well conditioned
        return a, rng.standard_normal((size, n, LINALG_K))
    if name == "attention":
        t, d = size, 32
        return (
            rng.standard_normal((t, d)),
            *(rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)),
            rng.uniform(0.5, 1.5, d),
        )
    return rng.standard_normal(size), rng.standard_normal(5) / 5


PROGRAMS: dict[str, tuple[Callable[[Any], Callable[..., Any]], Callable[..., Arrays]]] = {
    "attention": (attention, attention_numpy_gradient),
    "conv1d": (conv1d, conv1d_numpy_gradient),
    "linalg": (solve_logdet, solve_logdet_numpy_gradient),
}


def median_ms(fn: Callable[..., Any], xs: Arrays, repeat: int) -> float:
    fn(*xs)  # warm: compiled, cached
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*xs)
        runs.append(time.perf_counter() - start)
    return 1e3 * statistics.median(runs)


def jax_gradient(name: str) -> Callable[..., Any] | None:
    try:
        jax: Any = importlib.import_module("jax")
        jnp: Any = importlib.import_module("jax.numpy")
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    f = PROGRAMS[name][0](jnp)
    argnums = tuple(range(5 if name == "attention" else 2))
    grad = jax.jit(jax.grad(f, argnums=argnums))

    def run(*args: Any) -> Any:
        return jax.block_until_ready(grad(*args))

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    sizes = {"attention": [16] if args.quick else [64, 256], "conv1d": [100] if args.quick
             else [10**3, 10**5], "linalg": [4] if args.quick else [16, 1024]}
    print(f"# bench_numpy.py{' --quick' if args.quick else ''}  ({date.today()}, "
          f"{platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}); median ms per gradient, float64")
    header = f"{'program':10} {'size':>7} {'numpy':>9} {'da.jit':>9} {'da.grad':>9} {'jax.jit':>9}"
    print(header + f" {'jit/np':>7} {'grad/np':>7} {'jax/np':>7}")
    for name, (program, by_hand) in PROGRAMS.items():
        f = program(dnp)
        argnums = tuple(range(5 if name == "attention" else 2))
        jitted = da.jit(da.grad(f, argnums=argnums))
        per_call = da.grad(f, argnums=argnums)
        peer = jax_gradient(name)
        for size in sizes[name]:
            xs = inputs(name, size)
            expected = by_hand(*xs)
            for got in (jitted(*xs), per_call(*xs), *([peer(*xs)] if peer else [])):
                for g, e in zip(got, expected, strict=True):
                    np.testing.assert_allclose(np.asarray(g), e, rtol=1e-8, atol=1e-10)
            repeat = max(3, args.repeat // (4 if size > 10**4 else 1))
            numpy_ms = median_ms(by_hand, xs, repeat)
            jit_ms = median_ms(jitted, xs, repeat)
            grad_ms = median_ms(per_call, xs, repeat)
            jax_ms = median_ms(peer, xs, repeat) if peer else float("nan")
            print(f"{name:10} {size:>7} {numpy_ms:9.3f} {jit_ms:9.3f} {grad_ms:9.3f} "
                  f"{jax_ms:9.3f} {jit_ms / numpy_ms:7.2f} {grad_ms / numpy_ms:7.2f} "
                  f"{jax_ms / numpy_ms:7.2f}")
    print("# numpy: the gradient written by hand; da.jit: da.jit(da.grad(f)), cached; "
          "da.grad: traced per call, compiled per structure; jax.jit: jax.jit(jax.grad(f))"
          + ("" if jax_gradient("conv1d") else " (JAX not installed: nan)"))
    print("# every gradient agreed with the hand-written one (rtol 1e-8)")


if __name__ == "__main__":
    main()

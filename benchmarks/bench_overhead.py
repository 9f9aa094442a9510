"""Per-call overhead of a gradient at small size: W1 ``sum(x * y)`` at n = 10^3.

Measures, in one process and one run:

- ``da.grad(f)(x, y)``: the default path, which reads the function's captured values at
  call time (it traces on every call and reuses the compiled program by the traced
  term's structure);
- ``da.grad(f)(x, y)`` with a captured array (``f`` reads ``w``) changed between calls;
- ``da.jit(da.grad(f))(x, y)``: the cached path (traced once per input types, captured
  values baked in, as ``jax.jit``);
- a hand-written NumPy gradient (``(y, x)``);
- ``jax.grad`` (eager) and ``jax.jit(jax.grad)`` where jax is installed.

Each figure is the median of several repeats of a timed loop (``timeit``), in µs per
call, with its ratio to the hand-written NumPy gradient and to ``jax.grad``.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import dualarr as da


def _per_call(fn: Callable[[], Any], number: int, repeat: int) -> float:
    fn()  # warm: compile, caches
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return float(np.median(times)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few repeats")
    args = parser.parse_args()
    n, number, repeat = args.n, args.number, args.repeat
    if args.quick:
        number, repeat = 5, 2
    rng = np.random.default_rng(0)
    x, y, w = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)

    def f(a: Any, b: Any) -> Any:
        return da.sum(a * b)

    def g(a: Any, b: Any) -> Any:
        return da.sum(a * b * w)

    rows: list[tuple[str, float]] = []
    grad_f = da.grad(f, argnums=(0, 1))
    rows.append(("da.grad(f)(x, y)", _per_call(lambda: grad_f(x, y), number, repeat)))
    grad_g = da.grad(g, argnums=(0, 1))

    def mutate_and_call() -> Any:
        w[0] += 1.0
        return grad_g(x, y)

    changed = _per_call(mutate_and_call, number, repeat)
    rows.append(("da.grad, captured w changed per call", changed))
    np.testing.assert_allclose(grad_g(x, y)[0], y * w)  # call-time values
    np.testing.assert_allclose(grad_f(x, y)[0], y)
    jit = getattr(da, "jit", None)
    if jit is not None:
        jitted = jit(da.grad(f, argnums=(0, 1)))
        np.testing.assert_allclose(jitted(x, y)[1], x)
        rows.append(("da.jit(da.grad(f))(x, y)", _per_call(lambda: jitted(x, y), number, repeat)))
    rows.append(("NumPy by hand", _per_call(lambda: (y.copy(), x.copy()), number, repeat)))
    try:
        jax = importlib.import_module("jax")
        jnp = importlib.import_module("jax.numpy")
        jax.config.update("jax_enable_x64", True)
        jf = jax.grad(lambda a, b: jnp.sum(a * b), argnums=(0, 1))
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        eager = lambda: jax.block_until_ready(jf(jx, jy))  # noqa: E731
        rows.append(("jax.grad (eager)", _per_call(eager, max(number // 10, 2), repeat)))
        jj = jax.jit(jf)
        compiled = lambda: jax.block_until_ready(jj(jx, jy))  # noqa: E731
        rows.append(("jax.jit(jax.grad)", _per_call(compiled, number, repeat)))
    except ModuleNotFoundError:
        print("jax: not installed")
    table = dict(rows)
    numpy_us = table["NumPy by hand"]
    jax_us = table.get("jax.grad (eager)")
    print(f"W1 sum(x * y), n = {n}; {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, NumPy {np.__version__}")
    print(f"{'path':40s} {'µs/call':>10s} {'/ NumPy':>10s} {'/ jax.grad':>11s}")
    for name, us in rows:
        vs_jax = f"{us / jax_us:11.3f}" if jax_us else f"{'-':>11s}"
        print(f"{name:40s} {us:10.1f} {us / numpy_us:10.1f} {vs_jax}")
    if "jax.jit(jax.grad)" in table and "da.jit(da.grad(f))(x, y)" in table:
        ratio = table["da.jit(da.grad(f))(x, y)"] / table["jax.jit(jax.grad)"]
        print(f"da.jit / jax.jit: {ratio:.2f}")


if __name__ == "__main__":
    main()

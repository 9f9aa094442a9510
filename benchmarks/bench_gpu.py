"""Gradient time on a GPU: dualarr on CuPy (fused and unfused) against jax.jit on the GPU.

One command on a machine with a CUDA device and the ``gpu`` extra (``pip install -e
".[gpu]"``): ``python benchmarks/bench_gpu.py``.  Workloads as in ``bench_gradients.py``
at their large sizes (W1 ``sum(x*y)``, W2 Fig. 18, W3 the 784-256-10 MLP, W5 the
transcendental sum, W6 the random gather), the chain C (k = 100 steps of ``y =
tanh(y*y[::-1] + 0.5*y[idx])``) at n = 10^3 and 10^6, and S, the same chain as one loop
(``da.scan``; ``jax.lax.scan`` for jax).  Columns, in ms per gradient:

- ``numpy jit``: ``da.jit(da.grad(f))`` on NumPy arrays (the host);
- ``cupy grad``: ``da.grad(f)`` on CuPy arrays (traced on every call);
- ``cupy jit``: ``da.jit(da.grad(f))`` on CuPy arrays, the fused program
  (``ElementwiseKernel`` kernels);
- ``cupy unfused``: the same with ``da.config.fusing(False)``: one CuPy call per operation
  ("n/a" where this dualarr has no ``fuse`` setting);
- ``jax.jit``: ``jax.jit(jax.grad(f))`` on the GPU, where jax sees one ("-" otherwise);

then the ratios ``cupy jit / jax.jit`` and ``cupy jit / cupy unfused``.  Each device time is
the median of ``--repeat`` samples of ``--number`` gradients, synchronising the device
after each sample (CuPy ``Device.synchronize``; jax ``block_until_ready``); the host
column grows its samples to at least 0.05 s instead (as ``bench_gradients.py`` does).
Every dualarr gradient is checked against the hand-written NumPy gradient.  Without CuPy
or without a CUDA device it prints why and exits 0, so CI on a CPU machine can run it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import importlib.util
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_gradients import (
    ARGNUMS,
    FULL,
    Case,
    dualarr_function,
    inputs,
    median_time,
    numpy_gradient,
    numpy_like_function,
)

import dualarr as da

WORKLOADS = ("W1", "W2", "W3", "W5", "W6")
CHAIN_STEPS = 100
CHAIN_SIZES = (10**3, 10**6)
HOST_MIN_SAMPLE = 0.05


def median_ms(
    step: Callable[[], Any], sync: Callable[[], None], repeat: int, number: int
) -> float:
    step()
    sync()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            step()
        sync()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples) * 1e3


def cases() -> list[Case]:
    largest: dict[str, Case] = {}
    for case in FULL:
        if case.workload in WORKLOADS:
            largest[case.workload] = case
    chains = [Case(w, (n, CHAIN_STEPS)) for w in ("C", "S") for n in CHAIN_SIZES]
    return [largest[w] for w in WORKLOADS] + chains


def fuse_setting_available() -> bool:
    return "fuse" in {field.name for field in dataclasses.fields(da.config)}


def check(case: Case, what: str, got: Any, want: tuple[np.ndarray, ...],
          as_numpy: Callable[[Any], np.ndarray]) -> None:
    items = got if isinstance(got, tuple | list) else (got,)
    for k, (g, w) in enumerate(zip(items, want, strict=True)):
        if not np.allclose(as_numpy(g), w):
            raise SystemExit(f"bench_gpu: {case.workload} {case.label} {what}: gradient {k} "
                             "differs from the NumPy gradient")


def checked_median_ms(
    case: Case, what: str, gradient: Callable[..., Any], device_args: tuple[Any, ...],
    want: tuple[np.ndarray, ...], cupy: Any, sync: Callable[[], None], repeat: int,
    number: int,
) -> float:
    """``gradient`` on the device: checked against ``want``, then timed (ms)."""
    check(case, what, gradient(*device_args), want, cupy.asnumpy)
    return median_ms(functools.partial(gradient, *device_args), sync, repeat, number)


def _ms(value: float | None, width: int = 13) -> str:
    return f"{'-' if value is None else format(value, '.3f'):>{width}}"


def _ratio(top: float | None, bottom: float | None, width: int = 13) -> str:
    return f"{'-' if top is None or bottom is None else format(top / bottom, '.2f'):>{width}}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=10)
    args = parser.parse_args()
    if importlib.util.find_spec("cupy") is None:
        print("# bench_gpu.py: CuPy is not installed (pip install -e '.[gpu]'); nothing to run")
        return
    import cupy

    if not cupy.is_available():
        print("# bench_gpu.py: CuPy is installed but no CUDA device is available; "
              "nothing to run")
        return
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"# bench_gpu.py  device: {device}; CuPy {cupy.__version__}; numpy {np.__version__}; "
          f"dualarr {da.__version__}")
    jax_gpu: Any = None
    if importlib.util.find_spec("jax") is not None:
        jax: Any = importlib.import_module("jax")  # optional: the ``bench`` extra
        jax.config.update("jax_enable_x64", True)
        if any(d.platform == "gpu" for d in jax.devices()):
            jax_gpu = jax
    has_fuse = fuse_setting_available()
    print(f"# median of {args.repeat} samples of {args.number} gradients on the device "
          f"(host: samples of >= {HOST_MIN_SAMPLE} s), ms; float64; jax on the GPU: "
          f"{'yes' if jax_gpu is not None else 'no'}; fuse setting: "
          f"{'yes' if has_fuse else 'not available'}")
    columns = ("numpy jit", "cupy grad", "cupy jit", "cupy unfused", "jax.jit",
               "jit/jax", "jit/unfused")
    print(f"{'workload':<9}{'size':<17}" + "".join(f"{c:>13}" for c in columns))
    sync = cupy.cuda.Device().synchronize
    for case in cases():
        host_args = inputs(case)
        device_args = tuple(cupy.asarray(a) for a in host_args)
        argnums = ARGNUMS[case.workload]
        want = numpy_gradient(case)(*host_args)

        on_host = da.jit(da.grad(dualarr_function(case), argnums=argnums))
        check(case, "numpy jit", on_host(*host_args), want, np.asarray)
        host_ms = median_time(functools.partial(on_host, *host_args), args.repeat,
                              HOST_MIN_SAMPLE)[0] * 1e3

        timing = (device_args, want, cupy, sync, args.repeat, args.number)
        grad_ms = checked_median_ms(
            case, "cupy grad", da.grad(dualarr_function(case), argnums=argnums), *timing
        )
        jit_ms = checked_median_ms(
            case, "cupy jit", da.jit(da.grad(dualarr_function(case), argnums=argnums)),
            *timing,
        )
        unfused_ms: float | None = None
        if has_fuse:
            with da.config.fusing(False):  # every call of this jitted gradient, the first too
                unfused_ms = checked_median_ms(
                    case, "cupy unfused",
                    da.jit(da.grad(dualarr_function(case), argnums=argnums)), *timing,
                )
        jax_ms = None
        if jax_gpu is not None:
            jax_ms = _jax_time(jax_gpu, case, host_args, args.repeat, args.number)
        unfused_cell = _ms(unfused_ms) if has_fuse else f"{'n/a':>13}"
        print(f"{case.workload:<9}{case.label:<17}{_ms(host_ms)}{_ms(grad_ms)}{_ms(jit_ms)}"
              f"{unfused_cell}{_ms(jax_ms)}{_ratio(jit_ms, jax_ms)}"
              f"{_ratio(jit_ms, unfused_ms)}", flush=True)


def _jax_time(jax: Any, case: Case, host_args: tuple[np.ndarray, ...], repeat: int,
              number: int) -> float:
    f = numpy_like_function(case, jax.numpy, jax.scipy.special.logsumexp, jax.lax.scan)
    gradient = jax.jit(jax.grad(f, argnums=ARGNUMS[case.workload]))
    device_args = tuple(jax.device_put(a) for a in host_args)
    return median_ms(
        lambda: jax.block_until_ready(gradient(*device_args)), lambda: None, repeat, number
    )


if __name__ == "__main__":
    main()

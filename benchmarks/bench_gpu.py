"""Gradient time on a GPU: dualarr on CuPy against dualarr on NumPy and jax.jit on GPU.

One command on a machine with a CUDA device and the ``gpu`` extra (``pip install -e
".[gpu]"``): ``python benchmarks/bench_gpu.py``.  Workloads as in ``bench_gradients.py``
(W1 ``sum(x*y)``, W2 Fig. 18, W3 the 784-256-10 MLP, W5 the transcendental sum, W6 the
random gather) at their large sizes.  Each time is the median of ``--repeat`` samples of
``--number`` gradients, synchronising the device after each sample (CuPy
``Device.synchronize``; jax ``block_until_ready``).  Every dualarr CuPy gradient is
checked against the NumPy one.  Without CuPy or without a CUDA device it prints why and
exits 0, so CI on a CPU machine can run it.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_gradients import ARGNUMS, FULL, Case, dualarr_function, inputs

import dualarr as da

WORKLOADS = ("W1", "W2", "W3", "W5", "W6")


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


def _no_sync() -> None:
    pass


def cases() -> list[Case]:
    largest: dict[str, Case] = {}
    for case in FULL:
        if case.workload in WORKLOADS:
            largest[case.workload] = case
    return [largest[w] for w in WORKLOADS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
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
    print(f"# bench_gpu.py  device: {device}; CuPy {cupy.__version__}; numpy {np.__version__}")
    jax_gpu: Any = None
    if importlib.util.find_spec("jax") is not None:
        jax: Any = importlib.import_module("jax")  # optional: the ``bench`` extra
        if any(d.platform == "gpu" for d in jax.devices()):
            jax_gpu = jax
    print(f"# median of {args.repeat} samples of {args.number} gradients, ms")
    print(f"{'workload':<9}{'size':<17}{'numpy':>10}{'cupy':>10}{'ratio':>8}{'jax.jit':>10}")
    sync = cupy.cuda.Device().synchronize
    for case in cases():
        host_args = inputs(case)
        device_args = tuple(cupy.asarray(a) for a in host_args)
        argnums = ARGNUMS[case.workload]
        on_host = da.grad(dualarr_function(case), argnums=argnums)
        on_device = da.grad(dualarr_function(case), argnums=argnums)
        want = on_host(*host_args)
        got = on_device(*device_args)
        for g, w in zip(got, want, strict=True):
            if not np.allclose(cupy.asnumpy(g), w, rtol=1e-9, atol=1e-12):
                raise SystemExit(f"bench_gpu: {case.workload} gradients differ on the GPU")
        host_ms = median_ms(functools.partial(on_host, *host_args), _no_sync, args.repeat,
                            args.number)
        device_ms = median_ms(functools.partial(on_device, *device_args), sync, args.repeat,
                              args.number)
        jax_ms = float("nan")
        if jax_gpu is not None:
            jax_ms = _jax_time(jax_gpu, case, host_args, args.repeat, args.number)
        print(f"{case.workload:<9}{case.label:<17}{host_ms:>10.3f}{device_ms:>10.3f}"
              f"{device_ms / host_ms:>8.2f}{jax_ms:>10.3f}", flush=True)


def _jax_time(jax: Any, case: Case, host_args: tuple[np.ndarray, ...], repeat: int,
              number: int) -> float:
    from bench_gradients import numpy_like_function

    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    f = numpy_like_function(case, jnp, jax.scipy.special.logsumexp)
    gradient = jax.jit(jax.grad(f, argnums=ARGNUMS[case.workload]))
    device_args = tuple(jax.device_put(a) for a in host_args)
    return median_ms(
        lambda: jax.block_until_ready(gradient(*device_args)), lambda: None, repeat, number
    )


if __name__ == "__main__":
    main()

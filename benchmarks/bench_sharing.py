"""Gradient time against program length for the §2.5 sharing example (goal: linear).

The program uses one value twice per step, ``y = 0.5 * (y + y - 1)``, ``N`` times on a
small array, then ``da.sum``.  Without sharing, the Delta of such a chain would be a tree
with 2^N paths (§2.5); with ``Share`` ids the dual-arrays Delta has a fixed number of
nodes per step, and one reverse pass visits each Share node once.  The derivative of
every step is 1, so the gradient is all ones and the values stay finite
(``y - N/2``), whatever ``N`` is.  The scalar baseline (one dual number per scalar,
``dualarr.teach.baselines.scalar_gradient``) is not run: on a 3-element array it has the same
sharing and only adds a constant factor.

For each ``N`` (each in its own process, so that one size's heap does not slow the
next) it reports:

- ``first s``: the first ``da.grad(f, mode="interpret")`` call: tracing, bot,
  simplifier and one gradient;
- ``grad s``: the median of ``--repeat`` later calls (the vectorised program is cached
  per function and input types, so this is the dual-arrays forward pass, Figs. 12–15,
  plus the reverse pass, Fig. 17), split into ``fwd s`` (``dualarr.api.dual_run``)
  and ``rev s`` (``dualarr.ad.reverse.reverse``);
- ``cfirst s`` and ``comp s``: the same for the default compiled path (the first call
  runs every compile-time stage and code generation; later calls run the generated
  Python);
- the Delta node and Share counts (``dualarr.ad.delta.size``), and the ratios between
  consecutive sizes: doubling ``N`` should cost at most about 2.2× time and exactly 2×
  nodes.

Usage: ``python benchmarks/bench_sharing.py [--sizes N ...] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.ad.reverse import reverse
from dualarr.api import dual_run, vectorised_program
from dualarr.interp.evaluate import NumpyAlgebra

SIZES = (1500, 3000, 6000, 12000)
LENGTH = 3  # elements of the array the chain runs on


def chain(steps: int) -> Callable[[da.Tensor], da.Tensor]:
    def f(y: da.Tensor) -> da.Tensor:
        for _ in range(steps):
            y = 0.5 * (y + y - 1)
        return da.sum(y)

    return f


def median_time(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def header(script: str) -> str:
    return (f"# {script}  ({datetime.date.today().isoformat()}, {cores()} cores, "
            f"{cpu_model()})\n"
            f"# {platform.python_implementation()} {platform.python_version()}, "
            f"{platform.machine()}, numpy {np.__version__}, dualarr {da.__version__}")


def worker(steps: int, repeat: int) -> dict[str, Any]:
    """Everything measured for one ``N``, in this process."""
    f = chain(steps)
    x = np.linspace(-1.0, 1.0, LENGTH)
    g = da.grad(f, mode="interpret")
    start = time.perf_counter()
    gradient = g(x)
    first = time.perf_counter() - start
    if not np.allclose(gradient, np.ones(LENGTH)):
        raise SystemExit(f"bench_sharing: wrong gradient for N={steps}: {gradient}")
    grad_s = median_time(lambda: g(x), repeat)
    gc = da.grad(f)
    start = time.perf_counter()
    compiled_gradient = gc(x)
    compiled_first = time.perf_counter() - start
    if not np.allclose(compiled_gradient, np.ones(LENGTH)):
        raise SystemExit(f"bench_sharing: wrong compiled gradient for N={steps}")
    compiled_s = median_time(lambda: gc(x), repeat)

    program = vectorised_program(f, (x,))  # cached by the calls above
    run = dual_run(program, (x,), (0,))
    size = dl.size(run.deltas)
    seed = np.ones(())
    fwd_s = median_time(lambda: dual_run(program, (x,), (0,)), repeat)
    rev_s = median_time(lambda: reverse(NumpyAlgebra(), run.deltas[0], seed), repeat)
    return {"steps": steps, "nodes": size.nodes, "shares": size.shares, "first": first,
            "grad": grad_s, "fwd": fwd_s, "rev": rev_s, "cfirst": compiled_first,
            "comp": compiled_s}


def run_worker(steps: int, repeat: int) -> dict[str, Any]:
    command = [sys.executable, os.path.abspath(__file__), "--worker", str(steps),
               "--repeat", str(repeat)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"bench_sharing: the worker for N={steps} failed "
                         f"(exit {done.returncode})")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                        help="chain lengths N (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=9, help="timed calls per size")
    parser.add_argument("--worker", type=int, metavar="N", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.repeat)))
        return

    print(header("bench_sharing.py"))
    settings = ", ".join(f"{k}={os.environ.get(k, 'unset')}" for k in
                         ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MALLOC_TRIM_THRESHOLD_",
                          "MALLOC_MMAP_THRESHOLD_"))
    print(f"# {settings}")
    print(f"# load average at start: {os.getloadavg()[0]:.2f}")
    print(f"# y = 0.5 * (y + y - 1), N times on a {LENGTH}-element array, then da.sum; "
          f"da.grad, median of {args.repeat}")
    print(f"{'N':>7} {'Delta':>8} {'Share':>7} {'nodes/N':>8} {'first s':>9} {'grad s':>9}"
          f" {'fwd s':>9} {'rev s':>9} {'cfirst s':>9} {'comp s':>9} {'x grad':>7}"
          f" {'x comp':>7} {'x nodes':>8}")
    previous: dict[str, Any] | None = None
    first_row: dict[str, Any] | None = None
    for steps in args.sizes:
        r = run_worker(steps, args.repeat)
        x_grad = x_comp = x_nodes = ""
        if previous is not None:
            x_grad = f"{r['grad'] / previous['grad']:.2f}"
            x_comp = f"{r['comp'] / previous['comp']:.2f}"
            x_nodes = f"{r['nodes'] / previous['nodes']:.2f}"
        print(f"{steps:>7} {r['nodes']:>8} {r['shares']:>7} {r['nodes'] / steps:>8.2f}"
              f" {r['first']:>9.4f} {r['grad']:>9.4f} {r['fwd']:>9.4f} {r['rev']:>9.4f}"
              f" {r['cfirst']:>9.4f} {r['comp']:>9.4f} {x_grad:>7} {x_comp:>7} {x_nodes:>8}",
              flush=True)
        first_row = first_row or r
        previous = r
    if first_row is not None and previous is not None and previous is not first_row:
        print(f"# N {first_row['steps']} -> {previous['steps']}: "
              f"{previous['steps'] / first_row['steps']:.2f}x steps, "
              f"{previous['grad'] / first_row['grad']:.2f}x grad time, "
              f"{previous['comp'] / first_row['comp']:.2f}x compiled time, "
              f"{previous['nodes'] / first_row['nodes']:.2f}x Delta nodes")


if __name__ == "__main__":
    main()

"""Tracing, printing and reference evaluation time against program size.

Every pass over a term DAG is meant to be linear in its size.  This runs the §2.5-style
chain ``y = 0.5 * (y + y - 1)`` for growing lengths (each step shares ``y``) and reports
the time per pass and the ratio between consecutive sizes (linear: about 2× for 2×
the steps).  Usage: ``python benchmarks/bench_tracing.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import functools
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np

import dualarr as da


def chain(steps: int) -> Callable[[da.Tensor], da.Tensor]:
    def f(y: da.Tensor) -> da.Tensor:
        for _ in range(steps):
            y = 0.5 * (y + y - 1)
        return y

    return f


def median_time(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    x = np.linspace(-1.0, 1.0, 3)
    print(f"# {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, numpy {np.__version__}")
    print(f"{'steps':>7} {'nodes':>7} {'trace s':>9} {'print s':>9} {'eval s':>9}"
          f" {'x trace':>8} {'x print':>8} {'x eval':>8}")
    previous: tuple[float, float, float] | None = None
    for steps in (1500, 3000, 6000, 12000):
        f = chain(steps)
        program = da.trace(f, x)
        t_trace = median_time(functools.partial(da.trace, f, x), args.repeat)
        t_print = median_time(functools.partial(str, program), args.repeat)
        t_eval = median_time(functools.partial(program, x), args.repeat)
        ratios = ["", "", ""]
        if previous is not None:
            ratios = [f"{now / before:.2f}" for now, before in
                      zip((t_trace, t_print, t_eval), previous, strict=True)]
        print(f"{steps:>7} {program.size:>7} {t_trace:>9.4f} {t_print:>9.4f} {t_eval:>9.4f}"
              f" {ratios[0]:>8} {ratios[1]:>8} {ratios[2]:>8}")
        previous = (t_trace, t_print, t_eval)


if __name__ == "__main__":
    main()

"""Time of the bot + simplifier against program size (goal: linear, 10× nodes ≤ 12× time).

Programs of about 100, 1,000 and 10,000 nodes are made of repeated blocks mixing every
kind of work the bot meets: ``build1`` over index arithmetic with ``//`` and ``%``,
``cond``, ``let``, gathers, reductions and a nested ``build1``.  Each size is timed
several times; the table shows the fastest run (least disturbed by the machine, as
``timeit`` recommends) and the median.  Usage: ``python benchmarks/bench_bot.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np

import dualarr as da
from dualarr.vectorise.bot import vectorise
from dualarr.vectorise.simplify import simplify

N = 8


def blocks_program(blocks: int) -> Callable[[da.Tensor, da.Tensor], da.Tensor]:
    def f(x: da.Tensor, y: da.Tensor) -> da.Tensor:
        acc = x
        for b in range(blocks):
            prev = acc

            def row(i: da.Tensor, prev: da.Tensor = prev, b: int = b) -> da.Tensor:
                near = prev[(i * 3 + b) % N]
                picked = da.where(near > 0.0, near, y[(i + b) // 2])
                inner = da.sum(da.build1(4, lambda j: prev[(i + j) % N] * y[j]))
                return da.let(picked * 0.5, lambda v: v * v + da.sin(inner) - v)

            acc = da.build1(N, row)
        return da.sum(acc)

    return f


def run_times(action: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    x, y = np.linspace(-1, 1, N), np.linspace(0, 2, N)
    print(f"# {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, numpy {np.__version__}")
    print(f"{'blocks':>7} {'nodes':>7} {'min s':>9} {'median s':>9} {'ratio':>7}"
          f" {'nodes ratio':>12}")
    previous: tuple[int, float] | None = None
    for blocks in (3, 30, 300):
        program = da.trace(blocks_program(blocks), x, y)

        def run(program: da.Program = program) -> object:
            result = vectorise(program.outputs, program.supply)
            return simplify(list(result.terms), program.supply)

        # small programs are timed more often: their runs are short and noisier
        times = run_times(run, args.repeat * max(1, 300 // (blocks * 10)))
        seconds, median = min(times), statistics.median(times)
        ratio = nodes_ratio = ""
        if previous is not None:
            ratio = f"{seconds / previous[1]:.2f}"
            nodes_ratio = f"{program.size / previous[0]:.2f}"
        print(f"{blocks:>7} {program.size:>7} {seconds:>9.4f} {median:>9.4f} {ratio:>7}"
              f" {nodes_ratio:>12}")
        previous = (program.size, seconds)


if __name__ == "__main__":
    main()

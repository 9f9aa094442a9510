"""Time of the whole compile-time pipeline against program size (goal: linear).

For the block programs of ``bench_bot.py`` (about 100, 1,000 and 10,000 nodes), every
stage down to code generation: trace, bot + simplify (``vectorised``), the symbolic
forward pass and Eq. 6 extraction (``forward``, ``delta``), the symbolic reverse pass
(``shared``), share → let and gradient simplification (``gradient``), and generating
and compiling the Python source (``python``).  Each size is timed ``--repeat`` times;
the table shows the fastest run per stage and the ratio of the totals between sizes.
Usage: ``python benchmarks/bench_pipeline.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from bench_bot import N, blocks_program

from dualarr.ad.compile_time import extract, forward_pass, symbolic_reverse
from dualarr.ad.share_to_let import share_to_let, simplify_let_program
from dualarr.codegen.generate import CompiledProgram
from dualarr.lang.program import trace
from dualarr.lang.terms import count_nodes
from dualarr.lang.trampoline import collector_paused
from dualarr.pipeline import vectorise_program

STAGES = ("trace", "vectorised", "forward+delta", "shared", "gradient", "python")


def stage_times(
    f: Callable[..., Any], args: tuple[np.ndarray, ...]
) -> tuple[dict[str, float], int]:
    times: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        times[name] = now - clock
        clock = now

    with collector_paused():
        source = trace(f, *args)
        lap("trace")
        vectorised, _ = vectorise_program(source)
        lap("vectorised")
        extracted = extract(forward_pass(vectorised))
        lap("forward+delta")
        shared = symbolic_reverse(extracted)
        lap("shared")
        gradient = simplify_let_program(share_to_let(shared))
        lap("gradient")
        CompiledProgram(gradient.inputs, gradient.outputs, gradient.name, gradient.bindings)
        lap("python")
    return times, count_nodes(source.outputs)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--blocks", type=int, nargs="+", default=[3, 30, 300])
    args = parser.parse_args()
    x, y = np.linspace(-1, 1, N), np.linspace(0, 2, N)
    print(f"# bench_pipeline.py  ({datetime.date.today().isoformat()}, {cores()} cores, "
          f"{platform.processor() or platform.machine()})")
    print(f"# {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, numpy {np.__version__}; fastest of {args.repeat} runs, s")
    print(f"{'blocks':>7}{'nodes':>8}" + "".join(f"{s:>14}" for s in STAGES)
          + f"{'total':>10}{'ratio':>8}{'nodes ratio':>13}")
    previous: tuple[float, int] | None = None
    for blocks in args.blocks:
        runs = [stage_times(blocks_program(blocks), (x, y)) for _ in range(args.repeat)]
        nodes = runs[0][1]
        best = {s: min(r[0][s] for r in runs) for s in STAGES}
        total = min(sum(r[0].values()) for r in runs)
        ratio = f"{total / previous[0]:8.2f}{nodes / previous[1]:13.2f}" if previous else ""
        print(f"{blocks:>7}{nodes:>8}" + "".join(f"{best[s]:>14.4f}" for s in STAGES)
              + f"{total:>10.4f}{ratio}", flush=True)
        previous = (total, nodes)


if __name__ == "__main__":
    main()

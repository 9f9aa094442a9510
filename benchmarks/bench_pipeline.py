"""Time and memory of the whole compile-time pipeline against program size (goal: linear).

Table 1: the block programs of ``bench_bot.py`` (about 100, 1,000 and 10,000 nodes),
every stage down to code generation: trace, bot + simplify (``vectorised``), the symbolic
forward pass and Eq. 6 extraction (``forward``, ``delta``), the symbolic reverse pass
(``shared``), share → let and gradient simplification (``gradient``), and generating and
compiling the Python source (``python``).  Each size is timed ``--repeat`` times; the
table shows the fastest run per stage and the ratio of the totals between sizes.  Times
are CPU seconds of this process (``time.process_time``), not wall-clock seconds.

Table 2: the programs of ``pipeline_programs.py`` that used to be quadratic, at
``--sizes`` operations (let chains at most 3,500 deep, in a 1,000-element build): the
seconds (the fastest of ``--program-repeat`` rounds, each round timing every size once)
and the peak memory (``tracemalloc``, MB, a separate run) of each stage; then
``da.grad``'s first call (compile and run) against ``mode="interpret"``, in seconds and
peak MB, the ratios of its time and memory between successive sizes, and the largest
growth of any one stage's time and memory (``stage t x``, ``stage m x``; the goal is
at most 12x for 10x the operations).
Between them, a machine baseline that is not dualarr's code: CPython's ``compile()`` of an
``n``-line function and a walk over an ``n``-node DAG of tuples, to show how this
machine's per-element cost grows with size by itself; and the same work done as ten
``n``-op programs or one ``10n``-op program, to separate the work (which grows 10x) from
the larger working set.
Usage: ``python benchmarks/bench_pipeline.py [--repeat N] [--blocks B …] [--sizes N …]
[--program-repeat R]``.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from bench_bot import N, blocks_program
from pipeline_programs import PROGRAMS

import dualarr as da
from dualarr.ad.extraction import extract
from dualarr.ad.share_to_let import share_to_let, simplify_let_program
from dualarr.ad.symbolic_forward import forward_pass
from dualarr.ad.symbolic_reverse import symbolic_reverse
from dualarr.codegen.generate import CompiledProgram
from dualarr.lang.program import trace
from dualarr.lang.terms import count_nodes
from dualarr.lang.trampoline import collector_paused
from dualarr.pipeline import vectorise_program

STAGES = ("trace", "vectorised", "forward+delta", "shared", "gradient", "python")

CLOCK = time.process_time
"""Seconds of CPU this process used: the pipeline is single-threaded Python, and on a
shared machine the wall clock also counts the time another tenant held the core (steal),
which made the same 10,000-op stage measure 9x-16x its 1,000-op run within one session."""


def stage_times(
    f: Callable[..., Any], args: tuple[np.ndarray, ...], memory: bool = False
) -> tuple[dict[str, float], int]:
    """Seconds per stage, or with ``memory`` the peak MB each stage allocates."""
    times: dict[str, float] = {}
    clock = CLOCK()
    if memory:
        _empty_free_lists()
        tracemalloc.start()

    def lap(name: str) -> None:
        nonlocal clock
        if memory:
            times[name] = tracemalloc.get_traced_memory()[1] / 1e6
            _empty_free_lists()
            tracemalloc.reset_peak()
            tracemalloc.clear_traces()
            return
        now = CLOCK()
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
    if memory:
        tracemalloc.stop()
    return times, count_nodes(source.outputs)


def _empty_free_lists() -> None:
    """Empty CPython's free lists (a full collection does) before measuring memory.
    ``tracemalloc`` sees only new allocations: a tuple, float or dict taken from a free
    list that the previous stage filled costs nothing in its count, and as a free list
    holds at most about 2,000 objects per kind, that hid a larger share of a small
    program's peak (the vectorised stage of the 1,000-op grad of grad: 0.58 MB traced,
    0.92 MB with the lists empty) than of a large one's."""
    gc.collect()


def end_to_end(
    f: Callable[..., Any], args: tuple[np.ndarray, ...], mode: str
) -> tuple[float, float]:
    """``da.grad(f, mode=mode)``'s first call: seconds, then peak MB (a second run)."""
    da.clear_caches()
    start = CLOCK()
    da.grad(f, mode=mode)(*args)
    seconds = CLOCK() - start
    da.clear_caches()
    _empty_free_lists()
    tracemalloc.start()
    da.grad(f, mode=mode)(*args)
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return seconds, peak


def machine_baseline(sizes: list[int], repeat: int) -> None:
    """How this machine's own per-element cost grows with size, for scale: CPython's
    ``compile()`` of an ``n``-line straight-line function (what the ``python`` stage ends
    with) and a post-order walk over an ``n``-node DAG of plain tuples.  Neither is
    dualarr's code; their growth shows what caches and the allocator add at 10x the size."""
    print()
    print("# machine baseline (not dualarr): CPU seconds, fastest of "
          f"{repeat}; ratio to the previous size")
    previous: tuple[float, float] | None = None
    for n in sizes:
        lines = [f"    v{k} = xp.sin(v{k - 1}) * v{max(0, k - 7)} + 0.5" for k in range(1, n)]
        source = "\n".join(["def f(xp, v0):", *lines, f"    return v{n - 1}"]) + "\n"
        compile_s = min(_timed(partial(compile, source, "<baseline>", "exec"))
                        for _ in range(repeat))
        nodes: list[tuple[Any, ...]] = [()]
        for k in range(1, n):
            nodes.append((nodes[k - 1], nodes[max(0, k - 7)]))
        walk_s = min(_timed(partial(_walk, nodes[-1])) for _ in range(repeat))
        ratios = (f"   x {compile_s / previous[0]:.1f}   x {walk_s / previous[1]:.1f}"
                  if previous else "")
        print(f"{'compile() / DAG walk':<28}{n:>6}  {compile_s:>8.4f}  {walk_s:>8.4f}{ratios}",
              flush=True)
        previous = (compile_s, walk_s)


def working_set_baseline(sizes: list[int], repeat: int, program: str = "grad of grad") -> None:
    """The same work in ten small programs or one large one: each stage's seconds for ten
    ``n``-op programs compiled one after another, against one ``10n``-op program.  Both do
    10x the work of one ``n``-op program; only the large one also has 10x the working set,
    so the difference between the two ratios is what the memory hierarchy adds."""
    pairs = [(n, 10 * n) for n in sizes if 10 * n in sizes]
    if not pairs:
        return
    print()
    print(f"# same work, small or large working set ({program!r}): CPU seconds per stage, "
          f"fastest of {repeat}; ratio to one n-op program")
    print(f"{'':<28}" + "".join(f"{s:>16}" for s in STAGES))
    make = PROGRAMS[program]
    for small, large in pairs:
        pieces = [make(small) for _ in range(10)]
        one = {s: min(stage_times(*pieces[0])[0][s] for _ in range(repeat)) for s in STAGES}
        ten: dict[str, float] = {s: float("inf") for s in STAGES}
        for _ in range(repeat):
            laps = [stage_times(f, args)[0] for f, args in pieces]
            ten = {s: min(ten[s], sum(lap[s] for lap in laps)) for s in STAGES}
        big = {s: float("inf") for s in STAGES}
        for _ in range(repeat):
            lap = stage_times(*make(large))[0]
            big = {s: min(big[s], lap[s]) for s in STAGES}
        for label, row in ((f"ten {small}-op programs", ten), (f"one {large}-op program", big)):
            cells = "".join(f"{row[s]:>9.3f} x{row[s] / one[s]:<5.1f}" for s in STAGES)
            print(f"{label:<28}{cells}", flush=True)


def _timed(action: Callable[[], Any]) -> float:
    start = CLOCK()
    action()
    return CLOCK() - start


def _walk(root: tuple[Any, ...]) -> int:
    """Post-order over a DAG of tuples, each node once (what every stage does first)."""
    seen: set[int] = set()
    order: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((kid, False) for kid in node if id(kid) not in seen)
    return len(order)


def programs_table(sizes: list[int], repeat: int) -> None:
    print()
    print(f"# programs that used to be quadratic: CPU seconds (fastest of {repeat}) | peak MB per "
          "stage; da.grad's first call, compiled and interpreted; ratios to the previous size")
    print(f"{'program':<28}{'n':>6}{'nodes':>7}" + "".join(f"{s:>15}" for s in STAGES)
          + f"{'grad':>15}{'interpret':>15}{'time x':>8}{'mem x':>7}"
          + f"{'stage t x':>11}{'stage m x':>10}")
    for name, make in PROGRAMS.items():
        cases = []
        for size in sizes:
            if name.startswith("let chain"):  # 3,500 deep at most, in a 1,000-element build
                n = min(size, 3500)
                cases.append((n, make(n, rows=1000)))
            else:
                cases.append((size, make(size)))
        # rounds over every size, so that a slow spell of this shared machine slows all
        # sizes of a program alike instead of one size's runs
        times = [{s: float("inf") for s in STAGES} for _ in cases]
        nodes = [0 for _ in cases]
        for _ in range(repeat):
            for k, (_, (f, args)) in enumerate(cases):
                lap, nodes[k] = stage_times(f, args)
                times[k] = {s: min(times[k][s], lap[s]) for s in STAGES}
        previous: tuple[float, float] | None = None
        before: tuple[dict[str, float], dict[str, float]] | None = None
        for k, (n, (f, args)) in enumerate(cases):
            peaks, _ = stage_times(f, args, memory=True)
            grad_s, grad_mb = end_to_end(f, args, "compiled")
            interp_s, interp_mb = end_to_end(f, args, "interpret")
            cells = "".join(f"{times[k][s]:>7.3f}|{peaks[s]:<7.1f}" for s in STAGES)
            ratios = ""
            if previous is not None and before is not None:
                # the largest growth of one stage (stages under 10 ms or 0.5 MB count as that)
                worst_t = max(times[k][s] / max(before[0][s], 0.01) for s in STAGES)
                worst_m = max(peaks[s] / max(before[1][s], 0.5) for s in STAGES)
                ratios = (f"{grad_s / previous[0]:>8.1f}{grad_mb / previous[1]:>7.1f}"
                          f"{worst_t:>11.1f}{worst_m:>10.1f}")
            print(f"{name:<28}{n:>6}{nodes[k]:>7}{cells}{grad_s:>7.2f}|{grad_mb:<7.1f}"
                  f"{interp_s:>7.2f}|{interp_mb:<7.1f}{ratios}", flush=True)
            previous = (grad_s, grad_mb)
            before = (times[k], peaks)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--blocks", type=int, nargs="+", default=[3, 30, 300])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 10000])
    parser.add_argument("--program-repeat", type=int, default=3,
                        help="rounds over the sizes of each program (the fastest run is shown)")
    args = parser.parse_args()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 15_000))  # body-position let chains
    x, y = np.linspace(-1, 1, N), np.linspace(0, 2, N)
    print(f"# bench_pipeline.py  ({datetime.date.today().isoformat()}, {cores()} cores, "
          f"{platform.processor() or platform.machine()})")
    print(f"# {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, numpy {np.__version__}; fastest of {args.repeat} runs, CPU s")
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
    if args.sizes:
        machine_baseline(args.sizes, args.repeat)
        working_set_baseline(args.sizes, args.program_repeat)
        programs_table(args.sizes, args.program_repeat)


if __name__ == "__main__":
    main()

"""Wall-clock times that tests and notebooks once asserted, measured here instead.

Tests and notebooks now assert counts (lines run, Delta nodes, one-hot elements, calls
into D and the reverse pass), which do not depend on the machine's speed or load.  The
times behind those claims are printed here, with the bound that used to be asserted and
whether this machine meets it:

* ``tests/test_tracing.py``: trace, print, evaluate and ``repr`` of the §2.5 chain of
  3,000 shared steps, all together, in under 5 s (linear passes: a fraction of a second).
* ``notebooks/03``: at ``n = 256`` the gradient of Fig. 18 after the bot is more than 3×
  faster than with scalar dual numbers and than dual arrays without the bot.
* ``notebooks/06``: on 16 elements, the interpreted gradient of ``chain(8)`` takes more
  than 1.5× the time of the compiled one.

Usage: ``python benchmarks/bench_timing_claims.py [--repeat N]`` (best of ``N`` runs).
"""

from __future__ import annotations

import argparse
import functools
import platform
import time
from collections.abc import Callable

import numpy as np

import dualarr as da
from dualarr.teach.baselines import dual_arrays_gradient, scalar_gradient, unvectorised_gradient
from dualarr.teach.examples import fig18


def best_time(action: Callable[[], object], repeat: int) -> float:
    """The shortest of ``repeat`` runs of ``action``, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def shared_chain(y: da.Tensor, steps: int) -> da.Tensor:
    for _ in range(steps):
        y = 0.5 * (y + y - 1)
    return y


def sin_chain(x: da.Tensor) -> da.Tensor:
    for _ in range(8):
        x = da.sin(x) * x
    return da.sum(x)


def report(claim: str, measured: str, holds: bool) -> None:
    print(f"{claim:<58} {measured:>22}  {'holds' if holds else 'DOES NOT HOLD'}")


def tracing(repeat: int) -> None:
    x = np.linspace(-1.0, 1.0, 3)

    def passes() -> None:
        program = da.trace(lambda y: shared_chain(y, 3000), x)
        str(program)
        program(x)
        repr(program.term)

    seconds = best_time(passes, repeat)
    report("chain of 3000: trace + print + evaluate + repr < 5 s", f"{seconds:.3f} s",
           seconds < 5.0)


def explosion(repeat: int) -> None:
    x = np.linspace(-1.0, 1.0, 256)
    pipeline = best_time(lambda: dual_arrays_gradient(fig18, x), repeat)
    methods: tuple[tuple[str, Callable[..., object]], ...] = (
        ("scalar dual numbers", scalar_gradient),
        ("dual arrays, no bot", unvectorised_gradient),
    )
    for name, method in methods:
        ratio = best_time(functools.partial(method, fig18, x), repeat) / pipeline
        report(f"Fig. 18, n = 256: {name} / pipeline > 3", f"{ratio:.1f}x", ratio > 3)


def compiled_against_interpreted(repeat: int) -> None:
    small = np.linspace(0.1, 1.0, 16)
    compiled, interpreted = da.grad(sin_chain), da.grad(sin_chain, mode="interpret")
    compiled(small)
    interpreted(small)
    def fifty(gradient: Callable[..., object]) -> Callable[[], object]:
        return lambda: [gradient(small) for _ in range(50)]

    per_call = {
        name: best_time(fifty(g), repeat) / 50
        for name, g in (("compiled", compiled), ("interpret", interpreted))
    }
    ratio = per_call["interpret"] / per_call["compiled"]
    report("chain(8) on 16 elements: interpreted / compiled > 1.5", f"{ratio:.1f}x",
           ratio > 1.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"# bench_timing_claims.py  ({platform.python_implementation()} "
          f"{platform.python_version()}, {platform.machine()}, numpy {np.__version__})")
    print(f"{'claim (once asserted)':<58} {'measured':>22}  on this machine")
    tracing(args.repeat)
    explosion(args.repeat)
    compiled_against_interpreted(args.repeat)


if __name__ == "__main__":
    main()

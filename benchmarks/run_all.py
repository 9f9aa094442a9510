"""Run every benchmark and write its table to ``benchmarks/results/`` (one command).

Usage: ``python benchmarks/run_all.py [--only NAME ...]`` with names from
:data:`RUNS` (default: all).  Each script runs in its own process, one after another,
and its output goes to ``results/<name>.txt``; a failing script stops the run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

RUNS: dict[str, list[str]] = {
    "tracing": ["bench_tracing.py"],
    "bot": ["bench_bot.py"],
    "pipeline": ["bench_pipeline.py"],
    "sharing": ["bench_sharing.py"],
    "gradients": ["bench_gradients.py"],
    "kernels": ["bench_kernels.py"],
    "overhead": ["bench_overhead.py"],
    "numpy": ["bench_numpy.py"],
    "dask": ["bench_dask.py", "--runs", "3"],
    "timing-claims": ["bench_timing_claims.py"],
    "gradients-malloc-tuned": ["bench_gradients.py", "--malloc-tuned"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="+", choices=list(RUNS), default=list(RUNS))
    args = parser.parse_args()
    (HERE / "results").mkdir(exist_ok=True)
    for name in args.only:
        command = [sys.executable, str(HERE / RUNS[name][0]), *RUNS[name][1:]]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=HERE)
        if done.returncode != 0:
            sys.stderr.write(done.stdout + done.stderr)
            raise SystemExit(f"run_all: {name} failed (exit {done.returncode})")
        (HERE / "results" / f"{name}.txt").write_text(done.stdout)
        print(f"{name}: {time.perf_counter() - start:.0f} s -> results/{name}.txt", flush=True)


if __name__ == "__main__":
    main()

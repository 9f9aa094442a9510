"""The generated gradient on NumPy and on Dask, against array size: where Dask starts to pay.

One command (with the ``dask`` extra, ``pip install -e ".[dask]"``): ``python
benchmarks/bench_dask.py``.  Each program's gradient with respect to its first argument is
the compiled program ``da.jit(da.grad(f))``, called

- on NumPy arrays (``numpy``: the result is a NumPy array);
- on Dask arrays, ``dask.array.from_array(a, chunks=...)`` in this process, then
  ``.compute(scheduler="threads")`` (``threads``: Dask's thread pool, one thread per core);
- on the same Dask arrays persisted first on a ``dask.distributed.LocalCluster`` of 2
  worker processes with 1 thread each on 127.0.0.1, no dashboard (``procs``).

Programs (n is the number of elements of the differentiated input):

- ``fig18``: the paper's Fig. 18, ``sum(build1 n (λi. x[i] * x[n-1-i]))``;
- ``w5``: ``sum(sin(x) * exp(-x*x) + log1p(x*x))`` (elementwise transcendental);
- ``chain``: 3 steps of ``y = tanh(y * y[::-1] + 0.5 * y[idx])`` from ``y = x``, then
  ``sum(y)`` (``idx`` a random permutation: gathers across every chunk);
- ``softmax``: softmax cross-entropy over rows, ``sum(logsumexp(z, axis=1) - sum(z *
  labels, axis=1))`` written with ``dualarr.numpy``, logits ``z`` of n // 64 rows of 64,
  one-hot ``labels``;
- ``scatter``: ``sum(tanh(x[idx] * w))`` with random ``idx`` (n of them, in ``[0, n)``):
  the gradient is a scatter-add (on Dask, a shuffle of ``bincount``s).

Chunks are about ``--chunk-mib`` MiB (default 8: 2**20 float64 elements of a vector, 2**14
rows of 64), so sizes up to 10^6 are one chunk.  What is timed, per gradient, in ms:
``numpy`` the call; ``threads`` the call on the Dask arrays (it builds the lazy gradient's
task graph; that part alone is ``graph``) plus ``.compute(scheduler="threads")``, which
returns a NumPy array; ``procs`` the call on the persisted inputs plus ``persist`` of the
lazy gradient and ``wait`` until it is on the workers (the inputs are sent to the cluster
before, untimed; the result stays there: fetching it back, which ``--fetch`` times as
``.compute()`` instead, adds its transfer).  Each cell first runs once, its result checked
against the gradient written by hand in NumPy (``np.allclose``, rtol 1e-9; a mismatch stops
the run with a non-zero exit), then is timed as the median of up to ``--repeat`` samples,
as many as fit in ``--budget`` seconds at the first call's time (at least one).  On Dask
the graph is traced and compiled before that first call, so where it took longer than
``--budget`` it is the only sample.  A cell whose time, scaled linearly from the previous
size, would exceed ``--cell-limit`` seconds is skipped (``skip``); so are the larger sizes
after it.

Columns: ``chunks`` of the differentiated input and ``out`` of the gradient; ``tasks``, the
size of the lazy gradient's task graph (``len(g.__dask_graph__())``, of the threads run,
the inputs' ``from_array`` tasks included) and ``opt`` after ``dask.optimize``; the three
times, and the ratios ``thr/np`` and ``proc/np`` (below 1: Dask is faster).  After each run
the crossover per program: the smallest size where ``thr/np`` (and ``proc/np``) is below 1,
or "none" (none in the sweep).  ``--runs N`` repeats the sweep N times on the same cluster and
ends with the ranges of the ratios and the crossovers over the runs.  Without Dask it says
so and exits 0; without ``distributed`` (or with ``--no-cluster``) the ``procs`` column
reads ``-``.

Usage: ``python benchmarks/bench_dask.py [--quick] [--runs N] [--repeat R] [--sizes N ...]
[--programs P ...] [--chunk-mib M] [--budget S] [--cell-limit S] [--fetch]
[--no-cluster]``.  ``--quick`` is a smoke run (sizes 10^3 and 10^4 in chunks of 32 KiB).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import importlib.util
import logging
import math
import os
import platform
import statistics
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from bench_gradients import _chain_gradient, cores, cpu_model

import dualarr as da
import dualarr.numpy as dnp

Arrays = tuple[np.ndarray, ...]
SEED = 20261127
CHAIN_STEPS = 3
ROW = 64  # softmax: logits per row
SIZES = (10**4, 10**5, 10**6, 10**7, 3 * 10**7)
QUICK_SIZES = (10**3, 10**4)
MODES = ("numpy", "threads", "procs")
RTOL, ATOL = 1e-9, 1e-12
SKIP = None  # a cell not run


# --------------------------------------------------------------------------------------
# Programs: the dualarr function, its inputs, its gradient by hand (the reference)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """A program differentiated with respect to its first argument."""

    name: str
    function: Callable[..., Any]
    inputs: Callable[[int, np.random.Generator], Arrays]
    gradient: Callable[..., np.ndarray]


def fig18(x: Any) -> Any:
    n = x.shape[0]
    return da.sum(da.build1(n, lambda i: x[i] * x[n - 1 - i]))


def w5(x: Any) -> Any:
    return da.sum(da.sin(x) * da.exp(-x * x) + da.log1p(x * x))


def w5_gradient(x: np.ndarray) -> np.ndarray:
    gauss = np.exp(-x * x)
    result: np.ndarray = (np.cos(x) - 2.0 * x * np.sin(x)) * gauss + 2.0 * x / (1.0 + x * x)
    return result


def chain(x: Any, idx: Any) -> Any:
    y = x
    for _ in range(CHAIN_STEPS):
        y = dnp.tanh(y * y[::-1] + 0.5 * y[idx])
    return dnp.sum(y)


def chain_gradient(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return _chain_gradient(CHAIN_STEPS)(x, idx)[0]


def softmax(logits: Any, labels: Any) -> Any:
    top = dnp.max(logits, axis=1, keepdims=True)
    total = dnp.log(dnp.sum(dnp.exp(logits - top), axis=1)) + top[:, 0]
    return dnp.sum(total - dnp.sum(logits * labels, axis=1))


def softmax_gradient(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    result: np.ndarray = e / e.sum(axis=1, keepdims=True) - labels
    return result


def scatter(x: Any, idx: Any, w: Any) -> Any:
    return dnp.sum(dnp.tanh(x[idx] * w))


def scatter_gradient(x: np.ndarray, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
    t = np.tanh(x[idx] * w)
    return np.bincount(idx, weights=w * (1.0 - t * t), minlength=x.shape[0])


def _vector(n: int, rng: np.random.Generator) -> Arrays:
    return (rng.standard_normal(n),)


def _chain_inputs(n: int, rng: np.random.Generator) -> Arrays:
    return rng.standard_normal(n), rng.permutation(n).astype(np.int64)


def _softmax_inputs(n: int, rng: np.random.Generator) -> Arrays:
    rows = max(1, n // ROW)
    labels = np.zeros((rows, ROW))
    labels[np.arange(rows), rng.integers(0, ROW, rows)] = 1.0
    return rng.standard_normal((rows, ROW)), labels


def _scatter_inputs(n: int, rng: np.random.Generator) -> Arrays:
    return rng.standard_normal(n), rng.integers(0, n, n), rng.standard_normal(n)


PROGRAMS: dict[str, Program] = {
    p.name: p
    for p in (
        Program("fig18", fig18, _vector, lambda x: 2.0 * x[::-1]),
        Program("w5", w5, _vector, w5_gradient),
        Program("chain", chain, _chain_inputs, chain_gradient),
        Program("softmax", softmax, _softmax_inputs, softmax_gradient),
        Program("scatter", scatter, _scatter_inputs, scatter_gradient),
    )
}


# --------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------


@dataclass
class Cell:
    """One program at one size: ms per mode (None: skipped or not available)."""

    program: str
    n: int
    ms: dict[str, float | None] = field(default_factory=dict)
    graph_ms: float | None = None
    chunks: int = 0
    out_chunks: int = 0
    tasks: int = 0
    tasks_optimised: int = 0

    def ratio(self, mode: str) -> float | None:
        top, base = self.ms.get(mode), self.ms.get("numpy")
        return None if top is None or base is None else top / base


@dataclass
class Settings:
    repeat: int
    budget: float
    cell_limit: float
    chunk_bytes: int
    fetch: bool


def chunks_of(a: np.ndarray, chunk_bytes: int) -> tuple[int, ...]:
    """Chunks of about ``chunk_bytes`` along the first axis, the other axes whole."""
    row = a.itemsize * math.prod(a.shape[1:])
    return (max(1, chunk_bytes // row), *a.shape[1:])


def check(program: str, n: int, mode: str, got: Any, want: np.ndarray) -> None:
    got = np.asarray(got)
    if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
        raise SystemExit(
            f"bench_dask: {program} n={n} {mode}: the gradient differs from the "
            "one written by hand in NumPy"
        )


Sample = Callable[[], tuple[float, float, Any]]  # seconds: in all, building the graph; result


def checked_times(
    program: str,
    n: int,
    mode: str,
    sample: Sample,
    fetch: Callable[[Any], Any],
    want: np.ndarray,
    warm: bool,
    settings: Settings,
) -> tuple[float, float]:
    """Median (in all, graph) ms of ``sample``'s calls.  The first call's result, brought
    here by ``fetch``, is checked against ``want``; its time sets how many samples fit
    the budget, and where it is ``warm`` (nothing compiled in it) and over the budget it
    is the only sample.  No result is kept while the next call runs (a cluster still
    holding one would hand it back for the same keys instead of computing it)."""
    total, graph, result = sample()
    check(program, n, mode, fetch(result), want)
    del result
    if warm and total > settings.budget:
        return total * 1e3, graph * 1e3
    count = max(1, min(settings.repeat, int(settings.budget / max(total, 1e-9))))
    samples = [sample()[:2] for _ in range(count)]  # each result dropped at once
    return (
        1e3 * statistics.median(s[0] for s in samples),
        1e3 * statistics.median(s[1] for s in samples),
    )


def predicted_over(previous: Cell | None, n: int, mode: str, limit: float) -> bool:
    """The time of ``mode`` at ``n``, scaled linearly from ``previous``, exceeds ``limit``;
    so does any size after a skipped one."""
    if previous is None:
        return False
    ms = previous.ms.get(mode)
    return ms is None or ms / 1e3 * n / previous.n > limit


def measure(
    program: Program, n: int, previous: Cell | None, dsa: Any, client: Any, settings: Settings
) -> Cell:
    dask: Any = importlib.import_module("dask")
    cell = Cell(program.name, n)
    args = program.inputs(n, np.random.default_rng(SEED))
    want = program.gradient(*args)

    # NumPy: the compiled gradient on NumPy arrays (its first call compiles it)
    if predicted_over(previous, n, "numpy", settings.cell_limit):
        cell.ms["numpy"] = SKIP
    else:
        on_numpy = da.jit(da.grad(program.function))

        def numpy_sample() -> tuple[float, float, Any]:
            start = time.perf_counter()
            result = on_numpy(*args)
            return time.perf_counter() - start, 0.0, result

        cell.ms["numpy"] = checked_times(
            program.name, n, "numpy", numpy_sample, _same, want, False, settings
        )[0]

    # Dask arrays in this process, the threaded scheduler (compiled by the first call)
    lazy_args = tuple(dsa.from_array(a, chunks=chunks_of(a, settings.chunk_bytes)) for a in args)
    on_dask = da.jit(da.grad(program.function))
    lazy = on_dask(*lazy_args)
    cell.chunks, cell.out_chunks = lazy_args[0].npartitions, lazy.npartitions
    cell.tasks = len(lazy.__dask_graph__())
    (optimised,) = dask.optimize(lazy)
    cell.tasks_optimised = len(optimised.__dask_graph__())
    if predicted_over(previous, n, "threads", settings.cell_limit):
        cell.ms["threads"] = SKIP
    else:

        def threads_sample() -> tuple[float, float, Any]:
            start = time.perf_counter()
            gradient = on_dask(*lazy_args)
            built = time.perf_counter()
            result = gradient.compute(scheduler="threads")
            return time.perf_counter() - start, built - start, result

        cell.ms["threads"], cell.graph_ms = checked_times(
            program.name, n, "threads", threads_sample, _same, want, True, settings
        )

    # the same Dask arrays persisted on the cluster's worker processes
    if client is None:  # not measured: the column reads "-"
        return cell
    if predicted_over(previous, n, "procs", settings.cell_limit):
        cell.ms["procs"] = SKIP
        return cell
    distributed: Any = importlib.import_module("distributed")
    with client.as_current():  # distributed.wait's client
        persisted = client.persist(list(lazy_args))
        distributed.wait(persisted)

        last: list[Any] = []  # the keys of the previous sample's result

        def procs_sample() -> tuple[float, float, Any]:
            forgotten(client, last)  # untimed
            start = time.perf_counter()
            gradient = on_dask(*persisted)
            built = time.perf_counter()
            if settings.fetch:
                future = client.compute(gradient)
                result, keys = future.result(), [future.key]
            else:  # left on the workers until the result is dropped
                result = client.persist(gradient)
                distributed.wait(result)
                keys = [f.key for f in distributed.futures_of(result)]
            end = time.perf_counter()
            last[:] = keys
            return end - start, built - start, result

        def fetch(result: Any) -> Any:
            return result if settings.fetch else client.compute(result).result()

        cell.ms["procs"] = checked_times(
            program.name, n, "procs", procs_sample, fetch, want, True, settings
        )[0]
    return cell


def _known(dask_scheduler: Any, keys: list[Any]) -> int:
    return sum(key in dask_scheduler.tasks for key in keys)


def forgotten(client: Any, keys: list[Any], timeout: float = 60.0) -> None:
    """Wait until the scheduler has forgotten ``keys`` (their futures dropped): it would
    hand a result it still holds back for the same keys instead of computing it, and a
    dropped future is released only later, from the client's event loop."""
    deadline = time.monotonic() + timeout
    while keys and client.run_on_scheduler(_known, keys=keys):
        if time.monotonic() > deadline:
            raise SystemExit("bench_dask: the cluster kept an earlier result")
        time.sleep(0.005)


def _same(result: Any) -> Any:
    return result


def sweep(
    programs: Sequence[str], sizes: Sequence[int], dsa: Any, client: Any, settings: Settings
) -> list[Cell]:
    cells: list[Cell] = []
    for name in programs:
        previous: Cell | None = None
        for n in sizes:
            previous = measure(PROGRAMS[name], n, previous, dsa, client, settings)
            cells.append(previous)
            print_row(previous)
    return cells


# --------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------


def size_label(n: int) -> str:
    exponent = len(str(n)) - 1
    lead, rest = divmod(n, 10**exponent)
    return f"{lead}e{exponent}" if rest == 0 and n >= 1000 else str(n)


def _ms(value: float | None, width: int = 10) -> str:
    return f"{'skip' if value is None else format(value, '.2f'):>{width}}"


def _mode_ms(cell: Cell, mode: str, width: int = 10) -> str:
    return _ms(cell.ms[mode], width) if mode in cell.ms else f"{'-':>{width}}"


def _number(value: float) -> str:
    return format(value, ".2f" if value < 10 else ".1f" if value < 100 else ".0f")


def _ratio(value: float | None, width: int = 8) -> str:
    return f"{'-' if value is None else _number(value):>{width}}"


HEADER = (
    f"{'program':8}{'n':>6}{'chunks':>7}{'out':>5}{'tasks':>7}{'opt':>6}"
    f"{'numpy':>10}{'graph':>10}{'threads':>10}{'procs':>10}{'thr/np':>8}"
    f"{'proc/np':>8}"
)


def print_row(cell: Cell) -> None:
    print(
        f"{cell.program:8}{size_label(cell.n):>6}{cell.chunks:>7}{cell.out_chunks:>5}"
        f"{cell.tasks:>7}{cell.tasks_optimised:>6}{_mode_ms(cell, 'numpy')}"
        f"{_ms(cell.graph_ms)}{_mode_ms(cell, 'threads')}{_mode_ms(cell, 'procs')}"
        f"{_ratio(cell.ratio('threads'))}{_ratio(cell.ratio('procs'))}",
        flush=True,
    )


def crossover(cells: Sequence[Cell], program: str, mode: str) -> str:
    """The smallest size where ``mode`` beats the NumPy call, or "none" (in the sweep)."""
    for cell in cells:
        ratio = cell.ratio(mode)
        if cell.program == program and ratio is not None and ratio < 1.0:
            return size_label(cell.n)
    return "none"


def measured(cells: Sequence[Cell]) -> list[str]:
    """The Dask modes that ran (procs: where a cluster was started)."""
    return [mode for mode in ("threads", "procs") if any(mode in c.ms for c in cells)]


def print_crossovers(cells: Sequence[Cell], programs: Sequence[str]) -> None:
    for mode in measured(cells):
        found = ", ".join(f"{p} {crossover(cells, p, mode)}" for p in programs)
        print(f"# crossover (smallest n with {mode}/numpy < 1; none: none in the sweep): {found}")


def _range(values: Sequence[float]) -> str:
    if not values:
        return "-"
    low, high = _number(min(values)), _number(max(values))
    return low if low == high else f"{low}-{high}"


def print_summary(
    runs: Sequence[Sequence[Cell]], programs: Sequence[str], sizes: Sequence[int]
) -> None:
    print(
        f"\n# summary over the {len(runs)} runs: ranges of the ratios to the NumPy call "
        "(below 1: Dask is faster), and each run's crossover"
    )
    print(f"{'program':8}{'n':>6}{'thr/np':>15}{'proc/np':>15}{'tasks':>7}{'opt':>6}")
    for program in programs:
        for n in sizes:
            same = [c for run in runs for c in run if (c.program, c.n) == (program, n)]
            threads = [r for c in same if (r := c.ratio("threads")) is not None]
            procs = [r for c in same if (r := c.ratio("procs")) is not None]
            print(
                f"{program:8}{size_label(n):>6}{_range(threads):>15}{_range(procs):>15}"
                f"{same[0].tasks:>7}{same[0].tasks_optimised:>6}"
            )
    for mode in measured(runs[0]):
        found = ", ".join(
            f"{p} " + "/".join(crossover(run, p, mode) for run in runs) for p in programs
        )
        print(f"# crossover of {mode} per run (none: none in the sweep): {found}")


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def cluster(enabled: bool) -> Iterator[Any]:
    """A client of 2 worker processes, 1 thread each, on 127.0.0.1 (None: not available)."""
    distributed: Any = None
    with contextlib.suppress(ImportError):
        distributed = importlib.import_module("distributed") if enabled else None
    if distributed is None:
        yield None
        return
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.ERROR,
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        yield client


def _version(module: str) -> str:
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _dualarr_commit() -> str:
    """The commit of the dualarr measured, where it runs from a git checkout."""
    root = Path(da.__file__).resolve().parents[1]
    git = ["git", "-C", str(root)]
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [*git, "status", "--porcelain", "--", "dualarr"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f" (git {head}{', with changes' if changed else ''})"


def _numexpr_threads() -> str:
    """The threads of numexpr's pool (the fused kernels'), where it is installed."""
    try:
        numexpr: Any = importlib.import_module("numexpr")
    except ImportError:
        return ""
    return f" ({numexpr.get_num_threads()} threads)"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run (small sizes)")
    parser.add_argument("--runs", type=int, default=1, help="sweeps, then ranges (default 1)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="samples per cell at most (default 5; 2 with --quick)",
    )
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=None,
        help="n, elements of the differentiated input (default 1e4 ... 3e7)",
    )
    parser.add_argument("--programs", nargs="+", choices=list(PROGRAMS), default=list(PROGRAMS))
    parser.add_argument(
        "--chunk-mib", type=float, default=None, help="MiB per chunk (default 8; 1/32 with --quick)"
    )
    parser.add_argument(
        "--budget", type=float, default=2.0, help="seconds of samples per cell, about (default 2)"
    )
    parser.add_argument(
        "--cell-limit",
        type=float,
        default=6.0,
        help="skip a cell predicted to take longer, in s (default 6)",
    )
    parser.add_argument(
        "--fetch", action="store_true", help="procs: time .compute() (the result fetched back)"
    )
    parser.add_argument("--no-cluster", action="store_true", help="no procs column")
    args = parser.parse_args()
    name = f"bench_dask.py{' --quick' if args.quick else ''}"
    try:
        dsa: Any = importlib.import_module("dask.array")
    except ImportError:
        print(f"# {name}: Dask is not installed (pip install -e '.[dask]'); nothing to run")
        return
    warnings.filterwarnings("ignore", category=dsa.PerformanceWarning)  # gathers rechunk
    warnings.filterwarnings("ignore", message=".*[Ll]arge (object|graph)")  # from_array's
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    chunk_mib = args.chunk_mib or (1 / 32 if args.quick else 8.0)
    settings = Settings(
        repeat=args.repeat or (2 if args.quick else 5),
        budget=args.budget,
        cell_limit=args.cell_limit,
        chunk_bytes=int(chunk_mib * 2**20),
        fetch=args.fetch,
    )
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    print(
        f"# {name}  ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {cores()} cores, "
        f"{memory:.0f} GiB, {cpu_model()})"
    )
    print(
        f"# {platform.python_implementation()} {platform.python_version()}, numpy "
        f"{np.__version__}, dask {_version('dask')}, distributed {_version('distributed')}, "
        f"numexpr {_version('numexpr')}{_numexpr_threads()}, "
        f"dualarr {da.__version__}{_dualarr_commit()}"
    )
    elements = settings.chunk_bytes // 8
    print(
        f"# gradient w.r.t. the first input of da.jit(da.grad(f)); float64; chunks of "
        f"{chunk_mib:g} MiB ({elements} elements of a vector, {elements // ROW} rows of "
        f"{ROW}); ms per gradient, median of up to {settings.repeat} samples "
        f"(about {settings.budget:g} s per cell)"
    )
    procs = (
        ".compute() (result fetched back)"
        if args.fetch
        else "persist + wait (result left on the workers)"
    )
    print(
        "# numpy: the call on NumPy arrays; threads: the call on dask arrays (graph: "
        "building the graph) + .compute(scheduler='threads'); procs: LocalCluster of 2 "
        f"worker processes x 1 thread, inputs persisted there first (untimed), call + {procs}"
    )
    runs: list[list[Cell]] = []
    with cluster(not args.no_cluster) as client:
        if client is None:
            print(
                "# procs: not measured ("
                + ("--no-cluster)" if args.no_cluster else "distributed is not installed)")
            )
        for run in range(args.runs):
            print(
                f"\n# run {run + 1} of {args.runs}; load average at start: {os.getloadavg()[0]:.2f}"
            )
            print(HEADER)
            runs.append(sweep(args.programs, sizes, dsa, client, settings))
            print_crossovers(runs[-1], args.programs)
    if args.runs > 1:
        print_summary(runs, args.programs, sizes)
    print(f"# every gradient agreed with the one written by hand in NumPy (rtol {RTOL:g})")


if __name__ == "__main__":
    main()

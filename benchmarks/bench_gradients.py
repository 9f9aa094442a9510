"""Gradient time of dualarr against a hand-written NumPy gradient and against peers.

Workloads (the gradient of a rank-0 result with respect to the float inputs named):

- W1 ``sum(x * y)``, w.r.t. x and y, n = 10^3, 10^5, 10^6;
- W2 the paper's Fig. 18, ``sum(build1 n (λi. x[i] * x[n-1-i]))``, w.r.t. x, same n;
- W3 a 784-256-10 tanh MLP with softmax cross-entropy (mean over a batch of 64, one-hot
  labels as an input array), w.r.t. both weight matrices and both biases;
- W4 matmul written elementwise, ``sum(build (m, p) (λi j. sum(build1 n (λk. a[i,k] *
  b[k,j]))))``, w.r.t. a and b, (m, n, p) = (64, 256, 512);
- W5 ``sum(sin(x) * exp(-x*x) + log1p(x*x))``, w.r.t. x, n = 10^6;
- W6 ``sum(x[idx] * w)`` with random integer ``idx``, w.r.t. x and w, 10^5 elements in
  x, 10^6 in idx and w.

Libraries: ``numpy`` (the hand-written gradient: the base of every ratio), ``dualarr``
(``da.grad``, the default ``mode="compiled"``: the generated gradient program of §7),
``dualarr.interp`` (``mode="interpret"``: the concrete dual-arrays path), and, where installed,
HIPS ``autograd``, ``jax`` (``jax.grad`` run eagerly), ``jax.jit`` (``jax.jit(jax.grad)``)
and ``torch`` (``torch.autograd.grad``), all in float64.  Peers write W2 as ``x *
flip(x)`` and W4 with their own ``@`` (they have no ``build``), so W4 shows how far
dualarr's vectorised ``build`` is from a real contraction.  Absent peers are reported as
"not installed" (``pip install -e ".[bench]"`` adds autograd and jax; torch is not in
the extra: ``pip install torch``).

Each library runs in its own process (this script with ``--worker LIBRARY``): on 2
cores the OpenBLAS, OpenMP and XLA thread pools of one process fight and slow each
other.  In a worker, every workload's first gradient is timed on its own (``first s``:
for dualarr that includes tracing and every stage down to code generation; for jax.jit the XLA
compile), checked against the NumPy gradient with ``np.allclose`` (a mismatch stops the
run with a non-zero exit), then, after one more warm-up call, the gradient is timed as the
median of ``--repeat`` samples, each sample running the gradient enough times to last
``--min-sample`` seconds (as ``timeit`` does).  Ratios are taken within one run of this
script; expect about 20% drift between runs.

Memory and BLAS settings are left as the environment has them (the header prints them):

- glibc hands freed memory back to the OS at every large ``free``, which slows
  allocation-heavy NumPy code; ``--malloc-tuned`` runs every worker with
  ``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_MMAP_THRESHOLD_`` raised, the same for all.
- Where ``OPENBLAS_CORETYPE`` (and ``OPENBLAS_L2_SIZE``) are set, an older OpenBLAS
  needs them, and they slow a current NumPy: to measure without them, unset both in the
  benchmark command alone (``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python
  benchmarks/bench_gradients.py``), and never in tests or CI.

Usage: ``python benchmarks/bench_gradients.py [--quick] [--libraries LIB ...]
[--repeat R] [--min-sample S] [--malloc-tuned]``.  ``--quick`` runs small sizes only
(a smoke run of a few seconds per library).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import dualarr as da

Arrays = tuple[np.ndarray, ...]
Step = Callable[[], Any]

LIBRARIES = ("numpy", "dualarr", "dualarr.interp", "autograd", "jax", "jax.jit", "torch")
PEERS = ("autograd", "jax", "jax.jit", "torch")
MODULE = {"numpy": "numpy", "dualarr": "dualarr", "dualarr.interp": "dualarr",
          "autograd": "autograd", "jax": "jax",
          "jax.jit": "jax", "torch": "torch"}
SEED = 20261122
MALLOC_TUNED = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(1 << 30)}


# --------------------------------------------------------------------------------------
# Workloads: inputs, the dualarr program, the hand-written NumPy gradient
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One workload at one size."""

    workload: str
    size: tuple[int, ...]

    @property
    def label(self) -> str:
        if self.workload == "W3":
            batch, n_in, hidden, n_out = self.size
            return f"{n_in}-{hidden}-{n_out} b{batch}"
        if self.workload == "W6":
            return f"n={_num(self.size[0])} m={_num(self.size[1])}"
        if len(self.size) == 1:
            return f"n={_num(self.size[0])}"
        return "x".join(str(s) for s in self.size)


def _num(n: int) -> str:
    exponent = len(str(n)) - 1
    return f"1e{exponent}" if n == 10**exponent and n >= 1000 else str(n)


FULL: tuple[Case, ...] = (
    *(Case("W1", (n,)) for n in (10**3, 10**5, 10**6)),
    *(Case("W2", (n,)) for n in (10**3, 10**5, 10**6)),
    Case("W3", (64, 784, 256, 10)),
    Case("W4", (64, 256, 512)),
    Case("W5", (10**6,)),
    Case("W6", (10**5, 10**6)),
)
QUICK: tuple[Case, ...] = (
    Case("W1", (10**3,)),
    Case("W2", (10**3,)),
    Case("W3", (8, 32, 16, 10)),
    Case("W4", (4, 8, 16)),
    Case("W5", (10**3,)),
    Case("W6", (10**2, 10**3)),
)

ARGNUMS: dict[str, tuple[int, ...]] = {
    "W1": (0, 1), "W2": (0,), "W3": (0, 1, 2, 3), "W4": (0, 1), "W5": (0,), "W6": (0, 2),
}
DESCRIPTION = {
    "W1": "sum(x * y)",
    "W2": "sum(build1 n (λi. x[i] * x[n-1-i]))  (Fig. 18)",
    "W3": "tanh MLP + softmax cross-entropy",
    "W4": "sum(build (m,p) (λi j. sum(build1 n (λk. a[i,k] * b[k,j]))))",
    "W5": "sum(sin(x) * exp(-x*x) + log1p(x*x))",
    "W6": "sum(x[idx] * w), random int idx",
}


def inputs(case: Case) -> Arrays:
    """The arguments of ``case``'s function, the same in every worker."""
    rng = np.random.default_rng(SEED)
    match case.workload:
        case "W1":
            (n,) = case.size
            return rng.standard_normal(n), rng.standard_normal(n)
        case "W2" | "W5":
            (n,) = case.size
            return (rng.standard_normal(n),)
        case "W3":
            batch, n_in, hidden, n_out = case.size
            return (rng.standard_normal((n_in, hidden)) / np.sqrt(n_in),
                    0.1 * rng.standard_normal(hidden),
                    rng.standard_normal((hidden, n_out)) / np.sqrt(hidden),
                    0.1 * rng.standard_normal(n_out),
                    rng.standard_normal((batch, n_in)),
                    np.eye(n_out)[rng.integers(0, n_out, batch)])
        case "W4":
            m, n, p = case.size
            return rng.standard_normal((m, n)), rng.standard_normal((n, p))
        case "W6":
            n, m = case.size
            return rng.standard_normal(n), rng.integers(0, n, m), rng.standard_normal(m)
    raise ValueError(f"unknown workload {case.workload}")


def dualarr_function(case: Case) -> Callable[..., da.Tensor]:
    """A fresh function per case, so that its first gradient traces it anew."""
    match case.workload:
        case "W1":
            def w1(x: da.Tensor, y: da.Tensor) -> da.Tensor:
                return da.sum(x * y)
            return w1
        case "W2":
            def w2(x: da.Tensor) -> da.Tensor:
                n = x.shape[0]
                return da.sum(da.build1(n, lambda i: x[i] * x[n - 1 - i]))
            return w2
        case "W3":
            batch = case.size[0]

            def w3(w1: da.Tensor, b1: da.Tensor, w2: da.Tensor, b2: da.Tensor,
                   x: da.Tensor, labels: da.Tensor) -> da.Tensor:
                hidden = da.tanh(da.matmul(x, w1) + da.replicate(batch, b1))
                logits = da.matmul(hidden, w2) + da.replicate(batch, b2)
                picked = da.sum(logits * labels, axis=1)
                return da.mean(da.logsumexp(logits, axis=1) - picked)
            return w3
        case "W4":
            m, n, p = case.size

            def w4(a: da.Tensor, b: da.Tensor) -> da.Tensor:
                product = da.build(
                    (m, p), lambda i, j: da.sum(da.build1(n, lambda k: a[i, k] * b[k, j]))
                )
                return da.sum(product)
            return w4
        case "W5":
            def w5(x: da.Tensor) -> da.Tensor:
                return da.sum(da.sin(x) * da.exp(-x * x) + da.log1p(x * x))
            return w5
        case "W6":
            def w6(x: da.Tensor, idx: da.Tensor, w: da.Tensor) -> da.Tensor:
                return da.sum(x[idx] * w)
            return w6
    raise ValueError(f"unknown workload {case.workload}")


def numpy_gradient(case: Case) -> Callable[..., Arrays]:
    """The gradient written by hand with NumPy, one array per differentiated input."""
    match case.workload:
        case "W1":
            def g1(x: np.ndarray, y: np.ndarray) -> Arrays:
                return y.copy(), x.copy()
            return g1
        case "W2":
            def g2(x: np.ndarray) -> Arrays:
                return (2.0 * x[::-1],)
            return g2
        case "W3":
            def g3(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray,
                   x: np.ndarray, labels: np.ndarray) -> Arrays:
                hidden = np.tanh(x @ w1 + b1)
                logits = hidden @ w2 + b2
                shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
                d_logits = (shifted / shifted.sum(axis=1, keepdims=True) - labels)
                d_logits /= x.shape[0]
                d_pre = (d_logits @ w2.T) * (1.0 - hidden * hidden)
                return x.T @ d_pre, d_pre.sum(axis=0), hidden.T @ d_logits, d_logits.sum(axis=0)
            return g3
        case "W4":
            def g4(a: np.ndarray, b: np.ndarray) -> Arrays:
                ones = np.ones((a.shape[0], b.shape[1]))
                return ones @ b.T, a.T @ ones
            return g4
        case "W5":
            def g5(x: np.ndarray) -> Arrays:
                gauss = np.exp(-x * x)
                return ((np.cos(x) - 2.0 * x * np.sin(x)) * gauss + 2.0 * x / (1.0 + x * x),)
            return g5
        case "W6":
            def g6(x: np.ndarray, idx: np.ndarray, w: np.ndarray) -> Arrays:
                return np.bincount(idx, weights=w, minlength=x.shape[0]), x[idx]
            return g6
    raise ValueError(f"unknown workload {case.workload}")


# --------------------------------------------------------------------------------------
# Peers: each one's version of the workloads (modules are imported only in its worker)
# --------------------------------------------------------------------------------------


def numpy_like_function(case: Case, xp: Any, logsumexp: Callable[..., Any]) -> Callable[..., Any]:
    """The workload over a NumPy-like namespace (autograd.numpy, jax.numpy)."""
    match case.workload:
        case "W1":
            return lambda x, y: xp.sum(x * y)
        case "W2":
            return lambda x: xp.sum(x * x[::-1])
        case "W3":
            def w3(w1: Any, b1: Any, w2: Any, b2: Any, x: Any, labels: Any) -> Any:
                hidden = xp.tanh(x @ w1 + b1)
                logits = hidden @ w2 + b2
                return xp.mean(logsumexp(logits, axis=1) - xp.sum(logits * labels, axis=1))
            return w3
        case "W4":
            return lambda a, b: xp.sum(a @ b)
        case "W5":
            return lambda x: xp.sum(xp.sin(x) * xp.exp(-x * x) + xp.log1p(x * x))
        case "W6":
            return lambda x, idx, w: xp.sum(x[idx] * w)
    raise ValueError(f"unknown workload {case.workload}")


def torch_function(case: Case, torch: Any) -> Callable[..., Any]:
    match case.workload:
        case "W1":
            return lambda x, y: torch.sum(x * y)
        case "W2":
            return lambda x: torch.sum(x * torch.flip(x, (0,)))
        case "W3":
            def w3(w1: Any, b1: Any, w2: Any, b2: Any, x: Any, labels: Any) -> Any:
                hidden = torch.tanh(x @ w1 + b1)
                logits = hidden @ w2 + b2
                picked = torch.sum(logits * labels, dim=1)
                return torch.mean(torch.logsumexp(logits, dim=1) - picked)
            return w3
        case "W4":
            return lambda a, b: torch.sum(a @ b)
        case "W5":
            return lambda x: torch.sum(torch.sin(x) * torch.exp(-x * x) + torch.log1p(x * x))
        case "W6":
            return lambda x, idx, w: torch.sum(x[idx] * w)
    raise ValueError(f"unknown workload {case.workload}")


@dataclass
class Prepared:
    """A gradient ready to run: ``step()`` computes it (blocking until it is done) and
    ``to_numpy`` turns ``step()``'s result into NumPy arrays for the check."""

    step: Step
    to_numpy: Callable[[Any], Arrays]


def _as_tuple(result: Any) -> Arrays:
    items = result if isinstance(result, tuple | list) else (result,)
    return tuple(np.asarray(item) for item in items)


class Library:
    """One library's way to differentiate the workloads; built inside its worker."""

    name: str

    def version(self) -> str:
        return importlib.metadata.version(MODULE[self.name])

    def prepare(self, case: Case, args: Arrays) -> Prepared:
        raise NotImplementedError


class NumpyLibrary(Library):
    name = "numpy"

    def version(self) -> str:
        return np.__version__

    def prepare(self, case: Case, args: Arrays) -> Prepared:
        gradient = numpy_gradient(case)
        return Prepared(lambda: gradient(*args), _as_tuple)


class DualarrLibrary(Library):
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.name = "dualarr" if mode == "compiled" else "dualarr.interp"

    def version(self) -> str:
        return f"{da.__version__} (mode={self.mode})"

    def prepare(self, case: Case, args: Arrays) -> Prepared:
        gradient = da.grad(
            dualarr_function(case), argnums=ARGNUMS[case.workload], mode=self.mode
        )
        return Prepared(lambda: gradient(*args), _as_tuple)


class AutogradLibrary(Library):
    name = "autograd"

    def __init__(self) -> None:
        self.autograd: Any = importlib.import_module("autograd")
        self.anp: Any = importlib.import_module("autograd.numpy")
        self.special: Any = importlib.import_module("autograd.scipy.special")

    def prepare(self, case: Case, args: Arrays) -> Prepared:
        f = numpy_like_function(case, self.anp, self.special.logsumexp)
        gradient = self.autograd.grad(f, argnum=ARGNUMS[case.workload])
        return Prepared(lambda: gradient(*args), _as_tuple)


class JaxLibrary(Library):
    name = "jax"

    def __init__(self, jit: bool) -> None:
        self.jit = jit
        self.name = "jax.jit" if jit else "jax"
        self.jax: Any = importlib.import_module("jax")
        self.jax.config.update("jax_enable_x64", True)
        self.jax.config.update("jax_platforms", "cpu")
        self.jnp: Any = importlib.import_module("jax.numpy")
        self.special: Any = importlib.import_module("jax.scipy.special")

    def version(self) -> str:
        return f"{self.jax.__version__} ({self.jax.default_backend()})"

    def prepare(self, case: Case, args: Arrays) -> Prepared:
        jax = self.jax
        f = numpy_like_function(case, self.jnp, self.special.logsumexp)
        gradient = jax.grad(f, argnums=ARGNUMS[case.workload])
        if self.jit:
            gradient = jax.jit(gradient)
        device_args = tuple(jax.device_put(a) for a in args)
        jax.block_until_ready(device_args)
        return Prepared(lambda: jax.block_until_ready(gradient(*device_args)), _as_tuple)


class TorchLibrary(Library):
    name = "torch"

    def __init__(self) -> None:
        self.torch: Any = importlib.import_module("torch")

    def version(self) -> str:
        return f"{self.torch.__version__} ({self.torch.get_num_threads()} threads)"

    def prepare(self, case: Case, args: Arrays) -> Prepared:
        torch = self.torch
        f = torch_function(case, torch)
        wrt = ARGNUMS[case.workload]
        tensors = tuple(
            torch.tensor(a, requires_grad=k in wrt) if a.dtype.kind == "f" else torch.tensor(a)
            for k, a in enumerate(args)
        )
        targets = [tensors[k] for k in wrt]

        def step() -> Any:
            return torch.autograd.grad(f(*tensors), targets)

        return Prepared(step, lambda result: tuple(t.detach().numpy() for t in result))


def make_library(name: str) -> Library:
    match name:
        case "numpy":
            return NumpyLibrary()
        case "dualarr":
            return DualarrLibrary("compiled")
        case "dualarr.interp":
            return DualarrLibrary("interpret")
        case "autograd":
            return AutogradLibrary()
        case "jax" | "jax.jit":
            return JaxLibrary(jit=name == "jax.jit")
        case "torch":
            return TorchLibrary()
    raise ValueError(f"unknown library {name}")


# --------------------------------------------------------------------------------------
# Timing, in a worker
# --------------------------------------------------------------------------------------


def sample_time(step: Step, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        step()
    return (time.perf_counter() - start) / number


def median_time(step: Step, repeat: int, min_sample: float) -> tuple[float, int]:
    """Median seconds per call over ``repeat`` samples of ``number`` calls each, with
    ``number`` grown until one sample lasts ``min_sample`` seconds; -> (median, number)."""
    number = 1
    while True:
        per_call = sample_time(step, number)
        if per_call * number >= min_sample or number >= 1 << 20:
            break
        number = max(number * 2, min(1 << 20, int(min_sample / max(per_call, 1e-9)) + 1))
    samples = [sample_time(step, number) for _ in range(repeat)]
    return statistics.median(samples), number


def check(case: Case, library: str, got: Arrays, want: Arrays) -> None:
    if len(got) != len(want):
        raise SystemExit(f"bench_gradients: {library} {case.workload} {case.label}: "
                         f"{len(got)} gradients, NumPy has {len(want)}")
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape or not np.allclose(g, w):
            error = np.max(np.abs(g - w)) if g.shape == w.shape else "shape"
            raise SystemExit(
                f"bench_gradients: {library} {case.workload} {case.label}: gradient {k} "
                f"differs from the NumPy gradient (shapes {g.shape} vs {w.shape}, "
                f"max abs difference {error})"
            )


def worker(name: str, cases: Sequence[Case], repeat: int, min_sample: float) -> None:
    """Run every case with one library; one JSON object per line on stdout."""
    library = make_library(name)
    print(json.dumps({"library": name, "version": library.version()}), flush=True)
    for case in cases:
        args = inputs(case)
        want = numpy_gradient(case)(*args)
        prepared = library.prepare(case, args)
        start = time.perf_counter()
        result = prepared.step()
        first = time.perf_counter() - start
        check(case, name, prepared.to_numpy(result), want)
        prepared.step()  # one more warm-up call
        median, number = median_time(prepared.step, repeat, min_sample)
        print(json.dumps({"workload": case.workload, "label": case.label, "first": first,
                          "median": median, "number": number}), flush=True)


# --------------------------------------------------------------------------------------
# The driver: one worker process per library, then the tables
# --------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one library's worker gave: a version and times, or why not."""

    status: str  # "ok", "not installed", "failed"
    version: str = ""
    times: dict[tuple[str, str], tuple[float, float]] | None = None  # -> (first, median)


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


def run_worker(name: str, args: argparse.Namespace) -> Outcome:
    if importlib.util.find_spec(MODULE[name]) is None:
        return Outcome("not installed")
    command = [sys.executable, os.path.abspath(__file__), "--worker", name,
               "--repeat", str(args.repeat), "--min-sample", str(args.min_sample)]
    if args.quick:
        command.append("--quick")
    env = dict(os.environ)
    if args.malloc_tuned:
        env.update(MALLOC_TUNED)
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"# {name}: worker timed out after {args.timeout} s", file=sys.stderr)
        return Outcome("failed")
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        print(f"# {name}: worker failed (exit {done.returncode}):\n{tail}", file=sys.stderr)
        return Outcome("failed")
    outcome = Outcome("ok", times={})
    for line in done.stdout.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if "version" in record:
            outcome.version = record["version"]
        else:
            assert outcome.times is not None
            key = (record["workload"], record["label"])
            outcome.times[key] = (record["first"], record["median"])
    return outcome


def _cell(value: float | None, fmt: str, width: int) -> str:
    return f"{'-' if value is None else format(value, fmt):>{width}}"


def print_tables(cases: Sequence[Case], outcomes: dict[str, Outcome]) -> None:
    shown = [name for name in LIBRARIES if outcomes[name].status == "ok"]
    rows = [(case.workload, case.label) for case in cases]

    def times(name: str, row: tuple[str, str]) -> tuple[float, float] | None:
        table = outcomes[name].times
        return None if table is None else table.get(row)

    width = 15
    head = f"{'workload':<9}{'size':<17}"
    print("\n## median ms per gradient")
    print(head + "".join(f"{name:>{width}}" for name in shown))
    for row in rows:
        cells = []
        for name in shown:
            t = times(name, row)
            cells.append(_cell(None if t is None else t[1] * 1e3, ".3f", width))
        print(f"{row[0]:<9}{row[1]:<17}" + "".join(cells))

    others = [name for name in shown if name != "numpy"]
    print("\n## ratio to the NumPy gradient (median / NumPy median)")
    print(head + "".join(f"{name:>{width}}" for name in others))
    for row in rows:
        base = times("numpy", row) if "numpy" in shown else None
        cells = []
        for name in others:
            t = times(name, row)
            ratio = None if t is None or base is None else t[1] / base[1]
            cells.append(_cell(ratio, ".2f", width))
        print(f"{row[0]:<9}{row[1]:<17}" + "".join(cells))

    print("\n## time to first gradient, s (dualarr: trace + every stage + codegen; "
          "jax.jit: compile)")
    print(head + "".join(f"{name:>{width}}" for name in others))
    for row in rows:
        cells = []
        for name in others:
            t = times(name, row)
            cells.append(_cell(None if t is None else t[0], ".4f", width))
        print(f"{row[0]:<9}{row[1]:<17}" + "".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    parser.add_argument("--libraries", nargs="+", choices=LIBRARIES, default=list(LIBRARIES),
                        help="libraries to run (default: all; numpy is the base of ratios)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed samples per case (default 7; 3 with --quick)")
    parser.add_argument("--min-sample", type=float, default=None,
                        help="seconds one sample lasts at least (default 0.05; 0.005 quick)")
    parser.add_argument("--malloc-tuned", action="store_true",
                        help="raise MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ in "
                             "every worker")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds one library's worker may run")
    parser.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat is None:
        args.repeat = 3 if args.quick else 7
    if args.min_sample is None:
        args.min_sample = 0.005 if args.quick else 0.05
    cases = QUICK if args.quick else FULL
    if args.worker is not None:
        worker(args.worker, cases, args.repeat, args.min_sample)
        return

    print(f"# bench_gradients.py{' --quick' if args.quick else ''}  "
          f"({datetime.date.today().isoformat()}, {cores()} cores, {cpu_model()})")
    print(f"# {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, numpy {np.__version__}")
    blas = {k: os.environ.get(k, "unset") for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    malloc = "raised (--malloc-tuned)" if args.malloc_tuned else "as in the environment"
    print(f"# OPENBLAS_CORETYPE={blas['OPENBLAS_CORETYPE']}, "
          f"OPENBLAS_L2_SIZE={blas['OPENBLAS_L2_SIZE']}; malloc thresholds {malloc}")
    print(f"# load average at start: {os.getloadavg()[0]:.2f}")
    print(f"# median of {args.repeat} samples of >= {args.min_sample} s after a warm-up; "
          "each library in its own process; float64")
    for workload, text in DESCRIPTION.items():
        print(f"#   {workload}: {text}")
    outcomes: dict[str, Outcome] = {}
    for name in LIBRARIES:
        if name not in args.libraries:
            outcomes[name] = Outcome("not run")
            continue
        start = time.perf_counter()
        outcomes[name] = outcome = run_worker(name, args)
        took = time.perf_counter() - start
        detail = f"{outcome.version}, worker {took:.1f} s" if outcome.status == "ok" else ""
        print(f"# {name:<9}{outcome.status}{': ' + detail if detail else ''}", flush=True)
    print_tables(cases, outcomes)
    failed = [name for name, outcome in outcomes.items() if outcome.status == "failed"]
    if failed:
        raise SystemExit(f"bench_gradients: failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()

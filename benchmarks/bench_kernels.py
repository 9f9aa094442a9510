"""CPU kernel compilers for fused elementwise float64 work: NumPy, numexpr and numba.

The fusion pass groups elementwise work of a generated gradient program into kernels;
this script measures the candidates for compiling them on CPU (float64, every thread
pool sized to the machine's cores):

- NumPy by hand: one ufunc call per operation (the unfused program);
- ``numexpr.evaluate(expression)``: parses (and looks up its cache) on every call;
- a prebuilt ``numexpr.NumExpr(expression, signature=[...])`` object, called directly;
- numba ``@njit(parallel=True, fastmath=False)`` with a ``prange`` loop, the same loop
  compiled serially, and ``@vectorize([...], target="parallel")`` on the scalar expression.

Kernels:

1. the W5 gradient ``cos(x)*e*dt - 2*x*s*e*dt + 2*x/(1+x*x)*dt`` with ``e = exp(-x*x)``
   and ``s = sin(x)`` given as inputs, and the whole gradient as one expression with
   ``exp`` and ``sin`` computed inside;
2. one step of the chain ``tanh(y*r + 0.5*g)``;
3. a single multiply ``x*y``.

Measured: the steady-state time per call at n = 10^3 and 10^6 (median of several
``timeit`` samples, each long enough to read a clock, and the fastest sample, which a
loaded machine disturbs least); compile time per kernel (the
``NumExpr`` construction; numba's first call in a fresh process with no cache, with
``cache=True`` into an empty cache directory, and with ``cache=True`` loading that cache
in another fresh process); the import time of each module in a fresh process (NumPy
already imported); the installed size of each distribution (numba counts llvmlite); and
agreement with NumPy (``np.allclose`` and the largest relative error); the time from
``import`` to the first W5 kernel's result.

A function alone in its kernel (``sin``, ``cos``, ``exp``, ``tanh``, ``log1p`` of one
array, written into a given buffer) is measured apart: NumPy's ufunc, a prebuilt
``NumExpr`` on every thread, and Intel's Vector Math Library as ``mkl_umath``'s ufunc
(the ``vml`` extra, when installed), with its import time and installed size.

Every library runs in its own process (thread pools of different libraries slow each
other on few cores).  The table is printed and, unless ``--quick``, written to
``benchmarks/results/kernels.txt`` (``--output`` names another file), ending with the
choice that the numbers support.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
from bench_gradients import cores, cpu_model

HERE = Path(__file__).resolve().parent
Array = npt.NDArray[np.float64]

SIZES = (1_000, 1_000_000)
FIRST_GRADIENT_GOAL_MS = (20.0, 40.0)
FUNCTIONS = ("exp", "sin", "cos", "tanh")


@dataclass(frozen=True)
class Kernel:
    """One fused kernel: its inputs and its body as a single expression."""

    name: str
    inputs: tuple[str, ...]
    expression: str


W5_GRADIENT = "cos(x)*e*dt - 2*x*s*e*dt + 2*x/(1+x*x)*dt"
KERNELS = (
    Kernel("w5_whole", ("x", "dt"),
           "cos(x)*exp(-x*x)*dt - 2*x*sin(x)*exp(-x*x)*dt + 2*x/(1+x*x)*dt"),
    Kernel("w5_inputs", ("x", "e", "s", "dt"), W5_GRADIENT),
    Kernel("tanh_step", ("y", "r", "g"), "tanh(y*r + 0.5*g)"),
    Kernel("multiply", ("x", "y"), "x*y"),
)


def _numpy_w5_inputs(x: Array, e: Array, s: Array, dt: Array) -> Array:
    return np.cos(x) * e * dt - 2 * x * s * e * dt + 2 * x / (1 + x * x) * dt


def _numpy_w5_whole(x: Array, dt: Array) -> Array:
    e = np.exp(-x * x)  # written once, as a programmer (or the unfused program) shares it
    return _numpy_w5_inputs(x, e, np.sin(x), dt)


def _numpy_tanh_step(y: Array, r: Array, g: Array) -> Array:
    return np.tanh(y * r + 0.5 * g)


def _numpy_multiply(x: Array, y: Array) -> Array:
    return x * y


NUMPY: dict[str, Callable[..., Array]] = {
    "w5_whole": _numpy_w5_whole,
    "w5_inputs": _numpy_w5_inputs,
    "tanh_step": _numpy_tanh_step,
    "multiply": _numpy_multiply,
}

METHODS = {
    "numpy": "NumPy",
    "evaluate": "ne.evaluate",
    "numexpr": "ne.NumExpr",
    "njit": "njit prange",
    "serial": "njit serial",
    "vectorize": "vectorize par",
}
LEGEND = {
    "numpy": "hand-written NumPy, one ufunc call per operation",
    "evaluate": "numexpr.evaluate(expression, local_dict=...) on every call",
    "numexpr": "a prebuilt numexpr.NumExpr(expression, signature=[...]) called",
    "njit": "numba @njit(parallel=True, fastmath=False), prange loop",
    "serial": "numba @njit(fastmath=False), the same loop run serially (range)",
    "vectorize": 'numba @vectorize(["float64(...)"], target="parallel") on the expression',
}

CallMaker = Callable[[Kernel, dict[str, Array]], Callable[[], Array]]


# ---------------------------------------------------------------- inputs and checks


def inputs(kernel: Kernel, n: int) -> dict[str, Array]:
    """Seeded inputs; ``e`` and ``s`` are ``exp(-x*x)`` and ``sin(x)`` of the same ``x``."""
    rng = np.random.default_rng(n)
    x = rng.uniform(-3.0, 3.0, n)
    pool = {"x": x, "e": np.exp(-x * x), "s": np.sin(x), "dt": rng.uniform(0.5, 1.5, n),
            "y": rng.standard_normal(n), "r": rng.standard_normal(n),
            "g": rng.standard_normal(n)}
    return {name: pool[name] for name in kernel.inputs}


def max_relative_error(result: Array, reference: Array) -> float:
    """Largest ``|result - reference| / |reference|`` (denominator floored at 1e-300)."""
    scale = np.maximum(np.abs(reference), 1e-300)
    return float(np.max(np.abs(result - reference) / scale))


def per_call_seconds(call: Callable[[], object], min_sample: float,
                     repeat: int) -> tuple[float, float]:
    """Median and fastest seconds per call over ``repeat`` samples of >= ``min_sample`` s."""
    call()
    number = 1
    while (elapsed := timeit.timeit(call, number=number)) < min_sample:
        number = max(number * 2, int(number * min_sample / max(elapsed, 1e-9) * 1.2))
    samples = [sample / number for sample in timeit.repeat(call, number=number, repeat=repeat)]
    return statistics.median(samples), min(samples)


def measure(make_call: CallMaker, args: argparse.Namespace) -> dict[str, Any]:
    """Per-call times of every kernel at every size, and agreement with NumPy at the largest."""
    median: dict[str, dict[str, float]] = {}
    fastest: dict[str, dict[str, float]] = {}
    error: dict[str, float] = {}
    close: dict[str, bool] = {}
    for kernel in KERNELS:
        median[kernel.name], fastest[kernel.name] = {}, {}
        for n in SIZES:
            data = inputs(kernel, n)
            call = make_call(kernel, data)
            times = per_call_seconds(call, args.min_sample, args.repeat)
            median[kernel.name][str(n)], fastest[kernel.name][str(n)] = times
        reference = NUMPY[kernel.name](*data.values())
        result = call()
        error[kernel.name] = max_relative_error(result, reference)
        close[kernel.name] = bool(np.allclose(result, reference))
    return {"median": median, "fastest": fastest, "error": error, "allclose": close}


def positional(table: dict[str, Callable[..., Array]]) -> CallMaker:
    """Call ``table[kernel.name]`` with the inputs in order."""
    def make_call(kernel: Kernel, data: dict[str, Array]) -> Callable[[], Array]:
        return functools.partial(table[kernel.name], *data.values())
    return make_call


# ---------------------------------------------------------------- numba source


def numba_source(kernels: tuple[Kernel, ...] = KERNELS) -> str:
    """The Python module numba compiles: a ``prange`` loop and a scalar body per kernel."""
    lines = ["import math", "", "import numpy as np", "from numba import prange", ""]
    for kernel in kernels:
        names = "|".join(kernel.inputs)
        indexed = re.sub(rf"\b({names})\b", r"\1[i]", kernel.expression)
        scalar = kernel.expression
        for function in FUNCTIONS:
            indexed = re.sub(rf"\b{function}\(", f"math.{function}(", indexed)
            scalar = re.sub(rf"\b{function}\(", f"math.{function}(", scalar)
        arguments = ", ".join(kernel.inputs)
        lines += ["", f"def {kernel.name}({arguments}):",
                  f"    out = np.empty_like({kernel.inputs[0]})",
                  f"    for i in prange({kernel.inputs[0]}.shape[0]):",
                  f"        out[i] = {indexed}",
                  "    return out", "",
                  "", f"def {kernel.name}_scalar({arguments}):",
                  f"    return {scalar}", ""]
    return "\n".join(lines)


def load_module(path: Path) -> ModuleType:
    """Import the generated module by name (numba's cache re-imports it when loading)."""
    sys.path.insert(0, str(path.parent))
    return importlib.import_module(path.stem)


# ---------------------------------------------------------------- workers


def worker_numpy(args: argparse.Namespace) -> dict[str, Any]:
    return {"methods": {"numpy": measure(positional(NUMPY), args)}}


def worker_numexpr(args: argparse.Namespace) -> dict[str, Any]:
    ne = importlib.import_module("numexpr")
    ne.set_num_threads(args.threads)
    compile_first: dict[str, float] = {}
    compile_again: dict[str, float] = {}
    prebuilt: dict[str, Callable[..., Array]] = {}
    for kernel in KERNELS:
        signature = [(name, np.float64) for name in kernel.inputs]
        started = time.perf_counter()
        prebuilt[kernel.name] = ne.NumExpr(kernel.expression, signature=signature)
        compile_first[kernel.name] = time.perf_counter() - started
        build = functools.partial(ne.NumExpr, kernel.expression, signature=signature)
        compile_again[kernel.name] = per_call_seconds(build, args.min_sample, args.repeat)[0]

    def evaluate(kernel: Kernel, data: dict[str, Array]) -> Callable[[], Array]:
        return functools.partial(ne.evaluate, kernel.expression, local_dict=data)

    methods = {"evaluate": measure(evaluate, args), "numexpr": measure(positional(prebuilt), args)}
    methods["numexpr"]["compile_first"] = compile_first
    methods["numexpr"]["compile_again"] = compile_again
    return {"version": ne.__version__, "vml": bool(ne.use_vml), "methods": methods}


def worker_numba(args: argparse.Namespace) -> dict[str, Any]:
    """Compile every kernel (first call, timed) in this fresh process; optionally time them."""
    started = time.perf_counter()
    numba = importlib.import_module("numba")
    import_s = time.perf_counter() - started
    numba.set_num_threads(args.threads)
    module = load_module(Path(args.source))
    cache = args.worker in ("numba-cache-fill", "numba-cache-load")

    def first_calls(**options: bool) -> tuple[dict[str, Any], dict[str, float], int]:
        compiled: dict[str, Any] = {}
        seconds: dict[str, float] = {}
        for kernel in KERNELS:
            dispatcher = numba.njit(fastmath=False, **options)(getattr(module, kernel.name))
            small = tuple(inputs(kernel, SIZES[0]).values())
            started = time.perf_counter()
            dispatcher(*small)
            seconds[kernel.name] = time.perf_counter() - started
            compiled[kernel.name] = dispatcher
        hits = sum(sum(d.stats.cache_hits.values()) for d in compiled.values())
        return compiled, seconds, hits

    parallel, first, hits = first_calls(parallel=True, cache=cache)
    report: dict[str, Any] = {"version": numba.__version__, "import_s": import_s,
                              "first_call": first, "cache_hits": hits,
                              "llvmlite": importlib.metadata.version("llvmlite")}
    if cache:
        return report
    report["threading_layer"] = numba.threading_layer()
    serial, serial_first, _ = first_calls(parallel=False, cache=False)
    vectorized: dict[str, Callable[..., Array]] = {}
    vectorize_compile: dict[str, float] = {}
    for kernel in KERNELS:
        signature = "float64(" + ", ".join("float64" for _ in kernel.inputs) + ")"
        started = time.perf_counter()
        vectorized[kernel.name] = numba.vectorize([signature], target="parallel")(
            getattr(module, kernel.name + "_scalar"))
        vectorize_compile[kernel.name] = time.perf_counter() - started
    methods = {"njit": measure(positional(parallel), args),
               "serial": measure(positional(serial), args),
               "vectorize": measure(positional(vectorized), args)}
    methods["serial"]["compile_first"] = serial_first
    methods["vectorize"]["compile_first"] = vectorize_compile
    report["methods"] = methods
    return report


ALONE = ("sin", "cos", "exp", "tanh", "log1p")
"""The functions timed alone in a kernel (:func:`worker_alone`)."""

VML_DISTRIBUTIONS = ("mkl_umath", "mkl", "intel-openmp", "intel-cmplr-lib-rt",
                     "intel-cmplr-lib-ur", "tbb", "tcmlib", "umf")
"""``mkl_umath`` and what it installs with it."""


def worker_alone(args: argparse.Namespace) -> dict[str, Any]:
    """Each function of :data:`ALONE` alone, at every size, by one library (the worker's
    name says which): ``f(x, out=buffer)``, or ``NumExpr("f(x)")(x, out=buffer)``."""
    library = args.worker.removeprefix("alone-")
    calls: dict[str, Callable[..., Array]] = {}
    for function in ALONE:
        match library:
            case "numpy":
                calls[function] = getattr(np, function)
            case "numexpr":
                ne = importlib.import_module("numexpr")
                ne.set_num_threads(args.threads)
                prebuilt = ne.NumExpr(f"{function}(x)", signature=[("x", np.float64)])
                calls[function] = functools.partial(_numexpr_into, prebuilt)
            case "vml":
                calls[function] = getattr(importlib.import_module("mkl_umath"), function)
    median: dict[str, dict[str, float]] = {}
    error: dict[str, float] = {}
    for function, call in calls.items():
        median[function] = {}
        for n in SIZES:
            x = np.random.default_rng(n).uniform(0.0, 3.0, n)
            buffer = np.empty_like(x)
            timed: Callable[[], Array] = functools.partial(call, x, out=buffer)
            median[function][str(n)] = per_call_seconds(timed, args.min_sample, args.repeat)[0]
        error[function] = max_relative_error(timed(), getattr(np, function)(x))
    return {"median": median, "error": error}


def _numexpr_into(kernel: Any, x: Array, out: Array) -> Array:
    result: Array = kernel(x, out=out, order="K", casting="safe", ex_uses_vml=False)
    return result


WORKERS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "numpy": worker_numpy,
    "numexpr": worker_numexpr,
    "numba-cold": worker_numba,
    "numba-cache-fill": worker_numba,
    "numba-cache-load": worker_numba,
    "alone-numpy": worker_alone,
    "alone-numexpr": worker_alone,
    "alone-vml": worker_alone,
}


def run_worker(name: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    command = [sys.executable, os.path.abspath(__file__), "--worker", name,
               "--repeat", str(args.repeat), "--min-sample", str(args.min_sample),
               "--threads", str(args.threads), "--source", args.source]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"bench_kernels: worker {name} failed (exit {done.returncode})")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# ---------------------------------------------------------------- install and import costs


def import_seconds(module: str, repeat: int) -> float:
    """Median wall time of ``import module`` in fresh processes that already imported NumPy."""
    code = ("import time, numpy\nstarted = time.perf_counter()\n"
            f"import {module}\nprint(time.perf_counter() - started)")
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                  text=True, check=True).stdout) for _ in range(repeat)]
    return statistics.median(times)


def numexpr_first_kernel_seconds(repeat: int) -> float:
    """Median time from ``import numexpr`` to the first W5 kernel's result, fresh processes."""
    kernel = KERNELS[0]
    code = ("import time, numpy as np\n"
            "x = np.linspace(-3.0, 3.0, 1000); dt = np.ones(1000)\n"
            "started = time.perf_counter()\n"
            "import numexpr\n"
            f"kernel = numexpr.NumExpr({kernel.expression!r}, "
            "signature=[('x', np.float64), ('dt', np.float64)])\n"
            "kernel(x, dt)\n"
            "print(time.perf_counter() - started)")
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                  text=True, check=True).stdout) for _ in range(repeat)]
    return statistics.median(times)


def installed_bytes(distribution: str) -> int:
    """Bytes on disk of the files the installed distribution lists (its RECORD)."""
    files = importlib.metadata.distribution(distribution).files or []
    total = 0
    for file in files:
        path = Path(str(file.locate()))
        if path.is_file():
            total += path.stat().st_size
    return total


# ---------------------------------------------------------------- report


def numpy_simd() -> str:
    """The widest x86 SIMD targets NumPy dispatches to on this CPU (its runtime features)."""
    try:
        features = importlib.import_module("numpy._core._multiarray_umath").__cpu_features__
    except (ImportError, AttributeError):
        return "unknown"
    found = [name for name in ("AVX512_SKX", "AVX2", "ASIMD") if features.get(name)]
    return ", ".join(found[:1]) or "baseline"


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(value) for value in values) / len(values))


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f}" if seconds < 1e-3 else f"{seconds * 1e6:.0f}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


@dataclass
class Measured:
    """Everything the workers and probes gave, read by the report."""

    methods: dict[str, Any]
    numexpr_version: str
    numba: dict[str, Any]  # the cold worker: versions, first calls, threading layer
    cache_fill: dict[str, Any]
    cache_load: dict[str, Any]
    imports: dict[str, float]
    sizes: dict[str, int]
    numexpr_ready: float  # import + NumExpr + first call, fresh process
    numexpr_vml: bool
    alone: dict[str, Any]  # library -> worker_alone's result (vml when installed)

    def times(self, method: str, n: int, statistic: str = "median") -> list[float]:
        return [self.methods[method][statistic][k.name][str(n)] for k in KERNELS]

    def ratio(self, method: str, other: str, n: int, statistic: str = "median") -> float:
        """Geometric mean over the kernels of ``method``'s time / ``other``'s."""
        return geometric_mean([a / b for a, b in zip(self.times(method, n, statistic),
                                                     self.times(other, n, statistic),
                                                     strict=True)])


def steady_table(data: Measured, statistic: str) -> list[str]:
    out = [f"{'kernel':11s} {'n':>8s}" + "".join(f" {METHODS[m]:>17s}" for m in METHODS)]
    for kernel in KERNELS:
        for n in SIZES:
            base = data.methods["numpy"][statistic][kernel.name][str(n)]
            row = f"{kernel.name:11s} {n:8d}"
            for method in METHODS:
                seconds = data.methods[method][statistic][kernel.name][str(n)]
                cell = _us(seconds) + ("" if method == "numpy" else f" ({seconds / base:.2f})")
                row += f" {cell:>17s}"
            out.append(row)
    return out


def report(args: argparse.Namespace, load_start: float, data: Measured, source: str) -> str:
    cold = data.numba
    out = [f"# bench_kernels.py  ({datetime.date.today().isoformat()}, {cores()} cores, "
           f"{cpu_model()})",
           f"# CPython {platform.python_version()}, {platform.machine()}, numpy "
           f"{np.__version__}, numexpr {data.numexpr_version}, numba {cold['version']}, "
           f"llvmlite {cold['llvmlite']}",
           f"# numexpr VML: {'yes' if data.numexpr_vml else 'no'} (without it numexpr "
           "calls libm per element); NumPy's widest SIMD target: " + numpy_simd(),
           f"# threads: {args.threads} (numexpr.set_num_threads, numba.set_num_threads); "
           f"numba threading layer: {cold['threading_layer']}",
           f"# load average at start: {load_start:.2f}, at end: {os.getloadavg()[0]:.2f} "
           "(a shared machine: parallel kernels lose whole time slices when it is loaded)",
           f"# float64; {args.repeat} timeit samples of >= {args.min_sample} s after a warm-up; "
           "each library in its own process" + ("  [--quick smoke run]" if args.quick else "")]
    out += [f"#   {kernel.name:10s} ({', '.join(kernel.inputs)}) -> {kernel.expression}"
            for kernel in KERNELS]
    out += [f"#   {METHODS[m]:13s} {LEGEND[m]}" for m in METHODS]
    out += ["", "## steady state: µs per call, median; in brackets / NumPy"]
    out += steady_table(data, "median")
    out += ["", "## steady state: µs per call, fastest sample (least disturbed); / NumPy"]
    out += steady_table(data, "fastest")

    out += ["", "## compile: ms per kernel (numba: first call at n = 1000, kernels compiled in "
            "the order listed, the first paying numba's one-time setup)"]
    columns = {"NumExpr() first": data.methods["numexpr"]["compile_first"],
               "NumExpr() again": data.methods["numexpr"]["compile_again"],
               "njit cold": cold["first_call"],
               "njit cache fill": data.cache_fill["first_call"],
               "njit cache load": data.cache_load["first_call"],
               "serial cold": data.methods["serial"]["compile_first"],
               "vectorize cold": data.methods["vectorize"]["compile_first"]}
    out.append(f"{'kernel':11s}" + "".join(f" {name:>15s}" for name in columns))
    for kernel in KERNELS:
        out.append(f"{kernel.name:11s}" + "".join(f" {_ms(column[kernel.name]):>15s}"
                                                  for column in columns.values()))
    out.append("njit cold: fresh process, no cache; cache fill: fresh process, cache=True, empty "
               "cache; cache load: another fresh process reading it "
               f"({data.cache_load['cache_hits']} of {len(KERNELS)} kernels hit); "
               "serial and vectorize: compiled after the parallel kernels in the cold process")

    nb_cold = data.imports["numba"] + cold["first_call"][KERNELS[0].name]
    nb_cached = data.imports["numba"] + data.cache_load["first_call"][KERNELS[0].name]
    numba_bytes = data.sizes["numba"] + data.sizes["llvmlite"]
    out += ["", "## import, install, first kernel",
            f"{'module':8s} {'import ms':>10s} {'installed MB':>13s}   first W5 kernel "
            "(w5_whole) ready: import + compile + first call at n = 1000, ms",
            f"{'numexpr':8s} {_ms(data.imports['numexpr']):>10s} "
            f"{data.sizes['numexpr'] / 1e6:13.1f}   {_ms(data.numexpr_ready)}",
            f"{'numba':8s} {_ms(data.imports['numba']):>10s} {numba_bytes / 1e6:13.1f}   "
            f"{_ms(nb_cold)} cold, {_ms(nb_cached)} from cache  (numba "
            f"{data.sizes['numba'] / 1e6:.1f} MB + llvmlite {data.sizes['llvmlite'] / 1e6:.1f} MB)",
            f"import: median of {args.import_repeat} fresh processes with NumPy already "
            "imported (numexpr's first kernel likewise); size: the files each installed "
            "distribution lists"]

    out += ["", f"## agreement with NumPy at n = {SIZES[-1]}: max relative error (allclose)",
            f"{'kernel':11s}" + "".join(f" {METHODS[m]:>17s}" for m in METHODS if m != "numpy")]
    for kernel in KERNELS:
        row = f"{kernel.name:11s}"
        for method in METHODS:
            if method != "numpy":
                error = data.methods[method]["error"][kernel.name]
                close = "ok" if data.methods[method]["allclose"][kernel.name] else "DIFFERS"
                row += f" {f'{error:.1e} ({close})':>17s}"
        out.append(row)

    body = source.split(f"def {KERNELS[1].name}(")[1].split("\n\n")[0]
    out += ["", f"## kernel source as generated for each compiler ({KERNELS[1].name})",
            f"numexpr:  NumExpr({KERNELS[1].expression!r}, signature=[...])",
            "numba:    @njit(parallel=True, fastmath=False)",
            f"          def {KERNELS[1].name}(" + body.replace("\n", "\n          "), ""]
    out += alone_table(data)
    out += choice(data, nb_cold, nb_cached)
    return "\n".join(out) + "\n"


ALONE_NAMES = {"numpy": "NumPy ufunc", "numexpr": "NumExpr", "vml": "mkl_umath"}


def alone_table(data: Measured) -> list[str]:
    """One function alone: µs per call of each library, and in brackets / NumPy's."""
    libraries = [name for name in ALONE_NAMES if name in data.alone]
    out = ["## one function alone in its kernel: µs per call, median; in brackets / NumPy "
           "(NumExpr and mkl_umath on every thread; max relative error to NumPy last)",
           f"{'function':9s} {'n':>8s}" + "".join(f" {ALONE_NAMES[m]:>16s}" for m in libraries)
           + "".join(f" {'error ' + ALONE_NAMES[m]:>18s}" for m in libraries[1:])]
    for function in ALONE:
        for n in SIZES:
            base = data.alone["numpy"]["median"][function][str(n)]
            row = f"{function:9s} {n:8d}"
            for library in libraries:
                seconds = data.alone[library]["median"][function][str(n)]
                cell = _us(seconds) + ("" if library == "numpy" else f" ({seconds / base:.2f})")
                row += f" {cell:>16s}"
            if n == SIZES[-1]:
                row += "".join(f" {data.alone[m]['error'][function]:18.1e}"
                               for m in libraries[1:])
            out.append(row)
    if "vml" in data.alone:
        vml_mb = sum(data.sizes.get(d, 0) for d in VML_DISTRIBUTIONS) / 1e6
        out.append(f"mkl_umath: import {_ms(data.imports['mkl_umath'])} ms (NumPy imported); "
                   f"installed with mkl, intel-openmp and the other libraries it requires: "
                   f"{vml_mb:.0f} MB")
    else:
        out.append("mkl_umath (the vml extra) is not installed: no column")
    return [*out, ""]


def choice(data: Measured, nb_cold: float, nb_cached: float) -> list[str]:
    """The paragraph that reads the numbers: which compiler wins on what."""
    small, large = SIZES
    goal_low, goal_high = FIRST_GRADIENT_GOAL_MS
    ne_vs_nb = data.ratio("numexpr", "njit", large)
    ne_vs_nb_fast = data.ratio("numexpr", "njit", large, "fastest")
    ne_vs_np = data.ratio("numexpr", "numpy", large)
    slower_than_numpy = [
        kernel.name for index, kernel in enumerate(KERNELS)
        if all(data.times("numexpr", large, statistic)[index]
               > data.times("numpy", large, statistic)[index]
               for statistic in ("median", "fastest"))]
    single = {n: data.methods["numexpr"]["median"]["multiply"][str(n)]
              / data.methods["numpy"]["median"]["multiply"][str(n)] for n in SIZES}
    small_best = {m: geometric_mean(data.times(m, small)) for m in METHODS}
    fastest_small = min(small_best, key=small_best.__getitem__)
    ne_compile_ms = 1e3 * max(data.methods["numexpr"]["compile_first"].values())
    nb_compile_ms = 1e3 * statistics.median(data.numba["first_call"].values())
    nb_load_ms = 1e3 * statistics.median(data.cache_load["first_call"].values())
    numba_mb = (data.sizes["numba"] + data.sizes["llvmlite"]) / 1e6
    numexpr_mb = data.sizes["numexpr"] / 1e6
    ne_meets = 1e3 * data.numexpr_ready <= goal_high
    nb_meets = 1e3 * nb_cold <= goal_high

    def within(seconds: float) -> str:
        return "within" if 1e3 * seconds <= goal_high else "over"

    if ne_meets and not nb_meets:
        verdict = ("numexpr (a prebuilt NumExpr per kernel): only it reaches a first gradient "
                   "within the goal, it installs in a fraction of the space and its kernel is "
                   "the expression itself")
    elif nb_meets and not ne_meets:
        verdict = "numba: only it reaches a first gradient within the goal"
    else:
        winner = "numba" if ne_vs_nb > 1 else "numexpr"
        verdict = (f"{winner}: both {'meet' if ne_meets else 'miss'} the first-gradient goal, "
                   "so steady state at 10^6 decides")
    slower = (f"NumPy beats NumExpr by median and by fastest sample on "
              f"{', '.join(slower_than_numpy)}" if slower_than_numpy
              else "NumExpr is ahead of NumPy on every kernel")
    return [
        "## choice",
        f"Steady state at n = 10^6 (geometric mean over the {len(KERNELS)} kernels): a prebuilt "
        f"NumExpr takes {ne_vs_nb:.2f}x numba's prange time by median, {ne_vs_nb_fast:.2f}x by "
        f"fastest sample, and {ne_vs_np:.2f}x NumPy's; {slower}.",
        f"Per call at n = 10^3: fastest is {METHODS[fastest_small]} "
        f"({_us(small_best[fastest_small])} µs geometric mean); a prebuilt NumExpr takes "
        f"{data.ratio('numexpr', 'numpy', small):.2f}x NumPy's time and "
        f"{data.ratio('numexpr', 'serial', small):.2f}x serial numba's; numexpr.evaluate "
        f"takes {data.ratio('evaluate', 'numexpr', small):.2f}x a prebuilt NumExpr (it parses "
        "each call), so a generated program builds its NumExpr objects once. A kernel of "
        f"one operation (x*y) takes {single[small]:.2f}x NumPy's time at 10^3 and "
        f"{single[large]:.2f}x at 10^6: fusing pays only for groups of several operations.",
        f"Compile: NumExpr construction <= {ne_compile_ms:.2f} ms per kernel; numba "
        f"{nb_compile_ms:.0f} ms per kernel cold (median), {nb_load_ms:.1f} ms from its cache. "
        f"Against the {goal_low:.0f}-{goal_high:.0f} ms time-to-first-gradient goal: numexpr's "
        f"first kernel is ready in {_ms(data.numexpr_ready)} ms ({within(data.numexpr_ready)}), "
        f"numba's in {nb_cold * 1e3:.0f} ms cold ({within(nb_cold)}) and {nb_cached * 1e3:.0f} ms "
        f"from a warm cache ({within(nb_cached)}; its import alone is "
        f"{data.imports['numba'] * 1e3:.0f} ms).",
        f"Install: numexpr {numexpr_mb:.1f} MB, numba + llvmlite {numba_mb:.1f} MB "
        f"({numba_mb / numexpr_mb:.0f}x).",
        "Readability for a learner: a numexpr kernel is one expression string, the formula "
        "itself; a numba kernel is a Python loop over indices around it (@vectorize hides the "
        "loop but adds a type signature and a decorated function).",
        f"Choice: {verdict}.",
        *vml_choice(data),
    ]


def vml_choice(data: Measured) -> list[str]:
    """The sentence on sin and cos: which library computes them alone."""
    if "vml" not in data.alone:
        return []
    large = str(SIZES[-1])

    def ratio(library: str, other: str, functions: tuple[str, ...]) -> float:
        return geometric_mean([data.alone[library]["median"][f][large]
                               / data.alone[other]["median"][f][large] for f in functions])

    trig, others = ("sin", "cos"), tuple(f for f in ALONE if f not in ("sin", "cos"))
    vml_mb = sum(data.sizes.get(d, 0) for d in VML_DISTRIBUTIONS) / 1e6
    return [
        f"sin and cos alone at n = 10^6: mkl_umath takes {ratio('vml', 'numexpr', trig):.2f}x "
        f"numexpr's time and {ratio('vml', 'numpy', trig):.2f}x NumPy's (whose float64 loops "
        f"for them are scalar); on {', '.join(others)} it takes "
        f"{ratio('vml', 'numpy', others):.2f}x NumPy's own SIMD loops. It installs "
        f"{vml_mb:.0f} MB, so it is the optional vml extra, used for sin and cos only: "
        "without it their kernels are numexpr's."]


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: short samples")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--min-sample", type=float, default=0.02)
    parser.add_argument("--import-repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=cores())
    parser.add_argument("--output", type=Path, default=None,
                        help="results file (default results/kernels.txt; none with --quick)")
    parser.add_argument("--worker", choices=list(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--source", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.min_sample, args.import_repeat = 3, 0.005, 2
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args)))
        return
    missing = [name for name in ("numexpr", "numba") if importlib.util.find_spec(name) is None]
    if missing:
        raise SystemExit(f"bench_kernels: {', '.join(missing)} not installed "
                         "(pip install -e '.[bench]')")
    load_start = os.getloadavg()[0]
    source = numba_source()
    with tempfile.TemporaryDirectory(prefix="bench-kernels-") as scratch:
        source_path = Path(scratch) / "generated_kernels.py"
        source_path.write_text(source, encoding="utf-8")
        args.source = str(source_path)
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(scratch) / "numba-cache"))
        env.pop("NUMBA_DISABLE_JIT", None)
        has_vml = importlib.util.find_spec("mkl_umath") is not None
        runs = {name: run_worker(name, args, env) for name in WORKERS
                if has_vml or name != "alone-vml"}
    data = Measured(
        methods={**runs["numpy"]["methods"], **runs["numexpr"]["methods"],
                 **runs["numba-cold"]["methods"]},
        numexpr_version=runs["numexpr"]["version"], numexpr_vml=runs["numexpr"]["vml"],
        numba=runs["numba-cold"], cache_fill=runs["numba-cache-fill"],
        cache_load=runs["numba-cache-load"],
        imports={name: import_seconds(name, args.import_repeat)
                 for name in ("numexpr", "numba", *(("mkl_umath",) if has_vml else ()))},
        sizes={name: installed_bytes(name) for name in ("numexpr", "numba", "llvmlite",
                                                         *(VML_DISTRIBUTIONS if has_vml else ()))},
        numexpr_ready=numexpr_first_kernel_seconds(args.import_repeat),
        alone={name.removeprefix("alone-"): result for name, result in runs.items()
               if name.startswith("alone-")})
    text = report(args, load_start, data, source)
    print(text, end="")
    output = args.output or (None if args.quick else HERE / "results" / "kernels.txt")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")

if __name__ == "__main__":
    main()

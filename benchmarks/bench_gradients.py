"""Gradient time of dualarr against a hand-written NumPy gradient and against peers.

Workloads (the gradient of a rank-0 result with respect to the float inputs named):

- W1 ``sum(x * y)``, w.r.t. x and y, n = 10^3, 10^5, 10^6 (at n = 10^3 the time is all
  per-call overhead: the table of that name reads it in µs);
- W2 the paper's Fig. 18, ``sum(build1 n (λi. x[i] * x[n-1-i]))``, w.r.t. x, same n;
- W3 a 784-256-10 tanh MLP with softmax cross-entropy (mean over a batch of 64, one-hot
  labels as an input array), w.r.t. both weight matrices and both biases;
- W4 matmul written elementwise, ``sum(build (m, p) (λi j. sum(build1 n (λk. a[i,k] *
  b[k,j]))))``, w.r.t. a and b, (m, n, p) = (64, 256, 512);
- W5 ``sum(sin(x) * exp(-x*x) + log1p(x*x))``, w.r.t. x, n = 10^6;
- W6 ``sum(x[idx] * w)`` with random integer ``idx``, w.r.t. x and w, 10^5 elements in
  x, 10^6 in idx and w;
- C the chain ``y = tanh(y*y[::-1] + 0.5*y[idx])`` for k steps from ``y = x``, then
  ``sum(y)``, w.r.t. x, n = 10^3, k = 10, 100, 1000 (``idx`` a fixed random permutation,
  an int64 input): many small operations, so it measures what a compiled program costs
  beyond its arithmetic;
- S the same chain written as a loop, ``da.scan(lambda y, _: (tanh(y*y[::-1] +
  0.5*y[idx]), None), x, length=k)`` (``jax.lax.scan`` of the same body for jax), same
  sizes and hand-written gradient as C: traced once into one loop node whatever k is, so
  it measures what a loop costs against the unrolled program C.  The goal (issue #38): per
  call no slower than C at the same k, and a time to first gradient that does not grow
  with k (the unrolled chain's grows with it); the ratio to ``jax.jit`` (its own scan) is
  reported like the other workloads'.  autograd and torch have no scan: their S cells read
  "no scan" (C is the chain they can write).

Libraries: ``numpy`` (the hand-written gradient: the base of the first ratio table),
``dualarr.jit`` (``da.jit(da.grad(f))``: traced and compiled once per input types, the
fused program; the goals are measured on it), ``dualarr`` (``da.grad``, which traces on
every call to read call-time values and reuses the compiled program by structure),
``dualarr.unfused`` (``da.jit(da.grad(f))`` with ``da.config.update("fuse", False)``: one
array function per operation, the oracle of the fused program), ``dualarr.interp``
(``mode="interpret"``: the concrete dual-arrays path), and, where installed, HIPS
``autograd``, ``jax`` (``jax.grad`` run eagerly), ``jax.jit`` (``jax.jit(jax.grad)``, the
base of the second ratio table) and ``torch`` (``torch.autograd.grad``), all in float64.
dualarr writes the chain with ``dualarr.numpy``, the peers with their own NumPy-likes;
peers write W2 as ``x * flip(x)`` and W4 with their own ``@`` (they have no ``build``), so
W4 shows how far dualarr's vectorised ``build`` is from a real contraction.  Absent peers
are reported as "not installed" (``pip install -e ".[bench]"`` adds autograd and jax;
torch is not in the extra: ``pip install torch``).

Each library runs in its own process (this script with ``--worker LIBRARY``): on 2
cores the OpenBLAS, OpenMP and XLA thread pools of one process fight and slow each
other.  In a worker, every workload's first gradient is timed on its own (``first s``:
for dualarr that includes tracing and every stage down to code generation; for jax.jit the XLA
compile), checked against the NumPy gradient with ``np.allclose`` (a mismatch stops the
run with a non-zero exit), then, after one more warm-up call, the gradient is timed as the
median of ``--repeat`` samples, each sample running the gradient enough times to last
``--min-sample`` seconds (as ``timeit`` does).  A case whose first gradient takes longer
than ``--first-budget`` seconds is not timed further, and a chain whose first gradient
would (the previous chain's first time scaled by the number of steps) is not run at all:
both read "skipped (first gradient > budget)".  Ratios are taken within one run of this
script; expect about 20% drift between runs.

Four more measurements, each in processes of its own:

- time to the first gradient in a fresh process, for ``dualarr.jit``, ``dualarr`` and
  ``jax.jit``: a new interpreter imports the library (timed apart), builds the W1 n = 10^3
  inputs and times the first gradient call (trace, compile and run); the median of
  ``--fresh-repeat`` processes;
- the peak memory of one steady-state W5 gradient (after a first call, between
  ``tracemalloc.start()`` and ``tracemalloc.get_traced_memory()``), for ``numpy``,
  ``dualarr.jit`` and ``dualarr.unfused``, in MB and as a ratio to the hand-written
  gradient (NumPy arrays, numexpr's outputs among them, are traced by ``tracemalloc``);
- the same peak for one steady-state C and S gradient, for the same libraries: for S it
  is the loop's saved residuals (the stacks of shape (k, n) the forward loop writes for
  the reverse loop) plus the few arrays of one step, so it is also given in units of one
  (k, n) float64 stack (the hand-written gradient keeps k + 1 outputs: about 1);
- S against C: per k and per library that ran both, the per-call ratio S/C (the median
  of the ratios of samples of S and C taken in turn in one worker, so that the machine's
  drift between the two cases enters both sides alike) and the
  first-gradient times of both, with the first gradient less one call (the compile-time
  work, which for S should not grow with k);
- the goals, read from the tables: ``dualarr.jit`` within 1.25× of ``jax.jit`` and at
  most the hand-written NumPy gradient's time on the large workloads, within 2× of
  ``jax.jit`` on the chain, at most 10 µs per call (W1 n = 10^3), a first gradient in a
  fresh process no later than ``jax.jit``'s, a W5 peak at most the hand-written one's,
  S at most C's time per call, and S's first gradient less one call at the largest k
  within 1.5× of that at the smallest.
  With the ``vml`` extra installed the kernels of ``sin`` and ``cos`` call Intel's Vector
  Math Library (the header says whether it is).

Memory and BLAS settings are left as the environment has them (the header prints them):

- glibc hands freed memory back to the OS at every large ``free``, which slows
  allocation-heavy NumPy code; ``--malloc-tuned`` runs every worker with
  ``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_MMAP_THRESHOLD_`` raised, the same for all.
- Where ``OPENBLAS_CORETYPE`` (and ``OPENBLAS_L2_SIZE``) are set, an older OpenBLAS
  needs them, and they slow a current NumPy: to measure without them, unset both in the
  benchmark command alone (``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python
  benchmarks/bench_gradients.py``), and never in tests or CI.

Usage: ``python benchmarks/bench_gradients.py [--quick] [--libraries LIB ...]
[--workloads W ...] [--repeat R] [--min-sample S] [--first-budget S] [--fresh-repeat R]
[--malloc-tuned]``.  ``--quick`` runs small sizes only (a smoke run of a few seconds per
library).
"""

from __future__ import annotations

import argparse
import dataclasses
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
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import dualarr as da
import dualarr.numpy as dnp

Arrays = tuple[np.ndarray, ...]
Step = Callable[[], Any]

LIBRARIES = ("numpy", "dualarr.jit", "dualarr", "dualarr.unfused", "dualarr.interp",
             "autograd", "jax", "jax.jit", "torch")
PEERS = ("autograd", "jax", "jax.jit", "torch")
MODULE = {"numpy": "numpy", "dualarr": "dualarr", "dualarr.jit": "dualarr",
          "dualarr.unfused": "dualarr", "dualarr.interp": "dualarr",
          "autograd": "autograd", "jax": "jax", "jax.jit": "jax", "torch": "torch"}
FRESH_LIBRARIES = ("dualarr.jit", "dualarr", "jax.jit")
MEMORY_LIBRARIES = ("numpy", "dualarr.jit", "dualarr.unfused")
GOAL_LIBRARY, GOAL_BASE = "dualarr.jit", "jax.jit"
GOAL_LARGE, GOAL_CHAIN, GOAL_PER_CALL_US = 1.25, 2.0, 10.0
SEED = 20261122
MALLOC_TUNED = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(1 << 30)}
CHAINS = ("C", "S")  # the unrolled chain and the same chain as one loop
SKIPPED = "skipped (first gradient > budget)"
NO_SCAN = "no scan (S not applicable: C is the chain it can write)"
ABSENT = {SKIPPED: "skipped", NO_SCAN: "no scan"}  # the word a table cell shows
MEMORY_WORKLOADS = ("W5", *CHAINS)
GOAL_SCAN_PER_CALL, GOAL_SCAN_FIRST_SPREAD = 1.0, 1.5
NO_FUSE_SETTING = "fuse setting not available"


# --------------------------------------------------------------------------------------
# Workloads: inputs, the dualarr program, the hand-written NumPy gradient
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One workload at one size (for the chain C: (n, steps))."""

    workload: str
    size: tuple[int, ...]

    @property
    def label(self) -> str:
        if self.workload == "W3":
            batch, n_in, hidden, n_out = self.size
            return f"{n_in}-{hidden}-{n_out} b{batch}"
        if self.workload == "W6":
            return f"n={_num(self.size[0])} m={_num(self.size[1])}"
        if self.workload in CHAINS:
            return f"n={_num(self.size[0])} k={self.size[1]}"
        if len(self.size) == 1:
            return f"n={_num(self.size[0])}"
        return "x".join(str(s) for s in self.size)

    @property
    def row(self) -> tuple[str, str]:
        """The key of the case's row in every table."""
        return self.workload, self.label


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
    *(Case("C", (10**3, steps)) for steps in (10, 100, 1000)),
    *(Case("S", (10**3, steps)) for steps in (10, 100, 1000)),
)
QUICK: tuple[Case, ...] = (
    Case("W1", (10**3,)),
    Case("W2", (10**3,)),
    Case("W3", (8, 32, 16, 10)),
    Case("W4", (4, 8, 16)),
    Case("W5", (10**3,)),
    Case("W6", (10**2, 10**3)),
    Case("C", (10**3, 10)),
    Case("S", (10**3, 10)),
)
PER_CALL = Case("W1", (10**3,))  # its time is all per-call overhead
WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6", "C", "S")

ARGNUMS: dict[str, tuple[int, ...]] = {
    "W1": (0, 1), "W2": (0,), "W3": (0, 1, 2, 3), "W4": (0, 1), "W5": (0,), "W6": (0, 2),
    "C": (0,), "S": (0,),
}
DESCRIPTION = {
    "W1": "sum(x * y)",
    "W2": "sum(build1 n (λi. x[i] * x[n-1-i]))  (Fig. 18)",
    "W3": "tanh MLP + softmax cross-entropy",
    "W4": "sum(build (m,p) (λi j. sum(build1 n (λk. a[i,k] * b[k,j]))))",
    "W5": "sum(sin(x) * exp(-x*x) + log1p(x*x))",
    "W6": "sum(x[idx] * w), random int idx",
    "C": "k steps of y = tanh(y*y[::-1] + 0.5*y[idx]) from y = x, then sum(y); "
         "idx a random permutation",
    "S": "C as one loop: scan(λ y _. (tanh(y*y[::-1] + 0.5*y[idx]), None), x, length=k), "
         "then sum",
}


def is_large(case: Case) -> bool:
    """A workload whose time is mostly arithmetic (the 1.25× goal), not the chain and not
    the n = 10^3 cases, whose time is mostly per-call overhead."""
    return case.workload not in CHAINS and case.size != (10**3,)


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
        case "C" | "S":
            n, _ = case.size
            return rng.standard_normal(n), rng.permutation(n).astype(np.int64)
    raise ValueError(f"unknown workload {case.workload}")


def chain_function(
    steps: int, tanh: Callable[[Any], Any], reverse: Callable[[Any], Any],
    total: Callable[[Any], Any],
) -> Callable[[Any, Any], Any]:
    """The chain C over one library's ``tanh``, reversal and ``sum``."""

    def chain(x: Any, idx: Any) -> Any:
        y = x
        for _ in range(steps):
            y = tanh(y * reverse(y) + 0.5 * y[idx])
        return total(y)

    return chain


def scan_chain_function(
    steps: int, scan: Callable[..., tuple[Any, Any]], tanh: Callable[[Any], Any],
    total: Callable[[Any], Any],
) -> Callable[[Any, Any], Any]:
    """The chain S: C's step as the body of one library's ``scan`` (``da.scan`` or
    ``jax.lax.scan``, the same signature), ``steps`` times, no per-step outputs."""

    def chain(x: Any, idx: Any) -> Any:
        def step(y: Any, _: Any) -> tuple[Any, None]:
            return tanh(y * y[::-1] + 0.5 * y[idx]), None

        y, _ = scan(step, x, None, length=steps)
        return total(y)

    return chain


def _reversed(y: Any) -> Any:
    return y[::-1]


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
        case "C":
            return chain_function(case.size[1], dnp.tanh, _reversed, dnp.sum)
        case "S":
            return scan_chain_function(case.size[1], da.scan, dnp.tanh, dnp.sum)
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
        case "C" | "S":
            return _chain_gradient(case.size[1])
    raise ValueError(f"unknown workload {case.workload}")


def _chain_gradient(steps: int) -> Callable[..., Arrays]:
    """The chain's gradient by hand: the forward pass keeps every step's output, the
    reverse pass takes the cotangent of ``y`` back through ``tanh``, both factors of
    ``y * y[::-1]`` and the gather ``y[idx]`` (a scatter-add; ``idx`` is a permutation,
    so ``+=`` at ``idx`` adds each value once)."""

    def gradient(x: np.ndarray, idx: np.ndarray) -> Arrays:
        outputs = [x]
        for _ in range(steps):
            y = outputs[-1]
            outputs.append(np.tanh(y * y[::-1] + 0.5 * y[idx]))
        cotangent = np.ones_like(x)
        for step in range(steps, 0, -1):
            y_in, y_out = outputs[step - 1], outputs[step]
            d_sum = cotangent * (1.0 - y_out * y_out)
            cotangent = d_sum * y_in[::-1]
            cotangent += (d_sum * y_in)[::-1]
            cotangent[idx] += 0.5 * d_sum
        return (cotangent,)

    return gradient


# --------------------------------------------------------------------------------------
# Peers: each one's version of the workloads (modules are imported only in its worker)
# --------------------------------------------------------------------------------------


def numpy_like_function(
    case: Case, xp: Any, logsumexp: Callable[..., Any],
    scan: Callable[..., tuple[Any, Any]] | None = None,
) -> Callable[..., Any]:
    """The workload over a NumPy-like namespace (autograd.numpy, jax.numpy) and, for S,
    its library's ``scan``."""
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
        case "C":
            return chain_function(case.size[1], xp.tanh, _reversed, xp.sum)
        case "S" if scan is not None:
            return scan_chain_function(case.size[1], scan, xp.tanh, xp.sum)
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
        case "C":
            return chain_function(
                case.size[1], torch.tanh, lambda y: torch.flip(y, (0,)), torch.sum
            )
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
    """One library's way to differentiate the workloads; built inside its worker.
    ``has_scan``: whether it can write S (a loop traced once); without it S is not run."""

    name: str
    has_scan = True

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


def vector_math_library() -> str | None:
    """``mkl_umath`` and its version where the generated kernels call it for sin and cos."""
    if not getattr(da.config, "vector_math", False):
        return None
    if importlib.util.find_spec("mkl_umath") is None:
        return None
    return f"mkl_umath {importlib.metadata.version('mkl_umath')}"


def fuse_setting_available() -> bool:
    """Whether this dualarr has the ``fuse`` setting (``da.config.update("fuse", ...)``)."""
    return "fuse" in {field.name for field in dataclasses.fields(da.config)}


class DualarrLibrary(Library):
    """``name``: ``dualarr.jit`` (``da.jit(da.grad(f))``), ``dualarr`` (``da.grad``),
    ``dualarr.unfused`` (``da.jit(da.grad(f))``, fusion off) or ``dualarr.interp``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.mode = "interpret" if name == "dualarr.interp" else "compiled"
        self.cached = name in ("dualarr.jit", "dualarr.unfused")
        if name == "dualarr.unfused":
            da.config.update("fuse", False)

    def version(self) -> str:
        call = "da.jit(da.grad(f))" if self.cached else f"da.grad(f, mode={self.mode!r})"
        settings = ""
        if fuse_setting_available():
            settings = f", fuse={da.config.fuse}"
            if importlib.util.find_spec("numexpr") is not None:
                settings += f", numexpr {importlib.metadata.version('numexpr')}"
            if vector_math_library() is not None:
                settings += f", sin and cos by {vector_math_library()}"
        return f"{da.__version__} ({call}{settings})"

    def prepare(self, case: Case, args: Arrays) -> Prepared:
        gradient = da.grad(
            dualarr_function(case), argnums=ARGNUMS[case.workload], mode=self.mode
        )
        if self.cached:
            gradient = da.jit(gradient)
        return Prepared(lambda: gradient(*args), _as_tuple)


class AutogradLibrary(Library):
    name = "autograd"
    has_scan = False

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
        f = numpy_like_function(case, self.jnp, self.special.logsumexp, jax.lax.scan)
        gradient = jax.grad(f, argnums=ARGNUMS[case.workload])
        if self.jit:
            gradient = jax.jit(gradient)
        device_args = tuple(jax.device_put(a) for a in args)
        jax.block_until_ready(device_args)
        return Prepared(lambda: jax.block_until_ready(gradient(*device_args)), _as_tuple)


class TorchLibrary(Library):
    name = "torch"
    has_scan = False

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
        case "dualarr" | "dualarr.jit" | "dualarr.unfused" | "dualarr.interp":
            return DualarrLibrary(name)
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


def paired_ratio(top: Step, bottom: Step, repeat: int, min_sample: float) -> float:
    """Median of ``top``'s time over ``bottom``'s in samples taken in turn (``top`` then
    ``bottom``, then ``bottom`` then ``top``, ...), each sample lasting ``min_sample``
    seconds: a drift of the machine's speed between two cases, which moves two medians
    taken minutes apart by 20%, enters both sides of each ratio alike."""
    _, top_number = median_time(top, 1, min_sample)
    _, bottom_number = median_time(bottom, 1, min_sample)
    ratios = []
    for k in range(repeat):
        if k % 2:
            b = sample_time(bottom, bottom_number)
            t = sample_time(top, top_number)
        else:
            t = sample_time(top, top_number)
            b = sample_time(bottom, bottom_number)
        ratios.append(t / b)
    return statistics.median(ratios)


def peak_bytes(step: Step) -> int:
    """Peak bytes ``tracemalloc`` sees during one call of ``step`` (already warm)."""
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


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


def worker(name: str, cases: Sequence[Case], repeat: int, min_sample: float,
           first_budget: float) -> None:
    """Run every case with one library; one JSON object per line on stdout."""
    if name == "dualarr.unfused" and not fuse_setting_available():
        print(json.dumps({"library": name, "unavailable": NO_FUSE_SETTING}), flush=True)
        return
    library = make_library(name)
    print(json.dumps({"library": name, "version": library.version()}), flush=True)
    last_chain: dict[str, tuple[int, float]] = {}  # workload -> (steps, first seconds)
    unrolled: dict[str, Step] = {}  # a C case's label -> its gradient, for S's paired ratio
    for case in cases:
        record: dict[str, Any] = {"workload": case.workload, "label": case.label,
                                  "first": None, "median": None, "skipped": None}
        if case.workload == "S" and not library.has_scan:
            record["skipped"] = NO_SCAN
            print(json.dumps(record), flush=True)
            continue
        if case.workload in last_chain:
            steps, seconds = last_chain[case.workload]
            if seconds * case.size[1] / steps > first_budget:
                record["skipped"] = SKIPPED
                print(json.dumps(record), flush=True)
                continue
        args = inputs(case)
        want = numpy_gradient(case)(*args)
        prepared = library.prepare(case, args)
        start = time.perf_counter()
        result = prepared.step()
        first = record["first"] = time.perf_counter() - start
        check(case, name, prepared.to_numpy(result), want)
        if case.workload in CHAINS:
            last_chain[case.workload] = case.size[1], first
        if first > first_budget:
            record["skipped"] = SKIPPED
            print(json.dumps(record), flush=True)
            continue
        prepared.step()  # one more warm-up call
        record["median"], record["number"] = median_time(prepared.step, repeat, min_sample)
        if case.workload in MEMORY_WORKLOADS and name in MEMORY_LIBRARIES:
            record["peak_bytes"] = peak_bytes(prepared.step)
        if case.workload == "C":
            unrolled[case.label] = prepared.step
        elif case.workload == "S" and case.label in unrolled:
            record["paired"] = paired_ratio(
                prepared.step, unrolled[case.label], max(7, 2 * repeat + 1), min_sample
            )
        print(json.dumps(record), flush=True)


FRESH_PROGRAM = """
import json, sys, time
library, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
import numpy as np
rng = np.random.default_rng(seed)
x, y = rng.standard_normal(n), rng.standard_normal(n)
start = time.perf_counter()
if library.startswith("dualarr"):
    import dualarr as da
    imported = time.perf_counter() - start
    gradient = da.grad(lambda a, b: da.sum(a * b), argnums=(0, 1))
    if library == "dualarr.jit":
        gradient = da.jit(gradient)
    call = lambda: gradient(x, y)
else:
    import jax
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp
    imported = time.perf_counter() - start
    gradient = jax.jit(jax.grad(lambda a, b: jnp.sum(a * b), argnums=(0, 1)))
    call = lambda: jax.block_until_ready(gradient(x, y))
start = time.perf_counter()
got = call()
first = time.perf_counter() - start
if not (np.allclose(np.asarray(got[0]), y) and np.allclose(np.asarray(got[1]), x)):
    raise SystemExit(library + ": the first W1 gradient differs from (y, x)")
print(json.dumps({"import": imported, "first": first}))
"""


# --------------------------------------------------------------------------------------
# The driver: one worker process per library, then the tables
# --------------------------------------------------------------------------------------


@dataclass
class Timing:
    """One case in one library's worker (seconds); ``skipped`` says why no median."""

    first: float | None
    median: float | None
    skipped: str | None = None
    peak_bytes: int | None = None
    paired: float | None = None  # S only: S/C per call from interleaved samples


@dataclass
class Outcome:
    """What one library's worker gave: a version and times, or why not."""

    status: str  # "ok", "not installed", "not run", "failed", or why it cannot run
    version: str = ""
    times: dict[tuple[str, str], Timing] = dataclasses.field(default_factory=dict)
    fresh: tuple[float, float] | None = None  # fresh process: (import s, first gradient s)


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


def _environment(args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    if args.malloc_tuned:
        env.update(MALLOC_TUNED)
    return env


def _failure(name: str, what: str, done: subprocess.CompletedProcess[str]) -> None:
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
    print(f"# {name}: {what} failed (exit {done.returncode}):\n{tail}", file=sys.stderr)


def run_worker(name: str, args: argparse.Namespace) -> Outcome:
    if importlib.util.find_spec(MODULE[name]) is None:
        return Outcome("not installed")
    command = [sys.executable, os.path.abspath(__file__), "--worker", name,
               "--repeat", str(args.repeat), "--min-sample", str(args.min_sample),
               "--first-budget", str(args.first_budget), "--workloads", *args.workloads]
    if args.quick:
        command.append("--quick")
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              env=_environment(args), timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"# {name}: worker timed out after {args.timeout} s", file=sys.stderr)
        return Outcome("failed")
    if done.returncode != 0:
        _failure(name, "worker", done)
        return Outcome("failed")
    outcome = Outcome("ok")
    for line in done.stdout.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if "unavailable" in record:
            return Outcome(record["unavailable"])
        if "version" in record:
            outcome.version = record["version"]
        else:
            outcome.times[(record["workload"], record["label"])] = Timing(
                record["first"], record["median"], record["skipped"], record.get("peak_bytes"),
                record.get("paired"),
            )
    return outcome


def run_fresh(name: str, args: argparse.Namespace) -> tuple[float, float] | None:
    """(import s, first gradient s), each the median over ``--fresh-repeat`` new
    interpreters; None when one of them fails."""
    imports, firsts = [], []
    for _ in range(args.fresh_repeat):
        command = [sys.executable, "-c", FRESH_PROGRAM, name, str(PER_CALL.size[0]),
                   str(SEED)]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  env=_environment(args), timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"# {name}: fresh process timed out after {args.timeout} s",
                  file=sys.stderr)
            return None
        if done.returncode != 0:
            _failure(name, "fresh process", done)
            return None
        record = json.loads(done.stdout.strip().splitlines()[-1])
        imports.append(record["import"])
        firsts.append(record["first"])
    return statistics.median(imports), statistics.median(firsts)


WIDTH = 17
HEAD = f"{'workload':<9}{'size':<17}"


def _cell(value: float | None, fmt: str, width: int = WIDTH) -> str:
    return f"{'-' if value is None else format(value, fmt):>{width}}"


def _table(title: str, rows: Sequence[tuple[str, str]], columns: Sequence[str],
           cell: Callable[[str, tuple[str, str]], str]) -> None:
    print(f"\n## {title}")
    print(HEAD + "".join(f"{name:>{WIDTH}}" for name in columns))
    for row in rows:
        print(f"{row[0]:<9}{row[1]:<17}" + "".join(cell(name, row) for name in columns))


def _verdict(ratio: float | None, goal: float) -> str:
    if ratio is None:
        return "not measured"
    return "ok" if ratio <= goal else "missed"


def print_tables(cases: Sequence[Case], outcomes: dict[str, Outcome], quick: bool) -> None:
    shown = [name for name in LIBRARIES if outcomes[name].status == "ok"]
    rows = [case.row for case in cases]

    def timing(name: str, row: tuple[str, str]) -> Timing | None:
        return outcomes[name].times.get(row) if name in shown else None

    def median(name: str, row: tuple[str, str]) -> float | None:
        t = timing(name, row)
        return None if t is None else t.median

    def ratio(name: str, base: str, row: tuple[str, str]) -> float | None:
        top, bottom = median(name, row), median(base, row)
        return None if top is None or bottom is None else top / bottom

    def ratio_of(name: str, row: tuple[str, str], base: tuple[str, str]) -> float | None:
        top, bottom = median(name, row), median(name, base)
        return None if top is None or bottom is None else top / bottom

    def absent(name: str, row: tuple[str, str]) -> str | None:
        """The cell of a case the worker did not time, with its reason's word."""
        t = timing(name, row)
        if t is None or t.skipped is None:
            return None
        return f"{ABSENT.get(t.skipped, 'skipped'):>{WIDTH}}"

    def median_cell(name: str, row: tuple[str, str]) -> str:
        t = timing(name, row)
        return absent(name, row) or _cell(
            None if t is None or t.median is None else t.median * 1e3, ".3f"
        )

    def ratio_cell(base: str) -> Callable[[str, tuple[str, str]], str]:
        return lambda name, row: absent(name, row) or _cell(ratio(name, base, row), ".2f")

    _table("median ms per gradient", rows, shown, median_cell)
    for reason in (SKIPPED, NO_SCAN):
        cases_out = sorted({f"{name} {row[0]} {row[1]}" for name in shown for row in rows
                            if (t := timing(name, row)) is not None and t.skipped == reason})
        if cases_out:
            print(f"# {reason}: {', '.join(cases_out)}")
    if PER_CALL.row in rows:
        print(f"# {PER_CALL.workload} {PER_CALL.label} is per-call overhead (its own table "
              "below)")

    others = [name for name in shown if name != "numpy"]
    _table("ratio to the NumPy gradient (median / NumPy median)", rows, others,
           ratio_cell("numpy"))
    if "jax.jit" in shown:
        against_jax = [name for name in shown if name != "jax.jit"]
        _table("ratio to jax.jit (median / jax.jit median)", rows, against_jax,
               ratio_cell("jax.jit"))

    def first_cell(name: str, row: tuple[str, str]) -> str:
        t = timing(name, row)
        if t is not None and t.first is None and t.skipped is not None:
            return absent(name, row) or ""  # not run: over the budget, or no scan
        return _cell(None if t is None else t.first, ".4f")

    _table("time to first gradient, s (dualarr: trace + every stage + codegen; "
           "jax.jit: compile)", rows, others, first_cell)

    def scan_ratio(name: str, row: tuple[str, str], base: tuple[str, str]) -> float | None:
        """S/C per call: the interleaved samples' ratio where the worker took them, else
        the ratio of the two medians."""
        t = timing(name, row)
        if t is not None and t.paired is not None:
            return t.paired
        return ratio_of(name, row, base)

    def compile_time(name: str, row: tuple[str, str]) -> float | None:
        """The first gradient less one steady-state call: the work done once."""
        t = timing(name, row)
        if t is None or t.first is None or t.median is None:
            return None
        return t.first - t.median

    scan_rows = [(case, ("C", case.label)) for case in cases
                 if case.workload == "S" and ("C", case.label) in rows]
    scan_libraries = [name for name in others
                      if any(median(name, case.row) is not None for case, _ in scan_rows)]
    if scan_libraries:
        print("\n## S against the unrolled chain C (same k; S/C per call: the median ratio of "
              "interleaved samples; first less one call: the work done once, for S "
              "independent of k)")
        print(f"{'library':<17}{'size':<17}{'S/C per call':>13}{'S first s':>11}"
              f"{'C first s':>11}{'S first-call':>14}{'C first-call':>14}")
        for name in scan_libraries:
            for case, unrolled in scan_rows:
                s_time, c_time = timing(name, case.row), timing(name, unrolled)
                print(f"{name:<17}{case.label:<17}"
                      f"{_cell(scan_ratio(name, case.row, unrolled), '.2f', 13)}"
                      f"{_cell(None if s_time is None else s_time.first, '.4f', 11)}"
                      f"{_cell(None if c_time is None else c_time.first, '.4f', 11)}"
                      f"{_cell(compile_time(name, case.row), '.4f', 14)}"
                      f"{_cell(compile_time(name, unrolled), '.4f', 14)}")
        no_scan = [name for name in others
                   if any((t := timing(name, case.row)) is not None and t.skipped == NO_SCAN
                          for case, _ in scan_rows)]
        if no_scan:
            print(f"# no scan: {', '.join(no_scan)} (S not applicable)")

    if PER_CALL.row in rows:
        print(f"\n## per-call overhead: {PER_CALL.workload} {DESCRIPTION[PER_CALL.workload]} at "
              f"{PER_CALL.label}, µs per gradient (beyond NumPy: minus the hand-written "
              "gradient's time)")
        base = median("numpy", PER_CALL.row)
        print(f"{'library':<17}{'µs per call':>14}{'beyond NumPy':>14}")
        for name in shown:
            seconds = median(name, PER_CALL.row)
            beyond = None if seconds is None or base is None else (seconds - base) * 1e6
            print(f"{name:<17}{_cell(None if seconds is None else seconds * 1e6, '.1f', 14)}"
                  f"{_cell(beyond, '.1f', 14)}")

    fresh = [name for name in FRESH_LIBRARIES if outcomes[name].fresh is not None]
    if fresh:
        print(f"\n## time to first gradient in a fresh process ({PER_CALL.workload} "
              f"{PER_CALL.label}; import timed apart, after numpy's), s")
        print(f"{'library':<17}{'import s':>12}{'first gradient s':>18}")
        for name in fresh:
            imported, first = outcomes[name].fresh or (0.0, 0.0)
            print(f"{name:<17}{imported:>12.3f}{first:>18.4f}")

    memory = [(case, name) for case in cases if case.workload == "W5"
              for name in MEMORY_LIBRARIES
              if (t := timing(name, case.row)) is not None and t.peak_bytes is not None]
    if memory:
        print("\n## peak memory of one steady-state W5 gradient (tracemalloc), MB and ratio "
              "to the hand-written gradient")
        print(f"{'workload':<9}{'size':<17}{'library':<17}{'MB':>10}{'ratio':>8}")
        for case, name in memory:
            peak = outcomes[name].times[case.row].peak_bytes or 0
            base_timing = timing("numpy", case.row)
            base_peak = None if base_timing is None else base_timing.peak_bytes
            share = None if not base_peak else peak / base_peak
            print(f"{case.workload:<9}{case.label:<17}{name:<17}{peak / 2**20:>10.2f}"
                  f"{_cell(share, '.2f', 8)}")

    def peak_of(name: str, row: tuple[str, str]) -> int | None:
        t = timing(name, row)
        return None if t is None else t.peak_bytes

    chain_memory = [(case, name) for case in cases if case.workload == "S"
                    for name in MEMORY_LIBRARIES if peak_of(name, case.row) is not None]
    if chain_memory:
        print("\n## peak memory of one steady-state C and S gradient (tracemalloc), MB; for S "
              "the saved residual stacks and one step's arrays, also in (k, n) float64 "
              "stacks and as a ratio to the hand-written gradient (which keeps k + 1 outputs)")
        print(f"{'size':<17}{'library':<17}{'C MB':>10}{'S MB':>10}{'S stacks':>10}"
              f"{'S ratio':>9}")
        for case, name in chain_memory:
            n, steps = case.size
            s_peak, c_peak = peak_of(name, case.row) or 0, peak_of(name, ("C", case.label))
            hand_peak = peak_of("numpy", case.row)
            print(f"{case.label:<17}{name:<17}"
                  f"{_cell(None if c_peak is None else c_peak / 2**20, '.2f', 10)}"
                  f"{s_peak / 2**20:>10.2f}{s_peak / (8 * n * steps):>10.2f}"
                  f"{_cell(s_peak / hand_peak if hand_peak else None, '.2f', 9)}")

    print(f"\n## goals ({GOAL_LIBRARY}; ratios to {GOAL_BASE} measured in this run)")
    if GOAL_LIBRARY not in shown:
        print(f"# {GOAL_LIBRARY} did not run: no goal measured")
        return
    if GOAL_BASE not in shown:
        print(f"# {GOAL_BASE} did not run: the ratio goals are not measured")
    if quick:
        print("# --quick: small sizes, so these lines only show how the goals are read")
    def line(goal: str, case: Case, measured: float | None, unit: str, bound: float) -> None:
        value = "-" if measured is None else f"{measured:.2f}{unit}"
        print(f"{goal:<34}{case.workload:<4}{case.label:<17}{value:>10}  "
              f"{_verdict(measured, bound)}")

    for case in cases:
        if is_large(case):
            line(f"large workloads <= {GOAL_LARGE:g}x {GOAL_BASE}", case,
                 ratio(GOAL_LIBRARY, GOAL_BASE, case.row), "x", GOAL_LARGE)
    for case in cases:
        if is_large(case):
            line("large workloads <= 1x NumPy", case,
                 ratio(GOAL_LIBRARY, "numpy", case.row), "x", 1.0)
    for case in cases:
        if case.workload == "C":
            line(f"chain <= {GOAL_CHAIN:g}x {GOAL_BASE}", case,
                 ratio(GOAL_LIBRARY, GOAL_BASE, case.row), "x", GOAL_CHAIN)
    if PER_CALL.row in rows:
        per_call = median(GOAL_LIBRARY, PER_CALL.row)
        line(f"per call <= {GOAL_PER_CALL_US:g} µs", PER_CALL,
             None if per_call is None else per_call * 1e6, " µs", GOAL_PER_CALL_US)
    ours, theirs = outcomes[GOAL_LIBRARY].fresh, outcomes[GOAL_BASE].fresh
    if ours is not None and theirs is not None:
        line(f"first gradient <= {GOAL_BASE}'s", PER_CALL, ours[1] / theirs[1], "x", 1.0)
    for case in cases:
        mine, hand = timing(GOAL_LIBRARY, case.row), timing("numpy", case.row)
        if case.workload == "W5" and mine is not None and hand is not None and (
            mine.peak_bytes is not None and hand.peak_bytes
        ):
            line("W5 peak memory <= NumPy's", case, mine.peak_bytes / hand.peak_bytes,
                 "x", 1.0)
    for case, unrolled in scan_rows:
        line(f"scan <= {GOAL_SCAN_PER_CALL:g}x unrolled per call", case,
             scan_ratio(GOAL_LIBRARY, case.row, unrolled), "x", GOAL_SCAN_PER_CALL)
    if len(scan_rows) > 1:
        (low, _), (high, _) = scan_rows[0], scan_rows[-1]
        once = compile_time(GOAL_LIBRARY, low.row), compile_time(GOAL_LIBRARY, high.row)
        spread = None if once[0] is None or once[1] is None else once[1] / once[0]
        line(f"S first-call k={high.size[1]} / k={low.size[1]} <= "
             f"{GOAL_SCAN_FIRST_SPREAD:g}", high, spread, "x", GOAL_SCAN_FIRST_SPREAD)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    parser.add_argument("--libraries", nargs="+", choices=LIBRARIES, default=list(LIBRARIES),
                        help="libraries to run (default: all; numpy is the base of ratios)")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS),
                        help="workloads to run (default: all)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="timed samples per case (default 7; 3 with --quick)")
    parser.add_argument("--min-sample", type=float, default=None,
                        help="seconds one sample lasts at least (default 0.05; 0.005 quick)")
    parser.add_argument("--first-budget", type=float, default=60.0,
                        help="seconds a first gradient may take; a case over it is not "
                             "timed further (default 60)")
    parser.add_argument("--fresh-repeat", type=int, default=None,
                        help="fresh processes per library for the time to first gradient "
                             "(default 3; 1 with --quick)")
    parser.add_argument("--malloc-tuned", action="store_true",
                        help="raise MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ in "
                             "every worker")
    parser.add_argument("--timeout", type=float, default=1200.0,
                        help="seconds one library's worker may run")
    parser.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat is None:
        args.repeat = 3 if args.quick else 7
    if args.min_sample is None:
        args.min_sample = 0.005 if args.quick else 0.05
    if args.fresh_repeat is None:
        args.fresh_repeat = 1 if args.quick else 3
    cases = [case for case in (QUICK if args.quick else FULL)
             if case.workload in args.workloads]
    if args.worker is not None:
        worker(args.worker, cases, args.repeat, args.min_sample, args.first_budget)
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
          f"first-gradient budget {args.first_budget:g} s; each library in its own "
          "process; float64")
    for workload, text in DESCRIPTION.items():
        if workload in args.workloads:
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
        print(f"# {name + ' ':<9}{outcome.status}{': ' + detail if detail else ''}",
              flush=True)
    for name in FRESH_LIBRARIES:
        if outcomes[name].status == "ok":
            outcomes[name].fresh = run_fresh(name, args)
            if outcomes[name].fresh is None:
                outcomes[name].status = "failed"
    print_tables(cases, outcomes, args.quick)
    failed = [name for name, outcome in outcomes.items() if outcome.status == "failed"]
    if failed:
        raise SystemExit(f"bench_gradients: failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()

"""One NumPy ufunc on several cores: contiguous chunks of its operands on a thread pool.

A sealed kernel (:func:`dualarr.codegen.kernels.numpy_ufunc`: ``exp``, ``log1p``,
``tanh``… alone) runs NumPy's SIMD loop, which is faster per element than numexpr's
(without Intel's VML numexpr calls libm once per element) but runs on one core, while
numexpr's fused kernels use every core.  NumPy releases the GIL inside the loop, so the
loop over each chunk of a large array can run on a thread of its own:
:func:`run_in_chunks` splits the result and the operands of the result's shape into as
many pieces as numexpr has threads (``NUMEXPR_NUM_THREADS``, ``numexpr.set_num_threads``:
one setting for every CPU kernel), runs the first piece itself and the others on a pool.
Each piece is computed by the same loop as the whole, so the result is the same bits.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = ["PARALLEL_MIN_SIZE", "run_in_chunks"]

PARALLEL_MIN_SIZE = 1 << 18
"""Elements from which a sealed kernel runs in chunks: below it, handing pieces to other
threads (40-90 µs on a loaded 2-core machine) can cost more than they save on a cheap
loop (``exp``, ``tanh``: about 1 ns per element; ``log1p``: 1-4 ns)."""

_CHUNK_ALIGN = 1024
"""Chunk boundaries at multiples of this many elements (whole cache lines and pages)."""


class _Pool:
    """The threads, made on first use in each process: a forked child's copy of its
    parent's pool has no threads, so a new process makes its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = -1
        self._executor: ThreadPoolExecutor | None = None
        self.threads = 1

    def executor(self) -> ThreadPoolExecutor | None:
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    import numexpr  # its thread count is the one CPU setting

                    self.threads = max(1, int(numexpr.get_num_threads()))
                    self._executor = (
                        ThreadPoolExecutor(self.threads - 1, thread_name_prefix="dualarr-ufunc")
                        if self.threads > 1
                        else None
                    )
                    self._pid = os.getpid()
        return self._executor


_POOL = _Pool()


def run_in_chunks(ufunc: np.ufunc, operands: Sequence[Any], out: np.ndarray) -> bool:
    """``ufunc(*operands, out=out)`` in chunks on several threads; False (nothing done)
    when it cannot split: one thread, an operand that is neither a scalar nor a
    C-contiguous array of ``out``'s shape, or ``out`` not C-contiguous.  NumPy's error
    state (``np.errstate``) is the caller's on every thread."""
    executor = _POOL.executor()
    if executor is None or not out.flags.c_contiguous:
        return False
    flat: list[Any] = []
    for operand in operands:
        if type(operand) is np.ndarray and operand.ndim > 0:
            if operand.shape != out.shape or not operand.flags.c_contiguous:
                return False
            flat.append(operand.reshape(-1))
        elif isinstance(operand, np.ndarray | float | int | bool | np.generic):
            flat.append(operand)
        else:
            return False
    target = out.reshape(-1)
    size = target.shape[0]
    step = -(-size // _POOL.threads)
    step = -(-step // _CHUNK_ALIGN) * _CHUNK_ALIGN
    context = contextvars.copy_context()  # np.errstate lives in a context variable

    def piece(start: int) -> tuple[Any, ...]:
        stop = start + step
        return tuple(a[start:stop] if type(a) is np.ndarray and a.ndim else a for a in flat)

    pending: list[Future[Any]] = [
        executor.submit(context.copy().run, ufunc, *piece(start), out=target[start : start + step])
        for start in range(step, size, step)
    ]
    try:
        context.run(ufunc, *piece(0), out=target[:step])
    finally:
        for future in pending:
            future.result()
    return True

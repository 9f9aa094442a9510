"""One NumPy ufunc, or one gather's ``take``, on several cores: chunks of its operands
on a thread pool.

A sealed kernel (:func:`dualarr.codegen.kernels.numpy_ufunc`: ``exp``, ``log1p``,
``tanh``… alone) runs NumPy's SIMD loop, which is faster per element than numexpr's
(without Intel's VML numexpr calls libm once per element) but runs on one core, while
numexpr's fused kernels use every core.  NumPy releases the GIL inside the loop, so the
loop over each chunk of a large array can run on a thread of its own:
:func:`run_in_chunks` splits the result and the operands of the result's rows into as
many pieces as numexpr has threads (``NUMEXPR_NUM_THREADS``, ``numexpr.set_num_threads``:
one setting for every CPU kernel), runs the first piece itself and the others on a pool.
Each piece is computed by the same loop as the whole, so the result is the same bits.
:func:`take_rows` does the same for a large in-range gather (``take`` releases the GIL
too); a smaller one, or one over a matrix, is :func:`dualarr.interp.evaluate.index_array`'s.
"""

from __future__ import annotations

import contextvars
import functools
import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = ["PARALLEL_MIN_SIZE", "PARALLEL_MIN_SIZE_CHEAP", "run_in_chunks", "take_rows"]

PARALLEL_MIN_SIZE = 1 << 18
"""Elements from which a sealed kernel runs in chunks: below it, handing pieces to other
threads (40-90 µs on a loaded 2-core machine) can cost more than they save on a cheap
loop (``exp``, ``tanh``: about 1 ns per element; ``log1p``: 1-4 ns)."""

PARALLEL_MIN_SIZE_CHEAP = 3 << 18
"""The same for one cheap operation (``x * y``: a fraction of a ns per element, bound by
memory): two threads gain from about 0.8 million elements on."""

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


def run_in_chunks(
    ufunc: Callable[..., Any], operands: Sequence[Any], out: np.ndarray
) -> bool:
    """``ufunc(*operands, out=out)`` in chunks of ``out``'s first axis on several threads
    (a ufunc, or any function whose result rows come from the same rows of the operands
    it is given cut: ``partial(np.take, x, axis=0, mode="clip")`` over an index);
    False (nothing done) when it cannot split: one thread, no rows, or an
    operand that is neither a scalar nor an array broadcasting to ``out``.  An operand of
    ``out``'s rank and rows is cut as ``out`` is (any strides: ``x[::-1]`` too); one that
    broadcasts along the first axis (fewer dimensions, or one row) is read whole by every
    chunk.  NumPy's error state (``np.errstate``) is the caller's on every thread."""
    executor = _POOL.executor()
    rows = out.shape[0] if out.ndim else 0
    if executor is None or rows == 0:
        return False
    cut: list[tuple[Any, bool]] = []  # (operand, whether it is cut along the first axis)
    for operand in operands:
        if type(operand) is np.ndarray and operand.ndim > 0:
            if operand.ndim == out.ndim and operand.shape[0] == rows:
                cut.append((operand, True))
            elif operand.ndim < out.ndim or operand.shape[0] == 1:
                cut.append((operand, False))
            else:
                return False
        elif isinstance(operand, np.ndarray | float | int | bool | np.generic):
            cut.append((operand, False))
        else:
            return False
    row = math.prod(out.shape[1:])
    step = -(-rows // _POOL.threads)
    if row == 1:
        step = -(-step // _CHUNK_ALIGN) * _CHUNK_ALIGN
    context = contextvars.copy_context()  # np.errstate lives in a context variable

    def piece(start: int) -> tuple[Any, ...]:
        stop = start + step
        return tuple(a[start:stop] if whole else a for a, whole in cut)

    pending: list[Future[Any]] = [
        executor.submit(context.copy().run, ufunc, *piece(start), out=out[start : start + step])
        for start in range(step, rows, step)
    ]
    try:
        context.run(ufunc, *piece(0), out=out[:step])
    finally:
        for future in pending:
            future.result()
    return True


def take_rows(array: np.ndarray, index: np.ndarray) -> np.ndarray | None:
    """``array.take(index, axis=0, mode="clip")`` for a one-dimensional ``array`` and a
    large one-dimensional int64 index known to be in range, in chunks of the index on
    several threads (``take`` releases the GIL): the same bits as one call; None (nothing
    done) for another shape, a small index or one thread."""
    if array.ndim != 1 or index.ndim != 1 or index.size < PARALLEL_MIN_SIZE_CHEAP:
        return None
    out = np.empty(index.size, dtype=array.dtype)
    take = functools.partial(np.take, array, axis=0, mode="clip")
    return out if run_in_chunks(take, [index], out) else None

"""Recycled result buffers: a call site writes into the array it returned last time once
nothing else holds it.

Generated code calls each kernel at one place, once per call of the program (once per
step inside a loop, where a carry holds the previous step's result, so that buffer is
not free), and each output of a compiled program leaves it at one place: each such site
keeps a :class:`SpareBuffer`.  A steady loop of gradients then allocates no new memory for its
temporaries, nor for results its caller dropped, as a runtime with its own memory pool
would do (fresh pages of a large array cost about as much as computing it).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["SpareBuffer", "copy_into_spare"]


class SpareBuffer:
    """One call site's last results, written into again once nobody else holds them.

    The site keeps the arrays it returned last; the next call writes into one (``out=``)
    only when the site's own reference is the last one: every reader of that result, a
    caller's variable or a view whose ``base`` it is, has let it go (the reference count
    that NumPy's own temporary elision reads).  Else a new array is made.  Two are kept,
    so that ``y = g(x)`` in a loop, which still holds the previous result while the next
    is computed, alternates between two buffers.  A result still held is never
    overwritten.
    """

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: list[Any] = []

    def take(self) -> Any:
        """A kept array nothing else refers to, else None.  ``list.pop`` is atomic, so
        two threads never take the same one (the loser sees the winner's reference)."""
        kept = self._kept
        held: list[Any] = []
        free = None
        while kept:
            array = kept.pop()
            # references: ``array`` here and getrefcount's own argument; any other is a reader
            if sys.getrefcount(array) == _ONLY_OURS:
                free = array
                break
            held.append(array)
        kept.extend(held)  # still read now, perhaps free next time
        return free

    def keep(self, array: Any) -> Any:
        """Remember ``array`` (the site's newest result, when an array) and return it."""
        kept = self._kept
        if type(array) is np.ndarray and len(kept) < _KEPT and all(a is not array for a in kept):
            kept.append(array)
        return array


_KEPT = 2


def _count_when_only_ours() -> int:
    """``sys.getrefcount`` of an array that only a local variable refers to, measured
    the way :meth:`SpareBuffer.take` measures it (2 on CPython 3.11: the variable and the
    call's argument; an interpreter that borrows references counts fewer), so that any
    other reader shows as more."""
    kept = [np.empty(0)]
    array = kept.pop()
    return sys.getrefcount(array)


_ONLY_OURS = _count_when_only_ours()


def copy_into_spare(
    spare: SpareBuffer, array: Any, shape: tuple[int, ...], dtype: np.dtype[Any]
) -> np.ndarray:
    """``array`` broadcast to ``shape`` and cast to ``dtype``, as a new array: the site's
    kept one when it is free, else a new one (kept for next time)."""
    out = spare.take()
    if out is None or out.shape != shape or out.dtype != dtype:
        out = np.empty(shape, dtype)
    np.copyto(out, array, casting="unsafe")
    result: np.ndarray = spare.keep(out)
    return result

"""Dask's scatter-add: a shuffle whose tasks never hold more than a few chunks.

``dask.array.bincount`` makes, per chunk of the targets, a sum over *all* the slots and
adds those in one task: a gradient larger than one worker's memory cannot run that way.
Here the output is chunked (chunks of ``step`` slots, at least
:data:`SCATTER_MIN_OUTPUT_CHUNK`) and each chunk of the targets is cut by output chunk
(a stable sort by chunk number).  Each piece travels as its (slot, value) pairs, or, where
those outnumber half its output chunk's slots, as that chunk's ``bincount``: no piece is
larger than one output chunk.  Each output chunk adds its pieces in a tree of
:data:`SPLIT_EVERY` at a time (pairs concatenated in the targets' order, sums added), so
no task holds more than ``SPLIT_EVERY`` output chunks.  Where every piece of a chunk
travels as pairs, the chunk is one ``bincount`` of its targets in their order: NumPy's
sums, bit for bit; a chunk added from partial sums may round otherwise (the same sums,
associated otherwise).
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["SCATTER_MIN_OUTPUT_CHUNK", "SPLIT_EVERY", "dask_scatter_add"]

SCATTER_MIN_OUTPUT_CHUNK = 2**20
"""The fewest slots of an output chunk (8 MiB of float64), so that small chunks of
targets do not make (chunks of targets) × (output chunks) pieces."""

SPLIT_EVERY = 8
"""How many pieces of one output chunk a task adds."""

Part = tuple[np.ndarray, np.ndarray] | np.ndarray  # (slots, values) pairs, or a bincount


def _as_part(slots: np.ndarray, values: np.ndarray, start: int, length: int) -> Part:
    """Pairs while they are at most half the chunk's slots (16 bytes a pair, 8 a slot),
    else the chunk's partial sums."""
    if 2 * len(slots) <= length:
        return slots, values
    return np.bincount(slots - start, weights=values, minlength=length)


def _cut(slots: np.ndarray, values: np.ndarray, step: int, count: int, total: int) -> list[Part]:
    """One chunk of the targets cut into one part per output chunk, in its own order."""
    window = slots // step
    if count <= 2**16:  # NumPy's stable sort of 16-bit integers is a radix sort
        window = window.astype(np.uint16)
    order = np.argsort(window, kind="stable")
    cuts = np.searchsorted(window[order], np.arange(count + 1))
    slots, values = slots[order], values[order].astype(np.float64, copy=False)
    return [
        _as_part(slots[a:b], values[a:b], k * step, min(step, total - k * step))
        for k, (a, b) in enumerate(itertools.pairwise(cuts))
    ]


def _piece(cut: Sequence[Part], k: int) -> Part:
    return cut[k]


def _combine(parts: Sequence[Part], start: int, length: int) -> Part:
    """Parts of one output chunk added: pairs concatenated in order while they stay
    pairs, else one array of sums."""
    pairs = [p for p in parts if isinstance(p, tuple)]
    sums = [p for p in parts if not isinstance(p, tuple)]
    slots = np.concatenate([s for s, _ in pairs]) if pairs else np.zeros(0, np.int64)
    values = np.concatenate([v for _, v in pairs]) if pairs else np.zeros(0)
    if not sums:
        return _as_part(slots, values, start, length)
    total = sums[0].copy()
    for more in sums[1:]:
        total += more
    if len(slots):
        total += np.bincount(slots - start, weights=values, minlength=length)
    return total


def _finish(parts: Sequence[Part], start: int, length: int, dtype: Any) -> np.ndarray:
    part = _combine(parts, start, length)
    if isinstance(part, tuple):
        part = np.bincount(part[0] - start, weights=part[1], minlength=length)
    return part.astype(dtype, copy=False)


def dask_scatter_add(slots: Any, values: Any, size: int, row: int = 1) -> Any:
    """``out[slots[r]] += values[r]`` into ``size`` slots (Dask arrays of one axis, the
    slots in range, float values): lazy, chunked as described above, each output chunk
    a whole number of rows of ``row`` slots (so that the output reshapes to rows chunk
    by chunk)."""
    dsa: Any = importlib.import_module("dask.array")  # untyped
    highlevelgraph: Any = importlib.import_module("dask.highlevelgraph")
    tokenize: Any = importlib.import_module("dask.base").tokenize
    values = values.rechunk(slots.chunks)
    step = max(max(slots.chunks[0], default=1), SCATTER_MIN_OUTPUT_CHUNK)
    step = -(-step // row) * row
    out_chunks = dsa.core.normalize_chunks(step, (size,))[0]  # step, …, the rest
    token = tokenize(slots, values, out_chunks)
    cut, piece, name = (f"scatter-{what}-{token}" for what in ("cut", "piece", "bincounts"))
    graph: dict[Any, Any] = {}
    inputs = range(len(slots.chunks[0]))
    for j in inputs:
        graph[(cut, j)] = (_cut, (slots.name, j), (values.name, j), step, len(out_chunks), size)
        for k in range(len(out_chunks)):
            graph[(piece, j, k)] = (_piece, (cut, j), k)
    for k, length in enumerate(out_chunks):
        start, length = k * step, int(length)
        parts = [(piece, j, k) for j in inputs]
        level = 0
        while len(parts) > SPLIT_EVERY:
            groups = [parts[g : g + SPLIT_EVERY] for g in range(0, len(parts), SPLIT_EVERY)]
            combined = f"scatter-add{level}-{token}"
            for g, group in enumerate(groups):
                graph[(combined, g, k)] = (_combine, group, start, length)
            parts = [(combined, g, k) for g in range(len(groups))]
            level += 1
        graph[(name, k)] = (_finish, parts, start, length, values.dtype)
    layers = highlevelgraph.HighLevelGraph.from_collections(
        name, graph, dependencies=[slots, values]
    )
    return dsa.Array(layers, name, (out_chunks,), dtype=values.dtype)

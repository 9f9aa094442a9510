"""Choosing the array backend: NumPy (default), CuPy, Dask, or any array-API namespace.

The backend follows the input arrays (``array_api_compat.array_namespace``) or an
explicit ``backend="numpy" | "cupy" | "dask"``.  Per namespace, the one primitive the
array API lacks: scatter-add is NumPy's ``bincount`` (one value per target) or
``add.at``, CuPy's ``add.at``, a shuffle of ``bincount``s on Dask (float values), and
:func:`dualarr.interp.arrays.scatter_add_by_selection` elsewhere.
NumPy's fast paths to the same values are fields of its backend too: a range check on
the host (:func:`all_in_range`, so in-range indices skip the mask of §5.2), ``take``
without a second bounds check, and branches on host scalars.  Dask's ``take`` is its
chunked take over the merged indexed axes (:func:`merged_indexed_axes`).
"""

from __future__ import annotations

import functools
import importlib
import math
import types
from collections.abc import Sequence
from typing import Any

import array_api_compat
import numpy as np

from ..lang.errors import DualarrError, UnsupportedError
from ..lang.optional import require
from .arrays import Array, Backend, row_major_offset, scatter_add_by_selection
from .dask_scatter import dask_scatter_add

__all__ = [
    "BACKENDS",
    "all_in_range",
    "backend_of",
    "cupy_backend",
    "dask_backend",
    "get_backend",
    "merged_indexed_axes",
    "numpy_backend",
]

BACKENDS = ("numpy", "cupy", "dask")


def all_in_range(comps: Sequence[Any], extents: Sequence[int]) -> bool:
    """Every component within its extent, on NumPy, no temporary arrays: one reduction
    over an int64 component read as unsigned (a negative one reads as at least 2**63),
    two (``min`` and ``max``) over another."""
    for comp, extent in zip(map(np.asarray, comps), extents, strict=False):
        if not comp.size:
            continue
        if comp.dtype.type is np.int64:
            if comp.view(np.uint64).max() >= extent:
                return False
        elif comp.min() < 0 or comp.max() >= extent:
            return False
    return True


def _numpy_take(xp: Any, array: Array, comps: Sequence[Array]) -> Array:
    """``array[comps]`` (components in range): ``take`` without its own bounds check
    (``"clip"`` moves nothing in range) for one, NumPy's indexing for several."""
    if len(comps) == 1:
        return array.take(comps[0], axis=0, mode="clip")
    return array[tuple(comps)]


def _numpy_scatter_add(xp: Any, targets: Array, values: Array, size: int) -> Array:
    if values.ndim == 1 and values.dtype.kind == "f":  # one float value per target
        return np.bincount(targets, weights=values, minlength=size).astype(
            values.dtype, copy=False
        )
    if values.ndim == 1:
        return _numpy_scatter_add(xp, targets, values.reshape(-1, 1), size).reshape(size)
    if values.shape[1] == 1 and values.dtype.kind == "f":
        # one value per target: bincount adds (in order) far faster than add.at
        summed = np.bincount(targets, weights=values[:, 0], minlength=size)
        return summed.astype(values.dtype, copy=False).reshape(size, 1)
    out = np.zeros((size, values.shape[1]), dtype=values.dtype)
    np.add.at(out, targets, values)
    return out


def _cupy_scatter_add(xp: Any, targets: Array, values: Array, size: int) -> Array:
    import cupy

    out = xp.zeros((size, *values.shape[1:]), dtype=values.dtype)
    add_at = getattr(cupy.add, "at", None)  # CuPy 13+; ``cupyx.scatter_add`` before
    if add_at is None:
        import cupyx

        cupyx.scatter_add(out, targets, values)
    else:
        add_at(out, targets, values)
    return out


def _dask_scatter_add(xp: Any, targets: Array, values: Array, size: int) -> Array:
    """Float values: :func:`dualarr.interp.dask_scatter.dask_scatter_add`, a shuffle
    whose tasks hold a few chunks at most; rows of ``width`` values go to ``width``
    slots per target (target ``t``'s column ``c`` to slot ``t * width + c``).  Other
    dtypes: the generic :func:`scatter_add_by_selection`.  The targets are in range here
    (:func:`dualarr.interp.arrays.scatter` masks the others)."""
    dsa: Any = importlib.import_module("dask.array")  # untyped
    if not xp.isdtype(values.dtype, "real floating"):
        return scatter_add_by_selection(xp, targets, values, size)
    width = 1 if values.ndim == 1 else values.shape[1]
    slots = dsa.asarray(targets)
    if width != 1:
        columns = dsa.arange(width, dtype=slots.dtype)
        slots = (slots[:, None] * width + columns[None, :]).reshape(-1)
    summed = dask_scatter_add(slots, dsa.asarray(values).reshape(-1), size * width, width)
    return summed if values.ndim == 1 else summed.reshape(size, width)


def merged_indexed_axes(array: Any, count: int) -> Any:
    """A Dask ``array`` with its first ``count`` axes merged into one (row-major), as a
    gather of ``count`` index components reads it, no chunk larger than ``array``'s:
    the axes merged into the first are first made one chunk each (a merge needs them
    whole), and the first is rechunked to as many rows as keep a chunk within the
    largest of ``array`` (Dask's own merge would keep the first axis's chunks, each
    then as large as all the merged axes together)."""
    if count == 1:
        return array
    shape = tuple(array.shape)
    largest = math.prod(max(c, default=1) for c in array.chunks)
    merged = math.prod(shape[1:count])
    tail_chunk = math.prod(max(c, default=1) for c in array.chunks[count:])
    rows = max(1, largest // max(merged * tail_chunk, 1))
    rechunked = array.rechunk({0: rows, **{axis: -1 for axis in range(1, count)}})
    return rechunked.reshape((math.prod(shape[:count]), *shape[count:]))


def _dask_take(xp: Any, array: Array, comps: Sequence[Array]) -> Array:
    """``array[comps]`` on Dask (components in range): Dask's chunked ``take`` along the
    first axis of :func:`merged_indexed_axes` at the components' row-major offsets.
    Each task meets one chunk of the offsets and one chunk of the array (the chunks of
    the offsets are the result's), so no task holds the whole array or the whole
    index; the array is never flattened beyond the indexed axes."""
    dsa: Any = importlib.import_module("dask.array")  # untyped
    count = len(comps)
    indexed, tail = tuple(array.shape[:count]), tuple(array.shape[count:])
    offsets = comps[0] if count == 1 else row_major_offset(comps, indexed)
    batch = tuple(offsets.shape)
    source = merged_indexed_axes(dsa.asarray(array), count)
    picked = dsa.take(source, xp.reshape(offsets, (-1,)), axis=0)
    return xp.reshape(picked, batch + tail)


@functools.cache
def numpy_backend() -> Backend:
    """NumPy (2.x is an array-API namespace itself: no compatibility wrapper to import,
    which would cost about 150 ms of the first gradient)."""
    return Backend(
        "numpy",
        np,
        _numpy_scatter_add,
        in_range=all_in_range,
        take=_numpy_take,
        host_branches=True,
    )


@functools.cache
def _cupy_backend() -> Backend:
    import cupy

    return Backend("cupy", array_api_compat.array_namespace(cupy.zeros(0)), _cupy_scatter_add)


def cupy_backend() -> Backend:
    """The CuPy backend; a clear error without CuPy or without a CUDA device."""
    try:
        import cupy
    except ImportError:
        raise DualarrError(
            "backend 'cupy' needs CuPy: install dualarr[gpu] (pip install -e '.[gpu]')",
            op="backend",
        ) from None
    try:
        available = bool(cupy.is_available())
    except Exception:  # a broken CUDA installation reports itself here
        available = False
    if not available:
        raise DualarrError(
            "CuPy is installed but no CUDA device is available; use backend='numpy'",
            op="backend",
        )
    return _cupy_backend()


def _dask_linalg(compat_linalg: Any) -> types.ModuleType:
    """``linalg`` for Dask: NumPy's own functions on each chunk of a stack of matrices
    (``dask.array.apply_gufunc``, the matrix axes made one chunk), so stacks of any
    batch shape, NumPy's results and NumPy's bits per matrix.  Dask's own ``linalg``
    takes one 2-d matrix only, lacks ``slogdet`` and ``eigh``, and behind the array
    API's ``cholesky`` returns the upper factor; the linear-algebra constructs
    (:mod:`dualarr.constructs.linalg_solve`) call only these."""
    dsa: Any = importlib.import_module("dask.array")  # untyped
    numpy_linalg: Any = np.linalg  # called with keywords of run-time values
    linalg = types.ModuleType(compat_linalg.__name__)
    linalg.__dict__.update(vars(compat_linalg))

    def gufunc(function: Any, signature: str, *arrays: Any, outputs: int = 1,
               sizes: dict[str, int] | None = None) -> Any:
        # every operand's core axes are its last two: one chunk each
        operands = [dsa.asarray(a).rechunk({a.ndim - 2: -1, a.ndim - 1: -1}) for a in arrays]
        dtype = np.result_type(*(a.dtype for a in operands))
        return dsa.apply_gufunc(
            function, signature, *operands,
            output_dtypes=dtype if outputs == 1 else (dtype,) * outputs,
            output_sizes=sizes or {},
        )

    def solve(a: Any, b: Any) -> Any:
        return gufunc(np.linalg.solve, "(n,n),(n,k)->(n,k)", a, b)

    def inv(a: Any) -> Any:
        return gufunc(np.linalg.inv, "(n,n)->(n,n)", a)

    def slogdet(a: Any) -> Any:
        return gufunc(lambda m: tuple(np.linalg.slogdet(m)), "(n,n)->(),()", a, outputs=2)

    def cholesky(a: Any, upper: bool = False) -> Any:
        return gufunc(functools.partial(np.linalg.cholesky, upper=upper), "(n,n)->(n,n)", a)

    def eigh(a: Any, UPLO: str = "L") -> Any:  # NumPy's keyword
        return gufunc(lambda m: tuple(numpy_linalg.eigh(m, UPLO=UPLO)),
                      "(n,n)->(n),(n,n)", a, outputs=2)

    def svd(a: Any, full_matrices: bool = True) -> Any:
        m, n = a.shape[-2:]
        signature = "(m,n)->(m,m),(k),(n,n)" if full_matrices else "(m,n)->(m,k),(k),(k,n)"
        return gufunc(lambda x: tuple(np.linalg.svd(x, full_matrices=full_matrices)),
                      signature, a, outputs=3, sizes={"k": min(m, n)})

    def qr(a: Any, mode: str = "reduced") -> Any:
        m, n = a.shape[-2:]
        signature = {"reduced": "(m,n)->(m,k),(k,n)", "complete": "(m,n)->(m,m),(m,n)"}
        if mode not in signature:
            raise UnsupportedError(f"mode {mode!r} of qr on Dask", op="linalg.qr")
        return gufunc(lambda x: tuple(numpy_linalg.qr(x, mode=mode)), signature[mode], a,
                      outputs=2, sizes={"k": min(m, n)})

    for function in (solve, inv, slogdet, cholesky, eigh, svd, qr):
        setattr(linalg, function.__name__, function)
    return linalg


@functools.cache
def _dask_backend() -> Backend:
    dsa: Any = importlib.import_module("dask.array")
    compat = array_api_compat.array_namespace(dsa.zeros(0))
    xp = types.ModuleType(compat.__name__)  # array_api_compat.dask.array, but for reshape
    xp.__dict__.update(vars(compat))

    def reshape(x: Any, shape: Sequence[int], **kwargs: Any) -> Any:
        """Dask reshapes only by merging or evenly splitting dimensions ((1, 2, 3) to
        (3, 2) raises ``NotImplementedError``); any other reshape goes through the
        flat array (a merge, then a split), still lazy."""
        try:
            return compat.reshape(x, shape, **kwargs)
        except NotImplementedError:
            return compat.reshape(compat.reshape(x, (-1,), **kwargs), shape, **kwargs)

    xp.reshape = reshape  # type: ignore[attr-defined]
    xp.linalg = _dask_linalg(compat.linalg)  # type: ignore[attr-defined]
    return Backend("dask", xp, _dask_scatter_add, take=_dask_take)


def dask_backend() -> Backend:
    """The Dask backend (``dask.array``): the array-API code of every other namespace,
    results lazy ``dask.array.Array`` until ``.compute()``, in both modes.  Nothing
    computes on the way: index ranges are not checked on the host (Dask has no fast
    path to them), so gathers and scatters always take the masked path of §5.2, and a
    0-d condition is a lazy ``where``; a gather is Dask's chunked ``take``
    (:func:`merged_indexed_axes`); a fused kernel of generated code is one
    ``map_blocks`` task per chunk where its arguments' chunks line up
    (:func:`dualarr.codegen.kernels.dask_kernel`); reshapes Dask cannot do in one pass
    go through the flat array.  Arrays the program makes itself (index grids, zeros)
    take Dask's own chunk size (``dask.config`` ``array.chunk-size``, 128 MiB by
    default): on workers with little memory, set it near the inputs' chunk size.
    What computes: ``backend="dask"`` with NumPy inputs (the results
    move back to NumPy), and the user's ``.compute()``.  Without Dask, a
    :class:`~dualarr.lang.errors.MissingDependencyError` naming the ``dask`` extra."""
    require("dask.array", extra="dask", feature="backend 'dask'")
    return _dask_backend()


def backend_of(arrays: Sequence[Any]) -> Backend:
    """The backend of the arrays (Python numbers and NumPy arrays: NumPy)."""
    candidates = [a for a in arrays if hasattr(a, "shape") and not isinstance(a, np.ndarray)]
    candidates = [a for a in candidates if not isinstance(a, np.generic)]
    if not candidates:
        return numpy_backend()
    xp = array_api_compat.array_namespace(*candidates)
    if array_api_compat.is_numpy_namespace(xp):
        return numpy_backend()
    if array_api_compat.is_cupy_namespace(xp):
        return cupy_backend()
    if array_api_compat.is_dask_namespace(xp):
        return dask_backend()
    return _generic_backend(xp)


@functools.cache
def _generic_backend(xp: Any) -> Backend:
    name = getattr(xp, "__name__", "array-api").split(".")[-1]
    return Backend(name, xp, scatter_add_by_selection)


def get_backend(name: str | None, arrays: Sequence[Any] = ()) -> Backend:
    """``name`` ("numpy", "cupy", "dask") or, for None, the backend of ``arrays``."""
    if name is None:
        return backend_of(arrays)
    if name == "numpy":
        return numpy_backend()
    if name == "cupy":
        return cupy_backend()
    if name == "dask":
        return dask_backend()
    raise DualarrError(
        f"unknown backend {name!r}; available: {', '.join(BACKENDS)} (or None: follow the "
        "input arrays)",
        op="backend",
    )


def to_backend(backend: Backend, value: Any) -> Any:
    """``value`` as an array of ``backend`` (an explicit, requested transfer)."""
    if backend.name == "numpy":
        return value if isinstance(value, np.ndarray) else _to_host(value)
    return backend.xp.asarray(value)


def _to_host(value: Any) -> np.ndarray:
    get = getattr(value, "get", None)  # CuPy arrays copy to the host with .get()
    return np.asarray(get() if callable(get) else value)

"""The gradient on a real Dask cluster: a ``distributed.LocalCluster`` of two worker
processes on the loopback address, each with a memory limit smaller than the program's
input.  The input is made on the workers, chunk by chunk (never built here and shipped);
value and gradient are lazy ``dask.array.Array`` until ``.compute()``, which runs on the
cluster's workers, none of them killed or restarted on the way; the value and sampled
elements of the gradient equal NumPy's, from the same formula of each element's
position."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import dualarr as da

dask = pytest.importorskip("dask")
dsa = pytest.importorskip("dask.array")
distributed: Any = pytest.importorskip("distributed")  # untyped
cloudpickle: Any = importlib.import_module("cloudpickle")  # a dependency of distributed

MEMORY_LIMIT = 200 * 2**20  # bytes, per worker
# 4 MiB of float64 per chunk: with 8 MiB chunks the interpreter's tasks already take a
# worker past its limit (its nanny restarts it)
CHUNK = 2**19  # elements
N = 64 * CHUNK  # 256 MiB of float64: more than one worker may hold
K = 64  # the lookup table's length
SAMPLE = np.unique(
    np.concatenate(
        [
            [0, 1, CHUNK - 1, CHUNK, N // 2, N - 2, N - 1],
            np.random.default_rng(40).integers(0, N, 57),
        ]
    )
)


@dataclass(frozen=True)
class Cluster:
    client: Any
    workers: frozenset[str]  # addresses at the start


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """Two worker processes, one thread each, ``MEMORY_LIMIT`` each, for this module's
    tests; stopped (client, workers, scheduler) after the last, failed or not."""
    with (
        dask.config.set({"array.chunk-size": f"{CHUNK * 8}B"}),  # Dask's own, as the input's
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            memory_limit=MEMORY_LIMIT,
            dashboard_address=None,
        ) as local,
        distributed.Client(local) as client,
    ):
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 2
        assert all(w["memory_limit"] == MEMORY_LIMIT for w in workers.values())
        yield Cluster(client, frozenset(workers))


# ---------------------------------------------------------------- inputs, programs
# An input is a formula of each element's position: on the cluster over
# ``dask.array.arange`` (chunk by chunk, on the workers), here over NumPy positions.


def positions() -> Any:
    return dsa.arange(N, chunks=CHUNK, dtype=np.int64)


def x_of(i: Any) -> Any:
    """``N`` points in [-1, 2)."""
    return i * (3.0 / N) - 1.0


def bin_of(i: Any) -> Any:
    """A bin of the table for each position, over all ``K``."""
    return (i * 7919) % K


def table() -> np.ndarray:
    return np.linspace(0.5, 1.5, K)


def summed_numpy(f: Callable[[np.ndarray], Any]) -> np.ndarray:
    """``f`` of the positions, summed a chunk at a time (never all of them here)."""
    chunks = (f(np.arange(s, s + CHUNK)) for s in range(0, N, CHUNK))
    return np.asarray(sum(chunks, np.asarray(0.0)))


def bumps(x: Any) -> Any:
    """Elementwise, then a reduction."""
    return da.sum(da.exp(-x * x) + da.log(1.0 + x * x))


def lookup(x: Any, w: Any, bins: Any) -> Any:
    """A gather from a small table by a computed bin per element; the gradient with
    respect to the table is a scatter-add of every element into ``K`` slots."""
    return da.sum(da.gather((N,), w, lambda i: (bins[i],)) * x * x)


def reversal(x: Any) -> Any:
    """A gather across all chunks: element ``i`` meets element ``N - 1 - i``."""
    return da.sum(da.sin(x) * da.gather((N,), x, lambda i: (N - 1 - i,)))


# -------------------------------------------------------------------------- checks


def value_and_grad(f: Callable[..., Any], mode: str, argnums: Any = 0) -> Callable[..., Any]:
    """``da.value_and_grad`` in ``mode``, or (``"jit"``) jitted."""
    if mode != "jit":
        return da.value_and_grad(f, argnums=argnums, mode=mode)
    return da.jit(da.value_and_grad(f, argnums=argnums))


def on_the_cluster(cluster: Cluster, lazy: list[Any]) -> list[Any]:
    """``lazy`` computed on the cluster, once checked that it is lazy, that the graph
    sent there is small (the data is made there), that each worker ran some of it and
    that none was restarted (killed past its memory limit, say)."""
    for a in lazy:
        assert isinstance(a, dsa.Array), type(a)
    assert dask.base.get_scheduler() == cluster.client.get  # the client computes
    graph = {key: task for a in lazy for key, task in dict(a.__dask_graph__()).items()}
    graph_bytes = len(cloudpickle.dumps(graph))
    assert graph_bytes < 2**21, f"a {graph_bytes}-byte graph: data built here?"
    with distributed.get_task_stream(cluster.client) as stream:
        got = list(dask.compute(*lazy))
    workers = frozenset(cluster.client.scheduler_info()["workers"])
    assert workers == cluster.workers, f"workers restarted: {workers} after {cluster.workers}"
    ran_on = {task["worker"] for task in stream.data}
    assert ran_on == cluster.workers, (ran_on, cluster.workers)
    assert len(stream.data) >= N // CHUNK  # at least a task per input chunk
    return got


# Arrays Dask makes itself (the interpreter's index grids, ``dask.array.arange``) take
# Dask's ``array.chunk-size``, set to the input's chunk size as for any Dask program on
# workers this small.  The gather programs run compiled: the interpreter's concrete
# reverse pass makes about six times the tasks (its index grids and masks, per chunk)
# and takes minutes here; tests/test_dask_backend.py runs it on small chunked arrays.
GATHER_MODES = ["compiled"]


def test_the_input_outgrows_a_worker(cluster: Cluster) -> None:
    x = x_of(positions())
    limits = [w["memory_limit"] for w in cluster.client.scheduler_info()["workers"].values()]
    assert x.nbytes > max(limits)
    assert max(x.chunks[0]) * x.dtype.itemsize <= min(limits) // 32  # many small tasks


@pytest.mark.parametrize("mode", [*da.api.MODES, "jit"])
def test_elementwise_and_sum_on_the_cluster(cluster: Cluster, mode: str) -> None:
    value, grad = value_and_grad(bumps, mode)(x_of(positions()))
    got_value, got = on_the_cluster(cluster, [value, grad[SAMPLE]])

    def value_numpy(i: np.ndarray) -> Any:
        x = x_of(i)
        return np.sum(np.exp(-x * x) + np.log(1.0 + x * x))

    x = x_of(SAMPLE)
    np.testing.assert_allclose(got_value, summed_numpy(value_numpy), rtol=1e-12)
    want = -2.0 * x * np.exp(-x * x) + 2.0 * x / (1.0 + x * x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("mode", GATHER_MODES)
def test_gather_and_scatter_add_on_the_cluster(cluster: Cluster, mode: str) -> None:
    i = positions()
    w = dsa.from_array(table(), chunks=K)
    value, (grad_x, grad_w) = value_and_grad(lookup, mode, argnums=(0, 1))(x_of(i), w, bin_of(i))
    got_value, got_x, got_w = on_the_cluster(cluster, [value, grad_x[SAMPLE], grad_w])

    def value_numpy(i: np.ndarray) -> Any:
        return np.sum(table()[bin_of(i)] * x_of(i) ** 2)

    def grad_w_numpy(i: np.ndarray) -> Any:
        return np.bincount(bin_of(i), weights=x_of(i) ** 2, minlength=K)

    np.testing.assert_allclose(got_value, summed_numpy(value_numpy), rtol=1e-12)
    np.testing.assert_allclose(got_x, 2.0 * x_of(SAMPLE) * table()[bin_of(SAMPLE)], rtol=1e-12)
    np.testing.assert_allclose(got_w, summed_numpy(grad_w_numpy), rtol=1e-12)


@pytest.mark.parametrize("mode", GATHER_MODES)
def test_reversal_on_the_cluster(cluster: Cluster, mode: str) -> None:
    value, grad = value_and_grad(reversal, mode)(x_of(positions()))
    got_value, got = on_the_cluster(cluster, [value, grad[SAMPLE]])

    def value_numpy(i: np.ndarray) -> Any:
        return np.sum(np.sin(x_of(i)) * x_of(N - 1 - i))

    x, mirrored = x_of(SAMPLE), x_of(N - 1 - SAMPLE)
    np.testing.assert_allclose(got_value, summed_numpy(value_numpy), rtol=1e-12)
    want = np.cos(x) * mirrored + np.sin(mirrored)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)

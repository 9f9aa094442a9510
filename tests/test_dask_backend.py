"""The Dask backend (``backend="dask"``, or ``dask.array`` inputs): the checks that
tests/test_backends.py runs under ``array_api_strict`` — the reference evaluator,
gradients in both modes, vjp/jvp, jacobian, float32 — on chunked Dask arrays (one
chunk, uneven chunks, chunk boundaries inside gather windows), each result a lazy
``dask.array.Array`` that nothing computed before ``.compute()``, equal to NumPy's
after; Dask's chunked scatter-add; and the named error without Dask."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs

import dualarr as da
import dualarr.numpy as dnp
from dualarr.interp import arrays
from dualarr.interp.backends import BACKENDS, backend_of, get_backend

dask = pytest.importorskip("dask")
dsa = pytest.importorskip("dask.array")
callbacks: Any = importlib.import_module("dask.callbacks")  # untyped

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
CHUNKS = st.sampled_from([-1, 1, 2, 3])  # one chunk, or chunks of this length per axis


def lazy(a: Any, chunk: int | tuple[int, ...] = -1) -> Any:
    """``a`` as a Dask array, ``chunk`` long along every axis (-1: one chunk)."""
    a = np.asarray(a)
    return dsa.from_array(a, chunks=chunk if a.ndim else ())


def host(a: Any) -> np.ndarray:
    if isinstance(a, tuple):
        return np.asarray([host(v) for v in a])
    assert isinstance(a, dsa.Array), type(a)
    return np.asarray(a.compute())


@contextmanager
def nothing_computed() -> Iterator[None]:
    """The block builds task graphs only: Dask's scheduler never starts in it."""
    runs: list[Any] = []
    with callbacks.Callback(start=runs.append):
        yield
    assert not runs, f"{len(runs)} computations before .compute()"


def test_dask_is_a_named_backend_followed_by_its_arrays() -> None:
    assert "dask" in BACKENDS
    assert get_backend("dask").name == "dask"
    assert backend_of([lazy(np.ones(3), 2), np.ones(3), 1.0]).name == "dask"
    assert backend_of([np.ones(3)]).name == "numpy"


def test_backend_dask_without_dask_is_a_named_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dask.array", None)  # importing it raises ImportError
    with pytest.raises(da.MissingDependencyError, match=r"dualarr\[dask\]") as caught:
        da.grad(lambda x: da.sum(x * x), backend="dask")(np.ones(3))
    assert (caught.value.module, caught.value.extra) == ("dask.array", "dask")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and inf are values here
@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(programs(), CHUNKS)
def test_reference_evaluator_agrees_on_dask(gp: GeneratedProgram, chunk: int) -> None:
    program = gp.program()
    want = program(*gp.arrays)
    with nothing_computed():
        got = program(*(lazy(a, chunk) for a in gp.arrays))
    np.testing.assert_allclose(host(got), want, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(
    programs(float_only=True, output_shapes=st.just(())),
    st.sampled_from(da.api.MODES),
    CHUNKS,
)
def test_gradients_agree_on_dask(gp: GeneratedProgram, mode: str, chunk: int) -> None:
    f = gp.function()
    positions = tuple(k for k, v in enumerate(gp.inputs) if v.dtype.is_float)
    assume(positions)
    value, grads = da.value_and_grad(f, argnums=positions, mode=mode)(*gp.arrays)
    with nothing_computed():
        got_value, got = da.value_and_grad(f, argnums=positions, mode=mode)(
            *(lazy(a, chunk) for a in gp.arrays)
        )
    np.testing.assert_allclose(host(got_value), value, rtol=1e-9, equal_nan=True)
    for g, want in zip(got, grads, strict=True):
        np.testing.assert_allclose(host(g), want, rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=25, deadline=None, suppress_health_check=SLOW_OK)
@given(programs(float_only=True), st.sampled_from(da.api.MODES), CHUNKS, st.integers(0, 2**31))
def test_vjp_and_jvp_agree_on_dask(gp: GeneratedProgram, mode: str, chunk: int, seed: int) -> None:
    f = gp.function()
    rng = np.random.default_rng(seed)
    value, pullback = da.vjp(f, *gp.arrays, mode=mode)
    c = rng.normal(size=np.shape(value))
    want = pullback(c)
    tangents = [rng.normal(size=a.shape) for a in gp.arrays]
    _, want_t = da.jvp(f, gp.arrays, tangents)
    with nothing_computed():
        got_value, got_pullback = da.vjp(f, *(lazy(a, chunk) for a in gp.arrays), mode=mode)
        got = got_pullback(lazy(c, chunk))
        _, got_t = da.jvp(
            f, [lazy(a, chunk) for a in gp.arrays], [lazy(t, chunk) for t in tangents]
        )
    np.testing.assert_allclose(host(got_value), value, rtol=1e-9, equal_nan=True)
    for g, w in zip(got, want, strict=True):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(host(g), w, rtol=1e-9, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(host(got_t), want_t, rtol=1e-9, atol=1e-12, equal_nan=True)


# n = 20 in chunks of 20 (one), 7 (uneven: 7, 7, 6) and 3: a reversal and a permutation
# read across chunk boundaries, windows of a gather straddle them
N = 20
PERMUTATION = np.random.default_rng(0).permutation(N)
CHUNKINGS = [(N,), (7,), (3,), ((5, 1, 9, 5),)]


def _reversal(x: Any) -> Any:
    return da.sum(da.sin(x) * da.gather((N,), x, lambda i: (N - 1 - i,)))


def _permutation(x: Any, p: Any) -> Any:
    return da.sum(da.tanh(x * da.gather((N,), x, lambda i: (p[i],))))


def _windows(x: Any) -> Any:  # each output reads x[i], …, x[i + 4], past the end dropped
    w = da.gather((N, 5), x, lambda i, j: (i + j,))
    return da.sum(da.exp(-w * w) * da.replicate(N, da.cos(x[:5])))


def _scatter_gather(x: Any) -> Any:
    s = da.scatter((6,), x * x, lambda i: (i % 6,))
    return da.sum(s * da.gather((6,), x, lambda i: (2 * i + 1,)))


PROGRAMS: list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]] = [
    ("reversal", _reversal, (np.linspace(-1.0, 2.0, N),)),
    ("permutation", _permutation, (np.linspace(-1.0, 2.0, N), PERMUTATION)),
    ("windows", _windows, (np.linspace(-1.0, 2.0, N),)),
    ("scatter-gather", _scatter_gather, (np.linspace(-1.0, 2.0, N),)),
]


@pytest.mark.parametrize("mode", da.api.MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
@pytest.mark.parametrize(("name", "f", "args"), PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_gradients_across_chunk_boundaries(
    mode: str, chunks: tuple[Any, ...], name: str, f: Any, args: tuple[np.ndarray, ...]
) -> None:
    want_value, want = da.value_and_grad(f, mode=mode)(*args)
    with nothing_computed():
        value, got = da.value_and_grad(f, mode=mode)(*(lazy(a, chunks) for a in args))
    assert isinstance(got, dsa.Array) and isinstance(value, dsa.Array)
    np.testing.assert_allclose(host(value), want_value, rtol=1e-12, err_msg=name)
    np.testing.assert_allclose(host(got), want, rtol=1e-12, atol=1e-15, err_msg=name)


@pytest.mark.parametrize("mode", da.api.MODES)
def test_jacobian_on_dask(mode: str) -> None:
    def f(x: Any) -> Any:
        return da.exp(x) * da.sum(x) + da.gather((3,), x, lambda i: (2 - i,))

    x = np.linspace(0.0, 1.0, 3)
    want = da.jacobian(f, mode=mode)(x)
    with nothing_computed():
        got = da.jacobian(f, mode=mode)(lazy(x, 2))
    np.testing.assert_allclose(host(got), want, rtol=1e-12)


@pytest.mark.parametrize("mode", da.api.MODES)
@pytest.mark.parametrize(("name", "f", "args"), PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_float32_end_to_end_on_dask(
    mode: str, name: str, f: Any, args: tuple[np.ndarray, ...]
) -> None:
    wide = da.grad(f, mode=mode)(*args)
    narrow_args = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in args]
    with nothing_computed():
        narrow = da.grad(f, mode=mode)(*(lazy(a, (7,)) for a in narrow_args))
    assert narrow.dtype == np.float32, name
    np.testing.assert_allclose(host(narrow), wide, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("chunks", [(4,), (3,), ((1, 2, 1),)], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scatter_add_adds_collisions_and_drops_out_of_range(
    chunks: tuple[Any, ...], dtype: type
) -> None:
    backend = get_backend("dask")
    values = lazy(np.asarray([1.0, 2.0, 3.0, 4.0], dtype=dtype), chunks)
    with nothing_computed():
        out = arrays.scatter(backend, values, [lazy([1, 1, -1, 7], chunks)], (4,), 1)
        known = arrays.scatter(backend, values, [lazy([1, 1, 0, 3], chunks)], (4,), 1, True)
    assert isinstance(out, dsa.Array) and out.dtype == dtype
    assert "bincount" in " ".join(map(str, dict(out.__dask_graph__()))), "Dask's bincount"
    np.testing.assert_array_equal(host(out), [0.0, 3.0, 0.0, 0.0])
    np.testing.assert_array_equal(host(known), [3.0, 3.0, 0.0, 4.0])


@pytest.mark.parametrize("chunks", [-1, 3, (1, 2)], ids=str)
def test_scatter_add_of_rows_is_a_bincount_of_their_slots(chunks: Any) -> None:
    backend = get_backend("dask")
    values = lazy(np.arange(8.0).reshape(4, 2), chunks)
    with nothing_computed():
        out = backend.scatter_add(backend.xp, lazy([2, 0, 2, 1], 3), values, 3)
    assert "bincount" in " ".join(map(str, dict(out.__dask_graph__())))
    np.testing.assert_array_equal(host(out), [[2.0, 3.0], [6.0, 7.0], [4.0, 6.0]])


@pytest.mark.parametrize("slots", [9, 1000])
@pytest.mark.parametrize("smallest", [1, 4, 2**20])
@pytest.mark.parametrize("chunks", [(7,), (3,), ((1, 5, 0, 14),)], ids=str)
@pytest.mark.parametrize("width", [1, 3])
def test_scatter_add_is_a_shuffle_of_bincounts(
    monkeypatch: pytest.MonkeyPatch, slots: int, smallest: int, chunks: tuple[Any, ...],
    width: int,
) -> None:
    """Output chunks of at least ``smallest`` slots, each added from its pieces.  Few
    targets per slot (1000 slots): every piece travels as pairs and each chunk is one
    bincount of its targets in their order, NumPy's sums bit for bit; many (9 slots):
    partial sums, the same sums up to rounding."""
    from dualarr.interp import dask_scatter

    monkeypatch.setattr(dask_scatter, "SCATTER_MIN_OUTPUT_CHUNK", smallest)
    monkeypatch.setattr(dask_scatter, "SPLIT_EVERY", 2)  # a tree of several levels
    rng = np.random.default_rng(smallest + width + slots)
    targets = rng.integers(0, slots, 20)
    values = rng.normal(size=(20, width)) * 10.0 ** rng.integers(-3, 3, (20, width))
    backend = get_backend("dask")
    with nothing_computed():
        out = backend.scatter_add(
            backend.xp, lazy(targets, chunks), lazy(values if width > 1 else values[:, 0],
                                                    (chunks[0], width) if width > 1 else chunks),
            slots,
        )
    want = np.zeros((slots, width))
    for t, row in zip(targets, values, strict=True):
        want[t] += row  # in order, as np.add.at and np.bincount add
    got = host(out)
    got = got if width > 1 else got[:, None]
    if slots == 1000:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-10)
    step = -(-max(smallest, max(lazy(targets, chunks).chunks[0]) * width) // width) * width
    assert len(out.chunks[0]) == -(-slots * width // step)  # output chunks of whole rows
    assert all(c == step // width for c in out.chunks[0][:-1])


def test_scatter_add_of_integers_falls_back_to_selection() -> None:
    backend = get_backend("dask")
    values = lazy(np.arange(8).reshape(4, 2), 3)
    out = backend.scatter_add(backend.xp, lazy([2, 0, 2, 1], 3), values, 3)
    assert "bincount" not in " ".join(map(str, dict(out.__dask_graph__())))
    np.testing.assert_array_equal(host(out), [[2, 3], [6, 7], [4, 6]])


@pytest.mark.parametrize("mode", da.api.MODES)
def test_gradient_of_a_row_gather_scatters_rows(mode: str) -> None:
    """An embedding lookup: its gradient adds rows of 3 at repeated targets."""
    table = np.linspace(-1.0, 1.0, 24).reshape(8, 3)
    rows = np.asarray([1, 7, 1, 0, 3, 1, 7])

    def f(t: Any, r: Any) -> Any:
        return da.sum(da.tanh(da.gather((7, 3), t, lambda i, j: (r[i], j))) * 2.0)

    want = da.grad(f, mode=mode)(table, rows)
    with nothing_computed():
        got = da.grad(f, mode=mode)(lazy(table, (3, 2)), lazy(rows, 4))
    np.testing.assert_allclose(host(got), want, rtol=1e-12)


@pytest.mark.parametrize("mode", da.api.MODES)
def test_backend_dask_explicit_with_numpy_inputs(mode: str) -> None:
    x = np.linspace(-1.0, 2.0, N)
    want = da.grad(_reversal, mode=mode)(x)
    got = da.grad(_reversal, mode=mode, backend="dask")(x)  # computed there, back here
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_jit_pipeline_vmap_and_nested_transformations_stay_lazy() -> None:
    x = np.linspace(-1.0, 2.0, N)
    xd = lazy(x, (7,))

    def sines(x: Any) -> Any:
        return da.sum(da.sin(x))

    with nothing_computed():
        jitted = da.jit(_reversal)(xd)
        jitted_grad = da.jit(da.grad(_reversal))(xd)
        value, (gradient,) = da.pipeline(_reversal, xd)(xd)
        rows = da.vmap(lambda r: da.sum(r * r))(xd.reshape(4, 5))
        hessian = da.jacobian(da.grad(sines))(xd[:5])
    np.testing.assert_allclose(host(jitted), _reversal_numpy(x), rtol=1e-12)
    np.testing.assert_allclose(host(value), _reversal_numpy(x), rtol=1e-12)
    np.testing.assert_allclose(host(jitted_grad), da.grad(_reversal)(x), rtol=1e-12)
    np.testing.assert_allclose(host(gradient), da.grad(_reversal)(x), rtol=1e-12)
    np.testing.assert_allclose(host(rows), (x.reshape(4, 5) ** 2).sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(host(hessian), np.diag(-np.sin(x[:5])), atol=1e-15)


def _reversal_numpy(x: np.ndarray) -> float:
    return float(np.sum(np.sin(x) * x[::-1]))


@pytest.mark.filterwarnings("ignore:numpy.core is deprecated:DeprecationWarning")  # Dask's
def test_jit_backend_dask_with_numpy_inputs_returns_numpy() -> None:
    x = np.linspace(-1.0, 2.0, N)
    got = da.jit(_reversal, backend="dask")(x)  # computed there, back here
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, _reversal_numpy(x), rtol=1e-12)


@pytest.mark.parametrize("mode", da.api.MODES)
def test_reshapes_dask_cannot_do_in_one_pass(mode: str) -> None:
    """(1, 2, 3) to (3, 2) over chunks of one: Dask's reshape raises
    NotImplementedError (it only merges or evenly splits dimensions); the backend goes
    through the flat array."""

    def f(x: Any) -> Any:
        cube = da.replicate(1, da.replicate(2, x))  # (1, 2, 3)
        return da.sum(da.reshape(cube, (3, 2)) * da.reshape(da.iota(6) * 1.0, (3, 2)))

    x = np.asarray([0.5, -1.0, 2.0])
    want_value, want = da.value_and_grad(f, mode=mode)(x)
    with nothing_computed():
        value, got = da.value_and_grad(f, mode=mode)(lazy(x, 1))
    np.testing.assert_allclose(host(value), want_value, rtol=1e-12)
    np.testing.assert_allclose(host(got), want, rtol=1e-12)


# ----------------------------------------------------------------------------------
# Fused kernels as one task per chunk; Dask's take over the merged indexed axes
# ----------------------------------------------------------------------------------


def _transcendental(x: Any) -> Any:
    return da.sum(da.tanh(x) * da.exp(-x * x) + da.log1p(x * x) + 0.5 * x * x * x)


def _kernel_tasks(graph: Any) -> list[Any]:
    return [key for key in dict(graph) if str(key[0] if isinstance(key, tuple) else key)
            .startswith("dualarr-kernel")]


@pytest.mark.parametrize("chunks", [(12,), (4,), ((5, 2, 5),)], ids=str)
def test_fused_kernels_are_one_task_per_chunk_with_numpys_bits(chunks: tuple[Any, ...]) -> None:
    x = np.linspace(-2.0, 2.0, 12)
    with da.config.fusing(True):
        gradient = da.jit(da.value_and_grad(_transcendental))
        want_value, want = gradient(x)
        program = da.pipeline(_transcendental, x)
        with nothing_computed():
            value, got = gradient(lazy(x, chunks))
    kernels = program.python.count("= kernel") + program.python.count("(kernel")
    assert kernels, "the program has fused kernels"
    tasks = _kernel_tasks(got.__dask_graph__())
    pieces = len(lazy(x, chunks).chunks[0])
    assert tasks and len(tasks) % pieces == 0, (len(tasks), pieces)  # one per chunk each
    np.testing.assert_array_equal(host(got), want)  # the same NumPy calls: the same bits
    assert float(value.compute()) == float(want_value)


def test_kernel_tasks_survive_pickling_as_a_worker_receives_them() -> None:
    import pickle

    with da.config.fusing(True):
        got = da.jit(da.grad(_transcendental))(lazy(np.linspace(-2.0, 2.0, 12), 4))
    graph = dict(got.__dask_graph__())
    (key, *_) = _kernel_tasks(graph)
    task = pickle.loads(pickle.dumps(graph[key]))  # the function and the Kernel it carries
    assert "kernel_on_blocks" in repr(task)


def test_kernels_over_chunks_that_do_not_line_up_are_dasks_operations() -> None:
    def f(x: Any, y: Any) -> Any:
        return da.sum(da.tanh(x * y) + x * x * y)

    x, y = np.linspace(-1.0, 1.0, 12), np.linspace(0.5, 2.0, 12)
    with da.config.fusing(True):
        want = da.jit(da.grad(f, argnums=(0, 1)))(x, y)
        with nothing_computed():
            got = da.jit(da.grad(f, argnums=(0, 1)))(lazy(x, 4), lazy(y, 5))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(host(g), w)


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(st.data())
def test_take_over_merged_axes_keeps_chunks_within_the_arrays(data: st.DataObject) -> None:
    from dualarr.interp.backends import merged_indexed_axes

    shape = tuple(data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=4)))
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    count = data.draw(st.integers(1, len(shape)))
    a = np.arange(float(np.prod(shape))).reshape(shape)
    source = dsa.from_array(a, chunks=chunks)
    merged = merged_indexed_axes(source, count)
    largest = int(np.prod(source.chunksize))
    one_row = int(np.prod(shape[1:count])) * int(np.prod(source.chunksize[count:]))
    assert int(np.prod(merged.chunksize)) <= max(largest, one_row)
    np.testing.assert_array_equal(
        merged.compute(), a.reshape((int(np.prod(shape[:count])), *shape[count:]))
    )
    batch = data.draw(st.sampled_from([(5,), (2, 3)]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    comps = [rng.integers(0, n, batch) for n in shape[:count]]
    backend = get_backend("dask")
    with nothing_computed():
        picked = backend.take(backend.xp, source, [lazy(c, 2) for c in comps])
    np.testing.assert_array_equal(host(picked), a[tuple(comps)])


@pytest.mark.parametrize("mode", da.api.MODES)
def test_gather_of_two_components_across_chunks(mode: str) -> None:
    a = np.linspace(-1.0, 1.0, 30).reshape(5, 6)

    def f(m: Any) -> Any:  # a transpose and a shifted diagonal, read by index arrays
        t = da.gather((6, 5), m, lambda i, j: (j, i))
        d = da.gather((5,), m, lambda i: (i, (i + 2) % 6))
        return da.sum(da.sin(t) * 2.0) + da.sum(d * d)

    want_value, want = da.value_and_grad(f, mode=mode)(a)
    with nothing_computed():
        value, got = da.value_and_grad(f, mode=mode)(lazy(a, (2, 4)))
    np.testing.assert_allclose(host(value), want_value, rtol=1e-12)
    np.testing.assert_allclose(host(got), want, rtol=1e-12)


# ----------------------------------------------------------------------------------
# dnp.linalg on Dask: NumPy's functions per chunk of a stack of matrices
# ----------------------------------------------------------------------------------

_RNG = np.random.default_rng(3)
_STACK = _RNG.normal(size=(5, 4, 4)) + 4.0 * np.eye(4)
_SPD = _STACK @ np.swapaxes(_STACK, -1, -2)
_TALL = _RNG.normal(size=(5, 4, 3))
_RHS = _RNG.normal(size=(5, 4, 2))

LINALG_PROGRAMS: list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]] = [
    ("solve", lambda a, b: da.sum(dnp.linalg.solve(a, b) ** 2), (_STACK, _RHS)),
    ("inv", lambda a: da.sum(da.sin(dnp.linalg.inv(a))), (_STACK,)),
    ("slogdet", lambda a: da.sum(dnp.linalg.slogdet(a).logabsdet), (_STACK,)),
    ("det", lambda a: da.sum(dnp.linalg.det(a)), (_STACK,)),
    ("cholesky", lambda a: da.sum(dnp.linalg.cholesky(a) * np.arange(16.0).reshape(4, 4)),
     (_SPD,)),
    ("cholesky-upper", lambda a: da.sum(dnp.linalg.cholesky(a, upper=True) ** 3), (_SPD,)),
    ("eigh", lambda a: da.sum(dnp.linalg.eigh(a).eigenvalues ** 3), (_SPD,)),
    ("eigh-U", lambda a: da.sum(dnp.linalg.eigh(a, UPLO="U").eigenvalues ** 2), (_STACK,)),
    ("svd", lambda a: da.sum(dnp.abs(dnp.linalg.svd(a, full_matrices=False).U)), (_TALL,)),
    ("svdvals", lambda a: da.sum(dnp.linalg.svdvals(a) ** 2), (_TALL,)),
    ("qr", lambda a: da.sum(dnp.linalg.qr(a).R ** 2), (_TALL,)),
    ("qr-complete", lambda a: da.sum(dnp.linalg.qr(a[:, :3, :], mode="complete").Q), (_TALL,)),
]


@pytest.mark.parametrize("mode", da.api.MODES)
@pytest.mark.parametrize("chunks", [-1, 2, (2, 3, 1)], ids=str)
@pytest.mark.parametrize(("name", "f", "args"), LINALG_PROGRAMS,
                         ids=[p[0] for p in LINALG_PROGRAMS])
def test_linear_algebra_on_dask_stacks(
    mode: str, chunks: Any, name: str, f: Callable[..., Any], args: tuple[np.ndarray, ...]
) -> None:
    """Stacks chunked along the batch axis and inside the matrices (made whole per
    task): the value and gradients equal NumPy's; the lower Cholesky factor, not the
    upper one Dask's own ``linalg.cholesky`` gives."""
    argnums = tuple(range(len(args)))
    want_value, want = da.value_and_grad(f, argnums=argnums, mode=mode)(*args)
    with nothing_computed():
        value, got = da.value_and_grad(f, argnums=argnums, mode=mode)(
            *(lazy(a, chunks) for a in args)
        )
    np.testing.assert_allclose(host(value), want_value, rtol=1e-10, err_msg=name)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(host(g), w, rtol=1e-9, atol=1e-12, err_msg=name)


def test_a_primitive_computing_with_numpy_on_dask_is_a_named_error() -> None:
    """An implementation that turns a lazy Dask array into NumPy (computing it) is a
    PrimitiveResultError naming the primitive; one written with ``xp`` stays lazy."""
    leaky = da.primitive("dask_leaky_square", lambda xp, x: np.asarray(x) ** 2,
                         (lambda m, x, y: 2.0 * x,))
    lazy_square = da.primitive("dask_lazy_square", lambda xp, x: xp.multiply(x, x),
                               (lambda m, x, y: 2.0 * x,))
    x = np.linspace(-1.0, 1.0, 6)
    with pytest.raises(da.PrimitiveResultError, match=r"dask_leaky_square.*NumPy array"):
        da.value_and_grad(lambda x: da.sum(leaky(x)))(lazy(x, 2))
    with nothing_computed():
        got = da.grad(lambda x: da.sum(lazy_square(x) * x))(lazy(x, 2))
    np.testing.assert_allclose(host(got), 3.0 * x * x, rtol=1e-12)

"""Array backends: the array-API layer proven under ``array_api_strict`` (as the CuPy
path would run), the backend choice and its errors, float32 end to end, and — on a
machine with a CUDA device — CuPy."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import array_api_strict as xs
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs

import dualarr as da
from dualarr.interp import arrays
from dualarr.interp.backends import backend_of, get_backend
from dualarr.teach.examples import fig18

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
GENERIC_MODULES = ["interp/arrays.py", "lang/primitives.py"]  # backend-generic: only the array API


def strict(a: Any) -> Any:
    return xs.asarray(np.asarray(a))


StrictArray = type(xs.asarray(0.0))


def host(a: Any) -> np.ndarray:
    if isinstance(a, tuple):
        return np.asarray([host(v) for v in a])
    return np.asarray(a._array if isinstance(a, StrictArray) else a)


@pytest.mark.parametrize("module", GENERIC_MODULES)
def test_backend_generic_modules_never_call_numpy(module: str) -> None:
    path = Path(da.__file__).parent / module
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            assert not any(n.split(".")[0] == "numpy" for n in names), ast.dump(node)
        if isinstance(node, ast.Name):
            assert node.id not in ("np", "numpy"), f"{module}:{node.lineno} uses {node.id}"


def test_the_backend_follows_the_arrays() -> None:
    assert backend_of([np.ones(2), 1.0]).name == "numpy"
    assert backend_of([strict([1.0])]).name == "array_api_strict"
    assert get_backend("numpy").name == "numpy"
    with pytest.raises(da.DualarrError, match="unknown backend 'tpu'"):
        get_backend("tpu")


def test_backend_cupy_without_a_device_is_a_clear_error() -> None:
    if importlib.util.find_spec("cupy") is None:
        message = r"install dualarr\[gpu\]"
    else:
        import cupy

        if cupy.is_available():
            pytest.skip("a CUDA device is available")
        message = "CuPy is installed but no CUDA device is available"
    with pytest.raises(da.DualarrError, match=message):
        da.grad(fig18, backend="cupy")(np.ones(3))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and inf are values here
@settings(max_examples=150, suppress_health_check=SLOW_OK)
@given(programs())
def test_reference_evaluator_agrees_on_array_api_strict(gp: GeneratedProgram) -> None:
    program = gp.program()
    want = program(*gp.arrays)
    got = program(*(strict(a) for a in gp.arrays))
    assert isinstance(got, StrictArray | tuple)
    np.testing.assert_allclose(host(got), want, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=120, suppress_health_check=SLOW_OK)
@given(programs(float_only=True, output_shapes=st.just(())), st.sampled_from(da.api.MODES))
def test_gradients_agree_on_array_api_strict(gp: GeneratedProgram, mode: str) -> None:
    f = gp.function()
    arrays_ = tuple(gp.arrays)
    positions = tuple(k for k, v in enumerate(gp.inputs) if v.dtype.is_float)
    assume(positions)
    value, grads = da.value_and_grad(f, argnums=positions, mode=mode)(*arrays_)
    got_value, got = da.value_and_grad(f, argnums=positions, mode=mode)(
        *(strict(a) for a in arrays_)
    )
    np.testing.assert_allclose(host(got_value), value, rtol=1e-9, equal_nan=True)
    for g, want in zip(got, grads, strict=True):
        assert isinstance(g, StrictArray)
        np.testing.assert_allclose(host(g), want, rtol=1e-9, atol=1e-12, equal_nan=True)


def test_scatter_add_fallback_adds_collisions_and_drops_out_of_range() -> None:
    backend = backend_of([strict([1.0])])
    out = arrays.scatter(
        backend, strict([1.0, 2.0, 3.0, 4.0]), [strict([1, 1, -1, 3])], (4,), 1
    )
    np.testing.assert_array_equal(host(out), [0.0, 3.0, 0.0, 4.0])


# NumPy with none of its fast paths (the same scatter-add primitive, so the same order
# of additions): the generic range check (none, so always the mask), ``take`` of
# row-major offsets
NUMPY_PLAIN = arrays.Backend("numpy-plain", np, get_backend("numpy").scatter_add)

indices = st.integers(-4, 9)


@settings(max_examples=150, suppress_health_check=SLOW_OK)
@given(
    st.lists(st.sampled_from([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan]), min_size=6,
             max_size=6),
    st.lists(st.tuples(indices, indices), min_size=1, max_size=8),
    st.sampled_from([None, False]),
)
def test_numpy_fast_paths_are_the_same_bits_as_the_generic_semantics(
    values: list[float], points: list[tuple[int, int]], known: bool | None
) -> None:
    """§5.2 is written once (:mod:`dualarr.interp.arrays`); NumPy's fast paths (range
    check on the host, unchecked ``take``) are fields of its backend and give the same
    bits as the generic masked reads and writes, out-of-range indices, NaN, inf and -0
    included."""
    fast = get_backend("numpy")
    array = np.asarray(values).reshape(2, 3)
    rows = np.asarray([p[0] for p in points])
    cols = np.asarray([p[1] for p in points])
    source = np.resize(array.reshape(-1), len(points))
    in_range = True if fast.in_range([rows, cols], (2, 3)) else known
    cases: list[Callable[[arrays.Backend], Any]] = [
        lambda b: arrays.index_array(b, array, [rows, cols], in_range),
        lambda b: arrays.index_array(b, array, [rows], in_range),
        lambda b: arrays.gather(b, array, [rows], (len(points),), in_range),
        lambda b: arrays.scatter(b, source, [rows, cols], (2, 3), 1, in_range),
        lambda b: arrays.scatter(b, source, [cols], (3,), 1, in_range),
    ]
    for case in cases:
        want, got = np.asarray(case(NUMPY_PLAIN)), np.asarray(case(fast))
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), (got, want)


def test_one_algebra_and_one_total_indexing_for_every_namespace() -> None:
    """NumPy's algebra is the array-API one on the NumPy backend (no construct given a
    second meaning), and the generated code's index helpers are the evaluator's."""
    from dualarr.codegen.generate import HELPERS
    from dualarr.interp.evaluate import NumpyAlgebra

    assert issubclass(NumpyAlgebra, arrays.ArrayAlgebra)
    assert [n for n, v in vars(NumpyAlgebra).items() if callable(v)] == ["__init__"]
    assert NumpyAlgebra().backend is get_backend("numpy")
    for name, function in [("index", arrays.index_array), ("gather", arrays.gather),
                           ("scatter", arrays.scatter)]:
        assert getattr(HELPERS, name).func is function, name


def _mlp(w: Any, b: Any, x: Any) -> Any:
    hidden = da.tanh(da.matmul(x, w) + da.replicate(4, b))
    return da.mean(da.logsumexp(hidden, axis=1))


FLOAT32_PROGRAMS: list[tuple[str, Any, tuple[np.ndarray, ...]]] = [
    ("fig18", fig18, (np.linspace(0.5, 2.0, 7),)),
    ("transcendental", lambda x: da.sum(da.sin(x) * da.exp(-x * x) + da.log1p(x * x)),
     (np.linspace(-1.0, 1.0, 9),)),
    ("mlp", _mlp, (np.linspace(-0.5, 0.5, 15).reshape(5, 3), np.linspace(0, 0.3, 3),
                   np.linspace(-1.0, 1.0, 20).reshape(4, 5))),
    ("gather-scatter", lambda x: da.sum(
        da.scatter((4,), x * x, lambda i: (i % 4,)) * da.gather((4,), x, lambda i: (3 - i,))),
     (np.linspace(0.1, 1.0, 6),)),
    ("max-where", lambda x: da.max(x) + da.sum(da.where(x > 0.2, x * 3.0, x / 2.0)),
     (np.linspace(-1.0, 1.0, 8),)),
]


@pytest.mark.parametrize("mode", da.api.MODES)
@pytest.mark.parametrize(("name", "f", "args"), FLOAT32_PROGRAMS)
def test_float32_end_to_end(mode: str, name: str, f: Any, args: tuple[np.ndarray, ...]) -> None:
    positions = tuple(range(len(args)))
    wide = da.grad(f, argnums=positions, mode=mode)(*args)
    narrow = da.grad(f, argnums=positions, mode=mode)(*(a.astype(np.float32) for a in args))
    for g32, g64 in zip(narrow, wide, strict=True):
        assert g32.dtype == np.float32, name
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5, err_msg=name)


def test_float32_generated_code_keeps_float32() -> None:
    x = np.linspace(0.0, 1.0, 4, dtype=np.float32)
    p = da.pipeline(lambda x: da.sum(da.sin(x) * 2.0 + x * x), x)
    value, (gradient,) = p(x)
    assert value.dtype == np.float32 and gradient.dtype == np.float32
    assert "float64" not in p.python


cupy_available = importlib.util.find_spec("cupy") is not None and bool(
    __import__("cupy").is_available()
) if importlib.util.find_spec("cupy") is not None else False


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_available, reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("mode", da.api.MODES)
def test_cupy_gradients_stay_on_the_device(mode: str) -> None:
    import cupy

    x = np.linspace(-1.0, 1.0, 1000)
    idx = np.arange(1000)[::-1].copy()

    def f(x: Any, idx: Any) -> Any:
        return da.sum(da.sin(x) * da.gather((1000,), x, lambda i: (idx[i],)))

    want = da.grad(f, mode=mode)(x, idx)
    got = da.grad(f, mode=mode)(cupy.asarray(x), cupy.asarray(idx))
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-9)
    on_request = da.grad(f, mode=mode, backend="cupy")(x, idx)  # computed there, back here
    assert isinstance(on_request, np.ndarray)
    np.testing.assert_allclose(on_request, want, rtol=1e-9)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=80, suppress_health_check=SLOW_OK)
@given(programs(float_only=True), st.sampled_from(da.api.MODES), st.integers(0, 2**31))
def test_vjp_and_jvp_agree_on_array_api_strict(
    gp: GeneratedProgram, mode: str, seed: int
) -> None:
    f = gp.function()
    rng = np.random.default_rng(seed)
    value, pullback = da.vjp(f, *gp.arrays, mode=mode)
    c = rng.normal(size=np.shape(value))
    want = pullback(c)
    got_value, got_pullback = da.vjp(f, *(strict(a) for a in gp.arrays), mode=mode)
    np.testing.assert_allclose(host(got_value), value, rtol=1e-9, equal_nan=True)
    for g, w in zip(got_pullback(strict(c)), want, strict=True):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(host(g), w, rtol=1e-9, atol=1e-12, equal_nan=True)
    tangents = [rng.normal(size=a.shape) for a in gp.arrays]
    _, want_t = da.jvp(f, gp.arrays, tangents)
    _, got_t = da.jvp(f, [strict(a) for a in gp.arrays], [strict(t) for t in tangents])
    np.testing.assert_allclose(host(got_t), want_t, rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("mode", da.api.MODES)
def test_jacobian_on_array_api_strict(mode: str) -> None:
    def f(x: Any) -> Any:
        return da.exp(x) * da.sum(x) + da.gather((3,), x, lambda i: (2 - i,))

    x = np.linspace(0.0, 1.0, 3)
    want = da.jacobian(f, mode=mode)(x)
    got = da.jacobian(f, mode=mode)(strict(x))
    assert isinstance(got, StrictArray)
    np.testing.assert_allclose(host(got), want, rtol=1e-12)
    np.testing.assert_allclose(want, np.diag(np.exp(x) * x.sum()) + np.exp(x)[:, None]
                               + np.eye(3)[::-1], rtol=1e-12)

"""Call-time semantics: every transformation computes with the values the function reads
when it is called (as ``jax.grad``), compiled programs are reused by structure, results
never alias an input, and ``da.jit`` is the explicit path that bakes captured values."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs

import dualarr as da
import dualarr.api as api
from dualarr.lang.terms import DType

MODES = ["compiled", "interpret"]
ONES = np.ones(3)

W = np.array([1.0, 2.0, 3.0])


def loss_of_global(x: Any) -> Any:
    return da.sum(x * W)


@pytest.mark.parametrize("mode", MODES)
def test_a_captured_array_changed_in_place_is_seen(mode: str) -> None:
    w = np.array([1.0, 2.0, 3.0])
    f = lambda x: da.sum(x * w)  # noqa: E731
    g = da.grad(f, mode=mode)
    np.testing.assert_array_equal(g(ONES), [1.0, 2.0, 3.0])
    w[:] = 10.0
    np.testing.assert_array_equal(g(ONES), [10.0, 10.0, 10.0])
    np.testing.assert_array_equal(da.grad(f, mode=mode)(ONES), [10.0, 10.0, 10.0])


def test_a_captured_array_used_many_times_is_one_constant() -> None:
    """Like a traced value used twice, a captured array used n times is one node (and
    one copy of its data), whatever the number of uses."""
    w = np.linspace(0.0, 1.0, 50)

    def f(x: Any) -> Any:
        y = x
        for _ in range(20):
            y = da.sin(y) * w
        return da.sum(y)

    program = da.trace(f, np.ones(50))
    assert list(program.constants) == ["k1"]
    np.testing.assert_array_equal(program.constants["k1"], w)
    assert not np.shares_memory(program.constants["k1"], w)


@pytest.mark.parametrize("mode", MODES)
def test_a_captured_array_changed_during_the_trace_is_two_constants(mode: str) -> None:
    w = np.arange(20.0)

    def f(x: Any) -> Any:
        first = da.sum(x * w)
        w[0] = 100.0  # NumPy would read the new value at the second use
        second = da.sum(x * w)
        w[0] = 0.0
        return first + second

    assert len(da.trace(f, np.ones(20)).constants) == 2
    expected = 2 * np.arange(20.0)
    expected[0] = 100.0
    np.testing.assert_array_equal(da.grad(f, mode=mode)(np.ones(20)), expected)


@pytest.mark.parametrize("mode", MODES)
def test_a_rebound_global_is_seen(mode: str) -> None:
    global W
    saved = W
    try:
        g = da.grad(loss_of_global, mode=mode)
        np.testing.assert_array_equal(g(ONES), [1.0, 2.0, 3.0])
        W = np.array([4.0, 5.0, 6.0])
        np.testing.assert_array_equal(g(ONES), [4.0, 5.0, 6.0])
    finally:
        W = saved


class Model:
    def __init__(self) -> None:
        self.w = np.array([1.0, -1.0, 2.0])
        self.scale = 2.0

    def loss(self, x: Any) -> Any:
        return da.sum(da.tanh(x * self.w)) * self.scale


@pytest.mark.parametrize("mode", MODES)
def test_bound_methods_see_their_attributes(mode: str) -> None:
    m = Model()
    x = np.array([0.1, 0.2, 0.3])
    first = da.grad(m.loss, mode=mode)(x)
    np.testing.assert_allclose(first, 2.0 * m.w / np.cosh(x * m.w) ** 2)
    m.w = np.zeros(3)
    np.testing.assert_array_equal(da.grad(m.loss, mode=mode)(x), np.zeros(3))
    m.w, m.scale = np.ones(3), 3.0  # a Python scalar attribute too
    np.testing.assert_allclose(da.grad(m.loss, mode=mode)(x), 3.0 / np.cosh(x) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_a_training_loop_reading_a_params_dict(mode: str) -> None:
    rng = np.random.default_rng(0)
    xs, ys = rng.normal(size=(20, 3)), rng.normal(size=20)
    params = {"w": np.zeros(3), "b": np.zeros(())}

    def loss(w: Any) -> Any:
        return da.mean((da.matmul(xs, w) + params["b"] - ys) ** 2)

    g = da.grad(loss, mode=mode)
    for _ in range(5):
        params["b"] = params["b"] + 0.5  # the bias moves every step; w is the argument
        w = params["w"]
        expected = 2 * xs.T @ (xs @ w + params["b"] - ys) / len(ys)
        np.testing.assert_allclose(g(w), expected, rtol=1e-12, atol=1e-12)
        params["w"] = w - 0.1 * expected


def test_every_transformation_sees_call_time_values() -> None:
    w = np.array([1.0, 2.0, 3.0])
    x = np.array([0.5, -0.5, 1.5])
    def vector(a: Any) -> Any:
        return a * w

    vjp_first = da.vjp(vector, x)
    for new in (np.array([-1.0, 0.0, 4.0]), np.array([2.0, 2.0, 2.0])):
        w[:] = new
        value, pullback = da.vjp(vector, x)
        np.testing.assert_array_equal(value, x * new)
        np.testing.assert_array_equal(pullback(ONES)[0], new)
        for mode in MODES:
            (value,) = (da.vjp(vector, x, mode=mode)[0],)
            np.testing.assert_array_equal(value, x * new)
        primal, tangent = da.jvp(vector, (x,), (ONES,))
        np.testing.assert_array_equal(primal, x * new)
        np.testing.assert_array_equal(tangent, new)
        for mode in MODES:
            np.testing.assert_array_equal(da.jacobian(vector, mode=mode)(x), np.diag(new))
        np.testing.assert_array_equal(da.vmap(vector)(np.stack([x, x])), np.stack([x, x]) * new)
        np.testing.assert_array_equal(da.trace(vector, x)(x), x * new)
        value, _grad = da.value_and_grad(lambda a: da.sum(vector(a)))(x)
        assert value == np.sum(x * new)
    # a pullback made before the change keeps the values of its vjp call
    np.testing.assert_array_equal(vjp_first[1](ONES)[0], [1.0, 2.0, 3.0])


def test_compiled_programs_are_shared_by_structure_not_identity() -> None:
    api.clear_caches()
    x = np.linspace(-1.0, 1.0, 4)
    results = []
    for step in range(20):
        w = np.full(4, float(step))
        results.append(da.grad(lambda a, w=w: da.sum(da.sin(a) * w))(x))
    for step, g in enumerate(results):
        np.testing.assert_allclose(g, step * np.cos(x))
    # one structure: its vectorised program and its compiled gradient
    assert api.cache_size() == 2


def test_the_cache_is_bounded_and_keeps_no_function_or_batch_alive() -> None:
    """A loop that makes a new lambda per step over a 2 MB batch: the caches hold one
    compiled program, no lambda and no batch."""
    api.clear_caches()
    rng = np.random.default_rng(1)
    w = np.zeros(8)
    alive: list[weakref.ref[Any]] = []
    batches: list[weakref.ref[Any]] = []
    for _ in range(10):
        batch = rng.normal(size=(32_768, 8))  # 2 MB

        def loss(v: Any, batch: np.ndarray = batch) -> Any:
            return da.mean(da.matmul(batch, v) ** 2)

        w = w - 0.01 * da.grad(loss)(w)
        alive.append(weakref.ref(loss))
        batches.append(weakref.ref(batch))
        del loss, batch
    gc.collect()
    assert api.cache_size() == 2
    assert all(ref() is None for ref in alive)
    assert all(ref() is None for ref in batches)
    for k in range(api.CACHE_SIZE + 5):  # many structures: least recently used go
        da.grad(lambda a, k=k: da.sum(a) * 1.0 + da.sum(a * a) * float(k % 2 == 0) + k)(ONES)
    assert api.cache_size() <= api.CACHE_SIZE


def test_jit_bakes_captured_values_like_jax() -> None:
    w = np.array([1.0, 2.0, 3.0])
    f = lambda x: da.sum(x * w)  # noqa: E731
    jitted = da.jit(da.grad(f))
    np.testing.assert_array_equal(jitted(ONES), [1.0, 2.0, 3.0])
    w[:] = 10.0
    np.testing.assert_array_equal(jitted(ONES), [1.0, 2.0, 3.0])  # traced once: baked
    np.testing.assert_array_equal(da.grad(f)(ONES), [10.0, 10.0, 10.0])  # grad: call time
    jitted.clear_cache()  # type: ignore[attr-defined]
    np.testing.assert_array_equal(jitted(ONES), [10.0, 10.0, 10.0])
    np.testing.assert_array_equal(jitted(np.ones(2 * 1)[:1].repeat(3)), [10.0, 10.0, 10.0])


def test_jit_of_functions_of_several_outputs_and_keywords() -> None:
    x = np.linspace(0.0, 1.0, 5)
    h = da.jit(lambda a, scale=1.0: (da.sin(a) * scale, da.sum(a)))
    s, t = h(x, scale=2.0)
    np.testing.assert_allclose(s, 2.0 * np.sin(x))
    assert t == pytest.approx(np.sum(x))
    s[0] = 99.0
    assert x[0] == 0.0
    np.testing.assert_allclose(h(x)[0], np.sin(x))
    identity = da.jit(lambda a: a)
    out = identity(x)
    assert not np.shares_memory(out, x)
    # inside a trace jit is the identity: vmap(jit(f)) works
    np.testing.assert_allclose(da.vmap(da.jit(da.sin))(np.stack([x, x])), np.sin([x, x]))
    with pytest.raises(da.DualarrError, match="hashable"):
        h(x, scale=np.ones(5))


@pytest.mark.parametrize("backend", [None, "numpy"])
def test_jit_of_nested_results_keeps_their_structure(backend: str | None) -> None:
    """``jit(value_and_grad(f, argnums=(0, 1)))`` gives ``(value, (g0, g1))`` as the
    function does, on the lean path too (the second call), and dicts keep their keys."""
    x, w = np.linspace(0.0, 1.0, 4), np.linspace(1.0, 2.0, 4)

    def f(x: Any, w: Any) -> Any:
        return da.sum(da.sin(x) * w)

    want_value, (want_x, want_w) = da.value_and_grad(f, argnums=(0, 1))(x, w)
    jitted = da.jit(da.value_and_grad(f, argnums=(0, 1)), backend=backend)
    for _ in range(2):  # traced, then the cached program
        value, (gx, gw) = jitted(x, w)
        assert float(value) == pytest.approx(float(want_value), rel=1e-15)
        np.testing.assert_allclose(gx, want_x, rtol=1e-15)
        np.testing.assert_allclose(gw, want_w, rtol=1e-15)
        assert not np.shares_memory(gx, gw)
    named = da.jit(lambda a: {"double": a * 2.0, "pair": (a, a + 1.0)}, backend=backend)(x)
    assert sorted(named) == ["double", "pair"]
    np.testing.assert_allclose(named["pair"][1], x + 1.0)
    assert not np.shares_memory(named["pair"][0], x)


@pytest.mark.parametrize("mode", MODES)
def test_keyword_arguments_pass_through_undifferentiated(mode: str) -> None:
    f = lambda x, s=1.0: da.sum(x * x) * s  # noqa: E731
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(da.grad(f, mode=mode)(x, s=3.0), 6.0 * x)
    value, g = da.value_and_grad(f, mode=mode)(x, s=0.5)
    assert value == 2.5
    np.testing.assert_array_equal(g, x)
    jac = da.jacobian(lambda a, s: a * s, mode=mode)(x, s=2.0)
    np.testing.assert_array_equal(jac, 2 * np.eye(2))
    np.testing.assert_array_equal(da.vmap(lambda a, b: a * b)(np.eye(2), b=2.0), 2 * np.eye(2))
    A = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(da.vmap(da.grad(f))(A, s=2.0), 4.0 * A)


@pytest.mark.parametrize("mode", MODES)
def test_has_aux_as_in_jax(mode: str) -> None:
    def f(x: Any) -> Any:
        y = da.sin(x)
        return da.sum(y * y), {"y": y, "n": (da.sum(x), 3.0)}

    x = np.array([0.3, -1.2, 2.0])
    g, aux = da.grad(f, has_aux=True, mode=mode)(x)
    np.testing.assert_allclose(g, 2 * np.sin(x) * np.cos(x))
    np.testing.assert_allclose(aux["y"], np.sin(x))
    assert aux["n"][0] == pytest.approx(np.sum(x)) and aux["n"][1] == 3.0
    (value, aux), g2 = da.value_and_grad(f, has_aux=True, mode=mode)(x)
    assert value == pytest.approx(np.sum(np.sin(x) ** 2))
    np.testing.assert_allclose(g2, g)
    _out, pullback, aux = da.vjp(f, x, has_aux=True, mode=mode)
    np.testing.assert_allclose(pullback(np.ones(()))[0], g)
    jac, aux = da.jacobian(lambda a: (da.sin(a), a * 2.0), has_aux=True, mode=mode)(x)
    np.testing.assert_allclose(jac, np.diag(np.cos(x)))
    np.testing.assert_allclose(aux, 2 * x)
    # inside a trace: per-example gradients with aux
    gs, auxs = da.vmap(da.grad(f, has_aux=True))(np.stack([x, -x]))
    np.testing.assert_allclose(gs[1], 2 * np.sin(-x) * np.cos(-x))
    np.testing.assert_allclose(auxs["y"][1], np.sin(-x))
    with pytest.raises(da.DualarrError, match="pair"):
        da.grad(lambda a: da.sum(a), has_aux=True)(x)


@pytest.mark.parametrize("mode", MODES)
def test_nested_differentiation_closing_over_an_outer_variable(mode: str) -> None:
    assert da.grad(lambda x: da.grad(lambda y: x * y)(2.0), mode=mode)(3.0) == 1.0
    # perturbation confusion (Siskind & Pearlmutter): d/dx [x * d/dy (x + y)] = 1
    assert da.grad(lambda x: x * da.grad(lambda y: x + y)(1.0), mode=mode)(2.0) == 1.0
    # d/dx [d/dy (x y^2) at y = x] = d/dx 2x^2 = 4x
    assert da.grad(lambda x: da.grad(lambda y: x * y * y)(x), mode=mode)(1.5) == pytest.approx(6.0)
    # arrays, and the inner transformation a vjp / jvp
    x = np.array([0.5, 1.0])
    inner_vjp = lambda a: da.sum(da.vjp(lambda b: da.sin(a * b), np.ones(2))[1](np.ones(2))[0])  # noqa: E731
    np.testing.assert_allclose(
        da.grad(inner_vjp, mode=mode)(x), np.cos(x) - x * np.sin(x), rtol=1e-12
    )
    inner_jvp = lambda a: da.sum(da.jvp(lambda b: a * b * b, (np.ones(2),), (np.ones(2),))[1])  # noqa: E731
    np.testing.assert_allclose(da.grad(inner_jvp, mode=mode)(x), [2.0, 2.0])


def test_a_complex_cotangent_is_rejected() -> None:
    _, pullback = da.vjp(lambda a: a * 2.0, ONES)
    with pytest.raises(da.DtypeError, match="complex"):
        pullback(np.ones(3, dtype=complex))
    _, pullback = da.vjp(lambda a: (a, a * 2.0), ONES)
    with pytest.raises(da.DtypeError, match="complex"):
        pullback((np.ones(3), np.ones(3) * 1j))
    with pytest.raises(da.DtypeError, match="complex"):
        da.jvp(lambda a: a, (ONES,), (np.ones(3) + 0j,))


# -- no result aliases an input -------------------------------------------------------


def _arrays(value: Any) -> list[np.ndarray]:
    if isinstance(value, tuple | list):
        return [a for v in value for a in _arrays(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arrays(v)]
    return [value] if isinstance(value, np.ndarray) else []


def _results(f: Any, x: np.ndarray, ct: np.ndarray, mode: str) -> list[tuple[str, Any]]:
    def scalar(a: Any) -> Any:
        return da.sum(f(a))

    value, pullback = da.vjp(f, x, mode=mode)
    primal, tangent = da.jvp(f, (x,), (ct,))
    return [
        ("vjp value", value),
        ("pullback", pullback(ct)),
        ("jvp", (primal, tangent)),
        ("grad", da.grad(scalar, mode=mode)(x)),
        ("value_and_grad", da.value_and_grad(scalar, mode=mode)(x)),
        ("grad has_aux", da.grad(lambda a: (scalar(a), f(a)), has_aux=True, mode=mode)(x)),
        ("jacobian", da.jacobian(f, mode=mode)(x)),
        ("vmap", da.vmap(f)(x[None])),
        ("trace", da.trace(f, x)(x)),
        ("jit", da.jit(f)(x)),
    ]


LINEAR_FUNCTIONS = {
    "identity": lambda a: a,
    "times one": lambda a: a * 1.0,
    "reshape": lambda a: da.reshape(a, a.shape),
    "plus zero": lambda a: a + 0.0,
    "transpose": lambda a: da.transpose(a),
    "sum of one": lambda a: da.sum(da.reshape(a, (1, *a.shape)), axis=0),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(LINEAR_FUNCTIONS))
@given(st.lists(st.floats(-10, 10), min_size=1, max_size=5))
@settings(max_examples=5, deadline=None)
def test_no_result_shares_memory_with_an_input(name: str, mode: str, values: list[float]) -> None:
    f = LINEAR_FUNCTIONS[name]
    x = np.array(values)
    ct = np.array(values[::-1])
    for what, result in _results(f, x, ct, mode):
        for array in _arrays(result):
            assert not np.shares_memory(array, x), f"{what} aliases the primal"
            assert not np.shares_memory(array, ct), f"{what} aliases the cotangent"
            assert array.flags.writeable, f"{what} is read-only"


def test_results_do_not_alias_captured_arrays() -> None:
    w = np.array([1.0, 2.0, 3.0])
    g = da.grad(lambda x: da.sum(x * w))(ONES)
    assert not np.shares_memory(g, w)
    g[0] = 99.0
    assert w[0] == 1.0
    out = da.vmap(lambda a: w)(np.zeros((2, 1)))
    assert not np.shares_memory(out, w)


# -- no result aliases another result of the same call ---------------------------------

# Functions of two arguments whose results may be one array computed once: equal
# outputs, gradients equal to each other, an output equal to its aux.
PAIRED_FUNCTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "exp twice": lambda a, b: (da.exp(a + b), da.exp(a + b)),
    "shared value": lambda a, b: (lambda t: (t, t))(da.exp(a + b)),
    "argument twice": lambda a, b: (a, a),
    "identity pair": lambda a, b: (a * 1.0, b + 0.0),
    "product": lambda a, b: (a * b, b * a),
}


def _paired_results(
    name: str, a: np.ndarray, b: np.ndarray, mode: str
) -> list[tuple[str, Any]]:
    f = PAIRED_FUNCTIONS[name]

    def scalar(x: Any, y: Any) -> Any:
        first, second = f(x, y)
        return da.sum(first) + da.sum(second)

    def with_aux(x: Any, y: Any) -> Any:
        return scalar(x, y), f(x, y)

    value, pullback = da.vjp(f, a, b, mode=mode)
    primal, pullback_aux, aux = da.vjp(lambda x, y: (scalar(x, y), f(x, y)), a, b, has_aux=True)
    p = da.pipeline(scalar, a, b)
    return [
        ("grad", da.grad(scalar, argnums=(0, 1), mode=mode)(a, b)),
        ("grad of sum exp", da.grad(lambda x, y: da.sum(da.exp(x + y)), (0, 1), mode=mode)(a, b)),
        ("value_and_grad", da.value_and_grad(scalar, argnums=(0, 1), mode=mode)(a, b)),
        ("has_aux", da.value_and_grad(with_aux, (0, 1), has_aux=True, mode=mode)(a, b)),
        ("vjp value", value),
        ("pullback", pullback((a * 1.0, b * 1.0))),
        ("vjp has_aux", (primal, aux, pullback_aux(1.0))),
        ("jvp", da.jvp(f, (a, b), (b, a))),
        ("jacobian", da.jacobian(lambda x, y: da.exp(x + y), (0, 1), mode=mode)(a, b)),
        ("jacobian has_aux", da.jacobian(lambda x, y: (x + y, f(x, y)), has_aux=True)(a, b)),
        ("vmap", da.vmap(f)(a[None], b[None])),
        ("trace", da.trace(f, a, b)(a, b)),
        ("jit", da.jit(f)(a, b)),
        ("jit again", da.jit(f)(a, b)),
        ("pipeline", p(a, b)),
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(PAIRED_FUNCTIONS))
@given(st.lists(st.floats(-3, 3), min_size=1, max_size=4))
@settings(max_examples=5, deadline=None)
def test_no_two_results_of_one_call_share_memory(name: str, mode: str, values: list[float]) -> None:
    a = np.array(values)
    b = np.array(values[::-1]) + 1.0
    for what, result in _paired_results(name, a, b, mode):
        arrays = _arrays(result)
        for k, first in enumerate(arrays):
            assert not np.shares_memory(first, a) and not np.shares_memory(first, b), what
            for second in arrays[k + 1 :]:
                assert not np.shares_memory(first, second), f"two results of {what} share memory"


def test_updating_one_gradient_in_place_leaves_the_other() -> None:
    a, b = np.array([0.5, 1.0]), np.array([1.0, 2.0])
    gx, gy = da.grad(lambda x, y: da.sum(da.exp(x + y)), argnums=(0, 1))(a, b)
    gx *= 0.0  # clipping, an optimiser's in-place update
    np.testing.assert_allclose(gy, np.exp(a + b))
    first, second = da.jit(lambda x: (da.exp(x), da.exp(x)))(a)
    first[:] = 0.0
    np.testing.assert_allclose(second, np.exp(a))


# -- random programs over captured arrays ----------------------------------------------


def _fd_gradient(program: da.Program, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[k] = h
        grad[k] = (float(program(x + step)) - float(program(x - step))) / (2 * h)
    return grad


@given(programs(float_only=True, output_shapes=st.just(())), st.integers(0, 2**32 - 1))
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_random_programs_over_changing_captured_arrays(gp: GeneratedProgram, seed: int) -> None:
    """The first input is the argument; the others are captured, then changed in place
    or rebound between calls: every API agrees with a fresh trace of the function at
    that moment, and with finite differences of that trace."""
    assume(len(gp.inputs) >= 2 and all(v.dtype is DType.FLOAT64 for v in gp.inputs))
    rng = np.random.default_rng(seed)
    body = gp.function()
    x, *rest = (a + rng.uniform(-0.05, 0.05, a.shape) for a in gp.arrays)
    store = {"captured": [np.array(a) for a in rest]}

    def f(a: Any) -> Any:
        return body(a, *(da.constant(c) for c in store["captured"]))

    grad_compiled, grad_interpret = da.grad(f), da.grad(f, mode="interpret")
    for round_ in range(3):
        if round_ == 1:  # in place
            for a in store["captured"]:
                a += rng.uniform(-0.05, 0.05, a.shape)
        elif round_ == 2:  # rebound
            store["captured"] = [a + rng.uniform(-0.05, 0.05, a.shape) for a in store["captured"]]
        fresh = da.trace(f, x)
        value = float(fresh(x))
        assume(np.isfinite(value) and abs(value) < 1e6)
        expected = _fd_gradient(fresh, x)
        assume(np.all(np.isfinite(expected)))
        # a program evaluated at a singular point of a primitive (atan2 at the origin,
        # sqrt at 0: out-of-range reads give 0) has a NaN derivative there in every AD
        # system, masked or not (0 * NaN): not the property tested here
        interpreted = grad_interpret(x)
        assume(np.all(np.isfinite(interpreted)))
        results = {
            "grad": grad_compiled(x),
            "grad interpret": interpreted,
            "value_and_grad": da.value_and_grad(f)(x)[1],
            "vjp": da.vjp(f, x)[1](np.ones(()))[0],
            "jacobian": da.jacobian(f)(x),
        }
        assert da.value_and_grad(f)(x)[0] == pytest.approx(value, rel=1e-9, abs=1e-9)
        assert float(da.vjp(f, x)[0]) == pytest.approx(value, rel=1e-9, abs=1e-9)
        for name, g in results.items():
            np.testing.assert_allclose(g, expected, rtol=1e-4, atol=1e-5, err_msg=name)
            np.testing.assert_allclose(g, results["grad"], rtol=1e-9, atol=1e-9, err_msg=name)
        v = rng.normal(size=x.shape)
        _, tangent = da.jvp(f, (x,), (v,))
        assert float(tangent) == pytest.approx(float(np.sum(expected * v)), rel=1e-4, abs=1e-5)


def test_a_value_kept_from_another_trace_is_a_named_error() -> None:
    """A traced value that escapes its trace (kept in a list) and is read by a later
    trace: ``trace`` names it instead of compiling a program with a free variable."""
    saved: list[Any] = []

    def keep(x: Any) -> Any:
        saved.append(x)
        return da.sum(x)

    def reads_it(y: Any) -> Any:
        return da.sum(y * saved[0])

    def reads_it_in_a_build(y: Any) -> Any:
        return da.sum(da.build1(3, lambda i: y[i] * saved[0][i]))

    da.trace(keep, np.ones(3))
    with pytest.raises(da.TracingError, match="after the trace that made it ended"):
        da.trace(reads_it, np.ones(3))  # caught where it is used
    with pytest.raises(da.TracingError, match="outside this trace"):
        da.trace(reads_it_in_a_build, np.ones(3))  # caught by the program's free variables
    bound: list[Any] = []

    def element(y: Any, i: Any) -> Any:
        bound.append(i)  # the index variable escapes its build
        return y[i]

    def leaks_its_index(y: Any) -> Any:
        total = da.sum(da.build1(3, lambda i: element(y, i)))
        return total + y[bound[0]]

    with pytest.raises(da.TracingError, match="outside this trace"):
        da.trace(leaks_its_index, np.ones(3))

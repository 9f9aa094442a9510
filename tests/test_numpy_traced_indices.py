"""Indexing with indices computed from traced data follows NumPy under every
transformation (issue 33, item 7; DESIGN §2 "Totality"): ``x[idx]`` wraps an index in
``[-n, 0)`` to ``i + n`` as NumPy and ``jax.numpy`` do, eagerly and under ``trace``,
``grad`` (both modes), ``value_and_grad``, ``vjp``, ``jvp``, ``vmap`` and ``jit``, and the
gradient flows to the wrapped element.  An index still out of range reads 0 with
gradient 0 (no data-dependent error while tracing).  Side by side, the core language
keeps the paper's total rule (§5.2): inside a binder's index function (``build1``,
``gather``, ``scatter``) and in ``da.index`` a negative index reads 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.terms import Op, postorder

T = da.Tensor
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
MODES = ("compiled", "interpret")


def computed(v: Any, offsets: F64) -> Any:
    """An int index array computed from (traced) data: ``offsets`` as int64, through
    ``floor`` of a value of ``v``, so tracing cannot know it."""
    return dnp.asarray(dnp.floor(dnp.sum(v) * 0.0) + offsets, dtype=np.int64)


def gather_reference(v: F64, idx: I64, weights: F64) -> tuple[float, F64]:
    """NumPy's value of ``sum(weights * v[idx])`` and its gradient in ``v``."""
    grad = np.zeros_like(v)
    np.add.at(grad, idx, weights)
    return float(np.sum(weights * v[idx])), grad


@st.composite
def wrapped_reads(draw: st.DrawFn) -> tuple[F64, F64, F64]:
    """A vector, in-range offsets (negative ones included) and weights for its reads."""
    n = draw(st.integers(1, 6))
    k = draw(st.integers(1, 6))
    v = np.asarray(draw(st.lists(st.floats(-3, 3), min_size=n, max_size=n)), dtype=np.float64)
    offsets = np.asarray(
        draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k)), dtype=np.float64
    )
    weights = np.asarray(draw(st.lists(st.floats(-2, 2), min_size=k, max_size=k)))
    return v, offsets, weights


@given(wrapped_reads())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_computed_indices_wrap_as_numpy_under_every_transformation(
    case: tuple[F64, F64, F64],
) -> None:
    v, offsets, weights = case
    idx = offsets.astype(np.int64)
    value, grad = gather_reference(v, idx, weights)

    def f(x: Any) -> Any:
        return dnp.sum(weights * x[computed(x, offsets)])

    np.testing.assert_allclose(f(v), value)  # eager: NumPy itself
    np.testing.assert_allclose(da.trace(f, v)(v), value)
    got_value, got_grad = da.value_and_grad(f)(v)
    np.testing.assert_allclose(got_value, value)
    np.testing.assert_allclose(got_grad, grad)
    for mode in MODES:
        np.testing.assert_allclose(da.grad(f, mode=mode)(v), grad)
    vjp_value, pullback = da.vjp(f, v)
    np.testing.assert_allclose(vjp_value, value)
    np.testing.assert_allclose(pullback(np.float64(1.0))[0], grad)
    tangent = np.linspace(-1.0, 1.0, len(v))
    jvp_value, jvp_tangent = da.jvp(f, (v,), (tangent,))
    np.testing.assert_allclose(jvp_value, value)
    np.testing.assert_allclose(jvp_tangent, np.sum(weights * tangent[idx]))
    np.testing.assert_allclose(da.jit(f)(v), value)
    batch = np.stack([v, 2.0 * v + 1.0])
    np.testing.assert_allclose(
        da.vmap(lambda x: x[computed(x, offsets)])(batch), batch[:, idx]
    )


def test_the_issue_example_agrees_with_itself() -> None:
    """Issue 33's program: eager NumPy and ``value_and_grad`` give 35.0, and the gradient
    goes to the wrapped elements."""

    def f(v: Any) -> Any:
        offsets = [-5.0, -3.0, -1.0]
        idx = dnp.asarray(dnp.floor(v[:3] * 0.0) + offsets, dtype=np.int64)
        return dnp.sum(v[idx] * v[idx])

    v = np.arange(1.0, 6.0)
    assert f(v) == 35.0
    value, grad = da.value_and_grad(f)(v)
    assert value == 35.0
    np.testing.assert_allclose(grad, [2.0, 0.0, 6.0, 0.0, 10.0])
    np.testing.assert_allclose(da.grad(f, mode="interpret")(v), grad)


@pytest.mark.parametrize("mode", MODES)
def test_a_traced_int_input_wraps_under_grad_and_jit(mode: str) -> None:
    v = np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([-1, 0, -4, 2], dtype=np.int64)

    def f(x: Any, j: Any) -> Any:
        return dnp.sum(x[j] * np.array([1.0, 2.0, 3.0, 4.0]))

    value, grad = gather_reference(v, idx, np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_allclose(da.grad(f, mode=mode)(v, idx), grad)
    np.testing.assert_allclose(da.jit(f)(v, idx), value)
    np.testing.assert_allclose(da.trace(lambda x, i: x[i], v, np.int64(-2))(v, np.int64(-2)), 3.0)


def test_a_rank0_index_from_data_wraps() -> None:
    """``v[argmax(v) - 1]`` at argmax 0 reads the last element, as in NumPy."""

    def f(x: Any) -> Any:
        return x[dnp.argmax(x) - 1] * 10.0

    v = np.array([5.0, 1.0, 2.0])
    assert f(v) == 20.0
    for mode in MODES:
        np.testing.assert_allclose(da.value_and_grad(f)(v)[0], 20.0)
        np.testing.assert_allclose(da.grad(f, mode=mode)(v), [0.0, 0.0, 10.0])


def test_two_dimensional_reads_wrap_on_each_axis() -> None:
    m = np.arange(12.0).reshape(3, 4)
    rows = np.array([-1.0, 0.0, -3.0])
    cols = np.array([-4.0, 3.0, -1.0])

    def f(x: Any) -> Any:
        r, c = computed(x, rows), computed(x, cols)
        return x[r, c], x[r], x[:, c], x[r, 1:]

    expected = f(m)  # NumPy
    for got, want in zip(da.trace(f, m)(m), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    weights = np.array([1.0, 10.0, 100.0])
    grad = np.zeros_like(m)
    np.add.at(grad, (rows.astype(int), cols.astype(int)), weights)
    for mode in MODES:
        g = da.grad(lambda x: dnp.sum(f(x)[0] * weights), mode=mode)(m)
        np.testing.assert_allclose(g, grad)


def test_still_out_of_range_reads_zero_with_zero_gradient() -> None:
    """What NumPy would reject (``IndexError``) reads 0 under a trace, gradient 0."""
    v = np.array([1.0, 2.0, 3.0])
    offsets = np.array([3.0, -4.0, -1.0, 7.0])

    def f(x: Any) -> Any:
        return dnp.sum(x[computed(x, offsets)] * np.array([1.0, 2.0, 3.0, 4.0]))

    with pytest.raises(IndexError):
        f(v)
    value, grad = da.value_and_grad(f)(v)
    assert value == 9.0  # only the wrapped -1 reads (3.0 * 3)
    np.testing.assert_allclose(grad, [0.0, 0.0, 3.0])
    np.testing.assert_allclose(da.grad(f, mode="interpret")(v), grad)


def test_core_binders_keep_the_total_rule_side_by_side() -> None:
    """The same negative indices inside ``build1``, ``gather``, ``scatter`` and
    ``da.index`` read 0 (writes dropped), while ``x[idx]`` outside them wraps."""
    v = np.array([1.0, 2.0, 3.0])
    offsets = np.array([-1.0, 0.0, -3.0])

    def reads(x: Any) -> tuple[Any, ...]:
        idx = computed(x, offsets)
        return (
            x[idx],
            da.build1(3, lambda i: x[idx[i]]),
            da.gather((3,), x, lambda i: (idx[i],)),
            da.index(x, (idx[0],)),
            da.scatter((3,), x, lambda i: (idx[i],)),
        )

    numpy_rule, built, gathered, indexed, scattered = da.trace(reads, v)(v)
    np.testing.assert_array_equal(numpy_rule, [3.0, 1.0, 1.0])
    np.testing.assert_array_equal(built, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(gathered, [0.0, 1.0, 0.0])
    assert indexed == 0.0
    np.testing.assert_array_equal(scattered, [2.0, 0.0, 0.0])


def test_vmap_and_dnp_inside_a_binder_follow_numpy() -> None:
    """The rule is the innermost construct's: ``vmap``'s function and a ``dnp`` function
    index as NumPy even when they run inside a ``build1``."""
    m = np.arange(6.0).reshape(2, 3)
    j = np.array([-1, -3], dtype=np.int64)

    def f(x: Any, k: Any) -> Any:
        mapped = da.build1(2, lambda i: da.vmap(lambda row, q: row[q])(x, k)[i])
        taken = da.build1(2, lambda i: dnp.take(x[i], k[i]))
        return mapped, taken

    mapped, taken = da.trace(f, m, j)(m, j)
    np.testing.assert_array_equal(mapped, [2.0, 3.0])
    np.testing.assert_array_equal(taken, [2.0, 3.0])


def test_vmap_of_a_traced_index_wraps_and_differentiates() -> None:
    xs = np.arange(8.0).reshape(2, 4)
    ks = np.array([-1, -4], dtype=np.int64)
    np.testing.assert_array_equal(da.vmap(lambda row, k: row[k])(xs, ks), [3.0, 4.0])
    g = da.grad(lambda b: dnp.sum(da.vmap(lambda row, k: row[k])(b, ks)))(xs)
    np.testing.assert_array_equal(g, [[0, 0, 0, 1.0], [1.0, 0, 0, 0]])


def _wraps(f: Any, *args: Any) -> int:
    program = da.trace(f, *args)
    nodes = postorder(list(program.outputs))
    return sum(1 for n in nodes if isinstance(n, Op) and n.op == "wrap")


def test_the_wrap_is_one_primitive_and_none_when_not_needed() -> None:
    """One ``wrap`` on a traced index (generated code names it once, for its gather and the
    scatter of its gradient); none for a static index array (wrapped while tracing)
    nor for an index that is never negative (``argmax``, ``argsort``)."""
    v = np.array([3.0, 1.0, 2.0])
    offsets = np.array([-1.0, 0.0])
    assert _wraps(lambda x: x[computed(x, offsets)], v) == 1
    assert _wraps(lambda x: x[np.array([-1, 0])], v) == 0
    assert _wraps(lambda x: x[dnp.argmax(x)], v) == 0
    assert _wraps(lambda x: x[dnp.argsort(x)], v) == 0
    assert _wraps(lambda x: da.build1(3, lambda i: x[i - 1]), v) == 0


def test_a_wrapped_index_array_is_computed_once_for_the_gather_and_its_scatter() -> None:
    """The compiled gradient of ``x[idx]`` wraps ``idx`` once and checks its range once,
    for the gather and for the scatter of the gradient."""
    idx = np.array([-1, 0, 2, -3], dtype=np.int64)
    p = da.pipeline(lambda x, i: dnp.sum(x[i] * x[i]), np.arange(3.0), idx)
    assert p.python.count("helpers.wrap(") == 1
    assert p.python.count("helpers.in_range(") == 1
    value, (grad,) = p(np.arange(3.0), idx)
    assert value == np.sum(np.arange(3.0)[idx] ** 2)
    np.testing.assert_array_equal(grad, np.bincount(idx % 3, 2 * np.arange(3.0)[idx], 3))


@pytest.mark.parametrize(
    "index", [np.array([2, 0, 1]), np.array([-1, 0, -3]), np.array([5, -4, 1]), np.array([], int)]
)
def test_the_numpy_fast_path_of_wrap_is_the_registry_implementation(index: np.ndarray) -> None:
    """Generated NumPy code's ``wrap`` (no pass but a ``min`` when nothing is negative)
    computes the registry implementation's values."""
    from dualarr.codegen.generate import HELPERS
    from dualarr.lang.primitives import REGISTRY

    n = np.asarray(3, dtype=np.int64)
    fast = HELPERS.wrap(index.astype(np.int64), n)
    np.testing.assert_array_equal(fast, REGISTRY["wrap"].impl(np, index.astype(np.int64), n))

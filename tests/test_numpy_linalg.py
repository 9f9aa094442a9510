"""``dualarr.numpy`` products (``dnp.dot``, ``matmul``, ``einsum`` …) conform to NumPy:
values with NumPy's shapes and dtypes, eager and traced, gradients, jvp/vjp and vmap."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_conformance import conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.terms import Contract, Gather, postorder

SETTINGS = settings(max_examples=12, deadline=None)
DTYPES = (np.float32, np.float64, np.int64)
sizes = st.integers(0, 3)
positive = st.integers(1, 3)


def array(data: st.DataObject, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    seed = data.draw(st.integers(0, 2**31 - 1), label="seed")
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.uniform(-2.0, 2.0, shape).astype(dtype)


def shape_of(
    data: st.DataObject, rank: int, extents: st.SearchStrategy[int] = sizes
) -> tuple[int, ...]:
    return tuple(data.draw(extents) for _ in range(rank))


def kinds(f: Callable[..., Any], *args: Any) -> set[type]:
    program = da.trace(f, *args)
    return {type(node) for node in postorder(program.outputs)}


# --------------------------------------------------------------------------------------
# dot, vdot, inner, outer
# --------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_dot_every_rank(data: st.DataObject, dtype: Any) -> None:
    ra, rb = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    a_shape = shape_of(data, ra)
    b_shape = list(shape_of(data, rb))
    if ra and rb:
        b_shape[-1 if rb == 1 else -2] = a_shape[-1]
    conforms(dnp.dot, np.dot, (array(data, a_shape, dtype), array(data, tuple(b_shape), dtype)))


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_vdot_inner_outer(data: st.DataObject, dtype: Any) -> None:
    a_shape = shape_of(data, data.draw(st.integers(0, 3)))
    b_shape = shape_of(data, data.draw(st.integers(0, 3)))
    a, b = array(data, a_shape, dtype), array(data, b_shape, dtype)
    conforms(dnp.outer, np.outer, (a, b))
    conforms(dnp.vdot, np.vdot, (a, array(data, a_shape[::-1], dtype)))
    if a.ndim and b.ndim:
        b = array(data, (*b_shape[:-1], a_shape[-1]), dtype)
    conforms(dnp.inner, np.inner, (a, b))


# --------------------------------------------------------------------------------------
# matmul and tensordot
# --------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_matmul_broadcasts_batches(data: st.DataObject, dtype: Any) -> None:
    batch = shape_of(data, data.draw(st.integers(0, 2)))

    def batch_of() -> tuple[int, ...]:
        kept = batch[len(batch) - data.draw(st.integers(0, len(batch))) :]
        return tuple(1 if data.draw(st.booleans()) else n for n in kept)

    m, k, n = data.draw(sizes), data.draw(sizes), data.draw(sizes)
    a_shape = (k,) if data.draw(st.booleans()) else (*batch_of(), m, k)
    b_shape = (k,) if data.draw(st.booleans()) else (*batch_of(), k, n)
    a, b = array(data, a_shape, dtype), array(data, b_shape, dtype)
    conforms(dnp.matmul, np.matmul, (a, b))


def test_matmul_of_floats_is_one_contraction() -> None:
    a, b = np.ones((2, 1, 3, 4)), np.ones((5, 4, 2))
    assert Contract in kinds(dnp.matmul, a, b)
    assert "contract" in str(da.trace(dnp.matmul, a, b))


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_tensordot_int_and_pairs(data: st.DataObject, dtype: Any) -> None:
    a_shape = shape_of(data, data.draw(st.integers(0, 3)))
    n = data.draw(st.integers(0, len(a_shape)))
    b_shape = (*a_shape[len(a_shape) - n :], *shape_of(data, data.draw(st.integers(0, 2))))
    a, b = array(data, a_shape, dtype), array(data, b_shape, dtype)
    conforms(lambda x, y: dnp.tensordot(x, y, n), lambda x, y: np.tensordot(x, y, n), (a, b))
    if a.ndim >= 1 and b.ndim >= 1:
        ax_a = data.draw(st.integers(-a.ndim, a.ndim - 1))
        ax_b = data.draw(st.integers(-b.ndim, b.ndim - 1))
        b_shape2 = list(b.shape)
        b_shape2[ax_b] = a.shape[ax_a]
        b2 = array(data, tuple(b_shape2), dtype)
        axes = ([ax_a], [ax_b])
        conforms(
            lambda x, y: dnp.tensordot(x, y, axes), lambda x, y: np.tensordot(x, y, axes), (a, b2)
        )


# --------------------------------------------------------------------------------------
# einsum
# --------------------------------------------------------------------------------------

EINSUM_SPECS: list[tuple[str, list[str]]] = [
    ("ij,jk->ik", ["ij", "jk"]),
    ("ii->i", ["ii"]),
    ("ii", ["ii"]),
    ("ij->", ["ij"]),
    ("ij->ji", ["ij"]),
    ("bij,bjk->bik", ["bij", "bjk"]),
    ("...ij,...jk", ["*ij", "jk"]),
    ("i,i", ["i", "i"]),
    ("i,j->ij", ["i", "j"]),
    ("ijk,ikl,ilm->ijm", ["ijk", "ikl", "ilm"]),
    ("iij,jk->ik", ["iij", "jk"]),
    ("ij,ij->i", ["ij", "ij"]),
    ("ij,k", ["ij", "k"]),
]


@pytest.mark.parametrize(("spec", "operands"), EINSUM_SPECS, ids=[s for s, _ in EINSUM_SPECS])
@settings(max_examples=6, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_einsum_table(spec: str, operands: list[str], dtype: Any, data: st.DataObject) -> None:
    extent = {c: data.draw(positive if c in "ij" else sizes) for c in "bijklm"}
    batch = shape_of(data, data.draw(st.integers(0, 2)))
    shapes = [
        tuple(d for c in letters for d in (batch if c == "*" else (extent[c],)))
        for letters in operands
    ]
    args = tuple(array(data, s, dtype) for s in shapes)
    conforms(lambda *xs: dnp.einsum(spec, *xs), lambda *xs: np.einsum(spec, *xs), args)


def test_einsum_diagonal_is_a_gather_and_pairs_are_contractions() -> None:
    a = np.arange(9.0).reshape(3, 3)
    assert Gather in kinds(lambda x: dnp.einsum("ii->i", x), a)
    x, y, z = np.ones((2, 3, 4)), np.ones((2, 4, 5)), np.ones((2, 5, 6))
    program = da.trace(lambda p, q, r: dnp.einsum("ijk,ikl,ilm->ijm", p, q, r), x, y, z)
    assert str(program).count("contract") == 2


def test_einsum_broadcasts_and_interleaved_form() -> None:
    a, b = np.arange(6.0).reshape(2, 1, 3), np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(dnp.einsum("...j,kj->...k", a, b), np.einsum("...j,kj->...k", a, b))
    c = np.arange(6.0).reshape(2, 3)
    np_any: Any = np  # NumPy's stubs reject einsum's (valid) interleaved form
    np.testing.assert_allclose(
        dnp.einsum(c, [0, 1], np.ones(3), [1], [0]), np_any.einsum(c, [0, 1], np.ones(3), [1], [0])
    )
    np.testing.assert_allclose(dnp.einsum("Ba,ab", c, c.T), np.einsum("Ba,ab", c, c.T))
    column = np.ones((2, 1))  # a dimension of extent 1 broadcasts against 4
    np.testing.assert_allclose(dnp.einsum("ij,jk", column, b.T), np.einsum("ij,jk", column, b.T))


# --------------------------------------------------------------------------------------
# kron and cross
# --------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_kron(data: st.DataObject, dtype: Any) -> None:
    a = array(data, shape_of(data, data.draw(st.integers(0, 2))), dtype)
    b = array(data, shape_of(data, data.draw(st.integers(0, 3))), dtype)
    conforms(dnp.kron, np.kron, (a, b))


MIXED = (
    (np.float32, np.float64),
    (np.float64, np.float32),
    (np.float32, np.int64),
    (np.int64, np.float32),
)


@SETTINGS
@given(data=st.data(), dtypes=st.sampled_from(MIXED))
def test_mixed_float_widths_promote_to_float64(data: st.DataObject, dtypes: Any) -> None:
    """float32 with float64 (or with an int64 array) multiplies in float64, as NumPy's
    products do; each gradient has its own argument's dtype."""
    first, second = dtypes
    n, k, m = data.draw(positive), data.draw(sizes), data.draw(positive)
    a, b = array(data, (n, k), first), array(data, (k, m), second)
    v, c = array(data, (k,), second), array(data, (n, k), second)
    assert dnp.dot(a, b).dtype == np.result_type(a, b) == np.float64
    products: list[tuple[Callable[..., Any], Callable[..., Any], tuple[np.ndarray, ...]]] = [
        (dnp.dot, np.dot, (a, b)),
        (dnp.matmul, np.matmul, (a, b)),
        (dnp.inner, np.inner, (a, v)),
        (dnp.outer, np.outer, (a, v)),
        (dnp.vdot, np.vdot, (a, c)),
        (dnp.kron, np.kron, (a, b)),
        (lambda x, y: dnp.tensordot(x, y, 1), lambda x, y: np.tensordot(x, y, 1), (a, b)),
        (
            lambda x, y, z: dnp.einsum("ij,jk,ij->ik", x, y, z),
            lambda x, y, z: np.einsum("ij,jk,ij->ik", x, y, z),
            (a, b, a),
        ),
        (
            lambda x, y: dnp.cross(x, y),
            lambda x, y: np.cross(x, y),
            (array(data, (n, 3), first), array(data, (n, 3), second)),
        ),
    ]
    for ours, theirs, args in products:
        conforms(ours, theirs, args)
    floats = [x for x in (a, b) if x.dtype.kind == "f"]
    if len(floats) == 2:
        grads = da.grad(lambda x, y: da.sum(dnp.matmul(x, y)), argnums=(0, 1))(a, b)
        assert [g.dtype for g in grads] == [a.dtype, b.dtype]


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_cross(data: st.DataObject, dtype: Any) -> None:
    batch = shape_of(data, data.draw(st.integers(0, 2)), positive)
    na, nb = data.draw(st.sampled_from((2, 3))), data.draw(st.sampled_from((2, 3)))
    a_batch = batch[data.draw(st.integers(0, len(batch))) :]
    a_shape, b_shape = [*a_batch, na], [*batch, nb]
    axisa = data.draw(st.integers(0, len(a_shape) - 1))
    axisb = data.draw(st.integers(0, len(b_shape) - 1))
    a_shape.insert(axisa, a_shape.pop())
    b_shape.insert(axisb, b_shape.pop())
    result_rank = len(batch) + (0 if na == nb == 2 else 1)
    axisc = data.draw(st.integers(-max(result_rank, 1), max(result_rank, 1) - 1))
    a, b = array(data, tuple(a_shape), dtype), array(data, tuple(b_shape), dtype)
    kwargs = {"axisa": axisa, "axisb": axisb, "axisc": axisc}
    conforms(lambda x, y: dnp.cross(x, y, **kwargs), lambda x, y: np.cross(x, y, **kwargs), (a, b))


def test_cross_axis_sets_all_three() -> None:
    a, b = np.arange(12.0).reshape(3, 4), np.arange(12.0, 24.0).reshape(3, 4)
    np.testing.assert_allclose(dnp.cross(a, b, axis=0), np.cross(a, b, axis=0))


# --------------------------------------------------------------------------------------
# interface
# --------------------------------------------------------------------------------------

LINALG = ("dot", "vdot", "inner", "outer", "matmul", "tensordot", "einsum", "kron", "cross")


@pytest.mark.parametrize("name", LINALG)
def test_signatures_follow_numpy(name: str) -> None:
    ours = inspect.signature(getattr(dnp, name)).parameters
    theirs = inspect.signature(getattr(np, name)).parameters
    names = [p for p in ours if p in theirs]
    assert names == list(ours), (list(ours), list(theirs))
    assert names == [p for p in theirs if p in ours]
    for p in ours:
        if theirs[p].default is not inspect.Parameter.empty:
            assert ours[p].default == theirs[p].default, p
    assert getattr(dnp, name).__doc__


def test_int_and_bool_products_keep_numpy_dtypes() -> None:
    i = np.arange(6).reshape(2, 3)
    assert dnp.matmul(i, i.T).dtype == np.int64
    t = np.array([[True, False], [False, False]])
    np.testing.assert_array_equal(dnp.matmul(t, t), np.matmul(t, t))
    assert dnp.dot(t, t).dtype == np.bool_
    np.testing.assert_array_equal(dnp.einsum("ij,jk", i, i.T), np.einsum("ij,jk", i, i.T))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: dnp.dot(np.ones((2, 3)), np.ones((2, 3))), "numpy.dot"),
        (lambda: dnp.matmul(np.ones(3), np.ones(4)), "numpy.matmul"),
        (lambda: dnp.matmul(1.0, np.ones(4)), "numpy.matmul"),
        (lambda: dnp.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 1))), "numpy.matmul"),
        (lambda: dnp.tensordot(np.ones((2, 3)), np.ones((2, 3)), 1), "numpy.tensordot"),
        (lambda: dnp.tensordot(np.ones((2, 3)), np.ones(3), ([0, 1], [0])), "numpy.tensordot"),
        (lambda: dnp.tensordot(np.ones(3), np.ones(3), "x"), "numpy.tensordot"),
        (lambda: dnp.einsum("ij,jk->ik", np.ones((2, 3))), "numpy.einsum"),
        (lambda: dnp.einsum("ij->k", np.ones((2, 3))), "numpy.einsum"),
        (lambda: dnp.einsum("ii", np.ones((2, 3))), "numpy.einsum"),
        (lambda: dnp.einsum("i", np.ones((2, 3))), "numpy.einsum"),
        (lambda: dnp.einsum("i1", np.ones((2, 3))), "numpy.einsum"),
        (lambda: dnp.einsum("...i->i", np.ones((2, 3))), "numpy.einsum"),
        (lambda: dnp.inner(np.ones(2), np.ones(3)), "numpy.inner"),
        (lambda: dnp.vdot(np.ones(2), np.ones(3)), "numpy.vdot"),
        (lambda: dnp.cross(np.ones(4), np.ones(3)), "numpy.cross"),
        (lambda: dnp.cross(np.ones(3), np.ones(3), axisa=2), "numpy.cross"),
    ],
)
def test_errors_name_the_function(call: Callable[[], Any], name: str) -> None:
    with pytest.raises(da.DualarrError) as info:
        call()
    assert name in str(info.value)

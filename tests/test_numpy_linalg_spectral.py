"""``dualarr.numpy.linalg``'s spectral family conforms to NumPy 2.4: ``eigh``,
``eigvalsh``, ``svd``, ``svdvals``, ``qr``, ``pinv``, ``norm``, ``matrix_norm``,
``vector_norm``, ``cond``, ``matrix_rank`` and ``lstsq`` (values in float32 and float64
with batch axes, eager and traced; gradients in both modes against central differences
on data in general position; jvp/vjp adjointness; vmap against a loop), and the
constructs ``eigh``/``svd``/``qr`` (``dualarr/constructs/linalg_spectral.py``) go
through every stage: the bot (a batched factorisation), generated code fused and
unfused, ``array_api_strict``, ``check_grad`` (SymPy skipped), NumPy's dispatch.

Eigenvectors and singular vectors are defined up to sign, so gradients are checked on
functions of them that do not depend on it (``V * V``, ``U diag(s) Vh``), as JAX's
tests do."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_conformance import check_values, conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.constructs import Eigh, Qr, Svd
from dualarr.lang.errors import ShapeError, UnsupportedError
from dualarr.lang.terms import Build1, walk
from dualarr.vectorise.bot import is_bot_normal

RNG = np.random.default_rng(11)
NPL: Any = np.linalg  # NumPy's stubs type UPLO/mode/keepdims as literals

NAMES = [
    "eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv", "norm", "matrix_norm",
    "vector_norm", "cond", "matrix_rank", "lstsq",
]  # fmt: skip

Fn = Callable[..., Any]


def normal(*shape: int, dtype: Any = np.float64) -> np.ndarray:
    return RNG.normal(size=shape).astype(dtype)


def eigh_invariant(lib: Any, uplo: str = "L") -> Fn:
    """Eigenvalues and squared eigenvectors (sign-free), as one array."""

    def f(a: Any) -> Any:
        w, v = lib.linalg.eigh(a, UPLO=uplo)
        return v * v + w[..., None, :]

    return f


def svd_invariant(lib: Any) -> Fn:
    """``U diag(s) Vh`` term by term (sign-free) and the squared vectors."""

    def f(a: Any) -> Any:
        u, s, vh = lib.linalg.svd(a, full_matrices=False)
        return (u * u) @ (s[..., None] * vh * vh) + u @ (s[..., None] * vh)

    return f


@pytest.mark.parametrize("name", NAMES)
def test_signatures_are_numpys(name: str) -> None:
    assert name in dnp.linalg.__all__
    ours = inspect.signature(getattr(dnp.linalg, name))
    theirs = inspect.signature(getattr(np.linalg, name))
    assert list(ours.parameters) == list(theirs.parameters)
    for p, q in zip(ours.parameters.values(), theirs.parameters.values(), strict=True):
        assert p.kind == q.kind, (name, p.name)
        assert p.default is q.default or p.default == q.default, (name, p.name)


# -- eigh, eigvalsh --------------------------------------------------------------------------


@settings(max_examples=6, deadline=None)
@given(
    batch=st.sampled_from([(), (2,), (2, 1)]),
    n=st.integers(1, 4),
    dtype=st.sampled_from([np.float32, np.float64]),
    uplo=st.sampled_from(["L", "U"]),
)
def test_eigvalsh_conforms(batch: tuple[int, ...], n: int, dtype: Any, uplo: str) -> None:
    a = normal(*batch, n, n, dtype=dtype)  # not symmetric: only the UPLO triangle is read
    conforms(
        lambda x: dnp.linalg.eigvalsh(x, UPLO=uplo),
        lambda x: NPL.eigvalsh(x, UPLO=uplo),
        [a],
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_conforms_through_sign_free_functions(dtype: Any, uplo: str) -> None:
    a = normal(2, 3, 3, dtype=dtype)
    conforms(eigh_invariant(dnp, uplo), eigh_invariant(np, uplo), [a])


@pytest.mark.parametrize("batch", [(), (3,), (0,)])
def test_eigh_values_are_numpys(batch: tuple[int, ...]) -> None:
    a = normal(*batch, 4, 4)
    w, v = dnp.linalg.eigh(a)
    expected = np.linalg.eigh(a)
    np.testing.assert_allclose(w, expected.eigenvalues, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v, expected.eigenvectors, rtol=1e-12, atol=1e-12)
    result = dnp.linalg.eigh(a)
    assert result.eigenvalues.shape == (*batch, 4) and result.eigenvectors.shape == a.shape
    check_values(lambda x: dnp.linalg.eigh(x)[1], lambda x: np.linalg.eigh(x)[1], [a])


def test_eigenvalue_gradient_is_right_at_repeated_eigenvalues() -> None:
    """The eigenvalues' sum is differentiable at a repeated eigenvalue: its gradient is
    the identity, not NaN (the eigenvectors' derivative, undefined there, is left out)."""
    a = np.diag([1.0, 1.0, 2.0])
    g = da.grad(lambda a: da.sum(dnp.linalg.eigvalsh(a)))(a)
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)


# -- svd, svdvals ------------------------------------------------------------------------------


@settings(max_examples=6, deadline=None)
@given(
    batch=st.sampled_from([(), (2,)]),
    m=st.integers(1, 4),
    n=st.integers(1, 4),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_svdvals_conforms(batch: tuple[int, ...], m: int, n: int, dtype: Any) -> None:
    a = normal(*batch, m, n, dtype=dtype)
    conforms(dnp.linalg.svdvals, np.linalg.svdvals, [a])
    conforms(
        lambda x: dnp.linalg.svd(x, compute_uv=False),
        lambda x: np.linalg.svd(x, compute_uv=False),
        [a],
        vmap=False,
    )


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3), (2, 4, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_svd_conforms_through_sign_free_functions(shape: tuple[int, ...], dtype: Any) -> None:
    conforms(svd_invariant(dnp), svd_invariant(np), [normal(*shape, dtype=dtype)])


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3, 2)])
def test_svd_values_are_numpys(full_matrices: bool, shape: tuple[int, ...]) -> None:
    a = normal(*shape)
    got = dnp.linalg.svd(a, full_matrices=full_matrices)
    expected = np.linalg.svd(a, full_matrices=full_matrices)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    for k in range(3):
        check_values(
            lambda x, k=k: dnp.linalg.svd(x, full_matrices=full_matrices)[k],
            lambda x, k=k: np.linalg.svd(x, full_matrices=full_matrices)[k],
            [a],
        )


def test_svd_full_matrices_of_a_non_square_matrix_has_no_derivative_as_in_jax() -> None:
    a = normal(4, 3)
    with pytest.raises(UnsupportedError, match=r"linalg\.svd.*full_matrices"):
        da.grad(lambda x: da.sum(dnp.linalg.svd(x)[0]))(a)
    # square: full and reduced are one factorisation, and differentiable
    conforms(
        lambda x: dnp.linalg.svd(x)[0] @ dnp.linalg.svd(x)[2],
        lambda x: np.linalg.svd(x)[0] @ np.linalg.svd(x)[2],
        [normal(3, 3)],
    )


def test_svd_hermitian_is_numpys() -> None:
    a = normal(2, 3, 3)
    a = a + np.swapaxes(a, -1, -2)
    for g, e in zip(
        dnp.linalg.svd(a, hermitian=True), np.linalg.svd(a, hermitian=True), strict=True
    ):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    conforms(
        lambda x: dnp.linalg.svd(x, compute_uv=False, hermitian=True),
        lambda x: np.linalg.svd(x, compute_uv=False, hermitian=True),
        [a],
        gradients=False,
    )


# -- qr -------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 5, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_qr_reduced_conforms(shape: tuple[int, ...], dtype: Any) -> None:
    a = normal(*shape, dtype=dtype)
    conforms(lambda x: dnp.linalg.qr(x)[0], lambda x: np.linalg.qr(x)[0], [a])
    conforms(lambda x: dnp.linalg.qr(x)[1], lambda x: np.linalg.qr(x)[1], [a])
    conforms(lambda x: dnp.linalg.qr(x, mode="r"), lambda x: np.linalg.qr(x, mode="r"), [a])


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 2, 3)])
def test_qr_values_are_numpys(mode: str, shape: tuple[int, ...]) -> None:
    a = normal(*shape)
    got, expected = dnp.linalg.qr(a, mode=mode), NPL.qr(a, mode=mode)
    if mode == "r":
        got, expected = (got,), (expected,)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_qr_derivative_of_a_wide_matrix_is_unsupported_as_in_jax() -> None:
    with pytest.raises(UnsupportedError, match=r"linalg\.qr"):
        da.grad(lambda x: da.sum(dnp.linalg.qr(x)[1]))(normal(2, 4))
    with pytest.raises(UnsupportedError, match="mode"):
        dnp.linalg.qr(normal(3, 3), mode="raw")


# -- pinv, lstsq -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pinv_conforms(shape: tuple[int, ...], dtype: Any) -> None:
    conforms(dnp.linalg.pinv, np.linalg.pinv, [normal(*shape, dtype=dtype)])


def test_pinv_cutoffs_are_numpys() -> None:
    a = normal(4, 2) @ normal(2, 3)  # rank 2
    for kwargs in ({}, {"rtol": None}, {"rcond": 1e-8}, {"rtol": 1e-8}):
        np.testing.assert_allclose(
            dnp.linalg.pinv(a, **kwargs), np.linalg.pinv(a, **kwargs), rtol=1e-8, atol=1e-10
        )
    s = a + a.T if a.shape[0] == a.shape[1] else normal(3, 3)
    s = s + s.T
    np.testing.assert_allclose(
        dnp.linalg.pinv(s, hermitian=True), np.linalg.pinv(s, hermitian=True), rtol=1e-10
    )
    with pytest.raises(UnsupportedError, match="rtol"):
        dnp.linalg.pinv(a, rcond=1e-3, rtol=1e-3)


@pytest.mark.parametrize(("m", "n", "k"), [(5, 3, None), (5, 3, 2), (3, 3, None), (2, 4, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstsq_conforms(m: int, n: int, k: int | None, dtype: Any) -> None:
    a = normal(m, n, dtype=dtype)
    b = normal(m, dtype=dtype) if k is None else normal(m, k, dtype=dtype)
    for part in (0, 1, 3):  # x, residuals, s
        conforms(
            lambda a, b, part=part: dnp.linalg.lstsq(a, b)[part],
            lambda a, b, part=part: np.linalg.lstsq(a, b)[part],
            [a, b],
            vmap=False,
        )
    assert int(dnp.linalg.lstsq(a, b)[2]) == np.linalg.lstsq(a, b)[2]


# -- norms, cond, matrix_rank -----------------------------------------------------------------

VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1.5]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_norms_conform(ord: Any, dtype: Any) -> None:
    x = normal(3, 4, dtype=dtype)
    for axis, keepdims in ((1, False), (0, True), (-1, True)):
        conforms(
            lambda v, axis=axis, keepdims=keepdims: dnp.linalg.norm(v, ord, axis, keepdims),
            lambda v, axis=axis, keepdims=keepdims: np.linalg.norm(v, ord, axis, keepdims),
            [x],
            gradients=ord != 0,
        )
    conforms(
        lambda v: dnp.linalg.norm(v, ord), lambda v: np.linalg.norm(v, ord), [x[0]],
        gradients=ord != 0,
    )  # fmt: skip


@pytest.mark.parametrize("ord", MATRIX_ORDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_norms_conform(ord: Any, dtype: Any) -> None:
    x = normal(2, 3, 4, dtype=dtype)
    for axis, keepdims in (((1, 2), False), ((2, 0), True), ((-1, -2), False)):
        conforms(
            lambda v, axis=axis, keepdims=keepdims: dnp.linalg.norm(v, ord, axis, keepdims),
            lambda v, axis=axis, keepdims=keepdims: np.linalg.norm(v, ord, axis, keepdims),
            [x],
        )
    conforms(lambda v: dnp.linalg.norm(v, ord), lambda v: np.linalg.norm(v, ord), [x[0]])
    conforms(
        lambda v: dnp.linalg.matrix_norm(v, ord=ord, keepdims=True),
        lambda v: np.linalg.matrix_norm(v, ord=ord, keepdims=True),
        [x],
    )


def test_norm_of_everything_and_vector_norm_over_several_axes() -> None:
    x = normal(2, 3, 4)
    conforms(dnp.linalg.norm, np.linalg.norm, [x])
    conforms(
        lambda v: dnp.linalg.norm(v, keepdims=True),
        lambda v: NPL.norm(v, keepdims=True),
        [x],
    )
    for kwargs in (
        {},
        {"axis": (0, 2)},
        {"axis": 1, "ord": 1},
        {"axis": (2, 0), "keepdims": True, "ord": np.inf},
    ):
        conforms(
            lambda v, kw=kwargs: dnp.linalg.vector_norm(v, **kw),
            lambda v, kw=kwargs: np.linalg.vector_norm(v, **kw),
            [x],
        )


def test_norm_errors_are_named() -> None:
    with pytest.raises(UnsupportedError, match=r"linalg\.norm.*'nuc'.*vectors"):
        dnp.linalg.norm(normal(3), "nuc")
    with pytest.raises(UnsupportedError, match=r"linalg\.norm.*matrices"):
        dnp.linalg.norm(normal(3, 3), 3)
    with pytest.raises(ShapeError, match=r"linalg\.norm"):
        dnp.linalg.norm(normal(3, 3, 3), axis=(0, 1, 2))


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"])
def test_cond_conforms(p: Any) -> None:
    conforms(lambda x: dnp.linalg.cond(x, p), lambda x: np.linalg.cond(x, p), [normal(2, 3, 3)])


def test_cond_of_a_non_square_matrix_with_p_2() -> None:
    conforms(dnp.linalg.cond, np.linalg.cond, [normal(4, 3, dtype=np.float32)])


def test_matrix_rank_is_numpys() -> None:
    low = normal(3, 5, 2) @ normal(3, 2, 4)  # rank 2 each
    for a in (low, normal(4, 3), np.zeros((3, 3)), normal(4)):
        conforms(dnp.linalg.matrix_rank, np.linalg.matrix_rank, [a], gradients=False)
    for kwargs in ({"tol": 1e-3}, {"rtol": 0.5}, {"hermitian": True}):
        s = low[0] @ low[0].T
        np.testing.assert_array_equal(
            dnp.linalg.matrix_rank(s, **kwargs), np.linalg.matrix_rank(s, **kwargs)
        )


# -- errors -------------------------------------------------------------------------------------


def test_errors_name_the_function_and_shapes() -> None:
    with pytest.raises(ShapeError, match=r"linalg\.eigh.*square.*\[3,4\]"):
        dnp.linalg.eigh(normal(3, 4))
    with pytest.raises(ShapeError, match=r"linalg\.eigvalsh.*two-dimensional"):
        dnp.linalg.eigvalsh(normal(3))
    with pytest.raises(UnsupportedError, match=r"linalg\.eigh.*UPLO"):
        dnp.linalg.eigh(normal(3, 3), UPLO="X")
    with pytest.raises(ShapeError, match=r"linalg\.lstsq.*Incompatible"):
        dnp.linalg.lstsq(normal(3, 2), normal(4))
    with pytest.raises(ShapeError, match=r"linalg\.eigh"):
        Eigh("L", da.constant(np.zeros((2, 3))).term)


# -- every stage ------------------------------------------------------------------------------


def test_numpy_linalg_on_traced_values_dispatches_here() -> None:
    a = normal(3, 3)

    def f(x: Any) -> Any:
        w, _ = np.linalg.eigh(x)
        return (
            da.sum(w)
            + np.linalg.norm(np.linalg.svd(x, compute_uv=False))
            + da.sum(np.linalg.qr(x)[1] * np.linalg.pinv(x))
        )

    def g(x: np.ndarray) -> float:
        return float(
            np.sum(np.linalg.eigh(x)[0])
            + np.linalg.norm(np.linalg.svd(x, compute_uv=False))
            + np.sum(np.linalg.qr(x)[1] * np.linalg.pinv(x))
        )

    assert float(da.jit(f)(a)) == pytest.approx(g(a), rel=1e-12)


def test_array_api_strict_values() -> None:
    a = normal(2, 4, 3)
    x = xps.asarray(a)
    s = da.jit(lambda a: dnp.linalg.svdvals(a))(x)
    assert isinstance(s, type(x))
    np.testing.assert_allclose(np.asarray(s._array), np.linalg.svdvals(a), rtol=1e-12)
    q = da.jit(lambda a: dnp.linalg.qr(a)[0])(x)
    np.testing.assert_allclose(np.asarray(q._array), np.linalg.qr(a)[0], rtol=1e-12)
    sq = a[:, :3, :]
    w = da.jit(lambda a: dnp.linalg.eigh(a)[0])(xps.asarray(sq))
    np.testing.assert_allclose(np.asarray(w._array), np.linalg.eigh(sq)[0], rtol=1e-12)
    # the array API's eigh has no UPLO: the upper triangle, mirrored, read as the lower
    w = da.jit(lambda a: dnp.linalg.eigh(a, UPLO="U")[0])(xps.asarray(sq))
    np.testing.assert_allclose(np.asarray(w._array), np.linalg.eigh(sq, "U")[0], rtol=1e-12)
    (g,) = da.grad(lambda a: da.sum(dnp.linalg.svdvals(a)), argnums=(0,))(x)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(np.asarray(g._array), u @ vh, rtol=1e-10)


@pytest.mark.parametrize("fuse", [True, False])
def test_fused_and_unfused_code_compute_the_same_bits(fuse: bool) -> None:
    a = normal(4, 3)

    def f(x: Any) -> Any:
        w, v = dnp.linalg.eigh(x.T @ x)
        return da.sum(w * v * v) + da.sum(svd_invariant(dnp)(x)) + da.sum(dnp.linalg.qr(x)[1])

    value, (g,) = da.pipeline(f, a, fuse=fuse)(a)
    value2, (g2,) = da.pipeline(f, a, fuse=not fuse)(a)
    assert value == value2
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_allclose(g, da.grad(f, mode="interpret")(a), rtol=1e-9, atol=1e-12)
    p = da.pipeline(f, a, fuse=fuse)
    for name in ("Eigh", "Svd", "Qr"):
        assert f"helpers.meanings['{name}'](xp, " in p.python
    for stage in p.stages:  # every stage prints
        assert str(getattr(p, stage))
    assert "eigh" in p.source.graph().source


def test_the_bot_batches_a_factorisation_and_keeps_its_normal_form() -> None:
    x = normal(4, 3, 3)

    def rows(x: Any) -> Any:  # build1 k (λi. eigh x[i]) = a batched eigh (Fig. 9)
        return da.build1(4, lambda i: dnp.linalg.eigvalsh(x[i]) + dnp.linalg.svdvals(x[i]))

    p = da.pipeline(lambda x: da.sum(rows(x) ** 2), x)
    nodes = list(walk(p.vectorised.outputs))
    assert not any(isinstance(n, Build1) for n in nodes)
    assert any(isinstance(n, Eigh) and n.shape == (2, 4, 3, 3) for n in nodes)
    assert any(isinstance(n, Svd) and n.shape == (3, 4, 3, 3) for n in nodes)
    assert is_bot_normal(p.vectorised)
    expected = np.linalg.eigvalsh(x) + np.linalg.svdvals(x)
    np.testing.assert_allclose(da.jit(rows)(x), expected, rtol=1e-12)

    def diagonal(x: Any) -> Any:  # an index into the matrix dimensions, under build1
        return da.build1(3, lambda i: dnp.linalg.qr(x)[0][i, i] * dnp.linalg.eigh(x)[1][i, 0])

    q = da.pipeline(lambda x: da.sum(diagonal(x)), x[0])
    assert is_bot_normal(q.vectorised)
    assert any(isinstance(n, Qr) for n in walk(q.vectorised.outputs))
    qq, v = np.linalg.qr(x[0])[0], np.linalg.eigh(x[0])[1]
    np.testing.assert_allclose(da.jit(diagonal)(x[0]), np.diagonal(qq) * v[:, 0], rtol=1e-12)
    (g,) = q(x[0])[1]
    np.testing.assert_allclose(g, da.grad(lambda x: da.sum(diagonal(x)), mode="interpret")(x[0]))


def test_vmap_and_per_example_gradients_equal_a_loop() -> None:
    batch = normal(5, 4, 3)
    got = da.vmap(lambda a: svd_invariant(dnp)(a))(batch)
    np.testing.assert_allclose(got, np.stack([svd_invariant(np)(b) for b in batch]), rtol=1e-10)
    per_example = da.vmap(da.grad(lambda a: da.sum(dnp.linalg.svdvals(a))))(batch)
    for b in range(5):
        u, _, vh = np.linalg.svd(batch[b], full_matrices=False)
        np.testing.assert_allclose(per_example[b], u @ vh, rtol=1e-10)


def test_check_grad_skips_sympy_and_passes() -> None:
    a = normal(3, 3)
    report = da.check_grad(
        lambda a: da.sum(eigh_invariant(dnp)(a) * np.arange(9.0).reshape(3, 3)), a
    )
    assert report.passed, report
    assert "SymPy cannot evaluate linalg.eigh" in str(report)
    report = da.check_grad(lambda a: da.sum(dnp.linalg.qr(a)[0] ** 3), normal(3, 2))
    assert report.passed, report


def test_second_derivatives_go_through_the_derivative_rules() -> None:
    """The rules build their factors with the primal algebra, so a gradient of a
    gradient differentiates them again (against central differences of the gradient)."""
    a, w = normal(3, 3), np.arange(9.0).reshape(3, 3)

    def f(x: Any) -> Any:
        return da.sum(dnp.linalg.eigvalsh(x) ** 3) + da.sum(dnp.linalg.svdvals(x) ** 2)

    def inner(x: Any) -> Any:
        return da.sum(da.grad(f)(x) * w)

    hessian_row = da.grad(inner)(a)
    expected = np.zeros_like(a)
    for index in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[index] = 1e-6
        up, down = (float(np.sum(da.grad(f)(a + sign * step) * w)) for sign in (1, -1))
        expected[index] = (up - down) / 2e-6
    np.testing.assert_allclose(hessian_row, expected, rtol=1e-5, atol=1e-6)


def test_qr_complete_of_a_square_matrix_is_differentiable() -> None:
    conforms(
        lambda x: dnp.linalg.qr(x, mode="complete")[0],
        lambda x: NPL.qr(x, mode="complete")[0],
        [normal(2, 3, 3)],
    )


def test_an_index_into_the_batch_is_pushed_into_the_operand() -> None:
    """``index (eigh e) (p, b, …) = index (eigh (index e b)) (p', …)`` (Fig. 10): one
    factorisation per row of the build, not the whole stack per row; out of range the
    read is 0 (§5.2), though ``eigh`` of the zeros read there is not."""
    x = normal(3, 4, 4)

    def f(x: Any) -> Any:
        return da.build1(3, lambda i: dnp.linalg.eigvalsh(x * (i + 1.0))[i + 1])

    expected = [np.linalg.eigvalsh(x[i + 1] * (i + 1.0)) for i in range(2)] + [np.zeros(4)]
    np.testing.assert_allclose(da.jit(f)(x), np.stack(expected), rtol=1e-12, atol=1e-12)
    p = da.pipeline(lambda x: da.sum(f(x)), x)
    assert [n.shape for n in walk(p.vectorised.outputs) if isinstance(n, Eigh)] == [(2, 3, 4, 4)]
    assert is_bot_normal(p.vectorised)
    (g,) = p(x)[1]
    np.testing.assert_allclose(g, da.grad(lambda x: da.sum(f(x)), mode="interpret")(x))

    def one(x: Any) -> Any:  # outside build1: eigh of x[1] alone
        return dnp.linalg.eigvalsh(x)[1]

    q = da.pipeline(lambda x: da.sum(one(x)), x)
    assert [n.shape for n in walk(q.vectorised.outputs) if isinstance(n, Eigh)] == [(2, 4, 4)]
    np.testing.assert_allclose(da.jit(one)(x), np.linalg.eigvalsh(x)[1], rtol=1e-12)


def test_a_factorisation_of_a_small_constant_is_folded() -> None:
    c = np.array([[2.0, 1.0], [1.0, 3.0], [0.5, -1.0]])
    x = normal(2)

    def f(x: Any) -> Any:
        return da.sum(x * dnp.linalg.svdvals(c)) + da.sum(x * dnp.linalg.qr(c)[1])

    p = da.pipeline(f, x)
    assert not any(isinstance(n, Svd | Qr) for n in walk(p.vectorised.outputs))
    (g,) = p(x)[1]
    expected = np.linalg.svdvals(c) + np.linalg.qr(c)[1].sum(axis=0)
    np.testing.assert_allclose(g, expected, rtol=1e-12)

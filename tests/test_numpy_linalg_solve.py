"""``dnp.linalg``'s solve family (issue #39): ``solve``, ``inv``, ``det``, ``slogdet``,
``cholesky``, ``matrix_power``, ``tensorsolve``, ``tensorinv`` against NumPy's.

Each function goes through the conformance harness (values eager and traced, gradients
in both modes against central differences of NumPy's function, the jvp/vjp adjoint
identity, ``vmap`` against a loop) in float64 and float32, with batch axes; then the
constructs behind them (``dualarr/constructs/linalg_solve.py``) through every stage:
``array_api_strict``, generated code (fused and unfused), the bot, SymPy, errors, and
``np.linalg.f`` dispatching to ``dnp.linalg.f`` on traced values."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_conformance import conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.constructs import Cholesky, Inv, LogAbsDet, SignDet, Solve
from dualarr.lang.rules import TABLES
from dualarr.lang.terms import Build1, Structural, TermBase, walk

NAMES = [
    "cholesky",
    "det",
    "inv",
    "matrix_power",
    "slogdet",
    "solve",
    "tensorinv",
    "tensorsolve",
]
DTYPES = [np.float64, np.float32]


def well_conditioned(shape: tuple[int, ...], dtype: Any = np.float64, seed: int = 0) -> np.ndarray:
    """A stack of matrices with a dominant diagonal: far from singular."""
    n = shape[-1]
    r = np.random.default_rng(seed)
    return (r.normal(size=shape) + n * np.eye(n)).astype(dtype)


def spd(shape: tuple[int, ...], dtype: Any = np.float64, seed: int = 0) -> np.ndarray:
    """A stack of symmetric positive definite matrices ``m mᵀ + n I``."""
    n = shape[-1]
    m = np.random.default_rng(seed).normal(size=shape)
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(dtype)


def normal(shape: tuple[int, ...], dtype: Any = np.float64, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


# -- the conformance harness, every function ---------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((3, 3), (3,)),  # a vector
        ((3, 3), (3, 2)),  # a matrix
        ((2, 3, 3), (3,)),  # NumPy 2: a 1-D b is a vector for every matrix of the stack
        ((2, 3, 3), (2, 3, 1)),
        ((2, 1, 4, 4), (3, 4, 2)),  # batch dimensions broadcast
        ((4, 4), (2, 4, 3)),
    ],
)
def test_solve_conforms(a_shape: tuple[int, ...], b_shape: tuple[int, ...], dtype: Any) -> None:
    conforms(
        dnp.linalg.solve,
        np.linalg.solve,
        [well_conditioned(a_shape, dtype), normal(b_shape, dtype)],
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 3, 3), (2, 1, 4, 4)])
def test_inv_conforms(shape: tuple[int, ...], dtype: Any) -> None:
    conforms(dnp.linalg.inv, np.linalg.inv, [well_conditioned(shape, dtype)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (2, 1, 4, 4)])
def test_det_and_slogdet_conform(shape: tuple[int, ...], dtype: Any) -> None:
    a = well_conditioned(shape, dtype, seed=2)
    a[..., 0, :] *= -1  # some negative determinants
    conforms(dnp.linalg.det, np.linalg.det, [a])
    conforms(lambda a: dnp.linalg.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1], [a])
    conforms(lambda a: dnp.linalg.slogdet(a).sign, lambda a: np.linalg.slogdet(a).sign, [a])


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 3, 3), (2, 1, 4, 4)])
def test_cholesky_conforms(shape: tuple[int, ...], dtype: Any, upper: bool) -> None:
    """Gradients against central differences of NumPy's: only the triangle NumPy reads
    has a derivative (lower, or upper with ``upper=True``)."""
    a = spd(shape, dtype)
    conforms(
        lambda a: dnp.linalg.cholesky(a, upper=upper),
        lambda a: np.linalg.cholesky(a, upper=upper),
        [a],
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [-3, -1, 0, 1, 2, 3, 5, 6])
def test_matrix_power_conforms(n: int, dtype: Any) -> None:
    a = (well_conditioned((2, 3, 3), np.float64) / 3).astype(dtype)
    conforms(lambda a: dnp.linalg.matrix_power(a, n), lambda a: np.linalg.matrix_power(a, n), [a])


def test_matrix_power_of_ints_stays_int() -> None:
    a = np.arange(9).reshape(3, 3)
    got = dnp.linalg.matrix_power(a, 3)
    assert got.dtype == np.linalg.matrix_power(a, 3).dtype
    np.testing.assert_array_equal(got, np.linalg.matrix_power(a, 3))
    np.testing.assert_array_equal(dnp.linalg.matrix_power(a, 0), np.linalg.matrix_power(a, 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorinv_and_tensorsolve_conform(dtype: Any) -> None:
    a = well_conditioned((6, 6), dtype).reshape(6, 2, 3)
    conforms(lambda a: dnp.linalg.tensorinv(a, ind=1), lambda a: np.linalg.tensorinv(a, ind=1), [a])
    b = normal((6,), dtype)
    conforms(dnp.linalg.tensorsolve, np.linalg.tensorsolve, [a, b])
    moved = np.moveaxis(a, 0, 2)  # (2, 3, 6): axes=(0, 1) moves the unknowns last
    conforms(
        lambda a, b: dnp.linalg.tensorsolve(a, b, axes=(0, 1)),
        lambda a, b: np.linalg.tensorsolve(a, b, axes=(0, 1)),
        [moved, b],
    )


def test_integers_promote_to_float64() -> None:
    a = np.array([[4, 1], [2, 3]])
    for name in ("inv", "det", "solve", "cholesky"):
        args = [a @ a.T + 2 * np.eye(2, dtype=int)] if name == "cholesky" else [a]
        if name == "solve":
            args.append(np.array([1, 2]))
        expected = getattr(np.linalg, name)(*args)
        got = getattr(dnp.linalg, name)(*args)
        assert got.dtype == expected.dtype == np.float64
        np.testing.assert_allclose(got, expected, rtol=1e-12)


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.integers(1, 4),
    st.integers(1, 3),
    st.sampled_from(DTYPES),
)
def test_solve_on_drawn_batch_shapes(batch: list[int], n: int, k: int, dtype: Any) -> None:
    a = well_conditioned((*batch, n, n), dtype)
    b = normal((*batch, n, k), dtype)
    conforms(dnp.linalg.solve, np.linalg.solve, [a, b])


@pytest.mark.parametrize(
    ("name", "shapes"),
    [
        ("inv", [(2, 0, 0)]),
        ("inv", [(0, 3, 3)]),
        ("det", [(2, 0, 0)]),
        ("det", [(0, 2, 2)]),
        ("cholesky", [(2, 0, 0)]),
        ("solve", [(0, 3, 3), (0, 3, 2)]),
        ("solve", [(2, 0, 0), (2, 0, 3)]),
    ],
)
def test_size_zero_stacks_conform(name: str, shapes: list[tuple[int, ...]]) -> None:
    """Empty batches and ``0 × 0`` matrices, where NumPy gives a result (``det`` of a
    ``0 × 0`` matrix is 1)."""
    args = [spd(shapes[0]) if shapes[0][-1] else np.zeros(shapes[0])]
    args += [normal(shape) for shape in shapes[1:]]
    conforms(getattr(dnp.linalg, name), getattr(np.linalg, name), args)


@settings(max_examples=15, deadline=None)
@given(
    st.sampled_from(["inv", "det", "logabsdet", "cholesky"]),
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.integers(1, 4),
    st.sampled_from(DTYPES),
)
def test_square_functions_on_drawn_batch_shapes(
    name: str, batch: list[int], n: int, dtype: Any
) -> None:
    a = spd((*batch, n, n), dtype)
    if name == "logabsdet":
        conforms(lambda a: dnp.linalg.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1], [a])
    else:
        conforms(getattr(dnp.linalg, name), getattr(np.linalg, name), [a])


# -- the signatures, and np.linalg on a traced value ---------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_signatures_are_numpy_s(name: str) -> None:
    """Parameter names, kinds, order and defaults (annotations aside)."""

    def shape(f: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]

    assert shape(getattr(dnp.linalg, name)) == shape(getattr(np.linalg, name))
    assert name in dnp.linalg.__all__


def test_numpy_linalg_on_a_traced_value_dispatches_to_dnp() -> None:
    a, b = well_conditioned((3, 3)), normal((3,))

    def f(a: Any, b: Any) -> Any:
        sign, logdet = np.linalg.slogdet(a)
        return np.sum(np.linalg.solve(a, b)) + np.linalg.det(a) + sign * logdet

    sign, logdet = np.linalg.slogdet(a)
    expected = np.sum(np.linalg.solve(a, b)) + np.linalg.det(a) + sign * logdet
    program = da.trace(f, a, b)
    np.testing.assert_allclose(program(a, b), expected, rtol=1e-12)
    kinds = {type(n) for n in walk(program.outputs) if isinstance(n, Structural)}
    assert {Solve, SignDet, LogAbsDet} <= kinds
    np.testing.assert_allclose(
        da.jit(lambda a: np.linalg.inv(a) @ np.linalg.cholesky(spd((3, 3))))(a),
        np.linalg.inv(a) @ np.linalg.cholesky(spd((3, 3))),
        rtol=1e-12,
    )


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: dnp.linalg.inv(x), r"numpy\.linalg\.inv: .*\[3,4\].*square"),
        (lambda x: dnp.linalg.det(x[0]), r"numpy\.linalg\.slogdet: 1-dimensional"),
        (lambda x: dnp.linalg.cholesky(x), r"numpy\.linalg\.cholesky: .*square"),
        (lambda x: dnp.linalg.solve(x[:, :3], x[0]), r"numpy\.linalg\.solve: b \[4\]"),
        (lambda x: dnp.linalg.solve(x[:, :3], x.T), r"numpy\.linalg\.solve: b \[4,3\]"),
        (
            lambda x: dnp.linalg.solve(dnp.stack([x[:, :3]] * 2), dnp.stack([x[:, :1]] * 3)),
            "do not broadcast",
        ),
        (lambda x: dnp.linalg.tensorinv(x), "not square"),
        (lambda x: dnp.linalg.tensorsolve(x, x[0], axes=(5,)), "axes entry 5 is out of bounds"),
    ],
)
def test_shapes_numpy_rejects_are_shape_errors(call: Callable[..., Any], message: str) -> None:
    with pytest.raises(da.ShapeError, match=message):
        da.trace(call, np.ones((3, 4)))


def test_a_construct_rejects_a_stack_that_is_not_square() -> None:
    x = da.constant(np.zeros((2, 3)))
    with pytest.raises(da.ShapeError, match=r"linalg\.inv"):
        Inv(x.term)
    with pytest.raises(da.ShapeError, match=r"linalg\.solve"):
        Solve(da.constant(np.eye(3)).term, x.term)
    with pytest.raises(da.DtypeError, match=r"linalg\.solve"):
        Solve(da.constant(np.eye(2, dtype=np.float32)).term, x.term)
    with pytest.raises(da.DtypeError, match=r"exponent must be an integer"):
        dnp.linalg.matrix_power(np.eye(2), 1.5)  # type: ignore[arg-type]


def test_a_singular_matrix_raises_numpy_s_error_at_run_time() -> None:
    singular = np.ones((3, 3))
    with pytest.raises(np.linalg.LinAlgError):
        dnp.linalg.inv(singular)
    with pytest.raises(np.linalg.LinAlgError):
        da.jit(lambda a: dnp.linalg.solve(a, np.ones(3)))(singular)
    with pytest.raises(np.linalg.LinAlgError):
        da.jit(dnp.linalg.cholesky)(-np.eye(2))
    assert dnp.linalg.det(singular) == pytest.approx(0.0)


# -- every stage -------------------------------------------------------------------------


def test_every_complete_rule_table_answers_for_each_construct() -> None:
    """Every complete table of terms has a rule for each construct, but two it is never
    looked up in: ``transpose`` (the Deltas of these constructs are ``Contract``,
    ``Scale``, ``Add`` and ``Transpose`` nodes, never a ``Structural`` Delta) and the
    rule trace's names (asked only when a smart constructor rewrites a node; the one
    filed for ``Structural`` leaves these as they are)."""
    of_terms = [t for t in TABLES if any(issubclass(c, TermBase) for c in t)]
    for construct in (Solve, Inv, LogAbsDet, SignDet, Cholesky):
        missing = {t.stage for t in of_terms if t.complete and construct not in t}
        assert missing <= {"transpose", "simplification naming"}, (construct.__name__, missing)
        own = {t.stage for t in TABLES if t.get(construct) not in (None, t.get(Structural))}
        assert {"array meaning", "derivative", "build1", "build1 index", "index"} <= own


def gp_loss(a: Any, b: Any) -> Any:
    """A Gaussian-process-like objective: a solve, a log-determinant, a Cholesky factor."""
    k = a @ dnp.swapaxes(a, -1, -2) + 3.0 * np.eye(a.shape[-1])
    _, logdet = dnp.linalg.slogdet(k)
    fit = dnp.sum(b * dnp.linalg.solve(k, b))
    return fit + dnp.sum(logdet) + dnp.sum(dnp.linalg.cholesky(k)) + dnp.sum(dnp.linalg.inv(k))


def gp_loss_numpy(a: np.ndarray, b: np.ndarray) -> float:
    k = a @ np.swapaxes(a, -1, -2) + 3.0 * np.eye(a.shape[-1])
    _, logdet = np.linalg.slogdet(k)
    fit = np.sum(b * np.linalg.solve(k, b))
    return float(fit + np.sum(logdet) + np.sum(np.linalg.cholesky(k)) + np.sum(np.linalg.inv(k)))


def test_array_api_strict_values_and_gradients() -> None:
    a, b = normal((2, 3, 3), seed=4), normal((2, 3, 2), seed=5)
    strict = da.jit(gp_loss)(xps.asarray(a), xps.asarray(b))
    assert isinstance(strict, type(xps.asarray(a)))
    np.testing.assert_allclose(float(strict), gp_loss_numpy(a, b), rtol=1e-12)
    ga, gb = da.grad(gp_loss, argnums=(0, 1))(xps.asarray(a), xps.asarray(b))
    na, nb = da.grad(gp_loss, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.asarray(ga._array), na, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(gb._array), nb, rtol=1e-10)
    det = da.jit(dnp.linalg.det)(xps.asarray(spd((3, 3))))
    np.testing.assert_allclose(float(det), np.linalg.det(spd((3, 3))), rtol=1e-12)


@pytest.mark.parametrize("fuse", [True, False])
def test_fused_and_unfused_code_compute_the_interpreter_s_bits(fuse: bool) -> None:
    a, b = normal((2, 3, 3), seed=4), normal((2, 3, 2), seed=5)
    p = da.pipeline(gp_loss, a, b, fuse=fuse)
    value, grads = p(a, b)
    oracle = da.pipeline(gp_loss, a, b, fuse=not fuse)
    value2, grads2 = oracle(a, b)
    assert value == value2
    for g, g2 in zip(grads, grads2, strict=True):
        np.testing.assert_array_equal(g, g2)
    interpreted = da.grad(gp_loss, argnums=(0, 1), mode="interpret")(a, b)
    for g, gi in zip(grads, interpreted, strict=True):
        np.testing.assert_allclose(g, gi, rtol=1e-12, atol=1e-14)
    assert value == pytest.approx(gp_loss_numpy(a, b), rel=1e-12)
    for name in ("Solve", "Inv", "LogAbsDet", "Cholesky"):
        assert f"helpers.meanings['{name}'](xp, " in p.python
    assert "solve " in str(p.source) and "logabsdet " in str(p.source)
    for stage in p.stages:  # every stage prints
        assert str(getattr(p, stage))
    assert "cholesky" in p.source.graph().source


def test_the_bot_batches_a_solve_under_build1() -> None:
    a, b = well_conditioned((4, 3, 3)), normal((4, 3))

    def rows(a: Any, b: Any) -> Any:  # Fig. 9: build1 over solves is one batched solve
        return da.build1(4, lambda i: dnp.linalg.solve(a[i], b[i]))

    p = da.pipeline(lambda a, b: da.sum(dnp.sin(rows(a, b))), a, b)
    outputs = p.vectorised.outputs
    assert not any(isinstance(n, Build1) for n in walk(outputs))
    solves = [n for n in walk(outputs) if isinstance(n, Solve)]
    assert solves and solves[0].shape[0] == 4
    expected = np.stack([np.linalg.solve(a[i], b[i]) for i in range(4)])
    np.testing.assert_allclose(da.jit(rows)(a, b), expected, rtol=1e-12)
    g = p(a, b)[1]
    gi = da.grad(lambda a, b: da.sum(dnp.sin(rows(a, b))), argnums=(0, 1), mode="interpret")(a, b)
    for x, y in zip(g, gi, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-10)


def test_the_bot_indexes_into_a_solve() -> None:
    """A batch index pushes into the operands; an index into the matrix is a normal form
    (the solve vectorised and its diagonal gathered, or let-bound and indexed)."""
    a, b = well_conditioned((4, 3, 3)), normal((4, 3, 2))

    def batch_index(a: Any, b: Any) -> Any:
        return da.build1(4, lambda i: dnp.linalg.solve(a * 2.0, b)[i])

    def matrix_index(a: Any) -> Any:
        return da.build1(3, lambda i: dnp.linalg.inv(a[0] + i)[i])

    def outside(a: Any) -> Any:
        return dnp.linalg.inv(a)[1, 2] + dnp.linalg.slogdet(a)[1][3]

    cases: list[tuple[Callable[..., Any], tuple[np.ndarray, ...], np.ndarray]] = [
        (batch_index, (a, b), np.linalg.solve(a * 2.0, b)),
        (matrix_index, (a,), np.stack([np.linalg.inv(a[0] + i)[i] for i in range(3)])),
        (outside, (a,), np.linalg.inv(a)[1, 2] + np.linalg.slogdet(a)[1][3]),
    ]
    for f, args, expected in cases:
        np.testing.assert_allclose(da.jit(f)(*args), expected, rtol=1e-12)
        p = da.pipeline(lambda *xs, f=f: da.sum(f(*xs)), *args)
        assert da.is_bot_normal(p.vectorised)
        got = p(*args)[1]
        interpreted = da.grad(
            lambda *xs, f=f: da.sum(f(*xs)), argnums=tuple(range(len(args))), mode="interpret"
        )(*args)
        for x, y in zip(got, interpreted, strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
    shown = str(da.pipeline(lambda a: da.sum(outside(a)), a).vectorised)
    assert "logabsdet a[3]" in shown  # a batch index in range: pushed into the operand
    assert "let m = inv a in" in shown and "m[1, 2]" in shown  # into the matrix: let-bound


def test_vmap_equals_a_loop_and_per_example_gradients() -> None:
    a, b = well_conditioned((5, 3, 3)), normal((5, 3))

    def f(a: Any, b: Any) -> Any:
        return dnp.linalg.solve(a, b) * dnp.linalg.det(a) + dnp.linalg.cholesky(a @ a.T)[0]

    got = da.vmap(f)(a, b)
    for j in range(5):
        expected = np.linalg.solve(a[j], b[j]) * np.linalg.det(a[j])
        expected = expected + np.linalg.cholesky(a[j] @ a[j].T)[0]
        np.testing.assert_allclose(got[j], expected, rtol=1e-10)
    per_example = da.vmap(da.grad(lambda a, b: da.sum(f(a, b)), argnums=(0,)))(a, b)
    for j in range(5):
        (one,) = da.grad(lambda a, bj=b[j]: da.sum(f(a, bj)), argnums=(0,))(a[j])
        np.testing.assert_allclose(per_example[0][j], one, rtol=1e-10)


def test_check_grad_with_sympy() -> None:
    """``check_grad`` compares with SymPy (its ``Matrix``'s solve, inverse, determinant
    and Cholesky factor per matrix) and with finite differences."""
    a, b = well_conditioned((2, 2), seed=3), normal((2,), seed=6)
    s = spd((2, 2), seed=2)

    def f(a: Any, b: Any) -> Any:
        return (
            dnp.sum(dnp.linalg.solve(a, b))
            + dnp.linalg.det(a)
            + dnp.sum(dnp.linalg.inv(a))
            + dnp.linalg.slogdet(a)[1]
            + dnp.sum(dnp.linalg.cholesky(a @ a.T + s))
        )

    report = da.check_grad(f, a, b)
    assert report.passed, report
    sympy = next(c for c in report.checks if "SymPy" in c.name)
    assert not sympy.skipped and sympy.passed, report

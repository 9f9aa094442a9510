"""Every construct of the core language, traced and evaluated, against NumPy written by hand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.interp.evaluate import evaluate
from dualarr.lang.terms import (
    ArgMax,
    ArgMin,
    Build1,
    Cond,
    Const,
    Contract,
    DType,
    Floor,
    FromIntegral,
    FromList,
    Gather,
    IdSupply,
    Index,
    Iota,
    Let,
    Op,
    Replicate,
    Reshape,
    Scatter,
    SumOuter,
    Transpose,
    Var,
    fresh_var,
    postorder,
)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4))
V = RNG.normal(size=5)


def run(f: Callable[..., Any], *args: Any) -> Any:
    return da.trace(f, *args)(*args)


def kinds(f: Callable[..., Any], *args: Any) -> set[type]:
    """The node types of the traced program (to check which construct was used)."""
    return {type(n) for n in postorder(da.trace(f, *args).outputs)}


# -- elementwise ---------------------------------------------------------------------

UNARY: dict[str, Callable[[Any], Any]] = {
    "exp": np.exp,
    "log": lambda a: np.log(np.abs(a) + 0.5),
    "log1p": lambda a: np.log1p(np.abs(a)),
    "expm1": np.expm1,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": lambda a: np.arcsin(np.tanh(a)),
    "acos": lambda a: np.arccos(np.tanh(a)),
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "sqrt": lambda a: np.sqrt(np.abs(a)),
    "recip": lambda a: 1 / a,
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
    "abs": np.abs,
    "sign": np.sign,
    "negative": np.negative,
}

ARG_FIX: dict[str, Callable[[Any], Any]] = {
    "log": lambda a: da.abs(a) + 0.5,
    "log1p": lambda a: da.abs(a),
    "asin": da.tanh,
    "acos": da.tanh,
    "sqrt": da.abs,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name: str) -> None:
    fn = getattr(da, name)
    fix = ARG_FIX.get(name, lambda a: a)
    got = run(lambda x: fn(fix(x)), X)
    np.testing.assert_allclose(got, UNARY[name](X), rtol=1e-12)


BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "pow": (lambda a, b: da.abs(a) ** b, lambda a, b: np.abs(a) ** b),
    "maximum": (da.maximum, np.maximum),
    "minimum": (da.minimum, np.minimum),
    "atan2": (da.atan2, np.arctan2),
    "lt": (lambda a, b: a < b, np.less),
    "le": (lambda a, b: a <= b, np.less_equal),
    "gt": (lambda a, b: a > b, np.greater),
    "ge": (lambda a, b: a >= b, np.greater_equal),
    "eq": (lambda a, b: a == b, np.equal),
    "ne": (lambda a, b: a != b, np.not_equal),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name: str) -> None:
    ours, ref = BINARY[name]
    y = X.copy()
    y[0, 0] = X[0, 0]  # one tie for the comparisons
    y[1:] = RNG.normal(size=(2, 4))
    got = run(ours, X, y)
    np.testing.assert_allclose(got, ref(X, y), rtol=1e-12)


def test_logic_and_select() -> None:
    got = run(
        lambda x, y: da.where(da.logical_or(da.logical_and(x > 0, y > 0), ~(x < -1)), x, y),
        X,
        V[:4] * np.ones((3, 1)),
    )
    y = V[:4] * np.ones((3, 1))
    np.testing.assert_array_equal(got, np.where(((X > 0) & (y > 0)) | ~(X < -1), X, y))


def test_integer_arithmetic_is_total() -> None:
    a = np.array([7, -7, 7, -7, 5, 0])
    b = np.array([2, 2, -2, -2, 0, 0])
    quot, rem = run(lambda a, b: (a // b, a % b), a, b)
    np.testing.assert_array_equal(quot, [3, -4, -4, 3, 5, 0])  # Python floor semantics, a // 0 == a
    np.testing.assert_array_equal(rem, [1, 1, -1, -1, 5, 0])  # a % 0 == a
    m = run(lambda a, b: (da.imin(a, b), da.imax(a, b)), a, b)
    np.testing.assert_array_equal(m[0], np.minimum(a, b))
    np.testing.assert_array_equal(m[1], np.maximum(a, b))


def test_float_division_by_zero_follows_ieee_without_crashing() -> None:
    got = run(lambda x: x / 0.0, np.array([1.0, -1.0, 0.0]))
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])


def test_scalar_lifting_and_promotion() -> None:
    got = run(lambda x, i: (x * 2 + 1, x + i, i * 2, (x > 0) * 3.0), X, np.int64(3))
    np.testing.assert_allclose(got[0], X * 2 + 1)
    np.testing.assert_allclose(got[1], X + 3)
    assert got[2] == 6 and got[2].dtype == np.int64
    np.testing.assert_allclose(got[3], (X > 0) * 3.0)
    program = da.trace(lambda x: x * 2, X)
    assert Replicate in {type(n) for n in postorder(program.outputs)}


def test_float32_stays_float32() -> None:
    x32 = X.astype(np.float32)
    got = run(lambda x: da.sum(da.exp(x) * 2 + x[0, 1]), x32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.sum(np.exp(x32) * 2 + x32[0, 1]), rtol=1e-5)


def test_numpy_ufuncs_dispatch_to_dualarr() -> None:
    got = run(lambda x: np.sin(x) + np.float64(2.0) * x, X)
    np.testing.assert_allclose(got, np.sin(X) + 2 * X)


# -- cond, let ---------------------------------------------------------------------------


def test_cond_is_strict_selection_of_whole_arrays() -> None:
    f = lambda x: da.where(x[0, 0] > 0, x * 2, x / 0.0)  # noqa: E731
    assert Cond in kinds(f, X)
    for x in (X, -X):
        got = run(f, x)
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(got, x * 2 if x[0, 0] > 0 else x / 0.0)


def test_let_shares_and_scopes() -> None:
    f = lambda x: da.let(da.exp(x), lambda e: e * e + da.let(e[0], lambda r: r + r)[1])  # noqa: E731
    assert Let in kinds(f, X)
    e = np.exp(X)
    np.testing.assert_allclose(run(f, X), e * e + 2 * e[0, 1])


# -- build1, index -------------------------------------------------------------------------


def test_build1_build_and_map() -> None:
    got = run(lambda x: da.build1(4, lambda i: x[1, i] * da.to_float(i)), X)
    np.testing.assert_allclose(got, X[1] * np.arange(4))
    got = run(lambda x: da.build((4, 3), lambda i, j: x[j, i] + x[0, 0]), X)
    np.testing.assert_allclose(got, X.T + X[0, 0])
    got = run(lambda x: da.map(lambda row: da.sum(row * row), x), X)
    np.testing.assert_allclose(got, np.sum(X * X, axis=1))
    assert Build1 in kinds(lambda x: da.map(da.sum, x), X)


def test_nested_build_with_index_arithmetic() -> None:
    def f(v: da.Tensor) -> da.Tensor:
        return da.build((3, 4, 2), lambda i, j, k: v[(i * 2 + j) % 5 - k] + v[da.imin(i + j, 4)])

    expected = np.zeros((3, 4, 2))
    for i in range(3):
        for j in range(4):
            for k in range(2):
                p = (i * 2 + j) % 5 - k
                expected[i, j, k] = (V[p] if 0 <= p < 5 else 0.0) + V[min(i + j, 4)]
    np.testing.assert_allclose(run(f, V), expected)


def test_index_out_of_range_reads_zero_including_negative() -> None:
    got = run(lambda v: da.build1(8, lambda i: v[i - 2]), V)
    np.testing.assert_allclose(got, [0, 0, *V[:5], 0][:8])
    # the core index is total: negative indices are out of range (paper §5.2) ...
    assert run(lambda v: da.index(v, (-1,)), V) == 0.0
    np.testing.assert_allclose(run(lambda x: da.index(x, (7,)), X), np.zeros(4))  # partial
    # ... while a static Python index follows NumPy: it wraps, or is a trace-time error
    assert run(lambda v: v[-1], V) == V[-1]
    with pytest.raises(da.IndexOutOfRangeError, match="index 7 is out of bounds for axis 0"):
        run(lambda x: x[7], X)
    assert Index in kinds(lambda x: x[1], X)


def test_traced_integer_input_as_index() -> None:
    got = run(lambda x, i: x[i, i + 1], X, np.int64(1))
    assert got == X[1, 2]


# -- gather, scatter -------------------------------------------------------------------------


def test_gather_affine_and_out_of_range() -> None:
    got = run(lambda x: da.gather([2, 5], x, lambda i, j: (2 * i, j - 1)), X)
    expected = np.zeros((2, 5))
    for i in range(2):
        for j in range(5):
            if 0 <= 2 * i < 3 and 0 <= j - 1 < 4:
                expected[i, j] = X[2 * i, j - 1]
    np.testing.assert_allclose(got, expected)


def test_gather_prefix_index_keeps_the_tail() -> None:
    got = run(lambda x: da.gather([4], x, lambda i: (3 - i,)), X)
    expected = np.stack([X[3 - i] if 3 - i < 3 else np.zeros(4) for i in range(4)])
    np.testing.assert_allclose(got, expected)


def test_gather_with_data_dependent_index() -> None:
    idx = np.array([[2, 0], [9, -1]])
    got = run(lambda v, ix: da.gather([2, 2], v, lambda i, j: ix[i, j]), V, idx)
    np.testing.assert_allclose(got, [[V[2], V[0]], [0.0, 0.0]])
    got = run(lambda v, ix: v[ix], V, idx)  # NumPy-style integer-array indexing: -1 wraps
    np.testing.assert_allclose(got, [[V[2], V[0]], [0.0, V[-1]]])


def test_scatter_adds_collisions_and_drops_out_of_range() -> None:
    got = run(lambda x: da.scatter([3], x, lambda i, j: ((i + j) % 4,)), X)
    expected = np.zeros(3)
    for i in range(3):
        for j in range(4):
            t = (i + j) % 4
            if t < 3:
                expected[t] += X[i, j]
    np.testing.assert_allclose(got, expected)
    histogram = run(lambda ix: da.scatter([4], da.replicate(6, 1.0), lambda k: ix[k]),
                    np.array([0, 1, 1, 3, 3, 3]))
    np.testing.assert_allclose(histogram, [1, 2, 0, 3])


def test_scatter_over_leading_dims_keeps_the_tail() -> None:
    got = run(lambda x: da.scatter([2], x, lambda i: (i % 2,)), X)
    np.testing.assert_allclose(got, [X[0] + X[2], X[1]])
    assert Scatter in kinds(lambda x: da.scatter([2], x, lambda i: (i % 2,)), X)


# -- structural ----------------------------------------------------------------------------


def test_sum_outer_replicate_transpose_reshape() -> None:
    np.testing.assert_allclose(run(da.sum_outer, X), X.sum(axis=0))
    np.testing.assert_allclose(run(lambda x: da.replicate(2, x), X), np.stack([X, X]))
    y = RNG.normal(size=(2, 3, 4))
    np.testing.assert_allclose(run(lambda y: da.transpose(y, (2, 0, 1)), y), y.transpose(2, 0, 1))
    np.testing.assert_allclose(run(lambda y: da.reshape(y, (4, -1)), y), y.reshape(4, 6))
    np.testing.assert_allclose(run(lambda x: x.T, X), X.T)
    assert {SumOuter, Replicate, Transpose, Reshape} <= kinds(
        lambda y: da.sum_outer(da.replicate(2, da.reshape(da.transpose(y), (24,)))), y
    )


def test_from_list_stack_concatenate() -> None:
    np.testing.assert_allclose(run(lambda x: da.from_list([x[0], x[2] * 2]), X), [X[0], X[2] * 2])
    np.testing.assert_allclose(run(lambda x: da.stack([x, x + 1], axis=2), X),
                               np.stack([X, X + 1], axis=2))
    np.testing.assert_allclose(run(lambda x: da.concatenate([x, x[:1]]), X),
                               np.concatenate([X, X[:1]]))
    np.testing.assert_allclose(run(lambda x: da.concatenate([x, x * 2], axis=1), X),
                               np.concatenate([X, X * 2], axis=1))
    assert FromList in kinds(lambda x: da.from_list([x, x]), X)


def test_iota_casts_and_floor() -> None:
    got = run(lambda x: da.to_float(da.iota(4)) * x[0], X)
    np.testing.assert_allclose(got, np.arange(4) * X[0])
    got = run(lambda x: da.floor(x * 3), X)
    np.testing.assert_array_equal(got, np.floor(X * 3).astype(np.int64))
    assert got.dtype == np.int64
    assert {Iota, FromIntegral, Floor} <= kinds(
        lambda x: da.to_float(da.iota(2) + da.floor(x[0, 0])), X
    )


def test_floor_of_non_finite_values_is_total() -> None:
    got = run(lambda x: da.floor(x), np.array([np.nan, np.inf, -np.inf, 2.5]))
    assert got[0] == 0 and got[1] > 2**60 and got[2] < -(2**60) and got[3] == 2


def test_slices_follow_python() -> None:
    items: list[Any] = [np.s_[1:3], np.s_[:, 2], np.s_[::-1, 1:], np.s_[..., 0], np.s_[1, ::2]]
    for item in items:
        np.testing.assert_allclose(run(lambda x, item=item: x[item], X), X[item])


# -- reductions and derived operations -------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
def test_sum_and_mean(axis: Any) -> None:
    np.testing.assert_allclose(run(lambda x: da.sum(x, axis), X), np.sum(X, axis=axis))
    np.testing.assert_allclose(run(lambda x: da.mean(x, axis), X), np.mean(X, axis=axis))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_min_max_argmin_argmax(axis: Any) -> None:
    np.testing.assert_allclose(run(lambda x: da.min(x, axis), X), np.min(X, axis=axis))
    np.testing.assert_allclose(run(lambda x: da.max(x, axis), X), np.max(X, axis=axis))
    np.testing.assert_array_equal(run(lambda x: da.argmin(x, axis), X), np.argmin(X, axis=axis))
    np.testing.assert_array_equal(run(lambda x: da.argmax(x, axis), X), np.argmax(X, axis=axis))
    assert {ArgMin} <= kinds(lambda x: da.min(x, axis), X)
    assert {ArgMax} <= kinds(lambda x: da.max(x, axis), X)


def test_dot_matmul_softmax_logsumexp_relu() -> None:
    b = RNG.normal(size=(4, 2))
    np.testing.assert_allclose(run(da.matmul, X, b), X @ b)
    np.testing.assert_allclose(run(lambda x, b: x @ b, X, b), X @ b)
    np.testing.assert_allclose(run(da.dot, X[0], X[1]), X[0] @ X[1])
    np.testing.assert_allclose(run(da.dot, X, X[0]), X @ X[0])
    np.testing.assert_allclose(run(da.dot, X[:, 0], X), X[:, 0] @ X)
    e = np.exp(X - X.max(axis=1, keepdims=True))
    np.testing.assert_allclose(run(da.softmax, X), e / e.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(
        run(lambda x: da.logsumexp(x, 0), X), np.log(np.exp(X).sum(axis=0))
    )
    np.testing.assert_allclose(run(da.logsumexp, X), np.log(np.exp(X).sum()))
    np.testing.assert_allclose(run(da.relu, X), np.maximum(X, 0))


# -- the AST itself --------------------------------------------------------------------------


def test_every_node_knows_shape_and_dtype() -> None:
    s = IdSupply()
    x = fresh_var(s, "x", (3, 4), DType.FLOAT64)
    i = fresh_var(s, "i", (), DType.INT64)
    c = Const(np.asarray(2, dtype=np.int64))
    assert (Op("add", (x, x)).shape, Op("lt", (x, x)).dtype) == ((3, 4), DType.BOOL)
    assert Build1(5, i, Index(x, (i,))).shape == (5, 4)
    assert Gather((2, 2), x, (i, fresh_var(s, "j", (), DType.INT64)), (i,)).shape == (2, 2, 4)
    assert Scatter((7,), x, (i,), (c,)).shape == (7, 4)
    assert ArgMin(x).shape == (4,) and ArgMin(x).dtype is DType.INT64
    assert Iota(3).dtype is DType.INT64
    assert Let(fresh_var(s, "v", (3, 4), DType.FLOAT64), x, Const(np.zeros(2))).shape == (2,)
    assert evaluate(SumOuter(Iota(4))) == 6


def test_variables_carry_unique_ids_and_compare_by_identity() -> None:
    program = da.trace(lambda x: da.build1(2, lambda i: da.build1(2, lambda j: x[i, j])), X)
    variables = [n for n in postorder(program.outputs) if isinstance(n, Var)]
    ids = [v.id for v in variables]
    assert len(ids) == len(set(ids)) == 3
    v = variables[0]
    assert v != Var(v.id, v.hint, v.shape, v.dtype)  # identity: traces never mix variables


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), [2, 1]])
@pytest.mark.parametrize("mode", ["compiled", "interpret"])
def test_flip_is_numpy_flip_and_its_gradient_is_the_flipped_cotangent(axis: Any, mode: str) -> None:
    """``da.flip`` is gather sugar (one function in the language layer): it agrees with
    ``numpy.flip`` and its vjp flips the cotangent back, in both modes."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 3, 4))
    w = rng.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(da.trace(lambda a: da.flip(a, axis), x)(x), np.flip(x, axis))
    value, pullback = da.vjp(lambda a: da.flip(a, axis) * 2.0, x, mode=mode)
    np.testing.assert_allclose(value, 2.0 * np.flip(x, axis))
    (cotangent,) = pullback(w)
    np.testing.assert_allclose(cotangent, 2.0 * np.flip(w, axis))
    assert da.flip(da.constant(np.float64(3.0))).shape == ()


def test_flip_names_a_bad_axis() -> None:
    with pytest.raises(da.ShapeError, match=r"flip.*axis 3 is out of range"):
        da.trace(lambda a: da.flip(a, 3), np.zeros((2, 2)))


# -- one shape rule for a term and the Delta it begets (#37) -------------------------------


def _term_and_delta_pairs(shape: tuple[int, ...]) -> list[tuple[str, Callable[..., Any]]]:
    """Builders ``(kind, x) -> node`` of each construct with a Delta, applied to a term
    (``kind == "term"``, ``x`` a variable) or to a Delta (``x`` an ``Input``)."""
    from dualarr.ad import delta as dl
    from dualarr.interp.algebra import IndexFn

    s = IdSupply()
    zero = Const(np.asarray(0, dtype=np.int64))
    i, j = fresh_var(s, "i", (), DType.INT64), fresh_var(s, "j", (), DType.INT64)
    other = RNG.normal(size=(4, 2))
    rank = len(shape)
    return [
        ("index", lambda k, x: Index(x, (zero,) * 2) if k == "term" else dl.Index(x, (0,) * 2)),
        ("gather", lambda k, x: Gather((2,), x, (i,), (zero,) * 2) if k == "term"
         else dl.Gather((2,), x, IndexFn((np.zeros(2, np.int64),) * 2), (2,))),
        ("scatter", lambda k, x: Scatter((5,), x, (i, j), (zero,)) if k == "term"
         else dl.Scatter((5,), x, IndexFn((np.zeros(shape, np.int64),)), 2)),
        ("sumOuter", lambda k, x: (SumOuter if k == "term" else dl.SumOuter)(x)),
        ("replicate", lambda k, x: (Replicate if k == "term" else dl.Replicate)(rank - 1, x)),
        ("tr", lambda k, x: (Transpose if k == "term" else dl.Transpose)((1, 0), x)),
        ("reshape", lambda k, x: (Reshape if k == "term" else dl.Reshape)((3,), x)),
        ("fromList", lambda k, x: FromList((x, x if rank else Replicate(1, x))) if k == "term"
         else dl.FromList((x, x if rank else dl.Replicate(1, x)))),
        ("contract", lambda k, x: Contract("ij,jk->ik", x, Const(other)) if k == "term"
         else dl.Contract("ij,jk->ik", x, other)),
    ]  # fmt: skip


@pytest.mark.parametrize("shape", [(), (3,), (3, 4)])
def test_a_delta_has_the_shape_and_the_named_error_of_its_term(shape: tuple[int, ...]) -> None:
    """Each Delta of Fig. 16 takes its shape from the shape rule of the term it comes from
    (``dualarr.lang.terms``): the same shape, or the same :class:`da.ShapeError`."""
    from dualarr.ad import delta as dl

    term_x = fresh_var(IdSupply(), "x", shape, DType.FLOAT64)
    delta_x = dl.Input(0, shape, DType.FLOAT64)
    for kind, build in _term_and_delta_pairs(shape):
        results = []
        for node_kind, x in (("term", term_x), ("delta", delta_x)):
            try:
                results.append(build(node_kind, x).shape)
            except da.ShapeError as error:
                results.append((error.op, error.detail, error.shapes))
        assert results[0] == results[1], kind

"""Every error class: raised at trace time, naming the operation, the shapes and the user's line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dualarr as da

X = np.ones((3, 4))
V = np.ones(5)
THIS_FILE = __file__


def error_of(f: Callable[..., Any], *args: Any) -> da.DualarrError:
    with pytest.raises(da.DualarrError) as info:
        da.trace(f, *args)
    return info.value


def test_hierarchy() -> None:
    for cls in (da.ShapeError, da.TracingError, da.UnsupportedError, da.DtypeError):
        assert issubclass(cls, da.DualarrError)


def test_shape_error_names_op_both_shapes_and_user_line() -> None:
    def f(x: da.Tensor, v: da.Tensor) -> da.Tensor:
        return x + v  # the offending line

    err = error_of(f, X, V)
    assert isinstance(err, da.ShapeError)
    assert err.op == "add"
    assert err.shapes == ((3, 4), (5,))
    text = str(err)
    assert "add" in text and "[3,4]" in text and "[5]" in text
    assert f"{THIS_FILE}:" in text and "x + v  # the offending line" in text


@pytest.mark.parametrize(
    ("f", "op", "fragments"),
    [
        (lambda x: da.matmul(x, x), "matmul", ["[3,4]", "[3,4]"]),
        (lambda x: da.reshape(x, (5, 2)), "reshape", ["[3,4]", "[5,2]"]),
        (lambda x: da.transpose(x, (0, 0)), "tr", ["[0, 0]", "[3,4]"]),
        (lambda x: x[0, 0, 0], "index", ["3", "[3,4]"]),
        (lambda x: da.from_list([x, x[0]]), "fromList", ["[3,4]", "[4]"]),
        (lambda x: da.where(x[0, 0] > 0, x, x[:, :2]), "where", ["[3,4]", "[3,2]"]),
        (lambda x: da.concatenate([x, x.T]), "concatenate", ["[3,4]", "[4,3]"]),
        (lambda x: da.gather([2], x, lambda i: (i, i, i)), "gather", ["[3,4]"]),
        (lambda x: da.scatter([2, 2], x, lambda i, j: (i,)), "scatter", ["[2,2]", "[3,4]"]),
        (lambda x: da.sum(x, axis=2), "sum", ["axis 2", "rank 2"]),
        (lambda x: da.min(x[:0]), "min", ["[0,4]"]),
    ],
)
def test_shape_errors(f: Callable[..., Any], op: str, fragments: list[str]) -> None:
    err = error_of(f, X)
    assert isinstance(err, da.ShapeError)
    assert err.op == op
    for fragment in fragments:
        assert fragment in str(err)
    assert THIS_FILE in str(err)  # the lambda's line in this file


@pytest.mark.parametrize(
    ("f", "op", "fragment"),
    [
        (lambda x: x[x[0, 0]], "index", "float64[]"),  # a float used as an index
        (lambda x: da.where(x, x, x), "where", "float64[3,4]"),
        (lambda x: da.logical_and(x, x), "and", "bool"),
        (lambda x: x + "text", "add", "str"),
    ],
)
def test_dtype_errors(f: Callable[..., Any], op: str, fragment: str) -> None:
    with pytest.raises(da.DualarrError) as info:
        da.trace(f, X)
    assert info.value.op == op
    assert fragment in str(info.value)


def test_mixing_float32_and_float64_promotes_to_float64_as_numpy() -> None:
    x32 = X.astype(np.float32)
    program = da.trace(lambda a, b: a * b, x32, X)
    assert "toFloat64 a" in str(program)  # the conversion is a term of the program
    np.testing.assert_allclose(program(x32, X), x32 * X)
    assert program(x32, X).dtype == np.float64
    for mode in ("compiled", "interpret"):
        g32, g64 = da.grad(lambda a, b: da.sum(a * b), argnums=(0, 1), mode=mode)(x32, X)
        assert g32.dtype == np.float32 and g64.dtype == np.float64  # each input's own type
        np.testing.assert_allclose(g32, X.astype(np.float32), rtol=1e-6)
        np.testing.assert_allclose(g64, x32, rtol=1e-12)


@pytest.mark.parametrize(
    ("f", "what"),
    [
        (lambda x: x if x[0, 0] > 0 else -x, "bool()"),
        (lambda x: x[0, 0] > 0 and x, "bool()"),
        (lambda x: len(x[0, 0]), "len()"),
        (lambda x: int(x[0, 0]), "int()"),
        (lambda x: float(x[0, 0]), "float()"),
        (lambda x: np.asarray(x), "conversion to a NumPy array"),
        (lambda x: da.build1(x[0, 0], lambda i: i), "build1"),
        (lambda x: range(x[0, 0]), "__index__"),
    ],
)
def test_tracing_errors(f: Callable[..., Any], what: str) -> None:
    err = error_of(f, X)
    assert isinstance(err, da.TracingError)
    assert what in str(err)
    assert THIS_FILE in str(err)


def test_if_on_traced_value_points_to_where() -> None:
    err = error_of(lambda x: x if x[0, 0] > 0 else -x, X)
    assert "da.where" in str(err) and err.op == "bool()"


def test_len_of_an_array_is_its_static_outer_extent() -> None:
    assert da.trace(lambda x: x[len(x) - 1], X)(X).shape == (4,)


def test_escaped_tracer_is_reported() -> None:
    leaked: list[da.Tensor] = []

    def keep(values: list[da.Tensor], t: da.Tensor) -> da.Tensor:
        values.append(t)
        return t

    da.trace(lambda x: keep(leaked, x), X)
    err = error_of(lambda y: y + leaked[0], X)
    assert isinstance(err, da.TracingError) and "after the trace that made it ended" in str(err)
    with pytest.raises(da.TracingError, match="after the trace that made it ended"):
        leaked[0] * 2.0  # outside any trace too (it used to return a Tensor)
    inner: list[da.Tensor] = []
    err = error_of(
        lambda x: da.sum(da.build1(2, lambda i: x[keep(inner, i)])) + da.sum(x[inner[0]]), X
    )
    assert isinstance(err, da.TracingError)


def test_constructs_outside_a_trace_explain_themselves() -> None:
    with pytest.raises(da.TracingError, match=r"inside a function passed to da\.trace"):
        da.build1(3, lambda i: i)


def test_returning_none_is_reported() -> None:
    err = error_of(lambda x: None, X)
    assert isinstance(err, da.TracingError) and "returned None" in str(err)


@pytest.mark.parametrize(
    ("f", "op"),
    [
        (lambda x: np.linalg.multi_dot([x, x.T]), "numpy.linalg.multi_dot"),
        (lambda x: np.unique(x), "numpy.unique"),  # a data-dependent shape
        (lambda x: np.add.reduce(x), "numpy.add"),
        (lambda x: x[True], "index"),  # a scalar bool index
        (lambda x: x[x > 0], "index"),  # a traced mask: a data-dependent shape
        (lambda x: da.matmul(da.replicate(2, x), x), "matmul"),
    ],
)
def test_unsupported(f: Callable[..., Any], op: str) -> None:
    with pytest.raises((da.UnsupportedError, da.TracingError)) as info:
        da.trace(f, X)
    assert op in (info.value.op or "")


def test_unsupported_input_types() -> None:
    with pytest.raises(da.UnsupportedError, match="complex128"):
        da.trace(lambda z: z, np.ones(2, dtype=complex))
    with pytest.raises(da.UnsupportedError, match="str"):
        da.trace(lambda z: z, "text")


def test_program_checks_call_arguments() -> None:
    program = da.trace(lambda x: x * 2, X)
    with pytest.raises(da.ShapeError, match=r"input x was traced as float64\[3,4\]"):
        program(np.ones((4, 3)))
    with pytest.raises(da.DtypeError, match="int64"):
        program(np.ones((3, 4), dtype=np.int64))
    with pytest.raises(da.TracingError, match="takes 1 arguments"):
        program(X, X)


W = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize(
    "f",
    [lambda x: W @ x, lambda x: x @ W.T, lambda x: np.matmul(W, x), lambda x: np.dot(W, x)],
    ids=["W @ x", "x @ W.T", "np.matmul", "np.dot"],
)
def test_matmul_with_a_numpy_operand_traces(f: Callable[..., Any]) -> None:
    x = np.arange(4.0)
    program = da.trace(lambda x: da.sum(f(x)), x)
    assert float(program(x)) == float(np.sum(W @ x))
    np.testing.assert_allclose(da.grad(lambda x: da.sum(f(x)))(x), W.sum(axis=0))


W3 = np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4)


@pytest.mark.parametrize(
    ("f", "shape"),
    [(lambda t: t @ W3, (5, 3)), (lambda t: W3 @ t, (4, 5)), (lambda t: t @ t, (2, 3, 3))],
    ids=["t @ W3", "W3 @ t", "batched t @ t"],
)
def test_a_batched_product_follows_numpy_matmul(
    f: Callable[..., Any], shape: tuple[int, ...]
) -> None:
    """``@`` with an operand of rank 3 or more broadcasts its batch dimensions as
    ``numpy.matmul`` does, in either operand order; its gradient agrees with central
    differences."""
    x = np.linspace(0.1, 0.9, int(np.prod(shape))).reshape(shape)

    def loss(t: Any) -> Any:
        return da.sum(da.sin(f(t)))

    np.testing.assert_allclose(float(da.trace(loss, x)(x)), float(np.sum(np.sin(f(x)))))
    eps = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        fd[i] = (np.sum(np.sin(f(x + e))) - np.sum(np.sin(f(x - e)))) / (2 * eps)
    np.testing.assert_allclose(da.grad(loss)(x), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    ("f", "error"),
    [
        (lambda x: W.dot(x), da.TracingError),  # ndarray.dot converts its argument
        (lambda x: np.matmul(W, x, dtype=np.float64), da.UnsupportedError),
        (lambda x: np.linalg.multi_dot([W, x]), da.UnsupportedError),
    ],
    ids=["W.dot(x)", "np.matmul with dtype", "multi_dot"],
)
def test_a_product_that_fails_on_a_traced_value_suggests_matmul(
    f: Callable[..., Any], error: type[da.DualarrError]
) -> None:
    err = error_of(lambda x: da.sum(f(x)), np.arange(4.0))
    assert isinstance(err, error)
    assert "da.matmul(" in str(err) and "@" in str(err)

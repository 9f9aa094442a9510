"""``dualarr.numpy`` functions take sequences of traced values wherever NumPy takes an
array-like (issue 33, item 8): ``dnp.mean([x, x + 2])`` is ``dnp.mean`` of
``dnp.asarray([x, x + 2])``, lists and tuples, nested, mixed with Python numbers and
NumPy arrays, with NumPy's promotion and shape rules; a ragged one is a named
``ShapeError``.  Values match NumPy on the same data, gradients (both modes) match
central differences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dualarr as da
import dualarr.numpy as dnp

F64 = npt.NDArray[np.float64]
MODES = ("compiled", "interpret")
X = np.array([0.3, 1.2, -0.7])
W2 = np.array([[1.0, 2.0], [3.0, 4.0]])

CASES: dict[str, Callable[[Any], Any]] = {
    "mean": lambda x: dnp.mean([x, x + 2]),
    "mean-axis": lambda x: dnp.sum(dnp.mean([x, x * 2], axis=0) * x),
    "std-tuple": lambda x: dnp.std((x, x * x)),
    "var-nested": lambda x: dnp.var([[x[0], 1.0], [2.0, x[1]]]),
    "sum-with-array": lambda x: dnp.sum([[x[0], x[1]], np.array([1.0, 2.0])]),
    "prod": lambda x: dnp.prod([x[0], x[1], 3.0]),
    "max": lambda x: dnp.max([x, -x]),
    "amax": lambda x: dnp.amax([x, x - 1.0]),
    "min": lambda x: dnp.min([x, -x]),
    "average": lambda x: dnp.sum(dnp.average([x, x * x], weights=[1.0, 3.0], axis=0)),
    "median": lambda x: dnp.median([x[0], x[1], x[2]]),
    "ptp": lambda x: dnp.ptp([x[0], x[1], x[2]]),
    "cumsum": lambda x: dnp.sum(dnp.cumsum([x[0], x[1]]) * [1.0, 2.0]),
    "add": lambda x: dnp.sum(dnp.add([x[0], x[1]], 1.0) ** 2),
    "exp": lambda x: dnp.sum(dnp.exp([x[0], 2 * x[1]])),
    "maximum": lambda x: dnp.sum(dnp.maximum([x[0], x[1]], [x[2], 0.0])),
    "where": lambda x: dnp.sum(dnp.where([True, False], [x[0], x[1]], [x[2], 1.0])),
    "logaddexp": lambda x: dnp.sum(dnp.logaddexp([x[0], x[1]], 0.5)),
    "clip": lambda x: dnp.sum(dnp.clip([x[0], x[1]], 0.0, 1.0)),
    "dot": lambda x: dnp.dot([x[0], x[1]], [x[1], x[2]]),
    "matmul": lambda x: dnp.sum(dnp.matmul([[x[0], 1.0], [0.0, x[1]]], x[:2])),
    "einsum": lambda x: dnp.einsum("i,i->", [x[0], x[1]], (x[1], x[2])),
    "outer": lambda x: dnp.sum(dnp.outer([x[0], x[1]], x) ** 2),
    "cross": lambda x: dnp.sum(dnp.cross([x[0], x[1], x[2]], [1.0, 2.0, 3.0]) * [3.0, 1.0, 2.0]),
    "trace": lambda x: dnp.trace([[x[0], 1.0], [2.0, x[1]]]),
    "stack-nested": lambda x: dnp.sum(dnp.stack([[x[0], x[1]], [x[2], 1.0]]) ** 2),
    "concatenate-nested": lambda x: dnp.sum(dnp.concatenate([[x[0], x[1]], x]) ** 2),
    "reshape": lambda x: dnp.sum(dnp.reshape([x[0], x[1], x[2], 1.0], (2, 2)) * W2),
    "transpose": lambda x: dnp.sum(dnp.transpose([[x[0], x[1]], [x[2], 1.0]]) * W2),
    "sort": lambda x: dnp.sum(dnp.sort([x[0], x[1], x[2]]) * [1.0, 2.0, 3.0]),
    "take": lambda x: dnp.sum(dnp.take([x[0], x[1], x[2]], [2, -3]) * [1.0, 5.0]),
    "diff": lambda x: dnp.sum(dnp.diff([x[0], x[1], x[2]]) ** 2),
    "roll": lambda x: dnp.sum(dnp.roll([x[0], x[1], 1.0], 1) * [1.0, 2.0, 3.0]),
    "pad": lambda x: dnp.sum(dnp.pad([x[0], x[1]], 1) ** 2),
    "tile": lambda x: dnp.sum(dnp.tile((x[0], x[1]), 2) * [1.0, 2.0, 3.0, 4.0]),
    "diag": lambda x: dnp.sum(dnp.diag([x[0], x[1]]) ** 2),
    "flip": lambda x: dnp.sum(dnp.flip([x[0], x[1]]) * [1.0, 2.0]),
}


def central_differences(f: Callable[[F64], Any], x: F64, eps: float = 1e-6) -> F64:
    return np.array(
        [(float(f(x + eps * e)) - float(f(x - eps * e))) / (2 * eps) for e in np.eye(len(x))]
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_a_sequence_of_traced_values_is_an_array_like(name: str, mode: str) -> None:
    f = CASES[name]
    value, grad = da.value_and_grad(f)(X)
    np.testing.assert_allclose(value, f(X), rtol=1e-12, atol=1e-14)  # eager: NumPy on the same list
    np.testing.assert_allclose(da.grad(f, mode=mode)(X), central_differences(f, X), atol=1e-6)
    np.testing.assert_allclose(grad, da.grad(f, mode=mode)(X), rtol=1e-12)


@st.composite
def mixed_sequences(draw: st.DrawFn) -> tuple[list[Any], str, int | None]:
    """A rectangular nested list (rank 1 or 2) whose entries are ``("x", k, c)`` (the
    traced ``c * x[k]``), Python floats or NumPy float64 scalars; a reduction; an axis."""
    rank = draw(st.integers(1, 2))
    shape = [draw(st.integers(1, 3)) for _ in range(rank)]
    entry = st.one_of(
        st.tuples(st.just("x"), st.integers(0, 2), st.floats(-2, 2)),
        st.floats(-2, 2),
        st.floats(-2, 2).map(np.float64),
    )

    def level(dims: list[int]) -> list[Any]:
        if len(dims) == 1:
            return [draw(entry) for _ in range(dims[0])]
        return [level(dims[1:]) for _ in range(dims[0])]

    nested = level(shape)
    reduction = draw(st.sampled_from(["sum", "mean", "var", "std", "prod", "max", "min"]))
    axis = draw(st.sampled_from([None, *range(rank)]))
    return nested, reduction, axis


def _fill(nested: Any, x: Any) -> Any:
    """The sequence with each ``("x", k, c)`` entry replaced by ``c * x[k]``, as a list
    (a tuple at rank 2's inner level, to mix both)."""
    if isinstance(nested, tuple) and nested and nested[0] == "x":
        return nested[2] * x[nested[1]]
    if isinstance(nested, list):
        items = [_fill(v, x) for v in nested]
        return tuple(items) if items and isinstance(nested[0], tuple | float) else items
    return nested


@given(mixed_sequences())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_reductions_of_mixed_sequences_match_numpy(case: tuple[list[Any], str, int | None]) -> None:
    nested, reduction, axis = case

    def f(x: Any) -> Any:
        return dnp.sum(getattr(dnp, reduction)(_fill(nested, x), axis=axis))

    x = np.array([0.7, -1.3, 2.1])
    np.testing.assert_allclose(da.trace(f, x)(x), f(x), rtol=1e-12, atol=1e-12)
    if reduction in ("max", "min", "std"):
        return  # ties and sqrt at 0 make central differences no oracle for random data
    for mode in MODES:
        np.testing.assert_allclose(
            da.grad(f, mode=mode)(x), central_differences(f, x), rtol=1e-6, atol=1e-6
        )


@pytest.mark.parametrize(
    ("f", "dtype"),
    [
        (lambda x: dnp.sum([x, x * 2]), np.float32),  # float32 parts stay float32
        (lambda x: dnp.mean((x, x)), np.float32),
        (lambda x: dnp.sum([x[0], 1.0]), np.float64),  # a list's Python float is float64
        (lambda x: dnp.sum([x, np.array([1, 2])]), np.float64),  # float32 with int64
        (lambda x: dnp.sum([x, [1, 2]]), np.float64),
    ],
)
def test_a_sequence_promotes_as_numpy_array_construction(f: Any, dtype: Any) -> None:
    x32 = np.array([0.5, 1.5], dtype=np.float32)
    assert np.asarray(f(x32)).dtype == dtype  # NumPy's own answer
    assert da.trace(f, x32)(x32).dtype == dtype


@pytest.mark.parametrize(
    "f",
    [
        lambda x: dnp.mean([x, x[:1]]),
        lambda x: dnp.sum([x[0], [x[1], 1.0]]),
        lambda x: dnp.exp([[x[0]], [x[1], x[0]]]),
    ],
)
def test_a_ragged_sequence_is_a_named_shape_error(f: Any) -> None:
    x = np.array([0.5, 1.5])
    with pytest.raises(da.ShapeError, match=r"numpy\.(mean|sum|exp): .*ragged"):
        da.grad(lambda v: dnp.sum(f(v)))(x)


def test_the_core_language_still_asks_for_a_stack() -> None:
    """Outside ``dualarr.numpy`` (the core's own operators) a list of traced values
    stays an error that points to ``da.stack``; ``dnp`` accepts the same list."""
    x = np.array([0.5, 1.5])
    with pytest.raises(da.TracingError, match=r"da\.stack"):
        da.trace(lambda v: v + [v[0], 1.0], x)  # noqa: RUF005 (an array plus a list)
    np.testing.assert_allclose(da.trace(lambda v: dnp.add(v, [v[0], 1.0]), x)(x), [1.0, 2.5])

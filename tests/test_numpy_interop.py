"""NumPy's own functions and ufuncs on traced values route to ``dualarr.numpy``; those
without a lowering raise an ``UnsupportedError`` naming them and the nearest spelling."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dualarr as da
import dualarr.numpy as dnp


def test_a_numpy_ufunc_on_a_traced_value_is_the_primitive() -> None:
    program = da.trace(lambda x: np.exp(x) + np.sin(x), np.ones(3))
    assert str(program) == r"\x. exp x + sin x"


def test_numpy_functions_on_traced_values_dispatch_to_dualarr_numpy() -> None:
    calls: list[str] = []
    original = dnp.sum

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append("sum")
        return original(*args, **kwargs)

    from dualarr.lang import tensor

    saved = tensor._NUMPY_FUNCTIONS.get("sum")
    tensor._NUMPY_FUNCTIONS["sum"] = spy
    try:
        x = np.linspace(0.0, 1.0, 4)
        assert da.grad(lambda x: np.sum(x * x))(x) == pytest.approx(2 * x)
    finally:
        if saved is None:
            del tensor._NUMPY_FUNCTIONS["sum"]
        else:
            tensor._NUMPY_FUNCTIONS["sum"] = saved
    assert calls == ["sum"]


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda x: np.linalg.eigvals(x), "numpy.linalg.eigvals"),
        (lambda x: np.add.reduce(x), "numpy.add.reduce"),
        (lambda x: np.exp(x, casting="unsafe"), "numpy.exp"),
    ],
    ids=["linalg.eigvals", "ufunc method", "ufunc keyword"],
)
def test_a_numpy_function_without_a_lowering_is_named(call: Any, named: str) -> None:
    with pytest.raises(da.UnsupportedError, match=f"^{named}: this NumPy function") as error:
        da.trace(call, np.ones(3))
    assert "test_numpy_interop.py" in str(error.value)  # the user's line


def test_the_issues_examples_route_to_dualarr_numpy() -> None:
    w = np.arange(6.0).reshape(2, 3)
    x = np.linspace(0.5, 1.5, 3)
    c = np.array([True, False, True])

    def f(x: Any) -> Any:
        stacked = np.stack([np.square(x), np.where(c, x, -x)])  # (2, 3)
        return np.sum(w @ x) + np.sum(stacked)  # a NumPy matrix on the left of @

    program = da.trace(f, x)
    assert [call.name for call in program.numpy_calls] == [
        "square", "where", "stack", "matmul", "sum", "sum"
    ]
    expected = np.sum(w @ x) + np.sum(np.stack([x**2, np.where(c, x, -x)]))
    assert program(x) == pytest.approx(expected)
    gradient = w.sum(axis=0) + 2 * x + np.where(c, 1.0, -1.0)
    for mode in ("compiled", "interpret"):
        np.testing.assert_allclose(da.grad(f, mode=mode)(x), gradient, rtol=1e-12)

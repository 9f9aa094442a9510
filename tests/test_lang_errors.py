"""Mistakes in the language's constructs raise dualarr errors at trace time.

Each case is a zero-argument call written on one line: the error must be a
:class:`da.DualarrError` of the expected class, name the construct (``op``) and point to
that line of this file.  Also: float ``//`` and ``%`` (NumPy's ``floor_divide`` and
``remainder``, with their derivatives) and reductions over tuples of axes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dualarr as da
from dualarr.lang.errors import UnsupportedDtypeError

THIS_FILE = __file__
X = np.arange(12.0).reshape(3, 4)
V = np.ones(5)
T = da.trace
RAGGED = [[1.0, 2.0], [3.0]]

Case = tuple[Callable[[], Any], type[da.DualarrError], str, Sequence[str]]


def total(x: da.Tensor) -> da.Tensor:
    return da.sum(x)


def both(x: da.Tensor, y: da.Tensor) -> da.Tensor:
    return da.sum(x) + da.sum(y)


def check(
    run: Callable[[], Any], cls: type[da.DualarrError], op: str, fragments: Sequence[str]
) -> da.DualarrError:
    """``run()`` raises ``cls`` naming ``op`` and ``fragments``, located at ``run``'s line."""
    with pytest.raises(cls) as info:
        run()
    err = info.value
    assert err.op == op
    text = str(err)
    assert text.startswith(f"{op}: ")
    for fragment in fragments:
        assert fragment in text
    assert err.location is not None
    assert f"{THIS_FILE}:{run.__code__.co_firstlineno}:" in err.location
    return err


# -------------------------------------------------------------------------- 1. arity

ARITY: list[Any] = [
    pytest.param(
        lambda: T(lambda x: da.build1(3, lambda i, j: x[i, j]), X),  # type: ignore[misc, arg-type]
        da.ShapeError, "build1", ["1 index variable", "lambda (i, j)"], id="build1",
    ),
    pytest.param(
        lambda: T(lambda x: da.build1(3, 5), X),  # type: ignore[arg-type]
        da.TracingError, "build1", ["got int"], id="build1-not-callable",
    ),
    pytest.param(
        lambda: T(lambda x: da.build((3, 4), lambda i: x[i]), X),
        da.ShapeError, "build", ["2 index variables", "[3,4]", "lambda (i)"], id="build-too-few",
    ),
    pytest.param(
        lambda: T(lambda x: da.build((3,), lambda i, j: x[i, j]), X),
        da.ShapeError, "build", ["1 index variable", "[3]"], id="build-too-many",
    ),
    pytest.param(
        lambda: T(lambda x: da.gather((2,), x, lambda i, j: (i,)), X),
        da.ShapeError, "gather", ["1 index variable", "[2]", "lambda (i, j)"], id="gather",
    ),
    pytest.param(
        lambda: T(lambda v: da.scatter((3,), v, lambda i, *, k: (i,)), V),
        da.ShapeError, "scatter", ["1 index variable", "[5]"], id="scatter-keyword-only",
    ),
    pytest.param(
        lambda: T(lambda v: da.scatter((2,), v, lambda: (0,)), V),
        da.ShapeError, "scatter", ["takes 0 variables", "[5]", "1 to 1"], id="scatter-none",
    ),
    pytest.param(
        lambda: T(lambda x: da.let(x, lambda: 1.0), X),  # type: ignore[misc, arg-type]
        da.TracingError, "let", ["1 argument", "lambda ()"], id="let-none",
    ),
    pytest.param(
        lambda: T(lambda x: da.let(x, lambda v, w: v), X),  # type: ignore[misc, arg-type]
        da.TracingError, "let", ["1 argument", "lambda (v, w)"], id="let-two",
    ),
    pytest.param(
        lambda: T(lambda x: da.map(lambda r, s: r, x), X),  # type: ignore[misc, arg-type]
        da.TracingError, "map", ["1 argument", "lambda (r, s)"], id="map",
    ),
]


def test_functions_with_defaults_or_star_args_are_accepted() -> None:
    program = T(lambda x: da.build((3, 4), lambda *ix: x[ix] * 2.0), X)
    np.testing.assert_array_equal(program(X), 2 * X)

    def scaled_column(x: da.Tensor) -> da.Tensor:
        def element(i: da.Tensor, scale: float = 3.0) -> da.Tensor:
            return x[i, 0] * scale

        return da.build1(3, element)

    program = T(scaled_column, X)
    np.testing.assert_array_equal(program(X), 3 * X[:, 0])
    program = T(lambda x: da.scatter((2,), x[1, 1], lambda: (1,)), X)  # a rank-0 source
    np.testing.assert_array_equal(program(X), [0.0, X[1, 1]])


# -------------------------------------------------------------------------- 2. shapes and axes

SHAPES_AND_AXES: list[Any] = [
    pytest.param(
        lambda: T(lambda x: da.reshape(x, None), X),  # type: ignore[arg-type]
        da.ShapeError, "reshape", ["an int or a sequence of ints", "None"], id="reshape-None",
    ),
    pytest.param(
        lambda: T(lambda x: da.reshape(x, (2.0, 6.0)), X),  # type: ignore[arg-type]
        da.ShapeError, "reshape", ["dimension 0", "2.0"], id="reshape-floats",
    ),
    pytest.param(
        lambda: T(lambda x: da.reshape(x, (3, -2)), X),
        da.ShapeError, "reshape", ["dimension 1", "-2"], id="reshape-negative",
    ),
    pytest.param(
        lambda: T(lambda x: da.sum(x, axis=1.0), X),  # type: ignore[arg-type]
        da.ShapeError, "sum", ["axis must be an int", "1.0"], id="sum-float-axis",
    ),
    pytest.param(
        lambda: T(lambda x: da.max(x, axis=(0, 0)), X),
        da.ShapeError, "max", ["axis 0 is repeated", "(0, 0)"], id="max-repeated",
    ),
    pytest.param(
        lambda: T(lambda x: da.min(x, axis=(0, -2)), X),
        da.ShapeError, "min", ["repeated"], id="min-repeated-negative",
    ),
    pytest.param(
        lambda: T(lambda x: da.min(x, axis=(0, 2)), X),
        da.ShapeError, "min", ["axis 2", "rank 2"], id="min-out-of-range",
    ),
    pytest.param(
        lambda: T(lambda x: da.mean(x, axis=(-3,)), X),
        da.ShapeError, "mean", ["axis -3", "rank 2"], id="mean-out-of-range",
    ),
    pytest.param(
        lambda: T(lambda x: x.max(axis="rows"), X),
        da.ShapeError, "numpy.max", ["'rows'"], id="max-str-axis",
    ),
    pytest.param(
        lambda: T(lambda x: da.argmax(x, axis=(0, 1)), X),  # type: ignore[arg-type]
        da.ShapeError, "argmax", ["axis must be an int", "(0, 1)"], id="argmax-tuple",
    ),
    pytest.param(
        lambda: T(lambda x: da.sum(x, axis=da.floor(x[0, 0])), X),  # type: ignore[arg-type]
        da.TracingError, "sum", ["static Python int"], id="sum-traced-axis",
    ),
]


CUBE = np.random.default_rng(0).permutation(24).reshape(2, 3, 4).astype(np.float64)
REDUCTIONS: dict[str, tuple[Callable[..., da.Tensor], Callable[..., Any]]] = {
    "max": (da.max, np.max),
    "min": (da.min, np.min),
    "sum": (da.sum, np.sum),
    "mean": (da.mean, np.mean),
}
AXES = [None, 1, -1, (), (0, 1), (2, 0), (0, -1), (-1, -3), (0, 1, 2), [1, 2]]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_over_axes_match_numpy(name: str, axis: Any, keepdims: bool) -> None:
    ours, numpys = REDUCTIONS[name]
    program = T(lambda x: ours(x, axis=axis, keepdims=keepdims), CUBE)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = numpys(CUBE, axis=np_axis, keepdims=keepdims)
    result = program(CUBE)
    assert result.shape == expected.shape
    np.testing.assert_allclose(result, expected)


@pytest.mark.parametrize("axis", [(0, 2), (-1, 1), (0, 1, 2)])
def test_gradient_of_max_over_axes_goes_to_the_argmax(axis: tuple[int, ...]) -> None:
    gradient = da.grad(lambda x: da.sum(da.max(x, axis=axis)))(CUBE)
    is_max = np.equal(CUBE, np.max(CUBE, axis=axis, keepdims=True))
    np.testing.assert_array_equal(gradient, is_max.astype(np.float64))


# -------------------------------------------------------------------------- 3. odd inputs

INPUTS: list[Any] = [
    pytest.param(
        lambda: T(total, RAGGED),
        da.ShapeError, "trace", ["argument 0", "ragged", "dimension 1 has lengths 1 and 2"],
        id="trace-ragged",
    ),
    pytest.param(
        lambda: da.grad(total)(RAGGED),
        da.ShapeError, "trace", ["argument 0", "ragged"], id="grad-ragged",
    ),
    pytest.param(
        lambda: da.grad(both, (0, 1))(V, [[1.0], [2.0, 3.0], []]),
        da.ShapeError, "trace", ["argument 1", "lengths 0, 1 and 2"], id="grad-ragged-second",
    ),
    pytest.param(
        lambda: T(lambda x: x[0] + da.constant(RAGGED), X),
        da.ShapeError, "constant", ["the constant", "ragged"], id="constant-ragged",
    ),
    pytest.param(
        lambda: T(lambda x: x[0, 0] + da.sum(RAGGED), X),
        da.ShapeError, "sum", ["the argument", "ragged"], id="argument-ragged",
    ),
    pytest.param(
        lambda: T(lambda x: x[0, :2] + [1.0, [2.0]], X),
        da.ShapeError, "add", ["the operand", "mixes numbers and lists"], id="operand-ragged",
    ),
    pytest.param(
        lambda: T(lambda x: x[0] + [x[0, 0], 1.0, 2.0, 3.0], X),
        da.TracingError, "add", ["traced values", "da.stack"], id="list-of-traced",
    ),
    pytest.param(
        lambda: T(total, np.array([1.0, "a"], dtype=object)),
        da.UnsupportedError, "trace", ["argument 0", "object"], id="object-array",
    ),
    pytest.param(
        lambda: T(total, "text"),
        da.UnsupportedError, "trace", ["argument 0", "str"], id="string",
    ),
    pytest.param(
        lambda: da.grad(total)(["a", "b"]),
        da.UnsupportedError, "trace", ["argument 0", "<U1"], id="list-of-strings",
    ),
]


# -------------------------------------------------------------------------- 4. float // and %

DIVISION: list[Any] = [
    pytest.param(
        lambda: T(lambda x: x // V, X),
        da.ShapeError, "quot", ["[3,4]", "[5]"], id="floordiv-shapes",
    ),
    pytest.param(
        lambda: T(lambda x: x % V, X),
        da.ShapeError, "rem", ["[3,4]", "[5]"], id="mod-shapes",
    ),
    pytest.param(
        lambda: T(lambda x: np.floor_divide(x, V), X),
        da.ShapeError, "numpy.floor_divide", ["[3,4]"], id="ufunc-floor_divide",
    ),
    pytest.param(
        lambda: T(lambda x: np.remainder(V, x), X),
        da.ShapeError, "numpy.remainder", ["[5]"], id="ufunc-remainder",
    ),
    pytest.param(
        lambda: T(lambda x: x // "s", X),
        da.TracingError, "quot", ["str"], id="floordiv-str",
    ),
]


A = np.array([7.0, -7.0, 7.0, -7.0, 0.5, 3.25, -0.0, 5.5, 1.0, -1.0, 0.0, 1e300])
B = np.array([2.0, 2.0, -2.0, -2.0, 0.3, 1.5, 2.0, 0.25, 0.0, 0.0, 0.0, 1e-300])


@pytest.mark.parametrize(
    "f",
    [
        lambda a, b: (a // b, a % b),
        lambda a, b: (np.floor_divide(a, b), np.remainder(a, b)),
        lambda a, b: (np.floor_divide(a, b), np.mod(a, b)),
    ],
)
def test_float_division_follows_numpy_including_zero_divisors(f: Callable[..., Any]) -> None:
    quotient, remainder = T(f, A, B)(A, B)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(quotient, np.floor_divide(A, B))
        np.testing.assert_allclose(remainder[:-1], np.remainder(A, B)[:-1])


def test_float_division_with_scalars_float32_and_rank_0() -> None:
    x = np.array([5.5, -3.25, 0.75], dtype=np.float32)
    program = T(lambda x: (x // 2, x % 2.0, 3 % x, x[0] // 2.0), x)
    quotient, remainder, reflected, element = program(x)
    assert quotient.dtype == remainder.dtype == reflected.dtype == np.float32
    np.testing.assert_array_equal(quotient, np.floor_divide(x, np.float32(2)))
    np.testing.assert_allclose(remainder, np.remainder(x, np.float32(2)))
    np.testing.assert_allclose(reflected, np.remainder(np.float32(3), x), rtol=1e-6)
    assert element == 2.0


def test_integer_division_is_unchanged_and_total() -> None:
    i = np.array([7, -7, 7, 5])
    j = np.array([2, 2, -2, 0])
    quotient, remainder = T(lambda i, j: (i // j, i % j), i, j)(i, j)
    assert quotient.dtype == remainder.dtype == np.int64
    np.testing.assert_array_equal(quotient, [3, -4, -4, 5])
    np.testing.assert_array_equal(remainder, [1, 1, -1, 5])


def test_float_division_is_composed_of_core_constructs_at_every_stage() -> None:
    def f(a: da.Tensor, b: da.Tensor) -> da.Tensor:
        return da.sum(da.build1(4, lambda i: (a[i] % b[i]) ** 2 + (a[i] // b[i]) * b[i]))

    a, b = A[:4], B[:4]
    source = str(T(f, a, b))
    assert "floor" in source and "//" not in source and "%" not in source
    pipeline = da.pipeline(f, a, b)
    assert "floor" in str(pipeline)  # every stage prints
    q, r = np.floor_divide(a, b), np.remainder(a, b)
    value, (grad_a, grad_b) = pipeline(a, b)
    np.testing.assert_allclose(value, np.sum(r**2 + q * b))
    np.testing.assert_allclose(grad_a, 2 * r)
    np.testing.assert_allclose(grad_b, -2 * r * q + q)


@pytest.mark.parametrize("mode", ["compiled", "interpret"])
def test_derivatives_of_floor_divide_and_remainder(mode: str) -> None:
    a, b = A[:6], B[:6]
    grads = da.grad(lambda a, b: da.sum(a // b), (0, 1), mode=mode)(a, b)
    np.testing.assert_array_equal(grads[0], 0.0)
    np.testing.assert_array_equal(grads[1], 0.0)
    grad_a, grad_b = da.grad(lambda a, b: da.sum(a % b), (0, 1), mode=mode)(a, b)
    np.testing.assert_array_equal(grad_a, 1.0)
    np.testing.assert_array_equal(grad_b, -np.floor_divide(a, b))


finite = st.floats(-100.0, 100.0, allow_nan=False, allow_infinity=False)
divisor = st.one_of(st.floats(-10.0, -0.1), st.floats(0.1, 10.0))
pairs = st.lists(st.tuples(finite, divisor), min_size=4, max_size=4)


def _distance_to_jump(a: np.ndarray, b: np.ndarray) -> float:
    """How close ``a / b`` comes to a whole number (where ``//`` and ``%`` jump)."""
    q = a / b
    return float(np.min(np.abs(q - np.round(q))))


def _on_one_piece(a: np.ndarray, b: np.ndarray, step: float) -> bool:
    """``a // b`` does not change when ``a`` or ``b`` moves by ``step``."""
    q = np.floor_divide(a, b)
    moved = [(a + step, b), (a - step, b), (a, b + step), (a, b - step)]
    return all(np.array_equal(np.floor_divide(x, y), q) for x, y in moved)


@settings(max_examples=60, suppress_health_check=[HealthCheck.filter_too_much])
@given(pairs)
def test_float_division_agrees_with_numpy(values: list[tuple[float, float]]) -> None:
    a, b = (np.array(column) for column in zip(*values, strict=True))
    assume(_distance_to_jump(a, b) > 1e-9)
    quotient, remainder = T(lambda a, b: (a // b, a % b), a, b)(a, b)
    np.testing.assert_array_equal(quotient, np.floor_divide(a, b))
    np.testing.assert_allclose(remainder, np.remainder(a, b), rtol=1e-9, atol=1e-9)
    assert np.all((remainder == 0) | (np.sign(remainder) == np.sign(b)))


def _loss(a: Any, b: Any) -> Any:
    return (a % b) ** 2 + (a // b) * b


@settings(max_examples=40, suppress_health_check=[HealthCheck.filter_too_much])
@given(pairs)
def test_float_division_gradients_agree_with_finite_differences(
    values: list[tuple[float, float]],
) -> None:
    a, b = (np.array(column) for column in zip(*values, strict=True))
    step = 1e-6
    assume(_distance_to_jump(a, b) > 1e-9 and _on_one_piece(a, b, 2 * step))
    grad_a, grad_b = da.grad(lambda a, b: da.sum(_loss(a, b)), (0, 1))(a, b)
    for which, gradient in ((0, grad_a), (1, grad_b)):
        for k in range(a.size):
            up, down = [a.copy(), b.copy()], [a.copy(), b.copy()]
            up[which][k] += step
            down[which][k] -= step
            numeric = (np.sum(_loss(*up)) - np.sum(_loss(*down))) / (2 * step)
            assert math.isclose(gradient[k], numeric, rel_tol=1e-4, abs_tol=1e-4)


# -------------------------------------------------------------------------- 5. format and hash

FORMAT_AND_HASH: list[Any] = [
    pytest.param(
        lambda: T(lambda x: f"{x[0, 0]:.2f}", X),
        da.TracingError, "format()", ["float64[]", "repr"], id="format-spec",
    ),
    pytest.param(
        lambda: T(lambda x: format(x), X),
        da.TracingError, "format()", ["float64[3,4]"], id="format",
    ),
    pytest.param(
        lambda: T(lambda x: "{}".format(x), X),  # noqa: UP032
        da.TracingError, "format()", [], id="str.format",
    ),
    pytest.param(
        lambda: T(lambda x: hash(x), X),
        da.TracingError, "hash()", ["unhashable", "id(x)"], id="hash",
    ),
    pytest.param(
        lambda: T(lambda x: {x}, X),
        da.TracingError, "hash()", ["unhashable"], id="set",
    ),
    pytest.param(
        lambda: T(lambda x: {x: 1}[x], X),
        da.TracingError, "hash()", ["unhashable"], id="dict-key",
    ),
]


def test_str_and_repr_of_traced_values_still_work() -> None:
    shown: list[str] = []

    def f(x: da.Tensor) -> da.Tensor:
        by_id = {id(x): x}
        shown.extend([str(x), repr(x), f"{x!r}", f"{x!s}", "%s" % (x,)])  # noqa: UP031
        return by_id[id(x)] * 2.0

    T(f, X)
    assert all(text.startswith("Tensor(float64[3,4]") for text in shown)


# -------------------------------------------------------------------------- 6. element types

DTYPES: list[Any] = [
    pytest.param(
        lambda: T(total, np.ones(3, np.float16)),
        UnsupportedDtypeError, "trace", ["argument 0", "float16"], id="trace-float16",
    ),
    pytest.param(
        lambda: da.grad(total)(np.ones(3, np.float16)),
        UnsupportedDtypeError, "trace", ["argument 0", "float16"], id="grad-float16",
    ),
    pytest.param(
        lambda: da.grad(total)(np.ones(3, np.complex64)),
        UnsupportedDtypeError, "trace", ["argument 0", "complex64"], id="grad-complex",
    ),
    pytest.param(
        lambda: T(total, da.ShapeSpec((3,), np.float16)),
        UnsupportedDtypeError, "ShapeSpec", ["float16"], id="shapespec-float16",
    ),
    pytest.param(
        lambda: T(lambda x: da.to_float(x, np.float16), X),
        UnsupportedDtypeError, "to_float", ["float16"], id="to_float-float16",
    ),
    pytest.param(
        lambda: T(lambda x: x + da.constant([1, 2, 3, 4], np.complex64), X),
        UnsupportedDtypeError, "constant", ["complex64"], id="constant-complex",
    ),
    pytest.param(
        lambda: T(total, X)(np.ones((3, 4), np.uint8)),
        da.DtypeError, "total", ["float64[3,4]", "uint8"], id="call-uint8",
    ),
    pytest.param(
        lambda: T(total, X)(np.ones((3, 4), np.int32)),
        da.DtypeError, "total", ["int32"], id="call-int32",
    ),
]


@pytest.mark.parametrize(("run", "cls", "op", "fragments"), DTYPES)
def test_dtype_errors_name_the_given_dtype(
    run: Callable[[], Any], cls: type[da.DualarrError], op: str, fragments: Sequence[str]
) -> None:
    err = check(run, cls, op, fragments)
    assert isinstance(err, da.DtypeError)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_grad_of_an_integer_input_names_its_dtype(dtype: type[np.generic]) -> None:
    run = lambda: da.grad(total)(np.ones(3, dtype))  # noqa: E731
    check(run, da.DtypeError, "grad", [np.dtype(dtype).name])


ERROR_TABLES = {
    "test_wrong_arity": ARITY,
    "test_bad_shapes_and_axes": SHAPES_AND_AXES,
    "test_ragged_and_unsupported_inputs": INPUTS,
    "test_division_errors_name_the_operator": DIVISION,
    "test_format_and_hash_of_traced_values": FORMAT_AND_HASH,
}


@pytest.mark.parametrize(
    ("run", "cls", "op", "fragments"),
    [case for table in ERROR_TABLES.values() for case in table],
)
def test_a_named_error_at_the_users_line(
    run: Callable[[], Any], cls: type[da.DualarrError], op: str, fragments: Sequence[str]
) -> None:
    """Wrong arity, shapes and axes, ragged and unsupported inputs, division, format
    and hash of traced values, dtypes: each a named error at the call's line."""
    check(run, cls, op, fragments)

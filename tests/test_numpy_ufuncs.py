"""``dualarr.numpy``'s elementwise functions conform to NumPy (values with exact shape and
dtype, eager and traced; gradients against finite differences; jvp/vjp adjointness;
vmap), on Hypothesis-drawn broadcasting shapes (size-0 and size-1 axes included) in
float32 and float64, with data in each function's domain and away from kinks."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes
from numpy_conformance import check_gradients, conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.errors import DtypeError, ShapeError, UnsupportedError
from dualarr.numpy import _ufuncs

Domain = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def uniform(lo: float, hi: float) -> Domain:
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def signed(lo: float, hi: float) -> Domain:
    """Magnitudes in ``[lo, hi]`` of either sign (away from 0)."""
    return lambda rng, shape: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def off_grid(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Away from whole and half-whole numbers (rounding's jumps)."""
    halves: np.ndarray[Any, np.dtype[np.float64]] = rng.choice([0.0, 0.5], shape)
    fraction = rng.uniform(0.1, 0.4, shape) + halves
    return rng.integers(-5, 5, shape) + fraction


GENERIC = uniform(-2.0, 2.0)

UNARY: dict[str, Domain] = {
    "negative": GENERIC,
    "positive": GENERIC,
    "square": GENERIC,
    "sqrt": uniform(0.3, 3.0),
    "cbrt": signed(0.2, 3.0),
    "exp": GENERIC,
    "exp2": GENERIC,
    "expm1": GENERIC,
    "log": uniform(0.2, 3.0),
    "log2": uniform(0.2, 3.0),
    "log10": uniform(0.2, 3.0),
    "log1p": uniform(-0.5, 3.0),
    "sin": uniform(-4.0, 4.0),
    "cos": uniform(-4.0, 4.0),
    "tan": uniform(-1.2, 1.2),
    "arcsin": uniform(-0.9, 0.9),
    "arccos": uniform(-0.9, 0.9),
    "arctan": uniform(-4.0, 4.0),
    "sinh": GENERIC,
    "cosh": GENERIC,
    "tanh": GENERIC,
    "arcsinh": uniform(-6.0, 6.0),
    "arccosh": uniform(1.2, 6.0),
    "arctanh": uniform(-0.9, 0.9),
    "abs": signed(0.2, 2.0),
    "absolute": signed(0.2, 2.0),
    "fabs": signed(0.2, 2.0),
    "sign": signed(0.2, 2.0),
    "ceil": off_grid,
    "floor": off_grid,
    "trunc": off_grid,
    "rint": off_grid,
    "deg2rad": uniform(-360.0, 360.0),
    "radians": uniform(-360.0, 360.0),
    "rad2deg": GENERIC,
    "degrees": GENERIC,
    "reciprocal": signed(0.3, 2.0),
    "sinc": uniform(-3.0, 3.0),
    "nan_to_num": GENERIC,
}

BINARY: dict[str, tuple[Domain, Domain]] = {
    "add": (GENERIC, GENERIC),
    "subtract": (GENERIC, GENERIC),
    "multiply": (GENERIC, GENERIC),
    "divide": (GENERIC, signed(0.5, 2.0)),
    "true_divide": (GENERIC, signed(0.5, 2.0)),
    "power": (uniform(0.5, 2.0), GENERIC),
    "arctan2": (signed(0.2, 2.0), signed(0.2, 2.0)),
    "maximum": (GENERIC, GENERIC),
    "minimum": (GENERIC, GENERIC),
    "fmax": (GENERIC, GENERIC),
    "fmin": (GENERIC, GENERIC),
    "logaddexp": (uniform(-30.0, 30.0), uniform(-30.0, 30.0)),
    "logaddexp2": (uniform(-30.0, 30.0), uniform(-30.0, 30.0)),
    "remainder": (uniform(-6.0, 6.0), signed(0.5, 2.0)),
    "mod": (uniform(-6.0, 6.0), signed(0.5, 2.0)),
    "fmod": (uniform(-6.0, 6.0), signed(0.5, 2.0)),
    "floor_divide": (uniform(-6.0, 6.0), signed(0.5, 2.0)),
    "hypot": (signed(0.1, 3.0), signed(0.1, 3.0)),
    "heaviside": (signed(0.2, 2.0), GENERIC),
}

FLOATS = st.sampled_from([np.float32, np.float64])
SHAPES = array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
PAIRS = mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)
TRIPLES = mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3)


def draw(data: st.DataObject, domain: Domain, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    return np.asarray(domain(rng, shape)).astype(dtype)


def draw_pair(
    data: st.DataObject, domains: tuple[Domain, Domain], shapes: Any, dtype: Any
) -> list[np.ndarray]:
    """Two arguments from one generator (distinct values: no ties)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    return [
        np.asarray(domain(rng, shape)).astype(dtype)
        for domain, shape in zip(domains, shapes.input_shapes, strict=True)
    ]


def quiet(f: Callable[..., Any]) -> Callable[..., Any]:
    """NumPy's function without its floating-point warnings (a reference, not a test)."""

    def g(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(all="ignore"):
            return f(*args, **kwargs)

    return g


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=10)
@given(data=st.data(), shape=SHAPES, dtype=FLOATS)
def test_unary_conforms(name: str, data: st.DataObject, shape: tuple[int, ...], dtype: Any) -> None:
    x = draw(data, UNARY[name], shape, dtype)
    conforms(getattr(dnp, name), getattr(np, name), [x])


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=10)
@given(data=st.data(), shapes=PAIRS, dtype=FLOATS)
def test_binary_conforms(name: str, data: st.DataObject, shapes: Any, dtype: Any) -> None:
    a, b = draw_pair(data, BINARY[name], shapes, dtype)
    conforms(getattr(dnp, name), quiet(getattr(np, name)), [a, b])


@settings(max_examples=10)
@given(data=st.data(), shapes=PAIRS)
def test_float_power_computes_in_float64(data: st.DataObject, shapes: Any) -> None:
    a, b = draw_pair(data, (uniform(0.5, 2.0), GENERIC), shapes, np.float64)
    conforms(dnp.float_power, np.float_power, [a, b])
    conforms(dnp.float_power, np.float_power, [a.astype(np.int64) + 1, b.astype(np.int64)])
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for args in ([a32, b32], [a32, b], [a, b32]):  # float32 is converted to float64
        conforms(dnp.float_power, np.float_power, args)
    conforms(lambda x: dnp.float_power(x, 2.0), lambda x: np.float_power(x, 2.0), [a32])
    assert dnp.float_power(a32, 2.0).dtype == np.float64


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=6)
@given(data=st.data(), shapes=PAIRS, first32=st.booleans())
def test_binary_mixed_float_widths_promote_to_float64(
    name: str, data: st.DataObject, shapes: Any, first32: bool
) -> None:
    """float32 with float64 computes in float64 (NumPy's promotion), and each gradient
    has its own argument's dtype."""
    a, b = draw_pair(data, BINARY[name], shapes, np.float64)
    args = [a.astype(np.float32), b] if first32 else [a, b.astype(np.float32)]
    ours, theirs = getattr(dnp, name), quiet(getattr(np, name))
    conforms(ours, theirs, args)
    assert np.asarray(ours(*args)).dtype == np.float64
    grads = da.grad(lambda x, y: da.sum(ours(x, y)), argnums=(0, 1))(*args)
    assert [g.dtype for g in grads] == [x.dtype for x in args]


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=6)
@given(data=st.data(), shapes=PAIRS)
def test_binary_float32_with_an_int_array_is_float64(
    name: str, data: st.DataObject, shapes: Any
) -> None:
    a = draw(data, BINARY[name][0], shapes.input_shapes[0], np.float32)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    i = rng.integers(1, 4, shapes.input_shapes[1])
    conforms(getattr(dnp, name), quiet(getattr(np, name)), [a, i])
    assert np.asarray(getattr(dnp, name)(a, i)).dtype == np.result_type(a, i) == np.float64


@pytest.mark.parametrize("name", ["add", "multiply", "power", "maximum", "logaddexp", "remainder"])
@settings(max_examples=10)
@given(data=st.data(), shape=SHAPES, dtype=FLOATS)
def test_python_scalars_are_weak(
    name: str, data: st.DataObject, shape: tuple[int, ...], dtype: Any
) -> None:
    a = draw(data, uniform(0.5, 2.0), shape, dtype)
    ours, theirs = getattr(dnp, name), getattr(np, name)
    conforms(lambda x: ours(x, 1.5), lambda x: theirs(x, 1.5), [a])
    conforms(lambda x: ours(2.5, x), lambda x: theirs(2.5, x), [a])


INT_BINARY = [
    "add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin", "remainder", "mod",
    "fmod", "floor_divide", "equal", "less", "greater_equal", "logical_and", "logical_xor",
]  # fmt: skip
INT_UNARY = [
    "negative", "positive", "square", "abs", "absolute", "sign", "floor", "ceil", "trunc",
    "sqrt", "exp", "rint", "fabs", "isnan", "isinf", "isfinite", "logical_not",
    "nan_to_num", "cbrt", "arctan",
]  # fmt: skip


@settings(max_examples=10)
@given(data=st.data(), shapes=PAIRS)
def test_integer_arguments(data: st.DataObject, shapes: Any) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = rng.integers(-7, 8, shapes.input_shapes[0])
    b = rng.integers(-3, 4, shapes.input_shapes[1])  # zeros: NumPy's x // 0 == x % 0 == 0
    for name in INT_BINARY:
        conforms(getattr(dnp, name), quiet(getattr(np, name)), [a, b], gradients=False)
    for name in INT_UNARY:
        conforms(getattr(dnp, name), quiet(getattr(np, name)), [a], gradients=False)
    nonzero = np.where(a == 0, 1, a)  # NumPy's integer 1 // 0 is platform-defined
    conforms(dnp.reciprocal, np.reciprocal, [nonzero], gradients=False)
    exponent = rng.integers(0, 6, shapes.input_shapes[1])
    conforms(dnp.power, np.power, [a, exponent], gradients=False)
    conforms(lambda x: dnp.power(x, 3), lambda x: np.power(x, 3), [a], gradients=False)


def test_integer_power_wraps_as_numpy() -> None:
    base = np.array([2, 3, -2, 1, -1, 0, 7])
    exponent = np.array([10, 40, 63, 1000, 1001, 5, 0])
    np.testing.assert_array_equal(dnp.power(base, exponent), np.power(base, exponent))
    with pytest.raises(UnsupportedError) as info:
        dnp.power(base, -1)
    assert info.value.op == "numpy.power"


@settings(max_examples=10)
@given(shapes=PAIRS, seed=st.integers(0, 2**32 - 1))
def test_bool_arguments(shapes: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.random(shapes.input_shapes[0]) < 0.5
    b = rng.random(shapes.input_shapes[1]) < 0.5
    for name in (
        "add", "multiply", "maximum", "minimum", "fmax", "fmin", "equal", "not_equal",
        "logical_and", "logical_or", "logical_xor",
    ):  # fmt: skip
        conforms(getattr(dnp, name), getattr(np, name), [a, b], gradients=False)
    for name in ("abs", "floor", "logical_not", "isnan", "isinf", "isfinite", "nan_to_num"):
        conforms(getattr(dnp, name), getattr(np, name), [a], gradients=False)
    for name in ("sqrt", "negative", "subtract"):
        with pytest.raises(DtypeError) as info:
            getattr(dnp, name)(*([a, b] if name == "subtract" else [a]))
        assert info.value.op == f"numpy.{name}"


COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@settings(max_examples=10)
@given(shapes=PAIRS, dtype=FLOATS, seed=st.integers(0, 2**32 - 1))
def test_comparisons_and_logic(shapes: Any, dtype: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, shapes.input_shapes[0]).astype(dtype)  # ties and zeros
    b = rng.integers(-2, 3, shapes.input_shapes[1]).astype(dtype)
    for name in [*COMPARISONS, "logical_and", "logical_or", "logical_xor"]:
        conforms(getattr(dnp, name), getattr(np, name), [a, b], gradients=False)
    conforms(dnp.logical_not, np.logical_not, [a], gradients=False)


SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 1e30])


@settings(max_examples=10)
@given(shape=SHAPES, dtype=FLOATS, seed=st.integers(0, 2**32 - 1))
def test_special_values(shape: tuple[int, ...], dtype: Any, seed: int) -> None:
    x = np.random.default_rng(seed).choice(SPECIALS, shape).astype(dtype)
    y = np.random.default_rng(seed + 1).choice(SPECIALS, shape).astype(dtype)
    for name in ("isnan", "isinf", "isfinite", "nan_to_num", "floor", "ceil", "trunc", "rint"):
        conforms(getattr(dnp, name), quiet(getattr(np, name)), [x], gradients=False)
    for name in ("maximum", "minimum", "fmax", "fmin", "logaddexp", "hypot"):
        conforms(getattr(dnp, name), quiet(getattr(np, name)), [x, y], gradients=False)

    def replaced(v: Any, f: Any = dnp.nan_to_num) -> Any:
        return f(v, nan=-1.0, posinf=7.0, neginf=-7.0)

    conforms(replaced, lambda v: replaced(v, np.nan_to_num), [x], gradients=False)


def test_accuracy_over_wide_ranges() -> None:
    big = np.concatenate([-np.logspace(-300, 300, 301), np.logspace(-300, 300, 301), [0.0]])
    np.testing.assert_allclose(dnp.arcsinh(big), np.arcsinh(big), rtol=1e-12)
    above = 1 + np.logspace(-15, 300, 300)
    np.testing.assert_allclose(dnp.arccosh(above), np.arccosh(above), rtol=1e-12)
    unit = np.concatenate([np.logspace(-300, 0, 200, endpoint=False), 1 - np.logspace(-15, -1, 50)])
    unit = np.concatenate([unit, -unit])
    np.testing.assert_allclose(dnp.arctanh(unit), np.arctanh(unit), rtol=1e-12)
    a, b = np.array([1000.0, -1000.0, 0.0, -np.inf]), np.array([999.0, -1001.0, 1e-300, -np.inf])
    np.testing.assert_allclose(dnp.logaddexp(a, b), np.logaddexp(a, b), rtol=1e-15)
    np.testing.assert_allclose(dnp.logaddexp2(a, b), np.logaddexp2(a, b), rtol=1e-15)
    np.testing.assert_allclose(dnp.hypot(1e200, 1e200), np.hypot(1e200, 1e200), rtol=1e-15)
    np.testing.assert_allclose(dnp.hypot(1e-200, 3e-200), np.hypot(1e-200, 3e-200), rtol=1e-15)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, 2.0**52 + 1, 1e300])
    np.testing.assert_array_equal(dnp.rint(halves), np.rint(halves))
    large = np.array([2.0**53 - 1, -(2.0**60) + 2048, 1e300, -1e300, 4503599627370495.5])
    for name in ("floor", "ceil", "trunc", "rint"):
        np.testing.assert_array_equal(getattr(dnp, name)(large), getattr(np, name)(large))
    assert np.isnan(dnp.arccosh(0.5)) and np.isnan(dnp.arctanh(2.0))


def test_rounding_has_zero_gradient() -> None:
    x = np.array([-2.3, 0.7, 1.2])
    for name in ("floor", "ceil", "trunc", "rint", "floor_divide"):
        f = getattr(dnp, name)
        args = (x,) if name != "floor_divide" else (x, 0.5)
        g = da.grad(lambda v, f=f, rest=args[1:]: da.sum(f(v, *rest)))(x)
        np.testing.assert_array_equal(g, np.zeros(3))


@settings(max_examples=12)
@given(
    shapes=TRIPLES,
    dtype=FLOATS,
    seed=st.integers(0, 2**32 - 1),
    which=st.sampled_from(["both", "low", "high"]),
)
def test_clip(shapes: Any, dtype: Any, seed: int, which: str) -> None:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-3, 3, shapes.input_shapes[0]).astype(dtype)
    low = rng.uniform(-2, -0.5, shapes.input_shapes[1]).astype(dtype)
    high = rng.uniform(0.5, 2, shapes.input_shapes[2]).astype(dtype)
    if which == "both":
        conforms(dnp.clip, np.clip, [a, low, high])
    elif which == "low":
        conforms(lambda x, lo: dnp.clip(x, lo, None), lambda x, lo: np.clip(x, lo, None), [a, low])
    else:
        conforms(lambda x, hi: dnp.clip(x, max=hi), lambda x, hi: np.clip(x, max=hi), [a, high])
    conforms(lambda x: dnp.clip(x, -1.0, 1.0), lambda x: np.clip(x, -1.0, 1.0), [a])


@settings(max_examples=12)
@given(shapes=TRIPLES, dtype=FLOATS, seed=st.integers(0, 2**32 - 1))
def test_where_and_select(shapes: Any, dtype: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    c = rng.random(shapes.input_shapes[0]) < 0.5
    x = rng.uniform(-2, 2, shapes.input_shapes[1]).astype(dtype)
    y = rng.uniform(-2, 2, shapes.input_shapes[2]).astype(dtype)
    conforms(dnp.where, np.where, [c, x, y])
    conforms(lambda x, y: dnp.where(x > 0, x, y), lambda x, y: np.where(x > 0, x, y), [x, y])
    c2 = rng.random(shapes.input_shapes[2]) < 0.5

    def chosen(c: Any, c2: Any, x: Any, y: Any, f: Any = dnp.select) -> Any:
        return f([c, c2], [x, y], 0.5)

    conforms(chosen, lambda c, c2, x, y: chosen(c, c2, x, y, f=np.select), [c, c2, x, y])


@settings(max_examples=10)
@given(shape=SHAPES, seed=st.integers(0, 2**32 - 1))
def test_astype(shape: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-5, 5, shape)
    i = rng.integers(-3, 4, shape)
    b = rng.random(shape) < 0.5
    for source in (x, x.astype(np.float32), i, b):
        for target in (np.int64, np.bool_, bool, int):
            conforms(
                lambda v, t=target: dnp.astype(v, t),
                lambda v, t=target: np.astype(v, t),
                [source],
                gradients=False,
            )
    for source in (i, b):
        for float_target in (np.float64, np.float32, float):
            conforms(
                lambda v, t=float_target: dnp.astype(v, t),
                lambda v, t=float_target: np.astype(v, t),
                [source],
            )
    conforms(lambda v: dnp.astype(v, np.float64), lambda v: np.astype(v, np.float64), [x])
    x32 = x.astype(np.float32)
    for float_target in (np.float64, float):
        conforms(
            lambda v, t=float_target: dnp.astype(v, t),
            lambda v, t=float_target: np.astype(v, t),
            [x32],
        )
    # to float32: NumPy's rounding spoils finite differences of its own function, so the
    # gradient is checked against the identity's (the conversion's derivative)
    for source in (x, x32):
        conforms(
            lambda v: dnp.astype(v, np.float32),
            lambda v: np.astype(v, np.float32),
            [source],
            gradients=False,
        )
    check_gradients(lambda v: dnp.astype(v, np.float32), lambda v: v, [x])
    for mode in ("compiled", "interpret"):
        up = da.grad(lambda v: da.sum(dnp.astype(v, np.float64) * 3.0), mode=mode)(x32)
        down = da.grad(lambda v: da.sum(dnp.astype(v, np.float32) * 3.0), mode=mode)(x)
        assert (up.dtype, down.dtype) == (np.float32, np.float64)
        np.testing.assert_array_equal(up, np.full(shape, 3.0, np.float32))
        np.testing.assert_array_equal(down, np.full(shape, 3.0))
    round_trip = dnp.astype(dnp.astype(x32, np.float64), np.float32)
    np.testing.assert_array_equal(round_trip, x32)


def test_errors_name_the_function() -> None:
    with pytest.raises(ShapeError) as shape_info:
        dnp.clip(np.ones(3), np.zeros(4), 1.0)
    assert shape_info.value.op == "numpy.clip"
    with pytest.raises(ShapeError) as add_info:
        da.trace(lambda a, b: dnp.add(a, b), np.ones(3), np.ones(2))
    assert add_info.value.op == "numpy.add"
    with pytest.raises(UnsupportedError) as where_info:
        dnp.where(np.ones(3) > 0)
    assert where_info.value.op == "numpy.where"
    with pytest.raises(ShapeError) as select_info:
        dnp.select([np.ones(2) > 0], [np.ones(2), np.ones(2)])
    assert select_info.value.op == "numpy.select"
    with pytest.raises(DtypeError) as sqrt_info:
        dnp.sqrt(np.ones(2) > 0)
    assert sqrt_info.value.op == "numpy.sqrt"


UNSUPPORTED_PARAMETERS = {
    "out", "where", "casting", "order", "subok", "signature", "dtype", "device", "kwargs",
}  # fmt: skip


@pytest.mark.parametrize("name", _ufuncs.__all__)
def test_signature_is_numpys(name: str) -> None:
    ours = list(inspect.signature(getattr(dnp, name)).parameters)
    theirs = list(inspect.signature(getattr(np, name)).parameters)
    if name == "where":  # NumPy's where is where(condition, x, y, /) too
        assert ours == ["condition", "x", "y"]
        return
    assert [p for p in theirs if p in ours] == ours, (ours, theirs)
    assert set(theirs) - set(ours) <= UNSUPPORTED_PARAMETERS, (ours, theirs)
    function = getattr(dnp, name)
    assert function.__doc__ and function.__name__ == name
    assert inspect.signature(function).return_annotation != inspect.Signature.empty

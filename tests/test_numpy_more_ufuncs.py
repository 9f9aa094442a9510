"""``copysign``, ``ldexp``, ``signbit``, ``nextafter``, ``spacing``, ``isclose``,
``divmod`` and ``modf`` conform to NumPy (issue #39): values with exact shape and dtype
(eager and traced), gradients against central differences of NumPy's (both modes),
jvp/vjp adjointness and vmap, in float32 and float64, on several shapes (broadcasting,
size-0 axes) and Hypothesis-drawn ones; bit-exact values at the special points (±0,
subnormals, powers of two, the largest float, ±inf, nan); JAX's derivative rules
(``copysign`` sign-aware in ``x1``, zero in ``x2``; the piecewise-constant ones zero)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from numpy_conformance import check_values, conforms

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.errors import DtypeError

FLOATS = [np.float32, np.float64]
SHAPE_PAIRS = [((), ()), ((4,), (4,)), ((2, 3), (3,)), ((3, 1), (1, 4)), ((0, 3), (3,))]


def away_from_zero(shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray:
    """Values with ``0.3 <= |x| <= 2``, either sign (no kink of ``abs`` or ``sign``)."""
    rng = np.random.default_rng(seed)
    magnitude = rng.uniform(0.3, 2.0, shape)
    return np.asarray(magnitude * rng.choice([-1.0, 1.0], shape)).astype(dtype)


def special(dtype: Any) -> np.ndarray:
    """Every special case of the floating-point functions."""
    info = np.finfo(dtype)
    subnormal = info.smallest_subnormal
    return np.array(
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            -2.0,
            0.5,
            3.7,
            -1e-3,
            subnormal,
            -subnormal,
            3 * subnormal,
            info.tiny,
            -info.tiny,
            2 * info.tiny,
            info.max,
            -info.max,
            np.inf,
            -np.inf,
            np.nan,
            1e30,
            2.0**-20,
        ],
        dtype,
    )


def same_bits(got: Any, expected: Any) -> None:
    """Equal values, nan where nan, the same sign of zero, the same dtype and shape."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    assert np.array_equal(np.signbit(got[got == 0]), np.signbit(expected[expected == 0]))


# --------------------------------------------------------------------------------------
# The conformance harness
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS)
def test_copysign_conforms(dtype: Any, shapes: Any) -> None:
    x1, x2 = away_from_zero(shapes[0], dtype, 1), away_from_zero(shapes[1], dtype, 2)
    conforms(dnp.copysign, np.copysign, [x1, x2])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS)
def test_ldexp_conforms(dtype: Any, shapes: Any) -> None:
    x1 = away_from_zero(shapes[0], dtype, 3)
    x2 = np.random.default_rng(4).integers(-5, 6, shapes[1])
    conforms(dnp.ldexp, np.ldexp, [x1, x2])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS)
def test_nextafter_conforms(dtype: Any, shapes: Any) -> None:
    x1 = away_from_zero(shapes[0], dtype, 5)
    x2 = away_from_zero(shapes[1], dtype, 6) * 3
    conforms(dnp.nextafter, np.nextafter, [x1, x2])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (0, 2)])
def test_unary_float_functions_conform(dtype: Any, shape: tuple[int, ...]) -> None:
    x = away_from_zero(shape, dtype, 7) * 3
    conforms(dnp.spacing, np.spacing, [x])
    conforms(dnp.signbit, np.signbit, [x], gradients=False)
    conforms(lambda v: dnp.modf(v)[0], lambda v: np.modf(v)[0], [x])
    conforms(lambda v: dnp.modf(v)[1], lambda v: np.modf(v)[1], [x])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS)
def test_divmod_conforms(dtype: Any, shapes: Any) -> None:
    x1 = away_from_zero(shapes[0], dtype, 8) * 5
    x2 = away_from_zero(shapes[1], dtype, 9)
    conforms(lambda a, b: dnp.divmod(a, b)[0], lambda a, b: np.divmod(a, b)[0], [x1, x2])
    conforms(lambda a, b: dnp.divmod(a, b)[1], lambda a, b: np.divmod(a, b)[1], [x1, x2])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS)
def test_isclose_conforms(dtype: Any, shapes: Any) -> None:
    a = away_from_zero(shapes[0], dtype, 10)
    b = np.broadcast_to(a, np.broadcast_shapes(shapes[0], shapes[1])).copy()
    if b.size:
        b.flat[::2] += np.asarray(1e-7, dtype)  # close
        b.flat[1::3] += np.asarray(0.1, dtype)  # not close
    conforms(dnp.isclose, np.isclose, [a, b], gradients=False)
    conforms(
        lambda u, v: dnp.isclose(u, v, rtol=0.2),
        lambda u, v: np.isclose(u, v, rtol=0.2),
        [a, b],
        gradients=False,
    )


# --------------------------------------------------------------------------------------
# Special values, bit for bit
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values_are_numpys_bits(dtype: Any) -> None:
    x = special(dtype)
    targets = [np.inf, -np.inf, 0.0, -0.0, 1.0, np.nan]
    with np.errstate(all="ignore"):
        for target in targets:
            y = np.asarray(target, dtype)
            same_bits(dnp.nextafter(x, y), np.nextafter(x, y))
            same_bits(dnp.nextafter(y, x), np.nextafter(y, x))
        same_bits(dnp.spacing(x), np.spacing(x))
        fraction, whole = dnp.modf(x)
        expected_fraction, expected_whole = np.modf(x)
        same_bits(fraction, expected_fraction)
        same_bits(whole, expected_whole)
        finite = x[np.isfinite(x)]
        same_bits(dnp.signbit(finite), np.signbit(finite))
        same_bits(dnp.copysign(3.0, finite), np.copysign(3.0, finite))
        same_bits(dnp.copysign(x, -1.0), np.copysign(x, -1.0))
        exponents = np.array([-1100, -60, -1, 0, 1, 60, 1100])
        for k in exponents:
            same_bits(dnp.ldexp(x, k), np.ldexp(x, k))
        # divmod is floor_divide and remainder, whatever the operands
        quotient, remainder = dnp.divmod(x[:, None], x[None, :])
        same_bits(quotient, dnp.floor_divide(x[:, None], x[None, :]))
        same_bits(remainder, dnp.remainder(x[:, None], x[None, :]))
        same_bits(dnp.isclose(x[:, None], x[None, :]), np.isclose(x[:, None], x[None, :]))
        same_bits(dnp.isclose(x, x, equal_nan=True), np.isclose(x, x, equal_nan=True))


def test_a_nan_with_its_sign_bit_set_reads_as_positive() -> None:
    """The documented limit of lowering ``signbit`` to arithmetic (no bit cast)."""
    negative_nan = -np.array(np.nan)
    assert np.signbit(negative_nan)
    assert not dnp.signbit(negative_nan)


def test_int_and_bool_arguments_follow_numpy() -> None:
    ints = np.array([-3, 0, 4])
    same_bits(dnp.signbit(ints), np.signbit(ints))
    same_bits(dnp.copysign(ints, -1), np.copysign(ints, -1))
    same_bits(dnp.ldexp(ints, 2), np.ldexp(ints, 2))
    same_bits(dnp.spacing(ints), np.spacing(ints))
    same_bits(dnp.modf(ints)[1], np.modf(ints)[1])
    same_bits(dnp.isclose(ints, ints + 1, atol=1), np.isclose(ints, ints + 1, atol=1))
    q, r = dnp.divmod(ints, np.array([2, 0, -3]))
    with np.errstate(divide="ignore"):
        eq, er = np.divmod(ints, np.array([2, 0, -3]))
    same_bits(q, eq)
    same_bits(r, er)
    same_bits(dnp.signbit(np.array([True, False])), np.signbit(np.array([True, False])))


def test_ldexp_takes_an_int_exponent_only() -> None:
    with pytest.raises(DtypeError, match=r"numpy\.ldexp"):
        dnp.ldexp(np.ones(2), np.ones(2))
    assert np.ldexp(np.float32(1.5), 3).dtype == dnp.ldexp(np.float32(1.5), 3).dtype


def test_two_output_functions_return_tuples_when_traced() -> None:
    def f(x: Any) -> Any:
        fraction, whole = dnp.modf(x)
        quotient, remainder = dnp.divmod(x, 0.7)
        return fraction + whole * 2 + quotient + remainder

    x = np.array([1.25, -2.5, 3.75])
    fraction, whole = np.modf(x)
    quotient, remainder = np.divmod(x, 0.7)
    np.testing.assert_allclose(da.jit(f)(x), fraction + whole * 2 + quotient + remainder)
    # modf's fraction and divmod's remainder have derivative 1, the rest 0
    np.testing.assert_allclose(da.grad(lambda v: da.sum(f(v)))(x), np.full(3, 2.0))


# --------------------------------------------------------------------------------------
# Derivative rules (JAX's)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["compiled", "interpret"])
def test_derivatives_are_jaxs(mode: str) -> None:
    x1 = np.array([-1.5, -0.5, 0.75, 2.0])
    x2 = np.array([2.0, -3.0, -0.0, 1.0])
    g1, g2 = da.grad(lambda a, b: da.sum(dnp.copysign(a, b)), argnums=(0, 1), mode=mode)(x1, x2)
    np.testing.assert_array_equal(g1, np.sign(x1) * np.where(np.signbit(x2), -1.0, 1.0))
    np.testing.assert_array_equal(g2, np.zeros(4))
    g1, g2 = da.grad(lambda a, b: da.sum(dnp.nextafter(a, b)), argnums=(0, 1), mode=mode)(x1, x2)
    np.testing.assert_array_equal(g1, np.ones(4))
    np.testing.assert_array_equal(g2, np.zeros(4))
    g = da.grad(
        lambda a: da.sum(dnp.spacing(a) + dnp.ldexp(a, np.array([1, 2, -1, 0]))), mode=mode
    )(x1)
    np.testing.assert_array_equal(g, np.array([2.0, 4.0, 0.5, 1.0]))
    g = da.grad(
        lambda a: da.sum(dnp.where(dnp.isclose(a, 0.75) | dnp.signbit(a), a, 0.0)), mode=mode
    )(x1)
    np.testing.assert_array_equal(g, np.array([1.0, 1.0, 1.0, 0.0]))


def test_derivatives_match_jax_where_installed() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x1 = np.array([-1.5, -0.5, 0.75, 2.0])
    x2 = np.array([2.0, -3.0, -0.0, 1.0])
    for ours, theirs in [
        (dnp.copysign, jnp.copysign),
        (lambda a, b: dnp.modf(a)[0] * b, lambda a, b: jnp.modf(a)[0] * b),
        (lambda a, b: dnp.divmod(a, b)[1], lambda a, b: jnp.divmod(a, b)[1]),
    ]:
        got = da.grad(lambda a, b, f=ours: da.sum(f(a, b)), argnums=(0, 1))(x1, x2)
        want = jax.grad(lambda a, b, f=theirs: jnp.sum(f(a, b)), argnums=(0, 1))(x1, x2)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, np.asarray(w))


# --------------------------------------------------------------------------------------
# Hypothesis: broadcast shapes
# --------------------------------------------------------------------------------------

BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "copysign": (dnp.copysign, np.copysign),
    "nextafter": (dnp.nextafter, np.nextafter),
    "isclose": (dnp.isclose, np.isclose),
    "divmod0": (lambda a, b: dnp.divmod(a, b)[0], lambda a, b: np.divmod(a, b)[0]),
    "divmod1": (lambda a, b: dnp.divmod(a, b)[1], lambda a, b: np.divmod(a, b)[1]),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=15)
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    dtype=st.sampled_from(FLOATS),
    seed=st.integers(0, 2**16),
)
def test_binary_values_on_drawn_shapes(name: str, shapes: Any, dtype: Any, seed: int) -> None:
    ours, theirs = BINARY[name]
    a = away_from_zero(shapes.input_shapes[0], dtype, seed) * 4
    b = away_from_zero(shapes.input_shapes[1], dtype, seed + 1)
    check_values(ours, theirs, [a, b])


@settings(max_examples=15)
@given(
    shape=st.lists(st.integers(0, 3), max_size=3).map(tuple),
    dtype=st.sampled_from(FLOATS),
    seed=st.integers(0, 2**16),
)
def test_unary_values_on_drawn_shapes(shape: tuple[int, ...], dtype: Any, seed: int) -> None:
    x = away_from_zero(shape, dtype, seed) * 10
    check_values(dnp.spacing, np.spacing, [x])
    check_values(dnp.signbit, np.signbit, [x])
    check_values(lambda v: dnp.modf(v)[0], lambda v: np.modf(v)[0], [x])
    check_values(lambda v: dnp.ldexp(v, 7), lambda v: np.ldexp(v, 7), [x])


@pytest.mark.parametrize("fuse_min_size", [1, None])
@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values_compiled_and_fused(dtype: Any, fuse_min_size: int | None) -> None:
    """The generated code (fused kernels included, float64) gives the same bits."""
    x = np.tile(special(dtype), 3)
    y = x[::-1].copy()
    before = da.config.fuse_min_size
    if fuse_min_size is not None:
        da.config.update("fuse_min_size", fuse_min_size)
    try:
        with np.errstate(all="ignore"):
            same_bits(da.jit(dnp.nextafter)(x, y), np.nextafter(x, y))
            same_bits(da.jit(dnp.spacing)(x), np.spacing(x))
            same_bits(da.jit(lambda v: dnp.modf(v)[0])(x), np.modf(x)[0])
            same_bits(da.jit(lambda v: dnp.modf(v)[1])(x), np.modf(x)[1])
            same_bits(da.jit(lambda v: dnp.ldexp(v, 1100))(x), np.ldexp(x, 1100))
            same_bits(da.jit(lambda v: dnp.ldexp(v, -1100))(x), np.ldexp(x, -1100))
            finite = x[np.isfinite(x)]
            same_bits(da.jit(dnp.signbit)(finite), np.signbit(finite))
            same_bits(da.jit(lambda v: dnp.copysign(2.0, v))(finite), np.copysign(2.0, finite))
    finally:
        da.config.update("fuse_min_size", before)

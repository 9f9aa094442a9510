"""One parametrised test over the primitive registry: every record is complete, its
NumPy, array-API (``array_api_strict``), generated-code and SymPy meanings agree on
random inputs, every partial derivative matches central finite differences, and jvp and
vjp are adjoint."""

from __future__ import annotations

from typing import Any

import array_api_strict as xps
import numpy as np
import pytest

import dualarr as da
from dualarr.codegen.generate import compile_program
from dualarr.interp.evaluate import ELEMENTWISE
from dualarr.lang.primitives import BUILT_IN, REGISTRY, OpKind
from dualarr.lang.terms import DType, IdSupply, Op, fresh_var

NAMES = sorted(BUILT_IN)
FLOAT_KINDS = (OpKind.FLOAT_UNARY, OpKind.NUM_UNARY, OpKind.NUM_BINARY, OpKind.FLOAT_BINARY)

# safe domains: away from poles, branch cuts, kinks and ties (finite differences)
POSITIVE = {"log", "sqrt", "log1p", "recip"}
UNIT = {"asin", "acos"}


def arguments(name: str, rng: np.random.Generator, n: int = 6) -> list[np.ndarray]:
    kind = REGISTRY[name].kind
    if kind is OpKind.INT_BINARY:
        return [rng.integers(-5, 6, n), rng.integers(-3, 4, n)]
    if kind in (OpKind.LOGIC_UNARY, OpKind.LOGIC_BINARY):
        return [rng.random(n) < 0.5 for _ in range(kind.arity)]
    if kind is OpKind.SELECT:
        return [rng.random(n) < 0.5, rng.uniform(-2, 2, n), rng.uniform(-2, 2, n)]
    if name in POSITIVE:
        return [rng.uniform(0.5, 2.0, n)]
    if name in UNIT:
        return [rng.uniform(-0.9, 0.9, n)]
    if name == "pow":
        return [rng.uniform(0.5, 2.0, n), rng.uniform(-2.0, 2.0, n)]
    if name == "div":
        return [rng.uniform(-2, 2, n), rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n)]
    if name == "tan":
        return [rng.uniform(-1.0, 1.0, n)]
    # kinks of abs/sign/max/min and ties: keep arguments apart and away from 0
    values = [rng.uniform(0.2, 2.0, n) * rng.choice([-1, 1], n) for _ in range(kind.arity)]
    if kind.arity == 2:
        values[1] = values[0] + rng.uniform(0.2, 1.0, n) * rng.choice([-1, 1], n)
    return values


def apply(name: str) -> Any:
    return lambda *xs: da.Tensor(
        Op(name, tuple(da.constant(x).term if not isinstance(x, da.Tensor) else x.term for x in xs))
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_record_is_complete(name: str) -> None:
    record = REGISTRY[name]
    assert record.name == name and callable(record.impl)
    assert record.sympy is not None, "a SymPy spelling"
    if record.kind in FLOAT_KINDS or record.kind is OpKind.SELECT:
        assert len(record.partials) == record.arity, "one partial per argument"
    else:
        assert record.partials == ()
    if record.function is not None:
        assert record.doc and getattr(da, record.function).__doc__ == record.doc
    if record.infix is None:
        # written by lowerings only: ``where`` and dualarr.numpy's indexing
        assert record.function is not None or name in ("select", "wrap")


@pytest.mark.parametrize("name", NAMES)
def test_numpy_array_api_codegen_and_sympy_agree(name: str) -> None:
    rng = np.random.default_rng(sum(map(ord, name)))
    args = arguments(name, rng)
    record = REGISTRY[name]
    expected = np.asarray(ELEMENTWISE[name](*args))
    strict = record.impl(xps, *(xps.asarray(a) for a in args))
    np.testing.assert_allclose(np.asarray(strict._array), expected, rtol=1e-13)
    supply = IdSupply()
    inputs = [
        fresh_var(supply, f"x{k}", a.shape, DType.of_numpy(np.asarray(a).dtype))
        for k, a in enumerate(args)
    ]
    term = Op(name, tuple(inputs))
    (generated,) = compile_program(inputs, [term])(*args)
    np.testing.assert_allclose(generated, expected, rtol=1e-13)
    if term.dtype.is_float and all(v.dtype.is_float for v in inputs):
        symbolic = da.sympy_gradient(lambda *xs: da.sum(apply(name)(*xs)), *args)
        value, _ = symbolic(*args)
        assert float(value) == pytest.approx(float(np.sum(expected)), rel=1e-10)


@pytest.mark.parametrize("mode", ["compiled", "interpret"])
@pytest.mark.parametrize(
    "name", [n for n in NAMES if any(callable(p) for p in REGISTRY[n].partials)]
)
def test_partials_match_finite_differences_and_jvp_vjp_are_adjoint(name: str, mode: str) -> None:
    rng = np.random.default_rng(sum(map(ord, name)) + 1)
    args = arguments(name, rng)
    floats = [k for k, a in enumerate(args) if a.dtype.kind == "f"]
    f = apply(name)
    weights = rng.normal(size=args[0].shape)

    def total(*xs: Any) -> Any:
        return da.sum(f(*xs) * weights)

    grads = da.grad(total, argnums=tuple(floats), mode=mode)(*args)
    h = 1e-6
    for k, g in zip(floats, grads, strict=True):
        step = np.zeros_like(args[k])
        fd = np.zeros_like(args[k])
        for i in range(args[k].size):
            step[:] = 0.0
            step[i] = h
            hi = [a + step if j == k else a for j, a in enumerate(args)]
            lo = [a - step if j == k else a for j, a in enumerate(args)]
            fd[i] = (
                np.sum(ELEMENTWISE[name](*hi) * weights) - np.sum(ELEMENTWISE[name](*lo) * weights)
            ) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6, err_msg=f"d{name}/dx{k}")
    tangents = tuple(
        rng.normal(size=a.shape) if a.dtype.kind == "f" else np.zeros(a.shape) for a in args
    )
    if all(a.dtype.kind == "f" for a in args):
        _, jv = da.jvp(f, args, tangents)
        _, pullback = da.vjp(f, *args, mode=mode)
        cotangent = rng.normal(size=args[0].shape)
        vj = pullback(cotangent)
        left = float(np.sum(jv * cotangent))
        right = sum(float(np.sum(v * t)) for v, t in zip(vj, tangents, strict=True))
        assert left == pytest.approx(right, rel=1e-10, abs=1e-12)

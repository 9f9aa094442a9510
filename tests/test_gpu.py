"""On a CUDA device (``gpu`` marker; skipped without CuPy and a device): the constructs of
``dnp.linalg``, loops and the fused kernels on CuPy arrays give NumPy's gradients, stay
on the device, and the fused CuPy program computes the unfused one's bits."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dualarr as da
import dualarr.numpy as dnp


def _cupy_available() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        return bool(__import__("cupy").is_available())
    except Exception:  # a broken CUDA installation reports itself here
        return False


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _cupy_available(), reason="needs CuPy and a CUDA device"),
]

RNG = np.random.default_rng(7)
SPD = (lambda a: a @ a.T + 4.0 * np.eye(4))(RNG.normal(size=(4, 4)))
MATRIX = RNG.normal(size=(4, 4)) + 4.0 * np.eye(4)
TALL = RNG.normal(size=(5, 3))
RHS = RNG.normal(size=(4, 2))

LINALG: list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]] = [
    ("solve", lambda a, b: dnp.sum(dnp.linalg.solve(a, b) ** 2), (MATRIX, RHS)),
    ("inv", lambda a: dnp.sum(dnp.sin(dnp.linalg.inv(a))), (MATRIX,)),
    ("slogdet", lambda a: dnp.linalg.slogdet(a).logabsdet, (MATRIX,)),
    ("det", lambda a: dnp.linalg.det(a), (MATRIX,)),
    ("cholesky", lambda a: dnp.sum(dnp.linalg.cholesky(a) ** 2), (SPD,)),
    ("eigh", lambda a: dnp.sum(dnp.linalg.eigh(a).eigenvalues ** 3), (SPD,)),
    ("svdvals", lambda a: dnp.sum(dnp.linalg.svdvals(a) ** 2), (TALL,)),
    ("svd", lambda a: dnp.sum(dnp.abs(dnp.linalg.svd(a, full_matrices=False).U)), (TALL,)),
    ("qr", lambda a: dnp.sum(dnp.linalg.qr(a).R ** 2), (TALL,)),
    ("pinv", lambda a: dnp.sum(dnp.linalg.pinv(a)), (TALL,)),
    ("norm-nuc", lambda a: dnp.linalg.norm(a, "nuc"), (TALL,)),
]


def _chain(y: Any) -> Any:
    def step(carry: Any, _: Any) -> tuple[Any, None]:
        return dnp.tanh(carry * carry[::-1] + 0.5 * carry), None

    last, _ = da.scan(step, y, None, length=20)
    return dnp.sum(last)


OTHER: list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...]]] = [
    ("scan", _chain, (np.linspace(-1.0, 1.0, 1000),)),
    ("nan-reductions", lambda x: dnp.nansum(x * x) + dnp.nanmax(dnp.sin(x)),
     (np.where(np.arange(12) % 5 == 0, np.nan, np.linspace(-1.0, 1.0, 12)),)),
    ("interp", lambda x: dnp.sum(dnp.interp(x, np.linspace(-2.0, 2.0, 7),
                                            np.cos(np.linspace(-2.0, 2.0, 7)))),
     (np.linspace(-1.5, 1.5, 50),)),
    ("convolve", lambda x: dnp.sum(dnp.convolve(x, np.array([0.25, 0.5, 0.25])) ** 2),
     (np.linspace(-1.0, 1.0, 40),)),
]


@pytest.mark.parametrize("mode", da.api.MODES)
@pytest.mark.parametrize(("name", "f", "args"), LINALG + OTHER,
                         ids=[c[0] for c in LINALG + OTHER])
def test_gradients_on_cupy_equal_numpy(
    mode: str, name: str, f: Callable[..., Any], args: tuple[np.ndarray, ...]
) -> None:
    import cupy

    argnums = tuple(range(len(args)))
    want = da.grad(f, argnums=argnums, mode=mode)(*args)
    got = da.grad(f, argnums=argnums, mode=mode)(*(cupy.asarray(a) for a in args))
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, cupy.ndarray), (name, type(g))
        np.testing.assert_allclose(cupy.asnumpy(g), w, rtol=1e-9, atol=1e-12, err_msg=name)
    jitted = da.jit(da.grad(f, argnums=argnums))(*(cupy.asarray(a) for a in args))
    for g, w in zip(jitted, want, strict=True):
        assert isinstance(g, cupy.ndarray), (name, type(g))
        np.testing.assert_allclose(cupy.asnumpy(g), w, rtol=1e-9, atol=1e-12, err_msg=name)


def _transcendental(x: Any) -> Any:
    return dnp.sum(dnp.sin(x) * dnp.exp(-x * x) + dnp.log1p(x * x) + 0.5 * x * x * x)


def test_fused_cupy_program_computes_the_unfused_bits() -> None:
    import cupy

    x = cupy.asarray(np.linspace(-3.0, 3.0, 100_003))
    fused = da.jit(da.value_and_grad(_transcendental))(x)
    with da.config.fusing(False):
        unfused = da.jit(da.value_and_grad(_transcendental))(x)
    np.testing.assert_array_equal(cupy.asnumpy(fused[1]), cupy.asnumpy(unfused[1]))
    assert float(fused[0]) == float(unfused[0])

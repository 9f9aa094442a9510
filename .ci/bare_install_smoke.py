"""Smoke test of a bare install (``pip install .``, no extras), run by ``.ci/test`` in a
fresh virtual environment: ``import dualarr`` and the core features work with the core
dependencies alone, and a feature that needs an extra names it."""

from __future__ import annotations

import numpy as np

import dualarr as da
import dualarr.numpy as dnp


def loss(x: da.Tensor, w: da.Tensor) -> da.Tensor:
    return dnp.sum(dnp.tanh(x * w) ** 2) + da.sum(da.build1(3, lambda i: x[i] * x[2 - i]))


def main() -> None:
    x, w = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    expected = 2 * np.tanh(x * w) * (1 - np.tanh(x * w) ** 2) * w + 2 * x[::-1]
    program = da.trace(loss, x, w)
    assert "build1" in str(program) or "sumOuter" in str(program), str(program)
    assert np.isclose(program(x, w), np.sum(np.tanh(x * w) ** 2) + 2 * x[0] * x[2] + x[1] ** 2)
    for mode in ("compiled", "interpret"):
        np.testing.assert_allclose(da.grad(loss, mode=mode)(x, w), expected, rtol=1e-12)
    np.testing.assert_allclose(da.jit(da.grad(loss))(x, w), expected, rtol=1e-12)
    value, tangent = da.jvp(dnp.sin, (x,), (w,))
    np.testing.assert_allclose(value, np.sin(x))
    np.testing.assert_allclose(tangent, np.cos(x) * w)
    np.testing.assert_allclose(da.vmap(lambda r: dnp.dot(r, w))(np.eye(3)), w)
    p = da.pipeline(loss, x, w)
    for stage in p.stages:
        assert str(getattr(p, stage)), stage
    try:
        program.graph()
    except da.DualarrError as error:
        assert isinstance(error, ImportError) and "dualarr[widgets]" in str(error), error
    else:
        raise AssertionError("drawing without graphviz did not raise")
    print("bare install: trace, grad in both modes, jit, jvp, vmap, dnp, every stage printed")


if __name__ == "__main__":
    main()

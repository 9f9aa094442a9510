"""Forward values of the public acceptance cases (shared/acceptance/horde-ad-cases.md).

Gradients arrive with the AD issues; here the programs are traced and evaluated.
"""

from __future__ import annotations

import numpy as np

import dualarr as da


def foo(x: da.Tensor, y: da.Tensor, z: da.Tensor) -> da.Tensor:
    w = x * da.sin(y)
    return da.atan2(z, w) + z * w


def test_t1_foo_value_elementwise_on_matrices() -> None:
    m = np.ones((2, 2))
    program = da.trace(lambda x, y, z: da.sum(foo(x, y, z)), 1.1 * m, 2.2 * m, 3.3 * m)
    np.testing.assert_allclose(program(1.1 * m, 2.2 * m, 3.3 * m), 16.96957456410211, rtol=1e-12)
    elementwise = da.trace(foo, 1.1 * m, 2.2 * m, 3.3 * m)(1.1 * m, 2.2 * m, 3.3 * m)
    np.testing.assert_allclose(elementwise, 4.242393641025528, rtol=1e-12)


def logistic(x: da.Tensor) -> da.Tensor:
    return 1.0 / (1.0 + da.exp(-x))


def test_t21_mnist_fcnn_forward_value() -> None:
    """afcnnMnist2 logistic softMax1 on the glyph [7,7,7] (float32)."""

    def fcnn(glyph, w1, b1, w2, b2, w3, b3):  # type: ignore[no-untyped-def]
        hidden1 = logistic(da.matmul(w1, glyph) + b1)
        hidden2 = logistic(da.matmul(w2, hidden1) + b2)
        out = da.matmul(w3, hidden2) + b3
        e = da.exp(out)
        return e / da.sum(e)

    f32 = np.float32
    glyph = np.array([7, 7, 7], dtype=f32)
    w1 = np.tile(np.array([1, 2, 3], dtype=f32), (4, 1))
    b1 = np.array([1, 2, 3, 4], dtype=f32)
    w2 = np.tile(np.array([1, 2, 3, 4], dtype=f32), (5, 1))
    b2 = np.arange(1, 6, dtype=f32)
    w3 = np.tile(np.arange(1, 6, dtype=f32), (2, 1))
    b3 = np.array([1, 2], dtype=f32)
    args = (glyph, w1, b1, w2, b2, w3, b3)
    got = da.trace(fcnn, *args)(*args)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [0.26894158, 0.73105836], rtol=1e-6)


def test_t7_overleaf_value() -> None:
    def overleaf(v: da.Tensor) -> da.Tensor:
        return da.sum(da.build1(50, lambda i: v[i % len(v)]))

    v = np.arange(28.0)
    assert da.trace(overleaf, v)(v) == sum(v[i % 28] for i in range(50))


def test_t14_concat_build_cb1_value() -> None:
    def cb1(r: da.Tensor) -> da.Tensor:
        return da.build1(
            7,
            lambda i: da.concatenate(
                [da.concatenate([da.replicate(5, r), da.from_list([da.to_float(i)])]),
                 da.replicate(13, r)]
            ),
        )

    got = da.trace(cb1, 1.5)(1.5)
    expected = np.array([[1.5] * 5 + [i] + [1.5] * 13 for i in range(7)])
    np.testing.assert_allclose(got, expected)

"""Example programs from the paper, shared by the demo, the notebooks and the tests."""

from __future__ import annotations

from ..lang.functions import build1, sum
from ..lang.tensor import Tensor


def fig18(x: Tensor) -> Tensor:
    """Paper Fig. 18: ``sum(build1 n (λi. x[i] * x[n-1-i]))``, one element of x's
    self-convolution."""
    n = x.shape[0]
    return sum(build1(n, lambda i: x[i] * x[n - 1 - i]))

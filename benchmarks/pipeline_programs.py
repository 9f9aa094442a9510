"""The programs that made the compile pipeline quadratic, by size (``n`` operations: a
chain step ``sin`` then ``*`` counts two; a let chain's ``n`` is its depth).

Shared by ``bench_pipeline.py`` (time and memory per stage) and
``tests/test_linear_pipeline.py`` (work counted per stage): a Python loop of elementwise
operations, a chain reusing its input at every step, let chains inside a ``build1`` with
each let in the next one's bound (value position) or in the previous one's body,
``grad`` of ``grad``, ``vmap`` of ``grad``, ``jacobian`` of ``grad``, a loop reading
captured arrays, and a chain reading one captured 20 MB matrix.  Each maker returns the
function and its arguments; the benchmark and the test then differentiate that function,
so the higher-order rows are one order higher still (``grad`` of ``sum ∘ vmap(grad f)``).
The body-position chain nests one Python lambda per let: raise
``sys.setrecursionlimit`` for thousands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import dualarr as da

Program = Callable[..., tuple[Callable[..., Any], tuple[np.ndarray, ...]]]


def elementwise_loop(n: int) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    def f(x: Any) -> Any:
        y = x
        for k in range(n):
            y = da.sin(y) if k % 3 == 0 else (y * 1.0001 if k % 3 == 1 else y + 0.5)
        return da.sum(y)

    return f, (np.linspace(0.0, 1.0, 10),)


def chain_reusing_input(n: int) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    def f(x: Any) -> Any:
        y = x
        for _ in range(n // 2):
            y = da.sin(y) * x
        return da.sum(y)

    return f, (np.linspace(0.0, 1.0, 10),)


def let_chain_in_value_position(
    n: int, rows: int = 20
) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    """Each let is the bound of the next: ``let t2 = (let t1 = … in sin t1) in …``."""

    def f(x: Any) -> Any:
        def row(i: Any) -> Any:
            y = x[i]
            for _ in range(n):
                y = da.let(y, lambda t: da.sin(t) * 0.99)
            return y

        return da.sum(da.build1(x.shape[0], row))

    return f, (np.linspace(0.0, 1.0, rows),)


def let_chain_in_body_position(
    n: int, rows: int = 20
) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    """Each let is in the previous one's body: ``let t1 = … in let t2 = … in …``."""

    def f(x: Any) -> Any:
        def row(i: Any) -> Any:
            def rest(t: Any, left: int) -> Any:
                if left == 0:
                    return t
                return da.let(da.sin(t) * 0.99, lambda u: rest(u, left - 1))

            return rest(x[i], n)

        return da.sum(da.build1(x.shape[0], row))

    return f, (np.linspace(0.0, 1.0, rows),)


def _sine_chain(n: int) -> Callable[[Any], Any]:
    """``sum(y)`` after ``y = sin(y) * 0.99`` ``n / 2`` times (``n`` operations): the
    function higher-order transformations differentiate."""

    def f(x: Any) -> Any:
        y = x
        for _ in range(n // 2):
            y = da.sin(y) * 0.99
        return da.sum(y)

    return f


def grad_of_grad(n: int) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    inner = da.grad(_sine_chain(n))
    return (lambda x: inner(x)), (np.asarray(0.3),)


def vmap_of_grad(n: int) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    """Per-example gradients of an ``n``-step chain, as one bulk program."""
    per_example = da.vmap(da.grad(_sine_chain(n)))
    return (lambda xs: da.sum(per_example(xs))), (np.linspace(0.0, 1.0, 15).reshape(5, 3),)


def jacobian_of_grad(n: int) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    """The Hessian of an ``n``-step chain (``jacobian`` of ``grad``), summed."""
    hessian = da.jacobian(da.grad(_sine_chain(n)))
    return (lambda x: da.sum(hessian(x))), (np.linspace(0.0, 1.0, 3),)


def closing_over_arrays(n: int) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    weights = [np.full(8, 1.0 + k / n) for k in range(n // 10 + 1)]

    def f(x: Any) -> Any:
        y = x
        for k in range(n // 2):
            y = da.sin(y) * weights[k % len(weights)]
        return da.sum(y)

    return f, (np.linspace(0.0, 1.0, 8),)


def closing_over_a_large_array(
    n: int, megabytes: float = 20.0
) -> tuple[Callable[..., Any], tuple[np.ndarray, ...]]:
    """A ``megabytes``-sized weight matrix, captured: one product with it, then an
    ``n``-operation chain that reads one of its columns at every tenth step.  The array
    is data (one constant, one copy), never source."""
    rows = 100
    columns = max(1, int(megabytes * 1e6 / 8 / rows))
    weights = np.random.default_rng(0).standard_normal((rows, columns)) / np.sqrt(columns)

    def f(x: Any) -> Any:
        y = da.tanh(da.matmul(weights, x))
        for k in range(max(1, (n - 2) // 2)):
            y = da.sin(y) * (weights[:, k] if k % 10 == 0 else 0.99)
        return da.sum(y)

    return f, (np.linspace(0.0, 1.0, columns),)


PROGRAMS: dict[str, Program] = {
    "elementwise loop": elementwise_loop,
    "chain reusing its input": chain_reusing_input,
    "let chain, value position": let_chain_in_value_position,
    "let chain, body position": let_chain_in_body_position,
    "grad of grad": grad_of_grad,
    "vmap of grad": vmap_of_grad,
    "jacobian of grad": jacobian_of_grad,
    "closing over arrays": closing_over_arrays,
    "closing over a 20 MB array": closing_over_a_large_array,
}

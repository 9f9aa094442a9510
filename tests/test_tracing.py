"""Tracing keeps sharing (the AST is a DAG) and every pass is iterative and linear."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.interp.evaluate import evaluate_many
from dualarr.lang.terms import Build1, Op, count_nodes, postorder


@contextlib.contextmanager
def shallow_stack(extra: int = 120) -> Iterator[None]:
    """Allow only ``extra`` more Python frames: any deep recursion fails loudly."""
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + extra)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def chain(y: da.Tensor, steps: int = 3000) -> da.Tensor:
    for _ in range(steps):
        y = 0.5 * (y + y - 1)
    return y


def expected_chain(y: np.ndarray, steps: int = 3000) -> np.ndarray:
    for _ in range(steps):
        y = 0.5 * (y + y - 1)
    return y


def test_a_value_used_twice_is_one_node() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        y = da.exp(x)
        return y * y

    program = da.trace(f, np.ones(3))
    out = program.term
    assert isinstance(out, Op) and out.args[0] is out.args[1]
    assert program.size == 3  # x, exp x, product


@contextlib.contextmanager
def lines_run() -> Iterator[list[int]]:
    """Count the lines of dualarr code executed in the block (``[count]``): work measured
    in Python operations, the same on a fast machine and on a busy one."""
    package = os.path.dirname(os.path.abspath(da.__file__)) + os.sep
    count = [0]

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            count[0] += 1
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(package) else None

    old = sys.gettrace()
    sys.settrace(calls)
    try:
        yield count
    finally:
        sys.settrace(old)


def chain_work(steps: int) -> tuple[int, dict[str, int]]:
    """The size of the chain's program, and the dualarr lines each pass over it runs."""
    x = np.linspace(-1, 1, 3)
    work: dict[str, int] = {}
    with lines_run() as traced:
        program = da.trace(lambda x: chain(x, steps), x)
    work["trace"] = traced[0]
    for name, action in (("print", str), ("evaluate", lambda p: p(x)), ("repr", repr)):
        with lines_run() as run:
            action(program.term if name == "repr" else program)
        work[name] = run[0]
    return program.size, work


def test_chain_of_3000_traces_prints_and_evaluates_without_recursion() -> None:
    x = np.linspace(-1, 1, 3)
    with shallow_stack():
        program = da.trace(lambda x: chain(x), x)
        printed = str(program)
        value = program(x)
        dump = repr(program.term)
    np.testing.assert_allclose(value, expected_chain(x))
    assert printed.count("let ") == 2999  # each shared step is one let
    assert dump.count("\n") == program.size


def test_tracing_printing_and_evaluating_are_linear_in_the_chain_length() -> None:
    # Work is counted, not timed (benchmarks/bench_tracing.py and bench_timing_claims.py
    # time it): doubling the chain doubles the program and the lines each pass runs; a
    # quadratic pass would run about 4x the lines.
    size, work = chain_work(750)
    size2, work2 = chain_work(1500)
    assert size2 - 1 == 2 * (size - 1)  # x, then seven nodes per step
    for name in work:
        assert work[name] > size, name  # every node is visited
        assert 1.95 < work2[name] / work[name] < 2.05, (name, work[name], work2[name])


def test_chain_inside_build1_without_recursion() -> None:
    x = np.linspace(-1, 1, 4)
    with shallow_stack():
        program = da.trace(lambda x: da.build1(4, lambda i: chain(x[i])), x)
        printed = str(program)
        value = program(x)
    np.testing.assert_allclose(value, expected_chain(x))
    assert "build1 4 (\\i.\n  let t1 = x[i] in" in printed


def test_3500_nested_explicit_lets_inside_a_build() -> None:
    def body(x: da.Tensor, k: int) -> da.Tensor:
        if k == 0:
            return x
        return da.let(x * 0.5 + 1.0, lambda v: body(v, k - 1))

    x = np.linspace(0, 1, 3)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)  # only the *user's* recursive helper needs the depth
    try:
        program = da.trace(lambda x: da.build1(3, lambda i: body(x[i], 3500)), x)
    finally:
        sys.setrecursionlimit(old)
    with shallow_stack():
        value = program(x)
        printed = str(program)
    expected = x.copy()
    for _ in range(3500):
        expected = expected * 0.5 + 1.0
    np.testing.assert_allclose(value, expected)
    assert printed.count("let v") == 3500


def test_deeply_nested_builds() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        return da.build(
            (2, 2, 2, 2, 2),
            lambda a, b, c, d, e: x[a] * x[b] + x[c] * x[d] - x[e],
        )

    x = np.arange(1.0, 3.0)
    got = da.trace(f, x)(x)
    ref = np.einsum("a,b->ab", x, x)[:, :, None, None, None] + np.einsum("c,d->cd", x, x)[
        None, None, :, :, None
    ] - x[None, None, None, None, :]
    np.testing.assert_allclose(got, ref)
    assert sum(isinstance(n, Build1) for n in postorder(da.trace(f, x).outputs)) == 5


def test_loop_invariant_subterms_are_evaluated_once_per_program() -> None:
    calls = {"n": 0}
    real = np.exp

    def counting_exp(a: np.ndarray) -> np.ndarray:
        calls["n"] += 1
        return np.asarray(real(a))

    from dualarr.interp import evaluate as ev

    program = da.trace(lambda x: da.build1(50, lambda i: da.exp(x)[0] + da.to_float(i)), np.ones(3))
    old = ev.ELEMENTWISE["exp"]
    ev.ELEMENTWISE["exp"] = counting_exp
    try:
        program(np.ones(3))
    finally:
        ev.ELEMENTWISE["exp"] = old
    assert calls["n"] == 1


def test_shared_outputs_are_computed_once() -> None:
    def f(x: da.Tensor) -> tuple[da.Tensor, da.Tensor]:
        y = da.sin(x)
        return y, y * 2

    program = da.trace(f, np.ones(2))
    a, b = program(np.ones(2))
    np.testing.assert_allclose(b, 2 * a)
    assert count_nodes(program.outputs) == 5
    assert len(evaluate_many(list(program.outputs), program.bind(np.ones(2)))) == 2


def test_trace_with_shape_specs_and_call_later() -> None:
    program = da.trace(
        lambda x, n: x * da.to_float(n), da.ShapeSpec((2, 3)), da.ShapeSpec((), "int32")
    )
    assert program.signature() == "(x : float64[2,3], n : int64[]) -> float64[2,3]"
    np.testing.assert_allclose(program(np.ones((2, 3)), np.int32(4)), 4 * np.ones((2, 3)))
    with pytest.raises(da.ShapeError):
        da.ShapeSpec((-1,))


def test_python_numbers_and_int_arrays_as_inputs() -> None:
    program = da.trace(lambda a, k: a * da.to_float(k), 2.0, np.array([1, 2], dtype=np.int8))
    np.testing.assert_allclose(program(3.0, np.array([1, 2], dtype=np.int8)), [3.0, 6.0])


def test_constant_outputs() -> None:
    program = da.trace(lambda x: 3.0, np.ones(2))
    assert program(np.ones(2)) == 3.0


def test_programs_are_reusable_and_independent() -> None:
    p1 = da.trace(lambda x: x + 1, np.ones(2))
    p2 = da.trace(lambda x: x * 3, np.ones(2))
    np.testing.assert_allclose(p1(np.ones(2)), [2, 2])
    np.testing.assert_allclose(p2(np.ones(2)), [3, 3])
    assert [v.id for v in p1.inputs] == [v.id for v in p2.inputs] == [1]
    assert p1.inputs[0] is not p2.inputs[0]

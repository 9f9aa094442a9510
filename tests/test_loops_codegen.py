"""Code generation of loops (horde-ad's mapAccum; not in the paper): a traced ``da.scan``
or ``da.fori_loop`` becomes one Python ``for`` around its body's code.

The generated program computes the reference evaluator's bits, fused and unfused, on
NumPy and under ``array_api_strict``; its source does not grow with the number of
steps; its stacks are fresh arrays, and no kernel buffer a carry still holds is
written into.
"""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import array_api_strict as xs
import numpy as np
import optree
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dualarr as da
import dualarr.numpy as dnp
from dualarr.codegen import generate as codegen
from dualarr.codegen.generate import compile_program, generate
from dualarr.interp.evaluate import evaluate_many
from dualarr.lang.program import Program
from dualarr.lang.terms import DType, IdSupply, LoopOutput, MapAccum, Op, children, fresh_var

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]

pytestmark = pytest.mark.usefixtures("fused_small_arrays")  # kernels for any size


def flat(f: Callable[..., Any]) -> Callable[..., tuple[Any, ...]]:
    """``f`` returning the leaves of its result tree (a traced program's outputs)."""

    def leaves(*args: Any) -> tuple[Any, ...]:
        return tuple(optree.tree_leaves(f(*args)))

    return leaves


def rnn(h: Any, x: Any, w: Any) -> Any:
    def body(c: Any, xi: Any) -> Any:
        c2 = dnp.tanh(c * w + xi)
        return c2, c2.sum()

    c, ys = da.scan(body, h, x)
    return c.sum() + ys.sum(), ys


def trees(a: Any, b: Any, x: Any, w: Any) -> Any:
    """Carries, xs and ys as trees: a dict, a tuple, a tuple holding a list."""

    def body(c: Any, rows: Any) -> Any:
        u, v = rows
        a2 = c["a"] * w + u
        b2 = c["b"] - v * c["a"]
        return {"a": a2, "b": b2}, (a2 * b2, [dnp.sin(u) + b2.sum()])

    return da.scan(body, {"a": a, "b": b * 2.0}, (x, x * 0.5))


def backwards(h: Any, x: Any) -> Any:
    return da.scan(lambda c, xi: (c * 0.9 + xi, c), h, x, reverse=True)


def no_xs(h: Any, x: Any) -> Any:
    """``length`` without xs (the steps read no rows)."""
    return da.scan(lambda c, _: (c * 0.5 + 1.0, dnp.exp(c)), h, length=x.shape[0])


def int_carries(h: Any, x: Any) -> Any:
    def body(c: Any, xi: Any) -> Any:
        i, acc = c
        return (i + 1, acc + xi * i.astype(xi.dtype)), i * 2

    return da.scan(body, (np.int64(0), h), x)


def nested(h: Any, x: Any, w: Any) -> Any:
    """A scan inside a scan's body: the inner loop reads the outer carry."""

    def outer(c: Any, row: Any) -> Any:
        def inner(d: Any, e: Any) -> Any:
            d2 = d * w + e * c
            return d2, d2 * d2

        d, zs = da.scan(inner, c, row)
        return d + zs.sum(), zs

    return da.scan(outer, h.sum(), x)


def fori(h: Any, x: Any) -> Any:
    return da.fori_loop(0, x.shape[0], lambda i, c: dnp.sin(c) * x[i] + i, h)


def rotate(h: Any, x: Any) -> Any:
    """Each next carry reads the others' old values (a Fibonacci step)."""
    return da.scan(lambda c, _: ((c[1], c[0] + c[1]), c[0]), (h, h * 2.0), length=x.shape[0])


def held(h: Any, x: Any, w: Any) -> Any:
    """The previous carry kept as a second carry and as a row of ys, while the same
    kernel computes the next one: a recycled buffer must not be one of them."""

    def body(c: Any, xi: Any) -> Any:
        now, _ = c
        return (now * w + xi, now), now

    return da.scan(body, (h, h), x)


@dataclass(frozen=True)
class Case:
    f: Callable[..., Any]
    make: Callable[[np.random.Generator, int], tuple[Any, ...]]
    computed: bool = True  # after a step, every result is computed (none is an input)


CASES: dict[str, Case] = {
    "rnn": Case(rnn, lambda r, n: (r.normal(size=3), r.normal(size=(n, 3)), r.normal(size=3))),
    "trees": Case(
        trees, lambda r, n: (r.normal(size=4), r.normal(size=4), r.normal(size=(n, 4)), r.normal())
    ),
    "backwards": Case(backwards, lambda r, n: (r.normal(size=2), r.normal(size=(n, 2)))),
    "no_xs": Case(no_xs, lambda r, n: (r.normal(size=3), np.zeros((n, 0)))),
    "int_carries": Case(int_carries, lambda r, n: (r.normal(size=2), r.normal(size=(n, 2)))),
    "nested": Case(nested, lambda r, n: (r.normal(size=2), r.normal(size=(n, 3)), r.normal())),
    "fori": Case(fori, lambda r, n: (r.normal(size=(2, 2)), r.normal(size=(n, 2, 2)))),
    "rotate": Case(rotate, lambda r, n: (r.normal(size=2), np.zeros((n, 0)))),
    "held": Case(  # its second carry is the first's value one step before: h after one
        held,
        lambda r, n: (r.normal(size=5), r.normal(size=(n, 5)), r.normal(size=5)),
        computed=False,
    ),
}


def traced(name: str, steps: int, seed: int = 0) -> tuple[Program, tuple[np.ndarray, ...]]:
    case = CASES[name]
    arrays = tuple(np.asarray(a) for a in case.make(np.random.default_rng(seed), steps))
    return da.trace(flat(case.f), *arrays), arrays


def reference(program: Program, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    return evaluate_many(program.outputs, dict(zip(program.inputs, arrays, strict=True)))


def assert_bits(got: Sequence[Any], want: Sequence[np.ndarray]) -> None:
    """The same arrays, bit for bit: type, shape and every byte."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g, w = np.ascontiguousarray(g), np.ascontiguousarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        assert g.tobytes() == w.tobytes(), (g, w)


def loops(program: Program) -> Iterator[MapAccum]:
    seen: set[int] = set()
    stack = list(program.outputs)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MapAccum):
            yield node
        stack.extend(children(node))


# -- the generated loop computes the evaluator's bits ---------------------------------------


@settings(max_examples=150, suppress_health_check=SLOW_OK, deadline=None)
@given(st.sampled_from(sorted(CASES)), st.integers(0, 6), st.integers(0, 2**32 - 1), st.booleans())
def test_generated_loops_compute_the_evaluators_bits(
    name: str, steps: int, seed: int, fuse: bool
) -> None:
    program, arrays = traced(name, steps, seed)
    got = compile_program(program.inputs, program.outputs, fuse=fuse)(*arrays)
    assert_bits(got, reference(program, arrays))


@pytest.mark.parametrize("fuse", [False, True])
def test_both_fusion_modes_run_their_own_code(fuse: bool) -> None:
    """Fused, the body's elementwise work runs in kernels inside the loop."""
    program, arrays = traced("trees", 4)
    code = generate(program.inputs, program.outputs, fuse=fuse)
    body = code.source.split("for step", 1)[1]
    assert bool(code.kernels) is fuse
    assert ("kernel" in body) is fuse
    got = compile_program(program.inputs, program.outputs, fuse=fuse)(*arrays)
    assert_bits(got, reference(program, arrays))


@pytest.mark.parametrize("fuse", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_loops_run_on_array_api_strict(name: str, fuse: bool) -> None:
    """Under the array API alone: rows read as ``x[t, ...]``, rows of the stacks
    written by item assignment."""
    program, arrays = traced(name, 4)
    compiled = compile_program(program.inputs, program.outputs, fuse=fuse)
    got = compiled(*(xs.asarray(a) for a in arrays))
    assert all(type(g) is type(xs.asarray(0.0)) for g in got)
    assert_bits([np.asarray(g._array) for g in got], reference(program, arrays))


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("name", ["trees", "nested", "rotate"])
def test_a_loop_split_across_segments_keeps_its_carries(name: str, size: int) -> None:
    """A long body runs in segments (:func:`dualarr.codegen.generate.compile_function`):
    a carry bound in one segment and rebound by the loop in the next reaches the later
    ones with its final value."""
    program, arrays = traced(name, 5)
    saved = codegen.SEGMENT_STATEMENTS
    codegen.SEGMENT_STATEMENTS = size
    try:
        segmented = compile_program(program.inputs, program.outputs, fuse=False)
    finally:
        codegen.SEGMENT_STATEMENTS = saved
    statements = generate(program.inputs, program.outputs, fuse=False).statements
    assert len(statements) + 1 > size  # with the returned tuple: several segments
    assert_bits(segmented(*arrays), reference(program, arrays))


# -- the program's size does not depend on the number of steps --------------------------


@pytest.mark.parametrize("fuse", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_source_has_as_many_lines_for_ten_steps_as_for_ten_thousand(
    name: str, fuse: bool
) -> None:
    short, _ = traced(name, 10)
    long, _ = traced(name, 10**4)
    short_source = generate(short.inputs, short.outputs, fuse=fuse).source
    long_source = generate(long.inputs, long.outputs, fuse=fuse).source
    assert short_source.count("\n") == long_source.count("\n")
    count = sum(1 for _ in loops(short))
    assert len(re.findall(r"^\s*for step\d+ in range\(", short_source, re.M)) == count
    # the same text but for the numbers of steps
    assert re.sub(r"\d+", "N", short_source) == re.sub(r"\d+", "N", long_source)


def test_ten_thousand_steps_run_as_ten_thousand_iterations_of_one_body() -> None:
    program, arrays = traced("rnn", 10**4)
    got = compile_program(program.inputs, program.outputs, fuse=True)(*arrays)
    assert_bits(got, reference(program, arrays))


# -- memory: fresh stacks, inputs untouched, held buffers never reused ----------------------


@settings(max_examples=60, suppress_health_check=SLOW_OK, deadline=None)
@given(st.sampled_from(sorted(CASES)), st.integers(1, 5), st.booleans())
def test_results_are_fresh_and_inputs_untouched(name: str, steps: int, fuse: bool) -> None:
    program, arrays = traced(name, steps)
    before = [a.copy() for a in arrays]
    got = compile_program(program.inputs, program.outputs, fuse=fuse)(*arrays)
    for a, b in zip(arrays, before, strict=True):
        np.testing.assert_array_equal(a, b)  # nothing is written into an input
    for k, (g, out) in enumerate(zip(got, program.outputs, strict=True)):
        is_stack = (
            isinstance(out, LoopOutput)
            and isinstance(out.loop, MapAccum)
            and out.index >= len(out.loop.carry_vars)
        )
        if is_stack or CASES[name].computed:
            assert not any(np.shares_memory(g, a) for a in arrays), (name, k)
        if is_stack:  # a stack is its own array: no other result shares it
            others = [h for j, h in enumerate(got) if j != k and program.outputs[j] is not out]
            assert not any(np.shares_memory(g, h) for h in others), (name, k)


@pytest.mark.parametrize("name", ["held", "rnn", "trees"])
def test_results_held_across_calls_are_never_written_into(name: str) -> None:
    """Kernel sites recycle their buffers (:class:`dualarr.codegen.buffers.SpareBuffer`):
    a second call leaves the first call's final carries and stacks as they were."""
    program, arrays = traced(name, 6)
    compiled = compile_program(program.inputs, program.outputs, fuse=True)
    first = compiled(*arrays)
    kept = [np.array(a, copy=True) for a in first]
    other = tuple(a * 0.5 + 1.0 if a.dtype.kind == "f" else a for a in arrays)
    second = compiled(*other)
    assert_bits(first, kept)
    assert_bits(second, reference(program, other))


# -- what the body computes from loop invariants alone runs once, before the loop -------


def test_work_on_loop_invariants_alone_is_computed_before_the_loop() -> None:
    """A body term that reads only invariants lives where they do: before the ``for``
    (the invariants are lets around the loop), computed once."""
    supply = IdSupply(1)
    f64 = DType.FLOAT64
    h = fresh_var(supply, "h", (3,), f64)
    w = fresh_var(supply, "w", (3,), f64)
    rows = fresh_var(supply, "rows", (4, 3), f64)
    c = fresh_var(supply, "c", (3,), f64)
    x = fresh_var(supply, "x", (3,), f64)
    k = fresh_var(supply, "k", (3,), f64)
    scale = Op("exp", (k,))
    loop = MapAccum(
        4,
        False,
        (c,),
        (x,),
        (k,),
        (h,),
        (rows,),
        (w,),
        (
            Op("add", (Op("mul", (c, scale)), x)),
            Op("mul", (scale, x)),
        ),
    )
    outputs = [LoopOutput(0, loop), LoopOutput(1, loop)]
    r = np.random.default_rng(1)
    arrays = (r.normal(size=3), r.normal(size=3), r.normal(size=(4, 3)))
    want = evaluate_many(outputs, dict(zip((h, w, rows), arrays, strict=True)))
    for fuse in (False, True):
        source = generate([h, w, rows], outputs, fuse=fuse).source
        before, inside = source.split("for step", 1)
        assert "exp" in before and "exp" not in inside
        got = compile_program([h, w, rows], outputs, fuse=fuse)(*arrays)
        assert_bits(got, want)


def test_a_loop_of_no_steps_returns_its_initial_carries_and_empty_stacks() -> None:
    program, arrays = traced("trees", 0)
    source = generate(program.inputs, program.outputs).source
    assert "range(0)" in source
    got = compile_program(program.inputs, program.outputs)(*arrays)
    assert [g.shape for g in got] == [(4,), (4,), (0, 4), (0, 4)]
    assert_bits(got, reference(program, arrays))


# -- residuals: the gradient keeps what the unrolled program keeps, one array a step -------


def _chain_step(y: Any, idx: Any) -> Any:
    return dnp.tanh(y * y[::-1] + 0.5 * y[idx])


def scan_chain(steps: int) -> Callable[[Any, Any], Any]:
    """``bench_gradients.py``'s workload S: the chain as one ``da.scan``."""

    def chain(x: Any, idx: Any) -> Any:
        y, _ = da.scan(lambda c, _: (_chain_step(c, idx), None), x, length=steps)
        return dnp.sum(y)

    return chain


def unrolled_chain(steps: int) -> Callable[[Any, Any], Any]:
    """Workload C: the same chain as a Python loop, unrolled by tracing."""

    def chain(x: Any, idx: Any) -> Any:
        y = x
        for _ in range(steps):
            y = _chain_step(y, idx)
        return dnp.sum(y)

    return chain


def chain_inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(3)
    return r.normal(size=n), r.permutation(n).astype(np.int64)


@pytest.mark.parametrize("fuse", [False, True])
def test_residuals_only_loops_read_are_lists_of_the_rows_the_body_made(fuse: bool) -> None:
    """The saving loop hands each residual row to the cotangent loop by reference: no
    stack is allocated and no step copies a row in or out.  ``1 - t*t`` of the
    ``tanh`` is not saved: the carries are, and the cotangent loop recomputes it."""
    x, idx = chain_inputs(50)
    source = da.pipeline(scan_chain(7), x, idx, fuse=fuse).python
    assert source.count("= [None] * 7") == 2  # the carries going in and coming out
    assert "xp.empty" not in source
    assert not re.search(r"\[step\d+, \.\.\.\]", source)
    if not fuse:  # (a kernel's expression is in a comment above the loops)
        saving, cotangent = source.split("for step")[1:]
        assert "1.0 -" not in saving and "1.0 -" in cotangent


@pytest.mark.parametrize("steps", [1, 5, 40])
def test_the_scan_gradient_equals_the_unrolled_one_and_the_interpreters(steps: int) -> None:
    x, idx = chain_inputs(30)
    compiled = da.grad(scan_chain(steps))(x, idx)
    interpreted = da.grad(scan_chain(steps), mode="interpret")(x, idx)
    unrolled = da.grad(unrolled_chain(steps))(x, idx)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_allclose(compiled, unrolled, rtol=1e-12, atol=1e-300)


def test_the_scan_gradient_holds_one_array_a_step() -> None:
    """Counted in bytes (tracemalloc's peak of one steady call), not timed: the saved
    residuals of 100 steps are the 100 carries, as the unrolled program keeps them, not
    a second stack of ``1 - t*t`` beside them (which made the peak 200 arrays)."""
    x, idx = chain_inputs(1000)
    gradient = da.jit(da.grad(scan_chain(100)))
    gradient(x, idx)
    gradient(x, idx)  # kernel sites hold their spare buffers from here on
    tracemalloc.start()
    gradient(x, idx)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert 100 * x.nbytes < peak < 110 * x.nbytes, peak / x.nbytes

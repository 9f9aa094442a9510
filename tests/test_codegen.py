"""Code generation (paper §7.5): generated Python agrees with the reference evaluator."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs

import dualarr
from dualarr.codegen import generate as codegen
from dualarr.codegen.generate import HELPERS, compile_program, generate
from dualarr.interp.evaluate import all_in_range, evaluate_many
from dualarr.lang.errors import DualarrError
from dualarr.lang.program import Program
from dualarr.lang.terms import (
    Build1,
    Const,
    DType,
    FromList,
    Gather,
    IdSupply,
    Index,
    Let,
    Op,
    Replicate,
    Term,
    Var,
    fresh_var,
)
from dualarr.pipeline import vectorise_program
from dualarr.teach.examples import fig18

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


def assert_same(got: np.ndarray, want: np.ndarray, dtype: DType) -> None:
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if dtype.is_float:
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def test_fig18_source_is_readable_python_and_reimports(tmp_path: Path) -> None:
    x = np.arange(1.0, 11.0)
    program, _ = vectorise_program(dualarr.trace(fig18, x))
    code = generate(program.inputs, program.outputs)
    source = code.source
    ast.parse(source)
    assert source.startswith("def program(xp, helpers, constants, x):")
    assert "t1 = x[9::-1]" in source  # the reversing gather is a strided view
    assert 'helpers.contract(xp, "a,a->", x, t1)' in source
    body = [line.strip() for line in source.splitlines()[2:]]
    statements = [line for line in body if not line.startswith("#")]
    assert len(statements) == 2  # the view, the return
    path = tmp_path / "fig18_generated.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("fig18_generated", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (got,) = module.program(np, HELPERS, code.constants, x)
    want = evaluate_many(program.outputs, {program.inputs[0]: x})[0]
    assert_same(np.asarray(got), want, DType.FLOAT64)
    assert float(got) == float(np.sum(x * x[::-1]))


def test_a_gather_with_data_dependent_indices_runs_on_an_index_grid() -> None:
    x = np.arange(10.0)
    idx = np.array([3, 0, 12, -1, 9])
    def f(x: Any, j: Any) -> Any:
        return dualarr.gather((5,), x, lambda i: ((j[i] * 2 + i) % 11,))

    program, _ = vectorise_program(dualarr.trace(f, x, idx))
    source = generate(program.inputs, program.outputs).source
    assert "= helpers.grid((5,))" in source and "helpers.gather(x, [" in source
    (got,) = compile_program(program.inputs, program.outputs)(x, idx)
    np.testing.assert_array_equal(got, [6.0, 1.0, 4.0, 1.0, 0.0])


def test_compiled_program_caches_and_exposes_source() -> None:
    x = np.arange(1.0, 6.0)
    program, _ = vectorise_program(dualarr.trace(fig18, x))
    compiled = compile_program(program.inputs, program.outputs)
    assert "def program(" in compiled.source
    assert compiled(x)[0] == compiled(x)[0] == float(np.sum(x * x[::-1]))


def test_build1_is_rejected() -> None:
    supply = IdSupply()
    x = fresh_var(supply, "x", (3,), DType.FLOAT64)
    i = fresh_var(supply, "i", (), DType.INT64)
    from dualarr.lang.terms import Index

    term = Build1(3, i, Index(x, (i,)))
    with pytest.raises(DualarrError, match="build1"):
        generate([x], [term])


def test_lets_and_shared_nodes_get_one_line_each() -> None:
    supply = IdSupply()
    x = fresh_var(supply, "x", (4,), DType.FLOAT64)
    y = fresh_var(supply, "y", (4,), DType.FLOAT64)
    s = Op("sin", (x,))
    term = Let(y, Op("mul", (s, s)), Op("add", (y, Op("exp", (y,)))))
    source = generate([x], [term], fuse=False).source
    assert "t1 = xp.sin(x)" in source
    assert "y = t1 * t1" in source
    assert "return (y + xp.exp(y),)" in source
    value = np.linspace(-1.0, 1.0, 4)
    (got,) = compile_program([x], [term])(value)
    assert_same(got, evaluate_many([term], {x: value})[0], DType.FLOAT64)


def test_integer_totality_rules() -> None:
    supply = IdSupply()
    a = fresh_var(supply, "a", (5,), DType.INT64)
    b = fresh_var(supply, "b", (5,), DType.INT64)
    outs: list[Term] = [Op("quot", (a, b)), Op("rem", (a, b))]
    av, bv = np.array([7, -7, 3, 0, 5]), np.array([2, 2, 0, 0, -3])
    got = compile_program([a, b], outs)(av, bv)
    np.testing.assert_array_equal(got[0], [3, -4, 3, 0, -2])
    np.testing.assert_array_equal(got[1], [1, 1, 3, 0, -1])


@settings(max_examples=500, suppress_health_check=SLOW_OK, deadline=None)
@given(programs())
def test_generated_programs_agree_with_evaluator(gp: GeneratedProgram) -> None:
    program, _ = vectorise_program(gp.program())
    compiled = compile_program(program.inputs, program.outputs)
    env = dict(zip(program.inputs, gp.arrays, strict=True))
    want = evaluate_many(program.outputs, env)
    got = compiled(*gp.arrays)
    assert len(got) == len(want)
    for g, w, term in zip(got, want, program.outputs, strict=True):
        assert_same(g, w, term.dtype)


@settings(max_examples=200, suppress_health_check=SLOW_OK, deadline=None)
@given(programs(), st.integers(1, 4))
def test_a_program_run_in_segments_agrees_with_one_function(
    gp: GeneratedProgram, size: int
) -> None:
    """Segments of ``size`` statements (a long body's compiled form) run the same code."""
    program, _ = vectorise_program(gp.program())
    whole = compile_program(program.inputs, program.outputs)
    saved = codegen.SEGMENT_STATEMENTS
    codegen.SEGMENT_STATEMENTS = size
    try:
        segmented = compile_program(program.inputs, program.outputs)
    finally:
        codegen.SEGMENT_STATEMENTS = saved
    assert segmented.source == whole.source
    for g, w, term in zip(segmented(*gp.arrays), whole(*gp.arrays), program.outputs, strict=True):
        assert_same(g, w, term.dtype)


def test_a_long_body_is_compiled_in_bounded_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython's ``compile()`` grows faster than its input, so no unit passed to it holds
    more than ``SEGMENT_STATEMENTS`` statements (counted, not timed)."""
    units: list[int] = []

    def counting_compile(source: str, filename: str, mode: str) -> Any:
        (unit,) = ast.parse(source).body  # one segment's function: statements, return
        assert isinstance(unit, ast.FunctionDef)
        units.append(len(unit.body) - 1)
        return compile(source, filename, mode)

    monkeypatch.setattr(codegen, "compile", counting_compile, raising=False)
    supply = IdSupply()
    x = fresh_var(supply, "x", (3,), DType.FLOAT64)
    term: Term = x
    for _ in range(2500):
        term = Op("sin", (Op("mul", (term, x)),))
        term = Op("add", (term, term))  # shared: one named statement per step
    compiled = compile_program([x], [term])
    assert len(units) >= 3 and max(units) <= codegen.SEGMENT_STATEMENTS
    value = np.array([0.1, -0.2, 0.3])
    want = value
    for _ in range(2500):
        want = 2 * np.sin(want * value)
    np.testing.assert_allclose(compiled(value)[0], want)


@pytest.mark.parametrize("fuse", [False, True])
def test_deep_chain_compiles_without_recursion(fuse: bool) -> None:
    supply = IdSupply()
    x = fresh_var(supply, "x", (3,), DType.FLOAT64)
    depth = 3000
    term: Term = x
    half = Const(np.full(3, 0.5))
    for _ in range(depth):
        term = Op("add", (Op("mul", (Op("sin", (term,)), half)), x))
    # and a 3000-deep nest of lets on top of it
    for k in range(depth):
        v = Var(supply.fresh(), f"y{k}", (3,), DType.FLOAT64)
        term = Let(v, term, Op("sub", (v, half)))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        compiled = compile_program([x], [term], fuse=fuse)
    finally:
        sys.setrecursionlimit(limit)
    if fuse:  # kernels of a bounded size: one per few dozen operations
        assert len(compiled.kernels) > 3 * depth // 48
        assert all(k.operations <= 48 for k in compiled.kernels)
    else:
        assert compiled.source.count("\n") > depth
    value = np.array([0.1, -0.2, 0.3])
    (got,) = compiled(value)
    want = value.copy()
    for _ in range(depth):
        want = np.sin(want) * 0.5 + value
    assert_same(got, want - 0.5 * depth, DType.FLOAT64)


def test_index_function_with_array_work_falls_back_to_a_loop() -> None:
    from dualarr.lang.terms import Gather, Index, Replicate

    supply = IdSupply()
    x = fresh_var(supply, "x", (4,), DType.FLOAT64)
    i = fresh_var(supply, "i", (), DType.INT64)
    # [i, i, i][1] - 1: an array computed from i inside the index function
    comp = Op("sub", (Index(Replicate(3, i), (Const(np.asarray(1)),)), Const(np.asarray(1))))
    term = Gather((5,), x, (i,), (comp,))
    compiled = compile_program([x], [term])
    assert "for (i,) in helpers.points((5,)):" in compiled.source
    value = np.array([1.0, 2.0, 3.0, 4.0])
    (got,) = compiled(value)
    assert_same(got, evaluate_many([term], {x: value})[0], DType.FLOAT64)
    np.testing.assert_array_equal(got, [0.0, 1.0, 2.0, 3.0, 4.0])


def test_a_let_shared_inside_and_outside_a_build1_compiles() -> None:
    """The bot rewrites the copy under ``build1`` and keeps the other: two nodes bind
    ``x``; code generation renames one (found by Hypothesis)."""
    x0 = Var(1, "x0", (), DType.FLOAT64)
    x = Var(2, "x", (), DType.INT64)
    i = Var(3, "i", (), DType.INT64)
    table = Const(np.array([0.0, 5.0]))
    one, two = Const(np.array(1)), Const(np.array(2))
    let = Let(x, one, Index(table, (Op("quot", (Op("add", (x, one)), two)),)))
    inner = Gather((), Build1(1, i, let), (), (Const(np.array(0)),))
    term = Op("add", (Op("add", (let, inner)), x0))
    program, _ = vectorise_program(Program("p", (x0,), (term,), False, IdSupply(10)))
    (got,) = compile_program(program.inputs, program.outputs)(np.array(1.0))
    assert got == 11.0 == evaluate_many(program.outputs, {x0: np.array(1.0)})[0]


def test_an_in_range_injective_scatter_is_a_slice_assignment() -> None:
    """The transpose of ``x[0:4]`` pads with zeros: ``zeros``, one slice assigned, and no
    index arrays; a reversing or transposing scatter too."""
    x = np.arange(5.0)

    def head(x: dualarr.Tensor) -> dualarr.Tensor:
        return dualarr.sum(dualarr.build1(4, lambda i: x[i] * dualarr.to_float(i)))

    source = dualarr.pipeline(head, x).python
    assert "t2 = xp.zeros((5,), dtype=xp.float64)" in source
    assert "[0:4] = " in source and "helpers.scatter" not in source
    np.testing.assert_array_equal(dualarr.grad(head)(x), [0.0, 1.0, 2.0, 3.0, 0.0])

    def tail_reversed(m: dualarr.Tensor) -> dualarr.Tensor:  # rows 3, 2, 1 of m, transposed
        picked = dualarr.gather((3, 2), m, lambda i, j: (3 - i, j))
        return dualarr.sum(dualarr.transpose(picked, (1, 0)) * np.arange(6.0).reshape(2, 3))

    m = np.ones((5, 2))
    want = np.zeros((5, 2))
    want[3:0:-1] = np.arange(6.0).reshape(2, 3).T
    np.testing.assert_array_equal(dualarr.grad(tail_reversed)(m), want)
    np.testing.assert_array_equal(dualarr.grad(tail_reversed, mode="interpret")(m), want)


SPECS = ["a,a->", "ab,b->a", "ab,ab->", "ab,ab->ba", "ab,bc->ac", "ab,ac->bc", "abc,bc->a",
         "ab,b->ab", "abc,ac->ab"]


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(SPECS), st.lists(st.integers(1, 3), min_size=3, max_size=3))
def test_contract_agrees_with_einsum_on_every_shape(spec: str, dims: list[int]) -> None:
    """The one-matmul (or vecdot) contraction has einsum's shape and values, size-1
    dimensions included (a (1,1) inner product is not a scalar)."""
    from dualarr.interp.arrays import contract

    size = dict(zip("abc", dims, strict=True))
    left, right = spec.split("->")[0].split(",")
    rng = np.random.default_rng(sum(dims))
    a = rng.normal(size=[size[c] for c in left])
    b = rng.normal(size=[size[c] for c in right])
    got = contract(np, spec, a, b)
    want = np.einsum(spec, a, b)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_array_constants_are_data_not_source() -> None:
    """A captured array reaches the generated function as an entry of its constant table
    (named once, its shape in a comment), never as a literal; the source stays small."""
    big = np.random.default_rng(0).normal(size=(200, 300))
    small = np.array([1.0, 2.0, 3.0])

    def f(x: Any) -> Any:
        return dualarr.sum(dualarr.matmul(big, x)) + dualarr.sum(x[:3] * small)

    x = np.linspace(0.0, 1.0, 300)
    program, _ = vectorise_program(dualarr.trace(f, x))
    code = generate(program.inputs, program.outputs)
    assert len(code.source) < 2_000
    assert "k1 = constants[0]  # float64[200,300]" in code.source
    assert "float64[3]: [1. 2. 3.]" in code.source
    assert any(c.shape == big.shape and np.array_equal(c, big) for c in code.constants)
    compiled = compile_program(program.inputs, program.outputs)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, np.sum(big @ x) + np.sum(x[:3] * small))


@pytest.mark.parametrize(
    ("positions", "in_range"), [([2, 0, 1], True), ([0, 7, 2], False), ([-1, 1, 1], False)]
)
def test_constant_indices_are_range_checked_at_code_generation(
    positions: list[int], in_range: bool
) -> None:
    """A gather and a scatter by a constant index array are range-checked once, when the
    code is generated: the calls carry the verdict (no check when run), and out of range
    the totality semantics hold (reads give 0, writes are dropped)."""
    from dualarr.lang.terms import Gather, Index, Scatter

    supply = IdSupply()
    x = fresh_var(supply, "x", (3,), DType.FLOAT64)
    i = fresh_var(supply, "i", (), DType.INT64)
    j = fresh_var(supply, "j", (), DType.INT64)
    table = Const(np.array(positions, dtype=np.int64))
    gathered = Gather((3,), x, (i,), (Index(table, (i,)),))
    scattered = Scatter((3,), x, (j,), (Index(table, (j,)),))
    code = generate([x], [gathered, scattered])
    verdict = "True" if in_range else "False"
    assert f"(3,), {verdict})" in code.source and f"1, {verdict})" in code.source
    assert "helpers.in_range" not in code.source
    value = np.array([1.0, 2.0, 4.0])
    got_gather, got_scatter = compile_program([x], [gathered, scattered])(value)
    want_gather = np.array([value[p] if 0 <= p < 3 else 0.0 for p in positions])
    want_scatter = np.zeros(3)
    for k, p in enumerate(positions):
        if 0 <= p < 3:
            want_scatter[p] += value[k]
    np.testing.assert_array_equal(got_gather, want_gather)
    np.testing.assert_array_equal(got_scatter, want_scatter)


@settings(max_examples=100, suppress_health_check=SLOW_OK, deadline=None)
@given(programs(), st.integers(1, 4))
def test_segments_pass_each_value_on_until_its_last_reader(
    gp: GeneratedProgram, size: int
) -> None:
    """Segments of a long body are functions: each reads only parameters and values
    earlier segments handed on, hands on only what a later one reads, and lets go of
    what no later one reads."""
    program, _ = vectorise_program(gp.program())
    code = generate(program.inputs, program.outputs)
    saved = codegen.SEGMENT_STATEMENTS
    codegen.SEGMENT_STATEMENTS = size
    try:
        plan = codegen._segments(code, {}, "<test>")
    finally:
        codegen.SEGMENT_STATEMENTS = saved
    assert len(plan) == -(-(len(code.statements) + 1) // size)
    available = set(code.parameters)
    for k, segment in enumerate(plan):
        later = set().union(*(s.reads for s in plan[k + 1 :]))
        assert set(segment.reads) <= available
        assert set(segment.writes) <= later
        assert set(segment.drops) <= set(segment.reads) and not set(segment.drops) & later
        available = (available - set(segment.drops)) | set(segment.writes)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 12), max_size=6),
    st.integers(0, 10),
    st.sampled_from([np.int64, np.int32]),
)
def test_the_range_check_agrees_with_comparing_each_index(
    values: list[int], extent: int, dtype: type[np.signedinteger[Any]]
) -> None:
    """One unsigned ``max`` over an int64 index (a negative one reads as 2**63 or more)
    decides as ``0 <= i < extent`` for every element."""
    info = np.iinfo(dtype)
    index = np.array([min(max(v, info.min), info.max) for v in values], dtype=dtype)
    want = all(0 <= int(i) < extent for i in index)
    assert all_in_range([index], (extent,)) is want
    assert all_in_range([index[::-1], index], (extent, extent)) is want


def test_a_let_takes_over_only_the_line_of_its_own_bound() -> None:
    """``let v2 = stop_gradient t1``: the bound prints as ``t1``, a line another value
    owns and reads, so it stays ``t1 = -x`` and ``v2 = t1`` follows; a view read only by
    its let is written under the let's name (``v1 = x[::-1]``)."""

    def f(x: Any) -> Any:
        a = -x
        return dualarr.sum(a - dualarr.stop_gradient(a) + dualarr.stop_gradient(a))

    x = np.array([0.5, -1.0])
    p = dualarr.pipeline(f, x, fuse=False)
    assert "t1 = -x" in p.python and "v2 = t1" in p.python
    value, (grad,) = p(x)
    assert value == -x.sum() and np.array_equal(grad, [-1.0, -1.0])

    def fig18(x: Any) -> Any:
        n = x.shape[0]
        return dualarr.sum(dualarr.build1(n, lambda i: x[i] * x[n - 1 - i]))

    source = dualarr.pipeline(fig18, np.arange(4.0), fuse=False).python
    assert "v1 = x[3::-1]" in source and "= v1\n" not in source


@pytest.mark.parametrize("fuse", [True, False])
def test_wrap_of_a_replicated_scalar_next_to_an_array_has_the_array_s_shape(fuse: bool) -> None:
    """``wrap`` reads a replicated scalar as the scalar (broadcasting); its NumPy fast
    path (no negative entry: the index itself) must still give the broadcast shape, as
    a ``fromList`` of it and a full array needs (found by Hypothesis)."""
    supply = IdSupply()
    x0 = fresh_var(supply, "x0", (), DType.FLOAT64)
    zeros: Term = Replicate(2, Replicate(2, Const(np.asarray(0))))
    wrapped = Op("wrap", (zeros, Const(np.full((2, 2), 3, dtype=np.int64))))
    term = FromList((zeros, wrapped))
    with dualarr.config.fusing(fuse):
        (out,) = compile_program([x0], [term])(np.asarray(0.0))
    np.testing.assert_array_equal(out, np.zeros((2, 2, 2), dtype=np.int64))
    (expected,) = evaluate_many([term], {x0: np.asarray(0.0)})
    np.testing.assert_array_equal(out, expected)

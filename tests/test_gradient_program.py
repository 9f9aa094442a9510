"""Compile-time differentiation (§7): the stages forward, delta (Eq. 6), shared (Fig. 19),
gradient (Figs. 20–21, simplified) and python, on printed examples and generated
programs: compiled gradient == concrete reverse pass == finite differences."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs
from test_ad_properties import close, directional_fd, float_positions, jittered

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.ad.extraction import ExtractedDelta, check_extracted
from dualarr.ad.share_to_let import check_let_program
from dualarr.codegen.generate import HELPERS
from dualarr.codegen.kernels import CompiledKernel
from dualarr.lang.errors import DualarrError
from dualarr.lang.terms import Gather, Scatter, Share, Var, bound_vars, postorder
from dualarr.teach.examples import fig18

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

A = np.arange(6.0).reshape(2, 3)
B = np.arange(12.0).reshape(3, 4) - 5


def nodes_of(program: Any) -> list[Any]:
    return postorder(program.terms())


# -- printed results ---------------------------------------------------------------------


def test_matmul_gradient_is_two_matmuls_with_transposes() -> None:
    """As horde-ad's testMatmul2PPS: d(a·b) = (dt·bᵀ, aᵀ·dt)."""
    p = da.pipeline(lambda a, b: da.matmul(a, b), A, B)
    assert str(p.gradient) == (
        "\\a b dt.\n(matmul2 a b, matmul2 dt (tr [1,0] b), matmul2 (tr [1,0] a) dt)"
    )
    ct = np.arange(8.0).reshape(2, 4)
    value, (ga, gb) = p(A, B, cotangent=ct)
    np.testing.assert_allclose(value, A @ B)
    np.testing.assert_allclose(ga, ct @ B.T)
    np.testing.assert_allclose(gb, A.T @ ct)


def test_matmul_written_with_build_has_the_same_gradient() -> None:
    def by_build(a: Any, b: Any) -> Any:
        m, n = a.shape
        p_ = b.shape[1]
        return da.build((m, p_), lambda i, j: da.sum(da.build1(n, lambda k: a[i, k] * b[k, j])))

    assert str(da.pipeline(by_build, A, B).gradient) == (
        "\\a b dt.\n(matmul2 a b, matmul2 dt (tr [1,0] b), matmul2 (tr [1,0] a) dt)"
    )


def test_fig18_gradient_has_a_gather_per_use_and_no_scatter() -> None:
    x = np.arange(1.0, 11.0)
    p = da.pipeline(fig18, x)
    assert str(p.gradient) == (
        "\\x dt.\n"
        "let v1 = gather [10] x (\\[i]. [9 - i]) in\n"
        "(dot0 x v1, replicate 10 dt * v1 + gather [10] (replicate 10 dt * x) (\\[j]. [9 - j]))"
    )
    kinds = [type(n) for n in nodes_of(p.gradient)]
    assert Scatter not in kinds and kinds.count(Gather) == 2
    # the shared stage still has the scatter that the simplifier turned into a gather
    assert "scatter [10]" in str(p.shared)
    value, (gradient,) = p(x)
    assert value == np.dot(x, x[::-1])
    np.testing.assert_allclose(gradient, 2 * x[::-1])


def test_delta_stage_has_the_form_of_eq6() -> None:
    p = da.pipeline(fig18, np.arange(1.0, 6.0))
    text = str(p.delta)
    assert text.startswith("\\x.\nlet v1 = gather [5] x (\\[i]. [4 - i]) in\n")
    assert "s2 = Add (Contract 'a,a->' Input 0 v1) (Contract 'a,a->' s1 x)" in text
    check_extracted(p.delta)
    # the forward stage still mentions the primal computation inside the Delta
    assert "Contract 'a,a->' Input 0 (gather [5] x" in str(p.forward)


def test_the_eq6_checker_rejects_a_delta_with_primal_computation() -> None:
    p = da.pipeline(fig18, np.arange(1.0, 6.0))
    forward = p.forward
    bad = ExtractedDelta(forward.program, (), p.delta.value, forward.delta)
    with pytest.raises(DualarrError, match="primal computation"):
        check_extracted(bad)


def test_shared_stage_shares_duplicated_cotangents_with_increasing_ids() -> None:
    def f(x: Any) -> Any:
        y = da.sin(x) * x
        return da.sum(y * y + da.exp(y))

    p = da.pipeline(f, np.linspace(0.1, 1.0, 7))
    shares = [n for n in postorder(p.shared.gradients) if isinstance(n, Share)]
    assert shares, "an Add with a non-trivial cotangent is shared"
    for share in shares:  # Fig. 19: a share's term only mentions smaller ids
        inner = [n.id for n in postorder([share.array]) if isinstance(n, Share)]
        assert all(i < share.id for i in inner)
    assert "share" in str(p.shared)
    assert "share" not in str(p.gradient)
    check_let_program(p.gradient)


def test_python_stage_names_lines_after_the_bindings() -> None:
    def f(x: Any) -> Any:
        y = da.sin(x) * x
        return da.sum(y * y + da.exp(y))

    with da.config.fusing(False):  # fused, a cheap binding is recomputed in its kernels
        p = da.pipeline(f, np.linspace(0.1, 1.0, 7))
    for var, _ in p.gradient.bindings:
        assert f"    {var.hint} = " in p.python
    compile(p.python, "<generated>", "exec")


def test_pipeline_call_checks_its_cotangent() -> None:
    p = da.pipeline(lambda a, b: da.matmul(a, b), A, B)
    with pytest.raises(da.ShapeError, match="cotangent of shape"):
        p(A, B, cotangent=np.ones(3))


def test_gradient_stages_need_one_float_output() -> None:
    p = da.pipeline(lambda x: (x, x), np.ones(3))
    assert p.stages == ("source", "bot_steps", "vectorised")
    with pytest.raises(DualarrError, match="one float output"):
        _ = p.gradient


# -- generated programs ------------------------------------------------------------------


def import_source(source: str, tmp: Path, name: str) -> Any:
    path = tmp / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


COUNTER = [0]


@settings(max_examples=500, suppress_health_check=SLOW_OK)
@given(programs(float_only=True), st.integers(0, 2**32 - 1))
def test_compiled_gradient_equals_concrete_and_finite_differences(
    tmp_path_factory: pytest.TempPathFactory, gp: GeneratedProgram, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    arrays = jittered(gp, rng)
    f = gp.function()
    p = da.pipeline(f, *arrays)
    value = p.source(*arrays)
    assume(np.all(np.isfinite(value)) and np.max(np.abs(value), initial=0.0) < 1e6)
    c = rng.normal(size=value.shape)

    # the gradient stage: no share, every variable bound (once) before use
    check_let_program(p.gradient)
    assert not any(isinstance(n, Share) for n in nodes_of(p.gradient))
    binders = [v for n in nodes_of(p.gradient) for v in bound_vars(n)[0]]
    assert len(binders) == len({v.id for v in binders})
    check_extracted(p.delta)
    dl.check_invariants([p.forward.delta])

    # python: valid source that re-imports and runs
    COUNTER[0] += 1
    module = import_source(p.python, tmp_path_factory.mktemp("gen"), f"gen{COUNTER[0]}")
    for kernel in p.compiled.compiled.kernels:  # the kernels it calls, as its constants
        setattr(module, kernel.name, CompiledKernel(kernel))
    function = getattr(module, p.gradient.name)
    with np.errstate(all="ignore"):
        imported = function(np, HELPERS, p.constants, *arrays, c)
    compiled_value, grads = p(*arrays, cotangent=c)
    np.testing.assert_allclose(compiled_value, value, rtol=1e-9, atol=1e-9, equal_nan=True)
    np.testing.assert_allclose(
        np.broadcast_to(imported[0], value.shape), value, rtol=1e-9, atol=1e-9, equal_nan=True
    )

    # == the concrete reverse pass
    _, pullback = da.vjp(f, *arrays, mode="interpret")
    concrete = pullback(c)
    positions = float_positions(gp)
    assert p.compiled.positions == tuple(positions)
    for k, g in zip(positions, grads, strict=True):
        np.testing.assert_allclose(g, concrete[k], rtol=1e-8, atol=1e-10, equal_nan=True)

    # == finite differences (away from kinks)
    tangent = {k: rng.normal(size=arrays[k].shape) for k in positions}
    reverse = sum(float(np.sum(g * tangent[k])) for k, g in zip(positions, grads, strict=True))
    assume(np.isfinite(reverse))
    scale = float(np.sum(np.abs(c)))
    program = p.source
    fd = directional_fd(program, arrays, tangent, c, 1e-6)
    fd_half = directional_fd(program, arrays, tangent, c, 5e-7)
    assume(close(fd, fd_half, scale, 1e-5))
    assert close(reverse, fd, scale, 1e-4), (reverse, fd)


def test_inputs_that_are_not_float_get_no_gradient() -> None:
    def f(x: Any, idx: Any) -> Any:
        return da.sum(da.gather((4,), x, lambda i: (idx[i],)) * 2.0)

    idx = np.array([0, 2, 2, 5])
    p = da.pipeline(f, np.arange(1.0, 6.0), idx)
    value, (gx,) = p(np.arange(1.0, 6.0), idx)
    assert value == 2 * (1 + 3 + 3)
    np.testing.assert_allclose(gx, [2.0, 0.0, 4.0, 0.0, 0.0])
    assert isinstance(p.gradient.inputs[-1], Var) and p.gradient.inputs[-1].hint == "dt"


def test_grad_traces_per_call_and_compiles_per_structure(monkeypatch: Any) -> None:
    import dualarr.api as api
    from dualarr.pipeline import compile_gradient as real

    api.clear_caches()
    compiled = [0]

    def counting(*args: Any, **kwargs: Any) -> Any:
        compiled[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr("dualarr.api.compile_gradient", counting)
    traced = [0]

    def f(x: Any) -> Any:
        traced[0] += 1  # runs while dualarr traces f: on every call (call-time values)
        return da.sum(da.sin(x) * x)

    g = da.grad(f)
    x = np.linspace(0.0, 1.0, 5)
    for _ in range(3):
        np.testing.assert_allclose(g(x), np.cos(x) * x + np.sin(x))
    assert (traced[0], compiled[0]) == (3, 1)
    g(np.linspace(0.0, 1.0, 6))  # new shape: compiled again
    assert compiled[0] == 2
    g(x.astype(np.float32))  # new dtype: again
    assert compiled[0] == 3
    assert da.grad(f)(x).shape == (5,) and compiled[0] == 3  # reused by structure
    same = lambda y: da.sum(da.sin(y) * y)  # noqa: E731 - another function, same term
    np.testing.assert_allclose(da.grad(same)(x), np.cos(x) * x + np.sin(x))
    assert compiled[0] == 3


def test_grad_compiles_for_the_unit_cotangent() -> None:
    from dualarr.api import compiled_gradient

    def w1(x: Any, y: Any) -> Any:
        return da.sum(x * y)

    x, y = np.arange(3.0), np.arange(3.0) + 1
    gx, gy = da.grad(w1, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, y)
    np.testing.assert_array_equal(gy, x)
    gx[0] = 99.0  # results never alias the inputs
    assert y[0] == 1.0
    source = compiled_gradient(w1, (x, y), [0, 1], unit_cotangent=True).source
    assert 'return (helpers.contract(xp, "a,a->", x, y), y, x)' in source


def test_modes_are_checked_and_interpret_agrees() -> None:
    x = np.linspace(-1.0, 1.0, 4)

    def f(x: Any) -> Any:
        return da.sum(da.exp(x) * da.gather((4,), x, lambda i: (3 - i,)))

    np.testing.assert_allclose(da.grad(f)(x), da.grad(f, mode="interpret")(x))
    np.testing.assert_allclose(
        da.jacobian(lambda x: da.exp(x) * x)(x), da.jacobian(lambda x: da.exp(x) * x,
                                                             mode="interpret")(x)
    )
    with pytest.raises(DualarrError, match="unknown mode 'fast'"):
        da.grad(f, mode="fast")


def test_index_of_a_scatter_that_simplifies_away_is_pushed_again() -> None:
    """A scatter of a permutation becomes its array; an index of it must then be pushed
    down (Theorem 5.1 normal form) instead of indexing a sumOuter."""

    def f(x: Any) -> Any:
        return da.scatter([2], da.sum_outer(x), lambda j: (j,))[1]

    x = np.ones((3, 2))
    assert da.is_bot_normal(da.pipeline(f, x).vectorised)
    np.testing.assert_array_equal(da.grad(f)(x), [[0.0, 1.0]] * 3)
    np.testing.assert_array_equal(da.grad(f, mode="interpret")(x), [[0.0, 1.0]] * 3)


def test_the_printed_delta_stage_binds_every_variable_the_delta_uses() -> None:
    def chain2(x: da.Tensor) -> da.Tensor:
        y = da.sin(x) * x
        return da.sum(da.sin(y) * y)

    p = da.pipeline(chain2, np.linspace(0.1, 1.0, 4))
    text = str(p.delta)
    head, delta = text.split("\ndelta:\n")
    lets = head.count("let ")
    assert lets == len(p.delta.bindings) == 6
    assert "cos x" in head and "cos v2" in head  # bound only for the Delta's factors
    assert "Scale v5" in delta and "Scale v6" in delta


def test_array_work_under_a_let_in_an_index_function_is_not_hoisted_out_of_it() -> None:
    """build1-gather hoists array work of the index function out as ``c``, but not when
    it mentions a variable bound inside the index (found by Hypothesis)."""
    from collections import Counter

    from dualarr.lang.terms import Build1, Const, DType, Floor, Gather, IdSupply, Let, Op, Var
    from dualarr.lang.terms import Replicate as Rep

    x0, i = Var(1, "x0", (), DType.FLOAT64), Var(2, "i", (), DType.INT64)
    i0, x = Var(3, "i0", (), DType.INT64), Var(4, "x", (), DType.FLOAT64)
    inner = Let(x, Const(np.array(0.5)), Gather((), Rep(1, Rep(1, x)), (), (Const(np.array(0)), i)))
    index = Floor(Op("add", (Op("mul", (inner, Const(np.array(2.0)))), Const(np.array(0.0)))))
    term = Build1(1, i, Gather((1,), Const(np.arange(12.0).reshape(4, 3)), (i0,), (index,)))
    gp = GeneratedProgram((x0,), term, (np.array(0.0),), IdSupply(10), Counter(), "generated")
    p = da.pipeline(lambda x: da.sum(gp.function()(x)) * x, np.array(2.0))
    assert "build1" not in str(p.vectorised)
    assert p.vectorised(np.array(2.0)) == p.source(np.array(2.0)) == 2.0 * (3 + 4 + 5)
    check_let_program(p.gradient)
    np.testing.assert_allclose(p(np.array(2.0))[1], [3.0 + 4 + 5])


def test_grad_compiles_a_program_without_the_value() -> None:
    """``da.grad`` discards the value, so its program does not compute it: Fig. 18's
    gradient is two reads of one reversed view, matmul's two products, not three."""
    from dualarr.api import compiled_gradient

    x = np.arange(1.0, 6.0)
    with da.config.fusing(False):  # the plain NumPy program (fused: ``kernel1(xp, t1)``)
        without = compiled_gradient(fig18, (x,), unit_cotangent=True, value=False)
    assert "contract" not in without.source and "matmul" not in without.source
    assert "return (xp.asarray(0.0, dtype=xp.float64), 2.0 * t1)" in without.source
    with_value = compiled_gradient(fig18, (x,), unit_cotangent=True)
    assert "contract" in with_value.source or "vecdot" in with_value.source
    np.testing.assert_array_equal(da.grad(fig18)(x), da.value_and_grad(fig18)(x)[1])

    def mm(a: da.Tensor, b: da.Tensor) -> da.Tensor:
        return da.sum(da.matmul(a, b))

    a, b = np.ones((3, 4)), np.ones((4, 2))
    source = compiled_gradient(mm, (a, b), unit_cotangent=True, value=False).source
    assert source.count("contract(") + source.count("matmul(") == 2

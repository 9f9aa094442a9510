"""The ``kernels`` stage of the pipeline (§7.5): the fused elementwise kernels of the
generated gradient program, printed one per line and drawn as expression trees; empty,
with the reason, when fusion is off or nothing is worth a kernel; ``fuse`` chooses the
program ``python`` shows and the one calling the pipeline runs."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.codegen.kernels import Apply, Arg, Kernel, KernelExpr, Literal
from dualarr.lang.terms import DType
from dualarr.pipeline import FusedKernels, Pipeline
from dualarr.show.drawing import kernel_graph

KERNEL_CALL = re.compile(r"\bkernel\d+\(xp\b")


def w5(x: Any) -> Any:
    return da.sum(da.sin(x) * da.exp(-x * x) + da.log1p(x * x))


X = np.linspace(-1.5, 1.5, 1000)


def fused(fuse: bool | None) -> Pipeline:
    return da.pipeline(w5, X, fuse=fuse)


def operations(expr: KernelExpr) -> set[str]:
    if isinstance(expr, Apply):
        return {expr.op}.union(*(operations(a) for a in expr.args))
    return set()


def literals(expr: KernelExpr) -> set[float | bool]:
    if isinstance(expr, Literal):
        return {expr.value}
    if isinstance(expr, Apply):
        return set().union(*(literals(a) for a in expr.args))
    return set()


def test_the_kernels_stage_sits_between_gradient_and_python() -> None:
    p = fused(True)
    stages = p.stages
    assert stages.index("kernels") == stages.index("gradient") + 1
    assert stages.index("python") == stages.index("kernels") + 1
    assert "== kernels" in str(p)


def test_the_fused_kernels_print_one_per_line_as_the_source_lists_them() -> None:
    p = fused(True)
    stage = p.kernels
    assert isinstance(stage, FusedKernels) and stage.fused
    assert stage.kernels and all(isinstance(k, Kernel) for k in stage.kernels)
    lines = str(stage).splitlines()
    assert lines == [str(k) for k in stage.kernels]
    for kernel, line in zip(stage.kernels, lines, strict=True):
        assert line.startswith(f"{kernel.name}({', '.join(kernel.params)}) = ")
        assert line.endswith(": float64[1000]")
        assert f"# {line}" in p.python  # the generated source lists them as comments
        assert f"{kernel.name}(xp, " in p.python
    assert "\n".join(lines) in str(p)


def test_the_fused_kernels_draw_as_expression_trees_one_box_each() -> None:
    stage = fused(True).kernels
    source = stage.graph().source
    assert source.count("subgraph cluster_") == len(stage.kernels)
    for kernel in stage.kernels:
        assert f'label="{kernel.name}(' in source
        for op in operations(kernel.expression):
            assert re.search(rf'label="?{op}\b', source), (kernel.name, op)
        for name, dtype in zip(kernel.params, kernel.param_dtypes, strict=True):
            assert f'label="{name}\n{dtype}" shape=ellipse' in source
        for value in literals(kernel.expression):
            assert f"label={value!r}" in source or f'label="{value!r}"' in source


def test_a_kernel_graph_draws_each_parameter_once_and_literals_by_value() -> None:
    kernel = Kernel(
        "kernel1",
        ("x", "dt"),
        (DType.FLOAT64, DType.FLOAT64),
        Apply("mul", (Apply("add", (Arg(0), Literal(0.5))), Apply("cos", (Arg(0),)))),
        DType.FLOAT64,
        (3,),
    )
    source = kernel_graph([kernel]).source
    assert source.count('label="x\nfloat64" shape=ellipse') == 1
    assert 'label="mul\nfloat64[3]"' in source and "label=add" in source
    assert "label=cos" in source and "label=0.5" in source
    assert 'label="kernel1(x, dt)"' in source  # the box names every parameter


def test_without_fusion_the_stage_says_why_it_is_empty() -> None:
    p = fused(False)
    assert p.fuse is False and p.kernels.kernels == ()
    assert str(p.kernels) == "no fused kernels: fusion is off"
    assert "fusion is off" in p.kernels.graph().source
    assert "== kernels\nno fused kernels: fusion is off" in str(p)
    nothing = da.pipeline(lambda x: da.sum(x), X, fuse=True).kernels
    assert nothing.kernels == ()
    assert str(nothing) == "no fused kernels: no elementwise group worth a kernel"


def test_fuse_chooses_the_program_and_both_compute_the_same_gradient() -> None:
    unfused, fused_program = fused(False), fused(True)
    assert not KERNEL_CALL.search(unfused.python)
    assert KERNEL_CALL.search(fused_program.python)
    value_unfused, (grad_unfused,) = unfused(X)
    value_fused, (grad_fused,) = fused_program(X)
    np.testing.assert_allclose(value_fused, value_unfused, rtol=1e-12)
    np.testing.assert_allclose(grad_fused, grad_unfused, rtol=1e-12, atol=1e-14)
    expected = (
        np.cos(X) * np.exp(-X * X) - 2 * X * np.sin(X) * np.exp(-X * X) + 2 * X / (1 + X * X)
    )
    np.testing.assert_allclose(grad_fused, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("setting", [False, True])
def test_fuse_none_follows_the_setting(setting: bool) -> None:
    with da.config.fusing(setting):
        p = fused(None)
    assert p.fuse is setting
    assert bool(KERNEL_CALL.search(p.python)) is setting  # fixed when the pipeline was made


def test_the_explorer_lists_the_kernels_above_the_source() -> None:
    pytest.importorskip("ipywidgets")
    from dualarr_widgets import PipelineExplorer

    with da.config.fusing(True):
        explorer = PipelineExplorer(w5, X)
    assert explorer.error == ""
    text = explorer.outputs["python"].outputs[0]["text"]
    assert text.startswith("== kernels\nkernel1(")
    assert text.index("== python\ndef grad_w5") > text.index("kernel1(")

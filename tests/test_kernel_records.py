"""A fused kernel reads each primitive's record (#37): its spelling, its cost and its
:class:`~dualarr.lang.primitives.Formula`, written once for the implementation, the SymPy
spelling and the kernel's expansion.  Adding a fusable primitive is one record."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from dualarr.codegen.kernels import (
    FUSABLE,
    SCALAR_IN_NUMPY,
    UNFUSED,
    Apply,
    Arg,
    CompiledKernel,
    Expand,
    Kernel,
    Literal,
    cupy_source,
    kernel_cost,
    kernel_spelling,
    numexpr_text,
    transcendental,
)
from dualarr.interp.sympy_algebra import sympy_operations
from dualarr.lang.primitives import (
    REGISTRY,
    Formula,
    KernelCost,
    OpKind,
    Primitive,
    register,
)
from dualarr.lang.terms import DType


def test_the_kernel_name_sets_are_the_records() -> None:
    """The sets the code generator reads are the records' fields, as they were by hand."""
    assert set(UNFUSED) == {
        "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin",
        "acos", "atan", "atan2", "sigmoid", "pow",
    }  # fmt: skip
    assert set(SCALAR_IN_NUMPY) == {"sin", "cos"}
    assert {op for op in FUSABLE if kernel_cost(op) is not KernelCost.CHEAP} == set(UNFUSED) | {
        "sqrt"
    }
    assert set(FUSABLE) == {
        name
        for name, record in REGISTRY.items()
        if record.kernel is not None or isinstance(record.impl, Formula)
    }
    assert {op for op in UNFUSED if op not in ("sin", "cos")} == UNFUSED - SCALAR_IN_NUMPY


@pytest.mark.parametrize("op", sorted(FUSABLE))
def test_every_fusable_primitive_is_spelled_in_numexpr_and_c(op: str) -> None:
    arity = REGISTRY[op].arity
    expr = Apply(op, tuple(Arg(k) for k in range(arity)))
    names = ("x", "y", "z")[:arity]
    assert numexpr_text(expr, names)
    kernel = Kernel("k", names, (DType.FLOAT64,) * arity, expr, DType.FLOAT64, (3,))
    assert cupy_source(kernel)[2].startswith("out = ")


def test_sigmoid_is_its_formula_everywhere() -> None:
    """One formula: NumPy's bits of ``1.0 / (1.0 + exp(-a))``, SymPy's exact spelling
    and the kernel's expansion."""
    x = np.linspace(-40.0, 40.0, 2001)
    for a in (x, x.astype(np.float32)):
        got = REGISTRY["sigmoid"].impl(np, a)
        assert got.dtype == a.dtype
        assert got.tobytes() == (1.0 / (1.0 + np.exp(-a))).tobytes()
    sp = pytest.importorskip("sympy")
    s = sp.Symbol("s")
    assert sympy_operations()["sigmoid"](s) == 1 / (1 + sp.exp(-s))
    assert kernel_spelling("sigmoid") == Expand(
        Apply("div", (Literal(1.0), Apply("add", (Literal(1.0), Apply("exp", (
            Apply("neg", (Arg(0),)),)))))),
    )  # fmt: skip
    assert kernel_cost("sigmoid") is KernelCost.NUMPY_LOOP  # exp's: NumPy's own loop
    assert kernel_spelling("recip") == Expand(Apply("div", (Literal(1.0), Arg(0))))
    assert kernel_spelling("stop_gradient") == Expand(Arg(0))


@pytest.fixture
def fresh_primitives() -> Iterator[list[str]]:
    """Names of primitives a test registers, removed from the registry afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        REGISTRY.pop(name, None)


def _formula_primitive(names: list[str], name: str, formula: Formula) -> Primitive:
    names.append(name)
    return register(Primitive(name, OpKind.FLOAT_UNARY, formula, (lambda m, x, y: 1,), doc=name))


def test_a_new_fusable_primitive_is_one_record(fresh_primitives: list[str]) -> None:
    record = _formula_primitive(
        fresh_primitives, "softsign_k", Formula(lambda m, a: a / (1 + m.sqrt(a * a)))
    )
    assert "softsign_k" in FUSABLE and "softsign_k" not in UNFUSED
    expr = Apply("softsign_k", (Arg(0),))
    assert numexpr_text(expr, ["x"]) == "x / (1.0 + sqrt(x * x))"
    kernel = Kernel("k", ("x",), (DType.FLOAT64,), expr, DType.FLOAT64, (5,))
    assert cupy_source(kernel)[2] == "out = x / (1.0 + sqrt(x * x))"
    assert transcendental(expr)  # sqrt's cost: stored once where shared
    x = np.linspace(-3.0, 3.0, 5)
    assert CompiledKernel(kernel)(np, x).tobytes() == record.impl(np, x).tobytes()
    sp = pytest.importorskip("sympy")
    s = sp.Symbol("s")
    assert record.sympy is not None
    assert sympy_operations()["softsign_k"](s) == s / (1 + sp.sqrt(s * s))


def test_a_formula_costs_what_it_applies(fresh_primitives: list[str]) -> None:
    _formula_primitive(fresh_primitives, "softplus_k", Formula(lambda m, a: m.log(1 + m.exp(a))))
    assert "softplus_k" in UNFUSED and kernel_cost("softplus_k") is KernelCost.NUMPY_LOOP
    expr = Apply("softplus_k", (Arg(0),))
    kernel = Kernel("k", ("x",), (DType.FLOAT64,), expr, DType.FLOAT64, (5,))
    x = np.linspace(-3.0, 3.0, 5)  # NumPy's exp and log, as the unfused program
    assert CompiledKernel(kernel)(np, x).tobytes() == np.log(1 + np.exp(x)).tobytes()


def test_a_formula_no_kernel_can_hold_ends_a_kernel(fresh_primitives: list[str]) -> None:
    _formula_primitive(fresh_primitives, "relu_k", Formula(lambda m, a: m.maximum(a, 0 * a)))
    _formula_primitive(fresh_primitives, "ramp_k", Formula(lambda m, a: m.where(a > 0, a, 0)))
    assert "relu_k" not in FUSABLE and "ramp_k" not in FUSABLE
    x = np.array([-1.0, 2.0])
    assert REGISTRY["ramp_k"].impl(np, x).tolist() == [0.0, 2.0]

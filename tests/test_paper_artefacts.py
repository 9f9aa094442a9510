"""The paper's own artefacts: the literal Delta of Fig. 18 (``contractions=False``) and
gradients that do not depend on the option (generated programs, finite differences)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn
from strategies import F64, Binding, Env, GeneratedProgram, programs, terms

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.lang.terms import (
    Build1,
    Contract,
    DType,
    Index,
    Op,
    SumOuter,
    Term,
    fresh_var,
    postorder,
)
from dualarr.teach.examples import fig18

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
X = np.arange(1.0, 6.0)


def delta_constructors(p: da.Pipeline) -> Counter[str]:
    """How many nodes of each Delta constructor the pipeline's extracted Delta has."""
    return Counter(type(d).__name__ for d in dl.delta_postorder([p.delta.delta]))


def delta_tree(d: dl.Delta) -> str:
    """The Delta's constructors as a nested expression (factors and indices left out)."""
    kids = dl.delta_children(d)
    name = type(d).__name__
    if not kids:
        return f"{name} {d.index}" if isinstance(d, dl.Input) else name
    return f"{name} ({', '.join(delta_tree(k) for k in kids)})"


def contractions_in(terms: tuple[Term, ...]) -> int:
    return sum(isinstance(node, Contract) for node in postorder(terms))


# --------------------------------------------------------------------------------------
# Fig. 18, literally
# --------------------------------------------------------------------------------------


def test_fig18_literal_delta_has_exactly_the_papers_constructors() -> None:
    # Fig. 18 (bottom): SumOuter (Add (Scale x2 (Gather [n] a' (λ[i]. [i])))
    #                                 (Scale x1 (Gather [n] a' (λ[i]. [n - 1 - i]))))
    # with the identity gather simplified to its array, as §7.1 says an implementation
    # should; a' is the input's Delta (Input 0).  Share nodes give nodes their ids (§6),
    # as the paper's do (§7.1: here they "turn out to be unnecessary").
    p = da.pipeline(fig18, X, contractions=False)
    assert delta_tree(p.delta.delta) == (
        "Share (SumOuter (Share (Add (Scale (Input 0), Scale (Share (Gather (Input 0)))))))"
    )
    assert delta_constructors(p) == Counter(
        {"Share": 3, "SumOuter": 1, "Add": 1, "Scale": 2, "Gather": 1, "Input": 1}
    )
    text = str(p.delta)
    assert text.endswith(
        "delta:\n"
        "s1 = Gather [5] Input 0 (\\[i]. [4 - i])\n"
        "s2 = Add (Scale v1 Input 0) (Scale x s1)\n"
        "s3 = SumOuter s2\n"
        "s3"
    ), text
    # the paper's "after bot" term: sumOuter of an elementwise product with a gather
    assert str(p.vectorised) == r"\x. sumOuter (x * gather [5] x (\[i]. [4 - i]))"


def test_fig18_default_delta_is_the_kits_contraction() -> None:
    p = da.pipeline(fig18, X)
    assert delta_tree(p.delta.delta) == (
        "Share (Add (Contract (Input 0), Contract (Share (Gather (Input 0)))))"
    )
    assert "SumOuter" not in str(p.delta) and "Scale" not in str(p.delta)
    assert p.contractions and not da.pipeline(fig18, X, contractions=False).contractions


def test_fig18_gradient_is_the_same_with_and_without_contractions() -> None:
    literal, default = da.pipeline(fig18, X, contractions=False), da.pipeline(fig18, X)
    value, (grad,) = literal(X)
    assert float(value) == 35.0
    np.testing.assert_array_equal(grad, 2 * X[::-1])
    np.testing.assert_array_equal(grad, default(X)[1][0])
    # the compiled gradient is generated from the literal vectorised term
    assert literal.compiled.program is literal.vectorised


def test_the_option_reaches_the_bot_stepper_simplification() -> None:
    from dualarr.vectorise.bot import vectorise
    from dualarr.vectorise.simplify import simplification_steps

    program = da.trace(fig18, X)
    bot = vectorise(program.outputs, program.supply)
    _, default = simplification_steps(bot.terms, program.supply)
    _, literal = simplification_steps(bot.terms, program.supply, contractions=False)
    assert "sumOuter-contract" in [s.rule for s in default]
    assert "sumOuter-contract" not in [s.rule for s in literal]


# --------------------------------------------------------------------------------------
# Generated programs: the same gradient, and the finite differences'
# --------------------------------------------------------------------------------------


@st.composite
def sums_of_products(draw: DrawFn) -> GeneratedProgram:
    """``build (m, p) (λi j. sumOuter (build1 k (λl. a[i, l] * b[l, j])))`` (a matmul;
    ``m = p = 1`` squeezed away gives a dot product) over random terms ``a`` and ``b``
    of the inputs: the sums of products that the kit turns into contractions."""
    gp = draw(programs(float_only=True, int_input=False, max_depth=2))
    m, k, n = (draw(st.integers(1, 3)) for _ in range(3))
    env = Env(tuple(Binding(v) for v in reversed(gp.inputs)))
    a = draw(terms((m, k), F64, env, depth=2, supply=gp.supply))
    b = draw(terms((k, n), F64, env, depth=2, supply=gp.supply))
    i, j, l_ = (fresh_var(gp.supply, hint, (), DType.INT64) for hint in "ijl")
    product = Op("mul", (Index(a, (i, l_)), Index(b, (l_, j))))
    entry = SumOuter(Build1(k, l_, product))
    term: Term = Build1(m, i, Build1(n, j, entry))
    if draw(st.booleans()):
        term = SumOuter(SumOuter(term))  # a rank-0 output, as in Fig. 18
    return GeneratedProgram(gp.inputs, term, gp.arrays, gp.supply, name="sum_of_products")


def jittered(gp: GeneratedProgram, rng: np.random.Generator) -> list[np.ndarray]:
    return [a + rng.uniform(-0.05, 0.05, a.shape) if a.dtype == np.float64 else a
            for a in gp.arrays]


def close(a: float, b: float, scale: float, rtol: float) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b), scale)


def check_same_gradient(gp: GeneratedProgram, seed: int) -> da.Pipeline:
    """Both pipelines' compiled gradients agree with each other and with central finite
    differences along a random direction; returns the pipeline without contractions."""
    rng = np.random.default_rng(seed)
    arrays = jittered(gp, rng)
    f = gp.function()
    program = da.trace(f, *arrays)
    value = program(*arrays)
    assume(np.all(np.isfinite(value)) and np.max(np.abs(value), initial=0.0) < 1e6)
    default = da.pipeline(f, *arrays)
    literal = da.pipeline(f, *arrays, contractions=False)
    c = rng.normal(size=np.shape(value))
    value_d, grads_d = default(*arrays, cotangent=c)
    value_l, grads_l = literal(*arrays, cotangent=c)
    np.testing.assert_allclose(value_l, value_d, rtol=1e-9, atol=1e-9)
    assert default.compiled.positions == literal.compiled.positions
    for g_d, g_l in zip(grads_d, grads_l, strict=True):
        np.testing.assert_allclose(g_l, g_d, rtol=1e-9, atol=1e-9)

    positions = literal.compiled.positions
    tangent = {k: rng.normal(size=arrays[k].shape) for k in positions}
    reverse = sum(float(np.sum(g * tangent[k])) for k, g in zip(positions, grads_l, strict=True))

    def fd(h: float) -> float:
        def at(sign: float) -> float:
            moved: list[Any] = [
                a + sign * h * tangent[k] if k in tangent else a for k, a in enumerate(arrays)
            ]
            return float(np.sum(c * program(*moved)))

        return (at(1.0) - at(-1.0)) / (2 * h)

    scale = float(np.sum(np.abs(c)))
    assume(np.isfinite(reverse))
    fd1, fd2 = fd(1e-6), fd(5e-7)
    assume(close(fd1, fd2, scale, 1e-5))  # skip the rare point next to a kink
    assert close(reverse, fd1, scale, 1e-4), (reverse, fd1)
    return literal


@settings(max_examples=150, suppress_health_check=SLOW_OK)
@given(programs(float_only=True), st.integers(0, 2**32 - 1))
def test_random_programs_same_gradient_with_and_without_contractions(
    gp: GeneratedProgram, seed: int
) -> None:
    literal = check_same_gradient(gp, seed)
    # the option never adds a contraction the source did not have
    in_source = contractions_in(literal.source.outputs)
    assert contractions_in(literal.vectorised.outputs) <= in_source
    if in_source == 0:
        assert "Contract" not in delta_constructors(literal)


@settings(max_examples=100, suppress_health_check=SLOW_OK)
@given(sums_of_products(), st.integers(0, 2**32 - 1))
def test_sums_of_products_same_gradient_with_and_without_contractions(
    gp: GeneratedProgram, seed: int
) -> None:
    literal = check_same_gradient(gp, seed)
    assert contractions_in(literal.vectorised.outputs) <= contractions_in(literal.source.outputs)


def test_a_matmul_by_build_is_a_contraction_only_by_default() -> None:
    def matmul_by_build(a: da.Tensor, b: da.Tensor) -> da.Tensor:
        m, k = a.shape
        n = b.shape[1]
        return da.build((m, n), lambda i, j: da.sum(da.build1(k, lambda l_: a[i, l_] * b[l_, j])))

    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4) - 5
    default = da.pipeline(matmul_by_build, a, b)
    literal = da.pipeline(matmul_by_build, a, b, contractions=False)
    assert contractions_in(default.vectorised.outputs) == 1
    assert contractions_in(literal.vectorised.outputs) == 0
    assert "Contract" not in delta_constructors(literal)
    c = np.ones((2, 4))
    for got, want in zip(literal(a, b, cotangent=c)[1], default(a, b, cotangent=c)[1], strict=True):
        np.testing.assert_allclose(got, want)

"""A construct is local: ``rev`` (reversal along an axis, ``dualarr/constructs/rev.py``)
goes through every stage — tracing, evaluation, the bot (Figs. 9–10), the simplifier,
D and the reverse pass on arrays (§6), the symbolic stages (§7), transposition as a
linear program, generated code fused and unfused, the array API, SymPy, printing and
drawing — with nothing but its own module (the walkthrough: ``book/constructs.md``).

Every number is checked against ``np.flip``: values, gradients (reverse and forward,
interpreted and compiled), and vmap's per-example results."""

from __future__ import annotations

from typing import Any

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.ad.transposition import transpose_delta
from dualarr.constructs import Rev, rev
from dualarr.lang.rules import TABLES
from dualarr.lang.terms import Build1, Structural, TermBase, Var, walk

RNG = np.random.default_rng(7)


@st.composite
def shapes_and_axes(draw: Any) -> tuple[tuple[int, ...], int]:
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    return shape, draw(st.integers(-len(shape), len(shape) - 1))


def weighted(axis: int, weights: np.ndarray) -> Any:
    """``x ↦ Σ w · sin(rev_axis x)``: a scalar loss through rev (its gradient is
    ``flip(w · cos(flip x))``)."""
    return lambda x: da.sum(da.sin(rev(x, axis)) * weights)


def expected_gradient(x: np.ndarray, axis: int, weights: np.ndarray) -> np.ndarray:
    return np.flip(weights * np.cos(np.flip(x, axis)), axis)


def test_every_rule_table_of_terms_has_a_rule_for_rev() -> None:
    """Every complete table keyed by term constructors (not by Delta constructors)
    answers for rev: its own rule, or the one filed for every Structural construct."""
    of_terms = [t for t in TABLES if any(issubclass(c, TermBase) for c in t)]
    missing = [t.stage for t in of_terms if t.complete and Rev not in t]
    assert not missing, f"stages without a rule for rev: {missing}"
    own = {t.stage for t in TABLES if t.get(Rev) not in (None, t.get(Structural))}
    assert {"array meaning", "derivative", "transpose", "build1", "index", "simplification"} <= own


def test_the_shape_rule_is_the_construct_s_for_term_and_delta() -> None:
    x = da.constant(np.zeros((2, 3)))
    assert Rev(1, x.term).shape == (2, 3)
    with pytest.raises(da.ShapeError, match=r"rev.*axis 2 .*\[2,3\]"):
        Rev(2, x.term)
    zero = dl.Input(0, (2, 3), da.DType.FLOAT64)
    assert dl.Structural(Rev, (("axis", 1),), zero).shape == (2, 3)
    with pytest.raises(da.ShapeError, match="rev"):
        dl.Structural(Rev, (("axis", 5),), zero)
    with pytest.raises(da.ShapeError, match="rev"):
        da.jit(lambda x: rev(x, 3))(np.zeros((2, 3)))


@settings(max_examples=25, deadline=None)
@given(shapes_and_axes())
def test_values_agree_with_np_flip_in_every_mode(case: tuple[tuple[int, ...], int]) -> None:
    shape, axis = case
    x = RNG.normal(size=shape)
    expected = np.flip(x, axis)
    np.testing.assert_array_equal(da.jit(lambda x: rev(x, axis))(x), expected)
    program = da.trace(lambda x: rev(x, axis) * 2.0, x)
    np.testing.assert_array_equal(program(x), 2.0 * expected)
    strict = da.jit(lambda x: rev(x, axis))(xps.asarray(x))  # the backend follows x
    assert isinstance(strict, type(xps.asarray(x)))
    np.testing.assert_array_equal(np.asarray(strict._array), expected)
    (g,) = da.grad(weighted(axis, np.ones(shape)), argnums=(0,))(xps.asarray(x))
    np.testing.assert_array_equal(np.asarray(g._array), np.cos(x))


@settings(max_examples=20, deadline=None)
@given(shapes_and_axes(), st.sampled_from(["compiled", "interpret"]))
def test_gradients_in_both_modes(case: tuple[tuple[int, ...], int], mode: str) -> None:
    shape, axis = case
    x, w = RNG.normal(size=shape), RNG.normal(size=shape)
    f = weighted(axis, w)
    g = da.grad(f, mode=mode)(x)
    np.testing.assert_allclose(g, expected_gradient(x, axis, w), rtol=1e-12, atol=1e-14)
    tangent, cotangent = RNG.normal(size=shape), RNG.normal(size=shape)
    _, jv = da.jvp(lambda x: rev(da.sin(x), axis), (x,), (tangent,))
    np.testing.assert_allclose(jv, np.flip(np.cos(x) * tangent, axis), rtol=1e-12)
    _, pullback = da.vjp(lambda x: rev(da.sin(x), axis), x, mode=mode)
    (vj,) = pullback(cotangent)
    assert float(np.sum(jv * cotangent)) == pytest.approx(float(np.sum(vj * tangent)), rel=1e-10)


@pytest.mark.parametrize("fuse", [True, False])
def test_fused_and_unfused_code_compute_the_same_bits(fuse: bool) -> None:
    x, w = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    p = da.pipeline(weighted(1, w), x, fuse=fuse)
    value, (g,) = p(x)
    oracle = da.pipeline(weighted(1, w), x, fuse=not fuse)
    value2, (g2,) = oracle(x)
    assert value == value2
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_allclose(g, expected_gradient(x, 1, w), rtol=1e-12)
    assert "helpers.meanings['Rev'](xp, " in p.python


def test_every_stage_prints_and_draws_it() -> None:
    x, w = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    p = da.pipeline(weighted(0, w), x)
    assert "sin (rev 0 x)" in str(p.source)
    assert "s1 = Rev 0 Input 0" in str(p.forward)  # D[rev 0 x] = Rev 0 D[x] (Fig. 14)
    assert "let v1 = rev 0 x in" in str(p.delta)
    assert ", rev 0 (" in str(p.shared)  # T[Rev 0 u]: the cotangent reversed back
    assert ", rev 0 (cos v1 *" in str(p.gradient)
    assert "helpers.meanings['Rev'](xp, x, axis=0)" in p.python
    for stage in p.stages:  # every stage prints
        assert str(getattr(p, stage))
    assert "rev 0" in p.source.graph().source
    assert "Rev 0" in p.forward.delta.graph().source


def test_transposition_writes_its_rule_and_runs() -> None:
    x = RNG.normal(size=(2, 3))
    p = da.pipeline(lambda x: da.sum(rev(x, 1) * np.arange(6.0).reshape(2, 3)), x)
    program = transpose_delta(p.forward.delta)
    assert "T[Rev u]" in str(program)


def test_the_simplifier_cancels_a_double_reversal() -> None:
    x = RNG.normal(size=(3, 2))
    p = da.pipeline(lambda x: da.sum(rev(rev(x, 0), 0) * x), x)
    assert not any(isinstance(n, Structural) for n in walk(p.vectorised.outputs))
    assert da.grad(lambda x: da.sum(rev(rev(x, 0), 0) * x))(x) == pytest.approx(2 * x)


def test_the_bot_moves_rev_out_of_build1_and_index_through_it() -> None:
    x = RNG.normal(size=(4, 3))

    def rows(x: Any) -> Any:  # build1 over rows: Fig. 9 makes it rev on axis 1
        return da.build1(4, lambda i: rev(x[i], 0))

    p = da.pipeline(lambda x: da.sum(da.sin(rows(x))), x)
    assert not any(isinstance(n, Build1) for n in walk(p.vectorised.outputs))
    assert any(isinstance(n, Rev) and n.axis == 1 for n in walk(p.vectorised.outputs))
    np.testing.assert_allclose(da.jit(rows)(x), np.flip(x, 1))

    def shifted(x: Any) -> Any:  # index (rev e) [i + 1]: out of range reads 0 (§5.2)
        return da.build1(4, lambda i: rev(x, 0)[i + 1])

    expected = np.concatenate([np.flip(x, 0)[1:], np.zeros((1, 3))])
    np.testing.assert_array_equal(da.jit(shifted)(x), expected)
    q = da.pipeline(lambda x: da.sum(shifted(x) * x), x)
    assert not any(isinstance(n, Build1) for n in walk(q.vectorised.outputs))
    (g,) = q(x)[1]
    np.testing.assert_allclose(g, da.grad(lambda x: da.sum(shifted(x) * x), mode="interpret")(x))


def test_vmap_and_per_example_gradients() -> None:
    batch = RNG.normal(size=(5, 3, 2))
    np.testing.assert_array_equal(da.vmap(lambda x: rev(x, 1))(batch), np.flip(batch, 2))
    w = RNG.normal(size=(3, 2))
    per_example = da.vmap(da.grad(weighted(0, w)))(batch)
    for b in range(5):
        np.testing.assert_allclose(per_example[b], expected_gradient(batch[b], 0, w), rtol=1e-12)


def test_sympy_and_finite_differences_agree() -> None:
    x, w = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))
    _, (g,) = da.sympy_gradient(weighted(1, w), x)(x)
    np.testing.assert_allclose(g, expected_gradient(x, 1, w), rtol=1e-10)
    report = da.check_grad(weighted(1, w), x)
    assert report.passed, report


def test_it_is_one_of_the_terms_like_any_other() -> None:
    x = da.constant(np.arange(6.0).reshape(2, 3))
    term = rev(x, -1).term
    assert isinstance(term, Rev) and term.axis == 1 and term.params == {"axis": 1}
    assert not isinstance(term, Var)
    assert repr(term).startswith("<")

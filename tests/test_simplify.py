"""Each simplifier rule on a small term: the printed result, and the value unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.interp.evaluate import evaluate_many
from dualarr.lang import terms
from dualarr.lang.errors import UnsupportedError
from dualarr.show.printer import print_program
from dualarr.vectorise.simplify import (
    INT_RANGES,
    REWRITE_NAMES,
    SMART_CONSTRUCTORS,
    Simplifier,
    simplify,
)


def simplified(f: Callable[..., Any], *args: Any) -> str:
    program = da.trace(f, *args)
    terms = simplify(list(program.outputs), program.supply)
    env = program.bind(*args)
    for got, want in zip(evaluate_many(terms, env), evaluate_many(list(program.outputs), env),
                         strict=True):
        np.testing.assert_allclose(got, want)
    return print_program(program.inputs, terms)


X = np.arange(12.0).reshape(3, 4)


def test_gather_of_gather_fuses() -> None:
    text = simplified(
        lambda x: da.gather([2], da.gather([3], x, lambda i: (2 - i,)), lambda j: (j + 1,)), X
    )
    assert text == r"\x. gather [2] x (\[j]. [2 - (j + 1)])"


def test_fusion_guards_an_index_that_may_be_out_of_range() -> None:
    text = simplified(
        lambda x: da.gather([3], da.gather([2], x, lambda i: (i,)), lambda j: (j,)), X
    )
    # j runs over [0, 3): the lower bound holds, the upper one is checked
    assert "cond (j < 2) j (-1)" in text


def test_bounds_checks_an_index_functions_variables_decide_are_dropped() -> None:
    """``0 <= i && i < n`` for the gather's own ``i`` over ``[0, n)`` is true (§5.2's
    checks that the shapes decide), in a gather's and in a scatter's index function."""
    g = simplified(lambda x: da.gather([3], da.gather([4], x, lambda i: (i,)), lambda j: (j,)), X)
    assert "<=" not in g and "cond" not in g
    s = simplified(lambda x: da.scatter([4], da.gather([3], x, lambda j: (j,)), lambda j: (j,)), X)
    assert "<=" not in s and "cond" not in s


def test_identity_gather_is_the_array() -> None:
    assert simplified(lambda x: da.gather([3, 4], x, lambda i, j: (i, j)), X) == r"\x. x"


def test_permuting_gather_is_a_transpose() -> None:
    assert simplified(lambda x: da.gather([4, 3], x, lambda j, i: (i, j)), X) == r"\x. tr [1,0] x"


def test_gather_ignoring_a_variable_is_a_replicate() -> None:
    text = simplified(lambda x: da.gather([5, 3], x, lambda k, i: (i,)), X)
    assert text == r"\x. replicate 5 x"
    text = simplified(lambda x: da.gather([3, 5], x, lambda i, k: (i,)), X)
    assert text == r"\x. tr [1,0,2] (replicate 5 x)"


def test_sum_outer_of_replicate_is_scaling() -> None:
    assert simplified(lambda x: da.sum_outer(da.replicate(5, x[0])), X) == (
        r"\x. x[0] * replicate 4 5.0"
    )


def test_index_of_iota_in_range() -> None:
    text = simplified(lambda x: da.gather([3], x, lambda i: (da.iota(3)[i],)), X)
    assert text == r"\x. x"


def test_constant_folding_and_cond_on_constants() -> None:
    assert simplified(lambda x: x[0, 0] * (2.0 * 3.0 + np.float64(1.0)), X) == (
        r"\x. x[0, 0] * 7.0"
    )
    assert simplified(lambda x: da.where(da.constant(True), x[0], x[1]), X) == r"\x. x[0]"
    assert simplified(lambda x: x[da.constant(np.arange(4) * 2)[1] + 0], X) == r"\x. x[2]"


def test_transposes_and_reshapes_compose() -> None:
    y = np.ones((2, 3, 4))
    assert simplified(lambda y: da.transpose(da.transpose(y, (1, 2, 0)), (2, 0, 1)), y) == (
        r"\y. y"
    )
    assert simplified(lambda y: da.reshape(da.reshape(y, (6, 4)), (4, 6)), y) == (
        r"\y. reshape [4,6] y"
    )


def test_dead_let_is_dropped() -> None:
    assert simplified(lambda x: da.let(da.exp(x), lambda e: x + 1.0), X) == (
        r"\x. x + replicate 3 (replicate 4 1.0)"
    )


def test_bounds_checks_decided_by_the_shapes_are_folded() -> None:
    """Indexing ``(x * i)[i]`` under ``build1 4`` over ``x : [5]`` leaves the totality
    check ``0 <= iota 4 && iota 4 < 5`` (§5.2); the bounds of ``iota`` decide it."""
    x = np.arange(5.0)

    def f(x: da.Tensor) -> da.Tensor:
        return da.build1(4, lambda i: (x * da.to_float(i))[i])

    p = da.pipeline(f, x)
    text = str(p.vectorised)
    assert "select" not in text and "<=" not in text and "iota 4 <" not in text
    np.testing.assert_array_equal(p.vectorised(x), x[:4] * np.arange(4.0))


def test_bounds_checks_that_can_fail_are_kept() -> None:
    x = np.arange(3.0)

    def f(x: da.Tensor) -> da.Tensor:  # i reaches 3, past the end of x
        return da.build1(4, lambda i: (x * da.to_float(i))[i])

    p = da.pipeline(f, x)
    np.testing.assert_array_equal(p.vectorised(x), [0.0, 1.0, 4.0, 0.0])
    np.testing.assert_array_equal(p.vectorised(x), p.source(x))


LEFT_AS_THEY_ARE = {
    terms.Const, terms.Var, terms.Iota, terms.Build1, terms.FromList, terms.Share,
    terms.Replicate, terms.ArgMin, terms.ArgMax, terms.ArgSort, terms.Structural,
}
"""The constructs no simplification rewrites: their smart constructor is the identity,
so :data:`REWRITE_NAMES` (the names of rewrites) needs no rule for them."""


def test_every_construct_has_a_smart_constructor_a_range_and_its_rewrites_a_name() -> None:
    """A construct is local (#37): each construct of the language has its smart
    constructor and its static integer bounds, and each that a rule rewrites has the
    name its rewrites get in the rule trace."""
    constructs = (*terms.term_constructors(), terms.Structural)
    assert [c.__name__ for c in constructs if c not in SMART_CONSTRUCTORS] == []
    assert [c.__name__ for c in constructs if c not in INT_RANGES] == []
    rewritten = set(constructs) - LEFT_AS_THEY_ARE
    assert [c.__name__ for c in rewritten if c not in REWRITE_NAMES] == []
    as_is = SMART_CONSTRUCTORS[terms.Var]
    assert all(SMART_CONSTRUCTORS[c] is as_is for c in LEFT_AS_THEY_ARE)
    assert all(SMART_CONSTRUCTORS[c] is not as_is for c in rewritten)
    node = terms.Iota(3)
    assert as_is(Simplifier(terms.IdSupply()), node) is node


def test_a_construct_without_a_smart_constructor_is_named_in_the_error() -> None:
    class Unknown:
        pass

    with pytest.raises(UnsupportedError, match="Unknown has no simplification rule"):
        SMART_CONSTRUCTORS[Unknown]

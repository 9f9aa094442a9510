"""The build-it-yourself track is one pipeline, not separate toys: on dualarr's random
programs, each stage's reference solution consumes the previous stage's output.

A program is written as a Python function over stage (a)'s tracing API and traced by
(a); (b)'s bot vectorises the traced term; (c)'s dual arrays differentiate the bot's
output; (d) compiles the same term to a gradient program that (e)'s code generator turns
into NumPy code; (f) reaches the same gradient by transposition, also compiled by (e);
(g)'s vmap is ``build1`` plus (b)'s bot.  Every answer is compared with dualarr's.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

from dualarr.teach.scratch import stage
from dualarr.teach.scratch.oracle import Case, as_python, cases
from dualarr.teach.scratch.terms import Build1, Term, subterms

API = ("const", "build1", "gather", "scatter", "sum_outer", "replicate", "transpose",
       "from_list", "iota", "cond", "let", "sin", "cos", "tanh", "maximum", "minimum")  # fmt: skip


def reference(name: str) -> types.ModuleType:
    return stage(name, "reference")


def traced_and_vectorised(case: Case) -> tuple[Term, Term]:
    a, b = reference("a"), reference("b")
    function = as_python(case.term, {name: getattr(a, name) for name in API}, case.inputs)
    traced = a.trace(function, *case.inputs)
    vectorised = b.bot(traced)
    assert not any(isinstance(u, Build1) for u in subterms(vectorised))
    return traced, vectorised


def close(got: Any, want: Any) -> None:
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-9, atol=1e-12)


CASES = cases(2026, 40)


def test_each_stage_loads_the_one_before() -> None:
    a, b, c, d, e, f, g = (reference(name) for name in "abcdefg")
    assert b.a is a and c.b is b and d.b is b and g.b is b and g.d is d
    assert f.d is d and e.d is d


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"p{c.number}")
def test_the_chain_agrees_with_dualarr(case: Case) -> None:
    c, d, e, f = (reference(name) for name in "cdef")
    _, vectorised = traced_and_vectorised(case)
    env = dict(case.env)
    ct = case.cotangent()
    want_value, want_grads = case.value(), case.vjp(ct)
    shapes = {name: np.shape(array) for name, array in env.items()}

    value, grads = c.vjp(vectorised, env, ct)  # (c) on (b)'s output of (a)'s trace
    close(value, want_value)
    for name in case.inputs:
        close(grads[name], want_grads[name])

    for program in (d.gradient_program(vectorised, shapes),  # (d), then (e)
                    f.gradient_program_by_transposition(vectorised, shapes)):  # (f), then (e)
        primal, compiled_grads = e.compile_gradient(program)(*env.values(), ct)
        close(primal, want_value)
        for name, g in zip(program.inputs, compiled_grads, strict=True):
            close(g, want_grads[name])


@pytest.mark.parametrize("case", CASES[:15], ids=lambda c: f"p{c.number}")
def test_vmap_is_build1_and_the_bot(case: Case) -> None:
    a, g = reference("a"), reference("g")
    traced, _ = traced_and_vectorised(case)
    name = case.inputs[0]
    rng = np.random.default_rng(case.number)
    batch = np.stack([case.env[name] + rng.integers(-4, 5, size=np.shape(case.env[name])) / 8
                      for _ in range(3)])
    mapped = g.vmap(traced, name, 3)
    assert not any(isinstance(u, Build1) for u in subterms(mapped))
    got = a.evaluate(mapped, {**case.env, name: batch})
    for k in range(3):
        close(got[k], a.evaluate(traced, {**case.env, name: batch[k]}))

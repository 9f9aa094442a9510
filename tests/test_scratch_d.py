"""Stage (d) of the build-it-yourself track: its checks pass the solution and catch the
mistakes they name (a let re-walked, a tie given to the wrong argument, a shared primal
node rebuilt at each use, a node of an index function hoisted out of it, a duplicated
cotangent left unshared, a Share of the Delta walked at each use, a share→let that walks
a fragment again or binds the highest id first); the gradient program it gives is the
one stage e consumes (no let, build1 or share) and stays linear on a let chain."""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

from dualarr.teach.scratch.checks_d import CHAIN_X, Chain, _size
from dualarr.teach.scratch.grading import Outcome, run_task, tasks_of
from dualarr.teach.scratch.notebooks import exported_code, notebook_path, stage
from dualarr.teach.scratch.terms import Build1, Let, Op, subterms


@pytest.fixture(scope="module")
def solution() -> types.ModuleType:
    if not all(notebook_path(s, "reference").exists() for s in "abd"):
        pytest.skip("the solution notebooks of stages a, b and d are not generated yet")
    return stage("d", "reference")


def grade(ns: dict[str, Any], task_id: str) -> Outcome:
    (found,) = [t for t in tasks_of("d") if t.id == task_id]
    return run_task(found, ns)


def mutant(*edits: tuple[str, str]) -> dict[str, Any]:
    """The solution with each ``old`` replaced by ``new``: a learner's mistake."""
    code = exported_code(notebook_path("d", "reference"))
    for stem in "ab":
        code = code.replace(f'stage("{stem}")', f'stage("{stem}", "reference")')
    for old, new in edits:
        assert old in code, old
        code = code.replace(old, new)
    module = types.ModuleType("scratch_d_mutant")
    sys.modules[module.__name__] = module  # the dataclasses look their module up
    exec(compile(code, "<stage d (mutant)>", "exec"), module.__dict__)
    return module.__dict__


def test_the_solution_passes_every_task(solution: types.ModuleType) -> None:
    for t in tasks_of("d"):
        outcome = run_task(t, vars(solution))
        assert outcome.passed, outcome.report()


def test_the_gradient_program_is_what_stage_e_consumes(solution: types.ModuleType) -> None:
    for kind in ("product", "sum"):
        p = solution.gradient_program(Chain(kind, 40).term, {"x": (3,)})
        terms = [p.primal, *p.gradients, *(bound for _, bound in p.bindings)]
        assert p.inputs == ("x",) and p.cotangent == "dt"
        assert not any(isinstance(u, Let | Build1) or type(u).__name__ == "Share"
                       for t in terms for u in subterms(t))
        assert _size(terms) < 40 * 40  # linear: a few nodes per let of the chain
        names = [name for name, _ in p.bindings]
        assert len(set(names)) == len(names)
        env: dict[str, Any] = {"x": CHAIN_X, "dt": np.asarray(0.5)}
        a = stage("a", "reference")
        for name, bound in p.bindings:
            env[name] = a.evaluate(bound, env)
        value, grad = Chain(kind, 40).expected(0.5)
        assert np.allclose(a.evaluate(p.primal, env), value)
        assert np.allclose(a.evaluate(p.gradients[0], env), grad)


def _fails(outcome: Outcome, words: str) -> None:
    assert not outcome.passed, outcome.report()
    assert words in outcome.report(), outcome.report()


def test_a_let_walked_again_fails(solution: types.ModuleType) -> None:
    ns = mutant(("return forward_terms(body, env | {name: forward_terms(bound, env)})",
                 "from dualarr.teach.scratch.terms import subst\n"
                 "            return forward_terms(subst(body, name, bound), env)"))
    _fails(grade(ns, "d.forward_terms"), "grows faster than the program")


def test_a_tie_to_the_second_argument_fails(solution: types.ModuleType) -> None:
    ns = mutant(('"ge" if op == "maximum" else "le"', '"gt" if op == "maximum" else "lt"'))
    _fails(grade(ns, "d.forward_terms"), "maximum x z")


def test_an_extraction_that_binds_only_the_roots_fails(solution: types.ModuleType) -> None:
    ns = mutant(("(uses[id(u)] > 1 or id(u) in wanted)", "(id(u) in wanted)"))
    _fails(grade(ns, "d.extract"), "y11 + y11")


def test_an_index_function_hoisted_out_fails(solution: types.ModuleType) -> None:
    ns = mutant(("free[id(u)] <= set(inputs)", "True"))
    _fails(grade(ns, "d.extract"), "bound nowhere before it")


def test_an_unshared_duplicated_cotangent_fails(solution: types.ModuleType) -> None:
    ns = mutant(("return c if isinstance(c, Var | Const | Share) else share_term(c)",
                 "return c"))
    _fails(grade(ns, "d.reverse_symbolic"), "each share counted once")


def test_a_delta_share_walked_at_each_use_fails(solution: types.ModuleType) -> None:
    ns = mutant(("            case dl.Share(i, inner):\n",
                 "            case dl.Share(i, inner) if True:\n"
                 "                eval_delta(c, inner)\n"
                 "            case dl.Share(i, inner):\n"))
    _fails(grade(ns, "d.reverse_symbolic"), "Python calls")


def test_a_permutation_not_inverted_fails(solution: types.ModuleType) -> None:
    ns = mutant(("Transpose(tuple(int(p) for p in np.argsort(perm)), c)", "Transpose(perm, c)"))
    _fails(grade(ns, "d.reverse_symbolic"), "tr [1, 2, 0] x")


def test_a_fragment_unshared_again_fails(solution: types.ModuleType) -> None:
    memoised = "            if t.id not in fragments:\n                fragment = unshare(t.term)\n"
    walked = "            fragment = unshare(t.term)\n            if t.id not in fragments:\n"
    ns = mutant((memoised, walked))
    _fails(grade(ns, "d.share_to_let"), "doubling chain of shares")


def test_lets_bound_highest_id_first_fail(solution: types.ModuleType) -> None:
    ns = mutant(("sorted(fragments)", "sorted(fragments, reverse=True)"))
    _fails(grade(ns, "d.share_to_let"), "bound nowhere before it")


def test_share_is_an_op_the_walkers_see(solution: types.ModuleType) -> None:
    s: Any = solution.share_term(Op("add", (solution.Var("x"), solution.Var("x"))))
    assert issubclass(type(s), Op) and s.term.op == "add" and s.op == f"share{s.id}"
    assert solution.show(s) == f"share{s.id} (x + x)"

"""Checks of stage (g): vmap as build1 plus the bot, batching several inputs, batching a
gradient program binding by binding, and per-example gradients.

The learner's functions call the earlier stages through the names ``b`` (the bot) and
``d`` (the gradient program) of their setup cell; while a check runs, those names are
bound to the reference solutions, so each task is graded on its own (a bot still being
written does not fail vmap).  Values are compared with dualarr's, example by example.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .grading import Mismatch, expect_close, task
from .notebooks import references, stage
from .oracle import Case, cases
from .terms import GradientProgram, Term, constructs_in, is_term, mentions, show

Array = np.ndarray
BATCH = 3

VMAP_HINT = (
    "Fig. 7 and §5: vmap over an input is a build1 over the batch in which each example "
    "reads its own row of that input; the bot (your stage b) then leaves no build1"
)
IN_AXES_HINT = (
    "one build1 for all batched inputs, so their examples are paired (the Haskell note's "
    "vmap0_2, not nested vmaps); an input batched along axis a reads row i of that axis, "
    "so bring axis a to the front first (tr); an input with axis None is shared"
)
PROGRAM_HINT = (
    "batch a gradient program binding by binding: a binding is batched when it reads a "
    "batched name (an input, the cotangent, or an earlier batched binding), and then its "
    "own name is batched too; the primal and every gradient are per example; a binding "
    "that reads no batched name is the same for every example, so keep it once, unbatched"
)
PER_EXAMPLE_HINT = (
    "per-example gradients are vmap of the gradient program (§7, Fig. 21): stage d wants a "
    "build1-free term, and both an example's input and its cotangent vary per example"
)


# --------------------------------------------------------------------------------------
# The reference stages, in place of the learner's, while a check runs
# --------------------------------------------------------------------------------------




def _evaluate() -> Callable[[Term, dict[str, Array]], Array]:
    evaluate: Callable[[Term, dict[str, Array]], Array] = stage("a", "reference").evaluate
    return evaluate


# --------------------------------------------------------------------------------------
# Batches of examples, and dualarr's answers per example
# --------------------------------------------------------------------------------------


def examples(case: Case, name: str, seed: int) -> list[Array]:
    """``BATCH`` examples of input ``name``: the case's own and random ones (multiples of
    1/8, as the random programs' inputs)."""
    rng = np.random.default_rng(seed)
    shape = case.env[name].shape
    return [case.env[name], *(rng.integers(-16, 17, size=shape) / 8.0 for _ in range(BATCH - 1))]


def with_inputs(case: Case, env: Mapping[str, Array]) -> Case:
    """``case`` on other input arrays (dualarr's answers follow)."""
    arrays = tuple(np.asarray(env[n]) for n in case.inputs)
    return dataclasses.replace(
        case, env=dict(env), random=dataclasses.replace(case.random, arrays=arrays)
    )


def brief(t: Any, limit: int = 240) -> str:
    """A term in the paper's notation, cut short."""
    text = show(t) if is_term(t) else repr(t)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def no_build1(t: Any, what: str, hint: str, case: Case) -> None:
    if not is_term(t):
        raise Mismatch(
            f"{what}: a {type(t).__name__}, expected a term", hint=hint, program=case.text
        )
    if "Build1" in constructs_in(t):
        raise Mismatch(
            f"{what} still has a build1 (Theorem 5.1: the bot leaves none): {brief(t)}",
            hint=hint,
            program=case.text,
        )


def run_program(
    p: GradientProgram,
    env: Mapping[str, Array],
    evaluate: Callable[[Term, dict[str, Array]], Array],
) -> tuple[dict[str, Array], Array, list[Array]]:
    """The bindings' values, the primal and the gradients of ``p`` in ``env`` (inputs
    and cotangent)."""
    scope = dict(env)
    for name, bound in p.bindings:
        scope[name] = evaluate(bound, scope)
    return scope, evaluate(p.primal, scope), [evaluate(g, scope) for g in p.gradients]


# --------------------------------------------------------------------------------------
# The tasks
# --------------------------------------------------------------------------------------


@task("g.vmap", names=("vmap",), title="vmap as build1 plus the bot", hint=VMAP_HINT)
def check_vmap(ns: Mapping[str, Any]) -> str:
    vmap = ns["vmap"]
    evaluate = _evaluate()
    programs = sorted(cases(31, 30), key=lambda c: len(show(c.term)))
    batched = 0
    with references([vmap], ("b",)):
        for case in programs:
            for k, name in enumerate(case.inputs):
                rows = examples(case, name, 100 * case.number + k)
                got = vmap(case.term, name, BATCH)
                shown = f"vmap(program, {name!r}, {BATCH})"
                no_build1(got, shown, VMAP_HINT, case)
                env = {**case.env, name: np.stack(rows)}
                want = np.stack([with_inputs(case, {**case.env, name: x}).value() for x in rows])
                expect_close(
                    want,
                    evaluate(got, env),
                    what=f"{shown} (your term: {brief(got)}) differs from dualarr's "
                    "value per example",
                    hint=VMAP_HINT,
                    program=case.text,
                    inputs=env,
                )
                batched += 1
    return (
        f"{len(programs)} random programs, each vmapped over each of its inputs "
        f"({batched} in all): no build1 left, and the value of example b is dualarr's "
        "value on example b"
    )


@task(
    "g.in_axes", names=("vmap_axes",), title="batching several inputs (in_axes)", hint=IN_AXES_HINT
)
def check_in_axes(ns: Mapping[str, Any]) -> str:
    vmap_axes = ns["vmap_axes"]
    evaluate = _evaluate()
    programs = sorted(
        (c for c in cases(32, 60) if len(c.inputs) > 1), key=lambda c: len(show(c.term))
    )
    rng = np.random.default_rng(32)
    with references([vmap_axes], ("b",)):
        for case in programs:
            axes: dict[str, int | None] = {}
            for n in case.inputs:
                rank = case.env[n].ndim
                axes[n] = None if rng.random() < 0.3 else int(rng.integers(0, rank + 1))
            if all(a is None for a in axes.values()):
                axes[case.inputs[0]] = 0
            along = {n: axis for n, axis in axes.items() if axis is not None}
            rows = {
                n: examples(case, n, 7 * case.number + k)
                for k, n in enumerate(case.inputs)
                if n in along
            }
            got = vmap_axes(case.term, dict(axes), BATCH)
            shown = f"vmap_axes(program, {axes}, {BATCH})"
            no_build1(got, shown, IN_AXES_HINT, case)
            env = {**case.env, **{n: np.stack(r, axis=along[n]) for n, r in rows.items()}}
            want = np.stack([
                with_inputs(case, {**case.env, **{n: r[b] for n, r in rows.items()}}).value()
                for b in range(BATCH)
            ])  # fmt: skip
            expect_close(
                want,
                evaluate(got, env),
                what=f"{shown} (your term: {brief(got)}) differs from dualarr's value per example",
                hint=IN_AXES_HINT,
                program=case.text,
                inputs=env,
            )
    return (
        f"{len(programs)} random programs of several inputs, each batched along a random "
        "axis or shared: no build1 left, and example b pairs the inputs' examples b"
    )


def _gradient_cases(seed: int, count: int) -> list[tuple[Case, GradientProgram]]:
    b, d = stage("b", "reference"), stage("d", "reference")
    found = []
    for case in sorted(cases(seed, count), key=lambda c: len(show(c.term))):
        shapes = {n: case.env[n].shape for n in case.inputs}
        found.append((case, d.gradient_program(b.bot(case.term), shapes)))
    return found


def _depends(p: GradientProgram, batched: set[str]) -> set[str]:
    """The bindings of ``p`` that read a batched name, directly or through another."""
    found = set(batched)
    for name, bound in p.bindings:
        if any(mentions(bound, m) for m in found):
            found.add(name)
    return found - batched


@task(
    "g.vmap_program",
    names=("vmap_program",),
    title="batching a gradient program binding by binding",
    hint=PROGRAM_HINT,
)
def check_vmap_program(ns: Mapping[str, Any]) -> str:
    vmap_program = ns["vmap_program"]
    evaluate = _evaluate()
    programs = _gradient_cases(33, 40)
    shared = 0
    with references([vmap_program], ("b",)):
        for case, p in programs:
            name = case.inputs[-1]
            batched = {name, p.cotangent}
            shown = f"vmap_program(gradient program, {sorted(batched)}, {BATCH})"
            got = vmap_program(p, set(batched), BATCH)
            if not isinstance(got, GradientProgram):
                raise Mismatch(
                    f"{shown}: a {type(got).__name__}, expected a GradientProgram",
                    hint=PROGRAM_HINT,
                    program=case.text,
                )
            for _, bound in got.bindings:
                no_build1(bound, f"{shown}: a binding", PROGRAM_HINT, case)
            for term in (got.primal, *got.gradients):
                no_build1(term, shown, PROGRAM_HINT, case)
            cotangent = case.cotangent()
            rows = examples(case, name, case.number)
            cts = [cotangent, *(np.roll(cotangent, k) * (k + 1) for k in range(1, BATCH))]
            per_example = [
                run_program(p, {**case.env, name: x, p.cotangent: c}, evaluate)
                for x, c in zip(rows, cts, strict=True)
            ]
            env = {**case.env, name: np.stack(rows), p.cotangent: np.stack(cts)}
            scope, primal, gradients = run_program(got, env, evaluate)
            inputs = {name: env[name], "cotangent": env[p.cotangent]}
            expect_close(
                np.stack([e[1] for e in per_example]),
                primal,
                what=f"{shown}: the primal differs from the program's, per example",
                hint=PROGRAM_HINT,
                program=case.text,
                inputs=inputs,
            )
            for k, input_name in enumerate(p.inputs):
                expect_close(
                    np.stack([e[2][k] for e in per_example]),
                    gradients[k],
                    what=f"{shown}: the gradient of {input_name} differs from the "
                    "program's, per example",
                    hint=PROGRAM_HINT,
                    program=case.text,
                    inputs=inputs,
                )
            dependent = _depends(p, batched)
            for bound_name, _ in p.bindings:
                one = per_example[0][0][bound_name]
                want = (BATCH, *np.shape(one)) if bound_name in dependent else np.shape(one)
                obtained = np.shape(scope[bound_name]) if bound_name in scope else None
                if obtained != want:
                    raise Mismatch(
                        f"{shown}: binding {bound_name} has shape "
                        f"{None if obtained is None else list(obtained)}, expected {list(want)} "
                        + (
                            "(it reads a batched name)"
                            if bound_name in dependent
                            else "(it reads no batched name: computed once, for every example)"
                        ),
                        hint=PROGRAM_HINT,
                        program=case.text,
                    )
                shared += bound_name not in dependent
    return (
        f"{len(programs)} gradient programs (stage d's reference) batched over an input "
        f"and the cotangent: no build1, primal and gradients per example equal the "
        f"program's, and {shared} bindings that read no batched name stay unbatched"
    )


@task(
    "g.per_example_gradients",
    names=("per_example_gradients",),
    title="per-example gradients: vmap of the gradient program",
    hint=PER_EXAMPLE_HINT,
)
def check_per_example_gradients(ns: Mapping[str, Any]) -> str:
    per_example_gradients = ns["per_example_gradients"]
    evaluate = _evaluate()
    programs = sorted(cases(34, 40), key=lambda c: len(show(c.term)))
    with references([per_example_gradients], ("b", "d")):
        for case in programs:
            name = case.inputs[0]
            shapes = {n: case.env[n].shape for n in case.inputs}
            shown = f"per_example_gradients(program, {name!r}, {BATCH}, {shapes})"
            got = per_example_gradients(case.term, name, BATCH, shapes)
            if not isinstance(got, GradientProgram):
                raise Mismatch(
                    f"{shown}: a {type(got).__name__}, expected a GradientProgram",
                    hint=PER_EXAMPLE_HINT,
                    program=case.text,
                )
            for term in (*(u for _, u in got.bindings), got.primal, *got.gradients):
                no_build1(term, shown, PER_EXAMPLE_HINT, case)
            rows = examples(case, name, case.number)
            each = [with_inputs(case, {**case.env, name: x}) for x in rows]
            cts = [e.cotangent(k) for k, e in enumerate(each)]
            env = {**case.env, name: np.stack(rows), got.cotangent: np.stack(cts)}
            _, primal, gradients = run_program(got, env, evaluate)
            inputs = {name: env[name], "cotangent": env[got.cotangent]}
            expect_close(
                np.stack([e.value() for e in each]),
                primal,
                what=f"{shown}: the primal differs from dualarr's value per example",
                hint=PER_EXAMPLE_HINT,
                program=case.text,
                inputs=inputs,
            )
            vjps = [e.vjp(c) for e, c in zip(each, cts, strict=True)]
            if tuple(got.inputs) != tuple(case.inputs) or len(gradients) != len(case.inputs):
                raise Mismatch(
                    f"{shown}: gradients for {list(got.inputs)}, expected one for "
                    f"each of {list(case.inputs)}",
                    hint=PER_EXAMPLE_HINT,
                    program=case.text,
                )
            for k, input_name in enumerate(case.inputs):
                expect_close(
                    np.stack([v[input_name] for v in vjps]),
                    gradients[k],
                    what=f"{shown}: the gradient of {input_name} differs from "
                    "dualarr's vjp, per example",
                    hint=PER_EXAMPLE_HINT,
                    program=case.text,
                    inputs=inputs,
                )
    return (
        f"{len(programs)} random programs batched over an input: the primal and the "
        "gradient of every input (batched or shared) equal dualarr's value and vjp, "
        "example by example, from one build1-free program"
    )

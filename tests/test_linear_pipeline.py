"""The compile pipeline is linear in the program's size (the paper's claim, §7).

Work is counted, never timed: every Python function call a stage makes (a profiler's
call count, deterministic on one machine) and the peak memory it allocates, for a program
of ``n`` operations and for one of ``2n``.  Doubling the program may at most double each
stage's calls, with 10% slack for what does not scale (``≤ 2.2×``), and its memory (``≤
2.5×``); a quadratic stage would show ``≈ 4×``.  The programs are
those that were quadratic: a long chain of elementwise operations, a chain that reuses
its input at every step, let chains inside a ``build1`` in both positions (each let the
next one's bound, or the previous one's body), ``grad`` of ``grad``, and a program
closing over an array.  The deepest let chains also compile without a RecursionError and
agree with the interpreted path.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from pipeline_programs import (
    PROGRAMS,
    Program,
    let_chain_in_body_position,
    let_chain_in_value_position,
)

import dualarr as da
from dualarr.ad.extraction import extract
from dualarr.ad.share_to_let import share_to_let, simplify_let_program
from dualarr.ad.symbolic_forward import forward_pass
from dualarr.ad.symbolic_reverse import symbolic_reverse
from dualarr.codegen.generate import CompiledProgram
from dualarr.lang.program import trace
from dualarr.lang.terms import count_nodes
from dualarr.lang.trampoline import collector_paused
from dualarr.pipeline import vectorise_program

SIZES = {
    "chain reusing its input": 600,
    "closing over arrays": 600,
    "grad of grad": 300,
    "vmap of grad": 200,
    "jacobian of grad": 120,
}
"""``n`` (operations) where it is not 300: smaller where one operation compiles into
several (higher order)."""

STAGES = ("trace", "vectorise", "forward+extract", "reverse", "share->let", "simplify", "codegen")


@contextmanager
def counting(work: dict[str, tuple[int, int]], stage: str) -> Iterator[None]:
    """Record the stage's function calls and the peak of memory it allocated."""
    profile = cProfile.Profile()
    tracemalloc.start()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        stats = pstats.Stats(profile)
        calls = sum(entry[1] for entry in stats.stats.values())  # type: ignore[attr-defined]
        work[stage] = (calls, peak)


def work_per_stage(program: Program, n: int) -> tuple[dict[str, tuple[int, int]], int]:
    """Function calls made and peak memory allocated by each stage of the compile
    pipeline, and the traced program's size."""
    f, args = program(n)
    calls: dict[str, tuple[int, int]] = {}
    with collector_paused():
        with counting(calls, "trace"):
            source = trace(f, *args)
        with counting(calls, "vectorise"):
            vectorised, _ = vectorise_program(source)
        with counting(calls, "forward+extract"):
            extracted = extract(forward_pass(vectorised))
        with counting(calls, "reverse"):
            shared = symbolic_reverse(extracted)
        with counting(calls, "share->let"):
            lets = share_to_let(shared)
        with counting(calls, "simplify"):
            gradient = simplify_let_program(lets)
        with counting(calls, "codegen"):
            CompiledProgram(gradient.inputs, gradient.outputs, gradient.name, gradient.bindings)
    return calls, count_nodes(source.outputs)


@pytest.fixture(autouse=True)
def deep_user_code() -> Iterator[None]:
    """The user's own code nests one lambda per let of a body-position chain."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 15_000))
    yield
    sys.setrecursionlimit(limit)


def _ratios(
    small: dict[str, tuple[int, int]], large: dict[str, tuple[int, int]], measure: int, floor: int
) -> dict[str, float]:
    return {s: large[s][measure] / max(small[s][measure], floor) for s in STAGES}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_doubling_the_program_at_most_doubles_every_stage(name: str) -> None:
    program = PROGRAMS[name]
    n = SIZES.get(name, 300)
    small, small_nodes = work_per_stage(program, n)
    large, large_nodes = work_per_stage(program, 2 * n)
    assert large_nodes >= 1.9 * small_nodes  # the program did double
    slow = {s: round(r, 2) for s, r in _ratios(small, large, 0, 1).items() if r > 2.2}
    assert not slow, f"{name}: superlinear work in {slow} ({small} -> {large})"
    # memory: a stage's peak allocation (sets of free variables, copies of the DAG) grows
    # at most linearly too, with slack for the allocator; what the interpreter allocates
    # once (a first use of some machinery) can land in either run, so a ratio over the
    # bound is measured again and the smaller peaks kept
    if any(r > 2.5 for r in _ratios(small, large, 1, 64 * 1024).values()):
        again_small, _ = work_per_stage(program, n)
        again_large, _ = work_per_stage(program, 2 * n)
        small = {s: min(small[s], again_small[s], key=lambda w: w[1]) for s in STAGES}
        large = {s: min(large[s], again_large[s], key=lambda w: w[1]) for s in STAGES}
    memory = _ratios(small, large, 1, 64 * 1024)
    hungry = {s: round(r, 2) for s, r in memory.items() if r > 2.5}
    assert not hungry, f"{name}: superlinear memory in {hungry} ({small} -> {large})"


@pytest.mark.parametrize(
    "program", [let_chain_in_value_position, let_chain_in_body_position], ids=["value", "body"]
)
def test_a_3500_deep_let_chain_in_a_1000_element_build_compiles_and_agrees(
    program: Program,
) -> None:
    f, _ = program(3500)
    x = np.linspace(0.0, 1.0, 1000)
    compiled = da.grad(f)(x)
    interpreted = da.grad(f, mode="interpret")(x)
    np.testing.assert_allclose(compiled, interpreted, rtol=1e-12, atol=1e-300)
    assert np.all(np.isfinite(compiled)) and np.any(compiled != 0)

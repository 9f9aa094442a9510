"""Exercises of chapter 08 (transposing a Delta into a linear program, §2.6 and §6.4 of
the paper, Fig. 17): the scatter of a gather that reads out of range, the ``Onehot``
statements of shared Deltas, the transposed contraction, the two sides of the adjoint
identity, and where the scatter of Fig. 18's gradient went."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...ad import delta as dl
from ...ad.reverse import forward
from ...ad.transposition import (
    DVar,
    LinearProgram,
    Onehot,
    run_linear,
    to_let_form,
    transpose_delta,
)
from ...api import dual_run, vectorised_program
from ...interp.algebra import IndexFn
from ...interp.evaluate import NumpyAlgebra
from ...lang import functions as fn
from ...lang.tensor import Tensor
from ...lang.terms import DType
from ...pipeline import pipeline
from ..examples import fig18
from ..exercises.feedback import (
    Feedback,
    all_close,
    describe_error,
    format_array,
    format_number,
    not_yet,
    passed,
    require_callable,
)

ALG = NumpyAlgebra()
F64 = DType.FLOAT64


def _gradient(program: LinearProgram, cotangent: np.ndarray, shape: tuple[int, ...]) -> Any:
    return run_linear(program, ALG, cotangent).get(0, np.zeros(shape))


# --------------------------------------------------------------------------------------
# Exercise 1: the transpose of a gather, out-of-range reads included
# --------------------------------------------------------------------------------------


def gather_delta(index: np.ndarray, n: int) -> dl.Delta:
    """``Gather [len index] (Input 0 : [n]) f`` with ``f`` tabulated as ``index``."""
    return dl.Gather((len(index),), dl.Input(0, (n,), F64), IndexFn((index,)), (len(index),))


_GATHER_CASES = (
    (np.array([3, 0, 0]), 4, np.array([1.0, 2.0, 3.0])),
    (np.array([5, 0]), 4, np.array([10.0, 20.0])),
    (np.array([-1, 2, 7]), 4, np.array([1.0, 2.0, 3.0])),
)


def check_scatter_cotangent(scatter_cotangent: Callable[[Any, Any, int], Any]) -> Feedback:
    """Check ``scatter_cotangent(c, index, n)``: the gradient of a length-``n`` vector
    read by ``Gather`` at ``index``, for the cotangent ``c``: what ``T[Gather]``'s
    ``Scatter`` computes, repeated and out-of-range reads included."""
    require_callable(scatter_cotangent, "scatter_cotangent", "check_scatter_cotangent")
    title = "the transpose of a gather (T[Gather] = Scatter)"
    for index, n, c in _GATHER_CASES:
        want = _gradient(transpose_delta(to_let_form(gather_delta(index, n))), c, (n,))
        where = f"input: c = {format_array(c)}, index = {index.tolist()}, n = {n}"
        try:
            got = np.asarray(scatter_cotangent(c.copy(), index.copy(), n), dtype=float)
        except IndexError as err:
            return not_yet(title, where, f"it raised {describe_error(err)}",
                           "Hint: a read outside the array (forward, a gather gives 0 there) "
                           "has no element of the input to send its cotangent to.")
        except Exception as err:
            return not_yet(title, where, f"it raised {describe_error(err)}")
        if got.shape == want.shape and all_close(got, want):
            continue
        overwritten = np.zeros(n)
        inside = (index >= 0) & (index < n)
        overwritten[index[inside]] = c[inside]
        if len(set(index[inside])) < int(inside.sum()) and all_close(got, overwritten):
            hint = ("Hint: two reads of the same element both contributed to the output: "
                    "their cotangents must both reach it (an assignment keeps only one).")
        elif np.any(~inside):
            hint = ("Hint: an index below 0 or at n or above reads nothing (the gather "
                    "gives 0 there). NumPy would read a negative index from the end: "
                    "the transposed read must not.")
        else:
            hint = "Hint: each cotangent c[q] goes back to the element that read number q read."
        return not_yet(title, where, f"expected: {format_array(want)}",
                       f"obtained: {format_array(got)}", hint)
    return passed(title, "right on repeated, out-of-range and negative indices: a cotangent "
                  "whose read fell outside the array is dropped")


# --------------------------------------------------------------------------------------
# Exercise 2: Onehot statements of shared Deltas
# --------------------------------------------------------------------------------------


def item_delta() -> dl.Delta:
    """``Share 2 (Add (Scale y s1) s1)`` with ``s1 = Share 1 (Scale 2 (Input 0))``."""
    s1 = dl.Share(1, dl.Scale(np.full(3, 2.0), dl.Input(0, (3,), F64)))
    return dl.Share(2, dl.Add(dl.Scale(np.array([1.0, 2.0, 3.0]), s1), s1))


def _chain_delta() -> dl.Delta:
    def f(x: Tensor) -> Tensor:
        y = x
        for _ in range(3):
            y = fn.sin(y) * y
        return fn.sum(y)

    x = np.linspace(0.1, 1.0, 3)
    delta: dl.Delta = dual_run(vectorised_program(f, [x]), [x], [0]).deltas[0]
    return delta


def _flip_mul_delta() -> dl.Delta:
    def flip_mul(x: Tensor) -> Tensor:
        n = x.shape[0]
        return fn.build1(n, lambda i: x[i] * x[n - 1 - i])

    x = np.arange(1.0, 5.0)
    delta: dl.Delta = dual_run(vectorised_program(flip_mul, [x]), [x], [0]).deltas[0]
    return delta


def onehots_by_share(program: LinearProgram) -> dict[int, int]:
    """How many ``Onehot s<k>`` statements ``program`` has, by share id ``k``."""
    counts: dict[int, int] = {}
    for statement in program.body:
        if isinstance(statement, Onehot) and isinstance(statement.key, DVar):
            counts[statement.key.name] = counts.get(statement.key.name, 0) + 1
    return counts


def check_onehot_counts(onehot_counts: Callable[[dl.Delta], Mapping[int, int]]) -> Feedback:
    """Check ``onehot_counts(delta)``, predicted from the Delta alone: for each share id
    ``k``, how many ``Onehot s<k>`` statements ``transpose_delta(to_let_form(delta))``
    has (``T[Var k]``, once per use)."""
    require_callable(onehot_counts, "onehot_counts", "check_onehot_counts")
    title = "Onehot statements of shared Deltas (T[Var])"
    cases = (
        ("Share 2 (Add (Scale y s1) s1)", item_delta()),
        ("flip_mul's Delta", _flip_mul_delta()),
        ("a chain sin(y) * y, 3 steps", _chain_delta()),
    )
    for name, delta in cases:
        want = onehots_by_share(transpose_delta(to_let_form(delta)))
        try:
            got = dict(onehot_counts(delta))
        except Exception as err:
            return not_yet(title, f"input: {name}", f"it raised {describe_error(err)}")
        if got != want:
            return not_yet(
                title,
                f"input: {name}",
                f"expected: {dict(sorted(want.items()))}",
                f"obtained: {dict(sorted(got.items()))}",
                "Hint: T[Var k] writes one Onehot per *use* of s<k>: count how many times "
                "each Share node is a child of another node (dl.delta_children), walking "
                "the body of each Share only once; the root is used once, by the output.",
            )
    return passed(title, f"right on {len(cases)} Deltas; the Lookups then come from the "
                  "highest id down, as in the reverse pass")


# --------------------------------------------------------------------------------------
# Exercise 3: the transposed contraction
# --------------------------------------------------------------------------------------


def _reference_transposed_spec(spec: str) -> str:
    inputs, output = spec.split("->")
    first, second = inputs.split(",")
    return f"{output},{second}->{first}"


def check_transposed_spec(transposed_spec: Callable[[str], str]) -> Feedback:
    """Check ``transposed_spec(spec)``: the contraction of ``T[Contract spec u y]``
    (linear in the first operand ``u``, ``y`` fixed), and that transposing twice gives
    the spec back."""
    require_callable(transposed_spec, "transposed_spec", "check_transposed_spec")
    title = "the transposed contraction (T[Contract])"
    hint = ("Hint: the transposed map takes the cotangent, which has the indices of the "
            "output, together with the fixed operand y, and must give an array with the "
            "indices of u.")
    for spec in ("ab,b->a", "ab,bc->ac", "a,b->ab", "abc,c->ab", "ij,jk->ik"):
        want = _reference_transposed_spec(spec)
        try:
            got = transposed_spec(spec)
            twice = transposed_spec(got)
        except Exception as err:
            return not_yet(title, f"input: {spec!r}", f"it raised {describe_error(err)}", hint)
        if got != want:
            return not_yet(title, f"input: {spec!r}", f"expected: {want!r}",
                           f"obtained: {got!r}", hint)
        if twice != spec:
            return not_yet(title, f"input: {spec!r}, transposed twice",
                           f"expected: {spec!r}", f"obtained: {twice!r}", hint)
    return passed(title, "right on 5 specs; transposing twice gives the spec back: "
                  "(Jᵀ)ᵀ = J, the identity")


# --------------------------------------------------------------------------------------
# Exercise 4: the adjoint identity for softmax and logsumexp
# --------------------------------------------------------------------------------------


def _softmax(x: Tensor) -> Tensor:
    return fn.softmax(x)


def _logsumexp(x: Tensor) -> Tensor:
    return fn.logsumexp(x)


def _twice_softmax(x: Tensor) -> Tensor:
    return 2.0 * fn.softmax(x)


def _delta_of(f: Callable[[Tensor], Tensor], x: np.ndarray) -> dl.Delta:
    delta: dl.Delta = dual_run(vectorised_program(f, [x]), [x], [0]).deltas[0]
    return delta


AdjointSides = Callable[
    [dl.Delta, LinearProgram, Mapping[int, np.ndarray], np.ndarray], tuple[float, float]
]


def adjoint_sides(
    delta: dl.Delta, program: LinearProgram, v: Mapping[int, np.ndarray], u: np.ndarray
) -> tuple[float, float]:
    """``(⟨J v, u⟩, ⟨v, Jᵀ u⟩)``: ``J`` is ``delta`` run forwards, ``Jᵀ`` is ``program``."""
    left = float(np.sum(np.asarray(forward(ALG, delta, dict(v))) * u))
    transposed = run_linear(program, ALG, u)
    right = float(sum(np.sum(v[k] * transposed.get(k, 0.0)) for k in v))
    return left, right


def check_adjoint_sides(sides: AdjointSides) -> Feedback:
    """Check ``sides(delta, program, v, u)`` against :func:`adjoint_sides` on the Deltas
    of ``softmax`` and ``logsumexp`` with their transposes (the sides agree), and on
    ``softmax``'s Delta with the transpose of ``2 * softmax`` (they must not)."""
    require_callable(sides, "sides", "check_adjoint_sides")
    title = "the two sides of the adjoint identity"
    rng = np.random.default_rng(3)
    x = rng.normal(size=5)
    soft = _delta_of(_softmax, x)
    cases = (
        ("softmax", soft, transpose_delta(to_let_form(soft))),
        ("logsumexp", (lse := _delta_of(_logsumexp, x)), transpose_delta(to_let_form(lse))),
        ("softmax's Delta with the transpose of 2 * softmax", soft,
         transpose_delta(to_let_form(_delta_of(_twice_softmax, x)))),
    )
    for name, delta, program in cases:
        v = {0: rng.normal(size=x.shape)}
        u = rng.normal(size=delta.shape)
        want = adjoint_sides(delta, program, v, u)
        try:
            left, right = sides(delta, program, v, u)
        except Exception as err:
            return not_yet(title, f"input: {name}", f"it raised {describe_error(err)}")
        if not (all_close(left, want[0]) and all_close(right, want[1])):
            return not_yet(
                title,
                f"input: {name}, a random tangent v and cotangent u",
                f"expected: ({format_number(want[0])}, {format_number(want[1])})",
                f"obtained: ({format_number(left)}, {format_number(right)})",
                "Hint: the left side runs the Delta forwards on v (forward(ALG, delta, v)) "
                "and pairs the result with u; the right side runs the linear program on u "
                "(run_linear) and pairs each input's cotangent with its tangent. ⟨a, b⟩ is "
                "the sum of the elementwise product.",
            )
    return passed(title, "right on 3 pairs: the sides agree for softmax and logsumexp, "
                  "and differ when the program is not the Delta's transpose")


# --------------------------------------------------------------------------------------
# Exercise 5: where the scatter of Fig. 18's gradient went
# --------------------------------------------------------------------------------------

SCATTER_FATES = {
    "scatter": "it stays a scatter",
    "gather": "it became a gather",
    "contract": "it became a contraction",
    "gone": "it was simplified away: no array operation is left in its place",
}
"""The choices for :func:`check_scatter_fate`."""


def _scatter_fate() -> str:
    x = np.arange(1.0, 5.0)
    gradient = str(pipeline(fig18, x).gradient)
    if "scatter" in gradient:
        return "scatter"
    vectorised = str(pipeline(fig18, x).vectorised)
    if gradient.count("gather") > vectorised.count("gather"):
        return "gather"
    return "contract" if "contract" in gradient else "gone"


def check_scatter_fate(answer: object) -> Feedback:
    """Check which of :data:`SCATTER_FATES` happened to the ``Scatter`` of the linear
    program of ``flip_mul`` in the gradient program ``p.gradient`` of Fig. 18."""
    title = "where the Scatter of the linear program went"
    expected = _scatter_fate()
    choices = ", ".join(repr(k) for k in SCATTER_FATES)
    if answer == expected:
        return passed(title, SCATTER_FATES[expected] + ": for a permutation, scattering by it "
                      "and gathering by its inverse compute the same array")
    if answer not in SCATTER_FATES:
        return not_yet(title, f"obtained: {answer!r}", f"expected: one of {choices}",
                       "Hint: print(da.pipeline(fig18, x).gradient) and look for the index "
                       "map 3 - j.")
    return not_yet(
        title,
        f"obtained: {answer!r} ({SCATTER_FATES[str(answer)]})",
        "expected: what p.gradient shows where the linear program has `Scatter [4] c4 f1`",
        "Hint: print(da.pipeline(fig18, x).gradient) and find the term with the index map "
        "3 - j: which operation carries it?",
    )

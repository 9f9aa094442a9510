"""Assignment 7: the reverse pass over array Deltas (paper Fig. 17, §6).

The student writes ``reverse_pass(delta, c)``: the gradient of every input (by its
``Input`` index) given the cotangent ``c`` of the Delta's output.  First on Deltas
without ``Share`` (``evalD`` as a walk), then on DAGs: cotangents are accumulated per
Share id and each Share is evaluated once, from the largest id down.  The checker
compares with :func:`dualarr.ad.reverse.reverse` on the Deltas of programs and random
Delta DAGs, and at the edges (dimensions of size 1; indices out of range, negative or
repeated, which the total semantics of §5.2 defines), and measures that the work grows
linearly on sharing chains.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ...ad import delta as dl
from ...ad.reverse import reverse, transpose_step
from ...interp.algebra import IndexFn
from ...interp.evaluate import NumpyAlgebra
from ...lang.errors import UnsupportedError, format_shape
from ...lang.terms import assert_never
from .feedback import (
    F64,
    Feedback,
    describe_error,
    format_array,
    format_number,
    format_position,
    mismatched_positions,
    not_implemented,
    not_yet,
    passed,
    require_callable,
)
from .let_conversion import (
    delta_cases,
    doubling_chain,
    fibonacci_chain,
    growth_in_words,
    random_delta,
    run_metered,
    show_delta,
)

ReversePass = Callable[[dl.Delta, np.ndarray], Any]


def operand_cotangent(d: dl.UnaryDelta, c: np.ndarray) -> np.ndarray:
    """The cotangent of ``d``'s operand ``d.delta`` given the cotangent ``c`` of ``d``:
    the transposition rule of the one linear operation ``d`` applies (Fig. 17; the
    rules of assignment 6), on NumPy arrays."""
    with np.errstate(all="ignore"):
        return np.asarray(transpose_step(NumpyAlgebra(), d, np.asarray(c)))


def library_gradient(d: dl.Delta, c: np.ndarray) -> dict[int, np.ndarray]:
    """dualarr's reverse pass (:func:`dualarr.ad.reverse.reverse`) on NumPy arrays."""
    with np.errstate(all="ignore"):
        grads = reverse(NumpyAlgebra(), d, np.asarray(c))
    return {k: np.asarray(v, dtype=np.float64) for k, v in grads.items()}


def without_shares(d: dl.Delta) -> dl.Delta:
    """The same linear map with every ``Share`` removed (a tree when walked)."""
    new: dict[int, dl.Delta] = {}
    for node in dl.delta_postorder([d]):
        kids = [new[id(k)] for k in dl.delta_children(node)]
        shared = isinstance(node, dl.Share)
        new[id(node)] = kids[0] if shared else dl.with_delta_children(node, kids)
    return new[id(d)]


# --------------------------------------------------------------------------------------
# Test cases
# --------------------------------------------------------------------------------------

_TREE_HINT = {
    "input": "Hint: at an Input the cotangent is the gradient of that input (Fig. 17's "
    "`grad`), kept by its index.",
    "twice": "Hint: Input 0 is reached twice here: its gradient must collect both "
    "contributions, not keep the last one.",
    "add": "Hint: Add u1 u2 is a sum: the output's cotangent flows into both operands.",
    "zero": "Hint: Zero is the zero map: nothing flows through it (and nothing needs to be "
    "computed for it).",
    "scale": "Hint: at a node with one operand (Scale, Gather, SumOuter, …) the operand's "
    "cotangent is operand_cotangent(d, c): continue into d.delta with it.",
    "fromlist": "Hint: FromList [u0, …, un] stacks its operands: operand q is row q of the "
    "output, so it receives row q of the cotangent.",
    "rows of one": "Hint: FromList [u0, …, un] stacks its operands: operand q receives row q "
    "of the cotangent, an array of exactly operand q's shape, its dimensions of size 1 "
    "included.",
    "range": "Hint: the language is total (§5.2): a gather or an index reads zeros outside "
    "its array, a scatter drops the writes outside its output, and one element may be read "
    "or written more than once. operand_cotangent(d, c) is the transposition rule of each "
    "one-operand node at these edges too: continue into d.delta with it.",
}

_IN_PLACE_HINT = (
    "Hint: `+=` on a NumPy array adds into the very array object you stored, and the "
    "cotangents of a reverse pass are shared: Add passes one c to both of its operands, "
    "FromList passes views c[q] of it, and operand_cotangent may return a read-only view. "
    "Adding into one of them in place changes (or cannot change) the others: leave every "
    "cotangent you received as it is, and make each sum a new array."
)


def _edge_cases() -> list[tuple[str, dl.Delta, str]]:
    """Share-free Deltas at the edges (#36): rows with a dimension of size 1, and the
    index constructs at the edges of the total semantics (§5.2): indices out of range,
    negative, repeated."""
    x = dl.Input(0, (3,), F64)
    row0, row1 = dl.Input(0, (1, 3), F64), dl.Input(1, (1, 3), F64)
    w = np.array([[2.0, -1.0, 0.5]])

    def at(*targets: int) -> IndexFn[Any]:
        return IndexFn((np.array(targets, dtype=np.int64),))

    return [
        ("FromList [Input 0, Scale [[2,-1,0.5]] (Input 1)], Input 0, Input 1 : [1,3]",
         dl.FromList((row0, dl.Scale(w, row1))), "rows of one"),
        ("Gather [4] (Input 0) (λi. [[0,0,5,-1][i]]): a repeated, a too large and a "
         "negative index", dl.Gather((4,), x, at(0, 0, 5, -1), (4,)), "range"),
        ("Scatter [3] (Input 0) (λi. [[2,-1,2][i]]): a negative and a repeated target",
         dl.Scatter((3,), x, at(2, -1, 2), 1), "range"),
        ("Add (Index (Input 1) [2]) (Index (Input 1) [-1]), Input 1 : [2,3]: indices out of "
         "range", dl.Add(dl.Index(dl.Input(1, (2, 3), F64), (np.array(2),)),
                         dl.Index(dl.Input(1, (2, 3), F64), (np.array(-1),))), "range"),
    ]


def _tree_cases() -> list[tuple[str, dl.Delta, str]]:
    """Share-free Deltas, smallest first, each with the hint for the node it tests."""
    x = dl.Input(0, (3,), F64)
    w = np.array([2.0, -1.0, 0.5])
    hand: list[tuple[str, dl.Delta, str]] = [
        ("Input 0", x, "input"),
        ("Scale [2,-1,0.5] (Input 0)", dl.Scale(w, x), "scale"),
        ("Add (Input 0) (Input 1)", dl.Add(x, dl.Input(1, (3,), F64)), "add"),
        ("Add (Input 0) (Scale [2,-1,0.5] (Input 0))", dl.Add(x, dl.Scale(w, x)), "twice"),
        ("Add Zero[3] (Input 0)", dl.Add(dl.Zero((3,), F64), x), "zero"),
        ("FromList [Input 0, Scale [2,-1,0.5] (Input 1)]",
         dl.FromList((x, dl.Scale(w, dl.Input(1, (3,), F64)))), "fromlist"),
        ("SumOuter (Replicate 2 (Input 0))", dl.SumOuter(dl.Replicate(2, x)), "scale"),
        *_edge_cases(),
    ]
    randoms = [(f"random Delta #{s} without Share", without_shares(random_delta(s, 8)), "")
               for s in range(10)]
    return hand + randoms


_SIZE_ONE_ROWS = "one Share of shape [1,3] used as both rows of a FromList"
_DAG_HINTS = {_SIZE_ONE_ROWS: "rows of one"}


def _dag_cases() -> list[tuple[str, dl.Delta]]:
    row = dl.Share(1, dl.Input(0, (1, 3), F64))
    rows = dl.Share(2, dl.FromList((row, row)))
    weights = np.array([[[2.0, -1.0, 0.5]], [[1.0, 3.0, -2.0]]])
    edges = [
        (_SIZE_ONE_ROWS, dl.Share(3, dl.Add(rows, dl.Scale(weights, rows)))),
    ]
    randoms = [(f"random Delta DAG #{s}", random_delta(s, 24)) for s in range(20, 32)]
    return delta_cases() + edges + randoms


# --------------------------------------------------------------------------------------
# Typical wrong reverse passes, to recognise them by their results
# --------------------------------------------------------------------------------------


def _walk(
    d: dl.Delta,
    c: np.ndarray,
    grad: dict[int, np.ndarray],
    at_share: Callable[[dl.Share, np.ndarray], None],
    overwrite_inputs: bool = False,
    right_first: bool = False,
) -> None:
    """Task 1's walk, with ``at_share`` deciding what happens at a Share; operands are
    visited left to right (or right to left)."""
    stack: list[tuple[np.ndarray, dl.Delta]] = [(c, d)]
    while stack:
        c, d = stack.pop()
        match d:
            case dl.Zero():
                pass
            case dl.Input(index=n):
                grad[n] = c if overwrite_inputs or n not in grad else grad[n] + c
            case dl.Share():
                at_share(d, c)
            case dl.Add() | dl.FromList():
                kids = [(c, d.left), (c, d.right)] if isinstance(d, dl.Add) else [
                    (c[q], x) for q, x in enumerate(d.deltas)
                ]
                stack += kids if right_first else kids[::-1]
            case (
                dl.Scale() | dl.Index() | dl.Gather() | dl.Scatter() | dl.SumOuter()
                | dl.Replicate() | dl.Transpose() | dl.Reshape() | dl.Convert() | dl.Contract()
                | dl.Structural()
            ):
                stack.append((operand_cotangent(d, c), d.delta))
            case dl.MapAccum() | dl.LoopOutput():
                raise UnsupportedError(
                    "the reverse-pass exercise's Deltas have no loops (a loop's Delta is "
                    "transposed by dualarr.ad.loops)",
                    op="array reverse pass",
                )
            case _:
                assert_never(d)


def _pending_pass(
    d: dl.Delta,
    c: np.ndarray,
    pick: Callable[[dict[int, Any]], int],
    overwrite: bool,
    right_first: bool = False,
    in_place: bool = False,
) -> dict[int, np.ndarray]:
    grad: dict[int, np.ndarray] = {}
    accum: dict[int, np.ndarray] = {}
    fragment: dict[int, dl.Delta] = {}
    done: set[int] = set()

    def at_share(s: dl.Share, c: np.ndarray) -> None:
        if s.id in done:
            return
        if in_place and s.id in accum:
            accum[s.id] += c  # into the array stored: a cotangent other nodes share
        else:
            accum[s.id] = c if overwrite or s.id not in accum else accum[s.id] + c
        fragment[s.id] = s.delta

    _walk(d, c, grad, at_share, right_first=right_first)
    while accum:
        i = pick(accum)
        done.add(i)
        _walk(fragment.pop(i), accum.pop(i), grad, at_share, right_first=right_first)
    return grad


def _eager_pass(d: dl.Delta, c: np.ndarray, right_first: bool) -> dict[int, np.ndarray]:
    """Evaluates a Share at its first use, with the cotangent of that use only."""
    grad: dict[int, np.ndarray] = {}
    done: set[int] = set()

    def at_share(s: dl.Share, c: np.ndarray) -> None:
        if s.id not in done:
            done.add(s.id)
            _walk(s.delta, c, grad, at_share, right_first=right_first)

    _walk(d, c, grad, at_share, right_first=right_first)
    return grad


def _overwriting_inputs(d: dl.Delta, c: np.ndarray) -> dict[int, np.ndarray]:
    grad: dict[int, np.ndarray] = {}
    accum: dict[int, np.ndarray] = {}
    fragment: dict[int, dl.Delta] = {}

    def at_share(s: dl.Share, c: np.ndarray) -> None:
        accum[s.id] = c if s.id not in accum else accum[s.id] + c
        fragment[s.id] = s.delta

    _walk(d, c, grad, at_share, overwrite_inputs=True)
    while accum:
        i = max(accum)
        _walk(fragment.pop(i), accum.pop(i), grad, at_share, overwrite_inputs=True)
    return grad


_ORDER_HINT = (
    "Hint: a Share was evaluated before all of its cotangent had arrived. When can no "
    "other node add to accum[id] any more? Every node that uses Share id is above it, and "
    "Invariant 1 (§2.5) says how their ids compare: choose the next Share accordingly."
)

_MISTAKES: tuple[tuple[Callable[[dl.Delta, np.ndarray], dict[int, np.ndarray]], str], ...] = (
    (
        partial(_pending_pass, pick=min, overwrite=False),
        _ORDER_HINT,
    ),
    (
        partial(_pending_pass, pick=lambda accum: next(iter(accum)), overwrite=False),
        _ORDER_HINT,
    ),
    (partial(_eager_pass, right_first=False), _ORDER_HINT),
    (partial(_eager_pass, right_first=True), _ORDER_HINT),
    *(
        (
            partial(_pending_pass, pick=max, overwrite=True, right_first=right_first),
            "Hint: a Share used in several places receives a cotangent from each use; they "
            "must add up in accum[id] (sharing in the primal is addition in the dual, §2.5), "
            "not replace each other.",
        )
        for right_first in (False, True)
    ),
    (_overwriting_inputs, _TREE_HINT["twice"].replace("here", "in this Delta")),
    *(
        (partial(_pending_pass, pick=max, overwrite=False, right_first=right_first,
                 in_place=True), _IN_PLACE_HINT)
        for right_first in (False, True)
    ),
)


# --------------------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------------------


def _as_gradient(result: object) -> dict[int, np.ndarray] | str:
    if not isinstance(result, dict):
        return f"your reverse pass returned a {type(result).__name__}, not a dict"
    out: dict[int, np.ndarray] = {}
    for key, value in result.items():
        if not isinstance(key, int | np.integer):
            return f"your gradient dict has the key {key!r}: use the Input's index (an int)"
        try:
            out[int(key)] = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return f"the gradient of input {key} is a {type(value).__name__}, not an array"
    return out


def _inputs(d: dl.Delta) -> dict[int, tuple[int, ...]]:
    return {n.index: tuple(n.shape) for n in dl.delta_postorder([d]) if isinstance(n, dl.Input)}


def _compare(
    d: dl.Delta, expected: dict[int, np.ndarray], got: dict[int, np.ndarray]
) -> str | None:
    """The first difference between two gradients (by input), or None."""
    shapes = _inputs(d)
    for n in sorted(set(expected) | set(got)):
        if n not in shapes:
            return f"there is no Input {n} in this Delta, but your result has a gradient for it"
        want = np.broadcast_to(expected.get(n, np.zeros(shapes[n])), shapes[n])
        if n not in got:
            if not np.any(want):
                continue
            return f"no gradient for Input {n}; expected {format_array(want)}"
        mine = got[n]
        if mine.shape != shapes[n]:
            return (
                f"the gradient of Input {n} has shape {format_shape(mine.shape)}, but Input "
                f"{n} has shape {format_shape(shapes[n])}"
            )
        bad = mismatched_positions(want, mine)
        if bad:
            at = bad[0]
            more = f" ({len(bad)} of {mine.size} elements wrong)" if len(bad) > 1 else ""
            return (
                f"Input {n}, element {format_position(at)}: "
                f"expected {format_number(want[at])}, got {format_number(mine[at])}{more}\n"
                f"expected {format_array(want)}\nyours    {format_array(mine)}"
            )
    return None


def _explains(
    mistake: Callable[[dl.Delta, np.ndarray], dict[int, np.ndarray]],
    d: dl.Delta,
    c: np.ndarray,
    got: dict[int, np.ndarray],
) -> bool:
    """Whether the typical mistake gives the student's gradient (a mistake that adds in
    place works on a copy of ``c``, and may fail itself: then it explains nothing)."""
    try:
        with np.errstate(all="ignore"):
            return _compare(d, mistake(d, c.copy()), got) is None
    except (ValueError, IndexError):
        return False


def _recognise(reverse_pass: ReversePass, cases: list[tuple[str, dl.Delta, str]]) -> list[str]:
    """The hint of the typical mistake that explains the answer on ``cases[0]`` (where it
    is wrong); when several do, the later cases decide between them."""
    candidates = list(_MISTAKES)
    for k, (_, d, _) in enumerate(cases[:12]):
        c = _seed_cotangent(d, k)
        run = run_metered(partial(reverse_pass, d, c.copy()), 200_000)
        got = _as_gradient(run.result) if run.error is None and not run.exceeded else ""
        if isinstance(got, str):
            break
        kept = [(m, h) for m, h in candidates if _explains(m, d, c, got)]
        if k == 0 or kept:
            candidates = kept
        if len({h for _, h in candidates}) <= 1:
            break
    return [candidates[0][1]] if candidates else []


def _error_hints(error: BaseException, hint_key: str) -> list[str]:
    """The hint for an exception raised by the student's pass: writing into a read-only
    cotangent, reading or writing out of range (§5.2), or the hint of the case."""
    if isinstance(error, ValueError) and "read-only" in str(error):
        return [_IN_PLACE_HINT]
    if isinstance(error, IndexError):
        return [_TREE_HINT["range"]]
    return [_TREE_HINT[hint_key]] if hint_key else []


def _seed_cotangent(d: dl.Delta, k: int) -> np.ndarray:
    return np.round(np.random.default_rng(1000 + k).normal(size=d.shape), 2)


def check_reverse_pass(reverse_pass: ReversePass, shared: bool = True) -> Feedback:
    """Check a reverse pass ``reverse_pass(delta, c)`` → ``{input index: gradient}``
    (Fig. 17) against :func:`dualarr.ad.reverse.reverse`.

    ``shared=False`` (task 1): Deltas without Share, smallest first, each testing one
    constructor, then the edges: rows with a dimension of size 1, and gathers, scatters
    and indices out of range, negative or repeated (§5.2).  ``shared=True`` (task 2):
    hand-made sharing patterns, program Deltas, a Share of rows of size 1 and random Delta
    DAGs; then the work on two sharing chains of 8 and 16 steps must grow linearly.  A
    pass that adds into a cotangent in place (shared by several nodes) is recognised.
    """
    require_callable(reverse_pass, "reverse_pass", "check_reverse_pass")
    title = "the reverse pass (Fig. 17) " + ("on Delta DAGs" if shared else "without Share")
    cases: list[tuple[str, dl.Delta, str]] = (
        [(name, d, _DAG_HINTS.get(name, "")) for name, d in _dag_cases()]
        if shared
        else _tree_cases()
    )
    for k, (name, d, hint_key) in enumerate(cases):
        c = _seed_cotangent(d, k)
        expected = library_gradient(d, c)
        run = run_metered(partial(reverse_pass, d, c.copy()), 1_000_000)
        if isinstance(run.error, NotImplementedError):
            return not_implemented("the reverse pass", "your reverse pass")
        where = f"on {name}:\n{show_delta(d)}\nwith the cotangent c = {format_array(c)}"
        if run.exceeded:
            return not_yet(
                title,
                f"{where}\nyour reverse pass ran for more than 1000000 Python lines on a "
                f"Delta of {dl.size([d]).nodes} nodes",
                "Hint: a Delta DAG walked as a tree visits a shared node once per path to "
                "it: at a Share, collect the cotangent instead of walking below it.",
            )
        if run.error is not None:
            return not_yet(
                title,
                f"{where}\nyour reverse pass raised {describe_error(run.error)}",
                *_error_hints(run.error, hint_key),
            )
        got = _as_gradient(run.result)
        if isinstance(got, str):
            return not_yet(
                title,
                f"{where}\n{got}",
                "Hint: return a dict from each Input's index to its gradient, an array of "
                "that Input's shape.",
            )
        problem = _compare(d, expected, got)
        if problem is None:
            continue
        hints = [_TREE_HINT[hint_key]] if hint_key else []
        if shared:
            hints += _recognise(reverse_pass, cases[k:])
        return not_yet(title, where, problem, *hints)
    if not shared:
        return passed(
            f"{title}: agrees with dualarr on all {len(cases)} Deltas",
            "Zero, Input, Add, FromList and the one-operand nodes are right",
        )
    for name, chain in (
        ("the doubling chain y = y + y", doubling_chain),
        ("the chain y(k+1) = y(k) + 0.5 y(k-1)", fibonacci_chain),
    ):
        work = {}
        for n in (8, 16):
            d = chain(n)
            work[n] = run_metered(partial(reverse_pass, d, np.ones(d.shape)), 400_000)
        if work[16].exceeded or work[16].lines > 3 * work[8].lines + 500:
            grew = growth_in_words(work[8].lines, work[16].lines, work[16].exceeded)
            return not_yet(
                f"{title}: right gradients, but the work is not linear",
                f"on {name}: doubling its length from 8 to 16 steps multiplied the work of "
                f"your reverse pass by {grew}",
                "Hint: in a chain, each Share is reached along exponentially many paths. "
                "Fig. 17 evaluates the Delta below a Share once, with all of its cotangent "
                "added up first.",
            )
    return passed(
        f"{title}: agrees with dualarr on all {len(cases)} Deltas",
        "cotangents collected per Share id, each Share evaluated once: the work grows "
        "linearly on two sharing chains",
    )

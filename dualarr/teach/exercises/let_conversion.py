"""Assignment 5: share → let (paper Fig. 20, §7.4), on Delta terms.

The student writes the conversion of a Delta DAG into its let form: every ``Share id d``
becomes one binding ``let s<id> = d in …`` (inside the bindings each ``Share`` stands for
its variable ``s<id>``), the bindings stacked so that each is bound before it is used.
The checker compares the answer with :func:`dualarr.ad.transposition.to_let_form` on the
Deltas of programs and random Delta DAGs, and measures that the work grows linearly on a
sharing chain.

The work meter and the random Delta DAGs here serve assignments 6 and 7 too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from types import FrameType
from typing import Any, Generic, TypeVar

import numpy as np

from ...ad import delta as dl
from ...ad.transposition import to_let_form
from ...api import dual_run
from ...interp.algebra import IndexFn
from ...lang import functions as lang
from ...lang.program import trace
from ...lang.terms import IdSupply, Shape
from .feedback import (
    F64,
    Feedback,
    describe_error,
    is_delta,
    not_implemented,
    not_yet,
    passed,
    require_callable,
)

T = TypeVar("T")

# --------------------------------------------------------------------------------------
# A work meter: Python lines executed (deterministic, unlike time)
# --------------------------------------------------------------------------------------


class _WorkLimit(BaseException):
    """Raised inside the measured code when it runs past its budget (a BaseException,
    so that an ``except Exception`` in the student's code does not swallow it)."""


@dataclass(frozen=True)
class Metered(Generic[T]):
    """The outcome of a measured call: its result or the exception it raised, and the
    number of Python lines it executed (``exceeded``: stopped at the budget)."""

    result: T | None
    error: BaseException | None
    lines: int
    exceeded: bool


def run_metered(call: Callable[[], T], budget: int) -> Metered[T]:
    """Run ``call()`` counting the Python lines it executes, stopping it after
    ``budget`` lines: a measure of work that does not depend on the machine's speed."""
    count = 0

    def local(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
            if count > budget:
                raise _WorkLimit
        return local

    def start(frame: FrameType, event: str, arg: object) -> Any:
        return local

    previous = sys.gettrace()
    sys.settrace(start)
    try:
        result = call()
    except _WorkLimit:
        return Metered(None, None, count, True)
    except Exception as err:
        return Metered(None, err, count, False)
    finally:
        sys.settrace(previous)
    return Metered(result, None, count, False)


def growth_in_words(short: int, long: int, exceeded: bool) -> str:
    """How much the work grew, in words that do not depend on small differences of the
    line counts (a stored notebook output shows it)."""
    if exceeded or long > 30 * short:
        return "more than 30"
    if long > 10 * short:
        return "more than 10"
    return f"about {long / max(short, 1):.0f}"


# --------------------------------------------------------------------------------------
# Test Deltas: sharing chains, program Deltas, random DAGs
# --------------------------------------------------------------------------------------


def doubling_chain(n: int, shape: Shape = (3,)) -> dl.Delta:
    """``y = y + y`` ``n`` times on dual arrays: ``s<k+1> = Add s<k> s<k>`` (§2.5)."""
    supply = IdSupply()
    y: dl.Delta = dl.Share(supply.fresh(), dl.Input(0, shape, F64))
    for _ in range(n):
        y = dl.Share(supply.fresh(), dl.Add(y, y))
    return y


def fibonacci_chain(n: int, shape: Shape = (3,)) -> dl.Delta:
    """``y<k+1> = y<k> + 0.5 y<k-1>``: every node is used by the next two, so an order
    that evaluates a Share before all its uses are done has to come back to it."""
    supply = IdSupply()
    older: dl.Delta = dl.Share(supply.fresh(), dl.Input(0, shape, F64))
    newer: dl.Delta = dl.Share(supply.fresh(), dl.Scale(np.full(shape, 2.0), older))
    for _ in range(n):
        step = dl.Add(newer, dl.Scale(np.full(shape, 0.5), older))
        older, newer = newer, dl.Share(supply.fresh(), step)
    return newer


_SHAPES: tuple[Shape, ...] = ((3,), (2, 3), (3, 2))


def _pick(rng: np.random.Generator, nodes: list[dl.Delta]) -> dl.Delta:
    """A recent node, so that the DAG gets deep and its nodes are used more than once."""
    return nodes[-1 - int(rng.integers(0, min(3, len(nodes))))]


def _random_node(rng: np.random.Generator, pool: dict[Shape, list[dl.Delta]]) -> dl.Delta:
    vec, mat, tall = (pool[s] for s in _SHAPES)
    kinds = ["add", "scale", "replicate", "gather", "scatter", "fromlist", "sum", "transpose"]
    kinds += ["reshape", "index", "contract"]
    kind = kinds[int(rng.integers(0, len(kinds)))]
    if kind in ("add", "scale"):
        shape = _SHAPES[int(rng.integers(0, 3))]
        nodes = pool[shape] or vec
        a = _pick(rng, nodes)
        if kind == "scale":
            return dl.Scale(np.round(rng.normal(size=a.shape), 2), a)
        b = dl.Zero(a.shape, F64) if rng.random() < 0.1 else _pick(rng, pool[a.shape])
        return dl.Add(a, b)
    if kind == "replicate":
        return dl.Replicate(2, _pick(rng, vec))
    if kind in ("gather", "scatter"):
        targets = rng.integers(-1, 4, size=3) if rng.random() < 0.3 else rng.integers(0, 3, 3)
        fn: IndexFn[Any] = IndexFn((np.asarray(targets, dtype=np.int64),))
        v = _pick(rng, vec)
        if kind == "gather":
            return dl.Gather((3,), v, fn, (3,))
        return dl.Scatter((3,), v, fn, 1)
    if kind == "fromlist":
        return dl.FromList((_pick(rng, vec), _pick(rng, vec)))
    if kind == "sum":
        return dl.SumOuter(_pick(rng, mat))
    if kind == "index":
        return dl.Index(_pick(rng, mat), (np.asarray(int(rng.integers(0, 2)), dtype=np.int64),))
    if kind == "contract":
        return dl.Contract("ij,jk->ik", _pick(rng, mat), np.round(rng.normal(size=(3, 3)), 2))
    a = _pick(rng, tall if tall and rng.random() < 0.5 else mat)  # mat holds Input 1
    if kind == "transpose":
        return dl.Transpose((1, 0), a)
    return dl.Reshape((a.shape[1], a.shape[0]), a)


def random_delta(seed: int, steps: int = 14) -> dl.Delta:
    """A random Delta DAG over ``Input 0 : [3]`` and ``Input 1 : [2,3]``, built as the
    forward pass builds one: most nodes are wrapped in a ``Share`` with a fresh,
    increasing id (Invariants 1 and 2), and recent nodes are used more than once."""
    rng = np.random.default_rng(seed)
    supply = IdSupply()
    pool: dict[Shape, list[dl.Delta]] = {
        (3,): [dl.Input(0, (3,), F64)],
        (2, 3): [dl.Input(1, (2, 3), F64)],
        (3, 2): [],
    }
    for _ in range(steps):
        node = _random_node(rng, pool)
        if rng.random() < 0.75:
            node = dl.Share(supply.fresh(), node)
        pool.setdefault(node.shape, []).append(node)
    ends = [pool[(3,)][-1]]  # the root uses the last node of every shape
    if pool[(2, 3)]:
        ends.append(dl.SumOuter(pool[(2, 3)][-1]))
    if pool[(3, 2)]:
        ends.append(dl.SumOuter(dl.Transpose((1, 0), pool[(3, 2)][-1])))
    root = ends[0]
    for end in ends[1:]:
        root = dl.Add(root, end)
    return dl.Share(supply.fresh(), root)


def _program_deltas() -> list[tuple[str, dl.Delta]]:
    """The Deltas of two small programs, as the forward pass of §6 builds them."""

    def mlp(x: Any, w: Any) -> Any:
        h = lang.exp(x @ w)
        return lang.sum(h * h)

    def smooth(x: Any) -> Any:
        pairs = lang.gather(5, x, lambda i: (i + 1,)) - lang.gather(5, x, lambda i: (i,))
        return lang.sum(pairs * pairs) + lang.sum(x * x)

    rng = np.random.default_rng(3)
    x, w, s = rng.normal(size=(2, 3)), rng.normal(size=(3, 3)), rng.normal(size=6)
    out = []
    for name, fn, args in (
        ("the program sum(exp(x @ w) ** 2)", mlp, [x, w]),
        ("the program sum(diffs(x) ** 2) + sum(x * x)", smooth, [s]),
    ):
        run = dual_run(trace(fn, *args), args, list(range(len(args))))
        out.append((name, run.deltas[0]))
    return out


def delta_cases() -> list[tuple[str, dl.Delta]]:
    """Named test Deltas: hand-made sharing patterns, program Deltas, random DAGs."""
    x = dl.Input(0, (3,), F64)
    s1 = dl.Share(1, x)
    twice = dl.Add(dl.Scale(np.array([1.0, 2.0, 3.0]), s1), s1)
    supply = IdSupply()
    a: dl.Delta = dl.Share(supply.fresh(), x)
    b: dl.Delta = dl.Share(supply.fresh(), dl.Scale(np.full(3, -1.0), x))
    for _ in range(3):  # two chains whose ids interleave
        a = dl.Share(supply.fresh(), dl.Add(a, b))
        b = dl.Share(supply.fresh(), dl.Add(b, b))
    cases: list[tuple[str, dl.Delta]] = [
        ("no Share at all: Scale [1,2,3] (Input 0)", dl.Scale(np.array([1.0, 2.0, 3.0]), x)),
        ("one Share used twice, the root not shared", twice),
        ("the doubling chain y = y + y, 4 steps", doubling_chain(4)),
        ("two chains whose ids interleave", dl.Add(a, b)),
        ("the chain y(k+1) = y(k) + 0.5 y(k-1), 4 steps", fibonacci_chain(4)),
        *_program_deltas(),
    ]
    cases += [(f"random Delta DAG #{seed}", random_delta(seed)) for seed in range(12)]
    return cases


def show_delta(d: dl.Delta, limit: int = 14) -> str:
    """The Delta, one line per Share (at most ``limit`` lines)."""
    lines = str(d).split("\n")
    if len(lines) > limit:
        lines = [*lines[: limit - 2], f"… ({len(lines) - limit + 1} more lines)", lines[-1]]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Assignment 5: share → let (Fig. 20)
# --------------------------------------------------------------------------------------


def format_fragment(d: dl.Delta) -> str:
    """One fragment of a let form on one line: the Shares in it are its variables
    ``s<id>`` (a fragment that is a Share is that variable)."""
    return dl.format_delta(d, binding=lambda i, rhs: "").split("\n")[-1]


def format_let_form(bindings: Sequence[tuple[int, dl.Delta]], body: dl.Delta) -> str:
    """A let form in the paper's notation: ``let s<id> = fragment in`` per binding, in
    the order given, then the body."""
    lines = [f"let s{k} = {format_fragment(fragment)} in" for k, fragment in bindings]
    return "\n".join([*lines, format_fragment(body)])


_TITLE = "share → let (Fig. 20) on Delta terms"

_DEEP = 3000
"""The length of the chain on which a conversion must not run out of stack: deeper than
Python's default recursion limit (1000 nested calls)."""


def let_edge_cases() -> list[tuple[str, dl.Delta]]:
    """The edges of Fig. 20 that the program Deltas and random DAGs do not reach: a Delta
    with nothing to bind, and a Share whose operand is itself a Share (its binding is a
    variable, ``let s2 = s1``)."""
    x = dl.Input(0, (3,), F64)
    s1 = dl.Share(1, x)
    s2 = dl.Share(2, s1)
    nested = dl.Add(dl.Scale(np.array([1.0, 2.0, 3.0]), s2), s1)
    return [
        ("a bare Input 0: nothing to bind", x),
        ("a Share whose operand is a Share: s2 = Share 2 s1", nested),
        ("the same, its root the outer Share", dl.Share(3, dl.Add(s2, s2))),
    ]


def _shares_below(d: dl.Delta) -> list[dl.Share]:
    """The Shares a fragment mentions directly (not looking inside them): its free
    variables in the let form."""
    found: dict[int, dl.Share] = {}
    stack: list[dl.Delta] = list(dl.delta_children(d)) if isinstance(d, dl.Share) else [d]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dl.Share):
            found.setdefault(node.id, node)
        else:
            stack.extend(dl.delta_children(node))
    return sorted(found.values(), key=lambda s: s.id)


def _unpack(answer: object) -> tuple[list[tuple[int, dl.Delta]], dl.Delta] | str:
    """The answer's bindings and body, or what is wrong with its form."""
    if hasattr(answer, "bindings") and hasattr(answer, "root"):
        answer = (answer.bindings, answer.root)
    if not isinstance(answer, tuple | list) or len(answer) != 2:
        return (
            f"your function returned a {type(answer).__name__}, not a pair "
            "(bindings, body)"
        )
    bindings, body = answer
    if not isinstance(bindings, Sequence) or isinstance(bindings, str):
        return f"the bindings are a {type(bindings).__name__}, not a list of (id, Delta) pairs"
    out: list[tuple[int, dl.Delta]] = []
    for k, item in enumerate(bindings):
        if not isinstance(item, tuple | list) or len(item) != 2:
            return f"binding {k} is a {type(item).__name__}, not an (id, Delta) pair"
        key, fragment = item
        if isinstance(key, dl.Share):
            return (
                f"binding {k} names its variable by a Share node, not by the Share's id "
                f"(an int): write ({key.id}, …)"
            )
        if not isinstance(key, int | np.integer):
            return f"binding {k} has the id {key!r}, not an int"
        if not is_delta(fragment):
            return f"binding {k} (s{key}) binds a {type(fragment).__name__}, not a Delta"
        out.append((int(key), fragment))
    if not is_delta(body):
        return f"the body is a {type(body).__name__}, not a Delta"
    return out, body


def _let_form_problems(
    delta: dl.Delta, bindings: list[tuple[int, dl.Delta]], body: dl.Delta
) -> tuple[list[str], list[str]]:
    """What is wrong with a let form of ``delta``: (problems, hints)."""
    shares = {d.id: d for d in dl.delta_postorder([delta]) if isinstance(d, dl.Share)}
    ids = [k for k, _ in bindings]
    problems: list[str] = []
    hints: list[str] = []
    twice = sorted({k for k in ids if ids.count(k) > 1})
    if twice:
        problems.append(
            "bound more than once: "
            + ", ".join(f"s{k} ({ids.count(k)} times)" for k in twice)
        )
        hints.append(
            "Hint: a shared node is reached once for each of its uses, and the let form "
            "binds it once (Invariant 2: one id names one node). Remember which ids you "
            "have bound."
        )
    extra = sorted(set(ids) - set(shares))
    if extra:
        problems.append(
            "bound, but no Share of the Delta has that id: " + ", ".join(f"s{k}" for k in extra)
        )
    missing = sorted(set(shares) - set(ids))
    if missing:
        problems.append(
            f"never bound, though the Delta has {'a Share' if len(missing) == 1 else 'Shares'}"
            " with that id: " + ", ".join(f"s{k}" for k in missing)
        )
        hints.append(
            "Hint: a Share can sit inside another Share's operand, or below a node that "
            "is not a Share: the conversion looks into the whole DAG, also below every "
            "Share it finds."
        )
    if problems:
        problems.append(
            "your bindings: "
            + (", ".join(f"s{k}" for k in ids) or "none")
            + "; the Shares of the Delta: "
            + ", ".join(f"s{k}" for k in sorted(shares))
        )
        return problems, hints
    for k, fragment in bindings:
        share = shares[k]
        if fragment is share.delta:
            continue
        if fragment is share:
            problems.append(
                f"s{k} is bound to the Share node itself: inside a binding a Share is its "
                f"variable, so this reads `let s{k} = s{k}`"
            )
            hints.append(
                "Hint: `Share id d` names the node d; the binding's right-hand side is what "
                "the Share wraps, and the Share itself becomes the variable."
            )
        else:
            problems.append(
                f"s{k} is bound to {' '.join(str(fragment).split())[:80]!r}, not to the "
                "operand of Share " + str(k)
            )
            if isinstance(share.delta, dl.Share):
                problems.append(
                    f"the operand of Share {k} is the Share s{share.delta.id}: the binding "
                    f"reads `let s{k} = s{share.delta.id}`"
                )
                hints.append(
                    "Hint: a binding's right-hand side is exactly the node its Share wraps, "
                    "also when that node is a Share (it is then a variable). Looking through "
                    "it binds the inner fragment twice, and computes it twice: the loss of "
                    "sharing of §2.5."
                )
        break
    if problems:
        return problems, hints
    bound: set[int] = set()
    for k, fragment in bindings:
        early = [s.id for s in _shares_below(fragment) if s.id not in bound]
        if early:
            problems.append(
                f"the binding of s{k} uses "
                + ", ".join(f"s{j}" for j in early)
                + " before "
                + ("it is" if len(early) == 1 else "they are")
                + " bound (bindings: "
                + ", ".join(f"s{j}" for j in ids)
                + ")"
            )
            hints.append(
                "Hint: a binding may only mention variables bound above it. Which ids can "
                "appear inside Share k? (Invariant 1, §2.5.) The paper stacks the bindings "
                "by that property (§7.4)."
            )
            break
        bound.add(k)
    if problems:
        return problems, hints
    if body is not delta:
        if isinstance(delta, dl.Share) and body is delta.delta:
            problems.append(
                f"the body is the operand of the root Share s{delta.id}, not the root: the "
                f"binding of s{delta.id} is then never used"
            )
        else:
            problems.append(
                "the body is not the root Delta the function was given: "
                f"{' '.join(str(body).split())[:80]!r}"
            )
        hints.append(
            "Hint: the body of the let form is the root of the Delta, with the Shares in it "
            "read as variables (a root that is itself a Share is its variable)."
        )
    return problems, hints


def _deep_chain_problem(let_form: Callable[[dl.Delta], Any]) -> list[str] | None:
    """What goes wrong when ``let_form`` converts a chain of ``_DEEP`` steps (deeper than
    Python's recursion limit): the problem and its hints, or None."""
    deep = doubling_chain(_DEEP)
    run = run_metered(partial(let_form, deep), 2_000_000)
    where = f"on the doubling chain y = y + y of {_DEEP} steps ({_DEEP + 1} Share nodes): "
    if run.exceeded:
        return [where + "your conversion ran for more than 2000000 Python lines"]
    if run.error is not None:
        problem = [where + f"your conversion raised {describe_error(run.error)}"]
        if isinstance(run.error, RecursionError):
            problem.append(
                f"Hint: a walk that makes a nested call per node goes {_DEEP} calls deep on "
                "this chain, and Python stops at sys.getrecursionlimit() (1000). A Delta of a "
                "long program is that deep: walk it without a Python call per level."
            )
        return problem
    unpacked = _unpack(run.result)
    if isinstance(unpacked, str):
        return [where + unpacked]
    problems, hints = _let_form_problems(deep, *unpacked)
    if problems:
        return [where + problems[0], *problems[1:], *dict.fromkeys(hints)]
    return None


def check_let_conversion(let_form: Callable[[dl.Delta], Any]) -> Feedback:
    """Check a share → let conversion (Fig. 20) on Delta terms.

    ``let_form(delta)`` returns ``(bindings, body)``: ``bindings`` a list of
    ``(id, fragment)`` pairs, one per Share of the DAG (``fragment`` the Delta the Share
    wraps; inside it, a Share stands for its variable ``s<id>``), each bound before it
    is used; ``body`` the root Delta.  Compared with
    :func:`dualarr.ad.transposition.to_let_form` on hand-made sharing patterns, program
    Deltas, random Delta DAGs and the edges of :func:`let_edge_cases`; then the work on
    doubling chains of 8 and 16 steps must grow linearly, and a chain deeper than Python's
    recursion limit must convert.
    """
    require_callable(let_form, "let_form", "check_let_conversion")
    cases = delta_cases() + let_edge_cases()
    in_id_order = True
    for name, delta in cases:
        run = run_metered(partial(let_form, delta), 400_000)
        if isinstance(run.error, NotImplementedError):
            return not_implemented("share → let", "your conversion")
        where = f"on {name}:\n{show_delta(delta)}"
        if run.exceeded:
            return not_yet(
                _TITLE,
                f"{where}\nyour conversion ran for more than 400000 Python lines on a Delta "
                f"of {dl.size([delta]).nodes} nodes",
                "Hint: a DAG walked as a tree visits a shared node once per path to it, "
                "exponentially many in a chain: visit each node once.",
            )
        if run.error is not None:
            return not_yet(_TITLE, f"{where}\nyour conversion raised {describe_error(run.error)}")
        unpacked = _unpack(run.result)
        if isinstance(unpacked, str):
            return not_yet(
                _TITLE,
                f"{where}\n{unpacked}",
                "Hint: return a pair (bindings, body): bindings a list of (id, Delta) pairs, "
                "body a Delta.",
            )
        bindings, body = unpacked
        problems, hints = _let_form_problems(delta, bindings, body)
        if problems:
            return not_yet(_TITLE, where, *problems, *list(dict.fromkeys(hints)))
        expected = [k for k, _ in to_let_form(delta).bindings]
        in_id_order &= [k for k, _ in bindings] == expected
    work = {n: run_metered(partial(let_form, doubling_chain(n)), 200_000) for n in (8, 16)}
    if work[16].exceeded or work[16].lines > 3 * work[8].lines + 300:
        grew = growth_in_words(work[8].lines, work[16].lines, work[16].exceeded)
        return not_yet(
            f"{_TITLE}: right let forms, but the work is not linear",
            "on the doubling chain y = y + y: 17 Share nodes for 16 steps, 9 for 8 steps, "
            f"but doubling the length multiplied your conversion's work by {grew}",
            "Hint: each node of the chain is reached along exponentially many paths; a "
            "linear conversion handles every node once, however many paths lead to it.",
        )
    deep_problem = _deep_chain_problem(let_form)
    if deep_problem is not None:
        return not_yet(f"{_TITLE}: right on short Deltas, but not on a long chain", *deep_problem)
    order = (
        "lowest id first, as dualarr's to_let_form"
        if in_id_order
        else "in an order where each is bound before it is used"
    )
    return passed(
        f"{_TITLE}: right on all {len(cases)} Deltas",
        f"every Share bound once, {order}; the body is the root",
        f"the work grows linearly on a sharing chain, and a chain of {_DEEP} steps converts",
    )

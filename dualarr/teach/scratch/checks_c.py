"""Checks of stage (c): the elementwise rules, dual arrays (Fig. 14), the reverse pass
(Fig. 17, linear with Share, §2.5) and the wrapper (§6.5).

The learner's functions compute primals with stage a, through the name ``a`` of their
setup cell; while a check runs, that name is bound to the reference solution, so each task
is graded on its own (an evaluator still being written does not fail the reverse pass).
Values and gradients are compared with dualarr's.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

import dualarr as da

from ..scratch_support import FIG7_CONSTRUCTS
from . import delta as dl
from .grading import Mismatch, count_calls, expect_close, learner_error_lines, task
from .notebooks import StageLoadError, references, stage
from .oracle import Case, cases
from .terms import (
    Cond,
    Const,
    FromList,
    Gather,
    Index,
    Let,
    Op,
    Replicate,
    Scatter,
    SumOuter,
    Term,
    Transpose,
    Var,
    constructs_in,
    float_const,
    int_const,
    mentions,
    show,
)  # fmt: skip

Array = np.ndarray

BUILD1_FREE = FIG7_CONSTRUCTS - {"build1"}
"""Random programs that are build1-free already (the bot's output language)."""

OP_HINT = (
    "Fig. 14: the tangent of op(x, z) is Add of a Scale per argument, each by the partial "
    "derivative at the primal arguments; at a tie maximum and minimum give the derivative "
    "to the first argument"
)
FORWARD_HINT = (
    "Fig. 14: each construct's primal is the operation on the primals, its Delta the same "
    "(linear) operation on the Deltas; index terms are evaluated, never differentiated "
    "(Fig. 13); let binds the pair; cond picks a branch's pair"
)
SHARE_HINT = (
    "§2.5, Invariants 1 and 2: every rule of Fig. 14 ends in dual(primal, delta), which "
    "wraps the Delta it built in Share with a fresh id, larger than every id before; a "
    "let or a variable passes its pair on, unwrapped"
)
REVERSE_HINT = (
    "Fig. 17: each Delta constructor passes the cotangent through its transpose (Gather "
    "by a scatter, Index by a one-hot array, SumOuter by a replicate, ...); a read out of "
    "range had no effect, so its cotangent goes nowhere (§5.2)"
)
LINEAR_HINT = (
    "§2.5 and Fig. 17: a Share node only accumulates its cotangent (no recursion); "
    "backprop then evaluates each Share once, largest id first, each step in constant "
    "work (a heap, not a scan of every node)"
)
VJP_HINT = "§6.5: forward from the inputs, then reverse from the cotangent with the inputs' shapes"

ELEMENTWISE: dict[str, Callable[..., Any]] = {
    "add": lambda x, z: x + z,
    "sub": lambda x, z: x - z,
    "mul": lambda x, z: x * z,
    "maximum": da.maximum,
    "minimum": da.minimum,
    "neg": lambda x: -x,
    "sin": da.sin,
    "cos": da.cos,
    "tanh": da.tanh,
}
"""The float operations of the mini language, written with dualarr (the oracle)."""


LEARNERS = ("op_delta", "forward", "reverse", "vjp")
"""The learner's functions of this stage: their globals are the learner's namespace."""


def _graded(run: Callable[[Mapping[str, Any]], str]) -> Callable[[Mapping[str, Any]], str]:
    """``run`` on the learner's namespace, with ``a`` the reference stage a meanwhile."""

    def graded(ns: Mapping[str, Any]) -> str:
        with references([ns[name] for name in LEARNERS if name in ns], ("a",)):
            return run(ns)

    graded.__name__ = run.__name__
    graded.__doc__ = run.__doc__
    return graded


def _reference() -> types.ModuleType:
    return stage("c", "reference")


def _reference_reverse(delta: Any, cotangent: Array, shapes: dict[str, tuple[int, ...]],
                       program: str, inputs: Mapping[str, Any] | None) -> dict[str, Array]:
    """The reference reverse pass on the learner's Delta, a failure reported as theirs."""
    try:
        grads: dict[str, Array] = _reference().reverse(delta, cotangent, shapes)
    except StageLoadError:
        raise
    except Exception as error:
        raise Mismatch(
            f"the reference reverse pass cannot read your Delta ({type(error).__name__}: "
            f"{error})",
            hint=FORWARD_HINT + "; the Delta constructors' fields are those of delta.py "
            "(source_shape: the shape of the Delta's argument; Index: ints)",
            program=program, inputs=inputs,
        ) from error
    return grads


ARITHMETIC = frozenset({"op", "let", "cond", "index", "sumOuter", "replicate", "fromList", "tr"})
"""Constructs of programs with more elementwise arithmetic than the whole set gives."""


def _call(function: Callable[..., Any], *args: Any, hint: str, program: str,
          inputs: Mapping[str, Any] | None) -> Any:
    """``function(*args)``, the learner's code: a failure is reported with the program it
    ran on."""
    try:
        return function(*args)
    except (NotImplementedError, RecursionError, Mismatch):
        raise
    except Exception as error:
        head, *where = learner_error_lines(error)
        at = f" ({where[0].removeprefix('at:').strip().rstrip(':')})" if where else ""
        raise Mismatch(head + at, hint=hint, program=program, inputs=inputs) from error


def _programs(seed: int, count: int, constructs: frozenset[str] = BUILD1_FREE) -> list[Case]:
    drawn = cases(seed, count, constructs=constructs)
    return sorted(drawn, key=lambda c: len(show(c.term)))


@dataclass(frozen=True)
class Handmade:
    """A program the random ones rarely draw (a cyclic transposition, reads and writes
    out of range), graded against the reference stages."""

    term: Term
    env: dict[str, Array]

    @property
    def text(self) -> str:
        return show(self.term)

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(self.env)

    def value(self) -> Array:
        return np.asarray(stage("a", "reference").evaluate(self.term, dict(self.env)))

    def cotangent(self) -> Array:
        rng = np.random.default_rng(len(self.text))
        return np.asarray(rng.integers(-16, 17, size=np.shape(self.value())) / 8.0)

    def vjp(self, cotangent: Array) -> dict[str, Array]:
        _, grads = _reference().vjp(self.term, dict(self.env), cotangent)
        return dict(grads)


@dataclass(frozen=True)
class Vectorised:
    """A random program with build1, after the reference bot (stage b): what stage c
    differentiates in the pipeline."""

    case: Case
    term: Term

    @property
    def text(self) -> str:
        return f"{self.case.text}\n          after the bot: {show(self.term)}"

    @property
    def env(self) -> dict[str, Array]:
        return self.case.env

    def value(self) -> Array:
        return self.case.value()

    def cotangent(self) -> Array:
        return self.case.cotangent()

    def vjp(self, cotangent: Array) -> dict[str, Array]:
        return self.case.vjp(cotangent)


def vectorised(seed: int, count: int) -> list[Vectorised]:
    """``count`` random programs with build1 (of every Fig. 7 construct), vectorised by
    stage b's reference; none while that stage is not there."""
    try:
        bot = stage("b", "reference").bot
    except StageLoadError:
        return []
    drawn = sorted(cases(seed, count), key=lambda c: len(show(c.term)))
    return [Vectorised(case, bot(case.term)) for case in drawn]


Program = Case | Handmade | Vectorised


def handmade() -> list[Handmade]:
    rng = np.random.default_rng(5)

    def data(*shape: int) -> Array:
        return np.asarray(rng.integers(-16, 17, size=shape) / 8.0)

    x, m, v = Var("x"), Var("m"), Var("v")
    i, j = Var("i"), Var("j")
    terms: list[Term] = [
        Transpose((1, 2, 0), x),
        SumOuter(Transpose((2, 0, 1), Op("sin", (x,)))),
        Transpose((1, 0), Op("mul", (x, x))),
        FromList((Index(m, (int_const(-1),)), Index(m, (int_const(3),)),
                  Index(m, (int_const(2),)))),
        Index(m, (int_const(1), int_const(2))),
        Gather((4,), v, ("i",), (Op("sub", (int_const(2), i)),)),
        Gather((3,), x, ("i",), (Op("rem", (i, int_const(2))),)),
        Scatter((2,), v, ("i",), (Op("sub", (i, int_const(1))),)),
        Scatter((2,), m, ("i", "j"), (j,)),
        Let("u", Op("mul", (m, m)),
            Op("maximum", (Var("u"), Replicate(3, Index(m, (int_const(0),)))))),
        Cond(Op("gt", (Index(v, (int_const(0),)), float_const(0.0))),
             FromList((v, Op("neg", (v,)))), Replicate(2, Op("tanh", (v,)))),
    ]
    env = {"x": data(2, 3, 4), "m": data(3, 2), "v": data(3)}
    return [Handmade(t, {n: env[n] for n in ("x", "m", "v") if mentions(t, n)}) for t in terms]


def _shapes(env: Mapping[str, Array]) -> dict[str, tuple[int, ...]]:
    return {name: tuple(np.shape(x)) for name, x in env.items()}


def _expect_gradients(case: Program, cotangent: Array, got: Any, *, what: str, hint: str,
                      program: str | None = None) -> None:
    want = case.vjp(cotangent)
    if not isinstance(got, Mapping):
        raise Mismatch(f"{what}: a {type(got).__name__}, expected a dict by input name",
                       hint=hint, program=program or case.text, inputs=case.env)
    for name, expected in want.items():
        expect_close(expected, got.get(name), what=f"{what}, input {name}", hint=hint,
                     program=program or case.text,
                     inputs={**case.env, "cotangent": cotangent})


# --------------------------------------------------------------------------------------
# c.op_delta
# --------------------------------------------------------------------------------------


@task("c.op_delta", names=("op_delta",), title="the elementwise rules (Fig. 14)", hint=OP_HINT)
@_graded
def check_op_delta(ns: Mapping[str, Any]) -> str:
    op_delta = ns["op_delta"]
    a = stage("a", "reference")
    rng = np.random.default_rng(31)
    checked = 0
    for op, f in ELEMENTWISE.items():
        arity = 1 if op in ("neg", "sin", "cos", "tanh") else 2
        names = ("x", "z")[:arity]
        for rank in range(3):
            shape = tuple(int(n) for n in rng.integers(1, 4, size=rank))
            xs = tuple(np.asarray(rng.integers(-4, 5, size=shape) / 4.0) for _ in names)
            if arity == 2:  # ties in about half the elements
                xs = (xs[0], np.where(rng.random(shape) < 0.5, xs[0], xs[1]))
            y = np.asarray(a.evaluate(Op(op, tuple(Const(x) for x in xs)), {}))
            cotangent = np.asarray(rng.integers(-8, 9, size=shape) / 4.0)
            shown = f"{op} {' '.join(names)}"
            inputs = {**dict(zip(names, xs, strict=True)), "cotangent": cotangent}
            deltas = tuple(dl.Input(n) for n in names)
            delta = _call(op_delta, op, xs, deltas, y, hint=OP_HINT, program=shown,
                          inputs=inputs)
            shapes = {n: shape for n in names}
            got = _reference_reverse(delta, cotangent, shapes, shown, inputs)
            _, pullback = da.vjp(f, *xs)
            for name, expected in zip(names, pullback(cotangent), strict=True):
                expect_close(expected, got[name],
                             what=f"the gradient of <cotangent, {shown}> by {name} "
                                  "(your Delta, transposed)",
                             hint=OP_HINT, program=shown, inputs=inputs)
            checked += 1
    return (f"the Deltas of {len(ELEMENTWISE)} elementwise operations on {checked} random "
            "arrays (ties included) transpose to dualarr's gradients")


# --------------------------------------------------------------------------------------
# c.forward
# --------------------------------------------------------------------------------------

LINEAR = (dl.Index, dl.Gather, dl.Scatter, dl.SumOuter, dl.Replicate, dl.Transpose,
          dl.FromList)
LEAVES = (dl.Zero, dl.Input)


def _describe(d: Any) -> str:
    """``d``'s constructor with its article: "an Add node", "a Share node (id 3)"."""
    name = type(d).__name__
    article = "an" if name[0] in "AEIOU" else "a"
    return f"{article} {name} node" + (f" (id {d.id})" if isinstance(d, dl.Share) else "")


def sharing_problem(root: Any) -> str | None:
    """What breaks the sharing invariants of §2.5 in a Delta, or ``None``: every rule's
    Delta under a ``Share`` (the root included; a rule of Fig. 14 builds one linear node,
    or an ``Add`` of ``Scale`` s), a node used twice only if it is a ``Share`` (or a
    leaf), one id per node, ids decreasing from a ``Share`` inwards."""
    if not dl.is_delta(root):
        return f"the Delta is a {type(root).__name__}, not a Delta of delta.py"
    if not isinstance(root, (dl.Share, *LEAVES)):
        return f"the root of the Delta is {_describe(root)}, not wrapped in a Share"
    parents: dict[int, list[Any]] = {}
    by_id: dict[int, Any] = {}
    for node in dl.nodes(root):
        if isinstance(node, dl.Share):
            other = by_id.setdefault(node.id, node)
            if other is not node:
                return f"two different Share nodes have the id {node.id} (Invariant 2)"
        for kid in dl.delta_children(node):
            parents.setdefault(id(kid), []).append(node)
    for node in dl.nodes(root):
        above = parents.get(id(node), [])
        if len(above) > 1 and not isinstance(node, (dl.Share, *LEAVES)):
            return (f"{_describe(node)} is used {len(above)} times but is not a "
                    "Share: a reverse pass would walk it once per use")
        if isinstance(node, LINEAR) and any(not isinstance(p, dl.Share) for p in above):
            parent = next(p for p in above if not isinstance(p, dl.Share))
            return (f"{_describe(node)} sits inside {_describe(parent)}, not "
                    "directly in a Share")
        # one rule's Delta: Add of Scales or arguments; an Add deeper down is another rule's
        inside = (*LINEAR, dl.Add, dl.Scale) if isinstance(node, dl.Add) else LINEAR
        if isinstance(node, dl.Add | dl.Scale) and any(isinstance(p, inside) for p in above):
            parent = next(p for p in above if isinstance(p, inside))
            return (f"{_describe(node)} sits inside {_describe(parent)}, not "
                    "in a Share of its own")
        if isinstance(node, dl.Share):
            for inner in _shares_below(node):
                if inner.id >= node.id:
                    return (f"Share {node.id} contains Share {inner.id}: ids must grow "
                            "toward the root (Invariant 1)")
    return None


def _shares_below(share: dl.Share) -> list[dl.Share]:
    """The Share nodes reachable from ``share.d`` without passing another Share."""
    found: list[dl.Share] = []
    stack: list[Any] = [share.d]
    while stack:
        node = stack.pop()
        if isinstance(node, dl.Share):
            found.append(node)
        else:
            stack.extend(dl.delta_children(node))
    return found


@task("c.forward", names=("forward", "op_delta"),
      title="dual arrays: the forward rules (Fig. 14)", hint=FORWARD_HINT)
@_graded
def check_forward(ns: Mapping[str, Any]) -> str:
    forward = ns["forward"]
    programs: list[Program] = [*_programs(41, 20), *_programs(42, 15, ARITHMETIC),
                               *vectorised(40, 15), *handmade()]
    for case in programs:
        result = _call(forward, case.term, dict(case.env), hint=FORWARD_HINT,
                       program=case.text, inputs=case.env)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise Mismatch(f"forward returned a {type(result).__name__}, expected a pair "
                           "(primal, Delta)", hint=FORWARD_HINT, program=case.text,
                           inputs=case.env)
        primal, delta = result
        hint = f"{FORWARD_HINT} (this program uses {_kinds(case.term)})"
        expect_close(case.value(), primal, what="the primal differs from the expected value",
                     hint=hint, program=case.text, inputs=case.env)
        problem = sharing_problem(delta)
        if problem is not None:
            raise Mismatch(f"the Delta breaks the sharing invariant: {problem}",
                           hint=SHARE_HINT, program=case.text, inputs=case.env)
        cotangent = case.cotangent()
        got = _reference_reverse(delta, cotangent, _shapes(case.env), case.text, case.env)
        _expect_gradients(case, cotangent, got,
                          what="your Delta, transposed by the reference reverse pass, "
                               "differs from dualarr's gradient", hint=hint)
    return (f"{len(programs)} programs (random build1-free ones, random ones through the "
            "reference bot, and a few that read and write out of range or transpose "
            "cyclically): the primal is dualarr's value, every "
            "rule's Delta is shared with ids growing toward the root (§2.5), and the Delta "
            "transposes to dualarr's gradient")


def _kinds(term: Term) -> str:
    return ", ".join(sorted(constructs_in(term) - {"Const", "Var"})) or "only leaves"


# --------------------------------------------------------------------------------------
# c.reverse
# --------------------------------------------------------------------------------------


def doubling(n: int) -> Term:
    """§2.5's doubling chain: ``let x1 = x0 * x0 in ... in sumOuter xn``, each value used
    twice."""
    body: Term = SumOuter(Var(f"x{n}"))
    for k in range(n, 0, -1):
        body = Let(f"x{k}", Op("mul", (Var(f"x{k - 1}"), Var(f"x{k - 1}"))), body)
    return body


GROWTH = 2.5
"""Doubling the chain may at most multiply the counted work by this (linear: about 2,
quadratic: 4, exponential: far more)."""


def _runner(reverse: Callable[..., Any], delta: Any) -> Callable[[], Any]:
    return lambda: reverse(delta, np.asarray(1.0), {"x0": (3,)})


@task("c.reverse", names=("reverse",), title="the reverse pass (Fig. 17), linear with Share",
      hint=REVERSE_HINT)
@_graded
def check_reverse(ns: Mapping[str, Any]) -> str:
    reverse = ns["reverse"]
    reference = _reference()
    programs: list[Program] = [*_programs(43, 20), *_programs(44, 10, ARITHMETIC),
                               *vectorised(45, 15), *handmade()]
    for case in programs:
        _, delta = reference.forward(case.term, dict(case.env))
        cotangent = case.cotangent()
        hint = f"{REVERSE_HINT} (this program uses {_kinds(case.term)})"
        got = _call(reverse, delta, cotangent, _shapes(case.env), hint=hint,
                    program=case.text, inputs={**case.env, "cotangent": cotangent})
        _expect_gradients(case, cotangent, got,
                          what="the gradient (the reference Delta, your reverse pass)",
                          hint=hint)
    calls: dict[int, int] = {}
    previous = None
    for n in (5, 10, 20):
        term = doubling(n)
        shown = f"the doubling chain of §2.5 with n = {n}: {show(term)}"
        _, delta = reference.forward(term, {"x0": np.ones(3)})
        grads, calls[n] = count_calls(_runner(reverse, delta))
        expect_close(np.full(3, 2.0**n), grads["x0"], what="the gradient of the doubling chain",
                     hint=REVERSE_HINT, program=shown, inputs={"x0": np.ones(3)})
        if previous is not None and calls[n] > GROWTH * calls[previous]:
            raise Mismatch(
                f"your reverse pass made {calls[previous]} Python calls at n = {previous} "
                f"and {calls[n]} at n = {n}: its work grows faster than the Delta "
                f"({3 * n} nodes)", hint=LINEAR_HINT, program=shown,
            )
        previous = n
    return (f"{len(programs)} programs (build1-free, or through the reference bot): the "
            "reference Deltas reverse to dualarr's gradients; "
            f"the doubling chain takes {calls[5]}, {calls[10]}, {calls[20]} calls "
            "at n = 5, 10, 20 (linear, §2.5)")


# --------------------------------------------------------------------------------------
# c.vjp
# --------------------------------------------------------------------------------------


@task("c.vjp", names=("vjp", "forward", "reverse"),
      title="the wrapper (§6.5), on the bot's output", hint=VJP_HINT)
@_graded
def check_vjp(ns: Mapping[str, Any]) -> str:
    vjp = ns["vjp"]
    programs: list[Program] = [*_programs(47, 15), *vectorised(48, 25)]
    for case in programs:
        cotangent = case.cotangent()
        result = _call(vjp, case.term, dict(case.env), cotangent, hint=VJP_HINT,
                       program=case.text, inputs=case.env)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise Mismatch(f"vjp returned a {type(result).__name__}, expected a pair "
                           "(value, gradients)", hint=VJP_HINT, program=case.text,
                           inputs=case.env)
        value, grads = result
        expect_close(case.value(), value, what="the value differs from dualarr's",
                     hint=VJP_HINT, program=case.text, inputs=case.env)
        _expect_gradients(case, cotangent, grads, what="the gradient differs from dualarr's",
                          hint=VJP_HINT)
    bots = sum(isinstance(p, Vectorised) for p in programs)
    return (f"{len(programs)} random programs ({bots} of them with build1, through the "
            "reference bot): value and gradient agree with dualarr")

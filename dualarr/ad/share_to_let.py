"""share → let (paper Fig. 20), the wrapper (Fig. 21) and gradient simplification.

The input is the ``shared`` stage (:class:`~dualarr.ad.symbolic_reverse.SharedGradient`): gradient
terms in which every duplicated cotangent is ``share_k c``.  Let conversion collects each
``share_k`` once, replaces it by a variable ``c<k>`` and stacks the bindings from the
lowest id (outermost) to the highest.  A share whose term mentions an index variable of
a gather/scatter lambda stays inside that lambda (as a ``let`` there).  The wrapper puts
the primal bindings of Eq. 6 first: one closed program

    λ(inputs, dt). let <primal> in let <cotangents> in (value, gradient…)

(:class:`LetProgram`).  :func:`simplify_let_program` then applies the simplifier of
:mod:`dualarr.vectorise.simplify` to every binding (gather fusion, gather → tr/replicate, scatter of
a permutation → gather, ``sumOuter (a * b)`` → contraction, constant folding), drops dead
bindings and inlines bindings used once (and cheap ones: a replicated scalar), until
nothing changes (``book/rules.md §5.5``).
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lang.config import config
from ..lang.errors import DualarrError
from ..lang.terms import (
    Const,
    FreeVars,
    IdSupply,
    Let,
    Op,
    Replicate,
    Share,
    Term,
    Var,
    children,
    fresh_var,
    postorder,
    rebuild,
    view,
)
from ..lang.trampoline import collector_paused
from ..vectorise.simplify import Simplifier
from .extraction import unbound_top_level
from .symbolic_reverse import SharedGradient

__all__ = ["LetProgram", "check_let_program", "share_to_let", "simplify_let_program"]

_MAX_ROUNDS = 8


@dataclass(frozen=True)
class LetProgram:
    """``λ inputs. let v1 = e1 in … let vn = en in (o1, …, om)`` (Fig. 21).

    Each binding mentions only the inputs and earlier bindings; the outputs are the
    primal value and one gradient per float input (``positions``)."""

    name: str
    inputs: tuple[Var, ...]
    bindings: tuple[tuple[Var, Term], ...]
    outputs: tuple[Term, ...]
    positions: tuple[int, ...]
    supply: IdSupply

    def __str__(self) -> str:
        return str(view("print_let_program")(self.inputs, self.bindings, self.outputs))

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"

    @property
    def constants(self) -> dict[str, np.ndarray]:
        """The array constants it holds, by the names it prints them with (``k1``)."""
        return dict(view("constant_table")(self.inputs, self.outputs, self.bindings))

    def graph(self) -> Any:
        """Every binding and output as one graphviz drawing (:mod:`dualarr.show.drawing`)."""
        return view("stage_graph")(self)

    def terms(self) -> list[Term]:
        """Every binding's term, then the outputs."""
        return [t for _, t in self.bindings] + list(self.outputs)


def _graph_postorder(roots: Sequence[Term], bound: dict[Var, Term]) -> list[Term]:
    """Post-order where a let-bound variable depends on its bound term (iterative)."""

    def kids(node: Term) -> tuple[Term, ...]:
        if isinstance(node, Var) and node in bound:
            return (bound[node],)
        return children(node)

    return postorder(roots, kids)


def share_to_let(shared: SharedGradient) -> LetProgram:
    """Fig. 20 and Fig. 21: every ``share_k`` becomes the binding ``c<k>`` (lowest id
    outermost), after the primal bindings of Eq. 6; ``share`` inside a lambda becomes a
    ``let`` inside that lambda."""
    extracted = shared.extracted
    program = extracted.program
    top_vars = {*program.inputs, shared.cotangent, *(v for v, _ in extracted.bindings)}
    lambda_vars = FreeVars(ignore=top_vars)  # the variables of enclosing lambdas only
    roots = list(shared.gradients)
    new: dict[Term, Term] = {}
    share_bindings: dict[int, tuple[Var, Term]] = {}
    for node in postorder(roots):
        if not isinstance(node, Share):
            new[node] = rebuild(node, tuple(new[k] for k in children(node)))
            continue
        inner = new[node.array]
        if not lambda_vars(node):  # a global binding c<k>
            found = share_bindings.get(node.id)
            if found is None:
                var = fresh_var(program.supply, f"c{node.id}", inner.shape, inner.dtype)
                found = share_bindings[node.id] = (var, inner)
            new[node] = found[0]
        else:  # mentions a lambda's variables: a let inside that lambda
            var = fresh_var(program.supply, f"c{node.id}", inner.shape, inner.dtype)
            new[node] = Let(var, inner, var)
    bindings = (
        *extracted.bindings,
        *(share_bindings[k] for k in sorted(share_bindings)),
    )
    outputs = (extracted.value, *(new[g] for g in roots))
    result = LetProgram(
        _identifier(f"grad_{program.name}"),
        (*program.inputs, shared.cotangent),
        bindings,
        outputs,
        shared.positions,
        program.supply,
    )
    if config.check_stages:
        check_let_program(result)
    return result


def _identifier(name: str) -> str:
    """A Python identifier from a function's name (``grad_<lambda>`` → ``grad_lambda``)."""
    cleaned = re.sub(r"\W+", "_", name).strip("_")
    return cleaned if cleaned.isidentifier() and not keyword.iskeyword(cleaned) else "gradient"


def check_let_program(program: LetProgram) -> None:
    """No ``share`` is left, every variable is bound before it is used, and every
    variable is bound once.  Linear: each node is checked once, at its first binding
    (a later binding sees a larger scope), with the lambda-bound variables apart."""
    top = {*program.inputs, *(v for v, _ in program.bindings)}
    lambda_free = FreeVars(ignore=top)
    scope: set[Var] = set(program.inputs)
    seen: set[Term] = set()
    for var, term in program.bindings:
        _check_term(term, scope, top, lambda_free, seen, f"the binding of {var.hint}")
        if var in scope:
            raise DualarrError(f"{var.hint} is bound twice", op="let conversion")
        scope.add(var)
    for k, out in enumerate(program.outputs):
        _check_term(out, scope, top, lambda_free, seen, f"output {k}")


def _check_term(
    term: Term, scope: set[Var], top: set[Var], lambda_free: FreeVars, seen: set[Term], where: str
) -> None:
    for node in postorder([term], lambda n: () if n in seen else children(n)):
        if isinstance(node, Share) and node not in seen:
            raise DualarrError(f"{where} still contains share{node.id}", op="let conversion")
    # free: bound by no lambda around its use and not top-level, or top-level and unbound
    free = set(lambda_free(term)) | unbound_top_level(term, scope, top, seen)
    if free:
        names = ", ".join(sorted(f"{v.hint}#{v.id}" for v in free))
        raise DualarrError(f"{where} uses {names} before it is bound", op="let conversion")


def simplify_let_program(program: LetProgram) -> LetProgram:
    """Simplify every binding, inline bindings used once, drop dead ones; repeat until
    nothing changes (at most a few rounds: each round only shrinks the program).  Each
    rewrite keeps every variable bound before its use (:func:`check_let_program` holds
    of the result; the property tests check it)."""
    with collector_paused():
        simplifier = Simplifier(program.supply, cleanup=True)  # one memo for every round
        for _ in range(_MAX_ROUNDS):
            simplified = _simplify_terms(program, simplifier)
            inlined = _inline_and_prune(simplified, simplifier.rebuild)
            if inlined is None:
                program = simplified
                break
            program = inlined
    return program


def _simplify_terms(program: LetProgram, simplifier: Simplifier) -> LetProgram:
    terms = simplifier.run(program.terms())
    count = len(program.bindings)
    bindings = tuple(
        (var, term) for (var, _), term in zip(program.bindings, terms[:count], strict=True)
    )
    return LetProgram(
        program.name,
        program.inputs,
        bindings,
        tuple(terms[count:]),
        program.positions,
        program.supply,
    )


def _cheap(term: Term) -> bool:
    """A binding not worth a name: a variable, a scalar constant or a replicated one, or
    the negation of one (inlined, the cleanup gathers the negations)."""
    while isinstance(term, Replicate) or (isinstance(term, Op) and term.op == "neg"):
        term = term.args[0] if isinstance(term, Op) else term.array
    return isinstance(term, Var) or (isinstance(term, Const) and term.shape == ())


def _inline_and_prune(
    program: LetProgram, rebuild_node: Callable[[Term, tuple[Term, ...]], Term]
) -> LetProgram | None:
    """Inline bindings used once or cheap ones, drop unreachable ones; None when neither
    applies.  ``rebuild_node`` rebuilds a node over new children (simplifying it, so the
    next round's simplification only looks the nodes up)."""
    bound = dict(program.bindings)
    order = _graph_postorder(list(program.outputs), bound)
    uses: dict[Var, int] = {}
    for root in program.outputs:
        if isinstance(root, Var) and root in bound:
            uses[root] = uses.get(root, 0) + 1
    for node in order:
        if isinstance(node, Var):
            continue
        for kid in children(node):
            if isinstance(kid, Var) and kid in bound:
                uses[kid] = uses.get(kid, 0) + 1
    live = {node for node in order if isinstance(node, Var) and node in bound}
    inline = {var for var in live if uses.get(var, 0) == 1 or _cheap(bound[var])}
    if not inline and len(live) == len(bound):
        return None
    new: dict[Term, Term] = {}
    for node in order:
        if isinstance(node, Var) and node in inline:
            new[node] = new[bound[node]]
        elif isinstance(node, Var):
            new[node] = node
        else:
            new[node] = rebuild_node(node, tuple(new[k] for k in children(node)))
    bindings = tuple(
        (var, new[term]) for var, term in program.bindings if var in live and var not in inline
    )
    outputs = tuple(new[o] for o in program.outputs)
    return LetProgram(
        program.name, program.inputs, bindings, outputs, program.positions, program.supply
    )

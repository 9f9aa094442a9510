"""A traced program as the user wrote it with ``dualarr.numpy``, beside its lowering.

``Program.numpy_source()`` prints one ``let`` per NumPy call the user made while
tracing: on the right of ``=`` the call's lowering to the core language (Fig. 7), with
earlier calls' results by name, and after ``#`` the call as written::

    \\x.
    let roll = gather [5] x (\\[i]. [rem (i + 3) 5]) in     # dnp.roll(x, 2)
    let sum = sumOuter (roll * roll) in                    # dnp.sum(roll * roll)
    sum

so a learner sees what each NumPy function becomes.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lang.names import Namer
from ..lang.program import Program
from ..lang.tensor import NumpyCall
from ..lang.terms import (
    FreeVars,
    IdSupply,
    Term,
    TermBase,
    Var,
    children,
    fresh_var,
    install_views,
    postorder,
    rebuild,
    type_name,
    view,
)

__all__ = ["numpy_graph", "print_numpy_program"]

_WIDTH = 48  # the longest argument shown in a call before it is cut


@dataclass(frozen=True)
class _Listing:
    """The calls' results as let-bound variables: ``order`` (variable, result, call),
    ``body`` (each node over earlier results by name), ``written`` (a node, or the
    variable naming it) and the printed ``names`` of inputs and variables."""

    order: list[tuple[Var, Term, NumpyCall]]
    body: dict[int, Term]
    written: dict[int, Term]
    names: dict[int, str]

    def call(self, var: Var) -> str:
        """The call that made ``var``, as written."""
        call = next(c for v, _, c in self.order if v is var)
        return _call(call, self.written, self.names)


def _top_level_calls(program: Program) -> list[NumpyCall]:
    """The calls made outside any loop body: a call a ``da.scan`` body made reads the
    body's variables (its carries, its slices), which no ``let`` at the top can see, so
    it is shown as part of its loop."""
    free = FreeVars(ignore=program.inputs)
    return [
        call
        for call in program.numpy_calls
        if not any(free(t) for t in [*call.results, *_terms(call.args), *_terms(call.kwargs)])
    ]


def _listing(program: Program) -> _Listing:
    supply = IdSupply(program.supply.next_id)  # names only: the program is not changed
    named: dict[int, Var] = {}
    inputs = {id(v) for v in program.inputs}
    order: list[tuple[Var, Term, NumpyCall]] = []
    calls = _top_level_calls(program)
    for call in calls:
        for result in call.results:
            if id(result) in named or id(result) in inputs:
                continue
            var = fresh_var(supply, call.name, result.shape, result.dtype)
            named[id(result)] = var
            order.append((var, result, call))
    roots = [*(t for _, t, _ in order), *program.outputs]
    for call in calls:
        roots.extend(_terms(call.args) + _terms(call.kwargs))
    body: dict[int, Term] = {}
    written: dict[int, Term] = {}
    for node in postorder(roots):
        kids = tuple(written[id(k)] for k in children(node))
        body[id(node)] = rebuild(node, kids)
        written[id(node)] = named.get(id(node), body[id(node)])
    namer = Namer()  # the let printer's names: inputs, then the variables, in order
    names = {v.id: namer.fresh(v.hint) for v in [*program.inputs, *(v for v, _, _ in order)]}
    return _Listing(order, body, written, names)


def print_numpy_program(program: Program) -> str:
    """The program's ``dualarr.numpy`` calls as ``let`` bindings (see the module doc);
    the plain program when it called none."""
    if not program.numpy_calls:
        return str(program)
    listing = _listing(program)
    bindings = [(var, listing.body[id(term)]) for var, term, _ in listing.order]
    outputs = [listing.written[id(o)] for o in program.outputs]
    text: str = view("print_let_program")(program.inputs, bindings, outputs, every_binding=True)
    calls = {listing.names[var.id]: listing.call(var) for var, _, _ in listing.order}
    return _annotate(text, calls)


def numpy_graph(program: Program) -> Any:
    """The program's term DAG with the nodes each ``dualarr.numpy`` call made (its
    lowering) in a box labelled with the call as written."""
    listing = _listing(program)
    groups: list[tuple[str, Sequence[Term]]] = []
    owned: set[int] = {id(v) for v in program.inputs}
    for var, result, call in listing.order:
        given = {id(n) for n in postorder(_terms(call.args) + _terms(call.kwargs))}
        made = [n for n in postorder([result]) if id(n) not in given and id(n) not in owned]
        owned.update(id(n) for n in made)
        if made:
            groups.append((listing.call(var), made))
    return view("term_graph")(list(program.outputs), program.name, groups=groups)


def _terms(values: Any) -> list[Term]:
    """The terms among a call's (nested) arguments."""
    found: list[Term] = []
    stack: list[Any] = [values]
    while stack:
        value = stack.pop()
        if isinstance(value, tuple | list):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, TermBase):
            found.append(value)  # type: ignore[arg-type]
    return found


def _call(call: NumpyCall, written: dict[int, Term], names: dict[int, str]) -> str:
    def shown(value: Any) -> str:
        if isinstance(value, np.ndarray):
            return f"<{value.dtype}{list(value.shape)}>"
        if isinstance(value, tuple | list):
            inner = ", ".join(shown(v) for v in value)
            return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
                f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
            )
        if isinstance(value, TermBase):
            term: Term = written.get(id(value), value)  # type: ignore[arg-type]
            if isinstance(term, Var) and term.id in names:
                return names[term.id]
            text = str(view("print_term")(term))
            return text if len(text) <= _WIDTH else f"<{type_name(term.shape, term.dtype)}>"
        return reprlib.repr(value)

    args = [shown(a) for a in call.args] + [f"{k}={shown(v)}" for k, v in call.kwargs]
    return f"dnp.{call.name}({', '.join(args)})"


def _annotate(text: str, calls: dict[str, str]) -> str:
    """Each ``let name = … in`` line of a call, with the call as written after ``#``."""
    lines = text.split("\n")
    width = max((len(line) for line in lines if line.startswith("let ")), default=0)
    out: list[str] = []
    for line in lines:
        name = line[4:].split(" = ", 1)[0] if line.startswith("let ") else None
        if name is not None and name in calls:
            line = f"{line.ljust(width)}  # {calls[name]}"
        out.append(line)
    return "\n".join(out)


install_views(print_numpy_program=print_numpy_program, numpy_graph=numpy_graph)

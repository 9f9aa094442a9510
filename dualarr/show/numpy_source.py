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
from typing import Any

import numpy as np

from ..lang.names import Namer
from ..lang.program import Program
from ..lang.terms import (
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

__all__ = ["print_numpy_program"]

_WIDTH = 48  # the longest argument shown in a call before it is cut


def print_numpy_program(program: Program) -> str:
    """The program's ``dualarr.numpy`` calls as ``let`` bindings (see the module doc);
    the plain program when it called none."""
    calls = program.numpy_calls
    if not calls:
        return str(program)
    supply = IdSupply(program.supply.next_id)  # names only: the program is not changed
    named: dict[int, Var] = {}
    inputs = {id(v) for v in program.inputs}
    called: dict[int, str] = {}  # id(var) -> the call as written (set once names exist)
    order: list[tuple[Var, Term, Any]] = []
    for call in calls:
        for result in call.results:
            if id(result) in named or id(result) in inputs:
                continue
            var = fresh_var(supply, call.name, result.shape, result.dtype)
            named[id(result)] = var
            order.append((var, result, call))
    roots = [*(t for _, t, _ in order), *program.outputs]
    for call in calls:
        roots.extend(t for t in _terms(call.args) + _terms(call.kwargs))
    body: dict[int, Term] = {}
    written: dict[int, Term] = {}  # the term with earlier results by name
    for node in postorder(roots):
        kids = tuple(written[id(k)] for k in children(node))
        body[id(node)] = rebuild(node, kids)
        written[id(node)] = named.get(id(node), body[id(node)])
    bindings = [(var, body[id(term)]) for var, term, _ in order]
    outputs = [written[id(o)] for o in program.outputs]
    text: str = view("print_let_program")(program.inputs, bindings, outputs, every_binding=True)
    names = _names(program, [var for var, _, _ in order])
    for var, _, call in order:
        called[var.id] = _call(call, written, names)
    return _annotate(text, {names[var.id]: called[var.id] for var, _, _ in order})


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


def _names(program: Program, variables: list[Var]) -> dict[int, str]:
    """The names the let printer gives the inputs and the calls' variables (the same
    :class:`Namer`, in the same order)."""
    namer = Namer()
    return {v.id: namer.fresh(v.hint) for v in [*program.inputs, *variables]}


def _call(call: Any, written: dict[int, Term], names: dict[int, str]) -> str:
    def shown(value: Any) -> str:
        if isinstance(value, np.ndarray):
            return f"<{value.dtype}{list(value.shape)}>"
        if isinstance(value, tuple | list):
            inner = ", ".join(shown(v) for v in value)
            return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
                f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
            )
        if id(value) in written:
            term = written[id(value)]
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


install_views(print_numpy_program=print_numpy_program)

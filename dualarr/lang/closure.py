"""Call-time semantics: a traced program closed over what it read, keyed by structure.

A Python function reads more than its arguments: arrays it captured (globals, closure
cells, attributes, ``params["b"]``) and, inside an enclosing trace, traced values of that
trace (``da.grad(lambda y: x * y)`` inside a function of ``x``).  Tracing on every call
sees their current values (tracing is cheap, App. B), and :func:`close_program` makes
them explicit: every captured array becomes an extra input of the program, and so does
every variable of an enclosing trace.  What remains in the term is its *structure*, and
:func:`close_program` computes a hashable key of it (node kinds, static shapes and
dtypes, small constants by value), so compiled programs are reused by structure — two
calls with the same structure share one compiled program however the function object
or the captured data changed — and never by function identity.

Which constants become inputs: every array constant of rank >= 1, except integer and
bool arrays of at most :data:`BAKED_INT_SIZE` elements (index tables and masks, which
the simplifier folds into slices).  Rank-0 constants stay in the term (the simplifier
and the derivative rules rely on literal exponents, scales and index offsets) and are
part of the key by value.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Hashable, Sequence
from typing import Any

from .primitives import REGISTRY
from .program import Program
from .terms import (
    Const,
    FreeVars,
    MapAccum,
    Op,
    Term,
    TermBase,
    Var,
    bound_vars,
    closed_loop,
    fresh_var,
    postorder,
    rebuild,
    transform,
)

BAKED_INT_SIZE = 64
"""Integer and bool array constants up to this size stay in the term (keyed by value)."""


class ClosedProgram:
    """A traced program with everything it reads as an input.

    ``program.inputs`` are the function's ``arity`` arguments followed by one variable
    per captured value; ``captured`` holds those values: NumPy arrays (constants lifted
    out of the term) or terms of an enclosing trace (its variables).  ``key`` is the
    program's structure: equal keys mean one compiled program serves both, so
    ``program`` is built only when it is needed (on a cache miss).
    """

    def __init__(
        self,
        traced: Program,
        captured: tuple[Any, ...],
        key: Hashable,
        replaced: tuple[Term, ...],
    ) -> None:
        self.traced = traced
        self.arity = len(traced.inputs)
        self.captured = captured
        self.key = key
        self._replaced = replaced

    @functools.cached_property
    def program(self) -> Program:
        """The traced program with the captured values' nodes replaced by variables."""
        traced = self.traced
        replacement: dict[Term, Var] = {}
        fresh: list[Var] = []
        for k, node in enumerate(self._replaced):
            hint = f"c{k + 1}" if isinstance(node, Const) else node.hint  # type: ignore[union-attr]
            var = fresh_var(traced.supply, hint, node.shape, node.dtype)
            replacement[node] = var
            fresh.append(var)
        outputs: Sequence[Term] = traced.outputs
        if replacement:
            free = FreeVars()

            def replace(node: Term, kids: tuple[Term, ...]) -> Term:
                found = replacement.get(node)
                if found is not None:
                    return found
                rebuilt = rebuild(node, kids)
                if isinstance(rebuilt, MapAccum):  # a body that read one: it binds it
                    rebuilt = closed_loop(rebuilt, free, traced.supply)[0]
                return rebuilt

            outputs = transform(traced.outputs, replace)
        return Program(
            traced.name,
            (*traced.inputs, *fresh),
            tuple(outputs),
            traced.tuple_output,
            traced.supply,
        )

    @property
    def outer_terms(self) -> bool:
        """Whether the program reads values of an enclosing trace."""
        return any(isinstance(c, TermBase) for c in self.captured)


_FIELDS: dict[type, tuple[str, ...]] = {}


def _static_fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        _FIELDS[cls] = names
    return names


def _lifted(const: Const) -> bool:
    value = const.value
    if value.ndim == 0:
        return False
    return not (value.dtype.kind in "biu" and value.size <= BAKED_INT_SIZE)


def close_program(program: Program, *, lift_constants: bool = True) -> ClosedProgram:
    """``program`` with its captured arrays (``lift_constants``) and the variables of
    enclosing traces (free variables that are not inputs) made inputs, and its
    structural key; one walk over the DAG."""
    number: dict[Var, int] = {v: k for k, v in enumerate(program.inputs)}
    position: dict[TermBase, int] = {}
    lifted: list[Const] = []
    outer: list[Var] = []
    binders = {v for v in program.inputs}
    entries: list[Hashable] = []

    def var_number(var: Var) -> int:
        found = number.get(var)
        if found is None:
            found = number[var] = len(number)
        return found

    def static(value: Any) -> Hashable:
        if isinstance(value, Var):
            return ("v", var_number(value))
        if isinstance(value, TermBase):
            return position[value]
        if isinstance(value, tuple):
            return tuple(static(v) for v in value)
        return value  # type: ignore[no-any-return]

    order = postorder(program.outputs)
    for node in order:
        position[node] = len(entries)
        cls = type(node)
        if cls is Const:
            assert isinstance(node, Const)
            value = node.value
            if lift_constants and _lifted(node):
                lifted.append(node)
                entries.append(("lifted", value.shape, value.dtype.str))
            else:
                entries.append(("const", value.shape, value.dtype.str, value.tobytes()))
            continue
        if cls is Var:
            assert isinstance(node, Var)
            entries.append(("var", var_number(node), node.shape, node.dtype))
            continue
        entry = (cls.__name__, *(static(getattr(node, n)) for n in _static_fields(cls)))
        if cls is Op:  # the primitive's record: a primitive defined again is another program
            entry = (*entry, REGISTRY[node.op])  # type: ignore[union-attr]
        entries.append(entry)
        binders.update(bound_vars(node)[0])
    for node in order:
        if isinstance(node, Var) and node not in binders:
            outer.append(node)

    types = tuple((v.shape, v.dtype) for v in program.inputs)
    key = (
        types,
        tuple((c.shape, c.dtype) for c in lifted),
        tuple((v.shape, v.dtype) for v in outer),
        program.tuple_output,
        tuple(position[t] for t in program.outputs),
        tuple(entries),
    )
    captured = (*(c.value for c in lifted), *outer)
    return ClosedProgram(program, captured, key, (*lifted, *outer))


__all__ = ["BAKED_INT_SIZE", "ClosedProgram", "close_program"]

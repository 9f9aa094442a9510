"""Stage ``delta`` of the symbolic pipeline: the form of Eq. 6 (paper §7.1, App. D).

``let <primal bindings> in (primal, <symbolic Delta>)``, where the Delta refers to
primal values only through variables: :func:`extract` makes it from the forward pass
(:mod:`dualarr.ad.symbolic_forward`), :func:`check_extracted` checks that form.  The next
stage is the symbolic reverse pass, :mod:`dualarr.ad.symbolic_reverse`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..lang.config import config
from ..lang.errors import DualarrError, ShapeError
from ..lang.program import Program
from ..lang.terms import (
    Const,
    FreeVars,
    MapAccum,
    Term,
    Var,
    children,
    fresh_var,
    postorder,
    rebuild,
    view,
    walk,
)
from . import delta as dl
from .symbolic_forward import ForwardPass, format_symbolic_delta, is_atomic

__all__ = ["ExtractedDelta", "check_extracted", "extract", "unbound_top_level"]



@dataclass(frozen=True)
class ExtractedDelta:
    """``λ inputs. let <bindings> in (value, delta)`` (Eq. 6): ``value`` is a variable or
    a constant, and every primal value in ``delta`` is a variable, a constant or scalar
    index arithmetic over lambda variables and variables."""

    program: Program
    bindings: tuple[tuple[Var, Term], ...]
    value: Term
    delta: dl.Delta

    @property
    def inputs(self) -> tuple[Var, ...]:
        return self.program.inputs

    def __str__(self) -> str:
        head = view("print_let_program")(
            self.inputs, self.bindings, [self.value], every_binding=True
        )
        return f"{head}\ndelta:\n{format_symbolic_delta(self.delta)}"

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"

    def graph(self) -> Any:
        """The extracted Delta as a graphviz drawing (:mod:`dualarr.show.drawing`)."""
        return view("stage_graph")(self)





def _lambda_vars(delta: dl.Delta) -> set[Var]:
    found: set[Var] = set()
    for node in dl.delta_postorder([delta]):
        if isinstance(node, dl.Gather | dl.Scatter):
            found.update(node.fn.variables)
    return found


def _closed_parts(roots: Sequence[Term], local: FreeVars) -> Iterator[Term]:
    """The maximal subterms of ``roots`` that mention no variable but the program's
    top-level ones (``local`` ignores those; none of a lambda's): the primal values an
    index function computes."""
    for node in walk(roots, lambda n: bool(local(n))):
        if not local(node):
            yield node


def extract(forward: ForwardPass, hint: str = "v") -> ExtractedDelta:
    """Let-bind the primal values the Delta mentions (and every primal node used twice)
    so that the Delta refers to them through variables only (§7.1, Eq. 6)."""
    program = forward.program
    inputs = set(program.inputs)
    local = FreeVars(ignore=inputs)  # lambda variables only: sets stay small
    # what must become a variable: the value, every factor, every closed part of an
    # index function; plus primal nodes used more than once (global sharing as lets)
    wanted: list[Term] = [forward.value]
    mentioned: list[Term] = []  # every primal value of the Delta, rebuilt over variables
    for d in dl.delta_postorder([forward.delta]):
        values = dl.primal_values(d)
        mentioned.extend(values)
        if isinstance(d, dl.Gather | dl.Scatter | dl.Index):
            wanted.extend(_closed_parts(values, local))
        else:
            wanted.extend(values)
    marked = {t for t in wanted if not is_atomic(t)}
    uses: dict[Term, int] = {}
    order = postorder([*wanted, *mentioned])
    for node in order:
        for kid in children(node):
            uses[kid] = uses.get(kid, 0) + 1
    for node in order:
        if uses.get(node, 0) > 1 and not is_atomic(node) and not local(node):
            marked.add(node)
    marked.difference_update(n for n in order if isinstance(n, MapAccum))  # its results are
    new: dict[Term, Term] = {}
    bindings: list[tuple[Var, Term]] = []
    for node in order:
        kids = children(node)
        if isinstance(node, MapAccum):  # its body stays closed: bindings are outside it
            body = len(node.body)
            rebuilt = rebuild(node, (*(new[k] for k in kids[: len(kids) - body]), *node.body))
        else:
            rebuilt = rebuild(node, tuple(new[k] for k in kids))
        if node in marked and not local(node):
            var = fresh_var(program.supply, f"{hint}{len(bindings) + 1}", node.shape, node.dtype)
            bindings.append((var, rebuilt))
            new[node] = var
        else:
            new[node] = rebuilt

    def replace(value: Any) -> Any:
        return new.get(value, value)  # a term (the Delta is symbolic)

    (delta,) = dl.map_primal_values([forward.delta], replace)
    result = ExtractedDelta(program, tuple(bindings), replace(forward.value), delta)
    if config.check_stages:
        check_extracted(result)
    return result


def unbound_top_level(term: Term, scope: set[Var], top: set[Var], seen: set[Term]) -> set[Var]:
    """The top-level variables ``term`` mentions outside ``scope``, visiting only nodes
    not ``seen`` before (a node checked at an earlier binding saw a smaller scope): one
    walk per program for a sequence of bindings, however many variables each mentions."""
    unbound: set[Var] = set()
    stack = [term]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if isinstance(node, Var):
            if node in top and node not in scope:
                unbound.add(node)
            continue
        stack.extend(children(node))
    return unbound


def check_extracted(extracted: ExtractedDelta) -> None:
    """Raise :class:`DualarrError` unless ``extracted`` has the form of Eq. 6: each binding
    mentions only inputs and earlier bindings, the value is atomic, and the Delta's primal
    values are variables or constants, or scalar index arithmetic inside a lambda."""
    top = {*extracted.inputs, *(v for v, _ in extracted.bindings)}
    local = FreeVars(ignore=top)  # lambda variables only: sets stay small
    scope = set(extracted.inputs)
    seen: set[Term] = set()
    for var, term in extracted.bindings:
        free = set(local(term)) | unbound_top_level(term, scope, top, seen)
        if free:
            names = ", ".join(sorted(v.hint for v in free))
            raise DualarrError(f"binding {var.hint} mentions unbound {names}", op="Eq. 6")
        scope.add(var)
    if not is_atomic(extracted.value):
        raise DualarrError("the primal result is not a variable", op="Eq. 6")
    lambda_vars = _lambda_vars(extracted.delta)
    for node in dl.delta_postorder([extracted.delta]):
        for value in dl.primal_values(node):
            if not isinstance(value, Term):
                raise DualarrError("a primal value of the Delta is not a term", op="Eq. 6")
            if value.shape != () and not isinstance(value, Var | Const):
                raise ShapeError(
                    f"the Delta mentions a primal computation: {str(value)[:80]}",
                    op="Eq. 6",
                    shapes=[value.shape],
                )
            for part in _closed_parts([value], local):
                if not is_atomic(part) and not isinstance(part, Const):
                    raise DualarrError(
                        f"the Delta computes a primal value: {str(part)[:80]}",
                        op="Eq. 6",
                    )
            free = set(local(value) - lambda_vars)
            if free:
                names = ", ".join(sorted(v.hint for v in free))
                raise DualarrError(f"the Delta mentions unbound {names}", op="Eq. 6")


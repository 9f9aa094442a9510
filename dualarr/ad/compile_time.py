"""Compile-time differentiation: the symbolic forward and reverse passes (paper §7, App. D).

Three stages, one data type each:

* ``forward`` (:class:`ForwardPass`): the derivative rules of :mod:`dualarr.ad.dual` run with
  *terms* as primal values (:class:`~dualarr.interp.term_algebra.TermAlgebra`).  The result is the
  primal value as a term and a symbolic Delta whose factors, indices and index functions
  are terms.  Every ``let`` of the primal has become global sharing: a primal node used
  twice is one node of the DAG, and every Delta node is wrapped in ``Share`` (§7.1).
* ``delta`` (:class:`ExtractedDelta`): the form of Eq. 6,
  ``let <primal bindings> in (primal, <symbolic Delta>)``, where the Delta refers to
  primal values only through variables.  :func:`check_extracted` checks that form.
* ``shared`` (:class:`SharedGradient`): the reverse pass of :mod:`dualarr.ad.reverse`, run
  on the extracted Delta in the term algebra with a cotangent variable ``dt`` (Fig. 19):
  the gradient as terms, every duplicated cotangent wrapped in ``share_k`` with a fresh,
  increasing ``k``.

The next stage, share → let and the wrapper (Figs. 20–21), is :mod:`dualarr.ad.share_to_let`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..interp.algebra import IndexFn
from ..interp.evaluate import Interpreter
from ..interp.term_algebra import TermAlgebra
from ..lang.config import config
from ..lang.errors import DualarrError, ShapeError
from ..lang.program import Program
from ..lang.terms import (
    Const,
    FreeVars,
    IdSupply,
    Term,
    Var,
    children,
    fresh_var,
    postorder,
    rebuild,
    type_name,
    view,
    walk,
)
from . import delta as dl
from .dual import Dual, DualAlgebra
from .reverse import reverse

__all__ = [
    "ExtractedDelta",
    "ForwardPass",
    "SharedGradient",
    "check_extracted",
    "extract",
    "format_symbolic_delta",
    "forward_pass",
    "symbolic_reverse",
]


# --------------------------------------------------------------------------------------
# Stage "forward": D with AST primals
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ForwardPass:
    """``D[program]`` with terms as primals: the value term and its symbolic Delta."""

    program: Program
    value: Term
    delta: dl.Delta

    def __str__(self) -> str:
        return "\n".join(
            [
                "primal:",
                view("print_program")(self.program.inputs, [self.value]),
                "delta:",
                format_symbolic_delta(self.delta),
            ]
        )

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"

    def graph(self) -> Any:
        """The symbolic Delta as a graphviz drawing (:mod:`dualarr.show.drawing`)."""
        return view("stage_graph")(self)


def forward_pass(program: Program) -> ForwardPass:
    """Run the dual-arrays rules (Figs. 12–15) on a vectorised one-output program with
    symbolic primals (App. D): float input ``k`` gets the Delta ``Input k``."""
    if program.tuple_output or len(program.outputs) != 1:
        raise DualarrError("the compiled gradient needs a function with one output", op="pipeline")
    (out_term,) = program.outputs
    if not out_term.dtype.is_float:
        raise DualarrError(
            f"cannot differentiate an output of type {type_name(out_term.shape, out_term.dtype)}",
            op="pipeline",
        )
    terms = TermAlgebra(program.supply)
    alg = DualAlgebra(terms, IdSupply())
    env = {
        v: Dual(v, dl.Input(k, v.shape, v.dtype)) if v.dtype.is_float else v
        for k, v in enumerate(program.inputs)
    }
    (out,) = Interpreter(alg).run([out_term], env)
    value = out.primal if isinstance(out, Dual) else out
    delta = out.delta if isinstance(out, Dual) else dl.Zero(value.shape, value.dtype)
    return ForwardPass(program, value, delta)


# --------------------------------------------------------------------------------------
# Stage "delta": the form of Eq. 6
# --------------------------------------------------------------------------------------


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


def _atomic(term: Term) -> bool:
    return isinstance(term, Var) or (isinstance(term, Const) and term.shape == ())


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
    marked = {t for t in wanted if not _atomic(t)}
    uses: dict[Term, int] = {}
    order = postorder([*wanted, *mentioned])
    for node in order:
        for kid in children(node):
            uses[kid] = uses.get(kid, 0) + 1
    for node in order:
        if uses.get(node, 0) > 1 and not _atomic(node) and not local(node):
            marked.add(node)
    new: dict[Term, Term] = {}
    bindings: list[tuple[Var, Term]] = []
    for node in order:
        rebuilt = rebuild(node, tuple(new[k] for k in children(node)))
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
    if not _atomic(extracted.value):
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
                if not _atomic(part) and not isinstance(part, Const):
                    raise DualarrError(
                        f"the Delta computes a primal value: {str(part)[:80]}",
                        op="Eq. 6",
                    )
            free = set(local(value) - lambda_vars)
            if free:
                names = ", ".join(sorted(v.hint for v in free))
                raise DualarrError(f"the Delta mentions unbound {names}", op="Eq. 6")


# --------------------------------------------------------------------------------------
# Stage "shared": the symbolic reverse pass
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SharedGradient:
    """The gradient terms of the symbolic reverse pass (Fig. 19), with ``share`` nodes."""

    extracted: ExtractedDelta
    cotangent: Var  # dt, of the output's shape
    gradients: tuple[Term, ...]  # one per float input, in input order
    positions: tuple[int, ...]  # the differentiated inputs

    @property
    def inputs(self) -> tuple[Var, ...]:
        return (*self.extracted.inputs, self.cotangent)

    def __str__(self) -> str:
        text = view("print_let_program")(
            self.inputs, self.extracted.bindings, [self.extracted.value, *self.gradients]
        )
        return str(text)

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"

    def graph(self) -> Any:
        """The gradient terms, with their ``share`` nodes, as a graphviz drawing."""
        return view("stage_graph")(self)


def symbolic_reverse(
    extracted: ExtractedDelta, positions: Sequence[int] | None = None
) -> SharedGradient:
    """``eval dt delta`` with terms as cotangents (Fig. 19, App. D.2): the reverse pass of
    :mod:`dualarr.ad.reverse`, written once, run in the term algebra with explicit shares.
    ``positions`` picks the inputs to differentiate (default: every float input)."""
    program = extracted.program
    terms = TermAlgebra(program.supply, share_ids=IdSupply())
    value = extracted.value
    dt = fresh_var(program.supply, "dt", value.shape, value.dtype)
    grads = reverse(terms, extracted.delta, dt)
    floats = tuple(k for k, v in enumerate(program.inputs) if v.dtype.is_float)
    positions = floats if positions is None else tuple(positions)
    if not set(positions) <= set(floats):
        raise DualarrError(f"inputs {list(positions)} are not all float inputs", op="pipeline")
    gradients = tuple(
        grads.get(k, terms.zeros(program.inputs[k].shape, program.inputs[k].dtype))
        for k in positions
    )
    return SharedGradient(extracted, dt, gradients, positions)


# --------------------------------------------------------------------------------------
# Printing a symbolic Delta
# --------------------------------------------------------------------------------------


def format_symbolic_delta(delta: dl.Delta) -> str:
    """The Delta DAG, one line per Share, with primal values and index functions printed
    as terms (:func:`dualarr.ad.delta.format_delta` with term-aware values)."""
    return dl.format_delta(delta, describe=_describe_term, describe_fn=_describe_fn)


def _describe_fn(fn: IndexFn[Any]) -> str:
    params = ", ".join(str(v) for v in fn.variables)
    body = ", ".join(str(c) for c in fn.components)
    return f"(\\[{params}]. [{body}])"


def _describe_term(value: Any) -> str:
    if isinstance(value, Term):
        text = str(value)
        if "\n" in text or len(text) > 60:
            return f"<{type_name(value.shape, value.dtype)}>"
        return text if _atomic(value) else f"({text})"
    return repr(value)

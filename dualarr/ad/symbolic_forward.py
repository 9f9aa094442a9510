"""Stage ``forward`` of the symbolic pipeline: D with terms as primals (paper §7.1, App. D).

The derivative rules of :mod:`dualarr.ad.dual` run with *terms* as primal values
(:class:`~dualarr.interp.term_algebra.TermAlgebra`).  The result is the primal value as
a term and a symbolic Delta whose factors, indices and index functions are terms.  Every
``let`` of the primal has become global sharing: a primal node used twice is one node of
the DAG, and every Delta node is wrapped in ``Share`` (§7.1).  The next stage is Eq. 6's
extraction, :mod:`dualarr.ad.extraction`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..interp.algebra import IndexFn
from ..interp.evaluate import Interpreter
from ..interp.term_algebra import TermAlgebra
from ..lang.errors import DualarrError
from ..lang.program import Program
from ..lang.terms import (
    Const,
    IdSupply,
    Term,
    Var,
    type_name,
    view,
)
from . import delta as dl
from .dual import Dual, DualAlgebra

__all__ = ["ForwardPass", "format_symbolic_delta", "forward_pass", "is_atomic"]


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
        return text if is_atomic(value) else f"({text})"
    return repr(value)


def is_atomic(term: Term) -> bool:
    """A variable or a scalar constant: printed bare, never let-bound by Eq. 6."""
    return isinstance(term, Var) or (isinstance(term, Const) and term.shape == ())

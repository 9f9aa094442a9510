"""Stage ``shared`` of the symbolic pipeline: the symbolic reverse pass (paper Fig. 19,
App. D.2).

The reverse pass of :mod:`dualarr.ad.reverse`, run on the extracted Delta
(:mod:`dualarr.ad.extraction`) in the term algebra with a cotangent variable ``dt``: the
gradient as terms, every duplicated cotangent wrapped in ``share_k`` with a fresh,
increasing ``k``.  The next stage, share → let and the wrapper (Figs. 20–21), is
:mod:`dualarr.ad.share_to_let`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..interp.term_algebra import TermAlgebra
from ..lang.errors import DualarrError
from ..lang.terms import (
    IdSupply,
    Term,
    Var,
    fresh_var,
    view,
)
from .extraction import ExtractedDelta
from .reverse import reverse

__all__ = ["SharedGradient", "symbolic_reverse"]


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


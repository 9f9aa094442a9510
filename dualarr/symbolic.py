"""Compile-time differentiation, first steps (paper §7, App. D).

The derivative rules of :mod:`dualarr.dual` and the reverse pass of
:mod:`dualarr.reverse` run with *terms* as primal values
(:class:`~dualarr.staging.TermAlgebra`): the forward pass yields a symbolic Delta whose
factors and indices are terms, and the reverse pass, fed a cotangent variable ``dt``,
yields the gradient as a term.  The result is one closed program
``λ(inputs, dt). (value, gradient)`` (the wrapper of Fig. 21), simplified, that the
reference evaluator runs without any Delta interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import delta as dl
from .core import IdSupply, Term, Var, fresh_var
from .dual import Dual, DualAlgebra
from .evaluate import Interpreter
from .program import Program
from .reverse import reverse
from .simplify import simplify
from .staging import TermAlgebra


@dataclass(frozen=True)
class SymbolicGradient:
    """The symbolic forward pass (value term, Delta) and the gradient program."""

    value: Term
    delta: dl.Delta
    gradient: Program  # λ(inputs, dt). (value, d/d(float input) for each float input)
    positions: tuple[int, ...]  # the float inputs, in the order of the gradients


def symbolic_gradient(program: Program) -> SymbolicGradient:
    """Differentiate a vectorised (build1-free) one-output program symbolically."""
    terms = TermAlgebra(program.supply)
    alg = DualAlgebra(terms, IdSupply())
    env = {
        v: Dual(v, dl.Input(k, v.shape, v.dtype)) if v.dtype.is_float else v
        for k, v in enumerate(program.inputs)
    }
    (out,) = Interpreter(alg).run([program.term], env)
    value = out.primal if isinstance(out, Dual) else out
    delta = out.delta if isinstance(out, Dual) else dl.Zero(value.shape, value.dtype)
    dt = fresh_var(program.supply, "dt", value.shape, value.dtype)
    grads = reverse(terms, delta, dt)
    positions = tuple(k for k, v in enumerate(program.inputs) if v.dtype.is_float)
    results = [value] + [
        grads.get(k, terms.zeros(program.inputs[k].shape, program.inputs[k].dtype))
        for k in positions
    ]
    outputs = tuple(simplify(results, program.supply))
    inputs: tuple[Var, ...] = (*program.inputs, dt)
    gradient = Program(f"grad_{program.name}", inputs, outputs, True, program.supply)
    return SymbolicGradient(value, delta, gradient, positions)

"""Exact gradients in SymPy, to cross-check every stage (``da.sympy_gradient``).

:func:`sympy_gradient` traces a program, interprets it in the SymPy algebra
(:mod:`dualarr.interp.sympy_algebra`) with one symbol per element of every float input,
and gives the output as an expression, its exact gradient with respect to each input and
a lambdified NumPy function computing both.  SymPy is an optional dependency
(``dualarr[symbolic]``); it is imported on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from .interp.sympy_algebra import (
    SYMPY_INPUT_LIMIT,
    Array,
    Expr,
    as_symbolic,
    evaluate_symbolic,
    exponent_pow_function,
    stop_gradient_function,
    subexpressions,
    sympy_module,
)
from .lang.errors import DualarrError, UnsupportedError
from .lang.program import ShapeSpec, scalar_float_output, trace
from .lang.terms import Shape, Var, type_name
from .show.printer import input_names

__all__ = ["SympyGradient", "sympy_gradient"]


@dataclass(frozen=True, eq=False)
class SympyGradient:
    """A program's output and its exact gradient in SymPy.

    ``symbols[k]`` is an object array (the input's shape) of the symbols standing for
    float input ``k``'s elements, ``None`` for an int or bool input, whose values
    (``fixed[k]``) are built into the expressions.  ``gradients`` has one object array
    of derivatives per float input, in input order (``positions``).  Calling the object
    evaluates value and gradients with the lambdified NumPy function.
    """

    name: str
    names: tuple[str, ...]
    symbols: tuple[Array | None, ...]
    fixed: tuple[Array | None, ...]
    output: Array
    gradients: tuple[Array, ...]
    function: Callable[..., Any] = field(repr=False)

    @property
    def value(self) -> Expr:
        """The output (rank 0) as a SymPy expression."""
        return self.output[()]

    @property
    def positions(self) -> tuple[int, ...]:
        """The float inputs, those with symbols and a gradient."""
        return tuple(k for k, s in enumerate(self.symbols) if s is not None)

    def gradient(self, argument: int | str) -> Array:
        """The gradient with respect to one float input (by position or name)."""
        position = self.names.index(argument) if isinstance(argument, str) else argument
        if position not in self.positions:
            raise DualarrError(
                f"input {position} ({self.names[position]}) is not a float input",
                op="sympy_gradient",
            )
        return self.gradients[self.positions.index(position)]

    def __call__(self, *arrays: Any) -> tuple[float, tuple[Array, ...]]:
        """``(value, grads)`` at ``arrays`` (float64), one gradient per float input."""
        if len(arrays) != len(self.symbols):
            raise DualarrError(
                f"{self.name} takes {len(self.symbols)} arguments, got {len(arrays)}",
                op="sympy_gradient",
            )
        flat: list[np.float64] = []
        for k, (array, symbols, fixed) in enumerate(
            zip(arrays, self.symbols, self.fixed, strict=True)
        ):
            value = np.asarray(array)
            if symbols is not None:
                if value.shape != symbols.shape:
                    raise DualarrError(
                        f"input {self.names[k]} has shape {list(symbols.shape)}, got "
                        f"{list(value.shape)}",
                        op="sympy_gradient",
                        shapes=[symbols.shape, value.shape],
                    )
                flat.extend(np.float64(x) for x in value.reshape(-1))  # IEEE: 0.0**-1 is inf
            elif fixed is not None and not np.array_equal(value, fixed):
                raise DualarrError(
                    f"the symbolic gradient was built for {self.names[k]} = "
                    f"{fixed.tolist()}; build another one for other int or bool values",
                    op="sympy_gradient",
                )
        with np.errstate(all="ignore"):
            results = self.function(*flat)
        numbers = np.array([float(np.real(r)) for r in results], dtype=np.float64)
        grads, start = [], 1
        for symbols in self.symbols:
            if symbols is None:
                continue
            grads.append(numbers[start : start + symbols.size].reshape(symbols.shape))
            start += symbols.size
        return float(numbers[0]), tuple(grads)

    def __str__(self) -> str:
        lines = [f"{self.name} = {self.value}"]
        for k, grad in zip(self.positions, self.gradients, strict=True):
            shown = grad[()] if grad.ndim == 0 else grad.tolist()
            lines.append(f"d/d{self.names[k]} = {shown}")
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"


def _symbol_names(names: Sequence[str], shapes: Sequence[Shape]) -> list[list[str]]:
    """``x`` for a scalar input ``x``, ``x_1_2`` for element ``[1, 2]`` of an array
    input; positional names (``a0_1_2``) where two of those would coincide."""

    def spelled(prefixes: Sequence[str]) -> list[list[str]]:
        return [
            [prefix] if shape == () else [
                prefix + "".join(f"_{i}" for i in index) for index in np.ndindex(*shape)
            ]
            for prefix, shape in zip(prefixes, shapes, strict=True)
        ]

    chosen = spelled(names)
    every = [n for group in chosen for n in group]
    if len(set(every)) != len(every):
        chosen = spelled([f"a{k}" for k in range(len(names))])
    return chosen


def _rewrite(expressions: Sequence[Expr], rule: Callable[[Expr], Expr | None]) -> list[Expr]:
    """Rebuild ``expressions`` bottom-up, replacing each subexpression ``e`` (with its
    arguments rewritten) by ``rule(e)`` unless that is ``None``; each distinct
    subexpression is visited once (a DAG-aware ``replace``)."""
    done: dict[Expr, Expr] = {}
    stack: list[tuple[Expr, bool]] = [(e, False) for e in expressions]
    while stack:
        node, expanded = stack.pop()
        if node in done:
            continue
        if node.args and not expanded:
            stack.append((node, True))
            stack.extend((arg, False) for arg in node.args if arg not in done)
            continue
        args = tuple(done[arg] for arg in node.args)
        same = all(new is old for new, old in zip(args, node.args, strict=True))
        rebuilt = node if same else node.func(*args)
        replaced = rule(rebuilt)
        done[node] = rebuilt if replaced is None else replaced
    return [done[e] for e in expressions]


def _derivative(expression: Expr, symbol: Expr) -> Expr:
    """``∂expression/∂symbol`` almost everywhere, for an ``expression`` whose ``floor``s
    are :func:`_flat_floor` instances (derivative 0: ``floor`` is not differentiated, Fig. 14)
    and whose ``pow``s with a symbolic exponent are :func:`exponent_pow_function` ones (dualarr's
    rule); a ``DiracDelta`` (from a ``sign`` that SymPy's simplifications made) is 0 too."""
    sp = sympy_module()
    derivative = sp.diff(expression, symbol)
    kinds = {type(node) for node in subexpressions([derivative])}
    if any(issubclass(kind, sp.Derivative | sp.Subs) for kind in kinds):
        raise UnsupportedError(
            f"SymPy left a derivative unevaluated in d/d{symbol}: {derivative}",
            op="sympy_gradient",
        )
    if any(issubclass(kind, sp.DiracDelta) for kind in kinds):
        (derivative,) = _rewrite(
            [derivative],
            lambda e: sp.Integer(0) if isinstance(e, sp.DiracDelta) else None,
        )
    return derivative


@cache
def _flat_floor() -> Any:
    """``floor`` with derivative 0 (it is piecewise constant): used while
    differentiating only."""
    sp = sympy_module()

    def fdiff(self: Expr, argindex: int = 1) -> Expr:
        return sp.Integer(0)

    return type("FlatFloor", (sp.floor,), {"fdiff": fdiff})


def _for_numpy(expressions: Sequence[Expr]) -> list[Expr]:
    """Expressions ready to lambdify: plain ``floor`` and ``**`` again, and ``ITE(c, a, b)``
    (SymPy's rewriting of a relation on a ``Piecewise``) as ``c & a | ~c & b``, since
    SymPy's NumPy printer turns ``ITE`` into a float ``select``."""
    sp = sympy_module()
    flat = _flat_floor()
    stop = stop_gradient_function()
    power = exponent_pow_function()

    def rule(e: Expr) -> Expr | None:
        if isinstance(e, flat):
            return sp.floor(*e.args)
        if isinstance(e, power):
            return sp.Pow(*e.args)
        if isinstance(e, stop):
            return e.args[0]
        if isinstance(e, sp.ITE):
            c, a, b = e.args
            return sp.Or(sp.And(c, a), sp.And(sp.Not(c), b))
        return None

    return _rewrite(expressions, rule)


def _scalar_count(shapes: Iterator[Shape]) -> int:
    return sum(math.prod(shape) for shape in shapes)


def sympy_gradient(
    f: Callable[..., Any], *args: Any, max_scalars: int = SYMPY_INPUT_LIMIT
) -> SympyGradient:
    """``f``'s output and exact gradient in SymPy, for inputs of ``args``' types.

    ``args`` are arrays or :class:`~dualarr.lang.program.ShapeSpec`\\ s; every element of a
    float input becomes a real symbol, while int and bool inputs must be arrays (their
    values are built in: indices stay concrete).  ``f`` must return one rank-0 float.
    Raises :class:`~dualarr.lang.errors.UnsupportedError` when SymPy is missing, the program
    has no closed form (``argmax`` of symbolic values, an index computed from float
    data) or the float inputs have more than ``max_scalars`` elements.
    """
    sp = sympy_module()
    program = trace(f, *args)
    scalar_float_output(program, "sympy_gradient")
    names = input_names(program.inputs)
    floats = [k for k, v in enumerate(program.inputs) if v.dtype.is_float]
    count = _scalar_count(program.inputs[k].shape for k in floats)
    if count > max_scalars:
        raise UnsupportedError(
            f"{program.name} has {count} float input scalars, more than the SymPy limit "
            f"of {max_scalars} (one symbol and one derivative each)",
            op="sympy_gradient",
        )
    spelled = _symbol_names(
        [names[k] for k in floats], [program.inputs[k].shape for k in floats]
    )
    symbols: list[Array | None] = [None] * len(program.inputs)
    fixed: list[Array | None] = [None] * len(program.inputs)
    env: dict[Var, Array] = {}
    for k, var in enumerate(program.inputs):
        if var.dtype.is_float:
            group = spelled[floats.index(k)]
            table = np.empty(var.shape, dtype=object)
            for index, name in zip(np.ndindex(*var.shape), group, strict=True):
                table[index] = sp.Symbol(name, real=True)
            symbols[k] = table
            env[var] = table
            continue
        if isinstance(args[k], ShapeSpec):
            raise DualarrError(
                f"input {names[k]} : {type_name(var.shape, var.dtype)} is a ShapeSpec; "
                "pass the array of an int or bool input (SymPy needs its values)",
                op="sympy_gradient",
            )
        known = np.asarray(args[k]).astype(var.dtype.numpy())
        fixed[k] = known
        env[var] = known
    (output,) = evaluate_symbolic(program.outputs, env)
    output = as_symbolic(output)
    value: Expr = output[()]
    flat = _flat_floor()
    (differentiable,) = _rewrite(
        [value], lambda e: flat(*e.args) if type(e) is sp.floor else None
    )
    present = {node for node in subexpressions([value]) if isinstance(node, sp.Symbol)}
    gradients: list[Array] = []
    for k in floats:
        own = symbols[k]
        assert own is not None
        grad = np.empty(own.shape, dtype=object)
        for index, symbol in np.ndenumerate(own):
            if symbol in present:
                (grad[index],) = _for_numpy([_derivative(differentiable, symbol)])
            else:
                grad[index] = sp.Integer(0)
        gradients.append(grad)
    flat_symbols = [s for table in symbols if table is not None for s in table.reshape(-1)]
    results = _for_numpy([value, *(g for grad in gradients for g in grad.reshape(-1))])
    replacements, reduced = sp.cse(results, order="none")
    # lambdify walks its expressions as trees: give it the reduced ones, and the
    # common subexpressions through its ``cse`` hook
    function = sp.lambdify(
        flat_symbols, reduced, modules="numpy", cse=lambda _: (replacements, reduced)
    )
    return SympyGradient(
        program.name,
        tuple(names),
        tuple(symbols),
        tuple(fixed),
        output,
        tuple(gradients),
        function,
    )

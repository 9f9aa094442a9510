"""Printing terms in the paper's notation, and a structured (SSA-style) dump.

``build1 n (\\i. x[i] * x[n - 1 - i])``, ``gather [2,3] x (\\[i, j]. [i + j, i])``,
``let t1 = … in …``.  Sharing in the DAG is made visible: a node used more than once is
printed once as a ``let`` placed in the innermost scope that binds one of its free
variables (or at the top), and referred to by name elsewhere.  Names are stable: they
come from the user's parameter names (inputs, ``lambda i:``) made unique in order of
appearance, and ``t1, t2, …`` for shared subterms.  Array constants too large to print
in full are data, not text: each is named ``k1, k2, …`` (``c`` names the paper's
cotangents) and declared with its type above the program (``k1 : float64[1000,1000]``);
``constant_table`` gives their values by those names.  Printing is iterative and linear
in the size of the DAG (up to the length of the text).

A loop (horde-ad's mapAccum; not in the paper) prints its body once, as a lambda over its
carries, slices and loop invariants, whatever its length:
``let t2 = mapAccumL 5 (\\(c; xi; w). (c'; y)) (init) (xs) (consts) in``, its results read
as ``t2.0``, ``t2.1``.

A Delta (paper Fig. 16) prints one ``Share`` a line (:func:`print_delta`), with its index
functions in full: ``s1 = Gather [5] Input 0 (\\[i]. [4 - i])``, also where a concrete run
tabulated them (:func:`index_fn_text` reads the table back as a function).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np

from ..ad import delta as dl
from ..interp.algebra import IndexFn
from ..lang.errors import format_shape
from ..lang.names import Namer
from ..lang.rules import RuleTable
from ..lang.scopes import Scopes, collect_binders, nesting
from ..lang.terms import (
    OPS,
    ArgMax,
    ArgMin,
    ArgSort,
    Build1,
    Cond,
    Const,
    Contract,
    FreeVars,
    FromIntegral,
    FromList,
    Gather,
    Index,
    Iota,
    Let,
    LoopOutput,
    MapAccum,
    Op,
    Replicate,
    Reshape,
    Scatter,
    Share,
    Structural,
    SumOuter,
    Term,
    Transpose,
    Var,
    bound_vars,
    children,
    install_views,
    parse_contraction,
    postorder,
    type_name,
)
from ..lang.terms import Floor as FloorT

ATOM = 12
APP = 11
UNARY = 8
LOWEST = 0

_SMALL_CONST = 12  # constants with at most this many elements print in full


def _format_scalar(value: object) -> str:
    if isinstance(value, np.bool_ | bool):
        return "True" if value else "False"
    if isinstance(value, np.integer | int):
        return str(int(value))
    return repr(float(value))  # type: ignore[arg-type]


def format_const(value: np.ndarray) -> tuple[str, int]:
    """A constant's text and precedence (negative scalars bind like unary minus)."""
    if value.ndim == 0:
        text = _format_scalar(value[()])
        return text, (UNARY if text.startswith("-") else ATOM)
    if value.size <= _SMALL_CONST:

        def nested(a: np.ndarray) -> str:
            if a.ndim == 0:
                return _format_scalar(a[()])
            return "[" + ", ".join(nested(row) for row in a) + "]"

        if value.size > 0:
            return nested(value), ATOM
    return f"<constant {constant_type(value)}>", ATOM


def constant_type(value: np.ndarray) -> str:
    """``float64[1000,1000]``: a constant's element type and shape."""
    dtype = str(value.dtype) if value.dtype != np.bool_ else "bool"
    return f"{dtype}{format_shape(value.shape)}"


def is_named_constant(node: Term) -> bool:
    """An array constant printed by name (``k1``) rather than in full."""
    return isinstance(node, Const) and node.value.ndim > 0 and (
        node.value.size > _SMALL_CONST or node.value.size == 0
    )


def _trivial(node: Term) -> bool:
    """Nodes never worth a ``let`` of their own: variables, scalar and named constants,
    ``iota`` and replicated variables or scalar constants (``replicate 10 dt``)."""
    while isinstance(node, Replicate):
        node = node.array
    return (
        isinstance(node, Var | Iota)
        or (isinstance(node, Const) and node.value.ndim == 0)
        or is_named_constant(node)
    )


def term_type(node: Term) -> str:
    """``float64[3]``, or a loop's tuple of result types ``(float64[3], float64[5])``
    (a :class:`MapAccum` has several results and no one ``shape``)."""
    if isinstance(node, MapAccum):
        types = [type_name(s, d) for s, d in zip(node.shapes, node.dtypes, strict=True)]
        return "(" + ", ".join(types) + ")"
    return type_name(node.shape, node.dtype)


def input_names(inputs: Sequence[Var]) -> list[str]:
    """The printed names of a program's inputs (their hints, made unique)."""
    namer = Namer()
    return [namer.fresh(v.hint) for v in inputs]


def print_term(term: Term) -> str:
    """The term in the paper's notation."""
    printer = Printer([term])
    return printer.declared(printer.render())


def print_program(
    inputs: Sequence[Var], outputs: Sequence[Term], *, tuple_output: bool = False
) -> str:
    """``\\x y. body``: a closed program over its input variables."""
    printer = Printer(outputs, inputs=inputs)
    body = printer.render(tuple_output=tuple_output)
    params = " ".join(printer.names[v.id] for v in inputs)
    if "\n" in body:
        return printer.declared(f"\\{params}.\n{body}" if params else body)
    return printer.declared(f"\\{params}. {body}" if params else body)


def constant_table(
    inputs: Sequence[Var],
    roots: Sequence[Term],
    bindings: Sequence[tuple[Var, Term]] = (),
) -> dict[str, np.ndarray]:
    """The named constants of a program (or let-program), by the names it prints with."""
    printer = Printer([*(t for _, t in bindings), *roots], inputs=[*inputs, *dict(bindings)])
    return dict(printer.constants)


def print_let_program(
    inputs: Sequence[Var],
    bindings: Sequence[tuple[Var, Term]],
    outputs: Sequence[Term],
    *,
    every_binding: bool = False,
) -> str:
    """``\\x dt. let v1 = e1 in … (o1, o2)``: a program with top-level bindings, one a
    line, in an order where every name is defined before its use (Fig. 21).  Bindings
    the outputs do not reach are left out, unless ``every_binding`` (Eq. 6, where the
    Delta uses them)."""
    bound = dict(bindings)
    roots = [*(t for _, t in bindings), *outputs]
    printer = Printer(roots, inputs=[*inputs, *bound])
    printer.text = {}
    for node in printer.order:
        printer.text[id(node)] = printer._render_node(node)
    top = {id(n) for n in printer.scope_lets.get(None, [])}
    lines: list[str] = []
    done: set[int] = set()

    def emit(node: Term) -> None:  # post-order through shared nodes and bound variables
        stack: list[tuple[Term, bool]] = [(node, False)]
        while stack:
            current, expanded = stack.pop()
            if id(current) in done:
                continue
            if expanded:
                done.add(id(current))
                if isinstance(current, Var) and current in bound:
                    term = bound[current]
                    shown = printer.text[id(term)][0]
                    text = printer._ref(term, LOWEST) if id(term) in top else shown
                    lines.append(f"let {printer.names[current.id]} = {text} in")
                elif id(current) in top:
                    shown = printer.text[id(current)][0]
                    lines.append(f"let {printer.names[id(current)]} = {shown} in")
                continue
            stack.append((current, True))
            kids = (
                (bound[current],)
                if isinstance(current, Var) and current in bound
                else children(current)
            )
            stack.extend((k, False) for k in reversed(kids) if id(k) not in done)

    for root in [*(v for v, _ in bindings if every_binding), *outputs]:
        emit(root)
    params = " ".join(printer.names[v.id] for v in inputs)
    body = ", ".join(printer._ref(o, LOWEST) for o in outputs)
    body = f"({body})" if len(outputs) != 1 else body
    return printer.declared("\\" + params + ".\n" + "\n".join([*lines, body]))


class Printer:
    """Renders a DAG: one pass to find shared nodes and scopes, one to render."""

    def __init__(self, roots: Sequence[Term], *, inputs: Sequence[Var] = ()) -> None:
        self.roots = list(roots)
        self.order = postorder(self.roots)
        self.names: dict[int, str] = {}
        namer = Namer()
        for var in inputs:
            self.names[var.id] = namer.fresh(var.hint)
        # an open term (a bot step's subterm): its free variables keep their plain names,
        # as in the whole program, and the binders inside it are the ones renamed
        free = FreeVars()
        for var in sorted({v for r in self.roots for v in free(r)}, key=lambda v: v.id):
            if var.id not in self.names:
                self.names[var.id] = namer.fresh(var.hint)
        self.constants: dict[str, np.ndarray] = {}
        for node in self.order:
            if is_named_constant(node):
                assert isinstance(node, Const)
                name = self.names[id(node)] = namer.fresh("k", numbered=True)
                self.constants[name] = node.value
        self._analyse()
        self._name(namer)

    def declared(self, text: str) -> str:
        """``text`` under one ``k1 : float64[1000,1000]`` line per named constant."""
        lines = [f"{name} : {constant_type(value)}" for name, value in self.constants.items()]
        return "\n".join([*lines, text])

    # -- analysis ------------------------------------------------------------------

    def _analyse(self) -> None:
        uses: dict[int, int] = {}
        for root in self.roots:
            uses[id(root)] = uses.get(id(root), 0) + 1
        for node in self.order:
            for kid in children(node):
                uses[id(kid)] = uses.get(id(kid), 0) + 1
        binder, rebound = collect_binders(self.order)
        fv = FreeVars()
        scopes = Scopes(self.order, self.roots, binder, lets_are_scopes=True)
        self.indent = nesting(self.order, self.roots, lets=False)  # a let's body: no indent
        self.shared: set[int] = set()
        self.scope_lets: dict[int | None, list[Term]] = {}
        for node in self.order:
            if uses.get(id(node), 0) < 2 or _trivial(node):
                continue
            if rebound and any(v in rebound for v in fv(node)):
                continue  # no one scope holds it: printed at each use
            self.shared.add(id(node))
            scope = scopes.home(node)
            self.scope_lets.setdefault(None if scope is None else id(scope), []).append(node)

    def _name(self, namer: Namer) -> None:
        """Assign names in pre-order (outer binders first)."""
        seen: set[int] = set()
        stack: list[Term] = list(reversed(self.roots))
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            for var in bound_vars(node)[0]:
                if var.id not in self.names:
                    self.names[var.id] = namer.fresh(var.hint)
            if isinstance(node, Var) and node.id not in self.names:
                self.names[node.id] = namer.fresh(node.hint)
            stack.extend(reversed(children(node)))
        for node in self.order:  # shared nodes in the order their lets are printed
            if id(node) in self.shared:
                self.names[id(node)] = namer.fresh("t", numbered=True)

    # -- rendering -----------------------------------------------------------------

    def render(self, *, tuple_output: bool = False) -> str:
        self.text: dict[int, tuple[str, int]] = {}
        for node in self.order:
            self.text[id(node)] = self._render_node(node)
        if tuple_output or len(self.roots) != 1:
            body = "(" + ", ".join(self._ref(r, LOWEST) for r in self.roots) + ")"
        else:
            body = self._ref(self.roots[0], LOWEST)
        return self._scope(None, body, 0)

    def inline(self, term: Term) -> str:
        """``term`` on one line with this printer's names and no ``let``: shared subterms
        are written out (a drawing's label, an index function inside a Delta)."""
        flat = copy.copy(self)  # the names are shared, the sharing is not
        flat.shared, flat.scope_lets, flat.text = set(), {}, {}
        for node in postorder([term]):
            flat.text[id(node)] = flat._render_node(node)
        return " ".join(flat.text[id(term)][0].split())

    def _var(self, var: Var) -> str:
        return self.names.get(var.id, f"{var.hint}#{var.id}")

    def _ref(self, node: Term, need: int) -> str:
        if id(node) in self.shared:
            return self.names[id(node)]
        text, prec = self.text[id(node)]
        return f"({text})" if prec < need else text

    def _scope(self, binder: Term | None, body: str, indent: int) -> str:
        lets = self.scope_lets.get(None if binder is None else id(binder), [])
        if not lets:
            return body
        pad = "\n" + "  " * indent
        lines = [f"let {self.names[id(n)]} = {self.text[id(n)][0]} in" for n in lets]
        start = "" if binder is None else pad
        return start + pad.join([*lines, body])

    def _lambda_body(self, binder: Term, body: str) -> str:
        return self._scope(binder, body, self.indent.get(binder, 0) + 1)

    def _render_node(self, node: Term) -> tuple[str, int]:
        """``node``'s text and precedence, its operands already rendered: its rule in
        :data:`RENDERINGS`."""
        return RENDERINGS[type(node)](self, node)


Rendering: TypeAlias = Callable[[Printer, Any], tuple[str, int]]
"""A construct's printing rule: the node's text and precedence, given the printer (its
names, its operands' text through ``_ref``)."""

RENDERINGS: RuleTable[Rendering] = RuleTable("printing")
"""The paper's notation of each construct (Fig. 5, Fig. 6; ``gather``/``scatter`` with
their index functions, §3): one rendering rule a construct, filed by its class."""


@RENDERINGS.register(Const)
def _render_const(printer: Printer, node: Const) -> tuple[str, int]:
    if is_named_constant(node):
        return printer.names[id(node)], ATOM
    return format_const(node.value)


@RENDERINGS.register(Var)
def _render_var(printer: Printer, node: Var) -> tuple[str, int]:
    return printer._var(node), ATOM


@RENDERINGS.register(Op)
def _render_op(printer: Printer, node: Op) -> tuple[str, int]:
    """Infix operators by their precedence (``**`` to the right, comparisons do not
    chain), unary minus, any other operation applied to atoms."""
    op, args, ref = node.op, node.args, printer._ref
    spec = OPS[op]
    if spec.infix is not None:
        p = spec.precedence
        a, b = args
        if op == "pow":
            return f"{ref(a, p + 1)} ** {ref(b, p)}", p
        if p == 4:  # comparisons do not chain
            return f"{ref(a, p + 1)} {spec.infix} {ref(b, p + 1)}", p
        return f"{ref(a, p)} {spec.infix} {ref(b, p + 1)}", p
    if op == "neg":
        return f"-{ref(args[0], UNARY + 1)}", UNARY
    return op + " " + " ".join(ref(a, ATOM) for a in args), APP


@RENDERINGS.register(Cond)
def _render_cond(printer: Printer, node: Cond) -> tuple[str, int]:
    ref = printer._ref
    return f"cond {ref(node.cond, ATOM)} {ref(node.if_true, ATOM)} {ref(node.if_false, ATOM)}", APP


@RENDERINGS.register(Let)
def _render_let(printer: Printer, node: Let) -> tuple[str, int]:
    """``let v = bound in`` and the body on the next line, the lets of its scope first."""
    depth = printer.indent.get(node, 0)
    inner = printer._scope(node, printer._ref(node.body, LOWEST), depth)
    if not inner.startswith("\n"):
        inner = "\n" + "  " * depth + inner
    bound = printer._ref(node.bound, LOWEST)
    return f"let {printer._var(node.var)} = {bound} in{inner}", LOWEST


@RENDERINGS.register(Build1)
def _render_build1(printer: Printer, node: Build1) -> tuple[str, int]:
    inner = printer._lambda_body(node, printer._ref(node.body, LOWEST))
    sep = "" if inner.startswith("\n") else " "
    return f"build1 {node.size} (\\{printer._var(node.var)}.{sep}{inner})", APP


def loop_head(node: MapAccum) -> str:
    """``mapAccumL 5`` (``mapAccumR`` for a loop run from its last row)."""
    return f"mapAccum{'R' if node.reverse else 'L'} {node.length}"


@RENDERINGS.register(MapAccum)
def _render_map_accum(printer: Printer, node: MapAccum) -> tuple[str, int]:
    """``mapAccumL 5 (\\(c; x; w). (c'; y)) (init) (xs) (consts)`` (horde-ad's
    ``mapAccumL``/``mapAccumR``; not in the paper): the body as a lambda over its carries,
    its slices and its loop invariants, returning its next carries then its rows of the
    ``ys``, the lets of its scope inside; then the initial carries, the xs and the
    invariants."""
    var, ref = printer._var, printer._ref
    params = "; ".join(
        ", ".join([var(v) for v in vs]) for vs in (node.carry_vars, node.x_vars, node.const_vars)
    )
    results = "; ".join(
        ", ".join([ref(t, LOWEST) for t in ts]) for ts in (node.carry_outs, node.ys)
    )
    inner = printer._lambda_body(node, f"({results})")
    sep = "" if inner.startswith("\n") else " "
    inputs = " ".join(
        f"({', '.join([ref(t, LOWEST) for t in ts])})" for ts in (node.inits, node.xs, node.consts)
    )
    return f"{loop_head(node)} (\\({params}).{sep}{inner}) {inputs}", APP


@RENDERINGS.register(LoopOutput)
def _render_loop_output(printer: Printer, node: LoopOutput) -> tuple[str, int]:
    """``t1.0``: result ``k`` of a loop (its final carries, then its stacked ys)."""
    return f"{printer._ref(node.loop, ATOM)}.{node.index}", ATOM


@RENDERINGS.register(Index)
def _render_index(printer: Printer, node: Index) -> tuple[str, int]:
    ix = ", ".join(printer._ref(i, LOWEST) for i in node.index)
    return f"{printer._ref(node.array, ATOM)}[{ix}]", ATOM


def _indexed_text(printer: Printer, name: str, node: Gather | Scatter) -> str:
    """``gather [2,3] x (\\[i, j]. [i + j, i])``, and ``scatter`` alike (Fig. 6)."""
    params = ", ".join(printer._var(v) for v in node.vars)
    ix = "[" + ", ".join(printer._ref(i, LOWEST) for i in node.index) + "]"
    inner = printer._lambda_body(node, ix)
    sep = "" if inner.startswith("\n") else " "
    array = printer._ref(node.array, ATOM)
    return f"{name} {format_shape(node.outer_shape)} {array} (\\[{params}].{sep}{inner})"


@RENDERINGS.register(Gather)
def _render_gather(printer: Printer, node: Gather) -> tuple[str, int]:
    return _indexed_text(printer, "gather", node), APP


@RENDERINGS.register(Scatter)
def _render_scatter(printer: Printer, node: Scatter) -> tuple[str, int]:
    return _indexed_text(printer, "scatter", node), APP


@RENDERINGS.register(SumOuter)
def _render_sum_outer(printer: Printer, node: SumOuter) -> tuple[str, int]:
    return f"sumOuter {printer._ref(node.array, ATOM)}", APP


@RENDERINGS.register(Replicate)
def _render_replicate(printer: Printer, node: Replicate) -> tuple[str, int]:
    return f"replicate {node.count} {printer._ref(node.array, ATOM)}", APP


@RENDERINGS.register(Transpose)
def _render_transpose(printer: Printer, node: Transpose) -> tuple[str, int]:
    return f"tr {format_shape(node.perm)} {printer._ref(node.array, ATOM)}", APP


@RENDERINGS.register(Reshape)
def _render_reshape(printer: Printer, node: Reshape) -> tuple[str, int]:
    return f"reshape {format_shape(node.new_shape)} {printer._ref(node.array, ATOM)}", APP


@RENDERINGS.register(FromList)
def _render_from_list(printer: Printer, node: FromList) -> tuple[str, int]:
    return "fromList [" + ", ".join(printer._ref(e, LOWEST) for e in node.elems) + "]", APP


@RENDERINGS.register(Iota)
def _render_iota(printer: Printer, node: Iota) -> tuple[str, int]:
    return f"iota {node.size}", APP


@RENDERINGS.register(FromIntegral)
def _render_from_integral(printer: Printer, node: FromIntegral) -> tuple[str, int]:
    """``fromIntegral x``, or ``toFloat32 x`` / ``toFloat64 x`` between float types."""
    a = printer._ref(node.array, ATOM)
    if node.array.dtype.is_float:  # float32 <-> float64
        return f"to{str(node.to).capitalize()} {a}", APP
    return f"fromIntegral {a}", APP


def _render_prefix(name: str) -> Rendering:
    """The rule of a construct written ``name x`` (``floor x``, ``argmin x``)."""

    def render(printer: Printer, node: Any) -> tuple[str, int]:
        return f"{name} {printer._ref(node.array, ATOM)}", APP

    return render


@RENDERINGS.register(Structural)
def _render_structural(printer: Printer, node: Structural) -> tuple[str, int]:
    """A construct of its own module, unless it files a rendering: its heading and its
    operands, ``rev 0 x``."""
    operands = (printer._ref(kid, ATOM) for kid in children(node))
    return " ".join([node.heading(node.params), *operands]), APP


RENDERINGS.register(FloorT)(_render_prefix("floor"))
RENDERINGS.register(ArgMin)(_render_prefix("argmin"))
RENDERINGS.register(ArgMax)(_render_prefix("argmax"))
RENDERINGS.register(ArgSort)(_render_prefix("argsort"))


@RENDERINGS.register(Contract)
def _render_contract(printer: Printer, node: Contract) -> tuple[str, int]:
    left, right = printer._ref(node.left, ATOM), printer._ref(node.right, ATOM)
    return render_contraction(node.spec, left, right), APP


@RENDERINGS.register(Share)
def _render_share(printer: Printer, node: Share) -> tuple[str, int]:
    return f"share{node.id} {printer._ref(node.array, ATOM)}", APP


# --------------------------------------------------------------------------------------
# Index functions and Deltas (paper Fig. 16)
# --------------------------------------------------------------------------------------

_SMALL_TABLE = 12  # tabulated index components with at most this many entries print in full
_INDEX_NAMES = ("i", "j", "k", "l", "m", "n")


def host_array(value: Any) -> np.ndarray:
    """A NumPy copy of an array of any backend (CuPy's ``get``, else DLPack)."""
    if hasattr(value, "get") and not isinstance(value, np.ndarray):
        return np.asarray(value.get())
    try:
        return np.asarray(value)
    except (TypeError, ValueError):
        return np.from_dlpack(value)


def index_names(count: int) -> list[str]:
    """Names for the variables of a tabulated index function: ``i, j, k, …``."""
    namer = Namer()
    return [namer.fresh(_INDEX_NAMES[k] if k < len(_INDEX_NAMES) else "i") for k in range(count)]


def affine_text(constant: int, coefficients: Sequence[int], names: Sequence[str]) -> str:
    """``c + a1*i + a2*j`` as the printer writes it: ``4 - i``, ``2 * i + j - 1``."""

    def scaled(a: int, name: str) -> str:
        return name if a == 1 else f"{a} * {name}"

    text = " + ".join(scaled(a, n) for a, n in zip(coefficients, names, strict=True) if a > 0)
    if constant:
        text = (f"{text} - {-constant}" if constant < 0 else f"{text} + {constant}") if text else (
            str(constant)
        )
    for a, n in zip(coefficients, names, strict=True):
        if a < 0:
            text = f"{text} - {scaled(-a, n)}" if text else f"-{scaled(-a, n)}"
    return text or "0"


def _affine_fit(table: np.ndarray) -> tuple[int, list[int]] | None:
    """``(c, [a1, …])`` when ``table[i1, …] == c + a1*i1 + …`` at every point, else None."""
    if table.dtype.kind not in "iu" or table.size == 0:
        return None
    origin = int(table[(0,) * table.ndim])
    coefficients = [
        int(table[tuple(int(a == k) for a in range(table.ndim))]) - origin if n > 1 else 0
        for k, n in enumerate(table.shape)
    ]
    fitted = np.full(table.shape, origin, dtype=np.int64)
    grids: tuple[np.ndarray, ...] = np.indices(table.shape, sparse=True)
    for a, grid in zip(coefficients, grids, strict=True):
        fitted = fitted + a * grid
    return (origin, coefficients) if np.array_equal(fitted, table) else None


def _table_literal(table: np.ndarray) -> str:
    return str(table.tolist()).replace(" ", "") if table.ndim else str(int(table))


def tabulated_component(
    table: np.ndarray, names: Sequence[str], table_name: Callable[[np.ndarray], str]
) -> str:
    """One component of a tabulated index function (§6: a concrete run evaluates it on
    the index grid) as an expression in ``names``: affine functions as arithmetic
    (``4 - i``), any other table as a lookup, in full when small (``[2,0,1][i]``) and by
    ``table_name`` otherwise (``k1[i]``)."""
    if table.ndim == 0:
        return str(int(table))
    fit = _affine_fit(table)
    if fit is not None:
        return affine_text(fit[0], fit[1], names)
    table_text = _table_literal(table) if table.size <= _SMALL_TABLE else table_name(table)
    return f"{table_text}[{', '.join(names)}]"


def _table_type(table: np.ndarray) -> str:
    return f"<{constant_type(table)}>"


def index_fn_text(
    fn: IndexFn[Any],
    arity: int | None = None,
    *,
    lam: str = "\\",
    table_name: Callable[[np.ndarray], str] = _table_type,
) -> str:
    """An index function in full, ``\\[i]. [4 - i]`` (``lam`` is the lambda sign; drawings
    use ``λ``).  A symbolic one (§7) prints its terms; a tabulated one (§6) is read back
    from its tables (:func:`tabulated_component`), its variables named ``i, j, …``; a
    function with no components takes its number of variables from ``arity``."""
    if fn.variables or any(isinstance(c, Term) for c in fn.components):
        printer = Printer([c for c in fn.components if isinstance(c, Term)], inputs=fn.variables)
        params = [printer.names[v.id] for v in fn.variables]
        body = [printer.inline(c) if isinstance(c, Term) else repr(c) for c in fn.components]
    else:
        tables = [host_array(c) for c in fn.components]
        params = index_names(tables[0].ndim if tables else arity or 0)
        body = [tabulated_component(t, params, table_name) for t in tables]
    return f"{lam}[{', '.join(params)}]. [{', '.join(body)}]"


def primal_text(value: Any) -> str:
    """A primal value inside a Delta: a term (parenthesised unless atomic; its type when
    longer than a line), a number, a small array as NumPy prints it, or its type."""
    if isinstance(value, Term):
        text = print_term(value)
        if "\n" in text or len(text) > 60:
            return f"<{term_type(value)}>"
        atomic = isinstance(value, Var) or (isinstance(value, Const) and value.shape == ())
        return text if atomic or is_named_constant(value) else f"({text})"
    shape = getattr(value, "shape", None)
    if shape is None:
        return repr(value)
    array = host_array(value)
    if array.ndim == 0:
        return _format_scalar(array[()])
    text = str(array)
    if len(text) <= 40 and "\n" not in text:
        return text
    return f"<{constant_type(array)}>"


def print_delta(delta: dl.Delta) -> str:
    """The Delta DAG in the paper's notation (Fig. 16), one line per ``Share`` in id
    order, with primal values (:func:`primal_text`) and index functions in full
    (:func:`index_fn_text`); a tabulated index too large to print is named ``k1, …`` and
    declared above (``k1 : int64[1000]``), as the term printer does with constants."""
    arity: dict[int, int] = {}
    for node in dl.delta_postorder([delta]):
        if isinstance(node, dl.Gather):
            arity[id(node.fn)] = len(node.outer)
        elif isinstance(node, dl.Scatter):
            arity[id(node.fn)] = node.n_vars
    namer = Namer()
    declared: list[str] = []

    def table_name(table: np.ndarray) -> str:
        name = namer.fresh("k", numbered=True)
        declared.append(f"{name} : {constant_type(table)}")
        return name

    def describe_fn(fn: IndexFn[Any]) -> str:
        return f"({index_fn_text(fn, arity.get(id(fn)), table_name=table_name)})"

    text = dl.format_delta(delta, describe=primal_text, describe_fn=describe_fn)
    return "\n".join([*declared, text])


# --------------------------------------------------------------------------------------
# Structured dump
# --------------------------------------------------------------------------------------


def render_contraction(spec: str, a: str, b: str) -> str:
    """A contraction by its familiar name (horde-ad's ``matmul2``/``dot0``), transposes
    made explicit; any other spec as ``contract "spec" a b``."""
    left, right, out = parse_contraction(spec)
    if len(out) == 0 and len(left) == 1:
        return f"dot0 {a} {b}"
    summed = set(left) & set(right) - set(out)
    if (len(left), len(right), len(out), len(summed)) == (2, 2, 2, 1):
        if out[0] in right:  # (A B)ᵀ-shaped spec: swap the operands
            left, right, a, b = right, left, b, a
        (k,) = summed
        if out[0] in left and out[1] in right:
            a = a if left == out[0] + k else f"(tr [1,0] {a})"
            b = b if right == k + out[1] else f"(tr [1,0] {b})"
            return f"matmul2 {a} {b}"
    return f'contract "{spec}" {a} {b}'


def structure(term: Term) -> str:
    """An SSA-style listing of the DAG: one line per distinct node, children first."""
    order = postorder([term])
    number = {id(n): k for k, n in enumerate(order)}

    def show(value: object) -> str:
        if isinstance(value, Var):
            return f"{value.hint}#{value.id}"
        if isinstance(value, tuple):
            inner = ", ".join(show(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if isinstance(value, np.ndarray):
            return format_const(value)[0]
        if id(value) in number:
            return f"%{number[id(value)]}"
        return repr(value)

    lines = []
    for node in order:
        fields = [
            f"{f.name}={show(getattr(node, f.name))}"
            for f in dataclasses.fields(node)
            if f.init and not (isinstance(node, Var) and f.name in ("shape", "dtype"))
        ]
        typ = term_type(node)
        lines.append(f"  %{number[id(node)]} = {type(node).__name__}({', '.join(fields)}) : {typ}")
    head = f"<{type(term).__name__} {term_type(term)}, {len(order)} nodes:"
    return head + "\n" + "\n".join(lines) + ">"


install_views(
    print_term=print_term,
    structure=structure,
    print_program=print_program,
    print_let_program=print_let_program,
    input_names=input_names,
    constant_table=constant_table,
    print_delta=print_delta,
)

"""Graphviz drawings of terms and Deltas: every stage as a DAG.

A shared node is drawn once (the DAG, not the tree); a node shows its construct and its
type, a Delta ``Share`` node its id, and a gather or scatter its index function as text.
Edges go from a node to its operands; the edges into an index function are dashed.
``graph()`` on a term, a program, a Delta or a pipeline stage returns a
:class:`Drawing`, a ``graphviz.Digraph`` whose notebook display falls back to the DOT
source (with a hint) where Graphviz's ``dot`` is not installed.  Needs the Python
``graphviz`` package (the ``widgets`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import graphviz

from ..ad import delta as dl
from ..interp.algebra import IndexFn
from ..lang.errors import format_shape
from ..lang.terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Build1,
    Cond,
    Const,
    Contract,
    Floor,
    FromIntegral,
    FromList,
    Gather,
    Index,
    Iota,
    Let,
    Op,
    Replicate,
    Reshape,
    Scatter,
    Share,
    SumOuter,
    Term,
    Transpose,
    Var,
    assert_never,
    bound_vars,
    children,
    install_views,
    postorder,
    type_name,
)
from .printer import Printer, format_const, is_named_constant, print_term, render_contraction

__all__ = ["Drawing", "delta_graph", "term_graph"]

_LABEL_WIDTH = 48
DOT_HINT = "(Graphviz's `dot` is not installed: this is the DOT source; apt-get install graphviz)"


class Drawing(graphviz.Digraph):  # type: ignore[misc]
    """A ``graphviz.Digraph`` that displays as DOT source when ``dot`` is missing."""

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None, **kwargs: Any
    ) -> dict[str, str]:
        try:
            bundle: dict[str, str] = super()._repr_mimebundle_(include, exclude, **kwargs)
        except graphviz.ExecutableNotFound:
            return {"text/plain": f"{self.source}\n{DOT_HINT}"}
        return bundle


def _new(name: str) -> Drawing:
    drawing = Drawing(name=name)
    drawing.attr("graph", rankdir="TB")
    drawing.attr("node", shape="box", style="rounded", fontname="Helvetica", fontsize="11")
    drawing.attr("edge", arrowsize="0.6")
    return drawing


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_WIDTH else text[: _LABEL_WIDTH - 1] + "…"


def _lambda(variables: Sequence[Var], components: Sequence[Term]) -> str:
    params = ", ".join(print_term(v) for v in variables)
    body = ", ".join(print_term(c) for c in components)
    return _short(f"λ[{params}]. [{body}]")  # a backslash would be a DOT escape


def _term_head(node: Term) -> str:
    match node:
        case Const(value=value):
            return _short(format_const(value)[0]) if value.size <= 8 else "const"
        case Var(hint=hint):
            return hint
        case Op(op=op):
            return op
        case Cond():
            return "cond"
        case Let(var=var):
            return f"let {var.hint}"
        case Build1(size=n, var=var):
            return f"build1 {n} (λ{var.hint})"
        case Index():
            return "index"
        case Gather(outer_shape=sh, vars=vs, index=ix):
            return f"gather {format_shape(sh)}\n{_lambda(vs, ix)}"
        case Scatter(outer_shape=sh, vars=vs, index=ix):
            return f"scatter {format_shape(sh)}\n{_lambda(vs, ix)}"
        case SumOuter():
            return "sumOuter"
        case Replicate(count=k):
            return f"replicate {k}"
        case Transpose(perm=p):
            return f"tr {format_shape(p)}"
        case Reshape(new_shape=sh):
            return f"reshape {format_shape(sh)}"
        case FromList(elems=elems):
            return f"fromList ({len(elems)})"
        case Iota(size=n):
            return f"iota {n}"
        case FromIntegral():
            return "fromIntegral"
        case Floor():
            return "floor"
        case ArgMin():
            return "argmin"
        case ArgMax():
            return "argmax"
        case ArgSort():
            return "argsort"
        case Contract(spec=spec):
            return render_contraction(spec, "·", "·").split(" ")[0]
        case Share(id=i):
            return f"share{i}"
        case _:
            assert_never(node)


def term_graph(
    roots: Sequence[Term],
    name: str = "term",
    highlight: Sequence[Term] = (),
    groups: Sequence[tuple[str, Sequence[Term]]] = (),
) -> Drawing:
    """The term DAG of ``roots``: one node per distinct node, operands below; the nodes
    of ``highlight`` (a rewritten subterm, say) are filled; each of ``groups`` (a label
    and its nodes, e.g. the lowering of one NumPy call) is drawn as a labelled box."""
    drawing = _new(name)
    order = postorder(roots)
    number = {id(n): k for k, n in enumerate(order)}
    marked = {id(n) for n in highlight}
    group_of = {id(n): k for k, (_, nodes) in enumerate(groups) for n in nodes}
    clusters = [Drawing(name=f"cluster_{k}") for k in range(len(groups))]
    for cluster, (label, _) in zip(clusters, groups, strict=True):
        cluster.attr(label=label, style="rounded,dashed", color="gray50", fontname="Courier")
    constant_names = (  # named as the printed program names them (``k1``)
        Printer(list(roots)).names if any(map(is_named_constant, order)) else {}
    )
    for node in order:
        key = f"n{number[id(node)]}"
        head = constant_names.get(id(node)) or _term_head(node)
        look: dict[str, str] = {"shape": "ellipse" if isinstance(node, Var) else "box"}
        if id(node) in marked:
            look |= {"style": "rounded,filled", "fillcolor": "gold"}
        home = clusters[group_of[id(node)]] if id(node) in group_of else drawing
        home.node(key, f"{head}\n{type_name(node.shape, node.dtype)}", **look)
        scoped = bound_vars(node)[1] if isinstance(node, Gather | Scatter) else ()
        for position, kid in enumerate(children(node)):
            style = "dashed" if position in scoped else "solid"
            drawing.edge(key, f"n{number[id(kid)]}", style=style)
    for cluster in clusters:
        drawing.subgraph(cluster)
    for k, root in enumerate(roots):
        drawing.node(f"out{k}", f"result {k}" if len(roots) > 1 else "result", shape="plain")
        drawing.edge(f"out{k}", f"n{number[id(root)]}")
    return drawing


def _value_text(value: Any) -> str:
    if isinstance(value, IndexFn):
        if value.variables or any(isinstance(c, Term) for c in value.components):
            return _lambda(value.variables, value.components)  # a symbolic index function
        return _short(repr(list(value.components)))
    if isinstance(value, Term):
        return _short(print_term(value))
    shape = getattr(value, "shape", None)
    return f"<{format_shape(tuple(shape))}>" if shape is not None else _short(repr(value))


def _delta_head(d: dl.Delta) -> str:
    match d:
        case dl.Zero():
            return "Zero"
        case dl.Input(index=n):
            return f"Input {n}"
        case dl.Add():
            return "Add"
        case dl.Scale(factor=f):
            return f"Scale\n{_value_text(f)}"
        case dl.Share(id=i):
            return f"Share {i}"
        case dl.Index(index=ix):
            return "Index [" + ", ".join(_value_text(i) for i in ix) + "]"
        case dl.Gather(outer=outer, fn=fn):
            return f"Gather {format_shape(outer)}\n{_value_text(fn)}"
        case dl.Scatter(outer=outer, fn=fn):
            return f"Scatter {format_shape(outer)}\n{_value_text(fn)}"
        case dl.SumOuter():
            return "SumOuter"
        case dl.Replicate(count=k):
            return f"Replicate {k}"
        case dl.Transpose(perm=p):
            return f"Tr {format_shape(p)}"
        case dl.Reshape(new_shape=sh):
            return f"Reshape {format_shape(sh)}"
        case dl.Convert(to=to):
            return f"Convert {to}"
        case dl.FromList(deltas=xs):
            return f"FromList ({len(xs)})"
        case dl.Contract(spec=spec, factor=f):
            return f"Contract {spec}\n{_value_text(f)}"
        case _:
            assert_never(d)


def delta_graph(
    root: dl.Delta, name: str = "delta", highlight: dl.Delta | None = None
) -> Drawing:
    """The Delta DAG: Share nodes (with their ids) drawn once, primal shapes shown;
    ``highlight`` (the node a reverse-pass step works on) is filled."""
    drawing = _new(name)
    order = dl.delta_postorder([root])
    number = {id(d): k for k, d in enumerate(order)}
    for d in order:
        key = f"d{number[id(d)]}"
        style = {"shape": "doubleoctagon"} if isinstance(d, dl.Share) else {}
        if d is highlight:
            style |= {"style": "rounded,filled", "fillcolor": "gold"}
        label = f"{_delta_head(d)}\n{type_name(d.shape, d.dtype)}"
        drawing.node(key, label, **style)
        for kid in dl.delta_children(d):
            drawing.edge(key, f"d{number[id(kid)]}")
    return drawing


install_views(term_graph=term_graph, delta_graph=delta_graph)

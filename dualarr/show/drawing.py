"""Graphviz drawings of terms and Deltas: every stage as a DAG that reads like its text.

A shared node is drawn once (the DAG, not the tree); a node shows its construct and its
type, a Delta ``Share`` node its id, a gather or scatter its index function, and a
``Scale`` or contraction its factor.  Edges go from a node to its operands; the edges
into an index function are dashed.  Names are the printer's (:mod:`dualarr.show.printer`):
in a let program (Fig. 21) each binding's node is labelled ``v1 = gather …``, a use of
``v1`` is an edge to it, a subterm the text shares as ``t1`` is labelled ``t1 = …``, index
variables are named as in the text, and only the program's outputs carry a label
(``value``, ``gradient of x``).  A concrete Delta can show a value and a cotangent on
each node, as micrograd's ``draw_dot`` does (:func:`delta_graph`, :func:`reverse_graph`
for the reverse pass of Fig. 17).  The fused kernels of a generated program (§7.5) are
drawn as their expression trees, one box per kernel (:func:`kernel_graph`).  A loop
(horde-ad's mapAccum) is a frame labelled ``mapAccumL 1000`` holding its body once, its
binders reading the loop's inputs by dotted edges; a loop in a body is a frame inside it.

Wide drawings are laid out left-to-right (``rankdir="auto"``, :data:`MAX_WIDTH`) so that
their labels stay readable where a notebook or the book scales them to the page.

``graph()`` on a term, a program, a Delta or a pipeline stage returns a
:class:`Drawing`, a ``graphviz.Digraph`` whose notebook display falls back to the DOT
source (with a hint) where Graphviz's ``dot`` is not installed.  Drawing needs the
Python ``graphviz`` package (the ``widgets`` extra), imported by the first drawing: without
it a drawing raises :class:`~dualarr.lang.errors.MissingDependencyError`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count, pairwise
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np

from ..ad import delta as dl
from ..ad.extraction import ExtractedDelta
from ..ad.reverse import ReverseStep
from ..ad.share_to_let import LetProgram
from ..ad.symbolic_forward import ForwardPass
from ..ad.symbolic_reverse import SharedGradient
from ..codegen.kernels import Apply, Arg, Kernel, KernelExpr
from ..codegen.kernels import Literal as KernelLiteral
from ..interp.algebra import IndexFn
from ..lang.errors import format_shape
from ..lang.program import Program
from ..lang.rules import RuleTable
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
    assert_never,
    bound_vars,
    children,
    install_views,
    postorder,
    type_name,
)
from .layout import DOT_HINT, Layout
from .printer import (
    Printer,
    constant_type,
    format_const,
    host_array,
    index_fn_text,
    input_names,
    loop_head,
    print_term,
    render_contraction,
    term_type,
)

if TYPE_CHECKING:
    from .digraph import Drawing as Drawing


def _drawing_type() -> type[Drawing]:
    """The :class:`~dualarr.show.digraph.Drawing` class; importing it imports the
    ``graphviz`` package (the ``widgets`` extra), so only a drawing does."""
    from .digraph import Drawing

    return Drawing


def __getattr__(name: str) -> object:
    if name == "Drawing":  # ``from dualarr.show.drawing import Drawing``
        return _drawing_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DOT_HINT",
    "MAX_WIDTH",
    "Drawing",
    "Layout",
    "RankDir",
    "delta_graph",
    "kernel_graph",
    "output_labels",
    "reverse_cotangents",
    "reverse_graph",
    "stage_graph",
    "term_graph",
]

_LABEL_WIDTH = 48

RankDir: TypeAlias = Literal["auto", "TB", "LR", "BT", "RL"]
"""Graphviz's ``rankdir`` (``TB``: operands below their uses), or ``auto``: ``TB`` unless
the drawing would be wider than ``max_width`` and ``LR`` is narrower."""

MAX_WIDTH = 700.0
"""The widest drawing ``rankdir="auto"`` lays out top-to-bottom, in points.  A drawing
``W`` points wide is ``4W/3`` pixels at 100 %; shrunk into a text column ``C`` pixels wide
its 11-point labels stay at least 11 pixels tall exactly when ``W <= C``, so 700 points
keeps them readable in the book's column (700–900 px)."""

# Graphviz's own measures at fontsize 11, in points (checked against ``dot -Tjson``).
_CHAR = 6.8
_PAD = 16.0
_MIN_NODE = 54.0
_NODESEP = 18.0
_RANKSEP = 36.0
_DUMMY = 30.0  # an edge passing a rank (its dummy node and the space around it)


# --------------------------------------------------------------------------------------
# A drawing before layout: nodes and edges, then one rankdir for all
# --------------------------------------------------------------------------------------


@dataclass
class _Sketch:
    """Nodes (key, label, attributes, cluster) and edges, collected before the layout
    is chosen from their estimated sizes."""

    nodes: list[tuple[str, str, dict[str, str], int | None]] = field(default_factory=list)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def node(
        self,
        key: str,
        label: str,
        look: Mapping[str, str] | None = None,
        cluster: int | None = None,
    ) -> None:
        self.nodes.append((key, label, dict(look or {}), cluster))

    def edge(self, tail: str, head: str, **look: str) -> None:
        self.edges.append((tail, head, look))

    def layout(self, rankdir: RankDir, max_width: float) -> Layout:
        width_tb, width_lr = _estimated_widths(self)
        if rankdir != "auto":
            return Layout(rankdir, width_tb, width_lr)
        wide = width_tb > max_width and width_lr < width_tb
        return Layout("LR" if wide else "TB", width_tb, width_lr)

    def drawing(
        self,
        name: str,
        rankdir: RankDir = "auto",
        max_width: float = MAX_WIDTH,
        clusters: Sequence[str] = (),
        parents: Sequence[int | None] = (),
    ) -> Drawing:
        """The Graphviz drawing, each of ``clusters`` (its label) a box, inside box
        ``parents[k]`` where given (a loop's frame inside the frame of its loop)."""
        layout = self.layout(rankdir, max_width)
        drawing = _drawing_type()(name=name)
        drawing.layout = layout
        drawing.attr("graph", rankdir=layout.rankdir)
        drawing.attr("node", shape="box", style="rounded", fontname="Helvetica", fontsize="11")
        drawing.attr("edge", arrowsize="0.6")
        boxes = [_drawing_type()(name=f"cluster_{k}") for k in range(len(clusters))]
        for box, label in zip(boxes, clusters, strict=True):
            box.attr(label=label, style="rounded,dashed", color="gray50", fontname="Courier")
        for key, label, look, cluster in self.nodes:
            (drawing if cluster is None else boxes[cluster]).node(key, label, **look)
        for tail, head, look in self.edges:
            drawing.edge(tail, head, **look)
        parent = list(parents) + [None] * (len(boxes) - len(parents))
        depth = [0] * len(boxes)
        for k in range(len(boxes)):
            above = parent[k]
            while above is not None:
                depth[k] += 1
                above = parent[above]
        for k in sorted(range(len(boxes)), key=lambda k: -depth[k]):  # inner boxes first
            above = parent[k]
            (drawing if above is None else boxes[above]).subgraph(boxes[k])
        return drawing


def _node_width(label: str, shape: str) -> float:
    text = _CHAR * max(len(line) for line in label.split("\n"))
    if shape == "plain":
        return text
    width = max(_MIN_NODE, text + _PAD)
    return width * 1.41 if shape == "ellipse" else width


def _estimated_widths(sketch: _Sketch) -> tuple[float, float]:
    """The widths of the drawing laid out top-to-bottom and left-to-right, in points
    (within about a third of what ``dot`` draws): nodes ranked below all their uses and
    each use just above its nearest operand (as ``dot`` ranks them); top-to-bottom a rank
    is as wide as its nodes side by side, each edge that passes it adding a dummy node;
    left-to-right each rank adds its widest node."""
    width = {
        key: _node_width(text, look.get("shape", "box")) for key, text, look, _ in sketch.nodes
    }
    if not width:
        return 0.0, 0.0
    kids: dict[str, list[str]] = {key: [] for key in width}
    indegree = dict.fromkeys(width, 0)
    for tail, head, _ in sketch.edges:
        kids[tail].append(head)
        indegree[head] += 1
    rank = dict.fromkeys(width, 0)
    sources = [key for key, n in indegree.items() if n == 0]
    ready = list(sources)
    while ready:  # Kahn's order: every use before its operands
        key = ready.pop()
        for kid in kids[key]:
            rank[kid] = max(rank[kid], rank[key] + 1)
            indegree[kid] -= 1
            if indegree[kid] == 0:
                ready.append(kid)
    for key in sources:
        if kids[key]:
            rank[key] = min(rank[kid] for kid in kids[key]) - 1
    across: dict[int, float] = {}
    deep: dict[int, float] = {}
    for key, w in width.items():
        across[rank[key]] = across.get(rank[key], -_NODESEP) + w + _NODESEP
        deep[rank[key]] = max(deep.get(rank[key], 0.0), w)
    for tail, head, _ in sketch.edges:
        for r in range(rank[tail] + 1, rank[head]):
            across[r] = across.get(r, 0.0) + _DUMMY
    width_lr = sum(deep.values()) + _RANKSEP * (len(deep) - 1)
    return max(across.values()) + _PAD, width_lr + _PAD


# --------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------


def _short(text: str, width: int = _LABEL_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _wrapped(text: str) -> str:
    """A long label (an index function) on up to four lines, broken between words."""
    lines = textwrap.wrap(
        " ".join(text.split()), _LABEL_WIDTH, subsequent_indent="  ", max_lines=4, placeholder=" …"
    )
    return "\n".join(lines)


def _number(value: np.floating[Any]) -> str:
    """A float in at most four significant digits, as NumPy prints it: ``0.5403``,
    ``1.``, ``-2.5e+07``."""
    if value != 0 and not 1e-4 <= abs(value) < 1e5:
        return np.format_float_scientific(value, precision=3, trim=".")
    return np.format_float_positional(value, precision=4, fractional=False, trim=".")


def short_value(value: Any) -> str:
    """A primal value on one short line: a term's text, a number, or an array's values
    (elided in the middle when long: ``[0.5, 0.25, ..., 0.125]``), else its type."""
    if isinstance(value, Term):
        return _short(print_term(value))
    shape = getattr(value, "shape", None)
    if shape is None:
        return _short(repr(value))
    array = host_array(value)
    if array.ndim == 0:
        return format_const(array)[0]
    text = np.array2string(
        array,
        separator=", ",
        threshold=6,
        edgeitems=2,
        max_line_width=10**6,
        formatter={"float_kind": _number},
    )
    text = " ".join(text.replace("\n", " ").split())
    return text if len(text) <= _LABEL_WIDTH else f"<{constant_type(array)}>"


def _lambda(printer: Printer, variables: Sequence[Var], components: Sequence[Term]) -> str:
    params = ", ".join(printer.names.get(v.id, v.hint) for v in variables)
    body = ", ".join(printer.inline(c) for c in components)
    return _wrapped(f"λ[{params}]. [{body}]")  # a backslash would be a DOT escape


TermLabel: TypeAlias = Callable[[Printer, Any], str]
"""A construct's drawing rule: the first line of its node's label, named as the printer
names it."""

LABELS: RuleTable[TermLabel] = RuleTable("drawing")
"""Each construct's label in a term drawing, as the printer writes it (Fig. 5, Fig. 6):
its name and static arguments, a gather's or scatter's index function in full."""

INDEX_FUNCTION_CONSTRUCTS: set[type[Term]] = {Gather, Scatter}
"""The constructs whose operands in the scope of their variables are an index function
(``gather``, ``scatter``, Fig. 6): the edges into those operands are dashed.  A construct
binding index variables registers itself here."""


def _term_head(node: Term, printer: Printer) -> str:
    """A term node's construct as the printer names it: its rule in :data:`LABELS`."""
    return LABELS[type(node)](printer, node)


@LABELS.register(Const)
def _label_const(printer: Printer, node: Const) -> str:
    """A named constant by its name (``k1``), a small one by its value, else ``const``."""
    if id(node) in printer.names:
        return printer.names[id(node)]
    return _short(format_const(node.value)[0]) if node.value.size <= 8 else "const"


@LABELS.register(Var)
def _label_var(printer: Printer, node: Var) -> str:
    return printer.names.get(node.id, node.hint)


@LABELS.register(Op)
def _label_op(printer: Printer, node: Op) -> str:
    return node.op


@LABELS.register(Let)
def _label_let(printer: Printer, node: Let) -> str:
    return f"let {printer.names.get(node.var.id, node.var.hint)}"


@LABELS.register(Build1)
def _label_build1(printer: Printer, node: Build1) -> str:
    return f"build1 {node.size} (λ{printer.names.get(node.var.id, node.var.hint)})"


@LABELS.register(Gather)
def _label_gather(printer: Printer, node: Gather) -> str:
    return f"gather {format_shape(node.outer_shape)}\n{_lambda(printer, node.vars, node.index)}"


@LABELS.register(Scatter)
def _label_scatter(printer: Printer, node: Scatter) -> str:
    return f"scatter {format_shape(node.outer_shape)}\n{_lambda(printer, node.vars, node.index)}"


@LABELS.register(Replicate)
def _label_replicate(printer: Printer, node: Replicate) -> str:
    return f"replicate {node.count}"


@LABELS.register(Transpose)
def _label_transpose(printer: Printer, node: Transpose) -> str:
    return f"tr {format_shape(node.perm)}"


@LABELS.register(Reshape)
def _label_reshape(printer: Printer, node: Reshape) -> str:
    return f"reshape {format_shape(node.new_shape)}"


@LABELS.register(FromList)
def _label_from_list(printer: Printer, node: FromList) -> str:
    return f"fromList ({len(node.elems)})"


@LABELS.register(Iota)
def _label_iota(printer: Printer, node: Iota) -> str:
    return f"iota {node.size}"


@LABELS.register(Contract)
def _label_contract(printer: Printer, node: Contract) -> str:
    """The contraction's familiar name (``matmul2``, ``dot0``) or ``contract``."""
    return render_contraction(node.spec, "·", "·").split(" ")[0]


@LABELS.register(Share)
def _label_share(printer: Printer, node: Share) -> str:
    return f"share{node.id}"


@LABELS.register(MapAccum)
def _label_map_accum(printer: Printer, node: MapAccum) -> str:
    """``mapAccumL 5 (λc; x; w)``: the loop and its binders (carries, slices, loop
    invariants); its body is drawn in the loop's frame (horde-ad's mapAccum)."""
    groups = (node.carry_vars, node.x_vars, node.const_vars)
    params = "; ".join(", ".join(printer.names.get(v.id, v.hint) for v in vs) for vs in groups)
    return f"{loop_head(node)} (λ{params})"


@LABELS.register(LoopOutput)
def _label_loop_output(printer: Printer, node: LoopOutput) -> str:
    """``t1.0``: result ``k`` of the loop, by the loop's name in the text."""
    return f"{printer.names.get(id(node.loop), 'loop')}.{node.index}"


def _named(name: str) -> TermLabel:
    """The rule of a construct labelled by its name alone (``cond``, ``floor``)."""

    def label(printer: Printer, node: Any) -> str:
        return name

    return label


@LABELS.register(Structural)
def _label_structural(printer: Printer, node: Structural) -> str:
    """A construct of its own module, unless it files a label: its heading, ``rev 0``."""
    return node.heading(node.params)


LABELS.register(Cond)(_named("cond"))
LABELS.register(Index)(_named("index"))
LABELS.register(SumOuter)(_named("sumOuter"))
LABELS.register(FromIntegral)(_named("fromIntegral"))
LABELS.register(Floor)(_named("floor"))
LABELS.register(ArgMin)(_named("argmin"))
LABELS.register(ArgMax)(_named("argmax"))
LABELS.register(ArgSort)(_named("argsort"))


def output_labels(inputs: Sequence[Var], positions: Sequence[int]) -> list[str]:
    """The labels of a gradient program's outputs (Fig. 21): ``value``, then
    ``gradient of x`` for each differentiated input, named as the program prints it."""
    names = input_names(inputs)
    return ["value", *(f"gradient of {names[k]}" for k in positions)]


def _value_labels(count: int) -> list[str]:
    return ["value"] if count == 1 else [f"value {k}" for k in range(count)]


# --------------------------------------------------------------------------------------
# Terms and let programs
# --------------------------------------------------------------------------------------


def term_graph(
    roots: Sequence[Term],
    name: str = "term",
    highlight: Sequence[Term] = (),
    groups: Sequence[tuple[str, Sequence[Term]]] = (),
    *,
    inputs: Sequence[Var] = (),
    bindings: Sequence[tuple[Var, Term]] = (),
    labels: Sequence[str] | None = None,
    every_binding: bool = False,
    rankdir: RankDir = "auto",
    max_width: float = MAX_WIDTH,
) -> Drawing:
    """The term DAG of ``roots`` (a program's outputs): one node per distinct node,
    operands below, named as :func:`~dualarr.show.printer.print_let_program` prints
    ``λinputs. let bindings in roots`` (Fig. 21).

    Each of ``bindings`` (a variable and its term) labels its term's node ``v1 = …``
    and every use of the variable is an edge to that node; a subterm the text shares is
    labelled ``t1 = …``; bindings the roots do not reach are left out unless
    ``every_binding``.  ``labels`` name the roots (default ``value``, or ``value 0``,
    ``value 1``, … for several).  The nodes of ``highlight`` (a rewritten subterm, say)
    are filled; each of ``groups`` (a label and its nodes, e.g. the lowering of one NumPy
    call) is drawn as a labelled box.  ``rankdir`` and ``max_width``: see
    :data:`RankDir`."""
    bound = dict(bindings)
    printer = Printer([*(t for _, t in bindings), *roots], inputs=[*inputs, *bound])
    nodes = _TermNodes.of(roots, bindings, every_binding)
    marked = {id(n) for n in highlight}
    group_of = {id(n): k for k, (_, members) in enumerate(groups) for n in members}
    frames = _LoopFrames.of(nodes, [*roots, *bound.values()])
    first = len(groups)  # the boxes: the groups, then one frame a loop
    sketch = _Sketch()
    for node in nodes.order:
        if isinstance(node, Var) and node in bound:
            if nodes.owner.get(id(bound[node])) is not node:
                _draw_alias(sketch, printer, nodes, node)
            continue
        look = {"shape": "ellipse" if isinstance(node, Var) else "box"}
        if id(node) in marked:
            look |= {"style": "rounded,filled", "fillcolor": "gold"}
        label = f"{_binding_head(node, printer, nodes)}\n{term_type(node)}"
        frame = frames.frame(node)
        cluster = group_of.get(id(node), None if frame is None else first + frame)
        sketch.node(nodes.key(node), label, look, cluster)
        if isinstance(node, MapAccum):  # its body's results, and its binders' inputs
            for result in node.body:
                sketch.edge(nodes.key(node), nodes.key(result), style="solid")
            for var, given in zip(node.binders, node.inputs, strict=True):
                sketch.edge(nodes.key(var), nodes.key(given), style="dotted")
            continue
        scoped = bound_vars(node)[1] if type(node) in INDEX_FUNCTION_CONSTRUCTS else ()
        for position, kid in enumerate(children(node)):
            style = "dashed" if position in scoped else "solid"
            sketch.edge(nodes.key(node), nodes.key(kid), style=style)
    shown = list(labels) if labels is not None else _value_labels(len(roots))
    for k, (root, label) in enumerate(zip(roots, shown, strict=True)):
        sketch.node(f"out{k}", label, {"shape": "plain"})
        sketch.edge(f"out{k}", nodes.key(root))
    titles = [label for label, _ in groups] + [loop_head(loop) for loop in frames.loops]

    def box(frame: int | None) -> int | None:
        return None if frame is None else first + frame

    parents = [box(frames.common([frames.frame(n) for n in members])) for _, members in groups]
    parents += [box(f) for f in frames.parent]
    return sketch.drawing(name, rankdir, max_width, titles, parents)


@dataclass
class _LoopFrames:
    """The frames of a term drawing (horde-ad's mapAccum; not in the paper): one box a
    loop, holding its ``MapAccum`` node, its binders and its body, drawn once whatever
    the loop's length; a loop inside a body is a frame inside its loop's frame.

    Each node is drawn in the innermost frame holding all its uses: a use inside a body
    (the loop's results, binders, and what they read) is in the loop's frame, a use as
    a loop's input is in the frame around the loop.  A closed node used both inside
    and outside a body is drawn outside."""

    loops: list[MapAccum]
    parent: list[int | None]  # each frame's enclosing frame
    where: dict[int, int | None]  # each node's frame

    @staticmethod
    def of(nodes: _TermNodes, outside: Sequence[Term]) -> _LoopFrames:
        frames = _LoopFrames([], [], {})
        uses: dict[int, list[int | None]] = {}
        top = {id(n) for n in outside}
        for node in reversed(nodes.order):  # every use before its operands
            here = None if id(node) in top else frames.common(uses.pop(id(node), []))
            frames.where[id(node)] = here
            inner: frozenset[int] = frozenset()
            if isinstance(node, MapAccum):
                frames.where[id(node)] = len(frames.loops)
                inner = frozenset(id(t) for t in (*node.body, *node.binders))
                frames.loops.append(node)
                frames.parent.append(here)
            for kid in nodes.operands(node):
                frame = frames.where[id(node)] if id(kid) in inner else here
                uses.setdefault(id(kid), []).append(frame)
        return frames

    def frame(self, node: Term) -> int | None:
        """The frame ``node`` is drawn in (``None``: outside every loop)."""
        return self.where.get(id(node))

    def _outward(self, frame: int) -> list[int]:
        chain = [frame]
        while (above := self.parent[chain[-1]]) is not None:
            chain.append(above)
        return chain

    def common(self, frames: Sequence[int | None]) -> int | None:
        """The innermost frame holding all of ``frames`` (``None``: the top level)."""
        if not frames or None in frames:
            return None
        chain = self._outward(frames[0])  # type: ignore[arg-type]
        for frame in set(frames[1:]):
            if frame not in chain:
                around = set(self._outward(frame))  # type: ignore[arg-type]
                chain = [f for f in chain if f in around]
        return chain[0] if chain else None


@dataclass
class _TermNodes:
    """The nodes of a term drawing: the DAG below the roots, let-bound variables followed
    to their terms (``order``, numbered), each bound term's labelling variable
    (``owner``), and each node's key in the drawing."""

    bound: dict[Var, Term]
    order: list[Term]
    number: dict[int, int]
    owner: dict[int, Var]

    @staticmethod
    def of(
        roots: Sequence[Term], bindings: Sequence[tuple[Var, Term]], every_binding: bool
    ) -> _TermNodes:
        bound = dict(bindings)
        nodes = _TermNodes(bound, [], {}, {})
        nodes.order = postorder(
            [*(v for v, _ in bindings if every_binding), *roots], nodes.operands
        )
        nodes.number = {id(n): k for k, n in enumerate(nodes.order)}
        for var, term in bindings:  # a bound term's node -> the variable that labels it
            if not isinstance(term, Var) and id(term) in nodes.number:
                nodes.owner.setdefault(id(term), var)
        return nodes

    def operands(self, node: Term) -> tuple[Term, ...]:
        """What ``node`` is drawn reading: a bound variable its term, a loop its inputs,
        its body and its binders (drawn in its frame even where the body reads none),
        any other node its children."""
        if isinstance(node, Var) and node in self.bound:
            return (self.bound[node],)
        if isinstance(node, MapAccum):
            return (*children(node), *node.binders)
        return children(node)

    def key(self, node: Term) -> str:
        """The drawing's key of ``node``; a bound variable's is its term's, unless it is
        an alias binding (``v2 = x``), which has a node of its own."""
        if isinstance(node, Var) and node in self.bound:
            if self.owner.get(id(self.bound[node])) is not node:
                return f"a{self.number[id(node)]}"
            return f"n{self.number[id(self.bound[node])]}"
        return f"n{self.number[id(node)]}"


def _draw_alias(sketch: _Sketch, printer: Printer, nodes: _TermNodes, var: Var) -> None:
    """An alias binding (``v2 = x``, or a variable bound to a term another one labels):
    a node of its own, labelled with the binding, and an edge to its term."""
    term = nodes.bound[var]
    text = f"{printer.names[var.id]} = {printer.inline(term)}"
    sketch.node(nodes.key(var), f"{_short(text)}\n{type_name(var.shape, var.dtype)}")
    sketch.edge(nodes.key(var), nodes.key(term), style="solid")


def _binding_head(node: Term, printer: Printer, nodes: _TermNodes) -> str:
    """``node``'s label head (:data:`LABELS`), after ``v1 = `` where a binding labels it
    or ``t1 = `` where the text shares it."""
    head = _term_head(node, printer)
    if id(node) in nodes.owner:
        return f"{printer.names[nodes.owner[id(node)].id]} = {head}"
    if id(node) in printer.shared:
        return f"{printer.names[id(node)]} = {head}"
    return head


Stage: TypeAlias = Program | ForwardPass | ExtractedDelta | SharedGradient | LetProgram
"""A pipeline stage with a drawing (``source``/``vectorised`` … ``gradient``)."""


def stage_graph(
    stage: Stage, *, rankdir: RankDir = "auto", max_width: float = MAX_WIDTH
) -> Drawing:
    """The drawing of one pipeline stage, read like its text: a program's term DAG with
    its output labelled ``value``; the Delta of ``forward`` and ``delta`` (Eq. 6); the
    ``shared`` gradient (Fig. 19) and the ``gradient`` program (Fig. 21) as let programs
    whose outputs are ``value`` and ``gradient of x``."""
    layout: dict[str, Any] = {"rankdir": rankdir, "max_width": max_width}
    match stage:
        case Program(name=name, inputs=inputs, outputs=outputs):
            return term_graph(list(outputs), name, inputs=inputs, **layout)
        case ForwardPass(delta=delta):
            return delta_graph(delta, "forward", **layout)
        case ExtractedDelta(delta=delta):
            return delta_graph(delta, "delta", **layout)
        case SharedGradient(extracted=extracted, gradients=gradients, positions=positions):
            return term_graph(
                [extracted.value, *gradients],
                "shared",
                inputs=stage.inputs,
                bindings=extracted.bindings,
                labels=output_labels(extracted.inputs, positions),
                **layout,
            )
        case LetProgram(name=name, inputs=inputs, bindings=bindings, outputs=outputs):
            labels = output_labels(inputs, stage.positions)
            return term_graph(
                list(outputs),
                name,
                inputs=inputs,
                bindings=bindings,
                labels=labels if len(labels) == len(outputs) else None,
                **layout,
            )
        case _:
            assert_never(stage)


# --------------------------------------------------------------------------------------
# Deltas, symbolic and concrete, and the reverse pass
# --------------------------------------------------------------------------------------


def _index_fn(fn: IndexFn[Any], arity: int) -> str:
    return _wrapped(index_fn_text(fn, arity, lam="λ"))


DeltaLabel: TypeAlias = Callable[[Mapping[int, str], Any], str]
"""A Delta constructor's drawing rule, given the inputs' names: the first line of its
node's label."""

DELTA_LABELS: RuleTable[DeltaLabel] = RuleTable("Delta drawing")
"""Each Delta constructor's label in a Delta drawing (Fig. 16): its name, ``Share`` its
id, ``Input`` its input's name, a ``Scale`` or contraction its factor, a ``Gather`` or
``Scatter`` its index function in full."""


def _delta_head(d: dl.Delta, input_names: Mapping[int, str]) -> str:
    """A Delta node's constructor and its arguments: its rule in :data:`DELTA_LABELS`."""
    return DELTA_LABELS[type(d)](input_names, d)


@DELTA_LABELS.register(dl.Structural)
def _label_delta_structural(input_names: Mapping[int, str], d: dl.Structural) -> str:
    return d.construct.heading(d.arguments).capitalize()


@DELTA_LABELS.register(dl.Zero)
def _label_zero(input_names: Mapping[int, str], d: dl.Zero) -> str:
    return "Zero"


@DELTA_LABELS.register(dl.Input)
def _label_input(input_names: Mapping[int, str], d: dl.Input) -> str:
    n = d.index
    return f"Input {n} ({input_names[n]})" if n in input_names else f"Input {n}"


@DELTA_LABELS.register(dl.Add)
def _label_add(input_names: Mapping[int, str], d: dl.Add) -> str:
    return "Add"


@DELTA_LABELS.register(dl.Scale)
def _label_scale(input_names: Mapping[int, str], d: dl.Scale) -> str:
    return f"Scale\n{short_value(d.factor)}"


@DELTA_LABELS.register(dl.Share)
def _label_delta_share(input_names: Mapping[int, str], d: dl.Share) -> str:
    return f"Share {d.id}"


@DELTA_LABELS.register(dl.Index)
def _label_delta_index(input_names: Mapping[int, str], d: dl.Index) -> str:
    return "Index [" + ", ".join(short_value(i) for i in d.index) + "]"


@DELTA_LABELS.register(dl.Gather)
def _label_delta_gather(input_names: Mapping[int, str], d: dl.Gather) -> str:
    return f"Gather {format_shape(d.outer)}\n{_index_fn(d.fn, len(d.outer))}"


@DELTA_LABELS.register(dl.Scatter)
def _label_delta_scatter(input_names: Mapping[int, str], d: dl.Scatter) -> str:
    return f"Scatter {format_shape(d.outer)}\n{_index_fn(d.fn, d.n_vars)}"


@DELTA_LABELS.register(dl.SumOuter)
def _label_delta_sum_outer(input_names: Mapping[int, str], d: dl.SumOuter) -> str:
    return "SumOuter"


@DELTA_LABELS.register(dl.Replicate)
def _label_delta_replicate(input_names: Mapping[int, str], d: dl.Replicate) -> str:
    return f"Replicate {d.count}"


@DELTA_LABELS.register(dl.Transpose)
def _label_delta_transpose(input_names: Mapping[int, str], d: dl.Transpose) -> str:
    return f"Tr {format_shape(d.perm)}"


@DELTA_LABELS.register(dl.Reshape)
def _label_delta_reshape(input_names: Mapping[int, str], d: dl.Reshape) -> str:
    return f"Reshape {format_shape(d.new_shape)}"


@DELTA_LABELS.register(dl.Convert)
def _label_convert(input_names: Mapping[int, str], d: dl.Convert) -> str:
    return f"Convert {d.to}"


@DELTA_LABELS.register(dl.FromList)
def _label_delta_from_list(input_names: Mapping[int, str], d: dl.FromList) -> str:
    return f"FromList ({len(d.deltas)})"


@DELTA_LABELS.register(dl.Contract)
def _label_delta_contract(input_names: Mapping[int, str], d: dl.Contract) -> str:
    return f"Contract {d.spec}\n{short_value(d.factor)}"


@DELTA_LABELS.register(dl.MapAccum)
def _label_delta_map_accum(input_names: Mapping[int, str], d: dl.MapAccum) -> str:
    """``s7 = MapAccumL 5``: a loop's Delta, bound like a Share (horde-ad's
    DeltaMapAccum; not in the paper); its operands are the tangents of its inputs."""
    return f"s{d.id} = MapAccum{'R' if d.loop.reverse else 'L'} {d.loop.length}"


@DELTA_LABELS.register(dl.LoopOutput)
def _label_delta_loop_output(input_names: Mapping[int, str], d: dl.LoopOutput) -> str:
    """``s7.0``: the tangent of result ``k`` of a loop."""
    loop = d.delta
    return f"s{loop.id}.{d.index}" if isinstance(loop, dl.MapAccum) else f"LoopOutput {d.index}"


def _delta_type(d: dl.Delta) -> str:
    """A Delta's type, or a loop's tuple of result types."""
    if isinstance(d, dl.MapAccum):
        types = [type_name(s, t) for s, t in zip(d.shapes, d.dtypes, strict=True)]
        return "(" + ", ".join(types) + ")"
    return type_name(d.shape, d.dtype)


def _delta_sketch(
    root: dl.Delta,
    highlight: dl.Delta | None,
    values: Mapping[dl.Delta, Any],
    cotangents: Mapping[dl.Delta, Any],
    done: Collection[dl.Delta],
    input_names: Mapping[int, str],
) -> _Sketch:
    order = dl.delta_postorder([root])
    number = {id(d): k for k, d in enumerate(order)}
    finished = {id(d) for d in done}
    sketch = _Sketch()
    for d in order:
        key = f"d{number[id(d)]}"
        look = {"shape": "doubleoctagon"} if isinstance(d, dl.Share | dl.MapAccum) else {}
        if d is highlight:
            look |= {"style": "rounded,filled", "fillcolor": "gold"}
        elif id(d) in finished:
            look |= {"style": "rounded,filled", "fillcolor": "gray90"}
        lines = [_delta_head(d, input_names), _delta_type(d)]
        if d in values:
            lines.append(f"value {short_value(values[d])}")
        if d in cotangents:
            lines.append(f"cotangent {short_value(cotangents[d])}")
        sketch.node(key, "\n".join(lines), look)
        for kid in dl.delta_children(d):
            sketch.edge(key, f"d{number[id(kid)]}")
    return sketch


def delta_graph(
    root: dl.Delta,
    name: str = "delta",
    highlight: dl.Delta | None = None,
    *,
    values: Mapping[dl.Delta, Any] | None = None,
    cotangents: Mapping[dl.Delta, Any] | None = None,
    input_names: Mapping[int, str] | None = None,
    rankdir: RankDir = "auto",
    max_width: float = MAX_WIDTH,
) -> Drawing:
    """The Delta DAG (Fig. 16): Share nodes (with their ids) drawn once, primal shapes
    shown, factors and index functions written out; ``highlight`` (the node a
    reverse-pass step works on) is filled.  For a concrete Delta, ``values`` and
    ``cotangents`` (by node) are shown on their nodes, as micrograd's ``draw_dot``
    shows data and grad; ``input_names`` names the inputs (``Input 0 (x)``)."""
    sketch = _delta_sketch(
        root, highlight, values or {}, cotangents or {}, (), input_names or {}
    )
    return sketch.drawing(name, rankdir, max_width)


def reverse_cotangents(
    root: dl.Delta, steps: Sequence[ReverseStep], seed: Any = None
) -> tuple[dict[dl.Delta, Any], list[dl.Delta]]:
    """The cotangents the reverse pass of Fig. 17 has given each node after ``steps``
    (:func:`~dualarr.ad.reverse.reverse_steps`, up to the current one): an evaluated
    Share's whole cotangent, a pending Share's ``accum`` so far, an Input's ``grad`` so
    far, the root's ``seed`` (if given); and the Shares already evaluated."""
    shares = {d.id: d for d in dl.delta_postorder([root]) if isinstance(d, dl.Share | dl.MapAccum)}
    inputs = {d.index: d for d in dl.delta_postorder([root]) if isinstance(d, dl.Input)}
    cotangents: dict[dl.Delta, Any] = {} if seed is None else {root: seed}
    done: list[dl.Delta] = []
    for before, step in pairwise(steps):
        if step.share_id is not None and step.share_id in shares:
            node = shares[step.share_id]
            cotangents[node] = before.accum[step.share_id]
            done.append(node)
    if steps:
        last = steps[-1]
        cotangents |= {shares[i]: c for i, c in last.accum.items() if i in shares}
        cotangents |= {inputs[n]: g for n, g in last.grad.items() if n in inputs}
    return cotangents, done


def reverse_graph(
    root: dl.Delta,
    steps: Sequence[ReverseStep],
    *,
    seed: Any = None,
    values: Mapping[dl.Delta, Any] | None = None,
    input_names: Mapping[int, str] | None = None,
    name: str = "reverse",
    rankdir: RankDir = "auto",
    max_width: float = MAX_WIDTH,
) -> Drawing:
    """The reverse pass of Fig. 17 after the last of ``steps``, drawn on the Delta: each
    node's cotangent so far (:func:`reverse_cotangents`), the evaluated Shares greyed,
    the node of the last step highlighted."""
    cotangents, done = reverse_cotangents(root, steps, seed)
    highlight = steps[-1].node if steps else None
    sketch = _delta_sketch(root, highlight, values or {}, cotangents, done, input_names or {})
    return sketch.drawing(name, rankdir, max_width)


# --------------------------------------------------------------------------------------
# Fused kernels (§7.5)
# --------------------------------------------------------------------------------------


def _kernel_literal(value: float | bool) -> str:
    return str(value) if isinstance(value, bool) else repr(float(value))


def _kernel_sketch(sketch: _Sketch, cluster: int, kernel: Kernel) -> None:
    """``kernel``'s expression tree into box ``cluster`` of ``sketch``."""
    numbers = count()
    drawn: set[int] = set()

    def draw(expr: KernelExpr, root: bool) -> str:
        match expr:
            case Arg(index=i):
                key = f"k{cluster}a{i}"
                if i not in drawn:  # a parameter is drawn once, however often it is read
                    drawn.add(i)
                    label = f"{kernel.params[i]}\n{kernel.param_dtypes[i]}"
                    sketch.node(key, label, {"shape": "ellipse"}, cluster)
                return key
            case KernelLiteral(value=value):
                key = f"k{cluster}n{next(numbers)}"
                sketch.node(key, _kernel_literal(value), None, cluster)
                return key
            case Apply(op=op, args=args):
                key = f"k{cluster}n{next(numbers)}"
                label = f"{op}\n{type_name(kernel.shape, kernel.dtype)}" if root else op
                sketch.node(key, label, None, cluster)
                for arg in args:
                    sketch.edge(key, draw(arg, False))
                return key
            case _:
                assert_never(expr)

    draw(kernel.expression, True)


def kernel_graph(
    kernels: Sequence[Kernel],
    name: str = "kernels",
    *,
    note: str = "no fused kernels",
    rankdir: RankDir = "auto",
    max_width: float = MAX_WIDTH,
) -> Drawing:
    """The fused kernels of a generated program (§7.5), one box per kernel labelled with
    its signature: its expression tree with operations labelled by their primitive
    (``mul``, ``cos``, ``select``) and the result's type on the root, each parameter
    drawn once as an ellipse with its dtype, literals by their value.  Edges go from an
    operation to its operands, as in :func:`term_graph`.  With no kernel the drawing is
    ``note`` alone."""
    sketch = _Sketch()
    for cluster, kernel in enumerate(kernels):
        _kernel_sketch(sketch, cluster, kernel)
    if not kernels:
        sketch.node("note", note, {"shape": "plain"})
    titles = [_wrapped(f"{k.name}({', '.join(k.params)})") for k in kernels]
    return sketch.drawing(name, rankdir, max_width, titles)


install_views(term_graph=term_graph, delta_graph=delta_graph, stage_graph=stage_graph)
install_views(kernel_graph=kernel_graph)

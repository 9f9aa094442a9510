"""Graphviz drawings of terms and Deltas (every stage): DAGs with shared nodes drawn
once, Share ids, index functions as text, a text fallback without ``dot``; drawings that
read like the program's text (bindings labelled ``v1 = …``, uses as edges, outputs named
``value`` and ``gradient of x``, the text's index variables), factors and cotangents on a
concrete Delta's nodes, and a layout that keeps wide drawings readable."""

from __future__ import annotations

import json
import re
import shutil
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.ad.reverse import reverse, reverse_steps
from dualarr.ad.share_to_let import LetProgram
from dualarr.ad.symbolic_reverse import SharedGradient
from dualarr.api import dual_run
from dualarr.interp.evaluate import NumpyAlgebra
from dualarr.lang.errors import DualarrError
from dualarr.lang.terms import (
    DType,
    IdSupply,
    Op,
    Term,
    Var,
    count_nodes,
    fresh_var,
    term_constructors,
)
from dualarr.pipeline import Pipeline
from dualarr.show.drawing import (
    DELTA_LABELS,
    DOT_HINT,
    INDEX_FUNCTION_CONSTRUCTS,
    LABELS,
    MAX_WIDTH,
    Drawing,
    delta_graph,
    reverse_cotangents,
    reverse_graph,
    short_value,
    stage_graph,
    term_graph,
)
from dualarr.show.printer import Printer, index_fn_text
from dualarr.teach.examples import fig18

X = np.arange(1.0, 6.0)
SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


@dataclass(frozen=True)
class Dot:
    """A drawing's DOT source read back: node labels and attributes, and edges."""

    labels: dict[str, str]
    attributes: dict[str, str]
    edges: list[tuple[str, str]]

    @classmethod
    def of(cls, drawing: Any) -> Dot:
        source = drawing.source
        labels: dict[str, str] = {}
        attributes: dict[str, str] = {}
        node = r'^\t+(\w+) \[label=("(?:[^"\\]|\\.)*"|[^\s\]]+)(.*?)\]$'
        for key, label, rest in re.findall(node, source, flags=re.M | re.S):
            labels[key] = label[1:-1] if label.startswith('"') else label
            attributes[key] = rest
        edges = re.findall(r"^\t+(\w+) -> (\w+)", source, flags=re.M)  # clusters: deeper
        return cls(labels, attributes, edges)

    def outputs(self) -> list[str]:
        """The labels of the output markers, in order."""
        return [label for key, label in self.labels.items() if key.startswith("out")]

    def heads(self) -> list[str]:
        """The first line of every node's label but the output markers'."""
        return [label.split("\n")[0] for key, label in self.labels.items() if key[0] != "o"]


def node_count(drawing: Any) -> int:
    return len(re.findall(r"^\s*[nd]\d+ \[label=", drawing.source, flags=re.M))


def pipeline_of(gp: GeneratedProgram) -> Pipeline:
    try:
        return da.pipeline(gp.function(), *gp.arrays)
    except DualarrError:
        assume(False)
        raise


def lambda_params(text: str, sign: str) -> set[str]:
    """The variables of every index function in ``text`` (``\\[i, j].`` or ``λ[i, j].``)."""
    found = re.findall(re.escape(sign) + r"\[([\w, ]*)\]\.", text)
    return {name for group in found for name in group.split(", ") if name}


# --------------------------------------------------------------------------------------
# Drawn as a DAG, every stage
# --------------------------------------------------------------------------------------


def test_a_term_is_drawn_as_its_dag() -> None:
    def shared(x: Any) -> Any:
        y = da.sin(x)
        return da.sum(y * y)

    program = da.trace(shared, X)
    drawing = program.graph()
    assert isinstance(drawing, Drawing)
    assert node_count(drawing) == count_nodes(program.outputs)  # sin x drawn once
    assert drawing.source.count('label="t1 = sin\n') == 1  # named as the text names it
    assert "let t1 = sin x in" in str(program)


def test_gathers_show_their_index_function_as_text() -> None:
    source = da.pipeline(fig18, X).vectorised.graph().source
    assert "gather [5]\nλ[i]. [4 - i]" in source
    assert "style=dashed" in source  # the edge into the index function


def test_every_stage_draws() -> None:
    p = da.pipeline(fig18, X)
    for stage in (p.source, p.vectorised, p.forward, p.delta, p.shared, p.gradient):
        assert node_count(stage.graph()) > 0
        assert node_count(stage_graph(stage)) > 0
    forward = stage_graph(p.forward).source
    assert "Share 1\nfloat64[5]" in forward and "Share 2\nfloat64[]" in forward


def test_a_concrete_delta_draws_with_share_ids_and_shapes() -> None:
    run = dual_run(da.pipeline(fig18, X).vectorised, (X,), (0,))
    source = run.deltas[0].graph().source
    assert "shape=doubleoctagon" in source and "Input 0\nfloat64[5]" in source
    assert "Gather [5]\nλ[i]. [4 - i]" in source  # the tabulated function, read back


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_drawings_render_to_svg_in_notebooks() -> None:
    bundle = stage_graph(da.pipeline(fig18, X).gradient)._repr_mimebundle_()
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")


def test_without_dot_the_display_is_the_dot_source_with_a_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "")
    bundle = da.trace(fig18, X).graph()._repr_mimebundle_()
    assert bundle["text/plain"].startswith("digraph fig18 {")
    assert bundle["text/plain"].endswith(DOT_HINT)


# --------------------------------------------------------------------------------------
# Let programs read like their text (Fig. 21)
# --------------------------------------------------------------------------------------


def test_the_gradient_program_draws_its_bindings_and_names_its_outputs() -> None:
    p = da.pipeline(fig18, X)
    assert "let v1 = gather [5] x (\\[i]. [4 - i]) in" in str(p.gradient)
    dot = Dot.of(stage_graph(p.gradient))
    (binding,) = [k for k, label in dot.labels.items() if label.startswith("v1 = gather [5]")]
    assert "v1" not in dot.heads()  # no unconnected leaf named v1
    users = {tail for tail, head in dot.edges if head == binding}
    assert {dot.labels[u].split("\n")[0] for u in users} == {"dot0", "mul"}
    assert dot.outputs() == ["value", "gradient of x"]


def test_a_binding_of_a_variable_is_a_node_of_its_own() -> None:
    supply = IdSupply()
    x = fresh_var(supply, "x", (3,), DType.FLOAT64)
    v1 = fresh_var(supply, "v1", (3,), DType.FLOAT64)
    v2 = fresh_var(supply, "v2", (3,), DType.FLOAT64)
    square = Op("mul", (x, x))
    drawing = term_graph(
        [Op("add", (v1, v2))], inputs=[x], bindings=[(v1, square), (v2, v1)], labels=["out"]
    )
    dot = Dot.of(drawing)
    keys = {label.split("\n")[0]: key for key, label in dot.labels.items()}
    assert set(keys) >= {"v1 = mul", "v2 = v1", "add", "x", "out"}
    assert (keys["v2 = v1"], keys["v1 = mul"]) in dot.edges  # the alias points at v1
    assert (keys["add"], keys["v1 = mul"]) in dot.edges and (keys["add"], keys["v2 = v1"]) in (
        dot.edges
    )


@settings(max_examples=25, suppress_health_check=SLOW_OK)
@given(programs(float_only=True, output_shapes=st.just(()), max_depth=4))
def test_let_program_drawings_read_like_their_text(gp: GeneratedProgram) -> None:
    """In the drawings of the ``shared`` and ``gradient`` stages every binding the text
    prints is the node labelled ``v = …``, every use of it an edge there (no node is a
    bare bound name), the outputs are ``value`` and ``gradient of <input>`` and nothing
    else, and the index functions have the text's variables."""
    p = pipeline_of(gp)
    shared, gradient = p.shared, p.gradient
    stages: list[tuple[SharedGradient | LetProgram, Sequence[tuple[Var, Term]], list[Term]]] = [
        (shared, shared.extracted.bindings, [shared.extracted.value, *shared.gradients]),
        (gradient, gradient.bindings, list(gradient.outputs)),
    ]
    for stage, bindings, outputs in stages:
        text = str(stage)
        names = Printer(
            [*(t for _, t in bindings), *outputs], inputs=[*stage.inputs, *dict(bindings)]
        ).names
        printed = set(re.findall(r"^let (\w+) = ", text, flags=re.M))
        bound = {names[v.id] for v, _ in bindings} & printed
        dot = Dot.of(stage_graph(stage))
        heads = dot.heads()
        assert not bound & set(heads)  # no leaf named by a bound variable
        assert bound <= {head.split(" = ")[0] for head in heads if " = " in head}
        for key, label in dot.labels.items():
            if label.split(" = ")[0] in bound:
                assert any(head == key for _, head in dot.edges), label  # used, or an output
        inputs = [names[v.id] for v in stage.inputs]
        assert dot.outputs() == ["value", *(f"gradient of {inputs[k]}" for k in stage.positions)]
        assert not any(re.fullmatch(r"result( \d+)?", label) for label in dot.labels.values())
        drawn = "\n".join(dot.labels.values())
        assert lambda_params(drawn, "λ") == lambda_params(text, "\\")


@settings(max_examples=25, suppress_health_check=SLOW_OK)
@given(programs(max_depth=4))
def test_program_drawings_use_the_texts_index_variable_names(gp: GeneratedProgram) -> None:
    p = pipeline_of(gp)
    for program in (p.source, p.vectorised):
        dot = Dot.of(stage_graph(program))
        drawn = "\n".join(dot.labels.values())
        assert lambda_params(drawn, "λ") == lambda_params(str(program), "\\")
        builds = set(re.findall(r"build1 \d+ \(λ(\w+)\)", drawn))
        assert builds == set(re.findall(r"build1 \d+ \(\\(\w+)\.", str(program)))
        expected = ["value"] if len(program.outputs) == 1 else None
        assert expected is None or dot.outputs() == expected


# --------------------------------------------------------------------------------------
# Deltas: factors, index functions, values and cotangents
# --------------------------------------------------------------------------------------


def test_scale_nodes_show_their_factor() -> None:
    x = np.array([0.0, 1.0, 2.0])
    run = dual_run(da.trace(lambda a: da.sum(da.sin(a)), x), (x,), (0,))
    dot = Dot.of(delta_graph(run.deltas[0]))
    (scale,) = [label for label in dot.labels.values() if label.startswith("Scale\n")]
    assert scale.split("\n")[1] == "[1., 0.5403, -0.4161]"  # cos x, by value
    symbolic = Dot.of(stage_graph(da.pipeline(lambda a: da.sum(da.sin(a)), x).delta))
    (scale,) = [label for label in symbolic.labels.values() if label.startswith("Scale\n")]
    assert re.fullmatch(r"v\d+", scale.split("\n")[1])  # by name


@settings(max_examples=40, suppress_health_check=SLOW_OK)
@given(programs(float_only=True, max_depth=4))
def test_delta_nodes_show_factors_and_index_functions(gp: GeneratedProgram) -> None:
    """Every Scale and Contract node of a concrete Delta shows its factor (its values or
    its type, never a bare shape), and every Gather and Scatter its whole index function
    as the printed Delta writes it (with ``λ`` for ``\\``)."""
    program = gp.program()
    run = dual_run(program, gp.arrays, tuple(range(len(gp.inputs))))
    delta = run.deltas[0]
    dot = Dot.of(delta_graph(delta))
    order = dl.delta_postorder([delta])
    for k, node in enumerate(order):
        label = dot.labels[f"d{k}"].split("\n")
        match node:
            case dl.Scale(factor=f) | dl.Contract(factor=f):
                assert label[1] == short_value(f) and not label[1].startswith("<[")
            case dl.Gather(outer=outer, fn=fn):
                assert_index_function(label[1:-1], index_fn_text(fn, len(outer), lam="λ"))
            case dl.Scatter(fn=fn, n_vars=n):
                assert_index_function(label[1:-1], index_fn_text(fn, n, lam="λ"))
            case _:
                pass


def assert_index_function(lines: list[str], text: str) -> None:
    """The label's lines are the index function, wrapped (and cut after four lines)."""
    drawn = " ".join(" ".join(lines).split())
    assert drawn == text or (drawn.endswith(" …") and text.startswith(drawn[:-2])), drawn


def test_a_delta_shows_values_and_cotangents_on_its_nodes() -> None:
    run = dual_run(da.pipeline(fig18, X).vectorised, (X,), (0,))
    root = run.deltas[0]
    inputs = [d for d in dl.delta_postorder([root]) if isinstance(d, dl.Input)]
    gradient = reverse(NumpyAlgebra(), root, np.ones(()))[0]
    drawing = delta_graph(
        root, values={root: run.values[0]}, cotangents={inputs[0]: gradient}, input_names={0: "x"}
    )
    labels = Dot.of(drawing).labels.values()
    assert "Input 0 (x)\nfloat64[5]\ncotangent [10., 8., 6., 4., 2.]" in labels
    assert any(label.endswith("\nvalue 35.0") for label in labels)


@settings(max_examples=40, suppress_health_check=SLOW_OK)
@given(programs(float_only=True, output_shapes=st.just(()), max_depth=4))
def test_the_reverse_pass_drawing_shows_each_nodes_cotangent(gp: GeneratedProgram) -> None:
    """After the whole reverse pass (Fig. 17) every Share is greyed with the cotangent it
    was evaluated with, every Input shows its gradient, and after each step the step's
    node is the one highlighted."""
    run = dual_run(gp.program(), gp.arrays, tuple(range(len(gp.inputs))))
    root = run.deltas[0]
    steps = list(reverse_steps(NumpyAlgebra(), root, np.ones(())))
    cotangents, done = reverse_cotangents(root, steps)
    # a loop's Delta has an id too: the pass takes it once, as a Share (#38)
    shares = {d for d in dl.delta_postorder([root]) if isinstance(d, dl.Share | dl.MapAccum)}
    assert set(done) == shares and shares <= set(cotangents)
    for node, cotangent in cotangents.items():
        if isinstance(node, dl.Input):
            np.testing.assert_array_equal(cotangent, steps[-1].grad[node.index])
    dot = Dot.of(reverse_graph(root, steps))
    order = dl.delta_postorder([root])
    for k, node in enumerate(order):
        label, look = dot.labels[f"d{k}"], dot.attributes[f"d{k}"]
        if node in cotangents:
            assert label.endswith(f"\ncotangent {short_value(cotangents[node])}")
        assert ("gray90" in look) == (node in shares and node is not steps[-1].node)
    for n in range(len(steps)):
        looks = Dot.of(reverse_graph(root, steps[: n + 1])).attributes
        (highlighted,) = [k for k, a in looks.items() if "gold" in a]
        assert order[int(highlighted[1:])] is steps[n].node


# --------------------------------------------------------------------------------------
# Layout: wide drawings are laid out left to right
# --------------------------------------------------------------------------------------


def _wide(x: Any) -> Any:
    return da.sum(da.from_list([x[k] * x[k + 1] for k in range(24)]))


def test_a_wide_drawing_is_laid_out_left_to_right() -> None:
    program = da.trace(_wide, np.ones(25))
    drawing = program.graph()
    assert drawing.layout.width_tb > MAX_WIDTH > drawing.layout.width_lr
    assert drawing.layout.rankdir == "LR" and "rankdir=LR" in drawing.source
    narrow = da.trace(fig18, X).graph()
    assert narrow.layout.rankdir == "TB" and narrow.layout.width_tb <= MAX_WIDTH
    roomy = stage_graph(program, max_width=2 * drawing.layout.width_tb)
    assert roomy.layout.rankdir == "TB"
    assert stage_graph(program, rankdir="BT").layout.rankdir == "BT"


@settings(max_examples=30, suppress_health_check=SLOW_OK)
@given(programs(max_depth=5), st.floats(100.0, 2000.0))
def test_the_layout_is_top_to_bottom_unless_too_wide(gp: GeneratedProgram, limit: float) -> None:
    drawing = term_graph(list(gp.program().outputs), max_width=limit)
    layout = drawing.layout
    wide = layout.width_tb > limit and layout.width_lr < layout.width_tb
    assert layout.rankdir == ("LR" if wide else "TB")
    assert f"rankdir={layout.rankdir}" in drawing.source
    assert layout.width == min(layout.width_tb, layout.width_lr) or not wide


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_the_width_estimate_is_close_to_dots() -> None:
    p = da.pipeline(fig18, X)
    program = da.trace(_wide, np.ones(25))
    for drawing in (stage_graph(p.gradient), stage_graph(p.shared), program.graph()):
        bb = json.loads(drawing.pipe(format="json"))["bb"]
        width = float(bb.split(",")[2]) - float(bb.split(",")[0])
        assert 0.6 * width <= drawing.layout.width <= 1.6 * width


def test_every_construct_has_a_label() -> None:
    """Term and Delta drawings label each construct by its rule in LABELS and
    DELTA_LABELS (#37): every term constructor and every Delta constructor has one."""
    assert [c.__name__ for c in term_constructors() if c not in LABELS] == []
    assert [c.__name__ for c in typing.get_args(dl.Delta) if c not in DELTA_LABELS] == []
    assert set(typing.get_args(Term)) >= INDEX_FUNCTION_CONSTRUCTS


"""Printing and drawing loops (horde-ad's mapAccumL/R; not in the paper), through every
view: a traced ``da.scan`` prints its body once as a lambda, ``mapAccumL n (\\(c; x;
w). (c'; y)) (init) (xs) (consts)``, with the body's shared nodes as lets inside it and
its results read as ``t.k``; a drawing frames the body once, nested loops in nested
frames; a loop's Delta prints like a Share, ``s7 = MapAccumL …``, read as ``s7.0``.
Neither the text nor the drawing grows with the loop's length."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dualarr as da
import dualarr.numpy as dnp
from dualarr.ad import delta as dl
from dualarr.ad.symbolic_forward import format_symbolic_delta
from dualarr.lang.program import Program
from dualarr.lang.terms import (
    DType,
    LoopOutput,
    MapAccum,
    Term,
    Var,
    postorder,
)
from dualarr.show.drawing import delta_graph, stage_graph, term_graph
from dualarr.show.printer import (
    constant_table,
    print_delta,
    print_let_program,
    print_program,
    print_term,
)


def rnn(x: Any, w: Any) -> Any:
    def body(c: Any, xi: Any) -> tuple[Any, Any]:
        c2 = dnp.tanh(c * w + xi)
        return c2, c2.sum()

    c, ys = da.scan(body, x[0], x)
    return c.sum() + ys.sum()


def traced(f: Callable[..., Any], *shapes: tuple[int, ...]) -> Program:
    rng = np.random.default_rng(0)
    return da.trace(f, *(rng.standard_normal(s) for s in shapes))


def loops_of(program: Program) -> list[MapAccum]:
    return [n for n in postorder(program.outputs) if isinstance(n, MapAccum)]


def without(text: str, number: int) -> str:
    """``text`` with every whole occurrence of ``number`` written ``N``."""
    return re.sub(rf"\b{number}\b", "N", text)


# --------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------


def test_a_scan_prints_its_body_once_as_a_lambda_with_its_lets_inside() -> None:
    text = str(traced(rnn, (5, 3), (3,)))
    assert text == (
        "\\x w.\n"
        "let t2 = mapAccumL 5 (\\(c; xi; w1).\n"
        "  let t1 = tanh (c * w1 + xi) in\n"
        "  (t1; sumOuter t1)) (x[0]) (x) (w) in\n"
        "sumOuter t2.0 + sumOuter t2.1"
    )
    assert text.count("tanh") == 1


@settings(max_examples=15, deadline=None)
@given(st.integers(4, 10**4))
def test_the_text_does_not_grow_with_the_length(length: int) -> None:
    """Only the loop's length differs between the texts of a 4-step and an n-step scan."""
    short = str(traced(rnn, (4, 3), (3,)))
    long = str(traced(rnn, (length, 3), (3,)))
    assert without(long, length) == without(short, 4)
    assert len(long) - len(short) == len(str(length)) - 1


def test_a_reversed_scan_prints_as_map_accum_r() -> None:
    def f(x: Any) -> Any:
        c, ys = da.scan(lambda c, xi: (c + xi, c * xi), x[0], x, reverse=True)
        return c.sum() + ys.sum()

    text = str(traced(f, (6, 2)))
    assert "mapAccumR 6 (\\(c; xi; ). (c + xi; c * xi)) (x[0]) (x) ()" in text
    assert "mapAccumL" not in text


def _lambda_groups(text: str) -> tuple[list[list[str]], list[list[str]]]:
    """The binders and the results of the one loop in ``text``, group by group."""
    found = re.search(
        r"mapAccum[LR] \d+ \(\\\(([^)]*)\)\.\s*(?:let [^\n]* in\s*)*\((.*)\)\) \(", text
    )
    assert found is not None, text
    binders, results = found.groups()
    split = [[name for name in g.strip().split(", ") if name] for g in binders.split(";")]
    return split, [[r for r in g.strip().split(", ") if r] for g in results.split(";")]


def test_pytrees_of_carries_xs_and_ys_print_as_groups() -> None:
    """Two carries, two xs, three ys: the lambda binds ``(a, b; p, q; w)`` and returns
    ``(a', b'; y1, y2, y3)``; the loop's results are read ``t.0`` … ``t.4``."""

    def f(x: Any, z: Any, w: Any) -> Any:
        def body(carry: Any, row: Any) -> Any:
            a, b = carry
            a2 = a * w + row["p"]
            b2 = b + row["q"].sum()
            return (a2, b2), (a2, b2, row["q"] * 2.0)

        (a, b), (y1, y2, y3) = da.scan(body, (x[0], z[0].sum()), {"p": x, "q": z})
        return a.sum() + b + y1.sum() + y2.sum() + y3.sum()

    program = traced(f, (4, 3), (4, 2), (3,))
    (loop,) = loops_of(program)
    text = str(program)
    binders, results = _lambda_groups(text)
    assert [len(g) for g in binders] == [2, 2, 1]
    assert [len(g) for g in results] == [2, 3]
    assert [len(g) for g in binders] == [len(loop.carry_vars), len(loop.x_vars), 1]
    loop_name = re.search(r"let (t\d+) = mapAccumL 4", text)
    assert loop_name is not None
    read = set(re.findall(rf"\b{loop_name[1]}\.(\d+)", text))
    assert read == {str(k) for k in range(len(loop.shapes))} == set("01234")


def test_a_scan_inside_a_scan_prints_inside_the_outer_lambda() -> None:
    def f(x: Any) -> Any:
        def outer(c: Any, row: Any) -> Any:
            d, zs = da.scan(lambda d, e: (d * e + c, d.sum()), c, row, reverse=True)
            return d, zs

        c, ys = da.scan(outer, x[0], x)
        return c.sum() + ys.sum()

    text = str(traced(f, (5, 3)))
    outer, inner = text.index("mapAccumL 5"), text.index("mapAccumR 3")
    assert outer < inner
    inner_line = next(line for line in text.split("\n") if "mapAccumR 3" in line)
    assert inner_line.startswith("  let t1 = mapAccumR 3 (\\(d; e; c1). ")  # in the body
    assert text.count("mapAccum") == 2


def test_a_fori_loop_prints_its_step_numbers_and_its_empty_groups() -> None:
    def f(x: Any) -> Any:
        return da.fori_loop(0, 7, lambda i, c: c * 2.0 + dnp.sin(c), x)

    text = str(traced(f, (3,)))
    assert (
        text == "\\x. (mapAccumL 7 (\\(c; i; ). (c * replicate 3 2.0 + sin c; )) (x) (iota 7) ()).0"
    )


def test_a_large_constant_in_a_body_is_named_and_tabulated() -> None:
    """The body is closed: a large constant it reads is a named constant (``k1``),
    declared above the program, in the constant table, and printed inside the lambda."""
    table = np.arange(20.0)

    def f(x: Any) -> Any:
        c, _ = da.scan(lambda c, _: (c * table, None), x, length=3)
        return c

    program = traced(f, (20,))
    text = str(program)
    assert text.split("\n")[0] == "k1 : float64[20]"
    assert "\\(c; ; ). (c * k1; )" in text
    tables = constant_table(program.inputs, program.outputs)
    assert list(tables) == ["k1"] and np.array_equal(tables["k1"], table)


def test_a_let_program_binds_the_loop_and_its_results() -> None:
    """``print_let_program`` over a loop's outputs (every binding, as Eq. 6 prints it):
    one binding a result, the loop itself let-bound once above them."""
    program = traced(rnn, (5, 3), (3,))
    (loop,) = loops_of(program)
    a = Var(10_001, "v", loop.shapes[0], DType.FLOAT64)
    b = Var(10_002, "v", loop.shapes[1], DType.FLOAT64)
    bindings = [(a, LoopOutput(0, loop)), (b, LoopOutput(1, loop))]
    text = print_let_program(program.inputs, bindings, [a, b], every_binding=True)
    lines = text.split("\n")
    assert lines[0] == "\\x w."
    assert lines[1].startswith("let t2 = mapAccumL 5 (\\(c; xi; w1).")
    assert lines[-3:] == ["let v = t2.0 in", "let v1 = t2.1 in", "(v, v1)"]
    assert text.count("tanh") == 1


def test_the_structure_view_shows_a_loops_result_types() -> None:
    program = traced(rnn, (5, 3), (3,))
    dump = repr(program.outputs[0])
    (line,) = [line for line in dump.split("\n") if "= MapAccum(" in line]
    assert line.endswith(": (float64[3], float64[5])")
    assert "LoopOutput(index=1" in dump
    (loop,) = loops_of(program)
    assert print_term(loop).startswith("mapAccumL 5 (\\(c; xi; w1).")
    assert repr(loop).startswith("<MapAccum (float64[3], float64[5]), ")


def test_numpy_source_leaves_out_the_calls_a_body_made() -> None:
    """A ``dualarr.numpy`` call inside a scan body reads the body's variables: it is
    shown as part of its loop, never as a ``let`` at the top."""
    program = traced(rnn, (5, 3), (3,))
    text = program.numpy_source()
    tops = [line for line in text.split("\n") if line.startswith("let ")]
    assert [line.split(" = ")[0] for line in tops] == ["let t2", "let sum", "let sum1"]
    assert "# dnp.tanh" not in text
    assert text.count("# dnp.sum") == 2


# --------------------------------------------------------------------------------------
# Drawings
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frames:
    """A drawing's DOT source read back: each node's label and the frames around it
    (outermost first), and each frame's label."""

    labels: dict[str, str]
    around: dict[str, tuple[str, ...]]
    titles: dict[str, str]

    @classmethod
    def of(cls, source: str) -> Frames:
        labels: dict[str, str] = {}
        around: dict[str, tuple[str, ...]] = {}
        titles: dict[str, str] = {}
        stack: list[str] = []
        for line in source.split("\n"):
            line = line.strip()
            if opened := re.match(r"subgraph (cluster_\d+) \{", line):
                stack.append(opened[1])
            elif line == "}":
                if stack:
                    stack.pop()
            elif title := re.match(r'.*\blabel="([^"]*)" style="rounded,dashed"', line):
                titles[stack[-1]] = title[1]
            elif node := re.match(r'(\w+) \[label=("[^"]*"|[^\s\]]+)', line):
                labels[node[1]] = node[2].strip('"')
                around[node[1]] = tuple(stack)
        return cls(labels, around, titles)


def _joined_source(drawing: Any) -> str:
    """The DOT source with each multi-line label on one line."""
    return re.sub(
        r'label="([^"]*)"', lambda m: 'label="' + m[1].replace("\n", "|") + '"', drawing.source
    )


def test_a_loop_is_drawn_once_in_a_frame() -> None:
    program = traced(rnn, (1000, 3), (3,))
    frames = Frames.of(_joined_source(stage_graph(program)))
    assert list(frames.titles.values()) == ["mapAccumL 1000"]
    (frame,) = frames.titles
    inside = {frames.labels[k].split("|")[0] for k, f in frames.around.items() if f == (frame,)}
    assert inside == {
        "c",
        "xi",
        "w1",
        "add",
        "mul",
        "t1 = tanh",
        "sumOuter",
        "t2 = mapAccumL 1000 (λc; xi; w1)",
    }
    outside = [frames.labels[k].split("|")[0] for k, f in frames.around.items() if not f]
    assert sorted(outside) == sorted(
        ["x", "w", "0", "index", "t2.0", "t2.1", "sumOuter", "sumOuter", "add", "value"]
    )
    heads = [label.split("|")[0] for label in frames.labels.values()]
    assert heads.count("t1 = tanh") == 1


def test_the_binders_read_the_loops_inputs() -> None:
    """Dotted edges from each binder (inside the frame) to the term it is bound to: the
    initial carry, the xs, the loop invariant."""
    program = traced(rnn, (5, 3), (3,))
    source = _joined_source(stage_graph(program))
    frames = Frames.of(source)
    key = {label.split("|")[0]: k for k, label in frames.labels.items()}
    dotted = set(re.findall(r"^\t(\w+) -> (\w+) \[style=dotted\]", source, flags=re.M))
    assert dotted == {(key["c"], key["index"]), (key["xi"], key["x"]), (key["w1"], key["w"])}


@settings(max_examples=10, deadline=None)
@given(st.integers(4, 10**4))
def test_the_drawing_does_not_grow_with_the_length(length: int) -> None:
    short = stage_graph(traced(rnn, (4, 3), (3,))).source
    long = stage_graph(traced(rnn, (length, 3), (3,))).source
    nodes = r"^\s*\w+ \[label="
    assert len(re.findall(nodes, long, flags=re.M)) == len(re.findall(nodes, short, flags=re.M))
    assert without(long, length) == without(short, 4)


def test_a_scan_inside_a_scan_is_a_frame_inside_a_frame() -> None:
    def f(x: Any) -> Any:
        def outer(c: Any, row: Any) -> Any:
            d, zs = da.scan(lambda d, e: (dnp.sin(d * e + c), d.sum()), c, row, reverse=True)
            return d, (zs, d * 2.0)

        c, (ys, zs) = da.scan(outer, x[0], x)
        return c.sum() + ys.sum() + zs.sum()

    frames = Frames.of(_joined_source(term_graph(traced(f, (5, 3)).outputs)))
    by_title = {title: frame for frame, title in frames.titles.items()}
    assert set(by_title) == {"mapAccumL 5", "mapAccumR 3"}
    outer, inner = by_title["mapAccumL 5"], by_title["mapAccumR 3"]
    where = {frames.labels[k].split("|")[0]: f for k, f in frames.around.items()}
    assert where["sin"] == (outer, inner)  # the inner body, in both frames
    assert where["d"] == (outer, inner) and where["c1"] == (outer, inner)
    assert where["c"] == (outer,) and where["row"] == (outer,)
    assert where["2.0"] == (outer,)  # a constant only the outer body reads
    assert where["x"] == ()


def test_every_stage_of_a_loop_program_draws() -> None:
    program = traced(rnn, (5, 3), (3,))
    assert "mapAccumL 5" in stage_graph(program).source
    assert "mapAccumL 5" in program.numpy_graph().source


# --------------------------------------------------------------------------------------
# Deltas
# --------------------------------------------------------------------------------------


def hand_delta() -> tuple[dl.MapAccum, dl.Delta]:
    """The Delta of ``rnn``'s loop, built by hand: the tangent of the initial carry is
    ``Input 0``, of the xs ``Zero``, of the invariant ``Input 1``; read as ``s7.0 +
    s7.1``-shaped sums."""
    program = traced(rnn, (5, 3), (3,))
    (loop,) = loops_of(program)
    f64 = DType.FLOAT64
    residuals = (np.zeros((5, 3)),)
    xs = (np.ones((5, 3)),)
    consts = (np.array([0.5, 0.25, 0.125]),)
    d = dl.MapAccum(
        7,
        loop,
        residuals,
        xs,
        consts,
        (dl.Input(0, (3,), f64),),
        (dl.Zero((5, 3), f64),),
        (dl.Input(1, (3,), f64),),
    )
    root = dl.Add(dl.SumOuter(dl.LoopOutput(0, d)), dl.SumOuter(dl.LoopOutput(1, d)))
    return d, root


def test_a_loops_delta_prints_like_a_share() -> None:
    d, root = hand_delta()
    assert print_delta(root) == (
        "s7 = MapAccumL 5 [Input 0] [Zero[5,3]] [Input 1] "
        "residuals [<float64[5,3]>] xs [<float64[5,3]>] consts [[0.5   0.25  0.125]]\n"
        "Add (SumOuter s7.0) (SumOuter s7.1)"
    )
    assert dl.format_delta(root).split("\n")[0].startswith("s7 = MapAccumL 5 [Input 0]")
    assert dl.format_delta(dl.LoopOutput(1, d)).split("\n")[-1] == "s7.1"
    assert dl.format_delta(d).split("\n")[-1] == "s7"


def test_a_symbolic_loops_delta_prints_its_primal_terms() -> None:
    """In the symbolic Delta (§7) the saved values are terms, printed as terms."""
    program = traced(rnn, (5, 3), (3,))
    (loop,) = loops_of(program)
    x, w = program.inputs
    f64 = DType.FLOAT64
    d = dl.MapAccum(
        3,
        loop,
        (LoopOutput(1, loop),),
        (x,),
        (w,),
        (dl.Zero((3,), f64),),
        (dl.Input(0, (5, 3), f64),),
        (dl.Zero((3,), f64),),
    )
    text = format_symbolic_delta(dl.Add(dl.LoopOutput(0, d), dl.LoopOutput(0, d)))
    first, last = text.split("\n")
    assert first.startswith("s3 = MapAccumL 5 [Zero[3]] [Input 0] [Zero[3]] residuals [")
    assert first.endswith("xs [x] consts [w]")
    assert last == "Add s3.0 s3.0"


def test_a_loops_delta_draws_with_its_id_and_result_types() -> None:
    _, root = hand_delta()
    drawing = delta_graph(root)
    labels = Frames.of(_joined_source(drawing)).labels.values()
    assert "s7 = MapAccumL 5|(float64[3], float64[5])" in labels
    assert {"s7.0|float64[3]", "s7.1|float64[5]"} <= set(labels)


def test_nothing_asks_a_loop_for_its_one_shape() -> None:
    """Every view of a term with a loop works, though the loop node has no ``shape``."""
    program = traced(rnn, (5, 3), (3,))
    (loop,) = loops_of(program)
    roots: list[Term] = [loop, *program.outputs]
    assert print_term(loop).startswith("mapAccumL 5") and str(loop).startswith("mapAccumL 5")
    assert "= MapAccum(" in repr(loop)
    assert "mapAccumL 5" in print_program(program.inputs, roots)
    assert "mapAccumL 5" in term_graph(roots).source

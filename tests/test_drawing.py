"""Graphviz drawings of terms and Deltas (every stage): DAGs with shared nodes drawn
once, Share ids, index functions as text, and a text fallback without ``dot``."""

from __future__ import annotations

import re
import shutil
from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.api import dual_run
from dualarr.lang.terms import count_nodes
from dualarr.show.drawing import DOT_HINT, Drawing
from dualarr.teach.examples import fig18

X = np.arange(1.0, 6.0)


def node_count(drawing: Any) -> int:
    return len(re.findall(r"^\s*[nd]\d+ \[label=", drawing.source, flags=re.M))


def test_a_term_is_drawn_as_its_dag() -> None:
    def shared(x: Any) -> Any:
        y = da.sin(x)
        return da.sum(y * y)

    program = da.trace(shared, X)
    drawing = program.graph()
    assert isinstance(drawing, Drawing)
    assert node_count(drawing) == count_nodes(program.outputs)  # sin x drawn once
    assert drawing.source.count('label="sin\n') == 1


def test_gathers_show_their_index_function_as_text() -> None:
    source = da.pipeline(fig18, X).vectorised.graph().source
    assert "gather [5]\nλ[i]. [4 - i]" in source
    assert "style=dashed" in source  # the edge into the index function


def test_every_stage_draws() -> None:
    p = da.pipeline(fig18, X)
    for stage in (p.source, p.vectorised, p.forward, p.delta, p.shared, p.gradient):
        assert node_count(stage.graph()) > 0
    forward = p.forward.graph().source
    assert "Share 1\nfloat64[5]" in forward and "Share 2\nfloat64[]" in forward


def test_a_concrete_delta_draws_with_share_ids_and_shapes() -> None:
    run = dual_run(p_vectorised(), (X,), (0,))
    source = run.deltas[0].graph().source
    assert "shape=doubleoctagon" in source and "Input 0\nfloat64[5]" in source


def p_vectorised() -> da.Program:
    return da.pipeline(fig18, X).vectorised


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_drawings_render_to_svg_in_notebooks() -> None:
    bundle = da.pipeline(fig18, X).gradient.graph()._repr_mimebundle_()
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")


def test_without_dot_the_display_is_the_dot_source_with_a_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "")
    bundle = da.trace(fig18, X).graph()._repr_mimebundle_()
    assert bundle["text/plain"].startswith("digraph fig18 {")
    assert bundle["text/plain"].endswith(DOT_HINT)

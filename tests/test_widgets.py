"""Widgets, headless (no kernel): state in traitlets, outputs appended to ``Output``."""

from __future__ import annotations

import html
import re
from typing import Any

import numpy as np
import pytest

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.teach.examples import fig18
from dualarr_widgets import BackpropStepper


def shared_chain(x: Any) -> Any:
    y = x
    for _ in range(4):
        y = da.sin(y) * y
    return da.sum(y * y)


def test_backprop_stepper_visits_every_share_once_in_decreasing_order() -> None:
    x = np.linspace(0.1, 1.0, 5)
    stepper = BackpropStepper(shared_chain, x)
    assert stepper.total == len(stepper.share_order) + 1  # the seed step, then one per id
    order = stepper.share_order
    assert order == sorted(order, reverse=True) and len(set(order)) == len(order)
    while stepper.step < stepper.total - 1:
        stepper.next_button.click()
    assert stepper.next_button.disabled
    np.testing.assert_allclose(stepper.current.grad[0], da.grad(shared_chain)(x))
    assert not stepper.current.accum  # every Share was evaluated


def test_backprop_stepper_transposes_a_loop_once() -> None:
    """A loop's Delta is one node with an id: the stepper takes it once, after every
    use of its results, and ends with the loop's gradient."""
    x, w = np.linspace(-1.0, 1.0, 12).reshape(4, 3), np.linspace(0.1, 0.3, 3)
    stepper = BackpropStepper(scan_rnn, x, w)
    order = stepper.share_order
    assert order == sorted(order, reverse=True) and len(set(order)) == len(order)
    while stepper.step < stepper.total - 1:
        stepper.next_button.click()
    np.testing.assert_allclose(stepper.current.grad[1], da.grad(scan_rnn, argnums=1)(x, w))
    assert not stepper.current.accum


def _plain(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def _shown_text(stepper: Any) -> str:
    """What a BackpropStepper shows as text: its heading, then its output."""
    return _plain(stepper.heading.value) + "\n" + "".join(
        o.get("text", "") for o in stepper.output.outputs
    )


def test_backprop_stepper_shows_the_step_accum_and_grad() -> None:
    stepper = BackpropStepper(fig18, np.arange(1.0, 6.0))
    assert stepper.describe().startswith(f"step 1 of {stepper.total}: seed")
    assert _plain(stepper.heading.value).startswith(f"step 1 of {stepper.total}: seed")
    assert stepper.output.outputs[0]["text"].startswith("accum (pending Shares):")
    stepper.next()
    text = _shown_text(stepper)
    assert f"evaluate Share {stepper.share_order[0]}" in text
    assert "grad:" in text and "x = " in text
    assert stepper.view.svg.startswith("<?xml") or stepper.view.text
    stepper.previous_button.click()
    assert stepper.step == 0 and stepper.previous_button.disabled


def test_step_k_of_n_is_shown_once_per_step() -> None:
    stepper = BackpropStepper(shared_chain, np.linspace(0.1, 1.0, 5))
    for k in range(stepper.total):
        stepper.step = k
        text = _shown_text(stepper)
        assert text.count(f"step {k + 1} of {stepper.total}") == 1, text
        assert len(re.findall(r"step \d+ of \d+|step \d+/\d+", text)) == 1, text
        assert stepper.describe().count(f"step {k + 1} of {stepper.total}") == 1
        assert "<" not in stepper.describe()  # plain text, printable in a notebook


def _statements(source: str) -> list[tuple[str, str, str]]:
    """The node statements of a DOT source: name, ``label="…"`` (or ""), other attributes."""
    return re.findall(r'^\t(\w+) \[(label="[^"]*")?([^\]]*)\]', source, re.M | re.S)


def _labels(source: str) -> dict[str, str]:
    return {name: label[7:-1] for name, label, _ in _statements(source) if label}


def _gold(source: str) -> tuple[str, str]:
    """The one node filled gold in a DOT source: its name and its label."""
    (name,) = {name for name, _, attrs in _statements(source) if "fillcolor=gold" in attrs}
    return name, _labels(source)[name]


def test_the_drawing_highlights_the_share_the_step_names() -> None:
    stepper = BackpropStepper(shared_chain, np.linspace(0.1, 1.0, 5))
    assert stepper.highlighted is stepper.delta  # the seed step: the root
    for k in range(1, stepper.total):
        stepper.step = k
        named = stepper.current.share_id
        assert isinstance(stepper.highlighted, dl.Share)
        assert stepper.highlighted.id == named == stepper.highlighted_id
        assert stepper.highlighted is not stepper.current.node  # the Share, not its child
        source = stepper.drawing().source
        assert source.count("fillcolor=gold") == 1
        assert _gold(source)[1].startswith(f"Share {named}\n")


def test_the_drawing_shows_the_cotangent_flowing() -> None:
    stepper = BackpropStepper(fig18, np.arange(1.0, 6.0))
    stepper.next()  # Share 2 (the sum) sends its cotangent 1 on: s1 and grad x change
    source = stepper.drawing().source
    key = _gold(source)[0]
    assert 'cotangent [label="c = 1."' in source and f"cotangent -> {key}" in source
    labels = _labels(source)
    share1 = next(k for k, label in labels.items() if label.startswith("Share 1\n"))
    x = next(k for k, label in labels.items() if label.startswith("Input 0"))
    assert "1., 2., 3., 4., 5." in labels[share1] and "5., 4., 3., 2., 1." in labels[x]
    assert f"\t{share1} [fillcolor=lightblue" in source  # its accum changed in this step
    assert f"\t{x} [fillcolor=palegreen" in source  # its grad changed in this step
    np.testing.assert_allclose(stepper.cotangent, 1.0)
    stepper.next()
    np.testing.assert_allclose(stepper.cotangent, [1.0, 2.0, 3.0, 4.0, 5.0])
    assert "c = [1., 2., 3., 4., 5.]" in stepper.drawing().source


def test_explosion_plot_shows_the_delta_explosion_and_its_cure() -> None:
    from dualarr_widgets import ExplosionPlot

    plot = ExplosionPlot(sizes=[4, 16])
    by = {(r.method, r.n): r for r in plot.rows}
    scalar4, scalar16 = by["scalar dual numbers (§2)", 4], by["scalar dual numbers (§2)", 16]
    bot4, bot16 = by["dual arrays + bot (§6)", 4], by["dual arrays + bot (§6)", 16]
    assert scalar16.delta_nodes > 3 * scalar4.delta_nodes  # grows with n
    assert bot16.delta_nodes == bot4.delta_nodes  # the same Delta for every n
    assert by["dual arrays, no bot (§4)", 16].one_hots > 0
    (text,) = plot.output.outputs
    assert "Delta nodes" in text["text"] and bytes(plot.image.value).startswith(b"\x89PNG")
    plot.sizes = [4, 8]  # a new trait value measures again
    assert {r.n for r in plot.rows} == {4, 8}
    assert plot.sizes_text.value == "4, 8"


def test_bot_stepper_walks_every_rule_and_highlights_the_rewrite() -> None:
    from dualarr_widgets import BotStepper

    stepper = BotStepper(fig18, np.arange(1.0, 6.0))
    assert len(stepper.pipeline.bot_steps) == 3 and len(stepper.simplifications) == 1
    assert stepper.total == 4
    seen = []
    for k in range(stepper.total):
        stepper.slider.value = k + 1  # the slider (numbered as the rules) drives the step
        assert stepper.step == k
        text = stepper.output.outputs[0]["text"]
        seen.append(stepper.label.split(". ", 1)[1].split(" (", 1)[0])
        assert stepper.rewritten(), "the rewritten subterm is found in the program"
        assert "==>" in text and stepper.rule.value.startswith(f"<b>{k + 1}. ")
        assert stepper.label.startswith(f"{k + 1}. ") and "<" not in stepper.label
    assert seen == ["build1-op", "build1-index", "build1-index", "sumOuter-contract"]
    assert stepper.label.startswith("4. sumOuter-contract (simplification: ")
    last = stepper.current
    assert last is not None and str(last.before).startswith("sumOuter (x * ")
    assert str(last.after).startswith("dot0 x ")
    assert stepper.next_button.disabled and not stepper.previous_button.disabled
    stepper.previous_button.click()
    assert stepper.step == stepper.total - 2 and stepper.slider.value == stepper.step + 1
    while not stepper.previous_button.disabled:
        stepper.previous_button.click()
    assert stepper.step == 0
    stepper.next_button.click()
    assert stepper.step == 1 and "build1-index" in stepper.rule.value
    from dualarr.show.drawing import term_graph

    current = stepper.current
    assert current is not None
    drawn = term_graph(list(current.whole), highlight=stepper.rewritten()).source
    assert "fillcolor=gold" in drawn


def test_bot_stepper_of_the_papers_pipeline_keeps_the_sum_outer() -> None:
    """``contractions=False`` (the paper's Fig. 18): no contraction step after the bot."""
    from dualarr_widgets import BotStepper

    stepper = BotStepper(stages=da.pipeline(fig18, np.arange(1.0, 6.0), contractions=False))
    assert [s.rule for s in stepper.steps] == ["build1-op", "build1-index", "build1-index"]
    (program,) = stepper.steps[-1].whole
    assert str(program) == "sumOuter (x * gather [5] x (\\[i]. [4 - i]))"


def test_bot_stepper_without_build1_says_so() -> None:
    from dualarr_widgets import BotStepper

    stepper = BotStepper(lambda x: x * 2.0, np.ones(3))
    assert stepper.total == 0 and "no rule applies" in stepper.rule.value
    assert stepper.label.startswith("no rule applies") and stepper.view.svg
    summed = BotStepper(lambda x: da.sum(x * x), np.ones(3))  # no build1, a simplification
    assert summed.total == 1 and summed.current is not None
    assert summed.current.kind == "simplification" and summed.label.startswith("1. sumOuter-")


def mlp_program(w: Any, b: Any, x: Any) -> Any:
    hidden = da.tanh(da.matmul(x, w) + da.replicate(4, b))
    return da.mean(da.logsumexp(hidden, axis=1))


def scan_rnn(x: Any, w: Any) -> Any:
    """A loop (#38): the explorer and the stepper show loops too."""
    c, ys = da.scan(lambda c, xi: (da.tanh(c * w + xi), da.sum(c * c)), w, x)
    return da.sum(c) + da.sum(ys)


EXPLORED: list[tuple[Any, tuple[np.ndarray, ...]]] = [
    (fig18, (np.arange(1.0, 6.0),)),
    (scan_rnn, (np.linspace(-1.0, 1.0, 12).reshape(4, 3), np.linspace(0.1, 0.3, 3))),
    (shared_chain, (np.linspace(0.1, 1.0, 4),)),
    (mlp_program, (np.linspace(-0.5, 0.5, 15).reshape(5, 3), np.linspace(0.0, 0.3, 3),
                   np.linspace(-1.0, 1.0, 20).reshape(4, 5))),
]


def test_pipeline_explorer_fills_every_tab() -> None:
    from dualarr_widgets import PipelineExplorer
    from dualarr_widgets.explorer import TABS

    for f, arrays in EXPLORED:
        explorer = PipelineExplorer(f, *arrays)
        assert explorer.error == ""
        for name in TABS:
            assert explorer.outputs[name].outputs, (f.__name__, name)
        check = explorer.outputs["check"].outputs[0]["data"]
        assert "text/html" in check and "FAIL" not in check["text/plain"]
        assert "def grad_" in explorer.outputs["python"].outputs[0]["text"]


def test_editing_the_source_reruns_and_errors_show_in_the_widget() -> None:
    from dualarr_widgets import PipelineExplorer

    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    explorer.editor.value = "def double(x):\n    return da.sum(x * 2.0)\n"
    explorer.run_button.click()
    assert explorer.error == "" and explorer.function.__name__ == "double"
    assert "2.0" in explorer.outputs["source"].outputs[0]["text"]
    explorer.editor.value = "def bad(x):\n    return x + x[:2]\n"
    explorer.run_button.click()
    assert explorer.error.startswith("ShapeError: add:") and "shapes" in explorer.error
    assert "color:#b00" in explorer.message.value
    explorer.editor.value = "def broken(x:\n"
    explorer.run()
    assert explorer.error.startswith("SyntaxError")
    assert (explorer.error_line, explorer.error_source) == (1, "def broken(x:")


def _texts(explorer: Any) -> dict[str, str]:
    """Every tab's outputs as one text each (stdout and the plain-text of displays)."""
    return {
        name: "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                      for o in out.outputs)
        for name, out in explorer.outputs.items()
    }


# (source, exception type, part of the message, line of the source, that line's text)
FAILING: list[tuple[str, str, str, int, str]] = [
    (
        "def typo(x):\n    y = x * x\n    return da.summ(y)\n",
        "AttributeError", "has no attribute 'summ'. Did you mean: 'sum'?",
        3, "return da.summ(y)",
    ),
    (
        "def unknown(x):\n    y = x * 2.0\n    total = sum_of_squares(y)\n    return total\n",
        "NameError", "name 'sum_of_squares' is not defined", 3, "total = sum_of_squares(y)",
    ),
    (
        "def mixed(x):\n    n = len(x.shape) + 'one'\n    return da.sum(x)\n",
        "TypeError", "unsupported operand type(s) for +", 2, "n = len(x.shape) + 'one'",
    ),
    (
        "def divide(x):\n    n = x.shape[0]\n\n    step = n // (n - 5)\n    return da.sum(x)\n",
        "ZeroDivisionError", "division or modulo by zero", 4, "step = n // (n - 5)",
    ),
    (
        "def shapes(x):\n    head = x[:2]\n    return da.sum(x + head)\n",
        "ShapeError", "add: operands could not be broadcast together with shapes [5] and [2]", 3,
        "return da.sum(x + head)",
    ),
]


@pytest.mark.parametrize("case", FAILING, ids=[case[1] for case in FAILING])
def test_every_exception_of_the_source_shows_type_message_and_line(
    case: tuple[str, str, str, int, str],
) -> None:
    from dualarr_widgets import PipelineExplorer

    source, kind, message, line, text = case
    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    assert explorer.error == ""
    explorer.editor.value = source
    explorer.run_button.click()
    assert explorer.error_type == kind
    assert message in explorer.error_message
    assert (explorer.error_line, explorer.error_source) == (line, text)
    assert source.splitlines()[line - 1].strip() == text  # the line of the edited source
    assert explorer.error == f"{kind}: {explorer.error_message}\n  line {line}: {text}"
    shown = explorer.message.value
    assert "color:#b00" in shown and kind in shown and f"line {line}:" in shown
    assert "widgets" not in explorer.error and ".py:" not in explorer.error
    if kind == "ShapeError":
        assert issubclass(getattr(da, kind), da.DualarrError)
        assert explorer.error_message.count("add:") == 1 and "\n  at " not in explorer.error


def _drawings(explorer: Any) -> dict[str, str]:
    """Every drawn tab's SVG (or, without ``dot``, its DOT text)."""
    return {name: view.svg or view.text for name, view in explorer.views.items()}


BROKEN_EDITS = [  # a tracing (attribute) error, a shape error, a syntax error
    ("def oops(x):\n    return da.summ(x)\n", "AttributeError", 2),
    ("def bad(x):\n    return da.sum(x + x[:2])\n", "ShapeError", 2),
    ("def broken(x:\n", "SyntaxError", 1),
]


@pytest.mark.parametrize("edit", BROKEN_EDITS, ids=[e[1] for e in BROKEN_EDITS])
def test_a_failed_edit_keeps_the_last_good_tabs_marked_stale(edit: tuple[str, str, int]) -> None:
    from dualarr_widgets import BotStepper, PipelineExplorer
    from dualarr_widgets.explorer import STALE_CLASS, TABS

    source, kind, line = edit
    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    assert not explorer.stale and explorer.stale_note == ""
    assert STALE_CLASS not in explorer._dom_classes
    texts, drawings, good = _texts(explorer), _drawings(explorer), explorer.pipeline
    stepper = explorer.bot_box.children[1]
    assert isinstance(stepper, BotStepper) and all(drawings.values())
    explorer.editor.value = source
    explorer.run_button.click()
    assert (explorer.error_type, explorer.error_line) == (kind, line)  # the error is shown
    assert "color:#b00" in explorer.message.value
    # every tab (the SymPy check included) and every drawing is the last good program's
    assert _texts(explorer) == texts and _drawings(explorer) == drawings
    assert all(explorer.outputs[name].outputs for name in TABS)
    assert "SymPy" in texts["check"] and "build1 5" in texts["source"]
    assert explorer.pipeline is good and explorer.function is fig18
    assert explorer.bot_box.children[1] is stepper  # the bot stepper still steps
    stepper.next()
    assert stepper.step == 1 and stepper.slider.value == 2
    # ... visibly marked stale: a banner above the greyed tabs, beside the error
    assert explorer.stale and STALE_CLASS in explorer._dom_classes
    assert explorer.stale_note.startswith("showing the last program that worked (fig18)")
    assert explorer.stale_banner.layout.display != "none"
    assert "stale" in explorer.stale_banner.value and "fig18" in explorer.stale_banner.value
    children = list(explorer.children)
    assert children.index(explorer.stale_banner) == children.index(explorer.tabs) - 1
    # a second failure keeps the same program; a good edit clears the mark
    explorer.editor.value = "def f(x):\n    return da.sum(x * nothing)\n"
    explorer.run()
    assert explorer.stale and explorer.error_type == "NameError" and _texts(explorer) == texts
    explorer.editor.value = "def f(x):\n    return da.sum(x * 3.0)\n"
    explorer.run()
    assert not explorer.stale and explorer.stale_note == "" and explorer.error == ""
    assert STALE_CLASS not in explorer._dom_classes
    assert explorer.stale_banner.layout.display == "none" and not explorer.stale_banner.value
    assert "3.0" in _texts(explorer)["source"] and explorer.function.__name__ == "f"


def test_a_stale_explorer_snapshot_shows_the_banner_and_no_style_sheet() -> None:
    from dualarr_widgets import PipelineExplorer
    from dualarr_widgets.snapshot import snapshot_html

    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    assert "stale" not in snapshot_html(explorer) and "<style" not in snapshot_html(explorer)
    explorer.editor.value = "def oops(x):\n    return da.summ(x)\n"
    explorer.run()
    page = snapshot_html(explorer)
    assert "showing the last program that worked" in page and "<style" not in page


def test_fixing_the_source_clears_the_error_and_refreshes_every_tab() -> None:
    from dualarr_widgets import BotStepper, PipelineExplorer
    from dualarr_widgets.explorer import TABS

    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    explorer.editor.value = "def f(x):\n    return da.sum(x * undefined)\n"
    explorer.run_button.click()
    assert explorer.error_type == "NameError" and explorer.error_line == 2
    explorer.editor.value = "def f(x):\n    return da.sum(x * 3.0)\n"
    explorer.run_button.click()
    assert explorer.error == explorer.error_type == explorer.error_message == ""
    assert (explorer.error_line, explorer.error_source) == (0, "")
    assert "color:#b00" not in explorer.message.value and "<b>f</b>" in explorer.message.value
    assert explorer.pipeline is not None and explorer.function.__name__ == "f"
    texts = _texts(explorer)
    for name in TABS:
        assert explorer.outputs[name].outputs, name
        assert "cleared" not in texts[name] and "NameError" not in texts[name], name
    assert "3.0" in texts["source"] and "def grad_" in texts["python"]
    assert any(isinstance(w, BotStepper) for w in explorer.bot_box.children)
    check = explorer.outputs["check"].outputs[0]["data"]
    assert "text/html" in check and "FAIL" not in check["text/plain"]


def test_the_check_tab_names_the_error_once_and_never_the_widgets_file() -> None:
    from dualarr_widgets import PipelineExplorer

    def counts(n: Any) -> Any:  # no float input: the pipeline runs, check_grad refuses
        return da.sum(da.to_float(n))

    explorer = PipelineExplorer(counts, np.arange(4))
    assert explorer.error == ""
    text = _texts(explorer)["check"]
    assert text.startswith("DualarrError: check_grad: counts has no float input")
    assert text.count("check_grad:") == 1
    assert "widgets" not in text and ".py:" not in text and " at " not in text


def test_an_error_in_the_initial_function_names_its_line_in_the_editor() -> None:
    from dualarr_widgets import PipelineExplorer

    def misfit(x: Any) -> Any:
        y = x * 2.0
        return da.sum(y + y[:2])

    explorer = PipelineExplorer(misfit, np.ones(4))
    assert explorer.error_type == "ShapeError" and explorer.pipeline is None
    assert not explorer.stale  # no program worked yet: each tab says so
    for text in _texts(explorer).values():
        assert text.startswith("(no program to show: the source failed)\nShapeError")
    assert explorer.error_line == 3  # the def is line 1 of the editor's text
    assert explorer.editor.value.splitlines()[2].strip() == explorer.error_source
    assert explorer.error_source == "return da.sum(y + y[:2])"
    assert "widgets" not in explorer.error and "test_widgets.py" not in explorer.error


def _rolled(x: Any) -> Any:
    import dualarr.numpy as dnp

    return dnp.sum(dnp.roll(x, 1) * x)


def test_the_source_tab_shows_numpy_calls_beside_their_lowering() -> None:
    from dualarr_widgets import PipelineExplorer

    explorer = PipelineExplorer(_rolled, np.arange(1.0, 6.0))
    text = "".join(o.get("text", "") for o in explorer.outputs["source"].outputs)
    assert "as written with dualarr.numpy:" in text
    assert "let roll = gather [5] x" in text and "# dnp.roll(x, 1)" in text


# -- busy and progress cues -----------------------------------------------------------


def _watch(widget: Any, name: str) -> list[Any]:
    """Every new value of trait ``name`` of ``widget``, in order."""
    seen: list[Any] = []
    widget.observe(lambda change: seen.append(change["new"]), names=name)
    return seen


def test_explorer_run_disables_its_button_and_shows_progress() -> None:
    from dualarr_widgets import PipelineExplorer
    from dualarr_widgets.explorer import _STEPS

    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    assert not explorer.busy and not explorer.run_button.disabled
    assert not explorer.progress.children  # idle: no bar
    disabled = _watch(explorer.run_button, "disabled")
    busy = _watch(explorer, "busy")
    progress = _watch(explorer.progress.bar, "value")
    labels = _watch(explorer.progress.label, "value")
    explorer.editor.value = "def f(x):\n    return da.sum(x * 3.0)\n"
    explorer.run_button.click()
    assert disabled == [True, False] and busy == [True, False]
    assert explorer.progress.bar.max == _STEPS
    steps = [v for v in progress if v > 0]
    assert steps == sorted(steps) and len(steps) >= 10 and max(steps) <= _STEPS
    assert any("computing the forward stage" in t for t in labels)
    assert any("drawing" in t for t in labels) and any("check_grad" in t for t in labels)
    assert not explorer.progress.children and not explorer.run_button.disabled


def test_explorer_button_is_re_enabled_when_the_run_raises(monkeypatch: Any) -> None:
    from dualarr_widgets import PipelineExplorer

    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    states: list[bool] = []

    def broken(*args: Any) -> None:
        states.append(explorer.run_button.disabled)
        raise RuntimeError("internal failure")

    monkeypatch.setattr(explorer, "_show", broken)
    with pytest.raises(RuntimeError, match="internal failure"):
        explorer.run()
    assert states == [True]  # disabled while it ran
    assert not explorer.run_button.disabled and not explorer.busy
    assert not explorer.progress.children


def test_explorer_shows_the_error_of_a_bad_program_and_re_enables_run() -> None:
    from dualarr_widgets import PipelineExplorer

    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    explorer.editor.value = "def bad(x):\n    return da.sum(x + x[:2])\n"
    explorer.run_button.click()
    assert explorer.error_type == "ShapeError" and "line 2" in _plain(explorer.message.value)
    assert not explorer.run_button.disabled and not explorer.busy
    assert explorer.stale and all(view.svg or view.text for view in explorer.views.values())


def test_explosion_plot_disables_measure_and_advances_per_size() -> None:
    from dualarr_widgets import ExplosionPlot
    from dualarr_widgets.explosion import METHODS

    plot_of: list[Any] = []
    seen: list[tuple[int, bool, bool]] = []

    def arguments(n: int) -> tuple[np.ndarray, ...]:
        if plot_of:
            plot = plot_of[0]
            seen.append((n, plot.measure_button.disabled, plot.busy))
        return (np.arange(1.0, n + 1.0),)

    plot = ExplosionPlot(sizes=[4, 8, 16], arguments=arguments)
    plot_of.append(plot)
    values = _watch(plot.progress.bar, "value")
    labels = _watch(plot.progress.label, "value")
    plot.measure_button.click()
    assert seen == [(4, True, True), (8, True, True), (16, True, True)]
    total = 3 * len(METHODS) + 1
    assert plot.progress.bar.max == total
    assert [v for v in values if v > 0] == list(range(1, total + 1))
    assert "n = 4 (size 1 of 3): scalar dual numbers (§2)" in labels
    assert "n = 16 (size 3 of 3): dual arrays + bot (§6)" in labels
    assert not plot.measure_button.disabled and not plot.busy and not plot.progress.children


def test_explosion_plot_button_is_re_enabled_when_measuring_raises() -> None:
    from dualarr_widgets import ExplosionPlot

    fail = {"now": False}

    def arguments(n: int) -> tuple[np.ndarray, ...]:
        if fail["now"]:
            raise ValueError(f"no arguments for n = {n}")
        return (np.arange(1.0, n + 1.0),)

    plot = ExplosionPlot(sizes=[4], arguments=arguments)
    fail["now"] = True
    with pytest.raises(ValueError, match="no arguments"):
        plot.measure()
    assert not plot.measure_button.disabled and not plot.busy and not plot.progress.children


def test_explosion_plot_sizes_from_its_text_box() -> None:
    from dualarr_widgets import ExplosionPlot
    from dualarr_widgets.explosion import parse_sizes

    assert parse_sizes("16, 4 8,4") == [4, 8, 16]
    with pytest.raises(ValueError, match="not a size"):
        parse_sizes("4, x")
    plot = ExplosionPlot(sizes=[4])
    assert plot.sizes_text.value == "4"
    plot.sizes_text.value = "4, 8"
    assert plot.sizes == [4, 8] and {r.n for r in plot.rows} == {4, 8}
    plot.sizes_text.value = "4, -8"
    assert "not a size" in plot.error and "color:#b00" in plot.message.value
    assert plot.sizes == [4, 8]  # unchanged
    plot.sizes_text.value = "8"
    assert plot.error == "" and plot.message.value == "" and plot.sizes == [8]


def test_explosion_plot_ticks_are_powers_of_ten_and_the_legend_is_readable() -> None:
    import io

    from dualarr_widgets import ExplosionPlot

    plot = ExplosionPlot(sizes=[4, 8, 16])
    figure = plot.figure()
    figure.savefig(io.BytesIO(), format="png")  # lays the ticks out
    for axes in figure.axes:
        for labels in (axes.get_xticklabels(), axes.get_yticklabels()):
            texts = [t.get_text() for t in labels if t.get_text()]
            assert len(texts) >= 2, texts
            assert all(re.fullmatch(r"\$\\mathdefault\{10\^\{-?\d+\}\}\$", t) for t in texts), texts
        assert not [t.get_text() for t in axes.get_xticklabels(minor=True) if t.get_text()]
    (legend,) = figure.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "scalar dual numbers (§2)", "dual arrays, no bot (§4)", "dual arrays + bot (§6)"
    ]
    assert all(float(t.get_fontsize()) >= 10 for t in legend.get_texts())


# -- labels of the bot's steps ------------------------------------------------------


def test_bot_step_labels_cite_figures_extensions_and_simplifications() -> None:
    from dualarr_widgets import BotStepper

    def leaky(x: Any) -> Any:
        return da.build1(4, lambda i: da.where(x[i] > 2.0, x[i], 0.5 * x[i]))

    def guarded(x: Any) -> Any:
        return da.build1(3, lambda i: da.exp(x * 2.0)[i + 1])

    kinds: set[str] = set()
    for f in (leaky, guarded, fig18):
        stepper = BotStepper(f, np.arange(4.0))
        for s in stepper.steps:
            kinds.add(s.kind)
            if s.kind == "paper":
                assert re.fullmatch(r"[\w-]+ \((Fig\. (9|10|11)|§7\.2)\)", s.label), s.label
            elif s.kind == "extension":
                assert re.fullmatch(r"[\w-]+ \(kit extension of Fig\. (9|10|11): .+\)", s.label)
            else:
                assert s.kind == "simplification" and s.figure == "simplification"
                assert s.label.startswith(f"{s.rule} (simplification: ")
                assert "Fig. 9" not in s.label and "Fig. 11" not in s.label
        assert [s.number for s in stepper.steps] == list(range(1, stepper.total + 1))
    assert kinds == {"paper", "extension", "simplification"}
    cond = BotStepper(leaky, np.arange(4.0)).steps[0]
    assert cond.rule == "build1-cond-scalar" and "select for a scalar cond" in cond.label
    guard = BotStepper(guarded, np.arange(4.0)).steps[0]
    assert guard.rule == "index-op" and "bounds guard" in guard.label


def test_simplification_steps_keep_the_value_and_end_in_the_vectorised_program() -> None:
    from dualarr.interp.evaluate import evaluate_many
    from dualarr_widgets import BotStepper

    x = np.arange(1.0, 6.0)
    stepper = BotStepper(fig18, x)
    env = stepper.pipeline.source.bind(x)
    for s in stepper.steps:
        (value,) = evaluate_many(list(s.whole), env)
        assert value == stepper.pipeline.source(x)
    assert str(stepper.steps[-1].whole[0]) == str(stepper.pipeline.vectorised.outputs[0])


# -- fitting the screen, and what a notebook prints --------------------------------------


def test_drawing_view_fits_by_default_and_zooms() -> None:
    from dualarr.show.drawing import term_graph
    from dualarr_widgets.view import DrawingView

    program = da.trace(fig18, np.arange(1.0, 6.0))
    view = DrawingView(term_graph(list(program.outputs)))
    assert view.zoom == "fit" and view.width > 0
    assert "max-width:100%" in view.image.value and "overflow:auto" in view.image.value
    view.zoom_buttons.value = "fit width"
    assert "max-width:100%;width:auto" in view.image.value and "max-height:480px;w" not in (
        view.image.value
    )
    view.zoom_buttons.value = "200%"
    assert view.zoom == "200%"
    assert f"width:{view.width * 2:.0f}px" in view.image.value
    assert "max-width:none" in view.image.value and "overflow:auto" in view.image.value
    view.show(None)
    assert view.image.value == "" and view.zoom_buttons.layout.display == "none"


def test_a_drawing_too_tall_to_fit_readably_starts_at_fit_width() -> None:
    """``fit`` never shrinks a drawing below READABLE_SCALE unless the learner asks."""
    from dualarr.show.drawing import term_graph
    from dualarr_widgets.view import _HEIGHT, READABLE_SCALE, DrawingView, _natural_size

    def chain(n: int) -> Any:
        def f(x: Any) -> Any:
            for _ in range(n):
                x = da.sin(x)
            return x

        return term_graph(list(da.trace(f, np.arange(3.0)).outputs))

    view = DrawingView(chain(2), max_height="400px")
    assert view.zoom == "fit"
    view.show(chain(40))
    height = _natural_size(view.svg, _HEIGHT)
    assert height * READABLE_SCALE > 400 and view.zoom == "fit width"
    view.show(chain(2))
    assert view.zoom == "fit"
    view.show(chain(40))
    view.zoom_buttons.value = "fit"  # the learner's choice is kept for later drawings
    view.show(chain(41))
    assert view.zoom == "fit" and view.chosen


def test_widgets_have_a_short_repr() -> None:
    from dualarr_widgets import BotStepper, ExplosionPlot, PipelineExplorer

    x = np.arange(1.0, 6.0)
    shown = {
        PipelineExplorer(fig18, x): "<PipelineExplorer fig18: 8 stages>",
        BotStepper(fig18, x): "<BotStepper fig18: step 1 of 4>",
        BackpropStepper(fig18, x): "<BackpropStepper: step 1 of 3>",
        ExplosionPlot(sizes=[4]): "<ExplosionPlot fig18: n = 4>",
    }
    for widget, text in shown.items():
        assert repr(widget) == text
        bundle = widget._repr_mimebundle_()
        assert bundle is not None and bundle["text/plain"] == text
    broken = PipelineExplorer(fig18, x)
    broken.editor.value = "def f(x):\n    return da.summ(x)\n"
    broken.run()
    assert repr(broken) == "<PipelineExplorer fig18: error: AttributeError>"


def test_what_a_notebook_prints_is_plain_text() -> None:
    from dualarr_widgets import BotStepper
    from dualarr_widgets.explorer import Origin, describe

    stepper = BotStepper(fig18, np.arange(1.0, 6.0))
    for k in range(stepper.total):
        stepper.step = k
        assert "<" not in stepper.label and "<" not in str(stepper.current)
    backprop = BackpropStepper(fig18, np.arange(1.0, 6.0))
    assert "<" not in backprop.describe()
    report = describe(ValueError("bad <value>"), Origin("<none>", 1, ()))
    assert str(report) == "ValueError: bad <value>" and "<b>" in report.html()


# -- the steppers follow their step; offline they show every step (issue 34, 3 and 5) --


def test_a_stepper_view_follows_the_highlighted_node_at_a_readable_size() -> None:
    from dualarr_widgets.view import READABLE_LABEL_PX, focus_box, label_px

    def twice(x: Any) -> Any:
        y = da.sin(x)
        z = y * y
        return da.sum(z + z)

    stepper = BackpropStepper(twice, np.arange(1.0, 6.0))
    assert stepper.view.follow and stepper.total == 5
    for k in range(stepper.total):
        stepper.step = k
        view, svg = stepper.view, stepper.view.svg
        assert svg.count('fill="gold"') == 1  # the step's own node, and no other
        box = focus_box(svg)
        assert box is not None and list(box) == view.focus
        left, top, right, bottom = box
        assert 0 <= left < right <= 1 and 0 <= top < bottom <= 1
        assert label_px(svg) * view.min_scale >= READABLE_LABEL_PX - 1e-9
        assert 'onload="' in view.image.value  # the box scrolls to the node
        if view.zoom in ("fit", "fit width"):
            assert f"min-width:{np.ceil(view.width * view.min_scale):.0f}px" in view.image.value
    assert stepper.view.zoom == "fit width"  # 1100 px tall in a 560 px box: it scrolls


def test_a_stepper_snapshot_holds_every_step_as_a_frame() -> None:
    from dualarr_widgets import BotStepper

    for stepper in (BackpropStepper(fig18, np.arange(1.0, 6.0)),
                    BotStepper(fig18, np.arange(1.0, 6.0))):
        stepper.next()
        bundle, again = stepper._repr_mimebundle_(), stepper._repr_mimebundle_()
        assert bundle is not None and again is not None
        snapshot = bundle["text/html"]
        assert snapshot == again["text/html"]  # deterministic
        assert f"data-frames='{stepper.total}'" in snapshot
        steps = [int(k) for k in re.findall(r"class='dualarr-frame' id='[\w-]+' data-step='(\d+)'",
                                            snapshot)]
        assert steps == list(range(1, stepper.total + 1))
        words = re.sub(r"<[^>]+>", "", snapshot)
        for k in range(1, stepper.total + 1):
            assert f"step {k} of {stepper.total}: " in words
        assert snapshot.count("src='data:image/svg+xml;base64,") == stepper.total
        assert "onload" not in snapshot and "<script" not in snapshot

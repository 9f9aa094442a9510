"""Widgets, headless (no kernel): state in traitlets, outputs appended to ``Output``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dualarr as da
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


def test_backprop_stepper_shows_the_step_accum_and_grad() -> None:
    stepper = BackpropStepper(fig18, np.arange(1.0, 6.0))
    first = stepper.output.outputs
    assert first[0]["text"].startswith("step 1/")
    assert "seed" in first[0]["text"]
    stepper.next()
    text = stepper.output.outputs[0]["text"]
    assert f"evaluate Share {stepper.share_order[0]}" in text
    assert "grad:" in text and "x = " in text
    drawing = stepper.output.outputs[1]["data"]
    assert "image/svg+xml" in drawing or "text/plain" in drawing
    stepper.previous_button.click()
    assert stepper.step == 0 and stepper.previous_button.disabled


def test_the_drawing_highlights_the_node_of_the_step() -> None:
    stepper = BackpropStepper(fig18, np.arange(1.0, 6.0))
    stepper.next()
    from dualarr.show.drawing import delta_graph

    source = delta_graph(stepper.delta, highlight=stepper.current.node).source
    assert source.count("fillcolor=gold") == 1


def test_explosion_plot_shows_the_delta_explosion_and_its_cure() -> None:
    from dualarr_widgets import ExplosionPlot

    plot = ExplosionPlot(sizes=[4, 16])
    by = {(r.method, r.n): r for r in plot.rows}
    scalar4, scalar16 = by["scalar dual numbers (§2)", 4], by["scalar dual numbers (§2)", 16]
    bot4, bot16 = by["dual arrays + bot (§6)", 4], by["dual arrays + bot (§6)", 16]
    assert scalar16.delta_nodes > 3 * scalar4.delta_nodes  # grows with n
    assert bot16.delta_nodes == bot4.delta_nodes  # the same Delta for every n
    assert by["dual arrays, no bot (§4)", 16].one_hots > 0
    text, image = plot.output.outputs
    assert "Delta nodes" in text["text"] and "image/png" in image["data"]
    plot.sizes = [4, 8]  # a new trait value measures again
    assert {r.n for r in plot.rows} == {4, 8}


def test_bot_stepper_walks_every_rule_and_highlights_the_rewrite() -> None:
    from dualarr_widgets import BotStepper

    stepper = BotStepper(fig18, np.arange(1.0, 6.0))
    assert stepper.total == len(stepper.pipeline.bot_steps) == 3
    seen = []
    for k in range(stepper.total):
        stepper.slider.value = k + 1  # the slider (numbered as the rules) drives the step
        assert stepper.step == k
        text = stepper.output.outputs[0]["text"]
        seen.append(text.split(": ", 1)[1].split("\n", 1)[0])
        assert stepper.rewritten(), "the rewritten subterm is found in the program"
        assert "==>" in text and stepper.rule.value.startswith(f"<b>{k + 1}. ")
    assert seen == ["build1-op (Fig. 9)", "build1-index (Fig. 11)", "build1-index (Fig. 11)"]
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


def test_bot_stepper_without_build1_says_so() -> None:
    from dualarr_widgets import BotStepper

    stepper = BotStepper(lambda x: da.sum(x * x), np.ones(3))
    assert stepper.total == 0 and "no rule applies" in stepper.rule.value


def mlp_program(w: Any, b: Any, x: Any) -> Any:
    hidden = da.tanh(da.matmul(x, w) + da.replicate(4, b))
    return da.mean(da.logsumexp(hidden, axis=1))


EXPLORED: list[tuple[Any, tuple[np.ndarray, ...]]] = [
    (fig18, (np.arange(1.0, 6.0),)),
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


def test_an_error_after_a_good_program_clears_every_tab() -> None:
    from dualarr_widgets import BotStepper, PipelineExplorer

    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    before = _texts(explorer)
    assert explorer.pipeline is not None and "build1 5" in before["source"]
    assert any(isinstance(w, BotStepper) for w in explorer.bot_box.children)
    explorer.editor.value = "def oops(x):\n    return da.summ(x)\n"
    explorer.run_button.click()
    assert explorer.pipeline is None
    assert not any(isinstance(w, BotStepper) for w in explorer.bot_box.children)
    for name, text in _texts(explorer).items():
        assert text.startswith("(cleared: the edited source failed)"), name
        assert "AttributeError" in text and "line 2: return da.summ(x)" in text, name
        assert "build1" not in text and "def grad_" not in text, name
    assert all(len(out.outputs) == 1 for out in explorer.outputs.values())


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

"""``PipelineExplorer``: every stage of one program, one tab each (DESIGN.md §4).

Tabs: source, vectorised (with the :class:`BotStepper`), forward Delta (drawn), the
extracted symbolic Delta (Eq. 6), the shared gradient, the let-converted program, the
generated Python and a check (``da.check_grad``).  The program's Python source is in a
text area: editing it and pressing *run* re-traces and updates every tab; a mistake
(a ``DualarrError``, a syntax error) is shown in the widget, not as a traceback.  State
in traitlets, output appended, so it runs and is tested without a kernel.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets

import dualarr as da
from dualarr.errors import DualarrError
from dualarr.pipeline import Pipeline

from .botstepper import BotStepper

__all__ = ["PipelineExplorer"]

TABS = ("source", "vectorised", "forward", "delta", "shared", "gradient", "python", "check")


def _source_of(f: Callable[..., Any]) -> str:
    try:
        return textwrap.dedent(inspect.getsource(f))
    except (OSError, TypeError):
        return ""


class PipelineExplorer(widgets.VBox):  # type: ignore[misc]
    """All stages of ``f`` traced on ``arrays``, with an editable source."""

    code = traitlets.Unicode("").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, f: Callable[..., Any], *arrays: Any, code: str | None = None) -> None:
        self.arrays = arrays
        self.function = f
        self.pipeline: Pipeline | None = None
        self.editor = widgets.Textarea(
            value=code if code is not None else _source_of(f),
            layout=widgets.Layout(width="100%", height="8em"),
        )
        self.run_button = widgets.Button(description="run")
        self.message = widgets.HTML()
        self.outputs = {name: widgets.Output() for name in TABS}
        self.bot_box = widgets.VBox([self.outputs["vectorised"]])
        pages = [self.bot_box if n == "vectorised" else self.outputs[n] for n in TABS]
        self.tabs = widgets.Tab(children=pages, titles=list(TABS))
        self.run_button.on_click(lambda _: self.run())
        super().__init__(
            children=[self.editor, widgets.HBox([self.run_button, self.message]), self.tabs]
        )
        self.code = self.editor.value
        self._show(f)

    # -- running -------------------------------------------------------------------

    def run(self) -> None:
        """Execute the text area's code and show the stages of the function it defines
        (the first ``def``; ``da`` and ``np`` are in scope)."""
        self.code = self.editor.value
        try:
            tree = ast.parse(self.code)
            names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
            if not names:
                raise SyntaxError("the code defines no function (def name(...): ...)")
            namespace: dict[str, Any] = {"da": da, "np": np}
            exec(compile(tree, "<PipelineExplorer>", "exec"), namespace)
        except SyntaxError as err:
            self._fail(f"SyntaxError: {err.msg} (line {err.lineno})")
            return
        except Exception as err:  # the user's code ran and failed: show it, as a cell would
            self._fail(f"{type(err).__name__}: {err}")
            return
        self._show(namespace[names[0]])

    def _fail(self, text: str) -> None:
        self.error = text
        self.message.value = f"<span style='color:#b00'>{_escape(text)}</span>"

    def _show(self, f: Callable[..., Any]) -> None:
        try:
            p = da.pipeline(f, *self.arrays)
            stages = [getattr(p, name) for name in p.stages if name != "bot_steps"]
        except DualarrError as err:
            self._fail(str(err))
            return
        self.function, self.pipeline, self.error = f, p, ""
        self.message.value = f"<b>{p.source.name}</b> {_escape(p.source.signature())}"
        for out in self.outputs.values():
            out.outputs = ()
        shown = dict(zip([s for s in p.stages if s != "bot_steps"], stages, strict=True))
        for name in ("source", "vectorised", "forward", "delta", "shared", "gradient"):
            out = self.outputs[name]
            if name not in shown:
                out.append_stdout(f"({name}: the gradient stages need one float output)\n")
                continue
            stage = shown[name]
            out.append_stdout(str(stage).rstrip("\n") + "\n")
            out.append_display_data(stage.graph())
        self.bot_box.children = (self.outputs["vectorised"], BotStepper(stages=p))
        if "python" in shown:
            self.outputs["python"].append_stdout(shown["python"])
            self._check(f)
        else:
            self.outputs["python"].append_stdout("(no gradient program: one float output needed)\n")
            self.outputs["check"].append_stdout("(no gradient to check)\n")

    def _check(self, f: Callable[..., Any]) -> None:
        out = self.outputs["check"]
        try:
            report = da.check_grad(f, *self.arrays)
        except DualarrError as err:
            out.append_stdout(f"check_grad: {err}\n")
            return
        out.append_display_data(report)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

"""``BotStepper``: the bulk-operation transform (§5), one rule application at a time.

Each step names the rule and its figure (``build1-index (Fig. 11)``), shows the
subterm before and after, and the whole program after the step, drawn with the
rewritten subterm highlighted.  State in traitlets, output appended (testable without a
kernel)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import traitlets

from dualarr.lang.terms import Term, postorder
from dualarr.pipeline import Pipeline, pipeline
from dualarr.show.drawing import term_graph
from dualarr.show.printer import print_term
from dualarr.vectorise.bot import BotStep

__all__ = ["BotStepper"]

_MATCH_LIMIT = 400  # nodes up to which the rewritten subterm is found by its text


class BotStepper(widgets.VBox):  # type: ignore[misc]
    """Step through ``pipeline(f, *arrays).bot_steps`` (or a given pipeline's)."""

    step = traitlets.Int(0).tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)

    def __init__(
        self, f: Callable[..., Any] | None = None, *arrays: Any, stages: Pipeline | None = None
    ) -> None:
        if stages is None:
            if f is None:
                raise ValueError("BotStepper needs a function and arrays, or a pipeline")
            stages = pipeline(f, *arrays)
        self.pipeline = stages
        self.steps: list[BotStep] = list(stages.bot_steps)
        # The slider counts from 1, as the rules are numbered; ``step`` counts from 0.
        self.slider = widgets.IntSlider(min=1, max=max(len(self.steps), 1), description="rule")
        self.previous_button = widgets.Button(description="◀ prev")
        self.next_button = widgets.Button(description="next ▶")
        self.previous_button.on_click(lambda _: self.prev())
        self.next_button.on_click(lambda _: self.next())
        self.rule = widgets.HTML()
        self.output = widgets.Output()
        controls = widgets.HBox([self.previous_button, self.slider, self.next_button, self.rule])
        super().__init__(children=[controls, self.output])
        self.total = len(self.steps)
        traitlets.link(
            (self.slider, "value"), (self, "step"), transform=(lambda v: v - 1, lambda s: s + 1)
        )
        self.observe(self._render, names="step")
        self._render()

    @property
    def current(self) -> BotStep | None:
        return self.steps[self.step] if self.steps else None

    def next(self) -> None:
        if self.step < self.total - 1:
            self.step += 1

    def prev(self) -> None:
        if self.step > 0:
            self.step -= 1

    def rewritten(self) -> list[Term]:
        """The nodes of the whole program after the step that are the rewritten term."""
        s = self.current
        if s is None:
            return []
        nodes = postorder(s.whole)
        if any(n is s.after for n in nodes):
            return [s.after]
        if len(nodes) > _MATCH_LIMIT:
            return []
        text = print_term(s.after)
        return [n for n in nodes if n.shape == s.after.shape and print_term(n) == text]

    def _render(self, change: Any = None) -> None:
        self.previous_button.disabled = self.step <= 0
        self.next_button.disabled = self.step >= self.total - 1
        self.output.outputs = ()
        s = self.current
        if s is None:
            self.rule.value = "<b>no rule applies</b> (the program has no build1)"
            self.output.append_stdout(f"vectorised:\n{self.pipeline.vectorised}\n")
            return
        self.rule.value = f"<b>{s.number}. {s.rule}</b> ({s.figure})"
        self.output.append_stdout(
            f"step {s.number} of {self.total}: {s.rule} ({s.figure})\n"
            f"  {s.before}\n  ==> {s.after}\n"
        )
        self.output.append_display_data(
            term_graph(list(s.whole), f"step{s.number}", highlight=self.rewritten())
        )

"""``BotStepper``: the bulk-operation transform (§5), one rule application at a time.

Each step names the rule and whose it is: a rule of the paper cites its figure
(``build1-index (Fig. 11)``), the kit's extension of a rule says so (``build1-cond-scalar
(kit extension of Fig. 9: a select for a scalar cond …)``), and the simplification after
the bot (``sumOuter (x * …)`` ⟶ ``dot0 x …``) is labelled as simplification.  A step
shows the subterm before and after, and the whole program after the step, drawn with the
rewritten subterm highlighted (fitted to the width, with a zoom; the box scrolls to the
rewritten subterm, labels at least 10 px high).  Without a kernel (the book) the widget
shows all its steps side by side (:func:`~dualarr_widgets.snapshot.filmstrip`).  State in
traitlets (``label`` is the step's label as plain text), output appended (testable
without a kernel)."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import traitlets

from dualarr.lang.terms import IdSupply, Term, postorder
from dualarr.pipeline import Pipeline, pipeline
from dualarr.show.drawing import term_graph
from dualarr.show.printer import print_term
from dualarr.vectorise.bot import BotStep
from dualarr.vectorise.simplify import simplification_steps

from .snapshot import Frame, StaticSnapshot, filmstrip
from .view import DrawingView, collapsed, controls_row, drawing_svg, static_drawing_html

__all__ = ["BotStepper"]

_MATCH_LIMIT = 400  # nodes up to which the rewritten subterm is found by its text


def _simplifications(stages: Pipeline) -> list[BotStep]:
    """The simplifier's rewrites of the bot's result, numbered after the bot's steps (on
    a fresh id supply: the pipeline's own stays as it was)."""
    steps = stages.bot_steps
    bot_result = steps[-1].whole if steps else stages.source.outputs
    supply = IdSupply(stages.source.supply.next_id)
    contractions = stages.contractions  # contractions=False: the paper's sumOuter stays
    return simplification_steps(bot_result, supply, len(steps) + 1, contractions=contractions)[1]


class BotStepper(StaticSnapshot, widgets.VBox):  # type: ignore[misc]
    """Step through ``pipeline(f, *arrays).bot_steps`` (or a given pipeline's), then the
    simplification steps after the bot (``simplifications``); the drawing is at most
    ``max_height`` tall (fitted; zoomed, it scrolls)."""

    step = traitlets.Int(0).tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)
    label = traitlets.Unicode("").tag(sync=True)  # the step's label, as plain text

    def __init__(
        self,
        f: Callable[..., Any] | None = None,
        *arrays: Any,
        stages: Pipeline | None = None,
        max_height: str = "440px",
    ) -> None:
        if stages is None:
            if f is None:
                raise ValueError("BotStepper needs a function and arrays, or a pipeline")
            stages = pipeline(f, *arrays)
        self.pipeline = stages
        self.simplifications = _simplifications(stages)
        self.steps: list[BotStep] = [*stages.bot_steps, *self.simplifications]
        # The slider counts from 1, as the rules are numbered; ``step`` counts from 0.
        self.slider = widgets.IntSlider(min=1, max=max(len(self.steps), 1), description="rule")
        self.previous_button = widgets.Button(description="◀ prev")
        self.next_button = widgets.Button(description="next ▶")
        self.previous_button.on_click(lambda _: self.prev())
        self.next_button.on_click(lambda _: self.next())
        self.rule = widgets.HTML(layout=widgets.Layout(flex="1 1 18em", min_width="0"))
        self.output = collapsed(widgets.Output(), "9em")
        self.view = DrawingView(max_height=max_height, follow=True)  # the box, at most
        self._frames: list[Frame] | None = None  # every step, for the snapshot (made once)
        controls = controls_row([self.previous_button, self.slider, self.next_button, self.rule])
        super().__init__(
            children=[controls, self.output, self.view],
            layout=widgets.Layout(width="100%", min_width="0"),
        )
        self.add_class("dualarr-bot-stepper")
        self.total = len(self.steps)
        traitlets.link(
            (self.slider, "value"), (self, "step"), transform=(lambda v: v - 1, lambda s: s + 1)
        )
        self.observe(self._render, names="step")
        self._render()

    @property
    def current(self) -> BotStep | None:
        return self.steps[self.step] if self.steps else None

    def __repr__(self) -> str:
        name = self.pipeline.source.name
        return f"<BotStepper {name}: step {self.step + 1} of {self.total}>"

    def next(self) -> None:
        if self.step < self.total - 1:
            self.step += 1

    def prev(self) -> None:
        if self.step > 0:
            self.step -= 1

    def rewritten(self, k: int | None = None) -> list[Term]:
        """The nodes of the whole program after the step (or step ``k``, from 0) that are
        the rewritten term."""
        if not self.steps:
            return []
        s = self.steps[self.step if k is None else k]
        nodes = postorder(s.whole)
        if any(n is s.after for n in nodes):
            return [s.after]
        if len(nodes) > _MATCH_LIMIT:
            return []
        text = print_term(s.after)
        return [n for n in nodes if n.shape == s.after.shape and print_term(n) == text]

    def _rule_html(self, s: BotStep) -> str:
        return f"<b>{s.number}. {html.escape(s.rule)}</b> " + html.escape(
            s.label.removeprefix(s.rule).strip()
        )

    def frames(self) -> list[Frame]:
        """Every step as the book shows it (made once: the steps do not change); a
        program without steps: one frame with the vectorised program."""
        if self._frames is None:
            if not self.steps:
                program = self.pipeline.vectorised
                drawing = term_graph(list(program.outputs), "vectorised")
                self._frames = [Frame(
                    "<b>no rule applies</b>: the program has no build1 and nothing to "
                    "simplify", f"vectorised:\n{program}\n",
                    static_drawing_html(*drawing_svg(drawing)),
                )]
            else:
                self._frames = [
                    Frame(
                        f"step {k + 1} of {self.total}: {self._rule_html(s)}",
                        f"  {s.before}\n  ==> {s.after}\n",
                        static_drawing_html(*drawing_svg(term_graph(
                            list(s.whole), f"step{s.number}", highlight=self.rewritten(k)
                        ))),
                    )
                    for k, s in enumerate(self.steps)
                ]
        return self._frames

    def _snapshot_html_(self) -> str:
        """All the steps, side by side (:func:`~dualarr_widgets.snapshot.filmstrip`)."""
        return filmstrip(self.frames())

    def _render(self, change: Any = None) -> None:
        self.previous_button.disabled = self.step <= 0
        self.next_button.disabled = self.step >= self.total - 1
        self.output.outputs = ()
        s = self.current
        if s is None:
            why = "the program has no build1 and nothing to simplify"
            self.label = f"no rule applies: {why}"
            self.rule.value = f"<b>no rule applies</b>: {why}"
            self.output.append_stdout(f"vectorised:\n{self.pipeline.vectorised}\n")
            self.view.show(term_graph(list(self.pipeline.vectorised.outputs), "vectorised"))
            return
        self.label = f"{s.number}. {s.label}"
        self.rule.value = self._rule_html(s)
        self.output.append_stdout(f"  {s.before}\n  ==> {s.after}\n")
        self.view.show(term_graph(list(s.whole), f"step{s.number}", highlight=self.rewritten()))

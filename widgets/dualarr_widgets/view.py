"""Pieces every widget uses to fit the screen and to say that it is busy.

:class:`DrawingView` shows a drawing (a Graphviz ``Drawing`` of :mod:`dualarr.show.drawing`)
scaled to fit the width of the output area, never clipped, with a zoom control; zoomed,
the drawing scrolls (pans) inside its box.  :func:`beside` puts a text beside a drawing
where the width allows, below it where it does not, and collapses long text into a
scrolling box, so that a widget's controls and drawing stay on one screen (≈ 900 px).
:class:`Progress` and :func:`busy` disable a widget's buttons and show a progress bar
while an action runs (a *run*, a *measure*).  State in traitlets: testable without a
browser.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import graphviz
import ipywidgets as widgets
import traitlets

from dualarr.show.drawing import DOT_HINT

__all__ = [
    "READABLE_SCALE", "ZOOMS", "DrawingView", "Progress", "beside", "busy", "collapsed",
    "controls_row",
]

ZOOMS = ("fit", "fit width", "100%", "150%", "200%")
"""The zoom levels: ``fit`` scales the drawing down to its box (all of it on screen),
``fit width`` to the box's width (a tall drawing scrolls up and down); the others are
its natural size times a factor, panned by scrolling."""

READABLE_SCALE = 0.5
"""``fit`` never shrinks a drawing's height below this factor: a drawing that would need
more (a long chain of Shares) starts at ``fit width`` instead, so its 11-pt labels stay
readable and it scrolls up and down; the learner can still pick ``fit``."""

_WIDTH = re.compile(r"<svg\b[^>]*?\swidth=\"([0-9.]+)(pt|px)?\"")
_HEIGHT = re.compile(r"<svg\b[^>]*?\sheight=\"([0-9.]+)(pt|px)?\"")


def _natural_size(svg: str, pattern: re.Pattern[str]) -> float:
    """The SVG's width or height in CSS pixels (Graphviz writes points: 1 pt = 4/3 px)."""
    found = pattern.search(svg)
    if found is None:
        return 0.0
    value = float(found.group(1))
    return value * 4 / 3 if found.group(2) in (None, "pt") else value


def _natural_width(svg: str) -> float:
    return _natural_size(svg, _WIDTH)


class DrawingView(widgets.VBox):  # type: ignore[misc]
    """A drawing that fits its container (``zoom == "fit"``: ``max-width: 100%``) or is
    shown at a zoom factor inside a scrolling box; ``max_height`` bounds the box."""

    zoom = traitlets.Enum(ZOOMS, default_value="fit").tag(sync=True)
    svg = traitlets.Unicode("")
    text = traitlets.Unicode("")  # the DOT source when Graphviz's ``dot`` is missing

    def __init__(self, drawing: Any = None, max_height: str = "480px") -> None:
        self.max_height = max_height
        self.zoom_buttons = widgets.ToggleButtons(
            options=list(ZOOMS),
            value="fit",
            description="zoom",
            tooltips=[
                "all of the drawing in its box", "the drawing as wide as its box (scroll "
                "up and down)", "natural size", "1.5 × natural size", "2 × natural size",
            ],
            style={"button_width": "auto", "description_width": "auto"},
            layout=widgets.Layout(width="auto"),
        )
        self.image = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        super().__init__(
            children=[self.zoom_buttons, self.image],
            layout=widgets.Layout(width="100%", min_width="0"),
        )
        self.add_class("dualarr-drawing-view")
        traitlets.link((self.zoom_buttons, "value"), (self, "zoom"))
        self.chosen = False  # the learner picked a zoom: keep it for later drawings
        self._choosing = False
        self.zoom_buttons.observe(self._picked, names="value")
        self.observe(self._render, names=["zoom", "svg", "text"])
        self.show(drawing)

    def show(self, drawing: Any) -> None:
        """Show ``drawing`` (anything with Graphviz's ``pipe``; ``None``: nothing)."""
        svg, text = "", ""
        if drawing is not None:
            try:
                svg = drawing.pipe(format="svg", encoding="utf-8")
            except graphviz.ExecutableNotFound:
                text = f"{drawing.source}\n{DOT_HINT}"
        with self.hold_trait_notifications():
            self.svg, self.text = svg, text
        if not self.chosen:
            self._choosing = True
            try:
                self.zoom = "fit width" if self._too_tall_to_fit() else "fit"
            finally:
                self._choosing = False
        self._render()

    def _picked(self, change: Any) -> None:
        if not self._choosing:
            self.chosen = True

    def _too_tall_to_fit(self) -> bool:
        """Whether ``fit`` would shrink the drawing below :data:`READABLE_SCALE`."""
        height = _natural_size(self.svg, _HEIGHT)
        limit = float(self.max_height.removesuffix("px")) if self.max_height.endswith(
            "px") else 0.0
        return limit > 0 and height * READABLE_SCALE > limit

    @property
    def width(self) -> float:
        """The drawing's natural width in CSS pixels (0 without a drawing)."""
        return _natural_width(self.svg)

    def html(self) -> str:
        """The drawing as an ``<img>`` in a box: fitted, or zoomed and scrollable."""
        box = f"overflow:auto;max-width:100%;max-height:{self.max_height};box-sizing:border-box"
        if not self.svg:
            if not self.text:
                return ""
            return f"<pre style='{box};margin:0'>{html.escape(self.text)}</pre>"
        data = base64.b64encode(self.svg.encode("utf-8")).decode("ascii")
        if self.zoom == "fit":
            size = f"max-width:100%;max-height:{self.max_height};width:auto;height:auto"
        elif self.zoom == "fit width":
            size = "max-width:100%;width:auto;height:auto"
        else:
            scaled = self.width * int(self.zoom.rstrip("%")) / 100
            size = f"max-width:none;width:{scaled:.0f}px;height:auto"
        return (
            f"<div class='dualarr-drawing' style='{box}'><img alt='drawing' "
            f"src='data:image/svg+xml;base64,{data}' style='display:block;{size}'></div>"
        )

    def _render(self, change: Any = None) -> None:
        self.image.value = self.html()
        self.zoom_buttons.layout.display = "flex" if self.svg else "none"

    def __repr__(self) -> str:
        return f"<DrawingView zoom={self.zoom}: {self.width:.0f} px wide>"


def controls_row(controls: Sequence[widgets.Widget]) -> widgets.HBox:
    """A widget's buttons and status in one row that wraps on a narrow screen."""
    return widgets.HBox(
        list(controls),
        layout=widgets.Layout(flex_flow="row wrap", align_items="center", width="100%"),
    )


def collapsed(output: widgets.Widget, height: str) -> widgets.Widget:
    """``output`` (an ``Output`` with text) at most ``height`` tall; longer text scrolls."""
    output.layout.max_height = height
    output.layout.overflow = "auto"
    output.layout.min_width = "0"
    return output


def beside(text: widgets.Widget, drawing: widgets.Widget, height: str = "28em") -> widgets.Box:
    """``text`` (collapsed to ``height``) left of ``drawing`` where the width allows,
    above it where it does not (a wrapping flex row)."""
    collapsed(text, height)
    text.layout.flex = "1 1 22em"
    drawing.layout.flex = "2 1 380px"
    drawing.layout.margin = "0 0 0 0.5em"
    return widgets.Box(
        children=[text, drawing],
        layout=widgets.Layout(
            display="flex", flex_flow="row wrap", align_items="flex-start", width="100%"
        ),
    )


class Progress(widgets.HBox):  # type: ignore[misc]
    """A progress bar and a line saying what is being done; empty while idle."""

    def __init__(self) -> None:
        self.bar = widgets.IntProgress(min=0, max=1, layout=widgets.Layout(width="14em"))
        self.label = widgets.Label()
        super().__init__(children=(), layout=widgets.Layout(align_items="center"))

    def start(self, total: int, text: str) -> None:
        self.bar.max = max(total, 1)
        self.bar.value = 0
        self.label.value = text
        self.children = [self.bar, self.label]

    def advance(self, text: str) -> None:
        self.bar.value = min(self.bar.value + 1, self.bar.max)
        self.label.value = text

    def finish(self) -> None:
        self.children = []


@contextmanager
def busy(
    owner: traitlets.HasTraits,
    buttons: Sequence[widgets.Button],
    progress: Progress,
    total: int,
    text: str,
) -> Iterator[Progress]:
    """While the block runs: ``owner.busy`` is true, ``buttons`` are disabled and
    ``progress`` shows (``total`` steps, first saying ``text``); afterwards, also when
    the block raises, the buttons are as they were and the bar is gone."""
    before = [b.disabled for b in buttons]
    owner.set_trait("busy", True)
    for b in buttons:
        b.disabled = True
    progress.start(total, text)
    try:
        yield progress
    finally:
        progress.finish()
        for b, disabled in zip(buttons, before, strict=True):
            b.disabled = disabled
        owner.set_trait("busy", False)

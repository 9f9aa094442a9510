"""Pieces every widget uses to fit the screen and to say that it is busy.

:class:`DrawingView` shows a drawing (a Graphviz ``Drawing`` of :mod:`dualarr.show.drawing`)
scaled to fit the width of the output area, never clipped, with a zoom control; zoomed,
the drawing scrolls (pans) inside its box.  A *following* view (``follow=True``, the
steppers') keeps the highlighted (gold) nodes of each drawing in view, scrolling its box
to them, and never draws a node label smaller than :data:`READABLE_LABEL_PX`.
:func:`beside` puts a text beside a drawing where the width allows, below it where it
does not, and collapses long text into a scrolling box, so that a widget's controls and
drawing stay on one screen (≈ 900 px).
:class:`Progress` and :func:`busy` disable a widget's buttons and show a progress bar
while an action runs (a *run*, a *measure*).  State in traitlets: testable without a
browser.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import graphviz
import ipywidgets as widgets
import traitlets

from dualarr.show.drawing import DOT_HINT

__all__ = [
    "READABLE_LABEL_PX", "READABLE_SCALE", "ZOOMS", "DrawingView", "Progress", "beside",
    "busy", "collapsed", "controls_row", "drawing_svg", "focus_box", "label_px",
    "readable_scale", "static_drawing_html",
]

ZOOMS = ("fit", "fit width", "100%", "150%", "200%")
"""The zoom levels: ``fit`` scales the drawing down to its box (all of it on screen),
``fit width`` to the box's width (a tall drawing scrolls up and down); the others are
its natural size times a factor, panned by scrolling."""

READABLE_SCALE = 0.5
"""``fit`` never shrinks a drawing's height below this factor: a drawing that would need
more (a long chain of Shares) starts at ``fit width`` instead, so its 11-pt labels stay
readable and it scrolls up and down; the learner can still pick ``fit``."""

READABLE_LABEL_PX = 10.0
"""A following view never shows a node label less than this many CSS pixels high (its
font size): ``fit`` and ``fit width`` stop shrinking the drawing there and the box
scrolls instead."""

FOCUS_FILL = "gold"
"""The fill of a highlighted node (:func:`dualarr.show.drawing.term_graph` and
``delta_graph`` paint the rewritten subterm, the current Share, with it)."""

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


_VIEWBOX = re.compile(r"<svg\b[^>]*?\sviewBox=\"([-0-9.]+) ([-0-9.]+) ([0-9.]+) ([0-9.]+)\"")
_GRAPH = re.compile(r"<g id=\"graph0\" class=\"graph\" transform=\"([^\"]*)\"")
_SCALE = re.compile(r"scale\(([-0-9.]+)(?:[ ,]+([-0-9.]+))?\)")
_TRANSLATE = re.compile(r"translate\(([-0-9.]+)(?:[ ,]+([-0-9.]+))?\)")
_NODE = re.compile(r"<g id=\"[^\"]*\" class=\"node\">(.*?)</g>", re.S)
_PAIR = re.compile(r"(-?[0-9.]+),(-?[0-9.]+)")
_ELLIPSE = re.compile(r"<ellipse\b[^>]*?cx=\"(-?[0-9.]+)\" cy=\"(-?[0-9.]+)\" "
                      r"rx=\"([0-9.]+)\" ry=\"([0-9.]+)\"")
_FONT = re.compile(r"<text\b[^>]*?font-size=\"([0-9.]+)\"")


def _node_points(body: str) -> list[tuple[float, float]]:
    """The corners of a Graphviz node group's shapes (polygons, paths, ellipses)."""
    points = [
        (float(x), float(y))
        for attr in re.findall(r"\s(?:points|d)=\"([^\"]*)\"", body)
        for x, y in _PAIR.findall(attr)
    ]
    for cx, cy, rx, ry in _ELLIPSE.findall(body):
        x, y, a, b = float(cx), float(cy), float(rx), float(ry)
        points += [(x - a, y - b), (x + a, y + b)]
    return points


def focus_box(svg: str, fill: str = FOCUS_FILL) -> tuple[float, float, float, float] | None:
    """The box around the nodes of a Graphviz SVG filled ``fill`` (the highlighted ones),
    as fractions ``(left, top, right, bottom)`` of the drawing; ``None`` without one."""
    view, graph = _VIEWBOX.search(svg), _GRAPH.search(svg)
    if view is None or graph is None:
        return None
    vx, vy, vw, vh = (float(v) for v in view.groups())
    scale, shift = _SCALE.search(graph.group(1)), _TRANSLATE.search(graph.group(1))
    sx = float(scale.group(1)) if scale else 1.0
    sy = float(scale.group(2) or sx) if scale else 1.0
    tx = float(shift.group(1)) if shift else 0.0
    ty = float(shift.group(2) or 0.0) if shift else 0.0
    points = [
        (sx * (x + tx), sy * (y + ty))
        for body in _NODE.findall(svg)
        if f'fill="{fill}"' in body
        for x, y in _node_points(body)
    ]
    if not points or vw <= 0 or vh <= 0:
        return None
    xs, ys = [(x - vx) / vw for x, _ in points], [(y - vy) / vh for _, y in points]
    def clip(v: float) -> float:
        return min(max(v, 0.0), 1.0)

    return clip(min(xs)), clip(min(ys)), clip(max(xs)), clip(max(ys))


def label_px(svg: str) -> float:
    """The font size of the smallest label of a Graphviz SVG, in CSS pixels at its natural
    size (Graphviz writes 11 pt: 14.7 px); 0 without a label."""
    sizes = [float(v) for v in _FONT.findall(svg)]
    view = _VIEWBOX.search(svg)
    if not sizes or view is None or float(view.group(3)) <= 0:
        return 0.0
    return min(sizes) * _natural_width(svg) / float(view.group(3))


def readable_scale(svg: str) -> float:
    """The smallest scale at which every label of ``svg`` is :data:`READABLE_LABEL_PX`
    high (at most 1: a drawing is never scaled up to be read)."""
    natural = label_px(svg)
    return min(READABLE_LABEL_PX / natural, 1.0) if natural > 0 else 0.0


def drawing_svg(drawing: Any) -> tuple[str, str]:
    """``(svg, text)`` of a drawing: its SVG, or its DOT source with a hint where Graphviz's
    ``dot`` is missing; ``("", "")`` for ``None``."""
    if drawing is None:
        return "", ""
    try:
        return drawing.pipe(format="svg", encoding="utf-8"), ""
    except graphviz.ExecutableNotFound:
        return "", f"{drawing.source}\n{DOT_HINT}"


def static_drawing_html(svg: str, text: str = "") -> str:
    """A drawing for a page without a kernel (the book): as wide as the page allows, no
    script."""
    if not svg:
        return f"<pre style='max-width:100%;overflow:auto;margin:0'>{html.escape(text)}</pre>" \
            if text else ""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return (
        f"<img alt='drawing' src='data:image/svg+xml;base64,{data}' "
        "style='max-width:100%;height:auto;display:block;margin:0.25em 0'>"
    )


# The box scrolls to the focus (fractions of the image: left, top, right, bottom): its
# centre in the middle of the box, or its top-left corner when it is larger than the box.
_FOLLOW = (
    "var b=this.parentElement,f=[{0:.4f},{1:.4f},{2:.4f},{3:.4f}],"
    "g=function(a,c,s,v){{var m=(a+c)/2*s-v/2;if((c-a)*s>v-16)m=a*s-8;return Math.max(0,m)}};"
    "b.scrollLeft=g(f[0],f[2],this.offsetWidth,b.clientWidth);"
    "b.scrollTop=g(f[1],f[3],this.offsetHeight,b.clientHeight)"
)


class DrawingView(widgets.VBox):  # type: ignore[misc]
    """A drawing that fits its container (``zoom == "fit"``: ``max-width: 100%``) or is
    shown at a zoom factor inside a scrolling box; ``max_height`` bounds the box.  With
    ``follow``, the box scrolls to the highlighted nodes of each drawing (``focus``) and
    ``fit``/``fit width`` never scale below ``min_scale`` (labels
    :data:`READABLE_LABEL_PX` high)."""

    zoom = traitlets.Enum(ZOOMS, default_value="fit").tag(sync=True)
    svg = traitlets.Unicode("")
    text = traitlets.Unicode("")  # the DOT source when Graphviz's ``dot`` is missing
    follow = traitlets.Bool(False)
    # the highlighted nodes' box, as fractions (left, top, right, bottom); [] if none
    focus = traitlets.List(traitlets.Float())
    # the scale below which a label would be smaller than READABLE_LABEL_PX (following)
    min_scale = traitlets.Float(0.0)

    def __init__(
        self, drawing: Any = None, max_height: str = "480px", follow: bool = False
    ) -> None:
        self.max_height = max_height
        self.zoom_buttons = widgets.ToggleButtons(
            options=list(ZOOMS),
            value="fit",
            description="zoom",
            tooltips=[
                "all of the drawing in its box (following a step: as far as its labels "
                "stay readable, then it scrolls)", "the drawing as wide as its box (scroll "
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
        self.follow = follow
        traitlets.link((self.zoom_buttons, "value"), (self, "zoom"))
        self.chosen = False  # the learner picked a zoom: keep it for later drawings
        self._choosing = False
        self.zoom_buttons.observe(self._picked, names="value")
        self.observe(self._render, names=["zoom", "svg", "text"])
        self.show(drawing)

    def show(self, drawing: Any) -> None:
        """Show ``drawing`` (anything with Graphviz's ``pipe``; ``None``: nothing)."""
        svg, text = drawing_svg(drawing)
        box = focus_box(svg) if self.follow else None
        with self.hold_trait_notifications():
            self.svg, self.text = svg, text
            self.focus = list(box) if box is not None else []
            self.min_scale = readable_scale(svg) if self.follow else 0.0
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
        """Whether ``fit`` would shrink the drawing below :data:`READABLE_SCALE` (a
        following view: below ``min_scale``)."""
        height = _natural_size(self.svg, _HEIGHT)
        limit = float(self.max_height.removesuffix("px")) if self.max_height.endswith(
            "px") else 0.0
        return limit > 0 and height * max(READABLE_SCALE, self.min_scale) > limit

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
        # a following view's floor: fitted, labels stay READABLE_LABEL_PX (the box scrolls)
        floor = f";min-width:{math.ceil(self.width * self.min_scale)}px" if (
            self.follow and self.min_scale > 0) else ""
        if self.zoom == "fit" and not (self.follow and self._too_tall_to_fit()):
            size = f"max-width:100%;max-height:{self.max_height};width:auto;height:auto{floor}"
        elif self.zoom in ("fit", "fit width"):
            size = f"max-width:100%;width:auto;height:auto{floor}"
        else:
            scaled = self.width * int(self.zoom.rstrip("%")) / 100
            size = f"max-width:none;width:{scaled:.0f}px;height:auto"
        scroll = ""
        if self.follow and len(self.focus) == 4:
            scroll = f' onload="{_FOLLOW.format(*self.focus)}"'
        return (
            f"<div class='dualarr-drawing' style='{box}'><img alt='drawing' "
            f"src='data:image/svg+xml;base64,{data}' style='display:block;{size}'{scroll}>"
            "</div>"
        )

    def _snapshot_html_(self) -> str:
        """The drawing for a page without a kernel (:mod:`.snapshot`): no script."""
        return static_drawing_html(self.svg, self.text)

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

"""Static snapshots of widgets: what a widget shows, as self-contained HTML.

A widget's view needs a live kernel (or a widget manager script); a page without one (the
book, a notebook viewer, JupyterLab before the cells run) would show nothing.
:class:`StaticSnapshot` adds ``text/html`` to a widget's display bundle: the text,
drawings and tables it shows at display time, with every tab of a ``Tab`` in a
``<details>`` (the selected one open).  A stepper shows every step (:func:`filmstrip`):
its frames side by side in a strip that scrolls sideways, one frame as wide as the page,
with links to each step, so that the book shows the whole walk without a kernel.  The
HTML has no script, no style sheet and no link to another page: drawings are ``data:``
images scaled to the width of the page.  JupyterLab with a
live kernel ranks the widget view above ``text/html``, so there the widget itself shows.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

__all__ = ["FILMSTRIP_CLASS", "SNAPSHOT_CLASS", "Frame", "StaticSnapshot", "filmstrip",
           "snapshot_html"]

SNAPSHOT_CLASS = "dualarr-snapshot"
"""The CSS class of a snapshot's outer ``<div>`` (the book styles and tests look for it)."""

FILMSTRIP_CLASS = "dualarr-filmstrip"
"""The CSS class of a stepper's frames (``data-frames``: how many); each frame is a
``<section class='dualarr-frame'>`` with ``data-step`` (1, 2, …)."""

_BOX = "max-width:100%;box-sizing:border-box"
_PRE = f"{_BOX};overflow-x:auto;margin:0.25em 0;padding:0.4em;background:#f6f8fa;font-size:0.85em"
_FIGURE = "max-width:100%;height:auto;display:block;margin:0.25em 0"
_IMAGE_TYPES = ("image/svg+xml", "image/png", "image/jpeg", "image/gif")


def snapshot_html(widget: Any) -> str:
    """``widget`` as static HTML: a note naming it, then what its parts show now."""
    name = html.escape(type(widget).__name__)
    note = (
        f"<div style='font-size:0.85em;color:#57606a;margin-bottom:0.4em'><b>{name}</b>: a "
        "static copy of the widget as the notebook displayed it (run the notebook in "
        "JupyterLab to use it)</div>"
    )
    return (
        f"<div class='{SNAPSHOT_CLASS}' data-widget='{name}' style='{_BOX};"
        f"border:1px solid #d0d7de;border-radius:6px;padding:0.6em;overflow-x:auto'>"
        f"{note}{_widget(widget)}</div>"
    )


class StaticSnapshot:
    """Mixin for an ipywidgets widget (list it before the widget class): the display
    bundle carries :func:`snapshot_html` as ``text/html`` beside the widget view."""

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        parent: Any = super()
        bundle: dict[str, Any] | None = parent._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        return {**bundle, "text/html": snapshot_html(self)}


@dataclass(frozen=True)
class Frame:
    """One step of a stepper as the book shows it: a heading (HTML), the text the step
    prints, and its drawing (SVG; or DOT text where Graphviz's ``dot`` is missing)."""

    heading: str
    text: str
    drawing: str  # HTML of the drawing (an <img> with a data: URL), no script


def filmstrip(frames: Sequence[Frame]) -> str:
    """Every frame of a stepper, in order: a row of links to each step, then the frames
    side by side in a strip that scrolls sideways (snapping to a frame), each frame with
    links to the step before and after.  No script: links to ``#ids`` made from a hash
    of the frames (the same frames give the same HTML)."""
    key = hashlib.sha1(
        "\0".join(f"{f.heading}\0{f.text}\0{f.drawing}" for f in frames).encode("utf-8")
    ).hexdigest()[:10]
    n = len(frames)

    def link(k: int, text: str) -> str:
        return f"<a href='#dualarr-{key}-step-{k}'>{text}</a>"

    index = " · ".join(link(k, str(k)) for k in range(1, n + 1))
    parts = []
    for k, frame in enumerate(frames, start=1):
        around = [link(k - 1, f"◀ step {k - 1}")] if k > 1 else []
        around += [link(k + 1, f"step {k + 1} ▶")] if k < n else []
        text = f"<pre style='{_PRE}'>{html.escape(frame.text)}</pre>" if frame.text else ""
        parts.append(
            f"<section class='dualarr-frame' id='dualarr-{key}-step-{k}' data-step='{k}' "
            f"style='{_BOX};flex:0 0 100%;min-width:0;scroll-snap-align:start;"
            "scroll-margin-top:5em'>"
            f"<div style='font-size:0.85em;text-align:right'>{' | '.join(around)}</div>"
            f"<div>{frame.heading}</div>{text}{frame.drawing}</section>"
        )
    return (
        f"<div class='{FILMSTRIP_CLASS}' data-frames='{n}' style='{_BOX}'>"
        f"<div style='font-size:0.85em;margin:0.2em 0'>all {n} steps, side by side (scroll "
        f"sideways, or go to a step: {index})</div>"
        f"<div style='{_BOX};display:flex;gap:1.5em;align-items:flex-start;overflow-x:auto;"
        f"scroll-snap-type:x mandatory'>{''.join(parts)}</div></div>"
    )


def _widget(widget: Any) -> str:
    """One widget and its children, as HTML (nothing for a hidden widget); a widget with a
    ``_snapshot_html_`` method (a stepper, a drawing) gives its own."""
    layout = getattr(widget, "layout", None)
    if layout is not None and (layout.display == "none" or layout.visibility == "hidden"):
        return ""
    own = getattr(widget, "_snapshot_html_", None)
    if callable(own):
        return str(own())
    if isinstance(widget, widgets.Tab | widgets.Accordion):
        return _tabs(widget)
    if isinstance(widget, widgets.Output):
        return _outputs(widget.outputs)
    if isinstance(widget, widgets.HBox):
        parts = "".join(f"<div>{_widget(child)}</div>" for child in widget.children)
        return (
            f"<div style='{_BOX};display:flex;flex-wrap:wrap;gap:0.6em;"
            f"align-items:center'>{parts}</div>"
        )
    if isinstance(widget, widgets.Box):
        return f"<div style='{_BOX}'>{''.join(_widget(c) for c in widget.children)}</div>"
    if isinstance(widget, widgets.HTML | widgets.HTMLMath):
        return str(widget.value)
    if isinstance(widget, widgets.Label):
        return html.escape(str(widget.value))
    if isinstance(widget, widgets.Textarea | widgets.Text):
        text = html.escape(widget.value)
        return f"<pre style='{_PRE};border-left:3px solid #0969da'>{text}</pre>"
    if isinstance(widget, widgets.Image):
        encoded = base64.b64encode(bytes(widget.value)).decode("ascii")
        return _image(f"image/{widget.format}", encoded, "image")
    if isinstance(widget, widgets.Button | widgets.ToggleButton | widgets.ToggleButtons):
        return ""  # buttons (a zoom, a next step) do nothing in a static page
    return _control(widget)


def _control(widget: Any) -> str:
    """A slider, checkbox, dropdown … as ``description: value`` (with its range)."""
    value = getattr(widget, "value", None)
    if value is None:
        return ""
    text = f"{widget.description}: {value}" if getattr(widget, "description", "") else str(value)
    if isinstance(widget, widgets.IntSlider | widgets.FloatSlider):
        text += f" (slider from {widget.min} to {widget.max})"
    return f"<span>{html.escape(text)}</span>"


def _tabs(widget: Any) -> str:
    """Each tab as a ``<details>`` titled by its tab title; the selected tab open."""
    titles: tuple[str, ...] = tuple(getattr(widget, "titles", ()))
    selected = widget.selected_index
    parts = []
    for k, child in enumerate(widget.children):
        title = titles[k] if k < len(titles) and titles[k] else f"tab {k + 1}"
        opened = " open" if k == selected else ""
        parts.append(
            f"<details{opened} style='margin:0.2em 0'><summary style='cursor:pointer'>"
            f"<b>{html.escape(title)}</b></summary><div style='{_BOX};padding-left:0.8em'>"
            f"{_widget(child)}</div></details>"
        )
    return "".join(parts)


def _outputs(outputs: Iterable[Mapping[str, Any]]) -> str:
    """An ``Output`` widget's outputs (the notebook output format), in order; adjacent
    stream texts are one ``<pre>``."""
    parts: list[str] = []
    stream: list[str] = []

    def flush() -> None:
        if stream:
            parts.append(f"<pre style='{_PRE}'>{html.escape(''.join(stream))}</pre>")
            stream.clear()

    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            stream.append(str(output.get("text", "")))
            continue
        flush()
        if kind == "error":
            text = f"{output.get('ename', '')}: {output.get('evalue', '')}"
            parts.append(f"<pre style='{_PRE};color:#b00'>{html.escape(text)}</pre>")
        elif kind in ("display_data", "execute_result"):
            parts.append(_data(output.get("data", {})))
    flush()
    return "".join(parts)


def _data(data: Mapping[str, Any]) -> str:
    """One display bundle: its HTML, else its image, else its text."""
    if "text/html" in data:
        return f"<div style='{_BOX};overflow-x:auto'>{_text(data['text/html'])}</div>"
    for mime in _IMAGE_TYPES:
        if mime in data:
            content = _text(data[mime])
            if mime == "image/svg+xml":
                content = base64.b64encode(content.encode("utf-8")).decode("ascii")
            return _image(mime, content.replace("\n", ""), "drawing")
    if "text/plain" in data:
        return f"<pre style='{_PRE}'>{html.escape(_text(data['text/plain']))}</pre>"
    return ""


def _image(mime: str, encoded: str, alt: str) -> str:
    return f"<img src='data:{mime};base64,{encoded}' alt='{alt}' style='{_FIGURE}'>"


def _text(value: Any) -> str:
    """A bundle entry as one string (the notebook format may split it into lines)."""
    return "".join(value) if isinstance(value, list) else str(value)

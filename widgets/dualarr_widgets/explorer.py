"""``PipelineExplorer``: every stage of one program, one tab each (README, "Layout").

Tabs: source (and, for NumPy code, each ``dualarr.numpy`` call beside its lowering),
vectorised (with the :class:`BotStepper`), forward Delta (drawn), the extracted symbolic
Delta (Eq. 6), the shared gradient, the let-converted program, the generated Python (the
fused kernels it calls listed first, §7.5) and a check (``da.check_grad``).  The
program's Python source is in a text area: editing it and pressing *run* re-traces and
updates every tab.  Any exception the source raises (a syntax error, a ``NameError``, a
``TypeError``, a ``DualarrError`` …) is shown in the widget, not as a traceback: its
type, its message and the line of the edited source it came from.  The tabs then keep
the last program that worked, greyed out under a banner that says so (``stale``), so
the learner can compare it with the failing edit; the next edit that runs replaces them
and clears the mark.  State in traitlets, output appended, so it runs and is tested
without a kernel.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import html
import inspect
import textwrap
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets

import dualarr as da
from dualarr.lang.errors import DualarrError
from dualarr.pipeline import Pipeline

from .botstepper import BotStepper
from .snapshot import StaticSnapshot
from .view import DrawingView, Progress, beside, busy, collapsed

__all__ = ["PipelineExplorer", "SourceError"]

TABS = ("source", "vectorised", "forward", "delta", "shared", "gradient", "python", "check")
DRAWN = ("source", "forward", "delta", "shared", "gradient")  # text beside a drawing
# (the vectorised tab draws with its BotStepper)
_STEPS = 1 + 8 + len(DRAWN) + 1  # progress: trace and bot, each stage, each drawing, check
SOURCE_FILE = "<PipelineExplorer>"  # the file name the edited source is compiled under
STALE_CLASS = "dualarr-stale"  # on the explorer while its tabs show an earlier program
STALE_CSS = (  # greys out the tab contents of a stale explorer (the tab bar stays usable)
    f"<style>.dualarr-pipeline-explorer.{STALE_CLASS} > .widget-tab > .widget-tab-contents"
    " {opacity: 0.55; filter: grayscale(1); outline: 2px dashed #9a6700;"
    " outline-offset: -2px}</style>"
)


def _source_of(f: Callable[..., Any]) -> tuple[str, int]:
    """``f``'s source, dedented, and the line of its file it starts at (0: no source)."""
    try:
        lines, first = inspect.getsourcelines(f)
    except (OSError, TypeError):
        return "", 0
    return textwrap.dedent("".join(lines)), max(first, 1)


@dataclass(frozen=True)
class Origin:
    """Where the editor's text runs from: code in ``filename`` from line ``first`` on."""

    filename: str
    first: int
    lines: tuple[str, ...]

    def line_of(self, filename: str, lineno: int | None) -> int:
        """The 1-based line of the editor's text at ``filename:lineno`` (0: not in it)."""
        if filename != self.filename or lineno is None:
            return 0
        line = lineno - self.first + 1
        return line if 1 <= line <= len(self.lines) else 0

    def text(self, line: int) -> str:
        return self.lines[line - 1].strip() if 1 <= line <= len(self.lines) else ""


@dataclass(frozen=True)
class SourceError:
    """An exception raised by the program in the editor, located in the edited source:
    ``line`` counts from 1 in the editor's text (0 when no line of it was running)."""

    kind: str
    message: str
    line: int
    text: str

    def __str__(self) -> str:
        head = f"{self.kind}: {self.message}" if self.message else self.kind
        return f"{head}\n  line {self.line}: {self.text}" if self.line else head

    def html(self) -> str:
        head = f"<b>{html.escape(self.kind)}</b>"
        if self.message:
            head += ": " + html.escape(self.message)
        if self.line:
            head += f"<br>line {self.line}: <code>{html.escape(self.text)}</code>"
        return f"<span style='color:#b00; white-space:pre-wrap'>{head}</span>"


def _chain(err: BaseException) -> Iterable[BaseException]:
    """``err``, then the exceptions it was raised from or while handling."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _located(err: BaseException, origin: Origin) -> tuple[int, FrameType | None]:
    """The innermost line of the edited source in ``err``'s traceback (or in that of an
    exception it was raised from), with its frame; else the line a ``DualarrError``
    names as its location; else ``(0, None)``."""
    for link in _chain(err):
        found: tuple[int, FrameType | None] = (0, None)
        for frame, lineno in traceback.walk_tb(link.__traceback__):
            line = origin.line_of(frame.f_code.co_filename, lineno)
            if line:
                found = (line, frame)
        if found[0]:
            return found
    location = err.location if isinstance(err, DualarrError) else None
    if location and location.startswith(origin.filename + ":"):
        digits = location[len(origin.filename) + 1 :].split(":", 1)[0]
        if digits.isdigit():
            return origin.line_of(origin.filename, int(digits)), None
    return 0, None


def _suggestion(err: BaseException, frame: FrameType | None) -> str:
    """``Did you mean: 'sum'?`` for a misspelt attribute or name, as Python 3.12 says."""
    name = getattr(err, "name", None)
    if not isinstance(name, str):
        return ""
    if isinstance(err, AttributeError):
        candidates = [n for n in dir(getattr(err, "obj", None)) if not n.startswith("__")]
    elif isinstance(err, NameError) and frame is not None:
        candidates = [*frame.f_locals, *frame.f_globals, *dir(builtins)]
    else:
        return ""
    close = difflib.get_close_matches(name, candidates, n=1)
    return f". Did you mean: {close[0]!r}?" if close else ""


def describe(err: BaseException, origin: Origin) -> SourceError:
    """``err`` as its type, its message and the line of the edited source it came from.

    A ``DualarrError``'s message loses its ``at file:line`` suffix (that location may be
    the widget's own code); a syntax error of the source is located by its line number.
    """
    if isinstance(err, SyntaxError) and err.filename == origin.filename:
        line = origin.line_of(origin.filename, err.lineno)
        return SourceError(type(err).__name__, err.msg, line, origin.text(line))
    line, frame = _located(err, origin)
    message = str(err)
    if isinstance(err, DualarrError) and err.location:
        message = message.removesuffix(f"\n  at {err.location}")
    message += _suggestion(err, frame)
    notes = getattr(err, "__notes__", None)
    if isinstance(notes, list):
        message = "\n".join([message, *map(str, notes)])
    return SourceError(type(err).__name__, message, line, origin.text(line))


class PipelineExplorer(StaticSnapshot, widgets.VBox):  # type: ignore[misc]
    """All stages of ``f`` traced on ``arrays``, with an editable source.

    ``error`` is the last failure of the source as text ("" after a good run);
    ``error_type``, ``error_message``, ``error_line`` (from 1 in the editor's text, 0
    for none) and ``error_source`` (that line) are its parts.  After a failure the tabs
    keep the last program that worked (``pipeline`` and ``function`` are still its):
    ``stale`` is then true and ``stale_note`` the banner shown above the greyed tabs;
    if no program has worked yet, the tabs say so.
    """

    code = traitlets.Unicode("").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    error_type = traitlets.Unicode("").tag(sync=True)
    error_message = traitlets.Unicode("").tag(sync=True)
    error_line = traitlets.Int(0).tag(sync=True)
    error_source = traitlets.Unicode("").tag(sync=True)
    busy = traitlets.Bool(False).tag(sync=True)  # a run is under way (the button is disabled)
    stale = traitlets.Bool(False).tag(sync=True)  # the tabs show an earlier program
    stale_note = traitlets.Unicode("").tag(sync=True)  # the banner saying so ("": none)

    def __init__(self, f: Callable[..., Any], *arrays: Any, code: str | None = None) -> None:
        self.arrays = arrays
        self.function = f
        self.pipeline: Pipeline | None = None
        own, first = _source_of(f)
        source = code if code is not None else own
        self.editor = widgets.Textarea(
            value=source, layout=widgets.Layout(width="100%", height="8em")
        )
        self.run_button = widgets.Button(
            description="run", tooltip="trace the code above and show every stage"
        )
        self.progress = Progress()
        self.message = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0"))
        self.stale_banner = widgets.HTML(layout=widgets.Layout(display="none"))
        self.stale_banner.add_class("dualarr-stale-banner")
        stale_style = widgets.HTML(STALE_CSS, layout=widgets.Layout(display="none"))
        self.outputs = {name: widgets.Output() for name in TABS}
        self.views = {name: DrawingView(max_height="380px") for name in DRAWN}
        self.bot_box = widgets.VBox([collapsed(self.outputs["vectorised"], "7em")])
        pages = {name: beside(self.outputs[name], self.views[name], "14em") for name in DRAWN}
        pages["vectorised"] = self.bot_box
        pages.update({n: collapsed(self.outputs[n], "36em") for n in ("python", "check")})
        self.tabs = widgets.Tab(children=[pages[n] for n in TABS], titles=list(TABS))
        self.run_button.on_click(lambda _: self.run())
        controls = widgets.HBox(
            [self.run_button, self.progress, self.message],
            layout=widgets.Layout(align_items="center", width="100%"),
        )
        super().__init__(
            children=[self.editor, controls, self.stale_banner, self.tabs, stale_style],
            layout=widgets.Layout(width="100%", min_width="0"),
        )
        self.add_class("dualarr-pipeline-explorer")
        self.code = source
        if code is None and first:  # the editor shows f's own lines, from line ``first``
            origin = Origin(inspect.getfile(f), first, tuple(source.splitlines()))
        else:  # the editor does not show f's own lines: no line of it can be named
            origin = Origin(SOURCE_FILE, 1, ())
        with busy(self, [self.run_button], self.progress, _STEPS, "tracing"):
            self._show(f, origin)

    def __repr__(self) -> str:
        name = getattr(self.function, "__name__", "function")
        state = f"error: {self.error_type}" if self.error else f"{len(TABS)} stages"
        return f"<PipelineExplorer {name}: {state}>"

    # -- running -------------------------------------------------------------------

    def run(self) -> None:
        """Execute the text area's code and show the stages of the function it defines
        (the first ``def``; ``da`` and ``np`` are in scope).  While it runs the *run*
        button is disabled and a progress bar names the stage being computed."""
        with busy(self, [self.run_button], self.progress, _STEPS, "tracing"):
            self._run()

    def _run(self) -> None:
        self.code = self.editor.value
        origin = Origin(SOURCE_FILE, 1, tuple(self.code.splitlines()))
        try:
            tree = ast.parse(self.code, SOURCE_FILE)
            names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
            if not names:
                raise SyntaxError(
                    "the code defines no function (def name(...): ...)", (SOURCE_FILE, 0, 0, "")
                )
            namespace: dict[str, Any] = {"da": da, "np": np}
            exec(compile(tree, SOURCE_FILE, "exec"), namespace)
        except Exception as err:  # the user's code failed: show it, as a cell would
            self._fail(describe(err, origin))
            return
        self._show(namespace[names[0]], origin)

    def _fail(self, report: SourceError) -> None:
        """Show ``report``; the tabs keep the last program that worked, marked stale
        (with none yet, each tab says that the source failed)."""
        self.error_type, self.error_message = report.kind, report.message
        self.error_line, self.error_source = report.line, report.text
        self.error = str(report)
        self.message.value = report.html()
        if self.pipeline is None:  # nothing worked yet: nothing to keep
            for out in self.outputs.values():
                out.outputs = ()
                out.append_stdout(f"(no program to show: the source failed)\n{report}\n")
            return
        name = getattr(self.function, "__name__", "function")
        self.stale_note = (
            f"showing the last program that worked ({name}), greyed out: the edited "
            "source failed (the error above). Fix it and press run to refresh the tabs."
        )
        self.stale_banner.value = (
            "<div style='background:#fff8c5;border:1px solid #d4a72c;border-radius:4px;"
            "padding:0.3em 0.6em;color:#4d2d00;box-sizing:border-box'>&#9888; <b>stale</b>: "
            f"{html.escape(self.stale_note)}</div>"
        )
        self.stale_banner.layout.display = "block"
        self.add_class(STALE_CLASS)
        self.stale = True

    def _fresh(self) -> None:
        """The tabs show the program in the editor: no stale mark."""
        self.stale, self.stale_note = False, ""
        self.stale_banner.value = ""
        self.stale_banner.layout.display = "none"
        self.remove_class(STALE_CLASS)

    def _show(self, f: Callable[..., Any], origin: Origin) -> None:
        step = self.progress.advance
        try:
            p = da.pipeline(f, *self.arrays)
            names = [name for name in p.stages if name != "bot_steps"]
            shown = {}
            for name in names:
                step(f"computing the {name} stage")
                shown[name] = getattr(p, name)
        except Exception as err:  # any failure of the user's program, not only dualarr's
            self._fail(describe(err, origin))
            return
        self.function, self.pipeline = f, p
        self.error = self.error_type = self.error_message = self.error_source = ""
        self.error_line = 0
        self._fresh()
        self.message.value = f"<b>{p.source.name}</b> {html.escape(p.source.signature())}"
        for out in self.outputs.values():
            out.outputs = ()
        for view in self.views.values():
            view.show(None)
        for name in ("source", "vectorised", "forward", "delta", "shared", "gradient"):
            out = self.outputs[name]
            if name not in shown:
                out.append_stdout(f"({name}: the gradient stages need one float output)\n")
                continue
            stage = shown[name]
            out.append_stdout(str(stage).rstrip("\n") + "\n")
            if name == "vectorised":  # drawn step by step by the BotStepper below
                continue
            step(f"drawing the {name} stage")
            if name == "source" and stage.numpy_calls:  # NumPy code: each call's lowering
                listing = stage.numpy_source()
                out.append_stdout(f"\nas written with dualarr.numpy:\n{listing}\n")
                self.views[name].show(stage.numpy_graph())  # a box per call
                continue
            self.views[name].show(stage.graph())
        stepper = BotStepper(stages=p, max_height="360px")
        self.bot_box.children = (self.outputs["vectorised"], stepper)
        if "python" in shown:
            listing = f"== kernels\n{shown['kernels']}\n\n== python\n{shown['python']}"
            self.outputs["python"].append_stdout(listing)
            step("checking the gradient (check_grad)")
            self._check(f, origin)
        else:
            self.outputs["python"].append_stdout("(no gradient program: one float output needed)\n")
            self.outputs["check"].append_stdout("(no gradient to check)\n")

    def _check(self, f: Callable[..., Any], origin: Origin) -> None:
        out = self.outputs["check"]
        try:
            report = da.check_grad(f, *self.arrays)
        except Exception as err:  # shown in the tab; the other stages went through
            out.append_stdout(f"{describe(err, origin)}\n")
            return
        out.append_display_data(report)

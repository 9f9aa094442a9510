"""``ExplosionPlot``: Delta size and gradient time against n for the three methods of
the paper (§2, §4, §6): scalar dual numbers, dual arrays without the bot, and dual
arrays after the bot.  The first two grow with n (the Delta explosion and the one-hot
cotangents of §4); the third has the same Delta whatever n is.  Log-log (ticks at powers
of ten only, one legend below both plots), measured live with
:mod:`dualarr.teach.baselines`.  The sizes are typed in a text box; while *measure* runs
its button is disabled and a progress bar advances per method and size (state in
traitlets: ``sizes``, ``busy``, ``error``).  :func:`measure_explosion` alone can show a
``tqdm`` progress bar (``progress=True``) for long measurements in notebooks."""

from __future__ import annotations

import html
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatterMathtext, LogLocator, NullFormatter

from dualarr.teach.baselines import dual_arrays_gradient, scalar_gradient, unvectorised_gradient
from dualarr.teach.examples import fig18

from .snapshot import StaticSnapshot
from .view import Progress, busy, collapsed, controls_row

__all__ = ["ExplosionPlot", "ExplosionRow", "measure_explosion", "parse_sizes"]

METHODS: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("scalar dual numbers (§2)", scalar_gradient),
    ("dual arrays, no bot (§4)", unvectorised_gradient),
    ("dual arrays + bot (§6)", dual_arrays_gradient),
)


@dataclass(frozen=True)
class ExplosionRow:
    """One method at one size: Delta nodes, one-hot cotangents, gradient seconds."""

    method: str
    n: int
    delta_nodes: int
    one_hots: int
    seconds: float


def measure_explosion(
    f: Callable[..., Any] = fig18,
    sizes: Sequence[int] = (4, 8, 16, 32, 64),
    arguments: Callable[[int], tuple[np.ndarray, ...]] | None = None,
    *,
    progress: bool = False,
    on_measure: Callable[[int, str], None] | None = None,
) -> list[ExplosionRow]:
    """Run every method on ``arguments(n)`` (default: ``x = 1..n``) for each size.

    ``progress=True`` shows a progress bar (``tqdm.auto``: a widget in a notebook, text in
    a terminal); ``on_measure(n, method)`` is told before each measurement."""
    make = arguments or (lambda n: (np.arange(1.0, n + 1.0),))
    rows = []
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(sizes) * len(METHODS), desc="measuring", unit="run")
    try:
        for n in sizes:
            args = make(n)
            for name, method in METHODS:
                if on_measure is not None:
                    on_measure(n, name)
                if bar is not None:
                    bar.set_postfix_str(f"n = {n}, {name}")
                report = method(f, *args)
                rows.append(
                    ExplosionRow(name, n, report.delta_nodes, report.one_hots, report.seconds)
                )
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return rows


def parse_sizes(text: str) -> list[int]:
    """``"4, 8, 16"`` (commas or spaces) as sizes: distinct positive ints, sorted; a
    :class:`ValueError` saying what is wrong otherwise."""
    words = text.replace(",", " ").split()
    if not words:
        raise ValueError("give at least one size n, e.g. 4, 8, 16, 32")
    sizes = []
    for word in words:
        if not word.isdigit() or int(word) < 1:
            raise ValueError(f"{word!r} is not a size: sizes are whole numbers n >= 1")
        sizes.append(int(word))
    return sorted(set(sizes))


def _decades(axes: Any, which: str, values: Sequence[float]) -> None:
    """Axis ``which`` ("x" or "y") of ``axes`` on a log scale labelled at powers of ten
    only (10⁰, 10¹, …), spanning whole decades around ``values`` (two labels at least)."""
    low = math.floor(math.log10(min(values)))
    high = max(math.ceil(math.log10(max(values))), low + 1)
    axis = axes.xaxis if which == "x" else axes.yaxis
    axis.set_major_locator(LogLocator(base=10, numticks=12))
    axis.set_major_formatter(LogFormatterMathtext(base=10))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10)), numticks=12))
    axis.set_minor_formatter(NullFormatter())
    getattr(axes, f"set_{which}lim")(10.0**low, 10.0**high)


class ExplosionPlot(StaticSnapshot, widgets.VBox):  # type: ignore[misc]
    """The measurements as a log-log plot (Delta nodes, seconds) and a table."""

    sizes = traitlets.List(traitlets.Int(), default_value=[4, 8, 16, 32, 64])
    busy = traitlets.Bool(False).tag(sync=True)  # measuring (the button is disabled)
    error = traitlets.Unicode("").tag(sync=True)  # why the sizes typed are not sizes

    def __init__(
        self,
        f: Callable[..., Any] = fig18,
        sizes: Sequence[int] = (4, 8, 16, 32, 64),
        arguments: Callable[[int], tuple[np.ndarray, ...]] | None = None,
    ) -> None:
        self.function = f
        self.arguments = arguments
        self.rows: list[ExplosionRow] = []
        self.sizes_text = widgets.Text(
            description="sizes n",
            placeholder="e.g. 4, 8, 16, 32, 64",
            continuous_update=False,
            style={"description_width": "auto"},
            layout=widgets.Layout(width="20em"),
        )
        self.measure_button = widgets.Button(
            description="measure", tooltip="measure every method at the sizes given"
        )
        self.progress = Progress()
        self.message = widgets.HTML(layout=widgets.Layout(min_width="0"))
        self.output = collapsed(widgets.Output(), "12em")
        self.image = widgets.Image(
            format="png", layout=widgets.Layout(width="100%", max_width="900px", height="auto")
        )
        self.measure_button.on_click(lambda _: self.measure_typed())
        self.sizes_text.observe(lambda _: self.measure_typed(), names="value")
        controls = controls_row([self.sizes_text, self.measure_button, self.progress, self.message])
        super().__init__(
            children=[controls, self.image, self.output],
            layout=widgets.Layout(width="100%", min_width="0"),
        )
        self.add_class("dualarr-explosion-plot")
        self.sizes = list(sizes)
        self.observe(lambda _: self.measure(), names="sizes")
        self.measure()

    def __repr__(self) -> str:
        name = getattr(self.function, "__name__", "function")
        return f"<ExplosionPlot {name}: n = {', '.join(map(str, self.sizes))}>"

    def measure_typed(self) -> None:
        """Measure at the sizes typed in the text box (or say why they are not sizes)."""
        if self.busy:  # the text box is set while measuring: nothing new typed
            return
        try:
            sizes = parse_sizes(self.sizes_text.value)
        except ValueError as err:
            self.error = str(err)
            self.message.value = f"<span style='color:#b00'>{html.escape(self.error)}</span>"
            return
        self.error, self.message.value = "", ""
        if sizes != self.sizes:
            self.sizes = sizes  # measures (the trait's observer)
        else:
            self.measure()

    def measure(self) -> None:
        """Measure every method at ``sizes``: the button is disabled and a progress bar
        advances per method and size while it runs."""
        total = len(self.sizes) * len(METHODS) + 1
        with busy(self, [self.measure_button], self.progress, total, "measuring") as bar:
            self.sizes_text.value = ", ".join(map(str, self.sizes))

            def started(n: int, method: str) -> None:
                where = f"size {self.sizes.index(n) + 1} of {len(self.sizes)}"
                bar.advance(f"n = {n} ({where}): {method}")

            self.rows = measure_explosion(
                self.function, self.sizes, self.arguments, on_measure=started
            )
            bar.advance("drawing the plot")
            self.image.value = self.png()
        self.output.outputs = ()
        self.output.append_stdout(self.table() + "\n")

    def table(self) -> str:
        lines = [f"{'method':<28}{'n':>6}{'Delta nodes':>13}{'one-hots':>10}{'ms':>10}"]
        for r in self.rows:
            lines.append(
                f"{r.method:<28}{r.n:>6}{r.delta_nodes:>13}{r.one_hots:>10}"
                f"{r.seconds * 1e3:>10.2f}"
            )
        return "\n".join(lines)

    def figure(self) -> Figure:
        """Log-log plots of Delta nodes and seconds against n, ticks at powers of ten,
        one legend below both (readable at 100 %)."""
        figure = Figure(figsize=(9, 4), layout="constrained")
        nodes, seconds = figure.subplots(1, 2)
        for name, _ in METHODS:
            mine = [r for r in self.rows if r.method == name]
            ns = [r.n for r in mine]
            nodes.loglog(ns, [max(r.delta_nodes, 1) for r in mine], marker="o", label=name)
            seconds.loglog(ns, [max(r.seconds, 1e-6) for r in mine], marker="o", label=name)
        nodes.set(xlabel="n", ylabel="Delta nodes", title="Delta size")
        seconds.set(xlabel="n", ylabel="seconds", title="gradient time")
        if self.rows:
            ns = [r.n for r in self.rows]
            _decades(nodes, "x", ns)
            _decades(seconds, "x", ns)
            _decades(nodes, "y", [max(r.delta_nodes, 1) for r in self.rows])
            _decades(seconds, "y", [max(r.seconds, 1e-6) for r in self.rows])
            figure.legend(
                *nodes.get_legend_handles_labels(), loc="outside lower center", ncols=3,
                fontsize=11, frameon=False,
            )
        for axes in (nodes, seconds):
            axes.tick_params(labelsize=11)
            axes.grid(True, which="major", alpha=0.3)
        return figure

    def png(self) -> bytes:
        buffer = io.BytesIO()
        self.figure().savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()

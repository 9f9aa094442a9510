"""``ExplosionPlot``: Delta size and gradient time against n for the three methods of
the paper (§2, §4, §6): scalar dual numbers, dual arrays without the bot, and dual
arrays after the bot.  The first two grow with n (the Delta explosion and the one-hot
cotangents of §4); the third has the same Delta whatever n is.  Log-log, measured live
with :mod:`dualarr.teach.baselines`."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets
from IPython.display import Image
from matplotlib.figure import Figure

from dualarr.teach.baselines import dual_arrays_gradient, scalar_gradient, unvectorised_gradient
from dualarr.teach.examples import fig18

__all__ = ["ExplosionPlot", "ExplosionRow", "measure_explosion"]

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
) -> list[ExplosionRow]:
    """Run every method on ``arguments(n)`` (default: ``x = 1..n``) for each size."""
    make = arguments or (lambda n: (np.arange(1.0, n + 1.0),))
    rows = []
    for n in sizes:
        args = make(n)
        for name, method in METHODS:
            report = method(f, *args)
            rows.append(ExplosionRow(name, n, report.delta_nodes, report.one_hots, report.seconds))
    return rows


class ExplosionPlot(widgets.VBox):  # type: ignore[misc]
    """The measurements as a log-log plot (Delta nodes, seconds) and a table."""

    sizes = traitlets.List(traitlets.Int(), default_value=[4, 8, 16, 32, 64])

    def __init__(
        self,
        f: Callable[..., Any] = fig18,
        sizes: Sequence[int] = (4, 8, 16, 32, 64),
        arguments: Callable[[int], tuple[np.ndarray, ...]] | None = None,
    ) -> None:
        self.function = f
        self.arguments = arguments
        self.rows: list[ExplosionRow] = []
        self.output = widgets.Output()
        self.remeasure_button = widgets.Button(description="measure again")
        self.remeasure_button.on_click(lambda _: self.measure())
        super().__init__(children=[self.remeasure_button, self.output])
        self.sizes = list(sizes)
        self.observe(lambda _: self.measure(), names="sizes")
        self.measure()

    def measure(self) -> None:
        self.rows = measure_explosion(self.function, self.sizes, self.arguments)
        self.output.outputs = ()
        self.output.append_stdout(self.table() + "\n")
        self.output.append_display_data(Image(data=self.png()))  # type: ignore[no-untyped-call]

    def table(self) -> str:
        lines = [f"{'method':<28}{'n':>6}{'Delta nodes':>13}{'one-hots':>10}{'ms':>10}"]
        for r in self.rows:
            lines.append(
                f"{r.method:<28}{r.n:>6}{r.delta_nodes:>13}{r.one_hots:>10}"
                f"{r.seconds * 1e3:>10.2f}"
            )
        return "\n".join(lines)

    def figure(self) -> Figure:
        figure = Figure(figsize=(9, 3.5))
        nodes, seconds = figure.subplots(1, 2)
        for name, _ in METHODS:
            mine = [r for r in self.rows if r.method == name]
            ns = [r.n for r in mine]
            nodes.loglog(ns, [r.delta_nodes for r in mine], marker="o", label=name)
            seconds.loglog(ns, [max(r.seconds, 1e-6) for r in mine], marker="o", label=name)
        nodes.set(xlabel="n", ylabel="Delta nodes", title="Delta size")
        seconds.set(xlabel="n", ylabel="seconds", title="gradient time")
        nodes.legend(fontsize=8)
        figure.tight_layout()
        return figure

    def png(self) -> bytes:
        buffer = io.BytesIO()
        self.figure().savefig(buffer, format="png", dpi=80)
        return buffer.getvalue()


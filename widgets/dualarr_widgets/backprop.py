"""``BackpropStepper``: the reverse pass of Fig. 17, one Share node at a time.

Each step shows which Share id is evaluated (largest first, each exactly once), the
Delta DAG with that node highlighted, and the ``accum`` (by Share id, decreasing) and
``grad`` (by input) maps after the step.  State lives in traitlets (``step``,
``total``) and output is written with ``append_stdout``/``append_display_data``, so
the widget works, and is tested, without a kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets

from dualarr.ad import delta as dl
from dualarr.ad.reverse import ReverseStep, reverse_steps
from dualarr.api import dual_run, vectorised_program
from dualarr.interp.evaluate import NumpyAlgebra
from dualarr.show.drawing import delta_graph

__all__ = ["BackpropStepper"]


def _show(value: Any) -> str:
    text = np.array2string(np.asarray(value), precision=4, separator=", ")
    return text if len(text) <= 70 else text[:69] + "…"


class BackpropStepper(widgets.VBox):  # type: ignore[misc]
    """Step through the reverse pass of ``f``'s Delta at ``arrays`` (or of a given
    ``delta`` with a ``cotangent``): ``next()``/``prev()`` or the buttons."""

    step = traitlets.Int(0).tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        f: Callable[..., Any] | None = None,
        *arrays: Any,
        delta: dl.Delta | None = None,
        cotangent: Any = None,
        names: dict[int, str] | None = None,
    ) -> None:
        if delta is None:
            if f is None:
                raise ValueError("BackpropStepper needs a function and arrays, or a delta")
            program = vectorised_program(f, arrays)
            floats = tuple(k for k, v in enumerate(program.inputs) if v.dtype.is_float)
            run = dual_run(program, arrays, floats)
            delta = run.deltas[0]
            names = names or {k: program.inputs[k].hint for k in floats}
        self.delta = delta
        self.input_names = names or {}
        seed = np.ones(delta.shape) if cotangent is None else np.asarray(cotangent)
        self.steps: list[ReverseStep] = list(reverse_steps(NumpyAlgebra(), delta, seed))
        self.previous_button = widgets.Button(description="◀ prev")
        self.next_button = widgets.Button(description="next ▶")
        self.heading = widgets.HTML()
        self.output = widgets.Output()
        self.previous_button.on_click(lambda _: self.prev())
        self.next_button.on_click(lambda _: self.next())
        super().__init__(
            children=[
                widgets.HBox([self.previous_button, self.next_button, self.heading]),
                self.output,
            ]
        )
        self.total = len(self.steps)
        self.observe(self._render, names="step")
        self._render()

    @property
    def share_order(self) -> list[int]:
        """The Share ids in the order the steps evaluate them."""
        return [s.share_id for s in self.steps if s.share_id is not None]

    @property
    def current(self) -> ReverseStep:
        return self.steps[self.step]

    def next(self) -> None:
        if self.step < self.total - 1:
            self.step += 1

    def prev(self) -> None:
        if self.step > 0:
            self.step -= 1

    def describe(self) -> str:
        """The current step as text: what was evaluated, then ``accum`` and ``grad``."""
        s = self.current
        if s.share_id is None:
            what = "seed: the cotangent goes into the root (evalD c0 d)"
        else:
            what = f"evaluate Share {s.share_id}: its accumulated cotangent goes into its Delta"
        lines = [f"step {s.number + 1}/{self.total}: {what}", "accum (pending Shares):"]
        lines += [f"  s{i} = {_show(v)}" for i, v in sorted(s.accum.items(), reverse=True)]
        lines += ["  (empty)"] if not s.accum else []
        lines.append("grad:")
        for k, v in sorted(s.grad.items()):
            lines.append(f"  {self.input_names.get(k, f'input {k}')} = {_show(v)}")
        lines += ["  (empty)"] if not s.grad else []
        return "\n".join(lines)

    def _render(self, change: Any = None) -> None:
        self.heading.value = f"<b>step {self.step + 1} of {self.total}</b>"
        self.previous_button.disabled = self.step == 0
        self.next_button.disabled = self.step == self.total - 1
        self.output.outputs = ()
        self.output.append_stdout(self.describe() + "\n")
        self.output.append_display_data(delta_graph(self.delta, highlight=self.current.node))

"""``BackpropStepper``: the reverse pass of Fig. 17, one Share node at a time.

Each step says "step k of n" once and which Share id it evaluates (largest first, each
exactly once), and draws the Delta DAG with each node's cotangent so far, that Share
node highlighted (gold), the cotangent flowing into it as a note, the Shares whose
accumulated cotangent the step changed in blue and the inputs whose gradient it changed
in green; beside the drawing,
the ``accum`` (by Share id, decreasing) and ``grad`` (by input) maps after the step.
The drawing's box scrolls to the gold node at every step, its labels at least 10 px high
(a following :class:`~dualarr_widgets.view.DrawingView`); without a kernel (the book) the
widget shows all its steps side by side (:func:`~dualarr_widgets.snapshot.filmstrip`).
State lives in traitlets (``step``, ``total``, ``highlighted_id``) and output is written
with ``append_stdout``, so the widget works, and is tested, without a kernel.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets

from dualarr.ad import delta as dl
from dualarr.ad.reverse import ReverseStep, reverse_steps
from dualarr.api import dual_run, vectorised_program
from dualarr.interp.evaluate import NumpyAlgebra
from dualarr.show.drawing import Drawing, delta_graph, reverse_cotangents

from .snapshot import Frame, StaticSnapshot, filmstrip
from .view import DrawingView, beside, controls_row, drawing_svg, static_drawing_html

__all__ = ["BackpropStepper"]


def _show(value: Any, limit: int = 70) -> str:
    text = np.array2string(np.asarray(value), precision=4, separator=", ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _same(a: Any, b: Any) -> bool:
    return a is b or bool(np.array_equal(np.asarray(a), np.asarray(b)))


_NODE = re.compile(r"^\s*(\w+) \[")


def _node_keys(root: dl.Delta, drawing: Drawing) -> dict[int, str] | None:
    """The DOT name of each node of ``delta_graph(root)`` (by ``id``), as that function
    names them (``d<k>`` in postorder); ``None`` when the drawing names them otherwise."""
    keys = {id(d): f"d{k}" for k, d in enumerate(dl.delta_postorder([root]))}
    declared = {m.group(1) for line in drawing.body if (m := _NODE.match(line))}
    declared -= {"graph", "node", "edge"}  # default attribute statements
    return keys if declared == set(keys.values()) else None


class BackpropStepper(StaticSnapshot, widgets.VBox):  # type: ignore[misc]
    """Step through the reverse pass of ``f``'s Delta at ``arrays`` (or of a given
    ``delta`` with a ``cotangent``): ``next()``/``prev()`` or the buttons."""

    step = traitlets.Int(0).tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)
    # the id of the Share node the step evaluates (the seed step: the root's, -1 if none)
    highlighted_id = traitlets.Int(-1).tag(sync=True)

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
        self.seed = np.ones(delta.shape) if cotangent is None else np.asarray(cotangent)
        self.steps: list[ReverseStep] = list(reverse_steps(NumpyAlgebra(), delta, self.seed))
        self.shares = {
            d.id: d for d in dl.delta_postorder([delta]) if isinstance(d, dl.Share)
        }
        self.previous_button = widgets.Button(description="◀ prev")
        self.next_button = widgets.Button(description="next ▶")
        self.heading = widgets.HTML(layout=widgets.Layout(flex="1 1 20em", min_width="0"))
        self.output = widgets.Output()
        self.view = DrawingView(max_height="560px", follow=True)
        self._frames: list[Frame] | None = None  # every step, for the snapshot (made once)
        self.previous_button.on_click(lambda _: self.prev())
        self.next_button.on_click(lambda _: self.next())
        controls = controls_row([self.previous_button, self.next_button, self.heading])
        super().__init__(
            children=[controls, beside(self.output, self.view, "30em")],
            layout=widgets.Layout(width="100%", min_width="0"),
        )
        self.add_class("dualarr-backprop-stepper")
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

    @property
    def highlighted(self) -> dl.Delta:
        """The node the step names: the Share it evaluates (not that Share's Delta, which
        the cotangent then flows into); in the seed step, the root."""
        return self._highlighted(self.step)

    def _highlighted(self, k: int) -> dl.Delta:
        s = self.steps[k]
        return self.delta if s.share_id is None else self.shares[s.share_id]

    @property
    def cotangent(self) -> Any:
        """The cotangent flowing in this step: the seed, then the accumulated cotangent
        of the evaluated Share (Fig. 17: ``accum[id]``, taken before the step)."""
        return self._cotangent(self.step)

    def _cotangent(self, k: int) -> Any:
        s = self.steps[k]
        return self.seed if s.share_id is None else self.steps[k - 1].accum[s.share_id]

    def __repr__(self) -> str:
        return f"<BackpropStepper: step {self.step + 1} of {self.total}>"

    def next(self) -> None:
        if self.step < self.total - 1:
            self.step += 1

    def prev(self) -> None:
        if self.step > 0:
            self.step -= 1

    def what(self, k: int | None = None) -> str:
        """What the current step (or step ``k``, from 0) does, in one line (without its
        number)."""
        k = self.step if k is None else k
        c = _show(self._cotangent(k), 40)
        if self.steps[k].share_id is None:
            return f"seed: the cotangent c = {c} goes into the root (evalD c0 d, Fig. 17)"
        return (
            f"evaluate Share {self.steps[k].share_id}: its accumulated cotangent c = {c} "
            "flows into its Delta (Fig. 17)"
        )

    def state(self, k: int | None = None) -> str:
        """``accum`` and ``grad`` after the current step (or step ``k``), as text."""
        s = self.steps[self.step if k is None else k]
        lines = ["accum (pending Shares):"]
        lines += [f"  s{i} = {_show(v)}" for i, v in sorted(s.accum.items(), reverse=True)]
        lines += ["  (empty)"] if not s.accum else []
        lines.append("grad:")
        for k, v in sorted(s.grad.items()):
            lines.append(f"  {self.input_names.get(k, f'input {k}')} = {_show(v)}")
        lines += ["  (empty)"] if not s.grad else []
        return "\n".join(lines)

    def describe(self) -> str:
        """The current step as text: "step k of n", what it evaluates, ``accum``, ``grad``."""
        return f"step {self.step + 1} of {self.total}: {self.what()}\n{self.state()}"

    def drawing(self, k: int | None = None) -> Drawing:
        """The Delta DAG for the current step (or step ``k``), each node with the
        cotangent the reverse pass has given it so far: the named Share gold, a note with
        the cotangent flowing into it, the other Shares whose ``accum`` the step changed
        blue and the inputs whose ``grad`` it changed green."""
        k = self.step if k is None else k
        s = self.steps[k]
        target = self._highlighted(k)
        cotangents, _ = reverse_cotangents(self.delta, self.steps[: k + 1], self.seed)
        drawing = delta_graph(
            self.delta, f"backprop{s.number}", highlight=target, cotangents=cotangents,
            input_names=self.input_names,
        )
        keys = _node_keys(self.delta, drawing)
        if keys is None:
            return drawing
        before = self.steps[k - 1] if k else None
        old_accum = before.accum if before is not None else {}
        old_grad = before.grad if before is not None else {}
        for i, c in s.accum.items():  # the step's own node stays gold
            if self.shares[i] is not target and (i not in old_accum or not _same(c, old_accum[i])):
                drawing.node(keys[id(self.shares[i])], style="filled", fillcolor="lightblue")
        changed = {
            k for k, g in s.grad.items() if k not in old_grad or not _same(g, old_grad[k])
        }
        for d in dl.delta_postorder([self.delta]):
            if isinstance(d, dl.Input) and d.index in changed:
                drawing.node(keys[id(d)], style="filled", fillcolor="palegreen")
        drawing.node(
            "cotangent", f"c = {_show(self._cotangent(k), 28)}", shape="note", style="filled",
            fillcolor="lightblue", color="blue",
        )
        drawing.edge("cotangent", keys[id(target)], color="blue", style="dashed", penwidth="2")
        return drawing

    def _heading(self, k: int) -> str:
        return f"<b>step {k + 1} of {self.total}</b>: {html.escape(self.what(k))}"

    def frames(self) -> list[Frame]:
        """Every step as the book shows it (made once: the steps do not change)."""
        if self._frames is None:
            self._frames = [
                Frame(self._heading(k), self.state(k) + "\n",
                      static_drawing_html(*drawing_svg(self.drawing(k))))
                for k in range(self.total)
            ]
        return self._frames

    def _snapshot_html_(self) -> str:
        """All the steps, side by side (:func:`~dualarr_widgets.snapshot.filmstrip`)."""
        return filmstrip(self.frames())

    def _render(self, change: Any = None) -> None:
        target = self.highlighted
        self.highlighted_id = target.id if isinstance(target, dl.Share) else -1
        self.heading.value = self._heading(self.step)
        self.previous_button.disabled = self.step == 0
        self.next_button.disabled = self.step == self.total - 1
        self.output.outputs = ()
        self.output.append_stdout(self.state() + "\n")
        self.view.show(self.drawing())

"""Jupyter widgets for dualarr (import name ``dualarr_widgets``).

``BotStepper`` steps through the rules of the bulk-operation transform (§5);
``BackpropStepper`` through the reverse pass of Fig. 17; ``ExplosionPlot`` plots Delta
size and gradient time against n for the methods of §2, §4 and §6;
``PipelineExplorer`` shows every stage of a program in tabs, with an editable source.
Drawings fit the output area with a zoom control (:mod:`dualarr_widgets.view`), and
actions that take time disable their button and show a progress bar.
"""

from __future__ import annotations

from .backprop import BackpropStepper
from .botstepper import BotStepper
from .explorer import PipelineExplorer
from .explosion import ExplosionPlot, ExplosionRow, measure_explosion

__all__ = [
    "BackpropStepper",
    "BotStepper",
    "ExplosionPlot",
    "ExplosionRow",
    "PipelineExplorer",
    "__version__",
    "measure_explosion",
]

__version__: str = "0.1.0"

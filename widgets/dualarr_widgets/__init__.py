"""Jupyter widgets for dualarr (import name ``dualarr_widgets``).

``BackpropStepper`` steps through the reverse pass of Fig. 17.  The other widgets of
the widgets issue (``PipelineExplorer``, ``BotStepper``, ``ExplosionPlot``) are not
written yet.
"""

from __future__ import annotations

from .backprop import BackpropStepper

__all__ = ["BackpropStepper", "__version__"]

__version__: str = "0.1.0"

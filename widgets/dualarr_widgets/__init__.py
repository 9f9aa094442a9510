"""Jupyter widgets for dualarr (import name ``dualarr_widgets``).

Placeholder: the widgets ``PipelineExplorer``, ``BotStepper``, ``BackpropStepper`` and
``ExplosionPlot`` arrive with the widgets issue. Until then this package only carries its
version, so that packaging, imports and type checking can be set up and tested.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__: str = "0.1.0"

"""The drawing type of :mod:`dualarr.show.drawing`: a ``graphviz.Digraph`` with its layout.

Importing this module imports the Python ``graphviz`` package (the ``widgets`` extra);
:mod:`dualarr.show.drawing` does so at the first drawing, so ``import dualarr`` needs no
``graphviz``.
"""

from __future__ import annotations

from typing import Any

from ..lang.optional import require
from .layout import DOT_HINT, Layout

graphviz: Any = require("graphviz", extra="widgets", feature="drawing")


class Drawing(graphviz.Digraph):  # type: ignore[misc]
    """A ``graphviz.Digraph`` that displays as DOT source when ``dot`` is missing;
    ``layout`` says how it was laid out."""

    __module__ = "dualarr.show.drawing"  # its public home (``from dualarr.show.drawing import``)
    layout: Layout = Layout("TB", 0.0, 0.0)

    def copy(self) -> Drawing:
        """A copy, with its layout."""
        twin: Drawing = super().copy()
        twin.layout = self.layout
        return twin

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None, **kwargs: Any
    ) -> dict[str, str]:
        try:
            bundle: dict[str, str] = super()._repr_mimebundle_(include, exclude, **kwargs)
        except graphviz.ExecutableNotFound:
            return {"text/plain": f"{self.source}\n{DOT_HINT}"}
        return bundle


__all__ = ["Drawing"]

"""How a drawing is laid out (:mod:`dualarr.show.drawing`): its direction and size."""

from __future__ import annotations

from dataclasses import dataclass

DOT_HINT = "(Graphviz's `dot` is not installed: this is the DOT source; apt-get install graphviz)"


@dataclass(frozen=True)
class Layout:
    """How a drawing was laid out: its ``rankdir`` and the estimated width of the
    drawing laid out top-to-bottom (``TB``) and left-to-right (``LR``), in points."""

    rankdir: str
    width_tb: float
    width_lr: float

    @property
    def width(self) -> float:
        """The estimated width of the chosen layout."""
        return self.width_lr if self.rankdir in ("LR", "RL") else self.width_tb


__all__ = ["DOT_HINT", "Layout"]

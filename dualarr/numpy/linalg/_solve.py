"""Solves, inverses, determinants and the Cholesky factor (filled in by #39)."""

from __future__ import annotations

__all__: list[str] = []

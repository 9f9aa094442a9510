"""Eigenvalues, singular values, QR and what is built on them (filled in by #39)."""

from __future__ import annotations

__all__: list[str] = []

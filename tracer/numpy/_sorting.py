"""sort, argsort, searchsorted, argpartition, unique, nonzero (static size=)."""

from __future__ import annotations

__all__: list[str] = []

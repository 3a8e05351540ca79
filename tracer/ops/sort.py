"""sort (comparator of 2n scalars, total order), map."""

from __future__ import annotations

__all__: list[str] = []

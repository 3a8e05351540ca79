"""reduce_window, select_and_scatter."""

from __future__ import annotations

__all__: list[str] = []

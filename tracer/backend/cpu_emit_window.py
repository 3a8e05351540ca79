"""cpu emitters for reduce_window, select_and_scatter."""

from __future__ import annotations

from typing import Any

EMITTERS: dict[str, Any] = {}

"""cpu emitters for sort (comparator of 2n scalars, total order), map."""

from __future__ import annotations

from typing import Any

EMITTERS: dict[str, Any] = {}

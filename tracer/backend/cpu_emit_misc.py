"""cpu emitters for composite, custom_call, tuple / get_tuple_element, optimization_barrier."""

from __future__ import annotations

from typing import Any

EMITTERS: dict[str, Any] = {}

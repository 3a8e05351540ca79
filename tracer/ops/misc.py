"""composite, custom_call, tuple / get_tuple_element, optimization_barrier."""

from __future__ import annotations

__all__: list[str] = []

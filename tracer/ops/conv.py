"""conv_general_dilated, conv_with_general_padding, conv."""

from __future__ import annotations

__all__: list[str] = []

"""cpu emitters for conv_general_dilated, conv_with_general_padding, conv."""

from __future__ import annotations

from typing import Any

EMITTERS: dict[str, Any] = {}

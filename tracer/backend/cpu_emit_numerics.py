"""cpu emitters for fft, batch_norm_*, reduce_precision, bitcast_convert_type."""

from __future__ import annotations

from typing import Any

EMITTERS: dict[str, Any] = {}

"""fft, batch_norm_*, reduce_precision, bitcast_convert_type."""

from __future__ import annotations

__all__: list[str] = []

"""`tracer.numpy.fft`: NumPy's fft namespace on `ops.fft`."""

from __future__ import annotations

__all__: list[str] = []

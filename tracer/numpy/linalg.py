"""`tracer.numpy.linalg`: NumPy's linalg namespace on tracer.ops."""

from __future__ import annotations

__all__: list[str] = []

"""`tracer.random`: functional JAX-style keys on `ops.rng_bit_generator` (Threefry-2x32)."""

from __future__ import annotations

__all__: list[str] = []

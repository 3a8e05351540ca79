"""rng_uniform, rng_normal, rng_bit_generator (three_fry, philox)."""

from __future__ import annotations

__all__: list[str] = []

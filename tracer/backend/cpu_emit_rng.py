"""cpu emitters for rng_uniform, rng_normal, rng_bit_generator (three_fry, philox)."""

from __future__ import annotations

from typing import Any

EMITTERS: dict[str, Any] = {}

"""JVP / transpose / batching rules for rng_uniform, rng_normal, rng_bit_generator (three_fry, philox)."""

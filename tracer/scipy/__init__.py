"""`tracer.scipy`: JAX's `jax.scipy` companion namespace (`special`, `linalg`,
`stats`), SciPy's names and signatures, built on `tracer.numpy` and `tracer.ops`."""

from . import linalg, special, stats

__all__ = ["linalg", "special", "stats"]

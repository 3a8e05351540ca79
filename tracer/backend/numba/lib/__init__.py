"""njit helpers that generated modules of both backends import at run time: scalar
math, complex math with NumPy's special values, the RNG blocks, bit-level helpers."""

# Before any library here is decorated: its numba cache goes under TRACER_CACHE_DIR.
from .. import numba_cache  # noqa: F401, E402

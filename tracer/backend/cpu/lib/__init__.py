"""njit libraries the cpu backend's generated modules import at run time."""

# Before any library here is decorated: its numba cache goes under TRACER_CACHE_DIR.
from ...numba import numba_cache  # noqa: F401, E402

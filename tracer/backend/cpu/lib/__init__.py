"""njit libraries the cpu backend's generated modules import at run time."""

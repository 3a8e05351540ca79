"""The `cpu` backend: generated Python compiled by `numba.njit` (backend, generate, nests,
cache; `emit/` writes the ops that are not loop nests; `lib/` is what that code calls)."""

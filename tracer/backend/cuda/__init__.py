"""The `cuda` backend: `numba.cuda` kernels launched from generated host code (backend,
generate, nests, reductions, scalar, cache; `emit/` and the run-time `lib/`)."""

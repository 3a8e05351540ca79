"""How the batched kernels of `cpu.lib.linalg` and `cpu.lib.triangular` share a batch
out among threads: one run of consecutive matrices per thread (each run allocates its
scratch buffers once), the runs' sizes differing by at most one."""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True, error_model="numpy")
def batch_range(count: int, parts: int, q: int) -> tuple[int, int]:
    """(first, last): the matrices of run q when `count` are split into `parts` runs."""
    size, extra = count // parts, count % parts
    first = q * size + min(q, extra)
    return first, first + size + (1 if q < extra else 0)

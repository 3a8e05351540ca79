"""How the batched kernels of `cpu.lib.lu` and `cpu.lib.triangular` share a batch
out among threads: one run of consecutive matrices per thread (each run allocates its
scratch buffers once), the runs' sizes differing by at most one; and how they copy a
matrix.

A run's kernel is compiled once for the serial and the threaded entry and for every
flag value: the entries pass it run-time values (`np.int64(0)`, `bool(flag)`), since
numba specializes a callee on each constant argument (`Literal[bool](True)`), a
compile of seconds per combination."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, error_model="numpy")
def batch_range(count: int, parts: int, q: int) -> tuple[int, int]:
    """(first, last): the matrices of run q when `count` are split into `parts` runs."""
    size, extra = count // parts, count % parts
    first = q * size + min(q, extra)
    return first, first + size + (1 if q < extra else 0)


@njit(cache=True, nogil=True, error_model="numpy")
def copy_matrix(src: np.ndarray, dst: np.ndarray) -> None:
    """dst[...] = src for 2-D arrays of one shape, as loops: numba's array assignment
    compiles a shape-mismatch error path (string formatting) that took 2.7 s of a cold
    `solve` compile."""
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]

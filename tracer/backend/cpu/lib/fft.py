"""FFT kernels of the generated CPU code, on rocket-fft's low-level DUCC0 interface
(the C++ library behind scipy.fft, as a numba extension): each transform writes
straight into the output buffer and applies its scale factor itself.

The transformed axes are the `k` innermost ones. Transform lengths come from the
output array (for IRFFT, its innermost size is fft_length[-1]); the inverse
transforms scale by 1 / prod(lengths), as NumPy and `tracer.ops.fft`. An empty
output needs no work (DUCC0 rejects zero lengths).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from rocket_fft import c2c, c2r, r2c

_jit = njit(cache=True, error_model="numpy")
THREADS = 1  # the batch of a call is not split over threads: numba's own loops may be


@_jit
def _axes(ndim, k):
    return np.arange(ndim - k, ndim)


@_jit
def _inverse_scale(out, k):
    n = 1
    for d in range(out.ndim - k, out.ndim):
        n *= out.shape[d]
    return 1.0 / n


@_jit
def fft_forward(x, out, k):
    """FFT: complex -> complex over the k innermost axes."""
    if out.size:
        c2c(x, out, _axes(x.ndim, k), True, 1.0, THREADS)


@_jit
def fft_inverse(x, out, k):
    """IFFT: complex -> complex, scaled by 1 / prod(lengths)."""
    if out.size:
        c2c(x, out, _axes(x.ndim, k), False, _inverse_scale(out, k), THREADS)


@_jit
def fft_real_forward(x, out, k):
    """RFFT: real -> the n // 2 + 1 complex bins of the innermost axis."""
    if out.size:
        r2c(x, out, _axes(x.ndim, k), True, 1.0, THREADS)


@_jit
def fft_real_inverse(x, out, k):
    """IRFFT: n // 2 + 1 bins -> real of length n (the output's innermost size)."""
    if out.size:
        c2r(x, out, _axes(x.ndim, k), False, _inverse_scale(out, k), THREADS)

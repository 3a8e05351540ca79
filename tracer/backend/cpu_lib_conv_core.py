"""The GEMM under the cpu convolution kernels (`cpu_lib_conv`), its BLAS threads, and
the geometry helpers the plans share.

`gemm` multiplies row-major blocks of flat arrays in place, with leading dimensions
and beta, through numba's own `numba_xxgemm` (SciPy's BLAS) for floats and complex,
plain loops for integers (which wrap like XLA's).

The convolution plans cut their work into cache-sized tiles, hundreds of GEMM calls
per convolution. OpenBLAS splits every call between its threads and waits for the
slowest; on a machine whose cores are busy with other processes one of them is often
descheduled, and each call then waits a scheduler time slice: measured on 2 shared
cores, a 64x1024x64 tile took 0.2 ms on one thread and 0.7 to 1.5 ms on two, and a
ResNet layer 0.1 s against 1 to 2 s. So a convolution runs its GEMMs on
`cpu_lib_conv.BLAS_THREADS` threads (`blas_threads` sets OpenBLAS's count, through
`openblas_set_num_threads_local`, and gives back the previous one to restore);
where SciPy's BLAS is not an OpenBLAS with that function the count is left as it is.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import binding
from numba import cfunc, njit, types
from numba.extending import overload
from numba.np.linalg import ensure_blas

_jit = njit(cache=True, error_model="numpy", nogil=True)


def _gemm_signature(dtype: types.Type) -> types.Type:
    ptr = types.CPointer(dtype)
    return types.intc(types.char, types.char, types.char, types.intp, types.intp, types.intp,
                      ptr, ptr, types.intp, ptr, types.intp, ptr, ptr, types.intp)


ensure_blas()  # numba_xxgemm forwards to scipy's BLAS
# numba's helper symbol: cache-safe (resolved by name), the GIL handled inside
_XXGEMM = {t: (types.ExternalFunction("numba_xxgemm", _gemm_signature(t)), ord(kind))
           for t, kind in ((types.float32, "s"), (types.float64, "d"),
                           (types.complex64, "c"), (types.complex128, "z"))}


# ------------------------------------------------------------------ BLAS threads

@cfunc(types.intc(types.intc), cache=True)
def _keep_threads(count):
    """Stands in for the thread setter where SciPy's BLAS has none."""
    return 0


def _openblas_thread_setter() -> int:
    """The address of `openblas_set_num_threads_local` in SciPy's BLAS, 0 if it has none
    (ctypes looks a symbol up in the module's dependencies too: the BLAS it links)."""
    try:
        from scipy.linalg import cython_blas
        blas = ctypes.CDLL(cython_blas.__file__)
    except (ImportError, OSError):
        return 0
    for name in ("openblas_set_num_threads_local", "scipy_openblas_set_num_threads_local"):
        setter = getattr(blas, name, None)
        if setter is not None:
            return ctypes.cast(setter, ctypes.c_void_p).value or 0
    return 0


_SETTER = "tracer_conv_blas_threads"  # registered by name: cached machine code finds it
binding.add_symbol(_SETTER, _openblas_thread_setter() or _keep_threads.address)
_set_threads = types.ExternalFunction(_SETTER, types.intc(types.intc))


@njit(cache=True, nogil=True)
def blas_threads(count):
    """Set the BLAS thread count (a positive count; 0 keeps it); the previous count, 0
    when unknown. `blas_threads(blas_threads(n))` puts back what was there."""
    if count <= 0:
        return 0
    return _set_threads(count)


# ------------------------------------------------------------------ GEMM

def gemm(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):
    """c[i, j] (+)= sum_l a[i, l] * b[l, j] on row-major blocks of flat arrays:
    a[a0 + i*lda + l], b[b0 + l*ldb + j] (b[b0 + j*ldb + l] when `trans_b`),
    c[c0 + i*ldc + j]; i < m, j < n, l < k."""


def _gemm_loops(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):
    step_l, step_j = (1, ldb) if trans_b else (ldb, 1)
    for i in range(m):
        row = c0 + i * ldc
        if not accumulate:
            c[row:row + n] = 0
        for kk in range(k):
            coef = a[a0 + i * lda + kk]
            src = b0 + kk * step_l
            for j in range(n):
                c[row + j] += coef * b[src + j * step_j]


@overload(gemm, jit_options={"cache": True})
def _gemm_overload(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):
    if a.dtype not in _XXGEMM:
        return _gemm_loops  # integers: plain loops (BLAS is float-only), wrapping
    fn, kind = _XXGEMM[a.dtype]
    dtype = np.dtype(str(a.dtype))

    def blas(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):
        if m == 0 or n == 0:
            return
        if k == 0:
            if not accumulate:
                for i in range(m):
                    c[c0 + i * ldc:c0 + i * ldc + n] = 0
            return
        alpha = np.ones(1, dtype)
        beta = np.ones(1, dtype) if accumulate else np.zeros(1, dtype)
        # column-major BLAS computes c^T = b^T a^T: the row-major product as stored
        fn(kind, 116 if trans_b else 110, 110, n, m, k, alpha.ctypes, b[b0:].ctypes, ldb,
           a[a0:].ctypes, lda, beta.ctypes, c[c0:].ctypes, ldc)
    return blas


# ------------------------------------------------------------------ geometry

@_jit
def pitches(sizes):
    """Row-major element strides of an array of `sizes`."""
    out = np.ones(len(sizes), np.int64)
    for d in range(len(sizes) - 2, -1, -1):
        out[d] = out[d + 1] * sizes[d + 1]
    return out


@_jit
def unravel(flat, sizes, into):
    for d in range(len(sizes) - 1, -1, -1):
        into[d] = flat % sizes[d]
        flat //= sizes[d]


@_jit
def image_of(b, g, nb, cg, fgc, bgc):
    """(lhs batch index, first lhs channel) of output batch b in group g."""
    if bgc > 1:
        return g * nb + b, 0
    return b, (g * cg if fgc > 1 else 0)


@_jit
def fill_grid(x, image, c0, cg, buf, at, row, plane_sizes, in_sp, lo, ld):
    """Write channels [c0, c0 + cg) of x[image] at their dilated, padded grid spots,
    channel c at buf[at + c * row + spot] (spots off the grid are cropped: negative
    padding; the other grid spots are left as they are: zero)."""
    n = len(in_sp)
    pitch = pitches(plane_sizes)
    last, step, low = in_sp[n - 1], ld[n - 1], lo[n - 1]
    rows = x.shape[2] // last if last else 0
    idx = np.zeros(n, np.int64)
    # the span of the last dim's source indices that land on the grid
    first = max(0, (-low + step - 1) // step)
    stop = min(last, (plane_sizes[n - 1] - low + step - 1) // step)
    for r in range(rows):
        unravel(r * last, in_sp, idx)
        base = at
        for d in range(n - 1):
            spot = idx[d] * ld[d] + lo[d]
            if spot < 0 or spot >= plane_sizes[d]:
                base = -1
                break
            base += spot * pitch[d]
        if base < 0:
            continue
        for c in range(cg):
            src = x[image, c0 + c, r * last:(r + 1) * last]
            spot = c * row + base + low  # + i * step >= at for i >= first
            for i in range(first, stop):
                buf[np.uint64(spot + i * step)] = src[i]  # (unsigned: no wraparound)

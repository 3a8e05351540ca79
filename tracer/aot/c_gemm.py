"""The products of the C library: NumPy's bundled OpenBLAS, or loops.

`tr.jit` reaches BLAS through symbols that tracer binds in its own process
(`backend.cpu.lib.cblas`). The C build instead calls `cblas_sgemm`/`cblas_dgemm` of
the OpenBLAS that NumPy's wheel ships (`numpy.libs/libscipy_openblas64_*.so`, 64-bit
integer interface), linked into libNAME.so by path; when there is none, or for other
dtypes, matrix-vector products and operands with strides BLAS cannot describe, `gemm`
runs loops (vectorized along the output row).
"""

from __future__ import annotations

_CBLAS = {"float32": "scipy_cblas_sgemm64_", "float64": "scipy_cblas_dgemm64_"}


def gemm_source(blas: bool) -> str:
    """Module text defining `gemm(a, b, out)`, the `out = a @ b` the kernel calls."""
    symbols = _CBLAS if blas else {}
    return _PRELUDE + f"_CBLAS = {symbols!r}\n" + _GEMM


_PRELUDE = '''
from numba import njit as _njit
from numba import types as _types
from numba.extending import overload as _overload
'''

_GEMM = '''
_GEMM_SIGNATURE = {
    dtype: _types.void(_types.int32, _types.int32, _types.int32, _types.int64, _types.int64,
                       _types.int64, getattr(_types, dtype), _types.voidptr, _types.int64,
                       _types.voidptr, _types.int64, getattr(_types, dtype), _types.voidptr,
                       _types.int64)
    for dtype in ("float32", "float64")}
_EXTERNAL = {dtype: _types.ExternalFunction(symbol, _GEMM_SIGNATURE[dtype])
             for dtype, symbol in _CBLAS.items()}
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


def gemm(a, b, out):
    """out = a @ b."""


def _loops_mm(a, b, out):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            out[i, j] = 0
        for p in range(a.shape[1]):
            av = a[i, p]
            for j in range(b.shape[1]):
                out[i, j] += av * b[p, j]


_loops_mm_jit = _njit(_loops_mm)


@_njit
def _blas_layout(x):
    """(transpose flag, leading dimension) of a 2-D operand, or (0, 0) if BLAS cannot read it."""
    size = x.itemsize
    if x.strides[1] == size and x.strides[0] >= max(x.shape[1], 1) * size:
        return _NO_TRANS, x.strides[0] // size
    if x.strides[0] == size and x.strides[1] >= max(x.shape[0], 1) * size:
        return _TRANS, x.strides[1] // size
    return 0, 0


def _with_blas(call):
    def mm(a, b, out):
        ta, lda = _blas_layout(a)
        tb, ldb = _blas_layout(b)
        to, ldo = _blas_layout(out)
        if ta == 0 or tb == 0 or to != _NO_TRANS or a.shape[1] == 0 or out.size == 0:
            _loops_mm_jit(a, b, out)
            return
        one = out.dtype.type(1)
        zero = out.dtype.type(0)
        call(_ROW_MAJOR, ta, tb, out.shape[0], out.shape[1], a.shape[1], one, a.ctypes, lda,
             b.ctypes, ldb, zero, out.ctypes, ldo)
    return mm


@_overload(gemm)
def _gemm(a, b, out):
    if a.ndim == 2 and b.ndim == 2:
        external = _EXTERNAL.get(str(out.dtype))
        if external is not None:
            return _with_blas(external)
        return _loops_mm
    if a.ndim == 2 and b.ndim == 1:
        def mv(a, b, out):
            for i in range(a.shape[0]):
                acc = out.dtype.type(0)
                for p in range(a.shape[1]):
                    acc += a[i, p] * b[p]
                out[i] = acc
        return mv
    if a.ndim == 1 and b.ndim == 2:
        def vm(a, b, out):
            for j in range(b.shape[1]):
                out[j] = 0
            for p in range(a.shape[0]):
                for j in range(b.shape[1]):
                    out[j] += a[p] * b[p, j]
        return vm
    def vv(a, b, out):
        acc = out.dtype.type(0)
        for p in range(a.shape[0]):
            acc += a[p] * b[p]
        out[()] = acc
    return vv
'''

"""The transposed Winograd convolution F(3x3, 2x2) for `cpu.lib.conv`: a 3x3 output
from a large window, as of the kernel gradient of a 3x3 convolution (2 spatial dims,
unit strides, no dilation, float32 or float64).

It is the transpose of `cpu.lib.conv_winograd`'s F(2x2, 3x3) (Lavin & Gray, "Fast
Algorithms for Convolutional Neural Networks", 2016): the window is cut into 2x2
blocks z (tiles), each under the 4x4 input patch d that the block's four taps read,
and out = G^T S G with S the sum over features and tiles of (A z A^T) ⊙ (B^T d B).
Summed over a feature's tiles, the 16 elementwise products are 16 GEMMs
V[k]^T (tiles, images) by Z[k] (tiles, kernels): 4 multiplies per tap and position
where the direct sum has 9.

Channels run innermost: a feature's input planes (one per image) and window planes
(one per kernel) are first copied into zero-padded planes whose every spot holds a
vector of images (of kernels), `LANES` at a time. Every transform then reads and
writes whole vectors with unit stride, nothing is split by parity, and both GEMM
operands are (tiles, channels) matrices: the form MKL's sgemm runs at its peak for
these short, wide products (measured on one core: 157 GFLOP/s, against 115 for
(channels, tiles) operands). A feature's operands (for 32 images and 32 kernels of
256 tiles, 1 MiB) stay in the L2 cache from transform to GEMM.

The transforms only add, subtract and halve, so the rounding stays close to the
direct sum's. An inf or NaN in the input can give NaN where the direct sum gives inf
(the window's partial tiles multiply inputs by the zeros past its edge), so
`winograd_t` reports whether every output came out finite; the caller computes the
convolution directly when one did not.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from . import cblas
from .conv_core import all_equal, image_of
from .conv_winograd import MIN_TILES

_OPTIONS = dict(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # (see cpu.lib.conv)
_jit = njit(error_model="numpy", nogil=True, **_OPTIONS)
_inlined = njit(error_model="numpy", nogil=True, inline="always", **_OPTIONS)  # (cpu.lib.conv)
# channels per vector step: a constant trip count, which LLVM turns into whole vector
# registers (a run-time count of 32 left the loop to its scalar remainder)
LANES = 16
MIN_DEPTH = 256  # tiles per GEMM below which features are taken several at a time


def winograd_t_pays(x, w, out, geo, groups):
    """Whether `winograd_t` can run this convolution and should: a 3x3 output (as of
    the kernel gradient of a 3x3 convolution) and a window of MIN_TILES 2x2 tiles."""


@overload(winograd_t_pays, jit_options=_OPTIONS)
def _winograd_t_pays_overload(x, w, out, geo, groups):
    if x.dtype not in (types.float32, types.float64):
        return lambda x, w, out, geo, groups: False

    def pays(x, w, out, geo, groups):
        in_sp, win, out_sp, st, _, ld, rd = geo
        if len(win) != 2 or out_sp[0] != 3 or out_sp[1] != 3:
            return False
        if not (all_equal(st, 1) and all_equal(ld, 1) and all_equal(rd, 1)):
            return False
        return ((win[0] + 1) // 2) * ((win[1] + 1) // 2) >= MIN_TILES
    return pays


def reads_in_place(x):
    """Whether `winograd_t` runs for x's dtype and so reads exchanged operands in place
    (another dtype's entry point runs the window plan: `cpu.lib.conv_core.FLOATS_ONLY`)."""


@overload(reads_in_place, jit_options=_OPTIONS)
def _reads_in_place_overload(x):
    floats = x.dtype in (types.float32, types.float64)
    return lambda x: floats


@_jit
def lanes_of(count):
    """`count` channels rounded up to whole vector steps."""
    return -(-count // LANES) * LANES


@_jit
def sizes(win, fg, nb):
    """(features per GEMM, images per pass) for a window `win`: GEMMs at least
    MIN_DEPTH tiles deep where the window is small, a pass's operands about 2^17
    elements (in the L2 cache), but at least a vector step of images (the lanes are
    transformed whether used or not)."""
    tiles = ((win[0] + 1) // 2) * ((win[1] + 1) // 2)
    chunk = max(1, min(fg, MIN_DEPTH // tiles))
    return chunk, min(nb, max(LANES, (1 << 17) // (16 * chunk * tiles)))


@_inlined
def winograd_t(x, out, w, geo, chunk, batch, fgc, bgc, x_swapped, w_swapped):
    """out (3x3 outputs; the canonical layout of `cpu.lib.conv`) = the convolution of x
    with the window w, per `chunk` features and `batch` images: the window's planes
    and the input's go through `_gather` and their transforms, then 16 GEMMs
    (images, kernels) += V[k]^T Z[k] add to S. x and w have the canonical shapes; where
    `x_swapped` (`w_swapped`) their memory holds dims 0 and 1 exchanged, as the
    transposed operands of a kernel gradient are: `_gather` reads them where they are.
    Whether every output is finite (else the caller redoes it)."""
    in_sp, win, _, _, lo, _, _ = geo
    g, nb, o, fg = max(fgc, bgc), out.shape[0], out.shape[1], w.shape[1]
    og, th, tw = o // g, (win[0] + 1) // 2, (win[1] + 1) // 2
    tiles, bp, op = th * tw, lanes_of(batch), lanes_of(og)
    planes = np.zeros((2 * th + 2) * (2 * tw + 2) * bp, x.dtype)  # padding stays zero
    window = np.zeros(4 * tiles * op, x.dtype)  # (past an odd window's edge too)
    v = np.empty(16 * chunk * tiles * bp, x.dtype)
    z = np.empty(16 * chunk * tiles * op, x.dtype)
    s = np.empty(16 * nb * og, x.dtype)  # S[k, image, kernel]
    rows = np.empty(4 * (2 * tw + 2) * max(bp, op), x.dtype)  # (the transforms' scratch)
    no_padding = np.zeros(2, np.int64)
    xflat, wflat = x.reshape(x.size), w.reshape(w.size)
    finite = True
    for gi in range(g):
        for f0 in range(0, fg, chunk):
            count = min(chunk, fg - f0)
            depth = count * tiles
            for f in range(count):
                at, apart = _plane(w, gi * og, f0 + f, w_swapped)
                _gather(wflat, at, apart, og, win, no_padding, window, tw, op)
                _window_transform(window, th, tw, op, z, f * tiles, depth, rows)
            for b0 in range(0, nb, batch):
                images = min(batch, nb - b0)
                image, c0 = image_of(b0, gi, nb, fg, fgc, bgc)  # (the next images follow it)
                for f in range(count):
                    at, apart = _plane(x, image, c0 + f0 + f, x_swapped)
                    _gather(xflat, at, apart, images, in_sp, lo, planes, tw + 1, bp)
                    _input_transform(planes, th, tw, bp, v, f * tiles, depth, rows)
                for k in range(16):
                    _gemm_tn(images, og, depth, v, k * depth * bp, bp, z, k * depth * op, op, s,
                             (k * nb + b0) * og, og, f0 > 0)
        for b in range(nb):
            _kernel_out(s, nb, og, b, out, b, gi * og)
            finite = finite and _finite(out, b, gi * og, og)
    return finite


@_jit
def _plane(a, i, j, swapped):
    """(where the plane a[i, j] starts in a's flat memory, how far apart the planes
    a[i, j] and a[i + 1, j] are) for a canonical (d0, d1, S) operand `a` whose memory
    holds dims 0 and 1 exchanged where `swapped`."""
    d0, d1, size = a.shape
    if swapped:
        return (j * d0 + i) * size, size
    return (i * d1 + j) * size, d1 * size


@_jit
def _gather(src, at, apart, count, in_sp, lo, planes, half, lanes):
    """Lane i < count of the padded plane `planes` = the input plane src[at + i * apart:]
    (in_sp[0] rows of in_sp[1]) placed at (lo[0], lo[1]): plane spot (row, 2k + parity)
    at planes[((2 row + parity) * half + k) * lanes + i] (a row's even columns, then
    its odd ones: the transforms then read every 2x2 or 4x4 patch corner as one
    unit-stride stream). Spots off the plane are cropped (negative padding), the others
    are left as they are. A spot's lanes at a time: the stores run on."""
    rows, cols = in_sp[0], in_sp[1]
    height = planes.size // (2 * half * lanes)
    for r in range(max(0, -lo[0]), min(rows, height - lo[0])):
        for parity in range(2):
            start = max(0, -lo[1])
            start += (start + lo[1] + parity) % 2  # the first source column of this parity
            put = (2 * (r + lo[0]) + parity) * half * lanes
            for c in range(start, min(cols, 2 * half - lo[1]), 2):
                spot, first = put + ((c + lo[1]) >> 1) * lanes, at + r * cols + c
                for i in range(count):  # (unsigned: no wraparound)
                    planes[np.uint64(spot + i)] = src[np.uint64(first + i * apart)]


@_jit
def _input_transform(planes, th, tw, lanes, v, t0, depth, rows):
    """v[((k * depth) + t0 + a * tw + b) * lanes + lane] = (B^T d B)[k // 4, k % 4] of the
    4x4 patch d at rows 2a.., columns 2b.. of the padded planes, every lane: per tile
    row, B^T down the 4 plane rows (into `rows`), then across each."""
    pitch, run = 2 * (tw + 1) * lanes, tw * lanes  # a row; the tiles of a tile row
    step, odd = depth * lanes, (tw + 1) * lanes
    for a in range(th):
        r = 2 * a * pitch
        _combine(planes, r, 1, r + 2 * pitch, -1, rows, 0, pitch)
        _combine(planes, r + pitch, 1, r + 2 * pitch, 1, rows, pitch, pitch)
        _combine(planes, r + 2 * pitch, 1, r + pitch, -1, rows, 2 * pitch, pitch)
        _combine(planes, r + pitch, 1, r + 3 * pitch, -1, rows, 3 * pitch, pitch)
        for q in range(4):  # patch columns (even b, odd b, even b + 1, odd b + 1)
            e, put = q * pitch, (4 * q * depth + t0 + a * tw) * lanes
            _combine(rows, e, 1, e + lanes, -1, v, put, run)
            _combine(rows, e + odd, 1, e + lanes, 1, v, put + step, run)
            _combine(rows, e + lanes, 1, e + odd, -1, v, put + 2 * step, run)
            _combine(rows, e + odd, 1, e + odd + lanes, -1, v, put + 3 * step, run)


@_jit
def _window_transform(window, th, tw, lanes, z, t0, depth, rows):
    """z[((k * depth) + t0 + a * tw + b) * lanes + lane] = (A y A^T)[k // 4, k % 4] of the
    2x2 block y at rows 2a.., columns 2b.. of the window plane, every lane: per tile
    row, A down the 2 plane rows (into `rows`), then across each."""
    pitch, run = 2 * tw * lanes, tw * lanes
    step = depth * lanes
    for a in range(th):
        r = 2 * a * pitch
        _combine(window, r, 1, r + pitch, 1, rows, pitch, pitch)
        _combine(window, r, 1, r + pitch, -1, rows, 2 * pitch, pitch)
        for p in range(4):  # rows y0 (the plane's), y0 + y1, y0 - y1, -y1 (the plane's)
            src, e, sign = (window, r, 1) if p == 0 else (window, r + pitch, -1) if p == 3 \
                else (rows, p * pitch, 1)
            put = (4 * p * depth + t0 + a * tw) * lanes
            _scale(src, e, sign, z, put, run)
            _combine(src, e, sign, e + run, sign, z, put + step, run)
            _combine(src, e, sign, e + run, -sign, z, put + 2 * step, run)
            _scale(src, e + run, -sign, z, put + 3 * step, run)


@_jit
def _combine(src, a, sa, b, sb, dst, at, count):
    """dst[at + i] = sa * src[a + i] + sb * src[b + i], i < count (signs +-1: exact)."""
    one = src.dtype.type(1)
    ca, cb = sa * one, sb * one
    for i in range(count):
        dst[np.uint64(at + i)] = ca * src[np.uint64(a + i)] + cb * src[np.uint64(b + i)]


@_jit
def _scale(src, a, sa, dst, at, count):
    """dst[at + i] = sa * src[a + i], i < count (sign +-1: exact)."""
    ca = sa * src.dtype.type(1)
    for i in range(count):
        dst[np.uint64(at + i)] = ca * src[np.uint64(a + i)]


@_jit
def _gemm_tn(m, n, k, a, a0, lda, b, b0, ldb, c, c0, ldc, accumulate):
    """c[i, j] (+)= sum_l a[l, i] * b[l, j]: a (k, m) and b (k, n) row-major blocks."""
    one = c.dtype.type(1)
    cblas.gemm(cblas.TRANS, cblas.NO_TRANS, m, n, k, one, a[a0:], lda, b[b0:], ldb,
               one if accumulate else c.dtype.type(0), c[c0:], ldc)


@_jit
def _kernel_out(s, count, og, i, out, b, o0):
    """out[b, o0 + o] (3x3) = G^T S G, S[k] = s[(k * count + i) * og + o]."""
    rows = np.empty((4, 3))  # G^T along each row of S
    for o in range(og):
        for xi in range(4):
            at = ((4 * xi) * count + i) * og + o
            _apply_gt(s[at], s[at + count * og], s[at + 2 * count * og],
                      s[at + 3 * count * og], rows[xi])
        for j in range(3):
            _apply_gt(rows[0, j], rows[1, j], rows[2, j], rows[3, j], out[b, o0 + o, j::3])


@_jit
def _apply_gt(s0, s1, s2, s3, into):
    """into[:] = G^T (s0, s1, s2, s3), computed in float64."""
    s0, s1, s2, s3 = np.float64(s0), np.float64(s1), np.float64(s2), np.float64(s3)
    into[0], into[1], into[2] = s0 + (s1 + s2) * 0.5, (s1 - s2) * 0.5, (s1 + s2) * 0.5 + s3


@_jit
def _finite(out, b, o0, og):
    """Whether the 3x3 outputs out[b, o0:o0 + og] hold no inf or NaN (x * 0 is NaN for
    those only)."""
    total = 0.0
    for o in range(o0, o0 + og):
        for value in out[b, o]:
            total += value * 0
    return total == 0

"""The transposed Winograd convolution F(3x3, 4x4) for `cpu.lib.conv`: a 3x3 output
from a large window, as of the kernel gradient of a 3x3 convolution (2 spatial dims,
unit strides, no dilation, float32 or float64), with 4x4 blocks of the window where
`cpu.lib.conv_winograd_t` has 2x2 ones.

It is the transpose of `cpu.lib.conv_winograd4`'s F(4x4, 3x3), with its matrices
(interpolation points 0, 1, -1, 1/2, -2 and infinity): the kernel gradient
out[t] = sum_p z[p] d[p + t] is the derivative by the kernel g of <z, A^T [(G g) ⊙
(B^T d)]>, so out = G^T S G with S the sum over features and blocks of (A z A^T) ⊙
(B^T d B) for each 4x4 block z of the window and the 6x6 input patch d under it. The
36 elementwise products summed over a feature's blocks are 36 GEMMs V[k]^T (blocks,
images) by Z[k] (blocks, kernels): 2.25 multiplies per tap and position where
F(2x2)'s transpose has 4 and the direct sum 9, and 36 transformed values per 16
window positions (F(2x2): 64), so less to transform as well.

The layout is `cpu.lib.conv_winograd_t`'s (channels innermost, `LANES` at a time,
both GEMM operands (blocks, channels)); the padded planes are split by column modulo
4 (as `cpu.lib.conv_winograd4` splits its own), so that every patch column of a row
of blocks is one unit-stride run. The window transform multiplies by 2, 4, 8 and
their inverses only (exact); the input transform is F(4x4)'s; G^T is applied in
float64. Rounding, float32 standard normal data against a float64 sum: the kernel
gradient of 16x32x32x32 -> 32 is within 1.7e-6 of its largest output (F(2x2)'s
transpose: 4.9e-7; the F(4x4) forward plan's errors are of this size too). Like it,
`winograd4_t` reports whether every output came out finite; the caller computes the
convolution directly when one did not.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit

from .conv_core import image_of
from .conv_winograd4 import _apply_bt4
from .simd_rows import rows_map, transpose8
from .conv_winograd_t import LANES, _finite, _gemm_tn, _plane, lanes_of

_OPTIONS = dict(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # (see cpu.lib.conv)
_jit = njit(error_model="numpy", nogil=True, **_OPTIONS)
_inlined = njit(error_model="numpy", nogil=True, inline="always", **_OPTIONS)  # (cpu.lib.conv)
MIN_BLOCKS = 16  # 4x4 blocks of the window below which F(2x2)'s transpose is taken
MIN_RUN = 224  # elements of a row of blocks' transformed kernels below which likewise
MIN_DEPTH = 128  # blocks per GEMM below which features are taken several at a time
PASS = 1 << 18  # elements of a pass's transformed input (with the window's: in the L2 cache)


@_jit
def winograd4_t_pays(win, og):
    """Whether F(3x3, 4x4) should run a convolution `winograd_t_pays` admits, with og
    kernels a group: a window of MIN_BLOCKS 4x4 blocks whose rows of blocks, og
    kernels deep, make MIN_RUN elements (the transforms' loops run along them: short
    ones cost more than the GEMMs save). Measured, F(3x3, 4x4) / F(2x2)'s transpose,
    the kernel gradients of layers N x C x H x H -> O: 16x32x32² -> 32 0.82,
    16x24x32² -> 24 0.90, 16x16x56² -> 16 0.86, 32x64x56² -> 64 0.62, 32x128x28² ->
    128 0.48, 32x256x14² -> 256 0.65, 64x3x32² -> 64 0.86; 8x16x32² -> 16 1.13,
    16x32x16² -> 32 1.09, 16x32x14² -> 32 1.36, 16x64x12² -> 64 1.09."""
    blocks, tw = ((win[0] + 3) // 4) * ((win[1] + 3) // 4), (win[1] + 3) // 4
    return blocks >= MIN_BLOCKS and tw * lanes_of(og) >= MIN_RUN


@_jit
def sizes(win, fg, nb):
    """(features per GEMM, images per pass) for a window `win`: GEMMs at least MIN_DEPTH
    blocks deep where the window is small, a pass's transformed input about PASS
    elements, in whole vector steps of images (the lanes are transformed whether used
    or not)."""
    blocks = ((win[0] + 3) // 4) * ((win[1] + 3) // 4)
    chunk = max(1, min(fg, MIN_DEPTH // blocks))
    batch = max(LANES, PASS // (36 * chunk * blocks) // LANES * LANES)
    return chunk, min(nb, batch)


@_inlined
def winograd4_t(x, out, w, geo, chunk, batch, fgc, bgc, x_swapped, w_swapped):
    """out (3x3 outputs, `cpu.lib.conv`'s layout) = x convolved with the window w, per
    `chunk` features and `batch` images: planes gathered (`_gather4`), transformed,
    36 GEMMs (images, kernels) += V[k]^T Z[k] into S. Operands as `winograd_t` takes
    them (read in place); whether every output is finite (else the caller redoes it)."""
    in_sp, win, _, _, lo, _, _ = geo
    g, nb, o, fg = max(fgc, bgc), out.shape[0], out.shape[1], w.shape[1]
    og, th, tw = o // g, (win[0] + 3) // 4, (win[1] + 3) // 4
    blocks, bp, op = th * tw, lanes_of(batch), lanes_of(og)
    planes = np.zeros((4 * th + 2) * 4 * (tw + 1) * bp, x.dtype)  # padding stays zero
    window = np.zeros(16 * blocks * op, x.dtype)  # (past the window's edge too)
    v = np.empty(36 * chunk * blocks * bp, x.dtype)
    z = np.empty(36 * chunk * blocks * op, x.dtype)
    s = np.empty(36 * nb * og, x.dtype)  # S[k, image, kernel]
    rows = np.empty(6 * 4 * (tw + 1) * max(bp, op), x.dtype)  # (the transforms' scratch)
    no_padding = np.zeros(2, np.int64)
    xflat, wflat = x.reshape(x.size), w.reshape(w.size)
    finite = True
    for gi in range(g):
        for f0 in range(0, fg, chunk):
            count = min(chunk, fg - f0)
            depth = count * blocks
            for f in range(count):
                at, apart = _plane(w, gi * og, f0 + f, w_swapped)
                _gather4(wflat, at, apart, og, win, no_padding, window, tw, op)
                _window_transform4(window, th, tw, op, z, f * blocks, depth, rows)
            for b0 in range(0, nb, batch):
                images = min(batch, nb - b0)
                image, c0 = image_of(b0, gi, nb, fg, fgc, bgc)  # (the next images follow it)
                for f in range(count):
                    at, apart = _plane(x, image, c0 + f0 + f, x_swapped)
                    _gather4(xflat, at, apart, images, in_sp, lo, planes, tw + 1, bp)
                    _input_transform4(planes, th, tw, bp, v, f * blocks, depth, rows)
                for k in range(36):
                    _gemm_tn(images, og, depth, v, k * depth * bp, bp, z, k * depth * op, op, s,
                             (k * nb + b0) * og, og, f0 > 0)
        for b in range(nb):
            _kernel_out4(s, nb, og, b, out, b, gi * og)
            finite = finite and _finite(out, b, gi * og, og)
    return finite


@_jit
def _gather4(src, at, apart, count, in_sp, lo, planes, quarter, lanes):
    """Lane i < count of the padded plane `planes` = the input plane src[at + i * apart:]
    (in_sp[0] rows of in_sp[1]) placed at (lo[0], lo[1]): plane spot (row, 4k + q) at
    planes[((4 row + q) * quarter + k) * lanes + i] (a row's columns by their residue
    modulo 4: a row of blocks' patch column j is then one unit-stride run). Spots off
    the plane are cropped (negative padding), the others are left as they are. Blocks
    of 8 columns by 8 lanes go by `transpose8` (a scalar loop took 2.9 times as long),
    the rest element by element."""
    rows, cols = in_sp[0], in_sp[1]
    height = planes.size // (4 * quarter * lanes)
    first, stop = max(0, -lo[1]), min(cols, 4 * quarter - lo[1])  # source columns
    whole, tail = count // 8 * 8, first + (max(0, stop - first) // 8) * 8
    for r in range(max(0, -lo[0]), min(rows, height - lo[0])):
        put, base = 4 * (r + lo[0]) * quarter * lanes, at + r * cols
        for c0 in range(first, tail, 8):
            spots = _spots8(put, c0 + lo[1], quarter, lanes)
            for i0 in range(0, whole, 8):
                transpose8(src, base + c0 + i0 * apart, apart, planes, spots, i0)
            for m in range(8):
                _gather_lanes(src, base + c0 + m, apart, planes, spots[m], whole, count)
        for c in range(tail, stop):
            t = c + lo[1]  # the plane column (>= 0)
            spot = put + ((t & 3) * quarter + (t >> 2)) * lanes
            _gather_lanes(src, base + c, apart, planes, spot, 0, count)


@_jit
def _spots8(put, t, quarter, lanes):
    """Where the plane columns t, ..., t + 7 of the row at `put` start."""
    return ((put + ((t & 3) * quarter + (t >> 2)) * lanes),
            (put + (((t + 1) & 3) * quarter + ((t + 1) >> 2)) * lanes),
            (put + (((t + 2) & 3) * quarter + ((t + 2) >> 2)) * lanes),
            (put + (((t + 3) & 3) * quarter + ((t + 3) >> 2)) * lanes),
            (put + (((t + 4) & 3) * quarter + ((t + 4) >> 2)) * lanes),
            (put + (((t + 5) & 3) * quarter + ((t + 5) >> 2)) * lanes),
            (put + (((t + 6) & 3) * quarter + ((t + 6) >> 2)) * lanes),
            (put + (((t + 7) & 3) * quarter + ((t + 7) >> 2)) * lanes))


@_jit
def _gather_lanes(src, start, apart, planes, spot, i0, count):
    """planes[spot + i] = src[start + i * apart] for i0 <= i < count."""
    for i in range(i0, count):  # (unsigned: no wraparound)
        planes[np.uint64(spot + i)] = src[np.uint64(start + i * apart)]


@_jit
def _input_transform4(planes, th, tw, lanes, v, t0, depth, rows):
    """v[((k * depth) + t0 + a * tw + b) * lanes + lane] = (B^T d B)[k // 6, k % 6] of the
    6x6 patch d at rows 4a.., columns 4b.. of the padded planes, every lane: per block
    row, B^T down the 6 plane rows (into `rows`), then across each (patch column j:
    residue j % 4, offset j // 4)."""
    quarter = tw + 1
    pitch, run, step = 4 * quarter * lanes, tw * lanes, depth * lanes
    for a in range(th):
        r = 4 * a * pitch
        _apply_bt4(planes, (r, r + pitch, r + 2 * pitch, r + 3 * pitch, r + 4 * pitch,
                            r + 5 * pitch), rows, 0, pitch, pitch)
        for i in range(6):
            e, q = i * pitch, quarter * lanes
            _apply_bt4(rows, (e, e + q, e + 2 * q, e + 3 * q, e + lanes, e + q + lanes), v,
                       (6 * i * depth + t0 + a * tw) * lanes, step, run)


@_jit
def _window_transform4(window, th, tw, lanes, z, t0, depth, rows):
    """z[((k * depth) + t0 + a * tw + b) * lanes + lane] = (A y A^T)[k // 6, k % 6] of the
    4x4 block y at rows 4a.., columns 4b.. of the window plane (split as `_gather4`
    splits, `tw` columns a residue), every lane: per block row, A down the 4 plane
    rows (into `rows`), then across each."""
    pitch, run, step = 4 * tw * lanes, tw * lanes, depth * lanes
    for a in range(th):
        r = 4 * a * pitch
        _apply_a4(window, (r, r + pitch, r + 2 * pitch, r + 3 * pitch), rows, 0, pitch, pitch)
        for i in range(6):
            e = i * pitch
            _apply_a4(rows, (e, e + run, e + 2 * run, e + 3 * run), z,
                      (6 * i * depth + t0 + a * tw) * lanes, step, run)


def _a4(y0, y1, y2, y3):
    """A y along one axis, A y = (y0, y0 + y1 + y2 + y3, y0 - y1 + y2 - y3, y0 + y1 / 2 +
    y2 / 4 + y3 / 8, y0 - 2 y1 + 4 y2 - 8 y3, y3): `cpu.lib.conv_winograd4`'s A^T
    transposed."""
    return (y0, (y0 + y2) + (y1 + y3), (y0 + y2) - (y1 + y3),
            y0 + y1 * 0.5 + y2 * 0.25 + y3 * 0.125, y0 - y1 * 2.0 + y2 * 4.0 - y3 * 8.0, y3)


# `_apply_a4(y, starts, out, at, stride, count)`: for i < count, out[at + p * stride +
# i] = (A y)[p] of the four values y[starts[0] + i], ..., y[starts[3] + i]
_apply_a4 = rows_map(_a4, 4)


@_jit
def _kernel_out4(s, count, og, i, out, b, o0):
    """out[b, o0 + o] (3x3) = G^T S G, S[k] = s[(k * count + i) * og + o]."""
    rows = np.empty((6, 3))  # G^T along each row of S
    for o in range(og):
        for r in range(6):
            at = ((6 * r) * count + i) * og + o
            _apply_gt4(s[at], s[at + count * og], s[at + 2 * count * og],
                       s[at + 3 * count * og], s[at + 4 * count * og],
                       s[at + 5 * count * og], rows[r])
        for j in range(3):
            _apply_gt4(rows[0, j], rows[1, j], rows[2, j], rows[3, j], rows[4, j], rows[5, j],
                       out[b, o0 + o, j::3])


@_jit
def _apply_gt4(s0, s1, s2, s3, s4, s5, into):
    """into[:] = G^T (s0, ..., s5) in float64, G as `cpu.lib.conv_winograd4._apply_g4`."""
    s0, s1, s2 = np.float64(s0), np.float64(s1), np.float64(s2)
    s3, s4, s5 = np.float64(s3), np.float64(s4), np.float64(s5)
    plus, minus = (s1 + s2) / 3, (s1 - s2) / 3
    into[0] = s0 + minus - (16 * s3 - s4) / 15
    into[1] = plus - (8 * s3 + 2 * s4) / 15
    into[2] = minus - (4 * s3 - 4 * s4) / 15 + s5

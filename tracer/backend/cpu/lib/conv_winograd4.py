"""Winograd F(4x4, 3x3) for `cpu.lib.conv` (Lavin & Gray 2016): 2 spatial dims, 3x3
windows, unit strides, no dilation, float32 or float64.

A 4x4 output tile is A^T [U ⊙ V] A with V = B^T d B of its 6x6 input patch d and
U = G g G^T of the 3x3 kernel g; summed over the input channels, the 36 elementwise
products are 36 GEMMs U[k] (O, C) @ V[k] (C, tiles): 2.25 multiplies per output
where `cpu.lib.conv_winograd`'s F(2x2, 3x3) has 4 and the direct sum 9.

The interpolation points are 0, 1, -1, 1/2, -2 and infinity (Barabasz, Anderson,
Soodhalter & Gregg, "Error analysis and improving the accuracy of Winograd
convolution", 2020: 1/2 in place of the usual 2 halves the error): measured on
64-channel sums of standard normal float32 data, the largest error is 1.3e-6 of the
largest output on average over tiles (3.2e-6 at most; with 0, ±1, ±2: 2.4e-6 and
7.7e-6); on a whole 32x64x56x56 layer against a float64 sum, 2.3e-6 of the largest
output at most (the direct float32 sum: 1.9e-7, F(2x2): 3.6e-7). The kernel
transform is computed in float64.

The input goes through a zeroed padded plane split by row and column modulo 4 into
16 sub-planes (`_fill_split4`), so that every transform runs with unit stride over
a flat run of tiles (one junk tile column per tile row, computed and dropped, as in
F(2x2)); a few tile rows at a time, so the transformed tiles stay in cache. Like
F(2x2), it reports whether every output came out finite; the caller computes the
convolution directly when one did not. An image's transformed operands are whole
(`winograd4_pays` leaves large images to F(2x2), which blocks by tile rows).
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit

from .conv_core import gemm, image_of
from .conv_winograd import finite
from .simd_rows import deinterleave4, interleave4, rows_map

_OPTIONS = dict(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # (see cpu.lib.conv)
_jit = njit(error_model="numpy", nogil=True, **_OPTIONS)
_inlined = njit(error_model="numpy", nogil=True, inline="always", **_OPTIONS)
MIN_TILES = 30  # 4x4 tiles an image below which F(2x2)'s wider GEMMs do better
SCRATCH = 1 << 22  # elements of an image's transformed operands, at most
CHUNK = 2048  # elements of each transform pass's rows: the passes' rows stay in cache


@_jit
def winograd4_pays(out_sp, cg, og):
    """Whether F(4x4) beats F(2x2) on a convolution `winograd_pays` admits, with cg
    input and og output features a group: at least MIN_TILES 4x4 tiles an image (junk
    column included: its GEMMs' width), at most 0.7 of F(2x2)'s multiplies (the tiles
    cut by the edges counted whole), and an image's transformed operands within
    SCRATCH (F(2x2) keeps a few tile rows at a time in cache). Measured, F(4x4) /
    F(2x2): 32 images of O = C = 128 (256 at 14): 10x10 1.27, 12x12 1.06, 14x14 1.22,
    16x16 0.96, 20x20 0.74, 28x28 0.71; O = C = 64: 112x112 0.87 (3.9M elements),
    224x224 1.43 (15M)."""
    th, tw = (out_sp[0] + 3) // 4, (out_sp[1] + 3) // 4
    tiles, small = th * (tw + 1), ((out_sp[0] + 1) // 2) * ((out_sp[1] + 1) // 2 + 1)
    scratch = 36 * (cg + og) * (th + 1) * (tw + 1)
    return tiles >= MIN_TILES and 36 * tiles <= 0.7 * 16 * small and scratch <= SCRATCH


@_inlined
def winograd4(x, out, w, geo, fgc, bgc):
    """out = the convolution (the canonical layout of `cpu.lib.conv`), an image at a
    time; whether every output is finite (else the caller redoes it)."""
    in_sp, _, out_sp, _, lo, _, _ = geo
    g, nb, o, cg = max(fgc, bgc), out.shape[0], out.shape[1], w.shape[1]
    og, th, tw = o // g, (out_sp[0] + 3) // 4, (out_sp[1] + 3) // 4
    half = tw + 1  # sub-plane columns; tile column tw is junk, computed and dropped
    sub, tiles = (th + 1) * half, th * half  # a sub-plane (room for the last reads); tiles
    grid = np.zeros(16 * cg * sub + half + 1, x.dtype)  # padding stays zero
    chunk, ochunk = max(1, CHUNK // sub), max(1, CHUNK // tiles)  # channels per pass
    h = np.empty(24 * (chunk * sub + half), x.dtype)
    v = np.empty(36 * cg * sub, x.dtype)
    m = np.empty(36 * og * tiles, x.dtype)
    p = np.empty(40 * ochunk * tiles, x.dtype)
    all_finite = True
    for gi in range(g):
        u = _kernel_transform4(w, gi, og)
        for b in range(nb):
            image, c0 = image_of(b, gi, nb, cg, fgc, bgc)
            _fill_split4(x, image, c0, cg, grid, sub, half, in_sp, lo)
            _input_transform4(grid, cg, sub, half, chunk, h, v)
            for k in range(36):
                gemm(og, tiles, cg, u, k * og * cg, cg, v, k * cg * sub, sub, False,
                     m, k * og * tiles, tiles, False)
            image_finite = _output_transform4(m, og, tiles, half, ochunk, out, b, gi * og,
                                              out_sp, p)
            all_finite = all_finite and image_finite
    return all_finite


@_jit
def _kernel_transform4(w, gi, og):
    """U[k, o, c] = (G g G^T)[k // 6, k % 6] of the 3x3 kernel g = w[gi * og + o, c],
    in float64 (G: `_apply_g4`). A kernel row's 36 values per channel are gathered in
    `rows` first: U's planes are og * cg apart (4 KiB for 32 x 32 float32 kernels,
    where 36 stores a kernel to planes of that pitch took twice the time)."""
    cg = w.shape[1]
    u = np.empty((36, og, cg), w.dtype)
    rows = np.empty((cg, 36), w.dtype)
    for o in range(og):
        g = w[gi * og + o]
        for c in range(cg):
            k = g[c]
            cols = (_apply_g4(np.float64(k[0]), np.float64(k[3]), np.float64(k[6])),
                    _apply_g4(np.float64(k[1]), np.float64(k[4]), np.float64(k[7])),
                    _apply_g4(np.float64(k[2]), np.float64(k[5]), np.float64(k[8])))
            for i in range(6):  # (G g G^T)[i, :] = G (row i of G g)
                row = _apply_g4(cols[0][i], cols[1][i], cols[2][i])
                for j in range(6):
                    rows[c, 6 * i + j] = row[j]
        for k in range(36):
            plane = u[k, o]
            for c in range(cg):
                plane[c] = rows[c, k]
    return u.reshape(u.size)


@_jit
def _apply_g4(g0, g1, g2):
    """G (g0, g1, g2): the kernel at the points 0, 1, -1, 1/2, -2, infinity, each
    divided by the product of its distances to the other finite points."""
    return (g0, (g0 + g1 + g2) / 3, (-g0 + g1 - g2) / 3, -(16 * g0 + 8 * g1 + 4 * g2) / 15,
            (g0 - 2 * g1 + 4 * g2) / 15, g2)


@_jit
def _fill_split4(x, image, c0, cg, grid, sub, half, in_sp, lo):
    """grid = channels [c0, c0 + cg) of x[image] on their padded planes, split by row
    and column modulo 4 into 16 sub-planes (rows of `half` columns) of every channel:
    plane spot (4a + p, 4k + q) of channel c at sub-plane 4p + q, channel c, row a,
    column k (each sub-plane's channels one after the other, `sub` apart). Spots off
    the plane are cropped (negative padding); the others are left as they are: zero.
    A source row goes by whole groups of 4 source columns, split by `deinterleave4`
    (vector shuffles: a scalar loop took about a cycle an element), its end element by
    element."""
    rows, width, step = 4 * (sub // half), in_sp[1], cg * sub  # (step: sub-plane to next q)
    first, stop = max(0, -lo[0]), min(in_sp[0], rows - lo[0])  # source rows on the plane
    c_first, c_stop = max(0, -lo[1]), min(width, 4 * half - lo[1])  # source columns
    groups = max(0, c_stop - c_first) // 4
    t = c_first + lo[1]  # the plane column of source column c_first
    xflat = x.reshape(x.size)
    for c in range(cg):
        plane = (image * x.shape[1] + c0 + c) * x.shape[2]
        for i in range(first, stop):
            r = i + lo[0]
            row = (4 * (r % 4) * cg + c) * sub + (r // 4) * half
            s = plane + i * width + c_first
            spots = (row + (t & 3) * step + (t >> 2), row + ((t + 1) & 3) * step + ((t + 1) >> 2),
                     row + ((t + 2) & 3) * step + ((t + 2) >> 2),
                     row + ((t + 3) & 3) * step + ((t + 3) >> 2))
            deinterleave4(xflat, s, grid, spots, groups)
            for k in range(4 * groups, c_stop - c_first):  # (unsigned: no wraparound)
                at = t + k
                grid[np.uint64(row + (at & 3) * step + (at >> 2))] = xflat[np.uint64(s + k)]


def _bt4(d0, d1, d2, d3, d4, d5):
    """B^T d along one axis; B^T's rows: (1, -3/2, -2, 3/2, 1, 0), (0, -1, 1/2, 5/2, 1,
    0), (0, 1, -5/2, 1/2, 1, 0), (0, -2, -1, 2, 1, 0), (0, 1/2, -1, -1/2, 1, 0),
    (0, 1, -3/2, -2, 3/2, 1)."""
    return (d0 + d4 - d2 * 2.0 + (d3 - d1) * 1.5, d4 - d1 + d2 * 0.5 + d3 * 2.5,
            d4 + d1 - d2 * 2.5 + d3 * 0.5, d4 - d2 + (d3 - d1) * 2.0,
            d4 - d2 + (d1 - d3) * 0.5, d5 + d1 - d3 * 2.0 + (d4 - d2) * 1.5)


# `_apply_bt4(d, starts, out, at, stride, count)`: for i < count, out[at + q * stride +
# i] = (B^T d)[q] of the six values d[starts[0] + i], ..., d[starts[5] + i]
_apply_bt4 = rows_map(_bt4, 6)


@_jit
def _input_transform4(grid, cg, sub, half, chunk, h, v):
    """v[k, f] = (B^T d B)[k // 6, k % 6] of the 6x6 patch d under the tile at f, flat
    over the channels and the sub-plane rows (junk columns and rows included), `chunk`
    channels at a time: first B^T along every plane row's columns (h[(p, s)]: the rows
    p modulo 4), then down the rows. Patch row 4a + i is sub-plane row (i % 4,
    a + i // 4), its columns likewise; each pass is one flat loop over the chunk."""
    span = cg * sub
    stride = chunk * sub + half  # of h's rows
    for c0 in range(0, cg, chunk):
        f0, n = c0 * sub, min(chunk, cg - c0) * sub
        for p in range(4):
            at = 4 * p * span + f0
            _apply_bt4(grid, (at, at + span, at + 2 * span, at + 3 * span, at + 1, at + span + 1),
                       h, 6 * p * stride, stride, n + half)
        for s in range(6):
            at = s * stride
            _apply_bt4(h, (at, 6 * stride + at, 12 * stride + at, 18 * stride + at, at + half,
                           6 * stride + at + half), v, s * span + f0, 6 * span, n)


def _at4(m0, m1, m2, m3, m4, m5):
    """A^T m along one axis; A^T's rows: (1, 1, 1, 1, 1, 0), (0, 1, -1, 1/2, -2, 0),
    (0, 1, 1, 1/4, 4, 0), (0, 1, -1, 1/8, -8, 1)."""
    return (m0 + (m1 + m2) + m3 + m4, (m1 - m2) + m3 * 0.5 - m4 * 2.0,
            (m1 + m2) + m3 * 0.25 + m4 * 4.0, m5 + (m1 - m2) + m3 * 0.125 - m4 * 8.0)


# `_apply_at4(m, starts, out, at, stride, count)`: A^T as `_apply_bt4` applies B^T
_apply_at4 = rows_map(_at4, 6)


@_jit
def _output_transform4(m, og, tiles, half, chunk, out, b, o0, out_sp, p):
    """out[b, o0 + o] at the 4x4 outputs of the tiles = A^T M A, M[k, o, t] at
    m[(k * og + o) * tiles + t], `chunk` features at a time: first A^T across every
    row of M (p[j, r]), then down (y[i, j]), each a flat loop over the chunk, then the
    outputs copied out (junk tiles and the parts past the edge dropped). Whether every
    tile's outputs are finite (checked where they are in cache; a junk tile's too:
    not finite only where the input is not)."""
    step, all_finite = og * tiles, True
    for f0 in range(0, og, chunk):
        n = min(chunk, og - f0) * tiles
        y = p[24 * n:]
        for r in range(6):
            at = 6 * r * step + f0 * tiles
            _apply_at4(m, (at, at + step, at + 2 * step, at + 3 * step, at + 4 * step,
                           at + 5 * step), p, r * n, 6 * n, n)
        for j in range(4):
            at = 6 * j * n
            _apply_at4(p, (at, at + n, at + 2 * n, at + 3 * n, at + 4 * n, at + 5 * n), y,
                       j * n, 4 * n, n)
        all_finite = all_finite and finite(y[:16 * n])
        oflat, plane = out.reshape(out.size), out.shape[2]
        for o in range(n // tiles):
            _copy_out4(oflat, ((b * out.shape[1]) + o0 + f0 + o) * plane, y, o * tiles, n, half,
                       out_sp)
    return all_finite


@_jit
def _copy_out4(dst, d_at, y, y_at, step, half, out_sp):
    """The output plane dst[d_at:] = the outputs y[i, j] of the tiles t, at
    y[y_at + (4 i + j) * step + t]: a row's whole tiles by `interleave4` (a scalar loop
    took about a cycle an element), a width not a multiple of 4 ends element by
    element."""
    oh, ow = out_sp[0], out_sp[1]
    full = ow // 4
    for r in range(oh):
        s0, d0 = y_at + 4 * (r % 4) * step + (r // 4) * half, d_at + r * ow
        interleave4(y, (s0, s0 + step, s0 + 2 * step, s0 + 3 * step), dst, d0, full)
        for col in range(4 * full, ow):  # the last tile
            dst[d0 + col] = y[s0 + (col % 4) * step + full]

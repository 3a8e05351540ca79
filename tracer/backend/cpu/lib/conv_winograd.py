"""Winograd convolutions for `cpu.lib.conv` (Lavin & Gray, "Fast Algorithms for
Convolutional Neural Networks", 2016): 2 spatial dims, unit strides, no dilation,
float32 or float64.

`winograd`, F(2x2, 3x3), for 3x3 windows: a 2x2 output tile is A^T [U ⊙ V] A, with
V = B^T d B of its 4x4 input patch d and U = G g G^T of the 3x3 kernel g. Summed over
the input channels, the 16 elementwise products are 16 GEMMs U[k] (O, C) @ V[k]
(C, tiles): 4 multiplies per output where the direct sum has 9 (its transpose, for
kernel gradients, is `cpu.lib.conv_winograd_t`). The transforms only add, subtract
and halve, so the rounding stays close to the direct sum's. The inputs go through
zeroed padded planes split by the parity of row and column, so that every transform
runs with unit stride; a few tile rows at a time, so the operands stay in cache.
An inf or NaN in the input can give NaN where the direct sum gives inf, so
`winograd` reports whether every output came out finite; the caller computes the
convolution directly when one did not.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from .conv_core import all_equal, gemm, image_of

_OPTIONS = dict(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # (see cpu.lib.conv)
_jit = njit(error_model="numpy", nogil=True, **_OPTIONS)
# the plans' bodies, typed inside their entry points (`cpu.lib.conv_core`: whole plans
# are not compiled on their own); float32 and float64 only (`resolve` sees to that)
_inlined = njit(error_model="numpy", nogil=True, inline="always", **_OPTIONS)
MIN_TILES = 64  # an image's 2x2 tiles below which the direct plans do better
MIN_PRODUCT = 64  # O * C per group below which the transforms cost more than they save


def winograd_pays(x, w, out, geo, groups):
    """Whether `winograd` can run this convolution and should."""


@overload(winograd_pays, jit_options=_OPTIONS)
def _winograd_pays_overload(x, w, out, geo, groups):
    if x.dtype not in (types.float32, types.float64):
        return lambda x, w, out, geo, groups: False

    def pays(x, w, out, geo, groups):
        in_sp, win, out_sp, st, _, ld, rd = geo
        if len(win) != 2 or win[0] != 3 or win[1] != 3:
            return False
        if not (all_equal(st, 1) and all_equal(ld, 1) and all_equal(rd, 1)):
            return False
        tiles = ((out_sp[0] + 1) // 2) * ((out_sp[1] + 1) // 2)
        return tiles >= MIN_TILES and (out.shape[1] // groups) * w.shape[1] >= MIN_PRODUCT
    return pays


@_inlined
def winograd(x, out, w, geo, tile_rows, fgc, bgc):
    """out = the convolution (the canonical layout of `cpu.lib.conv`), `tile_rows` rows
    of 2x2 tiles at a time; whether every output is finite (else the caller redoes it)."""
    in_sp, _, out_sp, _, lo, _, _ = geo
    g, nb, o, cg = max(fgc, bgc), out.shape[0], out.shape[1], w.shape[1]
    og, th, tw = o // g, (out_sp[0] + 1) // 2, (out_sp[1] + 1) // 2
    half = tw + 1  # sub-plane columns; tile column tw is junk, computed and dropped
    sub = (th + 2) * half  # a sub-plane, with room for the last tiles' reads
    grid = np.zeros(cg * 4 * sub, x.dtype)  # padding stays zero
    most = tile_rows * half  # tiles per block
    scratch = np.empty(8 * (most + half), x.dtype)
    v = np.empty(16 * cg * most, x.dtype)
    m = np.empty(16 * og * most, x.dtype)
    finite = True
    for gi in range(g):
        u = _kernel_transform(w, gi, og)
        for b in range(nb):
            image, c0 = image_of(b, gi, nb, cg, fgc, bgc)
            _fill_split(x, image, c0, cg, grid, sub, half, in_sp, lo)
            for a0 in range(0, th, tile_rows):
                tiles = min(tile_rows, th - a0) * half
                _input_transform(grid, cg, sub, half, a0 * half, tiles, scratch, v)
                for k in range(16):
                    gemm(og, tiles, cg, u, k * og * cg, cg, v, k * cg * tiles, tiles, False,
                         m, k * og * tiles, tiles, False)
                _output_transform(m, og, tiles, half, a0, out, b, gi * og, out_sp, scratch)
            finite = finite and _all_finite(out, b, gi * og, og)
    return finite


@_jit
def _kernel_transform(w, gi, og):
    """U[k, o, c] = (G g G^T)[k // 4, k % 4] of the 3x3 kernel g = w[gi * og + o, c],
    G = (1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1), in float64."""
    cg = w.shape[1]
    u = np.empty((16, og, cg), w.dtype)
    gg = np.empty((4, 3))  # G g
    for o in range(og):
        for c in range(cg):
            g = w[gi * og + o, c]
            for j in range(3):
                _apply_g(np.float64(g[j]), np.float64(g[3 + j]), np.float64(g[6 + j]),
                         gg[:, j])
            for xi in range(4):
                _apply_g(gg[xi, 0], gg[xi, 1], gg[xi, 2], u[4 * xi:4 * xi + 4, o, c])
    return u.reshape(u.size)


@_jit
def _apply_g(g0, g1, g2, into):
    """into[:] = G (g0, g1, g2)."""
    into[0], into[1] = g0, (g0 + g1 + g2) * 0.5
    into[2], into[3] = (g0 - g1 + g2) * 0.5, g2


@_jit
def _fill_split(x, image, c0, cg, grid, sub, half, in_sp, lo):
    """grid[c * 4 * sub:] = channel c0 + c of x[image] on its padded plane, split by the
    parities of row and column into 4 sub-planes (rows of `half` columns): plane spot
    (2a + rp, 2k + cp) at sub-plane 2 rp + cp, row a, column k. Then every patch
    corner of every transform is one unit-stride stream. Spots off the plane are
    cropped (negative padding); the others are left as they are: zero."""
    rows, width = 2 * (sub // half), in_sp[1]
    first, stop = max(0, -lo[0]), min(in_sp[0], rows - lo[0])  # source rows on the plane
    for cp in range(2):  # plane column 2k + cp holds source column 2k + cp - lo[1]
        k0 = max(0, (lo[1] - cp + 1) // 2)
        k1 = min(half, (width + lo[1] - cp + 1) // 2)
        for c in range(cg):
            src = x[image, c0 + c]
            for i in range(first, stop):
                r = i + lo[0]
                at = (4 * c + 2 * (r % 2) + cp) * sub + (r // 2) * half
                shift = i * width + cp - lo[1]
                for k in range(k0, k1):
                    grid[np.uint64(at + k)] = src[np.uint64(shift + 2 * k)]  # (no wraparound)


@_jit
def _apply_bt(first, second, shift, out, at, stride, count, one):
    """B^T along one axis, for i < count: with d = (first[i], second[i], first[i + shift],
    second[i + shift]), out[at + q * stride + i] = (d0 - d2, d1 + d2, d2 - d1, d1 - d3)[q]
    (one loop for the four, the signs multiplying: +-1 times is exact)."""
    for q in range(4):
        a = first if q == 0 else second
        b = second[shift:] if q == 3 else first[shift:]
        sa = -one if q == 2 else one
        sb = -one if q == 0 or q == 3 else one
        dst = out[at + q * stride:at + q * stride + count]
        for i in range(count):
            dst[i] = sa * a[i] + sb * b[i]


@_jit
def _input_transform(grid, cg, sub, half, f0, tiles, h, v):
    """v[k, c, t] = (B^T d B)[k // 4, k % 4] of the 4x4 patch d of channel c under
    tile f0 + t (flat over the sub-planes' rows, junk columns included): first B^T
    along every plane row's columns (h[rp, nu]: rows of parity rp), then down the
    rows. The patch rows 2a .. 2a + 3 are sub-plane rows (even, a), (odd, a),
    (even, a + 1), (odd, a + 1), its columns 2b .. 2b + 3 likewise."""
    span, one = tiles + half, np.ones(1, v.dtype)[0]
    for c in range(cg):
        for rp in range(2):
            even = grid[(4 * c + 2 * rp) * sub + f0:]
            _apply_bt(even, grid[(4 * c + 2 * rp + 1) * sub + f0:], 1, h, 4 * rp * span, span,
                      span, one)
        for nu in range(4):
            _apply_bt(h[nu * span:], h[(4 + nu) * span:], half, v, nu * cg * tiles + c * tiles,
                      4 * cg * tiles, tiles, one)


@_jit
def _output_transform(m, og, tiles, half, a0, out, b, o0, out_sp, p):
    """out[b, o0 + o] at the 2x2 outputs of tiles a0 * half + t = A^T M A, M[k, o, t] at
    m[(k * og + o) * tiles + t]: first (1 1 1 0) and (0 1 -1 -1) across every row of
    M (p: 2 x 4 rows), then down, then the outputs copied out (junk tiles and the
    parts past the output's edge dropped)."""
    step = og * tiles
    for o in range(og):
        for xi in range(4):
            at = 4 * xi * step + o * tiles
            row = m[at:]
            first, second = p[xi * tiles:(xi + 1) * tiles], p[(4 + xi) * tiles:(5 + xi) * tiles]
            for t in range(tiles):
                first[t] = row[t] + row[step + t] + row[2 * step + t]
            for t in range(tiles):
                second[t] = row[step + t] - row[2 * step + t] - row[3 * step + t]
        for j in range(2):
            y0, y1 = p[j * 4 * tiles:], p[(4 * j + 1) * tiles:]
            for t in range(tiles):  # rows 0 and 1 of the tiles' column j, in place
                top, mid = y0[t], y1[t]
                y0[t] = top + mid + y1[tiles + t]
                y1[t] = mid - y1[tiles + t] - y1[2 * tiles + t]
        _copy_out(out[b, o0 + o], p, tiles, half, a0, out_sp)


@_jit
def _copy_out(dst, p, tiles, half, a0, out_sp):
    """dst = the outputs y[i, j] of the tiles, at p[(4 j + i) * tiles + t]."""
    oh, ow = out_sp[0], out_sp[1]
    pairs = ow // 2
    for a in range(tiles // half):
        for i in range(2):
            y = 2 * (a0 + a) + i
            if y >= oh:
                continue
            left = p[i * tiles + a * half:]
            right = p[(4 + i) * tiles + a * half:]
            row = dst[y * ow:(y + 1) * ow]
            for bb in range(pairs):
                row[2 * bb] = left[bb]
                row[2 * bb + 1] = right[bb]
            if 2 * pairs < ow:  # an odd width: the last tile's first column only
                row[ow - 1] = left[pairs]


@_jit
def _all_finite(out, b, o0, og):
    """Whether out[b, o0:o0 + og] holds no inf or NaN."""
    for o in range(o0, o0 + og):
        if not finite(out[b, o]):
            return False
    return True


def finite(values):
    """Whether the contiguous 1-D array `values` holds no inf or NaN."""


@overload(finite, jit_options=_OPTIONS)
def _finite_overload(values):
    # the largest exponent field: all ones only for inf and NaN (an integer maximum
    # vectorizes; a float sum of value * 0 waits on each add: a tenth of the plan's time)
    uint, mask = (np.uint32, 0x7F800000) if values.dtype == types.float32 else \
        (np.uint64, 0x7FF0000000000000)

    def all_finite(values):
        bits = values.view(uint)
        top = uint(0)
        for i in range(bits.size):
            top = max(top, bits[i] & uint(mask))
        return top < uint(mask)
    return all_finite

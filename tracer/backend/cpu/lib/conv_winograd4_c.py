"""Winograd F(4x4, 3x3) with the channels innermost, for `cpu.lib.conv`: small images
(2 spatial dims, 3x3 windows, unit strides, no dilation, float32 or float64).

The arithmetic is `cpu.lib.conv_winograd4`'s (the same matrices and kernel
transform); the layout is the transposed plans' (`cpu.lib.conv_winograd4_t`): an
image's input planes are gathered into zero-padded planes whose every spot holds a
vector of its channels, `LANES` at a time, split by column modulo 4, so that the
input transform reads and writes whole vectors with unit stride, and both GEMM
operands are (tiles, channels) matrices, several images' tiles stacked: the 36 GEMMs
of a pass are V[k] (images x tiles, C) by U[k]^T (C, O), where
`cpu.lib.conv_winograd4` runs 36 GEMMs of (O, C) by (C, tiles) per image, narrow and
under the BLAS peak for small images. A^T M A then comes out with the kernels
innermost, and the outputs are copied to their planes.

Measured on one core, 16x32x32x32 by 32 3x3 filters (the training step of
`bench_conv`): input gather, transform, GEMMs and output transform take about 1.6 ms
where `cpu.lib.conv_winograd4` takes 2.3 (its per-image GEMMs of 72 columns, its
strided splits). Like the others it reports whether every output came out finite.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit

from .conv_core import gemm, image_of
from .conv_winograd import finite
from .conv_winograd4 import _apply_at4, _kernel_transform4
from .conv_winograd4_t import _gather4, _input_transform4
from .conv_winograd_t import lanes_of

_OPTIONS = dict(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # (see cpu.lib.conv)
_jit = njit(error_model="numpy", nogil=True, **_OPTIONS)
_inlined = njit(error_model="numpy", nogil=True, inline="always", **_OPTIONS)  # (cpu.lib.conv)
PASS = 1 << 18  # elements of a pass's transformed input (in the L2 cache with its products)
MAX_TILES = 256  # 4x4 tiles an image above which `cpu.lib.conv_winograd4` does better


@_jit
def winograd4_c_pays(out_sp):
    """Whether this plan beats `cpu.lib.conv_winograd4` on a convolution that one takes:
    images of at most MAX_TILES 4x4 tiles."""
    return ((out_sp[0] + 3) // 4) * ((out_sp[1] + 3) // 4) <= MAX_TILES


@_jit
def images_per_pass(out_sp, cg):
    """Images whose transformed inputs make about PASS elements (at least one)."""
    tiles = ((out_sp[0] + 3) // 4) * ((out_sp[1] + 3) // 4)
    return max(1, PASS // (36 * tiles * lanes_of(cg)))


@_inlined
def winograd4_c(x, out, w, geo, batch, fgc, bgc):
    """out = the convolution (the canonical layout of `cpu.lib.conv`), `batch` images a
    pass; whether every output is finite (else the caller redoes it)."""
    in_sp, _, out_sp, _, lo, _, _ = geo
    g, nb, o, cg = max(fgc, bgc), out.shape[0], out.shape[1], w.shape[1]
    og, th, tw = o // g, (out_sp[0] + 3) // 4, (out_sp[1] + 3) // 4
    tiles, bp, op = th * tw, lanes_of(cg), lanes_of(og)
    depth, plane = batch * tiles, x.shape[2]
    planes = np.zeros((4 * th + 2) * 4 * (tw + 1) * bp, x.dtype)  # padding stays zero
    v = np.empty(36 * depth * bp, x.dtype)
    m = np.zeros(36 * depth * op, x.dtype)  # (lanes past og stay zero: finite)
    rows = np.empty(6 * 4 * (tw + 1) * max(bp, op), x.dtype)  # (the transforms' scratch)
    y = np.empty(16 * tw * op, x.dtype)
    xflat, all_finite = x.reshape(x.size), True
    for gi in range(g):
        u = _kernel_transform4(w, gi, og)  # U[k] (og, cg)
        for b0 in range(0, nb, batch):
            count = min(batch, nb - b0)
            for i in range(count):
                image, c0 = image_of(b0 + i, gi, nb, cg, fgc, bgc)
                _gather4(xflat, (image * x.shape[1] + c0) * plane, plane, cg, in_sp, lo,
                         planes, tw + 1, bp)
                _input_transform4(planes, th, tw, bp, v, i * tiles, depth, rows)
            for k in range(36):
                gemm(count * tiles, og, cg, v, k * depth * bp, bp, u, k * og * cg, cg, True,
                     m, k * depth * op, op, False)
            for i in range(count):
                image_finite = _output_transform(m, i * tiles, depth, th, tw, op, og, out,
                                                 b0 + i, gi * og, out_sp, rows, y)
                all_finite = all_finite and image_finite
    return all_finite


@_jit
def _output_transform(m, t0, depth, th, tw, lanes, og, out, b, o0, out_sp, rows, y):
    """out[b, o0 + o] at the 4x4 outputs of the tiles t0.. = A^T M A, M[k, tile, o] at
    m[(k * depth + tile) * lanes + o]: per tile row, A^T across each row of M (into
    `rows`), then down (into y), then the outputs copied out (the parts past the edge
    dropped). Whether they are all finite (checked where they are in cache)."""
    run, step, all_finite = tw * lanes, depth * lanes, True
    for a in range(th):
        base = (t0 + a * tw) * lanes
        for r in range(6):
            at = 6 * r * step + base
            _apply_at4(m[at:], m[at + step:], m[at + 2 * step:], m[at + 3 * step:],
                       m[at + 4 * step:], m[at + 5 * step:], rows, 4 * r * run, run, run)
        for j in range(4):
            _apply_at4(rows[j * run:], rows[(4 + j) * run:], rows[(8 + j) * run:],
                       rows[(12 + j) * run:], rows[(16 + j) * run:], rows[(20 + j) * run:], y,
                       j * run, 4 * run, run)
        all_finite = all_finite and finite(y)
        _copy_out(y, a, tw, lanes, og, out, b, o0, out_sp)
    return all_finite


@_jit
def _copy_out(y, a, tw, lanes, og, out, b, o0, out_sp):
    """out[b, o0 + o] rows 4a.. = the outputs y[((4 i + j) * tw + tile) * lanes + o] of
    the tile row a (the rows and columns past the edge dropped)."""
    height, width = out_sp[0], out_sp[1]
    run = tw * lanes
    for o in range(og):
        dst = out[b, o0 + o]
        for i in range(min(4, height - 4 * a)):
            at, src = (4 * a + i) * width, 4 * i * run + o
            for col in range(width):  # (unsigned: no wraparound)
                dst[np.uint64(at + col)] = y[np.uint64(src + (col & 3) * run + (col >> 2) * lanes)]

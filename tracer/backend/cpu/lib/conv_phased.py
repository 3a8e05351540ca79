"""The phased plan of `cpu.lib.conv`: im2col for strided 2-D convolutions without
lhs dilation, the columns gathered from the input's phases.

With strides (s0, s1), output (i, j) under tap (ka, kb) reads padded input spot
(s0 i + ka rd0, s1 j + kb rd1): spot (s0 i' + r0, s1 j' + r1) of phase (r0, r1)
with i' = i + (ka rd0) // s0, r0 = (ka rd0) % s0 (columns likewise). So the input is
split once per image into its s0 x s1 phases, zero-padded (`_split_phases`: one
strided read of each input element), and every column row of a block of output rows
is then a unit-stride copy of a phase's row (`_gather_from_phases`), where gathering
from the input itself read every element with a stride and a bounds check; measured
on a 3x3 stride-2 layer (32x64x56x56 -> 128), the gathering took 18 ms of 40.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit

from .conv_core import all_equal, gemm, image_of

_OPTIONS = dict(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # (see cpu.lib.conv)
_jit = njit(error_model="numpy", nogil=True, **_OPTIONS)
_inlined = njit(error_model="numpy", nogil=True, inline="always", **_OPTIONS)


@_jit
def phases_pay(geo):
    """Whether the phased plan runs this im2col convolution: 2 spatial dims, a stride
    above 1, no lhs dilation (with unit strides im2col copies unit-stride runs of the
    input already). (Forced, it runs any 2-D convolution without lhs dilation.)"""
    st, ld = geo[3], geo[5]
    return len(st) == 2 and not all_equal(st, 1) and all_equal(ld, 1)


@_jit
def phase_sizes(geo):
    """(rows, columns) of a phase: every tap's reads for every output fit."""
    _, win, out_sp, st, _, _, rd = geo
    return (out_sp[0] + ((win[0] - 1) * rd[0]) // st[0],
            out_sp[1] + ((win[1] - 1) * rd[1]) // st[1])


@_inlined
def phased_im2col(x, out, wflat, geo, block, fgc, bgc):
    """The phased plan: per (image, group), the phases of its channels,
    then per block of `block` output rows the gathered columns and one GEMM."""
    _, win, out_sp, st, _, _, _ = geo
    g, nb, o, taps = max(fgc, bgc), out.shape[0], out.shape[1], win[0] * win[1]
    og, cg, positions, ow = o // g, wflat.size // (o * taps), out.shape[2], out_sp[1]
    kdim = cg * taps
    ph, pw = phase_sizes(geo)
    phases = np.empty(cg * st[0] * st[1] * ph * pw, x.dtype)
    col = np.empty(kdim * block * ow, x.dtype)
    oflat = out.reshape(out.size)
    for b in range(nb):
        for gi in range(g):
            image, c0 = image_of(b, gi, nb, cg, fgc, bgc)
            _split_phases(x, image, c0, cg, phases, ph, pw, geo)
            for r0 in range(0, out_sp[0], block):
                rows = min(out_sp[0], r0 + block) - r0
                _gather_from_phases(phases, cg, ph, pw, col, r0, rows, geo)
                gemm(og, rows * ow, kdim, wflat, gi * og * kdim, kdim, col, 0, rows * ow, False,
                     oflat, (b * o + gi * og) * positions + r0 * ow, positions, False)


@_jit
def _split_phases(x, image, c0, cg, phases, ph, pw, geo):
    """phases[c, r0, r1, i, j] = the padded input spot (s0 i + r0, s1 j + r1) of channel
    c0 + c of x[image]: zero on padding and past the input's end."""
    in_sp, _, _, st, lo, _, _ = geo
    height, width = in_sp[0], in_sp[1]
    for c in range(cg):
        src = x[image, c0 + c]
        for p0 in range(st[0]):
            for p1 in range(st[1]):
                at = ((c * st[0] + p0) * st[1] + p1) * ph * pw
                start = p1 - lo[1]  # column j reads source column start + s1 j
                j0 = min(pw, max(0, (-start + st[1] - 1) // st[1]))
                j1 = max(j0, min(pw, (width - start + st[1] - 1) // st[1]))
                for i in range(ph):
                    row, dst = st[0] * i + p0 - lo[0], phases[at + i * pw:at + (i + 1) * pw]
                    if row < 0 or row >= height:
                        for j in range(pw):
                            dst[j] = 0
                        continue
                    for j in range(j0):
                        dst[j] = 0
                    first = row * width + start
                    for j in range(j0, j1):  # (unsigned: no negative-index wraparound)
                        dst[np.uint64(j)] = src[np.uint64(first + st[1] * j)]
                    for j in range(j1, pw):
                        dst[j] = 0


@_jit
def _gather_from_phases(phases, cg, ph, pw, col, r0, rows, geo):
    """col[(c, tap), r * ow + j] = the input under tap `tap` at output (r0 + r, j), for
    the `rows` output rows from r0: a phase row's run of ow, for each (c, tap, r)."""
    _, win, out_sp, st, _, _, rd = geo
    taps, ow, plane = win[0] * win[1], out_sp[1], ph * pw
    pc = rows * ow
    for c in range(cg):
        for t in range(taps):
            ka, kb = (t // win[1]) * rd[0], (t % win[1]) * rd[1]
            at = ((c * st[0] + ka % st[0]) * st[1] + kb % st[1]) * plane \
                + (ka // st[0] + r0) * pw + kb // st[1]
            put = (c * taps + t) * pc
            for r in range(rows):
                src, dst = phases[at + r * pw:], col[put + r * ow:put + (r + 1) * ow]
                for j in range(ow):
                    dst[j] = src[j]

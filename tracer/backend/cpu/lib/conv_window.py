"""The window plan of `cpu.lib.conv`: convolutions with more taps than output positions
(kernel gradients). Per output position one GEMM contracts the whole window,
(images, window) times the kernel (O, window)^T; the windows are gathered along the
outermost spatial dim once for every position on it (a position's window is a run of
the gathered rows), so the input is copied about as often as there are positions in
the other dims.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit

from .conv_core import gemm, image_of, pitches, put_run, span, unravel

_OPTIONS = dict(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # (see cpu.lib.conv)
_jit = njit(error_model="numpy", nogil=True, **_OPTIONS)
_inlined = njit(error_model="numpy", nogil=True, inline="always", **_OPTIONS)


@_jit
def _window_weights(w, gi, og, win0):
    """Group gi's kernels w[gi * og:][:og] (og, C, win0, T') reordered (og, win0, C, T'):
    the order of the gathered windows' elements."""
    cg, taps = w.shape[1], w.shape[2]
    rest = taps // win0
    wp = np.empty((og, win0, cg, rest), w.dtype)
    for i in range(og):
        for c in range(cg):
            for k in range(win0):
                for r in range(rest):
                    wp[i, k, c, r] = w[gi * og + i, c, k * rest + r]
    return wp.reshape(wp.size)


@_jit
def _mid_bases(pr, geo):
    """Per tap m of the dims between the first and the last (flat), the flat input
    offset of those dims at position pr of the dims after the first; -1 on padding or
    a hole."""
    in_sp, win, out_sp, st, lo, ld, rd = geo
    n, in_pitch = len(win), pitches(in_sp)
    y, k = np.zeros(n, np.int64), np.zeros(n, np.int64)
    unravel(pr, out_sp[1:], y[1:])
    bases = np.zeros(np.prod(win[1:n - 1]), np.int64)
    for m in range(bases.size):
        unravel(m, win[1:n - 1], k[1:n - 1])
        for d in range(1, n - 1):
            i = y[d] * st[d] + k[d] * rd[d] - lo[d]
            if i < 0 or i % ld[d] != 0 or i // ld[d] >= in_sp[d]:
                bases[m] = -1
                break
            bases[m] += (i // ld[d]) * in_pitch[d]
    return bases, y[n - 1] * st[n - 1] - lo[n - 1]


@_jit
def _gather_windows(x, image, c0, cg, buf, at, rows, phase, pr, geo):
    """buf[at:] = (rows, cg, T') for x[image], channels from c0: row j holds the input
    on lhs-dilated row phase + j * rd[0] of the first spatial dim under the taps T' of
    the other dims at their position pr; zeros on padding and holes."""
    in_sp, win, _, st, lo, ld, rd = geo
    n, rest = len(win), np.prod(win[1:])
    src, s0 = x.reshape(x.size), (image * x.shape[1] + c0) * x.shape[2]
    pitch0 = np.prod(in_sp[1:])  # (of the first spatial dim)
    bases, start = _mid_bases(pr, geo)
    run = win[n - 1] if n > 1 else 1
    inside = span(start, rd[n - 1], ld[n - 1], in_sp[n - 1], run)
    for j in range(rows):
        i = phase + j * rd[0] - lo[0]
        row = (i // ld[0]) * pitch0 if 0 <= i < in_sp[0] * ld[0] and i % ld[0] == 0 else -1
        for c in range(cg):
            put = at + (j * cg + c) * rest
            if n == 1:
                buf[put] = src[s0 + c * x.shape[2] + row] if row >= 0 else 0
                continue
            for m in range(bases.size):
                base = row + bases[m] if row >= 0 and bases[m] >= 0 else -1
                put_run(buf, put + m * run, src, s0 + c * x.shape[2], base, start,
                        rd[n - 1], ld[n - 1], in_sp[n - 1], inside, run)


@_inlined
def window(x, out, w, geo, batch, fgc, bgc):
    """The window plan, `batch` images at a time: for each position pr of the dims
    after the first and each phase of the first dim's rows (rhs dilation), the
    windows are gathered once; position p0 on the first dim then is one GEMM,
    (images, window at row shift(p0)) @ W^T."""
    in_sp, win, out_sp, st, _, _, rd = geo
    g, nb, o, positions = max(fgc, bgc), out.shape[0], out.shape[1], out.shape[2]
    og, cg, taps = o // g, w.shape[1], w.shape[2]
    rest, outer = taps // win[0], positions // out_sp[0]
    kdim = taps * cg
    rows = ((out_sp[0] - 1) * st[0]) // rd[0] + win[0]  # every phase's rows fit
    block = rows * cg * rest
    buf = np.empty(batch * block, x.dtype)
    res = np.empty(batch * og, x.dtype)
    for gi in range(g):
        wg = _window_weights(w, gi, og, win[0])
        for b0 in range(0, nb, batch):
            count = min(batch, nb - b0)
            for pr in range(outer):
                for phase in range(rd[0]):
                    if not _has_phase(phase, out_sp[0], st[0], rd[0]):
                        continue
                    for i in range(count):
                        image, c0 = image_of(b0 + i, gi, nb, cg, fgc, bgc)
                        _gather_windows(x, image, c0, cg, buf, i * block, rows, phase, pr, geo)
                    for p0 in range(out_sp[0]):
                        if (p0 * st[0]) % rd[0] != phase:
                            continue
                        shift = (p0 * st[0] - phase) // rd[0]
                        gemm(count, og, kdim, buf, shift * cg * rest, block, wg, 0, kdim, True,
                             res, 0, og, False)
                        for i in range(count):
                            for j in range(og):
                                out[b0 + i, gi * og + j, p0 * outer + pr] = res[i * og + j]


@_jit
def _has_phase(phase, count, stride, dilation):
    """Whether some position p < count has p * stride % dilation == phase."""
    for p in range(min(count, dilation)):
        if (p * stride) % dilation == phase:
            return True
    return False


# ------------------------------------------------------------------ entry points

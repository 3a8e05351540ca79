"""numba kernels of `conv_general_dilated` for the cpu backend.

The generated code brings the operands to the canonical layout x (N, C, S),
w (O, C / feature_groups, T), out (N / batch_groups, O, P), the spatial dims
flattened and their sizes in tuples, and calls `convolution`. It picks a plan and
runs its work items one after another; each ends in a few large GEMMs (`gemm`:
BLAS through numba's own `numba_xxgemm`, with leading dimensions and beta, so
operands are used where they lie; plain loops for integers, which wrap like XLA's).
BLAS threads each GEMM, as it does `dot_general`'s; the gathers and copies around
them are single-threaded. (A `parallel=True` version, work items under prange with
thread-local BLAS tiles, ran best on a busy machine, but it doubled the compile time
of every module and numba's cache crashes reloading parallel functions compiled for
several signatures.)

* shifted (unit strides, few taps): images are written once, side by side, into a
  zeroed padded (and lhs-dilated) grid; on it the output at every kernel tap is one
  GEMM, W[:, :, tap] @ grid[:, offset(tap):], accumulated in place: no im2col. Grid
  columns that are no output position are computed and dropped when copied out.
* window (more taps than output positions, as in weight gradients): the images'
  padded grids side by side, out[:, :, p] for all images at once is, per channel,
  the window matrix (O, window columns) times the grids' columns from p on: one
  GEMM per (position, channel), no im2col either.
* im2col (the rest: strided convolutions): the columns of a block of output rows
  are gathered, zeros for padding, holes and reads past the end, then one GEMM.

Every read is bounds-checked against the real input, so negative padding and partial
windows never touch memory outside the operands.
"""# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np.linalg import ensure_blas

from .cpu_mathlib import f16_bits, f16_to_f32

_jit = njit(cache=True, error_model="numpy", nogil=True)
BUDGET = 1 << 21  # elements of a plan's gathered columns or grids (8 MiB of float32)
GRID_COLUMNS = 1 << 15  # the shifted plan's GEMMs: images side by side up to this wide


def _gemm_signature(dtype: types.Type) -> types.Type:
    ptr = types.CPointer(dtype)
    return types.intc(types.char, types.char, types.char, types.intp, types.intp, types.intp,
                      ptr, ptr, types.intp, ptr, types.intp, ptr, ptr, types.intp)


ensure_blas()  # numba_xxgemm forwards to scipy's BLAS
# numba's helper symbol: cache-safe (resolved by name), the GIL handled inside
_XXGEMM = {t: (types.ExternalFunction("numba_xxgemm", _gemm_signature(t)), ord(kind))
           for t, kind in ((types.float32, "s"), (types.float64, "d"),
                           (types.complex64, "c"), (types.complex128, "z"))}


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
def _ints(t):
    out = np.empty(len(t), np.int64)
    for i in range(len(t)):
        out[i] = t[i]
    return out


@_jit
def _pitches(sizes):
    """Row-major element strides of an array of `sizes`."""
    out = np.ones(len(sizes), np.int64)
    for d in range(len(sizes) - 2, -1, -1):
        out[d] = out[d + 1] * sizes[d + 1]
    return out


@_jit
def _unravel(flat, sizes, into):
    for d in range(len(sizes) - 1, -1, -1):
        into[d] = flat % sizes[d]
        flat //= sizes[d]


@_jit
def _image_of(b, g, nb, cg, fgc, bgc):
    """(lhs batch index, first lhs channel) of output batch b in group g."""
    if bgc > 1:
        return g * nb + b, 0
    return b, (g * cg if fgc > 1 else 0)


# ------------------------------------------------------------------ shifted plan

@_jit
def _grid(out_sp, win, rd, plane_sizes):
    """(tap offsets on the padded grid, grid columns Q spanning every output position)."""
    pitch = _pitches(plane_sizes)
    n, taps = len(win), np.prod(win)
    offsets = np.zeros(taps, np.int64)
    k = np.zeros(n, np.int64)
    for t in range(taps):
        _unravel(t, win, k)
        for d in range(n):
            offsets[t] += k[d] * rd[d] * pitch[d]
    q = 1
    for d in range(n):
        q += (out_sp[d] - 1) * pitch[d]
    return offsets, q


@_jit
def _fill_grid(x, image, c0, cg, buf, at, row, plane_sizes, in_sp, lo, ld):
    """Write channels [c0, c0 + cg) of x[image] at their dilated, padded grid spots,
    channel c at buf[at + c * row + spot] (spots off the grid are cropped: negative
    padding; the other grid spots are left as they are: zero)."""
    n = len(in_sp)
    pitch = _pitches(plane_sizes)
    last, step, low = in_sp[n - 1], ld[n - 1], lo[n - 1]
    rows = x.shape[2] // last if last else 0
    idx = np.zeros(n, np.int64)
    # the span of the last dim's source indices that land on the grid
    first = max(0, (-low + step - 1) // step)
    stop = min(last, (plane_sizes[n - 1] - low + step - 1) // step)
    for r in range(rows):
        _unravel(r * last, in_sp, idx)
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
                buf[spot + i * step] = src[i]


@_jit
def _grid_column(r, out_sp, pitch):
    """The grid column where output row r (all dims but the last) starts."""
    column = 0
    for d in range(len(out_sp) - 2, -1, -1):
        column += (r % out_sp[d]) * pitch[d]
        r //= out_sp[d]
    return column


@_jit
def _scatter_rows(acc, at, row, out, b, o0, og, out_sp, pitch):
    """out[b, o0 + o, :] = the output positions' grid columns of acc[o, at:] (row
    elements a line); the junk columns between them are dropped."""
    last = out_sp[-1]
    for r in range(out.shape[2] // last):
        column = at + _grid_column(r, out_sp, pitch)
        for o in range(og):
            out[b, o0 + o, r * last:(r + 1) * last] = \
                acc[o * row + column:o * row + column + last]


@_jit
def _tap_matrices(w):
    """w (O, C, T) as T contiguous (O, C) matrices, flat."""
    o, cg, taps = w.shape
    wt = np.empty((taps, o, cg), w.dtype)
    for t in range(taps):
        wt[t] = w[:, :, t]
    return wt.reshape(wt.size)


@_jit
def _shifted(x, out, wt, geo, offsets, q, chunk, fgc, bgc):
    """The shifted plan, `chunk` images per GEMM; wt holds the taps' (O, C) matrices.
    A lone unpadded, undilated image is its own grid; a lone image without junk
    columns accumulates in the output itself."""
    in_sp, win, out_sp, _, lo, ld, rd = geo
    g, nb, o, taps = max(fgc, bgc), out.shape[0], out.shape[1], np.prod(win)
    og, cg, positions = o // g, wt.size // (o * taps), out.shape[2]
    plane_sizes = out_sp + (win - 1) * rd  # the padded grid every tap's window fits on
    pitch, plane = _pitches(plane_sizes), np.prod(plane_sizes)
    own_grid = chunk == 1 and np.all(plane_sizes == in_sp) and np.all(lo == 0) \
        and np.all(ld == 1)
    own_acc = chunk == 1 and q == positions
    row = chunk * plane
    buf = np.zeros(0 if own_grid else cg * row, x.dtype)  # padding, holes stay zero
    acc = np.empty(0 if own_acc else og * row, x.dtype)
    xflat, oflat = x.reshape(x.size), out.reshape(out.size)
    for gi in range(g):
        for b0 in range(0, nb, chunk):
            count = min(chunk, nb - b0)
            grid, g0 = (buf, 0)
            for i in range(count):
                image, c0 = _image_of(b0 + i, gi, nb, cg, fgc, bgc)
                if own_grid:
                    grid, g0 = xflat, (image * x.shape[1] + c0) * plane
                else:
                    _fill_grid(x, image, c0, cg, buf, i * plane, row, plane_sizes, in_sp, lo, ld)
            target, t0, ldc = (oflat, (b0 * o + gi * og) * positions, positions) if own_acc \
                else (acc, 0, row)
            for t in range(taps):
                gemm(og, (count - 1) * plane + q, cg, wt, (t * o + gi * og) * cg, cg, grid,
                     g0 + offsets[t], row, False, target, t0, ldc, t > 0)
            for i in range(0 if own_acc else count):
                _scatter_rows(acc, i * plane, row, out, b0 + i, gi * og, og, out_sp, pitch)


@_jit
def _shifted_pays(taps, positions, win, out_sp, st, rd):
    """Unit strides, a grid not much larger than the output, not too many taps."""
    for d in range(len(st)):
        if st[d] != 1:
            return False
    plane = np.prod(out_sp + (win - 1) * rd)
    return plane <= 2 * positions and taps <= 64


# ------------------------------------------------------------------ im2col plan

@_jit
def _source_base(y, k, st, lo, ld, rd, in_sp, in_pitch):
    """Flat lhs offset of output y under tap k over all but the last dim; -1 on
    padding, a hole or past the end."""
    base = 0
    for d in range(len(y) - 1):
        i = y[d] * st[d] + k[d] * rd[d] - lo[d]
        if i < 0 or i % ld[d] != 0 or i // ld[d] >= in_sp[d]:
            return -1
        base += (i // ld[d]) * in_pitch[d]
    return base


@_jit
def _span(start, step, ld, size, count):
    """[j0, j1): the j < count whose index start + j * step lands inside a source of
    `size` without holes (ld == 1); for ld > 1 every j is checked one by one."""
    if ld != 1:
        return 0, 0
    j0 = min(count, max(0, (-start + step - 1) // step))
    return j0, max(j0, min(count, (size - start + step - 1) // step))


@_jit
def _put_run(col, at, src, s0, base, start, step, ld, size, span, count):
    """col[at + j] = the dilated source row src[s0 + base:][:size] at start + j * step
    (zero on holes, padding and past the end); j < count."""
    if base < 0:
        for j in range(count):
            col[at + j] = 0
        return
    j0, j1 = span
    if ld == 1:
        for j in range(j0):
            col[at + j] = 0
        first = s0 + base + start
        for j in range(j0, j1):
            col[at + j] = src[first + j * step]
        for j in range(j1, count):
            col[at + j] = 0
        return
    for j in range(count):
        i = start + j * step
        col[at + j] = src[s0 + base + i // ld] if 0 <= i < size * ld and i % ld == 0 else 0


@_jit
def _fill_by_tap(x, image, c0, cg, col, p0, pc, geo):
    """col[(c, tap), position - p0] for the whole output rows [p0, p0 + pc) of channels
    [c0, c0 + cg) of x[image]; runs along the output's last dim."""
    in_sp, win, out_sp, st, lo, ld, rd = geo
    n, taps, run, size, rows = len(win), np.prod(win), out_sp[-1], in_sp[-1], pc // out_sp[-1]
    y, k, in_pitch = np.zeros(n, np.int64), np.zeros(n, np.int64), _pitches(in_sp)
    bases, starts = np.empty((taps, rows), np.int64), np.empty(taps, np.int64)
    for t in range(taps):  # where each (tap, output row) reads: the same for every channel
        _unravel(t, win, k)
        starts[t] = k[-1] * rd[-1] - lo[-1]
        for r in range(rows):
            _unravel(p0 + r * run, out_sp, y)
            bases[t, r] = _source_base(y, k, st, lo, ld, rd, in_sp, in_pitch)
    src, plane = x.reshape(x.size), x.shape[2]
    for c in range(cg):
        s0 = (image * x.shape[1] + c0 + c) * plane
        for t in range(taps):
            span = _span(starts[t], st[-1], ld[-1], size, run)
            for r in range(rows):
                _put_run(col, (c * taps + t) * pc + r * run, src, s0, bases[t, r], starts[t],
                         st[-1], ld[-1], size, span, run)


@_jit
def _im2col(x, out, wflat, geo, block, fgc, bgc):
    """The im2col plan: per (image, group, block of `block` output rows), gathered
    columns and one GEMM."""
    g, nb, o, taps, last = max(fgc, bgc), out.shape[0], out.shape[1], np.prod(geo[1]), \
        geo[2][-1]
    og, cg, positions = o // g, wflat.size // (o * taps), out.shape[2]
    kdim, rows = cg * taps, positions // last
    col = np.empty(kdim * block * last, x.dtype)
    oflat = out.reshape(out.size)
    for b in range(nb):
        for gi in range(g):
            image, c0 = _image_of(b, gi, nb, cg, fgc, bgc)
            for r0 in range(0, rows, block):
                pc = (min(rows, r0 + block) - r0) * last
                _fill_by_tap(x, image, c0, cg, col, r0 * last, pc, geo)
                gemm(og, pc, kdim, wflat, gi * og * kdim, kdim, col, 0, pc, False, oflat,
                     (b * o + gi * og) * positions + r0 * last, positions, False)


# ------------------------------------------------------------------ window plan

@_jit
def _window_grid(geo):
    """The window plan's input grid sizes, the grid column of every output position
    and of every tap, and the window's width Qw on the grid."""
    in_sp, win, out_sp, st, lo, ld, rd = geo
    plane_sizes = (out_sp - 1) * st + (win - 1) * rd + 1
    pitch, n = _pitches(plane_sizes), len(win)
    at_position, at_tap = np.zeros(np.prod(out_sp), np.int64), np.zeros(np.prod(win), np.int64)
    index = np.zeros(n, np.int64)
    for p in range(at_position.size):
        _unravel(p, out_sp, index)
        at_position[p] = np.sum(index * st * pitch)
    for t in range(at_tap.size):
        _unravel(t, win, index)
        at_tap[t] = np.sum(index * rd * pitch)
    return plane_sizes, at_position, at_tap, at_tap[-1] + 1


@_jit
def _window_matrices(w, at_tap, width):
    """w (O, C, T) with its taps at their grid columns: (O, C, width), zeros between."""
    o, cg, taps = w.shape
    wg = np.zeros((o, cg, width), w.dtype)
    for i in range(o):
        for c in range(cg):
            for t in range(taps):
                wg[i, c, at_tap[t]] = w[i, c, t]
    return wg.reshape(wg.size)


@_jit
def _window(x, out, wg, geo, at_position, width, batch, fgc, bgc):
    """The window plan, `batch` images at a time: their padded grids side by side,
    out[b, :, p] for all b at once is, summed over channels c, Wg[:, c] (O, Qw) @
    grid[b, c, p's column:][:Qw]^T: one GEMM per (position, channel), no im2col."""
    in_sp, win, out_sp, _, lo, ld, rd = geo
    g, nb, o, positions = max(fgc, bgc), out.shape[0], out.shape[1], out.shape[2]
    og, cg = o // g, wg.size // (o * width)
    plane_sizes = (out_sp - 1) * geo[3] + (win - 1) * rd + 1
    plane = np.prod(plane_sizes)
    buf = np.zeros(batch * cg * plane, x.dtype)  # padding and holes stay zero
    res = np.empty(og * batch, x.dtype)
    for gi in range(g):
        for b0 in range(0, nb, batch):
            count = min(batch, nb - b0)
            for i in range(count):
                image, c0 = _image_of(b0 + i, gi, nb, cg, fgc, bgc)
                _fill_grid(x, image, c0, cg, buf, i * cg * plane, plane, plane_sizes, in_sp,
                           lo, ld)
            for p in range(positions):
                for c in range(cg):
                    gemm(og, count, width, wg, (gi * og * cg + c) * width, cg * width, buf,
                         c * plane + at_position[p], cg * plane, True, res, 0, count, c > 0)
                for i in range(count):
                    out[b0 + i, gi * og:(gi + 1) * og, p] = res[i:og * count:count]


# ------------------------------------------------------------------ entry points

EMPTY, AUTO, SHIFTED, IM2COL, WINDOW = 0, 1, 2, 3, 4


@_jit
def _choose(mode, w, out, geo):
    in_sp, win, out_sp, st, _, _, rd = geo
    if out.size == 0 or w.shape[1] == 0 or w.shape[2] == 0:
        return EMPTY
    if mode != AUTO:
        return mode
    if _shifted_pays(w.shape[2], out.shape[2], win, out_sp, st, rd):
        return SHIFTED
    return WINDOW if np.prod(win) > out.shape[2] else IM2COL  # (weight gradients)


@_jit
def convolution_with(mode, x, w, out, in_sizes, window, out_sizes, strides, pad_low,
                     lhs_dilation, rhs_dilation, feature_groups, batch_groups):
    """`convolution` with the plan forced (SHIFTED needs unit strides) or AUTO."""
    table = np.empty((7, len(in_sizes)), np.int64)
    for row, values in enumerate((in_sizes, window, out_sizes, strides, pad_low,
                                  lhs_dilation, rhs_dilation)):
        table[row] = _ints(values)
    geo = (table[0], table[1], table[2], table[3], table[4], table[5], table[6])
    mode = _choose(mode, w, out, geo)
    nb, groups, cg = out.shape[0], max(feature_groups, batch_groups), w.shape[1]
    if mode == EMPTY:
        out.reshape(out.size)[:] = 0  # empty sums (or nothing at all)
    elif mode == SHIFTED:
        plane_sizes = geo[2] + (geo[1] - 1) * geo[6]
        offsets, q = _grid(geo[2], geo[1], geo[6], plane_sizes)
        plane = np.prod(plane_sizes)
        chunk = max(1, min(nb, GRID_COLUMNS // plane, BUDGET // max(1, cg * plane)))
        if np.all(plane_sizes == geo[0]) and np.all(geo[4] == 0) and np.all(geo[5] == 1):
            chunk = 1  # the input is its own grid: no copy
        _shifted(x, out, _tap_matrices(w), geo, offsets, q, chunk, feature_groups,
                 batch_groups)
    elif mode == WINDOW:
        plane_sizes, at_position, at_tap, width = _window_grid(geo)
        batch = max(1, min(nb, BUDGET // max(1, cg * np.prod(plane_sizes))))
        _window(x, out, _window_matrices(w, at_tap, width), geo, at_position, width, batch,
                feature_groups, batch_groups)
    else:
        rows = out.shape[2] // geo[2][-1]
        block = max(1, min(rows, BUDGET // max(1, cg * w.shape[2] * geo[2][-1])))
        _im2col(x, out, w.reshape(w.size), geo, block, feature_groups, batch_groups)


@_jit
def convolution(x, w, out, in_sizes, window, out_sizes, strides, pad_low, lhs_dilation,
                rhs_dilation, feature_groups, batch_groups):
    """out (N', O, P) = the convolution of x (N, C, S) with w (O, C', T) in the canonical
    layout, the spatial geometry in the tuples (one entry per spatial dim)."""
    convolution_with(AUTO, x, w, out, in_sizes, window, out_sizes, strides, pad_low,
                     lhs_dilation, rhs_dilation, feature_groups, batch_groups)


@_jit
def widen_f16(bits):
    """A float32 copy of a C-contiguous array of float16 bits (convolutions run in f32)."""
    out = np.empty(bits.shape, np.float32)
    src, dst = bits.reshape(bits.size), out.reshape(out.size)
    for i in range(src.size):
        dst[i] = f16_to_f32(src[i])
    return out


@_jit
def narrow_f16(values, bits):
    """bits[...] = float16 bits of `values` (same shape, both C-contiguous)."""
    src, dst = values.reshape(values.size), bits.reshape(bits.size)
    for i in range(src.size):
        dst[i] = f16_bits(src[i])

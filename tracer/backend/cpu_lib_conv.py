"""numba kernels of `conv_general_dilated` for the cpu backend.

The generated code brings the operands to the canonical layout x (N, C, S),
w (O, C / feature_groups, T), out (N / batch_groups, O, P), the spatial dims
flattened and their sizes in tuples, then calls `conv_plan` and runs the plan's
work items with `conv_slot` under `numba.prange` (in a parallel function of its
own module: numba crashes loading a cached host that calls a parallel function
of another module, numba issue #8578). Both plans end in GEMMs (`gemm`: BLAS
through numba's own `numba_xxgemm`, with leading dimensions and beta, so operands
are used where they lie; plain loops for integers, which wrap like XLA's):

* shifted (unit strides, few taps): an image is written once into a zeroed padded
  (and lhs-dilated) grid; on it the output at every kernel tap is one GEMM,
  W[:, :, tap] @ grid[:, offset(tap):], accumulated in place: no im2col. Grid
  columns that are no output position are computed and dropped when copied out.
* im2col (strides, or many taps, as in weight gradients): the columns of a block
  of output rows are gathered, zeros for padding, holes and reads past the end,
  then one GEMM. The columns run along the output's last dim, or along the
  window's when that is longer (the GEMM then reads them transposed).

Work items are (image, group, block of output rows). Every read is bounds-checked
against the real input, so negative padding and partial windows never touch memory
outside the operands.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np.linalg import ensure_blas

from .cpu_mathlib import f16_bits, f16_to_f32

_jit = njit(cache=True, error_model="numpy", nogil=True)
COLUMN_BUDGET = 1 << 20  # elements of one thread's im2col block (4 MiB of float32)
COLUMN_BLOCK = 256  # grid columns of the shifted plan that all taps update in turn
# BLAS runs a GEMM with m*n*k at most this in the calling thread (OpenBLAS:
# SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD); the plans tile their GEMMs to
# that size and spread the tiles' work items over numba's threads themselves, so the
# two thread pools never compete and a busy machine costs time in proportion.
SERIAL_GEMM = 1 << 18
TILE = 64
# Work is dealt to this many slots (numba's thread count when the library compiled;
# numba.get_num_threads() would make the kernels uncacheable). Each slot owns its
# buffers; the generated code runs the slots with prange, on however many threads
# are active. (A parallel function here, called from the cached host in another
# module, crashes numba when loaded from its cache: numba issue #8578.)
SLOTS = numba.config.NUMBA_NUM_THREADS


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

def gemm(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):  # noqa: ANN001, ANN201
    """c[i, j] (+)= sum_l a[i, l] * b[l, j] on row-major blocks of flat arrays:
    a[a0 + i*lda + l], b[b0 + l*ldb + j] (b[b0 + j*ldb + l] when `trans_b`),
    c[c0 + i*ldc + j]; i < m, j < n, l < k."""


def _gemm_loops(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):  # noqa: ANN001, ANN202
    step_l, step_j = (1, ldb) if trans_b else (ldb, 1)
    for i in range(m):
        row = c0 + i * ldc
        if not accumulate:
            c[row:row + n] = 0
        for l in range(k):  # noqa: E741
            coef = a[a0 + i * lda + l]
            src = b0 + l * step_l
            for j in range(n):
                c[row + j] += coef * b[src + j * step_j]


@overload(gemm, jit_options={"cache": True})
def _gemm_overload(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):  # noqa: ANN001, ANN202
    if a.dtype not in _XXGEMM:
        return _gemm_loops  # integers: plain loops (BLAS is float-only), wrapping
    fn, kind = _XXGEMM[a.dtype]
    dtype = np.dtype(str(a.dtype))

    def blas(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):  # noqa: ANN001, ANN202
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


@_jit
def _gemm_tiled(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):  # noqa: ANN001, ANN202
    """`gemm` as tiles small enough for BLAS to run each in this thread."""
    if k == 0:
        gemm(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate)
        return
    mb, nb = min(m, TILE), min(n, TILE)
    kb = max(1, min(k, SERIAL_GEMM // (mb * nb)))
    if kb == k:  # room left: wider tiles
        nb = max(nb, min(n, SERIAL_GEMM // (mb * kb)))
    for i in range(0, m, mb):
        for j in range(0, n, nb):
            for l in range(0, k, kb):  # noqa: E741
                at_b = b0 + (j * ldb + l if trans_b else l * ldb + j)
                gemm(min(mb, m - i), min(nb, n - j), min(kb, k - l), a, a0 + i * lda + l, lda,
                     b, at_b, ldb, trans_b, c, c0 + i * ldc + j, ldc, accumulate or l > 0)


# ------------------------------------------------------------------ geometry

@_jit
def _ints(t):  # noqa: ANN001, ANN202
    out = np.empty(len(t), np.int64)
    for i in range(len(t)):
        out[i] = t[i]
    return out


@_jit
def _pitches(sizes):  # noqa: ANN001, ANN202
    """Row-major element strides of an array of `sizes`."""
    out = np.ones(len(sizes), np.int64)
    for d in range(len(sizes) - 2, -1, -1):
        out[d] = out[d + 1] * sizes[d + 1]
    return out


@_jit
def _unravel(flat, sizes, into):  # noqa: ANN001, ANN202
    for d in range(len(sizes) - 1, -1, -1):
        into[d] = flat % sizes[d]
        flat //= sizes[d]


@_jit
def _image_of(b, g, nb, cg, fgc, bgc):  # noqa: ANN001, ANN202
    """(lhs batch index, first lhs channel) of output batch b in group g."""
    if bgc > 1:
        return g * nb + b, 0
    return b, (g * cg if fgc > 1 else 0)


# ------------------------------------------------------------------ shifted plan

@_jit
def _grid(out_sp, win, rd, plane_sizes):  # noqa: ANN001, ANN202
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
def _fill_grid(x, image, c0, cg, buf, plane_sizes, in_sp, lo, ld):  # noqa: ANN001, ANN202
    """Write channels [c0, c0 + cg) of x[image] at their dilated, padded grid spots,
    channel c at buf[c * plane + spot] (spots off the grid are cropped: negative
    padding; the other grid spots are left as they are: zero)."""
    n = len(in_sp)
    pitch = _pitches(plane_sizes)
    plane = pitch[0] * plane_sizes[0]
    last, step, low = in_sp[n - 1], ld[n - 1], lo[n - 1]
    rows = x.shape[2] // last if last else 0
    idx = np.zeros(n, np.int64)
    # the span of the last dim's source indices that land on the grid
    first = max(0, (-low + step - 1) // step)
    stop = min(last, (plane_sizes[n - 1] - low + step - 1) // step)
    for r in range(rows):
        _unravel(r * last, in_sp, idx)
        base = 0
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
            spot = c * plane + base + low  # + i * step >= 0 for i >= first
            for i in range(first, stop):
                buf[spot + i * step] = src[i]


@_jit
def _grid_column(r, out_sp, pitch):  # noqa: ANN001, ANN202
    """The grid column where output row r (all dims but the last) starts."""
    column = 0
    for d in range(len(out_sp) - 2, -1, -1):
        column += (r % out_sp[d]) * pitch[d]
        r //= out_sp[d]
    return column


@_jit
def _scatter_rows(acc, q, out, b, o0, og, out_sp, pitch, r0, r1):  # noqa: ANN001, ANN202
    """out[b, o0 + o, rows r0..r1] = their grid columns of acc (og, q); junk dropped."""
    last = out_sp[-1]
    for r in range(r0, r1):
        column = _grid_column(r, out_sp, pitch)
        for o in range(og):
            out[b, o0 + o, r * last:(r + 1) * last] = acc[o * q + column:o * q + column + last]


@_jit
def _tap_matrices(w):  # noqa: ANN001, ANN202
    """w (O, C, T) as T contiguous (O, C) matrices, flat."""
    o, cg, taps = w.shape
    wt = np.empty((taps, o, cg), w.dtype)
    for t in range(taps):
        wt[t] = w[:, :, t]
    return wt.reshape(wt.size)


@_jit
def _parts(rows, units, slots):  # noqa: ANN001, ANN202
    """Pieces to cut each of `units` work units (of `rows` output rows) into, so that
    every slot gets work."""
    return max(1, min(rows, -(-slots // max(units, 1))))


@_jit
def _shifted_slot(x, out, wt, geo, offsets, q, parts, fgc, bgc, slot, items):  # noqa: ANN001, ANN202
    """Work items slot, slot + SLOTS, ... of the shifted plan: (image, group, part of
    its output rows); wt holds the taps' (O, C) matrices. An unpadded, undilated
    input is its own grid; an output without junk columns is its own accumulator."""
    in_sp, win, out_sp, _, lo, ld, rd = geo
    g, nb, o, taps, last = max(fgc, bgc), out.shape[0], out.shape[1], np.prod(win), out_sp[-1]
    og, cg, rows, positions = o // g, wt.size // (o * taps), out.shape[2] // last, out.shape[2]
    plane_sizes = out_sp + (win - 1) * rd  # the padded grid every tap's window fits on
    pitch, plane = _pitches(plane_sizes), np.prod(plane_sizes)
    own_grid = np.all(plane_sizes == in_sp) and np.all(lo == 0) and np.all(ld == 1)
    own_acc = q == positions
    buf = np.zeros(0 if own_grid else cg * plane, x.dtype)  # padding, holes stay zero
    acc = np.empty(0 if own_acc else og * q, x.dtype)
    xflat, oflat = x.reshape(x.size), out.reshape(out.size)
    for item in range(slot, items, SLOTS):
        b, gi, part = item // (g * parts), item // parts % g, item % parts
        r0, r1 = part * rows // parts, (part + 1) * rows // parts
        image, c0 = _image_of(b, gi, nb, cg, fgc, bgc)
        grid, g0 = (xflat, (image * x.shape[1] + c0) * plane) if own_grid else (buf, 0)
        if not own_grid:
            _fill_grid(x, image, c0, cg, buf, plane_sizes, in_sp, lo, ld)
        target, t0, ldc = (oflat, (b * o + gi * og) * positions, positions) if own_acc \
            else (acc, 0, q)
        q1 = _grid_column(r1 - 1, out_sp, pitch) + last
        for j in range(_grid_column(r0, out_sp, pitch), q1, COLUMN_BLOCK):
            for t in range(taps):  # the accumulator block stays in cache across the taps
                _gemm_tiled(og, min(COLUMN_BLOCK, q1 - j), cg, wt, (t * o + gi * og) * cg, cg,
                            grid, g0 + offsets[t] + j, plane, False, target, t0 + j, ldc, t > 0)
        if not own_acc:
            _scatter_rows(acc, q, out, b, gi * og, og, out_sp, pitch, r0, r1)


@_jit
def _shifted_pays(taps, positions, win, out_sp, st, rd):  # noqa: ANN001, ANN202
    """Unit strides, a grid not much larger than the output, not too many taps."""
    for d in range(len(st)):
        if st[d] != 1:
            return False
    plane = np.prod(out_sp + (win - 1) * rd)
    return plane <= 2 * positions and taps <= 64


# ------------------------------------------------------------------ im2col plan

@_jit
def _source_base(y, k, st, lo, ld, rd, in_sp, in_pitch):  # noqa: ANN001, ANN202
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
def _span(start, step, ld, size, count):  # noqa: ANN001, ANN202
    """[j0, j1): the j < count whose index start + j * step lands inside a source of
    `size` without holes (ld == 1); for ld > 1 every j is checked one by one."""
    if ld != 1:
        return 0, 0
    j0 = min(count, max(0, (-start + step - 1) // step))
    return j0, max(j0, min(count, (size - start + step - 1) // step))


@_jit
def _put_run(col, at, src, s0, base, start, step, ld, size, span, count):  # noqa: ANN001, ANN202
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
def _fill_by_tap(x, image, c0, cg, col, p0, pc, geo):  # noqa: ANN001, ANN202
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
def _im2col_slot(x, out, wflat, geo, block, fgc, bgc, slot, items):  # noqa: ANN001, ANN202
    """Work items slot, slot + SLOTS, ... of the im2col plan: (image, group, block of
    `block` output rows): gathered columns, then one GEMM."""
    g, nb, o, taps, last = max(fgc, bgc), out.shape[0], out.shape[1], np.prod(geo[1]), \
        geo[2][-1]
    og, cg, positions = o // g, wflat.size // (o * taps), out.shape[2]
    kdim, rows = cg * taps, positions // last
    blocks = -(-rows // block)
    col = np.empty(kdim * block * last, x.dtype)
    oflat = out.reshape(out.size)
    for item in range(slot, items, SLOTS):
        b, gi, r0 = item // (g * blocks), item // blocks % g, item % blocks * block
        pc = (min(rows, r0 + block) - r0) * last
        image, c0 = _image_of(b, gi, nb, cg, fgc, bgc)
        _fill_by_tap(x, image, c0, cg, col, r0 * last, pc, geo)
        _gemm_tiled(og, pc, kdim, wflat, gi * og * kdim, kdim, col, 0, pc, False, oflat,
                    (b * o + gi * og) * positions + r0 * last, positions, False)


# ------------------------------------------------------------------ window plan

@_jit
def _window_grid(geo):  # noqa: ANN001, ANN202
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
def _window_matrices(w, at_tap, width):  # noqa: ANN001, ANN202
    """w (O, C, T) with its taps at their grid columns: (O, C, width), zeros between."""
    o, cg, taps = w.shape
    wg = np.zeros((o, cg, width), w.dtype)
    for t in range(taps):
        wg[:, :, at_tap[t]] = w[:, :, t]
    return wg.reshape(wg.size)


@_jit
def _window_slot(x, out, wg, geo, at_position, width, batch, fgc, bgc, slot, items):  # noqa: ANN001, ANN202
    """Work items slot, slot + SLOTS, ... of the window plan: (group, `batch` images).
    Their padded grids side by side, out[b, :, p] for all b at once is, summed over
    channels c, Wg[:, c] (O, Qw) @ grid[b, c, p's column:][:Qw]^T: one GEMM per
    (position, channel), no im2col. For few positions and a large window."""
    in_sp, win, out_sp, _, lo, ld, rd = geo
    g, nb, o, positions = max(fgc, bgc), out.shape[0], out.shape[1], out.shape[2]
    og, cg = o // g, wg.size // (o * width)
    plane_sizes = (out_sp - 1) * geo[3] + (win - 1) * rd + 1
    plane = np.prod(plane_sizes)
    buf = np.zeros(batch * cg * plane, x.dtype)  # padding and holes stay zero
    res = np.empty(og * batch, x.dtype)
    for item in range(slot, items, SLOTS):
        gi, b0 = item % g, item // g * batch
        count = min(batch, nb - b0)
        for i in range(count):
            image, c0 = _image_of(b0 + i, gi, nb, cg, fgc, bgc)
            _fill_grid(x, image, c0, cg, buf[i * cg * plane:], plane_sizes, in_sp, lo, ld)
        for p in range(positions):
            for c in range(cg):
                _gemm_tiled(og, count, width, wg, (gi * og * cg + c) * width, cg * width, buf,
                            c * plane + at_position[p], cg * plane, True, res, 0, count, c > 0)
            for i in range(count):
                out[b0 + i, gi * og:(gi + 1) * og, p] = res[i:og * count:count]


# ------------------------------------------------------------------ entry points

EMPTY, AUTO, SHIFTED, IM2COL, WINDOW = 0, 1, 2, 3, 4


@_jit
def _choose(mode, w, out, geo):  # noqa: ANN001, ANN202
    in_sp, win, out_sp, st, _, _, rd = geo
    if out.size == 0 or w.shape[1] == 0 or w.shape[2] == 0:
        return EMPTY
    if mode != AUTO:
        return mode
    if _shifted_pays(w.shape[2], out.shape[2], win, out_sp, st, rd):
        return SHIFTED
    return WINDOW if np.prod(win) > out.shape[2] else IM2COL  # (weight gradients)


@_jit
def plan_with(mode, x, w, out, in_sizes, window, out_sizes, strides, pad_low,  # noqa: ANN001, ANN201
              lhs_dilation, rhs_dilation, feature_groups, batch_groups):
    """`conv_plan` with the plan forced (SHIFTED needs unit strides) or AUTO."""
    table = np.empty((7, len(in_sizes)), np.int64)  # one row per tuple
    for row, values in enumerate((in_sizes, window, out_sizes, strides, pad_low,
                                  lhs_dilation, rhs_dilation)):
        table[row] = _ints(values)
    geo = _rows(table)
    mode = _choose(mode, w, out, geo)
    units, rows = out.shape[0] * max(feature_groups, batch_groups), 0
    if out.size:
        rows = out.shape[2] // geo[2][-1]
    offsets, q, split, wmat = np.zeros(0, np.int64), 0, 1, w.reshape(w.size)
    if mode == EMPTY:
        out.reshape(out.size)[:] = 0  # empty sums (or nothing at all)
        units = 0
    elif mode == SHIFTED:
        offsets, q = _grid(geo[2], geo[1], geo[6], geo[2] + (geo[1] - 1) * geo[6])
        split, wmat = _parts(rows, units, SLOTS), _tap_matrices(w)
        units *= split
    elif mode == WINDOW:
        plane_sizes, offsets, at_tap, q = _window_grid(geo)
        wmat, groups = _window_matrices(w, at_tap, q), units // out.shape[0]
        split = max(1, min(-(-out.shape[0] * groups // SLOTS),
                           COLUMN_BUDGET // max(1, w.shape[1] * np.prod(plane_sizes))))
        units = groups * -(-out.shape[0] // split)
    else:
        kdim = w.shape[1] * w.shape[2]
        split = max(1, min(-(-rows // _parts(rows, units, SLOTS)),
                           COLUMN_BUDGET // max(1, kdim * geo[2][-1])))
        units *= -(-rows // split)
    meta = np.array([mode, units, split, q, feature_groups, batch_groups], np.int64)
    return meta, table, wmat, offsets


@_jit
def conv_plan(x, w, out, in_sizes, window, out_sizes, strides, pad_low, lhs_dilation,  # noqa: ANN001, ANN201
              rhs_dilation, feature_groups, batch_groups):
    """How to compute out (N', O, P) = the convolution of x (N, C, S) with w (O, C', T)
    in the canonical layout (spatial geometry in the tuples, one entry per spatial
    dim): (meta, geometry table, weights, tap offsets), whose work items `conv_slot`
    runs."""
    return plan_with(AUTO, x, w, out, in_sizes, window, out_sizes, strides, pad_low,
                     lhs_dilation, rhs_dilation, feature_groups, batch_groups)


@_jit
def conv_slots(meta):  # noqa: ANN001, ANN201
    """How many slots to run `conv_slot` for (in parallel)."""
    return min(SLOTS, meta[1])


@_jit
def _rows(table):  # noqa: ANN001, ANN202
    return table[0], table[1], table[2], table[3], table[4], table[5], table[6]


@_jit
def conv_slot(x, out, meta, table, wmat, offsets, slot):  # noqa: ANN001, ANN201
    """Run the plan's work items slot, slot + SLOTS, ... (each writes its own part of
    out); the plan is `conv_plan`'s result, unpacked (prange takes no tuples of arrays)."""
    mode, items, split, q, fgc, bgc = meta
    geo = _rows(table)
    if mode == SHIFTED:
        _shifted_slot(x, out, wmat, geo, offsets, q, split, fgc, bgc, slot, items)
    elif mode == WINDOW:
        _window_slot(x, out, wmat, geo, offsets, q, split, fgc, bgc, slot, items)
    elif mode == IM2COL:
        _im2col_slot(x, out, wmat, geo, split, fgc, bgc, slot, items)


@_jit
def widen_f16(bits):  # noqa: ANN001, ANN201
    """A float32 copy of a C-contiguous array of float16 bits (convolutions run in f32)."""
    out = np.empty(bits.shape, np.float32)
    src, dst = bits.reshape(bits.size), out.reshape(out.size)
    for i in range(src.size):
        dst[i] = f16_to_f32(src[i])
    return out


@_jit
def narrow_f16(values, bits):  # noqa: ANN001, ANN201
    """bits[...] = float16 bits of `values` (same shape, both C-contiguous)."""
    src, dst = values.reshape(values.size), bits.reshape(bits.size)
    for i in range(src.size):
        dst[i] = f16_bits(src[i])

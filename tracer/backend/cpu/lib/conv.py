"""numba kernels of `conv_general_dilated` for the cpu backend.

Generated code brings the operands to the canonical layout x (N, C, S),
w (O, C / feature_groups, T), out (N / batch_groups, O, P), the spatial dims
flattened, and calls `cpu.lib.conv_entry.convolution`, which runs `entry` here: a C
entry point per dtype, so the library is compiled once per dtype and never again
per generated module. `entry` picks a plan and runs it through the plan's own C entry
point (`entry_<plan>`), compiled the first time a convolution takes that plan: a
program compiles only the plans it runs. Copies are loops, never array assignments
(numba compiles a shape-mismatch error path for those: seconds). Each plan cuts its
work into cache-sized pieces that end in GEMMs (`cpu.lib.conv_core.gemm`: BLAS for
floats and complex, loops for integers) on `BLAS_THREADS` BLAS threads: the pieces
are small, and on a busy machine each multi-threaded call waits for a descheduled
thread (measurements: `cpu.lib.conv_core`). (A `parallel=True` version doubled the
compile time, and numba's cache crashes reloading parallel functions compiled for
several signatures, numba #8578: on several cores, generated code calls
`cpu.lib.conv_threads` instead, which runs this serial library once per thread.)

* winograd (3x3 windows, 2 spatial dims, unit strides, no dilation, real floats):
  F(4x4, 3x3), `cpu.lib.conv_winograd4`, 2.25 multiplies per output instead of 9;
  F(2x2, 3x3), `cpu.lib.conv_winograd`, 4 of them, for images of few 4x4 tiles or
  large ones (`winograd4_pays`).
  winograd_t, its transpose, for 3x3 outputs (kernel gradients of those),
  `cpu.lib.conv_winograd_t`; winograd4_t, F(4x4)'s, `cpu.lib.conv_winograd4_t`, for
  windows of enough 4x4 blocks and kernels (`winograd4_t_pays`).
* shifted (unit strides, few taps): a few images are written side by side into a
  zeroed padded (and lhs-dilated) grid; on it the output at every kernel tap is
  W[:, :, tap] @ grid[:, offset(tap):], accumulated: no im2col. The grid's columns
  go by tiles of whole grid rows, so that the accumulator stays in cache while every
  tap is added to it; grid columns that are no output position are computed and
  dropped when the tile is copied out.
* window (more taps than output positions, as in weight gradients;
  `cpu.lib.conv_window`): per output position one GEMM contracts the whole window,
  (images, window) times the kernel (O, window)^T. The windows are gathered along
  the outermost spatial dim once for every position on it (a position's window is a
  run of the gathered rows), so the input is copied about as often as there are
  positions in the other dims.
* im2col (the rest: strided convolutions): the columns of a block of output rows
  are gathered, zeros for padding, holes and reads past the end, then one GEMM.
  phased, its form for 2 spatial dims, strides and no lhs dilation: the columns are
  copied from the input split into its stride's phases (`cpu.lib.conv_phased`).

Every read is bounds-checked against the real input, so negative padding and partial
windows never touch memory outside the operands, and no product takes an input
element from outside its window (an inf there would turn a 0 weight into a NaN).
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit

from .cblas import blas_threads
from .conv_core import (  # noqa: F401
    AUTO,
    EMPTY,
    SWAPPED,
    ENTRY_POINTS,
    IM2COL,
    PHASED,
    SHIFTED,
    WINDOW,
    WINOGRAD,
    WINOGRAD4,
    WINOGRAD4_T,
    WINOGRAD_T,
    all_equal,
    call_plan,
    fill_grid,
    gemm,
    image_of,
    pack,
    pitches,
    plane_of,
    provide_entry_points,
    put_run,
    same,
    span,
    unpack,
    unravel,
    unswapped,
)
from .conv_phased import phased_im2col, phases_pay
from .conv_window import window
from .conv_winograd import winograd, winograd_pays
from .conv_winograd4 import winograd4, winograd4_pays
from .conv_winograd4_t import sizes as winograd4_t_sizes
from .conv_winograd4_t import winograd4_t, winograd4_t_pays
from .conv_winograd_t import sizes as winograd_t_sizes
from .conv_winograd_t import reads_in_place, winograd_t, winograd_t_pays

# called from compiled code only: no Python or C wrapper to generate (a tenth of a
# second of compile time each)
_jit = njit(cache=True, error_model="numpy", nogil=True, no_cpython_wrapper=True,
            no_cfunc_wrapper=True)
_py_jit = njit(cache=True, error_model="numpy", nogil=True)  # also called from Python (tests)
# a plan's body, typed inside its entry point: numba optimizes a jit function's whole
# call tree again at every level of calls, and generates its machine code again
_inlined = njit(cache=True, error_model="numpy", nogil=True, inline="always")
BLAS_THREADS = 1  # see the module docstring
TILE = 1 << 16  # elements of the shifted plan's accumulator tile (256 KiB of float32)
GRID = 1 << 19  # elements of its grid of images side by side
COLUMNS = 1 << 18  # elements of the im2col plan's gathered columns
WINDOWS = 1 << 20  # elements of the window plan's gathered windows
WINOGRAD_BLOCK = 1 << 18  # elements of the Winograd plan's transformed tiles


# ------------------------------------------------------------------ shifted plan

@_jit
def _grid(out_sp, win, rd, plane_sizes):
    """(tap offsets on the padded grid, grid columns Q spanning every output position)."""
    pitch = pitches(plane_sizes)
    n, taps = len(win), np.prod(win)
    offsets = np.zeros(taps, np.int64)
    k = np.zeros(n, np.int64)
    for t in range(taps):
        unravel(t, win, k)
        for d in range(n):
            offsets[t] += k[d] * rd[d] * pitch[d]
    q = 1
    for d in range(n):
        q += (out_sp[d] - 1) * pitch[d]
    return offsets, q


@_jit
def _output_row(row, out_sp, plane_sizes):
    """The output row (flat over all dims but the last) on grid row `row` of an image,
    -1 where that grid row holds no output positions."""
    flat, scale = 0, 1
    for d in range(len(out_sp) - 2, -1, -1):
        i = row % plane_sizes[d]
        row //= plane_sizes[d]
        if i >= out_sp[d]:
            return -1
        flat += i * scale
        scale *= out_sp[d]
    return flat


@_jit
def _scatter_tile(acc, tile, j0, n, plane_sizes, out, b0, o0, og, out_sp):
    """out[b0 + image, o0 + o, position] = acc[o * tile + column - j0] for the output
    positions among grid columns [j0, j0 + n) (whole grid rows; j0 starts one)."""
    width, last = plane_sizes[-1], out_sp[-1]
    rows = np.prod(plane_sizes) // width  # grid rows per image
    for r in range(j0 // width, (j0 + n + width - 1) // width):
        flat = _output_row(r % rows, out_sp, plane_sizes)
        if flat < 0:
            continue
        at = r * width - j0
        for o in range(og):  # (loops: an array assignment's error path compiles slowly)
            dst, src = out[b0 + r // rows, o0 + o], o * tile + at
            for j in range(last):
                dst[flat * last + j] = acc[src + j]


@_jit
def _tap_matrices(w):
    """w (O, C, T) as T contiguous (O, C) matrices, flat."""
    o, cg, taps = w.shape
    wt = np.empty((taps, o, cg), w.dtype)
    for t in range(taps):
        for i in range(o):
            for c in range(cg):
                wt[t, i, c] = w[i, c, t]
    return wt.reshape(wt.size)


@_inlined
def _shifted(x, out, wt, geo, offsets, q, chunk, tile, fgc, bgc):
    """The shifted plan, `chunk` images per grid, GEMMs `tile` grid columns wide; wt
    holds the taps' (O, C) matrices. A lone unpadded, undilated image is its own grid;
    a lone image without junk columns accumulates in the output itself."""
    in_sp, win, out_sp, _, lo, ld, rd = geo
    g, nb, o, taps = max(fgc, bgc), out.shape[0], out.shape[1], np.prod(win)
    og, cg, positions = o // g, wt.size // (o * taps), out.shape[2]
    plane_sizes = plane_of(out_sp, win, rd)  # the padded grid every tap's window fits on
    plane = np.prod(plane_sizes)
    own_grid = chunk == 1 and same(plane_sizes, in_sp) and all_equal(lo, 0) \
        and all_equal(ld, 1)
    own_acc = chunk == 1 and q == positions
    row = chunk * plane
    buf = np.zeros(0 if own_grid else cg * row, x.dtype)  # padding, holes stay zero
    acc = np.empty(0 if own_acc else og * tile, x.dtype)
    xflat, oflat = x.reshape(x.size), out.reshape(out.size)
    for gi in range(g):
        for b0 in range(0, nb, chunk):
            count = min(chunk, nb - b0)
            grid, g0 = (buf, 0)
            for i in range(count):
                image, c0 = image_of(b0 + i, gi, nb, cg, fgc, bgc)
                if own_grid:
                    grid, g0 = xflat, (image * x.shape[1] + c0) * plane
                else:
                    fill_grid(x, image, c0, cg, buf, i * plane, row, plane_sizes, in_sp, lo, ld)
            total = (count - 1) * plane + q
            for j0 in range(0, total, tile):
                n = min(tile, total - j0)
                target, t0, ldc = (oflat, (b0 * o + gi * og) * positions + j0, positions) \
                    if own_acc else (acc, 0, tile)
                for t in range(taps):
                    gemm(og, n, cg, wt, (t * o + gi * og) * cg, cg, grid, g0 + offsets[t] + j0,
                         row, False, target, t0, ldc, t > 0)
                if not own_acc:
                    _scatter_tile(acc, tile, j0, n, plane_sizes, out, b0, gi * og, og, out_sp)


@_jit
def _shifted_pays(taps, positions, win, out_sp, st, rd):
    """Unit strides, a grid not much larger than the output, not too many taps."""
    for d in range(len(st)):
        if st[d] != 1:
            return False
    plane = np.prod(plane_of(out_sp, win, rd))
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
def _fill_by_tap(x, image, c0, cg, col, p0, pc, geo):
    """col[(c, tap), position - p0] for the whole output rows [p0, p0 + pc) of channels
    [c0, c0 + cg) of x[image]; runs along the output's last dim."""
    in_sp, win, out_sp, st, lo, ld, rd = geo
    n, taps, run, size, rows = len(win), np.prod(win), out_sp[-1], in_sp[-1], pc // out_sp[-1]
    y, k, in_pitch = np.zeros(n, np.int64), np.zeros(n, np.int64), pitches(in_sp)
    bases, starts = np.empty((taps, rows), np.int64), np.empty(taps, np.int64)
    for t in range(taps):  # where each (tap, output row) reads: the same for every channel
        unravel(t, win, k)
        starts[t] = k[-1] * rd[-1] - lo[-1]
        for r in range(rows):
            unravel(p0 + r * run, out_sp, y)
            bases[t, r] = _source_base(y, k, st, lo, ld, rd, in_sp, in_pitch)
    src, plane = x.reshape(x.size), x.shape[2]
    for c in range(cg):
        s0 = (image * x.shape[1] + c0 + c) * plane
        for t in range(taps):
            inside = span(starts[t], st[-1], ld[-1], size, run)
            for r in range(rows):
                put_run(col, (c * taps + t) * pc + r * run, src, s0, bases[t, r], starts[t],
                        st[-1], ld[-1], size, inside, run)


@_inlined
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
            image, c0 = image_of(b, gi, nb, cg, fgc, bgc)
            for r0 in range(0, rows, block):
                pc = (min(rows, r0 + block) - r0) * last
                _fill_by_tap(x, image, c0, cg, col, r0 * last, pc, geo)
                gemm(og, pc, kdim, wflat, gi * og * kdim, kdim, col, 0, pc, False, oflat,
                     (b * o + gi * og) * positions + r0 * last, positions, False)


@_py_jit
def _choose(mode, x, w, out, geo, groups):
    """The plan: `mode` if forced (SHIFTED needs unit strides; WINOGRAD, WINOGRAD4,
    WINOGRAD_T and WINOGRAD4_T what `winograd_pays` and `winograd_t_pays` check but the
    sizes; PHASED 2 spatial dims, no lhs dilation), else the best."""
    in_sp, win, out_sp, st, _, _, rd = geo
    if out.size == 0 or w.shape[1] == 0 or w.shape[2] == 0:
        return EMPTY
    if mode != AUTO:
        return mode
    if winograd_pays(x, w, out, geo, groups):
        return WINOGRAD4 if winograd4_pays(out_sp, w.shape[1], out.shape[1] // groups) \
            else WINOGRAD
    if _shifted_pays(w.shape[2], out.shape[2], win, out_sp, st, rd):
        return SHIFTED
    if winograd_t_pays(x, w, out, geo, groups):  # (kernel gradients of 3x3 convolutions)
        return WINOGRAD4_T if winograd4_t_pays(win, out.shape[1] // groups) else WINOGRAD_T
    if np.prod(win) > out.shape[2]:
        return WINDOW  # (kernel gradients)
    return PHASED if phases_pay(geo) else IM2COL


@_inlined
def _run_shifted(x, w, out, geo, feature_groups, batch_groups):
    plane_sizes = plane_of(geo[2], geo[1], geo[6])
    offsets, q = _grid(geo[2], geo[1], geo[6], plane_sizes)
    plane, width = np.prod(plane_sizes), plane_sizes[-1]
    og, cg = out.shape[1] // max(feature_groups, batch_groups), w.shape[1]
    rows = max(1, TILE // max(1, og * width))  # grid rows per tile
    chunk = max(1, min(out.shape[0], rows * width // plane, GRID // max(1, cg * plane)))
    if same(plane_sizes, geo[0]) and all_equal(geo[4], 0) and all_equal(geo[5], 1):
        chunk = 1  # the input is its own grid: no copy
    tile = rows * width if w.shape[2] > 1 else chunk * plane  # one tap: nothing to keep
    _shifted(x, out, _tap_matrices(w), geo, offsets, q, chunk, tile, feature_groups,
             batch_groups)


@_py_jit
def run_winograd(x, w, out, geo, feature_groups, batch_groups):
    """`entry_winograd`'s plan from Python (tests)."""
    _run_winograd(x, w, out, geo, feature_groups, batch_groups)


@_py_jit
def run_winograd_t(x, w, out, geo, feature_groups, batch_groups, x_swapped, w_swapped, four):
    """`entry_winograd_t`'s plan (`entry_winograd4_t`'s where `four`) from Python (tests;
    swapped operands as `_unpack` has them)."""
    if four:
        _run_winograd4_t(x, w, out, geo, feature_groups, batch_groups, x_swapped, w_swapped)
    else:
        _run_winograd_t(x, w, out, geo, feature_groups, batch_groups, x_swapped, w_swapped)


@_inlined
def _run_winograd(x, w, out, geo, feature_groups, batch_groups):
    """The Winograd plan; the shifted one where it met an inf or a NaN."""
    og = out.shape[1] // max(feature_groups, batch_groups)
    half = (geo[2][1] + 1) // 2 + 1  # tiles per row of tiles
    tile_rows = max(1, WINOGRAD_BLOCK // (16 * (w.shape[1] + og) * half))
    if not winograd(x, out, w, geo, tile_rows, feature_groups, batch_groups):
        call_plan(SHIFTED, x, w, out, pack(x, w, out, geo, feature_groups, batch_groups))


@_py_jit
def run_winograd4(x, w, out, geo, feature_groups, batch_groups):
    """`entry_winograd4`'s plan from Python (tests)."""
    _run_winograd4(x, w, out, geo, feature_groups, batch_groups)


@_inlined
def _run_winograd4(x, w, out, geo, feature_groups, batch_groups):
    """The F(4x4, 3x3) Winograd plan; the shifted one where it met an inf or a NaN."""
    if not winograd4(x, out, w, geo, feature_groups, batch_groups):
        call_plan(SHIFTED, x, w, out, pack(x, w, out, geo, feature_groups, batch_groups))


@_inlined
def _run_winograd_t(x, w, out, geo, feature_groups, batch_groups, x_swapped, w_swapped):
    """The transposed Winograd plan (x, w swapped as `entry` says); the window one where
    it met an inf or a NaN."""
    chunk, batch = winograd_t_sizes(geo[1], w.shape[1], out.shape[0])
    if not winograd_t(x, out, w, geo, chunk, batch, feature_groups, batch_groups, x_swapped,
                      w_swapped):
        x, w = unswapped(x, x_swapped), unswapped(w, w_swapped)
        call_plan(WINDOW, x, w, out, pack(x, w, out, geo, feature_groups, batch_groups))


@_inlined
def _run_winograd4_t(x, w, out, geo, feature_groups, batch_groups, x_swapped, w_swapped):
    """F(4x4)'s transposed Winograd plan, as `_run_winograd_t`."""
    chunk, batch = winograd4_t_sizes(geo[1], w.shape[1], out.shape[0])
    if not winograd4_t(x, out, w, geo, chunk, batch, feature_groups, batch_groups, x_swapped,
                       w_swapped):
        x, w = unswapped(x, x_swapped), unswapped(w, w_swapped)
        call_plan(WINDOW, x, w, out, pack(x, w, out, geo, feature_groups, batch_groups))


@_inlined
def _run_window(x, w, out, geo, feature_groups, batch_groups):
    rows = ((geo[2][0] - 1) * geo[3][0]) // geo[6][0] + geo[1][0]
    per_image = rows * w.shape[1] * w.shape[2] // geo[1][0]
    batch = max(1, min(out.shape[0], WINDOWS // max(1, per_image)))
    window(x, out, w, geo, batch, feature_groups, batch_groups)


@_inlined
def _run_im2col(x, w, out, geo, feature_groups, batch_groups):
    rows = out.shape[2] // geo[2][-1]
    block = max(1, min(rows, COLUMNS // max(1, w.shape[1] * w.shape[2] * geo[2][-1])))
    _im2col(x, out, w.reshape(w.size), geo, block, feature_groups, batch_groups)


@_inlined
def _run_phased(x, w, out, geo, feature_groups, batch_groups):
    block = max(1, min(geo[2][0], COLUMNS // max(1, w.shape[1] * w.shape[2] * geo[2][1])))
    phased_im2col(x, out, w.reshape(w.size), geo, block, feature_groups, batch_groups)


def entry(x, w, out, meta):
    """The choosing C entry point behind `cpu.lib.conv_entry.convolution` (a `cfunc` per
    dtype; arguments as `_unpack` reads them): picks the plan (if meta's is AUTO) and
    runs it through its own entry point, on `BLAS_THREADS` BLAS threads."""
    x, w, out, geo, fgc, bgc, mode, table = unpack(x, w, out, meta)
    mode = _choose(mode, x, w, out, geo, max(fgc, bgc))
    if mode == EMPTY:
        flat = out.reshape(out.size)
        for i in range(flat.size):
            flat[i] = 0  # empty sums (or nothing at all)
        return
    previous = blas_threads(BLAS_THREADS)
    in_place = (mode == WINOGRAD_T or mode == WINOGRAD4_T) and reads_in_place(x)
    if not in_place and (table[SWAPPED] or table[SWAPPED + 1]):
        x, w = unswapped(x, table[SWAPPED]), unswapped(w, table[SWAPPED + 1])
        table = pack(x, w, out, geo, fgc, bgc)
    call_plan(mode, x, w, out, table)
    blas_threads(previous)


# the plans' C entry points (a `cfunc` per dtype, compiled when a convolution first
# takes the plan; arguments as `_unpack` reads them)

def entry_shifted(x, w, out, meta):
    x, w, out, geo, fgc, bgc, _, _ = unpack(x, w, out, meta)
    _run_shifted(x, w, out, geo, fgc, bgc)


def entry_im2col(x, w, out, meta):
    x, w, out, geo, fgc, bgc, _, _ = unpack(x, w, out, meta)
    _run_im2col(x, w, out, geo, fgc, bgc)


def entry_phased(x, w, out, meta):
    x, w, out, geo, fgc, bgc, _, _ = unpack(x, w, out, meta)
    _run_phased(x, w, out, geo, fgc, bgc)


def entry_window(x, w, out, meta):
    x, w, out, geo, fgc, bgc, _, _ = unpack(x, w, out, meta)
    _run_window(x, w, out, geo, fgc, bgc)


def entry_winograd(x, w, out, meta):
    x, w, out, geo, fgc, bgc, _, _ = unpack(x, w, out, meta)
    _run_winograd(x, w, out, geo, fgc, bgc)


def entry_winograd4(x, w, out, meta):
    x, w, out, geo, fgc, bgc, _, _ = unpack(x, w, out, meta)
    _run_winograd4(x, w, out, geo, fgc, bgc)


def entry_winograd_t(x, w, out, meta):
    x, w, out, geo, fgc, bgc, _, table = unpack(x, w, out, meta)
    _run_winograd_t(x, w, out, geo, fgc, bgc, table[SWAPPED], table[SWAPPED + 1])


def entry_winograd4_t(x, w, out, meta):
    x, w, out, geo, fgc, bgc, _, table = unpack(x, w, out, meta)
    _run_winograd4_t(x, w, out, geo, fgc, bgc, table[SWAPPED], table[SWAPPED + 1])


provide_entry_points({plan: globals()[name] for plan, name in ENTRY_POINTS.items()})

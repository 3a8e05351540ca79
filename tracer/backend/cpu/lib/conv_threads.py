"""The convolution on numba's thread pool: `convolution_parallel`.

`cpu.lib.conv`'s plans run on one thread, their GEMMs on one BLAS thread (see
`cpu.lib.conv_core` for why not more), so on several cores the convolution is cut
into parts that run side by side, each a whole convolution of its own through the
same C entry point (`cpu.lib.conv_entry.convolution`): the plans, their transforms
and their GEMMs all run on every thread, and the library itself stays serial (no
`parallel=True` code in it: see `cpu.lib.conv`). The parts share out

* IMAGES, x's and the output's batch dim: a part convolves its own images into its
  own rows of the output (a forward convolution, an input gradient);
* FEATURES, the contracted dim, where x and w both hold it first in memory (a kernel
  gradient: x (N, C, S) and the output gradient (N, O, S) read as (C, N, S) and
  (O, N, S)): a part sums its share of the images into an output of its own, and the
  parts' outputs are added (in another order than one thread adds them: the sums
  round differently).

Other convolutions (batch groups; a kernel gradient with feature groups) run on one
thread. Below `PARALLEL_MIN_PRODUCTS` multiply-adds of the direct sum, threads cost
more than they save, and the convolution runs as one call. Like the other kernels on
the pool, the parts do not follow the machine's load: where another process takes a
core, a part waits for its descheduled thread (on 2 cores shared with other jobs, some
runs of `bench_conv` took up to 6x the serial call's time, others half of it). The
1-minute load average, which decides BLAS's threads (`cpu.blas.machine_busy`), did not
tell those runs apart (1.5 in a slow one, 2.5 in a fast one).
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .cblas import blas_threads
from .conv_entry import convolution
from .pool_threads import pool_thread_count

_OPTIONS = dict(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
NO_SPLIT, IMAGES, FEATURES = range(3)
# multiply-adds of the direct sum below which a convolution stays on one thread (~1 ms
# of one core's direct sum; the Winograd plans take a fraction of that, still well
# above the ~50 us of a parallel launch)
PARALLEL_MIN_PRODUCTS = 1 << 23


def split_axis(x_swapped: bool, w_swapped: bool, feature_groups: int,
               batch_groups: int) -> int:
    """Which dim the parts share out (IMAGES, FEATURES or NO_SPLIT), for operands whose
    memory has dims 0 and 1 exchanged where `x_swapped` / `w_swapped` say."""
    if batch_groups == 1 and not x_swapped:
        return IMAGES  # (w is read whole by every part, swapped or not)
    if batch_groups == 1 and feature_groups == 1 and x_swapped and w_swapped:
        return FEATURES
    return NO_SPLIT


_split_axis = njit(**_OPTIONS)(split_axis)


@njit(**_OPTIONS)
def convolution_parallel(x, w, out, in_sizes, window, out_sizes, strides, pad_low,
                         lhs_dilation, rhs_dilation, feature_groups, batch_groups, x_swapped,
                         w_swapped):
    """`convolution` (the same arguments) in parts on numba's pool, as many as this
    thread's pool has threads (at most one per image of x's first dim in memory)."""
    axis = _split_axis(x_swapped, w_swapped, feature_groups, batch_groups)
    per_output = (w.shape[0] if w_swapped else w.shape[1]) * w.shape[2]
    parts = min(pool_thread_count(), x.shape[0])
    if axis == NO_SPLIT or parts < 2 or out.size * per_output < PARALLEL_MIN_PRODUCTS:
        convolution(x, w, out, in_sizes, window, out_sizes, strides, pad_low, lhs_dilation,
                    rhs_dilation, feature_groups, batch_groups, x_swapped, w_swapped)
        return
    previous = blas_threads(1)  # (a BLAS whose count is global: the parts keep it at 1)
    in_parts(x, w, out, axis, parts, in_sizes, window, out_sizes, strides, pad_low,
             lhs_dilation, rhs_dilation, feature_groups, w_swapped)
    blas_threads(previous)


@njit(**_OPTIONS)
def in_parts(x, w, out, axis, parts, in_sizes, window, out_sizes, strides, pad_low,
             lhs_dilation, rhs_dilation, feature_groups, w_swapped):
    """The convolution (`convolution`'s arguments, no batch groups) in `parts` parts on
    the pool, split along `axis` (IMAGES, or FEATURES for x and w both swapped and no
    feature groups: `split_axis`), whatever its size."""
    if axis == IMAGES:
        _by_images(x, w, out, parts, in_sizes, window, out_sizes, strides, pad_low,
                   lhs_dilation, rhs_dilation, feature_groups, w_swapped)
    else:
        _by_features(x, w, out, parts, in_sizes, window, out_sizes, strides, pad_low,
                     lhs_dilation, rhs_dilation)


@njit(parallel=True, **_OPTIONS)
def _by_images(x, w, out, parts, in_sizes, window, out_sizes, strides, pad_low,
               lhs_dilation, rhs_dilation, feature_groups, w_swapped):
    """Part p convolves images [p n / parts, (p + 1) n / parts) into those output rows."""
    n = x.shape[0]
    for p in prange(parts):
        b0, b1 = p * n // parts, (p + 1) * n // parts
        convolution(x[b0:b1], w, out[b0:b1], in_sizes, window, out_sizes, strides, pad_low,
                    lhs_dilation, rhs_dilation, feature_groups, 1, False, w_swapped)


@njit(parallel=True, **_OPTIONS)
def _by_features(x, w, out, parts, in_sizes, window, out_sizes, strides, pad_low,
                 lhs_dilation, rhs_dilation):
    """Part p sums the contracted entries [p n / parts, (p + 1) n / parts) of x and w
    (both swapped: those are their first dims in memory) into its own output (part 0
    into `out`), then the outputs are added into `out`."""
    n = x.shape[0]
    partial = np.empty((parts - 1, out.shape[0], out.shape[1], out.shape[2]), out.dtype)
    for p in prange(parts):
        b0, b1 = p * n // parts, (p + 1) * n // parts
        target = out if p == 0 else partial[p - 1]
        convolution(x[b0:b1], w[b0:b1], target, in_sizes, window, out_sizes, strides,
                    pad_low, lhs_dilation, rhs_dilation, 1, 1, True, True)
    total, sums = out.reshape(out.size), partial.reshape((parts - 1, out.size))
    for i in prange(out.size):
        for p in range(parts - 1):
            total[i] += sums[p, i]

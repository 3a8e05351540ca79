"""Batch norm kernels of the generated CPU code.

The operand is viewed as (outer, F, inner): the dims before the feature dim, the
features, the dims after it (C order, so a view of any C-contiguous operand).
Per-feature statistics take one pass over the data in memory order, accumulating
in float64 around a shift (each feature's first element), so the one-pass
variance E[(x-K)^2] - E[x-K]^2 does not cancel catastrophically; then one pass
normalizes. The formulas and their operation order are the references'
(`tracer.ops.batch_norm`), computed in float64 and rounded to the output dtype.

The `_parallel` kernels do the same on numba's thread pool, for modules that may run
threads: the sums a feature per iteration (each summed in the serial kernels' order,
so the results are bit for bit theirs), the element passes a row per iteration.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_jit = njit(cache=True, error_model="numpy")
# The per-feature sums may be reassociated, so LLVM vectorizes them (float64 sums:
# the order changes only the last bits); everything else is strict IEEE.
_sums = njit(cache=True, error_model="numpy", fastmath={"reassoc"})
_parallel = njit(cache=True, error_model="numpy", parallel=True)
_parallel_sums = njit(cache=True, error_model="numpy", fastmath={"reassoc"}, parallel=True)


@_sums
def _shifted_sums(x, centers):
    """Per feature: sum (x - c) and sum (x - c)^2 over (outer, inner), in float64."""
    outer, nf, inner = x.shape
    s1, s2 = np.zeros(nf), np.zeros(nf)
    for o in range(outer):
        for f in range(nf):
            c, a, b = centers[f], 0.0, 0.0
            for i in range(inner):
                d = np.float64(x[o, f, i]) - c
                a += d
                b += d * d
            s1[f] += a
            s2[f] += b
    return s1, s2


@_jit
def _normalize(x, mean, factor, offset, y):
    """y = (x - mean) * factor + offset, per feature."""
    outer, nf, inner = x.shape
    for o in range(outer):
        for f in range(nf):
            m, a, b = mean[f], factor[f], np.float64(offset[f])
            for i in range(inner):
                y[o, f, i] = (np.float64(x[o, f, i]) - m) * a + b


@_jit
def _centers(x):
    """Each feature's first element (the shift of its sums), zeros when x is empty."""
    outer, nf, inner = x.shape
    centers = np.zeros(nf)
    if outer * inner:
        for f in range(nf):
            centers[f] = x[0, f, 0]
    return centers


@_jit
def _statistics(s1, s2, centers, count, scale, epsilon, mean_out, var_out):
    """mean_out, var_out and (mean, scale / sqrt(var + epsilon)) in float64 from the
    shifted sums."""
    nf = s1.shape[0]
    mean, factor = np.empty(nf), np.empty(nf)
    for f in range(nf):
        shift = s1[f] / count  # (0/0 = NaN statistics for an empty reduction)
        var = s2[f] / count - shift * shift
        if var < 0.0:  # (rounding; NaN stays NaN)
            var = 0.0
        mean[f] = centers[f] + shift
        factor[f] = np.float64(scale[f]) / math.sqrt(var + epsilon)
        mean_out[f] = mean[f]
        var_out[f] = var
    return mean, factor


@_jit
def batch_norm_training(x, scale, offset, epsilon, y, mean_out, var_out):
    """Batch statistics of each feature of x (outer, F, inner), then y normalized."""
    centers = _centers(x)
    s1, s2 = _shifted_sums(x, centers)
    mean, factor = _statistics(s1, s2, centers, x.shape[0] * x.shape[2], scale, epsilon,
                               mean_out, var_out)
    _normalize(x, mean, factor, offset, y)


@_jit
def batch_norm_training_parallel(x, scale, offset, epsilon, y, mean_out, var_out):
    """`batch_norm_training` on the thread pool."""
    centers = _centers(x)
    s1, s2 = _shifted_sums_parallel(x, centers)
    mean, factor = _statistics(s1, s2, centers, x.shape[0] * x.shape[2], scale, epsilon,
                               mean_out, var_out)
    _normalize_parallel(x, mean, factor, offset, y)


@_parallel_sums
def _shifted_sums_parallel(x, centers):
    """`_shifted_sums`, a feature per iteration (its sums added in the same order)."""
    outer, nf, inner = x.shape
    s1, s2 = np.zeros(nf), np.zeros(nf)
    for f in prange(nf):
        c, t1, t2 = centers[f], 0.0, 0.0
        for o in range(outer):
            a, b = 0.0, 0.0
            for i in range(inner):
                d = np.float64(x[o, f, i]) - c
                a += d
                b += d * d
            t1 += a
            t2 += b
        s1[f], s2[f] = t1, t2
    return s1, s2


@_parallel
def _normalize_parallel(x, mean, factor, offset, y):
    """`_normalize`, a row (o, f) per iteration."""
    outer, nf, inner = x.shape
    for r in prange(outer * nf):
        o, f = r // nf, r % nf
        m, a, b = mean[f], factor[f], np.float64(offset[f])
        for i in range(inner):
            y[o, f, i] = (np.float64(x[o, f, i]) - m) * a + b


@_jit
def _inference_factors(scale, mean, variance, epsilon):
    nf = scale.shape[0]
    mean64, factor = np.empty(nf), np.empty(nf)
    for f in range(nf):
        mean64[f] = mean[f]
        factor[f] = np.float64(scale[f]) / math.sqrt(np.float64(variance[f]) + epsilon)
    return mean64, factor


@_jit
def batch_norm_inference(x, scale, offset, mean, variance, epsilon, y):
    """y = (x - mean) * scale / sqrt(variance + epsilon) + offset, per feature."""
    mean64, factor = _inference_factors(scale, mean, variance, epsilon)
    _normalize(x, mean64, factor, offset, y)


@_jit
def batch_norm_inference_parallel(x, scale, offset, mean, variance, epsilon, y):
    """`batch_norm_inference` on the thread pool."""
    mean64, factor = _inference_factors(scale, mean, variance, epsilon)
    _normalize_parallel(x, mean64, factor, offset, y)


@_sums
def _grad_sums(x, mean, dy):
    """Per feature: sum dy and sum dy (x - mean), in float64."""
    outer, nf, inner = x.shape
    sum_dy, sum_dyc = np.zeros(nf), np.zeros(nf)
    for o in range(outer):
        for f in range(nf):
            m, a, b = np.float64(mean[f]), 0.0, 0.0
            for i in range(inner):
                g = np.float64(dy[o, f, i])
                a += g
                b += g * (np.float64(x[o, f, i]) - m)
            sum_dy[f] += a
            sum_dyc[f] += b
    return sum_dy, sum_dyc


@_jit
def _grad_coefficients(sum_dy, sum_dyc, count, scale, mean, variance, epsilon, grad_scale,
                       grad_offset):
    """grad_scale, grad_offset, and per feature (coef, d, c, mean) of grad_x's formula."""
    nf = sum_dy.shape[0]
    coef, d, c, mu = np.empty(nf), np.empty(nf), np.empty(nf), np.empty(nf)
    for f in range(nf):
        rstd = 1.0 / math.sqrt(np.float64(variance[f]) + epsilon)
        d[f], c[f] = sum_dy[f] / count, sum_dyc[f] / count * rstd * rstd
        coef[f], mu[f] = np.float64(scale[f]) * rstd, mean[f]
        grad_scale[f] = sum_dyc[f] * rstd
        grad_offset[f] = sum_dy[f]
    return coef, d, c, mu


@_jit
def _grad_x_row(x, dy, o, f, k, grad_x):
    """grad_x of row (o, f) from the feature's coefficients k = (coef, d, c, mean)."""
    coef, d, c, mu = k[0][f], k[1][f], k[2][f], k[3][f]
    for i in range(x.shape[2]):
        grad_x[o, f, i] = coef * (np.float64(dy[o, f, i]) - d
                                  - c * (np.float64(x[o, f, i]) - mu))


@_jit
def batch_norm_grad(x, scale, mean, variance, dy, epsilon,
                    grad_x, grad_scale, grad_offset):
    """The seed's BatchNormGrad: one pass for the sums, one for grad_x."""
    outer, nf, inner = x.shape
    sum_dy, sum_dyc = _grad_sums(x, mean, dy)
    k = _grad_coefficients(sum_dy, sum_dyc, outer * inner, scale, mean, variance, epsilon,
                           grad_scale, grad_offset)
    for o in range(outer):
        for f in range(nf):
            _grad_x_row(x, dy, o, f, k, grad_x)


@_jit
def batch_norm_grad_parallel(x, scale, mean, variance, dy, epsilon,
                             grad_x, grad_scale, grad_offset):
    """`batch_norm_grad` on the thread pool."""
    outer, nf, inner = x.shape
    sum_dy, sum_dyc = _grad_sums_parallel(x, mean, dy)
    k = _grad_coefficients(sum_dy, sum_dyc, outer * inner, scale, mean, variance, epsilon,
                           grad_scale, grad_offset)
    _grad_x_parallel(x, dy, k, grad_x)


@_parallel_sums
def _grad_sums_parallel(x, mean, dy):
    """`_grad_sums`, a feature per iteration (its sums added in the same order)."""
    outer, nf, inner = x.shape
    sum_dy, sum_dyc = np.zeros(nf), np.zeros(nf)
    for f in prange(nf):
        m, t1, t2 = np.float64(mean[f]), 0.0, 0.0
        for o in range(outer):
            a, b = 0.0, 0.0
            for i in range(inner):
                g = np.float64(dy[o, f, i])
                a += g
                b += g * (np.float64(x[o, f, i]) - m)
            t1 += a
            t2 += b
        sum_dy[f], sum_dyc[f] = t1, t2
    return sum_dy, sum_dyc


@_parallel
def _grad_x_parallel(x, dy, k, grad_x):
    outer, nf = x.shape[0], x.shape[1]
    for r in prange(outer * nf):
        _grad_x_row(x, dy, r // nf, r % nf, k, grad_x)

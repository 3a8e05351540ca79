"""Batch norm kernels of the generated CPU code.

The operand is viewed as (outer, F, inner): the dims before the feature dim, the
features, the dims after it (C order, so a view of any C-contiguous operand).
Per-feature statistics take one pass over the data in memory order, accumulating
in float64 around a shift (each feature's first element), so the one-pass
variance E[(x-K)^2] - E[x-K]^2 does not cancel catastrophically; then one pass
normalizes. The formulas and their operation order are the references'
(`tracer.ops.batch_norm`), computed in float64 and rounded to the output dtype.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_jit = njit(cache=True, error_model="numpy")
# The per-feature sums may be reassociated, so LLVM vectorizes them (float64 sums:
# the order changes only the last bits); everything else is strict IEEE.
_sums = njit(cache=True, error_model="numpy", fastmath={"reassoc"})


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
def batch_norm_training(x, scale, offset, epsilon, y, mean_out, var_out):
    """Batch statistics of each feature of x (outer, F, inner), then y normalized."""
    outer, nf, inner = x.shape
    count = outer * inner
    centers = np.zeros(nf)
    if count:
        for f in range(nf):
            centers[f] = x[0, f, 0]
    s1, s2 = _shifted_sums(x, centers)
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
    _normalize(x, mean, factor, offset, y)


@_jit
def batch_norm_inference(x, scale, offset, mean, variance, epsilon, y):
    """y = (x - mean) * scale / sqrt(variance + epsilon) + offset, per feature."""
    nf = x.shape[1]
    mean64, factor = np.empty(nf), np.empty(nf)
    for f in range(nf):
        mean64[f] = mean[f]
        factor[f] = np.float64(scale[f]) / math.sqrt(np.float64(variance[f]) + epsilon)
    _normalize(x, mean64, factor, offset, y)


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
def batch_norm_grad(x, scale, mean, variance, dy, epsilon,
                    grad_x, grad_scale, grad_offset):
    """The seed's BatchNormGrad: one pass for the sums, one for grad_x."""
    outer, nf, inner = x.shape
    count = outer * inner
    sum_dy, sum_dyc = _grad_sums(x, mean, dy)
    coef, d, c, mu = np.empty(nf), np.empty(nf), np.empty(nf), np.empty(nf)
    for f in range(nf):
        rstd = 1.0 / math.sqrt(np.float64(variance[f]) + epsilon)
        d[f], c[f] = sum_dy[f] / count, sum_dyc[f] / count * rstd * rstd
        coef[f], mu[f] = np.float64(scale[f]) * rstd, mean[f]
        grad_scale[f] = sum_dyc[f] * rstd
        grad_offset[f] = sum_dy[f]
    for o in range(outer):
        for f in range(nf):
            for i in range(inner):
                grad_x[o, f, i] = coef[f] * (np.float64(dy[o, f, i]) - d[f]
                                             - c[f] * (np.float64(x[o, f, i]) - mu[f]))

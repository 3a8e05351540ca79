"""JVP / transpose / batching rules for fft, batch_norm_*, reduce_precision,
bitcast_convert_type.

fft is linear: its JVP is the fft of the tangent, and its transpose is JAX's
`_fft_transpose_rule`. The DFT matrix is symmetric, so FFT and IFFT are their own
transposes. Complex cotangents pair by Re(sum(ct * v)) (JAX's convention, as the
`real` / `imag` rules): an RFFT cotangent is zero-padded to the full length,
FFT'd, and its real part taken; an IRFFT cotangent is RFFT'd, the bins RFFT
de-duplicated (all but DC and Nyquist) doubled, scaled by 1 / prod(fft_length)
and conjugated.

reduce_precision is treated as linear, as JAX does (its tangent and cotangent are
reduce_precision'd too); bitcast_convert_type is not differentiable.

The batch norm JVPs differentiate the seed formulas, written with element-wise
ops, sums and broadcasts (linear in the tangents, so they transpose). The
batching rules fold the mapped axis into the feature dimension (B x F features),
which keeps one op per batch.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from . import elementwise as ew
from .ad import Zero, aval_of_value, deflinear, zeros_like_aval
from .batch_norm import batch_norm_grad_p, batch_norm_inference_p, batch_norm_training_p
from .bits import bitcast_convert_type_p, reduce_precision_p
from .fft import fft_p
from .shape import broadcast_in_dim_p, pad_p, reshape_p
from .shape_rules import at_front, batch_size, move_axis, sum_dims

Dims = tuple[int, ...]


# --------------------------------------------------------------------------- fft
def _rfft_transpose(ct: Any, fft_length: Dims) -> Any:
    """Transpose of "FFT, then keep the first n // 2 + 1 bins": pad, FFT, real part."""
    aval = aval_of_value(ct)
    missing = fft_length[-1] - aval.shape[-1]
    config = ((0, 0, 0),) * (aval.ndim - 1) + ((0, missing, 0),)
    full = pad_p.bind(ct, np.zeros((), aval.dtype), padding_config=config)
    return ew.real(fft_p.bind(full, fft_type="FFT", fft_length=fft_length))


def _irfft_transpose(ct: Any, fft_length: Dims) -> Any:
    """conj(RFFT(ct) * mask / prod(fft_length)), mask 2 on the bins RFFT de-duplicated."""
    x = fft_p.bind(ct, fft_type="RFFT", fft_length=fft_length)
    aval = aval_of_value(x)
    n, bins = fft_length[-1], aval.shape[-1]
    mask = np.full(bins, 2.0)
    mask[0] = 1.0
    if n % 2 == 0:
        mask[-1] = 1.0
    weights = (mask / np.prod(fft_length, dtype=np.float64)).astype(dtypes.real_dtype(aval.dtype))
    w = broadcast_in_dim_p.bind(weights, shape=aval.shape, broadcast_dimensions=(aval.ndim - 1,))
    return ew.complex(ew.mul(ew.real(x), w), ew.neg(ew.mul(ew.imag(x), w)))


def _fft_t(ct: Any, x: Any, *, fft_type: str, fft_length: Dims) -> list[Any]:
    if 0 in x.aval.shape or 0 in aval_of_value(ct).shape:
        return [zeros_like_aval(x.aval)]
    if fft_type == "RFFT":
        return [_rfft_transpose(ct, fft_length)]
    if fft_type == "IRFFT":
        return [_irfft_transpose(ct, fft_length)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_length=fft_length)]


def _fft_b(args: Sequence[Any], dims: Sequence[int | None], *, fft_type: str,
           fft_length: Dims) -> tuple[Any, int]:
    (x,), (d,) = args, dims
    if d >= aval_of_value(x).ndim - len(fft_length):  # a transformed axis: move it out
        x, d = move_axis(x, d, 0), 0
    return fft_p.bind(x, fft_type=fft_type, fft_length=fft_length), d


deflinear(fft_p, _fft_t)
fft_p.batch = _fft_b


# --------------------------------------------------------------------------- bits
def _reduce_precision_t(ct: Any, x: Any, **params: Any) -> list[Any]:
    return [reduce_precision_p.bind(ct, **params)]


def _same_axis(op: Any) -> Any:
    """Batching of an op that maps every operand axis to the same output axis."""
    def batch(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple[Any, int]:
        return op.bind(args[0], **params), dims[0]
    return batch


def _bitcast_b(args: Sequence[Any], dims: Sequence[int | None], *,
               new_dtype: np.dtype) -> tuple[Any, int]:
    (x,), (d,) = args, dims
    aval = aval_of_value(x)
    if new_dtype.itemsize > aval.dtype.itemsize and d == aval.ndim - 1:
        x, d = move_axis(x, d, 0), 0  # widening consumes the last axis: keep the batch out
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


deflinear(reduce_precision_p, _reduce_precision_t)
reduce_precision_p.batch = _same_axis(reduce_precision_p)
bitcast_convert_type_p.batch = _bitcast_b


# --------------------------------------------------------------------------- batch norm helpers
class _Features:
    """Per-feature arithmetic on an operand aval: broadcasts, sums and means over
    every dimension but `fi`. Tangent terms may be None (a symbolic zero)."""

    def __init__(self, x: Any, fi: int):
        aval = aval_of_value(x)
        self.shape, self.dtype, self.fi = aval.shape, aval.dtype, fi
        self.axes = tuple(d for d in range(aval.ndim) if d != fi)
        self.count = aval.size // aval.shape[fi] if aval.shape[fi] else 0

    def scalar(self, value: float) -> np.ndarray:
        return np.asarray(value, self.dtype)

    def full(self, v: Any) -> Any:
        if v is None:
            return None
        return broadcast_in_dim_p.bind(v, shape=self.shape, broadcast_dimensions=(self.fi,))

    def sum(self, x: Any) -> Any:
        return None if x is None else sum_dims(x, self.axes)

    def mean(self, x: Any) -> Any:
        inverse = 1.0 / self.count if self.count else np.nan  # 0/0, as the references
        return None if x is None else ew.mul(self.sum(x), self.scalar(inverse))


def _nz(t: Any) -> Any:
    return None if isinstance(t, Zero) else t


def _mul(a: Any, t: Any) -> Any:
    return None if t is None else ew.mul(a, t)


def _total(*terms: Any) -> Any:
    live = [t for t in terms if t is not None]
    return functools.reduce(ew.add, live) if live else None


def _neg(t: Any) -> Any:
    return None if t is None else ew.neg(t)


def _or_zero(t: Any, like: Any) -> Any:
    return Zero(aval_of_value(like)) if t is None else t


def _rstd(f: _Features, variance: Any, epsilon: float) -> Any:
    return ew.rsqrt(ew.add(variance, f.scalar(epsilon)))


def _d_rstd(f: _Features, r: Any, tvar: Any) -> Any:
    """d/dvar (var + eps)^-1/2 = -r^3 / 2."""
    return _mul(ew.mul(ew.mul(r, ew.mul(r, r)), f.scalar(-0.5)), tvar)


# --------------------------------------------------------------------------- batch norm JVPs
def _training_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, epsilon: float,
                  feature_index: int) -> tuple[list[Any], list[Any]]:
    x, scale, _ = primals
    tx, tscale, toffset = map(_nz, tangents)
    y, mean, var = batch_norm_training_p.bind(*primals, epsilon=epsilon,
                                              feature_index=feature_index)
    f = _Features(x, feature_index)
    r = _rstd(f, var, epsilon)
    centered = ew.sub(x, f.full(mean))
    tmean = f.mean(tx)
    tcentered = _total(tx, _neg(f.full(tmean)))
    tvar = _mul(f.scalar(2.0), f.mean(_mul(centered, tcentered)))
    # y = scale * centered * r + offset, differentiated factor by factor
    tnormalized = _total(_mul(f.full(r), tcentered), _mul(centered, f.full(_d_rstd(f, r, tvar))))
    ty = _total(_mul(f.full(scale), tnormalized),
                _mul(ew.mul(centered, f.full(r)), f.full(tscale)), f.full(toffset))
    outs = [y, mean, var]
    return outs, [_or_zero(t, o) for t, o in zip((ty, tmean, tvar), outs, strict=True)]


def _inference_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, epsilon: float,
                   feature_index: int) -> tuple[Any, Any]:
    x, scale, _, mean, var = primals
    tx, tscale, toffset, tmean, tvar = map(_nz, tangents)
    y = batch_norm_inference_p.bind(*primals, epsilon=epsilon, feature_index=feature_index)
    f = _Features(x, feature_index)
    r = _rstd(f, var, epsilon)
    factor = ew.mul(scale, r)
    centered = ew.sub(x, f.full(mean))
    # y = (x - mean) * (scale * r) + offset
    tfactor = _total(_mul(r, tscale), _mul(scale, _d_rstd(f, r, tvar)))
    ty = _total(_mul(f.full(factor), tx), _neg(f.full(_mul(factor, tmean))),
                _mul(centered, f.full(tfactor)), f.full(toffset))
    return y, _or_zero(ty, y)


def _grad_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, epsilon: float,
              feature_index: int) -> tuple[list[Any], list[Any]]:
    x, scale, mean, var, dy = primals
    tx, tscale, tmean, tvar, tdy = map(_nz, tangents)
    outs = batch_norm_grad_p.bind(*primals, epsilon=epsilon, feature_index=feature_index)
    f = _Features(x, feature_index)
    r = _rstd(f, var, epsilon)
    tr = _d_rstd(f, r, tvar)
    centered = ew.sub(x, f.full(mean))
    tcentered = _total(tx, _neg(f.full(tmean)))
    # s = sum dy * centered; c = s / N * r^2; g = dy - mean(dy) - c * centered
    s = f.sum(ew.mul(dy, centered))
    ts = f.sum(_total(_mul(centered, tdy), _mul(dy, tcentered)))
    inv_n = f.scalar(1.0 / f.count if f.count else np.nan)
    c = ew.mul(ew.mul(s, inv_n), ew.mul(r, r))
    two_r = ew.mul(r, f.scalar(2.0))  # d(r^2) = 2 r dr
    tc = _total(_mul(ew.mul(inv_n, ew.mul(r, r)), ts), _mul(ew.mul(ew.mul(s, inv_n), two_r), tr))
    g = ew.sub(ew.sub(dy, f.full(f.mean(dy))), ew.mul(f.full(c), centered))
    tg = _total(tdy, _neg(f.full(f.mean(tdy))), _neg(_mul(centered, f.full(tc))),
                _neg(_mul(f.full(c), tcentered)))
    # grad_operand = scale * r * g; grad_scale = s * r; grad_offset = sum dy
    tgx = _total(_mul(g, f.full(_total(_mul(r, tscale), _mul(scale, tr)))),
                 _mul(f.full(ew.mul(scale, r)), tg))
    tgs = _total(_mul(r, ts), _mul(s, tr))
    tgo = f.sum(tdy)
    return outs, [_or_zero(t, o) for t, o in zip((tgx, tgs, tgo), outs, strict=True)]


batch_norm_training_p.jvp = _training_jvp
batch_norm_inference_p.jvp = _inference_jvp
batch_norm_grad_p.jvp = _grad_jvp


# --------------------------------------------------------------------------- batch norm batching
def _fold_operand(x: Any, d: int | None, size: int, fi: int) -> Any:
    """An operand mapped at `d` as one operand of size*F features (batch-major)."""
    x = move_axis(at_front(x, d, size), 0, fi)
    shape = aval_of_value(x).shape
    return reshape_p.bind(x, new_sizes=shape[:fi] + (size * shape[fi + 1],) + shape[fi + 2:])


def _fold_vector(v: Any, d: int | None, size: int) -> Any:
    v = at_front(v, d, size)
    return reshape_p.bind(v, new_sizes=(size * aval_of_value(v).shape[1],))


def _unfold(outs: Sequence[Any], size: int, fi: int,
            kinds: str) -> tuple[list[Any], list[int]]:
    """Split the folded features of each output: "o" operand-shaped, "v" a vector."""
    results, out_dims = [], []
    for out, kind in zip(outs, kinds, strict=True):
        shape = aval_of_value(out).shape
        axis = fi if kind == "o" else 0
        new = shape[:axis] + (size, shape[axis] // size) + shape[axis + 1:]
        results.append(reshape_p.bind(out, new_sizes=new))
        out_dims.append(axis)
    return results, out_dims


def _batch_norm_b(op: Any, kinds_in: str, kinds_out: str) -> Any:
    """The batching rule of a batch norm op whose inputs are operand-shaped ("o") or
    per-feature vectors ("v")."""
    def batch(args: Sequence[Any], dims: Sequence[int | None], *, epsilon: float,
              feature_index: int) -> tuple[Any, Any]:
        size = batch_size(args, dims)
        folded = [_fold_operand(a, d, size, feature_index) if kind == "o"
                  else _fold_vector(a, d, size)
                  for a, d, kind in zip(args, dims, kinds_in, strict=True)]
        outs = op.bind(*folded, epsilon=epsilon, feature_index=feature_index)
        results, out_dims = _unfold(outs if op.multiple_results else [outs], size,
                                    feature_index, kinds_out)
        return (results, out_dims) if op.multiple_results else (results[0], out_dims[0])
    return batch


batch_norm_training_p.batch = _batch_norm_b(batch_norm_training_p, "ovv", "ovv")
batch_norm_inference_p.batch = _batch_norm_b(batch_norm_inference_p, "ovvvv", "o")
batch_norm_grad_p.batch = _batch_norm_b(batch_norm_grad_p, "ovvvo", "ovv")

"""BatchNormTraining, BatchNormInference, BatchNormGrad (XLA's operations of these names).

Feature `l` is index `l` of dimension `feature_index`; the statistics of a feature
are over every other dimension (count N = operand.size / F). With x the operand,
gamma = scale, beta = offset, eps = epsilon:

    mean_l = (1/N) sum x ;  var_l = (1/N) sum (x - mean_l)^2      (biased)
    y = gamma_l (x - mean_l) / sqrt(var_l + eps) + beta_l

The references compute in float64 (the cpu kernels accumulate in float64 too) and
round the results to the operand's dtype. An empty reduction (N = 0) gives NaN
statistics, as 0/0.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError, TracerIndexError
from .common import static_int, wrapper_error
from .registry import define_op

__all__ = ["batch_norm_training", "batch_norm_inference", "batch_norm_grad"]


# ---------------------------------------------------------------- shared rules

def _check(op: str, x: ShapedArray, vectors: dict[str, ShapedArray], feature_index: int,
           epsilon: float) -> ShapedArray:
    """The checks every batch norm op makes; returns the per-feature vectors' aval."""
    if not dtypes.is_float(x.dtype):
        raise DTypeError(f"{op} needs a floating-point operand, got {x}")
    if not 0 <= feature_index < x.ndim:
        raise TracerIndexError(f"feature_index {feature_index} is not a dimension of {x}")
    if not epsilon >= 0:
        raise ParamError(f"epsilon must be a non-negative float, got {epsilon}")
    vector = ShapedArray((x.shape[feature_index],), x.dtype)
    for name, v in vectors.items():
        if v.dtype != x.dtype:
            raise DTypeError(f"{name} {v} must have the operand's dtype ({x})")
        if v.shape != vector.shape:
            raise ShapeError(f"{name} must be a vector of the {vector.shape[0]} features "
                             f"(dimension {feature_index} of {x}), got {v}")
    return vector


def _axes(x: np.ndarray, feature_index: int) -> tuple[int, ...]:
    return tuple(d for d in range(x.ndim) if d != feature_index)


def _per_feature(v: np.ndarray, ndim: int, feature_index: int) -> np.ndarray:
    """A feature vector as float64, shaped to broadcast against the operand."""
    shape = [1] * ndim
    shape[feature_index] = -1
    return np.asarray(v, np.float64).reshape(shape)


def _params(op: str, epsilon: Any, feature_index: Any) -> dict[str, Any]:
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise wrapper_error(ParamError, op, f"epsilon must be a static float, got "
                            f"{epsilon!r}") from None
    return {"epsilon": eps, "feature_index": static_int(op, "feature_index", feature_index)}


# ---------------------------------------------------------------- training

def _training_shape(x: ShapedArray, scale: ShapedArray, offset: ShapedArray, *,
                    epsilon: float, feature_index: int) -> list[ShapedArray]:
    vector = _check("batch_norm_training", x, {"scale": scale, "offset": offset},
                    feature_index, epsilon)
    return [ShapedArray(x.shape, x.dtype), vector, vector]


def _training_impl(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, *, epsilon: float,
                   feature_index: int) -> list[np.ndarray]:
    fi, axes = feature_index, _axes(x, feature_index)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        count = x.size // max(x.shape[fi], 1)
        mean = x64.sum(axes) / count
        centered = x64 - _per_feature(mean, x.ndim, fi)
        var = (centered * centered).sum(axes) / count
        factor = np.asarray(scale, np.float64) / np.sqrt(var + epsilon)
        y = centered * _per_feature(factor, x.ndim, fi) + _per_feature(offset, x.ndim, fi)
    return [y.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)]


def batch_norm_training(operand: Any, scale: Any, offset: Any, epsilon: Any,
                        feature_index: Any) -> Any:
    """Normalize with the batch statistics of each feature: (output, batch_mean, batch_var).

    Seed rule: for feature l (index l of dimension feature_index), mean_l and the
    biased var_l are over all other dimensions, and
    y = scale_l (x - mean_l) / sqrt(var_l + epsilon) + offset_l.

    batch_norm_training(f32[[1, 2], [3, 6]], [1, 1], [0, 0], 0.0, 1)
      -> ([[-1, -1], [1, 1]], mean [2, 4], var [1, 4])
    """
    return tuple(batch_norm_training_p.bind(
        operand, scale, offset, **_params("batch_norm_training", epsilon, feature_index)))


batch_norm_training_p = define_op(
    "batch_norm_training", shape=_training_shape, impl=_training_impl, family="batch_norm",
    multiple_results=True, doc=inspect.cleandoc(batch_norm_training.__doc__ or ""))


# ---------------------------------------------------------------- inference

def _inference_shape(x: ShapedArray, scale: ShapedArray, offset: ShapedArray,
                     mean: ShapedArray, variance: ShapedArray, *, epsilon: float,
                     feature_index: int) -> ShapedArray:
    _check("batch_norm_inference", x, {"scale": scale, "offset": offset, "mean": mean,
                                       "variance": variance}, feature_index, epsilon)
    return ShapedArray(x.shape, x.dtype)


def _inference_impl(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, mean: np.ndarray,
                    variance: np.ndarray, *, epsilon: float, feature_index: int) -> np.ndarray:
    fi = feature_index
    with np.errstate(all="ignore"):
        factor = np.asarray(scale, np.float64) / np.sqrt(variance.astype(np.float64) + epsilon)
        centered = x.astype(np.float64) - _per_feature(mean, x.ndim, fi)
        y = centered * _per_feature(factor, x.ndim, fi) + _per_feature(offset, x.ndim, fi)
    return y.astype(x.dtype)


def batch_norm_inference(operand: Any, scale: Any, offset: Any, mean: Any, variance: Any,
                         epsilon: Any, feature_index: Any) -> Any:
    """Normalize with the given per-feature mean and variance.

    Seed rule: as batch_norm_training with the supplied statistics:
    y = scale_l (x - mean_l) / sqrt(variance_l + epsilon) + offset_l.

    batch_norm_inference(f32[[1, 2], [3, 6]], [2, 1], [0, 1], [2, 4], [1, 4], 0.0, 1)
      -> [[-2, 0], [2, 2]]
    """
    return batch_norm_inference_p.bind(
        operand, scale, offset, mean, variance,
        **_params("batch_norm_inference", epsilon, feature_index))


batch_norm_inference_p = define_op(
    "batch_norm_inference", shape=_inference_shape, impl=_inference_impl,
    family="batch_norm", doc=inspect.cleandoc(batch_norm_inference.__doc__ or ""))


# ---------------------------------------------------------------- grad

def _grad_shape(x: ShapedArray, scale: ShapedArray, mean: ShapedArray, variance: ShapedArray,
                grad_output: ShapedArray, *, epsilon: float,
                feature_index: int) -> list[ShapedArray]:
    vector = _check("batch_norm_grad", x, {"scale": scale, "mean": mean,
                                           "variance": variance}, feature_index, epsilon)
    if (grad_output.shape, grad_output.dtype) != (x.shape, x.dtype):
        raise ShapeError(f"grad_output {grad_output} must have the operand's shape and "
                         f"dtype ({x})")
    return [ShapedArray(x.shape, x.dtype), vector, vector]


def _grad_impl(x: np.ndarray, scale: np.ndarray, mean: np.ndarray, variance: np.ndarray,
               grad_output: np.ndarray, *, epsilon: float,
               feature_index: int) -> list[np.ndarray]:
    fi, axes = feature_index, _axes(x, feature_index)
    dy = grad_output.astype(np.float64)
    with np.errstate(all="ignore"):
        count = x.size // max(x.shape[fi], 1)
        centered = x.astype(np.float64) - _per_feature(mean, x.ndim, fi)
        rstd = 1.0 / np.sqrt(variance.astype(np.float64) + epsilon)
        sum_dy, sum_dy_centered = dy.sum(axes), (dy * centered).sum(axes)
        d = sum_dy / count
        c = sum_dy_centered / count * rstd * rstd
        gx = _per_feature(np.asarray(scale, np.float64) * rstd, x.ndim, fi) * (
            dy - _per_feature(d, x.ndim, fi) - _per_feature(c, x.ndim, fi) * centered)
        g_scale = sum_dy_centered * rstd
    return [gx.astype(x.dtype), g_scale.astype(x.dtype), sum_dy.astype(x.dtype)]


def batch_norm_grad(operand: Any, scale: Any, mean: Any, variance: Any, grad_output: Any,
                    epsilon: Any, feature_index: Any) -> Any:
    """Gradients of batch_norm_training: (grad_operand, grad_scale, grad_offset).

    Seed rule, per feature l with N elements, sums over the other dimensions:
    c_l = (1/N) sum dy (x - mean_l) / (var_l + eps), d_l = (1/N) sum dy,
    dx = scale_l / sqrt(var_l + eps) (dy - d_l - c_l (x - mean_l)),
    dscale_l = sum dy (x - mean_l) / sqrt(var_l + eps), doffset_l = sum dy.

    batch_norm_grad(f32[[1], [3]], [1], [2], [1], f32[[1], [0]], 0.0, 1)
      -> ([[0], [0]], dscale [-1], doffset [1])
    """
    return tuple(batch_norm_grad_p.bind(operand, scale, mean, variance, grad_output,
                                        **_params("batch_norm_grad", epsilon, feature_index)))


batch_norm_grad_p = define_op(
    "batch_norm_grad", shape=_grad_shape, impl=_grad_impl, family="batch_norm",
    multiple_results=True, doc=inspect.cleandoc(batch_norm_grad.__doc__ or ""))

# (last: the rules module imports this one) The op records arrive with their JVP /
# transpose / batching rules, however this module was first imported.
from . import numerics_rules  # noqa: E402,F401

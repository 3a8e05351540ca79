"""`tracer.nn`: JAX's `jax.nn` activations and helpers, with JAX's derivatives at
their kinks (relu'(0) = 0, softplus'(0) = 1/2), and `tracer.nn.initializers`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import numpy as tnp
from .. import ops
from ..scipy.special import log_softmax as _log_softmax
from ..scipy.special import logsumexp
from . import initializers

__all__ = ["relu", "relu6", "gelu", "silu", "swish", "sigmoid", "softplus", "log_sigmoid",
           "tanh", "elu", "selu", "leaky_relu", "softmax", "log_softmax", "logsumexp", "one_hot",
           "standardize", "initializers"]


def _float(x: Any) -> Any:
    x = tnp.asarray(x)
    return x if tnp.issubdtype(x.dtype, tnp.inexact) else tnp.asarray(x, tnp.float64)


def relu(x: Any) -> Any:
    """max(x, 0); its derivative at 0 is 0, as JAX's."""
    x = _float(x)
    return tnp.where(x > 0, x, 0.0 * x)


def relu6(x: Any) -> Any:
    """min(max(x, 0), 6), derivative 0 at both kinks."""
    x = _float(x)
    return tnp.where((x > 0) & (x < 6), x, tnp.where(x >= 6, 6.0, 0.0) + 0.0 * x)


def sigmoid(x: Any) -> Any:
    return ops.logistic(_float(x))


def softplus(x: Any) -> Any:
    """log(1 + exp(x)) = logaddexp(x, 0) (derivative 1/2 at 0)."""
    return tnp.logaddexp(_float(x), 0.0)


def log_sigmoid(x: Any) -> Any:
    return -softplus(-_float(x))


def silu(x: Any) -> Any:
    x = _float(x)
    return x * sigmoid(x)


swish = silu


def tanh(x: Any) -> Any:
    return tnp.tanh(x)


def gelu(x: Any, approximate: bool = True) -> Any:
    """x * Phi(x); `approximate=True` (JAX's default) is the tanh form."""
    x = _float(x)
    if approximate:
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
        return 0.5 * x * (1.0 + tnp.tanh(inner))
    from ..scipy.special import erf
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def elu(x: Any, alpha: float = 1.0) -> Any:
    x = _float(x)
    return tnp.where(x > 0, x, alpha * tnp.expm1(tnp.where(x > 0, 0.0, x)))


def selu(x: Any) -> Any:
    """Scaled ELU with the constants of Klambauer et al. (JAX's `jax.nn.selu`)."""
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Any:
    x = _float(x)
    return tnp.where(x >= 0, x, negative_slope * x)


def softmax(x: Any, axis: Any = -1) -> Any:
    return tnp.exp(log_softmax(x, axis))


def log_softmax(x: Any, axis: Any = -1) -> Any:
    return _log_softmax(x, axis)


def one_hot(x: Any, num_classes: int, dtype: Any = np.float64, axis: int = -1) -> Any:
    """`x[..., None] == arange(num_classes)` as `dtype` (out-of-range classes: all 0)."""
    x = tnp.asarray(x)
    classes = tnp.arange(num_classes)
    hit = tnp.expand_dims(x, axis) == tnp.expand_dims(classes, tuple(
        i for i in range(x.ndim + 1) if i != (axis % (x.ndim + 1))))
    return tnp.asarray(hit, dtype)


def standardize(x: Any, axis: Any = -1, mean: Any = None, variance: Any = None,
                epsilon: float = 1e-5) -> Any:
    """(x - mean) / sqrt(variance + epsilon) over `axis`."""
    x = _float(x)
    if mean is None:
        mean = tnp.mean(x, axis, keepdims=True)
    if variance is None:
        variance = tnp.mean(tnp.square(x), axis, keepdims=True) - tnp.square(mean)
    return (x - mean) / tnp.sqrt(variance + epsilon)

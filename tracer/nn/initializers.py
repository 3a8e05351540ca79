"""`tracer.nn.initializers`: JAX's initializer factories. Each returns
`init(key, shape, dtype=float64)` drawing from `tracer.random` with JAX's
derivations (so a key gives `jax.nn.initializers`' numbers in x64 mode)."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from .. import numpy as tnp
from .. import random
from ..errors import TracerValueError

__all__ = ["zeros", "ones", "constant", "normal", "uniform", "truncated_normal",
           "variance_scaling", "glorot_normal", "glorot_uniform", "xavier_normal",
           "xavier_uniform", "lecun_normal", "lecun_uniform", "he_normal", "he_uniform",
           "kaiming_normal", "kaiming_uniform"]

Initializer = Callable[..., Any]


def zeros(key: Any, shape: Sequence[int], dtype: Any = np.float64) -> Any:
    return tnp.zeros(shape, dtype)


def ones(key: Any, shape: Sequence[int], dtype: Any = np.float64) -> Any:
    return tnp.ones(shape, dtype)


def constant(value: Any, dtype: Any = np.float64) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return tnp.full(shape, value, dtype)
    return init


def normal(stddev: float = 1e-2, dtype: Any = np.float64) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return random.normal(key, shape, dtype) * stddev
    return init


def uniform(scale: float = 1e-2, dtype: Any = np.float64) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return random.uniform(key, shape, dtype) * scale
    return init


def truncated_normal(stddev: float = 1e-2, dtype: Any = np.float64, lower: float = -2.0,
                     upper: float = 2.0) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return random.truncated_normal(key, lower, upper, shape, dtype) * stddev
    return init


def _fans(shape: Sequence[int], in_axis: int, out_axis: int) -> tuple[float, float]:
    if len(shape) < 1:
        return 1.0, 1.0
    receptive = math.prod(d for i, d in enumerate(shape)
                          if i not in (in_axis % len(shape), out_axis % len(shape)))
    return shape[in_axis] * receptive, shape[out_axis] * receptive


def variance_scaling(scale: float, mode: str, distribution: str, in_axis: int = -2,
                     out_axis: int = -1, dtype: Any = np.float64) -> Initializer:
    """JAX's variance_scaling: variance scale / fan (fan_in, fan_out or fan_avg), from
    a truncated normal (stddev corrected by 0.87962566103423978), a normal or a
    uniform distribution."""
    if mode not in ("fan_in", "fan_out", "fan_avg") or distribution not in (
            "truncated_normal", "normal", "uniform"):
        raise TracerValueError(f"variance_scaling: invalid mode {mode!r} or distribution "
                               f"{distribution!r}")

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape = tuple(shape)
        fan_in, fan_out = _fans(shape, in_axis, out_axis)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = np.asarray(scale / fan, dtype)
        if distribution == "truncated_normal":
            stddev = np.asarray(np.sqrt(variance) / np.asarray(.87962566103423978, dtype), dtype)
            return random.truncated_normal(key, -2.0, 2.0, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * np.sqrt(variance)
        return random.uniform(key, shape, dtype, -1.0, 1.0) * np.sqrt(3 * variance)
    return init


def glorot_uniform(in_axis: int = -2, out_axis: int = -1, dtype: Any = np.float64) -> Initializer:
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, dtype)


def glorot_normal(in_axis: int = -2, out_axis: int = -1, dtype: Any = np.float64) -> Initializer:
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, dtype)


def lecun_uniform(in_axis: int = -2, out_axis: int = -1, dtype: Any = np.float64) -> Initializer:
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, dtype)


def lecun_normal(in_axis: int = -2, out_axis: int = -1, dtype: Any = np.float64) -> Initializer:
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, dtype)


def he_uniform(in_axis: int = -2, out_axis: int = -1, dtype: Any = np.float64) -> Initializer:
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, dtype)


def he_normal(in_axis: int = -2, out_axis: int = -1, dtype: Any = np.float64) -> Initializer:
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal

"""`tracer.example_libraries.stax`: JAX's small neural-network library
(`jax.example_libraries.stax`) on `tracer.numpy`, `tracer.ops` and `tracer.random`.

A layer is an `(init_fun, apply_fun)` pair: `init_fun(rng, input_shape)` returns
`(output_shape, params)` (a batch dim may be -1), `apply_fun(params, inputs, **kwargs)`
applies it. Keys are split as JAX's stax splits them, so the same key gives the same
parameters as JAX with `jax_enable_x64` (tracer's float64 default).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

from .. import numpy as jnp
from .. import ops, random
from ..errors import TracerValueError
from ..nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                  softplus, standardize)
from ..nn.initializers import glorot_normal, normal, ones, zeros

__all__ = ["Dense", "GeneralConv", "Conv", "GeneralConvTranspose", "Conv1DTranspose",
           "ConvTranspose", "BatchNorm", "elementwise", "Tanh", "Relu",
           "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu",
           "Gelu", "MaxPool", "SumPool", "AvgPool", "Flatten", "Identity", "FanOut",
           "FanInSum", "FanInConcat", "Dropout", "serial", "parallel", "shape_dependent",
           "glorot", "randn", "logsoftmax", "relu", "log_softmax", "softmax", "softplus",
           "sigmoid", "elu", "leaky_relu", "selu", "gelu", "standardize"]

Layer = tuple[Callable[..., Any], Callable[..., Any]]

# JAX's aliases (stax's older names)
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim: int, W_init: Any = glorot_normal(), b_init: Any = normal()) -> Layer:
    """A fully-connected layer: inputs @ W + b."""
    def init_fun(rng: Any, input_shape: Sequence[int]) -> Any:
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                padding: Any = "VALID", W_init: Any = None, b_init: Any = normal(1e-6)) -> Layer:
    """A convolution with the given (lhs, rhs, out) layout strings, e.g. NHWC/HWIO/NHWC."""
    one = (1,) * len(filter_shape)

    def conv(x: Any, w: Any, strides: Sequence[int], padding: Any, dn: Any) -> Any:
        return ops.conv_general_dilated(x, w, strides, padding, one, one, dimension_numbers=dn)
    return _conv_layer(ops.conv_general_shape_tuple, conv, dimension_numbers, out_chan,
                       filter_shape, strides, padding, W_init, b_init)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int,
                         filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                         padding: Any = "VALID", W_init: Any = None,
                         b_init: Any = normal(1e-6)) -> Layer:
    """A transposed convolution (`ops.conv_transpose`) with the given layouts."""
    def conv(x: Any, w: Any, strides: Sequence[int], padding: Any, dn: Any) -> Any:
        return ops.conv_transpose(x, w, strides, padding, dimension_numbers=dn)
    return _conv_layer(ops.conv_transpose_shape_tuple, conv, dimension_numbers, out_chan,
                       filter_shape, strides, padding, W_init, b_init)


def _conv_layer(shape_tuple: Callable[..., Any], conv: Callable[..., Any],
                dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], strides: Sequence[int] | None, padding: Any,
                W_init: Any, b_init: Any) -> Layer:
    """The layer of a convolution `conv` whose output shape `shape_tuple` gives."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    strides = strides or (1,) * len(filter_shape)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng: Any, input_shape: Sequence[int]) -> Any:
        spatial = iter(filter_shape)
        kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")]
                        if c == "I" else next(spatial) for c in rhs_spec]
        output_shape = shape_tuple(input_shape, kernel_shape, strides, padding,
                                   dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        W, b = params
        # the convolution wants one dtype, as XLA's; promote as tracer.numpy does, so
        # float32 data meets the float64 parameters of tracer's initializers
        dtype = jnp.result_type(inputs, W)
        return conv(jnp.asarray(inputs, dtype), jnp.asarray(W, dtype), strides, padding,
                    dimension_numbers) + b
    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis: Any = (0, 1, 2), epsilon: float = 1e-5, center: bool = True,
              scale: bool = True, beta_init: Any = zeros, gamma_init: Any = ones) -> Layer:
    """Standardize over `axis`, then scale by gamma and shift by beta (learned)."""
    axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

    def init_fun(rng: Any, input_shape: Sequence[int]) -> Any:
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params: Any, x: Any, **kwargs: Any) -> Any:
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[ed] * z
        return z + beta[ed] if center else z
    return init_fun, apply_fun


def elementwise(fun: Callable[..., Any], **fun_kwargs: Any) -> Layer:
    """A layer without parameters applying `fun` to its inputs."""
    def init_fun(rng: Any, input_shape: Any) -> Any:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _full_window(window_shape: Sequence[int], strides: Sequence[int] | None,
                 spec: str | None) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, int]]:
    """The window and strides over every dim: 1 on the batch and feature dims."""
    window, steps = tuple(window_shape), tuple(strides or (1,) * len(window_shape))
    non_spatial = (0, len(window) + 1) if spec is None else (spec.index("N"), spec.index("C"))
    for i in sorted(non_spatial):
        window, steps = window[:i] + (1,) + window[i:], steps[:i] + (1,) + steps[i:]
    return window, steps, non_spatial


def _pooling_layer(reducer: Callable[..., Any], init_val: float,
                   rescaled: bool = False) -> Callable[..., Layer]:
    def PoolingLayer(window_shape: Sequence[int], strides: Sequence[int] | None = None,
                     padding: Any = "VALID", spec: str | None = None) -> Layer:
        """A pooling layer (reduce_window over the spatial dims)."""
        window, steps, non_spatial = _full_window(window_shape, strides, spec)

        def init_fun(rng: Any, input_shape: Sequence[int]) -> Any:
            pads = ops.padtype_to_pads(input_shape, window, steps, padding)
            ones_ = (1,) * len(window)
            return ops.reduce_window_shape_tuple(input_shape, window, steps, pads, ones_,
                                                 ones_), ()

        def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
            out = ops.reduce_window(inputs, init_val, reducer, window, steps, padding)
            if not rescaled:
                return out
            return out / _window_sizes(inputs, window_shape, strides, padding, non_spatial)
        return init_fun, apply_fun
    return PoolingLayer


def _window_sizes(inputs: Any, window_shape: Sequence[int], strides: Sequence[int] | None,
                  padding: Any, non_spatial: tuple[int, int]) -> Any:
    """How many input elements each output window of AvgPool covers (padding excluded)."""
    spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
    one = jnp.ones(spatial_shape, dtype=inputs.dtype)
    sizes = ops.reduce_window(one, 0.0, ops.add, tuple(window_shape),
                              tuple(strides or (1,) * len(window_shape)), padding)
    for i in sorted(non_spatial):
        sizes = jnp.expand_dims(sizes, i)
    return sizes


MaxPool = _pooling_layer(ops.max, -math.inf)
SumPool = _pooling_layer(ops.add, 0.0)
AvgPool = _pooling_layer(ops.add, 0.0, rescaled=True)


def _flatten() -> Layer:
    def init_fun(rng: Any, input_shape: Sequence[int]) -> Any:
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.reshape(inputs, (inputs.shape[0], -1))
    return init_fun, apply_fun


Flatten = _flatten()
Identity = elementwise(lambda x: x)


def FanOut(num: int) -> Layer:
    """`num` copies of the input (for `parallel`)."""
    def init_fun(rng: Any, input_shape: Any) -> Any:
        return [input_shape] * num, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return [inputs] * num
    return init_fun, apply_fun


def _fan_in_sum() -> Layer:
    def init_fun(rng: Any, input_shape: Any) -> Any:
        return input_shape[0], ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return sum(inputs)
    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis: int = -1) -> Layer:
    """Concatenate a list of inputs along `axis`."""
    def init_fun(rng: Any, input_shape: Any) -> Any:
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:
    """Keep each input with probability `rate` (scaled by 1/rate) in 'train' mode; apply_fun
    needs `rng=` then, as JAX's."""
    def init_fun(rng: Any, input_shape: Any) -> Any:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.get("rng")
        if rng is None:
            raise TracerValueError("stax.Dropout: apply_fun needs a PRNG key in 'train' mode: "
                                   "apply_fun(params, inputs, rng=key)")
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)
    return init_fun, apply_fun


def _layer_rngs(kwargs: dict[str, Any], n: int) -> Any:
    rng = kwargs.pop("rng", None)
    return random.split(rng, n) if rng is not None else (None,) * n


def serial(*layers: Layer) -> Layer:
    """The layers one after the other; each gets its own key from a split chain."""
    init_funs, apply_funs = zip(*layers, strict=True)

    def init_fun(rng: Any, input_shape: Any) -> Any:
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rngs = _layer_rngs(kwargs, len(layers))
        for fun, param, rng in zip(apply_funs, params, rngs, strict=True):
            inputs = fun(param, inputs, rng=rng, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """The layers side by side: a list of inputs in, a list of outputs out."""
    init_funs, apply_funs = zip(*layers, strict=True)

    def init_fun(rng: Any, input_shape: Any) -> Any:
        rngs = random.split(rng, len(layers))
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape,
                                                               strict=True)], strict=True)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rngs = _layer_rngs(kwargs, len(layers))
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs, strict=True)]
    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[Any], Layer]) -> Layer:
    """A layer built from the input shape once it is known."""
    def init_fun(rng: Any, input_shape: Any) -> Any:
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun

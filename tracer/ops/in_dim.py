"""`jax.lax`'s convenience wrappers that JAX users type daily: slicing along one
dimension (`dynamic_slice_in_dim`, `dynamic_update_slice_in_dim`,
`dynamic_index_in_dim`, `index_in_dim`) and the output shapes of convolution and
reduce_window (`conv_general_shape_tuple`, `reduce_window_shape_tuple`), read off
the ops' own shape rules."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core import ShapedArray
from ..tracing import trace_flat
from .conv import conv_general_dilated
from .indexing import dynamic_slice, dynamic_update_slice
from .shape import reshape
from .window import reduce_window

__all__ = ["dynamic_slice_in_dim", "dynamic_update_slice_in_dim", "dynamic_index_in_dim",
           "index_in_dim", "conv_general_shape_tuple", "reduce_window_shape_tuple"]


def _rank(x: Any) -> int:
    return len(np.shape(x))


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0) -> Any:
    """`slice_size` entries of `operand` from `start_index` along `axis` (a
    dynamic_slice that keeps every other dim whole)."""
    shape = list(np.shape(operand))
    axis %= len(shape)
    starts = [0] * len(shape)
    starts[axis] = start_index
    shape[axis] = slice_size
    return dynamic_slice(operand, starts, shape)


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int) -> Any:
    """`operand` with `update` written from `start_index` along `axis`."""
    axis %= _rank(operand)
    starts: list[Any] = [0] * _rank(operand)
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True) -> Any:
    """Entry `index` (a runtime value) along `axis`."""
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else _drop(out, axis % _rank(operand))


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """Entry `index` (a static int, negative counts from the end) along `axis`."""
    size = np.shape(operand)[axis]
    return dynamic_index_in_dim(operand, index % size, axis, keepdims)


def _drop(x: Any, axis: int) -> Any:
    shape = np.shape(x)
    return reshape(x, shape[:axis] + shape[axis + 1:])


def _out_shape(fn: Any, *shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape rule's answer; a -1 dim (a batch size not known yet, as stax's
    `(-1, 784)`) is traced as 1 and as 2, and the output dims that follow it are -1."""
    def trace(unknown: int) -> tuple[int, ...]:
        avals = [ShapedArray(tuple(unknown if d == -1 else d for d in s), np.float32)
                 for s in shapes]
        graph, _ = trace_flat(lambda *xs: [fn(*xs)], avals)
        return graph.out_avals[0].shape
    one = trace(1)
    if not any(d == -1 for s in shapes for d in s):
        return one
    return tuple(a if a == b else -1 for a, b in zip(one, trace(2), strict=True))


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: Any,
                             dimension_numbers: Any = None) -> tuple[int, ...]:
    """The output shape of `conv_general_dilated` for these shapes."""
    return _out_shape(lambda lhs, rhs: conv_general_dilated(
        lhs, rhs, window_strides, padding, dimension_numbers=dimension_numbers),
        lhs_shape, rhs_shape)


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Any,
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None) -> tuple[int, ...]:
    """The output shape of `reduce_window` for this operand shape and window."""
    return _out_shape(lambda x: reduce_window(
        x, np.float32(0), lambda a, b: a + b, window_dimensions, window_strides, padding,
        base_dilation, window_dilation), operand_shape)

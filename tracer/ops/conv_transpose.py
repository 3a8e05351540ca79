"""`conv_transpose` (JAX's `lax.conv_transpose`): the fractionally strided convolution,
as one `conv_general_dilated` whose lhs dilation is the stride, and its output shape
(`conv_transpose_shape_tuple`)."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import ParamError
from .common import wrapper_error
from .conv import conv_dimension_numbers, conv_general_dilated, dilate_dim
from .elementwise import convert_element_type
from .in_dim import _out_shape
from .linalg import _precision, _preferred
from .shape import rev, transpose

__all__ = ["conv_transpose", "conv_transpose_shape_tuple"]

_DEFAULT_SPECS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                  4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def _transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """(before, after) padding of the dilated input for a kernel dim `k` and stride `s`,
    given the forward convolution's 'SAME' / 'VALID' (or its (lo, hi) pair)."""
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else math.ceil(total / 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        before = k - 1
    else:
        pads = tuple(k - p - 1 for p in padding)
        before, total = pads[0], sum(pads)
    return before, total - before


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Any,
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Any:
    """The transposed convolution: `lhs` dilated by `strides`, padded so that 'SAME' /
    'VALID' give the shapes of the forward convolution they invert, convolved with
    `rhs` (spatially flipped, in and out channels swapped when `transpose_kernel`, the
    gradient's convention; JAX's default keeps the kernel as it is). (lo, hi) pairs
    pad the transposed convolution itself unless `use_consistent_padding`."""
    rank = np.ndim(lhs)
    if dimension_numbers is None:
        if rank not in _DEFAULT_SPECS:
            raise wrapper_error(ParamError, "conv_transpose", f"no default dimension_numbers "
                                f"for rank {rank}; pass them")
        dimension_numbers = _DEFAULT_SPECS[rank]
    dn = conv_dimension_numbers(rank, dimension_numbers)
    k_spatial = [np.shape(rhs)[d] for d in dn.rhs_spec[2:]]
    rhs_dilation = tuple(rhs_dilation or (1,) * (rank - 2))
    if use_consistent_padding or padding in ("SAME", "VALID"):
        per_dim = [padding] * len(strides) if isinstance(padding, str) else list(padding)
        pads = [_transpose_padding(dilate_dim(k, r), s, p)
                for k, r, s, p in zip(k_spatial, rhs_dilation, strides, per_dim, strict=True)]
    else:
        pads = [tuple(p) for p in padding]
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(rank))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = transpose(rhs, tuple(perm))
    _precision("conv_transpose", precision)  # (checked; every level is full precision)
    preferred = _preferred("conv_transpose", preferred_element_type)
    if preferred is not None:  # accumulate in it: the operands are cast, as dot's are
        lhs, rhs = convert_element_type(lhs, preferred), convert_element_type(rhs, preferred)
    return conv_general_dilated(lhs, rhs, (1,) * (rank - 2), pads, tuple(strides), rhs_dilation,
                                dimension_numbers=dn)


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: Any,
                               dimension_numbers: Any = None) -> tuple[int, ...]:
    """The output shape of `conv_transpose` for these shapes."""
    return _out_shape(lambda lhs, rhs: conv_transpose(
        lhs, rhs, window_strides, padding, dimension_numbers=dimension_numbers),
        lhs_shape, rhs_shape)

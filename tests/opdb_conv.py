"""Op-table cases for convolution (XLA's Conv, ConvWithGeneralPadding).

The seeds give no numeric convolution example; the golden values below follow the
seeds' 2-D pseudo-code and size rules by hand (SAME keeps the input size when
striding is ignored, VALID is no padding, negative padding removes elements,
lhs dilation inserts holes, rhs dilation spreads the window, feature groups convolve
group i of the input with group i of the kernel).
"""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

R = np.random.default_rng(11)
F = np.float32
# 1 image, 1 feature, 3x3: 1..9; a 2x2 kernel of ones sums each window.
X33 = np.arange(1, 10, dtype=F).reshape(1, 1, 3, 3)
K22 = np.ones((1, 1, 2, 2), F)
X1D = np.array([[[1, 2, 3, 4, 5]]], F)          # (batch 1, feature 1, width 5)
K1D = np.array([[[1, 10]]], F)                   # taps 1, 10
X2C = np.array([[[1, 2, 3], [10, 20, 30]]], F)   # 2 features
K2G = np.array([[[1, 1]], [[2, 0]]], F)          # 2 output features, 1 input each

LHS4 = R.standard_normal((2, 4, 6, 5)).astype(F)
RHS4 = R.standard_normal((6, 2, 3, 2)).astype(F)
NHWC = R.standard_normal((2, 5, 6, 3))
HWIO = R.standard_normal((3, 2, 3, 4))
VOL = R.standard_normal((1, 2, 4, 5, 3))
KVOL = R.standard_normal((3, 2, 2, 3, 2))
INT_X = R.integers(-50, 50, (2, 3, 5, 5)).astype(np.int32) * 40000
INT_W = R.integers(-50, 50, (4, 3, 3, 3)).astype(np.int32) * 40000


def _gen(strides, padding, lhs_dilation=None, rhs_dilation=None, dn=None, fgc=1, bgc=1):
    return lambda x, w: ops.conv_general_dilated(x, w, strides, padding, lhs_dilation,
                                                 rhs_dilation, dn, fgc, bgc)


CASES: list[OpCase] = [
    # Golden (by the seeds' pseudo-code): VALID = windows fully inside.
    OpCase("conv:valid_2x2_window_sums", lambda x, w: ops.conv(x, w, (1, 1), "VALID"),
           (X33, K22), expected=F([[[[12, 16], [24, 28]]]])),
    # SAME: output as large as the input (pad (0, 1) per dim: the odd pad at the end).
    OpCase("conv:same_keeps_size", lambda x, w: ops.conv(x, w, (1, 1), "SAME"),
           (X33, K22), expected=F([[[[12, 16, 9], [24, 28, 15], [15, 17, 9]]]])),
    # Stride 2: only windows at even positions.
    OpCase("conv:stride_2", lambda x, w: ops.conv(x, w, (2, 2), "SAME"),
           (X33, K22), expected=F([[[[12, 9], [15, 9]]]])),
    # Explicit padding (low, high) = (2, 1); out[i] = x[i-2] + 10 x[i-1].
    OpCase("conv_with_general_padding:pad_2_1",
           lambda x, w: ops.conv_with_general_padding(x, w, (1,), [(2, 1)], None, None),
           (X1D, K1D), expected=F([[[0, 10, 21, 32, 43, 54, 5]]])),
    # Negative padding removes elements: (-1, -2) leaves [2, 3]; one window.
    OpCase("conv_with_general_padding:negative_padding",
           lambda x, w: ops.conv_with_general_padding(x, w, (1,), [(-1, -2)], None, None),
           (X1D, K1D), expected=F([[[32]]])),
    # lhs dilation 2 (holes): [1, 0, 2, 0, 3, 0, 4, 0, 5] -> pairs (a, b) -> a + 10 b.
    OpCase("conv_with_general_padding:lhs_dilation",
           lambda x, w: ops.conv_with_general_padding(x, w, (1,), [(0, 0)], (2,), None),
           (X1D, K1D), expected=F([[[1, 20, 2, 30, 3, 40, 4, 50]]])),
    # rhs dilation 2 (atrous): taps at i and i + 2: x[i] + 10 x[i+2].
    OpCase("conv_with_general_padding:rhs_dilation",
           lambda x, w: ops.conv_with_general_padding(x, w, (1,), "VALID", None, (2,)),
           (X1D, K1D), expected=F([[[31, 42, 53]]])),
    # Feature groups: output 0 sees feature 0 (window sums), output 1 feature 1 (x 2).
    OpCase("conv_general_dilated:feature_groups", _gen((1,), "VALID", fgc=2), (X2C, K2G),
           expected=F([[[3, 5], [20, 40]]])),

    # Non-golden samples, compared with the reference (and JAX in test_ops_conv).
    OpCase("conv_general_dilated:all_params_2d",
           _gen((2, 1), [(1, -1), (2, 0)], (2, 1), (1, 2), None, 2), (LHS4, RHS4), rtol=1e-5,
           atol=1e-5),
    OpCase("conv_general_dilated:nhwc_hwio_f64", _gen((1, 2), "SAME", dn=("NHWC", "HWIO",
                                                                           "NHWC")),
           (NHWC, HWIO), rtol=1e-12, atol=1e-12),
    OpCase("conv_general_dilated:batch_groups",
           _gen((1, 1), [(1, 1), (0, 0)], bgc=2), (LHS4, R.standard_normal((6, 4, 2, 2))
                                                   .astype(F)), rtol=1e-5, atol=1e-5),
    OpCase("conv_general_dilated:3d_out_layout", _gen((1, 2, 1), [(0, 1), (1, -1), (0, 1)],
                                                      None, (1, 1, 2),
                                                      ("NCDHW", "OIDHW", "NDHWC")),
           (VOL, KVOL), rtol=1e-12, atol=1e-12),
    OpCase("conv_general_dilated:no_spatial_dims", _gen((), ()),
           (R.standard_normal((3, 4)), R.standard_normal((5, 4))), rtol=1e-12, atol=1e-12),
    OpCase("conv_general_dilated:int32_wraps", _gen((1, 1), "SAME"), (INT_X, INT_W)),
    OpCase("conv_general_dilated:float16", _gen((1,), [(1, 1)]),
           (R.standard_normal((2, 3, 7)).astype(np.float16),
            R.standard_normal((2, 3, 3)).astype(np.float16)), rtol=2e-3, atol=2e-3),
    OpCase("conv_general_dilated:complex64", _gen((1,), "SAME"),
           ((R.standard_normal((1, 2, 5)) + 1j * R.standard_normal((1, 2, 5))).astype(
               np.complex64), (R.standard_normal((2, 2, 3)) + 1j).astype(np.complex64)),
           rtol=1e-5, atol=1e-5),
    OpCase("conv_general_dilated:depthwise", _gen((1, 1), "SAME", fgc=4),
           (LHS4, R.standard_normal((8, 1, 3, 3)).astype(F)), rtol=1e-5, atol=1e-5),
]

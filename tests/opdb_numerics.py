"""Op-table cases for fft, batch_norm_*, reduce_precision and bitcast_convert_type
(XLA's Fft, BatchNorm*, ReducePrecision, BitcastConvertType).
Goldens: the seeds' shape examples, and values derived from the stated rules."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

R = np.random.default_rng(11)
F32, F64, C64, C128 = np.float32, np.float64, np.complex64, np.complex128


def _c(shape: tuple[int, ...], dtype: type = C64) -> np.ndarray:
    return (R.standard_normal(shape) + 1j * R.standard_normal(shape)).astype(dtype)


def _r(shape: tuple[int, ...], dtype: type = F32) -> np.ndarray:
    return R.standard_normal(shape).astype(dtype)


def _fft(kind: str, lengths: list[int]):
    return lambda x: ops.fft(x, kind, lengths)


def _shape_of(fn):
    """A case that returns only its result's shape marker (the seeds give shapes)."""
    return lambda x: ops.mul(fn(x), np.zeros((), fn(x).dtype))


FFT_CASES = [
    OpCase("fft:ones", _fft("FFT", [4]), (np.ones(4, C64),), expected=np.array([4, 0, 0, 0], C64)),
    OpCase("fft:rfft16_seed", _shape_of(_fft("RFFT", [16])), (_r((16,)),),
           expected=np.zeros(9, C64)),
    OpCase("fft:rfft17_seed", _shape_of(_fft("RFFT", [17])), (_r((17,)),),
           expected=np.zeros(9, C64)),
    OpCase("fft:irfft16_seed", _shape_of(_fft("IRFFT", [16])), (_c((9,)),),
           expected=np.zeros(16, F32)),
    OpCase("fft:irfft17_seed", _shape_of(_fft("IRFFT", [17])), (_c((9,)),),
           expected=np.zeros(17, F32)),
    OpCase("fft:impulse_rfft", _fft("RFFT", [5]), (np.array([0, 1, 0, 0, 0], F32),),
           expected=np.exp(-2j * np.pi * np.arange(3) / 5).astype(C64)),
    OpCase("fft:ifft_2d", _fft("IFFT", [3, 4]), (_c((2, 3, 4)),)),
    OpCase("fft:fft_3d_c128", _fft("FFT", [2, 3, 5]), (_c((2, 3, 5), C128),)),
    OpCase("fft:rfft_2d", _fft("RFFT", [4, 6]), (_r((3, 4, 6)),)),
    OpCase("fft:irfft_2d_odd", _fft("IRFFT", [3, 7]), (_c((2, 3, 4)),)),
    OpCase("fft:irfft_3d_c128", _fft("IRFFT", [2, 2, 6]), (_c((2, 2, 4), C128),)),
    OpCase("fft:roundtrip", lambda x: ops.fft(ops.fft(x, "RFFT", [8]), "IRFFT", [8]),
           (np.arange(8, dtype=F64).reshape(1, 8),), expected=np.arange(8.0).reshape(1, 8)),
    OpCase("fft:empty", _fft("FFT", [3]), (np.zeros((0, 3), C64),)),
]


def _bn_train(fi: int, eps: float = 1e-3):
    return lambda x, s, o: ops.batch_norm_training(x, s, o, eps, fi)


def _bn_infer(fi: int, eps: float = 1e-3):
    return lambda x, s, o, m, v: ops.batch_norm_inference(x, s, o, m, v, eps, fi)


def _bn_grad(fi: int, eps: float = 1e-3):
    return lambda x, s, m, v, dy: ops.batch_norm_grad(x, s, m, v, dy, eps, fi)


def _pos(n: int, dtype: type = F32) -> np.ndarray:
    return R.uniform(0.5, 2.0, n).astype(dtype)


X4 = _r((2, 3, 4, 5))
BN_SMALL = np.array([[1, 2], [3, 6]], F32)
BN_CASES = [
    OpCase("batch_norm_training:golden", _bn_train(1, 0.0),
           (BN_SMALL, np.ones(2, F32), np.zeros(2, F32)),
           expected=(np.array([[-1, -1], [1, 1]], F32), np.array([2, 4], F32),
                     np.array([1, 4], F32))),
    OpCase("batch_norm_training:nchw", _bn_train(1), (X4, _r((3,)), _r((3,)))),
    OpCase("batch_norm_training:nhwc_f64", _bn_train(3), (X4.astype(F64), _r((5,), F64),
                                                         _r((5,), F64))),
    OpCase("batch_norm_training:f16", _bn_train(0), (_r((3, 8), np.float16),
                                                     _r((3,), np.float16), _r((3,), np.float16))),
    OpCase("batch_norm_inference:golden", _bn_infer(1, 0.0),
           (BN_SMALL, np.array([2, 1], F32), np.array([0, 1], F32), np.array([2, 4], F32),
            np.array([1, 4], F32)), expected=np.array([[-2, 0], [2, 2]], F32)),
    OpCase("batch_norm_inference:nchw", _bn_infer(1), (X4, _r((3,)), _r((3,)), _r((3,)),
                                                       _pos(3))),
    OpCase("batch_norm_inference:f64", _bn_infer(2), (X4.astype(F64), *(_pos(4, F64)
                                                                        for _ in range(4)))),
    OpCase("batch_norm_grad:golden", _bn_grad(1, 0.0),
           (np.array([[1], [3]], F32), np.ones(1, F32), np.array([2], F32),
            np.ones(1, F32), np.array([[1], [0]], F32)),
           expected=(np.zeros((2, 1), F32), np.array([-1], F32), np.array([1], F32))),
    OpCase("batch_norm_grad:nchw", _bn_grad(1), (X4, _r((3,)), _r((3,)), _pos(3), _r(X4.shape))),
    OpCase("batch_norm_grad:f64_last", _bn_grad(3), (X4.astype(F64), _r((5,), F64),
                                                    _r((5,), F64), _pos(5, F64),
                                                    _r(X4.shape, F64))),
]


def _rp(e: int, m: int):
    return lambda x: ops.reduce_precision(x, e, m)


SPECIAL = np.array([0.0, -0.0, 1.0, 1.5, 2.5, 1e-6, -3e-5, 65504.0, 65519.0, 65520.0, 1e5,
                    np.inf, -np.inf, np.nan, 1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11], F32)
BITS_CASES = [
    OpCase("reduce_precision:golden", _rp(5, 10), (np.array([1.0009765, 70000.0], F32),),
           expected=np.array([1.0009766, np.inf], F32)),
    # ties to even, overflow to inf, f16's denormal range flushed to 0, NaN kept
    OpCase("reduce_precision:f16_format", _rp(5, 10), (SPECIAL,),
           expected=np.array([0, -0.0, 1, 1.5, 2.5, 0, -0.0, 65504, 65504, np.inf, np.inf,
                              np.inf, -np.inf, np.nan, 1, 1.001953125], F32)),
    OpCase("reduce_precision:no_mantissa", _rp(3, 0),
           (np.array([1.5, 3.0, 5.0, 7.0, 20.0, np.nan], F64),),
           expected=np.array([2.0, 2.0, 4.0, 8.0, np.inf, np.nan])),
    OpCase("reduce_precision:f16_operand", _rp(4, 3), (_r((3, 5), np.float16),)),
    OpCase("reduce_precision:noop", _rp(20, 60), (_r((4,), F64),)),
    OpCase("reduce_precision:scalar", _rp(8, 7), (np.float32(1.0 + 2 ** -8 + 2 ** -20),),
           expected=np.float32(1.0078125)),
    OpCase("bitcast_convert_type:f32_to_f16_seed",
           lambda x: ops.bitcast_convert_type(x, np.float16), (_r((10,)),)),
    OpCase("bitcast_convert_type:scalar_seed", lambda x: ops.bitcast_convert_type(x, np.float16),
           (np.float32(1.0),), expected=np.array([0.0, 1.875], np.float16)),
    OpCase("bitcast_convert_type:f16_to_f32_seed",
           lambda x: ops.bitcast_convert_type(x, np.float32),
           (np.array([[0.0, 1.875], [0.0, -2.0]], np.float16),),
           expected=np.array([1.0, -2.0], F32)),
    OpCase("bitcast_convert_type:s32_to_s8",
           lambda x: ops.bitcast_convert_type(x, np.int8), (np.array([1, -1, 258], np.int32),),
           expected=np.array([[1, 0, 0, 0], [-1, -1, -1, -1], [2, 1, 0, 0]], np.int8)),
    OpCase("bitcast_convert_type:same_width", lambda x: ops.bitcast_convert_type(x, np.int32),
           (np.float32(1.0),), expected=np.int32(1065353216)),
    OpCase("bitcast_convert_type:c64_to_c128",
           lambda x: ops.bitcast_convert_type(x, np.complex128), (_c((3, 2)),)),
]

CASES = FFT_CASES + BN_CASES + BITS_CASES

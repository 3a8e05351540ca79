"""Special functions the samplers need, written in `tracer.ops` so they trace,
differentiate, batch and compile like everything else.

`erf_inv` is XLA's (`xla/hlo/builder/lib/math.cc`, after Giles, "Approximating the
erfinv function"): float16 and bfloat16 are computed in float32; float32 evaluates its degree-8
polynomial with fused multiply-adds as XLA's CPU compiler does (each step computed
in float64 and rounded once, which is the float32 FMA); float64 uses the 23-term
polynomial without FMAs. Its log1p is `_math.log1p` (the same bits on every
backend); XLA's log1p is another approximation, so `normal` differs from
`jax.random.normal` by a few ulp in ~1-2% of samples.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import dtypes, ops
from ._keys import aval
from ._math import log1p, with_derivative

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = dtypes.bfloat16

_LT_5 = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
         -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GT_5 = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_LT_6_25 = (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
            1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
            6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
            2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
            1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
            4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
            0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
            0.24015818242558961693, 1.6536545626831027356)
_LT_16 = (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
          1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
          2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
          6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
          0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
          -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
          3.0838856104922207635)
_GT_16 = (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
          -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
          2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
          -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
          7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
          1.0103004648645343977, 4.8499064014085844221)


def _const(value: float, dtype: np.dtype) -> np.ndarray:
    return np.asarray(value, dtype)


def _fma32(a: Any, b: Any, c: Any) -> Any:
    """a * b + c rounded once to float32 (the float64 product of two float32 is exact)."""
    wide = [ops.convert_element_type(v, F64) for v in (a, b, c)]
    return ops.convert_element_type(ops.add(ops.mul(wide[0], wide[1]), wide[2]), F32)


def _erf_inv_f32(x: Any) -> Any:
    w = ops.neg(log1p(ops.neg(ops.mul(x, x))))
    small = ops.lt(w, _const(5.0, F32))
    w = ops.select(small, ops.sub(w, _const(2.5, F32)), ops.sub(ops.sqrt(w), _const(3.0, F32)))
    coefficient = [ops.select(small, *(ops.broadcast_in_dim(_const(c, F32), aval(x)[0], ())
                                       for c in pair)) for pair in zip(_LT_5, _GT_5)]
    p = coefficient[0]
    for c in coefficient[1:]:
        p = _fma32(p, w, c)
    return _edges(x, ops.mul(p, x))


def _erf_inv_f64(x: Any) -> Any:
    shape = aval(x)[0]
    w = ops.neg(log1p(ops.neg(ops.mul(x, x))))
    lt_6_25, lt_16 = ops.lt(w, _const(6.25, F64)), ops.lt(w, _const(16.0, F64))
    full = [ops.broadcast_in_dim(_const(c, F64), shape, ()) for c in (3.25, 5.0)]
    w = ops.select(lt_6_25, ops.sub(w, _const(3.125, F64)),
                   ops.sub(ops.sqrt(w), ops.select(lt_16, *full)))

    def coefficient(i: int) -> Any:
        c = ops.broadcast_in_dim(_const(_LT_6_25[i], F64), shape, ())
        if i < 19:
            c = ops.select(lt_6_25, c, ops.broadcast_in_dim(_const(_LT_16[i], F64), shape, ()))
        if i < 17:
            c = ops.select(lt_16, c, ops.broadcast_in_dim(_const(_GT_16[i], F64), shape, ()))
        return c

    p = coefficient(0)
    for i in range(1, 23):
        step = ops.add(coefficient(i), ops.mul(p, w))
        p = step if i < 17 else ops.select(lt_16 if i < 19 else lt_6_25, step, p)
    return _edges(x, ops.mul(p, x))


def _edges(x: Any, result: Any) -> Any:
    """erf_inv(+-1) = +-inf (x * the largest float, as XLA writes it)."""
    dtype = aval(x)[1]
    edge = ops.eq(ops.abs(x), _const(1.0, dtype))
    return ops.select(edge, ops.mul(x, _const(np.finfo(dtype).max, dtype)), result)


def _erf_inv_derivative(x: Any, y: Any) -> Any:
    """d erfinv(x) / dx = sqrt(pi) / 2 * exp(erfinv(x)**2)."""
    return ops.mul(ops.exp(ops.mul(y, y)), _const(np.sqrt(np.pi) / 2, aval(x)[1]))


@functools.partial(with_derivative, derivative=_erf_inv_derivative)
def erf_inv(x: Any) -> Any:
    """The inverse error function of a float array (float16 / bfloat16 computed in
    float32)."""
    dtype = aval(x)[1]
    if dtype == F64:
        return _erf_inv_f64(x)
    if dtype in (F16, BF16):
        return ops.convert_element_type(_erf_inv_f32(ops.convert_element_type(x, F32)), dtype)
    return _erf_inv_f32(x)


def next_after(x: Any, up: bool) -> Any:
    """The next float after `x` towards +inf (`up`) or -inf, element-wise (NaN stays NaN,
    the infinity in the direction of travel stays)."""
    shape, dtype = aval(x)
    signed = np.dtype(f"i{dtype.itemsize}")
    step = np.asarray(1 if up else -1, signed)
    bits = ops.bitcast_convert_type(x, signed)
    # Away from zero the bits of a positive float grow with it, those of a negative
    # one shrink; from zero the step goes to the smallest subnormal of the right sign.
    away = ops.select(ops.ge(bits, np.zeros((), signed)), ops.add(bits, step),
                      ops.sub(bits, step))
    tiny = np.asarray(np.nextafter(dtype.type(0), dtype.type(1 if up else -1)), dtype)
    moved = ops.select(ops.eq(x, np.zeros((), dtype)), ops.broadcast_in_dim(tiny, shape, ()),
                       ops.bitcast_convert_type(away, dtype))
    stays = ops.bitwise_or(ops.ne(x, x), ops.eq(x, _const(np.inf if up else -np.inf, dtype)))
    return ops.select(stays, x, moved)

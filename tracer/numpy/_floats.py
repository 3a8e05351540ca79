"""Floating-point anatomy and integer number theory: frexp, ldexp, modf, nextafter,
spacing, gcd, lcm, bitwise_count, i0, nan_to_num and the window functions.

frexp / ldexp / nextafter / spacing are exact arithmetic, not bit twiddling:
`frexp` takes floor(log2|x|) and corrects it by one if the scaled mantissa left
[0.5, 1); scaling by powers of two is exact, and `ldexp(x, n)` is one rounding,
`m * 2**(e + n)`. float16 and bfloat16 compute in float32 (every value and its
exponent fit) and round on store. gcd / lcm run Euclid's algorithm as one `ops.while_loop`
over the whole array.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, TracerTypeError
from ..tracing import Tracer
from . import _ufuncs as uf
from ._promotion import (PromotionOverflowError, as_result, asarray_like, broadcast_arrays, cast,
                         desc, dtype_of, error, float_of, is_weak, promote,
                         result_dtype)
from ._ufunc_core import float_loop
from ._reductions import any as any_

__all__ = ["frexp", "ldexp", "modf", "nextafter", "spacing", "gcd", "lcm", "bitwise_count",
           "i0", "nan_to_num", "bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _work(dt: np.dtype) -> np.dtype:
    """The dtype a float function of `dt` computes in: float16 / bfloat16 in float32
    (every value and exponent of theirs fits), rounded on store."""
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _float_operand(x: Any, fname: str) -> tuple[Any, np.dtype]:
    """(x in its compute dtype, the result dtype): NumPy's float loop for x's dtype,
    float16 / bfloat16 computed in float32."""
    v = asarray_like(x, fname)
    dt = dtype_of(v)
    if dtypes.kind(dt) not in "biuf":
        raise error(DTypeError, fname, f"ufunc '{fname}' not supported for the input types "
                    f"{desc(v)}")
    out = float_of(dt)
    work = _work(out)
    return cast(cast(v, out, fname=fname), work, fname=fname), out


def _pow2(e: Any, dt: np.dtype) -> Any:
    """2.0 ** e for integral e, exactly (pow of 2 by an integer is exact in libm)."""
    return ops.pow(ops.broadcast_in_dim(np.asarray(2.0, dt), np.shape(e), ()), e)


def _frexp(x: Any) -> tuple[Any, Any]:
    """(m, e) with x = m * 2**e, 0.5 <= |m| < 1; (x, 0) for 0, inf and NaN. e is float."""
    dt = dtype_of(x)
    special = ops.bitwise_or(ops.eq(x, 0.0), ops.bitwise_not(ops.is_finite(x)))
    mag = ops.select(special, ops.broadcast_in_dim(np.asarray(1.0, dt), np.shape(x), ()),
                     ops.abs(x))
    info = dtypes.finfo(dt)
    # log rounds: keep e within the exponents finite values have, so 2**(e-1) stays exact.
    e = ops.clamp(np.asarray(info.minexp - info.nmant + 1, dt),
                  ops.add(ops.floor(ops.div(ops.log(mag), math.log(2.0))), 1.0),
                  np.asarray(info.maxexp, dt))
    # Two exact steps: 2**(e-1) is representable even when 2**e would overflow.
    m = ops.mul(ops.div(ops.select(special, mag, x), _pow2(ops.sub(e, 1.0), dt)), 0.5)
    big = ops.ge(ops.abs(m), 1.0)
    m, e = ops.select(big, ops.mul(m, 0.5), m), ops.select(big, ops.add(e, 1.0), e)
    small = ops.lt(ops.abs(m), 0.5)
    m, e = ops.select(small, ops.mul(m, 2.0), m), ops.select(small, ops.sub(e, 1.0), e)
    zero = ops.broadcast_in_dim(np.asarray(0.0, dt), np.shape(x), ())
    return ops.select(special, x, m), ops.select(special, zero, e)


def frexp(x: Any, /, out: Any = None) -> tuple[Any, Any]:
    """Split x into mantissa and exponent: x = m * 2**e with 0.5 <= |m| < 1.

    NumPy rule: m has the float dtype of x (int8 -> float16), e is int32; 0, inf and
    NaN give (x, 0).

    frexp([8.0, 0.3]) -> ([0.5, 0.6], [4, -1])
    """
    if out is not None:
        raise error(TracerTypeError, "frexp", "out= is not supported; use the result")
    v, dt = _float_operand(x, "frexp")
    m, e = _frexp(v)
    return as_result(cast(m, dt)), as_result(ops.convert_element_type(e, dtypes.int32))


def ldexp(x1: Any, x2: Any, /, out: Any = None) -> Any:
    """x1 * 2**x2, rounded once (also into subnormals), for integer x2.

    NumPy rule: x2 must be an integer array; the result has x1's float dtype.

    ldexp(5.0, [1, -2]) -> [10.0, 1.25]
    """
    if out is not None:
        raise error(TracerTypeError, "ldexp", "out= is not supported; use the result")
    n = asarray_like(x2, "ldexp")
    # NumPy's loops take int32 / int64 exponents: uint64 has no safe cast to either.
    if dtype_of(n).kind not in "biu" or dtype_of(n) == dtypes.uint64:
        raise error(DTypeError, "ldexp", f"ufunc 'ldexp' not supported for the input types "
                    f"(exponent {desc(n)}); the exponent must be an integer")
    if isinstance(n, int) and not -2**31 <= n < 2**31:
        raise error(PromotionOverflowError, "ldexp", f"Python integer {n} out of bounds "
                    f"for int32")
    if is_weak(x1) and dtype_of(x1).kind in "biu" and not is_weak(n):
        # NumPy's first loop is (float16, int): a Python int meets it with an array exponent.
        x1 = cast(x1, dtypes.float16, fname="ldexp")
    v, dt = _float_operand(x1, "ldexp")
    v, n = broadcast_arrays(v, cast(n, dtypes.int64, fname="ldexp"), fname="ldexp")
    work = dtype_of(v)
    m, e = _frexp(v)
    bound = 4 * dtypes.finfo(work).maxexp  # beyond it the result is 0 or inf anyway
    k = ops.clamp(np.asarray(-bound, work), ops.add(e, ops.convert_element_type(n, work)),
                  np.asarray(bound, work))
    # 2**k itself overflows at the top of the range: there scale 2m (exact) by 2**(k-1).
    up = ops.gt(k, 0.0)
    scaled = ops.mul(ops.select(up, ops.mul(m, 2.0), m),
                     _pow2(ops.select(up, ops.sub(k, 1.0), k), work))
    keep = ops.bitwise_or(ops.eq(v, 0.0), ops.bitwise_not(ops.is_finite(v)))
    return as_result(cast(ops.select(keep, v, scaled), dt))


def modf(x: Any, /, out: Any = None) -> tuple[Any, Any]:
    """(fractional, integral) parts of x, both with x's sign.

    NumPy rule: float dtype of x; modf(inf) = (0.0, inf); modf(-2.0) = (-0.0, -2.0).

    modf([1.5, -2.25]) -> ([0.5, -0.25], [1.0, -2.0])
    """
    if out is not None:
        raise error(TracerTypeError, "modf", "out= is not supported; use the result")
    v, dt = _float_operand(x, "modf")
    whole = uf.trunc(v)
    frac = uf.where(uf.isinf(v), 0.0, uf.subtract(v, whole))
    return as_result(cast(uf.copysign(frac, v), dt)), as_result(cast(whole, dt))


def _mantissa_digits(dt: np.dtype) -> int:
    return int(dtypes.finfo(dt).nmant) + 1


def nextafter(x1: Any, x2: Any, /, out: Any = None) -> Any:
    """The next representable float after x1 towards x2.

    NumPy rule: float loops only (bool/ints take the smallest float loop that holds them:
    int8 -> float16, int16 -> float32, else float64); equal inputs give x2; NaN
    propagates; 0 steps to the smallest subnormal of the right sign.

    nextafter(1.0, 2.0) -> 1.0000000000000002
    """
    if out is not None:
        raise error(TracerTypeError, "nextafter", "out= is not supported; use the result")
    a, b = asarray_like(x1, "nextafter"), asarray_like(x2, "nextafter")
    common, _ = result_dtype(a, b, fname="nextafter")
    if common.kind == "c":
        raise error(DTypeError, "nextafter", f"ufunc 'nextafter' not supported for complex "
                    f"inputs {desc(a)}, {desc(b)}")
    # Each input meets the float loop as it is: a Python int is not first cast to the
    # array's int dtype (nextafter(int8, 300) is float16, not an int8 overflow).
    dt = float_loop(a, b, common)
    work = _work(dt)
    a, b = (cast(cast(t, dt), work) for t in (a, b))
    a, b = broadcast_arrays(a, b, fname="nextafter")
    return as_result(cast(_step(a, b, dt, work), dt))


def _step(a: Any, b: Any, dt: np.dtype, work: np.dtype) -> Any:
    info = dtypes.finfo(dt)
    tiny = float(info.smallest_subnormal)
    m, e = _frexp(a)
    ulp = ops.max(_pow2(ops.sub(e, float(_mantissa_digits(dt))), work), np.asarray(tiny, work))
    # Below an exact power of two the spacing halves (not in the subnormal range).
    down_ulp = ops.select(ops.bitwise_and(ops.eq(ops.abs(m), 0.5), ops.gt(ulp, tiny)),
                          ops.mul(ulp, 0.5), ulp)
    away = ops.eq(ops.gt(b, a), ops.gt(a, 0.0))  # moving away from zero
    mag = ops.select(away, ops.add(ops.abs(a), ulp), ops.sub(ops.abs(a), down_ulp))
    stepped = ops.select(ops.lt(a, 0.0), ops.neg(mag), mag)
    from_zero = ops.select(ops.gt(b, a), ops.broadcast_in_dim(np.asarray(tiny, work),
                                                              np.shape(a), ()),
                           ops.broadcast_in_dim(np.asarray(-tiny, work), np.shape(a), ()))
    out = ops.select(ops.eq(a, 0.0), from_zero, stepped)
    out = ops.select(ops.is_finite(a), out, ops.select(ops.ne(a, b), _inf_step(a, dt, work),
                                                       a))
    out = ops.select(ops.eq(a, b), b, out)
    return ops.select(ops.bitwise_or(ops.ne(a, a), ops.ne(b, b)), ops.add(a, b), out)


def _inf_step(a: Any, dt: np.dtype, work: np.dtype) -> Any:
    """From +-inf towards a finite value: the largest finite magnitude."""
    big = float(dtypes.finfo(dt).max)
    return ops.select(ops.gt(a, 0.0), ops.broadcast_in_dim(np.asarray(big, work),
                                                           np.shape(a), ()),
                      ops.broadcast_in_dim(np.asarray(-big, work), np.shape(a), ()))


def spacing(x: Any, /, out: Any = None) -> Any:
    """Distance from x to the next float away from zero (negative for negative x).

    NumPy rule: float dtype of x; spacing(0) is the smallest subnormal; inf and NaN
    give NaN.

    spacing(1.0) -> 2.220446049250313e-16
    """
    if out is not None:
        raise error(TracerTypeError, "spacing", "out= is not supported; use the result")
    v, dt = _float_operand(x, "spacing")
    work = dtype_of(v)
    inf = ops.broadcast_in_dim(np.asarray(math.inf, work), np.shape(v), ())
    if dt == dtypes.float16:
        # NumPy's half spacing is a magnitude: the gap above x >= 0, below |x| for x < 0.
        mag = ops.abs(v)
        toward = ops.select(ops.lt(v, 0.0), ops.broadcast_in_dim(np.asarray(0.0, work),
                                                                 np.shape(v), ()), inf)
        nxt = cast(cast(_step(mag, toward, dt, work), dt), work)  # 65504 steps to inf
        r = ops.abs(ops.sub(nxt, mag))
        r = ops.select(ops.eq(v, 0.0), ops.broadcast_in_dim(np.asarray(
            float(dtypes.finfo(dt).smallest_subnormal), work), np.shape(v), ()), r)
    else:
        toward = ops.select(ops.lt(v, 0.0), ops.neg(inf), inf)
        r = ops.sub(_step(v, toward, dt, work), v)
    nan = ops.broadcast_in_dim(np.asarray(math.nan, dtype_of(v)), np.shape(v), ())
    return as_result(cast(ops.select(ops.is_finite(v), r, nan), dt))


# ------------------------------------------------------------------ gcd, lcm, popcount
def _int_pair(x1: Any, x2: Any, fname: str) -> tuple[Any, Any]:
    a, b = promote(x1, x2, fname=fname)
    if dtype_of(a).kind not in "iu":
        raise error(DTypeError, fname, f"ufunc '{fname}' did not contain a loop with "
                    f"signature matching types {desc(a)}, {desc(b)}")
    a, b = (cast(t, dtype_of(t)) for t in (a, b))
    return tuple(broadcast_arrays(a, b, fname=fname))


def _unsigned_abs(x: Any) -> Any:
    """|x| as the unsigned dtype of x's width: NumPy's gcd / lcm loops work on unsigned
    magnitudes, so |INT_MIN| is 2**(bits-1), not INT_MIN."""
    dt = dtype_of(x)
    if dt.kind == "u":
        return x
    return ops.bitcast_convert_type(uf.absolute(x), np.dtype(f"u{dt.itemsize}"))


def _gcd(a: Any, b: Any) -> Any:
    """Euclid on the unsigned |a|, |b| element-wise until every remainder is zero; the
    result is unsigned (bitcast back by the callers, as NumPy's loops cast)."""
    ua, ub = _unsigned_abs(a), _unsigned_abs(b)
    udt = dtype_of(ua)
    zero = np.zeros((), udt)

    def cond(state: tuple[Any, Any]) -> Any:
        return any_(ops.ne(state[1], zero))

    def body(state: tuple[Any, Any]) -> tuple[Any, Any]:
        p, q = state
        live = ops.ne(q, zero)
        safe = ops.select(live, q, ops.broadcast_in_dim(np.ones((), udt), np.shape(q), ()))
        return ops.select(live, q, p), ops.select(live, ops.rem(p, safe), q)

    return ops.while_loop(cond, body, (ua, ub))[0]


def _signed(u: Any, dt: np.dtype) -> Any:
    """The unsigned result u reinterpreted as dt (wrapping, like NumPy's cast back)."""
    return u if dtype_of(u) == dt else ops.bitcast_convert_type(u, dt)


def gcd(x1: Any, x2: Any, /, out: Any = None) -> Any:
    """Greatest common divisor of |x1| and |x2| (gcd(0, 0) = 0).

    NumPy rule: integer dtypes only, NEP 50 promotion.

    gcd([12, 20], 8) -> [4, 4]
    """
    if out is not None:
        raise error(TracerTypeError, "gcd", "out= is not supported; use the result")
    a, b = _int_pair(x1, x2, "gcd")
    return as_result(_signed(_gcd(a, b), dtype_of(a)))


def lcm(x1: Any, x2: Any, /, out: Any = None) -> Any:
    """Least common multiple of |x1| and |x2| (0 if either is 0).

    NumPy rule: integer dtypes only, NEP 50 promotion.

    lcm([4, 6], 10) -> [20, 30]
    """
    if out is not None:
        raise error(TracerTypeError, "lcm", "out= is not supported; use the result")
    a, b = _int_pair(x1, x2, "lcm")
    g = _gcd(a, b)
    # |a| / g * |b| in unsigned arithmetic, wrapping on overflow (NumPy: lcm(int8 19, 7)
    # is -123, not |-123|).
    zero = np.zeros((), dtype_of(g))
    safe = ops.select(ops.eq(g, zero), ops.broadcast_in_dim(np.ones((), dtype_of(g)),
                                                            np.shape(g), ()), g)
    r = ops.mul(ops.div(_unsigned_abs(a), safe), _unsigned_abs(b))
    return as_result(_signed(ops.select(ops.eq(g, zero), g, r), dtype_of(a)))


def bitwise_count(x: Any, /, out: Any = None) -> Any:
    """Number of 1 bits in |x|.

    NumPy rule: integer dtypes; uint8 result.

    bitwise_count([7, -3]) -> [3, 2]
    """
    if out is not None:
        raise error(TracerTypeError, "bitwise_count", "out= is not supported")
    v = asarray_like(x, "bitwise_count")
    if dtype_of(v).kind not in "biu":
        raise error(DTypeError, "bitwise_count", f"ufunc 'bitwise_count' not supported for "
                    f"{desc(v)}")
    v = cast(v, dtype_of(v) if dtype_of(v).kind != "b" else dtypes.uint8)
    return as_result(ops.convert_element_type(ops.population_count(uf.absolute(v)),
                                              dtypes.uint8))


# ------------------------------------------------------------------ i0, nan_to_num
_I0A = [
    -4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16,
    1.715391285555133e-15, -1.1685332877993451e-14, 7.676185498604936e-14,
    -4.856446783111929e-13, 2.95505266312964e-12, -1.726826291441556e-11,
    9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
    -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07,
    1.1173875391201037e-06, -4.4167383584587505e-06, 1.6448448070728896e-05,
    -5.754195010082104e-05, 0.00018850288509584165, -0.0005763755745385824,
    0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
    -0.02373741480589947, 0.04930528423967071, -0.09490109704804764,
    0.17162090152220877, -0.3046826723431984, 0.6767952744094761]
_I0B = [
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17,
    3.461222867697461e-17, -2.8276239805165836e-16, -3.425485619677219e-16,
    1.7725601330565263e-15, 3.8116806693526224e-15, -9.554846698828307e-15,
    -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
    7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11,
    -3.1499165279632416e-11, 1.1889147107846439e-11, 4.94060238822497e-10,
    3.3962320257083865e-09, 2.266668990498178e-08, 2.0489185894690638e-07,
    2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
    0.8044904110141088]


def _chbevl(x: Any, coefs: list[float]) -> Any:
    """Clenshaw's recurrence for a Chebyshev series (Cephes, as NumPy)."""
    b0, b1, b2 = coefs[0], 0.0, 0.0
    for c in coefs[1:]:
        b2, b1 = b1, b0
        b0 = uf.add(uf.subtract(uf.multiply(x, b1), b2), c)
    return uf.multiply(0.5, uf.subtract(b0, b2))


def i0(x: Any) -> Any:
    """Modified Bessel function of the first kind, order 0.

    NumPy rule: Cephes' Chebyshev expansions on |x| <= 8 and |x| > 8; float dtypes kept
    (bfloat16 computed in float32, rounded once), others compute in float64; complex
    raises.

    i0([0.0, 1.0]) -> [1.0, 1.2660658777520082]
    """
    v = asarray_like(x, "i0")
    if dtype_of(v).kind == "c":
        raise error(TracerTypeError, "i0", "i0 not supported for complex values")
    dt = dtype_of(v) if dtypes.is_float(dtype_of(v)) else dtypes.float64
    v = uf.absolute(cast(v, dtypes.float32 if dt == dtypes.bfloat16 else dt))
    near = uf.multiply(uf.exp(v), _chbevl(uf.subtract(uf.divide(v, 2.0), 2.0), _I0A))
    safe = uf.where(uf.greater(v, 8.0), v, 8.0)  # keeps 32 / x finite where unused
    far = uf.divide(uf.multiply(uf.exp(v), _chbevl(uf.subtract(uf.divide(32.0, safe), 2.0),
                                                   _I0B)), uf.sqrt(safe))
    return as_result(cast(uf.where(uf.less_equal(v, 8.0), near, far), dt))


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
    """NaN -> nan, +inf -> posinf (default: the largest finite value), -inf -> neginf.

    NumPy rule: dtype kept; complex parts are treated separately; non-float input is
    returned as it is.

    nan_to_num([nan, inf, -inf, 1.0]) -> [0.0, 1.797...e+308, -1.797...e+308, 1.0]
    """
    v = asarray_like(x, "nan_to_num")
    v = cast(v, dtype_of(v))
    dt = dtype_of(v)
    if not dtypes.is_inexact(dt):
        return as_result(v)
    if dt.kind == "c":
        parts = [_fix(uf.real(v), nan, posinf, neginf), _fix(uf.imag(v), nan, posinf, neginf)]
        return as_result(ops.complex(*parts))
    return as_result(_fix(v, nan, posinf, neginf))


def _fix(v: Any, nan: Any, posinf: Any, neginf: Any) -> Any:
    big = float(dtypes.finfo(dtype_of(v)).max)
    v = uf.where(uf.isnan(v), cast(asarray_like(nan, "nan_to_num"), dtype_of(v)), v)
    v = uf.where(uf.isposinf(v), big if posinf is None else posinf, v)
    return cast(uf.where(uf.isneginf(v), -big if neginf is None else neginf, v), dtype_of(v))


# ------------------------------------------------------------------ windows
def _window(name: str, *args: Any) -> Any:
    if any(isinstance(a, Tracer) for a in args):
        raise error(TracerTypeError, name, f"{name} window parameters must be static")
    return getattr(np, name)(*args)


def bartlett(M: int) -> np.ndarray:
    """The Bartlett (triangular) window of M points (static: a NumPy array).

    bartlett(5) -> [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    return _window("bartlett", M)


def blackman(M: int) -> np.ndarray:
    """The Blackman window of M points (static: a NumPy array).

    blackman(3) -> [-1.4e-17, 1.0, -1.4e-17]
    """
    return _window("blackman", M)


def hamming(M: int) -> np.ndarray:
    """The Hamming window of M points (static: a NumPy array).

    hamming(3) -> [0.08, 1.0, 0.08]
    """
    return _window("hamming", M)


def hanning(M: int) -> np.ndarray:
    """The Hann window of M points (static: a NumPy array).

    hanning(3) -> [0.0, 1.0, 0.0]
    """
    return _window("hanning", M)


def kaiser(M: int, beta: float) -> np.ndarray:
    """The Kaiser window of M points and shape beta (static: a NumPy array).

    kaiser(3, 5.0) -> [0.0367, 1.0, 0.0367]
    """
    return _window("kaiser", M, beta)

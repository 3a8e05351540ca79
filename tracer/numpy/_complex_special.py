"""Complex sinh / cosh and inverse trigonometric functions as NumPy computes them.

NumPy's complex loops call npy_math's C99 Annex G functions (FreeBSD's msun
algorithms): they pin down the special values (signed zeros, which part is NaN,
infinities) and stay accurate where the textbook log formulas cancel or
overflow. These are the same algorithms written with `tracer.ops`, every branch
computed and the right one picked with `select`:

- csinh / ccosh: sinh(x) cos(y) + i cosh(x) sin(y), with e**|x| / 2 split in two
  factors past |x| = 709 so that finite results do not overflow early;
- casinh / cacos: Hull, Fairgrieve and Tang's algorithm (`_hard_work`): A and B
  from |z + i| and |z - i|, A - 1 and A - y through f(a, b) = (hypot(a, b) - b) / 2;
- catanh: log1p(4x / |z - 1|**2) / 4 + i atan2(2y, (1 - x)(1 + x) - y**2) / 2;
- casin, catan, cacosh are casinh, catanh, cacos of swapped or rotated parts.

complex64 computes in float64 and rounds once at the end (the float32 C
functions are accurate to a few ulps; this is at least as close).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from . import _math  # (a cycle: _math's complex branches call this module at run time)
from ._binary import _hypot
from ._promotion import cast, constant, dtype_of
from ._ufunc_core import select, signbit_of

Parts = tuple[Any, Any]

_EPS = 2.0 ** -52
_RECIP_EPS = 2.0 ** 52
_FOUR_SQRT_MIN = 2.0 ** -509
_QUARTER_SQRT_MAX = 2.0 ** 509
_SQRT_MIN = 2.0 ** -511
_SQRT_6_EPS = 3.6500241499888571e-8
_SQRT_3_EPS = 2.5809568279517849e-8
_PIO2 = math.pi / 2
_LN2 = math.log(2.0)
_NAN = math.nan


def _complex_fn(parts_fn: Callable[[Any, Any], Parts]) -> Callable[[Any], Any]:
    """A complex function from one on (real, imag) float64 parts."""
    def impl(z: Any) -> Any:
        dt = dtype_of(z)
        x, y = (cast(ops.real(z), dtypes.float64), cast(ops.imag(z), dtypes.float64))
        re, im = parts_fn(x, y)
        return cast(ops.complex(re, im), dt)
    return impl


def _copysign(a: Any, b: Any) -> Any:
    mag = constant(abs(a), np.shape(b), dtype_of(b)) if isinstance(a, float) else ops.abs(a)
    return ops.select(signbit_of(b), ops.neg(mag), mag)


def _isnan(v: Any) -> Any:
    return ops.ne(v, v)


def _isinf(v: Any) -> Any:
    return ops.eq(ops.abs(v), math.inf)


def _both(a: Any, b: Any) -> Any:
    return ops.bitwise_and(a, b)


def _either(a: Any, b: Any) -> Any:
    return ops.bitwise_or(a, b)


def _chain(cases: list[tuple[Any, Parts]], default: Parts) -> Parts:
    """The parts of the first case whose condition holds (an Annex G table)."""
    re, im = default
    for cond, (r, i) in reversed(cases):
        re, im = select(cond, r, re), select(cond, i, im)
    return re, im


def _pick(cases: list[tuple[Any, Any]], default: Any) -> Any:
    """The value of the first case whose condition holds."""
    out = default
    for cond, value in reversed(cases):
        out = select(cond, value, out)
    return out


# ------------------------------------------------------------------ csinh, ccosh
def _cosh_sinh(x: Any) -> tuple[Any, Any, tuple[Any, Any]]:
    """(cosh x, sinh x, split) for the csinh / ccosh products: past |x| = 709
    e**|x| / 2 overflows though cosh(x) cos(y) may not, so there cosh and sinh
    are h / 2 and `_scaled` multiplies the product by h = e**(|x| / 2) last."""
    t = ops.abs(x)
    big = ops.gt(t, 709.0)  # (x is float64)
    h = ops.exp(ops.mul(0.5, t))
    return (select(big, ops.mul(0.5, h), _math.cosh(x)),
            select(big, _copysign(ops.mul(0.5, h), x), _math.sinh(x)), (big, h))


def _scaled(factor: Any, trig: Any, split: tuple[Any, Any]) -> Any:
    big, h = split
    out = ops.mul(factor, trig)
    return select(big, ops.mul(out, h), out)


def _sinh_cosh_parts(x: Any, y: Any, hyperbolic_sine: bool) -> Parts:
    ch, sh, split = _cosh_sinh(x)
    cos_y, sin_y = ops.cos(y), ops.sin(y)
    finite_x, finite_y = ops.is_finite(x), ops.is_finite(y)
    x_zero, y_zero = ops.eq(x, 0), ops.eq(y, 0)
    nan_y = ops.sub(y, y)  # NaN for an infinite or NaN y
    if hyperbolic_sine:
        general = (_scaled(sh, cos_y, split), _scaled(ch, sin_y, split))
        cases = [(_both(finite_x, y_zero), (sh, y)),
                 (_both(x_zero, ops.bitwise_not(finite_y)), (x, nan_y)),
                 (y_zero, (ops.add(x, x), y))]
    else:
        general = (_scaled(ch, cos_y, split), _scaled(sh, sin_y, split))
        cases = [(_both(finite_x, y_zero), (ch, ops.mul(x, y))),
                 (_both(x_zero, ops.bitwise_not(finite_y)),
                  (nan_y, ops.abs(x))),  # +0 (glibc), x being ±0
                 (y_zero, (ops.mul(x, x), ops.mul(_copysign(0.0, x), y)))]
    cases += [(_both(finite_x, ops.bitwise_not(finite_y)), (_NAN, _NAN)),
              # +inf real part for either sign of x, as glibc (NumPy's C library)
              (_both(_isinf(x), ops.bitwise_not(finite_y)), (math.inf, nan_y)),
              (_isnan(x), (_NAN, _NAN))]
    return _chain(cases, general)


csinh = _complex_fn(lambda x, y: _sinh_cosh_parts(x, y, True))
ccosh = _complex_fn(lambda x, y: _sinh_cosh_parts(x, y, False))


# ------------------------------------------------------------------ casinh, cacos
def _f(a: Any, b: Any, hypot_ab: Any) -> Any:
    """(hypot(a, b) - b) / 2 without cancellation."""
    plain = ops.div(ops.sub(hypot_ab, b), 2)
    ratio = ops.div(ops.div(ops.mul(a, a), ops.add(hypot_ab, b)), 2)
    return select(ops.lt(b, 0), plain, select(ops.eq(b, 0), ops.div(a, 2), ratio))


def _hard_work(x: Any, y: Any) -> tuple[Any, Any, Any, Any, Any]:
    """Hull et al. for x, y >= 0 below 1/eps: (Re casinh, B usable, B,
    sqrt(A*A - y*y), y), the last two rescaled alike where they could underflow."""
    r, s = _hypot(x, ops.add(y, 1)), _hypot(x, ops.sub(y, 1))
    a = ops.max(ops.div(ops.add(r, s), 2), 1.0)
    ym1, yp1, one_my = ops.sub(y, 1), ops.add(y, 1), ops.sub(1, y)
    y_is_1 = ops.eq(y, 1)
    x_not_tiny = ops.ge(x, ops.mul(_EPS, ops.abs(ym1)))
    am1 = ops.add(_f(x, yp1, r), _f(x, one_my, s))
    rx = _pick([(_both(y_is_1, ops.lt(x, _EPS * _EPS / 128)), ops.sqrt(x)),
                (x_not_tiny, ops.log1p(ops.add(am1, ops.sqrt(ops.mul(am1, ops.add(a, 1)))))),
                (ops.lt(y, 1), ops.div(x, ops.sqrt(ops.mul(one_my, yp1))))],
               ops.log1p(ops.add(ym1, ops.sqrt(ops.mul(ym1, yp1)))))
    rx = select(ops.lt(a, 10), rx, ops.log(ops.add(a, ops.sqrt(ops.sub(ops.mul(a, a), 1)))))
    b = ops.div(y, a)
    amy = ops.add(_f(x, yp1, r), _f(x, ym1, s))
    big_scale = 4 / _EPS / _EPS
    root, new_y = _chain(
        [(_both(y_is_1, ops.lt(x, _EPS / 128)),
          (ops.mul(ops.sqrt(x), ops.sqrt(ops.div(ops.add(a, y), 2))), y)),
         (x_not_tiny, (ops.sqrt(ops.mul(amy, ops.add(a, y))), y)),
         (ops.gt(y, 1), (ops.div(ops.mul(ops.mul(x, big_scale), y),
                                 ops.sqrt(ops.mul(yp1, ym1))), ops.mul(y, big_scale)))],
        (ops.sqrt(ops.mul(one_my, yp1)), y))
    tiny_y = ops.lt(y, _FOUR_SQRT_MIN)
    root = select(tiny_y, ops.mul(a, 2 / _EPS), root)
    new_y = select(tiny_y, ops.mul(y, 2 / _EPS), new_y)
    usable = ops.bitwise_and(ops.bitwise_not(tiny_y), ops.le(b, 0.6417))
    return rx, usable, b, root, new_y


def _clog_large(x: Any, y: Any) -> Parts:
    """log(x + iy) for |x + iy| finite and above ~1/eps (or infinite)."""
    ax, ay = ops.abs(x), ops.abs(y)
    big, small = ops.max(ax, ay), ops.min(ax, ay)
    huge = ops.add(ops.log(_hypot(ops.div(x, math.e), ops.div(y, math.e))), 1)
    plain = ops.log(_hypot(x, y))
    squares = ops.div(ops.log(ops.add(ops.mul(big, big), ops.mul(small, small))), 2)
    use_plain = _either(ops.gt(big, _QUARTER_SQRT_MAX), ops.lt(small, _SQRT_MIN))
    re = select(ops.gt(big, 8.98846567431158e307), huge, select(use_plain, plain, squares))
    return re, ops.atan2(y, x)


def _casinh(x: Any, y: Any) -> Parts:
    ax, ay = ops.abs(x), ops.abs(y)
    neg = signbit_of(x)
    lr, li = _clog_large(select(neg, ops.neg(x), x), select(neg, ops.neg(y), y))
    large = (_copysign(ops.add(lr, _LN2), x), _copysign(li, y))
    rx, usable, b, root, new_y = _hard_work(ax, ay)
    ry = select(usable, _math.arcsin(b), ops.atan2(new_y, root))
    tiny = _both(ops.lt(ax, _SQRT_6_EPS / 4), ops.lt(ay, _SQRT_6_EPS / 4))
    return _chain([(_both(_isinf(x), _isnan(y)), (x, ops.add(y, y))),
                   (_both(_isnan(x), _isinf(y)), (_copysign(math.inf, x), ops.add(x, x))),
                   (_both(_isnan(x), ops.eq(y, 0)), (ops.add(x, x), y)),
                   (_either(_isnan(x), _isnan(y)), (_NAN, _NAN)),
                   (_either(ops.gt(ax, _RECIP_EPS), ops.gt(ay, _RECIP_EPS)), large),
                   (tiny, (x, y))],
                  (_copysign(rx, x), _copysign(ry, y)))


def _cacos(x: Any, y: Any) -> Parts:
    ax, ay = ops.abs(x), ops.abs(y)
    neg_x, pos_y = signbit_of(x), ops.bitwise_not(signbit_of(y))
    lr, li = _clog_large(x, y)
    lry = ops.add(lr, _LN2)
    large = (ops.abs(li), select(pos_y, ops.neg(lry), lry))
    ry, usable, b, root, new_x = _hard_work(ay, ax)
    rx = select(usable, _math.arccos(select(neg_x, ops.neg(b), b)),
                ops.atan2(root, select(neg_x, ops.neg(new_x), new_x)))
    tiny = _both(ops.lt(ax, _SQRT_6_EPS / 4), ops.lt(ay, _SQRT_6_EPS / 4))
    return _chain([(_both(_isinf(x), _isnan(y)), (ops.add(y, y), -math.inf)),
                   (_both(_isnan(x), _isinf(y)), (ops.add(x, x), ops.neg(y))),
                   (_both(_isnan(y), ops.eq(x, 0)), (_PIO2, ops.add(y, y))),
                   (_either(_isnan(x), _isnan(y)), (_NAN, _NAN)),
                   (_either(ops.gt(ax, _RECIP_EPS), ops.gt(ay, _RECIP_EPS)), large),
                   (_both(ops.eq(x, 1), ops.eq(y, 0)), (0.0, ops.neg(y))),
                   (tiny, (ops.sub(_PIO2, x), ops.neg(y)))],
                  (rx, select(pos_y, ops.neg(ry), ry)))


def _cacosh(x: Any, y: Any) -> Parts:
    rx, ry = _cacos(x, y)
    nan_rx, nan_ry = _isnan(rx), _isnan(ry)
    return _chain([(_both(ops.eq(x, 0), _isnan(y)), (_NAN, _PIO2)),
                   (_both(nan_rx, nan_ry), (ry, rx)),
                   (nan_rx, (ops.abs(ry), rx)),
                   (nan_ry, (ry, ry))],
                  (ops.abs(ry), _copysign(rx, y)))


# ------------------------------------------------------------------ catanh
def _real_part_reciprocal(x: Any, y: Any) -> Any:
    """Re(1 / (x + iy)) = x / (x*x + y*y) for max(|x|, |y|) > 1/eps, scaled by a
    power of two so that the squares neither overflow nor underflow."""
    m = ops.max(ops.abs(x), ops.abs(y))
    scale = ops.pow(2.0, ops.neg(ops.floor(ops.div(ops.log(m), _LN2))))
    xs, ys = ops.mul(x, scale), ops.mul(y, scale)
    scaled = ops.mul(ops.div(xs, ops.add(ops.mul(xs, xs), ops.mul(ys, ys))), scale)
    return select(_isinf(x), ops.div(1, x), select(_isinf(y), ops.div(ops.div(x, y), y), scaled))


def _catanh(x: Any, y: Any) -> Parts:
    ax, ay = ops.abs(x), ops.abs(y)
    axm1 = ops.sub(ax, 1)
    squares = ops.mul(axm1, axm1)
    squares = select(ops.lt(ay, _SQRT_MIN), squares, ops.add(squares, ops.mul(ay, ay)))
    rx = select(_both(ops.eq(ax, 1), ops.lt(ay, _EPS)),
                ops.div(ops.sub(_LN2, ops.log(ay)), 2),
                ops.div(ops.log1p(ops.div(ops.mul(4, ax), squares)), 4))
    one_m_x2 = ops.mul(ops.sub(1, ax), ops.add(1, ax))
    ry = ops.div(_pick([(ops.eq(ax, 1), ops.atan2(2.0, ops.neg(ay))),
                        (ops.lt(ay, _EPS), ops.atan2(ops.mul(2, ay), one_m_x2))],
                       ops.atan2(ops.mul(2, ay), ops.sub(one_m_x2, ops.mul(ay, ay)))), 2)
    pio2_y = _copysign(_PIO2, y)
    zero_x = _copysign(0.0, x)
    tiny = _both(ops.lt(ax, _SQRT_3_EPS / 2), ops.lt(ay, _SQRT_3_EPS / 2))
    return _chain([(_both(ops.eq(y, 0), ops.le(ax, 1)), (_math.arctanh(x), y)),
                   (ops.eq(x, 0), (x, _math.arctan(y))),
                   (_both(_isinf(x), _isnan(y)), (zero_x, ops.add(y, y))),
                   (_both(_isnan(x), _isinf(y)), (zero_x, pio2_y)),
                   (_either(_isnan(x), _isnan(y)), (_NAN, _NAN)),
                   (_either(ops.gt(ax, _RECIP_EPS), ops.gt(ay, _RECIP_EPS)),
                    (_real_part_reciprocal(x, y), pio2_y)),
                   (tiny, (x, y))],
                  (_copysign(rx, x), _copysign(ry, y)))


def _swapped(parts_fn: Callable[[Any, Any], Parts]) -> Callable[[Any, Any], Parts]:
    """f(z) = reverse(g(reverse(z))) with reverse(x + iy) = y + ix (casin, catan)."""
    def impl(x: Any, y: Any) -> Parts:
        re, im = parts_fn(y, x)
        return im, re
    return impl


casinh = _complex_fn(_casinh)
casin = _complex_fn(_swapped(_casinh))
cacos = _complex_fn(_cacos)
cacosh = _complex_fn(_cacosh)
catanh = _complex_fn(_catanh)
catan = _complex_fn(_swapped(_catanh))


# ------------------------------------------------------------------ exp2, reciprocal
def cexp2(z: Any) -> Any:
    """NumPy's complex exp2: exp of (x ln 2, y ln 2), scaled part by part so that a
    signed zero survives (a complex multiply by ln 2 would add +0 to -0)."""
    return ops.exp(ops.complex(ops.mul(ops.real(z), _LN2), ops.mul(ops.imag(z), _LN2)))


def creciprocal(z: Any) -> Any:
    """NumPy's complex reciprocal loop: Smith's division 1 / z, dividing by the
    larger part (1 / 0 is NaN + NaN i, 1 / -i is exactly +i)."""
    x, y = ops.real(z), ops.imag(z)
    by_x = ops.le(ops.abs(y), ops.abs(x))  # False when a part is NaN, as in C
    r = ops.div(select(by_x, y, x), select(by_x, x, y))
    d = select(by_x, ops.add(x, ops.mul(y, r)), ops.add(ops.mul(x, r), y))
    re = ops.div(select(by_x, 1.0, r), d)
    im = ops.neg(ops.div(select(by_x, r, 1.0), d))
    return ops.complex(re, im)

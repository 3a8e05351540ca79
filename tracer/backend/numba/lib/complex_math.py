"""Complex element-wise math with NumPy's special values (numba `njit` helpers).

NumPy computes complex sin, cos, tan, tanh, exp and the general power with the C
library (glibc: C99 Annex G), and complex multiply, sign, max / min and small
integer powers in its own loops. numba's complex functions use textbook formulas,
which turn infinities into NaN (`sin(0 + 1e300j)` gave nan+infj, NumPy infj), drop
signed zeros (`tanh(-0j)`) and make `0j ** w` NaN. These helpers follow glibc's
and NumPy's algorithms case by case. The transcendental ones compute in float64
(complex64 operands are widened and the call site rounds the result back, which
keeps special values exact and avoids float32's intermediate overflows); the loop
ones (multiply, sign, integer powers) keep the operands' precision, as NumPy's
float32 loops overflow where they do. Special cases sit behind one finiteness test.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from .scalar_math import complex_divide

_jit = njit(cache=True, error_model="numpy")

_INF = math.inf
_NAN = math.nan
_TINY = 2.2250738585072014e-308     # DBL_MIN: below it sin(x) is x, sinh(x) is x
_MAX = 1.7976931348623157e308       # DBL_MAX
_EPS = 2.220446049250313e-16        # DBL_EPSILON
_T = 709                            # (int)((DBL_MAX_EXP - 1) * ln 2): exp(_T) is finite
_T2 = 354                           # the same for exp(2 * x) (tanh, tan)


def _like(x, value):  # typed by the overload below
    """`value` rounded to the float type of `x` (float32 parts compute as NumPy's
    complex64 loops do: their overflows and roundings are the float32 ones)."""


@overload(_like)
def _like_impl(x, value):
    if x == types.float32:
        return lambda x, value: np.float32(value)
    return lambda x, value: value


@_jit
def _sincos(x):
    """(sin x, cos x), with sin x = x exactly for subnormal x (glibc)."""
    if abs(x) > _TINY:
        return math.sin(x), math.cos(x)
    return x, 1.0


@_jit
def _scaled(big, s, c):
    """(e**|big| / 2 * s, e**|big| / 2 * c) without overflowing e**|big| (|big| > _T)."""
    exp_t = math.exp(_T)
    r = abs(big) - _T
    s *= exp_t / 2
    c *= exp_t / 2
    if r > _T:
        r -= _T
        s *= exp_t
        c *= exp_t
    if r > _T:
        return _MAX * s, _MAX * c
    e = math.exp(r)
    return e * s, e * c


@_jit
def _cosh_finite(x, y):
    """cosh(x + iy) for finite x, y (glibc ccosh)."""
    s, c = _sincos(y)
    if abs(x) > _T:
        if x < 0:
            s = -s
        s, c = _scaled(x, s, c)
        return complex(c, s)
    return complex(math.cosh(x) * c, math.sinh(x) * s)


@_jit
def _cosh(x, y):
    """cosh(x + iy) with C99 Annex G's special values, as glibc's ccosh."""
    if math.isfinite(x) and math.isfinite(y):
        return _cosh_finite(x, y)
    if math.isfinite(x):
        return complex(y - y, 0.0 if x == 0 else _NAN)
    if math.isinf(x):
        if math.isfinite(y) and y != 0:
            s, c = _sincos(y)
            return complex(math.copysign(_INF, c),
                           math.copysign(_INF, s) * math.copysign(1.0, x))
        if y == 0:
            return complex(_INF, y * math.copysign(1.0, x))
        return complex(_INF, y - y)
    return complex(_NAN, y if y == 0 else _NAN)


@_jit
def complex_cos(z):
    """cos(z) = cosh(iz), as glibc's ccos."""
    return _cosh(-float(z.imag), float(z.real))


@_jit
def complex_sin(z):
    """sin(z) with C99 Annex G's special values, as glibc's csin."""
    x, y = float(z.real), float(z.imag)
    negate = math.copysign(1.0, x) < 0
    ax = abs(x)
    if math.isfinite(x) and math.isfinite(y):
        s, c = _sincos(ax)
        if negate:
            s = -s
        if abs(y) > _T:
            if y < 0:
                c = -c
            s, c = _scaled(y, s, c)
            return complex(s, c)
        return complex(math.cosh(y) * s, math.sinh(y) * c)
    if math.isfinite(y):
        return complex(ax - ax, y) if y == 0 else complex(_NAN, _NAN)
    if math.isinf(y):
        if ax == 0:
            return complex(math.copysign(0.0, x), y)
        if math.isfinite(ax):
            s, c = _sincos(ax)
            re, im = math.copysign(_INF, s), math.copysign(_INF, c)
            return complex(-re if negate else re, -im if y < 0 else im)
        return complex(ax - ax, _INF)
    return complex(math.copysign(0.0, x) if ax == 0 else _NAN, _NAN)


@_jit
def _tanh_finite(x, y):
    """tanh(x + iy) for finite x, y (glibc ctanh; tan swaps the parts)."""
    s, c = _sincos(y)
    if abs(x) > _T2:
        exp_2t = math.exp(2 * _T2)
        im = 4 * s * c / exp_2t
        r = abs(x) - _T2
        im = im / exp_2t if r > _T2 else im / math.exp(2 * r)
        return complex(math.copysign(1.0, x), im)
    sh, ch = (math.sinh(x), math.cosh(x)) if abs(x) > _TINY else (x, 1.0)
    den = sh * sh + c * c if abs(sh) > abs(c) * _EPS else c * c
    return complex(sh * ch / den, s * c / den)


@_jit
def _tanh(x, y):
    """tanh(x + iy) with C99 Annex G's special values, as glibc's ctanh."""
    if math.isfinite(x) and math.isfinite(y):
        return _tanh_finite(x, y)
    if math.isinf(x):
        if math.isfinite(y) and abs(y) > 1:
            s, c = math.sin(y), math.cos(y)
            return complex(math.copysign(1.0, x), math.copysign(0.0, s * c))
        return complex(math.copysign(1.0, x), math.copysign(0.0, y))
    if y == 0:
        return complex(x, y)
    return complex(x if x == 0 else _NAN, _NAN)


@_jit
def complex_tanh(z):
    return _tanh(float(z.real), float(z.imag))


@_jit
def complex_tan(z):
    """tan(z) = -i tanh(iz), as glibc's ctan (the same cases with the parts swapped)."""
    w = _tanh(-float(z.imag), float(z.real))
    if w.real != w.real:  # glibc passes tan(0 + NaN i)'s NaN through, else makes a + NaN
        return complex(w.imag, z.imag if z.real == 0 else _NAN)
    return complex(w.imag, -w.real)


@_jit
def complex_exp(z):
    """exp(z) with C99 Annex G's special values, as glibc's cexp."""
    x, y = float(z.real), float(z.imag)
    if math.isfinite(x) and math.isfinite(y):
        s, c = _sincos(y)
        if x > _T:  # e**x overflows: scale s, c by e**_T first (exp(1000 + 0j) is inf+0j)
            exp_t = math.exp(_T)
            for _ in range(2):
                if x > _T:
                    x -= _T
                    s *= exp_t
                    c *= exp_t
            if x > _T:
                return complex(_MAX * c, _MAX * s)
        e = math.exp(x)
        return complex(e * c, e * s)
    if math.isfinite(x):
        return complex(_NAN, _NAN)
    if math.isinf(x):
        if math.isfinite(y):
            value = 0.0 if x < 0 else _INF
            if y == 0:
                return complex(value, y)
            s, c = _sincos(y)
            return complex(math.copysign(value, c), math.copysign(value, s))
        if x > 0:
            return complex(_INF, y - y)
        return complex(0.0, math.copysign(0.0, y))
    return complex(_NAN, y if y == 0 else _NAN)


@_jit
def complex_expm1(z):
    """expm1(z) as NumPy computes it: numba's exp(z) - 1 cancels to 0 for small |z|
    (expm1(1e-300 + 0j) gave 0); cos(y) - 1 = -2 sin(y/2)**2 keeps the real part."""
    half = np.sin(z.imag / 2)
    return complex(np.expm1(z.real) * np.cos(z.imag) - 2 * half * half,
                   np.exp(z.real) * np.sin(z.imag))


# ---------------------------------------------------------------- product, power

@intrinsic
def _fma(typingctx, a, b, c):  # numba intrinsic protocol
    """a * b + c with one rounding (LLVM's llvm.fma)."""
    if not isinstance(a, types.Float) or not a == b == c:
        return None

    def codegen(context, builder, signature, args):
        ty = args[0].type
        fn = builder.module.declare_intrinsic("llvm.fma", [ty], ir.FunctionType(ty, [ty, ty, ty]))
        return builder.call(fn, args)
    return a(a, b, c), codegen


@_jit
def complex_multiply(a, b):
    """a * b as NumPy's SIMD loop computes it (npyv_muladdsub, on FMA hardware): each
    part one fused multiply-add, so (1e-300 + 1j)(-1 + 1e300j) keeps its imaginary
    7.8e-17 and (1e300 + 1e300j)**2 is -inf+infj, not nan+infj."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    return complex(_fma(ar, br, -(ai * bi)), _fma(ar, bi, ai * br))


@_jit
def _cmul(a, b, c, d):
    """(a + ib)(c + id) as NumPy's `cmul`: the plain formula, no infinity recovery."""
    return a * c - b * d, a * d + b * c


@_jit
def _mul_annex_g(a, b, c, d):
    """(a + ib)(c + id) as C's complex `*` (libgcc's __muldc3): a NaN + NaN i result
    with an infinite factor (or product) is recomputed as an infinity."""
    x, y = a * c - b * d, a * d + b * c
    if not (math.isnan(x) and math.isnan(y)):
        return x, y
    big = math.isinf(a) or math.isinf(b) or math.isinf(c) or math.isinf(d)
    if not big and not (math.isinf(a * c) or math.isinf(b * d) or math.isinf(a * d)
                        or math.isinf(b * c)):
        return x, y
    if math.isinf(a) or math.isinf(b):  # box the infinite factor, NaNs of the other -> 0
        a = math.copysign(1.0 if math.isinf(a) else 0.0, a)
        b = math.copysign(1.0 if math.isinf(b) else 0.0, b)
        c = math.copysign(0.0, c) if math.isnan(c) else c
        d = math.copysign(0.0, d) if math.isnan(d) else d
    if math.isinf(c) or math.isinf(d):
        c = math.copysign(1.0 if math.isinf(c) else 0.0, c)
        d = math.copysign(1.0 if math.isinf(d) else 0.0, d)
        a = math.copysign(0.0, a) if math.isnan(a) else a
        b = math.copysign(0.0, b) if math.isnan(b) else b
    if not big:  # an overflowed product: the NaN parts count as 0
        a = math.copysign(0.0, a) if math.isnan(a) else a
        b = math.copysign(0.0, b) if math.isnan(b) else b
        c = math.copysign(0.0, c) if math.isnan(c) else c
        d = math.copysign(0.0, d) if math.isnan(d) else d
    return _INF * (a * c - b * d), _INF * (a * d + b * c)


@_jit
def _log(x, y):
    """log(x + iy) (NumPy's npy_clog: rescaled where |z| would overflow or be subnormal)."""
    if x == 0 and y == 0:
        return -1.0 / abs(x), math.copysign(math.pi if math.copysign(1.0, x) < 0 else 0.0, y)
    if math.isnan(x) or math.isnan(y):
        return (_INF if math.isinf(x) or math.isinf(y) else _NAN), _NAN
    ax, ay = abs(x), abs(y)
    if ax > _MAX / 4 or ay > _MAX / 4:
        re = math.log(math.hypot(ax / 2, ay / 2)) + math.log(2.0)
    elif ax < _TINY and ay < _TINY:
        re = math.log(math.hypot(math.ldexp(ax, 53), math.ldexp(ay, 53))) - 53 * math.log(2.0)
    else:
        h = math.hypot(ax, ay)
        if 0.71 <= h <= 1.73:
            am, an = max(ax, ay), min(ax, ay)
            re = math.log1p((am - 1) * (am + 1) + an * an) / 2
        else:
            re = math.log(h)
    return re, math.atan2(y, x)


@_jit
def _int_power(ar, ai, n):
    """(ar + i ai) ** |n| by NumPy's square-and-multiply, in the parts' own precision."""
    if n == 1:
        return ar, ai
    if n == 2:
        return _cmul(ar, ai, ar, ai)
    if n == 3:
        sr, si = _cmul(ar, ai, ar, ai)
        return _cmul(ar, ai, sr, si)
    n = abs(n)
    rr, ri = _like(ar, 1.0), _like(ar, 0.0)
    pr, pi = ar, ai
    mask = 1
    while True:
        if n & mask:
            rr, ri = _cmul(rr, ri, pr, pi)
        mask <<= 1
        if n < mask:
            return rr, ri
        pr, pi = _cmul(pr, pi, pr, pi)


@_jit
def complex_pow(a, b):
    """a ** b as NumPy's npy_cpow: 1 for b == 0, 0 for a == 0 and Re b > 0 (NaN for other
    b), products for integer b in (-100, 100), else glibc's cpow, exp(b * log a)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    if br == 0 and bi == 0:
        return complex(1.0, 0.0)
    if ar == 0 and ai == 0:
        return complex(0.0, 0.0) if br > 0 else complex(_NAN, _NAN)
    if bi == 0 and -100 < br < 100 and br == math.floor(br):
        rr, ri = _int_power(ar, ai, int(br))
        if br < 0:
            return complex_divide(complex(1.0, 0.0), complex(rr, ri))
        return complex(rr, ri)
    lr, li = _log(float(ar), float(ai))
    x, y = _mul_annex_g(float(br), float(bi), lr, li)
    return complex_exp(complex(x, y))


# ---------------------------------------------------------------- sign, max, min

@_jit
def complex_sign(z):
    """z / |z| as NumPy: each part divided by hypot (float32's for complex64); an
    infinite |z| gives the unit direction of its infinite part (NaN for two)."""
    r, i = z.real, z.imag
    h = _like(r, math.hypot(r, i))
    if math.isnan(h):
        return complex(_NAN, _NAN)
    if math.isinf(h):
        if math.isinf(r):
            return complex(_NAN, _NAN) if math.isinf(i) else \
                complex(1.0 if r > 0 else -1.0, 0.0)
        return complex(0.0, 1.0 if i > 0 else -1.0)
    if h == 0:
        return complex(0.0, 0.0)
    return complex(r / h, i / h)


@_jit
def complex_maximum(a, b):
    """NumPy's lexicographic maximum: `a` if it has a NaN part or is >= `b`, else `b`
    (so the NaN operand itself comes out, nan+1j stays nan+1j)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    if ar != ar or ai != ai:
        return a
    ge = (ar > br and bi == bi) or (ar == br and ai >= bi)
    return a if ge else b


@_jit
def complex_minimum(a, b):
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    if ar != ar or ai != ai:
        return a
    le = (ar < br and bi == bi) or (ar == br and ai <= bi)
    return a if le else b

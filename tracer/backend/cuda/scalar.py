"""Scalar code of the element-wise ops for CUDA kernels.

The CPU backend's emitters (`numba.scalar.SCALAR_EMITTERS`) are used as they are:
their helpers resolve to `cuda.lib.mathlib`, which has a GPU version of every name
they import. Only the ops whose CPU expression calls a NumPy ufunc directly
(numba-cuda types few of them) are replaced, by calls to `cuda.lib.mathlib` helpers
(libdevice on the GPU), with the same casts to the result dtype.
"""

from __future__ import annotations

import numpy as np

from ...core import Eqn
from ..numba.scalar import SCALAR_EMITTERS, Emitter, ScalarContext, cast, literal, power

F64 = np.dtype(np.float64)


def _suffix(dtype: np.dtype) -> str:
    if dtype.kind == "c":
        return "complex"
    return "f64" if dtype == F64 else "f32"  # float16 is computed in float32


def _math(name: str) -> Emitter:
    """`<name>_<f32|f64|complex>(x)` cast to the result dtype."""
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        dt = eqn.inputs[0].aval.dtype
        return cast(ctx, f"{ctx.use(f'{name}_{_suffix(dt)}')}({a[0]})", eqn.outputs[0].aval.dtype)
    return emit


def _rsqrt(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    dt = eqn.inputs[0].aval.dtype
    root = f"{ctx.use(f'sqrt_{_suffix(dt)}')}({a[0]})"
    if dt.kind == "c":
        return cast(ctx, f"{ctx.use('complex_divide')}({literal(1, dt)}, {root})", dt)
    one = literal(1, np.dtype(np.float32) if dt.itemsize < 4 else dt)
    return cast(ctx, f"{one} / {root}", dt)


def _rem(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    dt = eqn.inputs[0].aval.dtype
    if dt.kind in "iu":
        return SCALAR_EMITTERS["rem"](ctx, eqn, a)
    return cast(ctx, f"{ctx.use(f'fmod_{_suffix(dt)}')}({a[0]}, {a[1]})", dt)


def _is_finite(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    return f"{ctx.use(f'isfinite_{_suffix(eqn.inputs[0].aval.dtype)}')}({a[0]})"


def _logistic(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    dt = eqn.inputs[0].aval.dtype
    if dt.kind != "c":
        return SCALAR_EMITTERS["logistic"](ctx, eqn, a)
    one = literal(1, dt)
    return cast(ctx, f"{ctx.use('complex_divide')}({one}, {one} + "
                     f"{ctx.use('exp_complex')}(-{a[0]}))", dt)


def _fast_or_complex(name: str) -> Emitter:
    """exp, log, tanh: the CPU emitter names `<name>_f32/_f64` helpers (here libdevice);
    complex operands go to `<name>_complex`."""
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        if eqn.inputs[0].aval.dtype.kind == "c":
            return _math(name)(ctx, eqn, a)
        return SCALAR_EMITTERS[name](ctx, eqn, a)
    return emit


def _real_only(name: str) -> Emitter:
    """sin, cos, tan, exp, tanh: libdevice for real operands; complex ones keep the CPU
    emitter, whose `numba.lib.complex_math` helpers (NumPy's special values) compile for the GPU."""
    real = _math(name) if name in ("sin", "cos", "tan") else SCALAR_EMITTERS[name]

    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        if eqn.inputs[0].aval.dtype.kind == "c":
            return SCALAR_EMITTERS[name](ctx, eqn, a)
        return real(ctx, eqn, a)
    return emit


CUDA_SCALAR_EMITTERS: dict[str, Emitter] = {
    **SCALAR_EMITTERS,
    "ceil": _math("ceil"), "floor": _math("floor"), "round_nearest_even": _math("rint"),
    "exp": _real_only("exp"), "log": _fast_or_complex("log"),
    "tanh": _real_only("tanh"), "expm1": _math("expm1"), "log1p": _math("log1p"),
    "sin": _real_only("sin"), "cos": _real_only("cos"), "tan": _real_only("tan"),
    "sqrt": _math("sqrt"),
    "cbrt": _math("cbrt"), "rsqrt": _rsqrt, "rem": _rem, "is_finite": _is_finite,
    "logistic": _logistic,
    # (libdevice's pow is the general log/exp path, ~90 PTX instructions per element:
    # more than the rest of a GELU, whose x ** 3 is two products here)
    "pow": power((2, 3)),
}

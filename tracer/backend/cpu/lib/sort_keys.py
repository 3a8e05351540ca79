"""Total-order keys for the cpu backend's sort kernels (`cpu.lib.sort`, `sort_network`).

The default comparator (ascending, float total order) on one key needs no
comparisons: each value maps to an unsigned integer of its width whose order is
the total order (`to_key`: floats flip all bits when negative and the sign bit
otherwise, so -NaN < -Inf < ... < -0 < +0 < ... < +NaN; signed ints flip the sign
bit; bools and unsigned ints are their own keys). `from_key` maps a sorted key
back to its value, so sorting one array never moves an index. float16 arrays are
their uint16 bits (the backend's storage type): `half_key` / `half_from_key` read
those bits as an IEEE half. The njit options of the sort kernels live here too.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

_OPTIONS = dict(cache=True, error_model="numpy", nogil=True)
# the kernels without a parallel loop are called from compiled code only: no Python or
# C wrapper to generate (a tenth of a second of compile time each)
_SERIAL = dict(_OPTIONS, no_cpython_wrapper=True, no_cfunc_wrapper=True)
_INLINED = dict(_SERIAL, inline="always")  # small helpers typed inside their callers


def _width(x: types.Type) -> int:
    return 8 if isinstance(x, types.Boolean) else x.bitwidth


def _key_codegen(width: int, kind: str, inverse: bool):
    """LLVM code mapping a value of `kind` ("f" float bits, "i", "u", "b") to its
    unsigned total-order key, or (inverse) a key back to the value's bits."""
    def codegen(context, builder, signature, args):
        ity = ir.IntType(width)
        sign, ones = ir.Constant(ity, 1 << (width - 1)), ir.Constant(ity, (1 << width) - 1)
        v = args[0]
        if not inverse:
            v = builder.bitcast(v, ity) if v.type != ity and kind == "f" else v
            v = builder.zext(v, ity) if kind == "b" else v
        if kind == "i":
            v = builder.xor(v, sign)
        elif kind == "f":
            # forward: negative bits flip all, others the sign; inverse: keys with the sign
            # bit set were non-negative (flip the sign), others negative (flip all)
            test = builder.icmp_signed(">=" if inverse else "<", v, ir.Constant(ity, 0))
            v = builder.xor(v, builder.select(test, ones, sign))
        if inverse:
            target = context.get_value_type(signature.return_type)
            if kind == "b":
                return builder.icmp_unsigned("!=", v, ir.Constant(ity, 0))
            return builder.bitcast(v, target) if target != ity else v
        return v
    return codegen


def _kind(x: types.Type, half: bool) -> str:
    if isinstance(x, types.Boolean):
        return "b"
    if half or isinstance(x, types.Float):
        return "f"
    return "i" if x.signed else "u"


def _key_intrinsic(half: bool):
    def impl(typingctx, x):  # numba intrinsic protocol
        if not isinstance(x, (types.Float, types.Integer, types.Boolean)):
            return None
        width = _width(x)
        return getattr(types, f"uint{width}")(x), _key_codegen(width, _kind(x, half), False)
    return intrinsic(impl)


def _value_intrinsic(half: bool):
    def impl(typingctx, key, like):
        if not isinstance(like, (types.Float, types.Integer, types.Boolean)):
            return None
        return like(key, like), _key_codegen(_width(like), _kind(like, half), True)
    return intrinsic(impl)


to_key, half_key = _key_intrinsic(False), _key_intrinsic(True)
from_key, half_from_key = _value_intrinsic(False), _value_intrinsic(True)


def key_buffer(shape, like):
    """An uninitialised array of keys for values like `like` (unsigned, same width)."""


@overload(key_buffer, jit_options=_SERIAL)
def _key_buffer(shape, like):
    dtype = getattr(np, f"uint{_width(like)}")
    return lambda shape, like: np.empty(shape, dtype)

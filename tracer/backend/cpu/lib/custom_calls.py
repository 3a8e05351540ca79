"""The custom-call targets that generated cpu modules call: `numba.njit` versions of
the functions given to `tr.register_custom_call`, published as attributes of this
module so a generated module can import them by name.

A target's attribute name carries its registration revision, and the emitter writes a
digest of the function's code into the generated source, so the content-addressed
disk cache never serves machine code compiled for another function.
"""

from __future__ import annotations

import hashlib
import sys
from typing import Any, Callable

import numba

from ....core import ShapedArray
from ....errors import TracerTypeError


def publish(target: str, revision: int, fn: Callable[..., None],
            avals: list[ShapedArray]) -> str:
    """The attribute name under which the compiled `fn` is importable from this module;
    compiles it for `avals` (outputs then operands, as arrays) and raises
    TracerTypeError when numba cannot (the emitter then calls `fn` as a host callback),
    never a numba traceback from inside a generated module."""
    name = f"custom_call_{target}_{revision}"
    module = sys.modules[__name__]
    signature = tuple(numba.types.Array(numba.from_dtype(a.dtype), a.ndim, "C") for a in avals)
    try:  # (a builtin, a ufunc, a callable object, bytecode numba does not know...)
        if not hasattr(module, name):
            setattr(module, name, numba.njit(cache=False)(fn))
        getattr(module, name).compile(signature)
    except (numba.core.errors.NumbaError, numba.core.errors.UnsupportedBytecodeError,
            TypeError) as err:
        first = str(err).strip().splitlines()[:6]
        raise TracerTypeError(f"custom_call {target!r}: numba cannot compile the registered "
                              f"function for ({', '.join(map(str, avals))}): "
                              + " / ".join(first)) from None
    return name


def code_digest(fn: Callable[..., Any]) -> str:
    """A digest of `fn`'s bytecode and constants (what the compiled code depends on)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return "unknown"
    consts = repr(tuple(c if not hasattr(c, "co_code") else c.co_code for c in code.co_consts))
    names = repr(code.co_names)
    data = code.co_code + consts.encode() + names.encode()
    return hashlib.sha256(data).hexdigest()[:16]

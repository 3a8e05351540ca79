"""jit cache keys and their explanation.

A key is (argument pytree structure, one (shape, dtype, weak) triple per leaf,
static argument values, backend). Computing it is the hot path of every jitted
call, so `leaf_signature` avoids building objects for the common leaf types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

import numpy as np

from . import dtypes, reprs
from .core import ShapedArray, reject_masked
from .errors import DTypeError, EscapedTracerError, TracerOverflowError, TracerTypeError
from .numpy._eager import EagerArray
from .tracing import Tracer, escaped_message

if TYPE_CHECKING:
    import logging


def log() -> logging.Logger:
    """The "tracer.jit" logger of cache misses and compiles (`logging` is imported on the
    first message: `import tracer` need not load it)."""
    import logging

    return logging.getLogger("tracer.jit")

LeafSig = tuple  # (shape, dtype, weak_type)

_WEAK = {bool: dtypes.bool_, int: dtypes.int64, float: dtypes.float64,
         complex: dtypes.complex128}


def leaf_signature(x: Any) -> LeafSig:
    """(shape, dtype, weak_type) of one argument leaf, without building avals."""
    t = type(x)
    if t is np.ndarray or t is EagerArray:
        d = x.dtype
        return (x.shape, d if d.isnative else d.newbyteorder("="), False)
    weak = _WEAK.get(t)
    if weak is not None:
        return ((), weak, True)
    if isinstance(x, np.generic):
        return ((), x.dtype, False)
    if t is ShapedArray:
        return (x.shape, x.dtype, x.weak_type)
    if isinstance(x, Tracer):
        raise EscapedTracerError(escaped_message(x))
    if getattr(t, "__cuda_ndarray__", False):  # a numba device array: never copied here
        return (tuple(x.shape), np.dtype(x.dtype), False)
    if hasattr(x, "shape") and hasattr(x, "dtype") and not hasattr(x, "__array__"):
        return (tuple(x.shape), np.dtype(x.dtype), False)  # ShapeDtypeStruct-like specs
    reject_masked(x, "jit argument")
    arr = np.asarray(x)
    return (arr.shape, arr.dtype, False)


def aval_from_signature(sig: LeafSig, name: str = "") -> ShapedArray:
    shape, dtype, weak = sig
    if dtype == object:  # noqa: E721 - np.dtype('O') equals object too
        raise TracerTypeError(f"argument {name} is not an array (got an object array or an "
                              f"unsupported Python object); pass arrays, scalars or pytrees "
                              f"of them, or mark it static")
    try:
        return ShapedArray(shape, dtype, weak)
    except DTypeError as e:
        raise DTypeError(f"argument {name}: {e}" if name else str(e)) from None


def as_input(x: Any, sig: LeafSig) -> np.ndarray:
    """The array an executable receives for one leaf (device arrays as they are)."""
    t = type(x)
    if t is np.ndarray:
        return x if x.dtype.isnative else x.astype(sig[1])  # big-endian data: native copy
    if t is EagerArray:  # (a jit or tracer.numpy result): the executable gets its ndarray
        return x.view(np.ndarray) if x.dtype.isnative else np.asarray(x, sig[1])
    if getattr(t, "__cuda_ndarray__", False):
        return x
    return np.asarray(x, dtype=sig[1])


def as_result(x: Any) -> Any:
    """A result array as an EagerArray view (JAX's `.at`, `.block_until_ready()` on
    what `jit` returns; a NumPy array for everything else); device arrays as they are."""
    return x.view(EagerArray) if type(x) is np.ndarray else x


def donated_results(outs: Sequence[Any], inputs: Sequence[Any],
                    leaves: Sequence[Any]) -> list[Any]:
    """Results, where an output written into a donated input is the caller's array
    itself (as it was passed); the others as `as_result` makes them."""
    caller = {id(x): leaf for x, leaf in zip(inputs, leaves, strict=True)}
    return [caller.get(id(o)) if id(o) in caller else as_result(o) for o in outs]


def overflow_error(fun_name: str, names: Sequence[str], leaves: Sequence[Any],
                   sigs: Sequence[LeafSig]) -> TracerOverflowError:
    """The error for a Python int argument out of its dtype's range (JAX: OverflowError)."""
    for name, x, sig in zip(names, leaves, sigs, strict=True):
        if type(x) is int:
            info = np.iinfo(sig[1])
            if not info.min <= x <= info.max:
                return TracerOverflowError(
                    f"jit({fun_name}): argument {name} = {x} does not fit in {sig[1]} "
                    f"[{info.min}, {info.max}]; pass an array of a wider or unsigned dtype")
    return TracerOverflowError(f"jit({fun_name}): an argument overflows its dtype")


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    traces: int
    compiles: int
    size: int
    # calls served by each tier: {"interpreter": n, "compiled": m} (see tracer.tiers)
    tiers: dict[str, int] = {}

    def _repr_html_(self) -> str:
        return reprs.table(self._fields, [tuple(self)])


@dataclass(slots=True)  # (a C guard counts hits in the `hits` slot: backend/cpu/c_guard.py)
class CacheStats:
    hits: int = 0
    misses: int = 0
    traces: int = 0
    compiles: int = 0
    interpreted: int = 0  # calls the interpreter tier served while numba compiled
    failed: int = 0       # calls that raised (served by no tier)

    def info(self, size: int) -> CacheInfo:
        served = self.hits + self.misses - self.failed
        tiers = {"interpreter": self.interpreted, "compiled": served - self.interpreted}
        return CacheInfo(self.hits, self.misses, self.traces, self.compiles, size, tiers)


def sig_text(sig: LeafSig) -> str:
    shape, dtype, weak = sig
    try:
        text = str(ShapedArray(shape, dtype))
    except DTypeError:
        text = f"{dtype}{list(shape)}"
    return text + (" (Python scalar)" if weak else "")


def compile_line(fun_name: str, key: tuple, reason: str | None, fresh: bool,
                 seconds: float) -> str:
    """The `log_compiles` line of one compile."""
    signature = ", ".join(map(sig_text, key[1]))
    how = "numba compiled" if fresh else "machine code from the cache"
    why = f" ({reason.split(': ', 1)[-1]})" if reason else ""
    return (f"jit({fun_name}): compiled for ({signature}) on {key[3]!r} in {seconds:.3f} s, "
            f"{how}{why}")


def explain_miss(fun_name: str, key: tuple, previous: Sequence[tuple],
                 leaf_names: Sequence[str]) -> str:
    """Why `key` missed: the first call, or what differs from the closest earlier key."""
    treedef, sigs, statics, backend, debug_print = key
    if not previous:
        return f"jit({fun_name}): first call, tracing for ({', '.join(map(sig_text, sigs))})"
    old = min(reversed(previous), key=lambda k: _distance(k, key))  # ties: the latest
    reasons = []
    if old[0] != treedef:
        reasons.append(f"the argument pytree structure changed from {old[0]} to {treedef}")
    else:
        reasons += [f"argument {name} changed from {sig_text(a)} to {sig_text(b)}"
                    for name, a, b in zip(leaf_names, old[1], sigs, strict=True) if a != b]
    reasons += _static_changes(old[2], statics)
    if old[3] != backend:
        reasons.append(f"the backend changed from {old[3]!r} to {backend!r}")
    if old[4] != debug_print:
        reasons.append(f"config debug_print changed from {old[4]} to {debug_print}")
    return f"jit({fun_name}): cache miss because " + "; ".join(reasons or ["(unknown)"])


def _static_changes(old: tuple, new: tuple) -> list[str]:
    """Static values differ by value or by type (of the value or, for tuples, of an
    element: the middle entry of each (name, types, value) triple)."""
    old_d, new_d = {k: (t, v) for k, t, v in old}, {k: (t, v) for k, t, v in new}
    absent = (None, "<absent>")
    return [f"static argument {k} changed from {old_d.get(k, absent)[1]!r} to "
            f"{new_d.get(k, absent)[1]!r}" for k in sorted(set(old_d) | set(new_d), key=str)
            if old_d.get(k, _ABSENT) != new_d.get(k, _ABSENT)]


_ABSENT = object()


def _distance(a: tuple, b: tuple) -> int:
    if a[0] != b[0]:
        return 1 << 20
    return sum(x != y for x, y in zip(a[1], b[1], strict=True)) + (a[2] != b[2]) + (a[3] != b[3])

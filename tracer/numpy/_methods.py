"""The ndarray face of `Tracer`: operators, properties and methods.

`tracer.tracing` stays below the ops, so `Tracer` is born bare; `install()` (called
once when `tracer.numpy` is imported) attaches everything here through
`tracer.tracing.install_methods`. Every entry forwards to a `tracer.numpy`
function, so `x + 1`, `x.sum(0)` and `x[1:, idx]` mean exactly what `tnp.add`,
`tnp.sum` and `getitem` mean (NumPy 2 semantics, NEP 50 promotion).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import ShapeError, TracerTypeError
from ..tracing import Tracer, install_methods
from . import _protocols, _reductions, _shape, _sorting, _ufuncs
from ._at_modes import get_with_mode, update_with_mode
from ._indexing import getitem, index_update
from ._take import take
from ._linalg import diagonal, dot, matmul, trace
from ._promotion import error

__all__ = ["install"]  # `x.at` is `_IndexUpdateHelper(x)`

# Operand types an operator accepts; anything else gets NotImplemented so Python
# can try the other operand's reflected method.
_OPERAND_TYPES = (Tracer, np.ndarray, np.generic, bool, int, float, complex, list, tuple)


def _binary(fn: Callable[..., Any], name: str, reflected: bool = False) -> Callable[..., Any]:
    def method(self: Tracer, other: Any) -> Any:
        if not isinstance(other, _OPERAND_TYPES):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = name
    return method


def _unary(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def method(self: Tracer) -> Any:
        return fn(self)

    method.__name__ = name
    return method


def _forward(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """`x.name(*args, **kw)` is `fn(x, *args, **kw)` (NumPy's method/function pairing)."""
    def method(self: Tracer, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = fn.__doc__
    return method


_BINARY = {
    "add": _ufuncs.add, "sub": _ufuncs.subtract, "mul": _ufuncs.multiply,
    "truediv": _ufuncs.true_divide, "floordiv": _ufuncs.floor_divide,
    "mod": _ufuncs.remainder, "divmod": _ufuncs.divmod, "pow": _ufuncs.power, "matmul": matmul,
    "and": _ufuncs.bitwise_and, "or": _ufuncs.bitwise_or, "xor": _ufuncs.bitwise_xor,
    "lshift": _ufuncs.left_shift, "rshift": _ufuncs.right_shift,
}
_COMPARE = {
    "eq": _ufuncs.equal, "ne": _ufuncs.not_equal, "lt": _ufuncs.less,
    "le": _ufuncs.less_equal, "gt": _ufuncs.greater, "ge": _ufuncs.greater_equal,
}
_UNARY = {
    "neg": _ufuncs.negative, "pos": _ufuncs.positive, "abs": _ufuncs.absolute,
    "invert": _ufuncs.invert,
}
_FORWARDED = {
    "sum": _reductions.sum, "prod": _reductions.prod, "mean": _reductions.mean,
    "var": _reductions.var, "std": _reductions.std, "max": _reductions.max,
    "min": _reductions.min, "argmax": _reductions.argmax, "argmin": _reductions.argmin,
    "all": _reductions.all, "any": _reductions.any, "cumsum": _reductions.cumsum,
    "cumprod": _reductions.cumprod, "swapaxes": _shape.swapaxes,
    "squeeze": _shape.squeeze, "ravel": _shape.ravel, "flatten": _shape.ravel,
    "repeat": _shape.repeat, "clip": _ufuncs.clip, "round": _ufuncs.round,
    "conj": _ufuncs.conjugate, "conjugate": _ufuncs.conjugate, "dot": dot, "take": take,
    "trace": trace, "diagonal": diagonal, "argsort": _sorting.argsort,
    "searchsorted": _sorting.searchsorted, "nonzero": _sorting.nonzero,
}


def _reshape(self: Tracer, *shape: Any, order: str = "C") -> Any:
    """`x.reshape(2, 3)` or `x.reshape((2, 3))`."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return _shape.reshape(self, shape, order=order)


def _transpose(self: Tracer, *axes: Any) -> Any:
    """`x.transpose()`, `x.transpose(1, 0)` or `x.transpose((1, 0))`."""
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return _shape.transpose(self, axes or None)


def _astype(self: Tracer, dtype: Any, copy: bool = True) -> Any:
    """A strongly typed copy with `dtype` (`copy` is accepted; values are immutable)."""
    dt = dtypes.canonicalize(dtype)
    if dt == self.dtype and not self.weak_type:
        return self
    return ops.convert_element_type(self, dt)


def _mT(self: Tracer) -> Any:
    if self.ndim < 2:
        raise error(ShapeError, "mT", f"matrix transpose needs at least 2 dimensions, got "
                    f"{self.aval}")
    return _shape.swapaxes(self, -1, -2)


def _setitem(self: Tracer, idx: Any, value: Any) -> None:
    raise error(TracerTypeError, "__setitem__", f"traced array {self.aval} does not support "
                "item assignment: arrays are immutable under tracing. Use "
                "`x = x.at[idx].set(v)` (or .add / .multiply / .min / .max) instead of "
                "`x[idx] = v`.")


def _sort(self: Tracer, *args: Any, **kwargs: Any) -> None:
    """NumPy's `x.sort()` sorts in place, which a traced (immutable) array cannot do."""
    raise error(TracerTypeError, "sort", f"traced array {self.aval} cannot be sorted in "
                "place (ndarray.sort mutates; arrays are immutable under tracing). Use "
                "`x = tnp.sort(x, axis)` for a sorted copy.")


def _copy(self: Tracer) -> Tracer:
    """The array itself: traced values are immutable, so a copy is never needed."""
    return self


def _to_device(self: Tracer, device: Any, /, *, stream: Any = None) -> Tracer:
    """Array API `to_device`: tracer has one device, so the array itself."""
    if device not in ("cpu", None):
        raise error(TracerTypeError, "to_device", f"unknown device {device!r}; traced "
                    "arrays live on 'cpu'")
    return self


def _update_method(method: str, doc: str) -> Callable[..., Any]:
    def update(self: "_IndexUpdateRef", values: Any, *, indices_are_sorted: bool = False,
               unique_indices: bool = False, mode: str | None = None) -> Any:
        return update_with_mode(self.array, self.index, values, method, index_update, mode)

    update.__name__, update.__doc__ = method, f"A copy of x with {doc}."
    return update


class _IndexUpdateRef:
    """`x.at[idx]`: functional updates of the elements `x[idx]` selects."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any):
        self.array, self.index = array, index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | None = None, fill_value: Any = None) -> Any:
        """`x[idx]`; `mode="fill"` reads `fill_value` at out-of-bounds indices, "clip"
        clamps them (tracer/numpy/_at_modes.py)."""
        return get_with_mode(self.array, self.index, getitem, mode, fill_value)

    set = _update_method("set", "x[idx] = values (duplicate indices: the last one wins)")
    add = _update_method("add", "values added at idx; duplicates accumulate (np.add.at)")
    multiply = _update_method("multiply", "x[idx] multiplied by values (np.multiply.at)")
    mul = multiply
    min = _update_method("min", "x[idx] = minimum(x[idx], values) (np.minimum.at)")
    max = _update_method("max", "x[idx] = maximum(x[idx], values) (np.maximum.at)")


class _IndexUpdateHelper:
    """The `x.at` property: `x.at[idx].set(v)`, `.add(v)`, `.multiply(v)`, `.min(v)`,
    `.max(v)`, `.get()` return new arrays; x is never mutated."""

    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


def _methods() -> dict[str, Any]:
    table: dict[str, Any] = {}
    for name, fn in _BINARY.items():
        table[f"__{name}__"] = _binary(fn, f"__{name}__")
        table[f"__r{name}__"] = _binary(fn, f"__r{name}__", reflected=True)
    for name, fn in _COMPARE.items():
        table[f"__{name}__"] = _binary(fn, f"__{name}__")
    for name, fn in _UNARY.items():
        table[f"__{name}__"] = _unary(fn, f"__{name}__")
    for name, fn in _FORWARDED.items():
        table[name] = _forward(fn, name)
    table.update({
        "__getitem__": getitem, "__setitem__": _setitem, "reshape": _reshape,
        "transpose": _transpose, "astype": _astype, "copy": _copy, "sort": _sort,
        "T": property(lambda self: _shape.transpose(self)), "mT": property(_mT),
        "real": property(_ufuncs.real), "imag": property(_ufuncs.imag),
        "at": property(_IndexUpdateHelper),
        # NumPy on traced arrays (`np.sin(x)`, `ndarray + x`, `np.sum(x)`) runs tracer.numpy.
        "__array_ufunc__": _protocols.array_ufunc,
        "__array_function__": _protocols.array_function,
        "__array__": _protocols.array,
        "__array_namespace__": _protocols.array_namespace,
        "device": property(lambda self: "cpu"), "to_device": _to_device,
    })
    return table


def install() -> None:
    """Give `Tracer` its ndarray operators, properties and methods (idempotent)."""
    install_methods(_methods())

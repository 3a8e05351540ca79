"""`EagerArray`: what `tracer.numpy` returns outside a trace. A `numpy.ndarray`
subclass (so it is a NumPy array for every other purpose: NumPy functions, in-place
updates, pickling) with the methods JAX programs call on results: `x.at[idx].set(v)`
and friends (a new array, as on traced values), `x.block_until_ready()`, `x.devices()`
and `x.sharding` (the host), and indexing by a traced index (`table[i]` inside `jit`
with `table` from `tnp.arange`), which NumPy itself cannot do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tracing import Tracer


def _has_tracer(idx: Any) -> bool:
    if isinstance(idx, Tracer):
        return True
    return isinstance(idx, tuple) and any(isinstance(i, Tracer) for i in idx)


class EagerArray(np.ndarray):
    """A NumPy array with JAX's result methods (see the module docstring)."""

    @property
    def at(self) -> "_EagerAt":
        return _EagerAt(np.asarray(self))

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))  # NumPy's `array(...)`: it is one

    def devices(self) -> set[str]:
        """Where the array lives: host memory ('cpu'), as JAX's `x.devices()`."""
        return {"cpu"}

    @property
    def sharding(self) -> "SingleDeviceSharding":
        """JAX's `x.sharding`: the whole array on the host."""
        return SingleDeviceSharding("cpu")

    def block_until_ready(self) -> "EagerArray":
        """Computed already (NumPy arrays are ready when returned)."""
        return self

    def __getitem__(self, idx: Any) -> Any:
        if _has_tracer(idx):
            from ._indexing import getitem
            return getitem(np.asarray(self), idx)
        return super().__getitem__(idx)


@dataclass(frozen=True)
class SingleDeviceSharding:
    """The sharding of an array held whole by one device (JAX's name)."""
    device: str

    @property
    def device_set(self) -> set[str]:
        return {self.device}


class _EagerAt:
    """`x.at` of an EagerArray: the traced values' helper, results as EagerArrays."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array

    def __getitem__(self, index: Any) -> "_EagerRef":
        return _EagerRef(self.array, index)


class _EagerRef:
    __slots__ = ("array", "index")

    def __init__(self, array: np.ndarray, index: Any):
        self.array, self.index = array, index

    def __getattr__(self, method: str) -> Any:
        from ._methods import _IndexUpdateRef  # (imported late: _methods imports numpy)
        update = getattr(_IndexUpdateRef(self.array, self.index), method)

        def run(*args: Any, **kwargs: Any) -> Any:
            out = update(*args, **kwargs)
            return eager(out) if type(out) is np.ndarray else out
        return run


def eager(x: np.ndarray) -> EagerArray:
    """`x` viewed as an EagerArray (no copy)."""
    return x.view(EagerArray)

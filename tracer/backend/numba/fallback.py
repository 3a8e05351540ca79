"""The last resort for an op the CPU backend cannot emit: its NumPy reference.

Generated code calls `run(table, index, *operands)` inside a `numba.objmode`
block. The table id is a compile-time value passed in `dims` (so the source, and
numba's cached machine code, stay the same for every graph of this structure),
and each executable registers its own table of runners when it is compiled,
so a runner can hold anything the op needs (sub-graphs, Python callables).

This is slow (a trip through the interpreter per call), so it is only for ops
whose semantics are a Python callback (`custom_lin`); `cpu.backend.FALLBACK_OPS`
lists them and a test keeps every other op on a real emitter.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable

import numpy as np

from ...core import Eqn, ShapedArray
from .scalar import HALVES

Runner = Callable[..., tuple[Any, ...]]

_TABLES: dict[int, list[Runner]] = {}
_IDS = itertools.count(1)
_LOCK = threading.Lock()

_NUMBA_NAMES = {"b": "boolean"}


def new_table() -> tuple[int, list[Runner]]:
    with _LOCK:
        table = next(_IDS)
        _TABLES[table] = []
    return table, _TABLES[table]


def run(table: int, index: int, *operands: Any) -> tuple[Any, ...]:
    """Called from generated code (object mode): runner `index` of table `table`."""
    return _TABLES[int(table)][index](*operands)


def numba_type(aval: ShapedArray) -> str:
    """The numba type string of a value as generated code holds it."""
    key = aval.dtype.kind if aval.dtype.kind == "b" else f"{aval.dtype.kind}{aval.dtype.itemsize}"
    # float16 / bfloat16 live in float32 registers and as uint16 bits in arrays
    name = "float32" if aval.dtype in HALVES else _NUMBA_NAMES.get(key, aval.dtype.name)
    if not aval.ndim:
        return name
    storage = "uint16" if aval.dtype in HALVES else name
    return f"{storage}[{', '.join([':'] * (aval.ndim - 1) + ['::1'])}]"


def runner(eqn: Eqn) -> Runner:
    """Operands as the kernel holds them -> the op's reference results, as it holds them."""
    in_avals = [a.aval for a in eqn.inputs]
    out_avals = [v.aval for v in eqn.outputs]

    def call(*operands: Any) -> tuple[Any, ...]:
        args = [from_kernel(x, a) for x, a in zip(operands, in_avals, strict=True)]
        with np.errstate(all="ignore"):
            outs = eqn.op.impl(*args, **eqn.params)
        outs = outs if eqn.op.multiple_results else (outs,)
        return tuple(_to_kernel(o, a) for o, a in zip(outs, out_avals, strict=True))
    return call


def from_kernel(x: Any, aval: ShapedArray) -> np.ndarray:
    """An operand as the kernel holds it (float16 / bfloat16 as uint16 bits) -> NumPy."""
    if aval.dtype in HALVES and aval.ndim:
        return np.asarray(x).view(aval.dtype)
    return np.asarray(x, dtype=aval.dtype)


def _to_kernel(x: Any, aval: ShapedArray) -> Any:
    if not aval.ndim:  # (ascontiguousarray would make a 0-d array 1-d)
        scalar = np.asarray(x, dtype=aval.dtype)[()]
        return np.float32(scalar) if aval.dtype in HALVES else scalar
    value = np.ascontiguousarray(x, dtype=aval.dtype)
    return value.view(np.uint16) if aval.dtype in HALVES else value

"""Device code of the bit-level ops.

- `reduce_precision` calls `numba.lib.bits.reduce_precision_<bits>` on the unsigned
  integer view of the operand's device array, one thread per element.
- `bitcast_convert_type` is a view of the device array (no kernel).

A rank-0 operand or result lives in its register dtype (`cuda.lib.arrays`): a
float16 scalar is converted to a float16 array and back on the device
(`rt.astype`, a copy kernel), so the bits seen are the float16 bits.
"""

from __future__ import annotations

import numpy as np

from ....core import Eqn
from ..emitter import DeviceGraphEmitter, Kernel
from ..lib.arrays import register_dtype
from ..nests import product


def _stored(ge: DeviceGraphEmitter, eqn: Eqn) -> str:
    """A host expression of the operand's device array in its own dtype, flattened."""
    atom = eqn.inputs[0]
    array = ge.array_of(ge.ref(atom))
    if register_dtype(atom.aval.dtype) != atom.aval.dtype:  # (a float16 scalar)
        array = f"rt.astype({array}, np.{atom.aval.dtype.name})"
    total = product([ge.dim(atom, d) for d in range(atom.aval.ndim)])
    return f"{array}.reshape(({total},))"


def _reduce_precision(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    atom, out = eqn.inputs[0], eqn.outputs[0]
    dtype = out.aval.dtype
    nbits = 8 * dtype.itemsize
    uint = np.dtype(f"u{nbits // 8}")
    flat = atom.aval.update(shape=(1,), dtype=uint)
    source = ge.view(f"{_stored(ge, eqn)}.view(np.{uint.name})", flat, "bits")
    rounded = ge.view(f"rt.empty({ge.shape_tuple(out) if out.aval.ndim else '(1,)'}, "
                      f"np.{dtype.name})", out.aval.update(shape=(1,)), "rounded").name
    total = product([ge.dim(atom, d) for d in range(atom.aval.ndim)])
    target = ge.view(f"{rounded}.reshape(({total},)).view(np.{uint.name})", flat, "bits")
    k = Kernel(ge, "reduce_precision")
    helper = k.mod.use(f"reduce_precision_{nbits}", "numba.lib.bits")
    e = k.size(("param", id(eqn), "exponent_bits"), eqn.params["exponent_bits"], "exponent")
    m = k.size(("param", id(eqn), "mantissa_bits"), eqn.params["mantissa_bits"], "mantissa")
    i, size = k.fresh("i"), k.fresh("size")
    k.w.line(f"{size} = {k.outer(target.name)}.size")
    with k.w.block(f"for {i} in range(cuda.grid(1), {size}, cuda.gridsize(1))"):
        k.w.line(f"{target.name}[{i}] = {helper}({k.outer(source.name)}[{i}], {e}, {m})")
    k.launch(f"launch.grid({total})", "launch.CONFIG.block",
             "reduce_precision: rounded on the integer bits")
    if out.aval.ndim:
        ge.bind(out, ge.view(rounded, out.aval, "rounded"))
    else:
        ge.bind(out, ge.view(f"rt.astype({rounded}, np.{register_dtype(dtype).name})",
                             out.aval, "rounded"))


def _bitcast_convert_type(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    """The operand's bytes viewed as the result dtype (rank-0 ends as their register)."""
    out = eqn.outputs[0]
    expr = f"{_stored(ge, eqn)}.view(np.{out.aval.dtype.name})"
    if out.aval.ndim:
        expr = f"{expr}.reshape({ge.shape_tuple(out)})"
    elif register_dtype(out.aval.dtype) != out.aval.dtype:
        expr = f"rt.astype({expr}, np.{register_dtype(out.aval.dtype).name})"
    ge.bind(out, ge.view(expr, out.aval, "bitcast"))


EMITTERS = {"reduce_precision": _reduce_precision, "bitcast_convert_type": _bitcast_convert_type}

"""Device kernels for the counter-based RNG ops and the bit-level ops.

- `threefry2x32` and `threefry_random_bits` call the CPU backend's Threefry-2x32
  block (`cpu_lib_rng.threefry_block`, which numba compiles for the GPU), one
  thread per element: the same function on the same counters, so the bits are
  identical to the CPU backend's and the reference's.
- `reduce_precision` calls `cpu_lib_bits.reduce_precision_<bits>` on the unsigned
  integer view of the operand's device array.
- `bitcast_convert_type` is a view of the device array (no kernel).

Rank-0 operands of the two bit-level ops (held in register dtype, see
`cuda_arrays`) take the host path instead (`HOST_OPS`).
"""

from __future__ import annotations

import numpy as np

from ..core import Eqn
from .cuda_codegen import CudaGraphEmitter, Kernel
from .cuda_emit_index import kernel_scalar, launch_over, over_elements, read, write


def _threefry2x32(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    outs = [ge.new_ref(v) for v in eqn.outputs]
    k = Kernel(ge, "threefry")
    block = k.mod.use("threefry_block", "cpu_lib_rng")
    with over_elements(k, eqn.outputs[0]) as (index, _):
        args = [kernel_scalar(k, a) if not a.aval.ndim else read(k, ge.ref(a), index)
                for a in eqn.inputs]
        y0, y1 = k.fresh("word"), k.fresh("word")
        k.w.line(f"{y0}, {y1} = {block}({', '.join(args)})")
        write(k, outs[0], index, y0)
        write(k, outs[1], index, y1)
    launch_over(k, eqn.outputs[0], "threefry2x32: the block at every element")


def _threefry_random_bits(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    """Element i: the block of the key at counter (i >> 32, i & 0xFFFFFFFF), its words
    combined as `(y0 << 32) | y1` for 64 bits, else `y0 ^ y1` (low bits kept)."""
    out = eqn.outputs[0]
    result = ge.new_ref(out)
    key = ge.ref(eqn.inputs[0])
    k = Kernel(ge, "random_bits")
    block = k.mod.use("threefry_block", "cpu_lib_rng")
    k.outer(key.name)
    width = eqn.params["bit_width"]
    with over_elements(k, out) as (index, flat):
        y0, y1 = k.fresh("word"), k.fresh("word")
        k.w.line(f"{y0}, {y1} = {block}({key.name}[0], {key.name}[1], "
                 f"u32(u64({flat}) >> u64(32)), u32(u64({flat}) & u64(0xFFFFFFFF)))")
        bits = f"(u64({y0}) << u64(32)) | u64({y1})" if width == 64 else \
            f"u{width}({y0} ^ {y1})"
        write(k, result, index, bits)
    launch_over(k, out, f"threefry_random_bits: {width}-bit words of the block per element")


def _reduce_precision(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    from .cuda_emit_ops import run_on_host
    atom, out = eqn.inputs[0], eqn.outputs[0]
    if not out.aval.ndim:
        run_on_host(ge, eqn)
        return
    nbits = 8 * out.aval.dtype.itemsize
    uint = f"np.uint{nbits}"
    source = ge.view(f"{ge.array_of(ge.ref(atom))}.view({uint})",
                     atom.aval.update(dtype=np.dtype(uint[3:])), "bits")
    result = ge.new_ref(out)
    target = ge.view(f"{result.name}.view({uint})", out.aval.update(dtype=np.dtype(uint[3:])),
                     "rounded")
    k = Kernel(ge, "reduce_precision")
    helper = k.mod.use(f"reduce_precision_{nbits}", "cpu_lib_bits")
    e = k.size(("param", id(eqn), "exponent_bits"), eqn.params["exponent_bits"], "exponent")
    m = k.size(("param", id(eqn), "mantissa_bits"), eqn.params["mantissa_bits"], "mantissa")
    with over_elements(k, out) as (index, _):
        k.outer(source.name)
        k.outer(target.name)
        k.w.line(f"{target.at(index)} = {helper}({source.at(index)}, {e}, {m})")
    launch_over(k, out, "reduce_precision: rounded on the integer bits")


def _bitcast_convert_type(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    from .cuda_emit_ops import run_on_host
    atom, out = eqn.inputs[0], eqn.outputs[0]
    if not atom.aval.ndim or not out.aval.ndim:
        run_on_host(ge, eqn)
        return
    total = " * ".join(ge.dim(atom, d) for d in range(atom.aval.ndim))
    x = ge.array_of(ge.ref(atom))
    ge.bind(out, ge.view(f"{x}.reshape(({total},)).view(np.{out.aval.dtype.name})"
                         f".reshape({ge.shape_tuple(out)})", out.aval, "bitcast"))


EMITTERS = {
    "threefry2x32": _threefry2x32, "threefry_random_bits": _threefry_random_bits,
    "reduce_precision": _reduce_precision, "bitcast_convert_type": _bitcast_convert_type,
}

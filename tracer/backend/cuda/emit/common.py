"""What the cuda emitters share: operand refs, binding results, host copies of carries,
a block's sum."""

from __future__ import annotations

from typing import Callable, Sequence

from ....core import Eqn
from ...numba.codegen import Ref
from ..emitter import DeviceGraphEmitter, Kernel, array_type

OpEmitter = Callable[[DeviceGraphEmitter, Eqn], None]
_T, _NT = "cuda.threadIdx.x", "cuda.blockDim.x"


def operand_refs(ge: DeviceGraphEmitter, eqn: Eqn) -> list[Ref]:
    return [ge.ref(a) for a in eqn.inputs]


def bind_all(ge: DeviceGraphEmitter, eqn: Eqn, refs: Sequence[Ref]) -> None:
    for v, r in zip(eqn.outputs, refs, strict=True):
        ge.bind(v, r)


def carry_copy(ge: DeviceGraphEmitter, refs: Sequence[Ref], hint: str) -> list[Ref]:
    """Host variables holding the device arrays of `refs` (loop carries, branch results)."""
    out = []
    for ref in refs:
        name = ge.fresh(hint)
        ge.mod.types[name] = array_type(ref.aval)
        out.append(Ref(f"{name}[0]" if ref.scalar else name, ref.aval))
    assign(ge, out, refs)
    return out


def assign(ge: DeviceGraphEmitter, targets: Sequence[Ref], refs: Sequence[Ref]) -> None:
    if targets:
        names = [t.name.split("[")[0] for t in targets]
        ge.w.line(f"{', '.join(names)} = {', '.join(ge.array_of(r) for r in refs)}")


def block_sum(k: Kernel, shared: str, value: str) -> str:
    """The sum of `value` over the block's threads (a tree in shared memory, halving
    strides); every thread gets it."""
    total, stride = k.fresh("total"), k.fresh("stride")
    k.w.line(f"{shared}[{_T}] = {value}")
    k.w.line("cuda.syncthreads()")
    k.w.line(f"{stride} = {_NT} // 2")
    with k.w.block(f"while {stride} > 0"):
        with k.w.block(f"if {_T} < {stride}"):
            k.w.line(f"{shared}[{_T}] += {shared}[{_T} + {stride}]")
        k.w.line("cuda.syncthreads()")
        k.w.line(f"{stride} //= 2")
    k.w.line(f"{total} = {shared}[0]")
    k.w.line("cuda.syncthreads()")  # (before the shared array is written again)
    return total

"""cpu emitters of the shape ops that are not fused into loop nests: a general reshape
(a view), get_dimension_size, concatenate and pad (loops placing each operand).
"""

from __future__ import annotations

from ....core import Eqn
from ...numba.codegen import GraphEmitter, Ref, copy_array, store_value
from .common import for_each


def _reshape(ge: GraphEmitter, eqn: Eqn) -> None:
    """A general reshape of a C-contiguous array is a view (unit reshapes are fused);
    one of a value computed in its output's buffer is that buffer."""
    x, out = ge.ref(eqn.inputs[0]), eqn.outputs[0]
    if getattr(ge, "output_views", {}).get(x.name) is out:
        ge.bind(out, Ref(ge.out_param(out), out.aval))
        return
    name = ge.fresh("reshape")
    ge.w.line(f"{name} = {x.name}.reshape({ge.shape_tuple(out)})")
    ge.bind(out, Ref(name, out.aval))


def _get_dimension_size(ge: GraphEmitter, eqn: Eqn) -> None:
    size = ge.dim(eqn.inputs[0], eqn.params["dimension"])
    ge.bind(eqn.outputs[0], Ref(f"i32({size})", eqn.outputs[0].aval))


def _concatenate(ge: GraphEmitter, eqn: Eqn) -> None:
    out = eqn.outputs[0]
    target = ge.alloc(out)
    axis = eqn.params["dimension"]
    offset = "0"
    for atom in eqn.inputs:
        offsets = ["0"] * out.aval.ndim
        offsets[axis] = offset
        copy_array(ge, target, ge.ref(atom).name, out.aval.ndim, offsets=offsets)
        size = ge.dim(atom, axis)
        offset = size if offset == "0" else f"{offset} + {size}"
    ge.bind(out, Ref(target, out.aval))


def _pad(ge: GraphEmitter, eqn: Eqn) -> None:
    """Fill with the padding value, then place operand element j at lo + j * (interior + 1)
    wherever that lands inside the result (negative edge padding drops elements)."""
    x, value = eqn.inputs
    out = eqn.outputs[0]
    if not out.aval.ndim:
        ge.bind(out, ge.ref(x))
        return
    target = ge.alloc(out)
    ge.w.line(f"{target}[...] = {store_value(ge.ref(value).name, out.aval.dtype, ge.mod)}")
    config = eqn.params["padding_config"]
    src = [f"j{d}" for d in range(x.aval.ndim)]
    dst = [ge.fresh(f"p{d}") for d in range(x.aval.ndim)]

    def place() -> None:
        inside = []
        for d, (j, p) in enumerate(zip(src, dst, strict=True)):
            lo = ge.mod.size(("param", id(eqn), "low", d), config[d][0], "low")
            step = ge.mod.size(("param", id(eqn), "step", d), config[d][2] + 1, "step")
            ge.w.line(f"{p} = {lo} + {j} * {step}")
            inside.append(f"0 <= {p} < {ge.dim(out, d)}")
        with ge.w.block(f"if {' and '.join(inside)}"):
            ge.w.line(f"{target}[{', '.join(dst)}] = {ge.ref(x).name}[{', '.join(src)}]")
    for_each(ge, [(j, ge.dim(x, d)) for d, j in enumerate(src)], place)
    ge.bind(out, Ref(target, out.aval))


EMITTERS = {"reshape": _reshape, "get_dimension_size": _get_dimension_size,
            "concatenate": _concatenate, "pad": _pad}

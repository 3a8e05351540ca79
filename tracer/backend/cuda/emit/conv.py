"""`conv_general_dilated` as a direct convolution kernel.

One thread per output element (in the output's memory order) accumulates, over
the window taps (row-major) and then the input features of its group, lhs x
rhs in the reference's working dtype: float16 in float32 (rounded once on
store), integers in their own width (wrapping after every step, as the
reference's matmul does), others in their dtype. The lhs is read at
`out * stride + tap * rhs_dilation - low` of its padded, lhs-dilated form;
where padding or a hole (lhs dilation) can put a tap off the operand, the code
checks it and uses zero instead, as the reference does (0 * w, so an inf or NaN
weight still poisons the sum). Feature groups pick a group's input features
(`feature_group_count`); batch groups a group's slice of the lhs batch. The
dimension numbers only decide which index goes where.
"""

from __future__ import annotations

from contextlib import ExitStack

from ....core import Eqn
from ...numba.scalar import cast, literal
from ..emitter import DeviceGraphEmitter, Kernel
from .index import launch_over, over_elements, read, write


def _param(k: Kernel, eqn: Eqn, name: str, j: int, part: int = -1) -> str:
    value = eqn.params[name][j] if part < 0 else eqn.params[name][j][part]
    return k.size(("param", id(eqn), name, j, part), value, name.split("_")[0])


def _scaled(k: Kernel, eqn: Eqn, name: str, j: int, factor: str) -> str:
    return factor if eqn.params[name][j] == 1 else f"{factor} * {_param(k, eqn, name, j)}"


def _groups(k: Kernel, eqn: Eqn, b: str, oz: str) -> tuple[str, str, str]:
    """(lhs batch index, first input feature, input features per group) of output
    (b, oz)."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    lspec, rspec = p["dimension_numbers"].lhs_spec, p["dimension_numbers"].rhs_spec
    features = k.dim(lhs, lspec[1])
    groups = max(p["feature_group_count"], p["batch_group_count"])
    if groups == 1:
        return b, "0", features
    count = k.size(("param", id(eqn), "groups"), groups, "groups")
    g = k.fresh("group")
    k.w.line(f"{g} = {oz} // ({k.dim(rhs, rspec[0])} // {count})")
    if p["batch_group_count"] > 1:
        batch = k.fresh("batch")
        k.w.line(f"{batch} = {b} + {g} * ({k.dim(lhs, lspec[0])} // {count})")
        return batch, "0", features
    per = k.fresh("per_group")
    k.w.line(f"{per} = {features} // {count}")
    return b, f"{g} * {per}", per


def _tap_position(k: Kernel, eqn: Eqn, j: int, out: str, tap: str) -> tuple[str, list[str]]:
    """The lhs index along spatial dim j of window tap `tap` at output position `out`,
    and the checks that it is a real element (not padding, not a hole)."""
    p = eqn.params
    lhs = eqn.inputs[0]
    d = p["dimension_numbers"].lhs_spec[2 + j]
    low, high = p["padding"][j]
    dil = p["lhs_dilation"][j]
    position = (f"{_scaled(k, eqn, 'window_strides', j, out)} + "
                f"{_scaled(k, eqn, 'rhs_dilation', j, tap)}")
    if low:
        position = f"{position} - {_param(k, eqn, 'padding', j, 0)}"
    if low <= 0 and high <= 0 and dil == 1:
        return position, []
    q = k.fresh(f"q{j}")
    k.w.line(f"{q} = {position}")
    size = k.dim(lhs, d)
    if dil == 1:
        return q, [f"{q} >= 0"] * (low > 0) + [f"{q} < {size}"] * (high > 0)
    step = _param(k, eqn, "lhs_dilation", j)
    return f"{q} // {step}", [f"{q} >= 0", f"{q} % {step} == 0", f"{q} // {step} < {size}"]


def emit_conv(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    dn = p["dimension_numbers"]
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    dtype = out.aval.dtype
    result = ge.new_ref(out)
    k = Kernel(ge, "conv")
    acc, ci = k.fresh("acc"), k.fresh("ci")
    with over_elements(k, out) as (index, _):
        b, oz = index[dn.out_spec[0]], index[dn.out_spec[1]]
        batch, first, per_group = _groups(k, eqn, b, oz)
        k.w.line(f"{acc} = {literal(0, dtype)}")
        x_at, w_at = [""] * lhs.aval.ndim, [""] * rhs.aval.ndim
        x_at[dn.lhs_spec[0]], w_at[dn.rhs_spec[0]] = batch, oz
        x_at[dn.lhs_spec[1]] = ci if first == "0" else f"{first} + {ci}"
        w_at[dn.rhs_spec[1]] = ci
        checks: list[str] = []
        with ExitStack() as stack:
            for j in range(len(dn.out_spec) - 2):
                tap = k.fresh(f"t{j}")
                stack.enter_context(k.w.block(f"for {tap} in range("
                                              f"{k.dim(rhs, dn.rhs_spec[2 + j])})"))
                x_at[dn.lhs_spec[2 + j]], more = _tap_position(
                    k, eqn, j, index[dn.out_spec[2 + j]], tap)
                w_at[dn.rhs_spec[2 + j]] = tap
                checks += more
            with k.w.block(f"for {ci} in range({per_group})"):
                x = read(k, ge.ref(lhs), x_at)
                if checks:  # (padding and holes are zeros)
                    x = f"{x} if {' and '.join(checks)} else {literal(0, dtype)}"
                step = f"{acc} + ({x}) * {read(k, ge.ref(rhs), w_at)}"
                k.w.line(f"{acc} = {cast(k.mod, step, dtype) if dtype.kind in 'iu' else step}")
        write(k, result, index, acc)
    launch_over(k, out, "conv_general_dilated: one output element per thread")

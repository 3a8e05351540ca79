"""cpu emitters of the RNG ops: calls of the numba kernels in `numba.lib.rng`.

threefry2x32 and rng_bit_generator give the reference's bits exactly; rng_uniform
and rng_normal draw from numba's own process stream (the op's rules, other numbers).
A rank-0 result is computed into a one-element scratch array and read back, so
every kernel only ever writes arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .... import dtypes
from ....core import Eqn, Var
from ...numba.codegen import GraphEmitter, Ref
from ...numba.lib.rng import PARALLEL_MIN_ELEMENTS
from ...numba.scalar import HALVES, storage_dtype

LIB = "numba.lib.rng"


def _use(ge: GraphEmitter, name: str) -> str:
    return ge.mod.use(name, LIB)


def _fill(ge: GraphEmitter, name: str, var: Var) -> str:
    """The kernel `name`, its `_parallel` form for large outputs in graphs that may use
    threads (numba takes seconds to compile a parallel loop: small outputs never pay)."""
    large = var.aval.size >= PARALLEL_MIN_ELEMENTS
    return _use(ge, f"{name}_parallel" if ge.mod.parallel_ok and large else name)


def _target(ge: GraphEmitter, var: Var) -> str:
    """The array a kernel writes `var` into (a one-element scratch array at rank 0)."""
    if var.aval.ndim:
        return ge.alloc(var)
    name = ge.fresh("scratch")
    ge.w.line(f"{name} = np.empty(1, np.{storage_dtype(var.aval.dtype).name})")
    return name


def _bind(ge: GraphEmitter, var: Var, target: str) -> None:
    """Bind `var` to what a kernel wrote into `target` (a scalar read at rank 0)."""
    if var.aval.ndim:
        ge.bind(var, Ref(target, var.aval))
        return
    name = ge.fresh("value")
    value = f"{target}[0]"
    if var.aval.dtype in HALVES:  # half-precision scalars live as float32 values
        value = f"{ge.mod.use(HALVES[var.aval.dtype].load)}({value})"
    ge.w.line(f"{name} = {value}")
    ge.bind(var, Ref(name, var.aval))


def _threefry2x32(ge: GraphEmitter, eqn: Eqn) -> None:
    args = ", ".join(ge.ref(a).name for a in eqn.inputs)
    y0, y1 = eqn.outputs
    if not y0.aval.ndim:
        names = [ge.fresh("bits"), ge.fresh("bits")]
        ge.w.line(f"{names[0]}, {names[1]} = {_use(ge, 'threefry_block')}({args})")
        for v, n in zip(eqn.outputs, names, strict=True):
            ge.bind(v, Ref(n, v.aval))
        return
    out0, out1 = ge.alloc(y0), ge.alloc(y1)
    ge.w.line(f"{_fill(ge, 'threefry2x32_fill', y0)}({args}, {out0}, {out1})")
    ge.bind(y0, Ref(out0, y0.aval))
    ge.bind(y1, Ref(out1, y1.aval))


def _threefry_random_bits(ge: GraphEmitter, eqn: Eqn) -> None:
    key = ge.ref(eqn.inputs[0]).name
    var = eqn.outputs[0]
    out = _target(ge, var)
    ge.w.line(f"{_fill(ge, 'threefry_random_bits_fill', var)}({key}, {out}, "
              f"{eqn.params['bit_width']})")
    _bind(ge, var, out)


def _rng_bit_generator(ge: GraphEmitter, eqn: Eqn) -> None:
    state = ge.ref(eqn.inputs[0]).name
    new_state, bits = eqn.outputs
    state_out, out = ge.alloc(new_state), _target(ge, bits)
    if eqn.params["algorithm"] == "philox":
        ge.w.line(f"{_use(ge, 'philox_generate')}({state}, {state_out}, {out})")
    else:
        shape = ge.shape_tuple(bits) if bits.aval.ndim else "(1,)"
        ge.w.line(f"{_use(ge, 'threefry_generate')}({state}, {state_out}, {out}, {shape})")
    ge.bind(new_state, Ref(state_out, new_state.aval))
    _bind(ge, bits, out)


def _nmant(dtype: np.dtype) -> int:
    return int(dtypes.finfo(dtype).nmant)


def _rng_uniform(ge: GraphEmitter, eqn: Eqn) -> None:
    a, b = (ge.ref(x).name for x in eqn.inputs)
    var = eqn.outputs[0]
    dt = var.aval.dtype
    out = _target(ge, var)
    if dtypes.is_float(dt):
        ge.w.line(f"{_use(ge, 'stream_uniform_float')}(f64({a}), f64({b}), {out}, "
                  f"{_nmant(dt)})")
    else:  # the bounds' two's-complement bits (sign-extended: only the low bits count)
        ge.w.line(f"{_use(ge, 'stream_uniform_int')}(u64({a}), u64({b}), {b} > {a}, {out}, "
                  f"{8 * dt.itemsize})")
    _bind(ge, var, out)


def _rng_normal(ge: GraphEmitter, eqn: Eqn) -> None:
    mu, sigma = (ge.ref(x).name for x in eqn.inputs)
    var = eqn.outputs[0]
    out = _target(ge, var)
    ge.w.line(f"{_use(ge, 'stream_normal')}(f64({mu}), f64({sigma}), {out}, "
              f"{_nmant(var.aval.dtype)})")
    _bind(ge, var, out)


EMITTERS: dict[str, Any] = {
    "threefry2x32": _threefry2x32,
    "threefry_random_bits": _threefry_random_bits,
    "rng_bit_generator": _rng_bit_generator,
    "rng_uniform": _rng_uniform,
    "rng_normal": _rng_normal,
}

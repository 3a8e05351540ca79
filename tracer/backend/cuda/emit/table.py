"""The cuda backend's emitter table: `DEVICE_EMITTERS[op_name](ge, eqn)` writes the host
code of an op that is not fused into a loop-nest kernel and binds its outputs. One module
per op group: `control` (on the host), `gemm` (dot_general), `index` (gather, scatter,
dynamic_update_slice, pad, concatenate), `conv`, `rng`, `window`, `batch_norm`, `bits`,
`misc`. The ops in `host.HOST_OPS` (and the cases in `host.HOST_FALLBACKS`) run through
the cpu backend's compiled code for that one eqn (`host`).
"""

from __future__ import annotations

from ....core import Eqn
from ....errors import UnsupportedOpError
from ..emitter import DeviceGraphEmitter
from . import batch_norm, bits, callbacks, control, index, misc, rng, window
from .common import OpEmitter
from .conv import emit_conv
from .gemm import emit_dot_general
from .host import HOST_OPS, run_on_host

DEVICE_EMITTERS: dict[str, OpEmitter] = {
    **control.EMITTERS, **misc.EMITTERS, "dot_general": emit_dot_general,
    "conv_general_dilated": emit_conv, **index.EMITTERS, **bits.EMITTERS,
    **rng.EMITTERS, **window.EMITTERS, **batch_norm.EMITTERS, **callbacks.EMITTERS,
}


def emit_op(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    emitter = DEVICE_EMITTERS.get(eqn.op.name)
    if emitter is not None:
        emitter(ge, eqn)
    elif eqn.op.name in HOST_OPS:
        run_on_host(ge, eqn)
    else:
        raise UnsupportedOpError(
            f"cuda backend: no kernel for op {eqn.op.name!r} (add a device emitter to "
            f"cuda.emit.table.DEVICE_EMITTERS, or list it in HOST_OPS to run it on the host)")

"""The cpu backend's emitter table: `OP_EMITTERS[op_name](ge, eqn)` writes the code of an
op that is not fused into a loop nest and binds its outputs. One module per op group
(`control`, `dot`, `shape`, `index`, `conv`, ...); an op with no entry runs its NumPy
reference (`fallback`).
"""

from __future__ import annotations

from . import (
               callbacks,
               collectives,
               control,
               conv,
               decomp,
               dot,
               index,
               misc,
               numerics,
               pooling,
               rng,
               shape,
               sort,
               window,
)
from .common import OpEmitter

OP_EMITTERS: dict[str, OpEmitter] = {
    **control.EMITTERS, **dot.EMITTERS, **shape.EMITTERS, **index.EMITTERS, **conv.EMITTERS,
    **window.EMITTERS, **pooling.EMITTERS, **sort.EMITTERS, **rng.EMITTERS, **decomp.EMITTERS,
    **numerics.EMITTERS, **misc.EMITTERS, **collectives.EMITTERS, **callbacks.EMITTERS,
}

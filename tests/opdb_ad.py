"""Op-table cases for the ops the transformations add (`tracer.ops.ad_ops`):
stop_gradient, checkpoint, checkpoint_name, the custom_jvp / custom_vjp calls, and
custom_lin (the tangent of a custom_vjp call, evaluated here by forward mode)."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops
from tracer.transforms import (checkpoint, checkpoint_name, custom_jvp, custom_vjp, jvp,
                               stop_gradient)

X3 = np.array([0.5, -1.25, 2.0])
V3 = np.array([1.0, 0.5, -2.0])

_cube = custom_jvp(lambda x: ops.mul(ops.mul(x, x), x))
_cube.defjvp(lambda p, t: (_cube(p[0]), ops.mul(ops.mul(ops.mul(p[0], p[0]), 3.0), t[0])))

_sin2 = custom_vjp(lambda x: ops.mul(ops.sin(x), 2.0))
_sin2.defvjp(lambda x: (_sin2(x), ops.cos(x)), lambda c, g: (ops.mul(ops.mul(g, c), 2.0),))

CASES: list[OpCase] = [
    OpCase("stop_gradient", lambda x: stop_gradient(x), (X3,), expected=X3),
    OpCase("stop_gradient:f32_matrix", lambda x: stop_gradient(ops.mul(x, 2.0)),
           (np.arange(6, dtype=np.float32).reshape(2, 3),),
           expected=2 * np.arange(6, dtype=np.float32).reshape(2, 3)),
    OpCase("checkpoint", lambda x: checkpoint(lambda a: ops.mul(ops.sin(a), a))(x), (X3,),
           expected=np.sin(X3) * X3),
    OpCase("checkpoint:pytree", lambda x, y: checkpoint(lambda d: d["a"] + d["b"])(
        {"a": x, "b": y}), (X3, V3), expected=X3 + V3),
    OpCase("checkpoint_name", lambda x: checkpoint_name(ops.mul(x, 2.0), "doubled"), (X3,),
           expected=2 * X3),
    OpCase("custom_jvp_call", lambda x: _cube(x), (X3,), expected=X3 ** 3),
    OpCase("custom_vjp_call", lambda x: _sin2(x), (X3,), expected=2 * np.sin(X3)),
    OpCase("custom_lin", lambda x, v: jvp(_sin2, (x,), (v,))[1], (X3, V3),
           expected=2 * np.cos(X3) * V3, ops=("custom_lin", "custom_vjp_call")),
]

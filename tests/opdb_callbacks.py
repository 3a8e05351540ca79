"""Op-table cases for the host callbacks (pure_callback, io_callback, debug_callback,
debug_print) and the token ops (after_all, infeed, outfeed, send, recv).

Each case is self-contained at run time: what an infeed reads, an ordered io_callback
of the same program queued just before it; what an outfeed queued, an ordered
io_callback reads back. So every run (reference, backends, vmap, AD) pairs its own
transfers and leaves the queues empty.
"""

from __future__ import annotations

import numpy as np

import tracer as tr
from tests.op_db import OpCase
from tracer import ops
from tracer.transforms import custom_jvp

X3 = np.array([0.3, -1.2, 2.0])
F3 = np.array([1.0, 2.0, 3.0], np.float32)
R = np.random.default_rng(11).standard_normal((2, 3))
ROW = tr.ShapedArray((3,), np.float32)


def _like(x):
    return tr.ShapedArray(np.shape(x), x.dtype)


@custom_jvp
def host_sin(x):
    """sin computed by NumPy on the host, differentiable through its custom_jvp."""
    return tr.pure_callback(np.sin, _like(x), x, vmap_method="expand_dims")


host_sin.defjvp(lambda p, t: (host_sin(p[0]), ops.mul(ops.cos(p[0]), t[0])))


def _two_results(x, y):
    """A pytree of results: a dict with the sum and the row maxima."""
    return tr.pure_callback(lambda a, b: {"s": a + b, "m": np.max(a * b, axis=-1)},
                            {"s": _like(x), "m": tr.ShapedArray(x.shape[:-1], x.dtype)},
                            x, y, vmap_method="sequential")


def _logged(x):
    tr.io_callback(lambda v: None, None, x, ordered=True)
    tr.io_callback(lambda v: None, None, ops.mul(x, x))
    return ops.mul(x, 2.0)


def _io_value(x):
    return ops.add(tr.io_callback(lambda v: np.asarray(v * 3), _like(x), x), x)


def _debug(x):
    tr.debug.callback(lambda v: None, x)
    return ops.sin(x)


def _print(x):
    tr.debug.print("op table value {}", x, ordered=True)
    return ops.mul(x, x)


def _infeed(x):
    tr.io_callback(tr.transfer_to_infeed, None, F3, ordered=True)
    value, _ = ops.infeed(ROW, timeout=10.0)
    return ops.mul(value, x)


def _outfeed(x):
    ops.outfeed(F3)
    back = tr.io_callback(lambda: tr.transfer_from_outfeed(ROW, timeout=10.0), ROW,
                          ordered=True)
    return ops.add(back, x)


def _send_recv(x):
    token = ops.after_all(ops.create_token(), ops.create_token())
    token = ops.send(F3, token, channel_id=101)
    value, _ = ops.recv(ROW, token, channel_id=101, timeout=10.0)
    return ops.sub(x, value)


CASES = [
    OpCase("pure_callback:custom_jvp_sin", host_sin, (X3,), expected=np.sin(X3)),
    OpCase("pure_callback:pytree_sequential", _two_results, (R, 2 * R),
           expected=[np.max(2 * R * R, axis=-1), 3 * R]),
    OpCase("io_callback:logged", _logged, (X3,), expected=2 * X3),
    OpCase("io_callback:result", _io_value, (X3,), expected=4 * X3),
    OpCase("debug_callback", _debug, (X3,), expected=np.sin(X3)),
    OpCase("debug_print:ordered", _print, (X3,), expected=X3 * X3),
    OpCase("infeed:queued_by_callback", _infeed, (F3,), expected=F3 * F3,
           ops=("infeed", "after_all", "io_callback")),
    OpCase("outfeed:read_by_callback", _outfeed, (F3,), expected=2 * F3),
    OpCase("send:paired_recv", _send_recv, (F3,), expected=0 * F3,
           ops=("send", "recv", "after_all")),
]

"""JVP / transpose / batching rules for custom_call and optimization_barrier, and
the batching rule of composite (its JVP and transpose are the `call` rules on its
decomposition, installed by `tracer.transforms.control_rules`).

- `optimization_barrier`: the barrier is kept through every transformation: the
  JVP puts the primals through one barrier and the tangents through another, the transpose puts the
  cotangents through one, batching keeps the batch dims.
- `custom_call`: opaque, so no derivative (a clear error: use custom_jvp or
  custom_vjp around it); batching runs the target once per batch element with a
  `scan` over the batch axis.
- `composite`: batching batches the decomposition and calls it as a plain `call`,
  since the batched program is no longer the named composite.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..core import Graph, ShapedArray
from ..errors import TracerTypeError
from .ad import Zero, instantiate
from .collectives import current_frame, move_batch_dim
from .control import call_p, scan
from .misc import composite_p, custom_call_p, optimization_barrier_p

Dims = list[int | None]


# --------------------------------------------------------------- optimization_barrier
def _barrier_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list, list]:
    # Two barriers, not one: linearize must find the primal outputs free of tangents.
    live = [t for t in tangents if not isinstance(t, Zero)]
    it = iter(optimization_barrier_p.bind(*live))
    return (list(optimization_barrier_p.bind(*primals)),
            [t if isinstance(t, Zero) else next(it) for t in tangents])


def _barrier_transpose(cts: list[Any], *args: Any) -> list[Any]:
    return list(optimization_barrier_p.bind(*map(instantiate, cts)))


def _barrier_batch(args: Sequence[Any], dims: Sequence[int | None]) -> tuple[list, Dims]:
    return list(optimization_barrier_p.bind(*args)), list(dims)


optimization_barrier_p.jvp = _barrier_jvp
optimization_barrier_p.transpose = _barrier_transpose
optimization_barrier_p.batch = _barrier_batch


# ----------------------------------------------------------------------- custom_call
def _custom_call_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, target: str,
                     revision: int, out_avals: tuple[ShapedArray, ...]) -> tuple[list, list]:
    raise TracerTypeError(f"custom_call {target!r}: a custom-call target has no derivative "
                          f"rule; wrap the function that calls it in tr.custom_jvp or "
                          f"tr.custom_vjp to differentiate through it")


def _custom_call_batch(args: Sequence[Any], dims: Sequence[int | None], *, target: str,
                       revision: int, out_avals: tuple[ShapedArray, ...]) -> tuple[list, Dims]:
    size = next(x.shape[d] for x, d in zip(args, dims, strict=True) if d is not None)
    xs = [move_batch_dim(x, d, 0, size) for x, d in zip(args, dims, strict=True)
          if d is not None]

    def one_element(carry: tuple, slices: list[Any]) -> tuple[tuple, list[Any]]:
        it = iter(slices)
        operands = [x if d is None else next(it) for x, d in zip(args, dims, strict=True)]
        return carry, list(custom_call_p.bind(*operands, target=target, revision=revision,
                                              out_avals=out_avals))

    _, ys = scan(one_element, (), xs, length=size)
    return list(ys), [0] * len(ys)


custom_call_p.jvp = _custom_call_jvp
custom_call_p.batch = _custom_call_batch


# ------------------------------------------------------------------------- composite
def _composite_batch(args: Sequence[Any], dims: Sequence[int | None], *, to_apply: Graph,
                     name: str, attributes: tuple, version: int) -> tuple[list, Dims]:
    frame = current_frame()
    if frame is None:
        raise TracerTypeError("composite's batching rule runs inside vmap_graph only")
    graph, out_dims = frame.batch_graph(to_apply, dims, [False] * len(to_apply.outputs))
    return list(call_p.bind(*args, to_apply=graph)), out_dims


composite_p.batch = _composite_batch

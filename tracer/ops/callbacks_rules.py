"""JVP and batching rules of the host callbacks and the token ops.

- JVP: `pure_callback` has none: the function is opaque Python. The error says to
  wrap the function calling it in `custom_jvp` / `custom_vjp`. Neither has
  `io_callback` with float results; one without (a logger) runs on the primals, once.
  `debug_callback` / `debug_print` are not differentiable (they return no values):
  under `grad` they see the primal values, once.
- Batching follows `vmap_method` as JAX does: `"sequential"` calls the callback once
  per batch element (a `scan` over the batch), `"expand_dims"` calls it once with the
  batch as a new leading axis (size 1 on unbatched operands), `"broadcast_all"` once
  with every operand broadcast to the batch; `None` raises. Effectful callbacks run
  sequentially, in batch order (an ordered one carries its token through the scan).
- Outfeed and send of a batched operand send the whole batch (batch axis first) as
  one value; tokens are never batched.
"""

from __future__ import annotations

from typing import Any, Sequence

from .. import dtypes
from ..core import ShapedArray
from ..errors import TracerTypeError, TracerValueError
from .ad import Zero, aval_of_value
from .callbacks import debug_callback_p, debug_print_p, io_callback_p, pure_callback_p
from .collectives import move_batch_dim
from .control import scan
from .host_callback import HostCallback
from .registry import Op
from .tokens import after_all_p, infeed_p, outfeed_p, recv_p, send_p

Dims = list[int | None]


def _batch_size(args: Sequence[Any], dims: Sequence[int | None]) -> int:
    return next(x.shape[d] for x, d in zip(args, dims, strict=True) if d is not None)


def _at(callback: HostCallback) -> str:
    return f"\n  at {callback.source}" if callback.source is not None else ""


# ------------------------------------------------------------------ JVP
def _no_derivative(name: str) -> Any:
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], *, callback: HostCallback,
            **params: Any) -> tuple[list, list]:
        raise TracerTypeError(
            f"{name}: callback {callback.name!r} is Python code tracer cannot "
            f"differentiate; wrap the function that calls {name} in tr.custom_jvp or "
            f"tr.custom_vjp and give its derivative there{_at(callback)}")
    return jvp


def _io_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, callback: HostCallback,
            ordered: bool) -> tuple[list, list]:
    """Without float results the call has no derivative to give: it runs on the primals
    (a logger under grad); with float results, as pure_callback, it needs custom_jvp."""
    if any(dtypes.is_inexact(a.dtype) for a in callback.result_avals):
        return _no_derivative("io_callback")(primals, tangents, callback=callback)
    outs = list(io_callback_p.bind(*primals, callback=callback, ordered=ordered))
    return outs, [Zero(aval_of_value(o)) for o in outs]


pure_callback_p.jvp = _no_derivative("pure_callback")
io_callback_p.jvp = _io_jvp


# ------------------------------------------------------------------ batching
def sequential(op: Op, args: Sequence[Any], dims: Sequence[int | None], ordered: bool,
               params: dict[str, Any]) -> tuple[list, Dims]:
    """`op` once per batch element, in order, by a `scan` over the batch axis; an
    ordered op's token is the scan's carry."""
    size = _batch_size(args, dims)
    xs = [move_batch_dim(x, d, 0, size) for x, d in zip(args, dims, strict=True)
          if d is not None]

    def one_element(carry: Any, slices: list[Any]) -> tuple[Any, list[Any]]:
        it = iter(slices)
        operands = [x if d is None else next(it) for x, d in zip(args, dims, strict=True)]
        if ordered:
            operands[0] = carry
        outs = list(op.bind(*operands, **params))
        return (outs[0], outs[1:]) if ordered else (carry, outs)

    carry, ys = scan(one_element, args[0] if ordered else (), xs, length=size)
    head = [carry] if ordered else []
    return head + list(ys), [None] * len(head) + [0] * len(ys)


def _pure_batch(args: Sequence[Any], dims: Sequence[int | None], *,
                callback: HostCallback, vmap_method: str | None) -> tuple[list, Dims]:
    params = {"callback": callback, "vmap_method": vmap_method}
    if vmap_method is None:
        raise TracerValueError(
            f"pure_callback: callback {callback.name!r} is under vmap but was given no "
            f"vmap_method; pass vmap_method='sequential' (one call per batch element), "
            f"'expand_dims' or 'broadcast_all' (one call with a leading batch axis)"
            f"{_at(callback)}")
    if vmap_method == "sequential":
        return sequential(pure_callback_p, args, dims, False, params)
    size = _batch_size(args, dims)
    expand = vmap_method == "expand_dims"
    moved = [move_batch_dim(x, d, 0, 1 if expand and d is None else size)
             for x, d in zip(args, dims, strict=True)]
    batched = HostCallback(callback.fn, callback.in_tree, callback.out_tree,
                           [ShapedArray((size, *a.shape), a.dtype)
                            for a in callback.result_avals], callback.what, callback.source)
    outs = pure_callback_p.bind(*moved, callback=batched, vmap_method=vmap_method)
    return list(outs), [0] * len(outs)


def _effect_batch(op: Op) -> Any:
    def batch(args: Sequence[Any], dims: Sequence[int | None], **params: Any
              ) -> tuple[list, Dims]:
        return sequential(op, args, dims, params["ordered"], params)
    return batch


def _whole_batch(op: Op) -> Any:
    """Outfeed / send / infeed / recv / after_all: batched operands go as one value with
    the batch axis first; the outputs (tokens, received values) are not batched."""
    def batch(args: Sequence[Any], dims: Sequence[int | None], **params: Any
              ) -> tuple[list, Dims]:
        moved = [x if d is None else move_batch_dim(x, d, 0, 0)
                 for x, d in zip(args, dims, strict=True)]
        outs = op.bind(*moved, **params)
        outs = list(outs) if op.multiple_results else [outs]
        return outs, [None] * len(outs)
    return batch


pure_callback_p.batch = _pure_batch
for _op in (io_callback_p, debug_callback_p, debug_print_p):
    _op.batch = _effect_batch(_op)
for _op in (after_all_p, infeed_p, outfeed_p, recv_p, send_p):
    _op.batch = _whole_batch(_op)

"""Batching rules of the control-flow ops (`control.py`) and the collectives
(`collectives.py`), as JAX does them.

Sub-graphs are batched through the `AxisFrame` of the vmap rewrite in progress
(`frame.batch_graph`), since this room sits below `tracer.transforms`. Batched
operands are moved to axis 0 first, so a loop body sees every batched carry there.

- `call`: batch the callee.
- `conditional`: with an unbatched index, batch every branch (outputs batched in
  one branch are batched in all). With a batched index, run every branch and pick
  per element with `select`; an index out of range picks the last branch (seed).
- `while`: carries that the body makes batched become batched (a fixpoint). A
  batched predicate runs the loop while any element's holds, and a finished
  element keeps its carry (`select` with its own predicate).
- `scan`: like `while` for the carries; xs are scanned on axis 0, batched at 1.

Importing this module also registers the collectives' rules (`collectives_rules`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core import Graph, ShapedArray
from ..errors import TracerTypeError
from ..interpret import eval_graph
from ..tracing import Tracer, trace_flat
from . import collectives_rules  # noqa: F401  # the collectives' rules, registered on import
from . import elementwise as ew
from .collectives import AxisFrame, current_frame, move_batch_dim
from .control import call_p, conditional_p, scan_p, while_p
from .reduce import reduce
from .shape import broadcast_in_dim

Dims = list[int | None]


def _frame() -> AxisFrame:
    frame = current_frame()
    if frame is None:
        raise TracerTypeError("control-flow batching rules run inside vmap_graph only")
    return frame


def _to_front(args: Sequence[Any], dims: Sequence[int | None], size: int
              ) -> tuple[list[Any], Dims]:
    """Batched args with their batch dim at 0; unbatched ones as they are."""
    return ([x if d is None else move_batch_dim(x, d, 0, size) for x, d in
             zip(args, dims, strict=True)], [None if d is None else 0 for d in dims])


def _aval(x: Any) -> ShapedArray:
    if isinstance(x, Tracer):
        return x.aval
    arr = np.asarray(x)
    return ShapedArray(arr.shape, arr.dtype)


# ------------------------------------------------------------------------------ call
def _call_batch(args: Sequence[Any], dims: Sequence[int | None], *,
                to_apply: Graph) -> tuple[list[Any], Dims]:
    graph, out_dims = _frame().batch_graph(to_apply, dims, [False] * len(to_apply.outputs))
    return call_p.bind(*args, to_apply=graph), out_dims


# ----------------------------------------------------------------------- conditional
def _conditional_batch(args: Sequence[Any], dims: Sequence[int | None], *,
                       branch_computations: tuple[Graph, ...]) -> tuple[list[Any], Dims]:
    frame = _frame()
    (index, *operands), (index_dim, *op_dims) = args, dims
    if index_dim is None:
        branches, out_dims = _batch_branches(frame, branch_computations, op_dims)
        return conditional_p.bind(index, *operands, branch_computations=branches), out_dims
    n_out = len(branch_computations[0].outputs)
    results = [eval_graph(frame.batch_graph(g, op_dims, [True] * n_out)[0], operands)
               for g in branch_computations]
    index = move_batch_dim(index, index_dim, 0, frame.size)
    return [_pick(index, [r[k] for r in results]) for k in range(n_out)], [0] * n_out


def _batch_branches(frame: AxisFrame, graphs: Sequence[Graph], dims: Sequence[int | None]
                    ) -> tuple[tuple[Graph, ...], Dims]:
    """Every branch batched so that all give the same out dims (0 or None)."""
    n_out = len(graphs[0].outputs)
    results = [frame.batch_graph(g, dims, [False] * n_out) for g in graphs]
    force = [any(r[1][k] is not None for r in results) for k in range(n_out)]
    want = [0 if f else None for f in force]
    results = [r if r[1] == want else frame.batch_graph(g, dims, force)
               for g, r in zip(graphs, results, strict=True)]
    return tuple(r[0] for r in results), want


def _pick(index: Any, outs: Sequence[Any]) -> Any:
    """outs[index[i]] per batch element i (axis 0); any other index picks outs[-1]."""
    dtype = _aval(index).dtype
    limits = np.iinfo(dtype)
    res = outs[-1]
    for b in range(len(outs) - 2, -1, -1):
        if b > limits.max:
            continue  # this index type cannot reach branch b
        shape = _aval(res).shape
        pred = broadcast_in_dim(ew.eq(index, np.asarray(b, dtype)), shape, (0,))
        res = ew.select(pred, outs[b], res)
    return res


# ----------------------------------------------------------------------------- while
def _carry_fixpoint(frame: AxisFrame, body: Graph, const_dims: Dims, carry_b: list[bool],
                    extra_dims: Dims) -> tuple[Graph, list[bool], Dims]:
    """Batch a loop body whose carries (then `extra` inputs) follow its consts: a
    carry is batched if its initial value or the body makes it so."""
    n_extra_out = len(body.outputs) - len(carry_b)
    for _ in range(len(carry_b) + 1):
        in_dims = const_dims + [0 if b else None for b in carry_b] + extra_dims
        graph, out_dims = frame.batch_graph(body, in_dims, carry_b + [False] * n_extra_out)
        grown = [b or d is not None for b, d in zip(carry_b, out_dims[:len(carry_b)],
                                                      strict=True)]
        if grown == carry_b:
            return graph, carry_b, out_dims
        carry_b = grown
    raise AssertionError("the carry fixpoint grows at most once per carry")


def _while_batch(args: Sequence[Any], dims: Sequence[int | None], *, condition: Graph,
                 body: Graph, cond_nconsts: int, body_nconsts: int) -> tuple[list[Any], Dims]:
    frame = _frame()
    args, dims = _to_front(args, dims, frame.size)
    nc, nb = cond_nconsts, body_nconsts
    cconsts, bconsts, carry = args[:nc], args[nc:nc + nb], args[nc + nb:]
    cdims, bdims, carry_dims = dims[:nc], dims[nc:nc + nb], dims[nc + nb:]
    body_b, carry_b, _ = _carry_fixpoint(frame, body, bdims, [d is not None for d in
                                                             carry_dims], [])
    carry_in = [0 if b else None for b in carry_b]
    cond_b, pred_dims = frame.batch_graph(condition, cdims + carry_in, [False])
    if pred_dims[0] is None:
        carry = [move_batch_dim(x, d, 0, frame.size) if b and d is None else x
                 for x, d, b in zip(carry, carry_dims, carry_b, strict=True)]
        outs = while_p.bind(*cconsts, *bconsts, *carry, condition=cond_b, body=body_b,
                            cond_nconsts=nc, body_nconsts=nb)
        return outs, carry_in
    # a batched predicate: every carry is batched, and finished elements stay put
    every = [0] * len(carry)
    body_b = frame.batch_graph(body, bdims + every, [True] * len(carry))[0]
    cond_b = frame.batch_graph(condition, cdims + every, [True])[0]
    carry = [move_batch_dim(x, d, 0, frame.size) if d is None else x
             for x, d in zip(carry, carry_dims, strict=True)]
    cc_avals, bc_avals, carry_avals = ([_aval(x) for x in xs] for xs in (cconsts, bconsts, carry))
    any_cond = _any_condition(cond_b, cc_avals + carry_avals)
    masked = _masked_body(cond_b, body_b, len(cconsts), len(bconsts),
                          cc_avals + bc_avals + carry_avals)
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *carry, condition=any_cond, body=masked,
                        cond_nconsts=nc, body_nconsts=nc + nb)
    return outs, every


def _any_condition(cond_b: Graph, avals: list[ShapedArray]) -> Graph:
    def any_true(*xs: Any) -> list[Any]:
        pred = eval_graph(cond_b, list(xs))[0]
        return [reduce(pred, False, ew.bitwise_or, (0,))]

    return trace_flat(any_true, avals, "while_condition")[0]


def _masked_body(cond_b: Graph, body_b: Graph, nc: int, nb: int,
                 avals: list[ShapedArray]) -> Graph:
    def body(*xs: Any) -> list[Any]:
        cconsts, bconsts, carry = list(xs[:nc]), list(xs[nc:nc + nb]), list(xs[nc + nb:])
        pred = eval_graph(cond_b, cconsts + carry)[0]
        new = eval_graph(body_b, bconsts + carry)
        return [ew.select(broadcast_in_dim(pred, _aval(old).shape, (0,)), x, old)
                for x, old in zip(new, carry, strict=True)]

    return trace_flat(body, avals, "while_body")[0]


# ------------------------------------------------------------------------------ scan
def _scan_batch(args: Sequence[Any], dims: Sequence[int | None], *, body: Graph, length: int,
                reverse: bool, num_consts: int, num_carry: int) -> tuple[list[Any], Dims]:
    frame = _frame()
    k = num_consts + num_carry
    front, front_dims = _to_front(args[:k], dims[:k], frame.size)
    # xs keep the scanned axis first: their batch axis goes to 1, so slices have it at 0
    xs = [x if d is None else move_batch_dim(x, d, 1, frame.size)
          for x, d in zip(args[k:], dims[k:], strict=True)]
    slice_dims = [None if d is None else 0 for d in dims[k:]]
    consts, carry = front[:num_consts], front[num_consts:]
    carry_dims = front_dims[num_consts:]
    graph, carry_b, out_dims = _carry_fixpoint(
        frame, body, front_dims[:num_consts], [d is not None for d in carry_dims], slice_dims)
    carry = [move_batch_dim(x, None, 0, frame.size) if b and d is None else x
             for x, d, b in zip(carry, carry_dims, carry_b, strict=True)]
    outs = scan_p.bind(*consts, *carry, *xs, body=graph, length=length, reverse=reverse,
                       num_consts=num_consts, num_carry=num_carry)
    ys_dims = [None if d is None else d + 1 for d in out_dims[num_carry:]]
    return outs, [0 if b else None for b in carry_b] + ys_dims


def _register() -> None:
    call_p.batch = _call_batch
    conditional_p.batch = _conditional_batch
    while_p.batch = _while_batch
    scan_p.batch = _scan_batch


_register()

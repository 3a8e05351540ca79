"""Batching (`vmap`) as a Graph -> Graph rewrite.

`vmap_graph(graph, in_dims, axis_size)` traces a fresh graph whose inputs carry one
more axis (of `axis_size`, at `in_dims[i]`, or none for `None`). It walks the eqns
keeping `(value, batch dim or None)` per Var: eqns with no batched input are
re-emitted as they are, the others go through their op's batching rule
`op.batch(args, dims, **params) -> (out, out_dim)` (see `tracer.ops.ad`), whose
body calls ordinary `tracer.ops` functions and so emits into the new graph.

Collectives over the mapped axis (`axis_name`) are batched even when their inputs
are not (an all-reduce of an unbatched value still sums `axis_size` copies), and
so are control-flow eqns whose sub-graphs contain one. Rules for sub-graphs reach
this module back through the `AxisFrame` set while the walk runs.

An op without a rule is a `TracerTypeError`, unless `tracer.config.vmap_fallback`
is on: then the op runs once per batch element and the results are stacked.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from .. import dtypes
from ..config import config
from ..core import Eqn, Graph, Literal, ShapedArray, TypecheckError, subgraphs
from ..errors import TracerTypeError, TracerValueError
from ..ops.collectives import AxisFrame, batching_frame, move_batch_dim, names_axis
from ..ops.shape import concatenate, reshape, slice as slice_op
from ..tracing import EqnSource, bind, trace_flat

Dims = list[int | None]
Finish = Callable[[list[Any], Dims], tuple[list[Any], Dims]]


def vmap_graph(graph: Graph, in_dims: Sequence[int | None], axis_size: int,
               axis_name: Hashable = None, *,
               out_axes: Sequence[int | None] | None = None) -> tuple[Graph, Dims]:
    """Batch `graph` over a new axis of `axis_size`: `(batched graph, out_dims)`.

    `in_dims[i]` is where input i's batch axis is (negative counts from the end of
    the batched rank) or None for an unbatched input. Without `out_axes` the
    outputs keep the batch dims the rules give (None: unbatched); with it, output
    i is moved (or broadcast) to `out_axes[i]`, and None requires it unbatched.
    """
    if len(in_dims) != len(graph.inputs):
        raise TracerValueError(f"vmap_graph: {len(in_dims)} in_dims for a graph of "
                               f"{len(graph.inputs)} inputs")
    finish = _natural if out_axes is None else functools.partial(
        _to_out_axes, out_axes=tuple(out_axes), size=axis_size)
    return _vmap(graph, in_dims, axis_size, axis_name, finish)


def _vmap(graph: Graph, in_dims: Sequence[int | None], size: int, name: Hashable,
          finish: Finish) -> tuple[Graph, Dims]:
    dims = [_canonical_dim(d, a.ndim + 1, f"in_dims[{i}]")
            for i, (d, a) in enumerate(zip(in_dims, graph.in_avals, strict=True))]
    avals = [_batched_aval(a, d, size) for a, d in zip(graph.in_avals, dims, strict=True)]
    result: list[Dims] = []

    def run(*args: Any) -> list[Any]:
        frame = AxisFrame(name, size, functools.partial(_batch_subgraph, size, name))
        with batching_frame(frame):
            outs, out_dims = batch_eval(graph, args, dims, frame)
        outs, out_dims = finish(outs, out_dims)
        result.append(out_dims)
        return outs

    new, captured = trace_flat(run, avals, name=graph.name)
    if captured:  # rules only see the walk's own values: a closed graph stays closed
        raise TypecheckError(f"vmap of {graph.name} captured outer values")
    return new, result[0]


def _batch_subgraph(size: int, name: Hashable, graph: Graph, in_dims: Sequence[int | None],
                    force: Sequence[bool]) -> tuple[Graph, Dims]:
    """What control-flow rules call (via `AxisFrame.batch_graph`) for their bodies."""
    return _vmap(graph, in_dims, size, name,
                 functools.partial(_force_front, force=tuple(force), size=size))


def batch_eval(graph: Graph, args: Sequence[Any], dims: Sequence[int | None],
               frame: AxisFrame) -> tuple[list[Any], Dims]:
    """Evaluate `graph` on batched `args` in the current trace: (outputs, their dims)."""
    env: dict[int, tuple[Any, int | None]] = {
        id(v): (x, d) for v, x, d in zip(graph.inputs, args, dims, strict=True)}

    def read(a: Any) -> tuple[Any, int | None]:
        return (a.value, None) if isinstance(a, Literal) else env[id(a)]

    for eqn in graph.eqns:
        pairs = [read(a) for a in eqn.inputs]
        vals, in_dims = [p[0] for p in pairs], [p[1] for p in pairs]
        if all(d is None for d in in_dims) and not uses_axis(eqn, frame.name):
            outs = bind(eqn.op, vals, eqn.params, eqn.source)
            outs = outs if eqn.op.multiple_results else [outs]
            out_dims: Dims = [None] * len(eqn.outputs)
        else:
            with EqnSource(eqn.source):
                outs, out_dims = _apply_rule(eqn, vals, in_dims, frame)
        for v, x, d in zip(eqn.outputs, outs, out_dims, strict=True):
            env[id(v)] = (x, d)
    pairs = [read(a) for a in graph.outputs]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def uses_axis(eqn: Eqn, name: Hashable) -> bool:
    """Whether `eqn` is, or its sub-graphs hold, a collective over axis `name`."""
    if name is None:
        return False
    if names_axis(eqn.params, name):
        return True
    return any(uses_axis(e, name) for g in subgraphs(eqn.params) for e in g.eqns)


def _apply_rule(eqn: Eqn, vals: list[Any], dims: Dims,
                frame: AxisFrame) -> tuple[list[Any], Dims]:
    op = eqn.op
    if op.batch is None:
        if not config.values().get("vmap_fallback", False):
            shown = ", ".join(_fmt(v, d) for v, d in zip(vals, dims, strict=True))
            raise TracerTypeError(f"vmap: op {op.name!r} has no batching rule (operands "
                                  f"{shown})")
        return loop_and_stack(eqn, vals, dims, frame.size)
    out, out_dim = op.batch(vals, dims, **eqn.params)
    outs, out_dims = (list(out), list(out_dim)) if op.multiple_results else ([out], [out_dim])
    for v, x, d in zip(eqn.outputs, outs, out_dims, strict=True):
        _check_rule_output(op.name, v.aval, x, d, frame.size)
    return outs, out_dims


def _check_rule_output(name: str, aval: ShapedArray, x: Any, d: int | None, size: int) -> None:
    """A rule's result must be the unbatched result with the batch axis at `d`."""
    want = aval.shape if d is None else aval.shape[:d] + (size,) + aval.shape[d:]
    got = tuple(np.shape(x))
    if got != want:
        raise TypecheckError(f"batching rule of {name} returned shape {got} with batch dim "
                             f"{d}, but the op gives {aval} (batched: {want})")


def loop_and_stack(eqn: Eqn, vals: list[Any], dims: Dims, size: int) -> tuple[list[Any], Dims]:
    """Run the op once per batch element and stack the results on axis 0 (slow)."""
    warnings.warn(f"vmap: op {eqn.op.name!r} has no batching rule; running it "
                  f"{size} times (tracer.config.vmap_fallback)", stacklevel=3)
    results = []
    for i in range(size):
        args = [x if d is None else _element(x, d, i) for x, d in zip(vals, dims, strict=True)]
        out = bind(eqn.op, args, eqn.params, eqn.source)
        results.append(out if eqn.op.multiple_results else [out])
    outs = []
    for k, v in enumerate(eqn.outputs):
        if size == 0:
            outs.append(move_batch_dim(np.zeros(v.aval.shape, v.aval.dtype), None, 0, 0))
            continue
        parts = [reshape(r[k], (1,) + v.aval.shape) for r in results]
        outs.append(parts[0] if size == 1 else concatenate(parts, 0))
    return outs, [0] * len(outs)


def _element(x: Any, d: int, i: int) -> Any:
    shape = tuple(np.shape(x))
    start = [0] * len(shape)
    limit = list(shape)
    start[d], limit[d] = i, i + 1
    return reshape(slice_op(x, start, limit), shape[:d] + shape[d + 1:])


# ---------------------------------------------------------------------- output dims
def _natural(outs: list[Any], dims: Dims) -> tuple[list[Any], Dims]:
    return outs, dims


def _force_front(outs: list[Any], dims: Dims, *, force: tuple[bool, ...],
                 size: int) -> tuple[list[Any], Dims]:
    new_outs, new_dims = [], []
    for x, d, f in zip(outs, dims, force, strict=True):
        new_outs.append(move_batch_dim(x, d, 0, size) if f else x)
        new_dims.append(0 if f else d)
    return new_outs, new_dims


def _to_out_axes(outs: list[Any], dims: Dims, *, out_axes: tuple[int | None, ...],
                 size: int) -> tuple[list[Any], Dims]:
    if len(out_axes) != len(outs):
        raise TracerValueError(f"vmap: {len(out_axes)} out_axes for {len(outs)} outputs")
    new_outs, new_dims = [], []
    for i, (x, d, want) in enumerate(zip(outs, dims, out_axes, strict=True)):
        if want is None:
            if d is not None:
                raise TracerValueError(
                    f"vmap has mapped output {i} ({_fmt(x, d)}, batched at axis {d}) but "
                    f"out_axes is None for it: only outputs that do not depend on the "
                    f"mapped inputs can have out_axes None")
            new_outs.append(x)
        else:
            rank = len(np.shape(x)) + (1 if d is None else 0)
            want = _canonical_dim(want, rank, f"out_axes of output {i}")
            new_outs.append(move_batch_dim(x, d, want, size))
        new_dims.append(want)
    return new_outs, new_dims


# -------------------------------------------------------------------------- helpers
def _canonical_dim(d: int | None, rank: int, what: str) -> int | None:
    if d is None:
        return None
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise TracerTypeError(f"vmap: {what} must be an int or None, got {d!r}")
    if not -rank <= d < rank:
        raise TracerValueError(f"vmap: {what} = {d} is out of range for a batched value of "
                               f"rank {rank} (valid: {-rank}..{rank - 1})")
    return int(d) % rank


def _batched_aval(aval: ShapedArray, d: int | None, size: int) -> ShapedArray:
    if d is None:
        return aval
    return aval.update(shape=aval.shape[:d] + (size,) + aval.shape[d:])


def _fmt(x: Any, d: int | None) -> str:
    shape = ",".join(map(str, np.shape(x)))
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    batched = "" if d is None else f" (batch dim {d})"
    return f"{dtypes.hlo_name(np.dtype(dtype))}[{shape}]{batched}"

"""Emitters for the indexing ops with runtime indices: dynamic_update_slice,
gather and scatter (dynamic_slice is an index map, fused in `numba.loops`).

numba does not bounds-check, so the generated code applies the seeds' rules
itself, exactly as the reference does: dynamic_update_slice and gather clamp
each start into [0, dim - size] (unsigned indices are first saturated to int64 at
2**62); scatter skips every update window that does not fit entirely (one unsigned
comparison per dim). Indices known to be in bounds then index as uint64, so numba
adds no wraparound of negative indices: a scatter or gather of single elements is
bound by the cache misses in flight, and every instruction per element costs.

An index array whose element-wise producers the fusion plan leaves to the op
(NumPy's wrap of negative indices) is computed per element inside the op's loop,
so it never takes a pass or a buffer of its own. A gather's batch loop runs in
parallel from PARALLEL_MIN_ELEMENTS elements, like a fused nest: each core copies
from its own caches (rows of 1 MB float64: 40 -> 16 us on 2 threads; 2^17 single
elements 84 -> 31 us, the loads' misses in flight doubled). A gather of
single elements into a vector result (x[idx]) computes a block of element offsets,
then loads them with vector gathers (`cpu.lib.gather`): the scalar loop does not
vectorize.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

from ....core import Atom, Eqn, Literal
from ...numba.codegen import GraphEmitter, Ref, copy_array, load, store_value
from ...numba.loops import LoopBody
from ...numba.scalar import HALVES
from ...numba.source import SourceWriter
from ..lib.gather import BLOCK, SCALAR_MIN_BYTES
from ..options import NJIT_OPTIONS, PARALLEL_MIN_ELEMENTS

Loops = list[tuple[str, str]]
SCATTER_AHEAD = 64  # updates between a target's prefetch and its update
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOOP_VAR = re.compile(r"[gow][0-9]+")  # the batch, offset and window loop variables


def _for_each(ge: GraphEmitter, loops: Loops, inside: Callable[[], None],
              parallel: bool = False) -> None:
    if not loops:
        inside()
        return
    var, bound = loops[0]
    with ge.w.block(f"for {var} in {'numba.prange' if parallel else 'range'}({bound})"):
        _for_each(ge, loops[1:], inside)


def _in_kernel(ge: GraphEmitter, hint: str, write: Callable[[], None],
               local: Sequence[str] = ()) -> None:
    """Run `write` (which emits a loop nest whose outer loop is a prange) into its own
    `parallel=True` function, called with the host names its text uses: sizes, module
    parameters, bound values, and `local` names (an output a nested graph's emitter
    allocated in its own code, not bound yet)."""
    host_w, ge.w = ge.w, SourceWriter()
    try:
        write()
        body = ge.w
    finally:
        ge.w = host_w
    host = set(ge.mod.size_names.values()) | {p.name for p in ge.mod.params} | \
        {r.name for r in ge.env.values()} | set(local)
    params = list(dict.fromkeys(n for n in _NAME.findall(body.text()) if n in host))
    name = ge.mod.kernel(f"parallel_{hint}", f"@numba.njit({NJIT_OPTIONS}, parallel=True)",
                         params, body)
    ge.w.line(f"{name}({', '.join(params)})")


def _param(ge: GraphEmitter, eqn: Eqn, name: str, d: int, hint: str) -> str:
    return ge.mod.size(("param", id(eqn), name, d), eqn.params[name][d], hint)


def _copy(ge: GraphEmitter, source: Ref, aval: object, hint: str, var: object) -> Ref:
    """A fresh copy of `source` for `var` (its result), or a scalar variable."""
    if source.scalar:
        name = ge.fresh(hint)
        ge.w.line(f"{name} = {source.name}")
        return Ref(name, aval)  # type: ignore[arg-type]
    name = ge.alloc(var)  # type: ignore[arg-type]
    copy_array(ge, name, source.name, source.aval.ndim)
    return Ref(name, aval)  # type: ignore[arg-type]


def _dynamic_update_slice(ge: GraphEmitter, eqn: Eqn) -> None:
    operand, update, *starts = (ge.ref(a) for a in eqn.inputs)
    out = eqn.outputs[0]
    if not out.aval.ndim:
        ge.bind(out, update)
        return
    result = _copy(ge, operand, out.aval, "updated", out)
    starts_at = []
    for d, start in enumerate(starts):
        s = ge.fresh(f"start{d}")
        high = f"{ge.dim(eqn.inputs[0], d)} - {ge.dim(eqn.inputs[1], d)}"
        ge.w.line(f"{s} = {ge.mod.use('clamp_index')}({start.name}, {high})")
        starts_at.append(s)
    copy_array(ge, result.name, update.name, out.aval.ndim, offsets=starts_at)
    ge.bind(out, result)


# ------------------------------------------------------------------ gather

def _index_vector(ge: GraphEmitter, indices: Atom, ivd: int, batch: Sequence[str],
                  k: int) -> str:
    """Element k of the index vector at batch position `batch` (ivd == rank: implicit 1):
    read from memory, or computed here from its producers when the fusion plan left
    them to this loop (NumPy's wrap of negative indices)."""
    position = list(batch)
    if ivd < indices.aval.ndim:
        position.insert(ivd, str(k))
    plan = ge.plan
    if isinstance(indices, Literal) or plan is None or id(indices) in plan.materialized:
        return load(ge.ref(indices), position, ge.mod)
    return LoopBody(ge, plan, ge.w, set(), {}, set()).value(indices, tuple(position))


def _signed(indices: Atom) -> bool:
    """Signed indices are exact in int64 arithmetic; unsigned ones (uint64 past 2**63
    would compare as floats) go through the saturating helpers first."""
    return indices.aval.dtype.kind == "i"


def _batch_axis(sd: int, ivd: int) -> int:
    """Position among the batch dims of indices dim `sd` (index_vector_dim removed)."""
    return sd if sd < ivd else sd - 1


def _gather(ge: GraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    operand, indices = ge.ref(eqn.inputs[0]), eqn.inputs[1]
    out = eqn.outputs[0]
    rank_out = out.aval.ndim
    batch_dims = [d for d in range(rank_out) if d not in p["offset_dims"]]
    g = [f"g{j}" for j in range(len(batch_dims))]
    o = [f"o{j}" for j in range(len(p["offset_dims"]))]
    dropped = set(p["collapsed_slice_dims"]) | set(p["operand_batching_dims"])
    target = ge.alloc(out) if rank_out else None
    result = ge.fresh("gathered")

    def per_window() -> None:
        starts = _gather_starts(ge, eqn, indices, g)
        offsets = iter(o)
        # clamped starts are never negative: unsigned, numba skips its wraparound
        src = [_unsigned(starts[d] if d in dropped else _plus(starts[d], next(offsets)))
               for d in range(operand.aval.ndim)]
        out_index = [""] * rank_out
        for j, d in enumerate(batch_dims):
            out_index[d] = g[j]
        for j, d in enumerate(p["offset_dims"]):
            out_index[d] = o[j]

        def copy() -> None:
            value = (store_value(operand.name, out.aval.dtype, ge.mod) if operand.scalar
                     else f"{operand.name}[{', '.join(src)}]")  # raw: float16 bits as they are
            if target is None:
                ge.w.line(f"{result} = {load(operand, src, ge.mod)}")
            else:
                ge.w.line(f"{target}[{', '.join(out_index)}] = {value}")
        _for_each(ge, [(o[j], ge.dim(out, d)) for j, d in enumerate(p["offset_dims"])], copy)
    loops = [(g[j], ge.dim(out, d)) for j, d in enumerate(batch_dims)]
    _gather_loops(ge, eqn, (operand, target), loops, per_window)
    ge.bind(out, Ref(target, out.aval) if target else Ref(result, out.aval))


def _gather_loops(ge: GraphEmitter, eqn: Eqn, operand_target: tuple[Ref, str | None],
                  loops: Loops, per_window: Callable[[], None]) -> None:
    """The batch loops around `per_window`: threaded for large results, or the vector
    gather of single elements into a vector result (no offset loops), or plain."""
    operand, target = operand_target
    out = eqn.outputs[0]
    parallel = bool(target and loops and not operand.scalar and eqn.inputs[1].aval.ndim and
                    ge.mod.parallel_ok and out.aval.size >= PARALLEL_MIN_ELEMENTS)
    if target and out.aval.ndim == 1 and not eqn.params["offset_dims"] and \
            not operand.scalar and not parallel and _vector_dtype(out.aval.dtype):
        _vector_gather(ge, eqn, operand, target, loops[0][1])
    elif parallel:
        # every window writes its own part of the result: the batch loop runs in parallel
        _in_kernel(ge, "gather", lambda: _for_each(ge, loops, per_window, parallel=True),
                   [target])
    else:
        _for_each(ge, loops, per_window)


def _vector_dtype(dtype: np.dtype) -> bool:
    """Whether `cpu.lib.gather` loads this dtype (4- and 8-byte ints and floats)."""
    return dtype.kind in "iuf" and dtype not in HALVES and dtype.itemsize in (4, 8)


def _vector_gather(ge: GraphEmitter, eqn: Eqn, operand: Ref, target: str, n: str) -> None:
    """out[g] for g in blocks of BLOCK: the element offsets of a block (clamped starts
    times the operand's strides, in elements), then one `gather_offsets` call."""
    rank = eqn.inputs[0].aval.ndim
    strides = [ge.fresh(f"stride{d}") for d in range(rank)]
    offsets, block, k, count = (ge.fresh(h) for h in ("offsets", "block", "k", "count"))
    for d, stride in enumerate(strides):
        ge.w.line(f"{stride} = {operand.name}.strides[{d}] // {operand.name}.itemsize")
    ge.w.line(f"{offsets} = np.empty({BLOCK}, np.int64)")
    with ge.w.block(f"for {block} in range(0, {n}, {BLOCK})"):
        ge.w.line(f"{count} = min({BLOCK}, {n} - {block})")
        with ge.w.block(f"for {k} in range({count})"):
            ge.w.line(f"g0 = {block} + {k}")
            starts = _gather_starts(ge, eqn, eqn.inputs[1], ["g0"])
            ge.w.line(f"{offsets}[{k}] = "
                      f"{' + '.join(f'{s} * {t}' for s, t in zip(starts, strides))}")
        ge.w.line(f"{ge.mod.use('gather_offsets', 'cpu.lib.gather')}({operand.name}, "
                  f"{offsets}, {target}, {block}, {count})")


def _gather_starts(ge: GraphEmitter, eqn: Eqn, indices: Atom, g: list[str]) -> list[str]:
    p = eqn.params
    operand = eqn.inputs[0]
    ivd = p["index_vector_dim"]
    starts = ["0"] * operand.aval.ndim
    for k, d in enumerate(p["start_index_map"]):
        s = ge.fresh(f"start{d}")
        high = f"{ge.dim(operand, d)} - {_param(ge, eqn, 'slice_sizes', d, 'size')}"
        i = _index_vector(ge, indices, ivd, g, k)
        ge.w.line(f"{s} = min(max({i}, 0), {high})" if _signed(indices) else
                  f"{s} = {ge.mod.use('clamp_index')}({i}, {high})")
        starts[d] = s
    for od, sd in zip(p["operand_batching_dims"], p["start_indices_batching_dims"], strict=True):
        starts[od] = g[_batch_axis(sd, ivd)]
    return starts


# ------------------------------------------------------------------ scatter

def _scatter(ge: GraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    n = len(eqn.outputs)
    operands = [ge.ref(a) for a in eqn.inputs[:n]]
    indices, updates = eqn.inputs[n], [ge.ref(a) for a in eqn.inputs[n + 1:]]
    results = [_copy(ge, r, v.aval, "scattered", v) for r, v in zip(operands, eqn.outputs,
                                                                  strict=True)]
    update = eqn.inputs[n + 1]
    window = list(p["update_window_dims"])
    scatter_dims = [d for d in range(update.aval.ndim) if d not in window]
    g = [f"g{j}" for j in range(len(scatter_dims))]
    w = [f"w{j}" for j in range(len(window))]

    def per_window() -> None:
        if _prefetches_targets(eqn, window):
            _prefetch_target(ge, eqn, indices, results, g[0])
        starts, sizes = _scatter_window(ge, eqn, indices, g)
        fits = [_fits(start, ge.dim(eqn.inputs[0], d), size)
                for d, (start, size) in enumerate(zip(starts, sizes, strict=True))]
        with ge.w.block(f"if {' and '.join(fits) or 'True'}"):  # else: the window is skipped
            _for_each(ge, [(w[j], ge.dim(update, d)) for j, d in enumerate(window)],
                      lambda: _apply_update(ge, eqn, results, updates, starts, g, w))
    _for_each(ge, [(g[j], ge.dim(update, d)) for j, d in enumerate(scatter_dims)], per_window)
    for v, r in zip(eqn.outputs, results, strict=True):
        ge.bind(v, r)


def _prefetches_targets(eqn: Eqn, window: list[int]) -> bool:
    """Whether a scatter of single elements into a vector over more than a core's L2
    prefetches its targets: each update then waits on L3 or memory, and asking for the
    line SCATTER_AHEAD updates on keeps more misses in flight (np.add.at of 10^6 into
    float32[10^6], one thread, interleaved rounds: 0.92x the time without; 16 ahead:
    1.00x, 32: 0.95x, 128: 0.93x)."""
    operand, indices = eqn.inputs[0], eqn.inputs[len(eqn.outputs)]
    return not window and operand.aval.ndim == 1 and _signed(indices) and \
        indices.aval.size > SCATTER_AHEAD and \
        operand.aval.size * operand.aval.dtype.itemsize >= SCALAR_MIN_BYTES


def _prefetch_target(ge: GraphEmitter, eqn: Eqn, indices: Atom, results: list[Ref],
                     g: str) -> None:
    """Prefetch the targets of update `g + SCATTER_AHEAD` (its index computed as the
    update's own will be; a prefetch never faults, so no bounds check)."""
    ahead = f"{g} + {SCATTER_AHEAD}"
    count = ge.dim(eqn.inputs[len(eqn.outputs) + 1], 0)
    helper = ge.mod.use("prefetch_element", "cpu.lib.prefetch")
    with ge.w.block(f"if {ahead} < {count}"):
        start = _index_vector(ge, indices, eqn.params["index_vector_dim"], [ahead], 0)
        for r in results:
            ge.w.line(f"{helper}({r.name}, ({start},))")


def _fits(start: str, dim: str, size: str) -> str:
    """`0 <= start <= dim - size` as one unsigned comparison (a negative start wraps
    past every bound). The shape rule keeps size <= dim for window dims, and inserted
    dims have size 1, so the bound dim - size + 1 is never negative. Each compare and
    branch counts: a scatter's loop is bound by the cache misses in flight, which
    fewer instructions per element keep more of."""
    bound = dim if size == "1" else f"{dim} - {size} + 1"
    return f"u64({start}) < u64({bound})"


def _scatter_window(ge: GraphEmitter, eqn: Eqn, indices: Atom,
                    g: list[str]) -> tuple[list[str], list[str]]:
    """Unclamped start and window extent per operand dim."""
    p = eqn.params
    operand, update = eqn.inputs[0], eqn.inputs[len(eqn.outputs) + 1]
    ivd = p["index_vector_dim"]
    not_window = set(p["inserted_window_dims"]) | set(p["input_batching_dims"])
    starts, sizes = ["0"] * operand.aval.ndim, ["1"] * operand.aval.ndim
    window_dims = iter(p["update_window_dims"])
    for d in range(operand.aval.ndim):
        if d not in not_window:
            sizes[d] = ge.dim(update, next(window_dims))
    for k, d in enumerate(p["scatter_dims_to_operand_dims"]):
        s = ge.fresh(f"start{d}")
        i = _index_vector(ge, indices, ivd, g, k)
        ge.w.line(f"{s} = {i}" if _signed(indices) else f"{s} = {ge.mod.use('index_i64')}({i})")
        starts[d] = s
    for od, sd in zip(p["input_batching_dims"], p["scatter_indices_batching_dims"],
                      strict=True):
        starts[od] = g[_batch_axis(sd, ivd)]
    return starts, sizes


def _apply_update(ge: GraphEmitter, eqn: Eqn, results: list[Ref], updates: list[Ref],
                  starts: list[str], g: list[str], w: list[str]) -> None:
    p = eqn.params
    window = list(p["update_window_dims"])
    not_window = set(p["inserted_window_dims"]) | set(p["input_batching_dims"])
    offsets = iter(w)
    # unsigned: the window fits, and numba then skips its wraparound of negative indices
    target = [_unsigned(starts[d] if d in not_window else _plus(starts[d], next(offsets)))
              for d in range(eqn.inputs[0].aval.ndim)]
    scatter_vars, window_vars = iter(g), iter(w)
    source = [next(window_vars) if d in window else next(scatter_vars)
              for d in range(updates[0].aval.ndim)]
    currents = [Ref(load(r, target, ge.mod), r.aval.update(shape=())) for r in results]
    news = [Ref(load(u, source, ge.mod), u.aval.update(shape=())) for u in updates]
    graph = p["to_apply"]
    n = len(results)
    replace = not graph.eqns and [id(a) for a in graph.outputs] == \
        [id(v) for v in graph.inputs[n:]]
    combined = news if replace else ge.sub_emitter().emit_graph(
        graph, [_named(ge, c) for c in currents] + news)
    for r, value in zip(results, combined, strict=True):
        if r.scalar:
            ge.w.line(f"{r.name} = {value.name}")
        else:
            ge.w.line(f"{r.name}[{', '.join(target)}] = "
                      f"{store_value(value.name, r.aval.dtype, ge.mod)}")


def _unsigned(index: str) -> str:
    """A non-negative computed index as uint64: numba then leaves out its wraparound of
    negative indices (a select per access). Loop variables stay as they are."""
    return index if index == "0" or _LOOP_VAR.fullmatch(index) else f"u64({index})"


def _plus(start: str, offset: str) -> str:
    return offset if start == "0" else f"{start} + {offset}"


def _named(ge: GraphEmitter, ref: Ref) -> Ref:
    name = ge.fresh("current")
    ge.w.line(f"{name} = {ref.name}")
    return Ref(name, ref.aval)


EMITTERS = {
    "dynamic_update_slice": _dynamic_update_slice, "gather": _gather, "scatter": _scatter,
}

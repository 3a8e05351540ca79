"""Kernels for the indexing and layout ops that are not fused: gather, scatter,
dynamic_update_slice, pad and concatenate.

Each is one grid-stride kernel over the elements it writes, applying the
seeds' rules exactly as the CPU backend does (numba does not bounds-check):
gather and dynamic_update_slice clamp each start into [0, dim - size] (after
saturating the index to int64 at +-2**62); scatter skips every update window
that does not fit entirely. Scatter runs one thread per update element when
that is deterministic or exact: an `add` combiner on a dtype with hardware
atomics (`cuda.atomic.add`; float sums then depend on the order, as with any
parallel sum), or `unique_indices=True`; any other scatter applies its
updates in order in a single thread, as the reference does.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

import numpy as np

from ....core import Atom, Eqn, Graph, Literal
from ...numba.codegen import Ref, load, store_value
from ...numba.fusion import is_loop_op, monoid
from ...numba.loops import Index
from ..emitter import DeviceGraphEmitter, Kernel
from ..nests import advance_index, emit_scalar_graph, product, split_index
from .host import run_on_host

_ATOMIC_ADD = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int32, np.uint32,
                                                np.int64, np.uint64))


@contextmanager
def over_elements(k: Kernel, atom: Atom) -> Iterator[tuple[Index, str]]:
    """A grid-stride loop over the elements of `atom`'s shape; yields (their index, the
    name of their row-major flat index). Over several dims the index is split once and
    then stepped (`split_index`): no integer division per element."""
    rank = atom.aval.ndim
    sizes = [k.dim(atom, d) for d in range(rank)]
    index = tuple(f"i{d}" for d in range(rank))
    total, flat = k.fresh("total"), k.fresh("flat")
    k.w.line(f"{total} = {product(sizes)}")
    steps = split_index(k, ("cuda.grid(1)", total, "cuda.gridsize(1)"), sizes, index) \
        if rank > 1 else []
    with k.w.block(f"for {flat} in range(cuda.grid(1), {total}, cuda.gridsize(1))"):
        if rank == 1:
            k.w.line(f"{index[0]} = {flat}")
        yield index, flat
        if rank > 1:
            advance_index(k, index, steps, sizes)


def launch_over(k: Kernel, atom: Atom, comment: str) -> None:
    sizes = [k.ge.dim(atom, d) for d in range(atom.aval.ndim)]
    k.launch(f"launch.grid({product(sizes)})", "launch.CONFIG.block", comment)


def kernel_scalar(k: Kernel, atom: Atom) -> str:
    """A rank-0 operand's expression inside the kernel."""
    ref = k.ge.ref(atom)
    return ref.name if isinstance(atom, Literal) else k.outer(ref.name)


def read(k: Kernel, ref: Ref, index: Sequence[str]) -> str:
    """ref at index, in registers (float16 as float32)."""
    k.outer(ref.name)
    return load(ref, index, k.mod)


def write(k: Kernel, ref: Ref, index: Sequence[str], value: str, raw: bool = False) -> None:
    """ref[index] = value (from registers, or `raw`: a stored value of the same dtype)."""
    k.outer(ref.name)
    if ref.scalar:
        k.w.line(f"{ref.name} = {value}")
    else:
        stored = value if raw else store_value(value, ref.aval.dtype, k.mod)
        k.w.line(f"{ref.at(index)} = {stored}")


def _raw(k: Kernel, src: Ref, index: Sequence[str], dst: Ref) -> tuple[str, bool]:
    """src[index] to be written into `dst`: raw when both are arrays (same storage)."""
    if src.scalar:
        return k.outer(src.name), False
    if dst.scalar:
        return read(k, src, index), False
    k.outer(src.name)
    return src.at(index), True


def _clamped_start(k: Kernel, start: str, high: str, d: int) -> str:
    name = k.fresh(f"start{d}")
    k.w.line(f"{name} = {k.mod.use('clamp_index')}({start}, {high})")
    return name


# ------------------------------------------------------------------ dynamic_update_slice

def _dynamic_update_slice(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    operand, update, *starts = eqn.inputs
    out = eqn.outputs[0]
    if not out.aval.ndim:
        ge.bind(out, ge.ref(update))
        return
    result = ge.view(f"rt.copy({ge.array_of(ge.ref(operand))})", out.aval, "updated")
    ge.bind(out, result)
    k = Kernel(ge, "update_slice")
    begin = [_clamped_start(k, kernel_scalar(k, s),
                            f"{k.dim(operand, d)} - {k.dim(update, d)}", d)
             for d, s in enumerate(starts)]
    with over_elements(k, update) as (index, _):
        value, raw = _raw(k, ge.ref(update), index, result)
        write(k, result, [f"{b} + {i}" for b, i in zip(begin, index, strict=True)], value, raw)
    launch_over(k, update, "dynamic_update_slice: copy the update into the clamped window")


# ------------------------------------------------------------------ gather

def _index_vector(k: Kernel, indices: Ref, ivd: int, batch: Sequence[str], j: int) -> str:
    """Element j of the index vector at batch position `batch` (ivd == rank: implicit 1)."""
    if indices.scalar:
        return k.outer(indices.name)
    position = list(batch)
    if ivd < indices.aval.ndim:
        position.insert(ivd, str(j))
    return read(k, indices, position)


def _batch_axis(sd: int, ivd: int) -> int:
    """Position among the batch dims of indices dim `sd` (index_vector_dim removed)."""
    return sd if sd < ivd else sd - 1


def _gather(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    operand, indices = eqn.inputs
    out = eqn.outputs[0]
    result = ge.new_ref(out)
    k = Kernel(ge, "gather")
    batch_dims = [d for d in range(out.aval.ndim) if d not in p["offset_dims"]]
    dropped = set(p["collapsed_slice_dims"]) | set(p["operand_batching_dims"])
    with over_elements(k, out) as (index, _):
        g = [index[d] for d in batch_dims]
        starts = ["0"] * operand.aval.ndim
        for j, d in enumerate(p["start_index_map"]):
            size = k.size(("param", id(eqn), "slice_sizes", d), p["slice_sizes"][d], "size")
            starts[d] = _clamped_start(k, _index_vector(k, ge.ref(indices), p["index_vector_dim"],
                                                        g, j), f"{k.dim(operand, d)} - {size}", d)
        for od, sd in zip(p["operand_batching_dims"], p["start_indices_batching_dims"],
                          strict=True):
            starts[od] = g[_batch_axis(sd, p["index_vector_dim"])]
        offsets = iter(index[d] for d in p["offset_dims"])
        src = [starts[d] if d in dropped else f"{starts[d]} + {next(offsets)}"
               for d in range(operand.aval.ndim)]
        value, raw = _raw(k, ge.ref(operand), src, result)
        write(k, result, index, value, raw)
    launch_over(k, out, "gather: one thread per output element, starts clamped")


# ------------------------------------------------------------------ scatter

def _scatter_mode(eqn: Eqn) -> str:
    """'atomic' (add with hardware atomics), 'parallel' (unique indices) or 'serial'."""
    operand = eqn.inputs[0]
    if len(eqn.outputs) == 1 and monoid(eqn) == "add" and operand.aval.dtype in _ATOMIC_ADD:
        return "atomic"
    return "parallel" if eqn.params["unique_indices"] else "serial"


def _scatter(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    n = len(eqn.outputs)
    results = [ge.view(f"rt.copy({ge.array_of(ge.ref(a))})", v.aval, "scattered")
               for a, v in zip(eqn.inputs[:n], eqn.outputs, strict=True)]
    update = eqn.inputs[n + 1]
    window = list(eqn.params["update_window_dims"])
    scatter_dims = [d for d in range(update.aval.ndim) if d not in window]
    mode = _scatter_mode(eqn)
    k = Kernel(ge, "scatter")
    if mode == "serial":  # updates in order, as the reference applies them
        with k.w.block("if cuda.grid(1) == 0"):
            index = tuple(k.fresh(f"u{d}") for d in range(update.aval.ndim))
            _serial_loops(k, eqn, results, index, scatter_dims, scatter_dims + window)
        k.launch("1", "1", "scatter: updates applied in order by one thread")
    else:
        with over_elements(k, update) as (index, _):
            _scatter_element(k, eqn, results, index, scatter_dims, mode == "atomic")
        launch_over(k, update, f"scatter: one thread per update element ({mode})")
    for v, r in zip(eqn.outputs, results, strict=True):
        ge.bind(v, r)


def _serial_loops(k: Kernel, eqn: Eqn, results: list[Ref], index: Index,
                  scatter_dims: list[int], dims: list[int]) -> None:
    """Loops over `dims` of the update (scatter dims outside, window dims inside)."""
    if not dims:
        _scatter_element(k, eqn, results, index, scatter_dims, False)
        return
    update = eqn.inputs[len(eqn.outputs) + 1]
    with k.w.block(f"for {index[dims[0]]} in range({k.dim(update, dims[0])})"):
        _serial_loops(k, eqn, results, index, scatter_dims, dims[1:])


def _scatter_element(k: Kernel, eqn: Eqn, results: list[Ref], index: Index,
                     scatter_dims: list[int], atomic: bool) -> None:
    """Apply update element `index` if its window fits the operand."""
    p = eqn.params
    n = len(eqn.outputs)
    operand, indices = eqn.inputs[0], eqn.inputs[n]
    update = eqn.inputs[n + 1]
    not_window = set(p["inserted_window_dims"]) | set(p["input_batching_dims"])
    g = [index[d] for d in scatter_dims]
    window_dims = iter(p["update_window_dims"])
    starts, sizes = ["0"] * operand.aval.ndim, ["1"] * operand.aval.ndim
    for d in range(operand.aval.ndim):
        if d not in not_window:
            sizes[d] = k.dim(update, next(window_dims))
    for j, d in enumerate(p["scatter_dims_to_operand_dims"]):
        starts[d] = k.fresh(f"start{d}")
        position = _index_vector(k, k.ge.ref(indices), p["index_vector_dim"], g, j)
        k.w.line(f"{starts[d]} = {k.mod.use('index_i64')}({position})")
    for od, sd in zip(p["input_batching_dims"], p["scatter_indices_batching_dims"], strict=True):
        starts[od] = g[_batch_axis(sd, p["index_vector_dim"])]
    fits = [f"0 <= {starts[d]} <= {k.dim(operand, d)} - {sizes[d]}"
            for d in range(operand.aval.ndim)]
    offsets = iter(index[d] for d in p["update_window_dims"])
    target = [starts[d] if d in not_window else f"{starts[d]} + {next(offsets)}"
              for d in range(operand.aval.ndim)]
    with k.w.block(f"if {' and '.join(fits) or 'True'}"):  # else: the window is skipped
        _apply(k, eqn, results, target, index, atomic)


def _apply(k: Kernel, eqn: Eqn, results: list[Ref], target: list[str], index: Index,
           atomic: bool) -> None:
    n = len(results)
    news = [k.outer(u.name) if u.scalar else read(k, u, index)
            for u in (k.ge.ref(a) for a in eqn.inputs[n + 1:])]
    graph = eqn.params["to_apply"]
    if atomic:
        r = results[0]
        where = "0" if r.scalar else (target[0] if len(target) == 1 else f"({', '.join(target)})")
        k.w.line(f"cuda.atomic.add({k.outer(r.name.split('[')[0])}, {where}, {news[0]})")
        return
    replace = not graph.eqns and [id(a) for a in graph.outputs] == \
        [id(v) for v in graph.inputs[n:]]
    if replace:
        combined = news
    else:
        currents = []
        for r in results:
            name = k.fresh("current")
            k.w.line(f"{name} = {read(k, r, target)}")
            currents.append(name)
        combined = emit_scalar_graph(k, graph, currents + news)
    for r, value in zip(results, combined, strict=True):
        write(k, r, target, value)


# ------------------------------------------------------------------ pad, concatenate

def _pad(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    """out[i] = x[(i - lo) / (interior + 1)] where that is a whole index inside x, else the
    padding value (negative edge padding drops elements)."""
    x, value = eqn.inputs
    out = eqn.outputs[0]
    if not out.aval.ndim:
        ge.bind(out, ge.ref(x))
        return
    result = ge.new_ref(out)
    config = eqn.params["padding_config"]
    k = Kernel(ge, "pad")
    fill = store_value(kernel_scalar(k, value), out.aval.dtype, k.mod)
    with over_elements(k, out) as (index, _):
        inside, src = [], []
        for d, i in enumerate(index):
            low = k.size(("param", id(eqn), "low", d), config[d][0], "low")
            step = k.size(("param", id(eqn), "step", d), config[d][2] + 1, "step")
            p, q = k.fresh(f"p{d}"), k.fresh(f"q{d}")
            k.w.line(f"{p} = {i} - {low}")
            k.w.line(f"{q} = {p} // {step}")
            inside.append(f"{p} >= 0 and {p} % {step} == 0 and {q} < {k.dim(x, d)}")
            src.append(q)
        x_ref = ge.ref(x)
        k.outer(x_ref.name)
        k.w.line(f"{result.at(index)} = {x_ref.at(src)} if {' and '.join(inside)} else {fill}")
        k.outer(result.name)
    launch_over(k, out, "pad: every output element, from the operand or the padding value")


def _concatenate(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    out = eqn.outputs[0]
    result = ge.new_ref(out)
    axis = eqn.params["dimension"]
    k = Kernel(ge, "concatenate")
    with over_elements(k, out) as (index, _):
        offset = "0"
        for j, atom in enumerate(eqn.inputs):
            size = k.dim(atom, axis)
            end = size if offset == "0" else f"{offset} + {size}"
            src = list(index)
            if offset != "0":
                src[axis] = f"{index[axis]} - ({offset})"
            if len(eqn.inputs) == 1:
                write(k, result, index, *_raw(k, ge.ref(atom), src, result))
                break
            last = j == len(eqn.inputs) - 1
            with k.w.block("else" if last else
                           f"{'if' if j == 0 else 'elif'} {index[axis]} < {end}"):
                write(k, result, index, *_raw(k, ge.ref(atom), src, result))
            offset = end
    launch_over(k, out, "concatenate: each output element from the operand holding it")


# ------------------------------------------------------------------ map

def element_wise_graph(graph: Graph) -> bool:
    """Whether `graph` is scalar code a kernel can inline (`emit_scalar_graph`)."""
    return all(is_loop_op(e) and not e.outputs[0].aval.ndim for e in graph.eqns)


def _map(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    """out[i] = computation(operands[i]...): the scalar computation inlined in one kernel
    (a computation that is not element-wise runs on the host, see `HOST_OPS`)."""
    graph = eqn.params["to_apply"]
    if not element_wise_graph(graph):
        run_on_host(ge, eqn)
        return
    results = [ge.new_ref(v) for v in eqn.outputs]
    k = Kernel(ge, "map")
    with over_elements(k, eqn.outputs[0]) as (index, _):
        args = [kernel_scalar(k, a) if not a.aval.ndim else read(k, ge.ref(a), index)
                for a in eqn.inputs]
        for r, value in zip(results, emit_scalar_graph(k, graph, args), strict=True):
            write(k, r, index, value)
    launch_over(k, eqn.outputs[0], "map: the computation at every element")


EMITTERS = {
    "map": _map,
    "dynamic_update_slice": _dynamic_update_slice, "gather": _gather, "scatter": _scatter,
    "pad": _pad, "concatenate": _concatenate,
}

"""cpu code generation: one Python module per graph, with a host function for numba.

The host function takes the graph inputs, the array constants, the buffers the
executable allocated with NumPy (graph outputs and top-level intermediates),
and `dims`, an int64 array holding every size and static index the code needs.
Rank-0 values are scalar variables, not arrays.

`CpuGraphEmitter` is the shared `GraphEmitter` with the cpu's two kinds of steps:
loop nests (`nests`, bodies from `numba.loops`) and ops with their own emitter
(`emit.table`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...core import Eqn, Graph, Literal, Var
from ..numba.codegen import (
    GraphEmitter,
    ModuleBuilder,
    Param,
    Ref,
    copy_array,
    host_name,
    store_value,
    used_names,
    module_code,
    write_header,
)
from ..numba.fusion import LoopNest, Plan, RowGroup, plan_graph
from ..numba.scalar import DTYPE_ALIASES, HALVES
from ..numba.source import SourceWriter
from .donation import donated_outputs
from .emit.fallback import emit_fallback
from .emit.table import OP_EMITTERS
from .lib.fastmath import __all__ as FAST_HELPERS
from .nests import emit_loops
from .options import NJIT_OPTIONS, thread_count
from .split import PART_DECORATOR, split_body

# what code that runs on numba's thread pool says: a prange kernel or a library's
_USES_THREADS = re.compile(r"parallel=True|\w_parallel\b")


@dataclass
class Module:
    """What code generation produced: the source and how to call its host function."""

    source: str
    host: str                        # the host function's name
    params: list[Param]
    outputs: list[tuple[str, Any]]   # ("input", k) | ("literal", array) | ("param", k)
    dims: list[int]
    donors: frozenset[int] = frozenset()  # inputs an output is written into (donated)
    threaded: bool = False  # whether its code runs on numba's thread pool


class CpuModuleBuilder(ModuleBuilder):
    mkl_ok = True  # whether steps may call MKL (`cpu/lib/mkl.py`), where it is installed

    def default_module(self, helper: str) -> str:
        """Vectorizable exp/log/tanh come from `cpu.lib.fastmath`, the rest from scalar math."""
        return "cpu.lib.fastmath" if helper in FAST_HELPERS else super().default_module(helper)

    def wide_vectors(self, loop_body: str) -> str | None:
        """`prefer_wide_vectors()` (`cpu.lib.vectors`) for a loop that evaluates one of
        `fastmath`'s polynomials: it is bound by their instructions, which 512-bit
        vectors halve."""
        if not used_names(FAST_HELPERS, loop_body):
            return None
        return f"{self.use('prefer_wide_vectors', 'cpu.lib.vectors')}()"


class CpuGraphEmitter(GraphEmitter):
    inline_indices = True
    # id(output var) -> (input position, its parameter): a donated input written in place
    donors: dict[int, tuple[int, str]] = {}

    def out_param(self, var: Var) -> str:
        donor = self.donors.get(id(var))
        return donor[1] if donor is not None else super().out_param(var)

    def __init__(self, mod: ModuleBuilder, w: SourceWriter, top: bool = False):
        super().__init__(mod, w, top)
        # id(value) -> the graph output that is a reshape of it, and nothing else reads
        # it: the value is written straight into the output's buffer (a view)
        self.reshaped_outputs: dict[int, Var] = {}
        self.output_views: dict[str, Var] = {}  # name of such a view -> its output
        # id(carry a loop body returns) -> the buffer the loop allocated for it, which
        # the nest computing it writes (`emit.control.carry_buffers`)
        self.carry_buffers: dict[int, str] = {}

    def alloc(self, var: Var, hint: str | None = None) -> str:
        out = self.reshaped_outputs.get(id(var)) if self.top else None
        if out is None:
            return super().alloc(var, hint)
        name = self.fresh(hint or "buf")
        self.w.line(f"{name} = {self.out_param(out)}.reshape({self.shape_tuple(var)})")
        self.output_views[name] = out
        return name

    def emit_op(self, eqn: Eqn) -> None:
        OP_EMITTERS.get(eqn.op.name, emit_fallback)(self, eqn)

    def emit_nest(self, plan: Plan, step: LoopNest | RowGroup) -> None:
        emit_loops(self, plan, step)


# ------------------------------------------------------------------ the module

def generate(graph: Graph, parallel_ok: bool, fuse: bool = True,
             donated: Sequence[int] = (), objmode_ok: bool = True,
             parts: bool = True, mkl_ok: bool = True) -> Module:
    """The module for `graph`, its host function named after the graph; outputs go
    into the buffers of `donated` inputs where `donation` finds it safe. Without
    `objmode_ok` no step calls Python (the code of a C library). `parts`: a long host
    is cut into separately compiled parts (`split`), which only tracer's cache can load
    (ahead-of-time builds need the one function). Without `mkl_ok` no step calls MKL
    (ahead-of-time builds: their run time is NumPy, numba and rocket-fft)."""
    mod = CpuModuleBuilder(parallel_ok, fuse, graph, objmode_ok)
    mod.mkl_ok = mkl_ok
    name = host_name(mod, graph)
    body = SourceWriter()
    top = CpuGraphEmitter(mod, body, top=True)
    top.outputs = [id(a) for a in graph.outputs]
    in_refs = [_host_input(mod, body, v, k) for k, v in enumerate(graph.inputs)]
    if donated and fuse:
        plan = plan_graph(graph, fuse, top.inline_indices)  # (as emit_graph plans it)
        top.donors = {out: (k, in_refs[k].name)
                      for out, k in donated_outputs(graph, plan, donated).items()}
    top.reshaped_outputs = {src: out for src, out in _reshaped_outputs(graph).items()
                            if id(out) not in top.donors}
    refs = top.emit_graph(graph, in_refs)
    outputs = _finish_outputs(top, graph, refs)
    threaded = _USES_THREADS.search("".join(k.text() for k in [body, *mod.kernels])) is not None
    host = _host_function(mod, name, body, parts, threaded)
    return Module(_module_text(mod, graph, host), name, mod.params, outputs, mod.sizes,
                  frozenset(k for k, _ in top.donors.values()), threaded)


def _reshaped_outputs(graph: Graph) -> dict[int, Var]:
    """id(value) -> graph output, for each output that is a reshape of a value computed
    here that nothing else reads (it can be computed in the output's buffer)."""
    reads: dict[int, int] = {}
    for atom in [a for e in graph.eqns for a in e.inputs] + list(graph.outputs):
        reads[id(atom)] = reads.get(id(atom), 0) + 1
    inputs = {id(v) for v in graph.inputs}
    found = {}
    for eqn in (e for e in graph.eqns if e.op.name == "reshape"):
        src, out = eqn.inputs[0], eqn.outputs[0]
        if isinstance(src, Var) and id(src) not in inputs \
                and reads[id(src)] == 1 and reads.get(id(out), 0) == 1 and \
                any(out is o for o in graph.outputs) and src.aval.ndim and out.aval.ndim:
            found[id(src)] = out
    return found


def _host_input(mod: ModuleBuilder, w: SourceWriter, var: Var, k: int) -> Ref:
    """Input k: an array parameter; a rank-0 one is read into a scalar right away."""
    name = mod.param(f"arg{k}", "input", index=k, value=var.aval)
    if var.aval.ndim:
        return Ref(name, var.aval)
    scalar = mod.namer.fresh(f"arg{k}_value", numbered=False)
    value = f"{name}[()]"
    w.line(f"{scalar} = {mod.use(HALVES[var.aval.dtype].load)}({value})"
           if var.aval.dtype in HALVES else f"{scalar} = {value}")
    return Ref(scalar, var.aval)


def _finish_outputs(top: GraphEmitter, graph: Graph, refs: list[Ref]) -> list[tuple[str, Any]]:
    """Copy results that are not already in their output buffer; say where each is."""
    outputs: list[tuple[str, Any]] = []
    input_ids = {id(v): k for k, v in enumerate(graph.inputs)}
    for atom, ref in zip(graph.outputs, refs, strict=True):
        if isinstance(atom, Literal):
            outputs.append(("literal", np.array(atom.value)))
            continue
        if id(atom) in input_ids:
            outputs.append(("input", input_ids[id(atom)]))
            continue
        if id(atom) in top.donors:  # (a loop nest stored it there)
            outputs.append(("input", top.donors[id(atom)][0]))
            continue
        out = top.out_param(atom)
        if ref.scalar:
            top.w.line(f"{out}[()] = {store_value(ref.name, atom.aval.dtype, top.mod)}")
        elif ref.name != out:
            copy_array(top, out, ref.name, atom.aval.ndim)
        outputs.append(("param", top.mod.param_index(out)))
    return outputs


def _host_function(mod: ModuleBuilder, name: str, body: SourceWriter,
                   split: bool, threaded: bool) -> SourceWriter:
    w = SourceWriter()
    # (object mode, for an op run by its reference, cannot release the GIL)
    options = NJIT_OPTIONS.replace(", nogil=True", "") if mod.fallbacks else NJIT_OPTIONS
    w.line(f"@numba.njit({options})")
    args = [p.name for p in mod.params] + ["dims"]
    parts, body = split_body(body, name, {*args, *mod.size_names.values()}, options) \
        if split else ([], body)
    if parts:
        mod.use(PART_DECORATOR, "cpu.lib.parts")
        mod.kernels.extend(parts)
    with w.block(f"def {name}({', '.join(args)})"):
        if threaded:  # (numba's count is the calling thread's: see `lib/pool_threads`)
            w.line(f"{mod.use('set_pool_threads', 'cpu.lib.pool_threads')}({thread_count()})")
        for key, sym in mod.size_names.items():
            w.line(f"{sym} = dims[{list(mod.size_names).index(key)}]")
        w.embed(body)
        w.line("return None")
    return w


def _module_text(mod: ModuleBuilder, graph: Graph, host: SourceWriter) -> str:
    code = module_code(mod, host)
    w = SourceWriter()
    write_header(w, "cpu", graph, code.text())
    w.line("import numba")
    w.line("import numpy as np")
    aliases = {a: np.dtype(d).name.replace("bool", "bool_") for d, a in DTYPE_ALIASES.items()}
    used = used_names(list(aliases), code.text())
    if used:
        w.line(f"from numpy import {', '.join(f'{aliases[a]} as {a}' for a in used)}")
    for line in mod.import_lines():
        w.line(line)
    if mod.fallbacks:
        w.line("from tracer.backend.numba import fallback")
    w.embed(code)
    return w.text()

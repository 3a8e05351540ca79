"""cuda code generation: one Python module per graph with `@cuda.jit` kernels and a
plain-Python host function that launches them on device arrays.

The host function takes the graph inputs and constants (device arrays; rank-0
values as 1-element arrays, see `lib.arrays`), `dims` (every size and static
index, as host ints) and `d_dims` (the same on the device, the last argument
of every kernel), and `host_ops` (runners of the ops in `emit.host.HOST_OPS`).
It returns the computed outputs. As in the cpu backend no size is written into
the source: a kernel reads the sizes it needs from `dims`, so one compiled
kernel serves every shape of the graph's structure.

`CudaGraphEmitter` writes one graph's host code (the top level, or a loop or
branch body nested in it) from the shared fusion plan: each loop nest becomes a
kernel (`nests`, `reductions`), other ops have emitters in `emit.table`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import Eqn, Graph, Literal
from ..numba.codegen import Ref, host_name, module_code, used_names, write_header
from ..numba.fusion import LoopNest, Plan, RowGroup
from ..numba.lower import lower_batched_inner_products
from ..numba.scalar import DTYPE_ALIASES
from ..numba.source import SourceWriter
from .emit.table import emit_op
from .emitter import CONSTANTS, CudaModule, CudaModuleBuilder, DeviceGraphEmitter, array_type
from .nests import elementwise_nest, scalar_nest
from .reductions import emit_reduce_nest, emit_row_group


class CudaGraphEmitter(DeviceGraphEmitter):
    def emit_op(self, eqn: Eqn) -> None:
        emit_op(self, eqn)

    def emit_nest(self, plan: Plan, step: LoopNest | RowGroup) -> None:
        if isinstance(step, RowGroup):
            emit_row_group(self, plan, step)
        elif not step.shape:
            scalar_nest(self, plan, step)
        elif step.reduces:
            emit_reduce_nest(self, plan, step)
        else:
            elementwise_nest(self, plan, step)


# ------------------------------------------------------------------ the module

def generate(graph: Graph, fuse: bool = True) -> CudaModule:
    """The module for `graph`, its host function named after the graph."""
    graph = lower_batched_inner_products(graph)
    mod = CudaModuleBuilder(graph, fuse)
    name = host_name(mod, graph)
    body = SourceWriter()
    top = CudaGraphEmitter(mod, body, top=True)
    top.outputs = [id(a) for a in graph.outputs]
    inputs = []
    for k, v in enumerate(graph.inputs):
        arg = mod.namer.fresh(f"arg{k}", numbered=False)
        mod.types[arg] = array_type(v.aval)
        inputs.append(Ref(f"{arg}[0]" if v.aval.ndim == 0 else arg, v.aval))
    refs = top.emit_graph(graph, inputs)
    outputs, returned = _outputs(top, graph, refs)
    body.line(f"return [{', '.join(returned)}]")
    params = [r.name.split("[")[0] for r in inputs] + mod.const_names
    host = SourceWriter()
    with host.block(f"def {name}({', '.join([*params, 'dims', 'd_dims', 'host_ops'])})"):
        for sym in mod.size_names.values():
            host.line(f"{sym} = dims[{mod.symbol_index()[sym]}]")
        host.embed(body)
    return CudaModule(_module_text(mod, graph, host), name, mod.consts, mod.host_ops, mod.sizes,
                      outputs, mod.kernel_infos)


def _outputs(top: CudaGraphEmitter, graph: Graph,
             refs: list[Ref]) -> tuple[list[tuple[str, Any]], list[str]]:
    outputs: list[tuple[str, Any]] = []
    returned: list[str] = []
    input_ids = {id(v): k for k, v in enumerate(graph.inputs)}
    for atom, ref in zip(graph.outputs, refs, strict=True):
        if isinstance(atom, Literal):
            outputs.append(("literal", np.array(atom.value)))
        elif id(atom) in input_ids:
            outputs.append(("input", input_ids[id(atom)]))
        else:
            outputs.append(("value", len(returned)))
            returned.append(top.array_of(ref))
    return outputs, returned


def _module_text(mod: CudaModuleBuilder, graph: Graph, host: SourceWriter) -> str:
    code = module_code(mod, host)
    for alias in used_names([*DTYPE_ALIASES.values(), "f16"], code.text()):
        mod.use(alias)  # (dtype constructors, from cuda.lib.mathlib)
    w = SourceWriter()
    write_header(w, "cuda", graph, code.text())
    w.line("import numpy as np")
    w.line("from numba import cuda")
    w.line("from tracer.backend.cuda.lib import arrays as rt, launch")
    for line in mod.import_lines():
        w.line(line)
    constants = used_names(list(CONSTANTS), code.text())
    if constants:
        w.line("")
    for const in constants:
        w.line(f"{const} = {CONSTANTS[const]}")
    w.embed(code)
    return w.text()

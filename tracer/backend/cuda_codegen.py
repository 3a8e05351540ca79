"""Code generation for CUDA: one Python module per graph with `@cuda.jit` kernels
and a plain-Python host function that launches them on device arrays.

The host function takes the graph inputs and constants (device arrays; rank-0
values as 1-element arrays, see `cuda_arrays`), `dims` (every size and static
index, as host ints) and `d_dims` (the same on the device, the last argument
of every kernel), and `host_ops` (runners of the ops in `numba_cuda.HOST_OPS`).
It returns the computed outputs. As in the CPU backend no size is written into
the source: a kernel reads the sizes it needs from `dims`, so one compiled
kernel serves every shape of the graph's structure.

`CudaGraphEmitter` writes one graph's host code (the top level, or a loop or
branch body nested in it) from the CPU backend's fusion plan: each loop nest
becomes a kernel (`cuda_kernels`), other ops have emitters in `cuda_emit_ops`.
A `Kernel` collects the names a kernel body reads and turns them into its
parameters, its prologue (sizes from `dims`) and the launch line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numba
import numpy as np

from ..core import Atom, Graph, Literal, ShapedArray, Var
from .cpu_codegen import GraphEmitter, ModuleBuilder, Ref, describe, spell
from .cpu_fusion import OpStep, plan_graph
from .cpu_lower import lower_batched_inner_products
from .cpu_scalar import DTYPE_ALIASES
from .cuda_arrays import register_dtype
from .cuda_launch import CONFIG
from .source import SourceWriter

# Module constants a kernel may use as compile-time sizes (shared memory, GEMM tiles).
# (Shared arrays of GEMM tiles get a padding column: no bank conflicts when staged.)
CONSTANTS = {"REDUCE_BLOCK": CONFIG.reduce_block, "TILE_M": CONFIG.tile_m,
             "TILE_N": CONFIG.tile_n, "TILE_K": CONFIG.tile_k, "THREAD_M": CONFIG.thread_m,
             "THREAD_N": CONFIG.thread_n, "SHARED_M": CONFIG.tile_m + 1,
             "SHARED_N": CONFIG.tile_n + 1}
DIMS_TYPE = numba.types.Array(numba.types.int64, 1, "C")


def storage(aval: ShapedArray) -> np.dtype:
    """The dtype of a value's device array (rank 0: its register dtype)."""
    return register_dtype(aval.dtype) if aval.ndim == 0 else np.dtype(aval.dtype)


def array_type(aval: ShapedArray) -> Any:
    """The numba type of a value's device array (kernel parameter types, for PTX)."""
    return numba.types.Array(numba.from_dtype(storage(aval)), max(aval.ndim, 1), "C")


@dataclass
class KernelInfo:
    """A kernel of the module and the numba types of its parameters (to compile it ahead
    of time, e.g. to PTX)."""

    name: str
    arg_types: tuple[Any, ...]


@dataclass
class CudaModule:
    source: str
    consts: list[np.ndarray]
    host_ops: list[Callable[..., Any]]
    dims: list[int]
    outputs: list[tuple[str, Any]]   # ("value", k) | ("input", k) | ("literal", array)
    kernels: list[KernelInfo] = field(default_factory=list)


class CudaModuleBuilder(ModuleBuilder):
    """Module-wide state: names, helper imports, sizes, kernels, constants, host ops."""

    def __init__(self, fuse: bool = True):
        super().__init__(parallel_ok=False, fuse=fuse)
        for name in ("cuda", "rt", "launch", "d_dims", "host_ops", *CONSTANTS):
            self.namer.reserve(name)
        self.types: dict[str, Any] = {}   # host name -> numba type, for kernel parameters
        self.kernel_infos: list[KernelInfo] = []
        self.consts: list[np.ndarray] = []
        self.const_names: list[str] = []
        self.host_ops: list[Callable[..., Any]] = []
        self.scalar_literals: dict[tuple[str, np.dtype], Literal] = {}

    def use(self, helper: str, module: str | None = None) -> str:
        """Import `helper` into the generated module (default: from `cuda_mathlib`)."""
        self.helpers[helper] = module or "cuda_mathlib"
        return helper

    def symbol_index(self) -> dict[str, int]:
        return {sym: k for k, sym in enumerate(self.size_names.values())}


class Kernel:
    """One `@cuda.jit` kernel being written: its body, and the outer names the body reads
    (which become parameters, or, for sizes, reads from `dims`)."""

    def __init__(self, ge: "CudaGraphEmitter", hint: str):
        self.ge = ge
        self.mod: CudaModuleBuilder = ge.mod
        self.name = self.mod.namer.fresh(hint)
        self.w = SourceWriter()
        self.free: dict[str, None] = {}
        self.local: set[str] = set()

    def outer(self, name: str) -> str:
        """A name of the host code the kernel reads (a parameter, or a size)."""
        if name not in self.local:
            self.free[name] = None
        return name

    def define(self, name: str) -> str:
        self.local.add(name)
        return name

    def fresh(self, hint: str) -> str:
        return self.define(self.mod.namer.fresh(hint))

    def dim(self, atom: Atom, axis: int) -> str:
        return self.outer(self.ge.dim(atom, axis))

    def size(self, key: tuple, value: int, hint: str) -> str:
        return self.outer(self.mod.size(key, value, hint))

    def launch(self, grid: str, block: str, comment: str = "") -> None:
        """Add the kernel to the module and its launch to the host code."""
        symbols = self.mod.symbol_index()
        params: list[str] = []
        prologue: list[str] = []
        for name in self.free:
            base = name.split("[", 1)[0]
            if base in symbols:
                prologue.append(f"{base} = dims[{symbols[base]}]")
            elif base not in params:
                params.append(base)
        w = SourceWriter()
        w.line("@cuda.jit(cache=True)")
        with w.block(f"def {self.name}({', '.join([*params, 'dims'])})"):
            if comment:
                w.comment(comment)
            for line in prologue:
                w.line(line)
            w.embed(self.w)
        self.mod.kernels.append(w)
        types = tuple(self.mod.types[p] for p in params) + (DIMS_TYPE,)
        self.mod.kernel_infos.append(KernelInfo(self.name, types))
        self.ge.w.line(f"{self.name}[{grid}, {block}]({', '.join([*params, 'd_dims'])})")


class CudaGraphEmitter(GraphEmitter):
    """Writes the host code of one graph into `w`, keeping an env from vars to `Ref`s.

    An array value's Ref names a device array; a rank-0 value's Ref is `x[0]` for a
    1-element device array `x`, a literal expression, or a host scalar variable."""

    mod: CudaModuleBuilder

    # ---- values
    def ref(self, atom: Atom) -> Ref:
        ref = super().ref(atom)
        if isinstance(atom, Literal) and ref.scalar:  # (`array_of` may need it on the device)
            self.mod.scalar_literals[(ref.name, atom.aval.dtype)] = atom
        return ref

    def _const(self, atom: Literal) -> Ref:
        if id(atom) not in self.consts:
            name = self.mod.namer.fresh("const", numbered=True)
            value = np.ascontiguousarray(atom.value, storage(atom.aval))
            self.mod.consts.append(value.reshape(-1) if atom.aval.ndim == 0 else value)
            self.mod.const_names.append(name)
            self.mod.types[name] = array_type(atom.aval)
            self.consts[id(atom)] = Ref(f"{name}[0]" if atom.aval.ndim == 0 else name, atom.aval)
        return self.consts[id(atom)]

    def alloc(self, var: Var, hint: str | None = None) -> str:
        """A fresh device array for `var` (rank 0: a 1-element array); its name."""
        if hint is None and self.top and id(var) in self.outputs:
            name = self.mod.namer.fresh(f"out{self.outputs.index(id(var))}", numbered=False)
        else:
            name = self.fresh(hint or self.hint(var))
        shape = self.shape_tuple(var) if var.aval.ndim else "(1,)"
        self.w.line(f"{name} = rt.empty({shape}, np.{storage(var.aval).name})")
        self.mod.types[name] = array_type(var.aval)
        return name

    def new_ref(self, var: Var, hint: str | None = None) -> Ref:
        """Allocate `var`'s array and bind it."""
        name = self.alloc(var, hint)
        ref = Ref(f"{name}[0]" if var.aval.ndim == 0 else name, var.aval)
        self.bind(var, ref)
        return ref

    def view(self, expr: str, aval: ShapedArray, hint: str) -> Ref:
        """A host variable holding the device array `expr` (a view or an existing array)."""
        name = self.fresh(hint)
        self.w.line(f"{name} = {expr}")
        self.mod.types[name] = array_type(aval)
        return Ref(f"{name}[0]" if aval.ndim == 0 else name, aval)

    def host_scalar(self, expr: str, dtype: np.dtype, hint: str) -> Ref:
        """A rank-0 value computed on the host (e.g. a size), held in a host variable."""
        name = self.fresh(hint)
        self.w.line(f"{name} = {DTYPE_ALIASES[register_dtype(dtype)]}({expr})")
        self.mod.types[name] = numba.from_dtype(register_dtype(dtype))
        return Ref(name, ShapedArray((), dtype))

    def array_of(self, ref: Ref) -> str:
        """The device array holding `ref`: a rank-0 literal is a constant of the module
        (copied to the device once); a host scalar (a size) is copied in."""
        if not ref.scalar:
            return ref.name
        if ref.name.endswith("[0]"):
            return ref.name[:-3]
        atom = self.mod.scalar_literals.get((ref.name, ref.aval.dtype))
        if atom is not None:
            return self._const(atom).name[:-3]
        return self.view(f"rt.scalar({ref.name}, np.{storage(ref.aval).name})",
                         ref.aval, "scalar").name[:-3]

    def on_host(self, ref: Ref) -> str:
        """A host expression for rank-0 `ref` (a device value is copied back)."""
        return f"rt.host_value({ref.name[:-3]})" if ref.name.endswith("[0]") else ref.name

    # ---- statements
    def emit_graph(self, graph: Graph, in_refs: Sequence[Ref]) -> list[Ref]:
        from .cuda_kernels import emit_nest  # (these modules build on this one)
        for v, r in zip(graph.inputs, in_refs, strict=True):
            self.bind(v, r)
        plan = plan_graph(graph, self.mod.fuse)
        for step in plan.steps:
            if isinstance(step, OpStep):
                self.emit_op(step)
            else:
                emit_nest(self, plan, step)
        return [self.ref(a) for a in graph.outputs]

    def emit_op(self, step: OpStep) -> None:
        from .cuda_emit_ops import emit_op  # (built on this module)
        self.w.comment(describe(step.eqn))
        emit_op(self, step.eqn)

    def sub_emitter(self, w: SourceWriter | None = None) -> "CudaGraphEmitter":
        return CudaGraphEmitter(self.mod, self.w if w is None else w, top=False)


# ------------------------------------------------------------------ the module

def generate(graph: Graph, name: str, fuse: bool = True) -> CudaModule:
    """The module for `graph`, its host function called `name`."""
    graph = lower_batched_inner_products(graph)
    mod = CudaModuleBuilder(fuse)
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
    return CudaModule(_module_text(mod, graph, host), mod.consts, mod.host_ops, mod.sizes,
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
    w = SourceWriter()
    sig = ", ".join(map(spell, graph.in_avals))
    out = ", ".join(map(spell, graph.out_avals))
    w.line(f'"""Generated by tracer (numba cuda backend) for `{graph.name}`: ({sig}) -> ({out}).')
    w.line("")
    w.line("Sizes are read from `dims`, so this code serves every shape of this structure.")
    w.line('"""')
    w.line("import math")
    w.line("")
    w.line("import numpy as np")
    w.line("from numba import cuda")
    w.line("from tracer.backend import cuda_arrays as rt, cuda_launch as launch")
    for alias in [*DTYPE_ALIASES.values(), "f16"]:  # dtype constructors (cuda_mathlib)
        mod.use(alias)
    for module, names in _by_module(mod.helpers).items():
        w.line(f"from tracer.backend.{module} import {', '.join(names)}")
    w.line("")
    for const, value in CONSTANTS.items():
        w.line(f"{const} = {value}")
    for kernel in mod.kernels:
        w.line("")
        w.line("")
        w.embed(kernel)
    w.line("")
    w.line("")
    w.embed(host)
    return w.text()


def _by_module(helpers: dict[str, str]) -> dict[str, list[str]]:
    by_module: dict[str, list[str]] = {}
    for name, module in sorted(helpers.items()):
        by_module.setdefault(module, []).append(name)
    return dict(sorted(by_module.items()))


"""What every cuda emitter writes through: `CudaModuleBuilder` (module-wide state),
`Kernel` (one `@cuda.jit` kernel being written: it collects the names its body reads
and turns them into parameters, a prologue of sizes from `dims` and the launch line)
and `DeviceGraphEmitter`, the shared `GraphEmitter` whose values are device arrays.
`generate` subclasses it with the backend's steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numba
import numpy as np

from ...core import Atom, Graph, Literal, ShapedArray, Var
from ..numba.codegen import GraphEmitter, ModuleBuilder, Ref
from ..numba.scalar import DTYPE_ALIASES
from ..numba.source import SourceWriter
from .lib.arrays import register_dtype
from .lib.launch import CONFIG

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
    host: str                        # the host function's name
    consts: list[np.ndarray]
    host_ops: list[Callable[..., Any]]
    dims: list[int]
    outputs: list[tuple[str, Any]]   # ("value", k) | ("input", k) | ("literal", array)
    kernels: list[KernelInfo] = field(default_factory=list)


class CudaModuleBuilder(ModuleBuilder):
    """Module-wide state: names, helper imports, sizes, kernels, constants, host ops."""

    def __init__(self, graph: Graph, fuse: bool = True):
        super().__init__(parallel_ok=False, fuse=fuse, graph=graph)
        for name in ("cuda", "rt", "launch", "d_dims", "host_ops", *CONSTANTS):
            self.namer.reserve(name)
        self.types: dict[str, Any] = {}   # host name -> numba type, for kernel parameters
        self.kernel_infos: list[KernelInfo] = []
        self.consts: list[np.ndarray] = []
        self.const_names: list[str] = []
        self.host_ops: list[Callable[..., Any]] = []
        self.scalar_literals: dict[tuple[str, np.dtype], Literal] = {}

    def default_module(self, helper: str) -> str:
        """Scalar helpers come from `cuda.lib.mathlib` (which re-exports the shared ones)."""
        return "cuda.lib.mathlib"

    def symbol_index(self) -> dict[str, int]:
        return {sym: k for k, sym in enumerate(self.size_names.values())}


class Kernel:
    """One `@cuda.jit` kernel being written: its body, and the outer names the body reads
    (which become parameters, or, for sizes, reads from `dims`)."""

    def __init__(self, ge: "DeviceGraphEmitter", hint: str):
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


class DeviceGraphEmitter(GraphEmitter):
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

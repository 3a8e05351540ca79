"""Code generation: one Python module per graph, with a host function for numba.

The host function takes the graph inputs, the array constants, the buffers the
executable allocated with NumPy (graph outputs and top-level intermediates),
and `dims`, an int64 array holding every size and static index the code needs.
The source never contains a concrete size, so it (and numba's machine code) is
keyed by structure: ops, dtypes, ranks, broadcast pattern. Rank-0 values are
scalar variables, not arrays.

`GraphEmitter` writes one graph's code (the top level, or a loop / branch body
nested in it) step by step from the fusion plan: loop nests (`cpu_nests`,
bodies from `cpu_loops`) and ops with their own emitter (`cpu_emit_ops`).
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..core import Atom, Eqn, Graph, Literal, ShapedArray, Var
from .cpu_fallback import new_table, runner
from .cpu_fastmath import __all__ as FAST_HELPERS
from .cpu_fusion import OpStep, Plan, plan_graph
from .cpu_scalar import DTYPE_ALIASES, HALVES, literal, storage_dtype
from .source import Namer, SourceWriter

PARALLEL_MIN_ELEMENTS = 1 << 15  # below this, threads cost more than they save
# numba options of every generated function: machine code cached on disk, IEEE division
# (x / 0 is inf, not an exception), and the GIL released while it runs.
NJIT_OPTIONS = 'cache=True, error_model="numpy", nogil=True'


@dataclass(frozen=True)
class Ref:
    """How generated code reaches a value: an array variable, a scalar variable, or
    (for literals) a scalar expression. A row buffer of a row group holds only the
    trailing dims: its index drops the first `drop` entries and starts with `lead`."""

    name: str
    aval: ShapedArray
    lead: tuple[str, ...] = ()
    drop: int = 0

    @property
    def scalar(self) -> bool:
        """A scalar variable (not an element of a buffer reached through `lead`)."""
        return self.aval.ndim == 0 and not self.lead

    def at(self, index: Sequence[str]) -> str:
        """`name[...]` at the value's full `index`."""
        return f"{self.name}[{', '.join([*self.lead, *index[self.drop:]]) or '()'}]"


@dataclass
class Param:
    """A host-function parameter the executable supplies."""

    name: str
    kind: str            # "input" | "const" | "buffer"
    index: int = -1      # graph input position (inputs)
    value: Any = None    # the array (consts) or its ShapedArray (buffers)


@dataclass
class Module:
    """What code generation produced: the source and how to call its host function."""

    source: str
    params: list[Param]
    outputs: list[tuple[str, Any]]   # ("input", k) | ("literal", array) | ("param", k)
    dims: list[int]


class ModuleBuilder:
    """Module-wide state: names, helper imports, sizes, kernels, host parameters."""

    def __init__(self, parallel_ok: bool, fuse: bool = True, graph: Graph | None = None):
        self.parallel_ok = parallel_ok
        self.fuse = fuse
        self.graph = graph  # the whole graph (emitters of its parts may survey it)
        self.namer = Namer(reserved=["np", "numba", "math", "dims", *DTYPE_ALIASES.values()])
        self.helpers: dict[str, str] = {}  # helper name -> backend module defining it
        self.sizes: list[int] = []
        self.size_names: dict[tuple, str] = {}
        self.kernels: list[SourceWriter] = []
        self.params: list[Param] = []
        self.fallbacks: list[Any] | None = None  # runners of ops run by their reference

    def use(self, helper: str, module: str | None = None) -> str:
        """Import `helper` into the generated module from `tracer.backend.<module>` (default:
        `cpu_fastmath` or `cpu_mathlib`; op libraries are `cpu_lib_<topic>`)."""
        default = "cpu_fastmath" if helper in FAST_HELPERS else "cpu_mathlib"
        self.helpers[helper] = module or default
        return helper

    def size(self, key: tuple, value: int, hint: str = "n") -> str:
        """The symbol holding a static int (`dims[k]` in the host function)."""
        if key not in self.size_names:
            self.size_names[key] = self.namer.reserve(f"{hint}{len(self.sizes)}")
            self.sizes.append(int(value))
        return self.size_names[key]

    def dim(self, atom: Atom, axis: int) -> str:
        return self.size(("dim", id(atom), axis), atom.aval.shape[axis])

    def param(self, hint: str, kind: str, **fields: Any) -> str:
        name = self.namer.fresh(hint, numbered=False)
        self.params.append(Param(name, kind, **fields))
        return name

    def fallback(self, eqn: Eqn) -> tuple[str, int]:
        """(dims symbol of this executable's runner table, index) for `eqn`'s reference."""
        if self.fallbacks is None:
            table, self.fallbacks = new_table()
            self.size(("fallback table",), table, "fallback_table")
        self.fallbacks.append(runner(eqn))
        return self.size_names[("fallback table",)], len(self.fallbacks) - 1

    def param_index(self, name: str) -> int:
        return next(k for k, p in enumerate(self.params) if p.name == name)


class GraphEmitter:
    """Writes the code of one graph into `w`, keeping an env from vars to `Ref`s."""

    def __init__(self, mod: ModuleBuilder, w: SourceWriter, top: bool = False):
        self.mod = mod
        self.w = w
        self.top = top
        self.env: dict[int, Ref] = {}
        self.out_params: dict[int, str] = {}
        self.outputs: list[int] = []  # ids of the top-level graph's output vars
        self.consts: dict[int, Ref] = {}
        self.plan: Plan | None = None  # of the graph being emitted

    # ---- values
    def ref(self, atom: Atom) -> Ref:
        if isinstance(atom, Literal):
            if atom.aval.ndim == 0:
                return Ref(literal(atom.value, atom.aval.dtype), atom.aval)
            return self._const(atom)
        return self.env[id(atom)]

    def _const(self, atom: Literal) -> Ref:
        if id(atom) not in self.consts:
            value = np.ascontiguousarray(atom.value)
            name = self.mod.param("const", "const", value=value)
            self.consts[id(atom)] = Ref(name, atom.aval)
        return self.consts[id(atom)]

    def bind(self, var: Var, ref: Ref) -> None:
        self.env[id(var)] = ref

    def dim(self, atom: Atom, axis: int) -> str:
        return self.mod.dim(atom, axis)

    def shape_tuple(self, atom: Atom) -> str:
        names = [self.dim(atom, k) for k in range(atom.aval.ndim)]
        return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"

    def alloc(self, var: Var, hint: str | None = None) -> str:
        """A fresh C-contiguous array for `var` (rank >= 1)."""
        if self.top and id(var) in self.outputs:
            return self.out_param(var)
        if self.top:
            return self.mod.param(hint or "buf", "buffer", value=var.aval)
        name = self.mod.namer.fresh(hint or "buf")
        dtype = storage_dtype(var.aval.dtype)
        self.w.line(f"{name} = np.empty({self.shape_tuple(var)}, np.{dtype.name})")
        return name

    def out_param(self, var: Var) -> str:
        if id(var) not in self.out_params:
            k = self.outputs.index(id(var))
            self.out_params[id(var)] = self.mod.param(f"out{k}", "buffer", value=var.aval)
        return self.out_params[id(var)]

    def fresh(self, hint: str) -> str:
        return self.mod.namer.fresh(hint)

    @staticmethod
    def hint(var: Var) -> str:
        """A name hint for a value: the op that made it is not known here, so its dtype."""
        return dtypes.hlo_name(var.aval.dtype)

    # ---- statements
    def emit_graph(self, graph: Graph, in_refs: Sequence[Ref]) -> list[Ref]:
        for v, r in zip(graph.inputs, in_refs, strict=True):
            self.bind(v, r)
        from .cpu_nests import emit_loops  # (these modules build on this one)
        plan = self.plan = plan_graph(graph, self.mod.fuse, inline_indices=True)
        for step in plan.steps:
            if isinstance(step, OpStep):
                self.emit_op(step)
            else:
                emit_loops(self, plan, step)
        return [self.ref(a) for a in graph.outputs]

    def emit_op(self, step: OpStep) -> None:
        from .cpu_emit_ops import OP_EMITTERS, emit_fallback  # (built on this module)
        eqn = step.eqn
        self.w.comment(describe(eqn))
        OP_EMITTERS.get(eqn.op.name, emit_fallback)(self, eqn)

    def sub_emitter(self, w: SourceWriter | None = None) -> "GraphEmitter":
        """An emitter for a nested graph (loop/branch body), writing into `w` (default:
        here, at the current point)."""
        return GraphEmitter(self.mod, self.w if w is None else w, top=False)


def spell(aval: ShapedArray) -> str:
    """`f32[?,?]`: dtype and rank only, since the source must not depend on sizes."""
    return f"{dtypes.hlo_name(aval.dtype)}[{','.join('?' * aval.ndim)}]"


def describe(eqn: Eqn) -> str:
    """`dot_general f32[?,?] <- (f32[?,?], f32[?,?])  (model.py:12)`."""
    outs = ", ".join(spell(v.aval) for v in eqn.outputs)
    ins = ", ".join(spell(a.aval) for a in eqn.inputs)
    return f"{eqn.op.name} {outs} <- ({ins}){where(eqn)}"


def where(eqn: Eqn) -> str:
    if eqn.source is None:
        return ""
    return f"  ({os.path.basename(eqn.source.file)}:{eqn.source.line})"


# ------------------------------------------------------------------ loads and stores

def load(ref: Ref, index: Sequence[str], helpers: ModuleBuilder) -> str:
    if ref.scalar:
        return ref.name
    text = ref.at(index)
    if ref.aval.dtype in HALVES:
        return f"{helpers.use(HALVES[ref.aval.dtype].load)}({text})"
    return text


def store_value(expr: str, dtype: np.dtype, helpers: ModuleBuilder) -> str:
    if dtype in HALVES:
        return f"{helpers.use(HALVES[dtype].store)}({expr})"
    return expr


def copy_array(ge: GraphEmitter, target: str, source: str, ndim: int,
               lead: Sequence[str] = (), offsets: Sequence[str] = ()) -> None:
    """`target[*lead, offsets + j] = source[j]` for every index j of `source` (same storage
    dtype; `offsets` per dim of `source`, default 0), as loops.

    numba's array-to-array assignment compiles a shape-mismatch error path that costs
    seconds per pair of ranks in every process; loops compile in milliseconds."""
    index = [ge.fresh("j") for _ in range(ndim)]
    at = [f"{o} + {j}" if o not in ("", "0") else j
          for o, j in zip(list(offsets) or [""] * ndim, index, strict=True)]
    with ExitStack() as nest:
        for k, j in enumerate(index):
            nest.enter_context(ge.w.block(f"for {j} in range({source}.shape[{k}])"))
        ge.w.line(f"{target}[{', '.join([*lead, *at]) or '()'}] = "
                  f"{source}[{', '.join(index) or '()'}]")


# ------------------------------------------------------------------ the module

def generate(graph: Graph, name: str, parallel_ok: bool, fuse: bool = True) -> Module:
    """The module for `graph`, its host function called `name`."""
    mod = ModuleBuilder(parallel_ok, fuse, graph)
    body = SourceWriter()
    top = GraphEmitter(mod, body, top=True)
    top.outputs = [id(a) for a in graph.outputs]
    refs = top.emit_graph(graph, [_host_input(mod, body, v, k)
                                  for k, v in enumerate(graph.inputs)])
    outputs = _finish_outputs(top, graph, refs)
    host = _host_function(mod, name, body)
    return Module(_module_text(mod, graph, host), mod.params, outputs, mod.sizes)


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
        out = top.out_param(atom)
        if ref.scalar:
            top.w.line(f"{out}[()] = {store_value(ref.name, atom.aval.dtype, top.mod)}")
        elif ref.name != out:
            copy_array(top, out, ref.name, atom.aval.ndim)
        outputs.append(("param", top.mod.param_index(out)))
    return outputs


def _host_function(mod: ModuleBuilder, name: str, body: SourceWriter) -> SourceWriter:
    w = SourceWriter()
    # (object mode, for an op run by its reference, cannot release the GIL)
    options = NJIT_OPTIONS.replace(", nogil=True", "") if mod.fallbacks else NJIT_OPTIONS
    w.line(f"@numba.njit({options})")
    args = ", ".join([p.name for p in mod.params] + ["dims"])
    with w.block(f"def {name}({args})"):
        for key, sym in mod.size_names.items():
            w.line(f"{sym} = dims[{list(mod.size_names).index(key)}]")
        w.embed(body)
        w.line("return None")
    return w


def _helper_imports(helpers: dict[str, str]) -> dict[str, list[str]]:
    by_module: dict[str, list[str]] = {}
    for name, module in sorted(helpers.items()):
        by_module.setdefault(module, []).append(name)
    return dict(sorted(by_module.items()))


def _module_text(mod: ModuleBuilder, graph: Graph, host: SourceWriter) -> str:
    w = SourceWriter()
    sig = ", ".join(map(spell, graph.in_avals))
    out = ", ".join(map(spell, graph.out_avals))
    w.line(f'"""Generated by tracer (numba cpu backend) for `{graph.name}`: ({sig}) -> ({out}).')
    w.line("")
    w.line("Sizes are read from `dims`, so this code serves every shape of this structure.")
    w.line('"""')
    w.line("import math")
    w.line("")
    w.line("import numba")
    w.line("import numpy as np")
    aliases = ", ".join(f"{np.dtype(d).name} as {a}" for d, a in DTYPE_ALIASES.items())
    w.line(f"from numpy import {aliases.replace('bool as', 'bool_ as')}")
    for module, names in _helper_imports(mod.helpers).items():
        w.line(f"from tracer.backend.{module} import {', '.join(names)}")
    if mod.fallbacks:
        w.line("from tracer.backend import cpu_fallback as fallback")
    for kernel in mod.kernels:
        w.line("")
        w.line("")
        w.embed(kernel)
    w.line("")
    w.line("")
    w.embed(host)
    return w.text()


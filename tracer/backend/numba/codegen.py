"""The code generator both numba backends build on: values, sizes, helpers, steps.

A generated module never contains a concrete size: every size and static index is
read from `dims` (an int64 array), so the source (and numba's machine code) is
keyed by structure: ops, dtypes, ranks, broadcast pattern.

`ModuleBuilder` holds module-wide state (names, helper imports, sizes, kernels,
host parameters). `GraphEmitter` writes one graph's code (the top level, or a
loop / branch body nested in it) step by step from the fusion plan; each
backend's `generate.py` subclasses it with the two things that differ: how a loop
nest is written (`emit_nest`) and how an op with its own emitter is (`emit_op`).
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ... import dtypes
from ...core import Atom, Eqn, Graph, Literal, ShapedArray, Var
from .dimensions import DimensionClasses
from .fallback import new_table, runner
from .fusion import LoopNest, OpStep, Plan, RowGroup, plan_graph
from .scalar import DTYPE_ALIASES, HALVES, literal, storage_dtype
from .source import Namer, SourceWriter, identifier, same_code_key

SCALAR_MATH = "numba.lib.scalar_math"  # where helpers come from unless a backend says


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


class ModuleBuilder:
    """Module-wide state: names, helper imports, sizes, kernels, host parameters."""

    def __init__(self, parallel_ok: bool, fuse: bool = True, graph: Graph | None = None,
                 objmode_ok: bool = True):
        self.parallel_ok = parallel_ok
        # whether the code may call Python (NumPy) in object mode: not in a C library
        self.objmode_ok = objmode_ok
        self.fuse = fuse
        self.graph = graph  # the whole graph (emitters of its parts may survey it)
        self.dimensions = DimensionClasses(graph)  # dims equal by construction share a size
        self.namer = Namer(reserved=["np", "numba", "math", "dims", *DTYPE_ALIASES.values()])
        self.helpers: dict[str, str] = {}  # helper name -> backend module defining it
        self.sizes: list[int] = []
        self.size_names: dict[tuple, str] = {}
        self.kernels: list[SourceWriter] = []
        self.kernel_names: dict[str, str] = {}  # `same_code_key` -> the kernel's name
        self.params: list[Param] = []
        self.fallbacks: list[Any] | None = None  # runners of ops run by their reference

    def use(self, helper: str, module: str | None = None) -> str:
        """Import `helper` into the generated module from `tracer.backend.<module>` (a
        dotted path such as `numba.lib.rng`; default: `default_module(helper)`)."""
        self.helpers[helper] = module or self.default_module(helper)
        return helper

    def default_module(self, helper: str) -> str:
        """Where a scalar helper named without its module comes from."""
        return SCALAR_MATH

    def wide_vectors(self, loop_body: str) -> str | None:
        """A statement that a loop whose body is `loop_body` runs first, giving the
        function holding it wider vectors (None: the backend has none to give)."""
        return None

    def size(self, key: tuple, value: int, hint: str = "n") -> str:
        """The symbol holding a static int (`dims[k]` in the host function)."""
        if key not in self.size_names:
            self.size_names[key] = self.namer.reserve(f"{hint}{len(self.sizes)}")
            self.sizes.append(int(value))
        return self.size_names[key]

    def dim(self, atom: Atom, axis: int) -> str:
        """The size symbol of `atom`'s dim `axis` (one per dimension of the graph)."""
        return self.size(("dim", *self.dimensions.key(atom, axis)), atom.aval.shape[axis])

    def kernel(self, hint: str, decorator: str, params: Sequence[str],
               body: SourceWriter) -> str:
        """The name of a module function `def <name>(params): body` under `decorator`:
        a new one, or the one already written with the same code up to its names (a
        model's repeated layers give the same loop nests, and numba takes seconds for
        each `parallel=True` function)."""
        key = f"{decorator}\n{same_code_key(params, body)}"
        if key not in self.kernel_names:
            name = self.kernel_names[key] = self.namer.fresh(hint)
            kernel = SourceWriter()
            kernel.line(decorator)
            with kernel.block(f"def {name}({', '.join(params)})"):
                kernel.embed(body)
            self.kernels.append(kernel)
        return self.kernel_names[key]

    def param(self, hint: str, kind: str, **fields: Any) -> str:
        name = self.namer.fresh(hint, numbered=False)
        self.params.append(Param(name, kind, **fields))
        return name

    def fallback(self, eqn: Eqn, run: Any = None) -> tuple[str, int]:
        """(dims symbol of this executable's runner table, index) for `eqn`'s reference
        (or for `run`, a runner of its own)."""
        if self.fallbacks is None:
            table, self.fallbacks = new_table()
            self.size(("fallback table",), table, "fallback_table")
        self.fallbacks.append(run or runner(eqn))
        return self.size_names[("fallback table",)], len(self.fallbacks) - 1

    def import_lines(self) -> list[str]:
        """`from tracer.backend.<module> import ...` for the helpers used, one per module."""
        by_module: dict[str, list[str]] = {}
        for name, module in sorted(self.helpers.items()):
            by_module.setdefault(module, []).append(name)
        return [f"from tracer.backend.{module} import {', '.join(names)}"
                for module, names in sorted(by_module.items())]

    def param_index(self, name: str) -> int:
        return next(k for k, p in enumerate(self.params) if p.name == name)


class GraphEmitter(ABC):
    """Writes the code of one graph into `w`, keeping an env from vars to `Ref`s."""

    # whether cheap producers of a gather's / scatter's indices join the loop reading
    # them (`plan_graph`'s inline_indices)
    inline_indices = False

    def __init__(self, mod: ModuleBuilder, w: SourceWriter, top: bool = False):
        self.mod = mod
        self.w = w
        self.top = top
        self.env: dict[int, Ref] = {}
        self.out_params: dict[int, str] = {}
        self.outputs: list[int] = []  # ids of the top-level graph's output vars
        self.consts: dict[Any, Ref] = {}  # (dtype, shape, bytes) -> its parameter
        self.plan: Plan | None = None  # of the graph being emitted
        # ids of the plan's steps an op's emitter wrote with its own (an epilogue nest)
        self.absorbed: set[int] = set()

    # ---- values
    def ref(self, atom: Atom) -> Ref:
        if isinstance(atom, Literal):
            if atom.aval.ndim == 0:
                return Ref(literal(atom.value, atom.aval.dtype), atom.aval)
            return self._const(atom)
        return self.env[id(atom)]

    def _const(self, atom: Literal) -> Ref:
        """The parameter holding array constant `atom`: one per distinct value (vmap
        spreads each scalar constant of a loop body into an array of its own, and each
        array parameter is typed, unpacked and passed)."""
        value = np.ascontiguousarray(atom.value)
        key = (value.dtype.str, value.shape, value.tobytes())
        if key not in self.consts:
            name = self.mod.param("const", "const", value=value)
            self.consts[key] = Ref(name, atom.aval)
        return self.consts[key]

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
        plan = self.plan = plan_graph(graph, self.mod.fuse, self.inline_indices)
        for step in plan.steps:
            if id(step) in self.absorbed:
                continue
            if isinstance(step, OpStep):
                self.w.comment(describe(step.eqn))
                self.emit_op(step.eqn)
            else:
                self.emit_nest(plan, step)
        return [self.ref(a) for a in graph.outputs]

    @abstractmethod
    def emit_op(self, eqn: Eqn) -> None:
        """Write an op that is not part of a loop nest (the backend's emitter table)."""

    @abstractmethod
    def emit_nest(self, plan: Plan, step: LoopNest | RowGroup) -> None:
        """Write a loop nest (or a row group of them) of the fusion plan."""

    def sub_emitter(self, w: SourceWriter | None = None) -> "GraphEmitter":
        """An emitter for a nested graph (loop/branch body), writing into `w` (default:
        here, at the current point)."""
        return type(self)(self.mod, self.w if w is None else w, top=False)


def used_names(names: Sequence[str], code: str) -> list[str]:
    """The `names` that `code` mentions (imports a module needs, and no others)."""
    return [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}\b", code)]


def host_name(mod: ModuleBuilder, graph: Graph) -> str:
    """The host function's name: the user's function's, made a fresh identifier."""
    return mod.namer.fresh(identifier(graph.name.removeprefix("jit_")) or "main",
                           numbered=False)


def module_code(mod: ModuleBuilder, host: SourceWriter) -> SourceWriter:
    """The module's functions: its kernels, then the host function."""
    code = SourceWriter()
    for function in [*mod.kernels, host]:
        code.line("")
        code.line("")
        code.embed(function)
    return code


def write_header(w: SourceWriter, backend: str, graph: Graph, code: str) -> None:
    """The generated module's docstring (which graph, what signature) and `import math`
    if `code` uses it."""
    sig = ", ".join(map(spell, graph.in_avals))
    out = ", ".join(map(spell, graph.out_avals))
    w.line(f'"""Generated by tracer (numba {backend} backend) for `{graph.name}`: ({sig}) -> '
           f'({out}).')
    w.line("")
    w.line("Sizes are read from `dims`, so this code serves every shape of this structure.")
    w.line('"""')
    if used_names(["math"], code):
        w.line("import math")
        w.line("")


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

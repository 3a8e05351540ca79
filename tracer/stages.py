"""AOT stages, as in JAX: `jitted.lower(*args)` → `Lowered` → `.compile()` → `Compiled`."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import profiler, reprs
from .backend import Executable, get_backend
from .config import config
from .core import Eqn, Graph, ShapedArray, Var, subgraphs
from .dump import dump_source
from .errors import TracerTypeError, TracerValueError, names_user_line
from .hlo import HloModule, hlo_html
from .tree_util import PyTreeDef, tree_flatten, tree_unflatten


class Lowered:
    """A traced function for one signature, before optimization and compilation."""

    def __init__(self, graph: Graph, name: str, in_tree: PyTreeDef, in_avals: Sequence[ShapedArray],
                 out_tree: PyTreeDef, backend: str, split_args: Any, statics: tuple = (),
                 donated: tuple[int, ...] = ()):
        self.graph = graph
        self.name = name
        self.in_tree = in_tree
        self.in_avals = tuple(in_avals)
        self.out_tree = out_tree
        self.backend = backend
        self._split_args = split_args  # (args, kwargs) -> (dynamic pytree, static values)
        self.statics = statics  # the static arguments' (name, type, value), as traced
        self.donated = donated  # positions of the input leaves of donated arguments

    @property
    def hlo(self) -> HloModule:
        return HloModule(self.graph, self.name)

    def as_text(self) -> str:
        """HLO text of the traced graph (before passes)."""
        return self.hlo.as_text()

    def signature(self) -> str:
        return f"({', '.join(map(str, self.in_avals))})"

    def _repr_html_(self) -> str:
        return hlo_html(self.hlo, f"Lowered {self.name}{self.signature()} for {self.backend!r}"
                        " (traced graph, before passes)")

    def optimize(self) -> Graph:
        """The graph after the optimization passes (what a backend compiles)."""
        from .passes import optimize  # (imported here: only compiling needs the passes)

        with profiler.naming(self.name):
            return optimize(self.graph, self.name)

    def backend_options(self) -> dict[str, Any]:
        """Keyword arguments of the backend's `compile` / `prepare` beyond the graph:
        the donated inputs, on the cpu backend (the others never write an input)."""
        return {"donated": self.donated} if self.donated and self.backend == "cpu" else {}

    def compile(self) -> "Compiled":
        """Optimize and compile now, in this thread (whatever `config.compile_mode`)."""
        optimized = self.optimize()
        with profiler.naming(self.name), \
                profiler.span("backend", "backend", backend=self.backend) as extra:
            executable = get_backend(self.backend).compile(optimized, **self.backend_options())
            extra["fresh_compile"] = bool(getattr(executable, "fresh_compile", True))
        source = getattr(executable, "source", None)
        if config.dump_dir and source:
            dump_source(config.dump_dir, self.name, self.backend, source)
        return Compiled(self, optimized, executable)


class Compiled:
    """A compiled function for one signature; calling it with other avals is an error."""

    def __init__(self, lowered: Lowered, graph: Graph, executable: Executable | None):
        self.lowered = lowered
        self.graph = graph
        self.executable = executable
        self.aliased = _aliased_outputs(graph)
        self._expected = tuple(a.strip_weak() for a in lowered.in_avals)
        self._plain = ExactArrays(lowered.in_tree, self._expected)

    def run(self, arrays: Sequence[Any]) -> list[Any]:
        """The executable's outputs; an output the graph passes through from an input
        (or repeats) is copied, so mutating a result never changes an argument or
        another result (backends may hand those buffers back as they are)."""
        outs = list(self.executable(*arrays))
        for i in self.aliased:
            if isinstance(outs[i], np.ndarray):
                outs[i] = outs[i].copy()
        return outs

    @property
    def source(self) -> str:
        return self.executable.source

    @property
    def hlo(self) -> HloModule:
        """The optimized graph, with the loop nests the numba backends fuse it into."""
        groups = () if self.lowered.backend == "interpreter" else fusion_groups(self.graph)
        return HloModule(self.graph, self.lowered.name, groups)

    def as_text(self) -> str:
        """HLO text of the optimized graph the backend compiled."""
        return HloModule(self.graph, self.lowered.name).as_text()

    def _repr_html_(self) -> str:
        cost = self.cost_analysis()
        fresh = getattr(self.executable, "fresh_compile", None)
        how = {True: "numba compiled it", False: "machine code from the cache",
               None: "no machine code"}[fresh]
        facts = reprs.line(f"{cost['flops']:.0f} flops, {cost['bytes_accessed']:.0f} bytes "
                           f"accessed (estimates); {how}")
        source = getattr(self.executable, "source", None)
        tail = (reprs.folded(f"generated source ({len(source.splitlines())} lines)",
                             reprs.code(source)),) if source else ()
        lowered = self.lowered
        title = f"Compiled {lowered.name}{lowered.signature()} for {lowered.backend!r}"
        return hlo_html(self.hlo, title, [facts], tail)

    def cost_analysis(self) -> dict[str, float]:
        return cost_analysis(self.graph)

    @names_user_line
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dynamic, statics = self.lowered._split_args(args, kwargs)
        if statics != self.lowered.statics:  # the graph has the traced values baked in
            raise TracerValueError(
                f"{self.lowered.name}: compiled for the static arguments "
                f"{_statics_text(self.lowered.statics)} but called with "
                f"{_statics_text(statics)}; call the jitted function to retrace")
        plain = self._plain.of(*dynamic)  # (dynamic: the (args, kwargs) pytree)
        if plain is not None:  # (the common call, without the checks' ~10 us of Python)
            return tree_unflatten(self.lowered.out_tree, self.run(plain))
        leaves, tree = tree_flatten(dynamic)
        arrays = [x if _on_device(x) else np.asarray(x) for x in leaves]
        avals = tuple(ShapedArray(tuple(a.shape), np.dtype(a.dtype)) for a in arrays)
        expected = self._expected
        if tree != self.lowered.in_tree:  # (keywords for positions, another container)
            raise TracerTypeError(
                f"{self.lowered.name}: compiled for arguments structured as "
                f"{self.lowered.in_tree} but called with {tree}; call the jitted function "
                "to retrace")
        if avals != expected:
            raise TracerTypeError(
                f"{self.lowered.name}: compiled for ({', '.join(map(str, expected))}) but called "
                f"with ({', '.join(map(str, avals))}); call the jitted function to retrace")
        arrays = [x if _on_device(x) else np.asarray(x, dtype=a.dtype)
                  for x, a in zip(arrays, expected, strict=True)]
        return tree_unflatten(self.lowered.out_tree, self.run(arrays))


class ExactArrays:
    """The fast check of a compiled program's call (`Compiled`, `export.Exported`):
    positional NumPy arrays (not subclasses) of exactly its input shapes and dtypes,
    where its inputs are the positional arguments themselves; any other call takes the
    caller's general path, which converts, checks and says what differs."""

    __slots__ = ("layouts", "positional")

    def __init__(self, in_tree: PyTreeDef, in_avals: Sequence[ShapedArray]) -> None:
        self.layouts = tuple((a.shape, np.dtype(a.dtype)) for a in in_avals)
        # (the structure `tree_flatten` gives (args, kwargs) of len(layouts) leaves)
        self.positional = in_tree == tree_flatten(((0,) * len(self.layouts), {}))[1]

    def of(self, args: Any, kwargs: Any) -> tuple[np.ndarray, ...] | None:
        """`args` when the call qualifies, else None."""
        if not self.positional or kwargs or type(args) is not tuple \
                or len(args) != len(self.layouts):
            return None
        for x, (shape, dtype) in zip(args, self.layouts):
            if type(x) is not np.ndarray or x.shape != shape or x.dtype != dtype:
                return None
        return args


def fusion_groups(graph: Graph) -> list[list[Eqn]]:
    """Eqns of `graph` the numba backends' fusion plan computes in one loop nest (or one
    row group of nests); an index map recomputed by several nests counts in the first.
    (Planned on the optimized graph as drawn: the cpu backend first folds transposes into
    its dots and may turn small dots into loops, so its own plan can group a little more.)"""
    # (imported here: only drawing needs the fusion planner before a compile does)
    from .backend.numba.fusion import LoopNest, OpStep, RowGroup, plan_graph

    groups: list[list[Eqn]] = []
    seen: set[int] = set()
    for step in plan_graph(graph).steps:
        if isinstance(step, OpStep):
            continue
        nests = step.nests if isinstance(step, RowGroup) else [step]
        group = [e for n in nests if isinstance(n, LoopNest) for e in n.eqns if id(e) not in seen]
        seen.update(map(id, group))
        groups.append(group)
    return groups


def _aliased_outputs(graph: Graph) -> tuple[int, ...]:
    """Positions of outputs that are graph inputs or repeat an earlier output."""
    seen = {id(v) for v in graph.inputs}
    aliased = []
    for i, atom in enumerate(graph.outputs):
        if isinstance(atom, Var):
            if id(atom) in seen:
                aliased.append(i)
            seen.add(id(atom))
    return tuple(aliased)


def _statics_text(statics: tuple) -> str:
    return "(" + ", ".join(f"{name}={value!r}" for name, _, value in statics) + ")"


def _on_device(x: Any) -> bool:
    """A numba device array (real or simulated): passed to the executable as it is, so
    results stay on the device (checked without importing numba.cuda)."""
    return bool(getattr(type(x), "__cuda_ndarray__", False))


# Flops per output element of element-wise families; dot_general is counted exactly.
_ELEMENTWISE = {"unary", "binary", "compare", "ternary"}


def cost_analysis(graph: Graph) -> dict[str, float]:
    """Estimated `flops` and `bytes_accessed` (every operand read, every result written)."""
    flops = 0.0
    bytes_accessed = 0.0
    for eqn in graph.eqns:
        for atom in eqn.inputs:
            bytes_accessed += atom.aval.size * atom.aval.dtype.itemsize
        for v in eqn.outputs:
            bytes_accessed += v.aval.size * v.aval.dtype.itemsize
        flops += _eqn_flops(eqn)
        for sub in subgraphs(eqn.params):
            flops += cost_analysis(sub)["flops"]
    return {"flops": flops, "bytes_accessed": bytes_accessed}


def _eqn_flops(eqn: Any) -> float:
    family = getattr(eqn.op, "family", "")
    if family in _ELEMENTWISE:
        return float(eqn.outputs[0].aval.size)
    if eqn.op.name == "dot_general":
        lhs = eqn.inputs[0].aval
        contracted = np.prod([lhs.shape[d] for d in eqn.params["lhs_contracting_dims"]])
        return 2.0 * eqn.outputs[0].aval.size * float(contracted)
    if eqn.op.name == "reduce":
        return float(sum(a.aval.size for a in eqn.inputs[: len(eqn.outputs)]))
    return 0.0

"""The interpreter backend: runs a graph with the ops' NumPy reference
implementations. Always available; the oracle every other backend is tested
against.

Its products go through `np.matmul`, so NumPy's OpenBLAS: a graph whose largest
product is small runs it on one thread (`blas_threads`), as the cpu backend does, so
the interpreter tier stays fast while a compile worker (or anything else) keeps the
other cores busy.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config import config
from ..core import Graph, Literal, Var
from ..interpret import run_graph
from .blas_threads import BLAS_PARALLEL_MIN_FLOPS, largest_product_flops, single_threaded

NUMPY_LIBS = "numpy.libs"


class InterpretedExecutable:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.source = graph_source(graph)
        self._out_dtypes = [a.dtype for a in graph.out_avals]
        # Outputs that are graph inputs or constants would alias the caller's array or
        # the cached constant, and reference impls may return views: those are copied.
        computed = {id(v) for e in graph.eqns for v in e.outputs}
        self._copy = [not (isinstance(a, Var) and id(a) in computed) for a in graph.outputs]
        flops = largest_product_flops(graph)
        self._run = (single_threaded(self._run_graph, NUMPY_LIBS)
                     if 0 < flops < BLAS_PARALLEL_MIN_FLOPS else self._run_graph)

    def _run_graph(self, *args: np.ndarray) -> list:
        return run_graph(self.graph, args, check=config.runtime_checks)

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        outs = self._run(*args)
        return [o if not copy and type(o) is np.ndarray and o.dtype == d and o.flags.owndata
                else np.array(o, dtype=d)
                for o, d, copy in zip(outs, self._out_dtypes, self._copy, strict=True)]


class InterpreterBackend:
    name = "interpreter"

    def compile(self, graph: Graph) -> InterpretedExecutable:
        return InterpretedExecutable(graph)


def graph_source(graph: Graph) -> str:
    """A Python-like listing of what the interpreter runs, one op call a line."""
    names: dict[int, str] = {}

    def ref(a: Var | Literal) -> str:
        return repr(a.value.item()) if isinstance(a, Literal) and a.value.ndim == 0 \
            else "<const>" if isinstance(a, Literal) else names[id(a)]

    for i, v in enumerate(graph.inputs):
        names[id(v)] = f"a{i}"
    lines = [f"def {graph.name}({', '.join(names[id(v)] for v in graph.inputs)}):"]
    for eqn in graph.eqns:
        for v in eqn.outputs:
            names[id(v)] = f"v{len(names)}"
        outs = ", ".join(names[id(v)] for v in eqn.outputs)
        params = "".join(f", {k}={_param(p)}" for k, p in eqn.params.items())
        where = (f"  # {eqn.source.file.rsplit('/', 1)[-1]}:{eqn.source.line}" if eqn.source
                 else "")
        args = ", ".join(map(ref, eqn.inputs))
        lines.append(f"    {outs} = {eqn.op.name}({args}{params}){where}")
    lines.append(f"    return ({', '.join(map(ref, graph.outputs))},)")
    return "\n".join(lines)


def _param(value: object) -> str:
    if isinstance(value, Graph):
        return f"<graph {value.name}>"
    if isinstance(value, Sequence) and not isinstance(value, str) and \
            any(isinstance(v, Graph) for v in value):
        return f"<{len(value)} graphs>"
    return repr(value)

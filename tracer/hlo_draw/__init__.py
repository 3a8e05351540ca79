"""Pictures of HLO graphs without any system binary: DOT text and SVG.

    graph_to_dot(graph, "jit_f")      # Graphviz DOT (the seeds' hlo_graph_N.dot)
    graph_to_svg(graph, "jit_f")      # SVG from our own layered layout

`fusion` (groups of eqns a backend computes in one loop nest) draws boxes around
them. A graph over `MAX_DRAWN` instructions gets a summary note instead of a
picture, so a notebook never hangs on a huge graph.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..core import Eqn, Graph

MAX_DRAWN = 5000

# (the renderers are imported when a graph is first drawn: `import tracer` need not pay
# for the layout and SVG code)


def graph_to_dot(graph: Graph, name: str, fusion: Sequence[Sequence[Eqn]] = ()) -> str:
    from . import dot
    from .model import build
    return dot.render(build(graph, name, fusion))


def graph_to_svg(graph: Graph, name: str, fusion: Sequence[Sequence[Eqn]] = (),
                 max_instructions: int = MAX_DRAWN) -> str:
    from . import svg
    from .model import build, count_instructions
    size = count_instructions(graph)
    if size > max_instructions:
        return svg.render_summary(name, size, max_instructions, _op_counts(graph))
    return svg.render(build(graph, name, fusion))


def _op_counts(graph: Graph, counts: Counter | None = None) -> Counter:
    counts = Counter() if counts is None else counts
    for eqn in graph.eqns:
        counts[eqn.op.hlo_name] += 1
        for value in eqn.params.values():
            for g in value if isinstance(value, tuple) else (value,):
                if isinstance(g, Graph):
                    _op_counts(g, counts)
    return counts

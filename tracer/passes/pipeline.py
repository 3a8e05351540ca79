"""The pass pipeline: a list of pure Graph → Graph functions run in order.

With `config.runtime_checks` every result is typechecked; with
`config.dump_dir` the graph is written (HLO text and DOT) before and after each pass.
"""

from __future__ import annotations

from .. import profiler
from ..config import config
from ..core import Graph, typecheck
from ..dump import dump_graph
from .cse import cse
from ..transforms.checkpoint import lower_ad_ops
from .dce import dce
from .fold import fold_constants
from .rewrite import Pass
from .simplify import simplify

# AD-only ops (stop_gradient, checkpoint, custom_jvp/vjp calls) are inlined first: no
# transformation is left to need them. Simplify next so CSE sees canonical eqns; folding
# exposes new constants for a second simplify; DCE last drops everything the others
# bypassed.
PIPELINE: tuple[tuple[str, Pass], ...] = (
    ("lower_ad_ops", lower_ad_ops),
    ("simplify", simplify),
    ("cse", cse),
    ("fold", fold_constants),
    ("simplify", simplify),
    ("dce", dce),
)


def optimize(graph: Graph, name: str = "main") -> Graph:
    dump = config.dump_dir
    if dump:
        dump_graph(dump, name, 0, "input", graph)
    with profiler.span("passes", "passes", eqns_in=len(graph.eqns)) as extra:
        for i, (pass_name, run) in enumerate(PIPELINE, start=1):
            with profiler.span(pass_name, "pass"):
                graph = run(graph)
            if config.runtime_checks:
                typecheck(graph)
            if dump:
                dump_graph(dump, name, i, pass_name, graph)
        extra["eqns_out"] = len(graph.eqns)
    return graph

"""What a drawing of a graph holds: nodes, edges, fusion boxes, sub-computation panels.

One `Drawing` per computation. A node is a graph input, an equation or the
computation's result; literal operands are not nodes (a scalar literal joins its
consumer's label). A sub-computation of more than one instruction (a loop body, a
branch, a called function) becomes a `Drawing` of its own, a panel attached to the
node that calls it; a one-instruction computation (reduce's `add`) is named in the
caller's label instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..core import Eqn, Graph, Literal, Var

# Node fill colours by kind (an op's family, or a few ops by name).
KIND_COLORS = {
    "input": "#dbeafe", "output": "#e5e7eb", "elementwise": "#fef9c3", "index": "#f3f4f6",
    "reduce": "#dcfce7", "dot": "#fed7aa", "control": "#ede9fe", "other": "#fce7f3",
}
_ELEMENTWISE = frozenset({"unary", "binary", "compare", "ternary"})
_INDEX = frozenset({"broadcast_in_dim", "transpose", "rev", "slice", "iota", "dynamic_slice",
                    "reshape", "pad", "concatenate", "gather", "scatter",
                    "dynamic_update_slice", "convert_element_type"})
_DOTS = frozenset({"dot_general", "conv_general_dilated"})


@dataclass
class Node:
    key: str
    title: str              # op name (or "Arg_0", "ROOT")
    detail: str             # result shape(s)
    kind: str
    panels: list[int] = field(default_factory=list)   # indices into Drawing.panels


@dataclass
class Panel:
    """A sub-computation drawn beside its caller."""

    title: str
    caller: str             # key of the calling node
    drawing: Drawing


@dataclass
class Drawing:
    name: str
    nodes: list[Node]
    edges: list[tuple[str, str]]
    groups: list[list[str]]   # fusion groups: node keys boxed together
    panels: list[Panel]


def count_instructions(graph: Graph) -> int:
    """Inputs and equations of `graph` and of every sub-computation."""
    total = len(graph.inputs) + len(graph.eqns)
    for eqn in graph.eqns:
        for sub in _subgraphs(eqn):
            total += count_instructions(sub[1])
    return total


def build(graph: Graph, name: str, fusion: Sequence[Sequence[Eqn]] = (),
          prefix: str = "n") -> Drawing:
    """The drawing of `graph`; `fusion` lists groups of its eqns computed together."""
    nodes: list[Node] = []
    edges: list[tuple[str, str]] = []
    panels: list[Panel] = []
    key_of: dict[int, str] = {}
    for i, v in enumerate(graph.inputs):
        key_of[id(v)] = f"{prefix}{len(nodes)}"
        nodes.append(Node(key_of[id(v)], f"Arg_{i}", str(v.aval), "input"))
    eqn_key: dict[int, str] = {}
    for eqn in graph.eqns:
        key = eqn_key[id(eqn)] = f"{prefix}{len(nodes)}"
        node = Node(key, _title(eqn), _shapes(eqn.outputs), _kind(eqn))
        nodes.append(node)
        for a in eqn.inputs:
            if isinstance(a, Var) and id(a) in key_of:
                edges.append((key_of[id(a)], key))
        for v in eqn.outputs:
            key_of[id(v)] = key
        for label, sub in _subgraphs(eqn):
            node.panels.append(len(panels))
            sub_prefix = f"{key}_{len(node.panels)}_"
            title = f"{eqn.op.hlo_name} {label}"
            panels.append(Panel(title, key, build(sub, title, (), sub_prefix)))
    _add_root(graph, nodes, edges, key_of, prefix)
    groups = [[eqn_key[id(e)] for e in group if id(e) in eqn_key] for group in fusion]
    return Drawing(name, nodes, edges, [g for g in groups if len(g) > 1], panels)


def _add_root(graph: Graph, nodes: list[Node], edges: list[tuple[str, str]],
              key_of: dict[int, str], prefix: str) -> None:
    key = f"{prefix}{len(nodes)}"
    detail = ", ".join(str(a.aval) for a in graph.outputs)
    nodes.append(Node(key, "ROOT", detail if len(graph.outputs) == 1 else f"({detail})",
                      "output"))
    for a in graph.outputs:
        if isinstance(a, Var) and id(a) in key_of and (key_of[id(a)], key) not in edges:
            edges.append((key_of[id(a)], key))


def _subgraphs(eqn: Eqn) -> list[tuple[str, Graph]]:
    """Named sub-computations worth a panel (more than one instruction)."""
    found = []
    for pname, value in eqn.params.items():
        graphs = value if isinstance(value, tuple) else (value,)
        for k, g in enumerate(graphs):
            if isinstance(g, Graph) and len(g.eqns) > 1:
                found.append((pname if len(graphs) == 1 else f"{pname}[{k}]", g))
    return found


def _title(eqn: Eqn) -> str:
    """The op name, a scalar literal operand, and any one-instruction computation."""
    parts = [eqn.op.hlo_name]
    for a in eqn.inputs:
        if isinstance(a, Literal) and a.value.ndim == 0:
            parts.append(_scalar_text(a.value))
    for value in eqn.params.values():
        graphs = value if isinstance(value, tuple) else (value,)
        for g in graphs:
            if isinstance(g, Graph) and len(g.eqns) == 1:
                parts.append(f"[{g.eqns[0].op.hlo_name}]")
    return " ".join(parts)


def _scalar_text(value: np.ndarray) -> str:
    text = repr(value.item())
    return text if len(text) <= 10 else f"{value.item():.4g}"


def _shapes(outputs: Sequence[Var]) -> str:
    text = ", ".join(str(v.aval) for v in outputs)
    return text if len(outputs) == 1 else f"({text})"


def _kind(eqn: Eqn) -> str:
    family = getattr(eqn.op, "family", "other")
    name = eqn.op.name
    if _subgraphs(eqn):
        return "control"
    if family in _ELEMENTWISE:
        return "elementwise"
    if name in _INDEX:
        return "index"
    if name in _DOTS:
        return "dot"
    if name.startswith("reduce") or name in ("sort", "select_and_scatter"):
        return "reduce"
    return "other"

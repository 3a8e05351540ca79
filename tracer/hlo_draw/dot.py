"""Graphviz DOT text of a `Drawing` (the seeds' `hlo_graph_N.dot`).

Fusion groups and sub-computations become `cluster_*` subgraphs; a dashed edge
joins each caller to the first node of its sub-computation (`lhead` points at the
cluster), so `dot -Tsvg` draws what `to_svg()` draws.
"""

from __future__ import annotations

from .model import KIND_COLORS, Drawing, Node


def render(drawing: Drawing) -> str:
    lines = [f"digraph {_quote(drawing.name)} {{", "  compound=true; rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="monospace", fontsize=10];']
    _body(drawing, lines, "  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _body(drawing: Drawing, lines: list[str], pad: str) -> None:
    grouped = {key: k for k, group in enumerate(drawing.groups) for key in group}
    for k, group in enumerate(drawing.groups):
        lines.append(f"{pad}subgraph cluster_{drawing.nodes[0].key}_fusion{k} {{")
        lines.append(f'{pad}  label="fusion {k}"; style=dashed; color="#ea580c";')
        lines += [f"{pad}  {_node(n)}" for n in drawing.nodes if grouped.get(n.key) == k]
        lines.append(f"{pad}}}")
    lines += [f"{pad}{_node(n)}" for n in drawing.nodes if n.key not in grouped]
    lines += [f"{pad}{u} -> {v};" for u, v in drawing.edges]
    for panel in drawing.panels:
        first = panel.drawing.nodes[0].key
        cluster = f"cluster_{first}"
        lines.append(f"{pad}subgraph {cluster} {{")
        lines.append(f'{pad}  label={_quote(panel.title)}; style=dashed; color="#7c3aed";')
        _body(panel.drawing, lines, pad + "  ")
        lines.append(f"{pad}}}")
        lines.append(f"{pad}{panel.caller} -> {first} [style=dashed, lhead={cluster}];")


def _node(node: Node) -> str:
    label = f'"{_escape(node.title)}\\n{_escape(node.detail)}"'  # DOT's \n: a line break
    width = ", penwidth=2" if node.kind == "output" else ""
    return f'{node.key} [label={label}, fillcolor="{KIND_COLORS[node.kind]}"{width}];'


def _quote(text: str) -> str:
    return f'"{_escape(text)}"'


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')

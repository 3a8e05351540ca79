"""SVG of a `Drawing`: boxes and curved arrows from `layered_layout`, no Graphviz binary.

Fusion groups are dashed boxes behind their nodes; each sub-computation is a panel
to the right of its computation, joined to its caller by a dashed line. Every node
has a `<title>` (its full label), which browsers show on hover.
"""

from __future__ import annotations

from collections import Counter
from html import escape

from .layout import GAP_Y, Box, Layout, layered_layout
from .model import KIND_COLORS, Drawing, Node

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
CHAR_W = 6.8          # width of one character at 11px
NODE_H = 34.0
MAX_CHARS = 36
MARGIN = 12.0
PANEL_GAP = 36.0
TITLE_H = 20.0
# Fusion bands cycle through these, so neighbouring groups can be told apart.
BAND_COLORS = ("#fed7aa", "#bbf7d0", "#c7d2fe", "#fbcfe8", "#bae6fd", "#fde68a")

_DEFS = ('<defs><marker id="tracer-arrow" viewBox="0 0 10 10" refX="10" refY="5" '
         'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
         '<path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>')


def render(drawing: Drawing) -> str:
    """The whole drawing (computation and its panels) as one `<svg>` element."""
    parts, width, height, _ = _draw(drawing, 0.0, 0.0)
    return _svg(parts, width, height)


def render_summary(name: str, instructions: int, limit: int, op_counts: Counter) -> str:
    """A note in place of a graph too large to draw."""
    top = ", ".join(f"{op} {n}" for op, n in op_counts.most_common(8))
    lines = [f"{name}: {instructions} instructions, too many to draw (limit {limit}).",
             f"Most common: {top}.",
             "to_dot() still gives the whole graph; draw a smaller function to see it."]
    width = MARGIN * 2 + CHAR_W * max(map(len, lines))
    parts = [(f'<rect x="0.5" y="0.5" width="{width - 1:.0f}" height="{20 * len(lines) + 14}" '
              f'rx="6" fill="#fffbeb" stroke="#d97706"/>')]
    parts += [_text(MARGIN, 22 + 20 * k, line, 12) for k, line in enumerate(lines)]
    return _svg(parts, width, 20 * len(lines) + 16)


def _svg(parts: list[str], width: float, height: float) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}" '
            f'class="tracer-hlo-graph">{_DEFS}{"".join(parts)}</svg>')


def _label(node: Node) -> tuple[str, str]:
    return _clip(node.title), _clip(node.detail)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _draw(drawing: Drawing, ox: float, oy: float) -> tuple[list[str], float, float, Layout]:
    """Elements of `drawing` with its top-left at (ox, oy); returns width and height."""
    sizes = [(n.key, CHAR_W * max(map(len, _label(n))) + 16, NODE_H) for n in drawing.nodes]
    inputs = [n.key for n in drawing.nodes if n.kind == "input"]
    lay = layered_layout(sizes, drawing.edges, drawing.groups, inputs)
    gx, gy = ox + MARGIN, oy + MARGIN + TITLE_H
    parts = [_text(ox + MARGIN, oy + MARGIN + 11, drawing.name, 12, bold=True)]
    parts += [_group_box(lay, g, k, gx, gy) for k, g in enumerate(drawing.groups)]
    parts += [_edge(points, gx, gy) for _, _, points in lay.routes]
    parts += [_node(n, lay, gx, gy) for n in drawing.nodes]
    width = max(lay.width + 2 * MARGIN, CHAR_W * len(drawing.name) + 2 * MARGIN)
    height = lay.height + 2 * MARGIN + TITLE_H
    px, py = ox + width + PANEL_GAP, oy
    for node in drawing.nodes:
        box = lay.boxes[node.key]
        py = max(py, gy + box.y - MARGIN)  # beside its caller when there is room
        for p in node.panels:
            panel = drawing.panels[p]
            sub, w, h, _ = _draw(panel.drawing, px, py)
            parts.append(_panel_frame(panel.title, px, py, w, h))
            parts.append(f'<path d="M{gx + box.x + box.width / 2:.1f},{gy + box.y + NODE_H / 2:.1f}'
                         f' L{px:.1f},{py + 14:.1f}" stroke="#7c3aed" stroke-dasharray="4 3" '
                         f'fill="none"/>')
            parts += sub
            width = max(width, px + w - ox)
            height = max(height, py + h - oy)
            py += h + PANEL_GAP / 2
    return parts, width, height, lay


def _node(node: Node, lay: Layout, gx: float, gy: float) -> str:
    b = lay.boxes[node.key]
    x, y = gx + b.x - b.width / 2, gy + b.y
    title, detail = _label(node)
    stroke = "#111" if node.kind == "output" else "#666"
    return (f'<g class="node" data-key="{node.key}">'
            f'<title>{escape(node.title)} : {escape(node.detail)}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{b.width:.1f}" height="{b.height:.1f}" '
            f'rx="5" fill="{KIND_COLORS[node.kind]}" stroke="{stroke}"/>'
            + _text(x + 8, y + 14, title, 11, bold=True) + _text(x + 8, y + 28, detail, 10)
            + "</g>")


def _edge(points: list[tuple[float, float]], gx: float, gy: float) -> str:
    (x0, y0), rest = points[0], points[1:]
    d = [f"M{gx + x0:.1f},{gy + y0:.1f}"]
    for (xa, ya), (xb, yb) in zip(points, rest):
        mid = gy + (ya + yb) / 2
        d.append(f"C{gx + xa:.1f},{mid:.1f} {gx + xb:.1f},{mid:.1f} {gx + xb:.1f},{gy + yb:.1f}")
    return (f'<path class="edge" d="{" ".join(d)}" fill="none" stroke="#555" stroke-width="1.2" '
            f'marker-end="url(#tracer-arrow)"/>')


def _group_box(lay: Layout, group: list[str], k: int, gx: float, gy: float) -> str:
    """One filled band per layer around the group's members (side by side in each
    layer), touching the next layer's band: a shape that never covers other nodes."""
    rows: dict[float, list[Box]] = {}
    for key in group:
        rows.setdefault(lay.boxes[key].y, []).append(lay.boxes[key])
    tops = sorted(rows)
    rects = []
    for n, top in enumerate(tops):
        left = min(b.x - b.width / 2 for b in rows[top]) - 6
        right = max(b.x + b.width / 2 for b in rows[top]) + 6
        y0 = top - (14 if n == 0 else GAP_Y / 2)
        y1 = top + NODE_H + (6 if n == len(tops) - 1 else GAP_Y / 2)
        rects.append(f'<rect x="{gx + left:.1f}" y="{gy + y0:.1f}" width="{right - left:.1f}" '
                     f'height="{y1 - y0:.1f}" fill="{BAND_COLORS[k % len(BAND_COLORS)]}" '
                     f'fill-opacity="0.55"/>')
        if n == 0:
            label = _text(gx + left + 4, gy + y0 + 10, f"fusion {k}", 9)
    return f'<g class="fusion" data-members="{" ".join(group)}">{"".join(rects)}{label}</g>'


def _panel_frame(title: str, x: float, y: float, w: float, h: float) -> str:
    return (f'<g class="cluster"><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f'rx="8" fill="#faf5ff" stroke="#7c3aed" stroke-dasharray="6 3"/>'
            f'<title>{escape(title)}</title></g>')


def _text(x: float, y: float, text: str, size: int, bold: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}"{weight}>{escape(text)}</text>'

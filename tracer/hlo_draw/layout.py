"""A layered (Sugiyama-style) layout of a DAG, in pure Python, top to bottom.

1. Layers: each node one below its lowest input (longest path); a node with no
   inputs that is not a graph input (iota, a constant) sits just above its first user.
2. Edges that span a few layers get a chain of dummy points, one per layer (longer
   ones are drawn as one curve, so the work stays linear in the edges).
3. Order in each layer: barycenter sweeps, down then up; nodes of one fusion group
   stay side by side (sorted by their group's mean position).
4. Horizontal places: each node is pulled to the mean of its neighbours, and the
   closest placement that keeps the layer's order and spacing is found exactly by
   isotonic regression (pool adjacent violators), a few rounds down and up.

Work is about (nodes + dummy points) × rounds, fine for graphs of thousands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Sequence

GAP_X = 18.0
GAP_Y = 34.0
DUMMY_WIDTH = 6.0
ROUNDS = 4
# Edges longer than this many layers get no dummy points (a value used all along a deep
# chain would otherwise add layers x users of them): they are drawn as one curve.
MAX_SPAN = 8


@dataclass
class Box:
    key: str
    width: float
    height: float
    x: float = 0.0            # centre
    y: float = 0.0            # top
    dummy: bool = False
    group: int = -1
    preds: list[int] = field(default_factory=list)
    succs: list[int] = field(default_factory=list)


@dataclass
class Layout:
    boxes: dict[str, Box]
    routes: list[tuple[str, str, list[tuple[float, float]]]]   # (src, dst, points)
    width: float
    height: float


def layered_layout(sizes: Sequence[tuple[str, float, float]], edges: Sequence[tuple[str, str]],
                   groups: Sequence[Sequence[str]] = (), fixed_top: Sequence[str] = ()) -> Layout:
    """Place nodes (key, width, height) given in topological order; `fixed_top` nodes
    (graph inputs) stay on the first layer."""
    boxes = [Box(k, w, h) for k, w, h in sizes]
    index = {b.key: i for i, b in enumerate(boxes)}
    for g, members in enumerate(groups):
        for k in members:
            boxes[index[k]].group = g
    layer = _layers(boxes, index, edges, set(fixed_top))
    chains = _add_dummies(boxes, index, edges, layer)
    layers: list[list[int]] = [[] for _ in range(max(layer, default=0) + 1)]
    for i, lay in enumerate(layer):
        layers[lay].append(i)
    _order(boxes, layers)
    _place_x(boxes, layers)
    height = _place_y(boxes, layers)
    width = _normalize_x(boxes)
    routes = [(boxes[chain[0]].key, boxes[chain[-1]].key, _route(boxes, chain))
              for chain in chains]
    return Layout({b.key: b for b in boxes if not b.dummy}, routes, width, height)


def _layers(boxes: list[Box], index: dict[str, int], edges: Sequence[tuple[str, str]],
            fixed_top: set[str]) -> list[int]:
    layer = [0] * len(boxes)
    preds: list[list[int]] = [[] for _ in boxes]
    for u, v in edges:
        preds[index[v]].append(index[u])
    for i in range(len(boxes)):
        layer[i] = max((layer[p] + 1 for p in preds[i]), default=0)
    users: dict[int, list[int]] = {}
    for u, v in edges:
        users.setdefault(index[u], []).append(index[v])
    for i in reversed(range(len(boxes))):  # sources (iota, constants) move next to a user
        if not preds[i] and boxes[i].key not in fixed_top and i in users:
            layer[i] = max(0, min(layer[j] for j in users[i]) - 1)
    return layer


def _add_dummies(boxes: list[Box], index: dict[str, int], edges: Sequence[tuple[str, str]],
                 layer: list[int]) -> list[list[int]]:
    """Split every edge into one-layer steps; returns each edge's chain of box indices."""
    chains = []
    for u, v in edges:
        chain = [index[u]]
        span = layer[index[v]] - layer[index[u]]
        for lay in range(layer[index[u]] + 1, layer[index[v]]) if span <= MAX_SPAN else ():
            boxes.append(Box(f"~{u}>{v}@{lay}", DUMMY_WIDTH, 0.0, dummy=True))
            layer.append(lay)
            chain.append(len(boxes) - 1)
        chain.append(index[v])
        for a, b in pairwise(chain):
            boxes[a].succs.append(b)
            boxes[b].preds.append(a)
        chains.append(chain)
    return chains


def _order(boxes: list[Box], layers: list[list[int]]) -> None:
    pos = {i: float(k) for row in layers for k, i in enumerate(row)}
    for sweep in range(2 * ROUNDS):
        down = sweep % 2 == 0
        rows = range(1, len(layers)) if down else range(len(layers) - 2, -1, -1)
        for r in rows:
            bary = {i: _mean([pos[j] for j in (boxes[i].preds if down else boxes[i].succs)],
                             pos[i]) for i in layers[r]}
            layers[r] = _sorted_with_groups(boxes, layers[r], bary)
            pos.update({i: float(k) for k, i in enumerate(layers[r])})


def _sorted_with_groups(boxes: list[Box], row: list[int], bary: dict[int, float]) -> list[int]:
    """Sort by barycenter; members of one fusion group together, at their mean."""
    group_pos: dict[int, list[float]] = {}
    for i in row:
        if boxes[i].group >= 0:
            group_pos.setdefault(boxes[i].group, []).append(bary[i])
    def key(i: int) -> tuple[float, int, float]:
        g = boxes[i].group
        return (_mean(group_pos[g], 0.0), g, bary[i]) if g >= 0 else (bary[i], -1, bary[i])
    return sorted(row, key=key)


def _place_x(boxes: list[Box], layers: list[list[int]]) -> None:
    for row in layers:
        x = 0.0
        for i in row:
            boxes[i].x = x + boxes[i].width / 2
            x += boxes[i].width + GAP_X
    for sweep in range(2 * ROUNDS + 1):
        down = sweep % 2 == 0
        rows = range(len(layers)) if down else range(len(layers) - 1, -1, -1)
        for r in rows:
            row = layers[r]
            both = sweep == 2 * ROUNDS  # the last round balances inputs and users
            targets = []
            for i in row:
                b = boxes[i]
                near = b.preds + b.succs if both else (b.preds if down else b.succs)
                targets.append(_mean([boxes[j].x for j in near], b.x))
            for i, x in zip(row, _closest_spaced(row, boxes, targets), strict=True):
                boxes[i].x = x


def _closest_spaced(row: list[int], boxes: list[Box], targets: list[float]) -> list[float]:
    """x minimizing the squared distance to `targets` with the row's order and spacing:
    with offsets o_k (the packed positions), y = x - o must be non-decreasing, an
    isotonic regression solved by pooling adjacent violators."""
    offsets = [0.0]
    for a, b in pairwise(row):
        offsets.append(offsets[-1] + (boxes[a].width + boxes[b].width) / 2 + GAP_X)
    blocks: list[list[float]] = []   # [sum of values, count]
    for t, o in zip(targets, offsets, strict=True):
        blocks.append([t - o, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    ys: list[float] = []
    for s, n in blocks:
        ys.extend([s / n] * int(n))
    return [y + o for y, o in zip(ys, offsets, strict=True)]


def _place_y(boxes: list[Box], layers: list[list[int]]) -> float:
    y = 0.0
    for row in layers:
        tallest = max((boxes[i].height for i in row), default=0.0)
        for i in row:
            boxes[i].y = y + (tallest - boxes[i].height) / 2
        y += tallest + GAP_Y
    return max(y - GAP_Y, 0.0)


def _normalize_x(boxes: list[Box]) -> float:
    if not boxes:
        return 0.0
    left = min(b.x - b.width / 2 for b in boxes)
    for b in boxes:
        b.x -= left
    return max(b.x + b.width / 2 for b in boxes)


def _route(boxes: list[Box], chain: list[int]) -> list[tuple[float, float]]:
    first, last = boxes[chain[0]], boxes[chain[-1]]
    points = [(first.x, first.y + first.height)]
    points += [(boxes[i].x, boxes[i].y) for i in chain[1:-1]]
    points.append((last.x, last.y))
    return points


def _mean(values: list[float], default: float) -> float:
    return sum(values) / len(values) if values else default

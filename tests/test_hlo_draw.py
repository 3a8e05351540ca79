"""HloModule.to_dot / to_svg (our own layered layout), TRACER_DUMP_DIR's files."""

from __future__ import annotations

import gc
import math
import re
import time
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.core import Literal, Var
from tracer.dump import DumpWarning
from tracer.hlo_draw import MAX_DRAWN

SVG = "{http://www.w3.org/2000/svg}"


def _softmax_mlp(w, b, x):
    h = tnp.tanh(x @ w + b)
    e = tnp.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _looped(x):
    def body(c):
        i, y = c
        return i + 1, tnp.sin(y) * 0.5 + y
    return ops.while_loop(lambda c: c[0] < 3, body, (0, x))[1].sum()


ARGS = (np.ones((3, 2)), np.ones(2), np.ones((4, 3)))


def _dependencies(graph):
    """(producer eqn index, consumer eqn index) pairs: the oracle for the drawn edges."""
    where = {id(v): k for k, e in enumerate(graph.eqns) for v in e.outputs}
    return {(where[id(a)], k) for k, e in enumerate(graph.eqns) for a in e.inputs
            if isinstance(a, Var) and id(a) in where}


def _rects(svg_text, cls):
    root = ET.fromstring(svg_text)
    found = {}
    for g in root.iter(SVG + "g"):
        if g.get("class") == cls:
            key = g.get("data-key") or g.get("data-members")
            found[key] = [tuple(float(r.get(a)) for a in ("x", "y", "width", "height"))
                          for r in g.iter(SVG + "rect")]
    return found


def _overlap(a, b):
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def test_dot_has_one_node_per_instruction_and_the_graph_edges():
    module = tr.make_hlo(_softmax_mlp)(*ARGS)
    graph = module.graph
    dot = module.to_dot()
    assert dot.startswith('digraph "jit__softmax_mlp"') and dot.rstrip().endswith("}")
    nodes = re.findall(r"^\s*(n\d+) \[label=", dot, re.MULTILINE)
    assert len(nodes) == len(graph.inputs) + len(graph.eqns) + 1  # + ROOT
    edges = set(re.findall(r"^\s*(n\d+) -> (n\d+);", dot, re.MULTILINE))
    first = len(graph.inputs)
    eqn_edges = {(int(u[1:]) - first, int(v[1:]) - first) for u, v in edges
                 if int(u[1:]) >= first and int(v[1:]) < first + len(graph.eqns)}
    assert eqn_edges == _dependencies(graph)


def test_svg_is_layered_without_overlaps():
    module = tr.make_hlo(_softmax_mlp)(*ARGS)
    svg = module.to_svg()
    nodes = _rects(svg, "node")
    assert len(nodes) == len(module.graph.inputs) + len(module.graph.eqns) + 1
    boxes = [r[0] for r in nodes.values()]
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    root = ET.fromstring(svg)
    for path in root.iter(SVG + "path"):
        if path.get("class") == "edge":  # every edge runs downward, input to user
            ys = [float(y) for y in re.findall(r"[\d.]+,([\d.]+)", path.get("d"))]
            assert ys[0] < ys[-1]


def test_fusion_groups_are_boxed_without_covering_other_nodes():
    compiled = tr.jit(_softmax_mlp).lower(*ARGS).compile()
    module = compiled.hlo
    assert module.fusion and max(map(len, module.fusion)) >= 5  # bias, tanh, softmax fused
    svg = module.to_svg()
    nodes, groups = _rects(svg, "node"), _rects(svg, "fusion")
    assert groups
    for members, bands in groups.items():
        for key, (box,) in nodes.items():
            if key not in members.split():
                assert not any(_overlap(box, band) for band in bands), key


def test_control_flow_bodies_are_clusters():
    module = tr.make_hlo(_looped)(np.ones(4))
    dot = module.to_dot()
    assert re.search(r'subgraph cluster_\w+ \{\n\s*label="while body"', dot)
    assert "lhead=cluster_" in dot
    svg = module.to_svg()
    assert 'class="cluster"' in svg and "while body" in svg
    ET.fromstring(svg)  # well-formed


def test_a_graph_too_large_to_draw_gives_a_summary_note():
    def chain(x):
        for _ in range(40):
            x = tnp.sin(x) * 2.0
        return x
    module = tr.make_hlo(chain)(np.ones(3))
    note = module.to_svg(max_instructions=50)
    assert "81 instructions, too many to draw (limit 50)" in note
    assert "sine 40" in note and 'class="node"' not in note
    assert MAX_DRAWN == 5000
    assert len(re.findall(r"-> ", module.to_dot())) == 81  # DOT keeps every edge


def test_layout_work_grows_about_linearly():
    def chain(n):
        def f(x, y):
            for i in range(n):
                x = tnp.sin(x) * y + (x if i % 3 else y)  # y feeds every layer
            return x
        return tr.make_hlo(f)(np.ones(3), np.ones(3))
    small, large = chain(50), chain(400)
    times = [_layout_seconds(module) for module in (small, large)]
    assert times[1] < 30 * times[0] + 1.0  # 8x the instructions, far from 64x


def _layout_seconds(module) -> float:  # noqa: ANN001
    """The best of three layouts with the collector off: the layout's own work, not a
    full collection of a long test process's heap (seconds, in CI) landing in one."""
    best = math.inf
    gc.disable()
    try:
        for _ in range(3):
            start = time.perf_counter()
            module.to_svg()
            best = min(best, time.perf_counter() - start)
    finally:
        gc.enable()
    return best


def test_literals_join_their_consumers_label():
    module = tr.make_hlo(lambda x: x * 2.5 + 1.0)(np.ones(3))
    assert any(isinstance(a, Literal) for e in module.graph.eqns for a in e.inputs)
    svg = module.to_svg()
    assert "multiply 2.5" in svg and "add 1.0" in svg


def test_dump_dir_writes_hlo_dot_and_source(tmp_path):
    with tr.config.override(dump_dir=str(tmp_path)):
        f = tr.jit(_softmax_mlp)
        np.testing.assert_allclose(f(*ARGS).sum(axis=1), np.ones(4))
    names = {p.name for p in tmp_path.iterdir()}
    texts = sorted(n for n in names if n.endswith(".hlo.txt"))
    assert texts[0] == "jit__softmax_mlp.00.input.hlo.txt" and len(texts) >= 2
    for text in texts:
        assert text.replace(".hlo.txt", ".dot") in names
    assert "jit__softmax_mlp.cpu.py" in names
    assert "@numba" in (tmp_path / "jit__softmax_mlp.cpu.py").read_text() or \
        "def main" in (tmp_path / "jit__softmax_mlp.cpu.py").read_text()


def test_an_unwritable_dump_dir_warns_once(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with tr.config.override(dump_dir=str(blocker / "dumps")), warnings.catch_warnings(
            record=True) as caught:
        warnings.simplefilter("always")
        first = tr.jit(lambda x: tnp.sin(x) * 2.0)(np.arange(3.0))
        second = tr.jit(lambda x: tnp.cos(x) + 1.0)(np.arange(3.0))
    np.testing.assert_allclose(first, np.sin(np.arange(3.0)) * 2)
    np.testing.assert_allclose(second, np.cos(np.arange(3.0)) + 1)
    dumped = [w for w in caught if issubclass(w.category, DumpWarning)]
    assert len(dumped) == 1 and "cannot be written" in str(dumped[0].message)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_reprs_show_signature_graph_and_source(backend):
    f = tr.jit(_softmax_mlp, backend=backend)
    f(*ARGS)
    f(*(a.astype(np.float32) for a in ARGS))
    page = f._repr_html_()
    assert page.count("<svg") >= 1 and "f64[3,2], f64[2], f64[4,3]" in page
    assert "f32[3,2], f32[2], f32[4,3]" in page and "<table" in page
    lowered = f.lower(*ARGS)
    assert "<svg" in lowered._repr_html_() and "before passes" in lowered._repr_html_()
    compiled = lowered.compile()
    html = compiled._repr_html_()
    assert "<svg" in html and "<details>" in html
    assert "generated source" in html and "def " in html
    assert "<svg" in lowered.hlo._repr_html_()
    info = f.cache_info()._repr_html_()
    assert "<table" in info and "misses" in info

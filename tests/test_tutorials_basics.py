"""The first tutorials (quickstart, NumPy front end, transformations, control flow,
the ops tour) run on a fresh compile cache and show their stored outputs;
one of them exported to HTML holds the graph as inline SVG.

(The tutorials are split over two test files so that pytest-xdist's `--dist loadfile`
runs them on two workers.)"""

from __future__ import annotations

import pytest

from tests.tutorial_runner import NOTEBOOKS, TUTORIALS, run_tutorial

BASICS = [n for n in NOTEBOOKS if n[:2] in ("01", "02", "03", "04", "07", "11")]


@pytest.mark.parametrize("name", BASICS)
def test_tutorial_runs_and_shows_its_stored_outputs(name, fresh_cache, monkeypatch):
    run_tutorial(name, fresh_cache, monkeypatch)


@pytest.fixture(scope="module")
def fresh_cache(tmp_path_factory):
    """One empty compile cache for this file's notebooks (a reader's first run)."""
    return tmp_path_factory.mktemp("tutorial-cache")


def test_there_are_at_least_eight_numbered_tutorials():
    assert len(NOTEBOOKS) >= 8
    assert [n[:2] for n in NOTEBOOKS] == [f"{k:02d}" for k in range(1, len(NOTEBOOKS) + 1)]


def test_exported_html_holds_the_graph_as_inline_svg():
    nbconvert = pytest.importorskip("nbconvert")
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(TUTORIALS / "01_quickstart.ipynb", as_version=4)
    html, _ = nbconvert.HTMLExporter().from_notebook_node(notebook)
    assert html.count('class="tracer-hlo-graph"') >= 3  # make_hlo, compiled, the jitted fn
    start = html.index("<svg")  # (nbconvert re-serializes the markup: attribute order varies)
    assert "</svg>" in html[start:] and 'class="node"' in html[start:]
    assert "fusion 0" in html  # the compiled stage boxes its fused loop nest

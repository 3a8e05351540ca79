"""The later tutorials (training an MLP and a convnet, tracer.random, performance and
the profiler, the CUDA backend under numba's simulator, host callbacks) run on a fresh
compile cache and show their stored outputs (see tests/tutorial_runner.py)."""

from __future__ import annotations

import pytest

from tests.tutorial_runner import NOTEBOOKS, run_tutorial

MODELS = [n for n in NOTEBOOKS if n[:2] not in ("01", "02", "03", "04", "07", "11")]


@pytest.mark.parametrize("name", MODELS)
def test_tutorial_runs_and_shows_its_stored_outputs(name, fresh_cache, monkeypatch):
    run_tutorial(name, fresh_cache, monkeypatch)


@pytest.fixture(scope="module")
def fresh_cache(tmp_path_factory):
    """One empty compile cache for this file's notebooks (a reader's first run)."""
    return tmp_path_factory.mktemp("tutorial-cache")

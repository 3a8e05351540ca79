"""Test-wide settings: runtime checks on, hypothesis without deadlines (CI is noisy)."""

import os
import tempfile

import pytest

from hypothesis import settings

# Derandomized by default so CI is reproducible; TRACER_HYPOTHESIS_RANDOM=1 (with more
# TRACER_HYPOTHESIS_EXAMPLES) explores new examples when hunting for bugs.
settings.register_profile("tracer", deadline=None, print_blob=True,
                          derandomize=os.environ.get("TRACER_HYPOTHESIS_RANDOM") != "1",
                          max_examples=int(os.environ.get("TRACER_HYPOTHESIS_EXAMPLES", "40")))
settings.load_profile("tracer")

os.environ.setdefault("TRACER_RUNTIME_CHECKS", "1")
# The suite tests compiled code: every jit call compiles before it returns (the async
# tier has its own tests, tests/test_tiers.py, which switch it on).
os.environ.setdefault("TRACER_COMPILE_MODE", "sync")
os.environ.setdefault("TRACER_PROGRESS", "0")
# pytest -n runs a worker per core: idle pool threads that spin (tracer's default,
# `cpu/threads.py`) would take the time the other workers need.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# A fresh compile cache per run, so results never depend on what an earlier run left.
os.environ.setdefault("TRACER_CACHE_DIR", tempfile.mkdtemp(prefix="tracer-test-cache-"))


def pytest_collection_modifyitems(config, items):
    """`slow_ports` tests run only when `-m` names them (they are kept out of CI)."""
    if "slow_ports" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="a slow JAX port: run with -m slow_ports")
    for item in items:
        if "slow_ports" in item.keywords:
            item.add_marker(skip)

# JAX's example programs, stored as they are (2-space indents, control_test's absltest
# class): tests/test_ported_jax_programs.py runs them, pytest does not collect them.
collect_ignore_glob = ["jax_examples/*"]

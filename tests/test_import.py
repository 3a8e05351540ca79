"""What `import tracer` loads: no compiler (numba, llvmlite), no SciPy, no process pools,
and neither the namespaces, op families nor the drawing and compiling code a program may
never use; they load on first use, and every public name still resolves."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Slow stdlib and third-party modules, and tracer's modules loaded on first use.
DEFERRED = ["numba", "llvmlite", "scipy", "numpy.random", "multiprocessing",
            "concurrent.futures", "subprocess", "logging", "hashlib", "asyncio",
            "tracer.random", "tracer.nn", "tracer.scipy", "tracer.test_util",
            "tracer.hlo_draw.svg", "tracer.hlo_draw.layout", "tracer.passes",
            "tracer.backend.numba.fusion", "tracer.distributed.host_ops",
            "tracer.backend.cpu.lib.mkl", "tracer.backend.cpu.lib.fft_mkl",
            "tracer.backend.cpu.lib.cblas",
            "tracer.numpy.linalg", "tracer.numpy.fft", "tracer.numpy._quantile",
            "tracer.numpy._stats", "tracer.numpy._einsum", "tracer.ops.decomp",
            "tracer.ops.fft", "tracer.ops.conv", "tracer.ops.window", "tracer.ops.rng"]

PROGRAM = f"""
import json, sys
import tracer as tr
before = [m for m in {DEFERRED!r} if m in sys.modules]
key = tr.random.key(0)
from tracer import nn
after = [m for m in ("tracer.random", "tracer.nn") if m in sys.modules]
print(json.dumps([before, after, bool(nn.relu(-1.0) == 0.0), "scipy" in dir(tr)]))
"""

# Every name the lazy modules give; read in a fresh process so nothing was loaded before.
NAMES = """
import importlib, json, tracer, tracer.numpy as tnp, tracer.ops as ops
def defined_in(name, module):
    got, own = getattr(tnp, name), getattr(importlib.import_module("tracer.numpy." + module), name)
    return got is own or getattr(got, "__wrapped__", None) is own
wrong = [n for n, m in tnp._LAZY_MODULE_OF.items() if not defined_in(n, m)]
print(json.dumps([wrong, sorted(ops.__all__), len(ops.OPS), tnp.linalg.__name__,
                  tnp.fft.__name__, ops.fft.__module__]))
"""


def _run(program: str) -> list:
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, "-c", program], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_tracer_defers_the_compiler_and_the_optional_namespaces():
    before, after, relu_ok, listed = _run(PROGRAM)
    assert before == []
    assert after == ["tracer.random", "tracer.nn"] and relu_ok and listed


def test_lazy_names_resolve_to_the_modules_that_define_them():
    import tracer.numpy as tnp
    import tracer.ops as tops

    wrong, ops_all, n_ops, linalg, fft, fft_op = _run(NAMES)
    assert wrong == []
    for module, names in tnp._LAZY_NAMES.items():
        # (the list in tracer/numpy/__init__.py is each module's __all__, kept by hand)
        exported = importlib.import_module(f"tracer.numpy.{module}").__all__
        assert [n for n in names if n != "WeightsSumToZeroError"] == exported
    expected_ops = {"OPS", "Op"}
    eager = ("elementwise", "shape", "linalg", "reduce", "control", "indexing", "scatter",
             "collectives", "sort", "misc", "tokens")
    for module in tops._LAZY + eager:
        expected_ops |= set(importlib.import_module(f"tracer.ops.{module}").__all__)
    assert set(ops_all) == expected_ops and len(ops_all) == len(expected_ops)
    assert n_ops == len(tops.OPS)  # (reading OPS imports every family)
    assert (linalg, fft, fft_op) == ("tracer.numpy.linalg", "tracer.numpy.fft", "tracer.ops.fft")

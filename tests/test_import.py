"""What `import tracer` loads: no compiler (numba, llvmlite), no SciPy, and neither the
namespaces nor the drawing code a program may never use; they load on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFERRED = ["numba", "llvmlite", "scipy", "tracer.random", "tracer.nn", "tracer.scipy",
            "tracer.test_util", "tracer.hlo_draw.svg", "tracer.hlo_draw.layout"]

PROGRAM = f"""
import json, sys
import tracer as tr
before = [m for m in {DEFERRED!r} if m in sys.modules]
key = tr.random.key(0)
from tracer import nn
after = [m for m in ("tracer.random", "tracer.nn") if m in sys.modules]
print(json.dumps([before, after, bool(nn.relu(-1.0) == 0.0), "scipy" in dir(tr)]))
"""


def test_import_tracer_defers_the_compiler_and_the_optional_namespaces():
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    before, after, relu_ok, listed = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == []
    assert after == ["tracer.random", "tracer.nn"] and relu_ok and listed

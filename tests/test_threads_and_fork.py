"""A jitted function whose kernel runs on numba's thread pool, called from two Python
threads at once and from processes forked after it ran (multiprocessing's default on
Linux), on the threading layer numba picks and on `workqueue` (not thread-safe).
Each scenario runs in its own process: the failures being guarded against abort it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PRELUDE = """
import numba, numpy as np, tracer as tr, tracer.numpy as tnp
f = tr.jit(lambda x: tnp.sum(tnp.sin(x) * 2.0, axis=0))  # a threaded column reduction
x = np.linspace(0.0, 1.0, 1 << 17).reshape(-1, 8)
want = np.sum(np.sin(x) * 2.0, axis=0)
assert np.allclose(f(x), want)
print("layer", numba.threading_layer(), flush=True)
"""

THREADS = PRELUDE + """
import threading
bad = []
g = tr.jit(lambda v: tnp.max(tnp.cos(v), axis=0))  # first called by both threads at once
def run():
    if not np.allclose(g(x), np.max(np.cos(x), axis=0)):
        bad.append(1)
    for _ in range(30):
        if not np.allclose(f(x), want):
            bad.append(1)
ts = [threading.Thread(target=run) for _ in range(2)]
[t.start() for t in ts]
[t.join() for t in ts]
print("threads", "wrong" if bad else "ok")
"""

FORK = PRELUDE + """
import multiprocessing as mp
def child(k):
    return bool(np.allclose(f(x * k), np.sum(np.sin(x * k) * 2.0, axis=0)))
with mp.get_context("fork").Pool(2) as pool:
    print("pool", pool.map(child, [1.0, 0.5, 2.0], chunksize=1))
pid = os.fork()
if pid == 0:
    os._exit(0 if child(3.0) else 3)
print("fork status", os.waitpid(pid, 0)[1])
"""

# the same after the parent's entry got a C guard, which calls the pool's code directly:
# the child must not (GNU OpenMP would terminate it), and gets a Python guard again
C_GUARD_FORK = PRELUDE.replace("assert np.allclose", """
from tracer import guards
guards.PROMOTE_AFTER = guards.PROMOTE_AFTER_COMPILED = guards.PROMOTE_AFTER_THREADED = 0
for _ in range(3):
    assert np.allclose""", 1) + """
print("c guard", f._last.c_guard is not None)
""" + FORK.split(PRELUDE, 1)[1]


def run(code: str, layer: str | None) -> str:
    env = {**os.environ, "PYTHONPATH": ROOT, "NUMBA_NUM_THREADS": "2"}
    env.pop("NUMBA_THREADING_LAYER", None)
    if layer:
        env["NUMBA_THREADING_LAYER"] = layer
    proc = subprocess.run([sys.executable, "-c", "import os\n" + textwrap.dedent(code)],
                          env=env, capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("layer", [None, "workqueue"])
def test_two_threads_call_one_threaded_function(layer):
    out = run(THREADS, layer)
    assert "threads ok" in out, out


@pytest.mark.parametrize("layer", [None, "workqueue"])
def test_forked_children_after_a_threaded_kernel(layer):
    out = run(FORK, layer)
    assert "pool [True, True, True]" in out and "fork status 0" in out, out


@pytest.mark.parametrize("layer", [None, "workqueue"])
def test_forked_children_after_a_c_guard_served_a_threaded_kernel(layer):
    """(workqueue: no C guard for a threaded kernel, whose calls need the pool's lock)"""
    out = run(C_GUARD_FORK, layer)
    assert f"c guard {layer is None}" in out, out
    assert "pool [True, True, True]" in out and "fork status 0" in out, out


SPIN = """
import os, tracer.backend.cpu.threads
print("spin", os.environ.get("GOMP_SPINCOUNT"), os.environ.get("OMP_WAIT_POLICY"))
"""


@pytest.mark.parametrize("user, want", [({}, "spin 10000 None"),
                                        ({"OMP_WAIT_POLICY": "PASSIVE"}, "spin None PASSIVE"),
                                        ({"GOMP_SPINCOUNT": "5"}, "spin 5 None")])
def test_idle_threads_spin_briefly_unless_the_user_chose_how_they_wait(user, want):
    """Before libgomp loads, tracer asks its idle threads to spin a short while (waking
    sleeping ones cost a region ~90 us); a wait policy or spin count the user set stays."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    proc = subprocess.run([sys.executable, "-c", SPIN], env={**env, "PYTHONPATH": ROOT, **user},
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.split("\n")[0] == want, proc.stdout + proc.stderr

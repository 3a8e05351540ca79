"""How many times numba compiles for a fixed set of programs (a count, not a timing).

A fresh process with an empty cache runs the programs below; numba's own
`numba:compile` events count every function it compiles (generated modules and the
helper-library kernels they call; loads from the disk cache are not events). A change
that makes tracer compile more (a kernel no longer shared, a module per batch size, a
library kernel compiled twice) raises the count past its budget here. A second process
with the filled cache must compile nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAMS = textwrap.dedent("""
    import json
    import numba.core.event as ev
    import numpy as np
    import tracer as tr, tracer.numpy as tnp
    from tracer.backend.cpu.backend import compile_count

    def mlp(act):
        def loss(w1, w2, x):
            return tnp.sum(act(tnp.tanh(x @ w1) @ w2) ** 2)
        return tr.jit(tr.value_and_grad(loss, argnums=(0, 1)))

    def rnn(w, xs):
        h, _ = tr.ops.scan(lambda h, x: (tnp.tanh(h @ w + x), None), xs[0] * 0, xs)
        return h

    def softmax(x):
        e = tnp.exp(x - tnp.max(x, axis=-1, keepdims=True))
        return e / tnp.sum(e, axis=-1, keepdims=True)

    r = np.random.default_rng(0)
    w1, w2 = r.random((6, 5)), r.random((5, 3))
    with ev.install_recorder("numba:compile") as rec:
        mlp(tnp.tanh)(w1, w2, r.random((4, 6)))
        mlp(tnp.tanh)(w1, w2, r.random((9, 6)))     # another batch size: no new module
        mlp(tnp.sin)(w1, w2, r.random((4, 6)))      # one op edited: one new module
        tr.jit(rnn)(r.random((5, 5)), r.random((7, 3, 5)))
        tr.jit(softmax)(r.random((3, 8)).astype(np.float32))
    starts = [e for _, e in rec.buffer if e.is_start]
    print(json.dumps({"numba": len(starts), "modules": compile_count()}))
""")

# Today's counts on an empty cache: generated modules (one per program structure) and
# every function numba compiles for them, the helper libraries' kernels included (their
# machine code lives in the cache directory too). Lower them when a change compiles less.
# (The BLAS binding, cpu/lib/cblas, compiles `blas_matmul` once per operand layout seen,
# C or F, shared by every later program: 9 of the 29.)
MODULES = 4
NUMBA_BUDGET = 29


def _run(cache_dir: str) -> dict:
    env = dict(os.environ, PYTHONPATH=REPO, TRACER_CACHE_DIR=cache_dir,
               TRACER_COMPILE_MODE="sync", NUMBA_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", PROGRAMS], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_numba_compiles_each_program_structure_once_within_budget(tmp_path):
    cold = _run(str(tmp_path))
    assert cold["modules"] == MODULES, cold
    assert MODULES <= cold["numba"] <= NUMBA_BUDGET, cold
    warm = _run(str(tmp_path))
    assert warm == {"numba": 0, "modules": 0}, warm

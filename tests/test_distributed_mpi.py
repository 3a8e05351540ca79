"""Collectives across real MPI processes: `mpiexec -n 2` and `-n 4` (oversubscribed on
two cores, one numba thread per rank), each run under a timeout. The replicas check
their results against NumPy folds of every replica's input (`distributed_worker.py`);
failing replicas must end the job with a clear error, never hang."""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytest.importorskip("mpi4py", reason="needs the mpi extra (CI installs it with test)")
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
    shutil.which("mpiexec")
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install mpich)")


def _mpiexec(n: int, scenario: str, timeout: float) -> tuple[int, str, float]:
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    start = time.monotonic()
    done = subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-m",
                           "tests.distributed_worker", scenario], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - start


def _expected_digests() -> set[str]:
    """What every job must print for `check_all_reduce_same_for_any_process_count`: the
    NumPy results of replicas 0 and 1's data (the others hold zeros; the sizes and data
    of `distributed_worker.SAME_SIZES` and `pair_data`)."""
    lines = set()
    for size in (5, 1000, 50_001):
        x0, x1 = (np.random.default_rng(r).standard_normal(size).astype(np.float32)
                  for r in (0, 1))
        for name, value in (("add", x0 + x1), ("sub", x0 - x1)):
            lines.add(f"DIGEST {name} {size} "
                      f"{hashlib.blake2b(value.tobytes(), digest_size=8).hexdigest()}")
    return lines


def test_collectives_across_processes():
    """-n 2, then -n 4 on the same compile cache: the second job's compiled all-reduce
    is numba's machine code from the disk cache (MPI's C API named by symbol only)."""
    for n in (2, 4):
        rc, out, _ = _mpiexec(n, "checks", timeout=240)
        assert rc == 0, out[-4000:]
        digests = set(re.findall(r"DIGEST \w+ \d+ [0-9a-f]{16}", out))  # (lines interleave)
        assert digests == _expected_digests(), out[-4000:]  # the same bytes for -n 2 and 4
        for check in ("all_reduce_bit_equal", "all_reduce_same_for_any_process_count",
                      "collectives_in_jit", "grad_and_loops", "pmap",
                      "mismatch_raises_everywhere", "compiled_all_reduce", "send_recv",
                      "cuda_backend", "properties"):
            assert out.count(f"PASS {check} ") == n, (check, out[-4000:])
    assert out.count("ENTRY float32 cached") == 4, out[-4000:]


def test_a_raising_replica_fails_the_others_with_its_error():
    rc, out, took = _mpiexec(2, "fail_raise", timeout=120)
    assert rc != 0
    assert "ReplicaError: all_reduce: rank 1 failed: RuntimeError: replica one gave up" in out
    assert took < 60, took


def test_a_stuck_replica_trips_the_watchdog():
    rc, out, took = _mpiexec(2, "fail_stuck", timeout=120)
    assert rc != 0
    assert "ReplicaError: all_reduce: rank 0 waited 1 s for the other replicas" in out
    assert took < 45, took  # the stuck rank sleeps 60 s: the abort ended it


def test_a_killed_replica_ends_the_job():
    rc, out, took = _mpiexec(2, "fail_die", timeout=120)
    assert rc != 0 and "BAD TERMINATION" in out, out[-2000:]
    assert took < 60, took

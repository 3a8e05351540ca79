"""The simulator the cuda tests run on (`tests/cuda_simulator.py`): a block's threads
share one static shared array per source line, however their allocations interleave."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

pytest.importorskip("numba_cuda", reason="numba-cuda is not installed (the cuda extra)")

from numba.cuda.simulator import kernelapi  # noqa: E402

from tests import cuda_simulator  # noqa: E402


class _SlowAllocations:
    """NumPy with an `empty` that yields the interpreter: every thread of a block reaches
    the allocation before any stores it (the interleaving CI met once in a while)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(*args, **kwargs):
        time.sleep(0.002)
        return np.empty(*args, **kwargs)


@pytest.mark.skipif(os.environ.get("TRACER_CUDA_REAL") == "1",
                    reason="a run on a GPU does not patch the simulator")
def test_threads_allocating_together_share_one_shared_array(monkeypatch):
    monkeypatch.setattr(kernelapi, "np", _SlowAllocations())
    monkeypatch.setattr(cuda_simulator, "np", _SlowAllocations())
    shared = kernelapi.FakeCUDAShared(0)
    start, arrays = threading.Barrier(8), [None] * 8

    def thread(i):
        start.wait()
        arrays[i] = shared.array(16, np.float32)

    threads = [threading.Thread(target=thread, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(a) for a in arrays}) == 1

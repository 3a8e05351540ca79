"""Backend tests run the cuda backend on numba's CUDA simulator (CI has no GPU):
`tests.cuda_simulator.use()` switches it on here, before any test module imports
numba.cuda; `TRACER_CUDA_REAL=1` keeps the real GPU (run the same tests on a machine
with one). The PTX test's compile job starts in the background as soon as collection
has selected that test.
"""

import os
import sys

import pytest

from tests import cuda_simulator

cuda_simulator.use()


def pytest_collection_finish(session):
    """Start the PTX compile job of cuda/test_ptx.py in the background once collection has
    selected its test (not under pytest-xdist, whose workers each collect every test)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is not None or session.config.option.collectonly:
        return
    for item in session.items:
        if item.name == "test_every_generated_kernel_compiles_to_ptx_for_sm90":
            item.module.start_job()
            return


@pytest.fixture(scope="module")
def simulator_threads():
    """Switch threads every 0.1 ms (Python's default: 5 ms) while a module of simulator
    tests runs: each simulated CUDA thread is a Python thread, and the simulator's block
    scheduler polls them while holding the interpreter lock, so with the default each
    launch waits out whole intervals (4x slower)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    yield
    sys.setswitchinterval(interval)

"""numba's CUDA simulator for the tests that run the cuda backend without a GPU.

`NUMBA_ENABLE_CUDASIM` is read when numba.cuda is imported, so `use()` must run
before any test module imports it; `TRACER_CUDA_REAL=1` keeps the real GPU.

The simulator (numba-cuda 0.30) runs each CUDA thread as a Python thread and gives a
block's threads one static shared array per source line: the first thread to reach
the line allocates it, with a dict lookup and then a store. Two threads that both
pass the lookup before either stores each allocate one, and the first keeps a
private copy for the rest of the launch; a block's tree reduction then loses that
thread's partial sums (a fresh-clone CI run saw two of three row sums at about half:
the rows of the launch's first block). `_shared_array` allocates with one atomic
`dict.setdefault` instead; everything else is the simulator's own.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np


def use() -> None:
    if os.environ.get("TRACER_CUDA_REAL") == "1" or importlib.util.find_spec("numba_cuda") is None:
        return
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    if "numba" in sys.modules and "numba.cuda" not in sys.modules:
        import numba  # already imported: make numba.cuda see the variable when it loads

        numba.core.config.reload_config()
    from numba.cuda.simulator import kernelapi

    kernelapi.FakeCUDAShared.array = _shared_array_of(kernelapi.FakeCUDAShared.array)


def _shared_array_of(simulator_array):
    from numba.core import types
    from numba.np import numpy_support

    def _shared_array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # (dynamic shared memory: no allocation)
            return simulator_array(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        site = (caller.f_code.co_filename, caller.f_lineno)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        return self._allocations.setdefault(site, np.empty(shape, dtype))

    return _shared_array

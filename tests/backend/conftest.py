"""Backend tests run the cuda backend on numba's CUDA simulator (CI has no GPU).

`NUMBA_ENABLE_CUDASIM` is read when numba.cuda is imported, so it is set here,
before any test module imports it; `TRACER_CUDA_REAL=1` keeps the real GPU
(run the same tests on a machine with one).
"""

import os
import sys

if os.environ.get("TRACER_CUDA_REAL") != "1":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    if "numba" in sys.modules and "numba.cuda" not in sys.modules:
        import numba  # already imported: make numba.cuda see the variable when it loads

        numba.core.config.reload_config()

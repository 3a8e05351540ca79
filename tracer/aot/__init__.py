"""`tracer.aot`: ahead-of-time compilation, the seeds' tfcompile for tracer programs.

    tracer.aot.compile(f, tr.ShapedArray((2, 3), np.float32), tr.ShapedArray((3, 2), np.float32),
                       name="matmul", out_dir="build")
    # or: python -m tracer.aot model:f --arg f32[2,3] --arg f32[3,2] --name matmul --out-dir build

writes `matmul.py` (NumPy + numba, no tracer; helpers in `matmul_lib/`) and, as
tfcompile's `tf_library`, `matmul.h`, `libmatmul.so`, `matmul_test.c` and
`matmul_benchmark.c`, which a C compiler builds and runs with no Python.
"""

from .build import compile, parse_aval_spec

__all__ = ["compile", "parse_aval_spec"]

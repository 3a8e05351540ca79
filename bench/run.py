"""Run every benchmark: `python -m bench.run` (ratios from one run are what to compare).

Each module also runs alone: `python -m bench.bench_conv`, `python -m bench.bench_cuda`
(only where a GPU is present), `python -m bench.bench_mpi` (with the mpi extra), ...
"""

import importlib.util

from bench import (bench_callbacks, bench_conv, bench_cpu, bench_cuda, bench_dispatch,
                   bench_export, bench_fft, bench_indexing, bench_linalg, bench_mpi, bench_numpy,
                   bench_random, bench_transforms, bench_window)

if __name__ == "__main__":
    bench_dispatch.overhead()
    bench_dispatch.trace_time()
    bench_transforms.main()
    bench_cpu.main([])
    bench_conv.main([])
    bench_window.main([])
    bench_indexing.main([])
    bench_linalg.main([])
    bench_fft.main([])
    bench_random.main()
    bench_callbacks.main()
    bench_numpy.main([])
    bench_export.main()
    bench_cuda.main([])
    if importlib.util.find_spec("mpi4py"):  # the mpi extra: mpiexec jobs of 1, 2, 4 ranks
        bench_mpi.main()

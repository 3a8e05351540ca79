"""Run every benchmark: `python -m bench.run` (ratios from one run are what to compare)."""

from bench import bench_cpu, bench_dispatch, bench_transforms

if __name__ == "__main__":
    bench_dispatch.overhead()
    bench_dispatch.trace_time()
    bench_transforms.main()
    bench_cpu.main([])

"""Run every benchmark: `python -m bench.run`."""

from bench import bench_dispatch

if __name__ == "__main__":
    bench_dispatch.overhead()
    bench_dispatch.trace_time()

"""Benchmarks: tracer beside its peers, ratios from one run (`python -m bench.run`)."""

import os

# The benchmarks time compiled code: every jit call compiles before it returns
# (bench_latency measures tracer's default compile_mode itself, in child processes).
os.environ.setdefault("TRACER_COMPILE_MODE", "sync")

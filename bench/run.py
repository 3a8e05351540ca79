"""Run the benchmarks, then print the at-a-glance table (tracer, each peer, the ratio to
the best peer, the bound) and, with `--json`, save everything measured.

    python -m bench.run                          # every suite
    python -m bench.run cpu conv transforms      # some suites
    python -m bench.run cpu:gelu,softmax conv    # cpu's workloads whose name has gelu or softmax
    python -m bench.run cpu --json bench.json    # and the whole result set as JSON

Ratios from one run are what to compare. Each module also runs alone:
`python -m bench.bench_conv`, `python -m bench.bench_cuda` (only where a GPU is
present), `python -m bench.bench_mpi` (with the mpi extra), ... `docs/performance.md`
says how to read the table and what each workload stands for.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import shutil
import tempfile
from types import ModuleType
from typing import Callable

from bench import summary
from bench.common import RECORDS


def _filtered(name: str) -> Callable[[ModuleType, list[str]], None]:
    return lambda module, selected: getattr(module, name)(selected)


def _dispatch(module: ModuleType, selected: list[str]) -> None:
    module.one_element()
    module.overhead()
    module.call_parts()
    module.trace_time()


# suite -> (module, how to run it with the workload filters given after "suite:")
SUITES: dict[str, tuple[str, Callable[[ModuleType, list[str]], None]]] = {
    "dispatch": ("bench_dispatch", _dispatch),
    "transforms": ("bench_transforms", _filtered("main")),
    "cpu": ("bench_cpu", _filtered("main")),
    "conv": ("bench_conv", _filtered("main")),
    "window": ("bench_window", _filtered("main")),
    "indexing": ("bench_indexing", _filtered("main")),
    "linalg": ("bench_linalg", _filtered("main")),
    "fft": ("bench_fft", _filtered("main")),
    "random": ("bench_random", lambda module, selected: module.main()),
    "callbacks": ("bench_callbacks", lambda module, selected: module.main()),
    "numpy": ("bench_numpy", _filtered("main")),
    "export": ("bench_export", lambda module, selected: module.main()),
    "cuda": ("bench_cuda", _filtered("main")),
    "mpi": ("bench_mpi", lambda module, selected: module.main([])),
}


def _fresh_caches() -> str:
    """Point every compile cache (tracer's, TorchInductor's, PyTensor's, numba's) at a new
    directory, so first calls are cold compiles for every framework alike."""
    root = tempfile.mkdtemp(prefix="tracer-bench-")
    os.environ["TRACER_CACHE_DIR"] = os.path.join(root, "tracer")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(root, "inductor")
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(root, "numba")
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    os.environ["PYTENSOR_FLAGS"] = ",".join(
        f for f in (flags, f"base_compiledir={os.path.join(root, 'pytensor')}") if f)
    return root


def _limit_threads(n: int) -> None:
    """Every framework's thread pools to `n` threads (a loaded machine punishes pools that
    spin: one thread each is the fair comparison there), set before any is imported, and
    the process to `n` CPUs: a pool no variable sizes (XLA's) shares those too."""
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cpus[:n])
    for var in ("NUMBA_NUM_THREADS", "TRACER_NUM_THREADS", "OMP_NUM_THREADS",
                "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TRACER_BENCH_TORCH_THREADS"):
        os.environ[var] = str(n)
    flags = os.environ.get("XLA_FLAGS", "")
    if n == 1:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*", metavar="SUITE[:WORKLOAD,...]",
                        help=f"some of: {', '.join(SUITES)} (default: all)")
    parser.add_argument("--json", metavar="PATH", help="save every measurement as JSON")
    parser.add_argument("--warm-caches", action="store_true",
                        help="keep the compile caches the environment names (first calls "
                             "may then be cache hits)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="limit every framework (tracer, numba, BLAS, OpenMP, torch, XLA) "
                             "to N threads")
    opts = parser.parse_args(argv)
    for suite in opts.suites:
        if suite.split(":")[0] not in SUITES:
            parser.error(f"unknown suite {suite!r}; the suites: {', '.join(SUITES)}")
    return opts


def main(argv: list[str] | None = None) -> None:
    opts = _parse(argv)
    if opts.threads:
        _limit_threads(opts.threads)
    root = None if opts.warm_caches else _fresh_caches()
    try:
        for suite in opts.suites or list(SUITES):
            name, _, workloads = suite.partition(":")
            if name == "mpi" and not importlib.util.find_spec("mpi4py"):
                print("note: mpi suite skipped (the mpi extra installs mpi4py)")
                continue
            module_name, run = SUITES[name]
            run(importlib.import_module(f"bench.{module_name}"),
                [w for w in workloads.split(",") if w])
    finally:
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
    print("\n" + summary.format_table([summary.summarize(r) for r in RECORDS]))
    if opts.json:
        from bench import machine  # NumPy (and its BLAS threads) only after _limit_threads
        summary.write_json(opts.json, RECORDS, machine.describe())
        print(f"saved {len(RECORDS)} workloads to {opts.json}")


if __name__ == "__main__":
    main()

"""Replicas on MPI: all-reduce against mpi4py, data-parallel MLP training.

    python -m bench.bench_mpi            # launches mpiexec -n 1, 2, 4 and prints the tables

Each job (one numba thread per rank, oversubscribed past the machine's cores) times,
in the same run, an all-reduce of 1, 2^16 and 2^22 float32 through tracer (`jit` of
`ops.all_reduce`, with and without the signature check) and through mpi4py's own
`Allreduce` on NumPy buffers, and the ways compiled code can reach MPI: a host step
(numba object mode, what tracer does) or MPI's C `MPI_Allreduce` through a ctypes
function pointer. Then it trains the MLP 784-256-128-10 (global batch 128, SGD,
gradients summed by one all-reduce) and reports throughput against one process
and the final weights' distance to the one-process run on the same global batches.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

SIZES = (1, 1 << 16, 1 << 22)
BATCH, LAYERS, STEPS, LR = 128, (784, 256, 128, 10), 30, np.float32(0.05)


# ------------------------------------------------------------------ inside the job
def _paired(comm: Any, fns: dict[str, Callable[[], Any]], number: int,
            rounds: int = 7) -> dict[str, float]:
    """Seconds per call of each fn (the slowest rank's), the median of `rounds` rounds
    in which every fn runs one synchronized loop in turn: paired, so load that comes
    and goes hits them alike."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append(comm.allreduce((time.perf_counter() - t0) / number, op=_max()))
    return {name: float(np.median(t)) for name, t in times.items()}


def _max() -> Any:
    from mpi4py import MPI
    return MPI.MAX


def _c_allreduce(comm: Any) -> Callable[[np.ndarray, np.ndarray, int], Any]:
    """An njit loop calling MPI_Allreduce through a ctypes function pointer."""
    import ctypes

    import numba
    from mpi4py import MPI
    with open("/proc/self/maps") as maps:
        path = next(line.split()[-1] for line in maps if "libmpi" in line)
    fn = ctypes.CDLL(path).MPI_Allreduce
    handle = ctypes.c_int32 if MPI._sizeof(MPI.Comm) == 4 else ctypes.c_int64
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, handle, handle, handle]
    fn.restype = ctypes.c_int
    f32, total, world = MPI._handleof(MPI.FLOAT), MPI._handleof(MPI.SUM), MPI._handleof(comm)

    @numba.njit
    def run(x, out, times):
        for _ in range(times):
            fn(x.ctypes.data, out.ctypes.data, x.size, f32, total, world)
        return out
    return run


def _host_step_allreduce(comm: Any) -> Callable[[np.ndarray, np.ndarray, int], Any]:
    """An njit loop that leaves compiled code (object mode) for mpi4py's Allreduce."""
    import numba

    def host(x: np.ndarray, out: np.ndarray) -> None:
        comm.Allreduce(x, out)

    @numba.njit
    def run(x, out, times):
        for _ in range(times):
            with numba.objmode():
                host(x, out)
        return out
    return run


def _unchecked(step: Callable[[np.ndarray], Any], x: np.ndarray) -> Any:
    import tracer as tr
    with tr.config.override(distributed_checks=False):
        return step(x)


def _size_row(comm: Any, size: int, step: Callable[[np.ndarray], Any],
              c_loop: Callable[..., Any], host_loop: Callable[..., Any]) -> dict[str, float]:
    x = np.full(size, comm.rank + 1, np.float32)
    y = np.empty_like(x)
    fns = {"mpi4py Allreduce": lambda: comm.Allreduce(x, y),
           "tracer all_reduce": lambda: step(x),
           "tracer, checks off": lambda: _unchecked(step, x),
           "njit -> C MPI_Allreduce": lambda: c_loop(x, y, 1),
           "njit -> host step -> mpi4py": lambda: host_loop(x, y, 1)}
    return _paired(comm, fns, max(3, min(500, (1 << 24) // (size * 16))))


def allreduce_rows(comm: Any) -> dict[str, dict[str, float]]:
    import tracer as tr
    from tracer import ops
    c_loop, host_loop = _c_allreduce(comm), _host_step_allreduce(comm)
    step = tr.jit(lambda v: ops.all_reduce(v))
    return {str(size): _size_row(comm, size, step, c_loop, host_loop) for size in SIZES}


def init_params() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    params = []
    for a, b in itertools.pairwise(LAYERS):
        params += [(rng.standard_normal((a, b)) * np.sqrt(2 / a)).astype(np.float32),
                   np.zeros(b, np.float32)]
    return params


def batches() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((STEPS, BATCH, LAYERS[0])).astype(np.float32)
    y = np.eye(LAYERS[-1], dtype=np.float32)[rng.integers(0, LAYERS[-1], (STEPS, BATCH))]
    return x, y


def make_step(replicas: int) -> Callable[..., Any]:
    """One SGD step on this replica's rows; the gradients of the global mean loss are
    summed across replicas by one all-reduce of their concatenation."""
    import tracer as tr
    import tracer.numpy as tnp
    from tracer import ops

    def loss(params, x, y):
        h = x
        for i in range(0, len(params) - 2, 2):
            h = tnp.maximum(h @ params[i] + params[i + 1], 0.0)
        logits = h @ params[-2] + params[-1]
        top = tnp.max(logits, axis=1, keepdims=True)
        logp = logits - top - tnp.log(tnp.sum(tnp.exp(logits - top), axis=1, keepdims=True))
        return -tnp.sum(logp * y) / BATCH  # the global batch's mean: the sum is global

    def step(params, x, y):
        grads = tr.grad(loss)(params, x, y)
        if replicas > 1:
            flat = ops.all_reduce(tnp.concatenate([g.reshape(-1) for g in grads]))
            cuts = np.cumsum([g.size for g in grads])[:-1]
            grads = [f.reshape(g.shape) for f, g in zip(tnp.split(flat, cuts), grads,
                                                          strict=True)]
        return [p - LR * g for p, g in zip(params, grads, strict=True)]
    return tr.jit(step)


def train(comm: Any) -> tuple[float, list[np.ndarray]]:
    """Seconds per step (slowest rank) and the final weights."""
    n, r = comm.size, comm.rank
    rows = slice(r * BATCH // n, (r + 1) * BATCH // n)
    xs, ys = batches()
    step = make_step(n)
    step(init_params(), xs[0, rows], ys[0, rows])  # compile
    comm.Barrier()
    t0 = time.perf_counter()
    params = init_params()
    for s in range(STEPS):
        params = step(params, xs[s, rows], ys[s, rows])
    seconds = comm.allreduce((time.perf_counter() - t0) / STEPS, op=_max())
    return seconds, [np.asarray(p) for p in params]


def worker(outdir: str) -> None:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rows = allreduce_rows(comm) if comm.size > 1 else {}
    seconds, params = train(comm)
    if comm.rank == 0:
        np.savez(os.path.join(outdir, f"weights_{comm.size}.npz"), *params)
        with open(os.path.join(outdir, f"times_{comm.size}.json"), "w") as f:
            json.dump({"allreduce": rows, "step": seconds}, f)


# ------------------------------------------------------------------ the launcher
def _run_job(n: int, outdir: str) -> None:
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec"
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run([mpiexec, "-n", str(n), sys.executable, "-m", "bench.bench_mpi", "--worker",
                    outdir], check=True, env=env, timeout=1200)


def _print_allreduce(n: int, rows: dict[str, dict[str, float]]) -> None:
    for size, row in rows.items():
        base = row["mpi4py Allreduce"]
        print(f"\nall-reduce of {size} float32 on {n} processes")
        for name, seconds in row.items():
            print(f"  {name:<30} {seconds * 1e6:12.1f} µs   x{seconds / base:6.2f} vs mpi4py")


def main() -> None:
    outdir = tempfile.mkdtemp(prefix="bench-mpi-")
    counts = (1, 2, 4)
    for n in counts:
        _run_job(n, outdir)
    times = {}
    for n in counts:
        with open(os.path.join(outdir, f"times_{n}.json")) as f:
            times[n] = json.load(f)
    for n in counts[1:]:
        _print_allreduce(n, times[n]["allreduce"])
    one = np.load(os.path.join(outdir, "weights_1.npz"))
    print(f"\nMLP {'-'.join(map(str, LAYERS))}, global batch {BATCH}, {STEPS} SGD steps")
    for n in counts:
        step = times[n]["step"]
        speedup = times[1]["step"] / step
        w = np.load(os.path.join(outdir, f"weights_{n}.npz"))
        diff = max(float(np.max(np.abs(w[k] - one[k])) / np.max(np.abs(one[k]))) for k in one)
        print(f"  {n} process(es): {step * 1e3:8.2f} ms/step  {BATCH / step:9.0f} samples/s  "
              f"speedup x{speedup:5.2f}  efficiency {speedup / n:5.2f}  "
              f"weights vs 1 process: max rel diff {diff:.1e}")
    shutil.rmtree(outdir, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2])
    else:
        main()

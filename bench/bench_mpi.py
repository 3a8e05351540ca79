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

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

SIZES = (1, 1 << 16, 1 << 22)
BATCH, LAYERS, STEPS, LR = 128, (784, 256, 128, 10), 30, np.float32(0.05)


# ------------------------------------------------------------------ inside the job
def _timed(comm: Any, fn: Callable[[], Any], number: int, rounds: int = 5) -> float:
    """Seconds per call, the slowest rank's, median of `rounds` synchronized loops."""
    fn()
    times = []
    for _ in range(rounds):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append(comm.allreduce((time.perf_counter() - t0) / number, op=_max()))
    return float(np.median(times))


def _max() -> Any:
    from mpi4py import MPI
    return MPI.MAX


def _c_allreduce(comm: Any) -> Callable[[np.ndarray, np.ndarray, int], Any]:
    """An njit loop calling MPI_Allreduce through a ctypes function pointer."""
    import ctypes

    import numba
    from mpi4py import MPI
    path = next(line.split()[-1] for line in open("/proc/self/maps") if "libmpi" in line)
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


def allreduce_rows(comm: Any) -> dict[str, dict[str, float]]:
    import tracer as tr
    from tracer import ops
    out: dict[str, dict[str, float]] = {}
    c_loop, host_loop = _c_allreduce(comm), _host_step_allreduce(comm)
    step = tr.jit(lambda v: ops.all_reduce(v))
    for size in SIZES:
        x = np.full(size, comm.rank + 1, np.float32)
        y = np.empty_like(x)
        number = max(3, min(2000, (1 << 24) // (size * 16)))
        row = {"mpi4py Allreduce": _timed(comm, lambda: comm.Allreduce(x, y), number),
               "tracer all_reduce": _timed(comm, lambda: step(x), number)}
        with tr.config.override(distributed_checks=False):
            row["tracer, checks off"] = _timed(comm, lambda: step(x), number)
        row["njit -> C MPI_Allreduce"] = _timed(comm, lambda: c_loop(x, y, 1), number)
        row["njit -> host step -> mpi4py"] = _timed(comm, lambda: host_loop(x, y, 1), number)
        out[str(size)] = row
    return out


def init_params() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    params = []
    for a, b in zip(LAYERS[:-1], LAYERS[1:], strict=True):
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
    times = {n: json.load(open(os.path.join(outdir, f"times_{n}.json"))) for n in counts}
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

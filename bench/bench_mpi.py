"""Replicas on MPI: all-reduce against mpi4py, data-parallel MLP training.

    python -m bench.bench_mpi            # launches mpiexec -n 1, 2, 4 and prints the tables
    python -m bench.bench_mpi --allreduce 2 4   # only the all-reduce tables, on 2 and 4

Each job (one numba thread per rank, oversubscribed past the machine's cores) times,
in the same run, an all-reduce of 1, 2^16, the MLP's gradient (235,146) and 2^22
float32 against mpi4py's own `Allreduce` on NumPy buffers in a Python loop (`ROWS`
says what each figure contains). Ratios are paired: each round times every way in
turn, and the ratio to mpi4py is the median over rounds of that round's ratio (a
shared machine's load moves within seconds). Then it trains the MLP 784-256-128-10
(global batch 128, SGD, gradients summed by one all-reduce) and reports throughput
against one process (one numba/BLAS thread, and two), the final weights' distance to
the one-process run on the same global batches, and what data parallelism costs a
step: the same step without the all-reduce, on the same rows, timed in the same
rounds (wall and CPU).
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

BATCH, LAYERS, STEPS, LR = 128, (784, 256, 128, 10), 30, np.float32(0.05)
GRADIENT = sum(a * b + b for a, b in itertools.pairwise(LAYERS))  # the MLP's, all-reduced
SIZES = (1, 1 << 16, GRADIENT, 1 << 22)
ROWS = """\
  mpi4py Allreduce               a Python call each: mpi4py + MPICH's MPI_Allreduce (which
                                 may reassociate the sum by size and process count)
  tracer, a jit call each        a call of jit(all_reduce) each: the call's dispatch (~4 us
                                 for any jitted function) + the compiled all-reduce
                                 (signature check, fixed-order fold, MPI from compiled code)
  tracer, k in one fori_loop     per all-reduce of k >= 16 in one jit call (fori_loop):
                                 the compiled all-reduce, a fresh result buffer each, and
                                 a k-th of the call and of copying out the last result
  checks off                     the same with config.distributed_checks = False
  njit -> C MPI_Allreduce        per call of k in an njit loop: MPICH's own algorithm
                                 reached from compiled code (a ctypes pointer: not cacheable)
  njit -> object mode -> mpi4py  per call of k in an njit loop: what leaving compiled code
                                 for Python costs (the old host step's road)
  a jit call of v + 1 (no MPI)   what any jit call costs with this operand (dispatch, one
                                 pass over it): the part of the first tracer row that is
                                 not the all-reduce"""


# ------------------------------------------------------------------ inside the job
def _paired(comm: Any, loops: dict[str, Callable[[int], Any]], number: int,
            rounds: int = 25) -> dict[str, list[float]]:
    """Seconds per call of each way (the slowest rank's) in each of `rounds` rounds in
    which every way runs one synchronized loop of `number` calls in turn: paired, so
    load that comes and goes hits them alike."""
    for loop in loops.values():
        loop(1)
    times: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(rounds):
        for name, loop in loops.items():
            comm.Barrier()
            t0 = time.perf_counter()
            loop(number)
            times[name].append(comm.allreduce((time.perf_counter() - t0) / number, op=_max()))
    return times


def _ratios(times: dict[str, list[float]], base: str) -> dict[str, list[float]]:
    """Per fn: [median seconds, median over rounds of the ratio to `base` in that round,
    best round over best round (what a call costs when no other job gets in the way)]."""
    ref = np.array(times[base])
    return {name: [float(np.median(t)), float(np.median(np.array(t) / ref)),
                   float(np.min(t) / np.min(ref))] for name, t in times.items()}


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


def _repeat(count: int, fn: Callable[..., Any], *args: Any) -> None:
    for _ in range(count):
        fn(*args)


def _unchecked(fn: Callable[..., Any], *args: Any) -> None:
    """`fn(*args)` with the signature check off (set once per loop: the switch costs µs)."""
    import tracer as tr
    with tr.config.override(distributed_checks=False):
        fn(*args)


def _size_row(comm: Any, size: int, ways: dict[str, Callable[..., Any]]) -> dict[str, list[float]]:
    x = np.full(size, comm.rank + 1, np.float32)
    y = np.empty_like(x)
    call, loop = ways["call"], ways["loop"]
    loops = {"mpi4py Allreduce": lambda k: _repeat(k, comm.Allreduce, x, y),
             "tracer, a jit call each": lambda k: _repeat(k, call, x),
             "  checks off": lambda k: _unchecked(_repeat, k, call, x),
             "tracer, k in one fori_loop": lambda k: loop(x, k),
             "  checks off ": lambda k: _unchecked(loop, x, k),
             "njit -> C MPI_Allreduce": lambda k: ways["c"](x, y, k),
             "njit -> object mode -> mpi4py": lambda k: ways["host"](x, y, k),
             "a jit call of v + 1 (no MPI)": lambda k: _repeat(k, ways["plus"], x)}
    # At least 16 calls a loop: the fori_loop row's one jit call and copy of its result
    # then add a sixteenth or less (with 2 they were half of a large operand's figure).
    number = max(16, min(200, (1 << 22) // (size * 16)))
    return _ratios(_paired(comm, loops, number, rounds=25 if size < 1 << 20 else 9),
                   "mpi4py Allreduce")


def allreduce_rows(comm: Any) -> dict[str, dict[str, list[float]]]:
    import tracer as tr
    from tracer import ops
    ways = {"c": _c_allreduce(comm), "host": _host_step_allreduce(comm),
            "call": tr.jit(lambda v: ops.all_reduce(v)), "plus": tr.jit(lambda v: v + 1),
            # k all-reduces of the same operand in one call (collectives are never hoisted)
            "loop": tr.jit(lambda v, k: ops.fori_loop(0, k, lambda i, acc: ops.all_reduce(v),
                                                      v))}
    return {str(size): _size_row(comm, size, ways) for size in SIZES}


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


def _run_steps(comm: Any, step: Callable[..., Any], rows: slice) -> tuple[float, float,
                                                                        list[np.ndarray]]:
    """STEPS steps from the initial weights: (wall seconds a step, the slowest rank's;
    CPU seconds a step, the ranks' mean; the final weights)."""
    xs, ys = batches()
    params = init_params()
    comm.Barrier()
    t0, c0 = time.perf_counter(), time.thread_time()
    for s in range(STEPS):
        params = step(params, xs[s, rows], ys[s, rows])
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    return (comm.allreduce(wall / STEPS, op=_max()), comm.allreduce(cpu / STEPS) / comm.size,
            [np.asarray(p) for p in params])


def train(comm: Any, rounds: int = 7) -> tuple[dict[str, float], list[np.ndarray]]:
    """Step times (medians over paired rounds) and the final weights. With several
    replicas each round also runs the same step without the all-reduce on the same rows
    ("local"): the difference is what data parallelism costs a step here (the
    all-reduce's host step, the gradients' concatenation, waiting for the others)."""
    n, r = comm.size, comm.rank
    rows = slice(r * BATCH // n, (r + 1) * BATCH // n)
    xs, ys = batches()
    steps = {"step": make_step(n)} | ({"local": make_step(1)} if n > 1 else {})
    for step in steps.values():
        step(init_params(), xs[0, rows], ys[0, rows])  # compile
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in steps}
    weights: list[np.ndarray] = []
    for _ in range(rounds):
        for name, step in steps.items():
            wall, cpu, params = _run_steps(comm, step, rows)
            runs[name].append((wall, cpu))
            weights = params if name == "step" else weights
    times = {}
    for name, pairs in runs.items():
        times[name], times[f"{name} cpu"] = (float(v) for v in np.median(pairs, axis=0))
    if n > 1:
        cost = np.array(runs["step"]) - np.array(runs["local"])
        times["overhead"], times["overhead cpu"] = (float(v) for v in np.median(cost, axis=0))
    return times, weights


def worker(outdir: str, tag: str, allreduce_only: bool) -> None:
    import tracer as tr
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    # Steady state: a first call compiles before it returns (the default answers from the
    # interpreter while numba compiles in the background, which the first rounds timed).
    tr.config.update("compile_mode", "sync")
    rows = allreduce_rows(comm) if comm.size > 1 else {}
    times, params = ({}, []) if allreduce_only else train(comm)
    if comm.rank == 0:
        np.savez(os.path.join(outdir, f"weights_{tag}.npz"), *params)
        with open(os.path.join(outdir, f"times_{tag}.json"), "w") as f:
            json.dump({"allreduce": rows, "train": times}, f)


# ------------------------------------------------------------------ the launcher
def _run_job(n: int, threads: int, outdir: str, allreduce_only: bool) -> str:
    """Run one job; its results are in `outdir` under the returned tag."""
    tag = f"{n}x{threads}"
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec"
    env = {**os.environ, "NUMBA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    subprocess.run([mpiexec, "-n", str(n), sys.executable, "-m", "bench.bench_mpi", "--worker",
                    outdir, tag] + (["--allreduce"] if allreduce_only else []),
                   check=True, env=env, timeout=1200)
    return tag


def _print_allreduce(n: int, rows: dict[str, dict[str, list[float]]]) -> None:
    print(f"\nwhat each all-reduce figure contains:\n{ROWS}")
    for size, row in rows.items():
        print(f"\nall-reduce of {size} float32 on {n} processes (vs mpi4py: the median of "
              f"paired rounds' ratios; best round / best round)")
        for name, (seconds, ratio, best) in row.items():
            print(f"  {name:<30} {seconds * 1e6:12.1f} µs   x{ratio:6.2f}   best x{best:6.2f}")


def _print_training(outdir: str, runs: dict[str, dict[str, float]]) -> None:
    one = np.load(os.path.join(outdir, "weights_1x1.npz"))
    base = runs["1x1"]["step"]
    print(f"\nMLP {'-'.join(map(str, LAYERS))}, global batch {BATCH}, {STEPS} SGD steps "
          f"(medians of paired rounds; CPU: per rank)")
    for tag, t in runs.items():
        n, threads = map(int, tag.split("x"))
        w = np.load(os.path.join(outdir, f"weights_{tag}.npz"))
        diff = max(float(np.max(np.abs(w[k] - one[k])) / np.max(np.abs(one[k]))) for k in one)
        print(f"  {n} process(es) x {threads} thread(s): {t['step'] * 1e3:7.2f} ms/step "
              f"(CPU {t['step cpu'] * 1e3:5.2f})  {BATCH / t['step']:7.0f} samples/s  "
              f"speedup x{base / t['step']:5.2f}  efficiency {base / t['step'] / n:5.2f}  "
              f"weights vs 1 process: max rel diff {diff:.1e}")
        if n > 1:
            print(f"      the same step without the all-reduce: {t['local'] * 1e3:7.2f} ms "
                  f"(CPU {t['local cpu'] * 1e3:5.2f}); data parallelism costs "
                  f"{t['overhead'] * 1e3:6.2f} ms a step (CPU {t['overhead cpu'] * 1e3:5.2f})")


def main(argv: list[str]) -> None:
    allreduce_only = argv[:1] == ["--allreduce"]
    counts = [int(a) for a in argv[1:]] if allreduce_only else [1, 2, 4]
    jobs = [(n, 1) for n in counts] + ([] if allreduce_only else [(1, 2)])
    outdir = tempfile.mkdtemp(prefix="bench-mpi-")
    results = {}
    for n, threads in jobs:
        tag = _run_job(n, threads, outdir, allreduce_only)
        with open(os.path.join(outdir, f"times_{tag}.json")) as f:
            results[tag] = json.load(f)
    for tag, result in results.items():
        if result["allreduce"]:
            _print_allreduce(int(tag.split("x")[0]), result["allreduce"])
    if not allreduce_only:
        _print_training(outdir, {tag: r["train"] for tag, r in results.items()})
    shutil.rmtree(outdir, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3], sys.argv[4:5] == ["--allreduce"])
    else:
        main(sys.argv[1:])

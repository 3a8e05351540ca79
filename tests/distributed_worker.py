"""One replica of the MPI tests (`tests/test_distributed_mpi.py` starts it under
`mpiexec -n N`). Every replica builds every replica's input from its rank, so it
checks its own results against NumPy folds of all of them, in group order.

Usage: python -m tests.distributed_worker SCENARIO; prints "PASS <name>" per check.
"""

from __future__ import annotations

import functools
import os
import sys
import time

from tests import cuda_simulator

cuda_simulator.use()  # the cuda backend on numba's simulator, as tests/backend/ runs it

import numpy as np  # noqa: E402

import tracer as tr  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from tracer import ops  # noqa: E402

N, R = tr.process_count(), tr.process_index()


def data(rank: int, shape: tuple[int, ...], dtype: type = np.float32) -> np.ndarray:
    return np.random.default_rng(rank).standard_normal(shape).astype(dtype)


def fold(arrays: list[np.ndarray]) -> np.ndarray:
    acc = np.array(arrays[0])
    for a in arrays[1:]:
        acc = acc + a
    return acc


def gathered_bytes(x: np.ndarray) -> list[bytes]:
    from mpi4py import MPI
    return MPI.COMM_WORLD.allgather(np.ascontiguousarray(x).tobytes())


def ok(name: str) -> None:
    print(f"PASS {name} rank {R}", flush=True)


def check_all_reduce_bit_equal() -> None:
    """Small (gather) and large (all-to-all) paths: the same bytes on every replica,
    equal to folding the replicas' inputs in replica order."""
    for size in (7, 50_000):
        out = tr.jit(lambda x: ops.all_reduce(x))(data(R, (size,)))
        expected = fold([data(r, (size,)) for r in range(N)])
        assert np.array_equal(out, expected), (size, np.abs(out - expected).max())
        assert len(set(gathered_bytes(out))) == 1
    ok("all_reduce_bit_equal")


SAME_SIZES = (5, 1000, 50_001)  # the paths: in the signature slot, all-gathered, all-to-all


def pair_data(rank: int, size: int) -> np.ndarray:
    """What replica `rank` holds so that every job holds the same data: replicas 0 and 1
    hold data(0) and data(1), any others the identity of the sum (zeros)."""
    return data(rank, (size,)) if rank < 2 else np.zeros(size, np.float32)


def check_all_reduce_same_for_any_process_count() -> None:
    """On equal data a job of any size gives the same bytes: rank 0 prints a digest of
    each result, which the test compares across -n 2 and -n 4 and with NumPy."""
    import hashlib
    for size in SAME_SIZES:
        for name, fun in (("add", lambda v: ops.all_reduce(v)),
                          ("sub", lambda v: ops.all_reduce(v, lambda a, b: a - b))):
            out = np.asarray(tr.jit(fun)(pair_data(R, size)))
            assert len(set(gathered_bytes(out))) == 1
            if R == 0:
                digest = hashlib.blake2b(out.tobytes(), digest_size=8).hexdigest()
                print(f"DIGEST {name} {size} {digest}", flush=True)
    ok("all_reduce_same_for_any_process_count")


def check_collectives_in_jit() -> None:
    groups = [[r, (r + N // 2) % N] for r in range(N // 2)] if N > 2 else [[1, 0]]
    group = next(g for g in groups if R in g)
    x = data(R, (N * 2, 3))

    @tr.jit
    def f(x):
        return (ops.cross_replica_sum(x, replica_groups=groups),
                ops.all_gather(x, 1, replica_groups=groups),
                ops.reduce_scatter(x, ops.max, 0),
                ops.all_to_all(x, 0, 1),
                ops.collective_permute(x, [(r, (r + 1) % N) for r in range(N - 1)]),
                ops.replica_id())
    s, g, rs, a2a, perm, rid = f(x)
    for mine, reference in zip(f(x), tr.jit(f.fun, backend="interpreter")(x),
                               strict=True):
        np.testing.assert_array_equal(mine, reference)  # the cpu backend's host steps
    xs = [data(r, (N * 2, 3)) for r in range(N)]
    np.testing.assert_array_equal(s, fold([xs[r] for r in group]))
    np.testing.assert_array_equal(g, np.concatenate([xs[r] for r in group], axis=1))
    np.testing.assert_array_equal(rs, np.maximum.reduce(xs)[2 * R:2 * R + 2])
    np.testing.assert_array_equal(a2a, np.concatenate([x_[2 * R:2 * R + 2] for x_ in xs], 1))
    np.testing.assert_array_equal(perm, xs[R - 1] if R > 0 else np.zeros_like(x))
    assert rid == R and rid.dtype == np.uint32
    for size in (3, 40_000):  # a computation that is not associative: the fold's order
        diff = tr.jit(lambda v: ops.all_reduce(v, lambda a, b: a - b))(data(R, (size,)))
        np.testing.assert_array_equal(diff, functools.reduce(
            np.subtract, [data(r, (size,)) for r in range(N)]))
    ok("collectives_in_jit")


def check_grad_and_loops() -> None:
    """Data-parallel gradient: psum of per-replica grads in a fori_loop, under grad."""
    w0 = np.linspace(-1, 1, 5).astype(np.float32)
    xs = [data(r, (4, 5)) for r in range(N)]

    def loss(w, x):
        return tnp.sum(tnp.tanh(x @ w) ** 2)

    @tr.jit
    def train(w, x):
        def body(i, w):
            g = ops.all_reduce(tr.grad(loss)(w, x)) / N
            return w - 0.1 * g
        return ops.fori_loop(0, 3, body, w)
    w = train(w0, xs[R])
    w_ref = w0
    for _ in range(3):
        g = fold([np.asarray(tr.grad(loss)(w_ref, x)) for x in xs]) / np.float32(N)
        w_ref = w_ref - np.float32(0.1) * g
    np.testing.assert_allclose(w, w_ref, rtol=1e-5, atol=1e-6)
    assert len(set(gathered_bytes(w))) == 1
    taken = tr.jit(lambda x: ops.cond(x[0] > -100.0, lambda v: ops.all_reduce(v),
                                      lambda v: v, x))(xs[R][0])
    np.testing.assert_array_equal(taken, fold([x[0] for x in xs]))
    per_row = tr.jit(tr.vmap(lambda v: ops.all_reduce(v)))(xs[R])  # vmap over another axis
    np.testing.assert_array_equal(per_row, fold(xs))
    ok("grad_and_loops")


def check_pmap() -> None:
    x = np.arange(N * 3, dtype=np.float32).reshape(N, 3)

    def f(v):
        return v * ops.all_reduce(v, axis_name="i") + ops.replica_id("i").astype(np.float32)
    np.testing.assert_array_equal(tr.pmap(f, axis_name="i")(x),
                                  tr.vmap(f, axis_name="i")(x))
    ok("pmap")


def check_mismatch_raises_everywhere() -> None:
    for others in (4, 100_000):  # both small; small on rank 0 and large on the others
        x = np.ones(3 if R == 0 else others, np.float32)
        try:
            ops.all_reduce(x)
        except tr.TracerError as e:
            text = str(e)
            assert "all_reduce" in text and "ranks [0]" in text and "float32[3]" in text, text
        else:
            raise AssertionError("a mismatched all_reduce did not raise")
    y = np.ones(3, np.float32)
    try:  # another op order: rank 0 gathers where the others reduce
        tr.jit(lambda v: ops.all_gather(v, 0) if R == 0 else ops.all_reduce(v))(y)
    except tr.TracerError as e:
        assert "all_gather" in str(e) and "all_reduce" in str(e) and "ranks [0]" in str(e), e
    else:
        raise AssertionError("collectives entered in another order did not raise")
    np.testing.assert_array_equal(ops.all_reduce(np.ones(2, np.float32)), np.full(2, N))
    ok("mismatch_raises_everywhere")


def check_compiled_all_reduce() -> None:
    """The all-reduce that compiled code runs itself (MPI's C API, no host step): every
    reduction, scalars and 2-d operands, the three paths with the check off, a
    fori_loop of them (each counted by the signature's sequence), float32 and int32,
    mixed with host steps on another replica, against NumPy folds in replica order;
    replicas that compile different shapes raise on every rank; the machine code comes
    from numba's disk cache in a later job."""
    from tracer.backend.numba.lib import mpi
    from tracer.distributed.job import current_job
    x = data(R, (4, 3))
    xs = [data(r, (4, 3)) for r in range(N)]
    folds = {ops.add: np.add, ops.mul: np.multiply, ops.max: np.maximum, ops.min: np.minimum}
    every = tr.jit(lambda v, s: ([ops.all_reduce(v, c) for c in folds], ops.all_reduce(s)))
    assert every.lower(x, np.float32(0)).compile().source.count("mpi_all_reduce(") == 5
    reduced, total = every(x, np.float32(R + 0.5))
    for got, reference in zip(reduced, folds.values(), strict=True):
        np.testing.assert_array_equal(got, functools.reduce(reference, xs))
    assert total.dtype == np.float32 and total == fold([np.float32(r + 0.5) for r in range(N)])
    wide = np.arange(N * 700, dtype=np.int32) * (R + 1)
    np.testing.assert_array_equal(tr.jit(lambda v: ops.all_reduce(v))(wide),
                                  np.arange(N * 700, dtype=np.int32) * sum(range(1, N + 1)))
    with tr.config.override(distributed_checks=False):  # the three paths, unchecked
        paths = tr.jit(lambda *vs: [ops.all_reduce(v) for v in vs])
        for got, size in zip(paths(*[data(R, (n,)) for n in SAME_SIZES]), SAME_SIZES,
                             strict=True):
            np.testing.assert_array_equal(got, fold([data(r, (size,)) for r in range(N)]))
    compiled = tr.jit(lambda v: ops.all_reduce(v))
    for size in SAME_SIZES:  # replica 0 on the host road, the others compiled: one protocol
        v = data(R, (size,))
        np.testing.assert_array_equal(ops.all_reduce(v) if R == 0 else compiled(v),
                                      fold([data(r, (size,)) for r in range(N)]))
    before = current_job().sequence
    halved = tr.jit(lambda v: ops.fori_loop(0, 5, lambda i, a: ops.all_reduce(a) * 0.5, v))
    expected = fold(xs) * np.float32(0.5)
    for _ in range(4):  # (then every replica holds the same value)
        expected = fold([expected] * N) * np.float32(0.5)
    np.testing.assert_array_equal(halved(x), expected)
    assert current_job().sequence - before == 5
    for others in (4, 100_000):  # tiny on every rank; tiny on rank 0, large elsewhere
        try:
            tr.jit(lambda v: ops.all_reduce(v))(np.ones(3 if R == 0 else others, np.float32))
        except tr.TracerError as e:
            text = str(e)
            assert "all_reduce" in text and "ranks [0]" in text and "float32[3]" in text, text
        else:
            raise AssertionError("replicas that compiled different shapes did not raise")
    entry = mpi._published[np.dtype(np.float32)]
    print(f"ENTRY float32 {'cached' if entry.cache_hits else 'compiled'} rank {R}", flush=True)
    ok("compiled_all_reduce")


def check_send_recv() -> None:
    """Send/Recv pair by channel across replicas: a ring where every replica sends
    before it receives (small and large: no deadlock), and one pair (others: zeros)."""
    ring = [(r, (r + 1) % N) for r in range(N)]

    @tr.jit
    def f(x, y):
        t = ops.send(x, ops.create_token(), 5, source_target_pairs=ring)
        t = ops.send(y, t, 6, source_target_pairs=[(0, N - 1)])
        a, t = ops.recv(tr.ShapedArray(x.shape, x.dtype), t, 5, source_target_pairs=ring)
        b, _ = ops.recv(tr.ShapedArray(y.shape, y.dtype), t, 6,
                        source_target_pairs=[(0, N - 1)])
        return a, b
    for size in (3, 200_000):
        a, b = f(data(R, (size,)), np.full(2, R + 1, np.int32))
        np.testing.assert_array_equal(a, data((R - 1) % N, (size,)))
        np.testing.assert_array_equal(b, np.full(2, 1 if R == N - 1 else 0, np.int32))
    ok("send_recv")


def check_cuda_backend() -> None:
    """On the cuda backend (numba's simulator in CI) a collective across processes runs
    on the host between the kernels."""
    import importlib.util
    if importlib.util.find_spec("numba_cuda") is None:
        return ok("cuda_backend")  # (the cuda extra is absent: nothing to check)
    x = data(R, (5,))
    f = tr.jit(lambda v: (ops.all_reduce(v * 2.0) + 1.0, ops.replica_id()), backend="cuda")
    total, rid = (np.asarray(v) for v in f(x))
    np.testing.assert_allclose(total, fold([data(r, (5,)) * 2 for r in range(N)]) + 1,
                               rtol=1e-6)
    assert rid == R
    ok("cuda_backend")


def check_properties() -> None:
    """Eager collectives over random shapes, dtypes and computations (hypothesis,
    derandomized: every replica draws the same examples) against NumPy folds."""
    from hypothesis import assume, given, settings
    from hypothesis import strategies as st

    dtypes = st.sampled_from([np.float32, np.float64, np.int32, np.uint8, np.bool_])
    shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
    folds = {"add": (ops.add, lambda a, b: a + b), "max": (ops.max, np.maximum),
             "min": (ops.min, np.minimum)}

    @settings(max_examples=25, derandomize=True, deadline=None, database=None)
    @given(dtype=dtypes, shape=shapes, name=st.sampled_from(sorted(folds)),
           wide=st.booleans())
    def collectives_match_numpy(dtype, shape, name, wide):
        assume(not (dtype is np.bool_ and name == "add"))  # (add takes no booleans)
        shape = (N * (700 if wide else 1),) + shape  # wide: the all-to-all path
        xs = [(data(r, shape, np.float64) * 50).astype(dtype) for r in range(N)]
        computation, reference = folds[name]
        got = ops.all_reduce(xs[R], computation)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, functools.reduce(reference, xs))
        np.testing.assert_array_equal(ops.all_gather(xs[R], 0), np.concatenate(xs))
        block = slice(R * shape[0] // N, (R + 1) * shape[0] // N)
        np.testing.assert_array_equal(ops.reduce_scatter(xs[R], computation, 0),
                                      functools.reduce(reference, xs)[block])
        np.testing.assert_array_equal(ops.all_to_all(xs[R], 0, 0),
                                      np.concatenate([x[block] for x in xs]))
    collectives_match_numpy()
    ok("properties")


def compiled_all_reduce() -> tr.Compiled:
    """An all-reduce compiled before any replica enters it (compiling calls no MPI)."""
    return tr.jit(lambda v: ops.all_reduce(v)).lower(np.ones(3, np.float32)).compile()


def fail_raise() -> None:
    """Rank 1 raises before the collective the others wait in (in compiled code)."""
    step = compiled_all_reduce()
    if R == 1:
        raise RuntimeError("replica one gave up")
    step(np.ones(3, np.float32))


def fail_stuck() -> None:
    """Rank 1 is late past the watchdog's timeout (rank 0 waits in compiled code)."""
    tr.config.distributed_timeout = 1.0
    step = compiled_all_reduce()
    if R == 1:
        time.sleep(60)
    step(np.ones(3, np.float32))


def fail_die() -> None:
    """Rank 1 is killed."""
    import signal
    if R == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    ops.all_reduce(np.ones(3, np.float32))


CHECKS = [check_all_reduce_bit_equal, check_all_reduce_same_for_any_process_count,
          check_collectives_in_jit, check_grad_and_loops, check_pmap,
          check_mismatch_raises_everywhere, check_compiled_all_reduce, check_send_recv,
          check_cuda_backend, check_properties]
FAILURES = {"fail_raise": fail_raise, "fail_stuck": fail_stuck, "fail_die": fail_die}

if __name__ == "__main__":
    scenario = sys.argv[1]
    if scenario == "checks":
        for check in CHECKS:
            check()
    else:
        FAILURES[scenario]()

"""Transformations end to end (issue 5's measures), tracer vs NumPy, JAX, PyTorch
(eager and torch.compile) and PyTensor's numba backend (each when installed).

    python -m bench.bench_transforms [backend] [workload ...]

MLP forward + gradient (batch 256, 784-512-10, float32), vmap of a per-row cosine
similarity over 10,000×64, an RNN of 1,000 scan steps (hidden 128, batch 16), and
the trace + transform time of `grad` for a 1,000-op function.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import tracer as tr
import tracer.numpy as tnp
from bench.common import first_call_timed, report, timed_rows, timeit, try_import_jax
from bench.machine import bound
from bench.peers import (pytensor_rows, torch_grad_rows, torch_numpy, torch_rows,
                         try_import_pytensor, try_import_torch)
from tracer import ops
from tracer.config import BACKENDS

F32 = np.float32


def _checked_times(title: str, rows: list, repeat: int = 7) -> list[tuple[str, float]]:
    """Check every row's leaves against the first row's, then time them all."""
    rows = timed_rows(rows)
    expected = [np.asarray(leaf) for leaf in tr.tree.leaves(rows[0][1]())]
    for name, fn in rows[1:]:
        got = [np.asarray(leaf) for leaf in tr.tree.leaves(fn())]
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-4 * float(np.abs(e).max()),
                                       err_msg=f"{title}: {name}")
    return [(n, timeit(f, repeat=repeat)) for n, f in rows]


def mlp(backend: str, jax) -> None:
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((784, 512)) * 0.05).astype(F32)
    w2 = (rng.standard_normal((512, 10)) * 0.05).astype(F32)
    x = rng.standard_normal((256, 784)).astype(F32)
    y = rng.standard_normal((256, 10)).astype(F32)

    def loss(w1, w2, x, y, np_=tnp):
        h = np_.tanh(x @ w1)
        return np_.mean((h @ w2 - y) ** 2)

    step = tr.jit(tr.value_and_grad(loss, argnums=(0, 1)), backend=backend)
    rows = [(f"tracer[{backend}]", lambda: step(w1, w2, x, y))]
    if jax is not None:
        jstep = jax.jit(jax.value_and_grad(lambda a, b, c, d: loss(a, b, c, d, jax.numpy),
                                           argnums=(0, 1)))
        rows.append(("jax", lambda: jax.block_until_ready(jstep(w1, w2, x, y))))
    torch = try_import_torch()
    if torch is not None:
        tnp_ = torch_numpy(torch)
        rows += torch_grad_rows(lambda *a: loss(*a, np_=tnp_), (0, 1), w1, w2, x, y)
    rows += pytensor_rows(lambda pt, *a: loss(*a, np_=pt), w1, w2, x, y, grad_argnums=(0, 1))
    title = "MLP 784-512-10, batch 256: loss + grad"
    # the forward GEMMs, the weights' gradients (as many flops) and dh = dout @ w2.T
    flops = 2 * 2 * 256 * (784 * 512 + 512 * 10) + 2 * 256 * 10 * 512
    report(title, _checked_times(title, rows), rows[0][0], bound=bound(flops=flops))


def _hand_cosine():
    """The hand-written numba kernel the issue compares with: one prange over rows, three
    running sums, fastmath (which lets LLVM vectorize and fuse the multiply-adds)."""
    import numba

    @numba.njit(parallel=True, fastmath=True, error_model="numpy")
    def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        n, d = a.shape
        out = np.empty(n, a.dtype)
        for i in numba.prange(n):
            ab = aa = bb = a.dtype.type(0)
            for j in range(d):
                x, y = a[i, j], b[i, j]
                ab += x * y
                aa += x * x
                bb += y * y
            out[i] = ab / (np.sqrt(aa) * np.sqrt(bb))
        return out
    return cosine_rows


def cosine(backend: str, jax) -> None:
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((10_000, 64)).astype(F32) for _ in range(2))

    def cos(u, v, np_=tnp):
        return np_.dot(u, v) / (np_.sqrt(np_.dot(u, u)) * np_.sqrt(np_.dot(v, v)))

    f = tr.jit(tr.vmap(cos), backend=backend)
    hand = _hand_cosine()
    tracer_row = first_call_timed(f"tracer[{backend}] vmap", lambda: f(a, b))
    np.testing.assert_allclose(tracer_row(), hand(a, b), rtol=1e-5, atol=1e-6)
    rows = [("numba prange (hand)", lambda: hand(a, b)),
            ("numpy rows", lambda: (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))),
            (f"tracer[{backend}] vmap", tracer_row)]
    if jax is not None:
        jf = jax.jit(jax.vmap(lambda u, v: cos(u, v, jax.numpy)))
        rows.append(("jax vmap", lambda: jf(a, b).block_until_ready()))
    torch = try_import_torch()
    if torch is not None:
        tnp_ = torch_numpy(torch)
        rows += torch_rows(torch.func.vmap(lambda u, v: cos(u, v, tnp_)), a, b, suffix=" vmap")
    rows += pytensor_rows(lambda pt, a, b: (a * b).sum(1) / pt.sqrt((a * a).sum(1)
                                                                   * (b * b).sum(1)),
                          a, b, suffix=" (rows)")
    title = "vmap cosine similarity 10,000×64"  # 5 MB: cache-resident, no DRAM bound
    report(title, _checked_times(title, rows), rows[0][0])


def rnn(backend: str, jax) -> None:
    rng = np.random.default_rng(2)
    wh = (rng.standard_normal((128, 128)) * 0.05).astype(F32)
    wx = (rng.standard_normal((32, 128)) * 0.05).astype(F32)
    xs = rng.standard_normal((1000, 16, 32)).astype(F32)
    h0 = np.zeros((16, 128), F32)

    def run(h0, xs, scan=ops.scan, np_=tnp, wh=wh, wx=wx):
        def cell(h, x):
            h = np_.tanh(h @ wh + x @ wx)
            return h, None
        return scan(cell, h0, xs)[0]

    f = tr.jit(run, backend=backend)
    rows = [(f"tracer[{backend}]", lambda: f(h0, xs))]
    if jax is not None:
        jf = jax.jit(lambda h, x: run(h, x, jax.lax.scan, jax.numpy))
        rows.append(("jax", lambda: jf(h0, xs).block_until_ready()))
    rows += _torch_rnn_rows(h0, xs, wh, wx) + _pytensor_rnn_rows(h0, xs, wh, wx)
    title = "RNN, 1,000 scan steps, hidden 128, batch 16"
    flops = 2 * 1000 * 16 * 128 * (128 + 32)
    report(title, _checked_times(title, rows, repeat=3), rows[0][0], bound=bound(flops=flops))


def _torch_rnn_rows(*arrays: np.ndarray) -> list:
    """The RNN as PyTorch users write it: a Python loop over time steps, the cell eager
    or under torch.compile (compiling the whole loop would unroll 1,000 steps)."""
    torch = try_import_torch()
    if torch is None:
        return []

    def run(cell, h0, xs, wh, wx):
        h = h0
        for x in xs:
            h = cell(h, x, wh, wx)
        return h

    def cell(h, x, wh, wx):
        return torch.tanh(h @ wh + x @ wx)
    compiled = torch.compile(cell)
    return (torch_rows(lambda *a: run(cell, *a), *arrays, compiled=False, suffix=" (loop)")
            + torch_rows(lambda *a: run(compiled, *a), *arrays, compiled=False,
                         suffix=".compile (cell, loop)"))


def _pytensor_rnn_rows(*arrays: np.ndarray) -> list:
    """The RNN with `pytensor.scan`, compiled whole by PyTensor's numba backend."""
    pytensor = try_import_pytensor()
    if pytensor is None:
        return []

    def graph(pt, h0, xs, wh, wx):
        hs = pytensor.scan(lambda x, h: pt.tanh(h @ wh + x @ wx), sequences=xs,
                           outputs_info=h0, return_updates=False)
        return hs[-1]
    return pytensor_rows(graph, *arrays)


def transform_time(jax, n_ops: int = 1000) -> None:
    """Wall time of tracing a 1,000-op function, and of tracing its gradient (a new
    function object per round: JAX caches traces by function identity)."""
    def make_chain(np_):
        def chain(x):
            for i in range(n_ops // 2):
                x = np_.sin(x) * 1.0001 if i % 2 else x + 0.5
            return x.sum()
        return chain

    def once(stage) -> float:
        t0 = time.perf_counter()
        stage()
        return time.perf_counter() - t0

    def best(stage) -> float:
        return min(once(stage) for _ in range(3))

    x = np.ones(8)
    rows = [("tracer trace", best(lambda: tr.make_hlo(make_chain(tnp))(x))),
            ("tracer trace + grad", best(lambda: tr.make_hlo(tr.grad(make_chain(tnp)))(x)))]
    if jax is not None:
        rows += [("jax trace", best(lambda: jax.make_jaxpr(make_chain(jax.numpy))(x))),
                 ("jax trace + grad",
                  best(lambda: jax.make_jaxpr(jax.grad(make_chain(jax.numpy)))(x)))]
    report(f"trace and trace + grad of a {n_ops}-op function", rows, "tracer trace + grad")


WORKLOADS = {"mlp": mlp, "cosine": cosine, "rnn": rnn,
             "transform_time": lambda backend, jax: transform_time(jax)}


def main(argv: list[str]) -> None:
    """`argv`: a backend name first (the default backend otherwise), then workload
    filters."""
    backends = BACKENDS
    backend = argv[0] if argv[:1] and argv[0] in backends else tr.config.default_backend
    selected = argv[1:] if argv[:1] and argv[0] in backends else argv
    jax = try_import_jax()
    for name, workload in WORKLOADS.items():
        if not selected or any(s in name for s in selected):
            workload(backend, jax)


if __name__ == "__main__":
    main(sys.argv[1:])

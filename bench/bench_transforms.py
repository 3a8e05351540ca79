"""Transformations end to end (issue 5's measures), tracer vs NumPy / JAX.

    python -m bench.bench_transforms [backend]

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
from bench.common import report, timeit, try_import_jax
from tracer import ops

F32 = np.float32


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
    report("MLP 784-512-10, batch 256: loss + grad", [(n, timeit(f)) for n, f in rows],
           rows[0][0])


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
    np.testing.assert_allclose(f(a, b), hand(a, b), rtol=1e-5, atol=1e-6)
    rows = [("numba prange (hand)", lambda: hand(a, b)),
            ("numpy rows", lambda: (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))),
            (f"tracer[{backend}] vmap", lambda: f(a, b))]
    if jax is not None:
        jf = jax.jit(jax.vmap(lambda u, v: cos(u, v, jax.numpy)))
        rows.append(("jax vmap", lambda: jf(a, b).block_until_ready()))
    report("vmap cosine similarity 10,000×64", [(n, timeit(f)) for n, f in rows], rows[0][0])


def rnn(backend: str, jax) -> None:
    rng = np.random.default_rng(2)
    wh = (rng.standard_normal((128, 128)) * 0.05).astype(F32)
    wx = (rng.standard_normal((32, 128)) * 0.05).astype(F32)
    xs = rng.standard_normal((1000, 16, 32)).astype(F32)
    h0 = np.zeros((16, 128), F32)

    def run(h0, xs, scan=ops.scan, np_=tnp):
        def cell(h, x):
            h = np_.tanh(h @ wh + x @ wx)
            return h, None
        return scan(cell, h0, xs)[0]

    f = tr.jit(run, backend=backend)
    rows = [(f"tracer[{backend}]", lambda: f(h0, xs))]
    if jax is not None:
        jf = jax.jit(lambda h, x: run(h, x, jax.lax.scan, jax.numpy))
        rows.append(("jax", lambda: jf(h0, xs).block_until_ready()))
    report("RNN, 1,000 scan steps, hidden 128, batch 16",
           [(n, timeit(f, repeat=3)) for n, f in rows],
           rows[0][0])


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


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else tr.config.default_backend
    jax = try_import_jax()
    mlp(backend, jax)
    cosine(backend, jax)
    rnn(backend, jax)
    transform_time(jax)


if __name__ == "__main__":
    main()

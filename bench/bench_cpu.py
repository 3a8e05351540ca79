"""The numba `cpu` backend against NumPy, hand-written numba, JAX, PyTorch (eager and
torch.compile) and PyTensor's numba backend (each when installed).

    python -m bench.bench_cpu            # all workloads
    python -m bench.bench_cpu softmax    # the workloads whose name contains "softmax"

Each workload checks that the implementations agree, then prints medians and
ratios (`bench.common.report`) and the issue's target ratios (`target ratio: A / B`);
the last line is the whole table as JSON. GELU runs with fresh results and with its
input donated (tracer and JAX: each timed call gets a fresh copy, made before the clock
starts), beside a copy of the array (the bandwidth bound); `mlp_grad` is the MLP
loss + gradient beside the same gradient written by hand in numba and NumPy.
Cold compile and warm start are measured in fresh processes with their own
cache directory, so they include nothing this process already compiled.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Any, Callable

import numba
import numpy as np

import tracer as tr
import tracer.numpy as tnp
from bench.common import first_call_timed, jax_x64, report, timeit, try_import_jax
from bench.machine import bound as machine_bound
from bench.peers import (pytensor_rows, torch_numpy, torch_rows, try_import_pytensor,
                         try_import_torch)
from tracer import ops
from tracer.backend.cpu.lib.fastmath import exp_f32, tanh_f32

RESULTS: dict[str, dict[str, float]] = {}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F32 = np.float32
C = F32(0.7978845608028654)  # sqrt(2 / pi)

def _run(title: str, rows: list[tuple[str, Callable[[], Any]]], baseline: str,
         rtol: float = 1e-5, bound: float | None = None) -> None:
    """Check every implementation against the first one, time them, report. A row
    with a `time` method (`_Donating`, `_Unchecked`) times itself."""
    rows = [(name, fn if hasattr(fn, "time") else first_call_timed(name, fn))
            for name, fn in rows]
    expected = [np.asarray(a) for a in _leaves(rows[0][1]())]
    for name, fn in rows[1:]:
        if isinstance(fn, _Unchecked):
            continue
        for got, want in zip(_leaves(fn()), expected, strict=True):
            atol = rtol * float(np.max(np.abs(want), initial=1.0))  # sums of many products
            np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol,
                                       err_msg=f"{title}: {name}")
    times = [(name, fn.time() if hasattr(fn, "time") else timeit(fn)) for name, fn in rows]
    RESULTS[title] = dict(times)
    report(title, times, baseline, bound=bound)

def _peer_rows(fn: Callable[..., Any], *args: np.ndarray) -> list:
    """torch, torch.compile and PyTensor rows of `fn(*arrays, np_)`, a workload written
    once against a NumPy-like namespace."""
    torch = try_import_torch()
    tnp_ = torch_numpy(torch) if torch else None
    rows = torch_rows(lambda *a: fn(*a, tnp_), *args) if torch else []
    return rows + pytensor_rows(lambda pt, *a: fn(*a, pt), *args)

def _leaves(out: Any) -> list:
    return [out] if not isinstance(out, (tuple, list)) else \
        [leaf for o in out for leaf in _leaves(o)]

class _Donating:
    """A call that donates its argument: each timed call gets a fresh copy of `x`,
    made before the clock starts (a donated buffer holds the result afterwards)."""

    def __init__(self, call: Callable[[Any], Any], fresh: Callable[[], Any]):
        self.call, self.fresh = call, fresh

    def __call__(self) -> Any:
        return self.call(self.fresh())

    def time(self, rounds: int = 21) -> float:
        seconds = []
        for _ in range(rounds):
            arg = self.fresh()
            t0 = time.perf_counter()
            self.call(arg)
            seconds.append(time.perf_counter() - t0)
        return statistics.median(seconds)

def _ratios(title: str, pairs: list[tuple[str, str]]) -> None:
    """The issue's targets: each first row's time over the second's, from this run."""
    times = RESULTS[title]
    for a, b in pairs:
        if a in times and b in times:
            ratio = times[a] / times[b]
            RESULTS[title][f"{a} / {b}"] = ratio
            print(f"  target ratio: {a} / {b} = x{ratio:.2f}")

def _jax_rows(jax: Any, fn: Callable[..., Any], *args: np.ndarray) -> list:
    """A JAX row on the arrays the other rows read: 64-bit arrays with JAX's 64-bit
    types on (by default it narrows them to 32 bits: another, cheaper workload)."""
    if jax is None:
        return []
    wide = any(np.asarray(a).dtype.itemsize == 8 for a in args)
    return [("jax", jax_x64(jax, fn, *args, on=wide))]

# ------------------------------------------------------------------ element-wise

def _gelu(x: Any, np_: Any) -> Any:
    return 0.5 * x * (1.0 + np_.tanh(C * (x + 0.044715 * x * x * x)))

@numba.njit(error_model="numpy", parallel=True)
def _gelu_numba(x: np.ndarray, out: np.ndarray) -> None:  # hand-written, same math helpers
    for i in numba.prange(x.shape[0]):
        v = x[i]
        out[i] = F32(0.5) * v * (F32(1.0) + tanh_f32(C * (v + F32(0.044715) * v * v * v)))

def _fresh(kernel: Callable[..., None], x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)  # a fresh result, as every other implementation returns
    kernel(x, out)
    return out

def gelu(n: int = 1 << 24) -> None:
    """GELU with fresh results (tracer's warm buffers, hand numba's `np.empty`) and with
    the input donated (written in place), beside the bandwidth bound: a copy of `x`
    into a warm buffer reads and writes the bytes GELU must."""
    x = np.random.default_rng(0).normal(size=n).astype(F32)
    f = tr.jit(lambda x: _gelu(x, tnp), backend="cpu")
    donating = tr.jit(lambda x: _gelu(x, tnp), backend="cpu", donate_argnums=0)
    donor, warm = np.empty_like(x), np.empty_like(x)
    jax = try_import_jax()
    rows = [("tracer cpu", lambda: f(x)),
            ("tracer cpu (donated)", _Donating(donating, lambda: _copied(x, donor))),
            ("numpy", lambda: _gelu(x, np)),
            ("numba (hand-written)", lambda: _fresh(_gelu_numba, x)),
            ("bandwidth bound (copy)", _Unchecked(lambda: _copied(x, warm)))]
    rows += _jax_rows(jax, lambda x: _gelu(x, jax.numpy) if jax else None, x)
    rows += _peer_rows(_gelu, x)
    if jax is not None:
        donated = jax.jit(lambda x: _gelu(x, jax.numpy), donate_argnums=0)
        rows.append(("jax (donated)", _Donating(lambda a: donated(a).block_until_ready(),
                                                lambda: jax.numpy.array(x))))
    title = f"GELU, float32[{n}]"
    _run(title, rows, "tracer cpu", bound=machine_bound(2 * x.nbytes))
    _ratios(title, [("tracer cpu (donated)", "jax (donated)"),
                    ("tracer cpu", "numba (hand-written)"),
                    ("tracer cpu", "bandwidth bound (copy)"),
                    ("tracer cpu (donated)", "bandwidth bound (copy)")])

def _copied(x: np.ndarray, into: np.ndarray) -> np.ndarray:
    np.copyto(into, x)
    return into

class _Unchecked:
    """A row timed but not compared (a bound, not an implementation of the workload)."""

    def __init__(self, fn: Callable[[], Any]):
        self.fn = fn

    def time(self) -> float:
        return timeit(self.fn)

# ------------------------------------------------------------------ reductions

def _softmax(x: Any, np_: Any) -> Any:
    e = np_.exp(x - np_.max(x, axis=1, keepdims=True))
    return e / np_.sum(e, axis=1, keepdims=True)

def _logsumexp(x: Any, np_: Any) -> Any:
    m = np_.max(x, axis=1, keepdims=True)
    return np_.log(np_.sum(np_.exp(x - m), axis=1)) + m[:, 0]

@numba.njit(error_model="numpy", parallel=True)
def _softmax_numba(x: np.ndarray, out: np.ndarray) -> None:
    for i in numba.prange(x.shape[0]):
        m = x[i, 0]
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        s = F32(0.0)
        for j in range(x.shape[1]):
            out[i, j] = exp_f32(x[i, j] - m)
            s += out[i, j]
        for j in range(x.shape[1]):
            out[i, j] /= s

def softmax(rows: int = 4096, cols: int = 1024) -> None:
    x = np.random.default_rng(1).normal(size=(rows, cols)).astype(F32)
    jax = try_import_jax()
    for name, fn in (("row softmax", _softmax), ("logsumexp over rows", _logsumexp)):
        f = tr.jit(lambda x, fn=fn: fn(x, tnp), backend="cpu")
        impls = [("tracer cpu", lambda f=f: f(x)), ("numpy", lambda fn=fn: fn(x, np))]
        if fn is _softmax:
            impls.append(("numba (hand-written)", lambda: _fresh(_softmax_numba, x)))
        if jax is not None:
            impls += _jax_rows(jax, lambda x, fn=fn: fn(x, jax.numpy), x)
        impls += _peer_rows(fn, x)
        moved = x.nbytes * (2 if fn is _softmax else 1)  # read x (and write the result)
        _run(f"{name}, float32[{rows},{cols}]", impls, "tracer cpu",
             bound=machine_bound(moved))

# ------------------------------------------------------------------ BLAS

def matmul(n: int = 1024) -> None:
    jax = try_import_jax()
    for dtype in (np.float32, np.float64):
        rng = np.random.default_rng(2)
        a, b = (rng.normal(size=(n, n)).astype(dtype) for _ in range(2))
        f = tr.jit(lambda a, b: a @ b, backend="cpu")
        rows = [("tracer cpu", lambda: f(a, b)), ("numpy", lambda: a @ b)]
        rows += _jax_rows(jax, lambda a, b: a @ b, a, b)
        rows += _peer_rows(lambda a, b, np_: a @ b, a, b)
        _run(f"matmul {np.dtype(dtype).name}[{n},{n}]", rows, "tracer cpu", rtol=1e-3,
             bound=machine_bound(flops=2 * n**3, dtype=np.dtype(dtype).name))

def mlp(batch: int = 256, width: int = 1024) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(batch, width)).astype(F32)
    w1, w2 = (rng.normal(size=(width, width)).astype(F32) / 32 for _ in range(2))
    b1 = rng.normal(size=width).astype(F32)

    def forward(x: Any, w1: Any, b1: Any, w2: Any, np_: Any) -> Any:
        return _softmax(_gelu(x @ w1 + b1, np_) @ w2, np_)
    f = tr.jit(lambda *a: forward(*a, tnp), backend="cpu")
    jax = try_import_jax()
    rows = [("tracer cpu", lambda: f(x, w1, b1, w2)),
            ("numpy", lambda: forward(x, w1, b1, w2, np))]
    if jax is not None:
        rows += _jax_rows(jax, lambda *a: forward(*a, jax.numpy), x, w1, b1, w2)
    rows += _peer_rows(forward, x, w1, b1, w2)
    _run(f"MLP forward, batch {batch}, width {width}", rows, "tracer cpu", rtol=1e-3,
         bound=machine_bound(flops=2 * 2 * batch * width * width))

def _mlp_loss(w1: Any, w2: Any, x: Any, y: Any, np_: Any) -> Any:
    return np_.mean((np_.tanh(x @ w1) @ w2 - y) ** 2)

def _mlp_grad_numpy(w1: np.ndarray, w2: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple:
    """The gradient of `_mlp_loss` by hand, in NumPy."""
    h = np.tanh(x @ w1)
    e = h @ w2 - y
    g = e * F32(2.0 / e.size)
    g_h = (g @ w2.T) * (F32(1.0) - h * h)
    return np.mean(e * e), (x.T @ g_h, h.T @ g)

@numba.njit(error_model="numpy", fastmath=True)
def _mlp_grad_numba(w1: np.ndarray, w2: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple:
    """The gradient of `_mlp_loss` by hand: BLAS products, each element-wise step one
    loop written in place, the loss summed while the error is scaled."""
    h = np.dot(x, w1)
    for i in range(h.shape[0]):
        for j in range(h.shape[1]):
            h[i, j] = tanh_f32(h[i, j])
    e = np.dot(h, w2)
    scale, total = F32(2.0 / e.size), F32(0.0)
    for i in range(e.shape[0]):
        for j in range(e.shape[1]):
            d = e[i, j] - y[i, j]
            total += d * d
            e[i, j] = scale * d
    g_h = np.dot(e, w2.T)
    for i in range(g_h.shape[0]):
        for j in range(g_h.shape[1]):
            g_h[i, j] *= F32(1.0) - h[i, j] * h[i, j]
    return total / F32(e.size), (np.dot(x.T, g_h), np.dot(h.T, e))

def mlp_grad(batch: int = 256) -> None:
    """Loss and gradient of a 784-512-10 tanh MLP (bench_transforms' workload) against
    the same gradient written by hand in numba and NumPy, and JAX's value_and_grad."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((784, 512)) * 0.05).astype(F32)
    w2 = (rng.standard_normal((512, 10)) * 0.05).astype(F32)
    x = rng.standard_normal((batch, 784)).astype(F32)
    y = rng.standard_normal((batch, 10)).astype(F32)
    step = tr.jit(tr.value_and_grad(lambda *a: _mlp_loss(*a, tnp), argnums=(0, 1)),
                  backend="cpu")
    rows = [("tracer cpu", lambda: step(w1, w2, x, y)),
            ("numba (hand-written)", lambda: _mlp_grad_numba(w1, w2, x, y)),
            ("numpy (hand-written)", lambda: _mlp_grad_numpy(w1, w2, x, y))]
    jax = try_import_jax()
    if jax is not None:
        jstep = jax.jit(jax.value_and_grad(lambda *a: _mlp_loss(*a, jax.numpy), argnums=(0, 1)))
        rows.append(("jax", lambda: jax.block_until_ready(jstep(w1, w2, x, y))))
    title = f"MLP 784-512-10 loss + grad, batch {batch}"
    _run(title, rows, "tracer cpu", rtol=1e-4)
    _ratios(title, [("tracer cpu", "numba (hand-written)"), ("tracer cpu", "jax")])

# ------------------------------------------------------------------ overheads

def dispatch() -> None:
    x, y, z = (np.ones(4, F32) for _ in range(3))
    f = tr.jit(lambda a, b, c: a * b + c, backend="cpu")
    exe = f.lower(x, y, z).compile().executable
    jax = try_import_jax()
    rows = [("tracer cpu (jit call)", lambda: f(x, y, z)),
            ("tracer cpu (executable)", lambda: exe(x, y, z)[0]),
            ("numpy", lambda: x * y + z)]
    rows += _jax_rows(jax, lambda a, b, c: a * b + c, x, y, z)
    rows += _peer_rows(lambda a, b, c, np_: a * b + c, x, y, z)
    _run("dispatch, 3 tiny float32[4]", rows, "numpy")

def loop(steps: int = 1000) -> None:
    def body(i: Any, c: Any) -> Any:
        return c * 0.999 + tnp.sin(c)
    f = tr.jit(lambda c: ops.fori_loop(0, steps, body, c), backend="cpu")
    c = np.ones(16, F32)

    def numpy_loop() -> np.ndarray:
        v = c
        for _ in range(steps):
            v = v * F32(0.999) + np.sin(v)
        return v
    rows = [("tracer cpu", lambda: f(c)), ("numpy", numpy_loop)] + _loop_peer_rows(steps, c)
    _run(f"fori_loop of {steps} steps, float32[16]", rows, "tracer cpu")

def _loop_peer_rows(steps: int, c: np.ndarray) -> list:
    """The loop in torch (a Python loop, as torch users write it) and in PyTensor (scan)."""
    torch = try_import_torch()
    rows = []
    if torch is not None:
        def torch_loop(v: Any) -> Any:
            for _ in range(steps):
                v = v * 0.999 + torch.sin(v)
            return v
        rows += torch_rows(torch_loop, c, compiled=False, suffix=" (loop)")
    pytensor = try_import_pytensor()
    if pytensor is not None:
        rows += pytensor_rows(lambda pt, c: pytensor.scan(
            lambda v: v * 0.999 + pt.sin(v), outputs_info=c, n_steps=steps,
            return_updates=False)[-1], c, suffix=" (scan)")
    return rows

_CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {repo!r})
    import numpy as np
    import tracer.numpy as tnp
    from tracer.backend.cpu.backend import NumbaCpuBackend
    from tracer.core import ShapedArray
    from tracer.tracing import trace_flat
    import numba
    t0 = time.perf_counter()
    numba.njit(lambda: 0)()  # numba's own start-up (LLVM, target): not ours to count
    print("numba", time.perf_counter() - t0)
    x = ShapedArray((1 << 10,), np.float32)
    def chain(x):
        for i in range(50):
            x = tnp.sin(x) * 1.0001 if i % 2 else x + 0.5
        return [x]
    def gelu(x):
        return [0.5 * x * (1.0 + tnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))]
    big = ShapedArray((1 << 24,), np.float32)  # large: a parallel (prange) kernel
    for name, fn, aval in (("gelu", gelu, x), ("chain", chain, x), ("gelu_parallel", gelu, big)):
        graph, _ = trace_flat(fn, [aval])
        t0 = time.perf_counter()
        NumbaCpuBackend().compile(graph)
        print(name, time.perf_counter() - t0)
""")

def compile_times() -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRACER_CACHE_DIR=cache)
        for label in ("cold compile (empty cache)", "warm start (new process, disk cache)"):
            out = subprocess.run([sys.executable, "-c", _CHILD.format(repo=REPO)], env=env,
                                 capture_output=True, text=True, check=True).stdout
            times = {name: float(t) for name, t in (line.split() for line in out.splitlines())}
            rows = [("GELU", times["gelu"]), ("GELU, parallel kernel", times["gelu_parallel"]),
                    ("100-op element-wise chain", times["chain"]),
                    ("(numba start-up, not included)", times["numba"])]
            RESULTS[label] = dict(rows)
            report(label, rows, "GELU")

WORKLOADS = {"gelu": gelu, "softmax": softmax, "matmul": matmul, "mlp": mlp, "mlp_grad": mlp_grad,
             "dispatch": dispatch, "loop": loop, "compile": compile_times}

def main(selected: list[str]) -> None:
    for name, run in WORKLOADS.items():
        if not selected or any(s in name for s in selected):
            run()
    print(json.dumps(RESULTS))

if __name__ == "__main__":
    main(sys.argv[1:])

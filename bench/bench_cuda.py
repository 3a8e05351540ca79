"""The numba `cuda` backend on a GPU: against the memory-bandwidth bound, CuPy, JAX and PyTorch.

    python -m bench.bench_cuda            # all workloads (needs a CUDA GPU)
    python -m bench.bench_cuda softmax    # the workloads whose name contains "softmax"

Inputs live on the device (`tr.device_put`), so results stay there too and a
timing is kernels plus launch overhead, synchronized. Element-wise and
reduction workloads are compared with the time to move their bytes at the
GPU's bandwidth (`TRACER_BENCH_BANDWIDTH`, bytes/s; default 4.8e12, an H200);
the matmul with CuPy's, PyTorch's (cuBLAS, float32 without TF32) and JAX's when they
are installed; pooling and its gradient, batch norm, a 3x3 convolution and the RNG
(ops that used to run on the host) against the bandwidth bound and JAX; a convnet
training step against JAX and PyTorch; host<->device copies against CuPy and PyTorch
and a jitted call on host arrays against one on device arrays. Targets
(issue 7): GELU within 1.5x of the bound, row softmax within 2x, matmul 4096^2
at least half the best GPU GEMM. Without a GPU it says so and measures nothing.
The last line is the whole table as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any, Callable

import numpy as np

from bench.common import report, timeit

RESULTS: dict[str, dict[str, float]] = {}
BANDWIDTH = float(os.environ.get("TRACER_BENCH_BANDWIDTH", "4.8e12"))
F32 = np.float32
C = F32(0.7978845608028654)  # sqrt(2 / pi)


def _gpu() -> Any:
    """numba.cuda when a real GPU is there, else None."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return None
    try:
        from numba import cuda
    except ImportError:
        return None
    return cuda if cuda.is_available() else None


def _cupy() -> Any:
    try:
        import cupy
        cupy.zeros(1).sum()
        return cupy
    except Exception:  # optional: any failure means "absent"
        return None


def _torch() -> Any:
    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 GEMM means float32 here
        torch.backends.cudnn.allow_tf32 = False
        return torch if torch.cuda.is_available() else None
    except Exception:  # optional: any failure means "absent"
        return None


def _jax() -> Any:
    try:
        import jax
        return jax if jax.devices("gpu") else None
    except Exception:  # optional, and only its GPU build counts
        return None


def _synced(fn: Callable[[], Any], cuda: Any) -> Callable[[], None]:
    """`fn` followed by a device synchronize (the primary context PyTorch and CuPy share)."""
    def call() -> None:
        fn()
        cuda.synchronize()
    return call


def _host(x: Any) -> np.ndarray:
    """A result of any peer as a NumPy array (numba and CuPy device arrays, torch tensors)."""
    if hasattr(x, "copy_to_host"):
        return x.copy_to_host()
    if hasattr(x, "get"):
        return x.get()
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _run(title: str, rows: list[tuple[str, Callable[[], Any]]], cuda: Any,
         bound: float | None = None, rtol: float = 1e-4) -> None:
    """Check the others against the first, time them synchronized, report (and the
    bandwidth bound as a row of its own)."""
    expected = _host(rows[0][1]())
    atol = rtol * float(np.max(np.abs(expected), initial=1.0))
    for name, fn in rows[1:]:
        np.testing.assert_allclose(_host(fn()), expected, rtol=rtol, atol=atol,
                                   err_msg=f"{title}: {name}")

    times = [(name, timeit(_synced(fn, cuda), repeat=5, min_time=0.2)) for name, fn in rows]
    if bound is not None:
        times.append((f"bandwidth bound ({BANDWIDTH / 1e12:.1f} TB/s)", bound))
    RESULTS[title] = dict(times)
    report(title, times, rows[0][0])


def _others(cupy: Any, jax: Any, fn_cupy: Callable[..., Any] | None,
            fn_jax: Callable[..., Any] | None, *args: np.ndarray,
            fn_torch: Callable[..., Any] | None = None) -> list:
    """Rows for the peers that are installed (CuPy, JAX's GPU build, PyTorch)."""
    rows = []
    torch = _torch() if fn_torch is not None else None
    if torch is not None:
        targs = [torch.from_numpy(a).cuda() for a in args]
        rows.append(("pytorch", lambda: fn_torch(torch, *targs)))
    if cupy is not None and fn_cupy is not None:
        cargs = [cupy.asarray(a) for a in args]
        rows.append(("cupy", lambda: fn_cupy(cupy, *cargs)))
    if jax is not None and fn_jax is not None:
        jitted = jax.jit(lambda *xs: fn_jax(jax.numpy, *xs))
        jargs = [jax.device_put(a, jax.devices("gpu")[0]) for a in args]
        rows.append(("jax gpu", lambda: jitted(*jargs).block_until_ready()))
    return rows


# ------------------------------------------------------------------ workloads

def _gelu(np_: Any, x: Any) -> Any:
    return 0.5 * x * (1.0 + np_.tanh(C * (x + 0.044715 * x * x * x)))


def gelu(cuda: Any, cupy: Any, jax: Any, n: int = 1 << 26) -> None:
    import tracer as tr
    import tracer.numpy as tnp
    x = np.random.default_rng(0).normal(size=n).astype(F32)
    f = tr.jit(lambda x: _gelu(tnp, x), backend="cuda")
    d = tr.device_put(x, "cuda")
    rows = [("tracer cuda", lambda: f(d))] + _others(cupy, jax, _gelu, _gelu, x,
                                                     fn_torch=_gelu)
    _run(f"GELU, float32[{n}]", rows, cuda, bound=2 * x.nbytes / BANDWIDTH)


def _softmax(np_: Any, x: Any) -> Any:
    e = np_.exp(x - np_.max(x, axis=1, keepdims=True))
    return e / np_.sum(e, axis=1, keepdims=True)


def softmax(cuda: Any, cupy: Any, jax: Any, rows: int = 8192, cols: int = 4096) -> None:
    import tracer as tr
    import tracer.numpy as tnp
    x = np.random.default_rng(1).normal(size=(rows, cols)).astype(F32)
    f = tr.jit(lambda x: _softmax(tnp, x), backend="cuda")
    d = tr.device_put(x, "cuda")
    table = [("tracer cuda", lambda: f(d))] + _others(
        cupy, jax, _softmax, _softmax, x, fn_torch=lambda torch, x: torch.softmax(x, dim=1))
    _run(f"row softmax, float32[{rows}, {cols}]", table, cuda, bound=2 * x.nbytes / BANDWIDTH)


def total(cuda: Any, cupy: Any, jax: Any, n: int = 1 << 26) -> None:
    import tracer as tr
    import tracer.numpy as tnp
    x = np.random.default_rng(2).random(n).astype(F32)
    f = tr.jit(lambda x: tnp.sum(x), backend="cuda")
    d = tr.device_put(x, "cuda")
    rows = [("tracer cuda", lambda: f(d))]
    rows += _others(cupy, jax, lambda np_, x: np_.sum(x), lambda np_, x: np_.sum(x), x,
                    fn_torch=lambda torch, x: torch.sum(x))
    _run(f"sum, float32[{n}]", rows, cuda, bound=x.nbytes / BANDWIDTH, rtol=1e-3)


def matmul(cuda: Any, cupy: Any, jax: Any, n: int = 4096) -> None:
    import tracer as tr
    rng = np.random.default_rng(3)
    a, b = rng.random((n, n)).astype(F32), rng.random((n, n)).astype(F32)
    f = tr.jit(lambda a, b: a @ b, backend="cuda")
    da, db = tr.device_put(a, "cuda"), tr.device_put(b, "cuda")
    rows = [("tracer cuda", lambda: f(da, db))]
    rows += _others(cupy, jax, lambda np_, a, b: a @ b, lambda np_, a, b: a @ b, a, b,
                    fn_torch=lambda torch, a, b: a @ b)
    _run(f"matmul, float32[{n}, {n}] @ float32[{n}, {n}]", rows, cuda, rtol=1e-3)
    for name, seconds in RESULTS[f"matmul, float32[{n}, {n}] @ float32[{n}, {n}]"].items():
        print(f"  {name:<28} {2 * n ** 3 / seconds / 1e12:8.2f} TFLOP/s")


def _max_pool(lax: Any, x: Any) -> Any:
    return lax.reduce_window(x, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def pooling(cuda: Any, cupy: Any, jax: Any, shape: tuple[int, ...] = (64, 64, 112, 112)) -> None:
    """2x2 max pool (reduce_window) and its gradient (select_and_scatter), on the device."""
    import tracer as tr
    from tracer import ops
    x = np.random.default_rng(4).normal(size=shape).astype(F32)
    d = tr.device_put(x, "cuda")
    pool = tr.jit(lambda x: _max_pool(ops, x), backend="cuda")
    grad = tr.jit(tr.grad(lambda x: (_max_pool(ops, x) ** 2).sum()), backend="cuda")
    rows = [("tracer cuda", lambda: pool(d))]
    grows = [("tracer cuda", lambda: grad(d))]
    if jax is not None:
        rows += _others(None, jax, None, lambda jnp, x: _max_pool(jax.lax, x), x)
        grows += _others(None, jax, None, lambda jnp, x: jax.grad(
            lambda x: (_max_pool(jax.lax, x) ** 2).sum())(x), x)
    _run(f"max pool 2x2, float32{list(shape)}", rows, cuda, bound=1.25 * x.nbytes / BANDWIDTH)
    _run(f"max pool 2x2 gradient, float32{list(shape)}", grows, cuda,
         bound=2.25 * x.nbytes / BANDWIDTH)


def batch_norm(cuda: Any, cupy: Any, jax: Any, shape: tuple[int, ...] = (64, 64, 56, 56)) -> None:
    """batch_norm_training over the feature dim 1 (one block per feature)."""
    import tracer as tr
    from tracer import ops
    x = np.random.default_rng(5).normal(size=shape).astype(F32)
    ones, zeros = np.ones(shape[1], F32), np.zeros(shape[1], F32)
    f = tr.jit(lambda x: ops.batch_norm_training(x, ones, zeros, 1e-5, 1)[0], backend="cuda")
    d = tr.device_put(x, "cuda")

    def reference(jnp: Any, x: Any) -> Any:
        mean = x.mean(axis=(0, 2, 3), keepdims=True)
        var = ((x - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5)
    rows = [("tracer cuda", lambda: f(d))] + _others(cupy, jax, reference, reference, x)
    _run(f"batch_norm_training, float32{list(shape)}", rows, cuda,
         bound=4 * x.nbytes / BANDWIDTH, rtol=1e-3)


def conv(cuda: Any, cupy: Any, jax: Any, n: int = 32, c: int = 64, hw: int = 56) -> None:
    """A 3x3 SAME convolution (the direct kernel), NCHW / OIHW."""
    import tracer as tr
    from tracer import ops
    rng = np.random.default_rng(6)
    x = rng.normal(size=(n, c, hw, hw)).astype(F32)
    w = (rng.normal(size=(c, c, 3, 3)) / 24).astype(F32)
    f = tr.jit(lambda x, w: ops.conv(x, w, (1, 1), "SAME"), backend="cuda")
    dx, dw = tr.device_put(x, "cuda"), tr.device_put(w, "cuda")
    rows = [("tracer cuda", lambda: f(dx, dw))]
    if jax is not None:
        rows += _others(None, jax, None, lambda jnp, x, w: jax.lax.conv_general_dilated(
            x, w, (1, 1), "SAME"), x, w)
    rows += _others(None, None, None, None, x, w, fn_torch=lambda torch, x, w:
                    torch.nn.functional.conv2d(x, w, padding=1))
    title = f"conv 3x3 SAME, float32[{n}, {c}, {hw}, {hw}] * [{c}, {c}, 3, 3]"
    _run(title, rows, cuda, rtol=1e-3)
    for name, seconds in RESULTS[title].items():
        print(f"  {name:<28} {2 * n * c * c * 9 * hw * hw / seconds / 1e12:8.2f} TFLOP/s")


def random_bits(cuda: Any, cupy: Any, jax: Any, n: int = 1 << 26) -> None:
    """rng_bit_generator (three_fry, uint32): one Threefry block per two words."""
    import tracer as tr
    from tracer import ops
    state = np.array([42, 0], np.uint64)
    f = tr.jit(lambda s: ops.rng_bit_generator(s, (n,), np.uint32)[1], backend="cuda")
    d = tr.device_put(state, "cuda")
    rows = [("tracer cuda", lambda: f(d))]
    _run(f"rng_bit_generator three_fry, uint32[{n}]", rows, cuda, bound=4 * n / BANDWIDTH)


def _convnet_loss(np_: Any, lax: Any, params: dict, x: Any, labels: Any) -> Any:
    """Two 3x3 SAME convolutions with ReLU, 4x4 mean pooling, a dense layer, softmax
    cross-entropy: written once for tracer and JAX."""
    def conv(x: Any, w: Any) -> Any:
        return lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)))
    h = np_.maximum(conv(x, params["c1"]), 0.0)
    h = np_.maximum(conv(h, params["c2"]), 0.0)
    n, c, hh, ww = h.shape
    h = h.reshape(n, c, hh // 4, 4, ww // 4, 4).mean(axis=(3, 5)).reshape(n, -1)
    logits = h @ params["dense"]
    z = logits - np_.max(logits, axis=-1, keepdims=True)
    logp = z - np_.log(np_.sum(np_.exp(z), axis=-1, keepdims=True))
    onehot = (labels[:, None] == np_.arange(10)).astype(logits.dtype)
    return -np_.mean(np_.sum(logp * onehot, axis=-1))


def _torch_convnet_step(torch: Any, lr: float) -> Callable[..., Any]:
    F = torch.nn.functional

    def step(c1: Any, c2: Any, dense: Any, x: Any, labels: Any) -> Any:
        params = [p.detach().requires_grad_() for p in (c1, c2, dense)]
        h = F.relu(F.conv2d(F.relu(F.conv2d(x, params[0], padding=1)), params[1], padding=1))
        h = F.avg_pool2d(h, 4).flatten(1)
        loss = F.cross_entropy(h @ params[2], labels.long())
        grads = torch.autograd.grad(loss, params)
        return [p.detach() - lr * g for p, g in zip(params, grads)][0]
    return step


def convnet_step(cuda: Any, cupy: Any, jax: Any, batch: int = 128, size: int = 32) -> None:
    """One SGD training step of a small convnet (value_and_grad + update), on the device."""
    import tracer as tr
    import tracer.numpy as tnp
    from tracer import ops
    lr = 0.01
    rng = np.random.default_rng(7)
    params = {"c1": (rng.normal(size=(32, 3, 3, 3)) / 5).astype(F32),
              "c2": (rng.normal(size=(64, 32, 3, 3)) / 17).astype(F32),
              "dense": (rng.normal(size=(64 * (size // 4) ** 2, 10)) / 64).astype(F32)}
    x = rng.normal(size=(batch, 3, size, size)).astype(F32)
    labels = rng.integers(0, 10, batch).astype(np.int32)

    def make_step(np_: Any, lax: Any, value_and_grad: Callable) -> Callable:
        def step(params: dict, x: Any, labels: Any) -> Any:
            loss, grads = value_and_grad(
                lambda p: _convnet_loss(np_, lax, p, x, labels))(params)
            return loss, {k: params[k] - lr * grads[k] for k in params}
        return step
    f = tr.jit(make_step(tnp, ops, tr.value_and_grad), backend="cuda")
    dp, dx, dl = tr.device_put((params, x, labels), "cuda")
    rows = [("tracer cuda", lambda: f(dp, dx, dl)[1]["c1"])]
    if jax is not None:
        g = jax.jit(make_step(jax.numpy, jax.lax, jax.value_and_grad))
        jp, jx, jl = jax.device_put((params, x, labels), jax.devices("gpu")[0])
        rows.append(("jax gpu", lambda: g(jp, jx, jl)[1]["c1"].block_until_ready()))
    torch = _torch()
    if torch is not None:
        t = [torch.from_numpy(a).cuda() for a in (params["c1"], params["c2"],
                                                   params["dense"], x, labels)]
        tstep = _torch_convnet_step(torch, lr)
        rows.append(("pytorch", lambda: tstep(*t)))
    _run(f"convnet training step, batch {batch}, float32[{batch}, 3, {size}, {size}]",
         rows, cuda, rtol=1e-3)


def transfers(cuda: Any, cupy: Any, jax: Any, n: int = 1 << 26) -> None:
    """Host->device and device->host copies of float32[n] (pageable NumPy memory), and
    GELU on 2^24 called with NumPy arrays (copy in, kernel, copy out) vs device arrays."""
    import tracer as tr
    import tracer.numpy as tnp
    x = np.random.default_rng(8).random(n).astype(F32)
    d = tr.device_put(x, "cuda")
    up = [("tracer device_put", lambda: tr.device_put(x, "cuda"))]
    down = [("tracer np.asarray", lambda: np.asarray(d))]
    if cupy is not None:
        c = cupy.asarray(x)
        up.append(("cupy asarray", lambda: cupy.asarray(x)))
        down.append(("cupy asnumpy", lambda: cupy.asnumpy(c)))
    torch = _torch()
    if torch is not None:
        t = torch.from_numpy(x).cuda()
        up.append(("pytorch .cuda()", lambda: torch.from_numpy(x).cuda()))
        down.append(("pytorch .cpu()", lambda: t.cpu()))
    for title, rows in ((f"host -> device, float32[{n}]", up),
                        (f"device -> host, float32[{n}]", down)):
        times = [(name, timeit(_synced(fn, cuda), repeat=5, min_time=0.2)) for name, fn in rows]
        RESULTS[title] = dict(times)
        report(title, times, rows[0][0])
        for name, seconds in times:
            print(f"  {name:<28} {x.nbytes / seconds / 1e9:8.2f} GB/s")
    small = x[: 1 << 24]
    f = tr.jit(lambda x: _gelu(tnp, x), backend="cuda")
    ds = tr.device_put(small, "cuda")
    np.testing.assert_allclose(np.asarray(f(small)), np.asarray(f(ds)), rtol=1e-6)
    rows = [("device arrays", _synced(lambda: f(ds), cuda)),
            ("NumPy arrays (copies)", _synced(lambda: f(small), cuda))]
    times = [(name, timeit(fn, repeat=5, min_time=0.2)) for name, fn in rows]
    RESULTS["GELU float32[2^24], device vs host arrays"] = dict(times)
    report("GELU float32[2^24], device vs host arrays", times, "device arrays")


WORKLOADS = {"gelu": gelu, "softmax": softmax, "sum": total, "matmul": matmul,
             "pooling": pooling, "batch_norm": batch_norm, "conv": conv,
             "random_bits": random_bits, "convnet_step": convnet_step,
             "transfers": transfers}


def main(argv: list[str]) -> None:
    cuda = _gpu()
    if cuda is None:
        print("bench_cuda: no GPU (numba.cuda finds no CUDA device, or the simulator is on); "
              "nothing measured")
        return
    cupy, jax = _cupy(), _jax()
    print(f"GPU: {cuda.get_current_device().name}; cupy: {cupy is not None}; "
          f"jax gpu: {jax is not None}")
    failed = []
    for name, workload in WORKLOADS.items():
        if not argv or any(a in name for a in argv):
            try:
                workload(cuda, cupy, jax)
            except Exception:  # device time is scarce: report it and measure the rest
                traceback.print_exc()
                failed.append(name)
    print(json.dumps(RESULTS))
    if failed:
        sys.exit(f"bench_cuda: failed: {', '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Per-call cost of host callbacks from compiled loops, tracer beside JAX.

    python -m bench.bench_callbacks

Each row is one 10,000-iteration `fori_loop`, compiled: a trivial `pure_callback`
per iteration, `debug.print` switched off by `config.debug_print`, and the loop with
no callback. The per-call overhead is (loop with calls - empty loop) / 10,000.
The last table compares the two ways compiled numba code can reach Python (object
mode, which the cpu backend uses, and a ctypes C callback pointer) on the same
trivial callback. Ratios from one run are what to compare.
"""

from __future__ import annotations

import ctypes
import time

import numba
import numpy as np

import tracer as tr
from bench.common import report, try_import_jax
from tracer import ops

N = 10_000
SCALAR = tr.ShapedArray((), np.float32)


def _identity(a: np.ndarray) -> np.ndarray:
    return a


def _best(fn, repeat: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _tracer_loops() -> dict[str, float]:
    def with_callback(x):
        return ops.fori_loop(0, N, lambda i, c: tr.pure_callback(_identity, SCALAR, c) + 1, x)

    def with_print(x):
        def body(i, c):
            tr.debug.print("c = {}", c)
            return c + 1
        return ops.fori_loop(0, N, body, x)

    empty = tr.jit(lambda x: ops.fori_loop(0, N, lambda i, c: c + 1, x))
    call = tr.jit(with_callback)
    x = np.float32(0)
    with tr.config.override(debug_print=False):
        silent = tr.jit(with_print)
        times = {"empty": _best(lambda: empty(x)), "pure_callback": _best(lambda: call(x)),
                 "debug.print off": _best(lambda: silent(x))}
    return times


def _jax_loops(jax) -> dict[str, float]:
    jnp, lax = jax.numpy, jax.lax
    shape = jax.ShapeDtypeStruct((), jnp.float32)
    empty = jax.jit(lambda x: lax.fori_loop(0, N, lambda i, c: c + 1, x))
    call = jax.jit(lambda x: lax.fori_loop(
        0, N, lambda i, c: jax.pure_callback(_identity, shape, c) + 1, x))
    x = jnp.float32(0)
    return {"empty": _best(lambda: empty(x).block_until_ready()),
            "pure_callback": _best(lambda: call(x).block_until_ready())}


def loops() -> None:
    ours = _tracer_loops()
    rows = [(f"tracer {k} (per iter)", v / N) for k, v in ours.items()]
    overhead = [("tracer pure_callback", (ours["pure_callback"] - ours["empty"]) / N),
                ("tracer debug.print off", max(ours["debug.print off"] - ours["empty"], 0) / N)]
    jax = try_import_jax()
    if jax is not None:
        theirs = _jax_loops(jax)
        rows += [(f"jax {k} (per iter)", v / N) for k, v in theirs.items()]
        overhead.append(("jax pure_callback", (theirs["pure_callback"] - theirs["empty"]) / N))
    jax_row = "jax pure_callback (per iter)"
    report(f"fori_loop of {N} iterations, time per iteration", rows,
           jax_row if jax is not None else rows[1][0])
    base = "jax pure_callback" if jax is not None else "tracer pure_callback"
    report("per-call overhead of a callback (loop minus empty loop)", overhead, base)


# ------------------------------------------------------------ the mechanism, in numba
def _mechanisms() -> None:
    """numba object mode vs a ctypes C callback pointer, both calling `_identity`."""
    @numba.njit
    def via_objmode(n, x):
        acc = 0.0
        for _ in range(n):
            with numba.objmode(r="float64"):
                r = float(_identity(np.asarray(x)))
            acc += r
        return acc

    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

    def c_entry(buffers: int) -> None:  # void f(void** buffers): out, in
        ptrs = ctypes.cast(buffers, ctypes.POINTER(ctypes.c_void_p))
        arrays = [np.ctypeslib.as_array(ctypes.cast(ptrs[k], ctypes.POINTER(ctypes.c_double)),
                                        (1,)).reshape(()) for k in (0, 1)]
        arrays[0][...] = _identity(arrays[1])

    c_fn = proto(c_entry)

    @numba.njit
    def via_pointer(n, x):
        out, inp, buffers = np.empty(1), np.empty(1), np.empty(2, np.intp)
        buffers[0], buffers[1] = out.ctypes.data, inp.ctypes.data
        acc = 0.0
        for _ in range(n):
            inp[0] = x
            c_fn(buffers.ctypes.data)
            acc += out[0]
        return acc

    rows = [("numba objmode", _best(lambda: via_objmode(N, 1.0)) / N),
            ("ctypes C callback pointer", _best(lambda: via_pointer(N, 1.0)) / N)]
    report("reaching Python from numba code, per call", rows, "numba objmode")


def main() -> None:
    loops()
    _mechanisms()


if __name__ == "__main__":
    main()

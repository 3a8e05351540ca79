"""Dispatch overhead of a cached jitted call and trace time of a long function.

    python -m bench.bench_dispatch

`one_element` is the cost of the call itself: `v + 1` on a float32[1] through
`tr.jit`, a plain `numba.njit` function and `jax.jit`; `overhead`, `a * b + c` on three
float32[4] beside NumPy's own expression and `numba.njit` (the floor of a call that
goes through numba's dispatcher). The tracer rows are served by a C guard (an entry
gets one after `guards.PROMOTE_AFTER` calls: `backend/cpu/c_guard.py`); the rows
marked "Python guard" are the same calls of a function made while promotion was off
(what every call cost before C guards). `c_guard_build` times building one. Rows are
timed in alternating rounds (paired: load on the shared machine hits every row
alike), fastest round's median.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np

import tracer as tr
import tracer.numpy as tnp
from bench.common import report, timeit, try_import_jax
from tracer import guards

ROUNDS = 5


def overhead() -> None:
    import numba

    x, y, z = (np.ones(4, np.float32) for _ in range(3))
    plain = numba.njit(lambda a, b, c: a * b + c)
    rows = [("numpy (x * y + z)", lambda: x * y + z),
            ("numba njit a*b+c", lambda: plain(x, y, z))]
    for backend in tr.devices():
        if backend == "cuda":
            continue
        f = _promoted(tr.jit(lambda a, b, c: a * b + c, backend=backend), x, y, z)
        ident = _promoted(tr.jit(lambda a, b, c: a, backend=backend), x, y, z)
        rows.append((f"tracer[{backend}] a*b+c", lambda f=f: f(x, y, z)))
        if backend == "cpu":
            py = _python_guarded(lambda a, b, c: a * b + c, x, y, z)
            rows.append(("tracer[cpu] a*b+c Python guard", lambda: py(x, y, z)))
            rows += _staged_rows(x, y, z)
        rows.append((f"tracer[{backend}] identity", lambda ident=ident: ident(x, y, z)))
    jax = try_import_jax()
    if jax is not None:
        jf = jax.jit(lambda a, b, c: a * b + c)
        rows.append(("jax a*b+c", lambda: jf(x, y, z).block_until_ready()))
        jc = jf.lower(x, y, z).compile()
        rows.append(("jax lower().compile() a*b+c", lambda: jc(x, y, z).block_until_ready()))
    report("cached call, 3 tiny float32[4] arguments (paired rounds)",
           _paired(rows, check=False), "numpy (x * y + z)")


def _staged_rows(*args: np.ndarray) -> list:
    """The same call through `lower().compile()` and through a deserialized
    `export.Exported` (what a program shipped without its Python source calls)."""
    from tracer import export

    f = tr.jit(lambda a, b, c: a * b + c)
    compiled = f.lower(*args).compile()
    exported = export.deserialize(export.export(f)(*args).serialize())
    return [("tracer[cpu] lower().compile() a*b+c", lambda: compiled(*args)),
            ("tracer[cpu] exported a*b+c", lambda: exported.call(*args))]


def one_element() -> None:
    import numba

    x = np.ones(1, np.float32)
    f = _promoted(tr.jit(lambda v: v + 1), x)
    py = _python_guarded(lambda v: v + 1, x)
    plain = numba.njit(lambda v: v + 1)
    rows = [("numba njit v+1", lambda: plain(x)), ("tracer[cpu] v+1", lambda: f(x)),
            ("tracer[cpu] v+1 Python guard", lambda: py(x)), ("numpy v+1", lambda: x + 1)]
    jax = try_import_jax()
    if jax is not None:
        jf = jax.jit(lambda v: v + 1)
        rows.append(("jax v+1", lambda: jf(x).block_until_ready()))
    report("cached call of v + 1 on float32[1] (paired rounds)", _paired(rows),
           "numba njit v+1")


def _promoted(f, *args, calls: int | None = None):
    """`f` (jitted), called until its entry for `args` has its C guard where it can get
    one (compiled first), or `calls` times."""
    f(*args)
    f.wait_compiled()
    for _ in range(guards.PROMOTE_AFTER + 3 if calls is None else calls):
        f(*args)
    return f


def _python_guarded(fun, *args):
    """`tr.jit(fun)` whose guards never give their place to a C guard (the path every
    call took before them)."""
    delays = guards.PROMOTE_AFTER, guards.PROMOTE_AFTER_COMPILED
    guards.PROMOTE_AFTER = guards.PROMOTE_AFTER_COMPILED = 1 << 62
    try:
        return _promoted(tr.jit(fun), *args, calls=3)
    finally:
        guards.PROMOTE_AFTER, guards.PROMOTE_AFTER_COMPILED = delays


def call_parts() -> None:
    """What a cached `a * b + c` call on three float32[4] spends where (paired rounds):
    numba's compiled entry point with the output passed in (unboxing 5 arguments), the
    output's allocation and `EagerArray` view, the Python guard (its checks, the hit
    count and the launcher's body: `tracer.guards.make_guard`), the C guard (the same
    in machine code: checks, `PyArray_NewFromDescr`, the host's native code) and the
    whole call (the C guard plus `Jitted.__call__`); beside NumPy and `numba.njit` (its
    dispatcher types the arguments, allocates the output with NRT and boxes it)."""
    import numba

    from tracer.numpy._eager import EagerArray

    x, y, z = (np.ones(4, np.float32) for _ in range(3))
    args = (x, y, z)
    f = _promoted(tr.jit(lambda a, b, c: a * b + c, backend="cpu"), *args)
    py = _python_guarded(lambda a, b, c: a * b + c, *args)
    executable = f._last.compiled.executable
    host, dims, out = executable._host, executable._dims, np.empty(4, np.float32)
    plain = numba.njit(lambda a, b, c: a * b + c)
    rows = [("numpy (x * y + z)", lambda: x * y + z),
            ("numba njit a*b+c", lambda: plain(*args)),
            ("(numba entry point, out passed)", lambda: host(x, y, z, out, dims)),
            ("(np.empty + EagerArray view)", lambda: np.empty((4,), np.float32).view(EagerArray)),
            ("(Python guard: checks+launch)", lambda: py._last.guard(args)),
            ("(Python-guarded whole call)", lambda: py(*args)),
            ("(C guard: checks+launch)", lambda: f._last.guard(args)),
            ("tracer[cpu] a*b+c (whole call)", lambda: f(*args))]
    report("where a cached call of a*b+c on 3 float32[4] goes (paired rounds)",
           _paired(rows, check=False), "numpy (x * y + z)")


def _paired(rows: list, check: bool = True) -> list[tuple[str, float]]:
    """Each row's fastest median over `ROUNDS` rounds that time every row in turn
    (`check`: every row computes the first row's result)."""
    for _, fn in rows if check else ():
        np.testing.assert_array_equal(np.asarray(fn()), np.asarray(rows[0][1]()))
    best = {name: float("inf") for name, _ in rows}
    for _ in range(ROUNDS):
        for name, fn in rows:
            best[name] = min(best[name], timeit(fn, repeat=5, min_time=0.02))
    return list(best.items())


def c_guard_build() -> None:
    """What a C guard costs to build: compiling its structure (LLVM's parse and MCJIT
    codegen), or, where the structure has its code, the entry's words and builtins;
    beside making the Python guard, and the calls after which each has paid for itself
    (`guards.PROMOTE_AFTER` and `PROMOTE_AFTER_COMPILED` are about that many)."""
    from tracer.backend.cpu import c_abi, c_guard

    x, y, z = (np.ones(4, np.float32) for _ in range(3))
    f = _promoted(tr.jit(lambda a, b, c: a * b + c), x, y, z)
    py = _python_guarded(lambda a, b, c: a * b + c, x, y, z)
    entry, stats = f._last, f._stats
    parts = c_guard.plan_parts(entry.compiled.executable, entry.signature)
    counters = (stats, c_abi.check_slot(stats, type(stats).hits),
                entry, c_abi.check_slot(entry, type(entry).used))
    fallbacks = (entry.guard, entry.plain)
    copies = iter(range(1 << 30))

    def compile_structure() -> None:  # (a copy of its code, under names of its own)
        n = next(copies)
        c_guard._compile(entry.c_guard.ir.replace("@tracer_", f"@bench{n}_"))

    rows = [("C guard, structure compiled", timeit(compile_structure, repeat=3)),
            ("C guard, structure cached", timeit(lambda: c_guard.build(
                parts, counters, fallbacks, (entry.compiled,)), repeat=5)),
            ("Python guard build", timeit(lambda: guards.make_guard(
                entry.signature, entry, stats, promote=False), repeat=5))]
    saved = timeit(lambda: py(x, y, z)) - timeit(lambda: f(x, y, z))
    report("building the guard of a*b+c on 3 float32[4]", rows, "Python guard build")
    print(f"  calls to pay for it ({saved * 1e6:.2f} µs saved a call): "
          f"{rows[0][1] / saved:,.0f} compiling its structure (PROMOTE_AFTER = "
          f"{guards.PROMOTE_AFTER:,}), {rows[1][1] / saved:,.0f} with the structure's "
          f"code (PROMOTE_AFTER_COMPILED = {guards.PROMOTE_AFTER_COMPILED})")


def trace_time(n_ops: int = 1000, repeat: int = 5) -> None:
    """The median of `repeat` traces of new functions (a trace is not cached across
    functions; one cold sample in the long bench process once took 735 ms against 26
    alone: a collection of the whole heap or another thread landing in it)."""
    def chain(np_: Any) -> Callable[[Any], Any]:
        def run(x: Any) -> Any:
            for i in range(n_ops // 2):
                x = np_.sin(x) * 1.0001 if i % 2 else x + 0.5
            return x
        return run

    def median_trace(trace: Callable[[Callable[[Any], Any]], Any], np_: Any) -> float:
        times = []
        for _ in range(repeat):
            fn = chain(np_)
            t0 = time.perf_counter()
            trace(fn)
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    x = np.ones(8, np.float32)
    rows = [(f"tracer trace {n_ops} ops", median_trace(lambda f: tr.make_hlo(f)(x), tnp))]
    jax = try_import_jax()
    if jax is not None:
        rows.append((f"jax make_jaxpr {n_ops} ops",
                     median_trace(lambda f: jax.make_jaxpr(f)(x), jax.numpy)))
    report(f"trace time of a {n_ops}-op function", rows, rows[0][0])


if __name__ == "__main__":
    one_element()
    overhead()
    call_parts()
    c_guard_build()
    trace_time()

"""`tracer.random` on the cpu backend against NumPy's Generator and JAX (when installed).

    python -m bench.bench_random

10**7 float32 uniforms and normals, and 10**7 uint32 bits. tracer and JAX produce
the same numbers (checked); NumPy's PCG64 stream is another generator, timed as
the reference point. Ratios are to NumPy; compare within one run (noisy machine).
"""

from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np

import tracer as tr
import tracer.random as trr
from bench.common import report, timeit, try_import_jax

N = 10 ** 7
RESULTS: dict[str, dict[str, float]] = {}


def _check(name: str, got: Any, want: Any, exact: bool) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if exact:
        np.testing.assert_array_equal(got, want, err_msg=name)
    else:  # normal: a few ulp where XLA's log1p rounds differently
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def _workload(title: str, tracer_fn: Callable[[Any], Any], numpy_fn: Callable[[], Any],
              jax_fn: Callable[[Any], Any] | None, exact: bool) -> None:
    key = trr.key(0)
    jitted = tr.jit(tracer_fn)
    rows: list[tuple[str, Callable[[], Any]]] = [("numpy Generator", numpy_fn),
                                                 ("tracer cpu", lambda: jitted(key))]
    jax = try_import_jax()
    if jax is not None and jax_fn is not None:
        jax_jitted = jax.jit(jax_fn)
        jax_key = jax.random.PRNGKey(0)
        _check(title, jitted(key), jax_jitted(jax_key), exact)
        rows.append(("jax", lambda: jax_jitted(jax_key).block_until_ready()))
    times = [(name, timeit(fn, repeat=5)) for name, fn in rows]
    RESULTS[title] = dict(times)
    report(title, times, "numpy Generator")


def main() -> None:
    gen = np.random.default_rng(0)
    jax = try_import_jax()
    jr = jax.random if jax is not None else None
    _workload(f"uniform float32 x {N:.0e}", lambda k: trr.uniform(k, (N,), np.float32),
              lambda: gen.random(N, dtype=np.float32),
              (lambda k: jr.uniform(k, (N,))) if jr else None, exact=True)
    _workload(f"normal float32 x {N:.0e}", lambda k: trr.normal(k, (N,), np.float32),
              lambda: gen.standard_normal(N, dtype=np.float32),
              (lambda k: jr.normal(k, (N,))) if jr else None, exact=False)
    _workload(f"bits uint32 x {N:.0e}", lambda k: trr.bits(k, (N,), np.uint32),
              lambda: gen.integers(0, 2 ** 32, N, dtype=np.uint32),
              (lambda k: jr.bits(k, (N,))) if jr else None, exact=True)
    print(json.dumps(RESULTS))


if __name__ == "__main__":
    main()

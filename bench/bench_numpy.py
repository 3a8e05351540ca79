"""NumPy-written models run unmodified under `tr.jit` (through `__array_ufunc__` /
`__array_function__`) against NumPy itself (and JAX when installed).

    python -m bench.bench_numpy            # all workloads
    python -m bench.bench_numpy kmeans     # the workloads whose name contains "kmeans"

The model functions below call only `np.*` and array methods: the same source runs
on ndarrays (NumPy) and, inside `tr.jit`, on traced arrays (tracer). Each workload
checks that the two agree, then prints medians and ratios; the last line is the
table as JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import numpy as np

import tracer as tr
from bench.common import jax_x64, report, timeit, try_import_jax

RESULTS: dict[str, dict[str, float]] = {}


# ------------------------------------------------------------------ the models (plain NumPy)
def kmeans_step(x: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """One Lloyd iteration: assign each point to its nearest center, average per center."""
    k = centers.shape[0]
    d2 = (np.sum(x * x, axis=1)[:, None] - 2.0 * (x @ centers.T)
          + np.sum(centers * centers, axis=1)[None, :])
    labels = np.argmin(d2, axis=1)
    onehot = (labels[:, None] == np.arange(k)[None, :]).astype(x.dtype)
    counts = np.sum(onehot, axis=0)
    sums = onehot.T @ x
    return sums / np.maximum(counts, 1.0)[:, None]


def heat_steps(u: np.ndarray, alpha: float, steps: int) -> np.ndarray:
    """Explicit heat diffusion on a periodic grid: `steps` 5-point Laplacian updates."""
    for _ in range(steps):
        lap = (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1)
               + np.roll(u, -1, axis=1) - 4.0 * u)
        u = u + alpha * lap
    return u


def heat_steps_dirichlet(u: np.ndarray, alpha: float, steps: int) -> np.ndarray:
    """The same on a grid with a zero (Dirichlet) boundary: interior slices, then pad."""
    for _ in range(steps):
        lap = (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2]
               - 4.0 * u[1:-1, 1:-1])
        u = np.pad(u[1:-1, 1:-1] + alpha * lap, 1)
    return u


def nbody_step(pos: np.ndarray, vel: np.ndarray, mass: np.ndarray,
               dt: float) -> tuple[np.ndarray, np.ndarray]:
    """One leapfrog-style step of softened all-pairs gravity."""
    diff = pos[None, :, :] - pos[:, None, :]
    dist2 = np.sum(diff * diff, axis=-1) + 1e-3
    inv3 = mass[None, :] / (dist2 * np.sqrt(dist2))
    acc = np.einsum("ij,ijk->ik", inv3, diff)
    vel = vel + dt * acc
    return pos + dt * vel, vel


# ------------------------------------------------------------------ harness
def _check_and_time(title: str, rows: list[tuple[str, Callable[[], Any]]],
                    rtol: float) -> None:
    expected = rows[0][1]()
    for name, fn in rows[1:]:
        got = fn()
        for g, w in zip(_leaves(got), _leaves(expected), strict=True):
            np.testing.assert_allclose(np.asarray(g), w, rtol=rtol,
                                       atol=rtol * float(np.max(np.abs(w), initial=1.0)),
                                       err_msg=f"{title}: {name}")
    times = [(name, timeit(fn, repeat=5)) for name, fn in rows]
    RESULTS[title] = dict(times)
    report(title, times, "numpy")


def _leaves(x: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in x] if isinstance(x, tuple) else [np.asarray(x)]


def _jitted(fn: Callable[..., Any], **static: Any) -> Callable[..., Any]:
    """`fn` under tr.jit with the keyword arguments static (the same NumPy source)."""
    return tr.jit(lambda *args: fn(*args, **static))


def _jax_row(fn: Callable[..., Any], args: tuple, **static: Any) -> list:
    jax = try_import_jax()
    if jax is None:
        return []
    import jax.numpy as jnp

    def on_jnp(*a: Any) -> Any:
        # The model source with jax.numpy as np (the JAX way to run NumPy code).
        g = dict(fn.__globals__, np=jnp)
        return type(fn)(fn.__code__, g)(*a, **static)

    # the models run in float64, as NumPy
    return [("jax (jnp source)", jax_x64(jax, on_jnp, *args))]


def bench_kmeans() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100_000, 16))
    centers = x[rng.choice(len(x), 64, replace=False)]
    f = _jitted(kmeans_step)
    rows = [("numpy", lambda: kmeans_step(x, centers)),
            ("tracer jit (np.* source)", lambda: f(x, centers))]
    rows += _jax_row(kmeans_step, (x, centers))
    _check_and_time("kmeans step, 100k points x 16 dims, 64 centers", rows, rtol=1e-9)


def bench_heat() -> None:
    u = np.random.default_rng(1).random((1000, 1000))
    steps = 10
    for title, model in (("periodic, np.roll", heat_steps),
                         ("zero boundary, slices + np.pad", heat_steps_dirichlet)):
        f = _jitted(model, steps=steps)
        rows = [("numpy", lambda m=model: m(u, 0.1, steps)),
                ("tracer jit (np.* source)", lambda f=f: f(u, 0.1))]
        rows += _jax_row(model, (u, 0.1), steps=steps)
        _check_and_time(f"heat diffusion ({title}), 1000x1000, {steps} steps", rows,
                        rtol=1e-12)


def bench_nbody() -> None:
    rng = np.random.default_rng(2)
    n = 1000
    pos, vel, mass = rng.normal(size=(n, 3)), rng.normal(size=(n, 3)) * 0.1, rng.random(n)
    f = _jitted(nbody_step)
    rows = [("numpy", lambda: nbody_step(pos, vel, mass, 0.01)),
            ("tracer jit (np.* source)", lambda: f(pos, vel, mass, 0.01))]
    rows += _jax_row(nbody_step, (pos, vel, mass, 0.01))
    _check_and_time(f"n-body step, {n} bodies", rows, rtol=1e-9)


WORKLOADS = {"kmeans": bench_kmeans, "heat": bench_heat, "nbody": bench_nbody}


def main(argv: list[str]) -> None:
    for name, run in WORKLOADS.items():
        if not argv or any(a in name for a in argv):
            run()
    print(json.dumps(RESULTS))


if __name__ == "__main__":
    main(sys.argv[1:])

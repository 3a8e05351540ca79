"""`python -m tracer`: trace a small model, print its HLO, run it, call it again
and show the cache hit."""

from __future__ import annotations

import time

import numpy as np

import tracer as tr
import tracer.numpy as tnp


@tr.jit
def predict(w, b, x):
    return tnp.tanh(x @ w + b)


def main() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    x = rng.standard_normal((4, 3)).astype(np.float32)

    print(f"tracer {tr.__version__} — backend {tr.config.default_backend!r}\n")
    print(tr.make_hlo(predict)(w, b, x))

    t0 = time.perf_counter()
    y = predict(w, b, x)
    first = time.perf_counter() - t0
    print("predict(w, b, x) =")
    print(y)
    print(f"matches NumPy: {np.allclose(y, np.tanh(x @ w + b), rtol=1e-6)}")
    print(f"first call (trace + run; numba compiles in the background, compile_mode="
          f"{tr.config.compile_mode!r}): {first * 1e3:.2f} ms   {predict.cache_info()}")

    predict.wait_compiled()
    t0 = time.perf_counter()
    predict(w, b, x)
    second = time.perf_counter() - t0
    print(f"second call (cache hit):            {second * 1e6:.1f} µs   {predict.cache_info()}")

    predict(w, b, rng.standard_normal((8, 3)).astype(np.float32))
    print(f"new batch size 8 (retrace):                    {predict.cache_info()}")


if __name__ == "__main__":
    main()

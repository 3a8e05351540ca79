"""Non-contiguous inputs on the cpu backend: read in place against copied first.

    python -m bench.bench_strided          # 4096x4096 float32
    python -m bench.bench_strided 1024     # another side

For each view (a `[::2]` slice, a transpose, reversed rows, a broadcast row) and each
kernel (element-wise, a max and a sum over rows), the rows are: what tracer does by
default ("tracer (default)": `backend/cpu/strided.py` decides between the two),
"tracer, copy + kernel" (the view made C-contiguous first: what the launcher did
for every non-contiguous input), "tracer, in place" (the strided version forced,
also where the default copies) and NumPy on the view. Rounds alternate between the
rows so that a busy machine hits them alike; each row reports its fastest round.
The last line prints the strided version's compile time (it is made once per module).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable

import numpy as np

import tracer as tr
import tracer.numpy as tnp
from bench.common import report, timeit
from tracer.backend.cpu import strided

ROUNDS = 3


def _elementwise(x: Any) -> Any:
    return x * 2 + 1


def _row_max(x: Any) -> Any:
    return tnp.max(x, axis=-1)


def _row_sum(x: Any) -> Any:
    return tnp.sum(x, axis=-1)


def _forced(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A jitted `fn` whose strided version serves every view (also the input of a float
    sum, which the default copies)."""
    jitted = tr.jit(fn)

    def call(x: np.ndarray) -> Any:
        saved = strided.elementwise_inputs
        strided.elementwise_inputs = lambda source, host, params: {p for p, _ in params}
        try:
            return jitted(x)
        finally:
            strided.elementwise_inputs = saved
    return call


def _case(title: str, fn: Callable[[Any], Any], view: np.ndarray) -> None:
    default, forced = tr.jit(fn), _forced(lambda x: fn(x))
    rows = [("tracer (default)", lambda: default(view)),
            ("tracer, copy + kernel", lambda: default(np.ascontiguousarray(view))),
            ("tracer, in place", lambda: forced(view)),
            ("numpy", lambda: fn(view))]
    expected = np.asarray(rows[1][1]())
    for name, run in rows:
        np.testing.assert_allclose(np.asarray(run()), expected, rtol=1e-4, atol=1e-3,
                                   err_msg=name)  # (sums in place round differently)
    best = {name: float("inf") for name, _ in rows}
    for _ in range(ROUNDS):
        for name, run in rows:
            best[name] = min(best[name], timeit(run, repeat=3))
    report(title, list(best.items()), "tracer, copy + kernel")


def _compile_seconds(n: int) -> float:
    """Seconds the first in-place call of a fresh element-wise function takes beyond a
    contiguous call: the strided version's compile (or its load from the disk cache)."""
    f = tr.jit(lambda x: x * 3 - 1)
    x = np.ones((n, 2 * n), np.float32)
    f(x[:, ::2].copy())
    start = time.perf_counter()
    f(x[:, ::2])
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    n = int(argv[0]) if argv else 4096
    strided.IN_PLACE_MIN_BYTES = 0  # (the strided version compiled at its first use)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n)).astype(np.float32)
    flat = rng.standard_normal(2 * n * n).astype(np.float32)
    row = np.broadcast_to(x[:1], (n, n))
    side = f"float32[{n},{n}]"
    _case(f"x * 2 + 1, x = flat[::2], float32[{n * n}]", _elementwise, flat[::2])
    _case(f"x * 2 + 1, x = a.T, a {side}", _elementwise, x.T)
    _case(f"x * 2 + 1, x = a broadcast row, {side}", _elementwise, row)
    _case(f"max over rows of a[::-1], {side}", _row_max, x[::-1])
    _case(f"max over rows of a.T, {side}", _row_max, x.T)
    _case(f"sum over rows of a[::-1], {side}", _row_sum, x[::-1])
    print(f"\nthe strided version's compile (or disk load): {_compile_seconds(64):.2f} s")


if __name__ == "__main__":
    tr.config.update("compile_mode", "sync")
    main(sys.argv[1:])

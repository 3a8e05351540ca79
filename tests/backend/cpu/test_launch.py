"""The cpu launcher's warm buffers (cpu/launch.py): a large output's memory is handed
out again only once nothing references the array that held it, so two live results,
a result and a view, memoryview or argument of the caller, or the results of calls
running at once on several threads, never share memory."""

from __future__ import annotations

import gc
import threading

import numpy as np

import tracer as tr
import tracer.numpy as tnp
from tracer.backend.cpu.launch import POOL_MIN_BYTES

N = 2 * POOL_MIN_BYTES // 4  # float32 elements: large enough for the pool


def _data(seed=0):
    return np.random.default_rng(seed).standard_normal(N).astype(np.float32)


def _disjoint(arrays):
    for i, a in enumerate(arrays):
        for b in arrays[i + 1:]:
            assert not np.shares_memory(a, b)


def test_live_results_never_share_memory_and_keep_their_values():
    f = tr.jit(lambda x, s: x * s)
    x = _data()
    results = [f(x, float(k)) for k in range(5)]
    _disjoint(results)
    for k, r in enumerate(results):
        np.testing.assert_array_equal(r, x * np.float32(k))


def test_a_dropped_result_is_reused_and_a_viewed_one_is_not():
    f = tr.jit(lambda x: tnp.exp(x))
    x = _data(1)
    first = f(x)
    address = first.ctypes.data
    del first
    gc.collect()
    second = f(x)
    assert second.ctypes.data == address  # warm memory: no fresh pages to fault in
    view, held = second[::3], memoryview(f(x))
    del second
    kept = view.copy(), np.array(held)
    for _ in range(3):
        r = f(-x)
        assert not np.shares_memory(r, view) and not np.shares_memory(r, np.asarray(held))
        np.testing.assert_allclose(r, np.exp(-x), rtol=1e-6)
    np.testing.assert_array_equal(view, kept[0])
    np.testing.assert_array_equal(np.asarray(held), kept[1])


def test_a_result_passed_back_in_is_not_overwritten():
    f = tr.jit(lambda x: x + 1)
    y = _data(2)
    want = y.copy()
    for _ in range(4):
        before = y
        y = f(y)
        want = want + 1
        assert not np.shares_memory(y, before)
        np.testing.assert_array_equal(y, want)


def test_concurrent_calls_get_their_own_buffers():
    """Threads calling one executable (numba releases the GIL): intermediate and
    output buffers are never shared between calls in flight."""
    f = tr.jit(lambda x: (lambda t: t[::-1] * t)(tnp.exp(x)))
    xs = [_data(10 + k) for k in range(4)]
    f(xs[0])
    wants = [np.exp(x)[::-1] * np.exp(x) for x in xs]
    results: dict = {}

    def work(k):
        results[k] = [f(xs[k]) for _ in range(6)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [r for k in range(4) for r in results[k]]
    _disjoint(everything)
    for k in range(4):
        for r in results[k]:
            np.testing.assert_allclose(r, wants[k], rtol=1e-6)

"""The device memory pool (`cuda/lib/pool.py`): a dead array's buffer is reused by the next
array of its size, never while an array still holds it; the pool holds no more than its
limit and empties itself when an allocation runs out of memory. The bookkeeping is checked
with Python objects standing in for device buffers (their finalizers run on `del`, as
numba's do), and with real device arrays when a GPU is there (`TRACER_CUDA_REAL=1`)."""

from __future__ import annotations

import gc
import itertools
import os
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.backend.cuda.lib.pool import LARGE, SMALL, Pool, bucket


class Buffer:
    """A stand-in device buffer: an id, as a device pointer is."""
    ids = itertools.count()

    def __init__(self, size: int) -> None:
        self.id, self.size = next(Buffer.ids), size


class Allocation:
    """What numba's `MemoryPointer` is to the pool: it calls its finalizer when it dies."""

    def __init__(self, buffer: Buffer, size: int, give_back) -> None:
        self.buffer, self.size = buffer, size
        weakref.finalize(self, give_back, buffer)


class OutOfMemory(Exception):
    pass


def _pool(limit: int = 1 << 30, capacity: int | None = None) -> tuple[Pool, list[int]]:
    """A pool over a fake device of `capacity` bytes (a buffer is allocated while it is
    referenced, as numba frees a dropped `MemoryPointer`); returns it and the allocation
    sizes asked of the device."""
    alive: weakref.WeakSet[Buffer] = weakref.WeakSet()
    asked: list[int] = []

    def allocate(size: int) -> Buffer:
        if capacity is not None and sum(b.size for b in alive) + size > capacity:
            raise OutOfMemory
        asked.append(size)
        buffer = Buffer(size)
        alive.add(buffer)
        return buffer
    return Pool(allocate, Allocation, lambda: limit, OutOfMemory), asked


def test_buckets_round_up_to_512_bytes_then_to_whole_mebibytes():
    assert [bucket(n) for n in (1, 512, 513, LARGE, LARGE + 1)] == [
        SMALL, SMALL, 2 * SMALL, LARGE, 2 * LARGE]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 3 * LARGE)), min_size=1, max_size=40))
def test_live_allocations_never_share_a_buffer(steps):
    """Any sequence of allocations and frees: the live ones hold distinct buffers, each at
    least as large as asked, and a freed buffer of the right size is reused."""
    pool, asked = _pool()
    live: list[Allocation] = []
    for free, nbytes in steps:
        if free and live:
            live.pop(0)  # (reference counting runs its finalizer now)
            continue
        before, held = len(asked), pool.held
        allocation = pool.take(nbytes)
        assert allocation.size >= nbytes
        if len(asked) == before:  # reused: the pool held one of this size
            assert pool.held == held - allocation.size
        live.append(allocation)
        del allocation
        ids = [a.buffer.id for a in live]
        assert len(ids) == len(set(ids))


def test_a_freed_buffer_is_reused_and_the_limit_is_kept():
    pool, asked = _pool(limit=3 * SMALL)
    first = pool.take(100)
    buffer = first.buffer
    del first
    assert pool.held == SMALL
    second = pool.take(200)
    assert second.buffer is buffer and len(asked) == 1
    del second
    many = [pool.take(SMALL) for _ in range(5)]
    del many
    assert pool.held == 3 * SMALL  # two of the five went back to the driver


def test_an_allocation_out_of_memory_empties_the_pool_and_retries():
    pool, asked = _pool(capacity=4 * SMALL)
    kept = [pool.take(SMALL) for _ in range(3)]
    del kept
    assert pool.held == 3 * SMALL
    big = pool.take(2 * SMALL)  # 3 held + 2 > 4: the pool lets go of its 3, then allocates
    assert big.size == 2 * SMALL and pool.held == 0 and asked == [SMALL] * 3 + [2 * SMALL]


@pytest.mark.skipif(os.environ.get("TRACER_CUDA_REAL") != "1",
                    reason="device pointers exist on a real GPU only")
def test_device_results_alive_at_once_have_distinct_memory():
    import tracer as tr
    f = tr.jit(lambda x: x * 2.0, backend="cuda")
    x = tr.device_put(np.arange(1 << 20, dtype=np.float32), "cuda")
    results = [f(x) for _ in range(4)]
    pointers = {r.device_ctypes_pointer.value for r in results}
    assert len(pointers) == 4
    address = results[0].device_ctypes_pointer.value
    del results
    gc.collect()
    again = f(x)  # the freed buffers are reused
    assert again.device_ctypes_pointer.value in pointers | {address}
    np.testing.assert_array_equal(again.copy_to_host(), np.arange(1 << 20) * 2.0)

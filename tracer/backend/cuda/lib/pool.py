"""Device memory kept for reuse: the buffers of dead device arrays go back to a pool by
size, and the next array of that size takes one instead of a new allocation.

numba allocates every device array with cuMemAlloc and frees it through a deferred list;
for the large arrays tracer's kernels write (a 256 MiB GELU output), the allocation costs
more than the kernel. Reuse needs no events because every kernel and copy tracer starts
runs on the default stream, in order: a buffer given back on the host is only written by
work queued after the work that last read it. The pool holds at most a quarter of the
device's memory in free buffers, and gives them all back to the driver when an allocation
fails for lack of memory.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import defaultdict
from typing import Any, Callable, Sequence

import numpy as np

SMALL = 512         # bytes: sizes are rounded up to a multiple of this,
LARGE = 1 << 20     # and above 1 MiB to a multiple of 1 MiB (fewer sizes to keep apart)


def bucket(nbytes: int) -> int:
    """The size of the buffer an array of `nbytes` bytes gets."""
    step = LARGE if nbytes > LARGE else SMALL
    return -(-nbytes // step) * step


class Pool:
    """Free device buffers by size. `allocate(size)` makes a new buffer (a numba
    `MemoryPointer` that frees itself when dropped), `wrap(buffer, size, give_back)` an
    allocation whose finalizer calls `give_back` (separate so the bookkeeping is testable
    without a GPU), `limit()` the most bytes to hold."""

    def __init__(self, allocate: Callable[[int], Any], wrap: Callable[[Any, int, Callable], Any],
                 limit: Callable[[], int], out_of_memory: type[Exception]) -> None:
        self._allocate, self._wrap, self._limit = allocate, wrap, limit
        self._out_of_memory = out_of_memory
        self._free: dict[int, list[Any]] = defaultdict(list)
        self._held = 0
        self._lock = threading.RLock()  # (a finalizer can run inside `take`, on a GC)

    @property
    def held(self) -> int:
        """Bytes in free buffers."""
        return self._held

    def take(self, nbytes: int) -> Any:
        """An allocation of at least `nbytes` bytes, reused when one of its size is free."""
        size = bucket(nbytes)
        with self._lock:
            buffers = self._free.get(size)
            if buffers:
                self._held -= size
                return self._wrap(buffers.pop(), size, functools.partial(self._give, size))
        try:
            buffer = self._allocate(size)
        except self._out_of_memory:
            self.release()
            buffer = self._allocate(size)
        return self._wrap(buffer, size, functools.partial(self._give, size))

    def _give(self, size: int, buffer: Any) -> None:
        with self._lock:
            if self._held + size <= self._limit():
                self._free[size].append(buffer)
                self._held += size
        # (beyond the limit `buffer` is dropped here, and numba frees it)

    def release(self) -> None:
        """Give every free buffer back to the driver."""
        with self._lock:
            self._free.clear()
            self._held = 0


def _c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


@functools.cache
def device_pool() -> Pool:
    """The pool of the current CUDA context (numba's driver API; real GPUs only)."""
    from numba import cuda
    from numba.cuda.cudadrv.driver import CudaAPIError, MemoryPointer

    context = cuda.current_context()
    total = context.get_memory_info()[1]

    def wrap(buffer: Any, size: int, give_back: Callable[[Any], None]) -> Any:
        return MemoryPointer(context, buffer.device_pointer, size,
                             finalizer=functools.partial(give_back, buffer))
    return Pool(context.memalloc, wrap, lambda: total // 4, CudaAPIError)


def empty(shape: Sequence[int], dtype: np.dtype) -> Any:
    """A C-contiguous device array whose buffer comes from the pool."""
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    nbytes = math.prod(shape) * dtype.itemsize
    memory = device_pool().take(nbytes)
    return DeviceNDArray(tuple(shape), _c_strides(shape, dtype.itemsize), dtype,
                         gpu_data=memory)

"""The thread count of numba's pool, set by a host function itself, and read by the
library kernels that cut their work into a part per thread.

numba's thread count is per calling thread (a new Python thread starts at
NUMBA_NUM_THREADS), so a host function whose kernels run on the pool first sets
tracer's count (`cpu.options.thread_count`) for the thread calling it. Set here, in
machine code, it costs nothing beside the call, and a C guard (`cpu.c_guard`), which
calls the host's machine code with no Python in between, gets it too.

`set_pool_threads(n)` calls the threading layer's `set_num_threads` by that symbol
name, which numba binds when it launches its pool (`threads.start_pool` launches it
before any host is compiled or loaded): a name, not an address, so the host's machine
code stays valid in numba's disk cache for the next process. `pool_thread_count()`
reads the count by the layer's `get_num_threads` symbol likewise (`numba.get_num_threads`
reads it through a ctypes pointer, which keeps its callers out of the disk cache).
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["pool_thread_count", "set_pool_threads"]

# numba's threading layer registers `set_num_threads` and `get_num_threads` when it
# starts: start it now (2.5 ms, once), before a cached caller is loaded. numba starts it
# on loading only functions with a parallel loop of their own (numba #8578; tracer's
# cache starts it before loading a host, but a vendored `tracer.aot` module or a direct
# call does not): a cached `sort_numpy.numpy_sort_vector_parallel` loaded first
# crashed. (In tracer the cpu backend has imported `cpu.threads`, which sets the pool's
# spin policy, before it imports this.)
numba.get_num_threads()


@intrinsic
def set_pool_threads(typingctx, n):
    """numba's pool runs this thread's next parallel loops on `n` threads (1 ..
    NUMBA_NUM_THREADS: the caller's `thread_count()`)."""
    if not isinstance(n, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        layer_set = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i32]), "set_num_threads")
        builder.call(layer_set, [context.cast(builder, args[0], signature.args[0], types.int32)])
        return context.get_dummy_value()
    return types.none(n), codegen


@intrinsic
def pool_thread_count(typingctx):
    """numba's thread count for this thread (`numba.set_num_threads`), read through
    the symbol numba's threading layer registers."""

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(cgutils.intp_t, [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "get_num_threads")
        return builder.call(fn, [])
    return types.intp(), codegen

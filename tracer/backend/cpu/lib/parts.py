"""Part functions of a long host function, called by address: numba compiles each part
once, on its own, and never again inside the host.

A call from one njit function to another makes numba link the callee's LLVM module
into the caller's and run LLVM's module passes and code generation over the whole
again (inlining a part with one call site back into the host): a host cut into linked
parts compiles everything twice and is still optimized as one function (measured in
`bench/bench_compile_scaling`). Here the host calls a part through an external symbol
of its own name instead, so its LLVM module holds only the calls:

    @separately_compiled
    @numba.njit(cache=True, ...)
    def chain_part0(arg0, n0): ...

`chain_part0(arg0, n0)` in another njit function types as the part does for those
argument types (compiling it, or loading it from numba's disk cache, where it has an
entry of its own) and lowers to a call, in numba's native calling convention, of
`tracer_part.<module>.<part>.<digest of the argument types>`. That name is the same in
every process, so a host loaded from the disk cache finds it too: `register` binds it
to this process's machine code (LLVM resolves an external symbol against
`llvmlite.binding.add_symbol`'s table), and the cpu cache registers every part, in
order, before it compiles or loads a host (`cache.compile_module`). A registered part's
machine code is kept for the life of the process, as a symbol table entry is.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from llvmlite import binding as llvm
from numba.core import cgutils, types
from numba.core.typing import signature
from numba.extending import intrinsic

_LOCK = threading.Lock()
# symbol -> the parts compiled under it, the latest bound (a host loaded earlier, before
# `clear_memory` dropped the module, still calls the one it was bound to: all stay loaded)
_KEPT: dict[str, list[Any]] = {}


def symbol(dispatcher: Any, argtypes: tuple) -> str:
    """The process-independent name a host calls part `dispatcher` by, for `argtypes`."""
    digest = hashlib.sha256(str(tuple(argtypes)).encode()).hexdigest()[:20]
    return f"tracer_part.{dispatcher.py_func.__module__}.{dispatcher.__name__}.{digest}"


def register(dispatcher: Any, argtypes: tuple) -> Any:
    """Compile (or load) the part for `argtypes` and bind its symbol to that machine
    code; returns the part's return type."""
    argtypes = tuple(argtypes)
    dispatcher.compile(argtypes)
    compiled = dispatcher.overloads[argtypes]
    name = symbol(dispatcher, argtypes)
    with _LOCK:
        kept = _KEPT.setdefault(name, [])
        if not kept or kept[-1] is not compiled:
            address = compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)
            llvm.add_symbol(name, address)
            kept.append(compiled)
    return compiled.signature.return_type


def separately_compiled(dispatcher: Any) -> Any:
    """An njit-callable stand-in for part `dispatcher` that calls its machine code by
    symbol (see the module doc); `.dispatcher` is the part itself."""

    def typer(typingctx: Any, *argtypes: types.Type) -> Any:
        restype = register(dispatcher, argtypes)
        name = symbol(dispatcher, argtypes)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            values = cgutils.unpack_tuple(builder, args[0])  # (the *argtypes tuple)
            fnty = context.call_conv.get_function_type(restype, argtypes)
            callee = cgutils.get_or_insert_function(builder.module, fnty, name)
            status, result = context.call_conv.call_function(
                builder, callee, restype, argtypes, values)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return result  # (a new reference, as any call's result)
        return signature(restype, types.StarArgTuple(argtypes)), codegen

    typer.__name__ = dispatcher.__name__
    call = intrinsic(typer)
    call.dispatcher = dispatcher
    return call

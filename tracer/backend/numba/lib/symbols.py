"""Arrays that compiled code finds by symbol name.

A process publishes an int64 array's address under a name (`llvmlite.binding.
add_symbol`); compiled code declares the name as an external global, which LLVM
resolves when the code is linked. The machine code then holds no process-specific
address, so numba's disk cache stays valid across processes (a ctypes pointer or an
address read at compile time would be baked in as a constant).
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


def published_array(name: str) -> Any:
    """An intrinsic (no arguments) returning a pointer to the int64 array published as
    `name`."""
    @intrinsic
    def address(typingctx):  # numba intrinsic protocol
        def codegen(context, builder, signature, args):
            array = builder.module.globals.get(name)
            if array is None:
                array = ir.GlobalVariable(builder.module, ir.IntType(64), name)
                array.linkage = "external"
            return array
        return types.CPointer(types.int64)(), codegen
    return address

"""C guards: a cached jit signature served by machine code, no Python frame in between.

    parts = c_guard.plan_parts(executable, signature)   # None: not one it serves
    cg = c_guard.build(parts, counters, fallbacks, keep)  # a CGuard: .guard, .plain, .ir

A guard (`tracer.guards`) is Python: each comparison of a type, shape or flag costs
15-35 ns, so a cached call of `a * b + c` cost twice NumPy's own expression. A C guard
makes the same checks in LLVM IR (`c_guard_ir`), allocates the output with NumPy's
C API and calls the host function's native code with the arrays' data pointers,
skipping the Python guard, the launcher and numba's unboxing. It is a real builtin
(`PyCFunction_NewEx` over a `PyMethodDef` it keeps), so `Jitted.__call__` calls it
as it calls the Python guard, and hands any call it does not serve to that guard.

It serves only executables where it is exactly today's path: final numba code with
no BLAS thread setting (a host on numba's pool sets its thread count itself,
`lib/pool_threads`; not where the pool needs a lock or is unsafe: `threads.SAFE`, and
`tracer.guards` takes a threaded one back in a child forked from the pool), no donation or
passed-through output, one output, no pooled (>= 1 MiB) buffers, no host effect or
object-mode code (a failed run is run again by the Python guard to raise its error,
so running it twice must be harmless), built-in dtypes, arrays only (Python scalars
and other layouts take the Python guard).

The code is compiled once per structure (the ranks and kinds of the parameters:
`c_guard_ir.structure`), which takes a few milliseconds, into one MCJIT engine for
the process; an entry's guard is then that code with the entry's words (shapes,
dtypes, the host's address, the objects it counts in) as its `self`, made in tens
of microseconds (`bench/bench_dispatch.py` measures both). `tracer.guards` builds
one once an entry has served `PROMOTE_AFTER` calls, or `PROMOTE_AFTER_COMPILED`
where its structure has its code.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from ...numpy._eager import EagerArray
from . import c_abi, threads
from .c_guard_ir import ArrayParam, Plan, guard_ir, slots, structure
from .launch import POOL_MIN_BYTES

METH_O = 0x0008


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


@dataclass(frozen=True)
class CGuard:
    """The two builtins of one entry."""

    guard: Any
    plain: Any
    ir: str                         # the LLVM IR of its structure (shared with others)
    words: list[tuple[str, int]]    # the entry's words the IR reads, by name
    seconds: float                  # what building them took (compiling the structure
                                    # only for its first entry)


def available() -> bool:
    """Whether this process can build C guards (`c_abi` checked the layouts)."""
    return c_abi.LAYOUT is not None


def plan_parts(executable: Any, signature: tuple) -> tuple | None:
    """(inputs, params, output, native compile result) of a C guard for `executable`
    called with positional arrays of `signature` (`dispatch.array_key`'s), or None when
    a C guard would not be exactly the launcher's path (see the module doc)."""
    native = getattr(executable, "native", None)
    if native is None or not available() or not hasattr(executable, "launch_env"):
        return None
    module = executable.module
    if module.donors or len(module.outputs) != 1 or "objmode" in module.source or \
            (executable.threaded and not threads.SAFE):
        return None
    kind, out = module.outputs[0]
    if kind != "param" or module.params[out].kind != "buffer" or any(
            weak or not _plain_dtype(d) for _, d, weak in signature):
        return None
    inputs = tuple((tuple(shape), id(dtype)) for shape, dtype, _ in signature)
    params = [_param(p, signature, executable.launch_env) for p in module.params]
    if any(p is None for p in params):
        return None
    dims = executable._dims
    params.append(ArrayParam(("const", dims.ctypes.data), dims.shape, dims.itemsize))
    return inputs, tuple(params), out, native


def _plain_dtype(dtype: np.dtype) -> bool:
    """A built-in dtype in native byte order: one descr object per type."""
    return dtype.isbuiltin == 1 and dtype.isnative and np.dtype(dtype.char) is dtype


def _param(p: Any, signature: tuple, env: dict[str, Any]) -> ArrayParam | None:
    """Host parameter `p` as the C guard passes it; None if it cannot."""
    if p.kind == "input":
        shape, dtype, _ = signature[p.index]
        return ArrayParam(("input", p.index), tuple(shape), dtype.itemsize)
    if p.kind == "const":
        value = env[p.name]  # (the launcher's contiguous copy, which it keeps)
        return ArrayParam(("const", value.ctypes.data), value.shape, value.itemsize)
    dtype, shape = np.dtype(p.value.dtype), tuple(p.value.shape)
    if not _plain_dtype(dtype) or int(np.prod(shape)) * dtype.itemsize >= POOL_MIN_BYTES:
        return None  # (large buffers come from the launcher's pool)
    return ArrayParam(("buffer", id(dtype)), shape, dtype.itemsize)


def build(parts: tuple, counters: tuple, fallbacks: tuple, keep: tuple) -> CGuard:
    """The C guard of `parts` (`plan_parts`): `counters` is (stats, its `hits` slot
    offset, entry, its `used` slot offset); `fallbacks` the Python guard and plain
    functions; `keep`, what else the words point into (the executable's constants)."""
    start = time.perf_counter()
    inputs, params, out, native = parts
    stats, hits, entry, used = counters
    host = native.library.get_pointer_to_function(native.fndesc.llvm_func_name)
    plan = Plan(inputs, params, out, host, (id(np.ndarray), id(EagerArray)),
                (id(stats), hits), (id(entry), used), tuple(map(id, fallbacks)),
                c_abi.LAYOUT.new_from_descr)
    text, addresses = _compiled(plan)
    words = slots(plan)
    block = np.array([value for _, value in words], np.int64)
    # `self` of both builtins: the words first (the IR reads them there), then all the
    # words point into, alive as long as the builtins
    holder = (block, native, stats, entry, fallbacks, keep, np.ndarray, EagerArray)
    guard, plain = (_builtin(name, address, holder) for name, address in addresses)
    return CGuard(guard, plain, text, words, time.perf_counter() - start)


def compiled(parts: tuple) -> bool:
    """Whether the structure of `parts` has its code already (a build is then cheap)."""
    return structure(*parts[:3]) in _STRUCTURES


def _compiled(plan: Plan) -> tuple[str, list[tuple[str, int]]]:
    """(IR text, [(name, address)] of the guard and plain functions) of the plan's
    structure, compiled at its first plan."""
    key = structure(plan.inputs, plan.params, plan.output)
    done = _STRUCTURES.get(key)
    if done is not None:
        return done
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:  # (LLVM's context: one compile at a time in the process)
        done = _STRUCTURES.get(key)
        if done is None:
            number = len(_STRUCTURES)
            names = (f"tracer_guard_s{number}", f"tracer_plain_s{number}")
            text = guard_ir(plan, names)
            engine = _compile(text)
            done = _STRUCTURES[key] = (text, [(n, engine.get_function_address(n))
                                              for n in names])
    return done


# structure -> its IR and compiled functions (`c_guard_ir.structure`)
_STRUCTURES: dict[tuple, tuple[str, list[tuple[str, int]]]] = {}


def _compile(text: str) -> Any:
    """The process's C guard engine, with `text`'s machine code added. (One MCJIT
    engine for all: an engine costs some 800 KB. No IR passes: the IR is
    straight-line code already; numba's pipeline took twice as long.)"""
    global _ENGINE
    module = llvm.parse_assembly(text)
    module.verify()
    if _ENGINE is None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        machine = llvm.Target.from_default_triple().create_target_machine(opt=2, jit=True)
        _ENGINE = llvm.create_mcjit_compiler(module, machine)
    else:
        _ENGINE.add_module(module)
    _ENGINE.finalize_object()
    return _ENGINE


_ENGINE: Any = None


def _builtin(name: str, address: int, holder: tuple) -> Any:
    """A builtin function calling `address` (METH_O), with `holder` as its `self`."""
    method = _MethodDef(name.encode(), address, METH_O, None)
    # (the PyMethodDef must outlive the builtin: the builtin's `self` holds it)
    return _new_builtin(ctypes.addressof(method), (*holder, method), None)

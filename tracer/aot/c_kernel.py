"""The cpu backend's generated code compiled to an object file with a C entry point.

The generated module (`backend.cpu.generate`, the code `tr.jit` runs, without
threads) is compiled by numba behind one extra function: it views the caller's
buffers with `numba.carray` and calls the host function, with the program's sizes
and constants as frozen globals. Its LLVM module is taken from numba, every
function but that entry is made internal, and LLVM's optimizer inlines them and
drops the Python wrappers; llvmlite then emits a position-independent object.
The entry keeps numba's calling convention:
`int NAME_kernel(void *ret, void **excinfo, T0 *buf0, T1 *buf1, ...)` (0 = success).

`dot_general`, which `tr.jit` sends to the BLAS tracer binds in its process (MKL or
NumPy's OpenBLAS, by symbols only that process defines), calls NumPy's bundled
OpenBLAS here, or loops (`c_gemm`). Anything else that would
reach Python or numba's runtime at run time (numba's random state, the FFT and
LAPACK libraries, an op run by its reference) shows up as an undefined symbol of
the object, and `compile_object` refuses the program, naming the symbols.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import os
import re
import tempfile
from dataclasses import dataclass

import llvmlite.binding as llvm
import numba
import numpy as np

from ..backend.cpu.emit.dot import MATMUL
from ..backend.cpu.generate import Module, generate
from ..backend.numba.codegen import Param
from ..backend.numba.lower import lower
from ..core import Graph
from ..errors import UnsupportedOpError
from ..backend.cpu.lib.cblas import bundled_openblas
from .c_gemm import gemm_source

# Symbols of numba's runtime, the CPython API and numba's helper library (never libc's).
_PYTHON_SYMBOL = re.compile(r"^(NRT_|numba_|_?Py|_numba|__numba)")

@dataclass
class CKernel:
    """The object file and what the C wrapper needs to call its entry."""

    module: Module
    object_code: bytes
    symbol: str
    pointer_params: list[Param]   # the entry's arguments, in order (inputs and buffers)
    link_libraries: list[str]     # shared libraries the object calls (NumPy's OpenBLAS)


def compile_object(graph: Graph, name: str) -> CKernel:
    lowered = lower(graph)
    module = generate(lowered, parallel_ok=False, objmode_ok=False, parts=False, mkl_ok=False)
    pointers = [p for p in module.params if p.kind != "const"]
    blas = bundled_openblas()
    if blas:  # numba's JIT resolves the cblas symbols while compiling the entry
        llvm.load_library_permanently(blas)
    source = _build_source(module, pointers, blas is not None)
    with tempfile.TemporaryDirectory(prefix=f"tracer-aot-{name}-") as tmp:
        path = os.path.join(tmp, f"_tracer_aot_{name}.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location(f"_tracer_aot_{name}", path)
        py_module = importlib.util.module_from_spec(spec)
        for p in module.params:  # constants become frozen globals of the entry
            if p.kind == "const":
                setattr(py_module, p.name, _stored(np.ascontiguousarray(p.value)))
        spec.loader.exec_module(py_module)
        signature = numba.types.void(*(_pointer(p) for p in pointers))
        entry = py_module.c_entry
        entry.compile(signature)
        cres = entry.overloads[signature.args]
    symbol = f"{name}_kernel"
    ir_module = _internalized(cres.library.get_llvm_str(), cres.fndesc.llvm_func_name, symbol)
    _rename_runtime(ir_module, name)
    used = _undefined_symbols(ir_module)
    links = [blas] if blas and any(s.startswith("scipy_cblas") for s in used) else []
    _check_no_python(used, graph, name, links)
    return CKernel(module, _target_machine().emit_object(ir_module), symbol, pointers, links)


# numba helpers the generated code still calls, which NAME.c defines under NAME_ names
# (`c_sources.RUNTIME`): reshape's stride computation, and numba's reference-counted
# allocation (arrays a loop body creates: control flow's carried values).
RUNTIME_SYMBOLS = ("numba_attempt_nocopy_reshape", "NRT_MemInfo_alloc_aligned",
                   "NRT_MemInfo_call_dtor")


def _rename_runtime(module: llvm.ModuleRef, name: str) -> None:
    for fn in module.functions:
        if fn.is_declaration and fn.name in RUNTIME_SYMBOLS:
            fn.name = f"{name}_{fn.name}"


def _build_source(module: Module, pointers: list[Param], blas: bool) -> str:
    """The generated module for a C build: no disk cache, `c_gemm` for the products
    (`cpu.lib.cblas`'s bound symbols exist only in a tracer process), one entry."""
    source = module.source.replace("cache=True, ", "").replace(f"{MATMUL}(", "gemm(")
    views = []
    for p in module.params:
        if p.kind == "const":
            views.append(p.name)
        else:
            views.append(f"carray({p.name}, {tuple(p.value.shape)!r})")
    lines = [source, "import numba", "import numpy as np", "from numba import carray",
             gemm_source(blas),
             f"_DIMS = np.array({list(module.dims)!r}, np.int64)", "",
             '@numba.njit(error_model="numpy")',
             f"def c_entry({', '.join(p.name for p in pointers)}):",
             f"    {module.host}({', '.join(views + ['_DIMS'])})", ""]
    return "\n".join(lines)


def _stored(value: np.ndarray) -> np.ndarray:
    return value.view(np.uint16) if value.dtype == np.float16 else value


def _pointer(p: Param) -> numba.types.Type:
    dtype = np.dtype(np.uint16) if p.value.dtype == np.float16 else p.value.dtype
    return numba.types.CPointer(numba.from_dtype(dtype))


def _internalized(ir: str, entry: str, symbol: str) -> llvm.ModuleRef:
    """The module with only the entry visible (as `symbol`), optimized: the rest is
    inlined into it or dropped (numba's Python wrappers, its runtime's helpers)."""
    module = llvm.parse_assembly(ir)
    module.get_function(entry).name = symbol
    for fn in module.functions:
        if not fn.is_declaration and fn.name != symbol:
            fn.linkage = "internal"
    for var in module.global_variables:
        if not var.is_declaration:
            var.linkage = "internal"
    tm = _target_machine()
    builder = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    builder.getModulePassManager().run(module, builder)
    cleanup = llvm.create_new_module_pass_manager()
    cleanup.add_global_dead_code_eliminate_pass()
    cleanup.add_strip_dead_prototype_pass()  # declarations nothing calls any more
    cleanup.run(module, builder)
    module.verify()
    return module


def _target_machine() -> llvm.TargetMachine:
    """This machine's CPU (as numba compiles for it), position-independent for a .so."""
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        reloc="pic", codemodel="default", opt=3)


def _undefined_symbols(module: llvm.ModuleRef) -> list[str]:
    return sorted({f.name for f in module.functions if f.is_declaration}
                  | {v.name for v in module.global_variables if v.is_declaration})


def _check_no_python(used: list[str], graph: Graph, name: str, links: list[str]) -> None:
    """Every symbol the object needs must come from libc, libm or `links`: anything else
    lives in Python, numba's runtime or a Python extension (FFT, LAPACK, conv entries)."""
    provided = {f"{name}_{s}" for s in RUNTIME_SYMBOLS}  # by NAME.c
    libraries = _c_libraries() + tuple(ctypes.CDLL(path) for path in links)
    missing = [s for s in used if not s.startswith("llvm.") and s not in provided
               and (_PYTHON_SYMBOL.match(s) or not any(hasattr(lib, s) for lib in libraries))]
    if missing:
        ops = sorted({e.op.name for e in graph.eqns} - C_OPS)
        raise UnsupportedOpError(
            f"aot {name}: the C library cannot hold this program: its code calls "
            f"{', '.join(missing)}, which only a Python process has. Ops outside the C "
            f"path: {', '.join(ops) or 'none'}; the C path runs {', '.join(sorted(C_OPS))}")


@functools.cache
def _c_libraries() -> tuple[ctypes.CDLL, ...]:
    """libc and libm (libpython is in this process too, but never in a C program: the
    Python-symbol pattern above keeps its names out)."""
    return tuple(ctypes.CDLL(ctypes.util.find_library(lib)) for lib in ("c", "m"))


# Ops the C path runs, each checked against tr.jit on an op-table case
# (TRACER_AOT_C_SWEEP=1 python -m pytest tests/test_aot_c_sweep.py). The AD-only ops
# (stop_gradient, checkpoint, custom_jvp/vjp calls) are inlined before compiling. Not on
# the C path: convolutions (their plan table), fft (rocket-fft), the decompositions
# (LAPACK), rng_uniform/rng_normal (NumPy's random state), custom_call, float16/bfloat16.
C_OPS = frozenset({
    "abs", "add", "all_gather", "all_reduce", "all_to_all", "atan2", "batch_norm_grad",
    "batch_norm_inference", "batch_norm_training", "bitwise_and", "bitwise_not", "bitwise_or",
    "bitwise_xor", "broadcast_in_dim", "call", "cbrt", "ceil", "clamp", "clz",
    "collective_permute", "compare", "complex", "composite", "concatenate", "conditional",
    "convert_element_type", "cos", "div", "dot_general", "dynamic_slice",
    "dynamic_update_slice", "erf", "exp", "expm1", "floor", "gather", "get_dimension_size",
    "imag", "iota", "is_finite", "log", "log1p", "logistic", "map", "max", "min", "mul", "neg",
    "optimization_barrier", "pad", "population_count", "pow", "real", "reduce",
    "reduce_precision", "reduce_scatter", "reduce_window", "rem", "replica_id", "reshape",
    "rev", "rng_bit_generator", "round", "round_nearest_even", "rsqrt", "scan", "scatter",
    "select", "select_and_scatter", "shift_left", "shift_right_arithmetic",
    "shift_right_logical", "sign", "sin", "slice", "sort", "sqrt", "sub", "tan", "tanh",
    "threefry2x32", "threefry_random_bits", "transpose", "while"})

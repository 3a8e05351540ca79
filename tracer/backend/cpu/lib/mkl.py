"""Intel MKL for compiled code: the `mkl` wheel's libmkl_rt, loaded on first use.

    available()        # config.use_mkl is on and the wheel's libmkl_rt loads (loads it)
    load()             # load libmkl_rt once and pick its threading layer
    symbol("DftiCommitDescriptor")   # -> "tracer_mkl_DftiCommitDescriptor"

Compiled code calls MKL by symbol name: `symbol(name)` registers the function's
address in this process under a name of tracer's own (`llvmlite.binding.add_symbol`)
and returns that name for a `types.ExternalFunction` or an LLVM declaration. Numba's
disk cache stays valid (the machine code names a symbol; each process binds it), and
the name cannot bind to another copy of MKL in the process: PyTorch's libtorch_cpu
exports its own statically linked DFTI under the same names.

Threading layer: GNU OpenMP, libmkl_gnu_thread on the libgomp.so.1 the process has
(PyTorch's when torch came first, else the system's, which numba's `omp` layer runs
on), so MKL's threads come from a pool already there, never from a second OpenMP
runtime (Intel's libiomp5, which the wheel also installs); callers cap MKL's threads
per call with tracer's thread count (`cpu/options.thread_count`). Without libgomp, MKL
runs sequentially. A layer the user picked (MKL_THREADING_LAYER) is left as it is.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import importlib.metadata
import os
import re
import sys
import warnings

import llvmlite.binding as llvm

from ....config import config

_LIBRARY = re.compile(r"libmkl_rt\.so(\.\d+)*")
_LAYERS = {"SEQUENTIAL": 1, "GNU": 3}  # MKL_Set_Threading_Layer's codes
_PREFIX = "tracer_mkl_"
_handle: list[ctypes.CDLL] = []  # the loaded library (for `symbol`)
_layer: list[str] = []  # its threading layer: the one `load` picked, or the user's


@functools.cache
def library_path() -> str | None:
    """libmkl_rt from the installed `mkl` wheel (which puts it in `<prefix>/lib`, found
    through the wheel's file list), else `<sys.prefix>/lib` (conda's mkl); None without."""
    try:
        files = importlib.metadata.files("mkl") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    found = [str(f.locate()) for f in files if _LIBRARY.fullmatch(f.name)]
    found += sorted(glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*")))
    return next((os.path.realpath(p) for p in found if os.path.isfile(p)), None)


def available() -> bool:
    """Whether compiled code may call MKL: `config.use_mkl` is on and libmkl_rt is
    installed and loads. Asked when code that would call MKL is generated, so the first
    such program loads it (`load`); a library that does not load warns once, and the
    caller uses what it would use without MKL."""
    if not config.use_mkl or library_path() is None:
        return False
    try:
        load()
    except OSError as error:
        _warn_once(str(error))
        return False
    return True


@functools.cache
def _warn_once(reason: str) -> None:
    warnings.warn(f"tracer: MKL is installed but does not load ({reason}); running "
                  f"without it (TRACER_USE_MKL=0 silences this)", RuntimeWarning, stacklevel=3)


@functools.cache
def load() -> None:
    """Load libmkl_rt (once per process) and set its threading layer (module doc)."""
    path = library_path()
    if path is None:
        raise OSError("MKL is not installed (pip install mkl, or tracer-dsl[mkl])")
    library = ctypes.CDLL(path, mode=os.RTLD_NOW)
    layer = os.environ.get("MKL_THREADING_LAYER", "").upper()
    if not layer:
        layer = "GNU" if _load_gnu_openmp() else "SEQUENTIAL"
        library.MKL_Set_Threading_Layer(ctypes.c_int(_LAYERS[layer]))
    _handle.append(library)
    _layer.append(layer)


def on_gnu_openmp() -> bool:
    """Whether compiled code's MKL runs its threads on GNU OpenMP (loads it): the pool
    numba's `omp` threading layer runs on, so MKL's calls and tracer's parallel loops
    take turns on one team of threads instead of two teams fighting over the cores."""
    return available() and _layer[0] == "GNU"


def _load_gnu_openmp() -> bool:
    """Make libgomp's symbols global (libmkl_gnu_thread uses them without linking it):
    the libgomp.so.1 already in the process (numba's or PyTorch's), else the system's."""
    try:
        ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOW | os.RTLD_GLOBAL)
    except OSError:
        return False
    return True


@functools.cache
def symbol(name: str) -> str:
    """The name compiled code calls MKL function `name` by (loads MKL first)."""
    load()
    address = ctypes.cast(getattr(_handle[0], name), ctypes.c_void_p).value
    llvm.add_symbol(_PREFIX + name, address)
    return _PREFIX + name

"""Backends behind one small protocol (see `base`)."""

from .base import (Backend, Executable, backend_loaded, backend_names, get_backend,
                   register_backend)
from .interpreter import InterpreterBackend

register_backend("interpreter", InterpreterBackend)


def _numba_cpu() -> Backend:
    # Imported on first use, so `import tracer` does not import numba.
    from .numba_cpu import NumbaCpuBackend
    return NumbaCpuBackend()


register_backend("cpu", _numba_cpu)

__all__ = ["Backend", "Executable", "backend_loaded", "backend_names", "get_backend",
           "register_backend"]

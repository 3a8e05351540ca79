"""Backends behind one small protocol (see `base`): the NumPy reference interpreter and
the two numba backends, `cpu` and `cuda`, built on the shared generator in `numba/`."""

from ..errors import TracerValueError
from .base import Backend, Executable, backend_loaded, backend_names, get_backend, register_backend
from .interpreter import InterpreterBackend


def _numba_cpu() -> Backend:
    # Imported on first use, so `import tracer` does not import numba.
    from .cpu.backend import NumbaCpuBackend
    return NumbaCpuBackend()


def _numba_cuda() -> Backend:
    # Imported on first use: numba.cuda (from the optional numba-cuda package) is heavy,
    # and the simulator switch (NUMBA_ENABLE_CUDASIM) must be read when it is imported.
    try:
        from .cuda.backend import NumbaCudaBackend
    except ImportError as e:
        raise TracerValueError(f"backend 'cuda' needs numba-cuda: pip install "
                               f"'numba-cuda[cu13]' ({e})") from e
    return NumbaCudaBackend()


register_backend("interpreter", InterpreterBackend)
register_backend("cpu", _numba_cpu)
register_backend("cuda", _numba_cuda)

__all__ = ["Backend", "Executable", "backend_loaded", "backend_names", "get_backend",
           "register_backend"]

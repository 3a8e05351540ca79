"""Backends behind one small protocol (see `base`)."""

from .base import Backend, Executable, backend_names, get_backend, register_backend
from .interpreter import InterpreterBackend

register_backend("interpreter", InterpreterBackend)

__all__ = ["Backend", "Executable", "backend_names", "get_backend", "register_backend"]

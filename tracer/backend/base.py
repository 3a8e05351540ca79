"""The backend protocol: `compile(graph) -> Executable`.

A backend is registered by name with a factory (`__init__` registers them all), so
the numba backends are only imported when first used.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

import numpy as np

from ..core import Graph
from ..errors import TracerValueError


class Executable(Protocol):
    """A compiled graph: flat NumPy arrays in, flat NumPy arrays out."""

    source: str  # what the backend generated, for people to read and debug

    def __call__(self, *args: np.ndarray) -> Sequence[np.ndarray]: ...


class Backend(Protocol):
    name: str

    def compile(self, graph: Graph) -> Executable: ...


_FACTORIES: dict[str, Callable[[], Backend]] = {}
_INSTANCES: dict[str, Backend] = {}


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    _FACTORIES[name] = factory


def get_backend(name: str) -> Backend:
    if name not in _INSTANCES:
        if name not in _FACTORIES:
            raise TracerValueError(f"unknown backend {name!r}; available: "
                                   f"{', '.join(sorted(_FACTORIES))}")
        _INSTANCES[name] = _FACTORIES[name]()
    return _INSTANCES[name]


def backend_names() -> list[str]:
    return sorted(_FACTORIES)


def backend_loaded(name: str) -> bool:
    """Whether `name` was already instantiated (clearing caches must not import numba)."""
    return name in _INSTANCES

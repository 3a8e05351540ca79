"""`TRACER_DUMP_DIR`: what a compile produced, written to files a person can read.

Per compiled function `jit_f`: `jit_f.NN.<pass>.hlo.txt` and `jit_f.NN.<pass>.dot` before
and after each pass (NN = 00 for the traced graph), and `jit_f.<backend>.py`, the
generated source. A directory that cannot be written costs one warning, never the
user's program.
"""

from __future__ import annotations

import os
import warnings

from .core import Graph
from .hlo import graph_to_text
from .hlo_draw import graph_to_dot

_FAILED: set[str] = set()   # directories already warned about


class DumpWarning(UserWarning):
    """TRACER_DUMP_DIR could not be written."""


def dump_graph(directory: str, name: str, index: int, stage: str, graph: Graph) -> None:
    base = f"{name}.{index:02d}.{stage}"
    if _write(directory, base + ".hlo.txt", graph_to_text(graph, name)):
        _write(directory, base + ".dot", graph_to_dot(graph, name))


def dump_source(directory: str, name: str, backend: str, source: str) -> None:
    _write(directory, f"{name}.{backend}.py", source)


def _write(directory: str, filename: str, text: str) -> bool:
    """Write one file; on failure warn once for the directory and return False."""
    if directory in _FAILED:
        return False
    try:
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, filename), "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        _FAILED.add(directory)
        warnings.warn(f"TRACER_DUMP_DIR={directory!r} cannot be written ({e}); tracer goes "
                      f"on without dumping there", DumpWarning, stacklevel=3)
        return False
    return True

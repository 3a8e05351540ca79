"""`compile`: one exported program → NAME.py (+ NAME_lib/) and the C library files."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..core import ShapedArray
from ..errors import TracerValueError
from ..export import export
from ..export.hlo_values import Cursor, parse_aval
from .kernel import generate_module, vendor_libraries
from .python_module import write_python_module


def compile(fun: Callable[..., Any], *avals: ShapedArray, name: str, out_dir: str,
            c_library: bool = True) -> dict[str, str]:
    """Write NAME.py and (with `c_library`) NAME.h, libNAME.so, NAME_test.c and
    NAME_benchmark.c into `out_dir`; returns {what: path}."""
    if not name.isidentifier():
        raise TracerValueError(f"aot: name {name!r} must be a C and Python identifier")
    exp = export(fun)(*avals)
    os.makedirs(out_dir, exist_ok=True)
    kernel = generate_module(exp.graph, name, f"{name}_lib")
    vendor_libraries(kernel.libraries, os.path.join(out_dir, f"{name}_lib"))
    paths = {"python": write_python_module(exp, kernel, name, out_dir)}
    if c_library:
        from .c_library import write_c_library
        paths.update(write_c_library(exp, name, out_dir))
    return paths


def parse_aval_spec(spec: str) -> ShapedArray:
    """`f32[2,3]` → ShapedArray((2, 3), float32): the HLO spelling of an argument."""
    return parse_aval(spec.replace(" ", ""), Cursor(spec, "--arg"))

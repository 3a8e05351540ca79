"""Write and build the C library: NAME.h, NAME.c, NAME.o, libNAME.so, NAME_test.c,
NAME_benchmark.c (built with the system C compiler, `cc` or $CC)."""

from __future__ import annotations

import os
import shlex
import subprocess

from ..errors import TracerError
from ..export import Exported
from . import c_programs, c_sources
from .c_kernel import compile_object


class CBuildError(TracerError, RuntimeError):
    """The system C compiler failed on the generated library (its output is included)."""


def write_c_library(exp: Exported, name: str, out_dir: str) -> dict[str, str]:
    out_dir = os.path.abspath(out_dir)
    ins, outs = list(exp.in_avals), list(exp.out_avals)
    for a in ins + outs:
        c_sources.c_type(a, name)  # refuse element types C has no name for, before compiling
    kernel = compile_object(exp.graph, name)
    fun = exp.fun_name.removeprefix("jit_")
    files = {
        "header": (f"{name}.h", c_sources.header(name, fun, ins, outs)),
        "source": (f"{name}.c", c_sources.library(name, kernel.symbol, kernel.module,
                                                  kernel.pointer_params, ins, outs)),
        "test": (f"{name}_test.c", c_programs.test_program(name, ins, outs)),
        "benchmark": (f"{name}_benchmark.c", c_programs.benchmark_program(name, ins)),
    }
    paths = {}
    for what, (filename, text) in files.items():
        paths[what] = os.path.join(out_dir, filename)
        with open(paths[what], "w", encoding="utf-8") as f:
            f.write(text)
    paths["object"] = os.path.join(out_dir, f"{name}.o")
    with open(paths["object"], "wb") as f:
        f.write(kernel.object_code)
    paths["library"] = os.path.join(out_dir, f"lib{name}.so")
    links = []
    for path in kernel.link_libraries:  # by path, found again at run time through the rpath
        links += [f"-L{os.path.dirname(path)}", f"-l:{os.path.basename(path)}",
                  f"-Wl,-rpath,{os.path.dirname(path)}"]
    cc(["-O2", "-shared", "-fPIC", "-o", paths["library"], paths["source"], paths["object"],
        *links, "-lm"], out_dir)
    return paths


def cc(args: list[str], cwd: str) -> None:
    """Run the system C compiler; CBuildError with its output when it fails."""
    command = shlex.split(os.environ.get("CC", "cc")) + args
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CBuildError(f"aot: {' '.join(command)} failed:\n{done.stderr.strip()}")


def build_program(name: str, program: str, out_dir: str) -> str:
    """Compile NAME_test.c or NAME_benchmark.c against libNAME.so; returns the executable."""
    exe = os.path.join(out_dir, program)
    cc(["-O2", "-o", exe, os.path.join(out_dir, f"{program}.c"), f"-L{out_dir}", f"-l{name}",
        "-Wl,-rpath,$ORIGIN"], out_dir)
    return exe

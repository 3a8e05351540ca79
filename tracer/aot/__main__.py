"""`python -m tracer.aot MODULE:FUNCTION --arg f32[2,3] ... --name NAME --out-dir DIR`."""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import TracerError
from . import compile, parse_aval_spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tracer.aot", description=(
        "Compile a tracer function ahead of time: NAME.py (NumPy + numba) and a C library "
        "(NAME.h, libNAME.so, NAME_test.c, NAME_benchmark.c)."))
    parser.add_argument("target", help="MODULE:FUNCTION, e.g. model:predict")
    parser.add_argument("--arg", action="append", default=[], metavar="AVAL",
                        help="an argument's dtype and shape in HLO spelling, e.g. f32[2,3]")
    parser.add_argument("--name", required=True, help="the library's name (an identifier)")
    parser.add_argument("--out-dir", default=".", help="where to write the files")
    parser.add_argument("--no-c", action="store_true", help="write NAME.py only")
    args = parser.parse_args(argv)
    module_name, _, fun_name = args.target.partition(":")
    if not fun_name:
        parser.error("the target must be MODULE:FUNCTION")
    sys.path.insert(0, ".")
    fun = getattr(importlib.import_module(module_name), fun_name)
    try:
        avals = [parse_aval_spec(a) for a in args.arg]
        paths = compile(fun, *avals, name=args.name, out_dir=args.out_dir,
                        c_library=not args.no_c)
    except TracerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for what, path in paths.items():
        print(f"{what}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Kernel-granular compiles, measured before they are built: what an edit of one op
would cost if every loop nest were a function of its own, reused when unchanged.

    python -m bench.bench_kernel_granular            # mlp
    python -m bench.bench_kernel_granular mlp rnn --part-lines 4

The cpu backend's host function is cut into part functions at top-level statements
(`tracer/backend/cpu/split.py` with small parts: about one loop nest each). Parts are
matched across programs by their canonical text (local names numbered in order,
comments dropped), so an edited program finds the parts it shares with the original.
Four ways to build the edited program, in one process, numba compiling (no disk
cache for the generated module; the helper libraries come from the cache):

- one function:  today's module, one host function, compiled whole;
- linked parts:  the parts are njit functions the host calls; the unchanged ones
                 already compiled (the dispatchers of the original program);
- pointer parts: the host takes each part as a `numba.types.FunctionType` argument,
                 so it calls their machine code through a pointer and nothing is
                 linked into it; only the changed parts and the host compile.

numba links a called njit function's LLVM module into its caller and optimizes and
generates machine code for the whole again, so "linked parts" pays LLVM for every
part on every edit; "pointer parts" does not, but numba lowers each FunctionType call
with both a native-convention call and a wrapper call (and a GIL path for a null
address), so its host is not small. (The part signatures are taken from a compile of
the same program with linked parts, outside the timing: a real build would derive
them from the generator's buffer types.)

Measured on the shared 2-core machine under a load of about 10 (one run each; the
seconds are several times a quiet machine's, the ratios are what to read):

    model        lines parts changed  one function  parts cold  linked edit  pointer edit
    mlp            262    25       4      15.2 s       x1.58       x0.51        x0.54
    rnn            202    11       1      11.4 s       x1.56       x0.70        x0.41
    transformer   1330    93       4     277.8 s       x0.91       x0.25        x0.21
                                                      (pointer edit: 6.1 s of parts + 53.0 s host)

So per-nest functions cost more than one function cold for a small model (numba's
fixed cost per function), and an edit recompiles 4 of 93 parts yet still pays a
quarter of the whole: the host that calls the parts dominates. What is left for
kernel-granular caching to pay:
- a call from the host that neither links the callee nor costs seconds per hundred
  calls (an intrinsic calling the part's native entry point by address, the addresses
  passed in like `dims`);
- parts on disk by content: numba names a function's cache files after the file its
  code object says it came from, so each part must be compiled from a file of its own
  (`tracer_<hash of versions + canonical text>.py`, claimed by `TracerLocator` with
  that hash as its stamp), and the compile worker must receive the parts' texts with
  the host's.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import time
import types as pytypes
from typing import Any

from numba import njit
from numba import types as nbtypes


def _prepared(model: str, edit: bool, part_lines: int) -> Any:
    from bench.latency_models import framework, make
    from tracer.backend import get_backend
    from tracer.backend.cpu import split as cpu_split
    cpu_split.SPLIT_LINES = part_lines
    step, args = make(model, framework("tracer"), edit=edit)
    return get_backend("cpu").prepare(step.lower(*args).optimize())


def canonical(fn: ast.FunctionDef) -> str:
    """A part's text with its parameters and locals numbered in order of appearance."""
    local = [a.arg for a in fn.args.args]
    local += [n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store) and n.id not in local]
    names = {n: f"v{i}" for i, n in enumerate(dict.fromkeys(local))}
    fn = ast.parse(ast.unparse(fn)).body[0]
    fn.name = "kernel"
    for node in ast.walk(fn):
        if isinstance(node, ast.arg):
            node.arg = names[node.arg]
        elif isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
    return ast.unparse(fn)


def _module(source: str, name: str) -> tuple[pytypes.ModuleType, dict[str, str]]:
    """The module executed without numba's disk cache, and its parts' canonical texts."""
    module = pytypes.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source.replace("cache=True", "cache=False"), f"<{name}>", "exec"),
         module.__dict__)
    parts = {f.name: canonical(f) for f in ast.parse(source).body
             if isinstance(f, ast.FunctionDef) and re.search(r"_part\d+$", f.name)}
    return module, parts


def _timed(call: Any) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def _compile_host(module: pytypes.ModuleType, prep: Any) -> float:
    """Seconds numba takes to compile the host of `prep` (and what it calls) in `module`."""
    return _timed(lambda: getattr(module, prep.function).compile(prep.signature))


def _reuse(module: pytypes.ModuleType, parts: dict, original: pytypes.ModuleType,
           original_parts: dict) -> list[str]:
    """Point `module`'s unchanged parts at `original`'s compiled ones; the changed names."""
    by_text = {text: name for name, text in original_parts.items()}
    changed = []
    for name, text in parts.items():
        if text in by_text:
            setattr(module, name, getattr(original, by_text[text]))
        else:
            changed.append(name)
    return changed


def _pointer_host(prep: Any, module: pytypes.ModuleType, reference: pytypes.ModuleType,
                  part_names: list[str]) -> tuple[Any, tuple, tuple]:
    """The host rewritten to take its parts as FunctionType arguments: (njit'd host,
    its signature, the part dispatchers to pass)."""
    tree = ast.parse(prep.module.source)
    host = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == prep.function)
    host.decorator_list = []
    host.args.args += [ast.arg(f"k{i}") for i in range(len(part_names))]
    index = {name: i for i, name in enumerate(part_names)}
    for node in ast.walk(host):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in index:
            node.func.id = f"k{index[node.func.id]}"
    namespace = dict(module.__dict__)
    exec(compile(ast.unparse(ast.Module([host], [])), "<pointer host>", "exec"), namespace)
    kinds = []
    for name in part_names:
        dispatcher = getattr(reference, name)
        kinds.append(nbtypes.FunctionType(dispatcher.overloads[dispatcher.signatures[0]].signature))
    return njit(namespace[prep.function]), (*prep.signature, *kinds), \
        tuple(getattr(module, n) for n in part_names)


def measure(model: str, part_lines: int) -> dict[str, Any]:
    one = _prepared(model, True, 1 << 30)
    original, edited = _prepared(model, False, part_lines), _prepared(model, True, part_lines)
    out = {"lines": len(one.module.source.splitlines())}
    mod_one, _ = _module(one.module.source, "kg_one")
    out["one function"] = _compile_host(mod_one, one)
    mod_a, parts_a = _module(original.module.source, "kg_original")
    out["parts, cold"] = _compile_host(mod_a, original)
    mod_b, parts_b = _module(edited.module.source, "kg_linked")
    changed = _reuse(mod_b, parts_b, mod_a, parts_a)
    out["parts"], out["changed parts"] = len(parts_b), len(changed)
    out["linked parts, edit"] = _compile_host(mod_b, edited)
    mod_c, parts_c = _module(edited.module.source, "kg_pointer")
    _reuse(mod_c, parts_c, mod_a, parts_a)
    host, signature, _ = _pointer_host(edited, mod_c, mod_b, sorted(parts_c))
    changed_sigs = [getattr(mod_b, n).signatures[0] for n in changed]
    out["changed parts alone"] = _timed(lambda: [getattr(mod_c, n).compile(s) for n, s
                                                 in zip(changed, changed_sigs)])
    out["pointer host"] = _timed(lambda: host.compile(signature))
    out["pointer parts, edit"] = out["changed parts alone"] + out["pointer host"]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["mlp"])
    parser.add_argument("--part-lines", type=int, default=4)
    opts = parser.parse_args(argv)
    for model in opts.models:
        r = measure(model, opts.part_lines)
        base = r["one function"]
        print(f"\n{model}: {r['lines']} lines, {r['parts']} parts, {r['changed parts']} changed "
              f"by the edit (numba compile seconds; ratio to one function)")
        for key in ("one function", "parts, cold", "linked parts, edit", "changed parts alone",
                    "pointer host", "pointer parts, edit"):
            print(f"  {key:<22} {r[key]:8.2f} s   x{r[key] / base:5.2f}")


if __name__ == "__main__":
    main()

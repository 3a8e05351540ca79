"""A long host function cut into part functions of bounded size, each compiled on its
own and called by address, so that compile time grows about linearly with the program.

numba's compile time grows faster than a function's length: its analyses of the
function's IR (`def_reach`, liveness, `fixup_var_define_in_scope`), type inference and
LLVM's function passes all work on the whole function, so one host function per
program cost ~n^1.3 and more (a 3-layer transformer's 7,300-line training step took
19.6 minutes, issue 15). Parts called as ordinary njit functions did not help: numba
links each callee's LLVM module into the caller and optimizes and generates code for
the whole again (`bench_compile_scaling`, `bench_kernel_granular`). Here a part is
`lib.parts.separately_compiled`: the host calls it by a symbol of its own, nothing is
linked, and the host's IR is a list of calls.

The host body (top-level statements, each one op or one loop nest) is cut into parts
of about SPLIT_LINES lines once it is longer than SPLIT_MIN_LINES; a single statement
longer than that (a large fused nest) is a part of its own. Each part takes the values
it reads before assigning them (and that earlier parts or the host's parameters and
sizes define) and returns the values later parts read; the host calls the parts in
order. Names come from the generated source's syntax tree, so this sees exactly what
the code reads and writes. A value a part may assign (inside a loop or a branch) and a
later part reads is passed in as well, so it keeps its earlier value where the part
did not assign it, as it would in one function. The parts run the same statements,
in the same order, on the same values as the one function, and give its bits where
LLVM compiles each loop alike in both (tests/backend/cpu/test_split.py); a very long
one function can differ in the last bit, where LLVM's inliner left a vectorizable
helper (tanh, exp) un-inlined in it and so summed a reduction in another order.

Parts of 150 lines: the chain of `bench_compile_scaling` compiles in about 20 ms of CPU
per instruction from 100 to 2,000 instructions (30 at 5,000), against 40-80 ms and an
exponent of 1.5 for the one function (docs/performance.md).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Any, Sequence

from ..numba.source import SourceWriter

SPLIT_LINES = 150      # lines per part
SPLIT_MIN_LINES = 400  # a body up to this long stays one function
PART_DECORATOR = "separately_compiled"  # from lib.parts
# a part is called only by its host's native call: no Python entry point to build (nor
# a C one: NJIT_OPTIONS)
PART_OPTIONS = "no_cpython_wrapper=True, "


@dataclass
class _Part:
    text: str
    exposed: set[str]  # read before the part assigns them for sure
    stores: set[str]   # assigned anywhere in the part
    defines: set[str]  # assigned for sure (top-level statements)


def _loads_stores(node: ast.AST) -> tuple[set[str], set[str]]:
    loads, stores = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (stores if isinstance(n.ctx, ast.Store) else loads).add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            loads.add(n.target.id)  # (`b += 1` reads b: its Name is a Store)
    return loads, stores


def _exposed(stmts: Sequence[ast.stmt], defined: set[str]) -> set[str]:
    """Names `stmts` may read before assigning them, given `defined` (updated with the
    names the statements assign for sure; those assigned in a loop or branch only
    may be, so they are not added)."""
    exposed: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
            heads = [stmt.iter] if isinstance(stmt, ast.For) else \
                [stmt.test] if isinstance(stmt, (ast.While, ast.If)) else \
                [i.context_expr for i in getattr(stmt, "items", [])]
            for head in heads:
                exposed |= _loads_stores(head)[0] - defined
            inner = set(defined)
            if isinstance(stmt, ast.For):
                inner |= _loads_stores(stmt.target)[1]
            for block in ("body", "orelse", "finalbody"):
                exposed |= _exposed(getattr(stmt, block, []), set(inner))
            for handler in getattr(stmt, "handlers", []):
                exposed |= _exposed(handler.body, set(inner))
        else:
            loads, stores = _loads_stores(stmt)
            exposed |= loads - defined
            defined |= stores
    return exposed


def _part(lines: list[str], start: int, end: int, stmts: list[ast.stmt]) -> _Part:
    defines: set[str] = set()
    exposed = _exposed(stmts, defines)
    stores = set().union(*(_loads_stores(s)[1] for s in stmts))
    return _Part("\n".join(lines[start:end]), exposed, stores, defines)


def _parts(text: str, split_lines: int) -> list[_Part]:
    """Consecutive top-level statements, about `split_lines` lines a part (comments go
    with the statement after them)."""
    lines = text.splitlines()
    parts, start, stmts = [], 0, []
    for stmt in ast.parse(text).body:
        stmts.append(stmt)
        if stmt.end_lineno - start >= split_lines:
            parts.append(_part(lines, start, stmt.end_lineno, stmts))
            start, stmts = stmt.end_lineno, []
    if start < len(lines):
        parts.append(_part(lines, start, len(lines), stmts))
    return parts


def _interfaces(parts: list[_Part], defined: set[str]) -> list[tuple[list[str], list[str]]]:
    """(inputs, outputs) of each part: the names it reads that the host or an earlier
    part defines; the names it assigns that a later part takes."""
    available = [set(defined)]
    for part in parts[:-1]:
        available.append(available[-1] | part.stores)
    needed: set[str] = set()
    found = []
    for part, avail in zip(reversed(parts), reversed(available), strict=True):
        outputs = part.stores & needed
        inputs = (part.exposed | (outputs - part.defines)) & avail
        found.append((sorted(inputs), sorted(outputs)))
        needed = (needed - part.defines) | inputs
    return found[::-1]


def split_body(body: SourceWriter, host: str, defined: set[str], options: str
               ) -> tuple[list[SourceWriter], SourceWriter]:
    """(part functions, the host body that calls them) for a long `body`; `defined`:
    the names the host defines before it (parameters, sizes). A short body comes
    back as it is, with no parts."""
    text = body.text()
    if text.count("\n") <= SPLIT_MIN_LINES:
        return [], body
    parts = _parts(text, SPLIT_LINES)
    if len(parts) < 2:
        return [], body
    functions, calls = [], SourceWriter()
    for k, (part, (inputs, outputs)) in enumerate(zip(parts, _interfaces(parts, defined),
                                                      strict=True)):
        name = f"{host}_part{k}"
        w = SourceWriter()
        w.line(f"@{PART_DECORATOR}")
        w.line(f"@numba.njit({PART_OPTIONS}{options})")
        with w.block(f"def {name}({', '.join(inputs)})"):
            for line in part.text.splitlines():
                w.line(line)
            w.line(f"return ({''.join(o + ', ' for o in outputs)})")
        functions.append(w)
        call = f"{name}({', '.join(inputs)})"
        calls.line(f"({''.join(o + ', ' for o in outputs)}) = {call}" if outputs else call)
    return functions, calls


# ------------------------------------------------------------------ at compile time

@functools.lru_cache(maxsize=32)
def _host_steps(source: str, host: str) -> tuple[tuple[str, Any, tuple[str, ...]], ...]:
    """The host's statements as (kind, target(s), names): ("param", name, ()),
    ("size", name, ()), ("call", outputs, (part, *inputs))."""
    fn = next(n for n in ast.parse(source).body
              if isinstance(n, ast.FunctionDef) and n.name == host)
    steps: list[tuple[str, Any, tuple[str, ...]]] = [("param", a.arg, ()) for a in fn.args.args]
    for stmt in fn.body:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
        if isinstance(value, ast.Call) and all(isinstance(a, ast.Name) for a in value.args):
            # (a part's call names its inputs; `set_pool_threads(2)` is no part)
            targets = stmt.targets[0].elts if isinstance(stmt, ast.Assign) else []
            steps.append(("call", tuple(t.id for t in targets),
                          (value.func.id, *(a.id for a in value.args))))
        elif isinstance(value, ast.Subscript):  # n0 = dims[0]
            steps.append(("size", stmt.targets[0].id, ()))
    return tuple(steps)


def register_parts(module: Any, source: str, host: str, signature: Sequence[Any]) -> None:
    """Compile (or load) each part of `module`'s host for the argument types `signature`
    gives it, in order, and bind its symbol (`lib.parts.register`): a host loaded from
    the disk cache calls them by symbol without being typed again."""
    from numba.core import types

    from .lib.parts import register
    env: dict[str, Any] = {}
    params = iter(signature)
    for kind, target, names in _host_steps(source, host):
        if kind == "param":
            env[target] = next(params)
        elif kind == "size":
            env[target] = types.int64
        else:
            part = getattr(module, names[0]).dispatcher
            result = register(part, tuple(env[n] for n in names[1:]))
            # A value unpacked from a part's result reaches the next call as numba types
            # a variable: a literal constant (`k = 1`) as its plain type. Registered as
            # the literal, the part would be bound under a symbol the host never calls.
            env.update(zip(target, map(types.unliteral, result.types), strict=True))


def unbound_parts(dispatcher: Any, signature: Sequence[Any]) -> list[str]:
    """The part symbols the host's machine code for `signature`, loaded from the disk
    cache, calls but this process has not bound: a call of one would jump to address 0
    (LLVM resolves a missing external symbol to null when it loads the object code)."""
    from llvmlite import binding as llvm

    module = getattr(dispatcher.overloads[tuple(signature)].library, "_shared_module", None)
    if module is None:  # (compiled in this process: typing the calls bound every part)
        return []
    return [f.name for f in module.functions if f.is_declaration
            and f.name.startswith("tracer_part.") and not llvm.address_of_symbol(f.name)]

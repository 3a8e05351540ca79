"""A long host function split into several numba functions, so that compile time grows
closer to linearly with the program (not yet measured at thousands of lines).

numba's compile time grows faster than a function's length (type inference and
LLVM's passes work on the whole function): one 7,300-line host function of a
3-layer transformer's training step took 19.6 minutes (issue 15). Parts are large
because each costs a fixed compile time of its own and a call that passes every
array it touches. Measured on a 2-core machine under a load of 10-19 (so the figures
are rough; bench_compile_scaling), parts of 150 lines compiled a 568-line host in 77 s
against 50 s as one function and a 1,450-line host in 281 s against 362 s, and parts of
1,000 lines a 3,000-line host in 817 s against 341 s: no gain shown below a few
thousand lines, so only hosts over 5,000 lines (where issue 15 saw minutes) are cut.
The host body (top-level statements, each one op or one loop nest) is cut
into parts of about SPLIT_LINES lines; each part becomes a function of the module
that takes the values it reads from earlier parts (and the host's parameters and
sizes) and returns the values later parts read. The host calls the parts in order.
Names are found from the generated source's syntax tree, so this sees exactly what
the code reads and writes. A value passed that a part did not need (a loop
temporary reused by name) costs an argument, never a wrong result: numba gives a
variable a loop never bound a zero, as it would have in the one function.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..numba.source import SourceWriter

SPLIT_LINES = 2500  # lines per part; a body up to twice this stays one function


@dataclass
class _Part:
    text: str
    loads: set[str]
    stores: set[str]


def _names(tree: ast.AST) -> tuple[set[str], set[str]]:
    loads, stores = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (stores if isinstance(node.ctx, ast.Store) else loads).add(node.id)
    return loads, stores


def _parts(text: str, split_lines: int) -> list[_Part]:
    """Consecutive top-level statements, about `split_lines` lines a part (comments go
    with the statement after them)."""
    lines = text.splitlines()
    parts, start, names = [], 0, (set(), set())
    for stmt in ast.parse(text).body:
        loads, stores = _names(stmt)
        names[0].update(loads)
        names[1].update(stores)
        if stmt.end_lineno - start >= split_lines:
            parts.append(_Part("\n".join(lines[start:stmt.end_lineno]), *names))
            start, names = stmt.end_lineno, (set(), set())
    if start < len(lines):
        parts.append(_Part("\n".join(lines[start:]), *names))
    return parts


def split_body(body: SourceWriter, host: str, defined: set[str], options: str
               ) -> tuple[list[SourceWriter], SourceWriter]:
    """(part functions, the host body that calls them) for a long `body`; `defined`:
    the names the host defines before it (parameters, sizes). A short body comes
    back as it is, with no parts."""
    split_lines = SPLIT_LINES
    text = body.text()
    if text.count("\n") <= 2 * split_lines:
        return [], body
    parts = _parts(text, split_lines)
    functions, calls = [], SourceWriter()
    for k, part in enumerate(parts):
        later = set().union(*(p.loads for p in parts[k + 1:]))
        outputs = sorted(part.stores & later)
        inputs = sorted((part.loads | set(outputs)) & defined)
        name = f"{host}_part{k}"
        w = SourceWriter()
        w.line(f"@numba.njit({options})")
        with w.block(f"def {name}({', '.join(inputs)})"):
            for line in part.text.splitlines():
                w.line(line)
            w.line(f"return ({''.join(o + ', ' for o in outputs)})")
        functions.append(w)
        call = f"{name}({', '.join(inputs)})"
        calls.line(f"({''.join(o + ', ' for o in outputs)}) = {call}" if outputs else call)
        defined = defined | part.stores
    return functions, calls

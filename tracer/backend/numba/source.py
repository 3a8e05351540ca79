"""Writing generated Python source: indentation by context manager, fresh names.

    w = SourceWriter()
    with w.block("for i0 in range(n0)"):
        w.line("out[i0] = x[i0] * 2")
    w.text()  # 'for i0 in range(n0):\n    out[i0] = x[i0] * 2\n'

No string in this package carries hand-built indentation: nesting comes from
`indent()` / `block()`, and a writer can be embedded into another at the
current level (`embed`), so a function's header can be written after its body.
Shared by the CPU and (later) CUDA code generators.
"""

from __future__ import annotations

import ast
import keyword
import re
from contextlib import contextmanager
from typing import Iterable, Iterator, Sequence

_INDENT = "    "


class SourceWriter:
    """Lines of Python source, each with its nesting level."""

    def __init__(self) -> None:
        self._lines: list[tuple[int, str]] = []
        self._level = 0

    def line(self, text: str = "") -> None:
        self._lines.append((self._level if text else 0, text))

    @contextmanager
    def indent(self) -> Iterator[None]:
        self._level += 1
        try:
            yield
        finally:
            self._level -= 1

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """`header:` followed by an indented body (`for ...`, `if ...`, `def ...`)."""
        self.line(header + ":")
        mark = len(self._lines)
        with self.indent():
            yield
            if len(self._lines) == mark:  # an empty body is a syntax error
                self.line("pass")

    def embed(self, other: "SourceWriter") -> None:
        """Append `other`'s lines, nested under the current level."""
        for level, text in other._lines:
            self._lines.append((self._level + level if text else 0, text))

    def comment(self, text: str) -> None:
        for part in text.splitlines() or [""]:
            self.line(f"# {part}".rstrip())

    def text(self) -> str:
        return "".join(f"{_INDENT * level}{text}\n" for level, text in self._lines)


_NOT_IDENT = re.compile(r"[^0-9a-zA-Z_]")


def identifier(hint: str) -> str:
    """`hint` as a Python identifier: `shift-left` -> `shift_left`, `and` -> `and_`."""
    name = _NOT_IDENT.sub("_", hint).strip("_") or "v"
    if name[0].isdigit():
        name = "v_" + name
    if keyword.iskeyword(name):
        name += "_"
    return name


class Namer:
    """Fresh, readable names: `add`, then `add_2`, `add_3`, ... (per hint)."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._used: set[str] = set(reserved)
        self._counts: dict[str, int] = {}

    def reserve(self, name: str) -> str:
        self._used.add(name)
        return name

    def fresh(self, hint: str, numbered: bool = True) -> str:
        """A new name from `hint`; `numbered` always appends a counter (`exp_1`)."""
        base = identifier(hint)
        count = self._counts.get(base, 0)
        name = base if not numbered and base not in self._used else ""
        while not name or name in self._used:
            count += 1
            name = f"{base}{'' if base.endswith('_') else '_'}{count}"
        self._counts[base] = count
        self._used.add(name)
        return name


def same_code_key(params: Sequence[str], body: SourceWriter) -> str:
    """What `def f(params): body` computes, as text: its parameters and local variables
    renamed in the order the syntax tree visits them, comments dropped. Two functions
    with the same key differ only in those names, so one serves both (called with the
    other's arguments in order); globals (helpers, `np`) and attributes keep theirs."""
    header = SourceWriter()
    with header.block(f"def f({', '.join(params)})"):
        header.embed(body)
    tree = ast.parse(header.text())
    local = set(params) | {n.id for n in ast.walk(tree)
                           if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.arg = names.setdefault(node.arg, f"v{len(names)}")
        elif isinstance(node, ast.Name) and node.id in local:
            node.id = names.setdefault(node.id, f"v{len(names)}")
    return ast.dump(tree)

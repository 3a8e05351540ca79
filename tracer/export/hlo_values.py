"""Reading the values inside one line of tracer's HLO text.

`tracer.hlo` prints attribute values with `_attr` (ints, floats, `true`/`false`,
bare words, `{a,b}` tuples, `%region` references, shapes such as `f32[3,3]`) and
constants with `format_literal` (`1.5`, `{1, 2}`, `(re, im)` for complex). A
`Cursor` walks one line and turns those spellings back into Python values; what
the text means for an op's params is decided in `params.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import TOKEN, ShapedArray
from ..dtypes import HLO_NAMES
from ..errors import TracerValueError

DTYPES_BY_HLO_NAME: dict[str, np.dtype] = {name: dtype for dtype, name in HLO_NAMES.items()}
_INT = re.compile(r"[-+]?\d+\Z")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|nan)\Z")
_TOKEN_STOP = set(",{}()=% \"\n")


class HloSyntaxError(TracerValueError):
    """HLO text that tracer's printer could not have written (corrupt or hand-edited)."""


@dataclass(frozen=True)
class Word:
    """A bare identifier in attribute position (a direction, an algorithm, a target)."""

    text: str


@dataclass(frozen=True)
class TreeText:
    """`PyTreeDef((*, [*]))`: a pytree structure as `PyTreeDef.__repr__` prints it."""

    text: str


@dataclass(frozen=True)
class Ref:
    """`%region_0.4`: a reference to a sub-computation printed earlier."""

    name: str


class Cursor:
    """A position in one line of HLO text, with the small grammar the printer uses."""

    def __init__(self, text: str, where: str):
        self.text = text
        self.pos = 0
        self.where = where  # "line 12" of the module, for error messages

    def error(self, what: str) -> HloSyntaxError:
        shown = self.text if len(self.text) < 160 else self.text[:157] + "..."
        return HloSyntaxError(f"HLO parser: {what} at {self.where}, column {self.pos + 1}: "
                              f"{shown!r}")

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def at_end(self) -> bool:
        self.skip_spaces()
        return self.pos >= len(self.text)

    def peek(self, s: str) -> bool:
        self.skip_spaces()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.accept(s):
            raise self.error(f"expected {s!r}")

    def token(self) -> str:
        """A run of characters up to the next separator; a `[...]` shape stays whole."""
        self.skip_spaces()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in _TOKEN_STOP:
            if self.text[self.pos] == "[":
                end = self.text.find("]", self.pos)
                if end < 0:
                    raise self.error("unclosed '['")
                self.pos = end
            self.pos += 1
        if self.pos == start:
            raise self.error("expected a name or a value")
        return self.text[start:self.pos]

    def quoted(self) -> str:
        self.expect('"')
        end = self.text.find('"', self.pos)
        if end < 0:
            raise self.error("unclosed string")
        value, self.pos = self.text[self.pos:end], end + 1
        return value

    def shape(self) -> tuple[ShapedArray, ...] | ShapedArray:
        """`f32[2,3]`, or a tuple shape `(f32[2], s32[])`."""
        if self.accept("("):
            shapes = []
            while not self.accept(")"):
                shapes.append(self.aval())
                self.accept(",")
            return tuple(shapes)
        return self.aval()

    def aval(self) -> ShapedArray:
        return parse_aval(self.token(), self)

    def value(self) -> Any:
        """An attribute value: a tuple in braces, a reference, a string or a scalar."""
        if self.accept("{"):
            items = []
            while not self.accept("}"):
                items.append(self.value())
                self.accept(",")
            return tuple(items)
        if self.accept("%"):
            return Ref(self.token())
        if self.peek('"'):
            return self.quoted()
        if self.peek("PyTreeDef("):
            return TreeText(self._balanced("PyTreeDef("))
        return scalar_or_word(self.token(), self)

    def _balanced(self, opening: str) -> str:
        """The text of `opening...)` up to its matching parenthesis."""
        self.expect(opening)
        depth, start = 1, self.pos
        while self.pos < len(self.text) and depth:
            depth += {"(": 1, ")": -1}.get(self.text[self.pos], 0)
            self.pos += 1
        if depth:
            raise self.error(f"unclosed {opening!r}")
        return self.text[start:self.pos - 1]

    def literal(self) -> Any:
        """A constant's value as `format_literal` prints it (nested lists of scalars)."""
        if self.accept("{"):
            items = []
            while not self.accept("}"):
                items.append(self.literal())
                self.accept(",")
            return items
        if self.accept("("):  # complex: (re, im)
            re_part = self._number()
            self.expect(",")
            im_part = self._number()
            self.expect(")")
            return complex(re_part, im_part)
        token = self.token()
        if token == "...":
            raise self.error("the constant was elided ('{...}'); print the module with "
                             "full_literals=True (as export does) to read it back")
        value = scalar_or_word(token, self)
        if isinstance(value, Word):
            raise self.error(f"{token!r} is not a number")
        return value

    def _number(self) -> float:
        value = scalar_or_word(self.token(), self)
        if isinstance(value, (Word, bool, ShapedArray)):
            raise self.error("expected a number")
        return float(value)


def parse_aval(token: str, cursor: Cursor) -> ShapedArray:
    if token == "token[]":
        return TOKEN
    name, _, rest = token.partition("[")
    if name not in DTYPES_BY_HLO_NAME or not rest.endswith("]"):
        raise cursor.error(f"{token!r} is not a shape such as f32[2,3]")
    dims = rest[:-1]
    try:
        shape = tuple(int(d) for d in dims.split(",")) if dims else ()
    except ValueError:
        raise cursor.error(f"{token!r} has a dimension that is not an int") from None
    return ShapedArray(shape, DTYPES_BY_HLO_NAME[name])


def scalar_or_word(token: str, cursor: Cursor) -> Any:
    if token in ("true", "false"):
        return token == "true"
    if _INT.match(token):
        return int(token)
    if _FLOAT.match(token):
        return float(token)
    if "[" in token:
        return parse_aval(token, cursor)
    return Word(token)

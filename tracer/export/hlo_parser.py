"""HLO text back to a `Graph`: the inverse of `tracer.hlo.graph_to_text`.

    graph, name = parse_hlo(graph_to_text(g, full_literals=True))
    graph_to_text(graph) == graph_to_text(g)        # and it runs to the same values

Computations are read in order (sub-computations come before their users, as the
printer writes them). Every instruction's result type is recomputed with its
op's shape rule and must equal the printed one, so corrupt text fails here with
an `HloSyntaxError` (a `TracerError` and `ValueError`) naming the line.
"""

from __future__ import annotations

from typing import Any

from ..core import Atom, Eqn, Graph, Literal, ShapedArray, SourceInfo, Var
from ..ops import OPS
from ..ops.registry import Op
from . import params as P
from .hlo_values import Cursor, HloSyntaxError

# Several ops can share XLA's spelling (custom_call and the host callbacks are all
# `custom-call`): the printed attributes tell them apart.
OPS_BY_HLO_NAME: dict[str, list[Op]] = {}
for _op in OPS.values():
    if _op.name != "composite":
        OPS_BY_HLO_NAME.setdefault(_op.hlo_name, []).append(_op)
# Params holding a Python function (a host callback, a debug printer): the text names it only.
_PYTHON_PARAMS = ("callback", "printer")
_RAW_ATTRS = ("window", "frontend_attributes", "metadata")


def parse_hlo(text: str) -> tuple[Graph, str]:
    """The entry computation of an HLO module and the module's name."""
    lines = text.split("\n")
    head = Cursor(lines[0], "line 1")
    head.expect("HloModule")
    name = head.token()
    computations: dict[str, Graph] = {}
    entry: Graph | None = None
    k = 1
    while k < len(lines):
        title = lines[k].strip()
        k += 1
        if not title:
            continue
        if not title.endswith("{"):
            raise Cursor(lines[k - 1], f"line {k}").error("expected a computation title")
        title = title[:-1].strip()
        end = _closing_line(lines, k)
        graph_name = title.removeprefix("ENTRY ").strip()
        graph = _Computation(computations, graph_name).read(lines[k:end], first_line=k + 1)
        if title.startswith("ENTRY "):
            entry = graph
        else:
            computations[graph_name] = graph
        k = end + 1
    if entry is None:
        raise HloSyntaxError("HLO parser: the module has no ENTRY computation")
    return entry, name


def _closing_line(lines: list[str], start: int) -> int:
    for k in range(start, len(lines)):
        if lines[k] == "}":
            return k
    raise HloSyntaxError(f"HLO parser: the computation opened at line {start} is never closed")


class _Computation:
    """Reads the instruction lines of one computation into a Graph."""

    def __init__(self, regions: dict[str, Graph], name: str):
        self.regions = regions
        self.name = name
        self.atoms: dict[str, Atom] = {}
        self.tuples: dict[str, tuple[Var, ...]] = {}  # multi-result instruction → its results
        self.inputs: dict[int, Var] = {}
        self.eqns: list[Eqn] = []
        self.outputs: tuple[Atom, ...] | None = None

    def read(self, lines: list[str], first_line: int) -> Graph:
        for offset, line in enumerate(lines):
            self._instruction(Cursor(line, f"line {first_line + offset}"))
        if self.outputs is None or sorted(self.inputs) != list(range(len(self.inputs))):
            raise HloSyntaxError(f"HLO parser: computation {self.name} has no ROOT or its "
                                 f"parameters are not numbered 0..n-1")
        inputs = tuple(self.inputs[i] for i in range(len(self.inputs)))
        return Graph(inputs, tuple(self.eqns), self.outputs, self.name)

    def _instruction(self, c: Cursor) -> None:
        root = c.accept("ROOT ")
        name = c.token()
        c.expect("=")
        shape = c.shape()
        opcode = c.token()
        c.expect("(")
        if opcode == "constant":
            self._constant(c, name, shape)
        else:
            operands = self._operands(c)
            attrs = _attributes(c)
            self._structural(c, name, shape, opcode, operands, attrs) or \
                self._eqn(c, name, shape, opcode, operands, attrs)
        if root and opcode not in ("copy", "tuple"):
            self.outputs = (self.atoms[name],)

    def _constant(self, c: Cursor, name: str, shape: Any) -> None:
        if not isinstance(shape, ShapedArray):
            raise c.error("a constant has an array shape")
        value = P.literal_array(c.literal(), shape, c)
        c.expect(")")
        self.atoms[name] = Literal(value, shape)

    def _operands(self, c: Cursor) -> list[str]:
        names = []
        while not c.accept(")"):
            names.append(c.token())
            c.accept(",")
        return names

    def _lookup(self, c: Cursor, name: str) -> Atom:
        if name not in self.atoms:
            raise c.error(f"{name} is used before it is defined")
        return self.atoms[name]

    def _structural(self, c: Cursor, name: str, shape: Any, opcode: str, operands: list[str],
                    attrs: dict[str, Any]) -> bool:
        """parameter, get-tuple-element and the ROOT copy/tuple: no eqn of their own."""
        if opcode == "parameter":
            self.inputs[int(operands[0])] = self.atoms[name] = Var(shape)
        elif opcode == "get-tuple-element":
            if operands[0] not in self.tuples:
                raise c.error(f"{operands[0]} is not a multi-result instruction")
            self.atoms[name] = self.tuples[operands[0]][attrs["index"]]
        elif opcode in ("copy", "tuple"):
            self.outputs = tuple(self._lookup(c, n) for n in operands)
        else:
            return False
        return True

    def _eqn(self, c: Cursor, name: str, shape: Any, opcode: str, operands: list[str],
             attrs: dict[str, Any]) -> None:
        op, params = self._op_and_params(c, opcode, shape, attrs)
        inputs = tuple(self._lookup(c, n) for n in operands)
        try:
            out_avals = op.abstract_eval(*(a.aval for a in inputs), **params)
        except (TypeError, ValueError, KeyError, IndexError) as e:  # TracerErrors too
            raise c.error(f"{op.name} rejects its operands and attributes ({e})") from None
        printed = shape if isinstance(shape, tuple) else (shape,)
        if tuple(map(str, out_avals)) != tuple(map(str, printed)):
            raise c.error(f"{op.name} gives {', '.join(map(str, out_avals))}, not the printed "
                          f"{', '.join(map(str, printed))}")
        outs = tuple(Var(a) for a in out_avals)
        self.eqns.append(Eqn(op, inputs, params, outs, _source(attrs.get("metadata"))))
        if len(outs) == 1:
            self.atoms[name] = outs[0]
        else:
            self.tuples[name] = outs

    def _op_and_params(self, c: Cursor, opcode: str, shape: Any,
                       attrs: dict[str, Any]) -> tuple[Op, dict[str, Any]]:
        if attrs.pop("is_composite", False):
            return OPS["composite"], P.composite_params(attrs, attrs.get("frontend_attributes",
                                                                         ""), c, self._region)
        plain = {k: v for k, v in attrs.items() if k not in _RAW_ATTRS}
        op = _choose_op(c, opcode, plain)
        if "window" in attrs:
            plain.update(P.parse_window(attrs["window"], c))
        out_avals = shape if isinstance(shape, tuple) else (shape,)
        return op, P.build_params(op, plain, out_avals, self._region, c)

    def _region(self, name: str) -> Graph:
        if name not in self.regions:
            raise HloSyntaxError(f"HLO parser: %{name} is not a computation printed earlier")
        return self.regions[name]


def _choose_op(c: Cursor, opcode: str, attrs: dict[str, Any]) -> Op:
    """The op spelled `opcode` that takes every printed attribute."""
    if opcode not in OPS_BY_HLO_NAME:
        raise c.error(f"unknown instruction {opcode!r}")
    for key in _PYTHON_PARAMS:
        if key in attrs:
            raise c.error(f"the {opcode} holds a Python function ({key}={attrs[key]!r}); "
                          f"HLO text names it but cannot carry it")
    for op in OPS_BY_HLO_NAME[opcode]:
        known = P.param_defaults(op)
        if all(k in known or (k == "dimensions" and "broadcast_dimensions" in known)
               for k in attrs):
            return op
    return OPS_BY_HLO_NAME[opcode][0]  # (build_params then names the unknown attribute)


def _attributes(c: Cursor) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    while c.accept(","):
        key = c.token()
        c.expect("=")
        attrs[key] = _braced_text(c) if key in _RAW_ATTRS else c.value()
    if not c.at_end():
        raise c.error("unexpected text after the attributes")
    return attrs


def _braced_text(c: Cursor) -> str:
    """The text inside `{...}` (nested braces and quoted strings kept whole)."""
    c.expect("{")
    depth, start, quoted = 1, c.pos, False
    while c.pos < len(c.text):
        ch = c.text[c.pos]
        c.pos += 1
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "{}":
            depth += 1 if ch == "{" else -1
            if depth == 0:
                return c.text[start:c.pos - 1]
    raise c.error("unclosed '{'")


def _source(metadata: str | None) -> SourceInfo | None:
    """`op_name="f" source_file="model.py" source_line=5` → SourceInfo."""
    if metadata is None:
        return None
    c = Cursor(metadata, "metadata")
    fields: dict[str, str] = {}
    while not c.at_end():
        key = c.token()
        c.expect("=")
        fields[key] = c.quoted() if c.peek('"') else c.token()
    return SourceInfo(fields.get("source_file", "?"), int(fields.get("source_line", 0)),
                      fields.get("op_name", "?"))

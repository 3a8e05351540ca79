"""HLO text: one instruction a line, as XLA prints it.

    HloModule jit_predict, entry_computation_layout={(f32[3,2], f32[2])->f32[4,2]}

    ENTRY main {
      Arg_0.1 = f32[3,2] parameter(0)
      ...
      ROOT tanh.6 = f32[4,2] tanh(add.5), metadata={source_file="model.py" source_line=5}
    }

Sub-computations (reduce bodies, loop and branch bodies) are printed before the
computation that uses them and referenced as `to_apply=%region_0.4`.
"""

from __future__ import annotations

import os
from typing import Any, Iterator

import numpy as np

from . import dtypes
from .core import Eqn, Graph, Literal, ShapedArray


# Params whose value the result type already shows, and XLA's names for ours.
_IMPLIED = frozenset({"shape", "new_sizes", "new_dtype", "weak_type"})
_ATTR_NAMES = {"broadcast_dimensions": "dimensions"}


class _Namer:
    """Module-wide instruction numbering (XLA style: `add.3`, `Arg_0.1`)."""

    def __init__(self) -> None:
        self.count = 0
        self.regions = 0

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{base}.{self.count}"

    def region(self) -> str:
        self.regions += 1
        return self.fresh(f"region_{self.regions - 1}")


def graph_to_text(graph: Graph, name: str | None = None, metadata: bool = True) -> str:
    """HLO module text of `graph`."""
    lines: list[str] = []
    namer = _Namer()
    _computation(graph, "ENTRY main", namer, lines, metadata)
    sig = ", ".join(str(a) for a in graph.in_avals)
    out = _shape_str(graph.out_avals)
    head = f"HloModule {name or graph.name}, entry_computation_layout={{({sig})->{out}}}"
    return "\n".join([head, ""] + lines)


def _computation(graph: Graph, title: str, namer: _Namer, lines: list[str],
                 metadata: bool) -> None:
    body: list[str] = []
    names: dict[int, str] = {}
    for i, v in enumerate(graph.inputs):
        names[id(v)] = namer.fresh(f"Arg_{i}")
        body.append(f"  {names[id(v)]} = {v.aval} parameter({i})")
    for k, eqn in enumerate(graph.eqns):
        subs = _print_subgraphs(eqn, namer, lines, metadata)
        is_root = (k == len(graph.eqns) - 1 and len(graph.outputs) == 1
                   and graph.outputs[0] is eqn.outputs[-1] and len(eqn.outputs) == 1)
        body.extend(_eqn_lines(eqn, names, subs, namer, is_root, metadata))
    body.extend(_root_lines(graph, names, namer))
    lines.extend([f"{title} {{", *body, "}", ""])


def _print_subgraphs(eqn: Eqn, namer: _Namer, lines: list[str], metadata: bool) -> dict[int, str]:
    subs: dict[int, str] = {}
    for value in eqn.params.values():
        for g in (value if isinstance(value, tuple) else (value,)):
            if isinstance(g, Graph) and id(g) not in subs:
                subs[id(g)] = namer.region()
                _computation(g, subs[id(g)], namer, lines, metadata)
    return subs


def _eqn_lines(eqn: Eqn, names: dict[int, str], subs: dict[int, str], namer: _Namer,
               is_root: bool, metadata: bool) -> Iterator[str]:
    operands = []
    for a in eqn.inputs:
        if isinstance(a, Literal):
            cname = namer.fresh("constant")
            yield f"  {cname} = {a.aval} constant({format_literal(a.value)})"
            operands.append(cname)
        else:
            operands.append(names[id(a)])
    name = namer.fresh(eqn.op.hlo_name)
    attrs = _composite_attrs(eqn, subs) if eqn.op.name == "composite" else _attrs(eqn, subs)
    meta = _metadata(eqn) if metadata else ""
    shape = _shape_str(tuple(v.aval for v in eqn.outputs)) if len(eqn.outputs) != 1 \
        else str(eqn.outputs[0].aval)
    root = "ROOT " if is_root else ""
    yield f"  {root}{name} = {shape} {eqn.op.hlo_name}({', '.join(operands)}){attrs}{meta}"
    if len(eqn.outputs) == 1:  # XLA prints a one-result reduce/call as a plain instruction
        names[id(eqn.outputs[0])] = name
        return
    for i, v in enumerate(eqn.outputs):
        names[id(v)] = namer.fresh("get-tuple-element")
        yield f"  {names[id(v)]} = {v.aval} get-tuple-element({name}), index={i}"


# Window params, printed as XLA's one `window={size=2x2 stride=1x2 pad=0_1x0_0 ...}`.
_WINDOW = {"window_dimensions": "size", "window_strides": "stride", "padding": "pad",
           "base_dilation": "lhs_dilate", "window_dilation": "rhs_dilate"}


def _attrs(eqn: Eqn, subs: dict[int, str]) -> str:
    windowed = "window_dimensions" in eqn.params
    text = "".join(f", {_ATTR_NAMES.get(k, k)}={_attr(v, subs)}" for k, v in eqn.params.items()
                   if v is not None and v != () and k not in _IMPLIED
                   and not (windowed and k in _WINDOW))
    return f", window={{{_window(eqn.params)}}}{text}" if windowed else text


def _window(params: dict[str, Any]) -> str:
    """XLA's window text: the size always, other fields when not the default."""
    fields = []
    for key, label in _WINDOW.items():
        value = params.get(key)
        if value is None:
            continue
        if key == "padding":
            if any(lo or hi for lo, hi in value):
                fields.append(f"pad={'x'.join(f'{lo}_{hi}' for lo, hi in value)}")
        elif key == "window_dimensions" or any(v != 1 for v in value):
            fields.append(f"{label}={'x'.join(map(str, value))}")
    return " ".join(fields)


def _composite_attrs(eqn: Eqn, subs: dict[int, str]) -> str:
    """XLA's spelling of a composite: a call with `is_composite` and frontend attributes."""
    p = eqn.params
    attributes = ", ".join(f"{k} = {_attr(v, subs)}" for k, v in p["attributes"])
    return (f", to_apply=%{subs[id(p['to_apply'])]}, is_composite=true, frontend_attributes="
            f"{{composite.name=\"{p['name']}\", composite.attributes={{{attributes}}}, "
            f"composite.version=\"{p['version']}\"}}")


def _root_lines(graph: Graph, names: dict[int, str], namer: _Namer) -> Iterator[str]:
    if (len(graph.outputs) == 1 and graph.eqns and len(graph.eqns[-1].outputs) == 1
            and graph.outputs[0] is graph.eqns[-1].outputs[0]):
        return
    refs = []
    for a in graph.outputs:
        if isinstance(a, Literal):
            cname = namer.fresh("constant")
            yield f"  {cname} = {a.aval} constant({format_literal(a.value)})"
            refs.append(cname)
        else:
            refs.append(names[id(a)])
    if len(graph.outputs) == 1:
        yield f"  ROOT {namer.fresh('copy')} = {graph.outputs[0].aval} copy({refs[0]})"
    else:
        shape = _shape_str(graph.out_avals)
        yield f"  ROOT {namer.fresh('tuple')} = {shape} tuple({', '.join(refs)})"


def _shape_str(avals: tuple[ShapedArray, ...]) -> str:
    return str(avals[0]) if len(avals) == 1 else f"({', '.join(map(str, avals))})"


def _attr(value: Any, subs: dict[int, str]) -> str:
    if isinstance(value, Graph):
        return f"%{subs[id(value)]}"
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return dtypes.hlo_name(np.dtype(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "{" + ",".join(_attr(v, subs) for v in value) + "}"
    return str(value)


def format_literal(value: np.ndarray, limit: int = 16) -> str:
    arr = np.asarray(value)
    if arr.size > limit:
        return "{...}"
    if arr.ndim == 0:
        return _scalar(arr.item())
    return _nested(arr)


def _nested(arr: np.ndarray) -> str:
    if arr.ndim == 0:
        return _scalar(arr.item())
    return "{" + ", ".join(_nested(x) for x in arr) + "}"


def _scalar(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, complex):
        return f"({x.real}, {x.imag})"
    return repr(x) if isinstance(x, float) else str(x)


def _metadata(eqn: Eqn) -> str:
    if eqn.source is None:
        return ""
    s = eqn.source
    return (f', metadata={{op_name="{s.function}" source_file="{os.path.basename(s.file)}" '
            f'source_line={s.line}}}')


class HloModule:
    """A traced function's graph as an HLO module; `str()` is the HLO text."""

    def __init__(self, graph: Graph, name: str):
        self.graph = graph
        self.name = name

    def as_text(self, metadata: bool = True) -> str:
        return graph_to_text(self.graph, self.name, metadata)

    def __str__(self) -> str:
        return self.as_text()

    def __repr__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        import html  # (on first use: html.entities is a noticeable part of `import tracer`)
        return f"<pre>{html.escape(self.as_text())}</pre>"

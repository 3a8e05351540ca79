"""`Exported`: a traced, optimized program that can be saved and called later.

    exp = export.export(tr.jit(f))(x, y)          # arrays or ShapedArrays
    data = exp.serialize()                          # bytes: a header and HLO text
    export.deserialize(data).call(x, y)             # in any process, no retrace

The bytes are `tracer-export` on the first line, a JSON header on the second
(format version, argument and result structure and avals, a SHA-256 of the
text) and the module's HLO text after it (every constant written out). Reading
a newer format version, a changed checksum or text the parser rejects raises a
`TracerValueError` that says which.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from ..api import Jitted, jit
from ..backend import get_backend
from ..config import config
from ..core import Graph, ShapedArray, Var, subgraphs
from ..errors import TracerTypeError, TracerValueError
from ..hlo import graph_to_text
from ..ops.misc import CUSTOM_CALL_TARGETS
from ..passes import optimize
from ..stages import ExactArrays
from ..tree_util import PyTreeDef, tree_flatten
from .hlo_parser import parse_hlo
from .hlo_values import Cursor, parse_aval
from .trees import decode_tree, encode_tree

FORMAT_VERSION = 1
MAGIC = b"tracer-export\n"


class Exported:
    """A program for one signature: `in_avals` → `out_avals`, callable and serializable."""

    def __init__(self, name: str, graph: Graph, in_tree: PyTreeDef, out_tree: PyTreeDef,
                 in_avals: tuple[ShapedArray, ...], static_argnums: tuple[int, ...] = ()):
        self.fun_name = name
        # positions of static arguments: their values are baked in, `call` omits them
        self.static_argnums = static_argnums
        self.graph = graph
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.in_avals = in_avals
        self.out_avals = graph.out_avals
        self._executables: dict[str, Any] = {}
        self._plain = ExactArrays(in_tree, tuple(a.strip_weak() for a in in_avals))

    def as_text(self) -> str:
        """The HLO text that `serialize` stores (constants written out)."""
        return graph_to_text(self.graph, self.fun_name, full_literals=True)

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Run on the default backend with arguments of the exported structure and avals
        (static arguments left out: the values they had when exporting are baked in)."""
        plain = None if self.static_argnums else self._plain.of(args, kwargs)
        if plain is not None:  # (the common call, without the checks' ~10 us of Python)
            return self.out_tree.unflatten(_unaliased(self.graph,
                                                      list(self._executable()(*plain))))
        padded = list(args)
        for i in self.static_argnums:
            padded.insert(i, None)
        leaves, tree = tree_flatten((tuple(padded), kwargs))
        arrays = [np.asarray(x) for x in leaves]
        got = tuple(ShapedArray(a.shape, a.dtype) for a in arrays)
        want = tuple(a.strip_weak() for a in self.in_avals)
        if tree != self.in_tree or (got != want and not _scalars_fit(arrays, leaves, want)):
            raise TracerTypeError(
                f"export {self.fun_name}: exported for ({', '.join(map(str, want))}) but called "
                f"with ({', '.join(map(str, got))})")
        arrays = [np.asarray(x, dtype=a.dtype) for x, a in zip(leaves, want, strict=True)]
        outs = self._executable()(*arrays)
        return self.out_tree.unflatten(_unaliased(self.graph, list(outs)))

    def _executable(self) -> Any:
        backend = config.default_backend
        if backend not in self._executables:
            self._executables[backend] = get_backend(backend).compile(self.graph)
        return self._executables[backend]

    def serialize(self) -> bytes:
        text = self.as_text().encode()
        header = {"format_version": FORMAT_VERSION, "name": self.fun_name,
                  "in_tree": encode_tree(self.in_tree), "out_tree": encode_tree(self.out_tree),
                  "in_avals": [str(a) for a in self.in_avals],
                  "in_weak": [a.weak_type for a in self.in_avals],
                  "static_argnums": list(self.static_argnums),
                  "sha256": hashlib.sha256(text).hexdigest()}
        return MAGIC + json.dumps(header).encode() + b"\n" + text

    def __repr__(self) -> str:
        sig = ", ".join(map(str, self.in_avals))
        return f"Exported({self.fun_name}: ({sig}) -> ({', '.join(map(str, self.out_avals))}))"


def export(fun: Callable[..., Any]) -> Callable[..., Exported]:
    """`export(jitted)(*args)`: trace for these arguments (arrays or `ShapedArray`s),
    optimize, and return the `Exported` program."""
    jitted = fun if isinstance(fun, Jitted) else jit(fun)

    def exporter(*args: Any, **kwargs: Any) -> Exported:
        lowered = jitted.lower(*args, **kwargs)
        graph = optimize(lowered.graph, lowered.name)
        check_serializable(graph, lowered.name)
        statics = tuple(sorted(i for i in jitted.static_argnums if i < len(args)))
        return Exported(lowered.name, graph, lowered.in_tree, lowered.out_tree,
                        lowered.in_avals, statics)
    return exporter


# Param values HLO text carries (and the parser rebuilds); anything else is a Python object.
_TEXT_VALUES = (bool, int, float, str, type(None), np.dtype, ShapedArray, Graph, PyTreeDef)


def check_serializable(graph: Graph, name: str) -> None:
    """Refuse params that HLO text cannot carry: Python functions (host callbacks, debug
    printers, custom_vjp rules) and other Python objects."""
    for eqn in graph.eqns:
        for key, value in eqn.params.items():
            if not _is_text_value(value):
                raise TracerValueError(
                    f"export {name}: {eqn.op.name} holds a Python function or object in its "
                    f"parameter {key!r}, which HLO text cannot carry ({eqn.source})")
        for sub in subgraphs(eqn.params):
            check_serializable(sub, name)


def _is_text_value(value: Any) -> bool:
    if isinstance(value, tuple):  # (named tuples too: ConvDimensionNumbers)
        return all(map(_is_text_value, value))
    return isinstance(value, _TEXT_VALUES) or (isinstance(value, type)
                                               and issubclass(value, np.generic))


def deserialize(data: bytes) -> Exported:
    """The `Exported` that `serialize` wrote; TracerValueError for anything else."""
    if not isinstance(data, (bytes, bytearray)) or not data.startswith(MAGIC):
        raise TracerValueError("export.deserialize: not a serialized tracer export (it "
                               "does not start with 'tracer-export')")
    head, _, text = bytes(data[len(MAGIC):]).partition(b"\n")
    header = _header(head)
    version = header.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise TracerValueError(f"export.deserialize: format version {version!r} was written by "
                               f"a newer tracer; this one reads versions up to {FORMAT_VERSION}")
    if hashlib.sha256(text).hexdigest() != header.get("sha256"):
        raise TracerValueError("export.deserialize: the HLO text does not match its SHA-256 "
                               "checksum (the data is corrupt or was edited)")
    graph, name = parse_hlo(text.decode())
    try:
        in_avals = tuple(parse_aval(s, Cursor(s, "the header")).update(weak_type=w)
                         for s, w in zip(header["in_avals"], header["in_weak"], strict=True))
        in_tree, out_tree = decode_tree(header["in_tree"]), decode_tree(header["out_tree"])
        statics = tuple(int(i) for i in header.get("static_argnums", ()))
    except (KeyError, TypeError, ValueError) as e:
        raise TracerValueError(f"export.deserialize: corrupt header ({e})") from None
    _check_custom_call_targets(graph)
    if tuple(a.strip_weak() for a in in_avals) != graph.in_avals:
        raise TracerValueError(f"export.deserialize: the header's arguments "
                               f"{header['in_avals']} do not match the HLO text's")
    return Exported(name, graph, in_tree, out_tree, in_avals, statics)


def _check_custom_call_targets(graph: Graph) -> None:
    """A custom call runs a function registered in this process, as XLA's do."""
    for eqn in graph.eqns:
        target, revision = eqn.params.get("target"), eqn.params.get("revision", 0)
        if eqn.op.name == "custom_call" and len(CUSTOM_CALL_TARGETS.get(target, ())) <= revision:
            raise TracerValueError(
                f"export.deserialize: custom_call target {target!r} (revision {revision}) is "
                f"not registered in this process; call tr.register_custom_call({target!r}, fn) "
                f"before loading")
        for sub in subgraphs(eqn.params):
            _check_custom_call_targets(sub)


def _header(head: bytes) -> dict[str, Any]:
    try:
        header = json.loads(head)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TracerValueError(f"export.deserialize: corrupt header ({e})") from None
    if not isinstance(header, dict):
        raise TracerValueError("export.deserialize: corrupt header (not a JSON object)")
    return header


def _scalars_fit(arrays: list[np.ndarray], leaves: list[Any], want: tuple) -> bool:
    """Python scalars passed where the export took a weakly typed scalar."""
    return len(arrays) == len(want) and all(
        a.shape == w.shape and (a.dtype == w.dtype or isinstance(x, (bool, int, float, complex)))
        for a, x, w in zip(arrays, leaves, want, strict=True))


def _unaliased(graph: Graph, outs: list[Any]) -> list[Any]:
    """Copies of outputs that are inputs or repeat an earlier output (results never alias)."""
    seen = {id(v) for v in graph.inputs}
    for i, atom in enumerate(graph.outputs):
        if isinstance(atom, Var):
            if id(atom) in seen:
                outs[i] = np.array(outs[i], copy=True)
            seen.add(id(atom))
    return outs

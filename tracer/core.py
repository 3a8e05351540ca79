"""The IR: abstract values, variables, equations and graphs, plus `typecheck`.

A `Graph` is a closed, SSA, first-order program: `inputs` are `Var`s, each `Eqn`
binds fresh output `Var`s from input atoms (`Var` or `Literal`), and `outputs`
are atoms. Sub-computations (reduce bodies, loop and branch bodies) are `Graph`s
stored in an eqn's params. The HLO text printer lives in `tracer.hlo`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol, Sequence, Union

import numpy as np

from . import dtypes
from .errors import ShapeError, TracerTypeError, user_frame


@dataclass(frozen=True, slots=True)
class ShapedArray:
    """An abstract value: a shape and a dtype (the "aval").

    `str(ShapedArray((2, 3), np.float32))` is the HLO spelling `f32[2,3]`.
    `weak_type` marks values that came from Python scalars (NEP 50).
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
        shape = tuple(shape)
        if not all(type(d) is int and d >= 0 for d in shape):  # (the hot path: plain ints)
            if not all(isinstance(d, (int, np.integer)) for d in shape):
                raise TracerTypeError(f"ShapedArray: shape {shape} must hold ints")
            if not all(d >= 0 for d in shape):  # (NumPy: "negative dimensions")
                raise ShapeError(f"ShapedArray: shape {shape} has a negative dimension")
            shape = tuple(int(d) for d in shape)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtypes.canonicalize(dtype))
        object.__setattr__(self, "weak_type", bool(weak_type))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def strip_weak(self) -> "ShapedArray":
        return ShapedArray(self.shape, self.dtype) if self.weak_type else self

    def update(self, shape: Sequence[int] | None = None, dtype: Any = None,
               weak_type: bool | None = None) -> "ShapedArray":
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def __str__(self) -> str:
        return f"{dtypes.hlo_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.shape}, {self.dtype.name}{weak})"


class TokenAval(ShapedArray):
    """The type of XLA's `token[]`: a value with no data that orders side effects
    (infeed, outfeed, send, recv, ordered host callbacks). At run time a token is
    an empty bool array, so every backend carries it like any other value."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__((0,), np.bool_)

    def update(self, shape: Sequence[int] | None = None, dtype: Any = None,
               weak_type: bool | None = None) -> "ShapedArray":
        return self  # (rules that re-derive an aval keep a token a token)

    def __str__(self) -> str:
        return "token[]"

    def __repr__(self) -> str:
        return "TokenAval()"


TOKEN = TokenAval()


def reject_masked(x: Any, where: str) -> None:
    """A NumPy masked array cannot enter tracer: its arrays have no mask, and
    `np.asarray` would silently use the masked-out values (TracerTypeError instead)."""
    # (numpy.ma is not imported by numpy: without it no value can be a MaskedArray; and
    # while another thread imports it, the class may not be defined yet, nor any value)
    masked = getattr(sys.modules.get("numpy.ma.core"), "MaskedArray", None)
    if masked is not None and isinstance(x, masked):
        raise TracerTypeError(
            f"{where}: got a numpy.ma.MaskedArray {x.dtype}{list(x.shape)}; tracer arrays "
            f"have no mask, so its masked-out values would be used. Pass "
            f"x.filled(fill_value) or np.ma.getdata(x) and handle the mask explicitly "
            f"(tnp.where(mask, ..., ...))")


def aval_of(x: Any) -> ShapedArray:
    """The abstract value of a concrete input (array, NumPy or Python scalar)."""
    if dtypes.is_python_scalar(x):
        return ShapedArray((), dtypes.weak_dtype(x), weak_type=True)
    if isinstance(x, ShapedArray):
        return x
    reject_masked(x, "tracer")
    arr = np.asarray(x)
    return ShapedArray(arr.shape, arr.dtype)


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Where in the user's code an op was called."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} (in {self.function})"


def user_source() -> SourceInfo | None:
    """The innermost stack frame outside the tracer package: the user's line."""
    frame = user_frame(sys._getframe(1))
    return None if frame is None else \
        SourceInfo(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


class Var:
    """A graph variable. Identity is the variable: two Vars are never equal."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval})"


class Literal:
    """A constant operand: a NumPy value (scalar or array) inlined in the graph."""

    __slots__ = ("value", "aval")

    def __init__(self, value: Any, aval: ShapedArray | None = None):
        self.aval = aval_of(value) if aval is None else aval
        self.value = np.asarray(value, dtype=self.aval.dtype)

    def __repr__(self) -> str:
        return f"Literal({self.value!r})"


Atom = Union[Var, Literal]


class OpLike(Protocol):
    """What the IR needs of an op (the full record is `tracer.ops.registry.Op`)."""

    name: str
    hlo_name: str

    def abstract_eval(self, *avals: ShapedArray, **params: Any) -> tuple[ShapedArray, ...]: ...


@dataclass(frozen=True, eq=False, slots=True)
class Eqn:
    """`outputs = op(*inputs, **params)`, called from `source` in the user's code."""

    op: OpLike
    inputs: tuple[Atom, ...]
    params: dict[str, Any]
    outputs: tuple[Var, ...]
    source: SourceInfo | None = None


@dataclass(frozen=True, eq=False, slots=True)
class Graph:
    """A closed SSA program: `outputs` computed from `inputs` by `eqns` in order."""

    inputs: tuple[Var, ...]
    eqns: tuple[Eqn, ...]
    outputs: tuple[Atom, ...]
    name: str = "main"

    @property
    def in_avals(self) -> tuple[ShapedArray, ...]:
        return tuple(v.aval for v in self.inputs)

    @property
    def out_avals(self) -> tuple[ShapedArray, ...]:
        return tuple(a.aval for a in self.outputs)

    def __str__(self) -> str:
        from .hlo import graph_to_text
        return graph_to_text(self)


def readers(graph: Graph) -> dict[int, list[Eqn]]:
    """id(Var) -> the eqns of `graph` reading it at the top level, an eqn once for each
    of its operands the Var is."""
    found: dict[int, list[Eqn]] = {}
    for eqn in graph.eqns:
        for atom in eqn.inputs:
            if isinstance(atom, Var):
                found.setdefault(id(atom), []).append(eqn)
    return found


def subgraphs(params: dict[str, Any]) -> Iterator[Graph]:
    """Graphs stored in an eqn's params (directly or in a tuple of branches)."""
    for value in params.values():
        if isinstance(value, Graph):
            yield value
        elif isinstance(value, tuple):
            yield from (v for v in value if isinstance(v, Graph))


def has_host_effect(eqn: "Eqn") -> bool:
    """Whether running `eqn` talks to the host (a callback, infeed/outfeed, send/recv),
    itself or anywhere in its sub-graphs: such an eqn is never dropped, merged, folded
    or recomputed, even when its results are unused."""
    return getattr(eqn.op, "io_effect", False) or any(
        _graph_has_host_effect(g) for g in subgraphs(eqn.params))


def _graph_has_host_effect(graph: "Graph") -> bool:
    return any(has_host_effect(e) for e in graph.eqns)


def is_effectful(eqn: "Eqn") -> bool:
    """Passes keep `eqn` whatever its uses: an effectful op (RNG state, collectives,
    barriers) or one with a host effect inside."""
    return getattr(eqn.op, "effectful", False) or has_host_effect(eqn)


class TypecheckError(AssertionError):
    """A graph breaks an IR invariant: this is a tracer bug, not a user error."""


def typecheck(graph: Graph) -> Graph:
    """Check SSA, define-before-use, and every eqn's avals against its shape rule.

    Returns the graph, so passes can write `return typecheck(new_graph)`.
    """
    defined: set[int] = set()
    for v in graph.inputs:
        _define(defined, v, "input")
    for eqn in graph.eqns:
        for atom in eqn.inputs:
            _check_atom(defined, atom, eqn.op.name)
        for sub in subgraphs(eqn.params):
            typecheck(sub)
        expected = eqn.op.abstract_eval(*(a.aval for a in eqn.inputs), **eqn.params)
        got = tuple(v.aval for v in eqn.outputs)
        if expected != got:
            raise TypecheckError(f"{eqn.op.name}: outputs are {_fmt(got)} but the shape "
                                 f"rule gives {_fmt(expected)}")
        for v in eqn.outputs:
            _define(defined, v, eqn.op.name)
    for atom in graph.outputs:
        _check_atom(defined, atom, "output")
    return graph


def _define(defined: set[int], v: Var, where: str) -> None:
    if not isinstance(v, Var):
        raise TypecheckError(f"{where}: {v!r} is not a Var")
    if id(v) in defined:
        raise TypecheckError(f"{where}: {v!r} is defined twice (not SSA)")
    defined.add(id(v))


def _check_atom(defined: set[int], atom: Atom, where: str) -> None:
    if isinstance(atom, Literal):
        return
    if not isinstance(atom, Var) or id(atom) not in defined:
        raise TypecheckError(f"{where}: {atom!r} is used before it is defined")


def _fmt(avals: Sequence[ShapedArray]) -> str:
    return ", ".join(map(str, avals))


@dataclass
class GraphStats:
    """Counts used by tests and benchmarks (`len(graph.eqns)` with sub-graphs)."""

    eqns: int = 0
    by_op: dict[str, int] = field(default_factory=dict)


def count_eqns(graph: Graph) -> GraphStats:
    stats = GraphStats()
    for eqn in graph.eqns:
        stats.eqns += 1
        stats.by_op[eqn.op.name] = stats.by_op.get(eqn.op.name, 0) + 1
        for sub in subgraphs(eqn.params):
            inner = count_eqns(sub)
            stats.eqns += inner.eqns
            for k, n in inner.by_op.items():
                stats.by_op[k] = stats.by_op.get(k, 0) + n
    return stats

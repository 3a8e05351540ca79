"""Tracing: `Tracer` values, the `GraphBuilder`, and `bind`, the one entry point
through which every op is either recorded into the current graph or, outside any
trace, evaluated eagerly with its NumPy reference implementation.

The one piece of global state in tracer is `_current_builder`, a ContextVar set
only by `with GraphBuilder(...)`.
"""

from __future__ import annotations

import math
import operator
import os
from contextvars import ContextVar
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes
from .core import (Atom, Eqn, Graph, Literal, ShapedArray, SourceInfo, Var, aval_of,
                   reject_masked, user_source)
from .errors import (ConcretizationError, EscapedTracerError, TracerError, TracerMemoryError,
                     TracerOverflowError, TracerTypeError)

_current_builder: ContextVar["GraphBuilder | None"] = ContextVar("tracer_builder", default=None)


# The GraphBuilder now tracing, or None: the ContextVar's own `get` (no Python frame:
# every jitted call asks it first).
current_builder: Callable[[], "GraphBuilder | None"] = _current_builder.get


class Tracer:
    """A traced array: an abstract value bound to a `Var` of one `GraphBuilder`.

    Behaves like a `numpy.ndarray`; its operators and methods are installed by
    `tracer.numpy` (see `install_methods`), so this module stays below the ops.
    """

    __slots__ = ("builder", "_var")  # not `var`: that is the ndarray method
    __array_priority__ = 1000  # make `ndarray + tracer` defer to Tracer.__radd__

    def __init__(self, builder: "GraphBuilder", var: Var):
        self.builder = builder
        self._var = var

    aval = property(lambda self: self._var.aval)
    shape = property(lambda self: self._var.aval.shape)
    dtype = property(lambda self: self._var.aval.dtype)
    ndim = property(lambda self: self._var.aval.ndim)
    size = property(lambda self: self._var.aval.size)
    weak_type = property(lambda self: self._var.aval.weak_type)

    def __repr__(self) -> str:
        return f"Traced<{self.aval}>"

    def __len__(self) -> int:
        if not self.shape:
            raise TracerTypeError(f"len() of unsized traced value {self.aval}")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TracerTypeError(f"iteration over a 0-d traced value {self.aval}")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self) -> int:  # like ndarray: unhashable (a dict key, a set member)
        raise TracerTypeError(f"a traced value {self.aval} is unhashable (used as a dict key "
                              f"or set member?); key by a static Python value instead")

    def _concretize(self, what: str) -> Any:
        raise ConcretizationError(concretization_message(self.aval, what))

    def _known(self, what: str) -> np.ndarray:
        """The value, where the trace knows it (`grad` outside `jit`); else the
        concretization error."""
        value = self.builder.known_value(self._var)
        return self._concretize(what) if value is None else value

    def __bool__(self) -> bool:
        return bool(self._known("a Python bool (e.g. `if x > 0:` or `while x:`)"))

    def __int__(self) -> int:
        return int(self._known("a Python int"))

    def __float__(self) -> float:
        return float(self._known("a Python float"))

    def __complex__(self) -> complex:
        return complex(self._known("a Python complex"))

    def __index__(self) -> int:
        return operator.index(self._known(
            "a Python index (a static shape, `range(x)`, or an index into a NumPy array: "
            "for `table[i]` with a NumPy `table` write `tnp.take(table, i, axis=0)`)"))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._concretize("a NumPy array (`np.asarray(x)` or a NumPy function "
                                "tracer.numpy does not have)")

    def tolist(self) -> Any:
        return self._concretize("a Python list")

    def item(self, *args: Any) -> Any:
        return self._known("a Python scalar (`.item()`)").item(*args)


def concretization_message(aval: ShapedArray, what: str) -> str:
    src = user_source()
    where = f"\n  at {src}" if src else ""
    return (f"A traced value {aval} was used as {what}, but its value is unknown while "
            f"tracing.{where}\n  Use tracer.ops.cond / tracer.ops.select / "
            f"tracer.numpy.where for data-dependent choices, tracer.ops.while_loop / "
            f"fori_loop for data-dependent loops, or mark the argument static with "
            f"jit(..., static_argnums=...) / static_argnames=...")


def install_methods(methods: dict[str, Callable[..., Any]]) -> None:
    """Called once by `tracer.numpy` to give Tracer its ndarray operators and methods."""
    for name, fn in methods.items():
        setattr(Tracer, name, fn)


def is_tracer(x: Any) -> bool:
    return isinstance(x, Tracer)


class GraphBuilder:
    """Records eqns while a function runs on Tracers.

    Tracers of an enclosing builder that reach this one are captured: they become
    extra trailing graph inputs, and `build` returns them so the caller passes them
    as operands in the enclosing trace (closure conversion).
    """

    def __init__(self, values: Sequence[Any] | None = None) -> None:
        # Concrete values of the inputs, where the caller has them (`grad` outside
        # `jit`, as JAX's JVP tracers carry their primals): Python control flow on a
        # traced value then works, by evaluating the eqns that value depends on.
        self.values = values
        self.known: dict[int, np.ndarray] = {}
        self.parent: GraphBuilder | None = None
        self.inputs: list[Var] = []
        self.eqns: list[Eqn] = []
        self.captured: dict[int, tuple[Tracer, Var]] = {}
        self.finished = False
        # The user line eqns bound now stand for, while a graph rewrite re-emits an
        # eqn (see `EqnSource`); None: find it on the stack.
        self.source: SourceInfo | None = None
        self._token: Any = None

    def __enter__(self) -> "GraphBuilder":
        self.parent = _current_builder.get()
        if self.parent is not None:
            self.source = self.parent.source
        self._token = _current_builder.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _current_builder.reset(self._token)
        self.finished = True

    def new_input(self, aval: ShapedArray) -> Tracer:
        var = Var(aval)
        if self.values is not None:
            value = self.values[len(self.inputs)]
            if value is not None:
                self.known[id(var)] = np.asarray(value, aval.dtype)
        self.inputs.append(var)
        return Tracer(self, var)

    def known_value(self, var: Var) -> np.ndarray | None:
        """`var`'s value from the known inputs (None: it depends on an unknown input,
        a captured value or an effect)."""
        if id(var) in self.known or not self.known:
            return self.known.get(id(var))
        needed, todo = {id(var)}, []
        for eqn in reversed(self.eqns):
            if any(id(o) in needed for o in eqn.outputs):
                todo.append(eqn)
                needed.update(id(a) for a in eqn.inputs
                              if isinstance(a, Var) and id(a) not in self.known)
        produced = {id(o) for eqn in todo for o in eqn.outputs}
        if any(n not in produced for n in needed) or any(eqn.op.effectful for eqn in todo):
            return None
        for eqn in reversed(todo):
            args = [a.value if isinstance(a, Literal) else self.known[id(a)]
                    for a in eqn.inputs]
            outs = eqn.op.impl(*args, **eqn.params)
            outs = outs if eqn.op.multiple_results else (outs,)
            for v, o in zip(eqn.outputs, outs, strict=True):
                self.known[id(v)] = np.asarray(o, v.aval.dtype)
        return self.known[id(var)]

    def to_atom(self, x: Any) -> Atom:
        if isinstance(x, Tracer):
            return self._lift(x)
        if isinstance(x, Literal):
            return x  # re-binding a graph's literal keeps its aval (weak type included)
        if isinstance(x, Var):
            raise TracerTypeError(f"IR object {x!r} passed where an array was expected")
        return literal(x)

    def _lift(self, t: Tracer) -> Var:
        if t.builder is self:
            return t._var
        hit = self.captured.get(id(t))
        if hit is not None:
            return hit[1]
        if not self._is_ancestor(t.builder):
            raise EscapedTracerError(escaped_message(t))
        var = Var(t.aval)
        self.captured[id(t)] = (t, var)
        return var

    def _is_ancestor(self, other: "GraphBuilder") -> bool:
        b = self.parent
        while b is not None:
            if b is other:
                return True
            b = b.parent
        return False

    def add_eqn(self, eqn: Eqn) -> None:
        self.eqns.append(eqn)

    def build(self, outputs: Sequence[Any], name: str = "main") -> tuple[Graph, list[Tracer]]:
        """The recorded graph and the outer tracers it captured (its trailing inputs)."""
        out_atoms = tuple(self.to_atom(x) for x in outputs)
        captured = list(self.captured.values())
        graph = Graph(tuple(self.inputs) + tuple(v for _, v in captured), tuple(self.eqns),
                      out_atoms, name)
        return graph, [t for t, _ in captured]


def known_value(x: Any) -> Any:
    """`x`'s concrete value: itself if it is not traced, a tracer's where its trace knows
    it (so `grad(grad(f))` outside `jit` still reads values), else None."""
    if not isinstance(x, Tracer):
        return x
    return x.builder.known_value(x._var)


def is_value(x: Any) -> bool:
    """Whether `x` can be an operand or a result: a traced value, an array or a scalar
    (not a string, None or another object)."""
    if isinstance(x, Tracer):
        return True
    try:
        aval_of(x)
    except (TypeError, ValueError):
        return False
    return True


def escaped_message(t: Tracer) -> str:
    src = user_source()
    where = f"\n  at {src}" if src else ""
    return (f"A traced value {t.aval} escaped the trace that created it (stored in a "
            f"global, a closure or an attribute, then used after that function "
            f"returned).{where}\n  Return it from the traced function instead.")


def literal(x: Any) -> Literal:
    """A constant operand from a Python scalar (weak) or a NumPy value (strong)."""
    if dtypes.is_python_scalar(x):
        return Literal(x)
    reject_masked(x, "tracer")
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TracerTypeError(f"{type(x).__name__} object {x!r:.60} is not an array")
    return Literal(arr, ShapedArray(arr.shape, arr.dtype))


def bind(op: Any, args: Sequence[Any], params: dict[str, Any],
         source: SourceInfo | None = None) -> Any:
    """Apply `op` to `args`: record an eqn under a trace, else run `op.impl`."""
    builder = _current_builder.get()
    if builder is None:
        return _eager(op, args, params)
    atoms = [builder.to_atom(a) for a in args]
    src = source or builder.source or user_source()
    out_avals = checked_abstract_eval(op, [a.aval for a in atoms], params, src)
    outs = tuple(Var(a) for a in out_avals)
    builder.add_eqn(Eqn(op, tuple(atoms), params, outs, src))
    tracers = [Tracer(builder, v) for v in outs]
    return tracers if op.multiple_results else tracers[0]


class EqnSource:
    """`with EqnSource(eqn.source):` around a rule that re-emits `eqn` (its JVP,
    transpose or batching rule): the eqns the rule binds carry `eqn`'s user line,
    not the line that called the transformation, and no stack walk finds it."""

    __slots__ = ("source", "builder", "saved")

    def __init__(self, source: SourceInfo | None):
        self.source = source

    def __enter__(self) -> None:
        self.builder = _current_builder.get()
        if self.builder is not None and self.source is not None:
            self.saved = self.builder.source
            self.builder.source = self.source

    def __exit__(self, *exc: Any) -> None:
        if self.builder is not None and self.source is not None:
            self.builder.source = self.saved


def _eager(op: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
    for a in args:
        if isinstance(a, Tracer):
            raise EscapedTracerError(escaped_message(a))
    avals = [a.aval if isinstance(a, Literal) else aval_of(a) for a in args]
    args = [a.value if isinstance(a, Literal) else a for a in args]
    out_avals = checked_abstract_eval(op, avals, params, None)
    try:
        vals = [np.asarray(a, dtype=av.dtype) for a, av in zip(args, avals, strict=True)]
    except OverflowError:  # a Python int outside its weak dtype (ops.neg(2**63))
        err = TracerOverflowError(f"an operand of {', '.join(map(str, avals))} is a Python "
                                  f"int outside its dtype's range")
        raise _with_context(err, op, avals, params, user_source()) from None
    outs = op.impl(*vals, **params)
    outs = outs if op.multiple_results else (outs,)
    results = [np.asarray(o, dtype=av.dtype) for o, av in zip(outs, out_avals, strict=True)]
    return results if op.multiple_results else results[0]


def checked_abstract_eval(op: Any, avals: Sequence[ShapedArray], params: dict[str, Any],
                          source: SourceInfo | None) -> tuple[ShapedArray, ...]:
    """`op.abstract_eval`, with errors rewritten to name the op, avals and user line."""
    try:
        outs = op.abstract_eval(*avals, **params)
        for out in outs:
            if math.prod(out.shape) * out.dtype.itemsize > MEMORY_BYTES:
                raise _too_large(out)
        return outs
    except TracerError as e:
        if getattr(e, "_tracer_context", False):
            raise
        raise _with_context(e, op, avals, params, source or user_source()) from None


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # (no sysconf: only what cannot exist)
        return 2 ** 62


# No result may need more bytes than the machine has: such an array cannot be made
# (NumPy's MemoryError, numba's "array is too big" when run), so it is refused while
# tracing, where the op and the user's line are known.
MEMORY_BYTES = _physical_memory()


def _too_large(out: ShapedArray) -> TracerMemoryError:
    need = math.prod(out.shape) * out.dtype.itemsize
    return TracerMemoryError(f"the result {out} needs {need / 2 ** 30:.4g} GiB, more than "
                             f"this machine's memory ({MEMORY_BYTES / 2 ** 30:.4g} GiB)")


def _with_context(e: TracerError, op: Any, avals: Sequence[ShapedArray],
                  params: dict[str, Any], source: SourceInfo | None) -> TracerError:
    shown = {k: v for k, v in params.items() if not isinstance(v, (Graph, tuple)) or
             not any(isinstance(g, Graph) for g in (v if isinstance(v, tuple) else (v,)))}
    lines = [f"{op.name}: {e}", f"  operands: {', '.join(map(str, avals)) or '(none)'}"]
    if shown:
        lines.append("  params: " + ", ".join(f"{k}={v!r}" for k, v in shown.items()))
    if source is not None:
        lines.append(f"  at {source}")
    err = type(e)("\n".join(lines))
    err._tracer_context = True  # type: ignore[attr-defined]
    return err


def trace_flat(fun: Callable[..., Sequence[Any]], avals: Sequence[ShapedArray],
               name: str = "main", values: Sequence[Any] | None = None
               ) -> tuple[Graph, list[Tracer]]:
    """Trace `fun(*tracers) -> sequence of outputs` into a Graph.

    Returns the graph and the enclosing-trace tracers it captured; the graph's
    trailing inputs stand for them, so callers pass them as extra operands.
    `values` (one per input, None where unknown) lets Python control flow read the
    tracers' values: the graph is then only valid for those values.
    """
    with GraphBuilder(values) as builder:
        args = [builder.new_input(a) for a in avals]
        outs = fun(*args)
        return builder.build(list(outs), name)

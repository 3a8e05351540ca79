"""Small helpers the transformations share: reading atoms, building graphs and eqns."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..core import (Atom, Eqn, Graph, Literal, ShapedArray, TokenAval, Var, has_host_effect,
                    is_effectful)
from ..errors import TracerValueError
from ..interpret import eval_graph, literal_value
from ..ops.tokens import after_all_p
from ..tracing import trace_flat


def read(env: dict[int, Any], atom: Atom) -> Any:
    return literal_value(atom) if isinstance(atom, Literal) else env[id(atom)]


def eval_fresh(graph: Graph, args: Sequence[Any]) -> list[Any]:
    """`eval_graph`, except that no concrete result shares memory with an argument, a
    constant or an earlier result: eager results of a transformation are fresh arrays,
    like eager ops' (a user mutating one must not change their input)."""
    outs = eval_graph(graph, args)
    seen = {id(_root(a)) for a in args if isinstance(a, np.ndarray)}
    for i, (atom, out) in enumerate(zip(graph.outputs, outs, strict=True)):
        if isinstance(out, np.ndarray):
            if isinstance(atom, Literal) or id(_root(out)) in seen:
                outs[i] = out = out.copy()
            seen.add(id(_root(out)))
    return outs


def _root(x: np.ndarray) -> np.ndarray:
    """The array owning `x`'s memory (views chain to it through `.base`)."""
    while isinstance(x.base, np.ndarray):
        x = x.base
    return x


def differentiable(aval: ShapedArray) -> bool:
    """Floats and complex numbers have tangents; integers and bools do not."""
    return dtypes.is_inexact(aval.dtype)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangents and cotangents are strongly typed, with the primal's shape and dtype."""
    return ShapedArray(aval.shape, aval.dtype)


def trace_closed(fun: Callable[..., Sequence[Any]], avals: Sequence[ShapedArray],
                 name: str) -> Graph:
    """Trace `fun` into a closed graph: it must use only its own arguments, which
    holds for every rewrite here (they walk closed graphs), so a capture is a bug."""
    graph, captured = trace_flat(fun, avals, name)
    if captured:
        raise AssertionError(f"{name}: a transformation captured {len(captured)} "
                             f"outer traced values")
    return graph


def live_eqns(eqns: Sequence[Eqn], outputs: Sequence[Atom]) -> list[Eqn]:
    """The eqns `outputs` need (effectful ones always count), in order. Unlike the
    DCE pass this leaves sub-graphs alone, so it is cheap enough to run after every
    rewrite."""
    live = {id(a) for a in outputs if isinstance(a, Var)}
    kept = []
    for eqn in reversed(eqns):
        if any(id(v) in live for v in eqn.outputs) or is_effectful(eqn):
            kept.append(eqn)
            live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    return kept[::-1]


def prune(graph: Graph) -> Graph:
    """`graph` without the eqns its outputs do not need."""
    eqns = live_eqns(graph.eqns, graph.outputs)
    if len(eqns) == len(graph.eqns):
        return graph
    return Graph(graph.inputs, tuple(eqns), graph.outputs, graph.name)


def select_outputs(graph: Graph, keep: Sequence[bool]) -> Graph:
    """`graph` returning only the outputs flagged in `keep`, dead eqns dropped."""
    outs = tuple(a for a, k in zip(graph.outputs, keep, strict=True) if k)
    return prune(Graph(graph.inputs, graph.eqns, outs, graph.name))


def used_inputs(graph: Graph) -> list[bool]:
    """Which inputs the graph's live eqns (or outputs) read."""
    graph = prune(graph)
    used = {id(a) for e in graph.eqns for a in e.inputs if isinstance(a, Var)}
    used |= {id(a) for a in graph.outputs if isinstance(a, Var)}
    return [id(v) in used for v in graph.inputs]


def drop_inputs(graph: Graph, keep: Sequence[bool]) -> Graph:
    """`graph` without the inputs not flagged in `keep` (they must be unused)."""
    inputs = tuple(v for v, k in zip(graph.inputs, keep, strict=True) if k)
    return Graph(inputs, graph.eqns, graph.outputs, graph.name)


def new_eqn(op: Any, inputs: Sequence[Atom], params: dict[str, Any],
            outputs: Sequence[Var | None] | None = None, source: Any = None) -> Eqn:
    """An eqn of `op`; `outputs[i]` reuses a Var (None: a fresh one of the right aval)."""
    avals = op.abstract_eval(*(a.aval for a in inputs), **params)
    outputs = [None] * len(avals) if outputs is None else list(outputs)
    outs = tuple(Var(a) if v is None else v for v, a in zip(outputs, avals, strict=True))
    return Eqn(op, tuple(inputs), params, outs, source)


def split(items: Sequence[Any], *sizes: int) -> list[list[Any]]:
    """`items` cut into consecutive pieces of `sizes`, plus the rest."""
    parts, start = [], 0
    for n in sizes:
        parts.append(list(items[start:start + n]))
        start += n
    return parts + [list(items[start:])]


def pick(items: Sequence[Any], mask: Sequence[bool], want: bool = True) -> list[Any]:
    return [x for x, m in zip(items, mask, strict=True) if m == want]


def merge(mask: Sequence[bool], when_true: Sequence[Any], when_false: Sequence[Any]) -> list[Any]:
    """Interleave two lists back in `mask` order (inverse of two `pick`s)."""
    t, f = iter(when_true), iter(when_false)
    return [next(t) if m else next(f) for m in mask]


def without_host_effects(graph: Graph, what: str) -> Graph:
    """A recomputation `graph` (checkpoint's, reverse mode's replay of a while loop)
    without its host effects (callbacks, prints, outfeeds), sub-graphs included: they
    ran once in the forward pass and must not run again (JAX may run them twice;
    tracer never does). An ordered call whose token the graph passes on becomes an
    `after_all` of its input token. A host call whose results the recomputation needs
    cannot be left out: that raises."""
    if not any(has_host_effect(e) for e in graph.eqns):
        return graph
    live = {id(a) for a in graph.outputs if isinstance(a, Var)}
    kept: list[Eqn] = []
    for eqn in reversed(graph.eqns):
        used = [v for v in eqn.outputs if id(v) in live]
        if getattr(eqn.op, "io_effect", False):
            eqn = _host_call_removed(eqn, used, what)
            if eqn is None:
                continue
        elif not used and not is_effectful(eqn):
            continue
        params = {k: _strip_param(v, what) for k, v in eqn.params.items()}
        kept.append(Eqn(eqn.op, eqn.inputs, params, eqn.outputs, eqn.source))
        live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    return Graph(graph.inputs, tuple(reversed(kept)), graph.outputs, graph.name)


def _host_call_removed(eqn: Eqn, used: list[Var], what: str) -> Eqn | None:
    if any(not isinstance(v.aval, TokenAval) for v in used):
        raise TracerValueError(
            f"{what}: the gradient needs the results of {eqn.op.name} "
            f"{eqn.params.get('callback', '')}, which would have to run again when the "
            f"backward pass recomputes the forward values; call it outside "
            f"{what}" + (f"\n  at {eqn.source}" if eqn.source else ""))
    if not used:
        return None
    tokens = tuple(a for a in eqn.inputs if isinstance(a.aval, TokenAval))
    return Eqn(after_all_p, tokens, {}, (used[0],), eqn.source)


def _strip_param(value: Any, what: str) -> Any:
    if isinstance(value, Graph):
        return without_host_effects(value, what)
    if isinstance(value, tuple) and any(isinstance(v, Graph) for v in value):
        return tuple(_strip_param(v, what) for v in value)
    return value

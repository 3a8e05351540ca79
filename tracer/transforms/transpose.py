"""Transposition of linear graphs (autodidax's `eval_jaxpr_transposed`).

A linear graph takes some *defined* inputs (residuals: ordinary values) and some
*undefined* ones (`UndefinedPrimal`: the linear inputs) and is linear in the
undefined ones. `backward_pass` first evaluates the eqns that read only defined
values, then walks the remaining (linear) eqns backwards, calling each op's
`transpose` rule with the output cotangents, and accumulates the input cotangents
with `add_tangents`. Cotangents known to be zero stay symbolic (`Zero`): an eqn all
of whose output cotangents are Zero is skipped, so no dead cotangent code is
written.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

from ..core import Graph, Var
from ..errors import TracerTypeError
from ..ops.ad import UndefinedPrimal, Zero, add_tangents, aval_of_value, instantiate
from ..tracing import EqnSource, bind
from .util import read, tangent_aval, trace_closed


def transpose_graph(graph: Graph, undefined: Sequence[bool]) -> Graph:
    """The transpose of a graph linear in its `undefined` inputs:
    (defined inputs..., one cotangent per output...) -> (one per undefined input...).

    Cotangents of outputs that do not depend on the undefined inputs are ignored;
    inputs that get no cotangent get zeros.
    """
    return _transpose_graph(graph, tuple(map(bool, undefined)))


@functools.lru_cache(maxsize=1024)
def _transpose_graph(graph: Graph, undefined: tuple[bool, ...]) -> Graph:
    defined = [v for v, u in zip(graph.inputs, undefined, strict=True) if not u]
    n = len(defined)

    def fun(*args: Any) -> list[Any]:
        vals = iter(args[:n])
        ins = [UndefinedPrimal(v.aval) if u else next(vals)
               for v, u in zip(graph.inputs, undefined, strict=True)]
        cts = backward_pass(graph, ins, args[n:])
        return [instantiate(c) for c in cts if c is not None]

    ct_avals = [tangent_aval(a.aval) for a in graph.outputs]
    return trace_closed(fun, [v.aval for v in defined] + ct_avals, f"transpose_{graph.name}")


def backward_pass(graph: Graph, args: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
    """Cotangents of `graph`'s undefined inputs (`UndefinedPrimal` in `args`) given
    cotangents of its outputs (arrays, tracers or `Zero`). Defined inputs get None,
    undefined ones a cotangent or `Zero`."""
    env: dict[int, Any] = {}
    linear: set[int] = set()
    for v, a in zip(graph.inputs, args, strict=True):
        if isinstance(a, UndefinedPrimal):
            linear.add(id(v))
        else:
            env[id(v)] = a
    linear_eqns = []
    for eqn in graph.eqns:
        if any(isinstance(a, Var) and id(a) in linear for a in eqn.inputs):
            linear_eqns.append(eqn)
            linear.update(id(v) for v in eqn.outputs)
            continue
        outs = bind(eqn.op, [read(env, a) for a in eqn.inputs], eqn.params, eqn.source)
        for v, x in zip(eqn.outputs, outs if eqn.op.multiple_results else [outs], strict=True):
            env[id(v)] = x
    ct_env: dict[int, Any] = {}
    for atom, ct in zip(graph.outputs, cts, strict=True):
        _write(ct_env, linear, atom, ct)
    for eqn in reversed(linear_eqns):
        with EqnSource(eqn.source):
            _transpose_eqn(eqn, env, linear, ct_env)
    return [ct_env.get(id(v), Zero(tangent_aval(v.aval))) if id(v) in linear else None
            for v in graph.inputs]


def _transpose_eqn(eqn: Any, env: dict[int, Any], linear: set[int],
                   ct_env: dict[int, Any]) -> None:
    found = [ct_env.pop(id(v), None) for v in eqn.outputs]
    if all(c is None for c in found):
        return  # no cotangent reaches this eqn: write nothing for it
    cts = [Zero(tangent_aval(v.aval)) if c is None else c
           for v, c in zip(eqn.outputs, found, strict=True)]
    op = eqn.op
    if op.transpose is None:
        raise TracerTypeError(f"transpose: op {op.name} is not linear in "
                              f"{', '.join(str(a.aval) for a in eqn.inputs)} (it has no "
                              f"transpose rule), so it cannot be reverse-differentiated")
    ins = [UndefinedPrimal(a.aval) if isinstance(a, Var) and id(a) in linear
           else read(env, a) for a in eqn.inputs]
    cts_in = op.transpose(cts if op.multiple_results else cts[0], *ins, **eqn.params)
    for atom, ct in zip(eqn.inputs, cts_in, strict=True):
        _write(ct_env, linear, atom, ct, op.name)


def _write(ct_env: dict[int, Any], linear: set[int], atom: Any, ct: Any,
           name: str = "output") -> None:
    if ct is None or isinstance(ct, Zero) or not isinstance(atom, Var) \
            or id(atom) not in linear:
        return
    aval = aval_of_value(ct)
    if aval.shape != atom.aval.shape or aval.dtype != atom.aval.dtype:
        raise AssertionError(f"transpose rule of {name} returned a cotangent {aval} for "
                             f"an operand {atom.aval}")
    ct_env[id(atom)] = add_tangents(ct_env.get(id(atom), Zero(atom.aval)), ct)

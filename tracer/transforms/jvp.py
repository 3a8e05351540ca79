"""Forward mode as a graph rewrite (autodidax's `jvp_jaxpr`).

`jvp_graph(g, nonzero)` walks `g`'s eqns inside a fresh trace. Each eqn's primal
values and tangents go through its op's `jvp` rule, whose body calls ordinary
`tracer.ops` functions, so the rule's ops land in the new graph. Tangents that are
known to be zero stay symbolic (`Zero(aval)`) through the walk: an eqn whose
tangents are all Zero is re-emitted as is, and no tangent code is written for it.
Integer and bool values always have Zero tangents.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

from ..core import Eqn, Graph, Var
from ..errors import TracerTypeError
from ..ops.ad import Zero, aval_of_value, instantiate
from ..tracing import EqnSource, bind
from .util import differentiable, read, tangent_aval, trace_closed


def jvp_graph(graph: Graph, nonzero: Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[Graph, list[bool]]:
    """The JVP of `graph`: (primals..., nonzero tangents...) -> (outs..., tangents...).

    `nonzero[i]` says whether input i has a tangent input (only floats may); the
    result lists which outputs have a tangent output. `instantiate` (one flag, or one
    per output) forces a tangent output, as zeros, where it would be symbolic.
    """
    nonzero = tuple(map(bool, nonzero))
    for v, nz in zip(graph.inputs, nonzero, strict=True):
        if nz and not differentiable(v.aval):
            raise TracerTypeError(f"jvp: input {v.aval} is not a float and has no tangent")
    if isinstance(instantiate, bool):
        instantiate = (instantiate,) * len(graph.outputs)
    flags = tuple(map(bool, instantiate))
    if len(flags) != len(graph.outputs):
        raise ValueError(f"jvp_graph: {len(flags)} instantiate flags for "
                         f"{len(graph.outputs)} outputs")
    new, out_nz = _jvp_graph(graph, nonzero, flags)
    return new, list(out_nz)


@functools.lru_cache(maxsize=1024)
def _jvp_graph(graph: Graph, nonzero: tuple[bool, ...],
               flags: tuple[bool, ...]) -> tuple[Graph, tuple[bool, ...]]:
    n = len(graph.inputs)
    out_nz: list[bool] = []

    def fun(*args: Any) -> list[Any]:
        tans = iter(args[n:])
        tangents = [next(tans) if nz else Zero(tangent_aval(v.aval))
                    for v, nz in zip(graph.inputs, nonzero, strict=True)]
        outs, touts = jvp_eval(graph, args[:n], tangents)
        touts = [instantiate(t) if f else t for t, f in zip(touts, flags, strict=True)]
        out_nz.extend(not isinstance(t, Zero) for t in touts)
        return list(outs) + [t for t in touts if not isinstance(t, Zero)]

    t_avals = [tangent_aval(v.aval) for v, nz in zip(graph.inputs, nonzero, strict=True) if nz]
    new = trace_closed(fun, list(graph.in_avals) + t_avals, f"jvp_{graph.name}")
    return new, tuple(out_nz)


def jvp_eval(graph: Graph, primals: Sequence[Any],
             tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Evaluate `graph` on primals and tangents (arrays, tracers or `Zero`)."""
    env: dict[int, Any] = {id(v): x for v, x in zip(graph.inputs, primals, strict=True)}
    tenv: dict[int, Any] = {id(v): t for v, t in zip(graph.inputs, tangents, strict=True)}
    for eqn in graph.eqns:
        ins = [read(env, a) for a in eqn.inputs]
        tins = [tenv[id(a)] if isinstance(a, Var) else Zero(tangent_aval(a.aval))
                for a in eqn.inputs]
        with EqnSource(eqn.source):
            outs, touts = jvp_eqn(eqn, ins, tins)
        for v, x, t in zip(eqn.outputs, outs, touts, strict=True):
            env[id(v)] = x
            tenv[id(v)] = t
    outs = [read(env, a) for a in graph.outputs]
    touts = [tenv[id(a)] if isinstance(a, Var) else Zero(tangent_aval(a.aval))
             for a in graph.outputs]
    return outs, touts


def jvp_eqn(eqn: Eqn, primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
    """One eqn's primal outputs and tangents, through its op's `jvp` rule."""
    op = eqn.op
    zeros = [Zero(tangent_aval(v.aval)) for v in eqn.outputs]
    if not op.differentiable or all(isinstance(t, Zero) for t in tangents):
        outs = bind(op, primals, eqn.params, eqn.source)
        return (list(outs) if op.multiple_results else [outs]), zeros
    if op.jvp is None:
        raise TracerTypeError(f"jvp: op {op.name} has no differentiation rule (operands "
                              f"{', '.join(str(a.aval) for a in eqn.inputs)})")
    outs, touts = op.jvp(primals, tangents, **eqn.params)
    if not op.multiple_results:
        outs, touts = [outs], [touts]
    return list(outs), [_checked(op.name, v, t, z)
                        for v, t, z in zip(eqn.outputs, touts, zeros, strict=True)]


def _checked(name: str, out: Var, t: Any, zero: Zero) -> Any:
    """Zero for outputs without tangents; a rule returning a wrong aval is a bug."""
    if not differentiable(out.aval) or isinstance(t, Zero):
        return zero
    aval = aval_of_value(t)
    if aval.shape != out.aval.shape or aval.dtype != out.aval.dtype:
        raise AssertionError(f"jvp rule of {name} returned a tangent {aval} for an output "
                             f"{out.aval}")
    return t

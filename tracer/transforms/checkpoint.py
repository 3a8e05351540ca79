"""`checkpoint` (remat): reverse mode stores a function's inputs only and recomputes
its intermediates in the backward pass; and `lower_ad_ops`, which inlines the AD-only
ops (`tracer.ops.ad_ops`) before a graph is compiled.

Rules of the `checkpoint` op:
- JVP: a checkpoint of the JVP sub-graph;
- partial evaluation: the forward graph gets a checkpoint of the primal part only
  (no residuals); the linear graph gets the whole JVP checkpoint, its primal
  inputs as residuals;
- transpose: a `call` of the sub-graph's transpose, whose forward half recomputes
  the primal values from those inputs. Being a call keeps passes (CSE) from
  merging the recomputation back into the forward pass. The recomputation leaves
  out host effects (callbacks, debug prints, outfeeds): they run once, forward.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from ..core import Eqn, Graph, Var, is_effectful, subgraphs
from ..errors import names_user_line
from ..interpret import eval_graph
from ..ops.ad import UndefinedPrimal, aval_of_value, instantiate
from ..ops.ad_ops import checkpoint_p
from ..ops.control import call_p
from ..tracing import bind, current_builder, trace_flat
from ..tree_util import tree_flatten, tree_unflatten
from .control_rules import fill_tangents, nonzero_mask
from .jvp import jvp_graph
from .partial_eval import PE_RULES, PartialEval, partial_eval_graph
from .remat_policies import checkpoint_name, checkpoint_policies, nothing_saveable
from .transpose import transpose_graph
from .util import (merge, new_eqn, pick, prune, read, tangent_aval,
                   trace_closed, without_host_effects)

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "lower_ad_ops"]


def checkpoint(fun: Callable[..., Any], *, prevent_cse: bool = True,
               policy: Callable[..., bool] | None = None,
               static_argnums: int | Sequence[int] = ()) -> Callable[..., Any]:
    """`fun`, but reverse-mode differentiation saves only its (array) arguments and
    the intermediates `policy` says are saveable, and recomputes the rest during the
    backward pass.

    `policy` (JAX's `checkpoint_policies`; None is `nothing_saveable`): called as
    `policy(op, *avals, **params)` on the ops of the primal computation, True to save
    that op's result (`dots_saveable` saves matrix products, `save_only_these_names`
    the values named by `checkpoint_name`). Values are the same either way; only the
    memory / time trade differs. `prevent_cse` is accepted: the recomputation is
    always kept apart (a `call`).

    >>> grad(checkpoint(lambda x: ops.sin(ops.sin(x))))(1.0)  # stores x only
    """
    if policy is checkpoint_policies.everything_saveable:
        return fun
    policy_param = {} if policy is None or policy is nothing_saveable else {"policy": policy}
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    @names_user_line
    def remat(*args: Any, **kwargs: Any) -> Any:
        if current_builder() is None:  # concrete values: nothing to differentiate
            return fun(*args, **kwargs)
        dyn = [a for i, a in enumerate(args) if i not in statics]
        leaves, tree = tree_flatten((tuple(dyn), kwargs))
        out_trees: list[Any] = []

        def flat(*xs: Any) -> list[Any]:
            dyn_args, dyn_kwargs = tree_unflatten(tree, xs)
            it = iter(dyn_args)
            full = [a if i in statics else next(it) for i, a in enumerate(args)]
            out, out_tree = tree_flatten(fun(*full, **dyn_kwargs))
            out_trees.append(out_tree)
            return out

        graph, consts = trace_flat(flat, [aval_of_value(x) for x in leaves],
                                   f"checkpoint_{getattr(fun, '__name__', 'fun')}")
        outs = checkpoint_p.bind(*leaves, *consts, to_apply=graph, **policy_param)
        return tree_unflatten(out_trees[0], outs)

    return remat


# ----------------------------------------------------------------------------- rules
def checkpoint_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
                   to_apply: Graph, **policy: Any) -> tuple[list, list]:
    nz = nonzero_mask(tangents)
    graph, out_nz = jvp_graph(to_apply, nz)
    outs = checkpoint_p.bind(*primals, *pick(tangents, nz), to_apply=graph, **policy)
    n = len(to_apply.outputs)
    return outs[:n], fill_tangents(outs[n:], out_nz, to_apply.out_avals)


def checkpoint_partial_eval(eqn: Eqn, in_unk: list[bool]
                            ) -> tuple[list[Eqn], list[Eqn], list[bool]]:
    """The forward half computes the known outputs and the values the policy saves;
    the backward half is the whole checkpoint with those values as extra inputs."""
    graph, policy = eqn.params["to_apply"], eqn.params.get("policy")
    pe = partial_eval_graph(graph, in_unk)
    out_unk = pe.out_unknowns
    n_known = out_unk.count(False)
    saved = saved_values(graph, pe, out_unk, policy) if policy is not None else []
    saved_outer = [Var(v.aval) for v in saved]
    known = []
    if n_known or saved:
        known_outs = [a for a, u in zip(graph.outputs, out_unk, strict=True) if not u]
        primal = prune(Graph(pe.known.inputs, pe.known.eqns, tuple(known_outs + saved),
                             pe.known.name))
        known = [new_eqn(checkpoint_p, pick(eqn.inputs, in_unk, False),
                         {**eqn.params, "to_apply": primal},
                         pick(eqn.outputs, out_unk, False) + saved_outer, eqn.source)]
    outs = tuple(v if u else Var(v.aval) for v, u in zip(eqn.outputs, out_unk, strict=True))
    params = {**eqn.params, "to_apply": with_saved_inputs(graph, saved)}
    unknown = Eqn(eqn.op, tuple(saved_outer) + tuple(eqn.inputs), params, outs, eqn.source)
    return known, [unknown], out_unk


def saved_values(graph: Graph, pe: PartialEval, out_unk: Sequence[bool],
                 policy: Callable[..., bool]) -> list[Var]:
    """Results of the forward half's eqns that `policy` saves and the backward half
    reads (once they are its inputs, it no longer recomputes their producers)."""
    candidates = [v for e in pe.known.eqns if not is_effectful(e)
                  and policy(e.op, *(a.aval for a in e.inputs), **e.params) for v in e.outputs]
    if not candidates:
        return []
    tangent_outs = [a for a, u in zip(graph.outputs, out_unk, strict=True) if u]
    backward = _cut(graph, candidates, tangent_outs)
    read = {id(a) for e in backward.eqns for a in e.inputs} | {id(a) for a in tangent_outs}
    return [v for v in candidates if id(v) in read]


def with_saved_inputs(graph: Graph, saved: Sequence[Var]) -> Graph:
    """`graph` taking the `saved` values as leading inputs instead of computing them."""
    return _cut(graph, saved, graph.outputs) if saved else graph


def _cut(graph: Graph, values: Sequence[Var], outputs: Sequence[Any]) -> Graph:
    ids = {id(v) for v in values}
    eqns = tuple(e for e in graph.eqns if not all(id(v) in ids for v in e.outputs))
    return prune(Graph(tuple(values) + tuple(graph.inputs), eqns, tuple(outputs), graph.name))


def checkpoint_transpose(cts: list[Any], *args: Any, to_apply: Graph,
                         **policy: Any) -> list[Any]:
    lin = tuple(isinstance(a, UndefinedPrimal) for a in args)
    outs = call_p.bind(*pick(args, lin, False), *map(instantiate, cts),
                       to_apply=_recompute_and_transpose(to_apply, lin))
    return merge(lin, outs, [None] * lin.count(False))


@functools.lru_cache(maxsize=256)
def _recompute_and_transpose(graph: Graph, lin: tuple[bool, ...]) -> Graph:
    """(defined inputs..., cotangents...) -> (cotangents of the `lin` inputs...).

    `graph` is a JVP graph whose eqns may mix primal and tangent values (a loop's JVP
    carries both), so it is split first: the known half recomputes the residuals,
    the transpose of the unknown (linear) half turns the cotangents around."""
    pe = partial_eval_graph(graph, lin, instantiate=True)
    back = transpose_graph(pe.unknown, [False] * pe.num_res + [True] * lin.count(True))
    n = lin.count(False)
    known = without_host_effects(pe.known, "checkpoint")

    def fun(*args: Any) -> list[Any]:
        res = eval_graph(known, args[:n])
        return eval_graph(back, [*res, *args[n:]])

    avals = [v.aval for v, u in zip(graph.inputs, lin, strict=True) if not u]
    return trace_closed(fun, avals + [tangent_aval(a.aval) for a in graph.outputs],
                        f"remat_transpose_{graph.name}")


checkpoint_p.jvp, checkpoint_p.transpose = checkpoint_jvp, checkpoint_transpose
PE_RULES[checkpoint_p] = checkpoint_partial_eval


# -------------------------------------------------------------------------- lowering
_INLINED = {"checkpoint": "to_apply", "custom_jvp_call": "call", "custom_vjp_call": "call"}


def lower_ad_ops(graph: Graph) -> Graph:
    """`graph` with `stop_gradient` dropped and checkpoint / custom_jvp / custom_vjp
    calls replaced by the ops of their primal sub-graph (sub-graphs too): what a
    backend compiles once no transformation is left to see them."""
    if not _has_ad_ops(graph):
        return graph
    return _lower(graph)


@functools.lru_cache(maxsize=256)
def _lower(graph: Graph) -> Graph:
    return trace_closed(lambda *xs: _eval_lowered(graph, xs), graph.in_avals, graph.name)


def _has_ad_ops(graph: Graph) -> bool:
    return any(e.op.name in _INLINED or e.op.name in ("stop_gradient", "checkpoint_name")
               or any(_has_ad_ops(g) for g in subgraphs(e.params)) for e in graph.eqns)


def _eval_lowered(graph: Graph, args: Sequence[Any]) -> list[Any]:
    env: dict[int, Any] = {id(v): x for v, x in zip(graph.inputs, args, strict=True)}
    for eqn in graph.eqns:
        ins = [read(env, a) for a in eqn.inputs]
        name = eqn.op.name
        if name in ("stop_gradient", "checkpoint_name"):
            outs = ins
        elif name in _INLINED:
            sub = eqn.params[_INLINED[name]]
            outs = _eval_lowered(sub, ins[:len(sub.inputs)])
        else:
            params = {k: _lower_param(v) for k, v in eqn.params.items()}
            outs = bind(eqn.op, ins, params, eqn.source)
            outs = outs if eqn.op.multiple_results else [outs]
        for v, x in zip(eqn.outputs, outs, strict=True):
            env[id(v)] = x
    return [read(env, a) for a in graph.outputs]


def _lower_param(value: Any) -> Any:
    if isinstance(value, Graph):
        return lower_ad_ops(value)
    if isinstance(value, tuple) and any(isinstance(v, Graph) for v in value):
        return tuple(lower_ad_ops(v) if isinstance(v, Graph) else v for v in value)
    return value

"""Reverse mode: linearize (JVP + partial evaluation), then transpose.

    linearize_graph(g):  g --jvp_graph--> (primals, tangents) -> (outs, tangent outs)
                           --partial_eval (tangents unknown)-->
                         primal: (primals) -> (outs, residuals)
                         linear: (residuals, tangents) -> (tangent outs)
    vjp_graph(g):        primal as the forward graph, and
                         backward = transpose_graph(linear): (residuals, cts) -> (input cts)

The forward graph keeps only what the backward one needs (the residuals): dead
eqns are pruned from both, and cotangents that are symbolically zero write no code.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

from ..core import Graph
from .jvp import jvp_graph
from .partial_eval import partial_eval_graph
from .transpose import transpose_graph
from .util import prune, select_outputs


@dataclass(frozen=True)
class Linearized:
    """`primal`: (inputs...) -> (outputs..., residuals...); `linear`: (residuals...,
    tangents of the nonzero inputs...) -> (tangents of the `out_nonzero` outputs...)."""

    primal: Graph
    linear: Graph
    num_res: int
    out_nonzero: tuple[bool, ...]


@dataclass(frozen=True)
class VJP:
    """`forward`: (inputs...) -> (outputs..., residuals...); `backward`: (residuals...,
    cotangents of the `out_nonzero` outputs...) -> (cotangents of the nonzero inputs...)."""

    forward: Graph
    backward: Graph
    num_res: int
    out_nonzero: tuple[bool, ...]


def linearize_graph(graph: Graph, nonzero: Sequence[bool],
                    out_mask: Sequence[bool] | None = None) -> Linearized:
    """Split `graph`'s JVP into its primal and linear parts.

    Only the outputs flagged in `out_mask` (default: all) get tangents.
    """
    mask = tuple(out_mask) if out_mask is not None else (True,) * len(graph.outputs)
    return _linearize(graph, tuple(map(bool, nonzero)), tuple(map(bool, mask)))


@functools.lru_cache(maxsize=512)
def _linearize(graph: Graph, nonzero: tuple[bool, ...], mask: tuple[bool, ...]) -> Linearized:
    n_out = len(graph.outputs)
    jvp, out_nz = jvp_graph(graph, nonzero)
    keep = [nz and m for nz, m in zip(out_nz, mask, strict=True)]
    jvp = select_outputs(jvp, [True] * n_out + [k for k, nz in zip(keep, out_nz, strict=True)
                                                if nz])
    n_t = sum(keep)
    pe = partial_eval_graph(jvp, [False] * len(graph.inputs) + [True] * sum(nonzero),
                            instantiate=[False] * n_out + [True] * n_t)
    if any(pe.out_unknowns[:n_out]):
        raise AssertionError(f"linearize: a primal output of {graph.name} depends on "
                             f"tangents (a JVP rule mixes them)")
    return Linearized(pe.known, prune(pe.unknown), pe.num_res, tuple(keep))


def vjp_graph(graph: Graph, nonzero: Sequence[bool],
              out_mask: Sequence[bool] | None = None) -> VJP:
    """Forward and backward graphs of `graph` for reverse-mode differentiation with
    respect to the `nonzero` inputs (and the `out_mask` outputs)."""
    lin = linearize_graph(graph, nonzero, out_mask)
    return _vjp(lin)


@functools.lru_cache(maxsize=512)
def _vjp(lin: Linearized) -> VJP:
    n_t = len(lin.linear.inputs) - lin.num_res
    backward = transpose_graph(lin.linear, [False] * lin.num_res + [True] * n_t)
    return VJP(lin.primal, prune(backward), lin.num_res, lin.out_nonzero)

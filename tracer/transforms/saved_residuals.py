"""`print_saved_residuals` (JAX's `jax.ad_checkpoint.print_saved_residuals`): what
reverse mode keeps between the forward and the backward pass, and where each value
comes from, as JAX prints it (an argument, an op, a value named by `checkpoint_name`)."""

from __future__ import annotations

from typing import Any, Callable

from ..core import Eqn, Var
from .api_ad import _trace
from .util import differentiable
from .vjp import vjp_graph

__all__ = ["print_saved_residuals"]


def print_saved_residuals(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Print the values reverse mode saves between the forward and the backward pass
    of `fun(*args)` (JAX's `jax.ad_checkpoint.print_saved_residuals`): one line each,
    its type and where it comes from (an argument or an op)."""
    tr = _trace("vjp", fun, args, kwargs)
    n = len(tr.graph.outputs)
    v = vjp_graph(tr.graph, [differentiable(a) for a in tr.graph.in_avals],
                  [i < tr.num_out for i in range(n)])
    producers = {id(o): e for e in v.forward.eqns for o in e.outputs}
    inputs = {id(x): i for i, x in enumerate(v.forward.inputs)}
    for atom in v.forward.outputs[n:]:
        if id(atom) in inputs:
            print(f"{atom.aval} from the argument leaf {inputs[id(atom)]}")
        elif id(atom) in producers:
            print(f"{atom.aval} {_origin(producers[id(atom)], atom)}")
        else:
            print(f"{atom.aval} (a constant)")


def _origin(eqn: Eqn, atom: Var) -> str:
    """What computed `atom`: for a value a checkpoint policy saved, the op inside the
    checkpointed function ("named 'h'" for a `checkpoint_name`), as JAX prints it."""
    while eqn.op.name == "checkpoint":
        inner = eqn.params["to_apply"]
        atom = inner.outputs[[id(o) for o in eqn.outputs].index(id(atom))]
        found = [e for e in inner.eqns if any(o is atom for o in e.outputs)]
        if not found:
            break
        eqn = found[0]
    if eqn.op.name == "checkpoint_name":
        return f"named {eqn.params['name']!r} from {eqn.source}"
    return f"output of {eqn.op.name} from {eqn.source}"

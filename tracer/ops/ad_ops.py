"""Ops that exist for the transformations: `stop_gradient`, `checkpoint` (remat),
the calls of `custom_jvp` / `custom_vjp` functions, and `custom_lin`, the linear
op a `custom_vjp` function's JVP leaves for its backward function.

Outside a transformation they are what their sub-graph computes (`stop_gradient`
is the identity); `tracer.transforms.lower_ad_ops` inlines them before a graph is
compiled. Their JVP / batching rules that need no graph transformation are here;
`checkpoint`'s JVP, partial-evaluation and transpose rules are in
`tracer.transforms.checkpoint` (this room may not import transforms).

Operand layouts (`num_consts` trailing operands are values the function closed
over; the user's rules see the arguments only):
- `checkpoint(*args; to_apply)`;
- `custom_jvp_call(*args, *consts; call, jvp, num_consts)`: `call` is the
  function's graph; `jvp(args, tangents) -> (outs, tangent outs)` a `Rule`;
- `custom_vjp_call(*args, *consts; call, fwd, bwd, num_consts)`: `fwd(args, consts)
  -> (outs, residuals)` and `bwd(residuals, cts) -> one cotangent per arg` are Rules;
- `custom_lin(*residuals, *tangents; bwd, num_res, out_avals)`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..core import Graph, ShapedArray
from ..errors import TracerTypeError
from ..interpret import eval_graph, run_graph
from ..tracing import trace_flat
from ..tree_util import tree_flatten, tree_unflatten
from .ad import UndefinedPrimal, Zero, aval_of_value, defjvp_zero, instantiate
from .collectives import current_frame, move_batch_dim
from .common import check_avals
from .registry import define_op

__all__ = ["stop_gradient"]


# ---------------------------------------------------------------------- stop_gradient
stop_gradient_p = define_op(
    "stop_gradient", shape=lambda x: x, impl=lambda x: np.array(x, copy=True),
    hlo_name="stop-gradient", family="ad", differentiable=False,
    doc="StopGradient(x): the identity, whose derivative is zero (JAX's "
        "lax.stop_gradient). Example: grad(lambda x: x * stop_gradient(x))(3.) -> 3.")
defjvp_zero(stop_gradient_p)
stop_gradient_p.batch = lambda args, dims: (stop_gradient_p.bind(args[0]), dims[0])


def stop_gradient(x: Any) -> Any:
    """`x` (any pytree) unchanged, but with zero derivative: differentiation treats it
    as a constant. Integer and bool leaves pass through as they are.

    >>> grad(lambda x: x * stop_gradient(x))(3.0)  # 3.0, not 6.0
    """
    leaves, tree = tree_flatten(x)
    out = [stop_gradient_p.bind(v) if dtypes.is_inexact(aval_of_value(v).dtype) else v
           for v in leaves]
    return tree_unflatten(tree, out)


# -------------------------------------------------------------------------- checkpoint
def _sub_shape(graph: Graph, avals: Sequence[ShapedArray]) -> tuple[ShapedArray, ...]:
    check_avals("operands of the sub-computation", graph.in_avals, avals)
    return graph.out_avals


def _run(graph: Graph, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    outs = run_graph(graph, list(args))
    return [np.asarray(o, dtype=a.dtype) for o, a in zip(outs, graph.out_avals, strict=True)]


checkpoint_p = define_op(
    "checkpoint", shape=lambda *avals, to_apply, policy=None: _sub_shape(to_apply, avals),
    impl=lambda *args, to_apply, policy=None: _run(to_apply, args), hlo_name="checkpoint",
    family="ad", multiple_results=True,
    doc="Checkpoint(args; to_apply, policy): calls to_apply; reverse mode stores the "
        "operands and the values `policy` says are saveable, and recomputes the rest in "
        "the backward pass (JAX's remat).")


def _checkpoint_batch(args: Sequence[Any], dims: Sequence[int | None], *, to_apply: Graph,
                      **policy: Any) -> tuple[list[Any], list[int | None]]:
    graph, out_dims = _frame().batch_graph(to_apply, dims, [False] * len(to_apply.outputs))
    return checkpoint_p.bind(*args, to_apply=graph, **policy), out_dims


checkpoint_p.batch = _checkpoint_batch

# ------------------------------------------------------------------ checkpoint_name
checkpoint_name_p = define_op(
    "checkpoint_name", shape=lambda x, name: x, impl=lambda x, name: np.array(x, copy=True),
    hlo_name="checkpoint-name", family="ad",
    doc="CheckpointName(x; name): the identity, marking x for checkpoint policies "
        "(JAX's checkpoint_name): save_only_these_names('a') saves the values named 'a'.")
checkpoint_name_p.jvp = lambda primals, tangents, *, name: (
    checkpoint_name_p.bind(primals[0], name=name), tangents[0])
checkpoint_name_p.transpose = lambda ct, x, *, name: [ct]
checkpoint_name_p.batch = lambda args, dims, *, name: (
    checkpoint_name_p.bind(args[0], name=name), dims[0])


# ------------------------------------------------------------------ custom rules
class Rule:
    """A user's derivative rule held in an eqn's params, called on flat lists of
    values. It runs lazily, when a transformation needs it (a custom_jvp rule
    usually calls the function it differentiates, so tracing it eagerly would
    recurse). Params compare rules by identity; `str()` is what HLO text shows."""

    def __init__(self, fn: Callable[..., Any], name: str):
        self.fn = fn
        self.name = name

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def __str__(self) -> str:
        return self.name


def _batched_rule(frame: Any, fn: Callable[..., list[Any]], name: str) -> Rule:
    """`fn` (lists in, a flat list out) batched at axis 0 on every
    input and output. Lazy like the rule itself: it is traced per example and
    batched when called (eagerly, batching a rule that calls its own function
    would recurse)."""
    batch_graph = frame.batch_graph

    def run(*lists: list[Any]) -> list[Any]:
        flat = [x for part in lists for x in part]
        cuts = [len(part) for part in lists[:-1]]
        graph, captured = trace_flat(lambda *xs: fn(*_cut(list(xs), cuts)),
                                     _example_avals(flat), name)
        if captured:
            raise TracerTypeError(f"vmap: the custom rule {name} closes over a traced value "
                                  f"of an outer transformation; pass it as an argument")
        batched = batch_graph(graph, [0] * len(flat), [True] * len(graph.outputs))[0]
        return eval_graph(batched, flat)

    return Rule(run, f"vmap({name})")


def _cut(items: list[Any], sizes: Sequence[int]) -> list[list[Any]]:
    out, start = [], 0
    for n in sizes:
        out.append(items[start:start + n])
        start += n
    return out + [items[start:]]


def _batched(frame: Any, graph: Graph) -> Graph:
    return frame.batch_graph(graph, [0] * len(graph.inputs), [True] * len(graph.outputs))[0]


def _to_front(args: Sequence[Any], dims: Sequence[int | None]) -> tuple[Any, list[Any]]:
    frame = _frame()
    return frame, [move_batch_dim(x, d, 0, frame.size) for x, d in zip(args, dims, strict=True)]


def _example_avals(args: Sequence[Any]) -> list[ShapedArray]:
    """Per-example avals of values batched at axis 0."""
    return [ShapedArray(a.shape[1:], a.dtype) for a in map(aval_of_value, args)]


def _sub_call_shape(*avals: ShapedArray, call: Graph, **_: Any) -> tuple[ShapedArray, ...]:
    return _sub_shape(call, avals)


def _zero_ints(touts: Sequence[Any], avals: Sequence[ShapedArray]) -> list[Any]:
    return [t if dtypes.is_inexact(a.dtype) else Zero(ShapedArray(a.shape, a.dtype))
            for t, a in zip(touts, avals, strict=True)]


# ----------------------------------------------------------------------- custom_jvp
custom_jvp_call_p = define_op(
    "custom_jvp_call", shape=_sub_call_shape,
    impl=lambda *args, call, jvp, num_consts: _run(call, args), hlo_name="custom-jvp-call",
    family="ad", multiple_results=True,
    doc="CustomJvpCall(args, consts; call, jvp): call(args, consts), whose JVP is the "
        "user's rule jvp(args, tangents) -> (outs, tangent outs) (tracer.custom_jvp).")


def _custom_jvp_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, call: Graph,
                    jvp: Rule, num_consts: int) -> tuple[list, list]:
    n = len(primals) - num_consts
    outs, touts = jvp(list(primals[:n]), [instantiate(t) for t in tangents[:n]])
    return outs, _zero_ints(touts, call.out_avals)


def _custom_jvp_batch(args: Sequence[Any], dims: Sequence[int | None], *, call: Graph,
                      jvp: Rule, num_consts: int) -> tuple[list, list]:
    """Every operand batched at 0, so the batched rule's tangents have the batched
    arguments' shapes."""
    frame, args = _to_front(args, dims)
    m = len(call.outputs)
    rule = _batched_rule(frame, lambda p, t: [x for part in jvp(p, t) for x in part], str(jvp))
    batched = Rule(lambda p, t: _cut(rule(p, t), [m]), str(rule))
    outs = custom_jvp_call_p.bind(*args, call=_batched(frame, call), jvp=batched,
                                  num_consts=num_consts)
    return outs, [0] * len(outs)


custom_jvp_call_p.jvp = _custom_jvp_jvp
custom_jvp_call_p.batch = _custom_jvp_batch


# ----------------------------------------------------------------------- custom_vjp
custom_vjp_call_p = define_op(
    "custom_vjp_call", shape=_sub_call_shape,
    impl=lambda *args, call, fwd, bwd, num_consts: _run(call, args),
    hlo_name="custom-vjp-call", family="ad", multiple_results=True,
    doc="CustomVjpCall(args, consts; call, fwd, bwd): call(args, consts), whose "
        "reverse-mode derivative is the user's fwd(args) -> (outs, residuals) and "
        "bwd(residuals, cts) -> arg cts (tracer.custom_vjp).")


def _custom_vjp_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, call: Graph,
                    fwd: Rule, bwd: Rule, num_consts: int) -> tuple[list, list]:
    n = len(primals) - num_consts
    outs, res = fwd(list(primals[:n]), list(primals[n:]))
    out_avals = tuple(ShapedArray(a.shape, a.dtype) for a in call.out_avals)
    touts = custom_lin_p.bind(*res, *[instantiate(t) for t in tangents[:n]], bwd=bwd,
                              num_res=len(res), out_avals=out_avals)
    return outs, _zero_ints(touts, out_avals)


def _custom_vjp_batch(args: Sequence[Any], dims: Sequence[int | None], *, call: Graph,
                      fwd: Rule, bwd: Rule, num_consts: int) -> tuple[list, list]:
    frame, args = _to_front(args, dims)
    m = len(call.outputs)
    fwd_flat = _batched_rule(frame, lambda a, c: [x for part in fwd(a, c) for x in part],
                             str(fwd))
    fwd_b = Rule(lambda a, c: _cut(fwd_flat(a, c), [m]), str(fwd_flat))
    outs = custom_vjp_call_p.bind(*args, call=_batched(frame, call), fwd=fwd_b,
                                  bwd=_batched_rule(frame, bwd, str(bwd)), num_consts=num_consts)
    return outs, [0] * len(outs)


custom_vjp_call_p.jvp = _custom_vjp_jvp
custom_vjp_call_p.batch = _custom_vjp_batch


# ----------------------------------------------------------------------- custom_lin
def _custom_lin_impl(*args: np.ndarray, bwd: Rule, num_res: int,
                     out_avals: tuple[ShapedArray, ...]) -> list[np.ndarray]:
    """The map itself, read off its transpose: output element j is the sum of
    `bwd(e_j) * tangents` (one bwd call per output element: a reference, not fast)."""
    res, tans = list(args[:num_res]), args[num_res:]
    outs = [np.zeros(a.shape, a.dtype) for a in out_avals]
    for k, aval in enumerate(out_avals):
        for idx in np.ndindex(aval.shape):
            basis = [np.zeros(a.shape, a.dtype) for a in out_avals]
            basis[k][idx] = 1
            row = bwd(res, basis)
            outs[k][idx] = sum(np.sum(np.asarray(r) * t) for r, t in zip(row, tans, strict=True))
    return outs


custom_lin_p = define_op(
    "custom_lin", shape=lambda *avals, bwd, num_res, out_avals: out_avals,
    impl=_custom_lin_impl, hlo_name="custom-lin", family="ad", multiple_results=True,
    linear=True,
    doc="CustomLin(residuals, tangents; bwd): the linear map whose transpose is a "
        "custom_vjp function's bwd (the tangent of a custom_vjp call). Reverse mode "
        "runs bwd; forward mode evaluates the map one bwd call per output element.")


def _custom_lin_transpose(cts: list[Any], *args: Any, bwd: Rule, num_res: int,
                          out_avals: tuple[ShapedArray, ...]) -> list[Any]:
    res, tans = args[:num_res], args[num_res:]
    in_cts = bwd(list(res), [instantiate(c) for c in cts])
    return [None] * num_res + [c if isinstance(t, UndefinedPrimal) else None
                               for t, c in zip(tans, in_cts, strict=True)]


def _custom_lin_batch(args: Sequence[Any], dims: Sequence[int | None], *, bwd: Rule,
                      num_res: int, out_avals: tuple[ShapedArray, ...]) -> tuple[list, list]:
    frame, args = _to_front(args, dims)
    rule = _batched_rule(frame, bwd, str(bwd))
    batched = tuple(a.update(shape=(frame.size,) + a.shape) for a in out_avals)
    outs = custom_lin_p.bind(*args, bwd=rule, num_res=num_res, out_avals=batched)
    return outs, [0] * len(outs)


def _custom_lin_jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> Any:
    # JAX's rule too: a custom_vjp function's bwd is a reverse-mode rule only.
    raise TracerTypeError("a custom_vjp function was differentiated twice, or forward mode "
                          "was applied to its derivative; its bwd rule supports one reverse "
                          "pass only. Use custom_jvp for functions that need higher order")


custom_lin_p.jvp = _custom_lin_jvp
custom_lin_p.transpose = _custom_lin_transpose
custom_lin_p.batch = _custom_lin_batch


def _frame() -> Any:
    frame = current_frame()
    if frame is None:
        raise TracerTypeError("batching rules of sub-graph ops run inside vmap_graph only")
    return frame

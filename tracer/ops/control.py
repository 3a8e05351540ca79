"""Control flow (XLA's Call, While, Conditional) plus JAX's `scan`.

User functions are traced into sub-`Graph`s stored in the eqn's params. Tracers of
an enclosing trace that a function closes over come back from `trace_flat` as
`captured`; they are passed as extra operands ("consts") and the sub-graph takes
them as parameters, JAX style:

- `while`: operands `(*cond_consts, *body_consts, *carry)`; `condition` takes
  `(cond_consts, carry)`, `body` takes `(body_consts, carry)`.
- `conditional`: operands `(index, *consts, *operands)`; every branch takes
  `(consts, operands)` (the union of all branches' consts).
- `scan`: operands `(*consts, *carry, *xs)`; `body` takes `(consts, carry, x slices)`
  and returns `(carry, y slices)`.
- `call`: operands `(*args, *consts)`, the order `trace_flat` gives.

A body or branch that continues the trace's ordered-effect chain (an ordered callback,
infeed or outfeed inside; it captured the outer token) is traced again with the token
as an extra carry / operand and result (`tokens.thread_body`), so the effects after the
loop depend on it.

Shape rules re-check every sub-graph against the operands, so `typecheck` catches
a rewrite that breaks a loop. Avals are compared by shape and dtype: weak types
(Python scalars) may differ between a loop's first and later iterations. The helpers
that trace a function and promote weak carries are in `control_util.py`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..core import Graph, ShapedArray, Var
from ..errors import ParamError, ShapeError, TracerTypeError, TracerValueError
from ..interpret import run_graph
from ..tracing import Tracer, trace_flat
from ..tree_util import tree_flatten, tree_unflatten
from . import elementwise as ew
from .common import aval_mismatch, check_arity, check_avals, check_results, wrapper_error
from .control_util import (_aval, _cast, _check_tree, _consts_first, _convert, _fmt, _join_weak,
                           _promote_weak, _split, _trace)
from .registry import define_op
from .tokens import captured_token, set_ordered_token, thread_body

__all__ = ["while_loop", "cond", "switch", "fori_loop", "scan", "call"]


# ----------------------------------------------------------------------------- while
def _while_shape(*avals: ShapedArray, condition: Graph, body: Graph, cond_nconsts: int,
                 body_nconsts: int) -> tuple[ShapedArray, ...]:
    cconsts, bconsts, carry = _split(avals, cond_nconsts, body_nconsts)
    check_avals("condition parameters (consts, carry)", cconsts + carry, condition.in_avals)
    pred = condition.out_avals
    if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != np.bool_:
        raise TracerTypeError(f"cond_fun must return a bool scalar (pred[]), got {_fmt(pred)}")
    check_avals("body parameters (consts, carry)", bconsts + carry, body.in_avals)
    check_avals("body_fun must return the loop carry's types", carry, body.out_avals)
    return _join_weak(carry, body.out_avals)


def _while_impl(*args: np.ndarray, condition: Graph, body: Graph, cond_nconsts: int,
                body_nconsts: int) -> list[np.ndarray]:
    cconsts, bconsts, carry = _split(args, cond_nconsts, body_nconsts)
    carry = [np.asarray(c) for c in carry]
    while bool(run_graph(condition, cconsts + carry)[0]):
        carry = _cast(run_graph(body, bconsts + carry), carry)
    return carry


while_p = define_op(
    "while", shape=_while_shape, impl=_while_impl, hlo_name="while", family="control",
    multiple_results=True,
    doc="While(condition, body, init): condition T -> PRED, body T -> T; runs body while "
        "condition holds and returns the last body result (init if the condition is false "
        "at once). T's shape is fixed across iterations. Example: init (0, zeros(f32[10])), "
        "body (i + 1, acc + v) while i < 1000 -> (1000, 1000 * v).")


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any) -> Any:
    """Run `body_fun` while `cond_fun` holds; `init_val` is any pytree.

    Seed rule (While): cond_fun returns a bool scalar, body_fun returns a value of
    the same structure, shapes and dtypes as `init_val`; the result is the last
    body result (`init_val` if the condition is false at once).

    >>> while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, 1.0))  # (3, 8.)
    """
    check_arity("while", "cond_fun", cond_fun, 1)
    check_arity("while", "body_fun", body_fun, 1)
    return _while_loop(cond_fun, body_fun, init_val, threaded=False)


def _while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
                init_val: Any, threaded: bool) -> Any:
    leaves, tree = tree_flatten(init_val)
    for _ in range(2):
        avals = [_aval(x) for x in leaves]
        body, bconsts, body_tree = _trace(lambda *c: body_fun(tree_unflatten(tree, c)),
                                          avals, "while_body", "while", "body_fun")
        _check_tree("while", "body_fun output and init_val", tree, body_tree, avals,
                    body.out_avals)
        leaves, changed = _promote_weak(leaves, avals, body.out_avals)
        if not changed:
            break
    outer = None if threaded else captured_token(bconsts)
    if outer is not None:  # ordered effects: the token is carried
        token, out = _while_loop(lambda c, f=cond_fun: f(c[1]), thread_body(body_fun),
                                 (outer, init_val), threaded=True)
        set_ordered_token(token)
        return out
    condition, cconsts = trace_flat(lambda *c: _predicate(cond_fun(tree_unflatten(tree, c))),
                                    avals, "while_condition")
    outs = while_p.bind(*cconsts, *bconsts, *leaves,
                        condition=_consts_first(condition, len(cconsts)),
                        body=_consts_first(body, len(bconsts)),
                        cond_nconsts=len(cconsts), body_nconsts=len(bconsts))
    return tree_unflatten(tree, outs)


def _predicate(out: Any) -> list[Any]:
    leaves, _ = tree_flatten(out)
    if len(leaves) != 1 or leaves[0] is not out:
        raise wrapper_error(TracerTypeError, "while", f"cond_fun must return a bool scalar "
                            f"(pred[]), got {type(out).__name__} {_fmt(map(_aval, leaves))}")
    return leaves


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any],
              init_val: Any) -> Any:
    """`val = body_fun(i, val)` for i in [lower, upper), as a `while` loop.

    The counter has the common integer dtype of the bounds (NumPy's int64 when both
    are Python ints). Returns the final `val`.

    >>> fori_loop(0, 4, lambda i, s: s + i, 0)  # 0 + 1 + 2 + 3 = 6
    """
    check_arity("fori_loop", "body_fun", body_fun, 2)
    dtype, _ = dtypes.result_type(lower, upper)
    if not dtypes.is_integer(dtype):
        raise wrapper_error(TracerTypeError, "fori_loop", f"lower and upper must be "
                            f"integers, got {_aval(lower)} and {_aval(upper)}")
    lo, hi = (_to_strong(b, dtype) for b in (lower, upper))
    _, val = while_loop(lambda c: ew.lt(c[0], hi),
                        lambda c: (ew.add(c[0], 1), body_fun(c[0], c[1])), (lo, init_val))
    return val


def _to_strong(x: Any, dtype: np.dtype) -> Any:
    if isinstance(x, Tracer) and x.dtype == dtype and not x.weak_type:
        return x
    return _convert(x, dtype)


# ----------------------------------------------------------------------- conditional
def _conditional_shape(index: ShapedArray, *avals: ShapedArray,
                       branch_computations: tuple[Graph, ...]) -> tuple[ShapedArray, ...]:
    if not branch_computations:
        raise ParamError("needs at least one branch computation")
    if index.shape != () or not dtypes.is_integer(index.dtype):
        raise TracerTypeError(f"the branch index must be an integer scalar, got {index}")
    for i, g in enumerate(branch_computations):
        check_avals(f"branch {i} parameters (consts, operands)", avals, g.in_avals)
    first = branch_computations[0].out_avals
    for i, g in enumerate(branch_computations[1:], 1):
        check_avals(f"branch {i} must return the same types as branch 0", first, g.out_avals)
    return tuple(a.update(weak_type=all(g.out_avals[k].weak_type for g in branch_computations))
                 for k, a in enumerate(first))


def _conditional_impl(index: np.ndarray, *args: np.ndarray,
                      branch_computations: tuple[Graph, ...]) -> list[np.ndarray]:
    n = len(branch_computations)
    i = int(index)
    graph = branch_computations[i if 0 <= i < n else n - 1]  # seed: out of range -> last
    return _cast(run_graph(graph, list(args)), graph.out_avals)


conditional_p = define_op(
    "conditional", shape=_conditional_shape, impl=_conditional_impl, hlo_name="conditional",
    family="control", multiple_results=True,
    doc="Conditional(branch_index, branch_computations, operands): runs only "
        "branch_computations[branch_index]; an index < 0 or >= N runs the last branch "
        "(the seed's default branch, unlike JAX's clamp). All branches take the same "
        "operands and return the same types. The predicate form is index = int32(pred) "
        "with branches (false, true). Example: branches [f0, f1, f2]: index 2, -1 or 7 "
        "-> f2(x).")


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any],
         *operands: Any) -> Any:
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`; only one runs.

    Seed rule (Conditional, predicate form): `pred` is a bool scalar; both branches
    return the same structure, shapes and dtypes. Binds `conditional` with index
    int32(pred) and branches (false_fun, true_fun).

    >>> cond(x > 0, lambda v: v * 2.0, lambda v: -v, x)
    """
    pav = _aval(pred)
    if pav.shape != () or pav.dtype != np.bool_:
        raise wrapper_error(TracerTypeError, "cond", f"pred must be a bool scalar (pred[]), "
                            f"got {pav}")
    index = _convert(pred, dtypes.int32)
    return _conditional("cond", index, (false_fun, true_fun), ("false_fun", "true_fun"),
                        operands)


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """`branches[index](*operands)`; an index out of range runs the LAST branch.

    Seed rule (Conditional, indexed form): index < 0 or >= len(branches) selects
    branch N-1 (JAX clamps instead, so `switch(-1, ...)` differs: here it is the
    last branch). All branches return the same structure, shapes and dtypes.

    >>> switch(7, [lambda v: v, lambda v: v + 1.0, lambda v: v * 10.0], x)  # x * 10
    """
    branches = tuple(branches)
    if not branches or not all(map(callable, branches)):
        raise wrapper_error(ParamError, "switch", "branches must be a non-empty sequence of "
                            "functions")
    iav = _aval(index)
    if iav.shape != () or not dtypes.is_integer(iav.dtype):
        raise wrapper_error(TracerTypeError, "switch", f"index must be an integer scalar, "
                            f"got {iav}")
    names = tuple(f"branch {i}" for i in range(len(branches)))
    return _conditional("switch", index, branches, names, operands)


def _conditional(op: str, index: Any, funs: Sequence[Callable[..., Any]],
                 names: Sequence[str], operands: tuple[Any, ...],
                 threaded: bool = False) -> Any:
    if not threaded:
        for name, f in zip(names, funs, strict=True):
            check_arity(op, name, f, len(operands))
    leaves, tree = tree_flatten(operands)
    avals = [_aval(x) for x in leaves]
    traced = [_trace(lambda *xs, f=f: f(*tree_unflatten(tree, xs)), avals, f"branch_{i}",
                     op, names[i]) for i, f in enumerate(funs)]
    first, first_tree = traced[0][0].out_avals, traced[0][2]
    for name, (g, _, out_tree) in zip(names[1:], traced[1:], strict=True):
        what = f"{name} must return the same structure and types as {names[0]}"
        _check_tree(op, what, first_tree, out_tree, first, g.out_avals)
        err = aval_mismatch(what, first, g.out_avals)
        if err is not None:
            raise wrapper_error(type(err), op, str(err))
    graphs, consts = _join_consts(traced)
    outer = None if threaded else captured_token(consts)
    if outer is not None:  # ordered effects: the token goes through
        branches = [thread_body(f, splat=True) for f in funs]
        token, out = _conditional(op, index, branches, names, (outer, *operands),
                                  threaded=True)
        set_ordered_token(token)
        return out
    outs = conditional_p.bind(index, *consts, *leaves, branch_computations=graphs)
    return tree_unflatten(first_tree, outs)


def _join_consts(traced: Sequence[tuple[Graph, list[Tracer], Any]]
                 ) -> tuple[tuple[Graph, ...], list[Tracer]]:
    """Give every branch the union of all branches' captured tracers, first."""
    union: dict[int, Tracer] = {}
    for _, captured, _ in traced:
        for t in captured:
            union.setdefault(id(t), t)
    consts = list(union.values())
    graphs = []
    for graph, captured, _ in traced:
        k = len(graph.inputs) - len(captured)
        own = {id(t): v for t, v in zip(captured, graph.inputs[k:], strict=True)}
        cvars = tuple(own[id(t)] if id(t) in own else Var(t.aval) for t in consts)
        graphs.append(Graph(cvars + graph.inputs[:k], graph.eqns, graph.outputs, graph.name))
    return tuple(graphs), consts


# ------------------------------------------------------------------------------ scan
def _scan_shape(*avals: ShapedArray, body: Graph, length: int, reverse: bool,
                num_consts: int, num_carry: int) -> tuple[ShapedArray, ...]:
    consts, carry, xs = _split(avals, num_consts, num_carry)
    if any(x.ndim == 0 or x.shape[0] != length for x in xs):
        raise ShapeError(f"every xs array needs a leading axis of length {length}, got "
                         f"{_fmt(xs)}")
    slices = [ShapedArray(x.shape[1:], x.dtype, x.weak_type) for x in xs]
    check_avals("body parameters (consts, carry, x slices)", consts + carry + slices,
                body.in_avals)
    outs = body.out_avals
    check_avals("f must return the carry's types", carry, outs[:num_carry])
    ys = [ShapedArray((length,) + y.shape, y.dtype) for y in outs[num_carry:]]
    return _join_weak(carry, outs[:num_carry]) + tuple(ys)


def _scan_impl(*args: np.ndarray, body: Graph, length: int, reverse: bool, num_consts: int,
               num_carry: int) -> list[np.ndarray]:
    consts, carry, xs = _split(args, num_consts, num_carry)
    carry = [np.asarray(c) for c in carry]
    ys = [np.empty((length,) + a.shape, a.dtype) for a in body.out_avals[num_carry:]]
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        outs = run_graph(body, consts + carry + [x[i] for x in xs])
        carry = _cast(outs[:num_carry], carry)
        for y, o in zip(ys, outs[num_carry:], strict=True):
            y[i] = o
    return carry + ys


scan_p = define_op(
    "scan", shape=_scan_shape, impl=_scan_impl, hlo_name="scan", family="control",
    multiple_results=True,
    doc="Scan (JAX's lax.scan, a While over a counter): carry, y_i = f(carry, x_i) for "
        "i = 0..length-1 (length-1..0 when reverse), with x_i the i-th slice of every xs "
        "array along axis 0; returns the final carry and the y_i stacked on axis 0 "
        "(ys[i] = y_i also when reverse). Example: scan(lambda c, x: (c + x, c), 0, "
        "[1, 2, 3]) -> (6, [0, 1, 3]).")


def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any,
         length: int | None = None, reverse: bool = False) -> tuple[Any, Any]:
    """Loop `carry, y = f(carry, x)` over the leading axis of `xs`; stack the ys.

    Rule (JAX `lax.scan`): `xs` is a pytree of arrays sharing their leading axis
    size (or None with `length`); `f` returns a pair whose carry part has the
    structure, shapes and dtypes of `init`. Returns `(carry, ys)`.

    >>> scan(lambda c, x: (c + x, c * x), 0.0, np.arange(3.0))  # (3., [0., 0., 2.])
    """
    check_arity("scan", "f", f, 2)
    return _scan(f, init, xs, length, reverse, threaded=False)


def _scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any, length: int | None,
          reverse: bool, threaded: bool) -> tuple[Any, Any]:
    carry, carry_tree = tree_flatten(init)
    x_leaves, x_tree = tree_flatten(xs)
    x_avals = [_aval(x) for x in x_leaves]
    n = _scan_length(x_avals, length)
    slices = [ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in x_avals]
    for _ in range(2):
        avals = [_aval(c) for c in carry]
        graph, consts, (out_tree, y_tree) = _trace_scan_body(f, carry_tree, x_tree, avals,
                                                             slices)
        outs = graph.out_avals[:len(avals)]
        _check_tree("scan", "the carry returned by f and init", carry_tree, out_tree, avals,
                    outs)
        carry, changed = _promote_weak(carry, avals, outs)
        if not changed:
            break
    outer = None if threaded else captured_token(consts)
    if outer is not None:  # ordered effects: the token is carried
        (token, out), ys = _scan(thread_body(f, pair=True), (outer, init), xs, length, reverse,
                                 True)
        set_ordered_token(token)
        return out, ys
    res = scan_p.bind(*consts, *carry, *x_leaves, body=_consts_first(graph, len(consts)),
                      length=n, reverse=bool(reverse), num_consts=len(consts),
                      num_carry=len(carry))
    return tree_unflatten(carry_tree, res[:len(carry)]), tree_unflatten(y_tree, res[len(carry):])


def _trace_scan_body(f: Callable[..., Any], carry_tree: Any, x_tree: Any,
                     carry_avals: list[ShapedArray], slices: list[ShapedArray]
                     ) -> tuple[Graph, list[Tracer], tuple[Any, Any]]:
    nc = len(carry_avals)
    trees: list[Any] = []

    def flat(*args: Any) -> list[Any]:
        out = f(tree_unflatten(carry_tree, args[:nc]), tree_unflatten(x_tree, args[nc:]))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise wrapper_error(TracerTypeError, "scan", f"f must return a pair "
                                f"(carry, y), got {type(out).__name__}")
        (c_leaves, c_tree), (y_leaves, y_tree) = tree_flatten(out[0]), tree_flatten(out[1])
        check_results("scan", "f", c_leaves + y_leaves)
        trees.extend((c_tree, y_tree))
        return c_leaves + y_leaves

    graph, consts = trace_flat(flat, carry_avals + slices, "scan_body")
    return graph, consts, (trees[0], trees[1])


def _scan_length(x_avals: Sequence[ShapedArray], length: Any) -> int:
    if length is not None and (not isinstance(length, (int, np.integer)) or length < 0):
        raise wrapper_error(TracerValueError, "scan", f"length must be a non-negative int, "
                            f"got {length!r}")
    if any(a.ndim == 0 for a in x_avals):
        raise wrapper_error(TracerValueError, "scan", f"xs leaves need a leading axis to "
                            f"scan over, got {_fmt(x_avals)}")
    sizes = sorted({a.shape[0] for a in x_avals})
    if len(sizes) > 1:
        raise wrapper_error(TracerValueError, "scan", f"xs leaves have different lengths "
                            f"along axis 0: {sizes} (xs: {_fmt(x_avals)})")
    if length is not None and sizes and sizes[0] != length:
        raise wrapper_error(TracerValueError, "scan", f"length={length} but the xs leaves "
                            f"have length {sizes[0]}")
    if length is None and not sizes:
        raise wrapper_error(TracerValueError, "scan", "length must be given when xs holds "
                            "no arrays")
    return int(length) if length is not None else sizes[0]


# ------------------------------------------------------------------------------ call
def _call_shape(*avals: ShapedArray, to_apply: Graph) -> tuple[ShapedArray, ...]:
    check_avals("arguments of the called computation", to_apply.in_avals, avals)
    return to_apply.out_avals


def _call_impl(*args: np.ndarray, to_apply: Graph) -> list[np.ndarray]:
    return _cast(run_graph(to_apply, list(args)), to_apply.out_avals)


call_p = define_op(
    "call", shape=_call_shape, impl=_call_impl, hlo_name="call", family="control",
    multiple_results=True,
    doc="Call(computation, args...): invokes a computation T_0, ..., T_{N-1} -> S with "
        "args whose arity and types match its parameters (zero args allowed); the "
        "result is the computation's result S. Example: call(lambda a, b: a * b, 2., 3.) "
        "-> 6.")


def call(fun: Callable[..., Any], *args: Any) -> Any:
    """Call `fun(*args)` as one traced sub-computation (`call`, `to_apply=`).

    Seed rule (Call): the arguments' arity and types match the computation's
    parameters (zero arguments allowed); the result is the computation's result.
    Arguments and results are pytrees.

    >>> call(lambda a, b: {"s": a + b}, x, y)  # {"s": x + y}
    """
    check_arity("call", "fun", fun, len(args))
    leaves, tree = tree_flatten(args)
    name = getattr(fun, "__name__", "call")
    graph, consts, out_tree = _trace(lambda *xs: fun(*tree_unflatten(tree, xs)),
                                     [_aval(x) for x in leaves], name, "call", "fun")
    outs = call_p.bind(*leaves, *consts, to_apply=graph)
    return tree_unflatten(out_tree, outs)

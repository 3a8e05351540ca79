"""`custom_jvp` and `custom_vjp`: functions with user-defined derivatives (JAX's
decorators and calling conventions).

    @custom_jvp                         @custom_vjp
    def f(x): ...                       def g(x): ...
    @f.defjvp                           def g_fwd(x): return g(x), residuals
    def f_jvp(primals, tangents):       def g_bwd(residuals, ct): return (ct_x,)
        return f(x), tangent_out        g.defvjp(g_fwd, g_bwd)

Under a trace, a call traces the function into a sub-graph (what it closes over
becomes extra operands) and binds `custom_jvp_call` / `custom_vjp_call` (see
`tracer.ops.ad_ops`) holding the user's rules as `Rule`s. The rules run only when a
transformation needs them, in that transformation's trace: rules usually call the
function they differentiate, so tracing them up front would recurse. They should
take what they need through their arguments (values they close over from an outer
trace cannot reach a later transformation). Outside any trace the function just
runs. `nondiff_argnums` arguments are passed as Python values: first to `jvp` and
`bwd`, in place to `fwd`.
"""

from __future__ import annotations

import functools
import inspect
from contextvars import ContextVar
from typing import Any, Callable, Sequence

from .. import dtypes
from ..core import Graph, ShapedArray
from ..errors import TracerTypeError, names_user_line
from ..ops import convert_element_type
from ..ops.ad import aval_of_value, zeros_like_aval
from ..ops.ad_ops import Rule, custom_jvp_call_p, custom_vjp_call_p
from ..tracing import Tracer, current_builder, known_value, trace_flat
from ..tree_util import PyTreeDef, tree_flatten, tree_unflatten
from ..interpret import eval_graph
from .util import select_outputs, tangent_aval

# Set while grad / vjp / jvp trace a function: a custom_vjp function then traces its fwd
# rule only, as JAX does (the function itself need not run at all).
DIFFERENTIATING: ContextVar[bool] = ContextVar("DIFFERENTIATING", default=False)

__all__ = ["custom_jvp", "custom_vjp"]


class _Custom:
    """What both decorators share: argument handling and tracing."""

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()):
        if not callable(fun):
            raise TracerTypeError(f"{type(self).__name__}: expected a function, got "
                                  f"{type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(nondiff_argnums))
        self.name = getattr(fun, "__name__", "fun")

    def _args(self, args: tuple, kwargs: dict) -> tuple[list[Any], list[Any]]:
        """(nondiff args, diff args), keyword arguments resolved to positions."""
        if kwargs:
            try:
                args = inspect.signature(self.fun).bind(*args, **kwargs).args
            except TypeError as e:
                raise TracerTypeError(f"{type(self).__name__} {self.name}: {e}") from None
        nondiff = [a for i, a in enumerate(args) if i in self.nondiff_argnums]
        diff = [a for i, a in enumerate(args) if i not in self.nondiff_argnums]
        return nondiff, diff

    def _full(self, nondiff: Sequence[Any], diff: Sequence[Any]) -> list[Any]:
        nd, d = iter(nondiff), iter(diff)
        return [next(nd) if i in self.nondiff_argnums else next(d)
                for i in range(len(nondiff) + len(diff))]

    def _trace_call(self, nondiff: list[Any], diff: list[Any]
                    ) -> tuple[Graph, list[Tracer], PyTreeDef, PyTreeDef]:
        """The function's graph, the values it closed over, the args' and outputs' trees."""
        leaves, tree = tree_flatten(tuple(diff))
        out_trees: list[PyTreeDef] = []

        def flat(*xs: Any) -> list[Any]:
            out, out_tree = tree_flatten(self.fun(*self._full(nondiff, tree_unflatten(tree, xs))))
            out_trees.append(out_tree)
            return out

        # values the enclosing trace knows (grad outside jit) reach the function, so its
        # Python control flow works as in JAX; the graph then holds for those values only
        graph, consts = trace_flat(flat, [aval_of_value(x) for x in leaves], self.name,
                                   [known_value(x) for x in leaves])
        return graph, consts, tree, out_trees[0]

    def _error(self, msg: str) -> TracerTypeError:
        return TracerTypeError(f"{type(self).__name__} {self.name}: {msg}")

    def _conform(self, x: Any, aval: ShapedArray, what: str) -> Any:
        """`x` as a value of `aval`: a weak scalar is cast; anything else must match."""
        got = aval_of_value(x)
        if got.shape != aval.shape:
            raise self._error(f"{what} has shape {got}, expected {aval}")
        if got.dtype != aval.dtype:
            if not (dtypes.is_python_scalar(x) or isinstance(x, Tracer) and x.weak_type):
                raise self._error(f"{what} has dtype {got}, expected {aval}")
            return convert_element_type(x, aval.dtype)
        return x

    def _flat(self, tree: Any, expected: PyTreeDef, avals: Sequence[ShapedArray],
              what: str) -> list[Any]:
        leaves, got = tree_flatten(tree)
        if got != expected:
            raise self._error(f"{what} has structure {got}, expected {expected}")
        return [self._conform(x, a, f"{what} leaf {i}")
                for i, (x, a) in enumerate(zip(leaves, avals, strict=True))]


class custom_jvp(_Custom):
    """A function with a user-defined JVP: `f.defjvp(jvp)` with
    `jvp(primals, tangents) -> (primal_out, tangent_out)` (tuples of the arguments;
    the tangent output must be linear in the tangents).

    >>> f = custom_jvp(lambda x: ops.sin(x))
    >>> f.defjvp(lambda p, t: (f(p[0]), t[0] * 2.0)); grad(f)(0.3)  # 2.0
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None

    def defjvp(self, jvp: Callable[..., Any]) -> Callable[..., Any]:
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable[..., Any] | None) -> None:
        """One rule per argument, `jvp_i(tangent_i, primal_out, *primals)` (None: no
        dependence); the tangent out is their sum (JAX's `defjvps`)."""
        def jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
            if len(jvps) != len(primals):
                raise self._error(f"defjvps got {len(jvps)} rules for {len(primals)} "
                                  f"arguments")
            out = self(*primals)
            total = None
            for rule, t in zip(jvps, tangents, strict=True):
                if rule is not None:
                    term = rule(t, out, *primals)
                    total = term if total is None else total + term
            return out, out * 0 if total is None else total
        self.defjvp(jvp)

    @names_user_line
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.jvp is None:
            raise self._error("no JVP rule: define one with @f.defjvp")
        nondiff, diff = self._args(args, kwargs)
        if current_builder() is None:  # concrete values: nothing can differentiate them
            return self.fun(*self._full(nondiff, diff))
        call, consts, tree, out_tree = self._trace_call(nondiff, diff)
        leaves = tree_flatten(tuple(diff))[0]
        rule = functools.partial(self._run_jvp, nondiff, tree, out_tree, call.out_avals)
        rule = _at_known_values(rule, leaves, call.in_avals[:len(leaves)])
        outs = custom_jvp_call_p.bind(*leaves, *consts, call=call,
                                      jvp=Rule(rule, f"jvp_of_{self.name}"),
                                      num_consts=len(consts))
        return tree_unflatten(out_tree, outs)

    def _run_jvp(self, nondiff: list[Any], tree: PyTreeDef, out_tree: PyTreeDef,
                 out_avals: Sequence[ShapedArray], args: list[Any], tangents: list[Any]
                 ) -> tuple[list[Any], list[Any]]:
        res = self.jvp(*nondiff, tree_unflatten(tree, args), tree_unflatten(tree, tangents))
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise self._error(f"the jvp rule must return (primal_out, tangent_out), got "
                              f"{type(res).__name__}")
        outs = self._flat(res[0], out_tree, out_avals, "the jvp rule's primal output")
        touts = self._flat(res[1], out_tree, [tangent_aval(a) for a in out_avals],
                           "the jvp rule's tangent output")
        return outs, touts


def _at_known_values(rule: Callable[..., Any], leaves: Sequence[Any],
                     avals: Sequence[ShapedArray]) -> Callable[..., Any]:
    """`rule(primals, tangents)` for a call whose primal values the enclosing trace
    knows (grad outside jit): when the JVP first needs it, it is traced with those
    values, so its Python control flow reads concrete primals as in JAX (and so does
    the function it calls, to any order), then replayed."""
    values = [known_value(x) for x in leaves]
    if any(v is None for v in values):
        return rule
    traced: list[tuple[Graph | None, int]] = []

    def replay(primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
        if not traced:
            traced.append(_trace_rule(rule, avals, values))
        graph, num_out = traced[0]
        if graph is None:  # it closes over outer traced values: run it here
            return rule(primals, tangents)
        outs = eval_graph(graph, [*primals, *tangents])
        return outs[:num_out], outs[num_out:]
    return replay


def _trace_rule(rule: Callable[..., Any], avals: Sequence[ShapedArray],
                values: Sequence[Any]) -> tuple[Graph | None, int]:
    n = len(avals)
    sizes: list[int] = []

    def flat(*xs: Any) -> list[Any]:
        outs, touts = rule(list(xs[:n]), list(xs[n:]))
        sizes.append(len(outs))
        return [*outs, *touts]

    graph, captured = trace_flat(flat, [*avals, *map(tangent_aval, avals)], "jvp_rule",
                                 [*values, *[None] * n])
    return (None, 0) if captured else (graph, sizes[0])


class custom_vjp(_Custom):
    """A function with a user-defined VJP: `f.defvjp(fwd, bwd)` with
    `fwd(*args) -> (out, residuals)` and `bwd(residuals, ct) -> tuple` of one
    cotangent per (differentiable) argument (None for a zero cotangent).

    >>> f = custom_vjp(lambda x: ops.sin(x))
    >>> f.defvjp(lambda x: (f(x), x), lambda x, g: (g * 2.0,)); grad(f)(0.3)  # 2.0
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()):
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        self.fwd, self.bwd = fwd, bwd

    @names_user_line
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None or self.bwd is None:
            raise self._error("no VJP rule: define one with f.defvjp(fwd, bwd)")
        nondiff, diff = self._args(args, kwargs)
        if current_builder() is None:
            return self.fun(*self._full(nondiff, diff))
        res_trees: list[PyTreeDef] = []
        if DIFFERENTIATING.get():
            call, consts, tree, out_tree, fwd = self._trace_fwd(nondiff, diff, res_trees)
        else:
            call, consts, tree, out_tree = self._trace_call(nondiff, diff)
            fwd = Rule(functools.partial(self._run_fwd, nondiff, tree, out_tree, call.out_avals,
                                         res_trees), f"fwd_of_{self.name}")
        bwd = Rule(functools.partial(self._run_bwd, nondiff, diff, out_tree, res_trees),
                   f"bwd_of_{self.name}")
        outs = custom_vjp_call_p.bind(*tree_flatten(tuple(diff))[0], *consts, call=call,
                                      fwd=fwd, bwd=bwd, num_consts=len(consts))
        return tree_unflatten(out_tree, outs)

    def _trace_fwd(self, nondiff: list[Any], diff: list[Any], res_trees: list[PyTreeDef]
                   ) -> tuple[Graph, list[Tracer], PyTreeDef, PyTreeDef, Rule]:
        """Under a differentiation, as JAX: `fwd` is traced once (the function itself
        never runs); the call's graph is fwd's without the residuals, and the fwd rule
        replays fwd's graph."""
        leaves, tree = tree_flatten(tuple(diff))
        out_trees: list[PyTreeDef] = []
        num_out: list[int] = []

        def flat(*xs: Any) -> list[Any]:
            outs, res = self._check_fwd(self.fwd(*self._full(nondiff, tree_unflatten(tree, xs))))
            out_leaves, out_tree = tree_flatten(outs)
            res_leaves, res_tree = tree_flatten(res)
            out_trees.append(out_tree)
            res_trees.append(res_tree)
            num_out.append(len(out_leaves))
            return out_leaves + res_leaves

        token = DIFFERENTIATING.set(False)  # fwd's own call of the function runs it
        try:
            graph, consts = trace_flat(flat, [aval_of_value(x) for x in leaves],
                                       f"fwd_of_{self.name}", [known_value(x) for x in leaves])
        finally:
            DIFFERENTIATING.reset(token)
        m = num_out[0]
        call = select_outputs(graph, [i < m for i in range(len(graph.outputs))])

        def replay(args: list[Any], consts: list[Any]) -> tuple[list[Any], list[Any]]:
            outs = eval_graph(graph, [*args, *consts])
            return outs[:m], outs[m:]

        return call, consts, tree, out_trees[0], Rule(replay, f"fwd_of_{self.name}")

    def _check_fwd(self, res: Any) -> tuple[Any, Any]:
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise self._error(f"fwd must return (output, residuals), got {type(res).__name__}")
        return res[0], res[1]

    def _run_fwd(self, nondiff: list[Any], tree: PyTreeDef, out_tree: PyTreeDef,
                 out_avals: Sequence[ShapedArray], res_trees: list[PyTreeDef],
                 args: list[Any], consts: list[Any]) -> tuple[list[Any], list[Any]]:
        out, res = self._check_fwd(self.fwd(*self._full(nondiff, tree_unflatten(tree, args))))
        outs = self._flat(out, out_tree, out_avals, "fwd's output")
        res_leaves, res_tree = tree_flatten(res)
        res_trees.append(res_tree)
        return outs, res_leaves

    def _run_bwd(self, nondiff: list[Any], diff: list[Any], out_tree: PyTreeDef,
                 res_trees: list[PyTreeDef], res: list[Any], cts: list[Any]) -> list[Any]:
        got = self.bwd(*nondiff, tree_unflatten(res_trees[-1], res),
                       tree_unflatten(out_tree, cts))
        if not isinstance(got, (tuple, list)) or len(got) != len(diff):
            size = f" of length {len(got)}" if isinstance(got, (tuple, list)) else ""
            raise self._error(f"bwd must return a tuple of {len(diff)} cotangents (one per "
                              f"argument), got {type(got).__name__}{size}")
        flat = []
        for i, (arg, ct) in enumerate(zip(diff, got, strict=True)):
            arg_leaves, arg_tree = tree_flatten(arg)
            avals = [tangent_aval(aval_of_value(x)) for x in arg_leaves]
            if ct is None:
                flat += [zeros_like_aval(a) for a in avals]
            else:
                flat += self._flat(ct, arg_tree, avals, f"bwd's cotangent {i}")
        return flat

"""User-facing differentiation: `jvp`, `linearize`, `vjp`, `grad`, `value_and_grad`,
`jacfwd`, `jacrev`, `hessian` (JAX's names and calling conventions).

Each traces the function into a graph (its arguments' leaves become the graph's
inputs, closed-over traced values trailing ones with zero tangents), rewrites the
graph (`jvp_graph`, `linearize_graph`, `vjp_graph`) and evaluates the result with
`eval_graph`: eagerly outside a trace, inlined into it under `jit` or another
transformation. That is why they compose in any order.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..core import Graph, ShapedArray, aval_of
from ..errors import TracerTypeError, TracerValueError, names_user_line
from ..ops import convert_element_type, reshape, slice as slice_, transpose
from ..ops.ad import zeros_like_aval
from ..tracing import Tracer, known_value, trace_flat
from ..tree_util import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from .api_vmap import vmap
from .custom import DIFFERENTIATING
from .jvp import jvp_graph
from .util import differentiable, eval_fresh, tangent_aval
from .vjp import linearize_graph, vjp_graph

__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian",
]


# ------------------------------------------------------------------------- tracing
@dataclass
class _Traced:
    graph: Graph
    leaves: list[Any]          # the graph's inputs: argument leaves, then captured values
    num_args: int              # how many of `leaves` are argument leaves
    out_tree: PyTreeDef
    num_out: int               # leaves of the differentiated output (aux leaves follow)
    aux_tree: PyTreeDef | None


def _leaf_aval(x: Any, where: str, what: str) -> ShapedArray:
    if isinstance(x, Tracer):
        return x.aval
    try:
        return aval_of(x)
    except (TypeError, ValueError):
        raise TracerTypeError(f"{what}: {where} is a {type(x).__name__}, not an array") from None


def _trace(what: str, fun: Callable[..., Any], args: tuple, kwargs: dict,
           has_aux: bool = False) -> _Traced:
    named, in_tree = tree_flatten_with_path((args, kwargs))
    leaves = [x for _, x in named]
    avals = [_leaf_aval(x, _describe(fun, p), what) for p, x in named]
    trees: list[Any] = []

    def flat(*xs: Any) -> list[Any]:
        a, k = tree_unflatten(in_tree, xs)
        out = fun(*a, **k)
        if has_aux:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise TracerTypeError(f"{what}(has_aux=True): the function must return a "
                                      f"pair (output, aux), got {type(out).__name__}")
            out, aux = out
            aux_leaves, aux_tree = tree_flatten(aux)
        else:
            aux_leaves, aux_tree = [], None
        out_leaves, out_tree = tree_flatten(out)
        trees.append((out_tree, len(out_leaves), aux_tree))
        return out_leaves + aux_leaves

    token = DIFFERENTIATING.set(True)
    try:
        graph, captured = trace_flat(flat, avals, f"{what}_{getattr(fun, '__name__', 'fun')}",
                                     [known_value(x) for x in leaves])
    finally:
        DIFFERENTIATING.reset(token)
    out_tree, num_out, aux_tree = trees[0]
    return _Traced(graph, leaves + captured, len(leaves), out_tree, num_out, aux_tree)


def _describe(fun: Callable[..., Any], path: tuple) -> str:
    """`argument 0 (x)` / `argument 1 (params)['w']` / `keyword argument 'k'`."""
    if len(path) < 2:
        return "argument"
    if path[0].idx == 1:
        return f"keyword argument {path[1].key!r}{keystr(path[2:])}"
    i = path[1].idx
    names = _param_names(fun)
    name = f" ({names[i]})" if i < len(names) else ""
    return f"argument {i}{name}{keystr(path[2:])}"


def _param_names(fun: Callable[..., Any]) -> list[str]:
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds]


def _as_dtype(x: Any, aval: ShapedArray) -> Any:
    """A tangent/cotangent leaf with exactly the aval's dtype (Python scalars cast)."""
    if isinstance(x, Tracer):
        return x if x.dtype == aval.dtype else convert_element_type(x, aval.dtype)
    return np.asarray(x, dtype=aval.dtype)


def _zeros(aval: ShapedArray) -> Any:
    return zeros_like_aval(tangent_aval(aval))


def _check_like(what: str, kind: str, values: Sequence[Any], avals: Sequence[ShapedArray],
                tree: PyTreeDef, expected: PyTreeDef) -> list[Any]:
    """`values` (leaves of `tree`) must match `avals` (leaves of `expected`)."""
    if tree != expected:
        raise TracerTypeError(f"{what}: {kind} must have the structure {expected}, got {tree}")
    out = []
    for i, (x, a) in enumerate(zip(values, avals, strict=True)):
        got = _leaf_aval(x, f"{kind} leaf {i}", what)
        if got.shape != a.shape or (differentiable(a) and got.dtype != a.dtype
                                    and not got.weak_type):
            raise TracerTypeError(f"{what}: {kind} leaf {i} is {got} but the primal is {a}; "
                                  f"shapes and dtypes must match")
        out.append(_as_dtype(x, a))
    return out


# ---------------------------------------------------------------------- forward mode
@names_user_line
def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
        ) -> tuple[Any, Any]:
    """`(fun(*primals), J·tangents)`: forward-mode derivative along `tangents`.

    `primals` and `tangents` are tuples (or lists) of the same pytree structure and
    leaf shapes/dtypes. Tangents of integer or bool primals are ignored.

    >>> jvp(ops.sin, (0.5,), (1.0,))  # (sin(0.5), cos(0.5))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TracerTypeError(f"jvp: primals and tangents must be tuples or lists, got "
                              f"{type(primals).__name__} and {type(tangents).__name__}")
    tr = _trace("jvp", fun, tuple(primals), {})
    p_tree = tree_flatten((tuple(primals), {}))[1]
    t_leaves, t_tree = tree_flatten((tuple(tangents), {}))
    in_avals = tr.graph.in_avals[:tr.num_args]
    t_leaves = _check_like("jvp", "tangents", t_leaves, in_avals, t_tree, p_tree)
    nonzero = [differentiable(a) for a in in_avals] + [False] * (len(tr.leaves) - tr.num_args)
    graph, out_nz = jvp_graph(tr.graph, nonzero)
    outs = eval_fresh(graph, tr.leaves + [t for t, nz in zip(t_leaves, nonzero) if nz])
    n = len(tr.graph.outputs)
    touts = iter(outs[n:])
    tangents_out = [next(touts) if nz else _zeros(a)
                    for nz, a in zip(out_nz, tr.graph.out_avals, strict=True)]
    return tree_unflatten(tr.out_tree, outs[:n]), tree_unflatten(tr.out_tree, tangents_out)


@names_user_line
def linearize(fun: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """`(fun(*primals), jvp_fn)` with `jvp_fn(*tangents)` the linear map J·tangents,
    evaluated from residuals saved now (the primal computation is not repeated).

    >>> y, f_jvp = linearize(ops.sin, 0.5); f_jvp(1.0)  # cos(0.5)
    """
    tr = _trace("linearize", fun, primals, {})
    in_avals = tr.graph.in_avals[:tr.num_args]
    nonzero = [differentiable(a) for a in in_avals] + [False] * (len(tr.leaves) - tr.num_args)
    lin = linearize_graph(tr.graph, nonzero)
    n = len(tr.graph.outputs)
    res_outs = eval_fresh(lin.primal, tr.leaves)
    residuals = res_outs[n:]
    p_tree = tree_flatten((tuple(primals), {}))[1]

    @names_user_line
    def jvp_fn(*tangents: Any) -> Any:
        t_leaves, t_tree = tree_flatten((tangents, {}))
        t_leaves = _check_like("linearize", "tangents", t_leaves, in_avals, t_tree, p_tree)
        touts = iter(eval_fresh(lin.linear, residuals + [t for t, nz in zip(t_leaves, nonzero)
                                                         if nz]))
        outs = [next(touts) if nz else _zeros(a)
                for nz, a in zip(lin.out_nonzero, tr.graph.out_avals, strict=True)]
        return tree_unflatten(tr.out_tree, outs)

    return tree_unflatten(tr.out_tree, res_outs[:n]), jvp_fn


# ---------------------------------------------------------------------- reverse mode
@names_user_line
def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """`(fun(*primals), vjp_fn[, aux])`; `vjp_fn(ct)` returns a tuple with one
    cotangent per primal (zeros for integer and bool leaves).

    >>> y, f_vjp = vjp(ops.sin, 0.5); f_vjp(1.0)  # (cos(0.5),)
    """
    tr = _trace("vjp", fun, primals, {}, has_aux)
    in_avals = tr.graph.in_avals[:tr.num_args]
    nonzero = [differentiable(a) for a in in_avals] + [False] * (len(tr.leaves) - tr.num_args)
    outs, bwd = _forward(tr, nonzero)
    out_avals = tr.graph.out_avals[:tr.num_out]
    p_tree = tree_flatten(tuple(primals))[1]

    @names_user_line
    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        ct_leaves, ct_tree = tree_flatten(ct)
        ct_leaves = _check_like("vjp", "cotangent", ct_leaves, out_avals, ct_tree, tr.out_tree)
        cts = iter(bwd(ct_leaves))
        leaves = [next(cts) if nz else _zeros(a)
                  for nz, a in zip(nonzero[:tr.num_args], in_avals, strict=True)]
        return tuple(tree_unflatten(p_tree, leaves))

    out = tree_unflatten(tr.out_tree, outs[:tr.num_out])
    if has_aux:
        return out, vjp_fn, tree_unflatten(tr.aux_tree, outs[tr.num_out:])
    return out, vjp_fn


def _forward(tr: _Traced, nonzero: list[bool]) -> tuple[list[Any], Callable[[list], list]]:
    """Run the forward graph now; return its outputs and the backward pass."""
    n = len(tr.graph.outputs)
    mask = [i < tr.num_out for i in range(n)]
    v = vjp_graph(tr.graph, nonzero, mask)
    res_outs = eval_fresh(v.forward, tr.leaves)
    residuals = res_outs[n:]

    def backward(ct_leaves: list[Any]) -> list[Any]:
        cts = [c for c, nz in zip(ct_leaves, v.out_nonzero[:len(ct_leaves)], strict=True)
               if nz]
        return eval_fresh(v.backward, residuals + cts)

    return res_outs[:n], backward


def value_and_grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False, holomorphic: bool = False) -> Callable[..., Any]:
    """`fun` returning `(value, gradient)` (`((value, aux), gradient)` with `has_aux`).

    The gradient is with respect to the positional argument(s) `argnums` (an int, or
    a tuple giving a tuple of gradients). `fun` must return a real float scalar;
    the differentiated arguments must be float arrays (pytrees allowed).

    With `holomorphic=True` the inputs and the output are complex and the result is
    the complex derivative (JAX's convention).

    >>> value_and_grad(lambda x: (x * x).sum())(np.arange(3.0))  # (5., [0., 2., 4.])
    """
    nums, single = _argnums("value_and_grad", argnums)
    return _make_grad("value_and_grad", fun, nums, single, has_aux, with_value=True,
                      holomorphic=holomorphic)


def grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0,
         has_aux: bool = False, holomorphic: bool = False) -> Callable[..., Any]:
    """The gradient of a real scalar function with respect to `argnums` (with
    `holomorphic=True`: the complex derivative of a complex function).

    >>> grad(lambda x: ops.sin(x) * 2.0)(0.0)  # 2.0
    """
    nums, single = _argnums("grad", argnums)
    return _make_grad("grad", fun, nums, single, has_aux, with_value=False,
                      holomorphic=holomorphic)


def _argnums(what: str, argnums: Any) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, (tuple, list)) or not nums or any(
            isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in nums):
        raise TracerTypeError(f"{what}: argnums must be an int or a non-empty tuple of "
                              f"ints, got {argnums!r}")
    return tuple(int(i) for i in nums), single


def _make_grad(what: str, fun: Callable[..., Any], nums: tuple[int, ...], single: bool,
               has_aux: bool, with_value: bool, holomorphic: bool = False
               ) -> Callable[..., Any]:
    if not callable(fun):
        raise TracerTypeError(f"{what}: expected a function, got {type(fun).__name__}")

    @functools.wraps(fun)
    @names_user_line
    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        value, grads, aux = _value_and_grad(what, fun, nums, args, kwargs, has_aux,
                                            holomorphic)
        g = grads[0] if single else tuple(grads)
        value = (value, aux) if has_aux else value
        return (value, g) if with_value else ((g, aux) if has_aux else g)

    return grad_fun


def _value_and_grad(what: str, fun: Callable[..., Any], nums: tuple[int, ...], args: tuple,
                    kwargs: dict, has_aux: bool, holomorphic: bool = False
                    ) -> tuple[Any, list[Any], Any]:
    name = getattr(fun, "__name__", "fun")
    for i in nums:
        if not -len(args) <= i < len(args):
            raise TracerValueError(f"{what}({name}): argnums {i} is out of range for "
                                   f"{len(args)} positional arguments")
    nums = tuple(i % len(args) for i in nums)
    _check_inputs(what, fun, args, nums, holomorphic)
    # Only the differentiated arguments are traced; the others (and keyword arguments)
    # reach `fun` as the caller's Python values, as in JAX (usable as shapes, configs).
    f, dyn = _partial(fun, nums, args, kwargs)
    tr = _trace(what, functools.wraps(fun)(f), dyn, {}, has_aux)
    counts = [len(tree_flatten(a)[0]) for a in dyn]
    nonzero = [True] * sum(counts) + [False] * (len(tr.leaves) - sum(counts))
    _check_scalar_output(what, name, tr, holomorphic)
    outs, bwd = _forward(tr, nonzero)
    out_aval = tr.graph.out_avals[0]
    leaves = bwd([np.ones((), out_aval.dtype)])[:sum(counts)]
    grads = []
    for k, arg in enumerate(dyn):
        start = sum(counts[:k])
        grads.append(tree_unflatten(tree_flatten(arg)[1], leaves[start:start + counts[k]]))
    aux = tree_unflatten(tr.aux_tree, outs[tr.num_out:]) if has_aux else None
    return tree_unflatten(tr.out_tree, outs[:tr.num_out]), grads, aux


def _check_inputs(what: str, fun: Callable[..., Any], args: tuple, nums: tuple[int, ...],
                  holomorphic: bool = False) -> None:
    """Integer and bool inputs cannot be differentiated (and holomorphic ones must be
    complex): TypeError naming them."""
    named, _ = tree_flatten_with_path((args, {}))
    for path, x in named:
        if path[1].idx not in nums:
            continue
        aval = _leaf_aval(x, _describe(fun, path), what)
        if holomorphic and aval.dtype.kind != "c":
            raise TracerTypeError(f"{what}(holomorphic=True): {_describe(fun, path)} has "
                                  f"dtype {aval.dtype}; holomorphic differentiation needs "
                                  f"complex inputs (cast it to complex)")
        if not differentiable(aval):
            raise TracerTypeError(
                f"{what}: {_describe(fun, path)} has dtype {aval.dtype} ({aval}); only "
                f"floating-point (or complex) inputs can be differentiated. Cast it to a "
                f"float, or leave it out of argnums")


def _check_scalar_output(what: str, name: str, tr: _Traced, holomorphic: bool = False) -> None:
    avals = tr.graph.out_avals[:tr.num_out]
    leaf = len(avals) == 1 and tr.out_tree == tree_flatten(0.0)[1]
    kind_ok = (lambda dt: dt.kind == "c") if holomorphic else dtypes.is_float
    if not leaf or avals[0].shape != () or not kind_ok(avals[0].dtype):
        got = ", ".join(map(str, avals)) if avals else "no arrays"
        raise TracerTypeError(
            f"{what}({name}): the function must return a "
            f"{'complex' if holomorphic else 'real float'} scalar (shape ()), but "
            f"it returned {got} with structure {tr.out_tree}. Use jacrev or vjp for "
            f"non-scalar outputs")


# -------------------------------------------------------------------- jacobians
def jacfwd(fun: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The Jacobian by forward mode (one `jvp` per input element, vectorized with vmap).

    Each output leaf of shape `out` gets, per differentiated input leaf of shape
    `in`, an array of shape `out + in` (nested as outputs-then-inputs, like JAX).

    >>> jacfwd(lambda x: x * x)(np.arange(3.0))  # diag([0., 2., 4.])
    """
    nums, single = _argnums("jacfwd", argnums)

    @functools.wraps(fun)
    @names_user_line
    def jacobian(*args: Any, **kwargs: Any) -> Any:
        f, dyn = _partial(fun, nums, args, kwargs)
        _check_inputs("jacfwd", fun, args, nums)
        leaves, in_tree = tree_flatten(dyn)
        basis = _basis([_leaf_aval(x, "input", "jacfwd") for x in leaves])

        def push(*ts: Any) -> Any:
            return jvp(f, dyn, tree_unflatten(in_tree, ts))[1]

        jac_leaves, out_tree = tree_flatten(vmap(push)(*basis))
        out_shapes = [j.shape[1:] for j in jac_leaves]
        return _assemble(jac_leaves, out_shapes, out_tree, leaves, in_tree, single,
                         rows_are_inputs=True)

    return jacobian


def jacrev(fun: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The Jacobian by reverse mode (one `vjp` per output element, vectorized with vmap).

    >>> jacrev(lambda x: x * x)(np.arange(3.0))  # diag([0., 2., 4.])
    """
    nums, single = _argnums("jacrev", argnums)

    @functools.wraps(fun)
    @names_user_line
    def jacobian(*args: Any, **kwargs: Any) -> Any:
        f, dyn = _partial(fun, nums, args, kwargs)
        _check_inputs("jacrev", fun, args, nums)
        leaves, in_tree = tree_flatten(dyn)
        out, pullback = vjp(f, *dyn)
        out_leaves, out_tree = tree_flatten(out)
        out_avals = [_leaf_aval(y, "output", "jacrev") for y in out_leaves]
        if not all(map(differentiable, out_avals)):  # (paths only to name the culprit)
            path, a = next((p, a) for (p, _), a in zip(tree_flatten_with_path(out)[0],
                                                       out_avals, strict=True)
                           if not differentiable(a))
            raise TracerTypeError(
                f"jacrev: output{keystr(path)} is {a}; jacrev needs float or complex "
                f"outputs (use jacfwd, or cast the output to a float)")
        basis = _basis(out_avals)
        cts = vmap(lambda *c: pullback(tree_unflatten(out_tree, c)))(*basis)
        out_shapes = [a.shape for a in out_avals]
        return _assemble(tree_flatten(cts)[0], out_shapes, out_tree, leaves, in_tree, single,
                         rows_are_inputs=False)

    return jacobian


def hessian(fun: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """`jacfwd(jacrev(fun, argnums), argnums)`: the matrix of second derivatives."""
    return jacfwd(jacrev(fun, argnums), argnums)


def _partial(fun: Callable[..., Any], nums: tuple[int, ...], args: tuple,
             kwargs: dict) -> tuple[Callable[..., Any], tuple]:
    """`fun` as a function of the `argnums` arguments only, and their values."""
    for i in nums:
        if not -len(args) <= i < len(args):
            raise TracerValueError(f"argnums {i} is out of range for {len(args)} arguments")
    nums = tuple(i % len(args) for i in nums)

    def f(*dyn: Any) -> Any:
        full = list(args)
        for i, x in zip(nums, dyn, strict=True):
            full[i] = x
        return fun(*full, **kwargs)

    return f, tuple(args[i] for i in nums)


def _basis(avals: Sequence[ShapedArray]) -> list[np.ndarray]:
    """The standard basis of the flattened leaves, one (n, *shape) block per leaf."""
    n = sum(a.size for a in avals)
    dtype = np.result_type(*[a.dtype for a in avals]) if avals else np.float64
    eye = np.eye(n, dtype=dtype)
    blocks, start = [], 0
    for a in avals:
        blocks.append(eye[:, start:start + a.size].reshape((n,) + a.shape).astype(a.dtype))
        start += a.size
    return blocks


def _assemble(rows: list[Any], out_shapes: list[tuple[int, ...]], out_tree: PyTreeDef,
              in_leaves: list[Any], in_tree: PyTreeDef, single: bool,
              rows_are_inputs: bool) -> Any:
    """Cut the stacked derivatives into `out shape + in shape` blocks, nested as outputs
    then inputs (the argnums tuple, or the single argument's tree)."""
    in_shapes = [_leaf_aval(x, "input", "jacobian").shape for x in in_leaves]
    major, minor = (in_shapes, out_shapes) if rows_are_inputs else (out_shapes, in_shapes)
    offsets = np.cumsum([0] + [int(np.prod(s)) for s in major])
    per_out = []
    for j, oshape in enumerate(out_shapes):
        blocks = []
        for i, ishape in enumerate(in_shapes):
            k = i if rows_are_inputs else j
            m = j if rows_are_inputs else i
            block = rows[m]
            lo, hi = int(offsets[k]), int(offsets[k + 1])
            block = slice_(block, (lo,) + (0,) * (block.ndim - 1), (hi,) + block.shape[1:])
            block = reshape(block, major[k] + minor[m])
            if rows_are_inputs:  # (in, out) -> (out, in)
                r = len(ishape)
                block = transpose(block, tuple(range(r, block.ndim)) + tuple(range(r)))
            blocks.append(block)
        inner = tree_unflatten(in_tree, blocks)
        per_out.append(inner[0] if single else inner)
    return tree_unflatten(out_tree, per_out)

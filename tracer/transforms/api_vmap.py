"""`vmap`: the user-facing wrapper around `vmap_graph`.

`vmap(f)(*args)` flattens the arguments, reads each leaf's batch axis from the
`in_axes` prefix, traces `f` on one element's abstract values (with `axis_name`
bound, so collectives know its size), batches the graph and evaluates it with
`eval_graph`: eagerly outside a trace, inlined inside `jit` or an outer `vmap`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from ..core import ShapedArray, aval_of
from ..errors import TracerTypeError, TracerValueError, names_user_line
from ..ops.collectives import bind_axis
from ..tracing import Tracer, trace_flat
from ..tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from .batching import vmap_graph
from .util import eval_fresh

__all__ = ["vmap"]


def vmap(fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0,
         axis_name: Hashable = None, axis_size: int | None = None) -> Callable[..., Any]:
    """Vectorize `fun` over an axis of its arguments (JAX's `vmap`).

    `in_axes` is an int, None, or a pytree prefix of the positional arguments
    (a top-level list counts as a tuple); keyword arguments are mapped over axis 0.
    `out_axes` is the same for the outputs. Negative axes count from the end.
    `axis_size` is needed when no argument is mapped. Collectives in `fun` with
    `axis_name=axis_name` work across the mapped axis.

    >>> vmap(lambda x, y: x * y, in_axes=(0, None))(np.arange(3.0), 2.0)  # [0., 2., 4.]
    """
    if not callable(fun):
        raise TracerTypeError(f"vmap: expected a function, got {type(fun).__name__}")
    in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    _check_axes_tree("in_axes", in_axes)
    _check_axes_tree("out_axes", out_axes)
    try:
        hash(axis_name)
    except TypeError:
        raise TracerTypeError(f"vmap: axis_name must be hashable, got {axis_name!r}") from None
    if axis_size is not None and (isinstance(axis_size, bool) or
                                  not isinstance(axis_size, (int, np.integer)) or axis_size < 0):
        raise TracerTypeError(f"vmap: axis_size must be a non-negative int, got {axis_size!r}")

    @functools.wraps(fun)
    @names_user_line
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        return _vmap_call(fun, in_axes, out_axes, axis_name, axis_size, args, kwargs)

    return vmapped


def _vmap_call(fun: Callable[..., Any], in_axes: Any, out_axes: Any, axis_name: Hashable,
               axis_size: int | None, args: tuple, kwargs: dict) -> Any:
    name = getattr(fun, "__name__", "fun")
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
        raise TracerValueError(
            f"vmap({name}): in_axes must be an int, None, or a tuple with one entry per "
            f"positional argument, but got len(in_axes)={len(in_axes)} for {len(args)} "
            f"arguments")
    named, tree = tree_flatten_with_path((args, kwargs))
    paths = [_arg_name(path) for path, _ in named]
    leaves = [leaf for _, leaf in named]
    all_dims = broadcast_prefix(in_axes, args, "in_axes", name) + \
        [0] * len(tree_flatten(kwargs)[0])
    # Leaves with in_axes None reach `fun` as the caller's values, unmapped and concrete
    # (a config object, a Python int used as a shape), as in JAX.
    mapped = [d is not None for d in all_dims]
    m_leaves = [x for x, m in zip(leaves, mapped, strict=True) if m]
    m_paths = [p for p, m in zip(paths, mapped, strict=True) if m]
    avals = [_leaf_aval(x) for x in m_leaves]
    dims = [_check_dim(d, a, p, name) for d, a, p in
            zip([d for d in all_dims if d is not None], avals, m_paths, strict=True)]
    size = _axis_size(dims, avals, m_paths, axis_size, name)
    unbatched = [a.update(shape=a.shape[:d] + a.shape[d + 1:]) for a, d in zip(avals, dims,
                                                                                strict=True)]
    out_trees: list[Any] = []

    def flat(*xs: Any) -> list[Any]:
        it = iter(xs)
        a, k = tree_unflatten(tree, [next(it) if m else x for x, m in zip(leaves, mapped,
                                                                            strict=True)])
        out_leaves, out_tree = tree_flatten(fun(*a, **k))
        out_trees.append(out_tree)
        return out_leaves

    with bind_axis(axis_name, size):
        graph, captured = trace_flat(flat, unbatched, name=f"vmap_{name}")
    out_tree = out_trees[0]
    flat_out = broadcast_prefix(out_axes, tree_unflatten(out_tree, [0] * out_tree.num_leaves),
                                "out_axes", name)
    batched, _ = vmap_graph(graph, dims + [None] * len(captured), size, axis_name,
                            out_axes=flat_out)
    outs = eval_fresh(batched, m_leaves + captured)
    return tree_unflatten(out_tree, [_as_result(x, a) for x, a in
                                     zip(outs, batched.out_avals, strict=True)])


def broadcast_prefix(prefix: Any, tree: Any, what: str, name: str) -> list[Any]:
    """One axis per leaf of `tree`, from `prefix`, a pytree prefix of `tree` whose
    leaves are ints or None (a None or int stands for a whole subtree)."""
    if prefix is None or isinstance(prefix, (int, np.integer)):
        return [prefix] * len(tree_flatten(tree)[0])
    p_children, p_def = _one_level(prefix)
    t_children, t_def = _one_level(tree)
    if p_def != t_def:
        raise TracerValueError(
            f"vmap({name}): {what} must be a tree prefix of the corresponding value: got "
            f"{what}={prefix!r} for a value of structure {tree_flatten(tree)[1]!r}")
    return [axis for p, t in zip(p_children, t_children, strict=True)
            for axis in broadcast_prefix(p, t, what, name)]


def _one_level(tree: Any) -> tuple[list[Any], Any]:
    """The children of `tree`'s root and the root's structure (children as leaves)."""
    return tree_flatten(tree, is_leaf=lambda x: x is not tree)


def _check_axes_tree(what: str, axes: Any) -> None:
    for leaf in tree_flatten(axes)[0]:
        if isinstance(leaf, (bool, np.bool_)) or not isinstance(leaf, (int, np.integer)):
            raise TracerTypeError(f"vmap: {what} must be an int, None, or a (nested) tuple, "
                                  f"list or dict of them, got {axes!r}")


def _leaf_aval(x: Any) -> ShapedArray:
    if isinstance(x, Tracer):
        return x.aval
    try:
        return aval_of(x)
    except (TypeError, ValueError):
        raise TracerTypeError(f"vmap: argument {x!r:.60} of type {type(x).__name__} is not "
                              f"an array") from None


def _check_dim(d: int | None, aval: ShapedArray, path: str, name: str) -> int | None:
    if d is None:
        return None
    if not -aval.ndim <= d < aval.ndim:
        raise TracerValueError(
            f"vmap({name}): in_axes {d} for {path} of shape {aval} is out of range: mapping "
            f"axis {d} needs rank at least {d + 1 if d >= 0 else -d}, but its rank is "
            f"{aval.ndim}")
    return int(d) % aval.ndim


def _axis_size(dims: Sequence[int | None], avals: Sequence[ShapedArray],
               paths: Sequence[str], axis_size: int | None, name: str) -> int:
    mapped = [(p, a.shape[d], d, a) for d, a, p in zip(dims, avals, paths, strict=True)
              if d is not None]
    if not mapped:
        if axis_size is None:
            raise TracerValueError(f"vmap({name}): no argument is mapped (every in_axes is "
                                   f"None), so axis_size must be given")
        return int(axis_size)
    sizes = {s for _, s, _, _ in mapped} | ({int(axis_size)} if axis_size is not None else set())
    if len(sizes) > 1:
        lines = [f"{p} has size {s} (axis {d} of {a})" for p, s, d, a in mapped]
        given = [f"axis_size={axis_size}"] if axis_size is not None else []
        raise TracerValueError(f"vmap({name}): inconsistent sizes for the mapped axes "
                               f"({', '.join(map(str, sorted(sizes)))}): "
                               f"{'; '.join(given + lines)}")
    return sizes.pop()


def _arg_name(path: tuple) -> str:
    """`((SequenceKey(0), SequenceKey(1)), ...)` -> "args[1]"; kwargs by key."""
    head = "args" if path[0].idx == 0 else "kwargs"
    return head + keystr(path[1:])


def _as_result(x: Any, aval: ShapedArray) -> Any:
    """Eager outputs as ndarrays (an input passed through may be a Python scalar)."""
    return x if isinstance(x, Tracer) else np.asarray(x, dtype=aval.dtype)

"""Collectives (XLA's AllReduce, AllGather, ReduceScatter, AllToAll, CollectivePermute,
CrossReplicaSum, ReplicaId) and the axis environment of `vmap`.

Outside `vmap` a collective acts across the replicas of the job: the processes of
an MPI run (`tracer.distributed`, plugged in through `replicas.py`). Alone, a
process is one replica and every collective is the identity the seeds give for
one replica (`replica_id` is 0, a `collective_permute` without the pair (0, 0)
gives zeros). Inside
`vmap(..., axis_name=n)` the mapped axis plays the replicas: `all_reduce(x,
axis_name=n)` reduces across the batch and every element gets the result. The
batching rules (`control_batch_rules.py`) do that; here the wrappers look up the
size of a named axis, which `tracer.transforms` binds while it traces the mapped
function (`bind_axis`), so an unknown name fails at the call.

The axis environment lives here, below `tracer.transforms`, because batching
rules need it too: `current_frame()` is the vmap rewrite in progress (its axis
name and size, and how to batch a sub-graph), set by `batching_frame`.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterator, Sequence

import numpy as np

from .. import dtypes
from ..core import Graph, ShapedArray
from ..errors import ParamError, ShapeError, TracerIndexError, TracerTypeError, \
    TracerValueError
from ..tracing import trace_flat
from .common import check_arity, operand_aval, static_int, wrapper_error
from .elementwise import add
from .registry import define_op
from .replicas import is_process_axis, replica_count, replica_impl
from .shape import broadcast_in_dim, transpose

__all__ = ["all_reduce", "cross_replica_sum", "all_gather", "reduce_scatter", "all_to_all",
           "collective_permute", "replica_id"]

Groups = tuple[tuple[int, ...], ...] | None


# ------------------------------------------------------------------ axis environment
@dataclass(frozen=True)
class AxisFrame:
    """The vmap rewrite in progress: its axis and how to batch a sub-graph.

    `batch_graph(graph, in_dims, force)` batches `graph` over this axis and returns
    `(graph, out_dims)`; outputs with `force[i]` come out batched at dim 0.
    """

    name: Hashable
    size: int
    batch_graph: Callable[[Graph, Sequence[int | None], Sequence[bool]],
                          tuple[Graph, list[int | None]]]


_bound_axes: ContextVar[tuple[tuple[Hashable, int], ...]] = ContextVar(
    "tracer_bound_axes", default=())
_frame: ContextVar[AxisFrame | None] = ContextVar("tracer_axis_frame", default=None)


@contextmanager
def bind_axis(name: Hashable, size: int) -> Iterator[None]:
    """Make axis `name` (of `size`) known to collectives traced inside the block."""
    if name is None:
        yield
        return
    token = _bound_axes.set(_bound_axes.get() + ((name, size),))
    try:
        yield
    finally:
        _bound_axes.reset(token)


@contextmanager
def batching_frame(frame: AxisFrame) -> Iterator[None]:
    token = _frame.set(frame)
    try:
        yield
    finally:
        _frame.reset(token)


def current_frame() -> AxisFrame | None:
    return _frame.get()


def bound_axis_size(op: str, name: Hashable) -> int:
    """The size of the innermost bound axis `name` (1 for None: a single replica)."""
    if name is None:
        return 1
    for bound, size in reversed(_bound_axes.get()):
        if bound == name:
            return size
    known = [n for n, _ in _bound_axes.get()]
    raise wrapper_error(TracerValueError, op, f"unbound axis name {name!r}: use it inside "
                        f"vmap(..., axis_name={name!r}) (bound axis names: {known or 'none'})")


def names_axis(params: dict[str, Any], name: Hashable) -> bool:
    """Whether an eqn with `params` is a collective over axis `name`."""
    return name is not None and params.get("axis_name", None) == name


def move_batch_dim(x: Any, src: int | None, dst: int, size: int) -> Any:
    """`x` with its batch dim moved from `src` to `dst`; unbatched (`src` None) `x` is
    broadcast to have one, of `size`."""
    shape = tuple(np.shape(x))
    if src is None:
        out_shape = shape[:dst] + (size,) + shape[dst:]
        kept = tuple(i for i in range(len(out_shape)) if i != dst)
        return broadcast_in_dim(x, out_shape, kept)
    if src == dst:
        return x
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    return transpose(x, perm)


# ------------------------------------------------------------------ wrapper helpers
def scalar_computation(op: str, fun: Any, dtype: np.dtype) -> Graph:
    """The binary scalar computation `fun` as a closed Graph over `dtype` scalars."""
    if isinstance(fun, Graph):
        return fun
    if not callable(fun):
        raise wrapper_error(TracerTypeError, op, f"computation must be a function of two "
                            f"scalars, got {fun!r}")
    check_arity(op, "the computation", fun, 2)
    scalar = ShapedArray((), dtype)
    graph, captured = trace_flat(lambda a, b: [fun(a, b)], [scalar, scalar],
                                 name=f"{op}_computation")
    if captured:
        raise wrapper_error(TracerTypeError, op, "the computation must be closed: it uses "
                            "traced values of an enclosing function")
    return graph


def _check_computation(graph: Graph, x: ShapedArray) -> None:
    scalar = ShapedArray((), x.dtype)
    if [a.strip_weak() for a in graph.in_avals] != [scalar, scalar] or \
            [a.strip_weak() for a in graph.out_avals] != [scalar]:
        raise TracerTypeError(f"computation must map two {scalar} scalars to one, got "
                              f"({', '.join(map(str, graph.in_avals))}) -> "
                              f"({', '.join(map(str, graph.out_avals))})")


def _groups(op: str, groups: Any, axis_size: int) -> Groups:
    """Canonical replica groups: None for one group of every replica, else a tuple of
    equal-sized tuples that partition 0..axis_size-1."""
    if groups is None:
        return None
    try:
        canon = tuple(tuple(static_int(op, "replica_groups", r) for r in g) for g in groups)
    except TypeError:
        raise wrapper_error(ParamError, op, f"replica_groups must be a sequence of sequences "
                            f"of replica ids, got {groups!r}") from None
    if not canon:
        return None
    ids = sorted(r for g in canon for r in g)
    if ids != list(range(axis_size)) or len({len(g) for g in canon}) != 1:
        raise wrapper_error(ParamError, op, f"replica_groups {[list(g) for g in canon]} "
                            f"must split the {axis_size} replicas 0..{axis_size - 1} into "
                            f"groups of one size")
    return canon


def group_size(groups: Groups, axis_size: int) -> int:
    return axis_size if groups is None else len(groups[0])


def _count(op: str, name: str, given: Any, expected: int) -> int:
    if given is not None and static_int(op, name, given) != expected:
        raise wrapper_error(ParamError, op, f"{name}={given} but the replica group size is "
                            f"{expected}")
    return expected


def _axis(op: str, axis_name: Any) -> tuple[Hashable, int]:
    try:
        hash(axis_name)
    except TypeError:
        raise wrapper_error(TracerTypeError, op, f"axis_name must be hashable, got "
                            f"{axis_name!r}") from None
    if axis_name is None or is_process_axis(axis_name):
        return None, replica_count()
    return axis_name, bound_axis_size(op, axis_name)


def _dim(x: ShapedArray, d: int, what: str) -> None:
    if not 0 <= d < x.ndim:
        raise TracerIndexError(f"{what} {d} out of range for {x} (valid: 0..{x.ndim - 1})")


def _divisible(x: ShapedArray, d: int, count: int, what: str) -> None:
    _dim(x, d, what)
    if x.shape[d] % count:
        raise ShapeError(f"size {x.shape[d]} of {what} {d} of {x} is not divisible by the "
                         f"replica group size {count}")


# ---------------------------------------------------------------------- all_reduce
def _all_reduce_shape(x: ShapedArray, *, to_apply: Graph, replica_groups: Groups,
                      axis_name: Hashable, axis_size: int) -> ShapedArray:
    _check_computation(to_apply, x)
    return x.strip_weak()


@replica_impl("all_reduce")
def _all_reduce_impl(x: np.ndarray, *, to_apply: Graph, replica_groups: Groups,
                     axis_name: Hashable, axis_size: int) -> np.ndarray:
    return np.array(x)  # reducing over one replica


def all_reduce(x: Any, computation: Any = add, replica_groups: Any = None,
               axis_name: Hashable = None) -> Any:
    """Reduce `x` across the replicas of each group; every member gets the result.

    Seed rule (AllReduce): output shape = input shape; `replica_groups` partitions
    the replicas (None: one group); a tuple operand reduces each element. Replicas
    are the mapped axis `axis_name` of `vmap`, else one replica (the identity).

    >>> vmap(lambda v: all_reduce(v, axis_name="i"), axis_name="i")(np.array([1., 3.]))
    array([4., 4.])
    """
    if isinstance(x, (tuple, list)):
        return [all_reduce(e, computation, replica_groups, axis_name) for e in x]
    name, size = _axis("all_reduce", axis_name)
    graph = scalar_computation("all_reduce", computation, operand_aval(x).dtype)
    return all_reduce_p.bind(x, to_apply=graph, axis_name=name, axis_size=size,
                             replica_groups=_groups("all_reduce", replica_groups, size))


all_reduce_p = define_op(
    "all_reduce", shape=_all_reduce_shape, impl=_all_reduce_impl, hlo_name="all-reduce",
    family="collective", effectful=True, doc=inspect.cleandoc(all_reduce.__doc__ or ""))


def cross_replica_sum(x: Any, replica_groups: Any = None, axis_name: Hashable = None) -> Any:
    """Sum `x` across the replicas of each group: `all_reduce` with `add`.

    Seed rule (CrossReplicaSum): AllReduce with a summation computation; with two
    replicas holding (1.0, 2.5) and (3.0, 5.1), both get (4.0, 7.6).
    """
    return all_reduce(x, add, replica_groups, axis_name)


# ---------------------------------------------------------------------- all_gather
def _all_gather_shape(x: ShapedArray, *, all_gather_dim: int, shard_count: int,
                      replica_groups: Groups, axis_name: Hashable,
                      axis_size: int) -> ShapedArray:
    _dim(x, all_gather_dim, "all_gather_dim")
    shape = list(x.shape)
    shape[all_gather_dim] *= shard_count
    return ShapedArray(shape, x.dtype)


@replica_impl("all_gather")
def _all_gather_impl(x: np.ndarray, *, all_gather_dim: int, shard_count: int,
                     replica_groups: Groups, axis_name: Hashable,
                     axis_size: int) -> np.ndarray:
    return np.array(x)


def all_gather(x: Any, all_gather_dim: int = 0, axis_name: Hashable = None,
               shard_count: int | None = None, replica_groups: Any = None) -> Any:
    """Concatenate `x` from every replica of a group along `all_gather_dim`.

    Seed rule (AllGather): output shape is the input's with `all_gather_dim`
    multiplied by `shard_count` (the group size); data in group order.

    >>> vmap(lambda v: all_gather(v, 0, axis_name="i"), axis_name="i")(np.ones((2, 1)))
    array([[1., 1.], [1., 1.]])
    """
    name, size = _axis("all_gather", axis_name)
    groups = _groups("all_gather", replica_groups, size)
    return all_gather_p.bind(
        x, all_gather_dim=static_int("all_gather", "all_gather_dim", all_gather_dim),
        shard_count=_count("all_gather", "shard_count", shard_count, group_size(groups, size)),
        replica_groups=groups, axis_name=name, axis_size=size)


all_gather_p = define_op(
    "all_gather", shape=_all_gather_shape, impl=_all_gather_impl, hlo_name="all-gather",
    family="collective", effectful=True, linear=True,
    doc=inspect.cleandoc(all_gather.__doc__ or ""))


# ------------------------------------------------------------------ reduce_scatter
def _reduce_scatter_shape(x: ShapedArray, *, to_apply: Graph, scatter_dimension: int,
                          shard_count: int, replica_groups: Groups, axis_name: Hashable,
                          axis_size: int) -> ShapedArray:
    _check_computation(to_apply, x)
    _divisible(x, scatter_dimension, shard_count, "scatter_dimension")
    shape = list(x.shape)
    shape[scatter_dimension] //= shard_count
    return ShapedArray(shape, x.dtype)


@replica_impl("reduce_scatter")
def _reduce_scatter_impl(x: np.ndarray, *, to_apply: Graph, scatter_dimension: int,
                         shard_count: int, replica_groups: Groups, axis_name: Hashable,
                         axis_size: int) -> np.ndarray:
    return np.array(x)


def reduce_scatter(x: Any, computation: Any = add, scatter_dimension: int = 0,
                   shard_count: int | None = None, replica_groups: Any = None,
                   axis_name: Hashable = None) -> Any:
    """All-reduce `x`, then replica i of a group keeps block i along `scatter_dimension`.

    Seed rule (ReduceScatter): output shape is the input's with `scatter_dimension`
    divided by `shard_count` (the group size, which must divide it).

    >>> vmap(lambda v: reduce_scatter(v, axis_name="i"), axis_name="i")(
    ...     np.array([[1., 2.25], [3., 5.25]]))  # -> [[4.], [7.5]]
    """
    name, size = _axis("reduce_scatter", axis_name)
    groups = _groups("reduce_scatter", replica_groups, size)
    graph = scalar_computation("reduce_scatter", computation, operand_aval(x).dtype)
    return reduce_scatter_p.bind(
        x, to_apply=graph,
        scatter_dimension=static_int("reduce_scatter", "scatter_dimension", scatter_dimension),
        shard_count=_count("reduce_scatter", "shard_count", shard_count,
                           group_size(groups, size)),
        replica_groups=groups, axis_name=name, axis_size=size)


reduce_scatter_p = define_op(
    "reduce_scatter", shape=_reduce_scatter_shape, impl=_reduce_scatter_impl,
    hlo_name="reduce-scatter", family="collective", effectful=True,
    doc=inspect.cleandoc(reduce_scatter.__doc__ or ""))


# ---------------------------------------------------------------------- all_to_all
def _all_to_all_shape(x: ShapedArray, *, split_dimension: int, concat_dimension: int,
                      split_count: int, replica_groups: Groups, axis_name: Hashable,
                      axis_size: int) -> ShapedArray:
    _divisible(x, split_dimension, split_count, "split_dimension")
    _dim(x, concat_dimension, "concat_dimension")
    shape = list(x.shape)
    shape[split_dimension] //= split_count
    shape[concat_dimension] *= split_count
    return ShapedArray(shape, x.dtype)


@replica_impl("all_to_all")
def _all_to_all_impl(x: np.ndarray, *, split_dimension: int, concat_dimension: int,
                     split_count: int, replica_groups: Groups, axis_name: Hashable,
                     axis_size: int) -> np.ndarray:
    return np.array(x)


def all_to_all(x: Any, split_dimension: int, concat_dimension: int,
               split_count: int | None = None, replica_groups: Any = None,
               axis_name: Hashable = None) -> Any:
    """Split `x` into blocks along `split_dimension`, send block j to replica j, and
    concatenate the received blocks along `concat_dimension` in group order.

    Seed rule (AllToAll): `split_count` (the group size) divides the split
    dimension; output: split dim divided by it, concat dim multiplied by it.

    >>> all_to_all(np.ones((4, 16), np.float32), 1, 0)  # one replica: unchanged
    """
    name, size = _axis("all_to_all", axis_name)
    groups = _groups("all_to_all", replica_groups, size)
    return all_to_all_p.bind(
        x, split_dimension=static_int("all_to_all", "split_dimension", split_dimension),
        concat_dimension=static_int("all_to_all", "concat_dimension", concat_dimension),
        split_count=_count("all_to_all", "split_count", split_count, group_size(groups, size)),
        replica_groups=groups, axis_name=name, axis_size=size)


all_to_all_p = define_op(
    "all_to_all", shape=_all_to_all_shape, impl=_all_to_all_impl, hlo_name="all-to-all",
    family="collective", effectful=True, linear=True,
    doc=inspect.cleandoc(all_to_all.__doc__ or ""))


# -------------------------------------------------------------- collective_permute
Pairs = tuple[tuple[int, int], ...]


def _collective_permute_shape(x: ShapedArray, *, source_target_pairs: Pairs,
                              axis_name: Hashable, axis_size: int) -> ShapedArray:
    return x.strip_weak()


@replica_impl("collective_permute")
def _collective_permute_impl(x: np.ndarray, *, source_target_pairs: Pairs,
                             axis_name: Hashable, axis_size: int) -> np.ndarray:
    return np.array(x) if (0, 0) in source_target_pairs else np.zeros_like(x)


def _pairs(pairs: Any, axis_size: int) -> Pairs:
    op = "collective_permute"
    try:
        canon = tuple((static_int(op, "source", s), static_int(op, "target", t))
                      for s, t in pairs)
    except (TypeError, ValueError):
        raise wrapper_error(ParamError, op, f"source_target_pairs must be a sequence of "
                            f"(source, target) pairs, got {pairs!r}") from None
    ids = [i for p in canon for i in p]
    if any(not 0 <= i < axis_size for i in ids):
        raise wrapper_error(ParamError, op, f"source_target_pairs {list(canon)} name "
                            f"replicas outside 0..{axis_size - 1}")
    for k, what in ((0, "source"), (1, "target")):
        if len({p[k] for p in canon}) != len(canon):
            raise wrapper_error(ParamError, op, f"source_target_pairs {list(canon)} share "
                                f"a {what}")
    return canon


def collective_permute(x: Any, source_target_pairs: Sequence[tuple[int, int]],
                       axis_name: Hashable = None) -> Any:
    """Send `x` from each source replica to its target replica.

    Seed rule (CollectivePermute): no two pairs share a source or a target; a
    replica that no pair targets gets zeros of the input's shape.

    >>> vmap(lambda v: collective_permute(v, [(0, 1)], axis_name="i"), axis_name="i")(
    ...     np.array([5., 7.]))  # -> [0., 5.]
    """
    name, size = _axis("collective_permute", axis_name)
    return collective_permute_p.bind(x, source_target_pairs=_pairs(source_target_pairs, size),
                                     axis_name=name, axis_size=size)


collective_permute_p = define_op(
    "collective_permute", shape=_collective_permute_shape, impl=_collective_permute_impl,
    hlo_name="collective-permute", family="collective", effectful=True, linear=True,
    doc=inspect.cleandoc(collective_permute.__doc__ or ""))


# ---------------------------------------------------------------------- replica_id
def _replica_id_shape(*, axis_name: Hashable, axis_size: int) -> ShapedArray:
    return ShapedArray((), dtypes.uint32)


@replica_impl("replica_id")
def _replica_id_impl(*, axis_name: Hashable, axis_size: int) -> np.ndarray:
    return np.zeros((), np.uint32)


def replica_id(axis_name: Hashable = None) -> Any:
    """This replica's id, a u32 scalar in [0, N): the index along `axis_name` in vmap.

    Seed rule (ReplicaId): unique per replica although every replica runs the same
    program; 0 with one replica.

    >>> vmap(lambda _: replica_id("i"), axis_name="i")(np.zeros(3))  # -> [0, 1, 2] (u32)
    """
    name, size = _axis("replica_id", axis_name)
    return replica_id_p.bind(axis_name=name, axis_size=size)


replica_id_p = define_op(
    "replica_id", shape=_replica_id_shape, impl=_replica_id_impl, hlo_name="replica-id",
    family="collective", effectful=True, differentiable=False,
    doc=inspect.cleandoc(replica_id.__doc__ or ""))

"""tracer.distributed in one process: one replica, pmap as vmap, collectives that the
passes keep in place and in order, replica groups that must partition the replicas."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
from tracer import ops
from tracer.core import ShapedArray
from tracer.passes.pipeline import optimize
from tracer.tracing import trace_flat


def test_lone_process_is_one_replica():
    tr.distributed.initialize()  # not launched by mpiexec: stays one replica
    assert (tr.process_count(), tr.process_index()) == (1, 0)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(tr.jit(lambda v: ops.all_reduce(v))(x), x)
    assert tr.jit(lambda: ops.replica_id())() == 0


def test_cross_replica_sum_is_a_summing_all_reduce():
    x = np.array([1.0, 2.5], np.float32)
    text = str(tr.make_hlo(lambda v: ops.cross_replica_sum(v))(x))
    assert "all-reduce" in text and "add" in text
    np.testing.assert_array_equal(
        tr.vmap(lambda v: ops.cross_replica_sum(v, axis_name="r"), axis_name="r")(
            np.array([[1.0, 2.5], [3.0, 5.1]], np.float32)),
        np.array([[4.0, 7.6], [4.0, 7.6]], np.float32))


@pytest.mark.parametrize("groups", [[[0], [0]], [[1]], [[0, 1]], [[]]])
def test_replica_groups_must_partition_the_replicas(groups):
    with pytest.raises(ValueError, match="all_reduce.*replica_groups") as info:
        tr.jit(lambda v: ops.all_reduce(v, replica_groups=groups))(np.ones(2, np.float32))
    assert isinstance(info.value, tr.TracerError)


def test_pmap_alone_is_vmap_with_the_axis_name():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)

    def f(v):
        return v / ops.all_reduce(v, axis_name="i") + ops.replica_id("i").astype(np.float32)
    np.testing.assert_array_equal(tr.pmap(f, axis_name="i")(x),
                                  tr.vmap(f, axis_name="i")(x))


def test_passes_keep_every_collective_in_program_order():
    """Equal, unused and foldable collectives all survive optimize, in their order:
    replicas that dropped or merged them differently would deadlock."""
    def f(x):
        a = ops.all_reduce(x)
        b = ops.all_reduce(x)            # the same as a: never merged (CSE)
        ops.all_gather(x, 0)             # unused: never removed (DCE)
        ops.all_reduce(np.float32(2.0))  # constant operand: never folded
        return a + b, ops.reduce_scatter(x, ops.add, 0)
    graph, _ = trace_flat(f, [ShapedArray((4,), np.float32)])
    names = [e.op.name for e in optimize(graph).eqns if e.op.family == "collective"]
    assert names == ["all_reduce", "all_reduce", "all_gather", "all_reduce", "reduce_scatter"]

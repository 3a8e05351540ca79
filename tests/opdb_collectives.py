"""Op-table cases for the collectives (XLA's cross-replica operations).

Outside vmap tracer runs one replica, so the plain cases are the seeds' rules for
a replica count of 1; the golden seed examples (two replicas) run inside
`vmap(..., axis_name="r")`, where the mapped axis plays the replicas.
"""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops
from tracer.ops import collectives as coll
from tracer.transforms.api_vmap import vmap

X = np.array([1.0, 2.5], np.float32)
M = np.arange(8, dtype=np.float64).reshape(2, 4)


def _replicas(fn):
    """fn run on each row of its argument as one replica of axis "r"."""
    return lambda x: vmap(fn, axis_name="r")(x)


CASES: list[OpCase] = [
    # One replica: every collective is the identity (permute without (0, 0): zeros).
    OpCase("all_reduce:one_replica", lambda x: coll.all_reduce(x), (X,), expected=X),
    OpCase("all_reduce:max_tuple", lambda x, i: coll.all_reduce((x, i), ops.max),
           (X, np.int32(-3)), expected=[X, np.int32(-3)]),
    OpCase("all_reduce:groups_of_one", lambda x: coll.all_reduce(x, replica_groups=[[0]]),
           (M,), expected=M),
    OpCase("all_gather:one_replica", lambda x: coll.all_gather(x, 1), (M,), expected=M),
    OpCase("reduce_scatter:one_replica", lambda x: coll.reduce_scatter(x, ops.add, 1), (M,),
           expected=M),
    OpCase("all_to_all:one_replica", lambda x: coll.all_to_all(x, 1, 0), (M,), expected=M),
    OpCase("collective_permute:to_itself", lambda x: coll.collective_permute(x, [(0, 0)]),
           (X,), expected=X),
    OpCase("collective_permute:untargeted_zeros", lambda x: coll.collective_permute(x, []),
           (M,), expected=np.zeros_like(M)),
    OpCase("replica_id:one_replica", lambda: coll.replica_id(), (),
           expected=np.uint32(0)),
    # Golden: the seeds' two-replica examples, replicas = rows.
    OpCase("all_reduce:seed_sum", _replicas(lambda v: coll.all_reduce(v, axis_name="r")),
           (np.array([[1.0, 2.5], [3.0, 5.25]]),), expected=np.array([[4.0, 7.75], [4.0, 7.75]]),
           ops=("reduce",)),
    OpCase("all_gather:seed_dim0", _replicas(lambda v: coll.all_gather(v, 0, axis_name="r")),
           (np.array([[1.0, 2.5], [3.0, 5.25]]),), expected=np.array([[1.0, 2.5, 3.0, 5.25]] * 2),
           ops=("reshape",)),
    OpCase("reduce_scatter:seed_sum",
           _replicas(lambda v: coll.reduce_scatter(v, axis_name="r")),
           (np.array([[1.0, 2.25], [3.0, 5.25]]),), expected=np.array([[4.0], [7.5]]),
           ops=("reduce",)),
    OpCase("all_to_all:seed_shapes",
           lambda x: ops.get_dimension_size(_replicas(
               lambda v: coll.all_to_all(v, 1, 0, axis_name="r"))(x), 1),
           (np.ones((4, 4, 16), np.float32),), expected=np.int32(16),
           ops=("get_dimension_size",)),
    OpCase("replica_id:in_vmap", _replicas(lambda v: coll.replica_id("r")),
           (np.zeros(3),), expected=np.array([0, 1, 2], np.uint32), ops=("iota",)),
]

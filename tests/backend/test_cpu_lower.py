"""The cpu backend's pre-planning lowering: batched inner products become loops."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.cpu_lower import lower_batched_inner_products
from tracer.core import ShapedArray, typecheck
from tracer.interpret import run_graph
from tracer.tracing import trace_flat


@pytest.mark.parametrize("dtype,preferred", [(np.float32, None), (np.float64, None),
                                             (np.int8, np.int32), (np.int64, None)])
def test_batched_inner_products_lower_to_mul_and_reduce(dtype, preferred):
    rng = np.random.default_rng(0)
    lhs = rng.integers(-5, 5, (3, 4, 6)).astype(dtype)   # batch 0, contract (1, 2)
    rhs = rng.integers(-5, 5, (6, 3, 4)).astype(dtype)   # batch 1, contract (2, 0)
    dnums = (((1, 2), (2, 0)), ((0,), (1,)))
    graph, _ = trace_flat(
        lambda a, b: [ops.dot_general(a, b, dnums, preferred_element_type=preferred)],
        [ShapedArray(lhs.shape, dtype), ShapedArray(rhs.shape, dtype)])
    lowered = typecheck(lower_batched_inner_products(graph))
    assert [e.op.name for e in lowered.eqns if e.op.name == "dot_general"] == []
    assert lowered.out_avals == graph.out_avals
    np.testing.assert_array_equal(run_graph(lowered, [lhs, rhs], check=True)[0],
                                  run_graph(graph, [lhs, rhs])[0])


def test_matmuls_keep_blas():
    graph, _ = trace_flat(lambda a, b: [a @ b], [ShapedArray((2, 3), np.float32),
                                                ShapedArray((3, 4), np.float32)])
    assert lower_batched_inner_products(graph) is graph


def test_vmapped_cosine_similarity_on_cpu_matches_numpy():
    def cos(u, v):
        return tnp.dot(u, v) / (tnp.sqrt(tnp.dot(u, u)) * tnp.sqrt(tnp.dot(v, v)))

    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((50, 8)).astype(np.float32) for _ in range(2))
    got = tr.jit(tr.vmap(cos), backend="cpu")(a, b)
    want = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    np.testing.assert_allclose(got, want, rtol=1e-5)

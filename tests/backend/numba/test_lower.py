"""The cpu backend's pre-planning lowering: batched inner products become loops."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.numba.lower import lower_batched_inner_products
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


def test_vmapped_cosine_sums_with_fused_multiply_adds():
    """The three dot products of a row share one loop; each adds its product with one
    fused multiply-add (one rounding), in float64 equal to NumPy up to summation order."""
    def cos(u, v):
        return tnp.dot(u, v) / (tnp.sqrt(tnp.dot(u, u)) * tnp.sqrt(tnp.dot(v, v)))

    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((5000, 64)) for _ in range(2))
    f = tr.jit(tr.vmap(cos))
    source = f.lower(a, b).compile().source
    assert source.count("fma_reassoc(") == 3 and "np.dot" not in source
    want = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    np.testing.assert_allclose(f(a, b), want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("batch", [False, True])
def test_a_transposed_product_is_the_swapped_product(batch):
    """transpose(dot_general(a, b)) swapping the free dims (reverse mode's weight
    gradient) runs as dot_general(b, a): BLAS writes the wanted layout, no copy."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 40, 33) if batch else (40, 33))
    b = rng.standard_normal((4, 40, 50) if batch else (40, 50))
    dnums = (((1,), (1,)), ((0,), (0,))) if batch else (((0,), (0,)), ((), ()))
    perm = (0, 2, 1) if batch else (1, 0)
    f = tr.jit(lambda a, b: ops.transpose(ops.dot_general(a, b, dnums), perm))
    source = f.lower(a, b).compile().source
    assert "loop nest" not in source  # no transposing copy
    want = np.einsum("zki,zkj->zji" if batch else "ki,kj->ji", a, b)
    np.testing.assert_allclose(f(a, b), want, rtol=1e-12)
    g = tr.jit(lambda a, b: (ops.transpose(ops.dot_general(a, b, dnums), perm),
                             ops.dot_general(a, b, dnums)))  # the product is read twice
    np.testing.assert_allclose(g(a, b)[0], want, rtol=1e-12)


def test_mlp_weight_gradients_are_written_by_blas():
    rng = np.random.default_rng(4)
    w, x = rng.standard_normal((30, 40)), rng.standard_normal((50, 30))
    loss = lambda w, x: tnp.sum(tnp.tanh(x @ w) ** 2)  # noqa: E731
    f = tr.jit(tr.grad(loss))
    source = f.lower(w, x).compile().source
    assert "power" not in source and "select" not in source  # x ** 2's JVP is 2 * x
    assert source.count("np.dot") == 2
    h = np.tanh(x @ w)
    np.testing.assert_allclose(f(w, x), x.T @ (2 * h * (1 - h * h)), rtol=1e-10, atol=1e-12)

"""The cpu backend's pre-planning lowering: batched inner products become loops,
transposed products are written by BLAS in the wanted order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.numba.lower import lower, lower_batched_inner_products
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
    assert source.count("fma_reassoc(") == 3 and "blas_matmul" not in source
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
    assert source.count("blas_matmul(") == 2
    h = np.tanh(x @ w)
    np.testing.assert_allclose(f(w, x), x.T @ (2 * h * (1 - h * h)), rtol=1e-10, atol=1e-12)


def _close(got, want, tol=1e-12):
    """Equal up to summation order: tol relative to the largest magnitude."""
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def _matmul_case(draw_shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(s) * 4 for s in draw_shapes)
    if np.dtype(dtype).kind == "c":
        a, b = a + 1j * rng.standard_normal(a.shape), b + 1j * rng.standard_normal(b.shape)
    return a.astype(dtype), b.astype(dtype)


_SIZES = st.sampled_from([1, 7, 33, 40])  # either side of BLAS_MIN_SIZE


@settings(max_examples=14, deadline=None)
@given(stack=st.lists(st.integers(1, 4), min_size=1, max_size=2),
       mkn=st.tuples(_SIZES, _SIZES, _SIZES), matrix_first=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64, np.complex64, np.float16, np.int32]))
@example(stack=[3], mkn=(33, 40, 40), matrix_first=True, dtype=np.float32)
@example(stack=[2, 3], mkn=(40, 33, 40), matrix_first=True, dtype=np.float16)
def test_a_matrix_times_a_stack_of_matrices_matches_numpy(stack, mkn, matrix_first, dtype):
    """NumPy's broadcast matmul of a matrix and a stack of matrices (either side), of
    operands given and operands computed (which their loop nests write in the order
    BLAS reads), on the cpu backend: batch dims first in the result, as matmul (and
    XLA's DotGeneral behind it) defines them; integers exactly, float16 rounded once
    from float32."""
    m, k, n = mkn
    shapes = [(m, k), (*stack, k, n)] if matrix_first else [(*stack, m, k), (k, n)]
    a, b = _matmul_case(shapes, dtype, m * 100 + k * 10 + n)
    got, computed = tr.jit(lambda a, b: (a @ b, (a * 2) @ (b - 1)))(a, b)
    _close_to(computed, (a * 2) @ (b - 1), dtype)
    _close_to(got, a @ b, dtype)


def _close_to(got, want, dtype):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    if np.dtype(dtype).kind == "i":
        np.testing.assert_array_equal(got, want)
    else:
        _close(got, want, {np.float16: 2e-3, np.float64: 1e-12}.get(dtype, 1e-4))


@settings(max_examples=10, deadline=None)
@given(perm=st.permutations(range(4)), batch=st.booleans())
@example(perm=[2, 0, 1, 3], batch=False)  # matmul's order: a stack dim moved first
@example(perm=[0, 2, 1, 3], batch=True)
def test_a_transposed_product_matches_the_reference_for_every_permutation(perm, batch):
    """transpose(dot_general(a * 2, b * 2), perm) for any order of the result's dims
    (batch, lhs free, two rhs free dims) equals the reference (the rhs is written in
    BLAS order by its nest; some transposes fold into the product)."""
    lhs = (3, 34, 33) if batch else (2, 34, 33)  # without batch dims, two lhs free dims
    rhs = (3, 4, 33, 36) if batch else (4, 33, 36)
    dnums = ((((2,), (2,)), ((0,), (0,))) if batch else (((2,), (1,)), ((), ())))
    perm = tuple(perm)
    a, b = _matmul_case([lhs, rhs], np.float64, len(perm))
    f = tr.jit(lambda a, b: ops.transpose(ops.dot_general(a * 2, b * 2, dnums), perm))
    want = np.transpose(run_graph(trace_flat(lambda a, b: [ops.dot_general(a * 2, b * 2,
                                                                           dnums)],
                                             [ShapedArray(lhs, np.float64),
                                              ShapedArray(rhs, np.float64)])[0], [a, b])[0],
                        perm)
    _close(f(a, b), want)


def test_im2col_convolution_in_numpy_code_matches_numpy():
    """The 3x3 'same' convolution of bench_conv written with pad, nine slices, stack,
    reshape and a broadcast matmul, under jit, against NumPy running the same code."""
    from bench.bench_conv import im2col_conv
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 9, 7)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    f = tr.jit(lambda x, w: im2col_conv(tnp, x, w))
    want = im2col_conv(np, x, w)
    np.testing.assert_allclose(f(x, w), want, rtol=1e-5, atol=1e-5)
    conv = np.asarray(ops.conv(x, w, (1, 1), "SAME"))
    np.testing.assert_allclose(want, conv, rtol=1e-4, atol=1e-4)
    source = f.lower(x, w).compile().source
    assert "out0[j" not in source  # the result is written into the output, not copied
    # one GEMM of the filters by the stacked slices, which their loop nest writes in
    # the order BLAS reads (C*9, images, H*W): no copy of the columns, no loop of calls
    assert source.count("blas_matmul(") == 1 and "ascontiguousarray" not in source
    assert "for batch" not in source


def test_an_operand_from_a_loop_nest_is_written_in_blas_order():
    """A product reading reshape(x * 2) (or x * 2) in an order BLAS cannot read gets
    the transpose in front of the reshape: the nest computing x * 2 writes it, the
    product copies nothing; the values are the reference's."""
    def f(w, x):
        cols = (x * 2).reshape(6, 40, 35)        # (stack, contraction, columns)
        return ops.dot_general(w, cols, (((1,), (1,)), ((), ())))

    rng = np.random.default_rng(9)
    w, x = rng.standard_normal((33, 40)), rng.standard_normal((6, 8, 5, 35))
    graph, _ = trace_flat(lambda w, x: [f(w, x)],
                          [ShapedArray(w.shape, np.float64), ShapedArray(x.shape, np.float64)])
    lowered = typecheck(lower(graph))
    [dot] = [e for e in lowered.eqns if e.op.name == "dot_general"]
    assert dot.params["rhs_contracting_dims"] == (0,) and dot.inputs[1].aval.shape == (40, 6, 35)
    _close(run_graph(lowered, [w, x], check=True)[0], run_graph(graph, [w, x])[0])
    jitted = tr.jit(f)
    assert "ascontiguousarray" not in jitted.lower(w, x).compile().source
    _close(jitted(w, x), np.einsum("mk,skn->msn", w, 2 * x.reshape(6, 40, 35)))
    cols = x.reshape(6, 40, 35)  # the nest's value read directly, without a reshape
    direct = tr.jit(lambda w, c: ops.dot_general(w, c * 2, (((1,), (1,)), ((), ()))))
    assert "ascontiguousarray" not in direct.lower(w, cols).compile().source
    _close(direct(w, cols), np.einsum("mk,skn->msn", w, 2 * cols))

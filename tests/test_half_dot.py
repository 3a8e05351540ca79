"""float16 / bfloat16 dot_general on the cpu backend: through BLAS on widened operands,
fused inner-product loops that accumulate in float32, and preferred_element_type.

Oracle: the float32 computation rounded once (what XLA's CPU backend does for 16-bit
floats), bit for bit where every summation order gives the exact sum.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracer as tr
import tracer.numpy as tnp
from tests.half_support import BACKENDS, BF16, F16, F32, HALVES, jit_run, same_bits, ulps
from tracer import ops
from tracer.transforms.api_vmap import vmap


# ------------------------------------------------------------------ dot_general via BLAS

def _operands(data: Any, shapes: list[tuple[int, ...]], dtype: np.dtype,
              integral: bool) -> list[np.ndarray]:
    """Small integers (every sum exact in float32, whatever the order) or floats."""
    elems = st.integers(-8, 8) if integral else st.floats(-4, 4, width=32)
    return [np.array(data.draw(st.lists(elems, min_size=int(np.prod(s)),
                                        max_size=int(np.prod(s)))), F32)
            .reshape(s).astype(dtype) for s in shapes]


# (lhs shape, rhs shape, dimension numbers): plain, lhs stored transposed, batched,
# batch dims not leading, contraction over two dims.
_LAYOUTS = [((4, 5), (5, 3), (((1,), (0,)), ((), ()))),
            ((5, 4), (5, 3), (((0,), (0,)), ((), ()))),
            ((2, 4, 5), (2, 5, 3), (((2,), (1,)), ((0,), (0,)))),
            ((4, 2, 5), (5, 3, 2), (((2,), (0,)), ((1,), (2,)))),
            ((3, 2, 5), (5, 3, 4), (((0, 2), (1, 0)), ((), ())))]


def _scaled(shape: tuple[int, ...], m: int) -> tuple[int, ...]:
    return tuple(d * m for d in shape)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("layout", range(len(_LAYOUTS)))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_half_dot_general_is_float32_rounded_once(dtype, layout, data):
    ls, rs, dims = _LAYOUTS[layout]
    scale = data.draw(st.integers(1, 3))  # sizes come from `dims`: one compile per layout
    ls, rs = _scaled(ls, scale), _scaled(rs, scale)
    integral = data.draw(st.booleans())
    a, b = _operands(data, [ls, rs], dtype, integral)

    def f(x, y):
        return ops.dot_general(x, y, dims)
    got = np.asarray(jit_run(f, "cpu", a, b))
    ref = np.asarray(jit_run(f, "interpreter", a, b))
    want = np.asarray(f(a.astype(F32), b.astype(F32))).astype(dtype)
    if integral:  # every order of summation gives the exact sum: one rounding, bit for bit
        same_bits(got, want)
        same_bits(ref, want)
    else:  # the summation order may move a result across a rounding boundary
        assert ulps(got, want) <= 1 and ulps(ref, want) <= 1


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_half_matmul_calls_blas_on_widened_operands(dtype):
    a = np.ones((64, 48), dtype)
    source = tr.jit(lambda x, y: ops.dot_general(x, y, (((1,), (0,)), ((), ())))) \
        .lower(a, a.T.copy()).compile().source
    widen = "widen_bf16" if dtype == BF16 else "widen_f16"
    assert "blas_matmul(" in source and widen in source and "narrow_" in source
    assert "acc" not in source  # no scalar accumulation loop


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_small_and_batched_inner_product_dots_accumulate_in_float32(dtype):
    rng = np.random.default_rng(0)
    tall = rng.integers(-8, 9, (600, 8)).astype(dtype)
    wide = rng.integers(-8, 9, (8, 70)).astype(dtype)
    f = tr.jit(lambda x, y: tnp.max(x @ y, axis=1))  # products only reduced: fused
    assert "blas_matmul(" not in f.lower(tall, wide).compile().source  # the fused loop nest
    same_bits(f(tall, wide), (tall.astype(F32) @ wide.astype(F32)).astype(dtype).max(1))
    # 256 products of 256 each: exact in float32, not in 16-bit steps.
    u = np.full((6, 256), 3.0, dtype)
    v = rng.integers(1, 64, (6, 256)).astype(dtype)
    dot = vmap(lambda p, q: ops.dot_general(p, q, (((0,), (0,)), ((), ()))))
    want = np.einsum("ij,ij->i", u.astype(F32), v.astype(F32)).astype(dtype)
    for backend in BACKENDS:
        same_bits(jit_run(dot, backend, u, v), want)
        same_bits(jit_run(lambda p, q: tnp.dot(p[0], q[0]), backend, u, v), want[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_half_dot_general_with_preferred_element_type(backend):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(F32) for s in ((40, 33), (33, 35)))
    cases = [(a.astype(BF16), b.astype(BF16), F32), (a.astype(F16), b.astype(F16), F32),
             (a, b, BF16), (a.astype(F16), b.astype(F16), BF16)]
    for x, y, out in cases:
        got = np.asarray(jit_run(lambda p, q: ops.dot_general(
            p, q, (((1,), (0,)), ((), ())), preferred_element_type=out), backend, x, y))
        exact = x.astype(np.float64) @ y.astype(np.float64)
        assert got.dtype == out
        if out == F32:
            np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-5)
        else:
            assert ulps(got, exact.astype(F32).astype(out)) <= 1
# ------------------------------------------------------------------ reduce_precision
# ------------------------------------------------------------------ all_reduce identities

"""Element-wise work after an unrolled reduce_window computed at the pool's stores
(`cpu/emit/epilogue.py`: an average pool's divide never reads the sums back from
memory), against the NumPy reference interpreter: padding, dtypes, NaN and infinity,
epilogues that read other arrays and scalars, several values, and the cases that must
keep the pooled array (it is returned, or read again later)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.backend.cpu.test_backend import _compare
from tests.test_pooling_loops import CPU, _source, _values, geometries
from tracer import ops
from tracer.ops.window import window_shape
from tests.checks import threaded

FUSED = "is computed at its stores"


def _avg(x: Any, window: tuple[int, ...], strides: tuple[int, ...], padding: Any = "VALID"
         ) -> Any:
    total = ops.reduce_window(x, np.zeros((), x.dtype), ops.add, window, strides, padding)
    return ops.div(total, np.full(total.shape, np.prod(window), total.dtype))


def _non_finite(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Quarters in [-2, 2] (their window sums are exact in float16 too, so the order of
    the additions does not show), with NaN, +inf and -inf among them (a window of +inf
    and -inf sums to NaN)."""
    x = (rng.integers(-8, 9, shape) / 4).astype(dtype)
    for value, share in ((np.nan, 0.05), (np.inf, 0.05), (-np.inf, 0.05)):
        x[rng.random(shape) < share] = value
    return x


def test_average_pool_divides_at_its_stores() -> None:
    """NCHW 3x3/2 and NHWC 2x2/2 average pools of float32, float64 and float16 with
    non-finite values give the interpreter's bits, with no loop nest of their own."""
    rng = np.random.default_rng(11)
    xs = [_non_finite(rng, (2, 3, 9, 11), np.float32), _non_finite(rng, (2, 8, 7, 3), np.float64),
          _non_finite(rng, (2, 3, 6, 6), np.float16)]

    def pools(a: Any, b: Any, c: Any) -> list[Any]:
        return [_avg(a, (1, 1, 3, 3), (1, 1, 2, 2)), _avg(b, (1, 2, 2, 1), (1, 2, 2, 1)),
                _avg(c, (1, 1, 3, 3), (1, 1, 1, 1), ((0, 0), (0, 0), (1, 1), (1, 1)))]
    _compare(pools, xs, CPU)
    code = _source(pools, *xs)
    assert code.count(FUSED) == 3 and "loop nest over" not in code


EPILOGUES = {
    "divide by a literal": lambda p, s, v: [ops.div(p, np.full(p.shape, 4, p.dtype))],
    "times a scalar input": lambda p, s, v: [ops.mul(p, ops.broadcast_in_dim(s, p.shape, ()))],
    "plus a row of the leading dim": lambda p, s, v: [
        ops.add(p, ops.broadcast_in_dim(v, p.shape, (0,)))],
    "two values": lambda p, s, v: [ops.abs(p), ops.mul(p, p)],
    "a wider dtype": lambda p, s, v: [ops.convert_element_type(ops.neg(p), np.float64)],
}


@settings(max_examples=8, deadline=None)
@given(geometries(padded=True), st.sampled_from(sorted(EPILOGUES)),
       st.sampled_from([np.float32, np.float64, np.int32, np.float16]),
       st.sampled_from(["add", "max"]), st.integers(0, 2**32 - 1))
def test_epilogues_match_the_interpreter(geometry: Any, epilogue: str, dtype: Any, kind: str,
                                         seed: int) -> None:
    """Any unrolled geometry (padding, negative too), any epilogue the plan puts in one
    nest after the pool; NaNs among the floats."""
    (shape, geo), rng = geometry, np.random.default_rng(seed)
    x = _values(rng, shape, dtype)
    s = np.asarray(3, dtype)
    pooled_shape = window_shape(shape, base_dilation=(1,) * len(shape), **geo)
    v = rng.integers(-3, 4, pooled_shape[0]).astype(dtype)
    init = np.asarray(0 if kind == "add" else -100 if dtype == np.int32 else -np.inf, dtype)

    def pooled(x: Any, s: Any, v: Any) -> list[Any]:
        p = ops.reduce_window(x, init, ops.add if kind == "add" else ops.max, **geo)
        return EPILOGUES[epilogue](p, s, v)
    _compare(pooled, [x, s, v], CPU)
    assert FUSED in _source(pooled, x, s, v)


def test_pooled_values_read_elsewhere_stay_in_memory() -> None:
    """The pooled array returned, read by a later reduction, or read through a transpose
    is written as before; the results still match."""
    x = _non_finite(np.random.default_rng(3), (2, 3, 8, 8), np.float32)

    def returned(x: Any) -> list[Any]:
        p = ops.reduce_window(x, np.float32(0), ops.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return [p, ops.neg(p)]

    def reduced_later(x: Any) -> list[Any]:
        p = ops.reduce_window(x, np.float32(0), ops.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        q = ops.neg(p)
        return [q, ops.reduce(ops.mul(p, q), np.float32(0), ops.add, (2, 3))]

    def transposed(x: Any) -> list[Any]:
        p = ops.reduce_window(x, np.float32(0), ops.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return [ops.add(p, ops.transpose(p, (0, 1, 3, 2)))]
    for fn in (returned, reduced_later, transposed):
        _compare(fn, [x], CPU)
        assert FUSED not in _source(fn, x), fn.__name__


def test_large_pool_epilogue_in_a_parallel_kernel() -> None:
    """A pool large enough for threads: the epilogue's scalar input reaches the kernel."""
    rng = np.random.default_rng(9)
    x, s = _non_finite(rng, (6, 5, 40, 42), np.float32), np.asarray(0.25, np.float32)

    def scaled_pool(x: Any, s: Any) -> list[Any]:
        p = ops.reduce_window(x, np.float32(0), ops.add, (1, 1, 3, 3), (1, 1, 2, 2), "VALID")
        return [ops.mul(p, ops.broadcast_in_dim(s, p.shape, ()))]
    code = _source(scaled_pool, x, s)
    assert ("def parallel_reduce_window" in code) == threaded() and FUSED in code
    _compare(scaled_pool, [x, s], CPU)

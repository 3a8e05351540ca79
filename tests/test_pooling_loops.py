"""The cpu backend's unrolled pooling loops (`emit/pooling.py`: reduce_window of an add,
max or min and select_and_scatter without padding or base dilation) against the NumPy
reference interpreter: random geometries, every dtype family, ties and NaNs (XLA's
first-selected rule and NaN propagation must come out exactly as the reference's)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.backend.cpu.test_backend import _compare
from tracer import ops
from tracer.backend.cpu.backend import NumbaCpuBackend
from tracer.core import aval_of
from tracer.ops.window import window_shape
from tracer.tracing import trace_flat
from tests.checks import threaded

CPU = NumbaCpuBackend()
RUNS = {"add": (ops.add, 0.5), "max": (ops.max, -np.inf), "min": (ops.min, 2.0)}


def _nan_keeping_ge(a: Any, b: Any) -> Any:
    """Keeps a NaN once picked (`ge` alone lets the next candidate replace it)."""
    return ops.bitwise_or(ops.ne(a, a), ops.ge(a, b))


SELECTS = {"ge": ops.ge, "gt": ops.gt, "le": ops.le, "nan_keeping_ge": _nan_keeping_ge}


@st.composite
def geometries(draw: Any, padded: bool, max_rank: int = 4
               ) -> tuple[tuple[int, ...], dict[str, Any]]:
    """A shape and a window geometry without base dilation (padding, negative too, only
    if `padded`), every padded dim at least as long as the window's span."""
    rank = draw(st.integers(1, max_rank))
    ints = lambda lo, hi: tuple(draw(st.integers(lo, hi)) for _ in range(rank))  # noqa: E731
    window, dilation = ints(1, 3), ints(1, 2)
    pads = tuple(zip(ints(-1, 2), ints(-1, 2), strict=True)) if padded else ((0, 0),) * rank
    shape = tuple(max(1, (k - 1) * d + 1 - lo - hi) + draw(st.integers(0, 3))
                  for k, d, (lo, hi) in zip(window, dilation, pads, strict=True))
    return shape, {"window_dimensions": window, "window_strides": ints(1, 3),
                   "padding": pads, "window_dilation": dilation}


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Few distinct values (many ties), NaNs among the floats."""
    x = rng.integers(-2, 3, shape).astype(dtype)
    if x.dtype.kind == "f":
        x[rng.random(shape) < 0.15] = np.nan
    return x


def _source(fn: Any, *args: Any) -> str:
    graph, _ = trace_flat(fn, [aval_of(a) for a in args])
    return CPU.compile(graph).source


@settings(max_examples=6, deadline=None)
@given(st.lists(st.tuples(geometries(padded=True), st.sampled_from(sorted(RUNS))), min_size=4,
                max_size=4),
       st.sampled_from([np.float32, np.float64, np.int32, np.float16]), st.integers(0, 2**32 - 1))
def test_unrolled_add_max_min_match_the_interpreter(cases: Any, dtype: Any, seed: int) -> None:
    """Four windows per compiled module; NaNs propagate through max and min as NumPy's;
    padding folds in the init value once per tap off the operand."""
    rng = np.random.default_rng(seed)
    xs = [_values(rng, shape, dtype) for (shape, _), _ in cases]
    inits = [np.asarray(max(RUNS[name][1], -100) if dtype == np.int32 else RUNS[name][1],
                        dtype) for _, name in cases]

    def pools(*xs: Any) -> list[Any]:
        return [ops.reduce_window(x, init, RUNS[name][0], **geo)
                for x, init, ((_, geo), name) in zip(xs, inits, cases, strict=True)]
    _compare(pools, xs, CPU)


@settings(max_examples=4, deadline=None)
@given(st.lists(st.tuples(geometries(padded=True, max_rank=3), st.sampled_from(sorted(SELECTS))),
                min_size=3, max_size=3),
       st.sampled_from([np.float32, np.float64, np.int32, np.float16]), st.integers(0, 2**32 - 1))
def test_unrolled_select_and_scatter_matches_the_interpreter(cases: Any, dtype: Any,
                                                             seed: int) -> None:
    """Three windows per compiled module. Ties go to the first element in row-major
    order (the select keeps it), a NaN candidate replaces the pick under `ge`;
    overlapping windows add up; padding is never picked (a window on the padding alone
    scatters nothing)."""
    rng = np.random.default_rng(seed)
    args = []
    for (shape, geo), _ in cases:
        source = rng.integers(1, 9, window_shape(shape, base_dilation=(1,) * len(shape), **geo))
        args += [_values(rng, shape, dtype), source.astype(dtype)]

    def scatters(*args: Any) -> list[Any]:
        return [ops.select_and_scatter(x, SELECTS[name], geo["window_dimensions"],
                                       geo["window_strides"], geo["padding"], s, 0, ops.add,
                                       window_dilation=geo["window_dilation"])
                for x, s, ((_, geo), name) in zip(args[::2], args[1::2], cases, strict=True)]
    _compare(scatters, args, CPU)


def test_pooling_layouts_take_the_unrolled_loops() -> None:
    """NCHW and NHWC pooling, a 1-d window along the last dim, a window of one element and
    a 3-d window: each matches the interpreter, and the code is the unrolled loops (no
    window loops, no bounds checks) and stays shape generic."""
    rng = np.random.default_rng(5)
    geos = [((1, 1, 3, 3), (1, 1, 2, 2)), ((1, 3, 3, 1), (1, 2, 2, 1)),
            ((1, 1, 1, 4), (1, 1, 1, 3)), ((1, 1, 1, 1), (1, 1, 1, 1)),
            ((1, 2, 2, 2), (1, 1, 2, 1))]
    x = _values(rng, (2, 5, 7, 9), np.float32)

    def pools(x: Any) -> list[Any]:
        outs = []
        for window, strides in geos:
            pooled = ops.reduce_window(x, -np.inf, ops.max, window, strides, "VALID")
            outs += [pooled, ops.select_and_scatter(x, ops.ge, window, strides, "VALID",
                                                    ops.mul(pooled, pooled), 0.0, ops.add)]
        return outs
    _compare(pools, [x], CPU)
    code = _source(pools, x)
    assert code == _source(pools, _values(rng, (3, 6, 8, 11), np.float32))
    assert "have_" not in code and "run_" not in code and "q0_" not in code
    assert "for k" not in code  # taps are unrolled


def test_large_unrolled_pools_run_in_parallel_kernels() -> None:
    """Threads split the leading dim: the windows there have size 1, so the threads'
    scatters and slab fills never meet."""
    x = _values(np.random.default_rng(7), (6, 5, 40, 42), np.float32)

    def pool_and_grad(x: Any) -> list[Any]:
        pooled = ops.reduce_window(x, -np.inf, ops.max, (1, 1, 3, 3), (1, 1, 2, 2), "VALID")
        return [pooled, ops.select_and_scatter(x, ops.ge, (1, 1, 3, 3), (1, 1, 2, 2), "VALID",
                                               pooled, 0.0, ops.add)]
    code = _source(pool_and_grad, x)
    assert ("def parallel_select_and_scatter" in code) == threaded()
    assert ("def parallel_reduce_window" in code) == threaded()
    _compare(pool_and_grad, [x], CPU)


def test_empty_windows_read_nothing() -> None:
    """An operand shorter than the window: no outputs, and nothing of it is read."""
    x = np.arange(6, dtype=np.float32).reshape(3, 2)

    def pools(x: Any) -> list[Any]:
        return [ops.reduce_window(x, -np.inf, ops.max, (2, 3), (1, 1), "VALID"),
                ops.reduce_window(x, 0.0, ops.add, (1, 3), (1, 2), ((0, 0), (-1, 0))),
                ops.select_and_scatter(x, ops.ge, (1, 3), (1, 1), "VALID",
                                       np.zeros((3, 0), np.float32), 0.0, ops.add)]
    _compare(pools, [x], CPU)

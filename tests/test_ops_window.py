"""Family tests for ReduceWindow, SelectAndScatter and Map (XLA's operations).

The references are checked against loop oracles that follow the seed rules
literally (every window position, every tap, padding and holes as the init
value; selection by scanning the window in row-major order) over random
geometries, against JAX's `lax.reduce_window` and max-pool gradient where JAX is
installed, and the cpu backend against the interpreter (generated code included).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tracer as tr
from tests.backend.cpu.test_backend import _batched, _compare
from tests.opdb_window import CASES
from tests.test_rules_window import geometries
from tracer import errors, ops
from tracer.backend.cpu.backend import NumbaCpuBackend
from tracer.core import aval_of
from tracer.ops.window import dilated, resolve_padding, window_shape
from tracer.tracing import trace_flat
from tests.checks import threaded

EXAMPLES = settings(max_examples=20, deadline=None)


# ---------------------------------------------------------------- oracles
def _source_index(out: tuple[int, ...], tap: tuple[int, ...], geo: dict[str, Any],
                  shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The operand index a window tap reads, or None for padding or a hole."""
    index = []
    for d, n in enumerate(shape):
        q = (out[d] * geo["window_strides"][d] + tap[d] * geo["window_dilation"][d]
             - geo["padding"][d][0])
        b = geo["base_dilation"][d]
        if q < 0 or q % b or q // b >= n:
            return None
        index.append(q // b)
    return tuple(index)


def reduce_window_oracle(x: np.ndarray, init: Any, f: Any, geo: dict[str, Any]) -> np.ndarray:
    out = np.empty(window_shape(x.shape, **geo), x.dtype)
    for o in np.ndindex(*out.shape):
        acc = init
        for tap in np.ndindex(*geo["window_dimensions"]):
            i = _source_index(o, tap, geo, x.shape)
            acc = f(acc, init if i is None else x[i])
        out[o] = acc
    return out


def select_and_scatter_oracle(x: np.ndarray, select: Any, source: np.ndarray, init: Any,
                              scatter: Any, geo: dict[str, Any]) -> np.ndarray:
    out = np.full(x.shape, init, x.dtype)
    for o in np.ndindex(*source.shape):
        pick = None
        for tap in np.ndindex(*geo["window_dimensions"]):
            i = _source_index(o, tap, geo, x.shape)
            if i is not None and (pick is None or not select(x[pick], x[i])):
                pick = i
        if pick is not None:
            out[pick] = scatter(out[pick], source[o])
    return out


def _call_geo(geo: dict[str, Any]) -> dict[str, Any]:
    return {"window_dimensions": geo["window_dimensions"],
            "window_strides": geo["window_strides"], "padding": geo["padding"],
            "base_dilation": geo["base_dilation"], "window_dilation": geo["window_dilation"]}


COMPUTATIONS = {  # (tracer computation, NumPy scalar twin, init)
    "add": (ops.add, lambda a, b: a + b, 0.0),
    "max": (ops.max, max, -np.inf),
    "non_commutative": (lambda a, x: ops.sub(ops.mul(a, 0.5), x), lambda a, x: a * 0.5 - x, 1.0),
}


@EXAMPLES
@given(geometries(), st.sampled_from(sorted(COMPUTATIONS)), st.integers(0, 2**32 - 1))
def test_reduce_window_matches_the_seed_rule(case: Any, name: str, seed: int) -> None:
    shape, geo = case
    comp, twin, init = COMPUTATIONS[name]
    x = np.random.default_rng(seed).standard_normal(shape)
    got = ops.reduce_window(x, init, comp, **_call_geo(geo))
    np.testing.assert_allclose(got, reduce_window_oracle(x, init, twin, geo), rtol=1e-12)


@EXAMPLES
@given(geometries(), st.sampled_from(["ge", "gt", "le"]), st.integers(0, 2**32 - 1))
def test_select_and_scatter_matches_the_seed_rule(case: Any, select: str, seed: int) -> None:
    shape, geo = case
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, shape).astype(np.float64)  # many ties
    source = rng.standard_normal(window_shape(shape, **geo))
    twin = {"ge": lambda a, b: a >= b, "gt": lambda a, b: a > b, "le": lambda a, b: a <= b}
    got = ops.select_and_scatter(x, getattr(ops, select), geo["window_dimensions"],
                                 geo["window_strides"], geo["padding"], source, 0.25, ops.add,
                                 base_dilation=geo["base_dilation"],
                                 window_dilation=geo["window_dilation"])
    want = select_and_scatter_oracle(x, twin[select], source, 0.25, lambda a, b: a + b, geo)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_map_applies_the_computation_per_element() -> None:
    x = np.random.default_rng(1).standard_normal((3, 4))
    k = np.arange(12, dtype=np.int32).reshape(3, 4)
    y, parity = ops.map(lambda a, i: (ops.mul(a, ops.convert_element_type(i, np.float64)),
                                      ops.eq(ops.rem(i, 2), 0)), [x, k])
    np.testing.assert_allclose(y, x * k)
    np.testing.assert_array_equal(parity, k % 2 == 0)
    assert ops.map(ops.neg, np.float32([1, 2])).dtype == np.float32  # one operand, unwrapped


# ---------------------------------------------------------------- against JAX
@EXAMPLES
@given(geometries(), st.sampled_from(["add", "max"]), st.sampled_from(["SAME", "VALID", None]),
       st.integers(0, 2**32 - 1))
@example(((2, 1), {"window_dimensions": (2, 1), "window_strides": (2, 1),
                   "padding": ((0, 0), (0, 0)), "base_dilation": (2, 1),
                   "window_dilation": (1, 1)}), "add", "SAME", 0)
def test_reduce_window_matches_jax(case: Any, name: str, padding: Any, seed: int) -> None:
    lax = pytest.importorskip("jax.lax")
    shape, geo = case
    geo = dict(geo, padding=padding or geo["padding"])
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    init = np.float32(COMPUTATIONS[name][2])
    jax_geo = _call_geo(geo)
    if padding == "SAME" and any(b > 1 for b in geo["base_dilation"]):
        # The seeds leave SAME with base dilation open. tracer pads for an output of
        # ceil(dilated size / stride) (resolve_padding), JAX for the undilated shape:
        # they differ once a stride is > 1 too (size 2 dilated by 2, window 2, stride
        # 2: 2 windows here, 1 in JAX). JAX gets tracer's pads, so it still checks
        # the windows; the sizes follow tracer's rule.
        jax_geo["padding"] = resolve_padding("reduce_window", "SAME", shape,
                                             geo["window_dimensions"], geo["window_strides"],
                                             geo["base_dilation"], geo["window_dilation"])
        assert window_shape(shape, **jax_geo) == tuple(
            -(-dilated(n, b) // s)
            for n, b, s in zip(shape, geo["base_dilation"], geo["window_strides"]))
    try:
        want = np.asarray(lax.reduce_window(x, init, getattr(lax, name), **jax_geo))
    except (ValueError, TypeError):
        with pytest.raises(errors.TracerError):  # (a window that does not fit SAME/VALID)
            ops.reduce_window(x, init, getattr(ops, name), **_call_geo(geo))
        return
    got = ops.reduce_window(x, init, getattr(ops, name), **_call_geo(geo))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_maxpool_gradient_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    x = np.random.default_rng(2).standard_normal((2, 3, 9, 8)).astype(np.float32)

    def loss(lib: Any, x: Any) -> Any:
        pooled = lib.reduce_window(x, -np.inf, lib.max, (1, 1, 3, 3), (1, 1, 2, 2), "SAME")
        return (pooled * pooled).sum()
    want = np.asarray(jax.grad(lambda x: loss(jax.lax, x))(x))
    got = tr.grad(lambda x: loss(ops, x))(x)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(tr.jit(tr.grad(lambda x: loss(ops, x)))(x), want, rtol=1e-6)


# ---------------------------------------------------------------- errors
X = np.ones((4, 5), np.float32)
S34 = np.ones((3, 4), np.float32)

ERRORS = [
    (lambda: ops.reduce_window(X, 0.0, ops.add, (2,)), errors.ShapeError,
     r"reduce_window: window_dimensions \(2,\) must have one entry per operand dimension"),
    (lambda: ops.reduce_window(X, 0.0, ops.add, (2, 2), (0, 1)), errors.ParamError,
     r"window_strides \(0, 1\) must be positive"),
    (lambda: ops.reduce_window(X, 0.0, ops.add, (0, 2)), errors.ParamError,
     r"window_dimensions \(0, 2\) must be positive"),
    (lambda: ops.reduce_window(X, 0.0, ops.add, (2, 2), padding="FULL"), errors.ParamError,
     r"padding must be 'SAME', 'VALID' or \(low, high\) pairs, got 'FULL'"),
    (lambda: ops.reduce_window(X, 0.0, ops.add, (2, 2), padding=[(0, 0)]), errors.ShapeError,
     r"padding \(\(0, 0\),\) must have one entry per operand dimension"),
    (lambda: ops.reduce_window(X, 0.0, ops.add, (2, 2), padding=[(0, 0), (-6, 0)]),
     errors.ShapeError, r"padding \(-6, 0\) removes more than the 5 element"),
    (lambda: ops.reduce_window(X, np.float64(0), ops.add, (2, 2)), errors.DTypeError,
     r"init values must be scalars of the operands' dtypes"),
    (lambda: ops.reduce_window([X, X[:2]], [0.0, 0.0], lambda a, b, x, y: (a, b), (1, 1)),
     errors.ShapeError, r"all operands must have the same shape"),
    (lambda: ops.reduce_window(X, 0.0, lambda a, b: (a, b), (2, 2)), errors.TracerTypeError,
     r"must return 1 value"),
    (lambda: ops.select_and_scatter(X, ops.add, (2, 2), (1, 1), "VALID", S34, 0.0, ops.add),
     errors.DTypeError, r"select_and_scatter: select result: expected \(pred\[\]\)"),
    (lambda: ops.select_and_scatter(X, ops.ge, (2, 2), (1, 1), "VALID", S34[:, :3], 0.0,
                                    ops.add),
     errors.ShapeError, r"source f32\[3,3\] must have one element per window position"),
    (lambda: ops.select_and_scatter(X, ops.ge, (2, 2), (1, 1), "VALID", S34.astype(int), 0.0,
                                    ops.add), errors.DTypeError, r"source s64\[3,4\]"),
    (lambda: ops.map(ops.add, [X, X[:2]]), errors.ShapeError,
     r"map: all operands must have the same shape, got f32\[4,5\], f32\[2,5\]"),
    (lambda: ops.map(ops.neg, [X], dimensions=(1, 0)), errors.ParamError,
     r"dimensions \(1, 0\) must list every operand dimension in order"),
    (lambda: ops.map(lambda a: ops.broadcast_in_dim(a, (2,), ()), [X]), errors.ShapeError,
     r"the computation must return scalars, got f32\[2\]"),
    (lambda: ops.map(ops.neg, []), errors.ParamError, r"map: needs at least one operand"),
]


@pytest.mark.parametrize("call, cls, message", ERRORS, ids=[m[:40] for _, _, m in ERRORS])
def test_errors_name_the_op_and_the_problem(call: Any, cls: type, message: str) -> None:
    with pytest.raises(cls, match=message):
        call()


def test_computations_must_be_closed() -> None:
    def f(x: Any, y: Any) -> Any:
        return ops.map(lambda a: ops.add(a, y), [x])
    with pytest.raises(errors.TracerTypeError, match="map: the computation must be closed"):
        tr.jit(f)(X, np.float32(1))
    with pytest.raises(errors.TracerTypeError, match="reduce_window: the computation must be "
                                                     "closed"):
        tr.jit(lambda x, y: ops.reduce_window(x, 0.0, lambda a, b: ops.add(a, y), (2, 2)))(
            X, np.float32(1))


# ---------------------------------------------------------------- cpu backend
CPU = NumbaCpuBackend()


def test_cpu_backend_matches_the_interpreter_on_the_op_table() -> None:
    fn, args = _batched(CASES)
    _compare(fn, args, CPU)


def _source(fn: Any, *args: Any) -> str:
    graph, _ = trace_flat(lambda *xs: [fn(*xs)], [aval_of(a) for a in args])
    return CPU.compile(graph).source


def _half_minus(acc: Any, x: Any) -> Any:
    return ops.sub(ops.mul(acc, np.float32(0.5)), x)


def test_generated_code_is_shape_generic_and_checks_only_padded_dims() -> None:
    """Both loop structures: the unrolled taps of an add, max or min (padding handled by
    the bounds of the loops along the last dim) and the tap-by-tap fold of any other
    computation (a bounds check on the padded dim only)."""
    pads = [(0, 0), (1, 1)]
    pool = lambda x: ops.reduce_window(x, -np.inf, ops.max, (1, 3), (1, 2), pads)  # noqa
    other = lambda x: ops.reduce_window(x, 1.0, _half_minus, (1, 3), (1, 2), pads)  # noqa
    small, big = np.zeros((2, 9), np.float32), np.zeros((5, 31), np.float32)
    sources = {}
    for name, fn in (("pool", pool), ("other", other)):
        sources[name] = _source(fn, small)
        assert sources[name] == _source(fn, big)
        code = [line.split("#")[0] for line in sources[name].split('"""')[-1].splitlines()]
        assert not any(str(n) in line for line in code for n in (9, 31))
        assert "q0_" not in sources[name]  # dimension 0: no padding, no check
        _compare(fn, [np.random.default_rng(0).standard_normal((5, 31)).astype(np.float32)],
                 CPU)
    pool_code = sources["pool"].split('"""')[-1]
    assert "row_1 = arg0[o0_1]\n" in pool_code and "row_1[u64(real_1 - 1 + i_1)]" in pool_code
    assert "if 0 <=" not in pool_code
    assert "q1_1 = o1_1 * stride" in sources["other"] and "0 <= q1_1 < n" in sources["other"]


RUNS = {"add": (ops.add, 0.5), "max": (ops.max, -np.inf), "min": (ops.min, 2.0)}


@settings(max_examples=5, deadline=None)
@given(st.lists(st.tuples(geometries(max_rank=4), st.sampled_from(sorted(RUNS))), min_size=4,
                max_size=4),
       st.sampled_from([np.float32, np.float64, np.int32, np.float16]), st.integers(0, 2**32 - 1))
def test_cpu_runs_of_add_max_min_match_the_interpreter(cases: Any, dtype: Any,
                                                       seed: int) -> None:
    """The runs along the last dim (`_Fold.runs`) over random geometries: padding
    (negative too), strides, both dilations, every dtype family; four windows per
    compiled module (a last dim with base dilation, or without window and stride,
    takes the tap-by-tap fold)."""
    rng = np.random.default_rng(seed)
    xs = [(rng.standard_normal(shape) * 8).astype(dtype) for (shape, _), _ in cases]
    inits = [np.asarray(max(RUNS[name][1], -100) if dtype == np.int32 else RUNS[name][1],
                        dtype) for _, name in cases]

    def pools(*xs: Any) -> list[Any]:
        return [ops.reduce_window(x, init, RUNS[name][0], **_call_geo(geo))
                for x, init, ((_, geo), name) in zip(xs, inits, cases, strict=True)]
    _compare(pools, xs, CPU)


def test_large_windows_run_in_parallel_kernels() -> None:
    x = np.random.default_rng(3).standard_normal((8, 4, 40, 40)).astype(np.float32)
    pool = lambda x: ops.reduce_window(x, -np.inf, ops.max, (1, 1, 3, 3), (1, 1, 2, 2),  # noqa
                                       "SAME")
    assert ("numba.prange" in _source(pool, x)) == threaded()
    grad = tr.grad(lambda x: ops.reduce(pool(x), 0.0, ops.add, (0, 1, 2, 3)))
    compiled = tr.jit(grad).lower(x).compile()
    assert ("def parallel_select_and_scatter" in compiled.source) == threaded()
    np.testing.assert_allclose(compiled(x), grad(x), rtol=1e-6)
    mapped = lambda x: ops.map(lambda a: ops.mul(a, ops.tanh(a)), [x])  # noqa: E731
    assert ("def parallel_map" in _source(mapped, x)) == threaded()
    _compare(mapped, [x], CPU)


def test_hlo_text_prints_windows_as_xla_does():
    x = np.ones((4, 6), np.float32)
    text = str(tr.make_hlo(lambda x: ops.reduce_window(x, -np.inf, ops.max, (2, 2), (1, 2),
                                                      "SAME", window_dilation=(1, 2)))(x))
    assert "window={size=2x2 stride=1x2 pad=0_1x0_1 rhs_dilate=1x2}, to_apply=" in text
    src = np.ones((2, 3), np.float32)
    text = str(tr.make_hlo(lambda x: ops.select_and_scatter(
        x, ops.ge, (2, 2), (2, 2), "VALID", src, np.float32(0), ops.add))(x))
    assert "window={size=2x2 stride=2x2}, select=%region_0" in text

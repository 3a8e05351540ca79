"""The numba `cpu` backend against the interpreter (the oracle).

Every op-table case runs compiled; to keep numba compiles few, cases are traced
together into batched graphs (one compile per batch), and a failing batch is
re-run case by case to name the culprit. Then: fusion counts, fused vs unfused
results, shape-generic kernels (a new batch size compiles nothing), out-of-bounds
indices, special float values, and the dump directory. The disk cache: test_cache.py.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tests.backend import models
from tests.op_db import all_cases
from tracer import ops
from tracer.backend import backend_names, register_backend
from tracer.backend.cpu.cache import STATS
from tracer.backend.numba.fusion import LoopNest, RowGroup, plan_graph
from tracer.backend.numba.lower import lower_batched_inner_products
from tracer.backend.cpu.backend import FALLBACK_OPS, NumbaCpuBackend, supported_ops
from tracer.core import aval_of
from tracer.interpret import run_graph
from tracer.ops import OPS
from tracer.tracing import trace_flat
from tracer.tree_util import tree_flatten
from tests.checks import threaded

if "cpu" not in backend_names():
    register_backend("cpu", NumbaCpuBackend)

CPU = NumbaCpuBackend()
RTOL = {2: 2e-3, 4: 4e-6, 8: 1e-12, 16: 1e-12}  # by itemsize (complex: of each part)


def _leaves(x):
    return tree_flatten(x)[0]


def _trace(fn, args, name="main"):
    graph, captured = trace_flat(lambda *xs: _leaves(fn(*xs)), [aval_of(a) for a in args],
                                 name)
    assert not captured
    return graph


def _inputs(args):
    return [np.asarray(a, dtype=aval_of(a).dtype) for a in args]


def _check(got, want, rtol=0.0, atol=0.0, what=""):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, \
        (what, got.dtype, want.dtype, got.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        size = want.dtype.itemsize // (2 if want.dtype.kind == "c" else 1)
        np.testing.assert_allclose(got, want, rtol=max(rtol, RTOL[size]), atol=atol,
                                   err_msg=what)


def _compare(fn, args, backend=CPU, rtol=0.0, atol=0.0):
    graph = _trace(fn, args)
    ins = _inputs(args)
    with np.errstate(all="ignore"):
        want = run_graph(graph, ins)
    got = backend.compile(graph)(*ins)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        _check(g, w, rtol, atol, getattr(fn, "__name__", ""))
    return got


# ------------------------------------------------------------------ the op table

# Convolution cases compile their own kernel per dtype (seconds each): tests/test_ops_conv.py
# checks the cpu backend on them; batching them here would multiply that cost.
CASES = [c for c in all_cases() if not c.name.startswith(("conv", "conv_with_general_padding"))]
BATCH = 24
BATCHES = [CASES[i:i + BATCH] for i in range(0, len(CASES), BATCH)]


def _batched(cases):
    spans, args = [], []
    for case in cases:
        spans.append((case, len(args), len(case.args)))
        args.extend(case.args)

    def fn(*xs):
        return [out for case, start, n in spans for out in _leaves(case.fn(*xs[start:start + n]))]
    return fn, args


@pytest.mark.parametrize("cases", BATCHES, ids=[f"{b[0].name}..{b[-1].name}" for b in BATCHES])
def test_op_table_cases_match_the_interpreter(cases):
    fn, args = _batched(cases)
    try:
        _compare(fn, args, rtol=max(c.rtol for c in cases), atol=max(c.atol for c in cases))
    except Exception:  # name the failing case(s)
        for case in cases:
            _compare(case.fn, case.args, rtol=case.rtol, atol=case.atol)
        raise


def test_every_op_has_an_emitter():
    missing = sorted(set(OPS) - supported_ops() - FALLBACK_OPS)
    assert not missing, f"ops the cpu backend would only run by their reference: {missing}"


def test_an_op_without_an_emitter_runs_its_reference(monkeypatch):
    from tracer.backend.cpu.emit import table as cpu_emit_ops
    monkeypatch.delitem(cpu_emit_ops.OP_EMITTERS, "sort", raising=False)
    x = np.array([[3., 1., 2.], [0., -1., 5.]], dtype=np.float16)
    source = CPU.compile(_trace(lambda x: [ops.sort(x)], [x])).source
    assert "numba.objmode" in source
    _compare(lambda x, v: [ops.sort(x), ops.sort(x * v, dimension=0)], [x, np.float16(7)])


def test_jit_end_to_end():
    f = tr.jit(lambda x, y: {"s": tnp.tanh(x @ y + 1.0), "m": tnp.max(x, axis=0)},
               backend="cpu")
    x, y = np.random.rand(5, 3).astype(np.float32), np.random.rand(3, 4).astype(np.float32)
    out = f(x, y)
    np.testing.assert_allclose(out["s"], np.tanh(x @ y + 1.0), rtol=1e-5)
    np.testing.assert_array_equal(out["m"], x.max(0))
    assert "def lambda_(" in f.lower(x, y).compile().source  # (named after the function)


# ------------------------------------------------------------------ fusion

def _softmax(x):
    e = tnp.exp(x - tnp.max(x, axis=1, keepdims=True))
    return e / tnp.sum(e, axis=1, keepdims=True)


def _chain(x, y):
    z = x
    for k in range(10):
        z = tnp.tanh(z * y + float(k)) if k % 2 else tnp.maximum(z - y, 0.5) * 1.5
    return z


def _nests(fn, *args):
    plan = plan_graph(lower_batched_inner_products(_trace(fn, args)))
    steps = [n for s in plan.steps for n in (s.nests if isinstance(s, RowGroup) else [s])]
    return [s for s in steps if isinstance(s, LoopNest) and s.shape]


def test_softmax_is_at_most_three_loop_nests():
    x = np.random.rand(6, 5).astype(np.float32)
    assert len(_nests(_softmax, x)) <= 3
    _compare(_softmax, [x])


def test_a_twenty_op_elementwise_chain_is_one_loop_nest():
    x, y = np.random.rand(4, 7).astype(np.float32), np.random.rand(7).astype(np.float32)
    graph = _trace(_chain, [x, y])
    assert len(graph.eqns) >= 20
    assert len(_nests(_chain, x, y)) == 1
    _compare(_chain, [x, y])


def _cosine(u, v):
    return tnp.dot(u, v) / (tnp.sqrt(tnp.dot(u, u)) * tnp.sqrt(tnp.dot(v, v)))


def test_independent_sums_over_the_same_rows_share_one_pass():
    u, v = np.random.rand(300, 40).astype(np.float32), np.random.rand(300, 40).astype(np.float32)
    f = tr.vmap(_cosine)
    nests = _nests(f, u, v)
    assert len(nests) <= 2 and len(nests[0].reduces) == 3  # one pass reads u and v once
    _compare(f, [u, v], rtol=1e-5)
    w = np.random.rand(300, 41).astype(np.float32)  # other sizes: separate passes, still right
    g = lambda u, w: (tnp.sum(u * u, axis=1), tnp.sum(w * w, axis=1))  # noqa: E731
    assert len(_nests(g, u, w)) == 2
    _compare(g, [u, w], rtol=1e-5)


def test_row_groups_and_parallel_kernels_match_the_interpreter():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 160)).astype(np.float32)  # large enough for prange
    x[3, 7] = np.nan
    g = rng.normal(size=160).astype(np.float32)
    sources = []
    for fn, args in ((_softmax, [x]), (models.logsumexp, [x]), (models.layernorm, [x, g]),
                     (models.columns, [x.astype(np.float64)]), (_chain, [x, g])):
        graph = _trace(fn, args)
        exe = CPU.compile(graph)
        sources.append(exe.source)
        with np.errstate(all="ignore"):
            want = run_graph(graph, _inputs(args))
        for got, w in zip(exe(*_inputs(args)), want, strict=True):
            _check(got, w, 2e-5, 1e-6, fn.__name__)
    parallel = [("numba.prange" in s) for k, s in enumerate(sources) if k != 3]
    assert parallel == [threaded()] * len(parallel)
    # softmax: its row buffer per chunk of rows
    assert ("for chunk in numba.prange" in sources[0]) == threaded()
    assert sources[1].count("for i0 in") == 1  # logsumexp: one pass over the rows


def test_fused_and_unfused_agree():
    args = [np.random.rand(6, 4).astype(np.float32), np.random.rand(4, 5).astype(np.float32),
            np.int32(3)]
    fused = _compare(models.mixed, args)
    unfused = _compare(models.mixed, args, backend=NumbaCpuBackend(fuse=False))
    for a, b in zip(fused, unfused, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# ------------------------------------------------------------------ shape-generic kernels

def test_a_new_batch_size_reuses_the_compiled_kernel():
    graphs = [_trace(_softmax, [np.zeros((n, 33), np.float32)]) for n in (8, 21)]
    first = CPU.compile(graphs[0])
    before = STATS.compiles
    second = CPU.compile(graphs[1])
    assert STATS.compiles == before and not second.fresh_compile
    assert first.source == second.source
    for n in (8, 21):
        x = np.random.rand(n, 33).astype(np.float32)
        exe = first if n == 8 else second
        np.testing.assert_allclose(exe(x)[0], run_graph(graphs[n != 8], [x])[0], rtol=1e-5)


def test_generated_source_holds_no_sizes():
    x = np.zeros((1234, 567), np.float32)
    source = CPU.compile(_trace(_softmax, [x])).source
    assert "1234" not in source and "567" not in source


# ------------------------------------------------------------------ out-of-bounds indices

EXTREMES = {np.int64: [np.iinfo(np.int64).min, -7, -1, 0, 3, 9, np.iinfo(np.int64).max],
            np.uint64: [0, 2, 5, 2 ** 63, 2 ** 64 - 1],
            np.int8: [-128, -3, 0, 4, 127]}


@pytest.mark.parametrize("dtype", list(EXTREMES), ids=lambda d: np.dtype(d).name)
def test_out_of_bounds_indices_follow_the_reference(dtype):
    x = np.arange(35.0).reshape(5, 7)
    dn = ops.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,), index_vector_dim=1)
    sdn = ops.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    idx = np.array(EXTREMES[dtype], dtype)

    def fn(x, idx):
        outs = [ops.gather(x, idx[:, None], dn, (1, 3)),
                ops.scatter(x, idx[:, None], np.ones((len(idx), 7)), ops.add, sdn)]
        for i in idx:
            outs.append(ops.dynamic_slice(x, [i, i], [2, 3]))
            outs.append(ops.dynamic_update_slice(x, -np.ones((2, 2)), [i, i]))
        return outs
    _compare(fn, [x, idx])


# ------------------------------------------------------------------ numerics

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -2.5, 0.5, 1.5, 88.7, -103.9, 3e38,
           1e-310, 710.0]
UNARY = ["abs", "ceil", "floor", "round", "round_nearest_even", "exp", "expm1", "log",
         "log1p", "logistic", "neg", "sign", "sin", "cos", "tan", "tanh", "sqrt", "rsqrt",
         "cbrt", "erf", "is_finite"]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=str)
def test_special_float_values(dtype):
    with np.errstate(over="ignore"):  # 3e38 and 710 overflow float16: inf is the point
        x, y = np.array(SPECIAL, dtype), np.array(SPECIAL[::-1], dtype)

    def fn(x, y):
        outs = [getattr(ops, name)(x) for name in UNARY]
        for name in ("add", "sub", "mul", "div", "rem", "max", "min", "pow", "atan2"):
            outs.append(getattr(ops, name)(x, y))
        return outs + [ops.convert_element_type(x, t) for t in (np.int8, np.uint32, np.int64)]
    _compare(fn, [x, y], rtol=1e-6)


def test_complex_exp_and_expm1_follow_numpy_at_the_edges():
    # numba's complex expm1 is exp(z) - 1, which cancels to 0 for tiny z, and its
    # exp(x + 0j) has a NaN imaginary part where exp(x) overflows (inf * sin(0)).
    z = np.array([1e-300 + 0j, 1e-10 + 1e-10j, -1e-12 - 2e-12j, 1e300 + 0j, 800 - 0j,
                  0.5 + 2j, -3 + 0.25j])

    def fn(z):
        return [ops.expm1(z), ops.exp(z), ops.expm1(z.astype(np.complex64)),
                ops.exp(z.astype(np.complex64))]
    _compare(fn, [z], rtol=1e-6)


def test_signed_zero_tanh_and_complex_sign_of_infinities_follow_numpy():
    x = np.array([-0.0, 0.0, 1e-300, -0.3, 2.0])
    got = tr.jit(ops.tanh)(x)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.tanh(x)))
    np.testing.assert_allclose(got, np.tanh(x), rtol=1e-15)
    z = np.array([complex(np.inf, 1), complex(-np.inf, 1), complex(1, np.inf),
                  complex(1, -np.inf), complex(np.inf, np.inf), complex(np.nan, 1), 0j, 3 + 4j])
    np.testing.assert_allclose(tr.jit(ops.sign)(z), np.sign(z), rtol=1e-15)  # (NaN at NaN)


def _ulps(got, want):
    """Distance in units of the last place (NaN == NaN, -0.0 == 0.0)."""
    bits = np.int32 if got.dtype == np.float32 else np.int64
    def key(a):
        b = a.view(bits).astype(np.int64)
        return np.where(b < 0, -(b & np.iinfo(bits).max), b)
    d = np.abs(key(got) - key(want))
    return np.where(np.isnan(got) & np.isnan(want), 0, d)


def _map(fn):
    @numba.njit
    def kernel(a, out):
        for i in range(a.shape[0]):
            out[i] = fn(a[i])
    return kernel


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_vectorizable_transcendentals_are_a_few_ulp_over_the_whole_range(dtype):
    from tracer.backend.cpu.lib import fastmath as cpu_fastmath
    bits = {np.float32: np.uint32, np.float64: np.uint64}[dtype]
    rng = np.random.default_rng(7)
    x = np.concatenate([
        rng.integers(0, np.iinfo(bits).max, 1 << 16, dtype=bits, endpoint=True).view(dtype),
        rng.normal(size=1 << 14).astype(dtype) * 4, np.array(SPECIAL, dtype),
        np.array([np.finfo(dtype).smallest_subnormal, np.finfo(dtype).tiny, -0.625, 9.5,
                  -745.2, 88.73, -87.5], dtype)])
    suffix = "f32" if dtype == np.float32 else "f64"
    for name, reference, limit in (("exp", np.exp, 2), ("log", np.log, 2),
                                   ("tanh", np.tanh, 6 if dtype == np.float32 else 2)):
        out = np.empty_like(x)
        _map(getattr(cpu_fastmath, f"{name}_{suffix}"))(x, out)
        with np.errstate(all="ignore"):
            want = reference(x.astype(np.float64)).astype(dtype)
        worst = _ulps(out, want)
        assert worst.max() <= limit, (name, x[np.argmax(worst)], worst.max())


@functools.cache
def _fastmath_kernel(name: str):
    from tracer.backend.cpu.lib import fastmath as cpu_fastmath
    return _map(getattr(cpu_fastmath, name))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(width=32, allow_subnormal=True), min_size=1, max_size=64))
def test_fused_float32_transcendentals_stay_exact_where_they_must(values):
    """The helpers' polynomials contract into fused multiply-adds: tanh stays odd and
    within [-1, 1], exp stays non-negative and a few ulp from the correctly rounded
    value, NaN stays NaN and infinities map as NumPy maps them, subnormals included."""
    x = np.array(values, np.float32)
    got = {}
    for name, arg in (("tanh_f32", x), ("tanh_f32", -x), ("exp_f32", x)):
        out = np.empty_like(arg)
        _fastmath_kernel(name)(arg, out)
        got.setdefault(name, []).append(out)
    tanh, tanh_neg = got["tanh_f32"]
    exp = got["exp_f32"][0]
    np.testing.assert_array_equal(tanh_neg, -tanh)
    assert np.all(np.abs(tanh[~np.isnan(x)]) <= 1)
    with np.errstate(all="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert _ulps(exp, want).max() <= 2 and np.all(exp[~np.isnan(x)] >= 0)
    assert np.array_equal(np.isnan(tanh), np.isnan(x)) and np.array_equal(np.isnan(exp),
                                                                          np.isnan(x))


def test_integer_wraparound_and_division_rules():
    a = np.array([-128, -7, -1, 0, 1, 7, 127], np.int8)
    b = np.array([-1, 2, 0, 3, -1, -2, 0], np.int8)
    u = np.array([0, 1, 200, 255, 7, 3, 9], np.uint8)

    def fn(a, b, u):
        return [ops.add(a, a), ops.mul(a, b), ops.div(a, b), ops.rem(a, b), ops.neg(a),
                ops.abs(a), ops.pow(a, b), ops.shift_left(a, b), ops.div(u, u),
                ops.shift_right_arithmetic(a, b), ops.shift_right_logical(u, u),
                ops.sub(u, ops.add(u, u)), ops.clz(a), ops.population_count(u)]
    _compare(fn, [a, b, u])


@settings(max_examples=25)
@given(st.sampled_from([((3, 4), (3, 4)), ((3, 1), (1, 4)), ((0, 4), (1, 4)), ((1,), (5,)),
                        ((), (2, 3)), ((2, 0, 3), (2, 1, 3))]),
       st.sampled_from(["add", "max", "div", "atan2", "eq"]),
       st.sampled_from([np.float32, np.int32, np.float64]))
def test_broadcasting_binary_ops(shapes, name, dtype):
    if name == "atan2" and dtype == np.int32:
        return
    rng = np.random.default_rng(0)
    x, y = (rng.normal(size=s).astype(dtype) * 4 for s in shapes)
    _compare(lambda x, y: [getattr(ops, name)(x, y)], [x, y])


def test_dump_dir_gets_the_generated_source(tmp_path):
    def exp(x):
        return tnp.exp(x)
    with tr.config.override(dump_dir=str(tmp_path)):
        source = tr.jit(exp).lower(np.ones(3, np.float32)).compile().source
    assert (tmp_path / "jit_exp.cpu.py").read_text() == source


def test_index_maps_of_index_maps_keep_their_order_of_operations():
    x = np.arange(64.0).reshape(4, 16)  # a slice of a strided slice, reversed
    f = lambda x: [ops.rev(ops.slice(ops.slice(x, (0, 0), (4, 16), (1, 5)), (0, 2), (4, 4)),  # noqa
                           (1,))]
    _compare(f, [x])


def test_a_value_only_reshaped_into_an_output_is_computed_in_the_output():
    """exp(x) reshaped as the result is written by its loop nest straight into the
    output's buffer (no copy loop at the end); a value also read elsewhere, or an
    output returned twice, keeps its own buffer: results never share memory."""
    x = np.linspace(-2, 2, 24).reshape(4, 6)
    f = tr.jit(lambda x: tnp.exp(x).reshape(3, 8))
    assert "out0.reshape" in f.lower(x).compile().source
    np.testing.assert_allclose(f(x), np.exp(x).reshape(3, 8), rtol=1e-15)
    g = tr.jit(lambda x: (tnp.exp(x).reshape(3, 8), tnp.exp(x).sum()))
    got, total = g(x)
    np.testing.assert_allclose(got, np.exp(x).reshape(3, 8), rtol=1e-15)
    np.testing.assert_allclose(total, np.exp(x).sum(), rtol=1e-14)
    h = tr.jit(lambda x: (tnp.exp(x).reshape(3, 8),) * 2)
    first, second = h(x)
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(second, np.exp(x).reshape(3, 8), rtol=1e-15)

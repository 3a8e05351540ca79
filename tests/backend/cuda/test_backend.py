"""The numba `cuda` backend against the interpreter (the oracle), on numba's CUDA
simulator (see conftest.py; `TRACER_CUDA_REAL=1` runs the same tests on a GPU).

The op table runs through `backend="cuda"` case by case (an op that runs on the
host is covered by one case, run by the interpreter there); then the
kernel structure (one kernel per fused chain, one per row softmax), the
reduction paths (chunked rows, order-keeping folds), GEMM layouts, scatter
modes, control flow on device values, device arrays and jit caching.
Simulated threads are Python threads, so shapes stay tiny.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tracer.backend.cuda.backend", reason="numba-cuda is not installed "
                    "(pip install 'numba-cuda[cu13]')", exc_type=ImportError)

import tracer as tr  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from tests.backend import models  # noqa: E402
from tests.op_db import all_cases  # noqa: E402
from tracer import ops  # noqa: E402
from tracer.backend.cuda.backend import (HOST_FALLBACKS, HOST_OPS,  # noqa: E402
                                       NumbaCudaBackend, device_ops, is_device_array)
from tracer.backend.cuda.emit.conv import as_gemm_applies  # noqa: E402
from tracer.backend.cuda.lib import launch  # noqa: E402
from tracer.core import aval_of, subgraphs  # noqa: E402
from tracer.interpret import run_graph  # noqa: E402
from tracer.ops import OPS  # noqa: E402
from tracer.tracing import trace_flat  # noqa: E402
from tracer.tree_util import tree_flatten  # noqa: E402

try:
    CUDA = NumbaCudaBackend()
except tr.TracerError as e:  # numba-cuda without a GPU and without the simulator
    pytest.skip(str(e), allow_module_level=True)

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # NumPy in kernels
              pytest.mark.usefixtures("simulator_threads")]
RTOL = {2: 2e-3, 4: 2e-5, 8: 1e-12, 16: 1e-12}  # libdevice differs from NumPy by an ulp or so


def _leaves(x):
    return tree_flatten(x)[0]


def _trace(fn, args):
    graph, captured = trace_flat(lambda *xs: _leaves(fn(*xs)), [aval_of(a) for a in args], "main")
    assert not captured
    return graph


def _check(got, want, rtol=0.0, atol=0.0, what=""):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, \
        (what, got.dtype, want.dtype, got.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        size = want.dtype.itemsize // (2 if want.dtype.kind == "c" else 1)
        np.testing.assert_allclose(got, want, rtol=max(rtol, RTOL[size]), atol=atol, err_msg=what)


def _compare(fn, args, rtol=0.0, atol=0.0):
    graph = _trace(fn, args)
    ins = [np.asarray(a, dtype=aval_of(a).dtype) for a in args]
    with np.errstate(all="ignore"):
        want = run_graph(graph, ins)
    exe = CUDA.compile(graph)
    got = exe(*ins)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        _check(g, w, rtol, atol, getattr(fn, "__name__", ""))
    return exe


# ------------------------------------------------------------------ the op table

def _ops_of(graph):
    names = set()
    for eqn in graph.eqns:
        names.add(eqn.op.name)
        for sub in subgraphs(eqn.params):
            names |= _ops_of(sub)
    return names


def _selected():
    """Every case of the ops with device code; one case of each op run on the host."""
    chosen, host_seen = [], set()
    for case in all_cases():
        host = _ops_of(_trace(case.fn, case.args)) & HOST_OPS
        if host and host <= host_seen:
            continue
        host_seen |= host
        chosen.append(case)
    return chosen


CASES = _selected()


@pytest.fixture
def host_ops_by_reference(monkeypatch):
    """Host ops run by the interpreter instead of the CPU backend: what is tested here is
    the cuda side (operands out, results back in); the CPU backend's code for each op is
    tested with the CPU backend, and compiling it again here costs seconds per op
    (`test_host_ops_copy_through_the_cpu_backend` runs the real thing)."""
    from tracer.backend import base
    real = base.get_backend
    monkeypatch.setattr(base, "get_backend",
                        lambda name: real("interpreter" if name == "cpu" else name))


@pytest.mark.usefixtures("host_ops_by_reference")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_op_table_case_matches_the_interpreter(case):
    _compare(case.fn, case.args, rtol=case.rtol, atol=case.atol)


CONV_CASES = [c for c in CASES if c.name.split(":")[0] in (
    "conv", "conv_with_general_padding", "conv_general_dilated")]


@pytest.mark.parametrize("kernel", ["block per output", "im2col and GEMM"])
@pytest.mark.parametrize("case", CONV_CASES, ids=[c.name for c in CONV_CASES])
def test_each_convolution_kernel_matches_the_interpreter(case, kernel, monkeypatch):
    """The kernels the host picks from the sizes (a block per output for few outputs of
    long sums; im2col and the GEMM for float convolutions without groups), each forced
    on every convolution case of the op table."""
    asked = []
    by_gemm = kernel == "im2col and GEMM"
    monkeypatch.setattr(launch, "few_long_sums", lambda *sizes: not by_gemm)
    monkeypatch.setattr(launch, "conv_as_gemm", lambda *sizes: asked.append(sizes) or True)
    _compare(case.fn, case.args, rtol=max(case.rtol, 1e-6), atol=case.atol)
    convs = [e for e in _trace(case.fn, case.args).eqns if e.op.name == "conv_general_dilated"]
    assert bool(asked) == (by_gemm and any(map(as_gemm_applies, convs)))


def test_every_op_runs_on_the_device_or_is_a_listed_host_op():
    on_host = sorted(set(OPS) - device_ops())
    assert on_host == sorted(HOST_OPS - device_ops()), \
        "an op without device code must be listed in cuda/emit/host.py HOST_OPS (or get a kernel)"
    assert HOST_OPS <= set(OPS), f"HOST_OPS names unknown ops: {sorted(HOST_OPS - set(OPS))}"
    assert not HOST_OPS & device_ops() and set(HOST_FALLBACKS) <= device_ops()
    assert sorted(HOST_OPS) == ["cholesky", "custom_call", "custom_lin", "eigh", "fft", "lu",
                                "qr", "sort", "svd", "triangular_solve"]


def test_host_ops_copy_through_the_cpu_backend():
    x = np.array([3, 1, 2, 0], np.complex64)
    exe = _compare(lambda x: [ops.fft(x * 2, "FFT", (4,)) + 1], [x])
    assert "host_ops[0](" in exe.source


# ------------------------------------------------------------------ kernels

def _kernels(exe):
    return exe.source.count("@cuda.jit")


def test_an_elementwise_chain_is_one_kernel():
    def gelu(x):
        return 0.5 * x * (1.0 + tnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    x = np.linspace(-3, 3, 9).astype(np.float32)
    # (at x = -3, 1 + tanh(...) cancels: libdevice's tanhf, an ulp from NumPy's, moves the
    # result by ~1e-7 absolute, 2.5e-5 relative, on a real GPU)
    exe = _compare(gelu, [x], atol=1e-6)
    assert _kernels(exe) == 1 and "tanh_f32(" in exe.source


def test_row_softmax_is_one_kernel_of_one_block_per_row():
    def softmax(x):
        e = tnp.exp(x - tnp.max(x, axis=1, keepdims=True))
        return e / tnp.sum(e, axis=1, keepdims=True)
    x = np.random.default_rng(0).standard_normal((3, 37)).astype(np.float32)
    exe = _compare(softmax, [x], rtol=1e-5)
    assert _kernels(exe) == 1 and "def rows_" in exe.source


def _cosine(u, v):
    return tnp.dot(u, v) / (tnp.sqrt(tnp.dot(u, u)) * tnp.sqrt(tnp.dot(v, v)))


def _rows_3d(x):  # a row group whose reductions keep a dim after the shared ones
    m = tnp.max(x, axis=2, keepdims=True)
    return tnp.sum(tnp.exp(x - m), axis=(1, 2)), tnp.sum(x, axis=2)


@pytest.mark.parametrize("fuse", [True, False])
def test_fused_structures_match_the_interpreter(fuse):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(6, 40)).astype(np.float32)
    x[3, 7] = np.nan
    g = rng.normal(size=40).astype(np.float32)
    backend = CUDA if fuse else NumbaCudaBackend(fuse=False)
    cases = [(models.layernorm, [x, g]), (models.logsumexp, [x]),
             (models.columns, [x.astype(np.float64)]),
             (models.mixed, [x[:, :4], g[:5].reshape(1, 5).repeat(4, 0), np.int32(3)]),
             (tr.vmap(_cosine), [x, x[::-1]]), (_rows_3d, [x.reshape(3, 4, 20)])]
    for fn, args in cases:
        graph = _trace(fn, args)
        with np.errstate(all="ignore"):
            want = run_graph(graph, [np.asarray(a) for a in args])
        for got, w in zip(backend.compile(graph)(*args), want, strict=True):
            _check(got, w, 2e-5, 1e-6, getattr(fn, "__name__", "vmap"))


def test_long_rows_are_reduced_in_chunks_and_combined():
    x = np.random.default_rng(1).standard_normal((2, 300)).astype(np.float32)
    exe = _compare(lambda x: [tnp.sum(x, axis=1), tnp.max(x)], [x], rtol=1e-5)
    assert "combine_" in exe.source


@pytest.mark.parametrize("width", [0, 1, 7, 9, 31, 33, 40, 65, 100])
def test_row_reductions_fold_every_column_once_whatever_the_width(width):
    """Rows of fewer columns than a block has threads, of several turns of the block and
    with a remainder, with inits that are not the identity (applied once) on integers,
    where a column folded twice or missed shows."""
    x = (np.arange(3 * width, dtype=np.int32).reshape(3, width) % 17) - 5

    def reductions(x):
        return [ops.reduce(x, np.int32(10), ops.add, [1]),
                ops.reduce(x, np.int32(-100), ops.max, [1]), tnp.sum(x * 3, axis=1)]
    _compare(reductions, [x])
    if width:
        y = np.random.default_rng(width).standard_normal((3, width)).astype(np.float32)
        _compare(lambda y: tnp.exp(y) / tnp.sum(tnp.exp(y), axis=1, keepdims=True), [y],
                 rtol=1e-5)


def test_an_order_sensitive_fold_keeps_the_element_order():
    """argmax with ties: the sequential fold picks the last maximum (seed golden)."""
    def argmax(v):
        k = ops.iota(np.int32, v.shape, 0)
        return tuple(ops.reduce((v, k), (-np.inf, 0), _last_max, [0]))
    v = np.zeros(200, np.float32)
    v[[3, 77, 150]] = 5.0
    _compare(argmax, [v])


def _last_max(m, am, v, i):
    take = ops.ge(v, m)
    return ops.select(take, v, m), ops.select(take, i, am)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_gemm_layouts_and_dtypes(dtype, layout):
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((5, 7)) * 4).astype(dtype)
    b = (rng.standard_normal((7, 6)) * 4).astype(dtype)
    a = a.T.copy() if layout[0] == "t" else a
    b = b.T.copy() if layout[1] == "t" else b

    def f(a, b):
        return (a.T if layout[0] == "t" else a) @ (b.T if layout[1] == "t" else b)
    _compare(f, [a, b], rtol=1e-5)


def test_batched_gemm_with_dims_out_of_order():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((3, 4, 2, 5)), rng.standard_normal((5, 2, 3))
    dims = (((3, 2), (0, 1)), ((0,), (2,)))
    _compare(lambda x, y: [ops.dot_general(x, y, dims)], [x, y])


@pytest.mark.parametrize("mode", ["atomic", "unique", "serial"])
def test_scatter_modes(mode):
    operand = np.zeros((5, 3), np.float32 if mode == "atomic" else np.int32)
    idx = np.array([[4], [0], [4], [2]], np.int32) if mode != "unique" else \
        np.array([[4], [0], [9], [2]], np.int32)
    upd = np.arange(12, dtype=operand.dtype).reshape(4, 3)
    dn = ops.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    combine = ops.add if mode == "atomic" else (lambda a, b: b)
    exe = _compare(lambda o, i, u: [ops.scatter(o, i, u, combine, dn,
                                                unique_indices=mode == "unique")],
                   [operand, idx, upd])
    assert ("cuda.atomic.add" in exe.source) == (mode == "atomic")


# ------------------------------------------------------------------ control flow, scalars

def test_while_loop_reads_its_predicate_back_from_the_device():
    def f(x):
        return ops.while_loop(lambda c: tnp.sum(c[1]) < 100.0,
                              lambda c: (c[0] + 1, c[1] * 2.0), (0, x))
    _compare(f, [np.array([1.0, 2.0], np.float32)])


def test_cond_scan_and_rank0_values():
    def f(p, xs, s):
        y = ops.cond(p > 0, lambda v: v * s, lambda v: v - s, xs)
        carry, ys = ops.scan(lambda c, x: (c + x, c * x), s, y)
        return carry, ys
    xs = np.array([1.5, -2.0, 3.0], np.float16)
    _compare(f, [np.int32(1), xs, np.float16(0.5)])
    _compare(f, [np.int32(0), xs, np.float16(0.5)])


def test_random_bits_are_the_references_bits():
    """tracer.random on the device: the same bits as the reference (and so as the CPU
    backend, which its own tests hold to the reference bit for bit)."""
    def draw(key):
        k1, k2 = tr.random.split(key)
        return tr.random.uniform(k1, (3, 5)), tr.random.randint(k2, (7,), 0, 1000), \
            tr.random.bits(k2, (4,)), tr.random.normal(k2, (4,))
    key = np.asarray(tr.random.key(42))
    *exact, normal = CUDA.compile(_trace(draw, [key]))(key)
    *want, want_normal = tr.jit(draw, backend="interpreter")(key)
    for got, w in zip(exact, want, strict=True):
        np.testing.assert_array_equal(got, w)
    _check(normal, want_normal, what="normal")  # (libdevice's log and erf_inv's ulps)


# ------------------------------------------------------------------ data

def test_device_put_round_trips_and_jit_keeps_results_on_the_device():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = tr.device_put(x, "cuda")
    assert is_device_array(d) and d.shape == (2, 3) and d.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(d), x)
    f = tr.jit(lambda a, s: (a * s, tnp.sum(a)), backend="cuda")
    out, total = f(d, np.float32(2))
    assert is_device_array(out) and is_device_array(total) and total.shape == ()
    np.testing.assert_array_equal(np.asarray(out), x * 2)
    host_out, host_total = f(x, np.float32(2))
    # (host results are NumPy arrays with JAX's methods, as the cpu backend's: see test_jit)
    assert isinstance(host_out, np.ndarray) and type(np.asarray(host_out)) is np.ndarray
    assert float(host_total) == 15.0
    assert tr.device_put({"a": x}, "cpu")["a"] is not None
    assert "cuda" in tr.devices()


def test_jit_caches_by_shape_and_dtype_for_host_and_device_arguments():
    f = tr.jit(lambda a: tnp.exp(a) + 1.0, backend="cuda")
    x = np.ones(4, np.float32)
    f(x)
    f(tr.device_put(x, "cuda"))
    f(x + 1)
    info = f.cache_info()
    assert (info.misses, info.hits) == (1, 2)
    f(np.ones(5, np.float32))
    assert f.cache_info().misses == 2


def test_a_new_size_reuses_the_generated_module():
    def softmax(x):
        e = tnp.exp(x - tnp.max(x, axis=1, keepdims=True))
        return e / tnp.sum(e, axis=1, keepdims=True)
    first, second = (CUDA.compile(_trace(softmax, [np.zeros((n, 33), np.float32)]))
                     for n in (8, 21))
    assert first.source == second.source and not second.fresh_compile
    code = re.sub(r"#.*", "", second.source)  # (comments name the user's lines)
    literals = set(re.findall(r"(?<![\w.])\d+(?![\w.])", code))  # (not `col_21`)
    assert not literals & {"21", "33"}


def test_special_values_and_empty_arrays():
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1e30, -1e-30], np.float32)
    _compare(lambda x: [tnp.exp(x), tnp.floor(x), tnp.sqrt(x), x.astype(np.int8),
                        tnp.maximum(x, 0.0)], [x])
    e = np.zeros((0, 3), np.float32)
    _compare(lambda e: [tnp.sum(e, axis=0), e * 2, tnp.max(e, axis=1)], [e])

"""Every kernel the cuda backend generates compiles to PTX for sm_90 (the H200), with
numba-cuda's NVVM, on a machine without a GPU.

The simulator runs kernels as Python, so it cannot catch code numba-cuda would
reject (an unsupported NumPy function, a type it cannot unify): this test
compiles them for real. It runs in a subprocess, because the other backend
tests switch numba.cuda to the simulator, which must be decided before numba
is imported; conftest.py starts it as soon as collection has selected this
test, so it compiles on another core while the simulator tests run. The
graphs: the kernels that reductions, row groups, GEMM, scatter, the RNG, window,
batch norm, convolution and bit-level ops generate only for some shapes and
dtypes, then an op-table case for each op not seen yet (`TRACER_PTX_ALL=1`:
every op-table case, a few minutes). Each distinct kernel compiles once.

numba-cuda compiles a device function called by a kernel for "the current
device", which does not exist here, so the subprocess presents an sm_90
device to that one lookup.
"""

from __future__ import annotations

import atexit
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import types
from unittest import mock

import numpy as np
import pytest

pytest.importorskip("tracer.backend.cuda.backend", reason="numba-cuda is not installed "
                    "(pip install 'numba-cuda[cu13]')", exc_type=ImportError)

REPO = str(pathlib.Path(__file__).resolve().parents[3])  # the repository root
CC = (9, 0)


_JOB: subprocess.Popen | None = None


def start_job() -> subprocess.Popen:
    """Start the compile job (this module as a script) in the background; conftest.py
    calls this when collection has selected the test, so the job runs on another core
    while the simulator tests run. Its output goes to files (no pipe to fill up)."""
    global _JOB
    if _JOB is None:
        out = tempfile.TemporaryFile("w+")
        path = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": path}
        _JOB = subprocess.Popen([sys.executable, "-m", "tests.backend.cuda.test_ptx"],
                                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        _JOB.output = out  # type: ignore[attr-defined]
        atexit.register(_JOB.kill)  # (a pytest run that ends before the test)
    return _JOB


def test_every_generated_kernel_compiles_to_ptx_for_sm90():
    job = start_job()
    job.wait(timeout=1500)
    job.output.seek(0)
    text = job.output.read()
    assert job.returncode == 0, text[-6000:]
    report = json.loads(text.strip().splitlines()[-1])
    if report.get("skip"):
        pytest.skip(report["skip"])
    assert not report["failures"], "\n".join(report["failures"])
    assert report["kernels"] > 80


# ------------------------------------------------------------------ the subprocess

def _graphs():
    """(name, graph) of the op-table cases to compile (one per op unless TRACER_PTX_ALL)."""
    from tests.op_db import all_cases
    from tracer.core import aval_of, subgraphs
    from tracer.tracing import trace_flat
    from tracer.tree_util import tree_flatten

    def trace(fn, args):
        return trace_flat(lambda *xs: tree_flatten(fn(*xs))[0], [aval_of(a) for a in args],
                          "main")[0]

    def ops_of(graph):
        names = {e.op.name for e in graph.eqns}
        for e in graph.eqns:
            for sub in subgraphs(e.params):
                names |= ops_of(sub)
        return names

    every = os.environ.get("TRACER_PTX_ALL") == "1"
    seen: set[str] = set()
    for name, fn, args in _extra_cases():  # (first: they cover most ops' variants)
        graph = trace(fn, args)
        seen |= ops_of(graph)
        yield name, graph
    for case in all_cases():
        graph = trace(case.fn, case.args)
        if every or not ops_of(graph) <= seen:
            seen |= ops_of(graph)
            yield case.name, graph


def _extra_cases():
    import tracer.numpy as tnp
    from tracer import ops

    def softmax(x):
        e = tnp.exp(x - tnp.max(x, axis=1, keepdims=True))
        return e / tnp.sum(e, axis=1, keepdims=True)

    def layernorm(x, g):
        m = tnp.mean(x, axis=-1, keepdims=True)
        v = tnp.mean((x - m) ** 2, axis=-1, keepdims=True)
        return (x - m) / tnp.sqrt(v + 1e-5) * g

    dn = ops.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    x32, x16 = np.ones((4, 300), np.float32), np.ones((4, 30), np.float16)
    idx, upd = np.zeros((2, 1), np.int32), np.ones((2, 300), np.float32)
    yield "softmax f32", softmax, (x32,)
    yield "softmax f16", softmax, (x16,)
    yield "layernorm", layernorm, (x32, np.ones(300, np.float32))
    yield "column sums", lambda x: tnp.sum(x, axis=0), (x32,)
    yield "full sum f16", lambda x: tnp.sum(x), (x16,)
    for dt in (np.complex64, np.complex128):  # NumPy's special values (numba/lib/complex_math.py)
        z = np.ones(8, dt)
        yield f"complex math {np.dtype(dt).name}", lambda z, w: (
            ops.sin(z), ops.cos(z), ops.tan(z), ops.tanh(z), ops.exp(z), ops.pow(z, w),
            ops.mul(z, w), ops.max(z, w), ops.sign(z)), (z, z)
    # GEMM: every dtype path (float += , float16 loads and stores, integer wrapping,
    # complex) and both layouts of A and B, each compiled once.
    for dt, transposed in ((np.float32, False), (np.float16, False), (np.int8, False),
                           (np.float64, True), (np.int32, True), (np.complex64, True)):
        a = np.ones((3, 5, 7), dt)
        if transposed:
            yield f"gemm^T {np.dtype(dt).name}", lambda a: a.transpose(0, 2, 1) @ a, (a,)
        else:
            yield f"gemm {np.dtype(dt).name}", lambda a, b: a @ b, (a, np.ones((3, 7, 2), dt))
    for combine, name in ((ops.add, "add"), (lambda a, b: b, "replace"), (ops.max, "max")):
        yield f"scatter {name}", lambda o, i, u, c=combine: ops.scatter(o, i, u, c, dn), \
            (np.zeros((5, 300), np.float32), idx, upd)
    yield "scatter unique", lambda o, i, u: ops.scatter(o, i, u, lambda a, b: b, dn,
                                                        unique_indices=True), \
        (np.zeros((5, 300), np.float32), idx, upd)
    yield from _device_op_cases()


def _device_op_cases():
    """The variants of the RNG, window, batch norm, convolution and bit-level kernels."""
    import tracer.numpy as tnp
    from tracer import ops

    state2, state3 = np.zeros(2, np.uint64), np.zeros(3, np.uint64)
    for algorithm, state, dtype in (("three_fry", state2, np.uint8),
                                    ("three_fry", state2, np.int64),
                                    ("philox", state3, np.uint32), ("philox", state2, np.uint64)):
        yield f"rng_bit_generator {algorithm} {np.dtype(dtype).name}", \
            lambda s, a=algorithm, d=dtype: ops.rng_bit_generator(s, (3, 4), d, a), (state,)
    for a, b in ((np.float16(0), np.float16(1)), (np.int8(-3), np.int8(9))):
        yield f"rng_uniform {a.dtype}", lambda a, b: ops.rng_uniform(a, b, (5,)), (a, b)
    yield "rng_normal f16", lambda m: ops.rng_normal(m, m, (2, 3)), (np.float16(1),)
    x16, x32 = np.ones((4, 6), np.float16), np.ones((4, 6), np.float32)
    geo = ((2, 3), (2, 1), ((1, 0), (2, 1)), (2, 1), (1, 2))
    yield "reduce_window checked f16", lambda x: ops.reduce_window(
        x, np.float16(0), ops.add, *geo), (x16,)
    yield "reduce_window pairs", lambda x: ops.reduce_window(
        (x, ops.iota(np.int32, x.shape, 1)), (np.float32(-np.inf), np.int32(0)),
        lambda m, i, v, j: (ops.max(m, v), ops.select(ops.gt(v, m), j, i)), *geo), (x32,)
    yield "select_and_scatter f16", lambda x, s: ops.select_and_scatter(
        x, ops.ge, (3, 3), (1, 2), "SAME", s, np.float16(0), ops.add), \
        (x16, np.ones((4, 3), np.float16))
    for x in (x16, x32.astype(np.float64)):
        v = np.ones(6, x.dtype)
        yield f"batch_norm {x.dtype}", lambda x, v: (
            ops.batch_norm_training(x, v, v, 1e-3, 1), ops.batch_norm_inference(
                x, v, v, v, v, 1e-3, 1), ops.batch_norm_grad(x, v, v, v, x, 1e-3, 1)), (x, v)
    for dt in (np.float16, np.int32, np.complex64):
        lhs, rhs = np.ones((2, 4, 5, 5), dt), np.ones((6, 2, 3, 3), dt)
        yield f"conv {np.dtype(dt).name}", lambda x, w: ops.conv_general_dilated(
            x, w, (2, 1), [(1, 2), (0, -1)], (1, 2), (2, 1), feature_group_count=2), (lhs, rhs)
    yield "conv batch groups", lambda x, w: ops.conv_general_dilated(
        x, w, (1,), "SAME", batch_group_count=2), (np.ones((4, 3, 5)), np.ones((2, 3, 2)))
    def scalar_bits(h):
        wide = ops.bitcast_convert_type(ops.convert_element_type(h, np.float32), np.uint8)
        return (ops.reduce_precision(h, 5, 3), ops.bitcast_convert_type(h, np.int16),
                ops.bitcast_convert_type(ops.bitcast_convert_type(h, np.uint16), np.float16),
                tnp.sum(wide))
    yield "bits of f16 scalars", scalar_bits, (np.float16(1),)


def _copy_kernels():
    """cuda_arrays' copy kernels (dtype conversions, strided views made contiguous) with
    the parameter types they get."""
    from numba import types

    from tracer.backend.cuda.lib.arrays import copy_kernel
    f16, f32 = types.Array(types.float16, 1, "C"), types.Array(types.float32, 1, "C")
    yield copy_kernel(1), (f16, f32)
    yield copy_kernel(1), (f32, f16)
    yield copy_kernel(2), (types.Array(types.float32, 2, "A"), types.Array(types.float32, 2,
                                                                            "C"))


def _nvvm_missing() -> str | None:
    from numba import cuda
    try:
        cuda.compile_ptx(lambda x: None, "void(float32[::1])", cc=CC)
    except Exception as e:  # any failure here means: no usable NVVM
        return f"numba-cuda cannot compile PTX here (NVVM unavailable): {e}"
    return None


def main() -> None:
    import numba.cuda.dispatcher as dispatcher
    from numba import cuda

    from tracer.backend.cuda import cache as cuda_cache
    from tracer.backend.cuda.generate import generate

    reason = _nvvm_missing()
    if reason:
        print(json.dumps({"skip": reason}))
        return
    device = types.SimpleNamespace(compute_capability=CC)
    compiled: set[tuple] = set()
    failures = []
    with mock.patch.object(dispatcher, "get_current_device", lambda: device):
        for name, graph in _graphs():
            try:
                module = generate(graph)
                host, _ = cuda_cache.load(module.source, module.host)
                for kernel in module.kernels:
                    fn = host.__globals__[kernel.name].py_func
                    key = (fn.__code__.co_code, fn.__code__.co_consts, repr(kernel.arg_types))
                    if key not in compiled:
                        cuda.compile_ptx(fn, kernel.arg_types, cc=CC)
                        compiled.add(key)
            except Exception as e:  # reported per graph
                failures.append(f"{name}: {type(e).__name__}: {str(e).strip()[:500]}")
        for kernel, arg_types in _copy_kernels():
            try:
                cuda.compile_ptx(kernel.py_func, arg_types, cc=CC)
                compiled.add((kernel.py_func.__code__.co_code, repr(arg_types)))
            except Exception as e:  # reported per kernel
                failures.append(f"copy kernel {arg_types}: {type(e).__name__}: {e}"[:600])
    print(json.dumps({"kernels": len(compiled), "failures": failures}))


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    main()

"""Every kernel the cuda backend generates compiles to PTX for sm_90 (the H200), with
numba-cuda's NVVM, on a machine without a GPU.

The simulator runs kernels as Python, so it cannot catch code numba-cuda would
reject (an unsupported NumPy function, a type it cannot unify): this test
compiles them for real. It runs in a subprocess, because the other backend
tests switch numba.cuda to the simulator, which must be decided before numba
is imported. The graphs: one op-table case for each op, plus kernels that
reductions, row groups, GEMM and scatter only generate for some shapes and
dtypes (`TRACER_PTX_ALL=1`: every op-table case, a few minutes).

numba-cuda compiles a device function called by a kernel for "the current
device", which does not exist here, so the subprocess presents an sm_90
device to that one lookup.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from unittest import mock

import numpy as np
import pytest

pytest.importorskip("tracer.backend.numba_cuda", reason="numba-cuda is not installed "
                    "(pip install 'numba-cuda[cu13]')", exc_type=ImportError)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CC = (9, 0)


def test_every_generated_kernel_compiles_to_ptx_for_sm90():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": REPO}
    proc = subprocess.run([sys.executable, "-m", "tests.backend.test_cuda_ptx"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    if report.get("skip"):
        pytest.skip(report["skip"])
    assert not report["failures"], "\n".join(report["failures"])
    assert report["kernels"] > 50


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
    for case in all_cases():
        graph = trace(case.fn, case.args)
        if every or not ops_of(graph) <= seen:
            seen |= ops_of(graph)
            yield case.name, graph
    for name, fn, args in _extra_cases():
        yield name, trace(fn, args)


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
    for dt in (np.float32, np.float64, np.float16, np.int32, np.int8, np.complex64):
        a = np.ones((3, 5, 7), dt)
        yield f"gemm {np.dtype(dt).name}", lambda a, b: a @ b, (a, np.ones((3, 7, 2), dt))
        yield f"gemm^T {np.dtype(dt).name}", lambda a: a.transpose(0, 2, 1) @ a, (a,)
    for combine, name in ((ops.add, "add"), (lambda a, b: b, "replace"), (ops.max, "max")):
        yield f"scatter {name}", lambda o, i, u, c=combine: ops.scatter(o, i, u, c, dn), \
            (np.zeros((5, 300), np.float32), idx, upd)
    yield "scatter unique", lambda o, i, u: ops.scatter(o, i, u, lambda a, b: b, dn,
                                                        unique_indices=True), \
        (np.zeros((5, 300), np.float32), idx, upd)


def _nvvm_missing() -> str | None:
    from numba import cuda
    try:
        cuda.compile_ptx(lambda x: None, "void(float32[::1])", cc=CC)
    except Exception as e:  # noqa: BLE001 - any failure here means: no usable NVVM
        return f"numba-cuda cannot compile PTX here (NVVM unavailable): {e}"
    return None


def main() -> None:
    import numba.cuda.dispatcher as dispatcher
    from numba import cuda

    from tracer.backend import cuda_cache
    from tracer.backend.cuda_codegen import generate

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
                module = generate(graph, "main")
                host, _ = cuda_cache.load(module.source, "main")
                for kernel in module.kernels:
                    fn = host.__globals__[kernel.name].py_func
                    key = (fn.__code__.co_code, fn.__code__.co_consts, repr(kernel.arg_types))
                    if key not in compiled:
                        cuda.compile_ptx(fn, kernel.arg_types, cc=CC)
                        compiled.add(key)
            except Exception as e:  # noqa: BLE001 - reported per graph
                failures.append(f"{name}: {type(e).__name__}: {str(e).strip()[:500]}")
    print(json.dumps({"kernels": len(compiled), "failures": failures}))


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    main()

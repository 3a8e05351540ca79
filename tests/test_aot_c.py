"""`tracer.aot`'s C library (the seeds' tfcompile): built by the system C compiler and run
with no Python in the process; results equal `tr.jit`'s on the same inputs."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import aot, ops
from tracer.aot.c_library import build_program, cc
from tracer.aot.c_sources import fill_value

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None,
                                reason="needs a C compiler")

# The seeds' tfcompile example, as a C program: a 2x3 by 3x2 matmul whose result starts
# with 58. Argument 0 is the caller's own buffer; it also counts the mappings of libpython
# or of a CPython extension module in its process (there must be none; NumPy's OpenBLAS,
# which lives under site-packages, may be there).
SEED_MAIN = textwrap.dedent("""
    #include <stdio.h>
    #include <string.h>
    #include "matmul.h"

    int main(void) {
      _Alignas(32) float x[6] = {1, 2, 3, 4, 5, 6};
      matmul *m = matmul_new();
      if (!m) return 1;
      matmul_set_arg0_data(m, x);
      float *y = matmul_arg1_data(m);
      for (int i = 0; i < 6; i++) y[i] = 7 + i;
      if (matmul_run(m) != 0) return 2;
      const float *r = matmul_result0_data(m);
      printf("%g %g %g %g\\n", r[0], r[1], r[2], r[3]);
      matmul_free(m);
      FILE *maps = fopen("/proc/self/maps", "r");
      char line[4096];
      int python = 0;
      while (maps && fgets(line, sizeof line, maps))
        python += strstr(line, "libpython") != NULL || strstr(line, ".cpython-") != NULL;
      printf("python mappings: %d\\n", python);
      return 0;
    }
""")


def test_seed_matmul_runs_from_a_c_main(tmp_path):
    f32 = np.float32
    paths = aot.compile(lambda x, y: x @ y, tr.ShapedArray((2, 3), f32),
                        tr.ShapedArray((3, 2), f32), name="matmul", out_dir=str(tmp_path))
    assert {"header", "library", "test", "benchmark", "python"} <= set(paths)
    (tmp_path / "main.c").write_text(SEED_MAIN)
    cc(["-O2", "-Wall", "-Werror", "-o", "main", "main.c", "-L.", "-lmatmul",
        "-Wl,-rpath,$ORIGIN"], str(tmp_path))
    done = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, env={},
                          timeout=60, check=True)
    assert done.stdout.splitlines() == ["58 64 139 154", "python mappings: 0"]
    linked = subprocess.run(["ldd", paths["library"]], capture_output=True, text=True,
                            check=True).stdout
    assert "libpython" not in linked and ".cpython-" not in linked


def _c_results(name: str, out_dir: str) -> list[np.ndarray]:
    """Build and run NAME_test; its printed results, as complex where the dtype is."""
    exe = build_program(name, f"{name}_test", out_dir)
    text = subprocess.run([exe], capture_output=True, text=True, env={}, timeout=60,
                          check=True).stdout.splitlines()
    results = []
    for head, values in zip(text[0::2], text[1::2], strict=True):
        got = np.array(values.split(), dtype=np.float64)
        results.append(got[0::2] + 1j * got[1::2] if head.split()[1].startswith("c") else got)
    return results


def _fill(avals):
    return [fill_value(k, np.arange(a.size), a.dtype).reshape(a.shape)
            for k, a in enumerate(avals)]


def _check_against_jit(fn, avals, name, out_dir, rtol=1e-5):
    aot.compile(fn, *avals, name=name, out_dir=out_dir)
    want = tr.tree_util.tree_leaves(tr.jit(fn)(*_fill(avals)))
    got = _c_results(name, out_dir)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        np.testing.assert_allclose(g.reshape(w.shape), w.astype(g.dtype), rtol=rtol, atol=1e-6)


def _float_program(w1, b1, w2, x, flag):
    h = x @ w1 + b1
    gelu = 0.5 * h * (1 + tnp.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))
    z = gelu @ w2
    soft = tnp.exp(z - tnp.max(z, axis=1, keepdims=True))
    soft = soft / tnp.sum(soft, axis=1, keepdims=True)
    looped = ops.fori_loop(0, 4, lambda i, v: v * 0.5 + tnp.sin(v), z)
    branch = ops.cond(flag, lambda: tnp.abs(z), lambda: -z)
    edges = tnp.concatenate([tnp.pad(x[:, :2], ((0, 0), (1, 0))), x.T[:1].T], axis=1)
    products = {"gram": x.T @ x, "mv": w2.T @ b1, "vm": b1 @ w2,
                "batched": tnp.einsum("bij,bjk->bik", w1.reshape(2, 2, 6), tnp.stack([w2, 2 * w2]))}
    return {"soft": soft, "looped": looped, "branch": branch, "edges": edges,
            "same_x": x, "const": np.arange(3.0), **products}


def test_float_program_matches_jit(tmp_path):
    f32 = np.float32
    avals = [tr.ShapedArray((4, 6), f32), tr.ShapedArray((6,), f32),
             tr.ShapedArray((6, 3), f32), tr.ShapedArray((5, 4), f32),
             tr.ShapedArray((), np.bool_)]
    _check_against_jit(_float_program, avals, "floats", str(tmp_path))


def _int_program(a, b, c):
    s = a * 3 - b // 2 + tnp.where(a > b, a, b) % 5
    return tnp.sum(s, axis=0), (a.astype(np.float64) / 3) @ c, tnp.cumsum(b)


def test_integer_and_float64_program_matches_jit(tmp_path):
    avals = [tr.ShapedArray((3, 4), np.int32), tr.ShapedArray((3, 4), np.int32),
             tr.ShapedArray((4, 2), np.float64)]
    _check_against_jit(_int_program, avals, "ints", str(tmp_path), rtol=1e-12)


def test_an_op_outside_the_c_path_is_refused_at_compile_time(tmp_path):
    message = "cannot hold this program: its code calls rf_execute.*Ops outside the C path: fft"
    with pytest.raises(tr.UnsupportedOpError, match=message):
        aot.compile(lambda x: tnp.fft.rfft(x), tr.ShapedArray((64,), np.float64),
                    name="spectrum", out_dir=str(tmp_path))


def test_benchmark_program_runs(tmp_path):
    aot.compile(lambda x: tnp.tanh(x) * 2, tr.ShapedArray((64,), np.float32), name="tanh2",
                out_dir=str(tmp_path))
    exe = build_program("tanh2", "tanh2_benchmark", str(tmp_path))
    out = subprocess.run([exe, "50"], capture_output=True, text=True, env={}, timeout=60,
                         check=True).stdout
    assert out.startswith("tanh2_run: 50 runs, median ")


def _products(a, b, v):
    return a @ b, a.T @ a, a @ v, v @ b, v @ v


def test_products_without_blas_run_as_loops(tmp_path, monkeypatch):
    """Where NumPy ships no OpenBLAS, every product shape runs as loops, and the library
    links against nothing but libc and libm."""
    from tracer.aot import c_kernel
    monkeypatch.setattr(c_kernel, "bundled_openblas", lambda: None)
    avals = [tr.ShapedArray((5, 4), np.float32), tr.ShapedArray((4, 3), np.float32),
             tr.ShapedArray((4,), np.float32)]
    _check_against_jit(_products, avals, "loops", str(tmp_path))
    linked = subprocess.run(["ldd", str(tmp_path / "libloops.so")], capture_output=True,
                            text=True, check=True).stdout
    assert "openblas" not in linked

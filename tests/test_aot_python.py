"""`tracer.aot` writes NAME.py: it runs with NumPy and numba in a process that cannot
import tracer, gives what `tr.jit` gives, checks its arguments, and caches its code."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import aot, ops

RNG = np.random.default_rng(1)
W1 = RNG.standard_normal((3, 8)).astype(np.float32)
B1 = RNG.standard_normal(8).astype(np.float32)
W2 = RNG.standard_normal((8, 2)).astype(np.float32)
X = RNG.standard_normal((5, 3)).astype(np.float32)
SHIFT = np.linspace(0, 1, 8, dtype=np.float32)  # a constant baked into the program


def model(params, x):
    w1, b1, w2 = params
    h = tnp.tanh(x @ w1 + b1 + SHIFT)
    h = ops.fori_loop(0, 3, lambda i, v: v * 0.5 + tnp.sin(v), h)
    return {"out": h @ w2, "h": h}


# Runs in a fresh interpreter with every route to tracer removed (its editable install's
# finder and any path entry holding a `tracer` package), then calls NAME.py.
STANDALONE = textwrap.dedent("""
    import importlib, importlib.util, json, os, sys
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
    sys.path[:] = [p for p in sys.path
                   if not os.path.exists(os.path.join(p or ".", "tracer", "__init__.py"))]
    out_dir, name = sys.argv[1], sys.argv[2]
    sys.path.insert(0, out_dir)
    assert importlib.util.find_spec("tracer") is None, "tracer is still importable"
    import numpy as np
    m = importlib.import_module(name)
    a = np.load(os.path.join(out_dir, "args.npz"))
    res = m.run((a["w1"], a["b1"], a["w2"]), a["x"])
    np.savez(os.path.join(out_dir, "out.npz"), **res)
    errors = []
    for bad in [(a["w1"].astype(np.float64), a["x"]), (a["w1"], a["x"][:2])]:
        try:
            m.run((bad[0], a["b1"], a["w2"]), bad[1])
        except (TypeError, ValueError) as e:
            errors.append([type(e).__name__, str(e)])
    print(json.dumps({"errors": errors, "alias": m.model is m.run,
                      "tracer_loaded": "tracer" in sys.modules}))
""")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("aot")
    avals = ((tr.ShapedArray(W1.shape, np.float32), tr.ShapedArray(B1.shape, np.float32),
              tr.ShapedArray(W2.shape, np.float32)), tr.ShapedArray(X.shape, np.float32))
    paths = aot.compile(model, *avals, name="tiny_model", out_dir=str(out), c_library=False)
    np.savez(out / "args.npz", w1=W1, b1=B1, w2=W2, x=X)
    return out, paths


def _run_standalone(out: pathlib.Path) -> dict:
    done = subprocess.run([sys.executable, "-c", STANDALONE, str(out), "tiny_model"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_module_runs_without_tracer_and_matches_jit(built):
    out, paths = built
    assert pathlib.Path(paths["python"]).name == "tiny_model.py"
    report = _run_standalone(out)
    assert not report["tracer_loaded"] and report["alias"]
    want = tr.jit(model)((W1, B1, W2), X)
    got = np.load(out / "out.npz")
    for k in ("out", "h"):
        np.testing.assert_array_equal(got[k], want[k])
    (dtype_err, dtype_msg), (shape_err, shape_msg) = report["errors"]
    assert dtype_err == "TypeError"
    assert "argument 0 must be float32 [3, 8], got float64" in dtype_msg
    assert shape_err == "ValueError" and "must have shape [5, 3], got [2, 3]" in shape_msg
    # cache=True: numba wrote the machine code beside the module for the next process
    assert list(out.rglob("*.nbi")) and list(out.rglob("*.nbc"))


def test_cli_writes_the_module(tmp_path):
    (tmp_path / "seedmod.py").write_text("def matmul(x, y):\n    return x @ y\n")
    done = subprocess.run([sys.executable, "-m", "tracer.aot", "seedmod:matmul", "--arg",
                           "f32[2,3]", "--arg", "f32[3,2]", "--name", "mm", "--out-dir", "o",
                           "--no-c"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "o" / "mm.py").exists()


def test_cli_reports_a_bad_argument_spelling(tmp_path):
    (tmp_path / "seedmod.py").write_text("def neg(x):\n    return -x\n")
    done = subprocess.run([sys.executable, "-m", "tracer.aot", "seedmod:neg", "--arg",
                           "float[2]", "--name", "n", "--no-c"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2 and "'float[2]' is not a shape such as f32[2,3]" in done.stderr


def test_programs_that_need_tracer_are_refused(tmp_path):
    def f(x):
        return ops.custom_call("seed_myfunc", [x, x], tr.ShapedArray((3, 3), np.float32))
    import tests.opdb_misc  # noqa: F401  (registers seed_myfunc)
    with pytest.raises(tr.UnsupportedOpError, match="custom_call calls a function registered"):
        aot.compile(f, tr.ShapedArray((2,), np.float32), name="cc", out_dir=str(tmp_path))

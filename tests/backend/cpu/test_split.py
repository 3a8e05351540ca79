"""A host function split into parts computes what the interpreter computes, and what
the one function computes, bit for bit; parts are bounded, compiled on their own (not
linked into the host), and a new process loads host and parts from the disk cache.

Parts are forced small (a few lines) in most tests, so every program here is cut
between almost every pair of statements: values that cross parts (arrays, scalars,
reassigned names, loop state, values written in one branch of a conditional) are all
passed.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer.backend.cpu import cache as cpu_cache
from tracer.backend.cpu import split as cpu_split
from tracer.tree_util import tree_leaves

from ...checks import threaded

RTOL = {4: 4e-6, 8: 1e-12}


@pytest.fixture
def tiny_parts(monkeypatch):
    monkeypatch.setattr(cpu_split, "SPLIT_LINES", 3)
    monkeypatch.setattr(cpu_split, "SPLIT_MIN_LINES", 6)


def _agree(fn, *args):
    got = tr.jit(fn)(*args)
    want = tr.jit(fn, backend="interpreter")(*args)
    for g, w in zip(tree_leaves(got), tree_leaves(want), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL[g.dtype.itemsize], atol=1e-6)
    return tr.jit(fn).lower(*args).compile().source


def _mlp_grad(w1, w2, x):
    def loss(w1, w2):
        h = tnp.tanh(x @ w1)
        z = h @ w2
        return tnp.mean(tnp.log(tnp.sum(tnp.exp(z - tnp.max(z)), axis=1)))
    return tr.value_and_grad(loss, argnums=(0, 1))(w1, w2)


def test_a_split_gradient_step_matches_the_interpreter(tiny_parts):
    r = np.random.default_rng(0)
    source = _agree(_mlp_grad, r.random((6, 5)), r.random((5, 3)), r.random((4, 6)))
    assert "_part3(" in source


def _control(x, n):
    total = tnp.sum(x)  # a scalar that crosses parts
    y = tr.ops.cond(total > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
    y = tr.ops.fori_loop(0, n, lambda i, v: tnp.sin(v) + i, y)
    h, ys = tr.ops.scan(lambda c, row: (c * 0.5 + row, c.sum()), y[0], y)
    return h, ys, total * 3.0


def test_split_control_flow_and_scalars_match_the_interpreter(tiny_parts):
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    source = _agree(_control, x, 3)
    assert "_part" in source


def test_a_split_host_on_the_thread_pool_sets_its_threads_and_matches(tiny_parts):
    """A host whose nests run on threads starts with `set_pool_threads(n)`, a call
    with a literal that is no part: its parts still register and agree (it raised
    AttributeError when the split host's steps were read)."""
    def steps(v):
        e = tnp.exp(v - v.max(axis=1, keepdims=True))
        s = e.sum(axis=0)
        w = tnp.tanh(e / s) * v
        return w - w.mean(axis=0), s.sum() * 2.0

    source = _agree(steps, np.linspace(-1, 1, 1 << 16).reshape(256, 256))
    assert "_part" in source
    assert ("set_pool_threads(" in source) == threaded()


def test_a_short_host_function_is_not_split():
    source = tr.jit(lambda x: tnp.sin(x) * 2).lower(np.ones(3)).compile().source
    assert "_part" not in source


def _outputs(fn, args, split: bool, monkeypatch) -> list[np.ndarray]:
    with monkeypatch.context() as m:
        if split:
            m.setattr(cpu_split, "SPLIT_LINES", 3)
            m.setattr(cpu_split, "SPLIT_MIN_LINES", 6)
        else:
            m.setattr(cpu_split, "SPLIT_MIN_LINES", 1 << 30)
        compiled = tr.jit(fn).lower(*args).compile()
        assert ("_part1(" in compiled.source) == split
        return [np.asarray(a) for a in tree_leaves(compiled(*args))]


@pytest.mark.parametrize("case", ["mlp_grad", "control"])
def test_parts_compute_the_one_functions_bits(case, monkeypatch):
    r = np.random.default_rng(1)
    fn, args = {"mlp_grad": (_mlp_grad, (r.random((6, 5)), r.random((5, 3)), r.random((4, 6)))),
                "control": (_control, (np.linspace(-1, 1, 12).reshape(3, 4), 3))}[case]
    for got, want in zip(_outputs(fn, args, True, monkeypatch),
                         _outputs(fn, args, False, monkeypatch), strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def _chain(x, w, b):
    for i in range(12):
        x = tnp.tanh(x @ w + b) * 0.5
    return x


def test_a_long_host_calls_bounded_parts_that_are_not_linked_into_it(tmp_path, monkeypatch):
    monkeypatch.setattr(tr.config, "cache_dir", str(tmp_path))  # (fresh: IR inspectable)
    monkeypatch.setattr(cpu_split, "SPLIT_LINES", 40)
    monkeypatch.setattr(cpu_split, "SPLIT_MIN_LINES", 80)
    r = np.random.default_rng(0)
    args = [r.random((4, 8)).astype(np.float32), r.random((8, 8)).astype(np.float32) / 8,
            r.random(8).astype(np.float32)]
    compiled = tr.jit(_chain).lower(*args).compile()
    source = compiled.source
    parts = re.findall(r"\ndef (\w+_part\d+)\(", source)
    assert len(parts) >= 3
    lengths = [len(f.split("\n@")[0].splitlines()) for f in source.split("\ndef ")[1:]]
    assert max(lengths[:len(parts)]) <= 2 * cpu_split.SPLIT_LINES
    entry = cpu_cache._MODULES[cpu_cache.module_key(source)]
    host = getattr(entry.module, re.findall(r"\ndef (\w+)\(", source)[-1])
    ir = next(iter(host.inspect_llvm().values()))
    for name in parts:  # called by symbol: declared in the host, defined elsewhere
        assert not re.search(rf"define [^\n]*{name}", ir)
        assert re.search(rf"declare [^\n]*tracer_part\.[\w.]*{name}\.", ir)
    want = args[0]
    for _ in range(12):
        want = np.tanh(want @ args[1] + args[2]) * np.float32(0.5)
    np.testing.assert_allclose(np.asarray(compiled(*args)), want, rtol=2e-5, atol=1e-6)


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {repo!r})
    import tracer as tr, tracer.numpy as tnp
    from tracer import ops
    from tracer.backend.cpu import split
    from tracer.backend.cpu.cache import STATS
    split.SPLIT_LINES, split.SPLIT_MIN_LINES = 3, 6
    def fn(x, w):
        for _ in range(3):
            x = tnp.tanh(x @ w) + tnp.sum(x, axis=0)
        return x, tnp.max(x)
    def picks(x, s):  # (a part returns a constant, `elements = 1`, that a later one reads)
        y = ops.select_and_scatter(x, ops.ge, (2,), (1,), "SAME", s, 0.5, ops.add)
        return tnp.tanh(y) * 2.0 + tnp.sum(y)
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    w = np.linspace(0, 1, 16).reshape(4, 4)
    compiled = tr.jit(fn).lower(x, w).compile()
    out = [np.asarray(a).tolist() for a in compiled(x, w)]
    v, s = np.linspace(-1, 1, 6).astype(np.float32), np.linspace(0, 1, 6).astype(np.float32)
    out.append(np.asarray(tr.jit(picks)(v, s)).tolist())
    print(json.dumps(dict(out=out, compiles=STATS.compiles, disk_hits=STATS.disk_hits,
                          parts=compiled.source.count("@separately_compiled"))))
""")


def test_a_new_process_loads_the_host_and_its_parts_from_the_disk_cache(tmp_path):
    env = dict(os.environ, TRACER_CACHE_DIR=str(tmp_path), TRACER_COMPILE_MODE="sync")
    repo = str(pathlib.Path(__file__).resolve().parents[3])
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _CHILD.format(repo=repo)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["parts"] >= 3 and first["compiles"] == 2
    assert second["compiles"] == 0 and second["disk_hits"] == 2
    assert second["out"] == first["out"]


_UNBOUND_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {repo!r})
    import tracer as tr, tracer.numpy as tnp
    from tracer.backend.cpu import split
    split.SPLIT_LINES, split.SPLIT_MIN_LINES = 3, 6
    if {unbind}:  # (a warm load that binds no part: what a symbol mismatch amounts to)
        split.register_parts = lambda *args: None
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    try:
        print(float(tr.jit(lambda x: tnp.sum(tnp.tanh(x @ x.T) + 1.0))(x)))
    except tr.CacheError as e:
        print("CacheError", "tracer_part." in str(e))
""")


def test_a_cached_host_whose_parts_are_unbound_raises_instead_of_crashing(tmp_path):
    env = dict(os.environ, TRACER_CACHE_DIR=str(tmp_path), TRACER_COMPILE_MODE="sync")
    repo = str(pathlib.Path(__file__).resolve().parents[3])
    outs = []
    for unbind in (False, True):
        proc = subprocess.run([sys.executable, "-c", _UNBOUND_CHILD.format(
            repo=repo, unbind=unbind)], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout.strip().splitlines()[-1])
    float(outs[0])  # (the cold run computed)
    assert outs[1] == "CacheError True"


def test_executables_compiled_before_the_modules_were_dropped_still_run(tiny_parts, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setattr(tr.config, "cache_dir", str(tmp_path))
    cpu_cache.clear_memory()  # (so the first compile writes into tmp_path)
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    old = tr.jit(_control).lower(x, 2).compile()
    want = [np.asarray(a) for a in tree_leaves(old(x, 2))]
    cpu_cache.clear_memory()  # (the module is imported again: its parts load from disk)
    new = tr.jit(_control).lower(x, 2).compile()
    assert not new.executable.fresh_compile
    for compiled in (new, old, new):
        for got, w in zip(tree_leaves(compiled(x, 2)), want, strict=True):
            assert np.array_equal(np.asarray(got), w)


def test_a_value_a_later_part_updates_in_place_is_passed_to_it():
    body = "b = 0\nfor i in range(n):\n    b += i\n    out[i] = b\n"
    parts = cpu_split._parts(body, 1)
    interfaces = cpu_split._interfaces(parts, {"n", "out"})
    loop = next(k for k, p in enumerate(parts) if "b += i" in p.text)
    assert "b" in interfaces[loop][0]  # (read by `b += i` before the loop assigns it)

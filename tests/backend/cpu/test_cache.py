"""The cpu backend's disk cache (tracer/backend/cpu/cache.py): a new process loads the
machine code an earlier one compiled, two processes compiling the same kernel at once
leave a good entry, a corrupted entry is recompiled, and a module's key covers the
source of every library it imports (and of the libraries those import)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import tracer as tr
from tracer.backend.cpu import cache as cpu_cache
from tracer.backend.numba import library_sources, numba_cache

REPO = str(pathlib.Path(__file__).resolve().parents[3])  # the repository root


_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    sys.path.insert(0, {repo!r})
    import tracer.numpy as tnp
    from tracer.backend.cpu.cache import STATS
    from tracer.backend.cpu.backend import NumbaCpuBackend
    from tracer.core import ShapedArray
    from tracer.tracing import trace_flat
    def fn(x):  # big enough for a parallel kernel, which must be cacheable too
        e = tnp.exp(x - tnp.max(x, axis=1, keepdims=True))
        return [e / tnp.sum(e, axis=1, keepdims=True)]
    graph, _ = trace_flat(fn, [ShapedArray((300, 200), np.float64)])
    t0 = time.perf_counter()
    exe = NumbaCpuBackend().compile(graph)
    x = np.arange(60000.0).reshape(300, 200) / 1e4
    e = np.exp(x - x.max(1, keepdims=True))
    ok = bool(np.allclose(exe(x)[0], e / e.sum(1, keepdims=True)))
    print(json.dumps(dict(compiles=STATS.compiles, disk_hits=STATS.disk_hits, ok=ok,
                          fresh=exe.fresh_compile, seconds=time.perf_counter() - t0)))
""")


def _child(cache_dir, child=_CHILD):
    env = dict(os.environ, TRACER_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, "-c", child.format(repo=REPO)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_new_process_loads_machine_code_from_the_disk_cache(tmp_path):
    first = _child(tmp_path)
    assert first["ok"] and first["compiles"] == 1 and first["fresh"]
    second = _child(tmp_path)
    assert second["ok"] and second["compiles"] == 0 and second["disk_hits"] == 1
    assert not second["fresh"]
    assert any(name.endswith(".nbi") for name in os.listdir(tmp_path / "cpu" / "__pycache__"))


def test_two_processes_compiling_the_same_kernel_at_once(tmp_path):
    env = dict(os.environ, TRACER_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD.format(repo=REPO)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["ok"]
    assert _child(tmp_path)["compiles"] == 0  # what they left behind loads cleanly


def test_a_corrupted_cache_entry_is_recompiled_not_a_crash(tmp_path):
    _child(tmp_path)
    directory = tmp_path / "cpu"
    for name in os.listdir(directory):
        if name.endswith(".py"):
            (directory / name).write_text("this is not python (")
    for name in os.listdir(directory / "__pycache__"):
        (directory / "__pycache__" / name).write_bytes(b"\x00garbage")
    again = _child(tmp_path)
    assert again["ok"] and again["compiles"] == 1
    assert _child(tmp_path)["compiles"] == 0  # and the rewritten entry is good again


# ------------------------------------------------------------------ library keys

PROBE = "tracer.backend.cpu.lib.keyed_probe"


@pytest.fixture
def probe_library(tmp_path, monkeypatch):
    path = tmp_path / "keyed_probe.py"
    monkeypatch.setitem(library_sources.LIBRARIES, PROBE, str(path))
    yield path
    sys.modules.pop(PROBE, None)
    library_sources.SOURCES.pop(PROBE, None)
    if hasattr(tr.backend.cpu.lib, "keyed_probe"):
        delattr(tr.backend.cpu.lib, "keyed_probe")


def test_a_library_is_keyed_by_the_source_it_was_imported_from(probe_library):
    probe_library.write_text("from ...numba.lib.scalar_math import maximum\n\n\n"
                             "def probe():\n    return 1\n")
    source = f"from {PROBE} import probe\n"
    key = cpu_cache.module_key(source)  # (imports the library, recording its source)
    module = sys.modules[PROBE]
    imports = library_sources.library_source(PROBE).imports
    assert imports == ("tracer.backend.numba.lib.scalar_math",)
    probe_library.write_text("def probe():\n    return 2\n")  # edited while the process runs
    assert cpu_cache.module_key(source) == key and module.probe() == 1
    # a new process imports the new source, and keys it differently
    del sys.modules[PROBE]
    del library_sources.SOURCES[PROBE]
    assert cpu_cache.module_key(source) != key and sys.modules[PROBE].probe() == 2


def test_a_key_covers_the_libraries_a_used_library_imports(monkeypatch):
    source = "from tracer.backend.numba.lib.rng import threefry2x32_fill\n"
    key = cpu_cache.module_key(source)
    mathlib = "tracer.backend.numba.lib.scalar_math"
    assert mathlib in library_sources.library_source("tracer.backend.numba.lib.rng").imports
    unused = "tracer.backend.cpu.lib.sort"
    fake = library_sources.LibrarySource("0" * 64, ())
    monkeypatch.setitem(library_sources.SOURCES, unused, fake)
    assert cpu_cache.module_key(source) == key
    monkeypatch.setitem(library_sources.SOURCES, mathlib, fake)
    assert cpu_cache.module_key(source) != key


def test_a_library_cache_stamp_covers_the_libraries_it_imports(monkeypatch):
    """numba links a callee's machine code into its caller's: the cached conv entry
    points must be compiled again when a plan file they import changes."""
    from tracer.backend.cpu.lib import conv

    function = next(v for v in vars(conv).values()
                    if hasattr(v, "py_func") and v.py_func.__module__ == conv.__name__)

    def stamp():
        locator = numba_cache.TracerLocator.from_function(function.py_func, conv.__file__)
        return locator.get_source_stamp()

    before = stamp()
    unrelated, plan = "tracer.backend.cpu.lib.sort", "tracer.backend.cpu.lib.conv_winograd4_t"
    assert plan in library_sources.library_source(conv.__name__).imports
    monkeypatch.setitem(library_sources.SOURCES, unrelated,
                        library_sources.LibrarySource("1" * 64, ()))
    assert stamp() == before
    monkeypatch.setitem(library_sources.SOURCES, plan, library_sources.LibrarySource("0" * 64, ()))
    assert stamp() != before

"""The compile cache is best-effort: every way a cache entry can be broken is a miss that
removes it; a cache that cannot be written (under a file, read-only, full) leaves
compiled code in memory with one warning; a read-only pre-filled cache still serves
machine code; nothing is written outside TRACER_CACHE_DIR; a kill mid-compile leaves
nothing that breaks the next process. Every scenario runs in fresh processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests import cache_faults as cf

TARGETS = ("py", "nbi", "nbc")
CASES = [(t, b) for t in TARGETS for b in cf.BREAKS]


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A cache holding one module per case, filled by one process."""
    root = str(tmp_path_factory.mktemp("filled"))
    out = cf.run_worker(root, list(range(1, len(CASES) + 1)))
    assert all(out["ok"]) and not out["warnings"], out
    return root, out["paths"]


def copy_of(filled, tmp_path) -> tuple[str, dict]:
    root, paths = filled
    dst = str(tmp_path / "cache")
    shutil.copytree(root, dst, symlinks=True)
    return dst, {k: p.replace(root, dst, 1) for k, p in paths.items()}


def test_every_broken_entry_is_a_miss_that_is_repaired(filled, tmp_path):
    root, paths = copy_of(filled, tmp_path)
    for k, (target, how) in enumerate(CASES, start=1):
        py = paths[str(k)]
        index, data = cf.numba_files(py)
        cf.break_entry({"py": py, "nbi": index, "nbc": data}[target], how)
    ks = list(range(1, len(CASES) + 1))
    out = cf.run_worker(root, ks)
    assert all(out["ok"]) and not out["warnings"], out
    assert not cf.leftovers(root)
    healed = cf.run_worker(root, ks)  # every entry rewritten: machine code from disk
    assert all(healed["ok"]) and healed["stats"] == [0, len(ks)], healed


@pytest.mark.parametrize("where", ["cpu", "cpu/__pycache__"])
def test_a_file_in_place_of_a_cache_folder(tmp_path, where):
    root = str(tmp_path / "cache")
    os.makedirs(os.path.dirname(os.path.join(root, where)), exist_ok=True)
    with open(os.path.join(root, where), "w") as f:
        f.write("not a folder")
    out = cf.run_worker(root, [3])
    assert out["ok"] == [True] and not out["warnings"], out
    assert os.path.isdir(os.path.join(root, where))


def test_cache_under_a_file_runs_from_memory_with_one_warning(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    out = cf.run_worker(str(blocker / "cache"), [2, 3])
    assert out["ok"] == [True, True], out
    assert len(out["warnings"]) == 1 and "TRACER_CACHE_DIR" in out["warnings"][0], out


def test_read_only_cache(filled, tmp_path):
    root, _ = copy_of(filled, tmp_path)
    empty = str(tmp_path / "empty")
    os.makedirs(empty)
    home = tmp_path / "home"
    home.mkdir()
    prefix = cf.read_only_prefix(root)
    if prefix is None or cf.read_only_prefix(empty) is None:
        pytest.skip("no read-only mount or permission here")
    before = cf.tree(root)
    served = cf.run_worker(root, [1, 2], prefix=prefix, HOME=str(home))
    assert served["ok"] == [True, True] and served["stats"] == [0, 2], served
    assert not served["warnings"], served   # nothing needed writing
    fresh = cf.run_worker(empty, [1], prefix=cf.read_only_prefix(empty), HOME=str(home))
    assert fresh["ok"] == [True] and len(fresh["warnings"]) == 1, fresh
    assert cf.tree(root) == before and not cf.tree(empty)
    assert not cf.tree(str(home))          # numba spilled nothing into ~/.cache/numba


def test_full_disk_runs_from_memory_and_leaves_no_temporary_files(tmp_path):
    root = str(tmp_path / "cache")
    os.makedirs(root)
    out = cf.run_worker(root, [4, 5], prefix=cf.small_disk_prefix(root, 8))
    assert out["ok"] == [True, True] and len(out["warnings"]) == 1, out
    assert not cf.leftovers(root)


def test_kill_during_compile_leaves_a_usable_cache(tmp_path):
    root = str(tmp_path / "cache")
    for after in (1.5, 3.0):
        cf.kill_during_compile(root, after)
        out = cf.run_worker(root, [7, 8, 9])
        assert all(out["ok"]) and not out["warnings"], out


def test_library_caches_live_in_the_cache_dir_and_survive_corruption(tmp_path):
    # tracer's njit libraries (here: sort) keep their numba caches under
    # TRACER_CACHE_DIR, not in the installed package, and a corrupt one is recompiled.
    package = os.path.join(cf.ROOT, "tracer")
    before = {p for p in cf.tree(package) if p.endswith((".nbi", ".nbc"))}
    root, home = str(tmp_path / "cache"), tmp_path / "home"
    home.mkdir()
    assert "[1. 2. 3.]" in sort_in_new_process(root, str(home))
    library = [p for p in cf.tree(os.path.join(root, "lib")) if p.endswith((".nbi", ".nbc"))]
    assert library and not cf.tree(str(home))  # nothing in ~/.cache/numba
    assert {p for p in cf.tree(package) if p.endswith((".nbi", ".nbc"))} == before
    for path in library:
        cf.break_entry(path, "garbage")
    assert "[1. 2. 3.]" in sort_in_new_process(root, str(home))
    if cf.can_mount():  # the package itself read-only (as installed system-wide)
        prefix = cf.read_only_prefix(package)
        assert "[1. 2. 3.]" in sort_in_new_process(root, str(home), prefix)


def sort_in_new_process(root: str, home: str, prefix: tuple[str, ...] = ()) -> str:
    code = ("import numpy as np, tracer as tr, tracer.numpy as tnp\n"
            "print(tr.jit(tnp.sort)(np.array([3.0, 1.0, 2.0])))")
    proc = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True,
                          text=True, env=cf.env_for(root, HOME=home), timeout=300)
    assert proc.returncode == 0 and not proc.stderr, proc.stdout + proc.stderr
    return proc.stdout

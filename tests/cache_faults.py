"""Helpers for the compile-cache fault tests (and bench/fault_injection.py): run tracer
in a fresh process against a cache directory, break cache entries in every way a file
system allows, mount directories read-only or small where the OS lets us."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# One small module per k: `x * k + 1` (k is a literal of the generated source).
WORKER = """
import json, os, sys, warnings
import numpy as np
warnings.simplefilter("always")
import tracer as tr
from tracer.backend.cpu import cache
ks = json.loads(sys.argv[1])
x = np.arange(4.0)
out = {"paths": {}, "ok": [], "warnings": []}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for k in ks:
        before = set(cache._MODULES)
        f = tr.jit(lambda v, k=k: v * float(k) + 1.0)
        out["ok"].append(bool(np.array_equal(f(x), x * k + 1.0)))
        new = set(cache._MODULES) - before
        out["paths"][str(k)] = cache._MODULES[new.pop()].path if new else None
out["warnings"] = [str(w.message) for w in caught]
out["stats"] = [cache.STATS.compiles, cache.STATS.disk_hits]
print("RESULT" + json.dumps(out))
"""


def env_for(cache_dir: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": ROOT, "TRACER_CACHE_DIR": cache_dir,
           "NUMBA_NUM_THREADS": "1", **extra}
    env.pop("NUMBA_CACHE_DIR", None)
    return env


def run_worker(cache_dir: str, ks: list[int], prefix: tuple[str, ...] = (),
               timeout: float = 240, **env: str) -> dict:
    """Run WORKER in a new process; its result, or AssertionError with its output."""
    cmd = [*prefix, sys.executable, "-c", textwrap.dedent(WORKER), json.dumps(ks)]
    proc = subprocess.run(cmd, env=env_for(cache_dir, **env), capture_output=True,
                          text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT"):])


def numba_files(module_path: str) -> tuple[str, str]:
    """(index, first data file) of a generated module's host function."""
    folder, name = os.path.split(module_path)
    stem = os.path.splitext(name)[0]
    cached = os.listdir(os.path.join(folder, "__pycache__"))
    index = next(f for f in cached if f.startswith(stem) and f.endswith(".nbi"))
    data = next(f for f in cached if f.startswith(stem) and f.endswith(".nbc"))
    return (os.path.join(folder, "__pycache__", index),
            os.path.join(folder, "__pycache__", data))


def break_entry(path: str, how: str) -> None:
    """Put something that is not the entry at `path`."""
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
    if how == "directory":
        os.makedirs(os.path.join(path, "inside"))
    elif how == "link loop":
        os.symlink(path, path)
    elif how == "dangling link":
        os.symlink(path + ".missing", path)
    elif how == "garbage":
        with open(path, "wb") as f:
            f.write(b"\x80\x04\x95garbage\xff" * 7)
    elif how == "empty":
        open(path, "wb").close()
    else:
        raise ValueError(how)


BREAKS = ("directory", "link loop", "dangling link", "garbage", "empty")


def leftovers(root: str) -> list[str]:
    """Temporary files a write left behind."""
    found = []
    for folder, _, files in os.walk(root):
        found += [os.path.join(folder, f) for f in files if ".tmp" in f]
    return found


def tree(root: str) -> dict[str, int]:
    """Every file under root with its size (to see that nothing was written)."""
    out = {}
    for folder, _, files in os.walk(root):
        for f in files:
            p = os.path.join(folder, f)
            out[p] = os.lstat(p).st_size
    return out


def can_mount() -> bool:
    """Whether `unshare -rm` lets us mount (a user and mount namespace)."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=30)
    return probe.returncode == 0


def read_only_prefix(path: str) -> tuple[str, ...] | None:
    """A command prefix that runs the command with `path` mounted read-only; None where
    this machine allows no such thing (root ignores permission bits)."""
    if can_mount():
        script = (f"mount --bind {path} {path} && mount -o remount,bind,ro {path} "
                  f'&& exec "$@"')
        return ("unshare", "-rm", "sh", "-c", script, "sh")
    if os.geteuid() != 0:
        for folder, _, _ in os.walk(path):
            os.chmod(folder, 0o555)
        return ()
    return None


def small_disk_prefix(path: str, size_kb: int) -> tuple[str, ...]:
    """A command prefix that runs the command with a full disk at `path`: a tmpfs of
    size_kb where we may mount one, else a file-size limit (writes past it fail with
    EFBIG; Python ignores SIGXFSZ)."""
    if can_mount():
        script = f'mount -t tmpfs -o size={size_kb}k tmpfs {path} && exec "$@"'
        return ("unshare", "-rm", "sh", "-c", script, "sh")
    code = (f"import resource, os, sys; resource.setrlimit(resource.RLIMIT_FSIZE, "
            f"({size_kb * 1024}, {size_kb * 1024})); os.execv(sys.argv[1], sys.argv[1:])")
    return (sys.executable, "-c", code)


def kill_during_compile(cache_dir: str, after_s: float) -> None:
    """Start a worker compiling into cache_dir and SIGKILL it after `after_s`."""
    cmd = [sys.executable, "-c", textwrap.dedent(WORKER), json.dumps([7, 8, 9])]
    proc = subprocess.Popen(cmd, env=env_for(cache_dir), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(after_s)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)

"""The async compile tier: the interpreter answers while a worker process compiles.

Oracles: the synchronously compiled function (same values to the suite's
cross-backend tolerance, same dtypes and shapes, the same error), and real worker
processes (killed mid-compile, left at exit, two of them sharing one cache directory).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import compile_worker, progress, tiers
from tracer.tree_util import tree_leaves

RTOL = {4: 4e-6, 8: 1e-12}  # the cpu backend against the interpreter, by itemsize
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def async_mode():
    with tr.config.override(compile_mode="async"):
        yield


def _agree(got, want):
    for g, w in zip(tree_leaves(got), tree_leaves(want), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=RTOL[g.dtype.itemsize], atol=1e-6)


def _layer(w, b, x):
    h = tnp.tanh(x @ w + b)
    return {"h": h, "rowmax": tnp.max(h, axis=1), "count": tnp.sum(h > 0, axis=1)}


def _layer_args(n=8):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((5, 4)).astype(np.float32), np.ones(4, np.float32),
            rng.standard_normal((n, 5)).astype(np.float32))


def _pending(jitted):
    return [e.compiled.executable for e in jitted._cache.values()
            if isinstance(e.compiled.executable, tiers.TieredExecutable)]


def test_first_calls_run_the_interpreter_then_compiled_code(async_mode):
    f = tr.jit(_layer)
    args = _layer_args()
    first = f(*args)
    assert f.cache_info().tiers == {"interpreter": 1, "compiled": 0}
    f.wait_compiled()
    assert not _pending(f)
    compiled = f(*args)
    assert f.cache_info().tiers == {"interpreter": 1, "compiled": 1}
    _agree(first, compiled)
    with tr.config.override(compile_mode="sync"):
        _agree(tr.jit(_layer)(*args), compiled)


def test_random_bits_agree_between_tiers(async_mode):
    f = tr.jit(lambda key, x: (tr.random.bits(key, (16,)), x + tr.random.uniform(key, (16,))))
    key, x = tr.random.key(3), np.zeros(16, np.float32)
    first = f(key, x)
    f.wait_compiled()
    _agree(first, f(key, x))


def test_a_failing_background_compile_raises_the_sync_error_at_the_next_call(async_mode,
                                                                            monkeypatch):
    from tracer.backend.cpu.backend import NumbaCpuBackend

    def failing(self, graph, donated=()):  # (the cache is best-effort: a compile fails so)
        raise OSError(f"no space left to compile {graph.name}")
    monkeypatch.setattr(NumbaCpuBackend, "prepare", failing)
    fn = lambda x: tnp.cos(x) * 7.5  # noqa: E731
    x = np.linspace(0, 1, 5)
    with tr.config.override():
        with tr.config.override(compile_mode="sync"), pytest.raises(OSError) as sync:
            tr.jit(fn)(x)
        f = tr.jit(fn)
        np.testing.assert_allclose(f(x), np.cos(x) * 7.5)  # the interpreter answers
        for again in (f.wait_compiled, lambda: f(x), lambda: f(x)):  # every time, never stale
            with pytest.raises(type(sync.value)) as late:
                again()
            assert str(late.value) == str(sync.value)


def _wait_for_worker(timeout=60.0):
    deadline = time.monotonic() + timeout
    while compile_worker.shared().pid is None:
        assert time.monotonic() < deadline, "no compile worker started"
        time.sleep(0.01)
    return compile_worker.shared().pid


def test_a_worker_killed_mid_compile_is_replaced_by_a_compile_here(async_mode, tmp_path):
    with tr.config.override(cache_dir=str(tmp_path)):  # nothing on disk: the worker must work
        compile_worker.shared().close()
        f = tr.jit(lambda x: tnp.cumsum(tnp.sin(x) * 3.0) - tnp.mean(x))
        x = np.linspace(0, 1, 50)
        first = f(x)
        os.kill(_wait_for_worker(), signal.SIGKILL)
        [pending] = _pending(f)
        f.wait_compiled()
        assert isinstance(pending.job.error, compile_worker.WorkerDied)
        _agree(first, f(x))
        assert f.cache_info().tiers["compiled"] == 1


_CHILD = textwrap.dedent("""
    import sys, numpy as np, tracer as tr, tracer.numpy as tnp
    from tracer import compile_worker
    tr.config.update("compile_mode", "async")
    f = tr.jit(lambda x, y: tnp.tanh(x @ y).sum(axis=0) + {shift})
    x = np.arange(12.0).reshape(3, 4) / 10
    print("first", f(x, x.T).tolist(), flush=True)
    {then}
""")


def _child(shift, then, cache_dir):
    code = _CHILD.format(shift=shift, then=then)
    env = dict(os.environ, PYTHONPATH=REPO, TRACER_CACHE_DIR=str(cache_dir))
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _gone(pid):
    """Whether process `pid` has exited (a zombie waiting for its reaper counts)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to see the worker")
def test_the_worker_exits_with_the_process(tmp_path):
    then = ("import time\n"
            "while compile_worker.shared().pid is None: time.sleep(0.01)\n"
            "print('worker', compile_worker.shared().pid, flush=True)")
    out, err = _child(1.0, then, tmp_path).communicate(timeout=120)
    assert "worker" in out, err
    pid = int(out.split("worker")[1])
    deadline = time.monotonic() + 30
    while not _gone(pid):
        assert time.monotonic() < deadline, f"compile worker {pid} outlived its process"
        time.sleep(0.05)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to see its signals")
def test_an_interrupt_leaves_the_worker_to_end_with_its_stdin():
    """SIGINT (Ctrl-C, Jupyter interrupting the kernel's process group) is for the
    caller: the worker keeps going, and exits quietly once its stdin closes."""
    worker = subprocess.Popen([sys.executable, "-m", "tracer.compile_worker"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not _ignores_sigint(worker.pid):  # (its imports done, its handler set)
        assert worker.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    worker.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert worker.poll() is None
    _, err = worker.communicate(timeout=60)  # closes stdin
    assert worker.returncode == 0 and b"Traceback" not in err, err.decode()


def _ignores_sigint(pid: int) -> bool:
    with open(f"/proc/{pid}/status") as f:
        mask = next(line for line in f if line.startswith("SigIgn:")).split()[1]
    return bool(int(mask, 16) & (1 << (signal.SIGINT - 1)))


def test_a_worker_whose_caller_stopped_reading_exits_quietly(tmp_path):
    """The caller exited mid-compile: the reply's pipe is broken. The worker's loop ends
    (no traceback in the user's terminal), after finishing the request it had."""
    class Gone(io.BytesIO):
        def write(self, data):
            raise BrokenPipeError(32, "Broken pipe")

    requests = io.BytesIO()
    compile_worker._send(requests, ("not python", "main", (), str(tmp_path)))
    compile_worker._send(requests, ("never read", "main", (), str(tmp_path)))
    requests.seek(0)
    compile_worker.serve(requests, Gone())
    assert compile_worker._receive(requests) is not None  # (the second was left unread)


def test_two_processes_compiling_one_kernel_into_one_cache_both_succeed(tmp_path):
    then = "f.wait_compiled(); print('compiled', f(x, x.T).tolist(), f.cache_info().tiers)"
    children = [_child(2.0, then, tmp_path) for _ in range(2)]
    outputs = [c.communicate(timeout=300) for c in children]
    x = np.arange(12.0).reshape(3, 4) / 10
    want = np.tanh(x @ x.T).sum(axis=0) + 2.0
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        lines = dict(line.split(" ", 1) for line in out.splitlines())
        assert "'compiled': 1" in lines["compiled"]
        np.testing.assert_allclose(eval(lines["compiled"].split("] ")[0] + "]"), want,  # noqa: S307
                                   rtol=1e-12)


def test_compile_mode_takes_only_its_values():
    with pytest.raises(tr.TracerValueError, match="compile_mode"):
        tr.config.update("compile_mode", "later")


def test_progress_shows_a_slow_block_once_it_passes_the_delay(monkeypatch, capsys):
    monkeypatch.setattr(progress, "DELAY", 0.01)
    monkeypatch.setattr(progress, "INTERVAL", 0.01)
    with tr.config.override(progress=True):
        with progress.shown("compiling slow"):
            time.sleep(0.3)
        assert "tracer: compiling slow" in capsys.readouterr().err
        monkeypatch.setattr(progress, "DELAY", 30.0)
        with progress.shown("compiling fast"):
            pass
        assert capsys.readouterr().err == ""


def _scaled_layer(w, b, x):  # (a structure no other test compiles)
    return _layer(w, b, x * 1.25)


def test_a_new_size_of_a_compiled_structure_runs_compiled_at_once(async_mode):
    f = tr.jit(_scaled_layer)
    f(*_layer_args(8))
    f.wait_compiled()
    out = f(*_layer_args(3))
    assert f.cache_info().tiers == {"interpreter": 1, "compiled": 1}
    with tr.config.override(compile_mode="sync"):
        _agree(out, tr.jit(_scaled_layer)(*_layer_args(3)))

"""Random bad input for tracer.numpy and tracer.ops (wrong shapes, dtypes, axes and
values), each case run in a worker process so that a crash or a hang is counted, not
fatal: used by tests/test_bad_input_fuzz.py and bench/fault_injection.py.

A case's outcome is one of
  ok     - a result, equal to NumPy's where NumPy gives one
  clear  - a tracer.TracerError that is also the matching built-in
  other  - any other exception (a raw numba / NumPy / Python error)
  wrong  - a result that differs from NumPy's
  crash  - the worker process died
  hang   - no answer within the time limit
"""

from __future__ import annotations

import os
import pickle
import selectors
import struct
import subprocess
import sys
import warnings
from typing import Any

import numpy as np
from hypothesis import strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTCOMES = ("ok", "clear", "other", "wrong", "crash", "hang")
DTYPES = ["bool", "int8", "int32", "int64", "uint8", "uint64", "float16", "float32",
          "float64", "complex64"]

# name -> (number of array arguments, function of (np_or_tnp module, arrays, params))
FUNCTIONS: dict[str, tuple[int, Any]] = {
    "sum": (1, lambda m, a, p: m.sum(a[0], axis=p["axis"])),
    "argmax": (1, lambda m, a, p: m.argmax(a[0], axis=p["int_axis"])),
    "cumsum": (1, lambda m, a, p: m.cumsum(a[0], axis=p["int_axis"])),
    "sort": (1, lambda m, a, p: m.sort(a[0], axis=p["int_axis"])),
    "reshape": (1, lambda m, a, p: m.reshape(a[0], p["shape"])),
    "transpose": (1, lambda m, a, p: m.transpose(a[0], p["perm"])),
    "squeeze": (1, lambda m, a, p: m.squeeze(a[0], axis=p["int_axis"])),
    "expand_dims": (1, lambda m, a, p: m.expand_dims(a[0], p["int_axis"])),
    "split": (1, lambda m, a, p: m.split(a[0], p["n"], axis=p["int_axis"])),
    "percentile": (2, lambda m, a, p: m.percentile(a[0], a[1], axis=p["axis"])),
    "add": (2, lambda m, a, p: m.add(a[0], a[1])),
    "matmul": (2, lambda m, a, p: m.matmul(a[0], a[1])),
    "concatenate": (2, lambda m, a, p: m.concatenate([a[0], a[1]], axis=p["int_axis"])),
    "take": (2, lambda m, a, p: m.take(a[0], a[1], axis=p["int_axis"], mode=p["mode"])),
    "take_along_axis": (2, lambda m, a, p: m.take_along_axis(a[0], a[1], p["int_axis"])),
    "getitem": (2, lambda m, a, p: a[0][a[1]]),
    "where": (3, lambda m, a, p: m.where(a[0], a[1], a[2])),
    "clip": (3, lambda m, a, p: m.clip(a[0], a[1], a[2])),
}
# tracer.ops (the XLA operations: no NumPy oracle, so a result only has to come back)
OPS: dict[str, tuple[int, Any]] = {
    "ops.transpose": (1, lambda o, a, p: o.transpose(a[0], p["perm"])),
    "ops.reshape": (1, lambda o, a, p: o.reshape(a[0], p["shape"])),
    "ops.broadcast_in_dim": (1, lambda o, a, p: o.broadcast_in_dim(a[0], p["shape"],
                                                                   p["perm"])),
    "ops.slice": (1, lambda o, a, p: o.slice(a[0], p["perm"], p["shape"])),
    "ops.rev": (1, lambda o, a, p: o.rev(a[0], p["perm"])),
    "ops.reduce_sum": (1, lambda o, a, p: o.reduce(a[0], 0, o.add, p["perm"])),
    "ops.pad": (2, lambda o, a, p: o.pad(a[0], a[1], [(p["n"], 1, 0)] * len(p["perm"]))),
    "ops.add": (2, lambda o, a, p: o.add(a[0], a[1])),
    "ops.dot_general": (2, lambda o, a, p: o.dot_general(a[0], a[1], (((p["int_axis"],),
                                                                       (p["n"],)), ((), ())))),
    "ops.dynamic_slice": (2, lambda o, a, p: o.dynamic_slice(a[0], [a[1]] * len(p["perm"]),
                                                             p["shape"])),
    "ops.concatenate": (2, lambda o, a, p: o.concatenate([a[0], a[1]], p["int_axis"])),
    "ops.select": (3, lambda o, a, p: o.select(a[0], a[1], a[2])),
}


@st.composite
def arrays(draw: Any) -> np.ndarray:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    values = draw(st.sampled_from(["small", "big", "special"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    size = int(np.prod(shape))
    if dtype.kind == "b":
        return rng.integers(0, 2, size).astype(bool).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = (info.min, info.max) if values == "big" else (max(info.min, -6), 6)
        return rng.integers(lo, hi, size, dtype=dtype, endpoint=True).reshape(shape)
    data = rng.normal(size=size) * (1e30 if values == "big" else 3)
    if values == "special" and size:
        data[rng.integers(0, size)] = rng.choice([np.nan, np.inf, -np.inf])
    with np.errstate(over="ignore", invalid="ignore"):  # (1e30 in float16 is inf: fine)
        return data.astype(dtype).reshape(shape)


@st.composite
def cases(draw: Any) -> tuple[str, list[np.ndarray], dict[str, Any]]:
    name = draw(st.sampled_from(sorted(FUNCTIONS) + sorted(OPS)))
    args = [draw(arrays()) for _ in range((FUNCTIONS.get(name) or OPS[name])[0])]
    axis = st.integers(-4, 4)
    params = {
        "axis": draw(st.one_of(st.none(), axis, st.tuples(axis, axis))),
        "int_axis": draw(axis),
        "shape": tuple(draw(st.lists(st.integers(-2, 6), max_size=3))),
        "perm": tuple(draw(st.lists(st.integers(-3, 3), max_size=3))),
        "n": draw(st.integers(-1, 4)),
        "mode": draw(st.sampled_from([None, "clip", "wrap", "bogus"])),
    }
    return name, args, params


# ------------------------------------------------------------------ in the worker


def _numpy(name: str, args: list[np.ndarray], params: dict[str, Any]) -> Any:
    if name in ("take", "take_along_axis", "getitem") and args[1].dtype == np.uint64:
        # NumPy casts uint64 indices to intp, so 2**63 and up count from the end (or
        # loop for ever in take(mode="wrap")): the oracle is the value's own position.
        args = [args[0], _uint64_positions(name, args, params)]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return FUNCTIONS[name][1](np, args, params)
        except Exception as e:  # noqa: BLE001 - NumPy refusing is an answer too
            return e


def _uint64_positions(name: str, args: list[np.ndarray], params: dict[str, Any]) -> Any:
    a, idx = args
    if name == "take" and params["mode"] == "wrap":
        ax = params["int_axis"]
        n = a.shape[ax] if -a.ndim <= ax < a.ndim else 0
        if n:
            return (idx % np.uint64(n)).astype(np.int64)
    return np.minimum(idx, np.iinfo(np.int64).max).astype(np.int64)


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(
            _same(g, w) for g, w in zip(got, want, strict=True))
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "fc" or got.dtype.kind in "fc":
        tol = 1e-2 if np.float16 in (got.dtype, want.dtype) else 1e-5
        with np.errstate(all="ignore"):
            return bool(np.allclose(got.astype(complex), want.astype(complex), rtol=tol,
                                    atol=tol, equal_nan=True))
    return bool(np.array_equal(got, want))


def run_case(case: tuple, backend: str) -> tuple[str, str]:
    """(outcome, detail) of one case, eagerly and under jit on `backend`."""
    import tracer as tr
    import tracer.numpy as tnp
    name, args, params = case
    if name in OPS:
        want, fn, module = None, OPS[name][1], tr.ops
    else:
        want, fn, module = _numpy(name, args, params), FUNCTIONS[name][1], tnp
    runs = {"eager": lambda: fn(module, args, params),
            "jit": lambda: tr.jit(lambda *xs: fn(module, list(xs), params),
                                  backend=backend)(*args)}
    if name == "getitem":
        del runs["eager"]  # (eagerly that is NumPy's own indexing)
    refused = 0
    for how, run in runs.items():
        try:
            got = run()
        except tr.TracerError as e:
            if not isinstance(e, BUILTINS):
                return "other", f"{how}: {type(e).__name__} without a built-in: {e}"
            refused += 1
            continue
        except Exception as e:  # noqa: BLE001 - what the fuzz looks for
            return "other", f"{how}: {type(e).__name__}: {str(e)[:300]}"
        if want is not None and not isinstance(want, Exception) and not _same(got, want):
            return "wrong", f"{how}: got {got!r:.200} want {want!r:.200}"
    return ("clear" if refused else "ok"), ""


BUILTINS = (TypeError, ValueError, IndexError, OverflowError, MemoryError,
            NotImplementedError, RuntimeError)


def worker_main(backend: str) -> None:
    """Answer cases read from stdin (length-prefixed pickles) until EOF."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(4)
        if len(head) < 4:
            return
        case = pickle.loads(stdin.read(struct.unpack("<I", head)[0]))
        data = pickle.dumps(run_case(case, backend))
        stdout.write(struct.pack("<I", len(data)) + data)
        stdout.flush()


# ------------------------------------------------------------------ in the parent


class Runner:
    """A worker process that survives its cases' crashes and hangs (it is restarted)."""

    def __init__(self, backend: str = "cpu", timeout: float = 120.0):
        self.backend, self.timeout = backend, timeout
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        code = f"from tests.fuzz_cases import worker_main; worker_main({self.backend!r})"
        env = {**os.environ, "PYTHONPATH": ROOT, "NUMBA_NUM_THREADS": "1"}
        return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, cwd=ROOT)

    def run(self, case: tuple) -> tuple[str, str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        data = pickle.dumps(case)
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._lost("crash")
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(self.timeout):
                return self._lost("hang")
        head = self.proc.stdout.read(4)
        if len(head) < 4:
            return self._lost("crash")
        return pickle.loads(self.proc.stdout.read(struct.unpack("<I", head)[0]))

    def _lost(self, outcome: str) -> tuple[str, str]:
        code = self.proc.poll() if self.proc is not None else None
        self.close()
        return outcome, f"worker {outcome} (exit status {code})"

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
        self.proc = None

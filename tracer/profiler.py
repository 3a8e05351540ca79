"""A timeline of what tracer did, as Chrome trace-event JSON (Perfetto, chrome://tracing).

    with tr.profiler.trace("/tmp/tl"):        # or start_trace(dir) ... stop_trace()
        predict(w, b, x)
    # /tmp/tl/<time>-<pid>.trace.json: one complete event ("ph": "X") per trace, pass
    # pipeline (and pass), code generation, numba compile or cache load, and execution

The file is a JSON array written one event per line and flushed as it goes: a
process that dies mid-trace leaves every event it finished, and the trace-event
format (and Perfetto) accept an array without its closing bracket. `stop_trace`
closes the array, so a finished file is strict JSON; `load_trace` reads either.

Recording costs one module-global check per call when no trace is running.
"""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from .errors import TracerValueError


class _Session:
    """One open trace file; events are appended under a lock (threads may compile)."""

    def __init__(self, log_dir: str):
        os.makedirs(log_dir, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.path = os.path.join(log_dir, f"{stamp}-{os.getpid()}.trace.json")
        self.lock = threading.Lock()
        self.pid = os.getpid()
        # Open until stop_trace; line-buffered, so each event reaches the file at once.
        self.file = open(self.path, "w", encoding="utf-8", buffering=1)  # noqa: SIM115
        self.file.write("[\n")
        self.write({"name": "process_name", "ph": "M", "pid": self.pid, "tid": 0,
                    "args": {"name": "tracer"}})

    def write(self, event: dict[str, Any]) -> None:
        line = json.dumps(event, default=str)
        with self.lock:
            self.file.write(line + ",\n")

    def close(self) -> None:
        with self.lock:
            # A last metadata event lets the array end without a trailing comma.
            self.file.write(json.dumps({"name": "trace_end", "ph": "M", "pid": self.pid,
                                        "tid": 0, "args": {}}) + "\n]\n")
            self.file.close()


_session: _Session | None = None
_naming = threading.local()   # .function: the compiled function events belong to


def start_trace(log_dir: str | os.PathLike) -> None:
    """Start recording a timeline into a new `*.trace.json` file under `log_dir`."""
    global _session
    if _session is not None:
        raise TracerValueError(f"profiler.start_trace: a trace is already running "
                               f"(writing {_session.path}); call stop_trace() first")
    _session = _Session(os.fspath(log_dir))


def stop_trace() -> str:
    """Stop recording; returns the path of the finished trace file."""
    global _session
    if _session is None:
        raise TracerValueError("profiler.stop_trace: no trace is running "
                               "(call start_trace(log_dir) first)")
    session, _session = _session, None
    session.close()
    return session.path


@contextmanager
def trace(log_dir: str | os.PathLike) -> Iterator[None]:
    """`with tr.profiler.trace(log_dir):` records the block's timeline (see start_trace)."""
    start_trace(log_dir)
    try:
        yield
    finally:
        stop_trace()


def active() -> bool:
    """Whether a trace is being recorded."""
    return _session is not None


@contextmanager
def naming(function: str) -> Iterator[None]:
    """Events recorded in the block (by this thread) are named after `function`, so the
    backend's codegen and compile events say whose they are."""
    outer = getattr(_naming, "function", None)
    _naming.function = function
    try:
        yield
    finally:
        _naming.function = outer


def record(name: str, cat: str, start_ns: int, end_ns: int, **args: Any) -> None:
    """Add one complete event that ran from `start_ns` to `end_ns` (time.perf_counter_ns)."""
    session = _session
    if session is None:
        return
    function = getattr(_naming, "function", None)
    if function:
        name = f"{name} {function}"
    session.write({"name": name, "cat": cat, "ph": "X", "ts": start_ns / 1e3,
                   "dur": (end_ns - start_ns) / 1e3, "pid": session.pid,
                   "tid": threading.get_ident() & 0x7FFFFFFF, "args": args})


@contextmanager
def span(name: str, cat: str, **args: Any) -> Iterator[dict[str, Any]]:
    """Time the block as one event; the yielded dict adds args known only at its end."""
    start = time.perf_counter_ns()
    extra: dict[str, Any] = {}
    try:
        yield extra
    finally:
        if _session is not None:
            record(name, cat, start, time.perf_counter_ns(), **args, **extra)


def load_trace(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The events of a trace file, finished or cut off by a crash (no closing bracket)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().rstrip()
    if not text.endswith("]"):
        text = text.rstrip(",") + "]"
    return json.loads(text)

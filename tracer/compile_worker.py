"""A compile worker process: numba compiles generated modules there, into the disk cache.

    worker = compile_worker.shared()
    fresh = worker.compile(source, "main", signature, cache_dir)   # blocks this thread only

The worker is a plain `python -m tracer.compile_worker` subprocess (not
multiprocessing: that re-imports the user's `__main__`), started on first use and
reused. Requests and replies are length-prefixed pickles on its stdin and on a
private copy of its stdout (numba's own prints go to stderr). It compiles with
`backend.cpu.cache.compile_module`, exactly as the calling process would, so the machine code
lands in the content-addressed cache and the caller loads it from there. The worker
exits when its stdin closes: at the caller's exit (`atexit`), or when the caller dies.
A worker that dies mid-request raises `WorkerDied` in the waiting thread; the next
request starts a new one.
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from typing import IO, Any

_HEADER = struct.Struct("<Q")


class WorkerDied(RuntimeError):
    """The worker process exited before replying."""


class CompileFailed(RuntimeError):
    """The worker could not compile the module (its message says why)."""


def _send(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    """The next message, or None at end of stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    return None if len(data) < size else pickle.loads(data)  # noqa: S301 - our own child


class Worker:
    """One compile worker process, shared by this process's background compiles (one
    request at a time: the other core does the compiling, this one runs the program)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None

    def compile(self, source: str, function: str, signature: tuple, cache_dir: str) -> bool:
        """Compile `function` of module `source` for `signature` into `cache_dir`;
        whether numba compiled it (False: it was on disk already)."""
        with self._lock:
            process = self._ensure_started()
            try:
                _send(process.stdin, (source, function, signature, cache_dir))
                reply = _receive(process.stdout)
            except (BrokenPipeError, OSError):
                reply = None
            if reply is None:
                self._process = None
                raise WorkerDied(f"the compile worker exited (status {process.wait()})")
        ok, payload = reply
        if not ok:
            raise CompileFailed(payload)
        return payload

    def _ensure_started(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tracer.compile_worker"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=path))
        return self._process

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def close(self, timeout: float = 1.0) -> None:
        """Ask the worker to exit (end of its stdin); kill it if it is still busy after
        `timeout` (numba writes cache files atomically, so a killed compile leaves none)."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.close()
            process.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()


_SHARED: Worker | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> Worker:
    """This process's compile worker (closed at exit)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Worker()
            atexit.register(_SHARED.close)
        return _SHARED


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The worker's loop: compile each request until stdin closes, or until the caller
    stops reading (it exited mid-compile: the machine code is in the cache all the same,
    and a traceback in the user's terminal would report nothing wrong)."""
    from .backend.cpu import cache as cpu_cache
    from .config import config
    while (request := _receive(requests)) is not None:
        source, function, signature, cache_dir = request
        try:
            config.update("cache_dir", cache_dir)
            reply = (True, cpu_cache.compile_module(source, function, signature)[1])
        except Exception as e:  # noqa: BLE001 - reported to the caller, who recompiles
            reply = (False, f"{type(e).__name__}: {e}")
        try:
            _send(replies, reply)
        except (BrokenPipeError, OSError):
            return


def _main() -> None:
    # Ctrl-C in the user's terminal, or Jupyter interrupting its kernel's process group,
    # is meant for the caller: the worker ends when its stdin closes, with no traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything numba prints goes to stderr, not into the reply stream
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    _main()

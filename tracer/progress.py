"""Show a compile that takes over a second (`config.progress`).

    with progress.shown("compiling step"):
        ...   # nothing is shown if this takes under a second

Where it shows: in a notebook kernel with ipywidgets, a widget that counts the
seconds; on a terminal (stderr is a tty), one status line rewritten in place and
erased at the end; elsewhere (logs, CI), one line when it passes a second and one
when it is done. A background compile (`background=True`) shows only the widget: a
status line would write into whatever the person is typing at a terminal prompt.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from .config import config

DELAY = 1.0     # seconds before anything is shown
INTERVAL = 0.5  # seconds between updates


class _Display:
    """Where a status goes: `show(text)` repeatedly, then `close(text)` once."""

    def show(self, text: str) -> None: ...

    def close(self, text: str) -> None: ...


class _Widget(_Display):
    def __init__(self) -> None:
        import ipywidgets
        from IPython.display import display
        self.widget = ipywidgets.HTML()
        display(self.widget)

    def show(self, text: str) -> None:
        self.widget.value = f"<code>{text}</code>"

    def close(self, text: str) -> None:
        self.widget.value = f"<code>{text}</code>"


class _StatusLine(_Display):
    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.width = 0

    def show(self, text: str) -> None:
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()

    def close(self, text: str) -> None:
        self.stream.write("\r" + " " * self.width + "\r")
        self.stream.flush()


class _TextLines(_Display):
    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.started = False

    def show(self, text: str) -> None:
        if not self.started:
            self.started = True
            print(text, file=self.stream, flush=True)

    def close(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    kernel = getattr(get(), "kernel", None) if get is not None else None
    if kernel is None:
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def _display(background: bool) -> _Display | None:
    if _in_notebook():
        return _Widget()
    if background:
        return None
    stream = sys.stderr
    return _StatusLine(stream) if stream.isatty() else _TextLines(stream)


def _watch(label: str, started: float, finished: threading.Event, background: bool,
           shown: list) -> None:
    """The watcher thread: after DELAY, show the label and the seconds, until done."""
    if finished.wait(DELAY):
        return
    display = _display(background)
    if display is None:
        return
    shown.append(display)
    while True:
        display.show(f"tracer: {label} … {time.perf_counter() - started:.1f} s")
        if finished.wait(INTERVAL):
            break
    display.close(f"tracer: {label}: done in {time.perf_counter() - started:.1f} s")


@contextmanager
def shown(label: str, background: bool = False) -> Iterator[None]:
    """Show `label` and the elapsed seconds while the block runs, once it passes DELAY."""
    if not config.progress:
        yield
        return
    finished = threading.Event()
    watcher = threading.Thread(target=_watch, daemon=True, name="tracer progress",
                               args=(label, time.perf_counter(), finished, background, []))
    watcher.start()
    try:
        yield
    finally:
        finished.set()
        watcher.join()

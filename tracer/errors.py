"""The TracerError family.

Every error raised for a user mistake derives from `TracerError` *and* from the
matching built-in (`TypeError`, `ValueError`, `IndexError`), so both
`except tr.TracerError` and `except TypeError` work. Messages start with the op
or transformation name, show the abstract values involved and end with the
user's source line (see `tracer.core.SourceInfo`).
"""

from __future__ import annotations

import functools
import os
import sys
from types import FrameType, TracebackType
from typing import Any, Callable, TypeVar


class TracerError(Exception):
    """Base class of every error tracer raises for a user mistake."""


class ShapeError(TracerError, ValueError):
    """Operand shapes violate an op's shape rule (e.g. incompatible broadcast)."""


class DTypeError(TracerError, TypeError):
    """Operand dtypes violate an op's type rule (e.g. add of f32 and s32)."""


class ParamError(TracerError, ValueError):
    """A static parameter of an op is invalid (bad permutation, axis, config)."""


class TracerIndexError(TracerError, IndexError):
    """A static index or axis is out of range."""


class TracerTypeError(TracerError, TypeError):
    """A value of the wrong kind reached tracer (bad argument type, bad pytree)."""


class TracerValueError(TracerError, ValueError):
    """A value is invalid for reasons other than shapes (e.g. mismatched sizes)."""


class TracerOverflowError(TracerError, OverflowError):
    """A Python int argument does not fit in its dtype (e.g. `jit(f)(2**70)`)."""


class TracerMemoryError(TracerError, MemoryError):
    """A result is larger than this machine's memory (checked when its shape is known)."""


class ConcretizationError(TracerError, TypeError):
    """A traced value was used where Python needs a concrete one.

    Typical cause: `if x > 0:` or `int(x)` inside `@jit`. The value of `x` is not
    known while tracing; use `tracer.ops.cond` / `tracer.ops.select` /
    `tracer.numpy.where` for data-dependent choices, `tracer.ops.while_loop` /
    `fori_loop` for data-dependent loops, or mark the argument static with
    `static_argnums` / `static_argnames`.
    """


class EscapedTracerError(TracerError, RuntimeError):
    """A traced value was used after the trace that created it had finished
    (it was stored in a global or returned through a side channel)."""


class CacheError(TracerError, RuntimeError):
    """Compiled code in the disk cache cannot run in this process (the cache directory is
    named: removing it, or another `TRACER_CACHE_DIR`, compiles the code again)."""


class UnsupportedOpError(TracerError, NotImplementedError):
    """A backend cannot run an op and knows no decomposition for it."""


# ------------------------------------------------------------ naming the user's line
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_DEMO = _PACKAGE_DIR + "__main__.py"  # `python -m tracer`'s model is user code
_F = TypeVar("_F", bound=Callable[..., Any])


def _is_user(filename: str) -> bool:
    return (not filename.startswith(_PACKAGE_DIR) or filename == _DEMO) \
        and not filename.startswith("<frozen")


def user_frame(frame: FrameType | None) -> FrameType | None:
    """`frame` or the nearest caller of it whose code lies outside the tracer package."""
    while frame is not None and not _is_user(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _where(frame: FrameType, line: int) -> str:
    return f"{frame.f_code.co_filename}:{line} (in {frame.f_code.co_name})"


def _user_line(tb: TracebackType | None) -> str | None:
    """The innermost user frame of `tb` (the line that reached tracer), else the
    innermost user frame of the current stack (the line calling the transformation)."""
    found = None
    while tb is not None:
        if _is_user(tb.tb_frame.f_code.co_filename):
            found = _where(tb.tb_frame, tb.tb_lineno)
        tb = tb.tb_next
    if found is None:
        frame = user_frame(sys._getframe(1))
        found = _where(frame, frame.f_lineno) if frame is not None else None
    return found


def add_user_line(err: TracerError) -> None:
    """Append `at <file:line>` to an error raised by a transformation or `jit` itself
    (not by an op's `bind`, which already names the line), in place."""
    if getattr(err, "_tracer_context", False) or len(err.args) != 1:
        return
    msg = str(err.args[0])
    if "\n  at " not in msg:
        where = _user_line(err.__traceback__)
        if where is not None:
            err.args = (f"{msg}\n  at {where}",)
    err._tracer_context = True  # type: ignore[attr-defined]


def names_user_line(fun: _F) -> _F:
    """Decorator for entry points: their TracerErrors name the user's line."""
    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fun(*args, **kwargs)
        except TracerError as e:
            add_user_line(e)
            raise

    return wrapper  # type: ignore[return-value]

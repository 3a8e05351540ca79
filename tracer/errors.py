"""The TracerError family.

Every error raised for a user mistake derives from `TracerError` *and* from the
matching built-in (`TypeError`, `ValueError`, `IndexError`), so both
`except tr.TracerError` and `except TypeError` work. Messages start with the op
or transformation name, show the abstract values involved and end with the
user's source line (see `tracer.core.SourceInfo`).
"""

from __future__ import annotations


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


class UnsupportedOpError(TracerError, NotImplementedError):
    """A backend cannot run an op and knows no decomposition for it."""

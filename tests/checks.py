"""Assertions several test files share: a bad call raises a TracerError that is also the
matching built-in; a tracer.numpy function gives NumPy's values and dtype, eagerly and
under `tr.jit`, or raises what NumPy raises."""

from __future__ import annotations

from typing import Any, Callable

import pytest

import tracer as tr


def raises(cls: type[BaseException], fn: Callable[[], Any]) -> str:
    """The message of the `cls` that `fn()` raises, which must also be a TracerError."""
    with pytest.raises(cls) as info:
        fn()
    assert isinstance(info.value, tr.TracerError), type(info.value)
    return str(info.value)

"""Assertions several test files share: a bad call raises a TracerError that is also the
matching built-in; a tracer.numpy function gives NumPy's values and dtype, eagerly and
under `tr.jit`, or raises what NumPy raises; the op names a graph uses."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest

import tracer as tr
from tracer.core import Graph, subgraphs


def threaded() -> bool:
    """Whether the cpu backend may emit parallel code in this process: at one thread
    (NUMBA_NUM_THREADS=1, TRACER_NUM_THREADS=1, one core) no code is parallel, and the
    tests that look for threaded kernels assert that instead."""
    from tracer.backend.cpu.options import thread_count
    return thread_count() > 1


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Standard normal values of `dtype` (real and imaginary parts for a complex one)."""
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def raises(cls: type[BaseException], fn: Callable[[], Any]) -> str:
    """The message of the `cls` that `fn()` raises, which must also be a TracerError."""
    with pytest.raises(cls) as info:
        fn()
    assert isinstance(info.value, tr.TracerError), type(info.value)
    return str(info.value)


def matches(got: Any, want: Any) -> None:
    """Same dtype and shape, values to 1e-12 (NaN meets NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def like_numpy(fn: Callable[..., Any], np_fn: Callable[..., Any], *arrays: Any) -> None:
    """`fn` eagerly and under jit (arrays traced) both match NumPy's `np_fn`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np_fn(*arrays)
        matches(fn(*arrays), want)
        matches(tr.jit(fn)(*arrays), want)


def raises_like_numpy(fn: Callable[..., Any], np_fn: Callable[..., Any], *args: Any) -> None:
    """Where NumPy raises an IndexError / TypeError / ValueError, `fn` raises a
    TracerError that is the same built-in."""
    with pytest.raises(Exception) as np_err:
        np_fn(*args)
    builtin = next(b for b in (IndexError, TypeError, ValueError) if isinstance(np_err.value, b))
    with pytest.raises(tr.TracerError) as err:
        fn(*args)
    assert isinstance(err.value, builtin)


def ops_in(graph: Graph) -> set[str]:
    """The names of the ops `graph` and its sub-graphs use."""
    found = {eqn.op.name for eqn in graph.eqns}
    for eqn in graph.eqns:
        for sub in subgraphs(eqn.params):
            found |= ops_in(sub)
    return found

"""What the 16-bit float tests (tests/test_half_*.py) share: the dtypes, a jitted run,
the distance in 16-bit steps, and bit-for-bit comparison with NaN meeting NaN."""

from __future__ import annotations

from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest

import tracer as tr

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
HALVES = [F16, BF16]
BACKENDS = ["interpreter", "cpu"]


def jit_run(fn: Callable[..., Any], backend: str, *args: Any) -> Any:
    with np.errstate(all="ignore"):
        return tr.jit(fn, backend=backend)(*args)


def ulps(got: np.ndarray, want: np.ndarray) -> int:
    """Largest distance in steps of the (16-bit) dtype; NaN must meet NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    g, w = got.astype(F32), want.astype(F32)
    assert np.array_equal(np.isnan(g), np.isnan(w))

    def ordered(x: np.ndarray) -> np.ndarray:
        b = x.view(np.int16).astype(np.int64)
        return np.where(b < 0, -(b & 0x7FFF), b)
    keep = ~np.isnan(w)
    return int(np.max(np.abs(ordered(got[keep]) - ordered(want[keep])), initial=0))


def same_bits(got: Any, want: Any) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    nan = np.isnan(want.astype(np.complex128 if want.dtype.kind == "c" else np.float64))
    assert np.array_equal(np.isnan(got.astype(np.complex128 if got.dtype.kind == "c"
                                              else np.float64)), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))


def jax_numpy() -> Any:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_platform_name", "cpu")
    return jax.numpy

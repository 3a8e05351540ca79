"""`tracer.numpy.fft`: NumPy's fft namespace on `ops.fft`.

NumPy 2 semantics: `n` / `s` zero-pad or truncate the input along each axis (for
the inverse real transforms they give the *output* lengths; -1 in `s` keeps the
input's length), `norm` is "backward" (the default: inverse scaled by 1/n),
"ortho" (both by 1/sqrt(n)) or "forward" (forward scaled by 1/n); float16,
bfloat16 and float32 inputs give complex64 (real transforms of bfloat16 float32,
as JAX's), integers, bools and float64 give complex128, and a one-axis `irfft` /
`hfft` of a float16 array returns float16. `rfft` of complex
input is a TypeError, as in NumPy. (One difference: NumPy rounds the norm factor
to float16 for float16 input; here it is applied in the transform's precision.)

The transformed axes are moved to the end (transposes) and transformed by
`ops.fft` up to three at a time; repeated axes are transformed once per repeat,
in NumPy's order. Everything works eagerly and under `jit` / `grad` / `vmap`.

    tnp.fft.rfft(x, n=16, norm="ortho"); tnp.fft.fftn(x, s=(8, 8), axes=(0, 2))
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, ShapeError, TracerTypeError, TracerValueError
from ._promotion import (as_result, asarray_like, cast, check_out, dtype_of, error,
                         normalize_axis)
from ._rearrange import roll
from . import _ufuncs as uf

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
           "ifftn", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")
_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
_INVERSE = ("IFFT", "IRFFT")
_SINGLE = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.complex64)


# ------------------------------------------------------------------ arguments
def _norm(norm: Any, fname: str) -> Any:
    if norm not in _NORMS:
        raise error(TracerValueError, fname, f'Invalid norm value {norm}; should be '
                    f'"backward", "ortho" or "forward".')
    return norm


def _length(n: Any, fname: str) -> int:
    try:
        n = operator.index(n)
    except TypeError:
        raise error(TracerTypeError, fname, f"n and s must be static ints, got {n!r}") from None
    if n < 1:
        raise error(TracerValueError, fname, f"Invalid number of FFT data points ({n}) "
                    f"specified.")
    return n


def _input(x: Any, kind: str, fname: str) -> Any:
    """`x` in the dtype ops.fft takes for `kind` (NumPy's promotion to complex/real)."""
    dtype = dtype_of(x)
    if np.ndim(x) == 0:
        raise error(ShapeError, fname, f"needs an array of rank >= 1, got a scalar ({dtype})")
    if dtypes.kind(dtype) not in "biufc":
        raise error(DTypeError, fname, f"cannot transform {dtype} values")
    if kind == "RFFT":
        if dtype.kind == "c":
            raise error(DTypeError, fname, f"rfft needs real input, got {dtype} (take the "
                        f"real part, or use fft)")
        return cast(x, dtypes.float32 if dtype in _SINGLE else dtypes.float64)
    return cast(x, dtypes.complex64 if dtype in _SINGLE else dtypes.complex128)


def _cook(x: Any, s: Any, axes: Any, kind: str, fname: str) -> tuple[list[int], list[int]]:
    """NumPy's `_cook_nd_args`: the (lengths, axes) of an n-d transform."""
    shape, ndim = np.shape(x), np.ndim(x)
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(ndim))
    axes = [normalize_axis(ax, ndim, fname, of=x) for ax in
            (axes if isinstance(axes, (tuple, list)) else [axes])]
    if s is None:
        s = [shape[ax] for ax in axes]
        if kind == "IRFFT" and axes:
            s[-1] = (shape[axes[-1]] - 1) * 2
    s = list(s) if isinstance(s, (tuple, list)) else [s]
    if len(s) != len(axes):
        raise error(TracerValueError, fname, "Shape and axes have different lengths.")
    return [shape[ax] if n == -1 else _length(n, fname) for n, ax in zip(s, axes)], axes


# ------------------------------------------------------------------ transforms
def _resize(x: Any, axis: int, n: int) -> Any:
    """Truncate or zero-pad `x` to length n along `axis`."""
    shape = np.shape(x)
    if shape[axis] > n:
        limits = tuple(n if d == axis else size for d, size in enumerate(shape))
        return ops.slice(x, (0,) * len(shape), limits)
    if shape[axis] < n:
        config = [(0, n - shape[axis] if d == axis else 0, 0) for d in range(len(shape))]
        return ops.pad(x, np.zeros((), dtype_of(x)), config)
    return x


def _apply(x: Any, axes: Sequence[int], kind: str, lengths: Sequence[int]) -> Any:
    """ops.fft over `axes` (at most 3, in this order), moved to the end and back."""
    ndim = np.ndim(x)
    perm = [d for d in range(ndim) if d not in axes] + list(axes)
    moved = perm != list(range(ndim))
    y = ops.fft(ops.transpose(x, perm) if moved else x, kind, lengths)
    return ops.transpose(y, list(np.argsort(perm))) if moved else y


def _groups(axes: list[int]) -> list[list[int]]:
    """Up to 3 axes a group, the last group holding the last axis."""
    head = len(axes) % 3 or 3
    return [axes[:head]] + [axes[i:i + 3] for i in range(head, len(axes), 3)]


def _transform(x: Any, axes: list[int], s: list[int], kind: str) -> Any:
    """Distinct axes: resize, then the real transform on the last group (first for RFFT,
    last for IRFFT) and complex ones on the others."""
    for ax, n in zip(axes, s, strict=True):
        x = _resize(x, ax, n // 2 + 1 if kind == "IRFFT" and ax == axes[-1] else n)
    groups = _groups(axes)
    length = dict(zip(axes, s, strict=True))
    plain = "FFT" if kind in ("FFT", "RFFT") else "IFFT"
    steps = [(g, plain) for g in groups[:-1]]
    steps = ([(groups[-1], kind)] + steps) if kind == "RFFT" else steps + [(groups[-1], kind)]
    for group, step_kind in steps:
        x = _apply(x, group, step_kind, [length[ax] for ax in group])
    return x


def _scaled(x: Any, lengths: Sequence[int], kind: str, norm: Any) -> Any:
    if norm in (None, "backward"):
        return x
    n = float(math.prod(lengths))
    factor = math.sqrt(n) if norm == "ortho" else n
    factor = factor if kind in _INVERSE else 1.0 / factor
    return ops.mul(x, np.asarray(factor, dtype_of(x)))


def _nd(a: Any, s: Any, axes: Any, kind: str, norm: Any, fname: str) -> Any:
    norm = _norm(norm, fname)
    src = asarray_like(a, fname)
    x = _input(src, kind, fname)
    lengths, axes = _cook(x, s, axes, kind, fname)
    if not axes:
        return as_result(src)  # (NumPy returns the input as it is)
    if len(set(axes)) < len(axes):  # NumPy's loop of 1-d transforms
        return _repeated(x, lengths, axes, kind, norm, fname)
    out = _scaled(_transform(x, axes, lengths, kind), lengths, kind, norm)
    if kind == "IRFFT" and len(axes) == 1 and dtype_of(src) == dtypes.float16:
        out = cast(out, dtypes.float16)  # NumPy's one-axis irfft keeps half precision
    return as_result(out)


def _repeated(x: Any, lengths: list[int], axes: list[int], kind: str, norm: Any,
              fname: str) -> Any:
    steps = list(zip(lengths, axes, strict=True))
    plain = "FFT" if kind in ("FFT", "RFFT") else "IFFT"
    if kind in ("FFT", "IFFT"):
        order = [(n, ax, kind) for n, ax in reversed(steps)]
    elif kind == "RFFT":
        order = [(*steps[-1], kind)] + [(n, ax, plain) for n, ax in steps[:-1]]
    else:
        order = [(n, ax, plain) for n, ax in steps[:-1]] + [(*steps[-1], kind)]
    for n, ax, step in order:
        x = _nd(x, [n], [ax], step, norm, fname)
    return x


# ------------------------------------------------------------------ 1-d
def _one(a: Any, n: Any, axis: int, kind: str, norm: Any, out: Any, fname: str) -> Any:
    check_out(out, fname)
    return _nd(a, None if n is None else [n], [axis], kind, norm, fname)


def fft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """One-dimensional discrete Fourier transform (`ops.fft` "FFT").

    NumPy rule: `n` zero-pads or truncates the input along `axis`; float32 -> c64,
    everything else real -> c128. fft([1, 1, 1, 1]) -> [4, 0, 0, 0]
    """
    return _one(a, n, axis, "FFT", norm, out, "fft")


def ifft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """Inverse of `fft` (scaled by 1/n with the default norm).

    ifft([4, 0, 0, 0]) -> [1, 1, 1, 1]
    """
    return _one(a, n, axis, "IFFT", norm, out, "ifft")


def rfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """FFT of real input: the n // 2 + 1 non-negative frequency terms.

    NumPy rule: complex input is a TypeError. rfft([1, 1, 1, 1]) -> [4, 0, 0]
    """
    return _one(a, n, axis, "RFFT", norm, out, "rfft")


def irfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """Inverse of `rfft`: real output of length n (default 2 * (m - 1) for m input terms).

    irfft([4, 0, 0]) -> [1, 1, 1, 1]
    """
    return _one(a, n, axis, "IRFFT", norm, out, "irfft")


def hfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """FFT of a Hermitian-symmetric signal given by its first half: irfft(conj(a)) with
    the norm's direction swapped (a real spectrum of length n)."""
    check_out(out, "hfft")
    x = asarray_like(a, "hfft")
    x = uf.conjugate(x) if dtype_of(x).kind == "c" else x
    return _nd(x, None if n is None else [n], [axis], "IRFFT", _SWAPPED[_norm(norm, "hfft")],
               "hfft")


def ihfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
    """Inverse of `hfft`: conj(rfft(a)) with the norm's direction swapped."""
    check_out(out, "ihfft")
    y = _nd(a, None if n is None else [n], [axis], "RFFT", _SWAPPED[_norm(norm, "ihfft")],
            "ihfft")
    return as_result(uf.conjugate(y))


# ------------------------------------------------------------------ n-d
def fftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
    """N-dimensional FFT over `axes` (default: all, or the last len(s)); `s` gives the
    lengths (-1: the input's). fftn(np.ones((2, 2))) -> [[4, 0], [0, 0]]"""
    check_out(out, "fftn")
    return _nd(a, s, axes, "FFT", norm, "fftn")


def ifftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
    """Inverse of `fftn`."""
    check_out(out, "ifftn")
    return _nd(a, s, axes, "IFFT", norm, "ifftn")


def rfftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
    """N-dimensional FFT of real input: rfft over the last axis, fft over the others."""
    check_out(out, "rfftn")
    return _nd(a, s, axes, "RFFT", norm, "rfftn")


def irfftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Any:
    """Inverse of `rfftn`; s[-1] is the real output length (default 2 * (m - 1))."""
    check_out(out, "irfftn")
    return _nd(a, s, axes, "IRFFT", norm, "irfftn")


def fft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
    """`fftn` over the last two axes."""
    check_out(out, "fft2")
    return _nd(a, s, axes, "FFT", norm, "fft2")


def ifft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None,
          out: Any = None) -> Any:
    """`ifftn` over the last two axes."""
    check_out(out, "ifft2")
    return _nd(a, s, axes, "IFFT", norm, "ifft2")


def rfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None,
          out: Any = None) -> Any:
    """`rfftn` over the last two axes."""
    check_out(out, "rfft2")
    return _nd(a, s, axes, "RFFT", norm, "rfft2")


def irfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None,
           out: Any = None) -> Any:
    """`irfftn` over the last two axes."""
    check_out(out, "irfft2")
    return _nd(a, s, axes, "IRFFT", norm, "irfft2")


# ------------------------------------------------------------------ helpers
def _frequencies(ints: np.ndarray, n: int, d: Any) -> Any:
    """ints / (d * n) with NumPy's promotion (float64 for a Python or float32 d)."""
    return as_result(uf.multiply(ints, uf.divide(1.0, uf.multiply(n, d))))


def fftfreq(n: Any, d: Any = 1.0, device: Any = None) -> Any:
    """Sample frequencies of an `fft` of length n with sample spacing d:
    [0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d * n). fftfreq(4) -> [0, .25, -.5, -.25]"""
    n = operator.index(n)
    ints = np.concatenate([np.arange((n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _frequencies(ints, n, d)


def rfftfreq(n: Any, d: Any = 1.0, device: Any = None) -> Any:
    """Sample frequencies of an `rfft` of length n: [0, 1, ..., n // 2] / (d * n)."""
    n = operator.index(n)
    return _frequencies(np.arange(n // 2 + 1), n, d)


def _shift(x: Any, axes: Any, sign: int, fname: str) -> Any:
    x = asarray_like(x, fname)
    shape = np.shape(x)
    if axes is None:
        axes = tuple(range(len(shape)))
    elif not isinstance(axes, (tuple, list)):
        axes = (axes,)
    shifts = [sign * (shape[normalize_axis(ax, len(shape), fname, of=x)] // 2) for ax in axes]
    return roll(x, shifts, axes)


def fftshift(x: Any, axes: Any = None) -> Any:
    """Move the zero-frequency term to the center: roll by n // 2 along `axes` (all).
    fftshift([0, 1, 2, -2, -1]) -> [-2, -1, 0, 1, 2]"""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x: Any, axes: Any = None) -> Any:
    """Inverse of `fftshift`: roll by -(n // 2)."""
    return _shift(x, axes, -1, "ifftshift")

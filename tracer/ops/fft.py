"""Fft (XLA's Fft): forward and inverse DFTs over the 1-3 innermost axes.

`fft_type` is one of "FFT", "IFFT" (complex -> complex, shape kept), "RFFT"
(real -> complex: the innermost axis becomes fft_length[-1] // 2 + 1) and "IRFFT"
(complex -> real: the innermost axis becomes fft_length[-1]). The inverse
transforms scale by 1 / prod(fft_length), as NumPy's do (the seeds leave it
unstated). Multi-axis transforms are the cascade over each axis; RFFT halves the
innermost axis (transformed first), IRFFT rebuilds it from the reversed conjugate
(transformed last), so an IRFFT ignores the imaginary parts of the bins that
must be real (DC and, for even lengths, Nyquist), as NumPy's `irfftn` does.

Shape rules follow XLA's: the transformed axes of the input equal fft_length
(for IRFFT: all but the innermost, which is fft_length[-1] // 2 + 1); a zero
fft_length[-1] keeps a zero-sized innermost axis. dtypes: f32 <-> c64,
f64 <-> c128.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError
from .common import static_ints, wrapper_error
from .registry import define_op

__all__ = ["fft"]

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
_REAL_INPUT = (dtypes.float32, dtypes.float64)


def rfft_size(n: int) -> int:
    """Innermost size of an RFFT of length n (a zero-sized axis stays zero-sized)."""
    return n // 2 + 1 if n else 0


def _check_lengths(x: ShapedArray, fft_type: str, fft_length: tuple[int, ...]) -> None:
    k = len(fft_length)
    if not 1 <= k <= 3:
        raise ParamError(f"fft_length {fft_length} must have 1 to 3 entries (the seeds' "
                         f"transforms cover up to 3 innermost axes)")
    if any(n < 0 for n in fft_length):
        raise ParamError(f"fft_length {fft_length} must be non-negative")
    if k > x.ndim:
        raise ShapeError(f"{fft_type} over {k} axes needs an operand of rank >= {k}, got {x}")
    inner = x.shape[x.ndim - k:]
    if fft_type != "IRFFT" and inner != fft_length:
        raise ShapeError(f"{fft_type} needs the innermost dimensions of {x} to equal "
                         f"fft_length {fft_length}")
    if fft_type == "IRFFT":
        want = fft_length[:-1] + (rfft_size(fft_length[-1]),)
        if inner != want:
            raise ShapeError(f"IRFFT needs the innermost dimensions of {x} to be {want} "
                             f"(fft_length {fft_length}, the last one halved: n // 2 + 1)")


def _fft_shape(x: ShapedArray, *, fft_type: str, fft_length: tuple[int, ...]) -> ShapedArray:
    if fft_type not in FFT_TYPES:
        raise ParamError(f"fft_type must be one of {FFT_TYPES}, got {fft_type!r}")
    if fft_type == "RFFT" and x.dtype not in _REAL_INPUT:
        raise DTypeError(f"RFFT needs a f32 or f64 operand, got {x}")
    if fft_type != "RFFT" and not dtypes.is_complex(x.dtype):
        raise DTypeError(f"{fft_type} needs a c64 or c128 operand, got {x}")
    _check_lengths(x, fft_type, fft_length)
    if fft_type == "RFFT":
        shape = x.shape[:-1] + (rfft_size(fft_length[-1]),)
        return ShapedArray(shape, dtypes.complex_dtype(x.dtype))
    if fft_type == "IRFFT":
        return ShapedArray(x.shape[:-1] + (fft_length[-1],), dtypes.real_dtype(x.dtype))
    return ShapedArray(x.shape, x.dtype)


def _fft_impl(x: np.ndarray, *, fft_type: str, fft_length: tuple[int, ...]) -> np.ndarray:
    out = _fft_shape(ShapedArray(x.shape, x.dtype), fft_type=fft_type, fft_length=fft_length)
    if 0 in out.shape or 0 in x.shape:  # NumPy rejects zero-length transforms
        return np.zeros(out.shape, out.dtype)
    axes = tuple(range(x.ndim - len(fft_length), x.ndim))
    if fft_type == "FFT":
        y = np.fft.fftn(x, axes=axes)
    elif fft_type == "IFFT":
        y = np.fft.ifftn(x, axes=axes)
    elif fft_type == "RFFT":
        y = np.fft.rfftn(x, axes=axes)
    else:
        y = np.fft.irfftn(x, s=fft_length, axes=axes)
    return np.asarray(y, out.dtype)


def _fft_type(value: Any) -> str:
    """"FFT" ... "IRFFT" from a string (any case) or an enum member such as jax's FftType."""
    name = str(getattr(value, "name", value)).upper()
    if name not in FFT_TYPES:
        raise wrapper_error(ParamError, "fft", f"fft_type must be one of {FFT_TYPES}, "
                            f"got {value!r}")
    return name


def fft(operand: Any, fft_type: Any, fft_length: Any) -> Any:
    """Discrete Fourier transform over the len(fft_length) (1-3) innermost axes.

    Seed rule: FFT / IFFT are complex -> complex (shape kept); RFFT is real ->
    complex, the innermost axis becoming fft_length[-1] // 2 + 1 (the part beyond
    Nyquist is dropped); IRFFT is complex -> real, the innermost axis becoming
    fft_length[-1]. The inverses scale by 1 / prod(fft_length) (as NumPy).

    fft(np.ones(4, np.complex64), "FFT", [4]) -> [4, 0, 0, 0] (c64)
    fft(np.zeros(16, np.float32), "RFFT", [16]) -> c64[9]; IRFFT(c64[9], [17]) -> f32[17]
    """
    return fft_p.bind(operand, fft_type=_fft_type(fft_type),
                      fft_length=static_ints("fft", "fft_length", fft_length))


fft_p = define_op("fft", shape=_fft_shape, impl=_fft_impl, family="fft", linear=True,
                  doc=inspect.cleandoc(fft.__doc__ or ""))

# (last: the rules module imports this one) The op records arrive with their JVP /
# transpose / batching rules, however this module was first imported.
from . import numerics_rules  # noqa: E402,F401

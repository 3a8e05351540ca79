"""Device arrays: what the generated host code and the executable move around.

Arrays are numba device arrays (`DeviceNDArray`, or the simulator's
`FakeCUDAArray`), always C-contiguous. float16 arrays are stored as float16.
A rank-0 value lives in a 1-element array of its *register* dtype (float32 for
float16, as in the CPU backend), so kernels read it as `x[0]` and the host
only copies it back when it must (a loop predicate, a branch index).

`device_put` / `is_device_array` are the user-facing part (`tr.device_put`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from numba import cuda

from ..core import ShapedArray
from .cpu_scalar import F16

F32 = np.dtype(np.float32)


def is_device_array(x: Any) -> bool:
    """A numba device array (real or simulated); checked without importing numba.cuda."""
    return bool(getattr(type(x), "__cuda_ndarray__", False))


def device_put(x: Any) -> Any:
    """`x` as a device array (NumPy arrays and scalars are copied; device arrays stay)."""
    if is_device_array(x):
        return x
    return cuda.to_device(np.array(x, order="C"))  # (ascontiguousarray makes 0-d arrays 1-d)


def register_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a rank-0 value is held in (float16 is computed in float32)."""
    return F32 if dtype == F16 else np.dtype(dtype)


def empty(shape: Sequence[int], dtype: Any) -> Any:
    return cuda.device_array(tuple(shape), np.dtype(dtype))


def scalar(value: Any, dtype: Any) -> Any:
    """A rank-0 value (a host scalar) as a 1-element device array of its register dtype."""
    return cuda.to_device(np.array([value], register_dtype(np.dtype(dtype))))


def copy(x: Any) -> Any:
    """A fresh device array with the contents of device array `x`."""
    out = cuda.device_array(x.shape, x.dtype)
    out.copy_to_device(x)
    return out


def host_value(x: Any) -> Any:
    """Element 0 of a rank-0 value's device array, on the host (a synchronizing copy)."""
    return x.copy_to_host()[0]


def put_row(ys: Any, i: int, value: Any) -> None:
    """ys[i] = value for a scan's stacked outputs (`value` a device array; for 1-D `ys`
    a rank-0 value, converted from its register dtype when `ys` is float16)."""
    if ys.ndim == 1:
        if value.dtype != ys.dtype:
            ys[i:i + 1].copy_to_device(value.copy_to_host().astype(ys.dtype))
        else:
            ys[i:i + 1].copy_to_device(value)
    else:
        ys[i].copy_to_device(value)


def row(xs: Any, i: int) -> Any:
    """xs[i] for a scan's scanned inputs: a view, or for 1-D `xs` a rank-0 value."""
    if xs.ndim > 1:
        return xs[i]
    if xs.dtype == F16:
        return cuda.to_device(xs[i:i + 1].copy_to_host().astype(F32))
    return xs[i:i + 1]


# ------------------------------------------------------------------ the executable's edges

def to_device(x: Any, aval: ShapedArray) -> Any:
    """An argument as the host code takes it (copied in when it is a NumPy value)."""
    if aval.ndim == 0:
        reg = register_dtype(aval.dtype)
        if is_device_array(x) and x.dtype == reg:
            return x.reshape((1,))
        value = x.copy_to_host() if is_device_array(x) else np.asarray(x)
        return cuda.to_device(np.asarray(value, aval.dtype).astype(reg).reshape((1,)))
    if is_device_array(x):
        return x if x.is_c_contiguous() else device_put(x.copy_to_host())
    return cuda.to_device(np.ascontiguousarray(np.asarray(x, aval.dtype)))


def to_host(x: Any, aval: ShapedArray) -> np.ndarray:
    """A result as a NumPy array of the graph's output type."""
    value = x.copy_to_host()
    if aval.ndim == 0:
        return np.asarray(value[0], aval.dtype).reshape(())
    return value


def as_output(x: Any, aval: ShapedArray) -> Any:
    """A result as a device array of the graph's output type (rank 0: shape ())."""
    if aval.ndim == 0:
        if x.dtype == aval.dtype:
            return x.reshape(())
        return cuda.to_device(to_host(x, aval))
    return x


# ------------------------------------------------------------------ ops run on the host

class HostOp:
    """An op run by the CPU backend (`cuda_emit_ops.HOST_OPS`): called from the host code
    with device arrays, it copies them to the host, runs `compile()` (the cpu backend's
    code for that one eqn, compiled on the first call) and copies its results back."""

    def __init__(self, compile: Callable[[], Callable[..., Sequence[np.ndarray]]],
                 in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray]):
        self._compile = compile
        self._executable: Callable[..., Sequence[np.ndarray]] | None = None
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)

    def __call__(self, *args: Any) -> list[Any]:
        if self._executable is None:
            self._executable = self._compile()
        host = [to_host(a, v) for a, v in zip(args, self.in_avals, strict=True)]
        outs = self._executable(*host)
        return [to_device(o, v) for o, v in zip(outs, self.out_avals, strict=True)]


def zeros(shape: Sequence[int], dtype: Any) -> Any:
    return cuda.to_device(np.zeros(tuple(shape), np.dtype(dtype)))

"""Device arrays: what the generated host code and the executable move around.

Arrays are numba device arrays (`DeviceNDArray`, or the simulator's
`FakeCUDAArray`), always C-contiguous. float16 arrays are stored as float16.
A rank-0 value lives in a 1-element array of its *register* dtype (float32 for
float16, as in the CPU backend), so kernels read it as `x[0]` and the host
only copies it back when it must (a loop predicate, a branch index).

Device arrays never pass through the host: a change of dtype (a float16
scalar to its float32 register and back) or of layout (a strided view made
contiguous) is a copy kernel (`astype`, `contiguous`), compiled once per rank.

`device_put` / `is_device_array` are the user-facing part (`tr.device_put`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np
from numba import cuda

from ....core import ShapedArray
from ...numba.scalar import F16
from . import launch, pool
from .launch import SIMULATED

F32 = np.dtype(np.float32)


def is_device_array(x: Any) -> bool:
    """A numba device array (real or simulated); checked without importing numba.cuda."""
    return bool(getattr(type(x), "__cuda_ndarray__", False))


def device_put(x: Any) -> Any:
    """`x` as a device array (NumPy arrays and scalars are copied; device arrays stay)."""
    if is_device_array(x):
        return x
    return _copied_in(np.asarray(x, order="C"))  # (ascontiguousarray makes 0-d arrays 1-d)


def _copied_in(x: np.ndarray) -> Any:
    """A C-contiguous host array copied into a new device array."""
    out = empty(x.shape, x.dtype)
    if x.size:
        out.copy_to_device(x)
    return out


def register_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a rank-0 value is held in (float16 is computed in float32)."""
    return F32 if dtype == F16 else np.dtype(dtype)


def empty(shape: Sequence[int], dtype: Any) -> Any:
    """A new C-contiguous device array; on a GPU its memory comes from `pool`."""
    shape, dtype = tuple(int(n) for n in shape), np.dtype(dtype)
    if SIMULATED or 0 in shape:
        return cuda.device_array(shape, dtype)
    return pool.empty(shape, dtype)


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
    a rank-0 value, converted on the device from its register dtype)."""
    if ys.ndim == 1:
        ys[i:i + 1].copy_to_device(astype(value, ys.dtype))
    else:
        ys[i].copy_to_device(value)


def row(xs: Any, i: int) -> Any:
    """xs[i] for a scan's scanned inputs: a view, or for 1-D `xs` a rank-0 value."""
    if xs.ndim > 1:
        return xs[i]
    return astype(xs[i:i + 1], register_dtype(xs.dtype))


# ------------------------------------------------------------------ copy kernels

@functools.cache
def copy_kernel(ndim: int) -> Any:
    """`copy(src, dst)`: dst[i...] = src[i...] for a C-contiguous `dst` of `src`'s shape;
    `src` of any layout, the dtypes may differ (a conversion). One kernel per rank: the
    flat index of `dst` is split into the indices of `src`."""
    index = ", ".join(f"i{d}" for d in range(ndim))
    lines = ["def copy(src, dst):",
             "    for flat in range(cuda.grid(1), dst.size, cuda.gridsize(1)):",
             "        rest = flat"]
    for d in range(ndim - 1, 0, -1):
        lines += [f"        i{d} = rest % src.shape[{d}]", f"        rest //= src.shape[{d}]"]
    lines += ["        i0 = rest", f"        dst[{index}] = src[{index}]"]
    scope: dict[str, Any] = {"cuda": cuda}
    exec("\n".join(lines), scope)  # the fixed text above
    return cuda.jit(scope["copy"])


def _copy_into(src: Any, dst: Any) -> Any:
    if dst.size:
        copy_kernel(src.ndim)[launch.grid(dst.size), launch.CONFIG.block](src, dst)
    return dst


def astype(x: Any, dtype: Any) -> Any:
    """Device array `x` as `dtype` (itself when it already is, C-contiguous), converted by
    a kernel on the device."""
    dtype = np.dtype(dtype)
    if x.dtype == dtype and x.is_c_contiguous():
        return x
    if x.ndim == 0:
        return _copy_into(x.reshape((1,)), empty((1,), dtype)).reshape(())
    return _copy_into(x, empty(x.shape, dtype))


def contiguous(x: Any) -> Any:
    """Device array `x`, or a C-contiguous copy made on the device if it is a strided view."""
    return astype(x, x.dtype)


# ------------------------------------------------------------------ the executable's edges

def to_device(x: Any, aval: ShapedArray) -> Any:
    """An argument as the host code takes it: a device array stays on the device (a
    rank-0 one converted to its register dtype there); a NumPy value is copied in."""
    if is_device_array(x):
        if aval.ndim == 0:
            return astype(x.reshape((1,)), register_dtype(aval.dtype))
        return contiguous(x)
    if aval.ndim == 0:
        reg = register_dtype(aval.dtype)
        return _copied_in(np.asarray(x, aval.dtype).astype(reg).reshape((1,)))
    return _copied_in(np.ascontiguousarray(np.asarray(x, aval.dtype)))


def to_host(x: Any, aval: ShapedArray) -> np.ndarray:
    """A result as a NumPy array of the graph's output type."""
    value = x.copy_to_host()
    if aval.ndim == 0:
        return np.asarray(value[0], aval.dtype).reshape(())
    return value


def as_output(x: Any, aval: ShapedArray) -> Any:
    """A result as a device array of the graph's output type (rank 0: shape (),
    converted from its register dtype on the device)."""
    if aval.ndim == 0:
        return astype(x, aval.dtype).reshape(())
    return x


# ------------------------------------------------------------------ ops run on the host

class HostOp:
    """An op run by the CPU backend (`cuda.emit.table.HOST_OPS`): called from the host code
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

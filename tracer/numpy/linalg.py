"""`tracer.numpy.linalg`: NumPy 2's linalg namespace on tracer.ops.

    import tracer.numpy as tnp
    tnp.linalg.solve(a, b); tnp.linalg.slogdet(a).logabsdet; tnp.linalg.norm(x, axis=-1)

Everything is built on `tracer.ops` (lu, triangular_solve, cholesky, qr, eigh, svd and
the array ops), so it runs eagerly on NumPy arrays, under `jit`, `grad` (e.g. the
gradient of slogdet's logabsdet is inv(a)ᵀ) and `vmap`. Stacks of matrices
broadcast like NumPy's. Differences from NumPy (a compiled function cannot raise on
data): singular matrices give inf / NaN rather than LinAlgError, cholesky of a
non-positive-definite matrix gives NaNs, float32 is computed in float32, and under
tracing lstsq returns the residuals whenever M > N. Not provided: eig, eigvals
(non-Hermitian eigenproblems) and qr(mode="raw").
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import numpy as tnp  # (bound by the time any function here runs)
from ..errors import ShapeError, TracerValueError
from ._promotion import error, normalize_axis, promote
from .linalg_norm import cond, matrix_norm, norm, vector_norm
from .linalg_solve import (EighResult, LinAlgError, QRResult, SlogdetResult, SVDResult,
                           cholesky, det, eigh, eigvalsh, inv, lstsq, matrix_power,
                           matrix_rank, operand, pinv, qr, slogdet, solve, svd, svdvals,
                           tensorinv, tensorsolve)

__all__ = [
    "LinAlgError", "EighResult", "QRResult", "SlogdetResult", "SVDResult",
    "cholesky", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "lstsq",
    "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot",
    "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
    "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
]


# --------------------------------------------------------------------------- products
def matmul(x1: Any, x2: Any, /) -> Any:
    """Matrix product (array API alias of numpy.matmul)."""
    return tnp.matmul(x1, x2)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """Tensor dot product over `axes` (array API alias of numpy.tensordot)."""
    return tnp.tensordot(x1, x2, axes=axes)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """sum(conj(x1) * x2) over `axis`, broadcasting the other dims."""
    return tnp.vecdot(x1, x2, axis=axis)


def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two vectors (linalg.outer accepts only 1-D inputs)."""
    a, b = operand(x1, "outer"), operand(x2, "outer")
    if a.ndim != 1 or b.ndim != 1:
        raise error(ShapeError, "outer", f"Input arrays must be one-dimensional, but they "
                    f"are x1.ndim={a.ndim} and x2.ndim={b.ndim}.")
    return tnp.outer(a, b)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum of the `offset` diagonal of the last two axes."""
    return tnp.trace(operand(x, "trace"), offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The `offset` diagonal of the last two axes."""
    return tnp.diagonal(operand(x, "diagonal"), offset=offset, axis1=-2, axis2=-1)


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes."""
    a = operand(x, "matrix_transpose")
    if a.ndim < 2:
        raise error(TracerValueError, "matrix_transpose", "x must be at least 2-dimensional "
                    "for matrix_transpose")
    return tnp.swapaxes(a, -1, -2)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Cross product of 3-vectors along `axis` (the other dims broadcast)."""
    a, b = promote(operand(x1, "cross"), operand(x2, "cross"), fname="cross")
    sizes = (a.shape[axis] if a.ndim else 0, b.shape[axis] if b.ndim else 0)
    if sizes != (3, 3):
        raise error(TracerValueError, "cross", f"Both input arrays must be (arrays of) "
                    f"3-dimensional vectors, but they are {sizes[0]} and {sizes[1]} "
                    f"dimensional instead.")
    a = tnp.moveaxis(a, normalize_axis(axis, a.ndim, "cross"), -1)
    b = tnp.moveaxis(b, normalize_axis(axis, b.ndim, "cross"), -1)
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    c = tnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return tnp.moveaxis(c, -1, normalize_axis(axis, c.ndim, "cross"))


def multi_dot(arrays: Sequence[Any], *, out: None = None) -> Any:
    """Chained dot products in the cheapest order (NumPy's dynamic program); the first
    and last arrays may be vectors."""
    if out is not None:
        raise error(TracerValueError, "multi_dot", "out= is not supported; use the result")
    n = len(arrays)
    if n < 2:
        raise error(TracerValueError, "multi_dot", "Expecting at least two arrays.")
    if n == 2:
        return tnp.dot(arrays[0], arrays[1])
    xs = [operand(a, "multi_dot") for a in arrays]
    first, last = xs[0].ndim, xs[-1].ndim
    xs[0] = tnp.atleast_2d(xs[0])
    xs[-1] = tnp.atleast_2d(xs[-1]).T if last == 1 else xs[-1]
    if any(x.ndim != 2 for x in xs):
        bad = next(x.ndim for x in xs if x.ndim != 2)
        raise error(LinAlgError, "multi_dot", f"{bad}-dimensional array given. Array must "
                    f"be two-dimensional")
    result = _chain(xs, _chain_order([x.shape for x in xs]), 0, n - 1)
    if first == 1 and last == 1:
        return result[0, 0]
    return tnp.ravel(result) if 1 in (first, last) else result


def _chain_order(shapes: list[tuple[int, ...]]) -> np.ndarray:
    """split[i, j]: where the cheapest product of arrays i..j splits (NumPy's rule)."""
    n = len(shapes)
    p = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = np.zeros((n, n))
    split = np.zeros((n, n), dtype=int)
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j] = np.inf
            for k in range(i, j):
                q = cost[i, k] + cost[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
                if q < cost[i, j]:
                    cost[i, j], split[i, j] = q, k
    return split


def _chain(xs: list[Any], split: np.ndarray, i: int, j: int) -> Any:
    if i == j:
        return xs[i]
    k = int(split[i, j])
    return tnp.dot(_chain(xs, split, i, k), _chain(xs, split, k + 1, j))

"""Batched-matrix helpers on `tracer.ops` for the decomposition wrappers and rules.

Every helper takes arrays of shape [..., m, n] (all but the minor two dims are batch
dims) and binds only tracer ops, so it works eagerly, traced and under the
transformations (the JVP rules of `decomp_rules` are written with them).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import dtypes
from . import elementwise as ew
from .ad import aval_of_value
from .linalg import dot_general
from .shape import broadcast_in_dim, concatenate, iota, slice as slice_, transpose


def shape_of(x: Any) -> tuple[int, ...]:
    return aval_of_value(x).shape


def dtype_of(x: Any) -> np.dtype:
    return aval_of_value(x).dtype


def mT(x: Any) -> Any:
    """Swap the two minor dims."""
    nd = len(shape_of(x))
    return transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def conj(x: Any) -> Any:
    if not dtypes.is_complex(dtype_of(x)):
        return x
    return ew.complex(ew.real(x), ew.neg(ew.imag(x)))


def H(x: Any) -> Any:
    """Conjugate transpose of the minor two dims."""
    return conj(mT(x))


def matmul(a: Any, b: Any) -> Any:
    """a @ b for equal batch dims (no broadcasting)."""
    nd = len(shape_of(a))
    batch = tuple(range(nd - 2))
    return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def full(shape: Sequence[int], value: Any, dtype: Any) -> Any:
    return broadcast_in_dim(np.asarray(value, dtype), tuple(shape), ())


def zeros_like(x: Any) -> Any:
    return full(shape_of(x), 0, dtype_of(x))


def _mask(shape: Sequence[int], k: int, lower: bool) -> Any:
    """Bool [..., m, n]: col - row <= k (lower) or col - row >= k (upper)."""
    m, n = shape[-2:]
    rows = iota(np.int32, (m, n), 0)
    cols = iota(np.int32, (m, n), 1)
    diff = ew.sub(cols, rows)
    keep = ew.le(diff, np.int32(k)) if lower else ew.ge(diff, np.int32(k))
    nd = len(shape)
    return broadcast_in_dim(keep, tuple(shape), (nd - 2, nd - 1))


def tril(x: Any, k: int = 0) -> Any:
    return ew.select(_mask(shape_of(x), k, True), x, zeros_like(x))


def triu(x: Any, k: int = 0) -> Any:
    return ew.select(_mask(shape_of(x), k, False), x, zeros_like(x))


def eye_mask(shape: Sequence[int]) -> Any:
    return ew.eq(_mask(shape, 0, True), _mask(shape, 0, False))


def eye(shape: Sequence[int], dtype: Any) -> Any:
    """Identity matrices of `shape` [..., n, n] (batch dims broadcast)."""
    return ew.select(eye_mask(shape), full(shape, 1, dtype), full(shape, 0, dtype))


def diag_part(x: Any) -> Any:
    """[..., n, n] -> [..., n]: the diagonals."""
    from .shape_rules import sum_dims  # (the rules module builds on the shape ops)
    shape = shape_of(x)
    kept = ew.select(eye_mask(shape), x, zeros_like(x))
    return sum_dims(kept, [len(shape) - 1])


def diag_embed(v: Any) -> Any:
    """[..., n] -> [..., n, n]: diagonal matrices."""
    shape = shape_of(v)
    out = (*shape, shape[-1])
    nd = len(out)
    spread = broadcast_in_dim(v, out, (*range(nd - 2), nd - 1))
    return ew.select(eye_mask(out), spread, zeros_like(spread))


def rows_times(x: Any, v: Any) -> Any:
    """x * v[..., :, None]: scale row i of each matrix by v[..., i]."""
    nd = len(shape_of(x))
    return ew.mul(x, broadcast_in_dim(v, shape_of(x), tuple(range(nd - 1))))


def cols_times(x: Any, v: Any) -> Any:
    """x * v[..., None, :]: scale column j of each matrix by v[..., j]."""
    nd = len(shape_of(x))
    return ew.mul(x, broadcast_in_dim(v, shape_of(x), (*range(nd - 2), nd - 1)))


def as_dtype(x: Any, dtype: Any) -> Any:
    """A real array converted to `dtype` (real or complex)."""
    return x if dtype_of(x) == dtype else ew.convert_element_type(x, dtype)


def real_part(x: Any) -> Any:
    """Re(x) in x's own dtype (complex x keeps a zero imaginary part)."""
    if not dtypes.is_complex(dtype_of(x)):
        return x
    return as_dtype(ew.real(x), dtype_of(x))


def symmetrize(x: Any) -> Any:
    """(x + xᴴ) / 2."""
    return ew.mul(ew.add(x, H(x)), 0.5)


def herm(x: Any, lower: bool) -> Any:
    """The Hermitian matrices one triangle of x describes (the other triangle and the
    imaginary part of the diagonal ignored): the linear map the decompositions apply
    to their input before factoring it."""
    strict = tril(x, -1) if lower else triu(x, 1)
    diag = ew.select(eye_mask(shape_of(x)), real_part(x), zeros_like(x))
    return ew.add(ew.add(strict, H(strict)), diag)


def cols(x: Any, start: int, stop: int) -> Any:
    """x[..., :, start:stop]."""
    shape = shape_of(x)
    return slice_(x, (0,) * (len(shape) - 1) + (start,), (*shape[:-1], stop))


def rows(x: Any, start: int, stop: int) -> Any:
    """x[..., start:stop, :]."""
    shape = shape_of(x)
    nd = len(shape)
    return slice_(x, (0,) * (nd - 2) + (start, 0), (*shape[:-2], stop, shape[-1]))


def hstack(parts: Sequence[Any]) -> Any:
    return concatenate(list(parts), len(shape_of(parts[0])) - 1)


def vstack(parts: Sequence[Any]) -> Any:
    return concatenate(list(parts), len(shape_of(parts[0])) - 2)


def permutation_matrix(perm: Any, dtype: Any) -> Any:
    """P [..., m, m] with P[..., i, j] = (perm[..., i] == j), so P @ x = x[..., perm, :]."""
    shape = shape_of(perm)
    out = (*shape, shape[-1])
    nd = len(out)
    idx = broadcast_in_dim(perm, out, tuple(range(nd - 1)))
    j = broadcast_in_dim(iota(dtype_of(perm), (shape[-1],), 0), out, (nd - 1,))
    return as_dtype(ew.eq(idx, j), dtype)

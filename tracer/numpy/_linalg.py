"""Linear algebra front end: `dot`, `matmul`, `vdot`, `inner`, `outer`, `tensordot`,
`trace`, `diagonal`, `diag`, and the einsum subscript parsing (`_einsum` has einsum).

Everything lowers to `ops.dot_general` plus transpose/reshape/slice/pad, with
NumPy 2 (NEP 50) promotion first. `dot_general` output order is batch dims, lhs
free dims, rhs free dims; the wrappers arrange operands so that order is NumPy's.
Bool products go through int64 and back (`!= 0`), which is NumPy's
logical-or-of-ands.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import ParamError, ShapeError
from ..ops.linalg import _precision as check_precision
from ._promotion import asarray_like, cast, desc, error, normalize_axis, promote
from ._reductions import sum as _reduce_sum
from ._ufuncs import conjugate, multiply

__all__ = ["dot", "matmul", "vdot", "inner", "outer", "tensordot", "trace", "diagonal",
           "diag"]


def as_operand(x: Any, fname: str) -> Any:
    """An ops operand with `.shape` (a Python scalar becomes a 0-d array)."""
    x = asarray_like(x, fname)
    return np.asarray(x) if dtypes.is_python_scalar(x) else x


def _pair(a: Any, b: Any, fname: str) -> tuple[Any, Any]:
    a, b = promote(a, b, fname=fname)
    return as_operand(a, fname), as_operand(b, fname)


def reshape(x: Any, shape: Sequence[int]) -> Any:
    shape = tuple(shape)
    return x if tuple(x.shape) == shape else ops.reshape(x, shape)


def transpose(x: Any, perm: Sequence[int]) -> Any:
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else ops.transpose(x, perm)


def broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    dims = tuple(range(len(shape) - x.ndim, len(shape)))
    return ops.broadcast_in_dim(x, shape, dims)


def reduce_sum(x: Any, axes: Sequence[int]) -> Any:
    """Sum over `axes` keeping x's dtype (np.sum would widen small ints)."""
    if not axes:
        return x
    return _reduce_sum(x, axis=tuple(axes), dtype=x.dtype)


def dot_general(a: Any, b: Any, contracting: tuple[Sequence[int], Sequence[int]],
                batch: tuple[Sequence[int], Sequence[int]] = ((), ())) -> Any:
    """`ops.dot_general` on same-dtype operands; bool via int64 (NumPy: or of ands);
    float16 accumulates in float32 and rounds once, as NumPy's half dot / einsum."""
    dims = ((tuple(contracting[0]), tuple(contracting[1])), (tuple(batch[0]), tuple(batch[1])))
    if a.dtype == dtypes.float16:
        a, b = (ops.convert_element_type(t, dtypes.float32) for t in (a, b))
        return ops.convert_element_type(ops.dot_general(a, b, dims), dtypes.float16)
    if not dtypes.is_bool(a.dtype):
        return ops.dot_general(a, b, dims)
    a, b = (ops.convert_element_type(t, dtypes.int64) for t in (a, b))
    return ops.ne(ops.dot_general(a, b, dims), np.zeros((), dtypes.int64))


def _preferred(a: Any, b: Any, precision: Any, preferred: Any) -> tuple[Any, Any]:
    """JAX's `precision=` (checked, then every level computes at the operands' full
    precision: no reduced-precision passes on any backend) and
    `preferred_element_type=` (the operands are cast to it, so the product
    accumulates in it)."""
    check_precision("dot_general", precision)
    if preferred is None:
        return a, b
    dt = dtypes.canonicalize(preferred)
    return cast(asarray_like(a, "dot"), dt), cast(asarray_like(b, "dot"), dt)


def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None
           ) -> Any:
    """Matrix product with NumPy's broadcasting of batch dims.

    1-D operands are promoted to matrices ((k,) → (1,k) on the left, (k,1) on the
    right) and the added dim is removed; batch dims broadcast.
    Example: `matmul(ones((5,2,3)), ones((3,4))).shape == (5,2,4)`.
    """
    a, b = _preferred(a, b, precision, preferred_element_type)
    a, b = _pair(a, b, "matmul")
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise error(
                ShapeError, "matmul", f"Input operand {i} does not have enough dimensions (has "
                "0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1); operands "
                f"{desc(a)} and {desc(b)}")
    a2 = a if a.ndim > 1 else reshape(a, (1,) + a.shape)
    b2 = b if b.ndim > 1 else reshape(b, b.shape + (1,))
    if a2.shape[-1] != b2.shape[-2]:
        raise error(
            ShapeError, "matmul", "Input operand 1 has a mismatch in its core dimension 0, with "
            f"gufunc signature (n?,k),(k,m?)->(n?,m?) (size {b2.shape[-2]} is different from "
            f"{a2.shape[-1]}); operands {desc(a)} and {desc(b)}")
    batch = _broadcast_batch(a2.shape[:-2], b2.shape[:-2], a, b)
    out = _batched_matmul(a2, b2, batch)
    shape = batch + a.shape[-2:-1] * (a.ndim > 1) + b.shape[-1:] * (b.ndim > 1)
    return reshape(out, shape)


def _broadcast_batch(sa: tuple[int, ...], sb: tuple[int, ...], a: Any, b: Any) -> tuple:
    try:
        return tuple(np.broadcast_shapes(sa, sb))
    except ValueError:
        raise error(
            ShapeError, "matmul", f"batch dimensions {sa} and {sb} cannot be broadcast together; "
            f"operands {desc(a)} and {desc(b)}") from None


def _batched_matmul(a: Any, b: Any, batch: tuple[int, ...]) -> Any:
    """(…,n,k) @ (…,k,m) → batch + (n,m); avoids broadcasting a rank-2 operand."""
    if b.ndim == 2:
        return dot_general(a, b, ((a.ndim - 1,), (0,)))
    if a.ndim == 2:
        out = dot_general(a, b, ((1,), (b.ndim - 2,)))  # (n, batch…, m)
        nb = len(batch)
        return transpose(out, tuple(range(1, nb + 1)) + (0, nb + 1))
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    nb = len(batch)
    return dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None
        ) -> Any:
    """NumPy `dot`: sum over the last axis of `a` and the second-to-last of `b`.

    0-d operands multiply (a Python scalar stays weak: `dot(2, x_f32)` is f32);
    1-D · 1-D is the inner product; N-D · 1-D contracts the last axes.
    Example: `dot(ones((2,3)), ones((4,3,5))).shape == (2,4,5)`.
    """
    a, b = _preferred(a, b, precision, preferred_element_type)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return multiply(a, b)
    a, b = _pair(a, b, "dot")
    ca, cb = a.ndim - 1, max(b.ndim - 2, 0)
    if a.shape[ca] != b.shape[cb]:
        raise error(
            ShapeError, "dot", f"shapes {a.shape} and {b.shape} not aligned: {a.shape[ca]} (dim "
            f"{ca}) != {b.shape[cb]} (dim {cb}); operands {desc(a)} and {desc(b)}")
    return dot_general(a, b, ((ca,), (cb,)))


def vdot(a: Any, b: Any) -> Any:
    """Dot product of the flattened operands, conjugating the first.

    Example: `vdot([1+2j, 3], [1, 1]) == 4-2j`.
    """
    a, b = _pair(a, b, "vdot")
    if a.size != b.size:
        raise error(
            ShapeError, "vdot", f"operands {desc(a)} and {desc(b)} have different sizes "
            f"({a.size} and {b.size})")
    a = conjugate(a) if dtypes.is_complex(a.dtype) else a
    return dot_general(reshape(a, (a.size,)), reshape(b, (b.size,)), ((0,), (0,)))


def inner(a: Any, b: Any) -> Any:
    """Inner product over the last axes: `out[i…, j…] = sum(a[i…, :] * b[j…, :])`.

    0-d operands multiply. Example: `inner(ones((2,3)), ones((4,3))).shape == (2,4)`.
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return multiply(a, b)
    a, b = _pair(a, b, "inner")
    if a.shape[-1] != b.shape[-1]:
        raise error(
            ShapeError, "inner", f"shapes {a.shape} and {b.shape} mismatch in the last dimension "
            f"({a.shape[-1]} != {b.shape[-1]}); operands {desc(a)} and {desc(b)}")
    return dot_general(a, b, ((a.ndim - 1,), (b.ndim - 1,)))


def outer(a: Any, b: Any) -> Any:
    """Outer product of the flattened operands: `out[i, j] = a.ravel()[i] * b.ravel()[j]`.

    Example: `outer([1, 2], [3, 4, 5]).shape == (2, 3)`.
    """
    a, b = as_operand(a, "outer"), as_operand(b, "outer")
    return multiply(reshape(a, (a.size, 1)), reshape(b, (1, b.size)))


def tensordot(a: Any, b: Any, axes: Any = 2, *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """Sum of products over `axes`: an int N (last N of `a` with first N of `b`) or a
    pair of axis sequences. Result dims: free dims of `a`, then free dims of `b`.

    Example: `tensordot(ones((2,3,4)), ones((3,4,5))).shape == (2,5)`.
    """
    a, b = _preferred(a, b, precision, preferred_element_type)
    a, b = _pair(a, b, "tensordot")
    axes_a, axes_b = _tensordot_axes(a, b, axes)
    for i, j in zip(axes_a, axes_b, strict=True):
        if a.shape[i] != b.shape[j]:
            raise error(
                ShapeError, "tensordot", f"shape-mismatch for sum: axis {i} of {desc(a)} has "
                f"size {a.shape[i]} but axis {j} of {desc(b)} has size {b.shape[j]}")
    return dot_general(a, b, (axes_a, axes_b))


def _tensordot_axes(a: Any, b: Any, axes: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if not 0 <= n <= min(a.ndim, b.ndim):
            raise error(
                ParamError, "tensordot", f"axes={n} must be in [0, {min(a.ndim, b.ndim)}] for "
                f"operands {desc(a)} and {desc(b)}")
        return tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    try:
        first, second = axes
    except (TypeError, ValueError):
        raise error(
            ParamError, "tensordot", "axes must be an int or a pair of axis sequences, got "
            f"{axes!r}") from None
    first = tuple(first) if isinstance(first, (list, tuple)) else (first,)
    second = tuple(second) if isinstance(second, (list, tuple)) else (second,)
    if len(first) != len(second):
        raise error(
            ParamError, "tensordot", f"axes {axes!r} name {len(first)} axes of the first operand "
            f"but {len(second)} of the second")
    axes_a = tuple(normalize_axis(i, a.ndim, "tensordot") for i in first)
    axes_b = tuple(normalize_axis(i, b.ndim, "tensordot") for i in second)
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise error(ParamError, "tensordot", f"repeated axis in axes={axes!r}")
    return axes_a, axes_b


# einsum subscripts (used by `_einsum`).
_ELLIPSIS = "."  # stands for "..." while parsing; ellipsis dims become labels ".0", ".1", …


def _parse_einsum(subscripts: str, ndims: list[int]) -> tuple[list[list[str]], list[str]]:
    spec = subscripts.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    if "->" in rhs:
        raise error(ParamError, "einsum", f"subscripts {subscripts!r} have more than one '->'")
    terms = [_term_chars(t, subscripts) for t in lhs.split(",")]
    if len(terms) != len(ndims):
        raise error(
            ParamError, "einsum", f"subscripts {subscripts!r} name {len(terms)} operands but "
            f"{len(ndims)} were given")
    n_ell = max([_ellipsis_ndim(t, n, i, subscripts) for i, (t, n) in
                 enumerate(zip(terms, ndims, strict=True))], default=0)
    inputs = [_expand_term(t, n, n_ell) for t, n in zip(terms, ndims, strict=True)]
    if arrow:
        return inputs, _explicit_output(_term_chars(rhs, subscripts), inputs, n_ell, subscripts)
    letters = [c for t in terms for c in t if c != _ELLIPSIS]
    once = sorted(c for c in set(letters) if letters.count(c) == 1)
    return inputs, [f".{j}" for j in range(n_ell)] + once


def _term_chars(term: str, subscripts: str) -> list[str]:
    """Letters of one term, with "..." as a single `_ELLIPSIS` entry."""
    chars = list(term.replace("...", _ELLIPSIS))
    if chars.count(_ELLIPSIS) > 1 or not all(c.isalpha() or c == _ELLIPSIS for c in chars):
        raise error(
            ParamError, "einsum", f"invalid term {term!r} in subscripts {subscripts!r} (use "
            "letters and at most one '...')")
    return chars


def _ellipsis_ndim(term: list[str], ndim: int, i: int, subscripts: str) -> int:
    n = ndim - (len(term) - term.count(_ELLIPSIS))
    if n < 0 or (n > 0 and _ELLIPSIS not in term):
        raise error(
            ShapeError, "einsum", f"operand {i} has {ndim} dimensions but its subscripts "
            f"{''.join(term).replace(_ELLIPSIS, '...')!r} in {subscripts!r} name {ndim - n}")
    return n


def _expand_term(term: list[str], ndim: int, n_ell: int) -> list[str]:
    if _ELLIPSIS not in term:
        return term
    k = ndim - (len(term) - 1)
    pos = term.index(_ELLIPSIS)
    return term[:pos] + [f".{j}" for j in range(n_ell - k, n_ell)] + term[pos + 1:]


def _explicit_output(chars: list[str], inputs: list[list[str]], n_ell: int,
                     subscripts: str) -> list[str]:
    used = {c for labels in inputs for c in labels}
    out = _expand_term(chars, len(chars) - 1 + n_ell, n_ell) if _ELLIPSIS in chars else chars
    if _ELLIPSIS not in chars and n_ell:
        raise error(
            ShapeError, "einsum", f"subscripts {subscripts!r} have '...' covering {n_ell} "
            "dimension(s) in the inputs but no '...' in the output")
    for c in out:
        if out.count(c) > 1:
            raise error(ParamError, "einsum", f"output label {c!r} repeated in {subscripts!r}")
        if c not in used:
            raise error(
                ParamError, "einsum", f"output label {c!r} in {subscripts!r} appears in no input")
    return out


def _label_sizes(subscripts: str, inputs: list[list[str]], arrays: list[Any]) -> dict:
    sizes: dict[str, int] = {}
    for i, (labels, x) in enumerate(zip(inputs, arrays, strict=True)):
        for lab, n in zip(labels, x.shape, strict=True):
            if labels.count(lab) > 1 and n != x.shape[labels.index(lab)]:
                raise error(
                    ShapeError, "einsum", f"operand {i} ({desc(x)}) repeats label {lab!r} on "
                    "dimensions of different sizes")
            seen = sizes.get(lab, 1)
            if n != 1 and seen != 1 and n != seen:
                raise error(
                    ShapeError, "einsum", f"label {lab.replace('.', '...')!r} in {subscripts!r} "
                    f"has size {n} in operand {i} ({desc(x)}) but size {seen} elsewhere")
            sizes[lab] = n if seen == 1 else seen  # (size 0 wins over a broadcast 1)
    return sizes


def _prepare_term(x: Any, labels: list[str], sizes: dict) -> tuple[Any, list[str]]:
    """Drop size-1 dims that broadcast against a bigger size, then take diagonals."""
    keep = [i for i, lab in enumerate(labels) if x.shape[i] == sizes[lab]]
    x = reshape(x, [x.shape[i] for i in keep])
    labels = [labels[i] for i in keep]
    for lab in list(dict.fromkeys(labels)):
        while labels.count(lab) > 1:
            i = labels.index(lab)
            j = labels.index(lab, i + 1)
            x = _diagonal(x, 0, i, j)
            labels = [c for k, c in enumerate(labels) if k not in (i, j)] + [lab]
    return x, labels


def _sum_unneeded(x: Any, labels: list[str], needed: set) -> tuple[Any, list[str]]:
    axes = [i for i, c in enumerate(labels) if c not in needed]
    return reduce_sum(x, axes), [c for c in labels if c in needed]


def _contract_pair(x: Any, lab: list[str], y: Any, ylab: list[str],
                   keep: set) -> tuple[Any, list[str]]:
    shared = [c for c in lab if c in ylab]
    batch = [c for c in shared if c in keep]
    summed = [c for c in shared if c not in keep]
    out = dot_general(x, y, ([lab.index(c) for c in summed], [ylab.index(c) for c in summed]),
                      ([lab.index(c) for c in batch], [ylab.index(c) for c in batch]))
    return out, batch + [c for c in lab if c not in ylab] + [c for c in ylab if c not in lab]


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Any:
    """Sum along a diagonal (see `diagonal`); the dtype follows `sum` (small ints widen).

    Example: `trace(eye(3)) == 3.0`; `trace(ones((2,3)), offset=1) == 2.0`.
    """
    return _reduce_sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The `offset` diagonal of the (axis1, axis2) planes, as a new last axis.

    `out[..., i] = a[..., i, i + offset]` (rows shifted down for offset < 0).
    Example: `diagonal(arange(9).reshape(3,3), 1)` → `[1, 5]`.
    """
    a = as_operand(a, "diagonal")
    if a.ndim < 2:
        raise error(
            ShapeError, "diagonal", f"the array must have at least 2 dimensions, got {desc(a)}")
    ax1 = normalize_axis(axis1, a.ndim, "diagonal")
    ax2 = normalize_axis(axis2, a.ndim, "diagonal")
    if ax1 == ax2:
        raise error(
            ParamError, "diagonal", f"axis1 and axis2 cannot be the same (both {ax1}) for "
            f"{desc(a)}")
    return _diagonal(a, operator.index(offset), ax1, ax2)


def _diagonal(x: Any, k: int, ax1: int, ax2: int) -> Any:
    """Move (ax1, ax2) last, flatten that plane, take every (m+1)-th element."""
    rest = [d for d in range(x.ndim) if d not in (ax1, ax2)]
    x = transpose(x, rest + [ax1, ax2])
    lead, (n, m) = tuple(x.shape[:-2]), x.shape[-2:]
    length = max(0, min(n, m - k) if k >= 0 else min(n + k, m))
    flat = reshape(x, lead + (n * m,))
    start = k if k >= 0 else -k * m
    if length == 0:
        start = 0
    limit = start + (length - 1) * (m + 1) + 1 if length else 0
    zeros = (0,) * len(lead)
    return ops.slice(flat, zeros + (start,), lead + (limit,), (1,) * len(lead) + (m + 1,))


def diag(v: Any, k: int = 0) -> Any:
    """1-D input: a square matrix with `v` on diagonal `k`; 2-D input: its `k`-th diagonal.

    Example: `diag([1, 2], 1)` → `[[0,1,0],[0,0,2],[0,0,0]]`.
    """
    v = as_operand(v, "diag")
    k = operator.index(k)
    if v.ndim == 2:
        return _diagonal(v, k, 0, 1)
    if v.ndim != 1:
        raise error(ShapeError, "diag", f"input must be 1-d or 2-d, got {desc(v)}")
    n = v.shape[0]
    big = n + abs(k)
    zero = np.zeros((), v.dtype)
    if n == 0:
        return ops.broadcast_in_dim(zero, (big, big), ())
    # Interior padding of `big` puts consecutive entries big+1 apart in the flat matrix.
    low = k if k >= 0 else -k * big
    high = big * big - low - (n - 1) * (big + 1) - 1
    return reshape(ops.pad(v, zero, ((low, high, big),)), (big, big))

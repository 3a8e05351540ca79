"""Convolution (XLA's Conv and ConvWithGeneralPadding).

One op, `conv_general_dilated` (HLO `convolution`), bound by the three wrappers
`conv_general_dilated`, `conv_with_general_padding` and `conv`. Its params are
canonical and hashable: `window_strides`, `padding` as explicit `(low, high)`
pairs (SAME / VALID resolved by the wrapper), `lhs_dilation`, `rhs_dilation`,
`dimension_numbers` as a `ConvDimensionNumbers` of three int tuples
`(batch, feature, spatial...)` / `(out feature, in feature, spatial...)` /
`(batch, feature, spatial...)`, and the two group counts.

The reference works in the canonical layout (N, C, spatial...) / (O, I, window...):
it dilates and pads the lhs (negative padding crops), then adds one batched matmul
per kernel tap over a strided view. Float16 is computed in float32 and rounded once;
integers accumulate in their own dtype and wrap, as XLA's do.
"""

from __future__ import annotations

import inspect
import itertools
import math
from typing import Any, NamedTuple, Sequence

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError
from .common import operand_aval, static_int, static_ints, wrapper_error
from .registry import define_op, harmonize, same_dtypes

__all__ = ["conv_general_dilated", "conv_with_general_padding", "conv", "ConvDimensionNumbers",
           "conv_dimension_numbers", "padtype_to_pads"]

Dims = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


class ConvDimensionNumbers(NamedTuple):
    """Where batch, feature and spatial dims sit in lhs, rhs and the output.

    lhs_spec = (batch dim, feature dim, spatial dims...); rhs_spec = (output feature
    dim, input feature dim, spatial dims...); out_spec = (batch dim, feature dim,
    spatial dims...). Spatial dims pair up by position across the three specs.
    """

    lhs_spec: Dims
    rhs_spec: Dims
    out_spec: Dims


# ------------------------------------------------------------------ parameter parsing

def _perm_from_strings(specs: Sequence[str]) -> ConvDimensionNumbers:
    """JAX's rule: 'N'/'C', 'O'/'I', 'N'/'C' name the non-spatial dims; the other
    letters are spatial dims, ordered as they appear in the rhs spec."""
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for spec, (a, b) in zip(specs, pairs, strict=True):
        if spec.count(a) != 1 or spec.count(b) != 1 or len(set(spec)) != len(spec):
            raise ParamError(f"dimension_numbers {tuple(specs)}: {spec!r} must contain "
                             f"{a!r} and {b!r} exactly once and no repeated letter")
    spatial = [set(s) - set(p) for s, p in zip(specs, pairs, strict=True)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise ParamError(f"dimension_numbers {tuple(specs)} must name the same spatial "
                         f"letters in all three specs")
    rhs = specs[1]

    def perm(spec: str, pair: tuple[str, str]) -> Dims:
        sp = sorted((i for i, c in enumerate(spec) if c not in pair),
                    key=lambda i: rhs.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1]), *sp)

    return ConvDimensionNumbers(*(perm(s, p) for s, p in zip(specs, pairs, strict=True)))


def conv_dimension_numbers(rank: int, dimension_numbers: Any) -> ConvDimensionNumbers:
    """The canonical form of None, three layout strings ("NCHW", "OIHW", "NCHW") or
    three int sequences (a ConvDimensionNumbers, JAX's included)."""
    op = "conv_general_dilated"
    if dimension_numbers is None:
        iota = tuple(range(rank))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3:
        raise wrapper_error(ParamError, op, f"dimension_numbers must be None, three layout "
                            f"strings or three dimension tuples, got {dimension_numbers!r}")
    if all(isinstance(s, str) for s in dimension_numbers):
        if any(len(s) != rank for s in dimension_numbers):
            raise wrapper_error(ParamError, op, f"dimension_numbers {tuple(dimension_numbers)}"
                                f" must have one letter per operand dimension ({rank})")
        try:
            return _perm_from_strings(dimension_numbers)
        except ParamError as e:
            raise wrapper_error(ParamError, op, str(e)) from None
    names = ("lhs_spec", "rhs_spec", "out_spec")
    return ConvDimensionNumbers(*(static_ints(op, n, s)
                                  for n, s in zip(names, dimension_numbers, strict=True)))


def dilate_dim(size: int, dilation: int) -> int:
    """Size of a dimension with `dilation - 1` holes between its entries."""
    return 0 if size == 0 else (size - 1) * dilation + 1


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> Pads:
    """(low, high) pairs for "VALID" (none), "SAME" (output = ceil(in / stride), the odd
    pad at the high end) or "SAME_LOWER" (the odd pad at the low end)."""
    kind = padding.upper()
    if kind == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ParamError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or (low, high) "
                         f"pairs, got {padding!r}")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides, strict=True):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return tuple(pads)


def _padding(op: str, padding: Any, lhs: ShapedArray, rhs: ShapedArray,
             dn: ConvDimensionNumbers, strides: Dims, lhs_dil: Dims, rhs_dil: Dims) -> Pads:
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dil):
            raise wrapper_error(ParamError, op, f"string padding {padding!r} is not defined "
                                f"with lhs_dilation {list(lhs_dil)}; give (low, high) pairs")
        n = lhs.ndim - 2
        rank = range(lhs.ndim)
        if not (lhs.ndim == rhs.ndim and sorted(dn.lhs_spec) == sorted(dn.rhs_spec) == list(rank)
                and len(strides) == len(rhs_dil) == n):
            return ()  # the shape rule names the mismatch
        in_shape = [lhs.shape[d] for d in dn.lhs_spec[2:]]
        window = [dilate_dim(rhs.shape[d], r) for d, r in zip(dn.rhs_spec[2:], rhs_dil)]
        try:
            return padtype_to_pads(in_shape, window, [max(s, 1) for s in strides], padding)
        except ParamError as e:
            raise wrapper_error(ParamError, op, str(e)) from None
    try:
        return tuple((static_int(op, "padding", lo), static_int(op, "padding", hi))
                     for lo, hi in padding)
    except (TypeError, ValueError):
        raise wrapper_error(ParamError, op, f"padding must be 'SAME', 'VALID' or a sequence "
                            f"of (low, high) pairs, got {padding!r}") from None


# ------------------------------------------------------------------ shape rule

def _check_specs(lhs: ShapedArray, rhs: ShapedArray, dn: ConvDimensionNumbers) -> None:
    if lhs.ndim != rhs.ndim:
        raise ShapeError(f"lhs {lhs} and rhs {rhs} must have the same rank")
    if lhs.ndim < 2:
        raise ShapeError(f"operands need a batch and a feature dimension (rank >= 2), "
                         f"got {lhs} and {rhs}")
    for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dn, strict=True):
        if sorted(spec) != list(range(lhs.ndim)):
            raise ParamError(f"dimension_numbers.{name} {list(spec)} must be a permutation "
                             f"of 0..{lhs.ndim - 1}")


def _check_window_params(n: int, strides: Dims, padding: Pads, lhs_dil: Dims,
                         rhs_dil: Dims) -> None:
    for name, value in (("window_strides", strides), ("padding", padding),
                        ("lhs_dilation", lhs_dil), ("rhs_dilation", rhs_dil)):
        if len(value) != n:
            raise ParamError(f"{name} {list(value)} must have one entry per spatial "
                             f"dimension ({n})")
    for name, value in (("window_strides", strides), ("lhs_dilation", lhs_dil),
                        ("rhs_dilation", rhs_dil)):
        if any(v < 1 for v in value):
            raise ParamError(f"{name} {list(value)} must be positive")


def _check_groups(lhs: ShapedArray, rhs: ShapedArray, dn: ConvDimensionNumbers,
                  fgc: int, bgc: int) -> None:
    if fgc < 1 or bgc < 1:
        raise ParamError(f"feature_group_count ({fgc}) and batch_group_count ({bgc}) "
                         f"must be positive")
    if fgc > 1 and bgc > 1:
        raise ParamError(f"at most one of feature_group_count ({fgc}) and "
                         f"batch_group_count ({bgc}) may be > 1")
    batch, features = lhs.shape[dn.lhs_spec[0]], lhs.shape[dn.lhs_spec[1]]
    out_features, in_features = rhs.shape[dn.rhs_spec[0]], rhs.shape[dn.rhs_spec[1]]
    if features % fgc or features // fgc != in_features:
        raise ShapeError(f"lhs features ({features}) must be feature_group_count ({fgc}) "
                         f"times the rhs input features ({in_features}); lhs {lhs}, rhs {rhs}")
    if out_features % fgc or out_features % bgc:
        raise ShapeError(f"rhs output features ({out_features}) must be a multiple of "
                         f"feature_group_count ({fgc}) and batch_group_count ({bgc})")
    if batch % bgc:
        raise ShapeError(f"lhs batch ({batch}) must be a multiple of batch_group_count "
                         f"({bgc})")


def _out_spatial(in_shape: Dims, window: Dims, strides: Dims, padding: Pads, lhs_dil: Dims,
                 rhs_dil: Dims) -> Dims:
    out = []
    for d, (n, k, s, (lo, hi), ld, rd) in enumerate(zip(in_shape, window, strides, padding,
                                                         lhs_dil, rhs_dil, strict=True)):
        padded = dilate_dim(n, ld) + lo + hi
        if padded < 0:
            raise ShapeError(f"negative padding {(lo, hi)} removes more than the "
                             f"{dilate_dim(n, ld)} elements of spatial dimension {d}")
        if dilate_dim(k, rd) > padded:
            raise ShapeError(f"window of spatial dimension {d} (size {k}, dilated "
                             f"{dilate_dim(k, rd)}) is larger than the padded input ({padded})")
        out.append((padded - dilate_dim(k, rd)) // s + 1)
    return tuple(out)


def _conv_shape(lhs: ShapedArray, rhs: ShapedArray, *, window_strides: Dims, padding: Pads,
                lhs_dilation: Dims, rhs_dilation: Dims,
                dimension_numbers: ConvDimensionNumbers, feature_group_count: int,
                batch_group_count: int) -> ShapedArray:
    dtype = same_dtypes(lhs, rhs)
    if dtype.kind == "b":
        raise DTypeError(f"convolution needs numeric operands, got {lhs} and {rhs}")
    dn = dimension_numbers
    _check_specs(lhs, rhs, dn)
    _check_window_params(lhs.ndim - 2, window_strides, padding, lhs_dilation, rhs_dilation)
    _check_groups(lhs, rhs, dn, feature_group_count, batch_group_count)
    spatial = _out_spatial(tuple(lhs.shape[d] for d in dn.lhs_spec[2:]),
                           tuple(rhs.shape[d] for d in dn.rhs_spec[2:]), window_strides,
                           padding, lhs_dilation, rhs_dilation)
    canonical = (lhs.shape[dn.lhs_spec[0]] // batch_group_count,
                 rhs.shape[dn.rhs_spec[0]], *spatial)
    shape = [0] * lhs.ndim
    for size, d in zip(canonical, dn.out_spec, strict=True):
        shape[d] = size
    return ShapedArray(shape, dtype)


# ------------------------------------------------------------------ reference

def _dilate_and_pad(x: np.ndarray, padding: Pads, lhs_dil: Dims) -> np.ndarray:
    """x (N, C, spatial...) with holes inserted, then padded with zeros (or cropped)."""
    spatial = [dilate_dim(n, d) for n, d in zip(x.shape[2:], lhs_dil, strict=True)]
    dilated = np.zeros(x.shape[:2] + tuple(spatial), x.dtype)
    dilated[(Ellipsis, *(slice(None, None, d) for d in lhs_dil))] = x
    widths = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    padded = np.pad(dilated, widths)
    crop = [slice(-min(lo, 0), padded.shape[i + 2] + min(hi, 0))
            for i, (lo, hi) in enumerate(padding)]
    return padded[(slice(None), slice(None), *crop)]


def _conv_impl(lhs: np.ndarray, rhs: np.ndarray, *, window_strides: Dims, padding: Pads,
               lhs_dilation: Dims, rhs_dilation: Dims, dimension_numbers: ConvDimensionNumbers,
               feature_group_count: int, batch_group_count: int) -> np.ndarray:
    dn, out_dtype = dimension_numbers, lhs.dtype
    work = np.float32 if out_dtype in (np.float16, dtypes.bfloat16) else out_dtype
    x = lhs.transpose(dn.lhs_spec).astype(work)
    w = rhs.transpose(dn.rhs_spec).astype(work)
    n, c, o, window = x.shape[0], x.shape[1], w.shape[0], w.shape[2:]
    g = max(feature_group_count, batch_group_count)
    xp = _dilate_and_pad(x, padding, lhs_dilation)
    # As (group, batch per group, channels per group, spatial...) for both group kinds.
    if batch_group_count > 1:
        xg = xp.reshape((g, n // g, c) + xp.shape[2:])
    else:
        xg = xp.reshape((n, g, c // g) + xp.shape[2:]).swapaxes(0, 1)
    wg = w.reshape((g, o // g) + w.shape[1:])
    out_sp = [(p - dilate_dim(k, r)) // s + 1 for p, k, r, s in
              zip(xp.shape[2:], window, rhs_dilation, window_strides, strict=True)]
    acc = np.zeros(xg.shape[:2] + (o // g, math.prod(out_sp)), work)
    with np.errstate(all="ignore"):
        for tap in itertools.product(*(range(k) for k in window)):
            view = xg[(Ellipsis, *(slice(t * r, t * r + (m - 1) * s + 1, s) for t, r, s, m in
                                   zip(tap, rhs_dilation, window_strides, out_sp)))]
            cols = view.reshape(view.shape[:3] + (-1,))        # (g, nb, cg, positions)
            acc += np.matmul(wg[(Ellipsis, *tap)][:, None], cols)  # (g, 1, og, cg) @ ...
    out = acc.swapaxes(0, 1).reshape((xg.shape[1], o, *out_sp))
    return np.asarray(out.transpose(np.argsort(dn.out_spec)), dtype=out_dtype)


# ------------------------------------------------------------------ wrappers

def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1) -> Any:
    """N-d convolution with padding, strides, lhs/rhs dilation and feature/batch groups.

    Seed rule (Conv, ConvWithGeneralPadding): out[b, oz, spatial...] is the sum over the
    window and the input features of its group of lhs x rhs, the lhs zero-padded by
    (low, high) per spatial dim (negative padding removes elements), dilated by
    lhs_dilation (holes between entries: transposed convolution), the window dilated by
    rhs_dilation (atrous), placed every window_strides. Output spatial size
    (padded_dilated_in - dilated_window) // stride + 1. feature_group_count splits
    features (depthwise: = lhs features); batch_group_count splits the lhs batch and the
    output features. padding: "SAME", "VALID" or [(low, high), ...]; dimension_numbers
    like jax.lax (default ("NCHW", "OIHW", "NCHW")).

    conv_general_dilated(ones((1, 1, 3)), ones((1, 1, 2)), (1,), "VALID") -> [[[2., 2.]]]
    """
    op = "conv_general_dilated"
    lhs, rhs = harmonize(lhs, rhs)
    a, b = operand_aval(lhs), operand_aval(rhs)
    n = a.ndim - 2
    strides = static_ints(op, "window_strides", window_strides)
    lhs_dil = (1,) * n if lhs_dilation is None else static_ints(op, "lhs_dilation",
                                                                 lhs_dilation)
    rhs_dil = (1,) * n if rhs_dilation is None else static_ints(op, "rhs_dilation",
                                                                 rhs_dilation)
    dn = conv_dimension_numbers(a.ndim, dimension_numbers)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides,
        padding=_padding(op, padding, a, b, dn, strides, lhs_dil, rhs_dil),
        lhs_dilation=lhs_dil, rhs_dilation=rhs_dil, dimension_numbers=dn,
        feature_group_count=static_int(op, "feature_group_count", feature_group_count),
        batch_group_count=static_int(op, "batch_group_count", batch_group_count))


conv_general_dilated_p = define_op(
    "conv_general_dilated", shape=_conv_shape, impl=_conv_impl, hlo_name="convolution",
    family="conv", linear=True, doc=inspect.cleandoc(conv_general_dilated.__doc__ or ""))


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int],
                              padding: Any, lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None,
                              feature_group_count: int = 1, batch_group_count: int = 1) -> Any:
    """Seed ConvWithGeneralPadding: the default layout (batch, feature, spatial...) /
    (output feature, input feature, window...), explicit (low, high) padding (or
    "SAME" / "VALID") and the two dilations; `conv_general_dilated` underneath."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                feature_group_count=feature_group_count,
                                batch_group_count=batch_group_count)


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any) -> Any:
    """Seed Conv: the default layout with "SAME" padding (output spatial size
    ceil(input / stride)) or "VALID" (no padding); `conv_general_dilated` underneath."""
    return conv_general_dilated(lhs, rhs, window_strides, padding)

# (last: the rules module imports this one) The op records arrive with their JVP /
# transpose / batching rules, however this module was first imported.
from . import conv_rules  # noqa: E402,F401

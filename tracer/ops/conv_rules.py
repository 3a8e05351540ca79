"""JVP, transpose and batching rules of `conv_general_dilated` (the op behind
`conv_with_general_padding` and `conv`).

Convolution is bilinear: its JVP is conv(t_lhs, rhs) + conv(lhs, t_rhs). The
transposes are JAX's `_conv_general_dilated_transpose_lhs/rhs`: the lhs cotangent is
a convolution of the output cotangent with the reversed kernel (strides become lhs
dilation, padding from `_lhs_vjp_padding`), the rhs cotangent a convolution of the
lhs with the output cotangent as the window (feature and batch groups trade places).
The batching rule folds the mapped axis into the batch or feature dimension, as
JAX's `_conv_general_dilated_batch_rule`, and splits it out of the result.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..core import ShapedArray
from .ad import UndefinedPrimal, aval_of_value, defjvp, zeros_like_aval
from .conv import ConvDimensionNumbers, conv_general_dilated_p, dilate_dim
from .shape import reshape_p, rev_p, transpose_p

Dims = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


# --------------------------------------------------------------------------- reshapes
def reshape_axis_into(src: int, dst: int, x: Any) -> Any:
    """Merge axis `src` into axis `dst` (numbered with `src` removed), `src` major."""
    shape = aval_of_value(x).shape
    perm = [d for d in range(len(shape)) if d != src]
    perm.insert(dst, src)
    if perm != list(range(len(shape))):
        x = transpose_p.bind(x, permutation=tuple(perm))
    new = [n for d, n in enumerate(shape) if d != src]
    new[dst] *= shape[src]
    return reshape_p.bind(x, new_sizes=tuple(new))


def reshape_axis_out_of(src: int, size1: int, x: Any) -> Any:
    """Split axis `src` into (size1, rest), `size1` major."""
    shape = list(aval_of_value(x).shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape_p.bind(x, new_sizes=tuple(shape))


def _spec_transpose(spec: Dims) -> Dims:
    return (spec[1], spec[0], *spec[2:])


# --------------------------------------------------------------------------- transposes
def _lhs_vjp_padding(in_shape: Dims, window: Dims, strides: Dims, out_shape: Dims,
                     padding: Pads, lhs_dil: Dims, rhs_dil: Dims) -> Pads:
    pads = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                           lhs_dil, rhs_dil, strict=True):
        before = dilate_dim(k, rd) - lo - 1
        after = dilate_dim(n, ld) + dilate_dim(k, rd) - 1 - dilate_dim(o, s) - before
        pads.append((before, after))
    return tuple(pads)


def _rhs_vjp_padding(in_shape: Dims, window: Dims, strides: Dims, out_shape: Dims,
                     padding: Pads, lhs_dil: Dims, rhs_dil: Dims) -> Pads:
    pads = []
    for n, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                           lhs_dil, rhs_dil, strict=True):
        hi = dilate_dim(o, s) - dilate_dim(n, ld) + dilate_dim(k, rd) - lo - 1
        pads.append((lo, hi))
    return tuple(pads)


def _spatial(shape: Sequence[int], spec: Dims) -> Dims:
    return tuple(shape[d] for d in spec[2:])


def _transpose_lhs(ct: Any, lhs: ShapedArray, rhs: Any, *, window_strides: Dims,
                   padding: Pads, lhs_dilation: Dims, rhs_dilation: Dims,
                   dimension_numbers: ConvDimensionNumbers, feature_group_count: int,
                   batch_group_count: int) -> Any:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape = aval_of_value(rhs).shape
    groups = feature_group_count
    if feature_group_count > 1 or batch_group_count > 1:
        # the group axis moves from the kernel's output features to its input features
        groups = max(feature_group_count, batch_group_count)
        rhs = reshape_axis_out_of(rhs_spec[0], groups, rhs)
        rhs = reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    pads = _lhs_vjp_padding(_spatial(lhs.shape, lhs_spec), _spatial(rhs_shape, rhs_spec),
                            window_strides, _spatial(aval_of_value(ct).shape, out_spec),
                            padding, lhs_dilation, rhs_dilation)
    out = conv_general_dilated_p.bind(
        ct, rev_p.bind(rhs, dimensions=tuple(sorted(rhs_spec[2:]))),
        window_strides=lhs_dilation, padding=pads, lhs_dilation=window_strides,
        rhs_dilation=rhs_dilation,
        dimension_numbers=ConvDimensionNumbers(out_spec, _spec_transpose(rhs_spec), lhs_spec),
        feature_group_count=groups, batch_group_count=1)
    if batch_group_count > 1:
        out = reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _transpose_rhs(ct: Any, lhs: Any, rhs: ShapedArray, *, window_strides: Dims,
                   padding: Pads, lhs_dilation: Dims, rhs_dilation: Dims,
                   dimension_numbers: ConvDimensionNumbers, feature_group_count: int,
                   batch_group_count: int) -> Any:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pads = _rhs_vjp_padding(_spatial(aval_of_value(lhs).shape, lhs_spec),
                            _spatial(rhs.shape, rhs_spec), window_strides,
                            _spatial(aval_of_value(ct).shape, out_spec), padding,
                            lhs_dilation, rhs_dilation)
    dn = ConvDimensionNumbers(_spec_transpose(lhs_spec), _spec_transpose(out_spec),
                              _spec_transpose(rhs_spec))
    return conv_general_dilated_p.bind(
        lhs, ct, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=window_strides, dimension_numbers=dn,
        feature_group_count=batch_group_count, batch_group_count=feature_group_count)


def _conv_t(ct: Any, lhs: Any, rhs: Any, **params: Any) -> list[Any]:
    undefined = 0 if isinstance(lhs, UndefinedPrimal) else 1
    target = (lhs, rhs)[undefined].aval
    if any(aval_of_value(v).size == 0 for v in (ct, lhs, rhs)):
        return [zeros_like_aval(target), None] if undefined == 0 else \
            [None, zeros_like_aval(target)]  # degenerate: nothing flows back
    if undefined == 0:
        return [_transpose_lhs(ct, target, rhs, **params), None]
    return [None, _transpose_rhs(ct, lhs, target, **params)]


# --------------------------------------------------------------------------- batching
def _batch_lhs(lhs: Any, bdim: int, rhs: Any, size: int, dn: ConvDimensionNumbers,
               params: dict[str, Any]) -> tuple[Any, int]:
    lhs_spec, _, out_spec = dn
    bgc = params["batch_group_count"]
    if bgc == 1:
        new = reshape_axis_into(bdim, lhs_spec[0], lhs)
    else:  # keep the batch groups outermost: (groups, vmapped, batch per group)
        new = reshape_axis_out_of(lhs_spec[0] + int(bdim <= lhs_spec[0]), bgc, lhs)
        new = reshape_axis_into(bdim + int(lhs_spec[0] < bdim), lhs_spec[0] + 1, new)
        new = reshape_axis_into(lhs_spec[0], lhs_spec[0], new)
    out = conv_general_dilated_p.bind(new, rhs, **params)
    return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]


def _batch_rhs(lhs: Any, rhs: Any, bdim: int, size: int, dn: ConvDimensionNumbers,
               params: dict[str, Any]) -> tuple[Any, int]:
    _, rhs_spec, out_spec = dn
    groups = max(params["feature_group_count"], params["batch_group_count"])
    if groups == 1:
        new = reshape_axis_into(bdim, rhs_spec[0], rhs)
        out = conv_general_dilated_p.bind(lhs, new, **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    # groups stay outermost in the kernel's output features: (groups, vmapped, per group)
    new = reshape_axis_out_of(rhs_spec[0] + int(bdim <= rhs_spec[0]), groups, rhs)
    new = reshape_axis_into(bdim + int(rhs_spec[0] < bdim), rhs_spec[0] + 1, new)
    new = reshape_axis_into(rhs_spec[0], rhs_spec[0], new)
    out = conv_general_dilated_p.bind(lhs, new, **params)
    out = reshape_axis_out_of(out_spec[1], groups, out)
    out = reshape_axis_out_of(out_spec[1] + 1, size, out)
    return reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


def _batch_both(lhs: Any, ld: int, rhs: Any, rd: int, size: int, dn: ConvDimensionNumbers,
                params: dict[str, Any]) -> tuple[Any, int]:
    """Each example its own kernel: the mapped axis becomes more groups."""
    lhs_spec, rhs_spec, out_spec = dn
    params = dict(params)
    if params["batch_group_count"] > 1:
        new_lhs = reshape_axis_into(ld, lhs_spec[0], lhs)
        params["batch_group_count"] *= size
    else:
        new_lhs = reshape_axis_into(ld, lhs_spec[1], lhs)
        params["feature_group_count"] *= size
    new_rhs = reshape_axis_into(rd, rhs_spec[0], rhs)
    out = conv_general_dilated_p.bind(new_lhs, new_rhs, **params)
    return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]


def _conv_b(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple[Any, int]:
    (lhs, rhs), (ld, rd) = args, dims
    dn = params["dimension_numbers"]
    size = aval_of_value(lhs).shape[ld] if ld is not None else aval_of_value(rhs).shape[rd]
    if size == 0:  # no example: the result is empty (the reshapes below need one)
        la, ra = aval_of_value(lhs), aval_of_value(rhs)
        unbatched = [ShapedArray(a.shape[:d] + a.shape[d + 1:], a.dtype) if d is not None
                     else a for a, d in ((la, ld), (ra, rd))]
        out = conv_general_dilated_p.shape_rule(*unbatched, **params)
        return zeros_like_aval(ShapedArray((0, *out.shape), out.dtype)), 0
    if ld is not None and rd is not None:
        return _batch_both(lhs, ld, rhs, rd, size, dn, params)
    if ld is not None:
        return _batch_lhs(lhs, ld, rhs, size, dn, params)
    return _batch_rhs(lhs, rhs, rd, size, dn, params)  # type: ignore[arg-type]


defjvp(conv_general_dilated_p,
       lambda t, lhs, rhs, **params: conv_general_dilated_p.bind(t, rhs, **params),
       lambda t, lhs, rhs, **params: conv_general_dilated_p.bind(lhs, t, **params))
conv_general_dilated_p.transpose = _conv_t
conv_general_dilated_p.batch = _conv_b

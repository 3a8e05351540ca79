"""conv_general_dilated / conv_with_general_padding / conv (tracer/ops/conv.py): shapes,
parameters, errors and the NumPy reference.

The reference is checked against an independent loop oracle written from the seed's
pseudo-code (always) and against `jax.lax.conv_general_dilated` (when jax is
installed), over random layouts, paddings (negative included), strides, dilations,
groups and dtypes. The cpu lowering: tests/test_ops_conv_cpu.py.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tracer import ops
from tracer.errors import DTypeError, ParamError, ShapeError

EXAMPLES = settings(max_examples=25, deadline=None)


# --------------------------------------------------------------------------- configs
def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else (n - 1) * d + 1


@st.composite
def conv_configs(draw: Any, max_spatial: int = 3, spatial: int | None = None,
                 canonical: bool = False) -> dict[str, Any]:
    """A random valid convolution: layouts (canonical ones if asked), shapes and every
    parameter; `spatial` fixes the number of spatial dims."""
    n = draw(st.integers(0, max_spatial)) if spatial is None else spatial
    kind = draw(st.sampled_from(["none", "feature", "batch"]))
    groups = 1 if kind == "none" else draw(st.integers(2, 3))
    fgc, bgc = (groups, 1) if kind == "feature" else (1, groups) if kind == "batch" else (1, 1)
    batch, cg, og = (draw(st.integers(1, 2)) * bgc, draw(st.integers(1, 3)),
                     draw(st.integers(1, 2)))
    ins, wins, strides, ld, rd, pads = [], [], [], [], [], []
    for _ in range(n):
        ins.append(draw(st.integers(1, 5)))
        wins.append(draw(st.integers(1, 3)))
        strides.append(draw(st.integers(1, 3)))
        ld.append(draw(st.integers(1, 2)))
        rd.append(draw(st.integers(1, 2)))
        lo, hi = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
        short = _dilate(wins[-1], rd[-1]) - (_dilate(ins[-1], ld[-1]) + lo + hi)
        pads.append((lo, hi + max(short, 0)))
    specs = [tuple(range(n + 2)) if canonical else tuple(draw(st.permutations(range(n + 2))))
             for _ in range(3)]
    lhs_c = (batch, cg * fgc, *ins)
    rhs_c = (og * groups, cg, *wins)
    return dict(lhs_shape=_place(lhs_c, specs[0]), rhs_shape=_place(rhs_c, specs[1]),
                strides=tuple(strides), padding=tuple(pads), lhs_dilation=tuple(ld),
                rhs_dilation=tuple(rd), dimension_numbers=ops.ConvDimensionNumbers(*specs),
                feature_group_count=fgc, batch_group_count=bgc)


def _place(canonical: tuple[int, ...], spec: tuple[int, ...]) -> tuple[int, ...]:
    shape = [0] * len(spec)
    for size, d in zip(canonical, spec, strict=True):
        shape[d] = size
    return tuple(shape)


def conv_of(cfg: dict[str, Any]) -> Any:
    """`(lhs, rhs) -> conv_general_dilated(lhs, rhs, **cfg)`."""
    return lambda x, w: ops.conv_general_dilated(
        x, w, cfg["strides"], cfg["padding"], cfg["lhs_dilation"], cfg["rhs_dilation"],
        cfg["dimension_numbers"], cfg["feature_group_count"], cfg["batch_group_count"])


def operands(cfg: dict[str, Any], rng: np.random.Generator, dtype: Any = np.float64) -> tuple:
    make = ((lambda s: rng.integers(-9, 10, s)) if np.dtype(dtype).kind in "iu"
            else rng.standard_normal)
    return (np.asarray(make(cfg["lhs_shape"])).astype(dtype),
            np.asarray(make(cfg["rhs_shape"])).astype(dtype))


# --------------------------------------------------------------------------- loop oracle
def loop_oracle(x: np.ndarray, w: np.ndarray, cfg: dict[str, Any]) -> np.ndarray:
    """The seed's pseudo-code, one output element at a time, in the canonical layout."""
    dn = cfg["dimension_numbers"]
    xc, wc = x.transpose(dn.lhs_spec), w.transpose(dn.rhs_spec)
    fgc, bgc = cfg["feature_group_count"], cfg["batch_group_count"]
    nb, o, cg = xc.shape[0] // bgc, wc.shape[0], wc.shape[1]
    shape_sp = [(_dilate(n, ld) + lo + hi - _dilate(k, rd)) // s + 1 for n, k, s, (lo, hi), ld, rd
                in zip(xc.shape[2:], wc.shape[2:], cfg["strides"], cfg["padding"],
                       cfg["lhs_dilation"], cfg["rhs_dilation"])]
    out = np.zeros((nb, o, *shape_sp), np.result_type(x.dtype, np.float64)
                   if x.dtype.kind in "fc" else np.int64)
    for b, oz, *pos in itertools.product(range(nb), range(o), *map(range, shape_sp)):
        group = oz // (o // max(fgc, bgc))
        image = b + group * nb if bgc > 1 else b
        for iz, *tap in itertools.product(range(cg), *map(range, wc.shape[2:])):
            src = _source(pos, tap, xc.shape[2:], cfg)
            if src is not None:
                channel = iz + group * cg if fgc > 1 else iz
                out[(b, oz, *pos)] += xc[(image, channel, *src)] * wc[(oz, iz, *tap)]
    return out.astype(x.dtype).transpose(np.argsort(dn.out_spec))


def _source(pos: list[int], tap: list[int], shape: tuple[int, ...],
            cfg: dict[str, Any]) -> list[int] | None:
    """The lhs index under window tap `tap` at output `pos`, None on padding or a hole."""
    src = []
    for p, t, n, s, (lo, _), ld, rd in zip(pos, tap, shape, cfg["strides"], cfg["padding"],
                                           cfg["lhs_dilation"], cfg["rhs_dilation"]):
        i = p * s + t * rd - lo  # index into the dilated lhs
        if i < 0 or i % ld or i // ld >= n:
            return None
        src.append(i // ld)
    return src


# --------------------------------------------------------------------------- reference
@EXAMPLES
@given(conv_configs(), st.integers(0, 2 ** 31))
def test_reference_matches_loop_oracle(cfg: dict[str, Any], seed: int) -> None:
    x, w = operands(cfg, np.random.default_rng(seed))
    got = conv_of(cfg)(x, w)
    np.testing.assert_allclose(got, loop_oracle(x, w, cfg), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- jax
try:
    from jax import lax as jax_lax
except ImportError:  # jax is only a comparison here; CI may not have it
    jax_lax = None
needs_jax = pytest.mark.skipif(jax_lax is None, reason="jax is not installed")


def _small_ints(cfg: dict[str, Any], rng: np.random.Generator, dtype: Any) -> tuple:
    """Small integers: every sum is exact in float32, so results compare exactly."""
    return tuple(rng.integers(-4, 5, cfg[k]).astype(dtype) for k in ("lhs_shape", "rhs_shape"))


def _jax_conv(cfg: dict[str, Any], x: np.ndarray, w: np.ndarray) -> np.ndarray:
    dn = cfg["dimension_numbers"]
    return np.asarray(jax_lax.conv_general_dilated(
        x, w, cfg["strides"], cfg["padding"], cfg["lhs_dilation"], cfg["rhs_dilation"],
        dn if dn is None or isinstance(dn[0], str) else jax_lax.ConvDimensionNumbers(*dn),
        cfg["feature_group_count"],
        cfg["batch_group_count"]))


@needs_jax
@EXAMPLES
@given(conv_configs(), st.integers(0, 2 ** 31))
def test_reference_matches_jax(cfg: dict[str, Any], seed: int) -> None:
    x, w = _small_ints(cfg, np.random.default_rng(seed), np.float32)
    np.testing.assert_array_equal(conv_of(cfg)(x, w), _jax_conv(cfg, x, w))


@needs_jax
@pytest.mark.parametrize("dn", [None, ("NHWC", "HWIO", "NHWC"), ("NCHW", "IOHW", "NWHC"),
                                ("HNCW", "WOHI", "CWNH")])
@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER", "VALID", [(2, -1), (0, 3)]])
def test_layout_strings_and_padding_kinds_match_jax(dn: Any, padding: Any) -> None:
    rng = np.random.default_rng(5)
    canonical = {"lhs": (2, 4, 7, 6), "rhs": (6, 2, 3, 2)}
    shapes = [_shape_for(canonical[side], dn, k) for k, side in ((0, "lhs"), (1, "rhs"))]
    cfg = dict(lhs_shape=shapes[0], rhs_shape=shapes[1], strides=(2, 1), padding=padding,
               lhs_dilation=None, rhs_dilation=(1, 2), dimension_numbers=dn,
               feature_group_count=2, batch_group_count=1)
    x, w = _small_ints(cfg, rng, np.float32)
    np.testing.assert_array_equal(conv_of(cfg)(x, w), _jax_conv(cfg, x, w))


def _shape_for(canonical: tuple[int, ...], dn: Any, k: int) -> tuple[int, ...]:
    """The operand shape with canonical sizes (N/O, C/I, spatial in rhs-spec order)."""
    if dn is None:
        return canonical
    perm = ops.conv_dimension_numbers(4, dn)[k]
    return _place(canonical, perm)


@needs_jax
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8])
def test_integer_convolution_wraps_like_jax(dtype: Any) -> None:
    rng = np.random.default_rng(2)
    info = np.iinfo(dtype)
    x = rng.integers(info.min // 2, info.max // 2, (2, 3, 6, 6)).astype(dtype)
    w = rng.integers(info.min // 2, info.max // 2, (4, 3, 3, 3)).astype(dtype)
    got = ops.conv(x, w, (1, 1), "SAME")
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.asarray(jax_lax.conv(x, w, (1, 1), "SAME")))


# --------------------------------------------------------------------------- params, errors
def test_wrappers_are_one_op_printed_as_convolution() -> None:
    x, w = np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32)
    text = str(tr.make_hlo(lambda x, w: [ops.conv(x, w, (1, 1), "SAME"),
                                         ops.conv_with_general_padding(x, w, (2, 1), [(1, 0)] * 2,
                                                                       (1, 1), (2, 1))])(x, w))
    assert text.count(" convolution(") == 2 and "padding={{1,1},{1,1}}" in text


def test_same_padding_puts_the_odd_pad_last_and_same_lower_first() -> None:
    assert ops.padtype_to_pads((5, 6), (2, 4), (1, 2), "SAME") == ((0, 1), (1, 1))
    assert ops.padtype_to_pads((5, 6), (2, 4), (1, 2), "SAME_LOWER") == ((1, 0), (1, 1))
    assert ops.padtype_to_pads((5,), (9,), (3,), "valid") == ((0, 0),)


def test_dimension_numbers_forms_agree() -> None:
    dn = ops.conv_dimension_numbers(4, ("NHWC", "HWIO", "NCHW"))
    assert dn == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 1, 2, 3))
    assert ops.conv_dimension_numbers(4, [list(s) for s in dn]) == dn
    assert ops.conv_dimension_numbers(3, None) == ((0, 1, 2),) * 3
    hash(dn)


X4, W4 = np.ones((2, 4, 5, 5), np.float32), np.ones((6, 2, 3, 3), np.float32)
W44 = np.ones((6, 4, 3, 3), np.float32)
ERRORS = {
    "rank mismatch": (lambda: ops.conv(X4, W4[0], (1, 1), "SAME"), ShapeError, "same rank"),
    "groups do not divide": (lambda: ops.conv_general_dilated(X4, W4, (1, 1), "SAME",
                                                               feature_group_count=3),
                             ShapeError, "feature_group_count"),
    "features differ": (lambda: ops.conv(X4, W4, (1, 1), "SAME"), ShapeError, "input features"),
    "window too large": (lambda: ops.conv_general_dilated(X4, W4, (1, 1), "VALID", None, (3, 1),
                                                          feature_group_count=2),
                         ShapeError, "larger than the padded input"),
    "padding too negative": (lambda: ops.conv_with_general_padding(
        X4, W44, (1, 1), [(-3, -3), (0, 0)], None, None), ShapeError, "negative padding"),
    "zero stride": (lambda: ops.conv_general_dilated(X4, W4, (0, 1), "VALID",
                                                     feature_group_count=2),
                    ParamError, "positive"),
    "stride count": (lambda: ops.conv_general_dilated(X4, W4, (1,), "VALID",
                                                      feature_group_count=2), ParamError,
                     "one entry per spatial"),
    "both group kinds": (lambda: ops.conv_general_dilated(X4, W4, (1, 1), "VALID",
                                                          feature_group_count=2,
                                                          batch_group_count=2), ParamError,
                         "at most one"),
    "batch groups": (lambda: ops.conv_general_dilated(X4[:1], W44, (1, 1), "VALID",
                                                      batch_group_count=2), ShapeError,
                     "batch_group_count"),
    "dtype mismatch": (lambda: ops.conv(X4, W4.astype(np.float64), (1, 1), "SAME"), DTypeError,
                       "share a dtype"),
    "bool": (lambda: ops.conv(X4 > 0, W4 > 0, (1, 1), "SAME"), DTypeError, "numeric"),
    "bad layout": (lambda: ops.conv_general_dilated(X4, W4, (1, 1), "SAME", dimension_numbers=(
        "NCHW", "OIHW", "NCXW")), ParamError, "same spatial"),
    "bad spec": (lambda: ops.conv_general_dilated(X4, W4, (1, 1), "SAME", dimension_numbers=(
        (0, 1, 2, 2), (0, 1, 2, 3), (0, 1, 2, 3))), ParamError, "permutation"),
    "string padding with lhs dilation": (lambda: ops.conv_general_dilated(
        X4, W4, (1, 1), "SAME", (2, 2), feature_group_count=2), ParamError, "lhs_dilation"),
    "unknown padding": (lambda: ops.conv(X4, W44, (1, 1), "FULL"), ParamError, "'SAME'"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_clear(name: str) -> None:
    fn, cls, words = ERRORS[name]
    with pytest.raises(cls, match=words) as info:
        fn()
    assert "conv_general_dilated" in str(info.value)


def test_error_names_operands_when_traced() -> None:
    with pytest.raises(ShapeError, match=r"f32\[2,4,5,5\]"):
        tr.jit(lambda x, w: ops.conv(x, w, (1, 1), "SAME"))(X4, W4)

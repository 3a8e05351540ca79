"""The kernel gradient of a convolution on the cpu backend: the transposed Winograd
plan (cpu/lib/conv_winograd_t.py) and operands whose batch and feature dims are
exchanged, as a kernel gradient's are (cpu/emit/conv.py hands them to the library as
they are; the transposed Winograd plan reads them in place, every other plan copies
them canonical). Oracles: the NumPy reference of conv_general_dilated, the reference
interpreter, and jax.grad.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tests.test_ops_conv import EXAMPLES, conv_configs, conv_of, operands
from tests.test_ops_conv_cpu import _flat3, _geometry, _winograd_takes, winograd_t_configs
from tracer import ops


def _swapped(a: np.ndarray, swap: bool) -> np.ndarray:
    """The canonical 3-D operand `a` with its dims 0 and 1 exchanged in memory, if `swap`."""
    return np.ascontiguousarray(a.transpose(1, 0, 2)) if swap else a


@EXAMPLES
@given(st.one_of(conv_configs(canonical=True), winograd_t_configs()), st.integers(0, 2 ** 31),
       st.sampled_from([np.float32, np.float64, np.int32]), st.booleans(), st.booleans())
def test_every_plan_takes_operands_with_batch_and_feature_exchanged(
        cfg: dict[str, Any], seed: int, dtype: Any, x_swap: bool, w_swap: bool) -> None:
    """Each plan, forced, on x (C, N, S) and w (C', O, T) in memory gives the
    convolution of the canonical operands."""
    from tracer.backend.cpu.lib import conv as lib
    from tracer.backend.cpu.lib.conv_entry import run_plan
    x, w = operands(cfg, np.random.default_rng(seed), dtype)
    want = conv_of(cfg)(x, w)
    geo = _geometry(cfg, want.shape)
    modes = [lib.IM2COL, lib.WINDOW, lib.AUTO]
    if all(s == 1 for s in geo[3]):
        modes.append(lib.SHIFTED)
    if _winograd_takes(cfg) and dtype != np.int32:
        modes.append(lib.WINOGRAD)
    if want.shape[2:] == (3, 3) and _winograd_takes(dict(cfg, rhs_shape=(1, 1, 3, 3))):
        modes.append(lib.WINOGRAD_T)  # (int32: its entry point runs the window plan)
    for mode in modes:
        out = np.full(_flat3(want).shape, 77, dtype)  # every element must be written
        run_plan(mode, _swapped(_flat3(x), x_swap), _swapped(_flat3(w), w_swap), out, geo,
                 cfg["feature_group_count"], cfg["batch_group_count"], (x_swap, w_swap))
        np.testing.assert_allclose(out.reshape(want.shape), want,
                                   rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


def test_transposed_winograd_with_exchanged_operands_falls_back_on_inf() -> None:
    """An inf in the input: the plan sees a non-finite output and the window plan (on
    canonical copies of the exchanged operands) gives the direct sum's inf and NaN."""
    from tracer.backend.cpu.lib import conv as lib
    from tracer.backend.cpu.lib.conv_entry import run_plan
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 18, 17)).astype(np.float32)
    w = rng.standard_normal((4, 3, 18, 17)).astype(np.float32)
    x[1, 2, 5, 6] = np.inf
    cfg = dict(strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1),
               rhs_dilation=(1, 1), dimension_numbers=ops.ConvDimensionNumbers(
                   *[tuple(range(4))] * 3), feature_group_count=1, batch_group_count=1,
               lhs_shape=x.shape, rhs_shape=w.shape)
    with np.errstate(invalid="ignore"):
        want = conv_of(cfg)(x, w)
    assert want.shape[2:] == (3, 3) and not np.isfinite(want).all()
    out = np.empty(_flat3(want).shape, np.float32)
    run_plan(lib.WINOGRAD_T, _swapped(_flat3(x), True), _swapped(_flat3(w), True), out,
             _geometry(cfg, want.shape), 1, 1, (True, True))
    np.testing.assert_allclose(out.reshape(want.shape), want, rtol=1e-5, atol=1e-4)


@st.composite
def _layers(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """A 3x3 layer whose kernel gradient the transposed Winograd plan takes (64 or more
    2x2 tiles of the window): odd and even sizes, channel counts off the 16-lane step."""
    n, c, o = draw(st.integers(1, 3)), draw(st.integers(1, 18)), draw(st.integers(1, 18))
    h, w = draw(st.integers(17, 21)), draw(st.integers(17, 21))
    return (n, c, h, w), (o, c, 3, 3), draw(st.sampled_from(["SAME", "VALID"]))


@settings(max_examples=8, deadline=None)
@given(layer=_layers(), seed=st.integers(0, 2 ** 31),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_jitted_conv_gradients_match_jax(layer: tuple, seed: int, dtype: Any) -> None:
    """jit(grad) of a 3x3 layer's loss, both arguments (the kernel gradient on the
    transposed Winograd plan, fed the exchanged operands in place), against jax.grad."""
    jax = pytest.importorskip("jax")
    from jax import lax
    x_shape, w_shape, padding = layer
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(x_shape).astype(dtype), rng.standard_normal(w_shape).astype(dtype)

    def loss(conv: Any) -> Any:
        return lambda x, w: (conv(x, w, (1, 1), padding) ** 2).sum()
    got = tr.jit(tr.grad(loss(ops.conv), argnums=(0, 1)))(x, w)
    with jax.enable_x64(dtype == np.float64):
        want = jax.jit(jax.grad(loss(lax.conv), argnums=(0, 1)))(x, w)
    for g, e in zip(got, want, strict=True):
        e = np.asarray(e)
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * float(np.abs(e).max()))

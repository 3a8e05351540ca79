"""`cpu.lib.simd_rows`: the explicit-vector row combinations behind the F(4x4) Winograd
transforms, against the same formulas evaluated by NumPy (bit for bit: the same
operations in the same order, one rounding each), over counts that end in a partial
vector and offsets that are not vector-aligned, float32 and float64; and its
four-row interleave, its reverse and 8x8 block transpose against NumPy's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from tracer.backend.cpu.lib.conv_winograd4 import _at4, _bt4
from tracer.backend.cpu.lib.conv_winograd4_t import _a4
from tracer.backend.cpu.lib.simd_rows import deinterleave4, interleave4, rows_map, transpose8

_BT4, _AT4, _A4 = rows_map(_bt4, 6), rows_map(_at4, 6), rows_map(_a4, 4)


@njit
def _apply_six(which, src, starts, out, at, stride, count):  # noqa: ANN001, ANN202
    if which == 0:
        _BT4(src, starts, out, at, stride, count)
    else:
        _AT4(src, starts, out, at, stride, count)


@njit
def _apply_four(src, starts, out, at, stride, count):  # noqa: ANN001, ANN202
    _A4(src, starts, out, at, stride, count)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["bt4", "at4", "a4"]), st.sampled_from([np.float32, np.float64]),
       st.integers(0, 70), st.integers(0, 9), st.integers(0, 5), st.integers(0, 2 ** 31))
def test_row_combinations_match_numpy(name: str, dtype: Any, count: int, skew: int, at: int,
                                      seed: int) -> None:
    formula, inputs = {"bt4": (_bt4, 6), "at4": (_at4, 6), "a4": (_a4, 4)}[name]
    rng = np.random.default_rng(seed)
    pitch = count + skew  # input rows `pitch` apart, from `skew`: mostly unaligned
    src = rng.standard_normal(skew + inputs * pitch + 1).astype(dtype)
    starts = tuple(skew + j * pitch for j in range(inputs))
    rows = formula(*(src[s:s + count] for s in starts))
    stride = count + 3
    out = np.full(at + len(rows) * stride + 2, 7.0, dtype)  # 7: what must stay untouched
    if name == "a4":
        _apply_four(src, starts, out, at, stride, count)
    else:
        _apply_six(0 if name == "bt4" else 1, src, starts, out, at, stride, count)
    want = np.full_like(out, 7.0)
    for q, row in enumerate(rows):
        want[at + q * stride:at + q * stride + count] = row
    np.testing.assert_array_equal(out, want)


@njit
def _interleave(src, starts, out, at, count):  # noqa: ANN001, ANN202
    interleave4(src, starts, out, at, count)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.integers(0, 40), st.integers(0, 9),
       st.integers(0, 5), st.integers(0, 2 ** 31))
def test_interleave4_matches_numpy(dtype: Any, count: int, skew: int, at: int,
                                   seed: int) -> None:
    pitch = count + skew
    src = np.random.default_rng(seed).standard_normal(skew + 4 * pitch + 1).astype(dtype)
    starts = tuple(skew + j * pitch for j in range(4))
    out = np.full(at + 4 * count + 3, 7.0, dtype)
    _interleave(src, starts, out, at, count)
    want = np.full_like(out, 7.0)
    want[at:at + 4 * count] = np.stack([src[s:s + count] for s in starts], axis=1).ravel()
    np.testing.assert_array_equal(out, want)


@njit
def _transpose(src, start, apart, out, spots, lane):  # noqa: ANN001, ANN202
    transpose8(src, start, apart, out, spots, lane)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.integers(0, 7), st.integers(8, 20),
       st.permutations(range(8)), st.integers(0, 3), st.integers(0, 2 ** 31))
def test_transpose8_matches_numpy(dtype: Any, start: int, apart: int, order: list[int],
                                  lane: int, seed: int) -> None:
    src = np.random.default_rng(seed).standard_normal(start + 8 * apart).astype(dtype)
    spots = tuple(11 * m for m in order)  # runs of 8 (+ lane), 11 apart, in any order
    out = np.full(11 * 8 + lane + 8, 7.0, dtype)
    _transpose(src, start, apart, out, spots, lane)
    block = src[start:start + 8 * apart].reshape(8, apart)[:, :8]  # block[k, m]
    want = np.full_like(out, 7.0)
    for m, spot in enumerate(spots):
        want[spot + lane:spot + lane + 8] = block[:, m]
    np.testing.assert_array_equal(out, want)


@njit
def _deinterleave(src, start, out, spots, count):  # noqa: ANN001, ANN202
    deinterleave4(src, start, out, spots, count)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.integers(0, 40), st.integers(0, 9),
       st.permutations(range(4)), st.integers(0, 2 ** 31))
def test_deinterleave4_matches_numpy(dtype: Any, count: int, start: int, order: list[int],
                                     seed: int) -> None:
    src = np.random.default_rng(seed).standard_normal(start + 4 * count + 3).astype(dtype)
    spots = tuple((count + 2) * q + 1 for q in order)  # rows count + 2 apart, any order
    out = np.full(4 * (count + 2) + 1, 7.0, dtype)
    _deinterleave(src, start, out, spots, count)
    want = np.full_like(out, 7.0)
    for j, spot in enumerate(spots):
        want[spot:spot + count] = src[start + j:start + 4 * count:4]
    np.testing.assert_array_equal(out, want)

"""Family tests for fft, batch_norm_*, reduce_precision and bitcast_convert_type:
references against NumPy (np.fft, the seeds' batch norm formulas written out,
casts to float16 / bfloat16, ndarray.view) and against jax.lax where jax imports;
shape-rule errors; and the cpu backend (tr.jit) against the references.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tracer import errors, ops

EXAMPLES = settings(max_examples=20)
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def random_bits(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
    """Every bit pattern of a float type is equally likely: NaNs, infs, denormals."""
    uint = UINT[np.dtype(dtype).itemsize]
    return rng.integers(0, np.iinfo(uint).max, n, dtype=uint, endpoint=True).view(dtype)


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit for bit, except that any NaN matches any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    uint = UINT[want.dtype.itemsize]
    np.testing.assert_array_equal(got[~nan].view(uint), want[~nan].view(uint))


# --------------------------------------------------------------------------- fft
NUMPY_FFT = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn}


@EXAMPLES
@given(st.sampled_from(["FFT", "IFFT", "RFFT", "IRFFT"]), st.sampled_from([32, 64]),
       st.lists(st.integers(1, 9), min_size=1, max_size=3), st.lists(st.integers(1, 3),
                                                                   max_size=2), st.data())
def test_fft_matches_numpy(kind: str, bits: int, lengths: list[int], batch: list[int],
                           data: Any) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    real, cplx = np.dtype(f"float{bits}"), np.dtype(f"complex{2 * bits}")
    axes = tuple(range(len(batch), len(batch) + len(lengths)))
    if kind == "IRFFT":
        shape = tuple(batch + lengths[:-1] + [lengths[-1] // 2 + 1])
        x = rand(rng, shape, cplx)
        want = np.fft.irfftn(x, s=lengths, axes=axes).astype(real)
    else:
        x = rand(rng, tuple(batch + lengths), real if kind == "RFFT" else cplx)
        want = NUMPY_FFT[kind](x, axes=axes).astype(cplx)
    got = ops.fft(x, kind, lengths)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5 if bits == 32 else 1e-12,
                               atol=1e-5 if bits == 32 else 1e-12)


def test_fft_shape_examples_of_the_seed() -> None:
    f16, f17 = np.zeros(16, np.float32), np.zeros(17, np.float32)
    assert tr.eval_shape(lambda x: ops.fft(x, "RFFT", [16]), f16).shape == (9,)
    assert tr.eval_shape(lambda x: ops.fft(x, "RFFT", [17]), f17).shape == (9,)
    c9 = np.zeros(9, np.complex64)
    out16 = tr.eval_shape(lambda x: ops.fft(x, "IRFFT", [16]), c9)
    out17 = tr.eval_shape(lambda x: ops.fft(x, "IRFFT", [17]), c9)
    assert (out16.shape, out17.shape, str(out16)) == ((16,), (17,), "f32[16]")


def test_fft_type_spellings() -> None:
    x = np.arange(4.0).astype(np.complex128)
    np.testing.assert_allclose(ops.fft(x, "ifft", (4,)), np.fft.ifft(x))

    class FftType:  # an enum member, like jax.lax.FftType.IFFT
        name = "IFFT"
    np.testing.assert_allclose(ops.fft(x, FftType(), [4]), np.fft.ifft(x))


@pytest.mark.parametrize("fn, match", [
    (lambda: ops.fft(np.zeros(4, np.float32), "FFT", [4]), "FFT needs a c64 or c128"),
    (lambda: ops.fft(np.zeros(4, np.complex64), "RFFT", [4]), "RFFT needs a f32 or f64"),
    (lambda: ops.fft(np.zeros(4, np.int32), "RFFT", [4]), "RFFT needs"),
    (lambda: ops.fft(np.zeros(4, np.complex64), "FFT", [5]), "innermost dimensions"),
    (lambda: ops.fft(np.zeros(4, np.complex64), "IRFFT", [4]), r"to be \(3,\)"),
    (lambda: ops.fft(np.zeros((2, 2, 2, 2), np.complex64), "FFT", [2, 2, 2, 2]), "1 to 3"),
    (lambda: ops.fft(np.zeros(4, np.complex64), "FFT", [2, 4]), "rank >= 2"),
    (lambda: ops.fft(np.zeros(4, np.complex64), "DCT", [4]), "fft_type must be one of"),
    (lambda: ops.fft(np.zeros(4, np.complex64), "FFT", 4), "fft_length must be a sequence"),
])
def test_fft_errors(fn: Any, match: str) -> None:
    with pytest.raises(errors.TracerError, match=match):
        fn()


def test_fft_zero_sizes() -> None:
    assert ops.fft(np.zeros((0, 4), np.complex64), "FFT", [4]).shape == (0, 4)
    assert ops.fft(np.zeros((3, 0), np.float32), "RFFT", [0]).shape == (3, 0)
    out = ops.fft(np.zeros((3, 0), np.complex128), "IRFFT", [0])
    assert out.shape == (3, 0) and out.dtype == np.float64


def test_irfft_ignores_imaginary_dc_and_nyquist_like_numpy() -> None:
    x = np.array([1 + 5j, 2 - 1j, 3 + 7j])
    np.testing.assert_allclose(ops.fft(x, "IRFFT", [4]), np.fft.irfft(x, 4))


def test_fft_without_mkl_and_rocket_fft_runs_its_reference(monkeypatch: Any) -> None:
    from tracer.backend.cpu.emit import numerics as cpu_emit_numerics
    monkeypatch.setattr(cpu_emit_numerics, "HAVE_ROCKET_FFT", False)
    x = np.arange(8.0).astype(np.complex128)
    with tr.config.override(use_mkl=False):
        f = tr.jit(lambda x: ops.fft(x, "IFFT", [8]))
        np.testing.assert_allclose(f(x), np.fft.ifft(x), rtol=1e-12, atol=1e-12)
        assert "numba.objmode" in f.lower(x).compile().source


def test_fft_cpu_matches_reference_for_new_shapes() -> None:
    f = tr.jit(lambda x: (ops.fft(x, "FFT", [x.shape[-1]]),
                          ops.fft(ops.real(x), "RFFT", list(x.shape[-2:]))))
    rng = np.random.default_rng(0)
    for shape in [(3, 8), (2, 5, 12)]:
        x = rand(rng, shape, np.complex64)
        a, b = f(x)
        np.testing.assert_allclose(a, np.fft.fft(x), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(b, np.fft.rfftn(x.real, axes=(-2, -1)), rtol=1e-5,
                                   atol=1e-5)


# --------------------------------------------------------------------------- batch norm
def _moments(x: np.ndarray, fi: int) -> tuple[np.ndarray, np.ndarray]:
    axes = tuple(d for d in range(x.ndim) if d != fi)
    return x.mean(axes, keepdims=True), x.var(axes, keepdims=True)


@st.composite
def norm_cases(draw: Any) -> tuple[np.ndarray, int, np.random.Generator]:
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    fi = draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    return rng.standard_normal(shape) * 3 + 10, fi, rng


def _vec(rng: np.random.Generator, x: np.ndarray, fi: int) -> np.ndarray:
    return rng.uniform(0.5, 2.0, x.shape[fi])


def _b(v: np.ndarray, x: np.ndarray, fi: int) -> np.ndarray:
    return v.reshape([-1 if d == fi else 1 for d in range(x.ndim)])


@EXAMPLES
@given(norm_cases())
def test_batch_norm_training_formula(case: Any) -> None:
    x, fi, rng = case
    scale, offset = _vec(rng, x, fi), _vec(rng, x, fi)
    mean, var = _moments(x, fi)
    y, m, v = ops.batch_norm_training(x, scale, offset, 1e-3, fi)
    want = _b(scale, x, fi) * (x - mean) / np.sqrt(var + 1e-3) + _b(offset, x, fi)
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(m, mean.ravel(), rtol=1e-12)
    np.testing.assert_allclose(v, var.ravel(), rtol=1e-10, atol=1e-12)


@EXAMPLES
@given(norm_cases())
def test_batch_norm_inference_and_grad_formulas(case: Any) -> None:
    x, fi, rng = case
    scale, offset, mean, var = (_vec(rng, x, fi) for _ in range(4))
    y = ops.batch_norm_inference(x, scale, offset, mean, var, 0.5, fi)
    b = lambda v: _b(v, x, fi)  # noqa: E731
    np.testing.assert_allclose(y, b(scale) * (x - b(mean)) / np.sqrt(b(var) + 0.5) + b(offset),
                               rtol=1e-12, atol=1e-12)
    dy, axes = rng.standard_normal(x.shape), tuple(d for d in range(x.ndim) if d != fi)
    n = x.size / x.shape[fi]
    c = (dy * (x - b(mean)) / (b(var) + 0.5)).sum(axes, keepdims=True) / n
    d = dy.sum(axes, keepdims=True) / n
    gx, gs, go = ops.batch_norm_grad(x, scale, mean, var, dy, 0.5, fi)
    np.testing.assert_allclose(gx, b(scale) / np.sqrt(b(var) + 0.5) * (dy - d - c * (x - b(mean))),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gs, (dy * (x - b(mean)) / np.sqrt(b(var) + 0.5)).sum(axes),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(go, dy.sum(axes), rtol=1e-12, atol=1e-12)


def test_batch_norm_is_stable_far_from_zero() -> None:
    # a large mean and a small spread: a one-pass E[x^2] - E[x]^2 would cancel
    x = (1e4 + np.random.default_rng(1).standard_normal((64, 3))).astype(np.float32)
    want = _moments(x.astype(np.float64), 1)[1].ravel()
    f = tr.jit(lambda x: ops.batch_norm_training(x, np.ones(3, np.float32),
                                                 np.zeros(3, np.float32), 0.0, 1))
    for _, _, var in (f(x), ops.batch_norm_training(x, np.ones(3, np.float32),
                                                    np.zeros(3, np.float32), 0.0, 1)):
        np.testing.assert_allclose(var, want, rtol=1e-5)


def test_grad_through_batch_norm_under_jit_is_batch_norm_grad() -> None:
    rng = np.random.default_rng(6)
    x, dy = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 3, 2))
    scale, offset = rng.uniform(0.5, 2.0, 3), rng.standard_normal(3)

    def loss(x, s, o):
        return (ops.batch_norm_training(x, s, o, 1e-3, 1)[0] * dy).sum()
    got = tr.jit(tr.grad(loss, argnums=(0, 1, 2)))(x, scale, offset)
    _, mean, var = ops.batch_norm_training(x, scale, offset, 1e-3, 1)
    want = ops.batch_norm_grad(x, scale, mean, var, dy, 1e-3, 1)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_batch_norm_cpu_matches_reference(dtype: Any) -> None:
    rng = np.random.default_rng(2)
    x, dy = rand(rng, (2, 3, 5), dtype), rand(rng, (2, 3, 5), dtype)
    s, o, m = (rand(rng, (5,), dtype) for _ in range(3))
    v = rng.uniform(0.5, 2.0, 5).astype(dtype)

    def f(x, s, o, m, v, dy):
        return (ops.batch_norm_training(x, s, o, 1e-5, 2),
                ops.batch_norm_inference(x, s, o, m, v, 1e-5, 2),
                ops.batch_norm_grad(x, s, m, v, dy, 1e-5, 2))
    got, want = tr.jit(f)(x, s, o, m, v, dy), f(x, s, o, m, v, dy)
    for g, w in zip(tr.tree_util.tree_leaves(got), tr.tree_util.tree_leaves(want), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-3 if dtype == np.float16 else 1e-6, atol=1e-6)


@pytest.mark.parametrize("fn, match", [
    (lambda: ops.batch_norm_training(np.ones((2, 3)), np.ones(2), np.ones(3), 0.1, 1),
     "scale must be a vector of the 3 features"),
    (lambda: ops.batch_norm_training(np.ones((2, 3)), np.ones(3), np.ones(3), 0.1, 2),
     "feature_index 2 is not a dimension"),
    (lambda: ops.batch_norm_training(np.ones((2, 3), np.int32), np.ones(3, np.int32),
                                     np.ones(3, np.int32), 0.1, 1), "floating-point"),
    (lambda: ops.batch_norm_inference(np.ones((2, 3)), np.ones(3), np.ones(3),
                                      np.ones(3, np.float32), np.ones(3), 0.1, 1),
     "mean f32\\[3\\] must have the operand's dtype"),
    (lambda: ops.batch_norm_grad(np.ones((2, 3)), np.ones(3), np.ones(3), np.ones(3),
                                 np.ones((3, 2)), 0.1, 1), "grad_output f64\\[3,2\\]"),
    (lambda: ops.batch_norm_training(np.ones((2, 3)), np.ones(3), np.ones(3), -1.0, 1),
     "epsilon"),
    (lambda: ops.batch_norm_training(np.ones((2, 3)), np.ones(3), np.ones(3), 0.1, 1.5),
     "feature_index must be a static int"),
])
def test_batch_norm_errors(fn: Any, match: str) -> None:
    with pytest.raises(errors.TracerError, match=match):
        fn()


# --------------------------------------------------------------------------- reduce_precision
def _flush_below(x: np.ndarray, smallest_normal: float) -> np.ndarray:
    """XLA's reduce_precision flushes the narrow format's denormals to signed zero."""
    return np.where(np.abs(x) < smallest_normal, np.copysign(0, x), x).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduce_precision_is_a_cast_to_float16(dtype: Any) -> None:
    rng = np.random.default_rng(3)
    scaled = rng.standard_normal(20000) * 10.0 ** rng.integers(-8, 6, 20000)
    x = np.concatenate([random_bits(rng, 20000, dtype), scaled.astype(dtype)])
    with np.errstate(all="ignore"):
        want = _flush_below(x.astype(np.float16).astype(dtype), 2.0 ** -14)
    same_bits(ops.reduce_precision(x, 5, 10), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduce_precision_is_a_cast_to_bfloat16(dtype: Any) -> None:
    rng = np.random.default_rng(4)
    x = random_bits(rng, 40000, dtype)
    with np.errstate(all="ignore"):
        want = x.astype(ml_dtypes.bfloat16).astype(dtype)
    if dtype == np.float64:  # (f32's own denormals are bf16's: only f64 flushes them)
        want = _flush_below(want, 2.0 ** -126)
    same_bits(ops.reduce_precision(x, 8, 7), want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_reduce_precision_matches_jax(dtype: Any) -> None:
    jax = pytest.importorskip("jax")
    if not callable(getattr(jax, "enable_x64", None)):
        pytest.skip("this JAX has no enable_x64 context")
    rng = np.random.default_rng(5)
    x = random_bits(rng, 5000, dtype)
    for e, m in [(1, 0), (2, 1), (3, 0), (4, 3), (5, 2), (8, 7), (8, 23), (11, 10), (12, 60)]:
        with jax.enable_x64(True):  # (scoped: a global switch leaks into later tests)
            want = np.asarray(jax.lax.reduce_precision(x, exponent_bits=e, mantissa_bits=m))
        same_bits(ops.reduce_precision(x, e, m), want)
        same_bits(tr.jit(lambda x: ops.reduce_precision(x, e, m))(x), want)


def test_reduce_precision_cpu_scalar_and_float16() -> None:
    x = np.float16(1.0 + 2 ** -8)
    f = tr.jit(lambda x, y: (ops.reduce_precision(x, 5, 7), ops.reduce_precision(y, 4, 2)))
    a, b = f(x, np.array([3.1, 1e-3, 300.0], np.float32))
    same_bits(a, np.float16(1.0))  # (ties to even)
    same_bits(b, np.array([3.0, 0.0, np.inf], np.float32))  # e=4: max 240, min normal 2**-6


@pytest.mark.parametrize("e, m, dtype, match", [
    (0, 3, np.float32, "exponent_bits must be >= 1"), (3, -1, np.float32, "mantissa_bits"),
    (3, 3, np.int32, "floating-point operand"), (3, 3, np.complex64, "floating-point"),
])
def test_reduce_precision_errors(e: int, m: int, dtype: Any, match: str) -> None:
    with pytest.raises(errors.TracerError, match=match):
        ops.reduce_precision(np.ones(2, dtype), e, m)


# --------------------------------------------------------------------------- bitcast
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.float16, np.int32, np.uint32, np.float32,
          np.int64, np.uint64, np.float64]


@settings(max_examples=40)
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES),
       st.lists(st.integers(0, 3), max_size=2), st.integers(0, 2 ** 32 - 1))
def test_bitcast_convert_type_is_a_view(old: Any, new: Any, shape: list[int],
                                        seed: int) -> None:
    old, new = np.dtype(old), np.dtype(new)
    if new.itemsize > old.itemsize:
        shape = shape + [new.itemsize // old.itemsize]
    raw = np.random.default_rng(seed).integers(0, 256, (*shape, old.itemsize), np.uint8)
    x = raw.view(old)[..., 0]
    got = ops.bitcast_convert_type(x, new)
    want_shape = tuple(shape) + ((old.itemsize // new.itemsize,)
                                 if old.itemsize > new.itemsize else ())
    want = raw.reshape(-1).view(new).reshape(want_shape[:-1] if new.itemsize > old.itemsize
                                             else want_shape)
    assert got.dtype == new
    assert got.shape == np.shape(want)
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8),
                                  np.asarray(want).reshape(-1).view(np.uint8))
    same = tr.jit(lambda x: ops.bitcast_convert_type(x, new))(x)
    assert same.shape == got.shape and same.dtype == got.dtype
    if new.kind != "f" or new.itemsize != 2:  # (float16 scalars are canonicalized NaNs)
        np.testing.assert_array_equal(same.reshape(-1).view(np.uint8),
                                      got.reshape(-1).view(np.uint8))


def test_bitcast_convert_type_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    if not callable(getattr(jax, "enable_x64", None)):
        pytest.skip("this JAX has no enable_x64 context")
    x = np.array([1.0, -2.5, 3e38], np.float32)
    pairs = np.array([[1, 2], [3, 4]], np.int32)
    with jax.enable_x64(True):  # (scoped: a global switch leaks into later tests)
        for new in (np.uint16, np.int8, np.int32):
            np.testing.assert_array_equal(ops.bitcast_convert_type(x, new),
                                          np.asarray(jax.lax.bitcast_convert_type(x, new)))
        np.testing.assert_array_equal(ops.bitcast_convert_type(pairs, np.float64),
                                      np.asarray(jax.lax.bitcast_convert_type(pairs, np.float64)))


@pytest.mark.parametrize("x, new, match", [
    (np.ones(2, np.bool_), np.uint8, "pred"), (np.ones(2, np.uint8), np.bool_, "pred"),
    (np.ones(2, np.complex64), np.float64, "complex and real"),
    (np.ones((3, 3), np.int16), np.int32, "last dimension of size 2"),
    (np.int16(1), np.int32, "last dimension of size 2"),
])
def test_bitcast_convert_type_errors(x: Any, new: Any, match: str) -> None:
    with pytest.raises(errors.TracerError, match=match):
        ops.bitcast_convert_type(x, new)

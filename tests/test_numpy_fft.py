"""`tracer.numpy.fft` against `numpy.fft` (NumPy 2): values and dtypes for random
shapes, lengths (padding and truncation), axes and norms, eagerly and under jit;
gradients of real-valued functions of transforms against finite differences.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"]
REAL_INPUT = {"rfft", "ihfft", "rfftn", "rfft2"}
NORMS = [None, "backward", "ortho", "forward"]


def _array(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    x = rng.standard_normal(shape) * 2
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _close(got: Any, want: np.ndarray, half: bool = False) -> None:
    """Values and dtype; `half`: NumPy computed from float16 input (it rounds the norm
    factors to float16, tracer does not)."""
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    single = want.dtype in (np.float32, np.complex64)
    tol = 2e-2 if half or want.dtype == np.float16 else 1e-4 if single else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max(
        initial=0.0)))


@st.composite
def one_d(draw: Any) -> tuple[str, np.ndarray, dict[str, Any]]:
    name = draw(st.sampled_from(ONE_D))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    kinds = [np.float32, np.float64, np.int32, np.float16, np.bool_]
    if name not in REAL_INPUT:
        kinds += [np.complex64, np.complex128]
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    x = _array(rng, shape, draw(st.sampled_from(kinds)))
    kw: dict[str, Any] = {"axis": draw(st.integers(-len(shape), len(shape) - 1)),
                          "norm": draw(st.sampled_from(NORMS))}
    n = draw(st.none() | st.integers(1, 9))
    if n is not None:
        kw["n"] = n
    if name in ("irfft", "hfft") and n is None and shape[kw["axis"]] == 1:
        kw["n"] = 2  # (the default 2 * (1 - 1) points is an error in NumPy too)
    return name, x, kw


@settings(max_examples=60)
@given(one_d())
def test_one_dimensional_transforms_match_numpy(case: Any) -> None:
    name, x, kw = case
    _close(getattr(tnp.fft, name)(x, **kw), getattr(np.fft, name)(x, **kw),
           half=x.dtype == np.float16)


@st.composite
def n_d(draw: Any) -> tuple[str, np.ndarray, dict[str, Any]]:
    name = draw(st.sampled_from(N_D))
    ndim = draw(st.integers(2 if name.endswith("2") else 1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from([np.float32, np.float64] if name in REAL_INPUT else
                                 [np.float32, np.complex64, np.complex128, np.int64]))
    x = _array(np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1))), shape, dtype)
    kw: dict[str, Any] = {"norm": draw(st.sampled_from(NORMS))}
    if not name.endswith("2"):
        axes = draw(st.none() | st.lists(st.integers(-ndim, ndim - 1), min_size=1,
                                         max_size=ndim, unique=True))
        if axes is not None:
            kw["axes"] = axes
    count = len(kw.get("axes", range(2 if name.endswith("2") else ndim)))
    if draw(st.booleans()):
        kw["s"] = draw(st.lists(st.integers(1, 5) | st.just(-1), min_size=count,
                                max_size=count))
        kw.setdefault("axes", list(range(-count, 0)) if not name.endswith("2") else (-2, -1))
    elif name.startswith("irfft"):
        last = kw.get("axes", [-1])[-1]
        kw["s"] = [-1] * (count - 1) + [2 * x.shape[last]]
        kw.setdefault("axes", list(range(-count, 0)) if not name.endswith("2") else (-2, -1))
    return name, x, kw


@settings(max_examples=60)
@given(n_d())
def test_n_dimensional_transforms_match_numpy(case: Any) -> None:
    name, x, kw = case
    _close(getattr(tnp.fft, name)(x, **kw), getattr(np.fft, name)(x, **kw))


@settings(max_examples=12)
@given(one_d() | n_d())
def test_transforms_under_jit_match_numpy(case: Any) -> None:
    name, x, kw = case
    _close(tr.jit(lambda x: getattr(tnp.fft, name)(x, **kw))(x),
           getattr(np.fft, name)(x, **kw), half=x.dtype == np.float16)


def test_repeated_and_many_axes_like_numpy() -> None:
    x = _array(np.random.default_rng(0), (2, 3, 2, 3, 2), np.float64)
    for name, kw in [("fftn", {"axes": (1, 1)}), ("rfftn", {"axes": (0, 2, 2)}),
                     ("irfftn", {"axes": (1, 0, 1), "s": (3, 2, 4)}), ("fftn", {}),
                     ("rfftn", {}), ("irfftn", {"s": (2, 3, 2, 3, 4), "axes": (0, 1, 2, 3, 4)})]:
        _close(getattr(tnp.fft, name)(x, **kw), getattr(np.fft, name)(x, **kw))


def test_numpy_functions_on_traced_arrays_dispatch_here() -> None:
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    got = tr.jit(lambda x: np.fft.irfft(np.fft.rfft(x, axis=0), n=4, axis=0))(x)
    _close(got, np.fft.irfft(np.fft.rfft(x, axis=0), n=4, axis=0))


def test_vmap_of_fft2() -> None:
    x = _array(np.random.default_rng(2), (3, 4, 5), np.complex64)
    _close(tr.vmap(tnp.fft.fft2, in_axes=2)(x), np.fft.fft2(np.moveaxis(x, 2, 0)))


# ------------------------------------------------------------------ helpers
@pytest.mark.parametrize("n, d", [(1, 1.0), (4, 1.0), (5, 0.1), (8, np.float32(0.5)),
                                  (6, 0.25 + 0j)])
def test_frequencies(n: int, d: Any) -> None:
    _close(tnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
    _close(tnp.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))


def test_traced_sample_spacing() -> None:
    got = tr.jit(lambda d: tnp.fft.fftfreq(5, d))(np.float32(0.5))
    _close(got, np.fft.fftfreq(5, np.float32(0.5)))


@pytest.mark.parametrize("axes", [None, 0, 1, (0, 1), [-1]])
def test_shifts(axes: Any) -> None:
    x = np.arange(15.0).reshape(3, 5)
    _close(tnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
    _close(tnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    _close(tnp.fft.ifftshift(tnp.fft.fftshift(x, axes), axes), x)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: tnp.fft.fft(np.ones(4), norm="bad"), ValueError, "Invalid norm value bad"),
    (lambda: tnp.fft.fft(np.ones(4), n=0), ValueError, r"Invalid number of FFT data points \(0\)"),
    (lambda: tnp.fft.rfft(np.ones(4, np.complex64)), TypeError, "real input"),
    (lambda: tnp.fft.fftn(np.ones((2, 2)), s=(2, 2), axes=(0,)), ValueError,
     "Shape and axes have different lengths"),
    (lambda: tnp.fft.fft(np.ones(4), axis=1), IndexError, "axis 1 is out of bounds"),
    (lambda: tnp.fft.fft(np.float64(1.0)), ValueError, "rank >= 1"),
    (lambda: tnp.fft.fft(np.ones(4), out=np.ones(4)), TypeError, "out="),
])
def test_errors(call: Any, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------------------ gradients
def _numeric_grad(f: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _loss(x: Any) -> Any:
    """A real function of every kind of transform."""
    w = np.linspace(0.5, 1.5, 5)
    spectrum = tnp.fft.rfft(x, axis=-1, norm="ortho")                   # (3, 5)
    power = tnp.sum(tnp.abs(spectrum) ** 2 * w)
    back = tnp.fft.irfft(spectrum * w, n=8, axis=-1)                    # (3, 8)
    full = tnp.fft.fftn(x * (1 + 2j), s=(4, 6), axes=(0, 1))            # (4, 6)
    inverse = tnp.fft.ifft2(full, norm="forward")
    return power + tnp.sum(back ** 3) + tnp.sum(tnp.real(inverse) * tnp.imag(full))


@pytest.mark.parametrize("jit", [False, True])
def test_grad_matches_finite_differences(jit: bool) -> None:
    x = np.random.default_rng(3).standard_normal((3, 8))
    grad = tr.grad(_loss)
    got = (tr.jit(grad) if jit else grad)(x)
    want = _numeric_grad(lambda v: float(np.asarray(_loss(v))), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_grad_of_complex_input_is_conjugate_convention() -> None:
    # JAX's convention: grad of a real f at z is df/dRe(z) - i df/dIm(z)
    z = np.array([1.0 + 2.0j, -0.5 + 0.25j, 3.0 - 1.0j, 0.0 + 1.0j])
    f = lambda z: tnp.sum(tnp.abs(tnp.fft.fft(z)) ** 2)  # noqa: E731 (= 4 sum |z|^2)
    np.testing.assert_allclose(tr.grad(f)(z), 8 * np.conj(z), rtol=1e-12)

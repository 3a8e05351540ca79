"""Rules of fft, batch_norm_*, reduce_precision and bitcast_convert_type
(tracer/ops/numerics_rules.py): JVPs against central finite differences (float64),
transposes through the pairing Re(sum(ct * L(v))) = Re(sum(L^T(ct) * v)) (JAX's
convention for complex values, so random complex ct and v), batching against a loop
over examples, each rule also run traced. batch_norm_grad is checked against the
VJP of batch_norm_training.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.ops.numerics_rules  # noqa: F401  # installs the rules under test
from tests.test_rules_shape import (EPS, aval, bdims, check_batch, check_jvp, eqn_for, run_both,
                                    seeded)
from tracer import ops
from tracer.ops.ad import UndefinedPrimal, Zero

EXAMPLES = settings(max_examples=15)


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = np.float64) -> Any:
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


# --------------------------------------------------------------------------- fft
@st.composite
def ffts(draw: Any) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    """(fft_type, operand shape, fft_length) of a valid transform."""
    kind = draw(st.sampled_from(["FFT", "IFFT", "RFFT", "IRFFT"]))
    lengths = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    inner = lengths[:-1] + (lengths[-1] // 2 + 1,) if kind == "IRFFT" else lengths
    return kind, batch + inner, lengths


def _dtype(kind: str) -> Any:
    return np.float64 if kind == "RFFT" else np.complex128


def check_complex_transpose(op: Any, params: dict[str, Any], x: Any,
                            rng: np.random.Generator) -> None:
    """Re(sum(ct * L(v))) == Re(sum(L^T(ct) * v)) for one linear operand."""
    v = rand(rng, x.shape, x.dtype)
    out = op.bind(v, **params)
    ct = rand(rng, out.shape, out.dtype)
    [got] = run_both(lambda c: op.transpose(c, UndefinedPrimal(aval(x)), **params), [ct])
    assert aval(got) == aval(x)
    np.testing.assert_allclose(np.real(np.sum(got * v)), np.real(np.sum(ct * out)),
                               rtol=1e-9, atol=1e-9)


def check_complex_jvp(op: Any, params: dict[str, Any], x: Any,
                      rng: np.random.Generator) -> None:
    """op.jvp against complex central differences along a random direction."""
    t = rand(rng, x.shape, x.dtype)
    out, t_out = run_both(lambda x, t: op.jvp([x], [t], **params), [x, t])
    fd = (op.bind(x + EPS * t, **params) - op.bind(x - EPS * t, **params)) / (2 * EPS)
    assert aval(out) == aval(op.bind(x, **params)) and aval(t_out) == aval(out)
    np.testing.assert_allclose(t_out, fd, rtol=1e-6, atol=1e-7)


@EXAMPLES
@given(ffts(), st.data())
def test_fft_rules(case: Any, data: Any) -> None:
    kind, shape, lengths = case
    rng = seeded(data)
    x = rand(rng, shape, _dtype(kind))
    op, params = eqn_for("fft", lambda x: ops.fft(x, kind, lengths), x)
    check_complex_transpose(op, params, x, rng)
    check_complex_jvp(op, params, x, rng)
    check_batch(op, params, lambda r: [rand(r, shape, x.dtype)], bdims(data, [x]), rng)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_irfft_transpose_ignores_the_imaginary_dc_and_nyquist(n: int) -> None:
    # The map drops Im of the bins that must be real: their cotangents are real.
    rng = np.random.default_rng(n)
    x = rand(rng, (n // 2 + 1,), np.complex128)
    op, params = eqn_for("fft", lambda x: ops.fft(x, "IRFFT", [n]), x)
    [ct] = op.transpose(rand(rng, (n,)), UndefinedPrimal(aval(x)), **params)
    assert ct[0].imag == 0 and (n % 2 or ct[-1].imag == 0)


def test_fft_transpose_of_empty_is_zero() -> None:
    x = np.zeros((0, 4), np.complex64)
    op, params = eqn_for("fft", lambda x: ops.fft(x, "FFT", [4]), x)
    [ct] = op.transpose(np.zeros((0, 4), np.complex64), UndefinedPrimal(aval(x)), **params)
    assert ct.shape == (0, 4) and ct.dtype == np.complex64


# --------------------------------------------------------------------------- bits
@EXAMPLES
@given(st.lists(st.integers(1, 4), max_size=3).map(tuple), st.integers(1, 11),
       st.integers(0, 52), st.data())
def test_reduce_precision_rules(shape: tuple[int, ...], e: int, m: int, data: Any) -> None:
    rng = seeded(data)
    x = rand(rng, shape)
    op, params = eqn_for("reduce_precision", lambda x: ops.reduce_precision(x, e, m), x)
    _, t = op.jvp([x], [np.full(shape, 1.0 + 2 ** -20)], **params)
    np.testing.assert_array_equal(t, ops.reduce_precision(np.full(shape, 1.0 + 2 ** -20), e, m))
    [ct] = op.transpose(x, UndefinedPrimal(aval(x)), **params)
    np.testing.assert_array_equal(ct, ops.reduce_precision(x, e, m))  # JAX: "linear"
    check_batch(op, params, lambda r: [rand(r, shape)], bdims(data, [x]), rng)


@EXAMPLES
@given(st.lists(st.integers(1, 3), max_size=2).map(tuple),
       st.sampled_from([(np.float32, np.uint8), (np.int16, np.int64), (np.float64, np.int64),
                        (np.uint32, np.float16), (np.complex64, np.complex128)]),
       st.data())
def test_bitcast_convert_type_batching(shape: tuple[int, ...], pair: Any, data: Any) -> None:
    old, new = map(np.dtype, pair)
    if old.itemsize < new.itemsize:
        shape = shape + (new.itemsize // old.itemsize,)
    rng = seeded(data)

    def make(r: np.random.Generator) -> list[Any]:
        return [r.integers(0, 256, shape + (old.itemsize,), np.uint8).view(old)[..., 0]]

    x = make(rng)[0]
    op, params = eqn_for("bitcast_convert_type", lambda x: ops.bitcast_convert_type(x, new), x)
    check_batch(op, params, make, bdims(data, [x]), rng)


def test_bitcast_convert_type_has_no_derivative() -> None:
    x = np.array([1.5, -2.0])
    _, t = tr.jvp(lambda x: ops.bitcast_convert_type(x, np.int64).astype(np.float64), (x,),
                  (np.ones(2),))
    np.testing.assert_array_equal(t, [0.0, 0.0])


# --------------------------------------------------------------------------- batch norm
@st.composite
def norms(draw: Any) -> tuple[tuple[int, ...], int]:
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    return shape, draw(st.integers(0, len(shape) - 1))


def _bn_args(rng: np.random.Generator, shape: tuple[int, ...], fi: int,
             kinds: str) -> list[Any]:
    """Operand-shaped ("o") or per-feature ("v", "p" positive) float64 arrays."""
    n = shape[fi]
    make = {"o": lambda: rand(rng, shape), "v": lambda: rand(rng, (n,)),
            "p": lambda: rng.uniform(0.5, 2.0, n)}
    return [make[k]() for k in kinds]


BN = {"batch_norm_training": (ops.batch_norm_training, "ovv"),
      "batch_norm_inference": (ops.batch_norm_inference, "ovvvp"),
      "batch_norm_grad": (ops.batch_norm_grad, "ovvpo")}


@EXAMPLES
@given(norms(), st.sampled_from(sorted(BN)), st.data())
def test_batch_norm_rules(case: Any, name: str, data: Any) -> None:
    shape, fi = case
    fn, kinds = BN[name]
    rng = seeded(data)
    args = _bn_args(rng, shape, fi, kinds)
    op, params = eqn_for(name, lambda *a: fn(*a, 0.1, fi), *args)
    diff = set(data.draw(st.sets(st.integers(0, len(args) - 1), min_size=1)))
    check_jvp(op, params, args, diff, rng, rtol=1e-5, atol=1e-6)
    check_batch(op, params, lambda r: _bn_args(r, shape, fi, kinds), bdims(data, args), rng)


@EXAMPLES
@given(norms(), st.data())
def test_batch_norm_grad_is_the_vjp_of_training(case: Any, data: Any) -> None:
    shape, fi = case
    rng = seeded(data)
    x, scale, offset = _bn_args(rng, shape, fi, "ovv")
    dy = rand(rng, shape)
    (y, mean, var), vjp = tr.vjp(lambda x, s, o: ops.batch_norm_training(x, s, o, 1e-3, fi),
                                 x, scale, offset)
    want = vjp((dy, np.zeros_like(mean), np.zeros_like(var)))
    got = ops.batch_norm_grad(x, scale, mean, var, dy, 1e-3, fi)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


def test_batch_norm_jvp_with_only_some_tangents() -> None:
    x = np.arange(6.0).reshape(3, 2)
    op, params = eqn_for("batch_norm_training",
                         lambda x, s, o: ops.batch_norm_training(x, s, o, 0.0, 1),
                         x, np.ones(2), np.zeros(2))
    zeros = [Zero(aval(x)), Zero(aval(np.ones(2)))]
    _, (ty, tmean, tvar) = op.jvp([x, np.ones(2), np.zeros(2)], zeros + [np.array([1.0, 2.0])],
                                  **params)
    np.testing.assert_allclose(ty, np.broadcast_to([1.0, 2.0], (3, 2)))
    assert isinstance(tmean, Zero) and isinstance(tvar, Zero)

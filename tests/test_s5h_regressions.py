"""Regressions found by the transformation fuzzer (grad / jvp / vjp / vmap vs JAX)."""

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops


def _cumsum_sin(x):
    return tnp.sin(tnp.cumsum(x)).sum()


def _scan_product(x):
    _, ys = ops.scan(lambda c, a: (c * a, c * a), 1.0, x)
    return (ys * ys).sum()


def _fori_tanh(x):
    return ops.fori_loop(0, 3, lambda i, v: tnp.tanh(v) * x, x).sum()


def _while_sin(x):
    def body(s):
        return s[0] + 1, tnp.sin(s[1]) * s[1]
    return ops.while_loop(lambda s: s[0] < 2, body, (0, x))[1].sum()


@pytest.mark.parametrize("fun", [_cumsum_sin, _scan_product, _fori_tanh, _while_sin])
def test_grad_of_checkpoint_with_a_loop_inside(fun):
    # the loop's JVP carries primal and tangent values in one eqn: the checkpoint's
    # transpose must split it (partial eval) before transposing, not transpose it whole
    x = np.array([0.5, -1.0, 2.0])
    expected = tr.grad(fun)(x)
    np.testing.assert_allclose(tr.grad(tr.checkpoint(fun))(x), expected, rtol=1e-12)
    got = tr.jit(tr.grad(tr.checkpoint(fun)), backend="interpreter")(x)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_vmap_of_grad_of_checkpoint_with_a_scan():
    xs = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, 0.3]])
    got = tr.vmap(tr.grad(tr.checkpoint(_cumsum_sin)))(xs)
    np.testing.assert_allclose(got, np.stack([tr.grad(_cumsum_sin)(x) for x in xs]),
                               rtol=1e-12)


def test_clip_gradient_at_its_bounds_follows_jnp_clip():
    # jnp.clip is maximum then minimum, so a tie shares the derivative (1/2 each)
    x = np.array([0.5, -1.0, 2.0, 0.3])
    whole = tr.grad(lambda x: tnp.clip(x, x.min(), x.max()).sum())(x)
    np.testing.assert_allclose(whole, np.ones(4))  # clip(x, min(x), max(x)) == x
    at_bound = tr.grad(lambda x: tnp.clip(x, 0.0, 1.0).sum())(np.array([0.0, 1.0, 0.5, 2.0]))
    np.testing.assert_allclose(at_bound, [0.5, 0.5, 1.0, 0.0])


def test_clip_values_unchanged():
    x = np.array([-1.0, 5.0, 9.0, np.nan])
    np.testing.assert_array_equal(tnp.clip(x, 0, 6), np.clip(x, 0, 6))
    np.testing.assert_array_equal(tnp.clip(x, 6, 2), np.clip(x, 6, 2))  # a_min > a_max
    np.testing.assert_array_equal(tr.jit(lambda x: tnp.clip(x, 0, 6))(x), np.clip(x, 0, 6))
    ints = np.array([-3, 2, 7])
    assert tnp.clip(ints, 0, 5).dtype == np.clip(ints, 0, 5).dtype

"""stop_gradient, checkpoint, custom_jvp and custom_vjp (`tracer.transforms`) in
forward, reverse and higher order, `lower_ad_ops`, and the API's argument handling
and errors (integer inputs, non-scalar outputs, bad argnums, bad custom rules)."""

from __future__ import annotations

import numpy as np
import pytest

import tracer
import tracer.numpy as tnp
from tracer import ops
from tracer.core import ShapedArray, count_eqns
from tracer.tracing import trace_flat
from tracer.transforms import (checkpoint, custom_jvp, custom_vjp, grad, jacfwd, jvp,
                               lower_ad_ops, stop_gradient, vjp, vjp_graph, vmap)


def rand(seed, *shape):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


# ------------------------------------------------------- stop_gradient & checkpoint
def test_stop_gradient():
    assert np.isclose(grad(lambda x: x * stop_gradient(x))(3.0), 3.0)
    tree = stop_gradient({"a": np.ones(2), "n": np.int32(3)})
    assert tree["n"] == 3
    assert np.isclose(tracer.jit(grad(lambda x: x * stop_gradient(x * x)))(2.0), 4.0)


def _residuals(f, *avals):
    g, _ = trace_flat(lambda *xs: [f(*xs)], list(avals))
    return vjp_graph(g, [True] * len(avals)).num_res


def test_checkpoint_stores_inputs_and_recomputes():
    def block(x):
        return tnp.sin(tnp.sin(tnp.sin(x)))

    f = lambda x: block(block(x)).sum()  # noqa: E731
    r = lambda x: checkpoint(block)(checkpoint(block)(x)).sum()  # noqa: E731
    s = ShapedArray((5,), np.float64)
    assert _residuals(r, s) < _residuals(f, s)
    x = rand(0, 5)
    np.testing.assert_allclose(grad(r)(x), grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(tracer.jit(grad(r))(x), grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(grad(lambda x: grad(r)(x).sum())(x),
                               grad(lambda x: grad(f)(x).sum())(x), rtol=1e-10)
    np.testing.assert_allclose(jvp(r, (x,), (np.ones(5),))[1], jvp(f, (x,), (np.ones(5),))[1])


def test_checkpoint_static_argnums_and_vmap():
    f = checkpoint(lambda x, n: x ** n, static_argnums=1)
    assert np.isclose(grad(lambda x: f(x, 3))(2.0), 12.0)
    np.testing.assert_allclose(vmap(grad(lambda x: f(x, 2)))(np.arange(3.0)), 2 * np.arange(3.0))


# ---------------------------------------------------------------------- custom_jvp
@custom_jvp
def soft_clip(x):
    return tnp.tanh(x)


@soft_clip.defjvp
def _soft_clip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return soft_clip(x), t * 0.5  # a deliberately "wrong" derivative we can detect


def test_custom_jvp_forward_reverse_and_higher_order():
    x = rand(0, 3)
    np.testing.assert_allclose(soft_clip(x), np.tanh(x))
    np.testing.assert_allclose(jvp(soft_clip, (x,), (np.ones(3),))[1], 0.5)
    np.testing.assert_allclose(grad(lambda x: soft_clip(x).sum())(x), 0.5)
    np.testing.assert_allclose(tracer.jit(grad(lambda x: soft_clip(x).sum()))(x), 0.5)
    assert grad(grad(lambda x: soft_clip(x)))(0.3) == 0.0
    np.testing.assert_allclose(vmap(grad(soft_clip))(x), 0.5)
    np.testing.assert_allclose(tracer.jit(soft_clip)(x), np.tanh(x))


def test_custom_jvp_nondiff_argnums_and_closure():
    def make(scale):
        f = custom_jvp(lambda n, x: x * n, nondiff_argnums=(0,))
        f.defjvp(lambda n, p, t: (f(n, p[0]), t[0] * n * scale))
        return f

    assert np.isclose(grad(lambda x: make(10.0)(3.0, x))(1.0), 30.0)


# ---------------------------------------------------------------------- custom_vjp
@custom_vjp
def clip_gradient(x, lo):
    return x * 1.0


def _clip_fwd(x, lo):
    return clip_gradient(x, lo), lo


def _clip_bwd(lo, g):
    return (tnp.maximum(g, lo), None)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_reverse_mode():
    x = rand(0, 4)
    g = grad(lambda x: (clip_gradient(x, -0.5) * np.array([1.0, -1.0, 2.0, -2.0])).sum())(x)
    np.testing.assert_allclose(g, [1.0, -0.5, 2.0, -0.5])
    gj = tracer.jit(grad(lambda x, lo: (clip_gradient(x, lo) * -3.0).sum(), argnums=(0, 1)))
    gx, glo = gj(x, 0.25)
    np.testing.assert_allclose(gx, 0.25)
    assert glo == 0.0
    np.testing.assert_allclose(vmap(grad(lambda x: clip_gradient(x, 0.1) * -1.0))(x), 0.1)
    np.testing.assert_allclose(grad(lambda x: vmap(lambda a: clip_gradient(a, 0.1) * -1.0)(x)
                                    .sum())(x), 0.1)


def test_custom_vjp_second_order_through_bwd():
    f = custom_vjp(lambda x: ops.sin(x))
    f.defvjp(lambda x: (f(x), x), lambda x, g: (g * ops.cos(x) * 3.0,))
    assert np.isclose(grad(f)(0.2), 3 * np.cos(0.2))
    assert np.isclose(grad(grad(f))(0.2), -3 * np.sin(0.2))


def test_custom_vjp_forward_mode_is_read_off_bwd():
    f = custom_vjp(lambda x: tnp.sin(x) * 2.0)
    f.defvjp(lambda x: (f(x), tnp.cos(x)), lambda c, g: (g * c * 2.0,))
    x, v = rand(0, 3), rand(1, 3)
    np.testing.assert_allclose(jvp(f, (x,), (v,))[1], 2 * np.cos(x) * v, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(f)(x), np.diag(2 * np.cos(x)), rtol=1e-12)


def test_lower_ad_ops_leaves_plain_graphs():
    def f(x):
        return checkpoint(lambda a: soft_clip(a) * 2.0)(stop_gradient(x)) + clip_gradient(x, 0.0)

    lowered = tracer.jit(f).lower(rand(0, 3))
    plain = lower_ad_ops(lowered.graph)
    names = set(count_eqns(plain).by_op)
    assert not names & {"checkpoint", "custom_jvp_call", "custom_vjp_call", "stop_gradient"}
    x = rand(0, 3)
    np.testing.assert_allclose(tracer.interpret.eval_graph(plain, [x])[0], f(x))


# -------------------------------------------------------------------------- errors
def test_grad_rejects_integer_inputs_naming_the_argument():
    with pytest.raises(TypeError, match=r"argument 1 \(n\).*int32"):
        grad(lambda x, n: x * n, argnums=(0, 1))(1.0, np.int32(2))
    with pytest.raises(tracer.TracerTypeError, match=r"\['b'\].*bool"):
        grad(lambda p: p["a"])({"a": 1.0, "b": np.bool_(True)})


def test_grad_rejects_non_scalar_outputs_naming_the_shape():
    with pytest.raises(TypeError, match=r"f64\[3\]"):
        grad(lambda x: x * 2.0)(np.ones(3))
    with pytest.raises(TypeError, match="real float scalar"):
        grad(lambda x: (x, x))(1.0)
    with pytest.raises(TypeError, match="s64"):
        grad(lambda x: np.int64(1))(1.0)


def test_api_argument_errors():
    with pytest.raises(TypeError, match="argnums"):
        grad(lambda x: x, argnums="0")
    with pytest.raises(ValueError, match="out of range"):
        grad(lambda x: x, argnums=3)(1.0)
    with pytest.raises(TypeError, match="pair"):
        grad(lambda x: x, has_aux=True)(1.0)
    with pytest.raises(TypeError, match="structure"):
        jvp(lambda x, y: x * y, (1.0, 2.0), (1.0,))
    with pytest.raises(TypeError, match="tangents leaf 0"):
        jvp(lambda x: x, (np.ones(3),), (np.ones(2),))
    _, f_vjp = vjp(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(TypeError, match="cotangent"):
        f_vjp(np.ones(4))


def test_custom_rule_errors():
    f = custom_vjp(lambda x, y: x * y)
    with pytest.raises(TypeError, match="defvjp"):
        grad(f)(1.0, 2.0)
    f.defvjp(lambda x, y: (f(x, y), None), lambda r, g: (g,))
    with pytest.raises(TypeError, match="2 cotangents"):
        grad(f)(1.0, 2.0)
    h = custom_jvp(lambda x: x)
    h.defjvp(lambda p, t: p[0])
    with pytest.raises(TypeError, match="primal_out, tangent_out"):
        grad(h)(1.0)


# ------------------------------------------------------------------ valid calls
def test_checkpoint_passes_keyword_arguments():
    x = np.arange(3.0)
    f = tracer.checkpoint(lambda x, s=1.0: (ops.sin(x) * s).sum())
    np.testing.assert_allclose(tracer.grad(lambda x: f(x, s=2.0))(x), 2 * np.cos(x))
    np.testing.assert_allclose(f(x, s=3.0), 3 * np.sin(x).sum())


def test_eager_transformation_results_do_not_alias_arguments():
    a = np.ones((2, 3))
    t = np.full((2, 3), 2.0)
    const = np.ones(3)
    results = [
        tracer.vmap(lambda x: x)(a), tracer.vmap(lambda x: x.reshape(3))(a),
        tracer.vmap(lambda x: x.T)(a), *tracer.jvp(lambda x: x, (a,), (t,)),
        tracer.vjp(lambda x: x, a)[0], tracer.vjp(lambda x: x, a)[1](t)[0],
        tracer.jvp(lambda x: const, (a,), (t,))[0],
        tracer.grad(lambda x: (x.sum(), x), has_aux=True)(a)[1],
    ]
    for r in results:
        assert not any(np.shares_memory(r, x) for x in (a, t, const))


def test_clip_gradient_at_its_bounds_follows_jnp_clip():
    # jnp.clip is maximum then minimum, so a tie shares the derivative (1/2 each)
    x = np.array([0.5, -1.0, 2.0, 0.3])
    whole = tracer.grad(lambda x: tnp.clip(x, x.min(), x.max()).sum())(x)
    np.testing.assert_allclose(whole, np.ones(4))  # clip(x, min(x), max(x)) == x
    at_bound = tracer.grad(lambda x: tnp.clip(x, 0.0, 1.0).sum())(np.array([0.0, 1.0, 0.5, 2.0]))
    np.testing.assert_allclose(at_bound, [0.5, 0.5, 1.0, 0.0])

"""Forward and reverse mode (`tracer.transforms`): jvp / vjp / grad against central
finite differences in float64, ⟨u, J v⟩ = ⟨Jᵀ u, v⟩, second order and jacobians,
composition with jit and vmap, graph size after the passes, and an MLP trained with
jit(value_and_grad) against a hand-written NumPy backward pass."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer
import tracer.numpy as tnp
from tracer import ops
from tracer.core import ShapedArray, count_eqns
from tracer.passes import optimize
from tracer.passes.dce import dce
from tracer.tracing import trace_flat
from tracer.transforms import (grad, hessian, jacfwd, jacrev, jvp, jvp_graph, linearize,
                               transpose_graph, value_and_grad, vjp, vjp_graph, vmap)

BACKENDS = [b for b in ("interpreter", "cpu") if b in tracer.devices()]
EPS = 1e-6


def fd_jvp(f, xs, vs):
    """Central difference of f at xs along vs (tuples of float64 arrays)."""
    plus = f(*[x + EPS * v for x, v in zip(xs, vs)])
    minus = f(*[x - EPS * v for x, v in zip(xs, vs)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * EPS)


def fd_grad(f, x):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = 1.0
        g[i] = fd_jvp(f, (x,), (e,))
    return g


def composite(x, y):
    """Element-wise math, broadcasting, a matmul and reductions together."""
    h = tnp.tanh(x @ y + 0.5) * tnp.exp(-x.sum(axis=1, keepdims=True) / 4)
    return tnp.sin(h) + h * h


def rand(seed, *shape):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


# ------------------------------------------------------------------- forward mode
def test_jvp_matches_finite_differences():
    x, y, vx, vy = rand(0, 3, 4), rand(1, 4, 2), rand(2, 3, 4), rand(3, 4, 2)
    out, t = jvp(composite, (x, y), (vx, vy))
    np.testing.assert_allclose(out, composite(x, y))
    np.testing.assert_allclose(t, fd_jvp(composite, (x, y), (vx, vy)), rtol=1e-6, atol=1e-8)


def test_jvp_pytrees_and_int_inputs():
    def f(p, n):
        return {"a": p["w"] * p["b"][0], "n": n + 1}

    p = {"w": rand(0, 3), "b": [2.0]}
    out, t = jvp(f, (p, np.int32(4)), ({"w": np.ones(3), "b": [1.0]}, np.int32(0)))
    np.testing.assert_allclose(t["a"], 2.0 + p["w"])
    assert out["n"] == 5 and t["n"] == 0


def test_jvp_symbolic_zero_tangents_write_no_tangent_code():
    g, _ = trace_flat(lambda x, y: [ops.sin(x) * ops.cos(y)],
                      [ShapedArray((3,), np.float64)] * 2)
    jg, out_nz = jvp_graph(g, [True, False])
    assert out_nz == [True]
    names = [e.op.name for e in jg.eqns]
    assert names.count("sin") == 1 and names.count("cos") == 2  # d sin, no d cos
    jg0, out_nz0 = jvp_graph(g, [False, False])
    assert out_nz0 == [False] and len(jg0.eqns) == len(g.eqns)


def test_linearize_reuses_residuals():
    x, v = rand(0, 3, 4), rand(1, 3, 4)
    y = rand(2, 4, 2)
    out, f_jvp = linearize(composite, x, y)
    np.testing.assert_allclose(out, composite(x, y))
    np.testing.assert_allclose(f_jvp(v, np.zeros_like(y)), jvp(composite, (x, y), (v, 0 * y))[1])


# ------------------------------------------------------------------- reverse mode
def test_grad_matches_finite_differences():
    x, y = rand(0, 3, 4), rand(1, 4, 2)
    f = lambda x, y: composite(x, y).sum()  # noqa: E731
    gx, gy = grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, fd_grad(lambda a: f(a, y), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, fd_grad(lambda b: f(x, b), y), rtol=1e-6, atol=1e-8)


@settings(max_examples=15)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**16))
def test_vjp_is_the_transpose_of_jvp(m, n, seed):
    x, y = rand(seed, m, n), rand(seed + 1, n, 3)
    u, vx, vy = rand(seed + 2, m, 3), rand(seed + 3, m, n), rand(seed + 4, n, 3)
    out, f_vjp = vjp(composite, x, y)
    ux, uy = f_vjp(u)
    _, t = jvp(composite, (x, y), (vx, vy))
    np.testing.assert_allclose(np.vdot(u, t), np.vdot(ux, vx) + np.vdot(uy, vy), rtol=1e-9)


def test_vjp_has_aux_and_int_primals():
    def f(x, n):
        return ops.mul(x, x), {"n": n}

    out, f_vjp, aux = vjp(f, np.arange(3.0), np.int64(7), has_aux=True)
    ct_x, ct_n = f_vjp(np.ones(3))
    np.testing.assert_allclose(ct_x, 2 * np.arange(3.0))
    assert aux == {"n": 7} and ct_n == 0 and ct_n.dtype == np.int64


def test_grad_argnums_pytrees_has_aux_and_kwargs():
    def loss(params, x, scale=1.0):
        y = tnp.tanh(x @ params["w"] + params["b"])
        return (y * y).sum() * scale, y.shape

    params = {"w": rand(0, 3, 2), "b": rand(1, 2)}
    x = rand(2, 5, 3)
    (value, shape), g = value_and_grad(loss, has_aux=True)(params, x, scale=2.0)
    assert shape == (5, 2) and set(g) == {"w", "b"}
    flat = lambda w: loss({"w": w, "b": params["b"]}, x, 2.0)[0]  # noqa: E731
    np.testing.assert_allclose(g["w"], fd_grad(flat, params["w"]), rtol=1e-6)
    g_x, aux = grad(loss, argnums=1, has_aux=True)(params, x)
    assert aux == (5, 2) and g_x.shape == x.shape
    g_tuple = grad(lambda a, b: (a * b).sum(), argnums=(1,))(np.ones(2), np.ones(2))
    assert isinstance(g_tuple, tuple) and len(g_tuple) == 1


def test_grad_of_python_scalars_and_negative_argnums():
    assert np.isclose(grad(lambda x, y: x * y * y, argnums=-1)(3.0, 2.0), 12.0)
    assert np.isclose(grad(lambda x: x)(1.0), 1.0)
    assert grad(lambda x: 3.0)(1.0) == 0.0


def test_second_order_and_hessian():
    f = lambda x: (tnp.sin(x) * x[::-1]).sum()  # noqa: E731
    x = rand(0, 4)
    gg = grad(lambda x: grad(f)(x).sum())(x)
    np.testing.assert_allclose(gg, fd_grad(lambda a: grad(f)(a).sum(), x), rtol=1e-6)
    h = hessian(f)(x)
    fd_h = np.stack([fd_grad(lambda a: grad(f)(a)[i], x) for i in range(4)])
    np.testing.assert_allclose(h, fd_h, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(h, h.T, atol=1e-12)


def test_jacobians_agree_and_nest_like_jax():
    def f(x, y):
        return {"p": tnp.sin(x) * y.sum(), "q": x[:2] * 2.0}

    x, y = rand(0, 3), rand(1, 2, 2)
    jf = jacfwd(f, argnums=(0, 1))(x, y)
    jr = jacrev(f, argnums=(0, 1))(x, y)
    assert jf["p"][0].shape == (3, 3) and jf["p"][1].shape == (3, 2, 2)
    assert jf["q"][1].shape == (2, 2, 2)
    for k in "pq":
        for i in range(2):
            np.testing.assert_allclose(jf[k][i], jr[k][i], atol=1e-12)
    np.testing.assert_allclose(jf["p"][0], np.diag(np.cos(x) * y.sum()), atol=1e-12)


# -------------------------------------------------------------------- composition
@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_composes_with_grad_in_any_order(backend):
    f = lambda x, y: composite(x, y).sum()  # noqa: E731
    x, y = rand(0, 3, 4), rand(1, 4, 2)
    expected = grad(f)(x, y)
    np.testing.assert_allclose(tracer.jit(grad(f), backend=backend)(x, y), expected, rtol=1e-12)
    np.testing.assert_allclose(grad(tracer.jit(f, backend=backend))(x, y), expected, rtol=1e-12)
    gg = tracer.jit(grad(lambda x: grad(f)(x, y).sum()), backend=backend)(x)
    np.testing.assert_allclose(gg, grad(lambda x: grad(f)(x, y).sum())(x), rtol=1e-10)


def test_vmap_of_grad_and_jit_of_vmap_of_grad():
    f = lambda x: (tnp.sin(x) * x).sum()  # noqa: E731
    xs = rand(0, 5, 3)
    expected = np.stack([grad(f)(x) for x in xs])
    np.testing.assert_allclose(vmap(grad(f))(xs), expected, rtol=1e-12)
    np.testing.assert_allclose(tracer.jit(vmap(grad(f)))(xs), expected, rtol=1e-12)
    np.testing.assert_allclose(vmap(jacrev(f))(xs), expected, rtol=1e-12)


def test_nested_grad_closing_over_outer_variable():
    # d/dx [d/dy (x * y^2)](y=1) = d/dx 2x = 2
    assert np.isclose(grad(lambda x: grad(lambda y: x * y * y)(1.0))(3.0), 2.0)


# ------------------------------------------------------------------- graph quality
def _mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = tnp.tanh(x @ w1 + b1)
    out = h @ w2 + b2
    return tnp.mean((out - y) ** 2)


def _mlp_data(seed=0, n=32, d=6, hidden=16, k=3):
    rng = np.random.default_rng(seed)
    params = [(rng.normal(size=(d, hidden)) / np.sqrt(d), np.zeros(hidden)),
              (rng.normal(size=(hidden, k)) / np.sqrt(hidden), np.zeros(k))]
    x = rng.normal(size=(n, d))
    y = np.sin(x[:, :k]) + 0.1 * rng.normal(size=(n, k))
    return params, x, y


def test_mlp_gradient_graph_is_at_most_three_times_the_forward():
    params, x, y = _mlp_data()
    fwd = optimize(tracer.jit(_mlp_loss).lower(params, x, y).graph)
    bwd = optimize(tracer.jit(value_and_grad(_mlp_loss)).lower(params, x, y).graph)
    assert count_eqns(bwd).eqns <= 3 * count_eqns(fwd).eqns, (fwd, bwd)


def test_backward_graphs_have_no_dead_code():
    params, x, y = _mlp_data()
    leaves = [params[0][0], params[0][1], params[1][0], params[1][1], x, y]
    g, _ = trace_flat(lambda w1, b1, w2, b2, x, y: [_mlp_loss([(w1, b1), (w2, b2)], x, y)],
                      [ShapedArray(np.shape(a), np.float64) for a in leaves])
    v = vjp_graph(g, [True, False, True, False, False, False])  # no cotangents for biases
    assert len(dce(v.backward).eqns) == len(v.backward.eqns)
    assert len(dce(v.forward).eqns) == len(v.forward.eqns)
    assert len(v.backward.outputs) == 2


@pytest.mark.parametrize("y", [0.0, 1.0, 2.0, 3.0, 0.5, -1.5])
def test_pow_by_a_constant_differentiates_to_a_lean_graph(y):
    """d x**y / dx for a constant y is y * x**(y-1) computed at trace time (0 for y = 0,
    1 for y = 1, 2x for y = 2): no select between broadcast constants, no x**1."""
    x = np.array([0.0, 0.3, 1.7, 4.0, np.inf]) if y >= 1 else np.array([0.3, 1.7, 4.0])
    f = lambda x: ops.pow(x, y)  # noqa: E731
    got = tracer.vmap(grad(f))(x)
    with np.errstate(all="ignore"):
        want = np.zeros_like(x) if y == 0 else y * x ** (y - 1)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    text = tracer.jit(grad(f)).lower(x[1]).compile().as_text()  # after the passes
    assert "select" not in text and "compare" not in text
    assert text.count("power(") == (0 if y in (0.0, 1.0, 2.0) else 1)
    h = 1e-6
    fd = (f(x[1:3] + h) - f(x[1:3] - h)) / (2 * h)
    np.testing.assert_allclose(got[1:3], fd, rtol=1e-6)
    np.testing.assert_allclose(jvp(f, (x,), (np.ones_like(x),))[1], want, rtol=1e-13)


def test_transformed_eqns_carry_the_line_of_the_eqn_they_stand_for():
    def loss(w):
        h = tnp.tanh(w)  # the line every tangent / cotangent eqn of tanh points at
        return tnp.sum(h ** 2)
    line = loss.__code__.co_firstlineno + 1
    for transform in (grad, lambda f: lambda w: jvp(f, (w,), (w,))[1],
                      lambda f: tracer.vmap(grad(f))):
        graph = tracer.jit(transform(loss)).lower(rand(5, 4, 3)).graph
        tanh_lines = {e.source.line for e in graph.eqns if e.op.name == "tanh"}
        derivative = [e for e in graph.eqns if e.op.name == "sub"]  # 1 - tanh(w)**2
        assert tanh_lines == {line} and derivative
        assert all(e.source.line == line for e in derivative)


def test_transpose_graph_inner_product_identity():
    a = rand(0, 3, 4)

    def linear(x, y):
        return [ops.dot_general(a, x, (((1,), (0,)), ((), ()))) * 2.0 - y, ops.neg(x)]

    avals = [ShapedArray((4, 2), np.float64), ShapedArray((3, 2), np.float64)]
    g, _ = trace_flat(linear, avals)
    gt = transpose_graph(g, [True, True])
    x, y, u0, u1 = rand(1, 4, 2), rand(2, 3, 2), rand(3, 3, 2), rand(4, 4, 2)
    l0, l1 = linear(x, y)
    ct_x, ct_y = tracer.interpret.eval_graph(gt, [u0, u1])
    np.testing.assert_allclose(np.vdot(u0, l0) + np.vdot(u1, l1),
                               np.vdot(ct_x, x) + np.vdot(ct_y, y), rtol=1e-12)


# ----------------------------------------------------------------- mlp end to end
def _numpy_sgd(params, x, y, steps, lr):
    (w1, b1), (w2, b2) = [(w.copy(), b.copy()) for w, b in params]
    for _ in range(steps):
        pre = x @ w1 + b1
        h = np.tanh(pre)
        out = h @ w2 + b2
        d_out = 2 * (out - y) / out.size
        d_w2, d_b2 = h.T @ d_out, d_out.sum(0)
        d_pre = (d_out @ w2.T) * (1 - h * h)
        d_w1, d_b1 = x.T @ d_pre, d_pre.sum(0)
        w1, b1, w2, b2 = w1 - lr * d_w1, b1 - lr * d_b1, w2 - lr * d_w2, b2 - lr * d_b2
    out = np.tanh(x @ w1 + b1) @ w2 + b2
    return np.mean((out - y) ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_trains_like_a_hand_written_backward_pass(backend):
    params, x, y = _mlp_data()
    step = tracer.jit(value_and_grad(_mlp_loss), backend=backend)
    first = None
    for _ in range(300):
        loss, g = step(params, x, y)
        first = loss if first is None else first
        params = [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, g)]
    final = _mlp_loss(params, x, y)
    expected = _numpy_sgd(_mlp_data()[0], x, y, 300, 0.1)
    assert final < 0.5 * first
    np.testing.assert_allclose(final, expected, rtol=1e-9)

"""Differentiation through control flow: cond / switch, scan (an RNN), fori_loop,
while_loop with a data-dependent trip count (reverse mode beyond JAX), call, and
their nesting and composition with jit, vmap and checkpoint — all against central
finite differences in float64."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tracer
import tracer.numpy as tnp
from tracer import ops
from tracer.core import ShapedArray, count_eqns
from tracer.tracing import trace_flat
from tracer.transforms import checkpoint, grad, hessian, jvp, jvp_graph, linearize, vjp, vmap
from tracer.transforms import while_rules

EPS = 1e-6


def fd_grad(f, x):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = EPS
        g[i] = (f(x + e) - f(x - e)) / (2 * EPS)
    return g


def check_grad(f, x, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(grad(f)(x), fd_grad(f, x), rtol=rtol, atol=atol)


def rand(seed, *shape):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


# --------------------------------------------------------------------- cond/switch
def piecewise(x):
    return ops.cond(x.sum() > 0, lambda v: tnp.sin(v) * v, lambda v: tnp.cos(v) + 1.0, x).sum()


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_gradient_follows_the_taken_branch(sign):
    x = sign * np.abs(rand(0, 3)) + 0.1 * sign
    check_grad(piecewise, x)
    np.testing.assert_allclose(tracer.jit(grad(piecewise))(x), grad(piecewise)(x), rtol=1e-12)


def test_cond_with_closure_and_vjp_jvp_consistency():
    w = rand(1, 3)

    def f(x):
        return ops.cond(x[0] > 0, lambda v: v * w, lambda v: v * v, x)

    x, u, v = rand(0, 3) + 1.5, rand(2, 3), rand(3, 3)
    _, f_vjp = vjp(f, x)
    (ct,) = f_vjp(u)
    np.testing.assert_allclose(np.vdot(ct, v), np.vdot(u, jvp(f, (x,), (v,))[1]), rtol=1e-12)
    check_grad(lambda x: (f(x) * x).sum(), x - 3.0)


@pytest.mark.parametrize("index", [-1, 0, 1, 2, 7])
def test_switch_gradient_out_of_range_runs_the_last_branch(index):
    branches = [lambda v: v * 2.0, lambda v: tnp.exp(v), lambda v: v * v * v]
    f = lambda x: ops.switch(np.int32(index), branches, x).sum()  # noqa: E731
    x = rand(0, 2)
    k = index if 0 <= index < 3 else 2
    expected = [np.full(2, 2.0), np.exp(x), 3 * x * x][k]
    np.testing.assert_allclose(grad(f)(x), expected, rtol=1e-12)


def test_cond_second_order():
    f = lambda x: ops.cond(x > 0, lambda v: v * v * v, lambda v: -v, x)  # noqa: E731
    assert np.isclose(grad(grad(f))(2.0), 12.0)
    assert grad(grad(f))(-2.0) == 0.0


# ------------------------------------------------------------------------------ scan
def rnn_loss(params, xs, reverse=False):
    w, u, h0 = params

    def step(h, x):
        h = tnp.tanh(h @ w + x @ u)
        return h, (h * h).sum()

    h, ys = ops.scan(step, h0, xs, reverse=reverse)
    return ys.sum() + (h * h).sum()


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rnn_gradient(reverse):
    w, u, h0, xs = rand(0, 4, 4) * 0.5, rand(1, 3, 4), rand(2, 2, 4), rand(3, 5, 2, 3)
    params = (w, u, h0)
    loss = functools.partial(rnn_loss, reverse=reverse)
    gw, gu, gh0 = grad(loss)(params, xs)
    np.testing.assert_allclose(gw, fd_grad(lambda a: loss((a, u, h0), xs), w),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gu, fd_grad(lambda a: loss((w, a, h0), xs), u),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gh0, fd_grad(lambda a: loss((w, u, a), xs), h0),
                               rtol=1e-6, atol=1e-8)
    gxs = grad(loss, argnums=1)(params, xs)
    np.testing.assert_allclose(gxs, fd_grad(lambda a: loss(params, a), xs), rtol=1e-6,
                               atol=1e-8)
    for a, b in zip(tracer.jit(grad(loss))(params, xs), (gw, gu, gh0)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_scan_stacks_only_what_the_backward_pass_needs():
    """Consts (the weights) and xs slices are not restacked per step."""
    w, u, h0, xs = rand(0, 4, 4), rand(1, 3, 4), rand(2, 2, 4), rand(3, 5, 2, 3)
    lin = tracer.transforms.linearize_graph
    g, _ = trace_flat(lambda w, u, h0, xs: [rnn_loss((w, u, h0), xs)],
                      [ShapedArray(np.shape(a), np.float64) for a in (w, u, h0, xs)])
    res = lin(g, [True] * 4).primal.out_avals[1:]
    assert not any(a.shape in ((5, 4, 4), (5, 3, 4)) for a in res), res  # weights: once
    assert [a.shape for a in res].count((5, 2, 3)) <= 1, res  # xs: passed as they are
    assert all(a.shape in ((4, 4), (3, 4), (2, 4), (5, 2, 3), (5, 2, 4)) for a in res), res


def test_scan_jvp_linearize_and_hessian():
    def f(x):
        c, ys = ops.scan(lambda c, xi: (tnp.sin(c) * xi, c * c), 0.5, x)
        return c + (ys * ys).sum()

    x, v = rand(0, 4) + 1.0, rand(1, 4)
    t = jvp(f, (x,), (v,))[1]
    np.testing.assert_allclose(t, (f(x + EPS * v) - f(x - EPS * v)) / (2 * EPS), rtol=1e-6)
    np.testing.assert_allclose(linearize(f, x)[1](v), t, rtol=1e-12)
    h = hessian(f)(x)
    fd_h = np.stack([fd_grad(lambda a: grad(f)(a)[i], x) for i in range(4)])
    np.testing.assert_allclose(h, fd_h, rtol=1e-5, atol=1e-7)


def test_scan_with_integer_carry_and_checkpointed_body():
    def f(x):
        def step(c, xi):
            n, acc = c
            return (n + 1, checkpoint(lambda a, b: tnp.sin(a * b))(acc, xi)), acc

        (n, acc), ys = ops.scan(step, (np.int64(0), 1.0), x)
        return acc + ys.sum()

    check_grad(f, rand(0, 4) + 0.5)


# ------------------------------------------------------------------------ fori_loop
def test_fori_loop_with_static_bounds_becomes_a_scan():
    def f(x):
        return ops.fori_loop(0, 5, lambda i, c: tnp.sin(c) * x + i, x).sum()

    g, _ = trace_flat(lambda x: [f(x)], [ShapedArray((3,), np.float64)])
    ops_used = count_eqns(jvp_graph(g, [True])[0]).by_op
    assert "scan" in ops_used and "while" not in ops_used
    check_grad(f, rand(0, 3))


def test_fori_loop_with_traced_bounds():
    def f(x, n):
        return ops.fori_loop(0, n, lambda i, c: c * x, 1.0)

    g = tracer.jit(grad(f))(1.3, 4)
    assert np.isclose(g, 4 * 1.3 ** 3)


# ----------------------------------------------------------------------- while_loop
def grow(x):
    """Multiply by x until past 10: the trip count depends on x."""
    return ops.while_loop(lambda c: c < 10.0, lambda c: c * x, 1.0)


@pytest.mark.parametrize("x", [1.3, 1.7, 2.5, 11.0])
def test_while_loop_gradient_with_data_dependent_trip_count(x):
    n = int(np.ceil(np.log(10.0) / np.log(x)))
    assert np.isclose(grad(grow)(x), n * x ** (n - 1))
    assert np.isclose(tracer.jit(grad(grow))(x), n * x ** (n - 1))


def test_while_loop_zero_trips_passes_the_cotangent_through():
    def f(x):
        return ops.while_loop(lambda c: c[0] < 0.0, lambda c: (c[0] * 2.0, c[1]), (x, x))[1]

    assert grad(f)(1.0) == 1.0


def test_while_loop_several_carries_consts_and_vector_state():
    a = rand(0, 3)

    def f(x):
        def body(c):
            i, v, s = c
            v = tnp.sin(v) * x + a
            return i + 1, v, s + (v * v).sum()

        i, v, s = ops.while_loop(lambda c: (c[2] < 4.0) & (c[0] < 50), body, (0, x, 0.0))
        return s + v.sum()

    x = rand(1, 3) + 0.5
    check_grad(f, x)
    _, f_vjp = vjp(lambda x: f(x) * 1.0, x)
    v = rand(2, 3)
    np.testing.assert_allclose(np.vdot(f_vjp(1.0)[0], v), jvp(f, (x,), (v,))[1], rtol=1e-10)


def test_while_loop_long_loop_thins_its_checkpoints(monkeypatch):
    monkeypatch.setattr(while_rules, "MAX_CHECKPOINTS", 4)

    def f(x):
        def body(c):
            k, v = c
            return k + 1, v + 0.3 * (1.5 + tnp.sin(v * x))

        return ops.while_loop(lambda c: c[1].sum() < 30.0, body, (0, x))[1].sum()

    x = np.array([0.9, 1.1])
    steps, v = 0, x
    while v.sum() < 30.0:
        steps, v = steps + 1, v + 0.3 * (1.5 + np.sin(v * x))
    assert steps > 8 * while_rules.MAX_CHECKPOINTS  # the buffer is thinned several times
    check_grad(f, x, rtol=1e-5)


def test_while_loop_second_order():
    # 4 steps of c -> c * x from 1: x**4; d2 = 12 x**2
    f = lambda x: ops.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * x),  # noqa: E731
                                 (np.int64(0), 1.0))[1]
    assert np.isclose(grad(grad(f))(1.5), 12 * 1.5 ** 2)
    n = 5  # grow(1.7) takes 5 steps
    assert np.isclose(grad(grad(grow))(1.7), n * (n - 1) * 1.7 ** (n - 2))
    assert np.isclose(tracer.jit(grad(grad(grow)))(1.7), n * (n - 1) * 1.7 ** (n - 2))


def test_vmap_of_grad_through_while_and_scan():
    xs = np.array([1.3, 1.7, 2.5])
    np.testing.assert_allclose(vmap(grad(grow))(xs), [grad(grow)(x) for x in xs], rtol=1e-12)
    f = lambda x: ops.scan(lambda c, _: (tnp.sin(c) * x, c), x, None, length=3)[0]  # noqa: E731
    np.testing.assert_allclose(vmap(grad(f))(xs), [grad(f)(x) for x in xs], rtol=1e-12)


# ------------------------------------------------------------------------- call
def test_call_and_nested_control_flow():
    def inner(v):
        return ops.call(lambda a: tnp.exp(a) * a, v)

    def f(x):
        def step(c, xi):
            c = ops.cond(xi > 0, lambda a: inner(a), lambda a: a * xi, c)
            return c, c

        c, ys = ops.scan(step, x[0], x)
        return c + ys.sum()

    check_grad(f, np.array([0.3, -0.4, 0.2]))
    check_grad(lambda x: inner(x).sum(), rand(0, 3))
    np.testing.assert_allclose(tracer.jit(grad(f))(np.array([0.3, -0.4, 0.2])),
                               grad(f)(np.array([0.3, -0.4, 0.2])), rtol=1e-12)


@pytest.mark.parametrize("fun", [piecewise, lambda x: rnn_loss((x[:4, :4], x[:3, :4], x[:2]),
                                                              x[None, :2, :3].repeat(3, 0)),
                                 lambda x: grow(x[0, 0] + 2.0) * x.sum()])
def test_transformed_graphs_typecheck(fun):
    from tracer.core import typecheck
    from tracer.transforms import linearize_graph, vjp_graph
    g, _ = trace_flat(lambda x: [fun(x)], [ShapedArray((4, 4), np.float64)])
    typecheck(jvp_graph(g, [True])[0])
    lin = linearize_graph(g, [True])
    typecheck(lin.primal)
    typecheck(lin.linear)
    v = vjp_graph(g, [True])
    typecheck(v.forward)
    typecheck(v.backward)


# ------------------------------------------------------------------ checkpoint of a loop

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
    expected = tracer.grad(fun)(x)
    np.testing.assert_allclose(tracer.grad(tracer.checkpoint(fun))(x), expected, rtol=1e-12)
    got = tracer.jit(tracer.grad(tracer.checkpoint(fun)), backend="interpreter")(x)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_vmap_of_grad_of_checkpoint_with_a_scan():
    xs = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, 0.3]])
    got = tracer.vmap(tracer.grad(tracer.checkpoint(_cumsum_sin)))(xs)
    np.testing.assert_allclose(got, np.stack([tracer.grad(_cumsum_sin)(x) for x in xs]),
                               rtol=1e-12)

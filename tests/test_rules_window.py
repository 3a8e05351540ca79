"""Rules of reduce_window, select_and_scatter and map (tracer/ops/window_rules.py),
checked like the shape rules: JVPs against central finite differences (float64),
transposes through <ct, L(v)> = <L^T(ct), v>, batching against loop-and-stack, each
rule also run traced; over random window geometries (padding, dilations, strides).
Then the max-pool gradient end to end (through select_and_scatter), against finite
differences, under jit and to second order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.ops.window_rules  # noqa: F401  # installs the rules under test
from tests.test_rules_shape import (aval, bdims, check_batch, check_jvp, check_transpose,
                                    eqn_for, seeded)
from tracer import ops
from tracer.core import ShapedArray
from tracer.errors import TracerError, TracerTypeError
from tracer.ops.ad import UndefinedPrimal, Zero
from tracer.ops.window import window_shape
from tracer.tracing import trace_flat

EXAMPLES = settings(max_examples=15, deadline=None)
F64 = np.float64


@st.composite
def geometries(draw: Any, max_rank: int = 3) -> tuple[tuple[int, ...], dict[str, Any]]:
    """An operand shape and window geometry with a non-empty output."""
    rank = draw(st.integers(1, max_rank))
    ints = lambda lo, hi: tuple(draw(st.integers(lo, hi)) for _ in range(rank))  # noqa
    shape = ints(1, 5)
    geo = {"window_dimensions": ints(1, 3), "window_strides": ints(1, 3),
           "padding": tuple(zip(ints(-1, 2), ints(-1, 2), strict=True)),
           "base_dilation": ints(1, 2), "window_dilation": ints(1, 2)}
    try:
        out = window_shape(shape, **geo)
    except TracerError:
        out = (0,)
    assume(0 not in out)
    return shape, geo


def _rw(init: Any, comp: Any, geo: dict[str, Any]) -> Any:
    return lambda x: ops.reduce_window(x, init, comp, **geo)


def _pair(geo: dict[str, Any], direction: Any) -> Any:
    """A chooser pair as a user would write it: (x, t) of the element compare keeps."""
    def choose(ax: Any, at: Any, x: Any, t: Any) -> tuple[Any, Any]:
        keep = direction(ax, x)
        return ops.select(keep, ax, x), ops.select(keep, at, t)
    return lambda x, t, i, j: ops.reduce_window((x, t), (i, j), choose, **geo)


# --------------------------------------------------------------------------- reduce_window
@EXAMPLES
@given(geometries(), st.data())
def test_reduce_window_sum(case: Any, data: Any) -> None:
    shape, geo = case
    rng = seeded(data)
    x, init = rng.standard_normal(shape), F64(rng.standard_normal())
    fn = lambda x, i: ops.reduce_window(x, i, ops.add, **geo)  # noqa: E731
    op, params = eqn_for("reduce_window", fn, x, init)
    check_jvp(op, params, [x, init], {0, 1}, rng)
    check_transpose(op, params, [x, init], {0, 1}, rng)
    check_transpose(op, params, [x, F64(0)], {0}, rng)  # (linear in x alone at init 0)
    make = lambda r: [r.standard_normal(shape), F64(r.standard_normal())]  # noqa: E731
    check_batch(op, params, make, bdims(data, [x, init]), rng)


@EXAMPLES
@given(geometries(), st.sampled_from(["max", "min"]), st.data())
def test_reduce_window_max_min(case: Any, kind: str, data: Any) -> None:
    shape, geo = case
    rng = seeded(data)
    x = rng.standard_normal(shape)
    identity = F64(-np.inf if kind == "max" else np.inf)
    op, params = eqn_for("reduce_window", _rw(identity, getattr(ops, kind), geo), x)
    assume(np.isfinite(op.bind(x, identity, **params)[0]).all())  # no window of padding only
    check_jvp(op, params, [x, identity], {0}, rng)
    # An init that is not the identity wins some windows: they take its tangent.
    op, params = eqn_for("reduce_window", lambda x, i: ops.reduce_window(
        x, i, getattr(ops, kind), **geo), x, F64(0.1))
    check_jvp(op, params, [x, F64(0.1)], {0, 1}, rng)
    make = lambda r: [r.standard_normal(shape), F64(r.standard_normal())]  # noqa: E731
    check_batch(op, params, make, bdims(data, [x, F64(0.1)]), rng)


@EXAMPLES
@given(geometries(), st.sampled_from([ops.ge, ops.gt, ops.le, ops.lt]), st.data())
def test_chooser_pair_transposes_to_select_and_scatter(case: Any, direction: Any,
                                                      data: Any) -> None:
    shape, geo = case
    rng = seeded(data)
    x, t = rng.standard_normal(shape), rng.standard_normal(shape)
    start = F64(-np.inf if direction in (ops.ge, ops.gt) else np.inf)
    args = [x, t, start, F64(0)]
    op, params = eqn_for("reduce_window", _pair(geo, direction), *args)
    # Output 0 does not depend on t: the identity <ct, L(v)> = <L^T(ct), v> is on output 1.
    picked = op.bind(*args, **params)[1]
    ct = rng.standard_normal(picked.shape)
    undefined = UndefinedPrimal(ShapedArray(shape, np.dtype(F64)))
    back = op.transpose([Zero(ShapedArray(picked.shape, np.dtype(F64))), ct], x, undefined,
                        start, F64(0), **params)
    graph, _ = trace_flat(lambda ct: [op.transpose([Zero(ct.aval), ct], x, undefined, start,
                                                   F64(0), **params)[1]], [aval(ct)])
    assert [e.op.name for e in graph.eqns] == ["select_and_scatter"]
    np.testing.assert_allclose(np.vdot(back[1], t), np.vdot(ct, picked), rtol=1e-9)


@EXAMPLES
@given(geometries(max_rank=2), st.data())
def test_reduce_window_general_computation_forward_mode(case: Any, data: Any) -> None:
    shape, geo = case
    rng = seeded(data)
    x = rng.uniform(0.5, 1.5, shape)
    op, params = eqn_for("reduce_window", _rw(1.0, ops.mul, geo), x)
    check_jvp(op, params, [x, F64(1)], {0, 1}, rng)

    def argmax(m: Any, am: Any, v: Any, i: Any) -> tuple[Any, Any]:
        take = ops.gt(v, m)
        return ops.select(take, v, m), ops.select(take, i, am)
    k = np.arange(x.size, dtype=np.int32).reshape(shape)
    op, params = eqn_for("reduce_window", lambda x, k: ops.reduce_window(
        (x, k), (-10.0, -1), argmax, **geo), x, k)
    check_jvp(op, params, [x, k, F64(-10), np.int32(-1)], {0}, rng)
    check_batch(op, params, lambda r: [r.standard_normal(shape), k, F64(-10),
                                       np.int32(-1)], [0, None, None, None], rng)


def test_reduce_window_product_is_not_transposable() -> None:
    x = np.linspace(0.5, 1.5, 6)
    with pytest.raises(TracerTypeError, match=r"reduce_window.*\[add, mul\]"):
        tr.grad(lambda x: ops.reduce_window(x, 1.0, ops.mul, (2,), (1,)).sum())(x)
    t = tr.jvp(lambda x: ops.reduce_window(x, 1.0, ops.mul, (2,), (1,)), (x,), (x,))[1]
    np.testing.assert_allclose(t, 2 * x[:-1] * x[1:])


# --------------------------------------------------------------------------- select_and_scatter
@EXAMPLES
@given(geometries(), st.sampled_from([ops.ge, ops.gt, ops.le, ops.lt]), st.data())
def test_select_and_scatter(case: Any, select: Any, data: Any) -> None:
    shape, geo = case
    rng = seeded(data)
    out = window_shape(shape, **geo)
    x, s, init = rng.standard_normal(shape), rng.standard_normal(out), F64(0.5)
    fn = lambda x, s, i: ops.select_and_scatter(  # noqa: E731
        x, select, geo["window_dimensions"], geo["window_strides"], geo["padding"], s, i,
        ops.add, base_dilation=geo["base_dilation"], window_dilation=geo["window_dilation"])
    op, params = eqn_for("select_and_scatter", fn, x, s, init)
    check_jvp(op, params, [x, s, init], {1, 2}, rng)
    check_jvp(op, params, [x, s, init], {0}, rng)  # the selection is piecewise constant
    check_transpose(op, params, [x, s, init], {1, 2}, rng)
    make = lambda r: [r.standard_normal(shape), r.standard_normal(out),  # noqa: E731
                      F64(r.standard_normal())]
    check_batch(op, params, make, bdims(data, [x, s, init]), rng)


def test_select_and_scatter_rules_name_what_they_cannot_do() -> None:
    x, s = np.arange(4.0), np.ones(2)
    with pytest.raises(TracerTypeError, match=r"scatter.*\[mul\]"):
        tr.jvp(lambda s: ops.select_and_scatter(x, ops.ge, (2,), (2,), "VALID", s, 1.0,
                                                ops.mul), (s,), (s,))
    odd = lambda a, b: ops.ge(ops.abs(a), ops.abs(b))  # noqa: E731
    with pytest.raises(TracerTypeError, match=r"selection.*\[abs, compare\]"):
        tr.grad(lambda s: ops.select_and_scatter(x, odd, (2,), (2,), "VALID", s, 0.0,
                                                 ops.add).sum())(s)


# --------------------------------------------------------------------------- map
def _fd_jvp(f: Any, xs: list[Any], ts: list[Any], eps: float = 1e-6) -> list[Any]:
    plus = f(*[x + eps * t for x, t in zip(xs, ts, strict=True)])
    minus = f(*[x - eps * t for x, t in zip(xs, ts, strict=True)])
    return [(np.asarray(p) - m) / (2 * eps) for p, m in zip(plus, minus, strict=True)]


COMPUTATIONS = {
    "two_results": (lambda a, b: (ops.mul(a, ops.sin(b)), ops.div(ops.exp(a), b)), 2),
    "select": (lambda a: ops.select(ops.gt(a, 0.0), ops.mul(a, a), ops.neg(a)), 1),
    "with_int": (lambda a: ops.mul(a, ops.convert_element_type(
        ops.convert_element_type(ops.floor(a), np.int32), np.float64)), 1),
}


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(sorted(COMPUTATIONS)), st.data())
def test_map_jvp_transpose_and_batch(name: str, data: Any) -> None:
    comp, n = COMPUTATIONS[name]
    rng = seeded(data)
    xs = [rng.uniform(0.5, 2.0, (3, 4)) * rng.choice([-1, 1], (3, 4)) for _ in range(n)]
    op, params = eqn_for("map", lambda *xs: ops.map(comp, list(xs)), *xs)
    check_jvp(op, params, xs, set(range(n)), rng)
    make = lambda r: [r.uniform(0.5, 2.0, (3, 4)) for _ in range(n)]  # noqa: E731
    check_batch(op, params, make, bdims(data, xs), rng)
    f = lambda *xs: ops.reduce(ops.map(comp, list(xs)) if n == 1 else  # noqa: E731
                               ops.map(comp, list(xs))[0], 0.0, ops.add, (0, 1))
    grads = tr.grad(f, argnums=tuple(range(n)))(*xs)
    for i, g in enumerate(grads):
        e = np.zeros(n * 12).reshape(n, 3, 4)
        for pos in np.ndindex(3, 4):
            e[:] = 0
            e[i][pos] = 1
            [fd] = _fd_jvp(lambda *ys: [f(*ys)], xs, list(e))
            np.testing.assert_allclose(g[pos], fd, rtol=1e-6, atol=1e-8)


def test_map_jvp_complex_directions() -> None:
    """A non-holomorphic computation (abs) and a holomorphic one (z * z): the JVP is
    R-linear in the tangent, so both the real and imaginary directions count."""
    rng = np.random.default_rng(3)
    z = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    t = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    for comp in (ops.abs, lambda a: ops.mul(a, a)):
        f = lambda z: ops.map(comp, [z])  # noqa: E731
        got = tr.jvp(f, (z,), (t,))[1]
        [fd] = _fd_jvp(lambda z: [f(z)], [z], [t])
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------- max-pool end to end
def _maxpool(x: Any) -> Any:
    return ops.reduce_window(x, -np.inf, ops.max, (1, 1, 3, 3), (1, 1, 2, 2), "SAME")


def _loss(x: Any) -> Any:
    y = _maxpool(x)
    return ops.reduce(ops.mul(y, y), 0.0, ops.add, (0, 1, 2, 3))


def test_maxpool_gradient_matches_finite_differences_and_jit() -> None:
    x = np.random.default_rng(5).standard_normal((2, 2, 7, 6))
    g = tr.grad(_loss)(x)
    fd = np.zeros_like(x)
    for pos in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[pos] = 1
        [fd[pos]] = _fd_jvp(lambda y: [_loss(y)], [x], [e])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tr.jit(tr.grad(_loss))(x), g, rtol=1e-12)
    hlo = str(tr.make_hlo(tr.grad(_loss))(x))
    assert "select-and-scatter" in hlo


def test_maxpool_second_order() -> None:
    """Hessian-vector products of a max-pool loss: the pool is locally linear, so
    H v = grad of <grad, v> (select_and_scatter's own JVP), against differences of grads."""
    rng = np.random.default_rng(6)
    x, v = rng.standard_normal((1, 2, 6, 6)), rng.standard_normal((1, 2, 6, 6))
    hvp = tr.jvp(tr.grad(_loss), (x,), (v,))[1]
    eps = 1e-6
    fd = (tr.grad(_loss)(x + eps * v) - tr.grad(_loss)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hvp, fd, rtol=1e-6, atol=1e-8)
    back = tr.grad(lambda x: ops.reduce(ops.mul(tr.grad(_loss)(x), v), 0.0, ops.add,
                                        (0, 1, 2, 3)))(x)
    np.testing.assert_allclose(back, fd, rtol=1e-6, atol=1e-8)


def test_vmap_of_maxpool_gradient() -> None:
    x = np.random.default_rng(7).standard_normal((3, 1, 2, 5, 5))
    got = tr.vmap(tr.grad(_loss))(x)
    for k in range(3):
        np.testing.assert_allclose(got[k], tr.grad(_loss)(x[k]), rtol=1e-12)

"""Compositions of the transformations under `jit`, on the interpreter and cpu backends
(issue #5): `jit(grad)`, `jit(grad(grad))`, `jit(hessian)`, `jit(jacfwd)`, `jit(jacrev)`,
`jit(vmap(grad))` and `jit(vmap(jacrev))` over non-zero `in_axes`, `jit(linearize)` and
`jit(vjp)` — each equal to its un-jitted value, and the un-jitted values equal to their
oracles: central finite differences in float64 and loop-and-stack.

Two functions: `with_control_flow` (a matmul, reductions, `scan`, `cond` and a
`while_loop` with a data-dependent trip count) on the interpreter, and `plain` (the same
without control flow) on the cpu backend, where every transformation sits in one jitted
function: numba compiles of these derivatives of loops take minutes (tests/test_ad_control.py
and tests/test_ad_table.py already compile control-flow derivatives on cpu).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.transforms import (grad, hessian, jacfwd, jacrev, linearize, value_and_grad, vjp,
                               vmap)

BACKENDS = [b for b in ("interpreter", "cpu") if b in tr.devices()]
RNG = np.random.default_rng(5)
W = RNG.uniform(-1, 1, (3, 4))
X = RNG.uniform(-1, 1, 4)
XS = RNG.uniform(-1, 1, (4, 5))     # five points, mapped along axis 1
V = RNG.uniform(-1, 1, 4)
U = RNG.uniform(-1, 1, 3)
EPS = 1e-6


def plain(x: Any) -> Any:
    """R^4 -> R^3: a matmul, slices, reductions and element-wise math."""
    h = tnp.tanh(W @ x + 0.1)
    return h * tnp.sin(x[1:]) + tnp.log1p(x[:3] * x[:3]) + tnp.exp(-tnp.sum(x * x) / 4)


def with_control_flow(x: Any) -> Any:
    """R^4 -> R^3: a matmul, tanh, a scan with a carry, a cond on the carry, and a
    while_loop whose trip count depends on the data."""
    h = tnp.tanh(W @ x + 0.1)
    carry, ys = ops.scan(lambda c, xi: (c * 0.5 + tnp.sin(xi), c * xi), 1.0, h)
    ys = ops.cond(carry > 0, lambda v: v * v + v, lambda v: tnp.exp(v), ys)

    def body(state: Any) -> Any:
        k, y = state
        return k + 1, y * 0.75 + 0.1 * tnp.cos(y)
    _, ys = ops.while_loop(lambda s: s[0] < 2 + (tnp.sum(x) > 0), body, (0, ys))
    return ys + tnp.log1p(x[:3] * x[:3])


def scalar_of(vec: Any) -> Any:
    return lambda x: tnp.sum(vec(x) * U) + 0.25 * tnp.sum(x * x * x)


def all_transforms(vec: Any, x: Any, xs: Any, v: Any, u: Any, cheap: bool = False
                   ) -> dict[str, Any]:
    """Every composition (`cheap`: without grad(grad) and value_and_grad, which
    tests/test_ad_forward_reverse.py already compiles on cpu)."""
    scalar = scalar_of(vec)
    _, lin = linearize(vec, x)
    _, pullback = vjp(vec, x)
    more = {} if cheap else {
        "value_and_grad": value_and_grad(scalar)(x),
        "grad_grad": grad(lambda a: tnp.sum(grad(scalar)(a) * u[0]))(x)}
    return more | {
        "grad": grad(scalar)(x),
        "hessian": hessian(scalar)(x),
        "jacfwd": jacfwd(vec)(x),
        "jacrev": jacrev(vec)(x),
        "vmap_grad": vmap(grad(scalar), in_axes=1)(xs),
        "vmap_jacrev": vmap(jacrev(vec), in_axes=1, out_axes=2)(xs),
        "linearize": lin(v),
        "vjp": pullback(u)[0],
    }


FUNCTIONS = {"with_control_flow": with_control_flow, "plain": plain}


@functools.cache
def eager_values(name: str) -> dict[str, Any]:
    return all_transforms(FUNCTIONS[name], X, XS, V, U)


def fd(f: Any, x: np.ndarray) -> np.ndarray:
    """Central differences of f at x along each unit vector, stacked on the last axis."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = EPS
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * EPS))
    return np.stack(cols, -1)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_eager_values_match_their_oracles(name: str) -> None:
    vec, scalar, eager = FUNCTIONS[name], scalar_of(FUNCTIONS[name]), eager_values(name)
    # the batch mixes the while_loop's trip counts (2 and 3): vmap runs each its own
    assert len(set(np.sign(XS.sum(0)))) == 2
    jac = fd(vec, X)
    np.testing.assert_allclose(eager["jacfwd"], jac, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(eager["jacrev"], eager["jacfwd"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(eager["grad"], fd(scalar, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(eager["value_and_grad"][0], scalar(X), rtol=1e-14)
    np.testing.assert_allclose(eager["hessian"], fd(grad(scalar), X), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(eager["hessian"], eager["hessian"].T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eager["grad_grad"], eager["hessian"].sum(0) * U[0], rtol=1e-10)
    np.testing.assert_allclose(eager["linearize"], jac @ V, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(eager["vjp"], U @ jac, rtol=1e-6, atol=1e-8)
    loop = np.stack([grad(scalar)(XS[:, k]) for k in range(XS.shape[1])])
    np.testing.assert_allclose(eager["vmap_grad"], loop, rtol=1e-12)
    loop = np.stack([jacrev(vec)(XS[:, k]) for k in range(XS.shape[1])], 2)
    np.testing.assert_allclose(eager["vmap_jacrev"], loop, rtol=1e-12)


@pytest.mark.parametrize("backend,name", [("interpreter", "with_control_flow"),
                                          ("interpreter", "plain"), ("cpu", "plain")])
def test_jit_of_every_transformation_equals_eager(backend: str, name: str) -> None:
    if backend not in BACKENDS:
        pytest.skip(f"no {backend} backend here")
    vec, cheap = FUNCTIONS[name], backend == "cpu"  # a numba compile per graph: keep it small
    got = tr.jit(lambda *a: all_transforms(vec, *a, cheap=cheap), backend=backend)(X, XS, V, U)
    want_all = eager_values(name)
    assert set(got) <= set(want_all) and len(got) >= len(want_all) - 2 * cheap
    for what, want in ((k, want_all[k]) for k in got):
        for g, w in zip(tr.tree_util.tree_leaves(got[what]), tr.tree_util.tree_leaves(want),
                        strict=True):
            assert np.shape(g) == np.shape(w), (backend, name, what)
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-13,
                                       err_msg=f"{backend}: {what} of {name}")

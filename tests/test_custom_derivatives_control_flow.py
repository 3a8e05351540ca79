"""Python control flow on the primal values inside `custom_jvp` functions and rules and
`custom_vjp` `fwd`s, under `grad` / `jvp` outside `jit` (JAX's "Custom derivative rules"
page): the values are concrete there, as in JAX; under `jit` the error says what to do."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp


def _library(lib, np_):
    @lib.custom_jvp
    def f(x):
        return np_.sin(x) if x > 0 else np_.cos(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, = primals
        x_dot, = tangents
        ans = f(x)
        return (ans, 2 * x_dot) if x > 0 else (ans, 3 * x_dot * x)

    @lib.custom_vjp
    def g(x):
        return np_.sin(x) if x > 0 else np_.cos(x)

    def g_fwd(x):
        return g(x), (np_.cos(x) if x > 0 else -np_.sin(x))

    g.defvjp(g_fwd, lambda r, ct: (r * ct,))
    return f, g


@pytest.mark.parametrize("x", [1.5, -0.5])
def test_custom_rules_read_concrete_primals_like_jax(x: float) -> None:
    jax = pytest.importorskip("jax")
    f, g = _library(tr, tnp)
    with jax.enable_x64(True):
        jf, jg = _library(jax, jax.numpy)
        want = [jax.grad(jf)(x), jax.jvp(jf, (x,), (1.0,)), jax.grad(jg)(x),
                jax.grad(jax.grad(jf))(x), jax.value_and_grad(lambda v: jf(v) * jg(v))(x)]
    got = [tr.grad(f)(x), tr.jvp(f, (x,), (1.0,)), tr.grad(g)(x), tr.grad(tr.grad(f))(x),
           tr.value_and_grad(lambda v: f(v) * g(v))(x)]
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want),
                    strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-15)


def test_under_jit_the_error_names_the_line_and_the_fix() -> None:
    f, _ = _library(tr, tnp)
    with pytest.raises(tr.ConcretizationError, match="ops.cond") as info:
        tr.jit(tr.grad(f), backend="interpreter")(1.0)
    assert "test_custom_derivatives_control_flow.py" in str(info.value)

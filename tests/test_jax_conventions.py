"""JAX's calling conventions for the transformations: arguments that are not
differentiated (or mapped) stay the caller's Python values, Python control flow on
differentiated values works outside `jit`, and `custom_vjp` under `grad` runs `fwd`
only. Oracles: calculus and JAX (where it imports). Eager paths: cheap."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp


@dataclasses.dataclass(frozen=True)
class Config:
    power: int
    size: int


def _loss(cfg: Config, params: np.ndarray) -> object:
    assert isinstance(cfg, Config) and isinstance(cfg.size, int)  # never traced
    return tnp.sum(tnp.ones(cfg.size) * params ** cfg.power)


def test_grad_leaves_undifferentiated_arguments_as_python_values() -> None:
    def f(n, x):
        return tnp.sum(tnp.ones(n) * x ** 2)   # n is a shape
    assert float(tr.grad(f, argnums=1)(3, 2.0)) == 12.0
    value, g = tr.value_and_grad(f, argnums=1)(3, 2.0)
    assert (float(value), float(g)) == (12.0, 12.0)
    assert float(tr.jacfwd(f, argnums=1)(3, 2.0)) == 12.0
    assert float(tr.jacrev(f, argnums=1)(3, 2.0)) == 12.0
    assert float(tr.hessian(f, argnums=1)(3, 2.0)) == 6.0


def test_jit_value_and_grad_with_a_static_config_object() -> None:
    params = np.array([1.0, 2.0])
    fn = tr.jit(tr.value_and_grad(_loss, argnums=1), static_argnums=0, backend="interpreter")
    value, g = fn(Config(3, 2), params)
    np.testing.assert_allclose(value, np.sum(params ** 3))
    np.testing.assert_allclose(g, 3 * params ** 2)


def test_grad_keyword_arguments_are_not_traced() -> None:
    g = tr.grad(lambda x, *, n: tnp.sum(tnp.ones(n) * x))(2.0, n=4)
    assert float(g) == 4.0


def test_vmap_in_axes_none_arguments_stay_concrete() -> None:
    cfg = Config(2, 3)
    xs = np.arange(4.0)
    got = tr.vmap(lambda c, x: tnp.ones(c.size) * x ** c.power, in_axes=(None, 0))(cfg, xs)
    np.testing.assert_array_equal(got, np.ones((4, 3)) * xs[:, None] ** 2)
    got = tr.vmap(lambda n, x: x * n, in_axes=(None, 0))(3, xs)
    np.testing.assert_array_equal(got, xs * 3)


def _piecewise(x):
    if x < 3:  # JAX's docs (Control flow): fine under grad, an error under jit
        return 3.0 * x ** 2
    return -4 * x


def test_python_control_flow_on_differentiated_values_outside_jit() -> None:
    assert float(tr.grad(_piecewise)(2.0)) == 12.0
    assert float(tr.grad(_piecewise)(4.0)) == -4.0
    assert float(tr.grad(tr.grad(_piecewise))(2.0)) == 6.0
    _, tangent = tr.jvp(_piecewise, (4.0,), (1.0,))
    assert float(tangent) == -4.0

    def loop(x, steps):
        while steps > 0 and x < 100:   # reads both values
            x, steps = x * 2.0, steps - 1
        return x
    assert float(tr.grad(loop)(3.0, 10)) == 64.0


def test_control_flow_under_jit_still_says_what_to_do() -> None:
    with pytest.raises(tr.ConcretizationError, match="ops.cond.*static_argnums") as info:
        tr.jit(tr.grad(_piecewise), backend="interpreter")(2.0)
    assert "_piecewise" in str(info.value) or "test_jax_conventions" in str(info.value)


def test_custom_vjp_under_grad_runs_fwd_only() -> None:
    calls: list[str] = []

    @tr.custom_vjp
    def f(x):
        calls.append("f")
        return tnp.sin(x)

    def fwd(x):
        calls.append("fwd")
        return tnp.sin(x), tnp.cos(x)

    def bwd(cos_x, g):
        calls.append("bwd")
        return (g * cos_x,)

    f.defvjp(fwd, bwd)
    assert float(tr.grad(f)(0.3)) == pytest.approx(np.cos(0.3), rel=1e-15)
    assert calls == ["fwd", "bwd"]
    calls.clear()
    value, g = tr.jit(tr.value_and_grad(f), backend="interpreter")(0.3)
    assert calls == ["fwd", "bwd"] and float(value) == pytest.approx(np.sin(0.3))
    calls.clear()
    assert float(f(0.3)) == pytest.approx(np.sin(0.3)) and calls == ["f"]


def test_custom_vjp_fwd_that_calls_the_function_and_vmap() -> None:
    @tr.custom_vjp
    def clip_gradient(x):
        return x

    def fwd(x):
        return clip_gradient(x), None

    def bwd(_, g):
        return (tnp.clip(g, -1.0, 1.0),)

    clip_gradient.defvjp(fwd, bwd)
    g = tr.vmap(tr.grad(lambda x: 5.0 * clip_gradient(x)))(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [1.0, 1.0])  # bwd clips the cotangent 5.0 to 1.0
    g = tr.grad(lambda x: clip_gradient(5.0 * x))(1.0)
    assert float(g) == 5.0  # the cotangent into clip_gradient is 1.0: kept, times 5

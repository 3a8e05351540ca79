"""A small convnet end to end (tracer issue #5): conv -> relu -> conv (stride 2) ->
mean-pool -> dense -> logsumexp cross-entropy, in float64.

`tr.grad` with respect to every parameter must match central finite differences,
run eagerly and under `tr.jit` on both the interpreter and the cpu backend (whose
backward pass runs the transposed convolutions: lhs-dilated for the strided layer,
batch and feature roles swapped for the kernels). `vmap` of a convolution over an
extra batch axis, of the input and of the kernel, must match a loop and a stack.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops

EPS = 1e-6


def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"w1": rng.standard_normal((6, 3, 3, 3)) * 0.5, "b1": rng.standard_normal(6) * 0.1,
            "w2": rng.standard_normal((8, 6, 3, 3)) * 0.3, "b2": rng.standard_normal(8) * 0.1,
            "wd": rng.standard_normal((8, 5)) * 0.5, "bd": rng.standard_normal(5) * 0.1}


def loss(params: dict[str, Any], x: Any, onehot: Any) -> Any:
    h = ops.conv(x, params["w1"], (1, 1), "SAME") + params["b1"][None, :, None, None]
    h = tnp.maximum(h, 0.0)
    h = ops.conv_general_dilated(h, params["w2"], (2, 2), [(1, 1), (0, 1)])
    h = tnp.maximum(h + params["b2"][None, :, None, None], 0.0)
    pooled = tnp.mean(h, axis=(2, 3))                     # (batch, 8)
    logits = pooled @ params["wd"] + params["bd"]         # (batch, 5)
    shifted = logits - tnp.max(logits, axis=1, keepdims=True)  # (the max cancels out)
    return tnp.mean(tnp.log(tnp.sum(tnp.exp(shifted), axis=1))
                    - tnp.sum(onehot * shifted, axis=1))


@pytest.fixture(scope="module")
def problem() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 9, 8))
    onehot = np.eye(5)[rng.integers(0, 5, 4)]
    return init_params(rng), x, onehot


def finite_differences(f: Any, params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Central differences of the scalar f(params), one parameter element at a time."""
    grads = {}
    for name, value in params.items():
        g = np.zeros_like(value)
        for i in np.ndindex(value.shape):
            shifted = {k: v.copy() for k, v in params.items()}
            shifted[name][i] = value[i] + EPS
            up = float(f(shifted))
            shifted[name][i] = value[i] - EPS
            g[i] = (up - float(f(shifted))) / (2 * EPS)
        grads[name] = g
    return grads


@pytest.fixture(scope="module")
def fd_grads(problem: Any) -> dict[str, np.ndarray]:
    params, x, onehot = problem
    fast = tr.jit(loss, backend="cpu")  # one compile; FD needs ~1300 evaluations
    return finite_differences(lambda p: fast(p, x, onehot), params)


@pytest.mark.parametrize("mode", ["eager", "interpreter", "cpu"])
def test_grad_matches_finite_differences(mode: str, problem: Any, fd_grads: Any) -> None:
    params, x, onehot = problem
    grad = tr.grad(loss)
    if mode != "eager":
        grad = tr.jit(grad, backend=mode)
    got = grad(params, x, onehot)
    assert set(got) == set(params)
    for name in params:
        assert got[name].shape == params[name].shape and got[name].dtype == np.float64
        np.testing.assert_allclose(got[name], fd_grads[name], rtol=1e-5, atol=1e-7,
                                   err_msg=name)


def test_loss_agrees_across_backends(problem: Any) -> None:
    params, x, onehot = problem
    eager = loss(params, x, onehot)
    for backend in ("interpreter", "cpu"):
        np.testing.assert_allclose(tr.jit(loss, backend=backend)(params, x, onehot), eager,
                                   rtol=1e-12)


def _conv(x: Any, w: Any) -> Any:
    return ops.conv_general_dilated(x, w, (2, 1), [(1, 0), (1, 1)], rhs_dilation=(1, 2),
                                    feature_group_count=2)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (2, 1)])
@pytest.mark.parametrize("backend", [None, "cpu"])
def test_vmap_of_conv_matches_loop_and_stack(in_axes: tuple, backend: str | None) -> None:
    rng = np.random.default_rng(1)
    x, w, size = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 2, 3, 2)), 3
    xs = np.stack([rng.standard_normal(x.shape) for _ in range(size)], axis=in_axes[0] or 0)
    ws = np.stack([rng.standard_normal(w.shape) for _ in range(size)], axis=in_axes[1] or 0)
    args = (xs if in_axes[0] is not None else x, ws if in_axes[1] is not None else w)
    mapped = tr.vmap(_conv, in_axes=in_axes)
    got = (tr.jit(mapped, backend=backend) if backend else mapped)(*args)
    want = np.stack([_conv(np.take(xs, i, in_axes[0]) if in_axes[0] is not None else x,
                           np.take(ws, i, in_axes[1]) if in_axes[1] is not None else w)
                     for i in range(size)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)

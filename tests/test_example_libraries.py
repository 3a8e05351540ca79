"""`tracer.example_libraries.stax` and `.optimizers` against JAX's
`jax.example_libraries` (x64): each layer's output shape, parameters (same key, same
splits: the same numbers to a few ulp) and outputs; each optimizer's parameters after
four steps under `jit`; the schedules, `clip_grads`, and the state packing."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
from tracer.example_libraries import optimizers, stax

jax = pytest.importorskip("jax")
jstax = pytest.importorskip("jax.example_libraries.stax")
joptimizers = pytest.importorskip("jax.example_libraries.optimizers")

X_IMAGE = np.random.RandomState(0).randn(2, 6, 6, 3)
X_FLAT = np.random.RandomState(1).randn(4, 5)


def _layers(s):
    """(name, layer, input) cases, for stax module `s` (ours or JAX's)."""
    return [
        ("dense", s.Dense(3), X_FLAT),
        ("conv_same_strided", s.Conv(4, (3, 3), strides=(2, 2), padding="SAME"), X_IMAGE),
        ("general_conv_nchw", s.GeneralConv(("NCHW", "OIHW", "NCHW"), 2, (2, 2)),
         X_IMAGE.transpose(0, 3, 1, 2)),
        ("conv_transpose_same", s.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME"),
         X_IMAGE),
        ("conv_transpose_valid", s.ConvTranspose(3, (2, 3), strides=(1, 2)), X_IMAGE),
        ("conv1d_transpose", s.Conv1DTranspose(2, (4,), strides=(3,), padding="SAME"),
         X_FLAT[:, :, None]),
        ("batch_norm", s.BatchNorm(), X_IMAGE),
        ("max_pool", s.MaxPool((2, 2), strides=(1, 1)), X_IMAGE),
        ("sum_pool_same", s.SumPool((3, 3), padding="SAME"), X_IMAGE),
        ("avg_pool_same", s.AvgPool((3, 3), strides=(2, 2), padding="SAME"), X_IMAGE),
        ("flatten", s.Flatten, X_IMAGE),
        ("activations", s.serial(s.Tanh, s.Relu, s.Exp, s.Softplus, s.Sigmoid, s.Elu,
                                 s.LeakyRelu, s.Selu, s.Gelu, s.LogSoftmax, s.Softmax), X_FLAT),
        ("fan_out_parallel_sum",
         s.serial(s.FanOut(2), s.parallel(s.Dense(5), s.Identity), s.FanInSum), X_FLAT),
        ("fan_in_concat", s.serial(s.FanOut(3), s.FanInConcat()), X_FLAT),
        ("shape_dependent", s.shape_dependent(lambda shape: s.Dense(shape[-1] * 2)), X_FLAT),
    ]


@pytest.mark.parametrize("index", range(len(_layers(stax))))
def test_layer_matches_jax(index: int) -> None:
    name, (init, apply), x = _layers(stax)[index]
    with jax.enable_x64(True):
        _, (jinit, japply), _ = _layers(jstax)[index]
        jshape, jparams = jinit(jax.random.key(3), x.shape)
        want = japply(jparams, x)
    shape, params = init(tr.random.key(3), x.shape)
    assert tuple(shape) == tuple(jshape), name
    for p, q in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(jparams),
                    strict=True):  # (the truncated normal's erfinv: a few ulp, as JAX's)
        np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(np.asarray(apply(params, x)), np.asarray(want), rtol=1e-13,
                               atol=1e-14)


def test_unknown_batch_dims_stay_unknown() -> None:
    init, _ = stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.MaxPool((2, 2)),
                          stax.Flatten, stax.Dense(7))
    shape, _ = init(tr.random.key(0), (-1, 8, 8, 1))
    assert shape == (-1, 7)


def test_dropout_needs_a_key_and_matches_jax() -> None:
    init, apply = stax.Dropout(0.75)
    _, params = init(tr.random.key(0), X_FLAT.shape)
    with pytest.raises(tr.TracerError, match="PRNG key"):
        apply(params, X_FLAT)
    with jax.enable_x64(True):
        want = jstax.Dropout(0.75)[1]((), X_FLAT, rng=jax.random.key(5))
    np.testing.assert_array_equal(apply(params, X_FLAT, rng=tr.random.key(5)), want)
    np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), X_FLAT, rng=1), X_FLAT)


def _optimizers(o):
    return {
        "sgd": o.sgd(0.1), "momentum": o.momentum(0.1, 0.9), "nesterov": o.nesterov(0.1, 0.9),
        "adagrad": o.adagrad(0.1), "rmsprop": o.rmsprop(0.1), "rmsprop_momentum":
        o.rmsprop_momentum(0.1), "adam": o.adam(0.1), "adamax": o.adamax(0.1),
        "sm3": o.sm3(0.1), "adam_exponential_decay": o.adam(o.exponential_decay(0.1, 2, 0.5)),
        "sgd_inverse_time_staircase": o.sgd(o.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
        "sgd_polynomial_decay": o.sgd(o.polynomial_decay(0.1, 3, 0.01, 2.0)),
        "sgd_piecewise_constant": o.sgd(o.piecewise_constant([1, 2], [0.1, 0.05, 0.01])),
    }


PARAMS = {"w": np.random.RandomState(2).randn(3, 2), "b": np.array([0.5, -0.25]),
          "s": np.array(1.5)}


def _run(o, name: str, jit, grad, tree):
    """Four jitted steps of optimizer `name` (of module `o`) on a pytree of parameters."""
    init, update, get_params = _optimizers(o)[name]

    def loss(p):
        return tree.tree_reduce(lambda a, b: a + b,
                                tree.tree_map(lambda v: (v ** 2).sum() + v.sum() ** 3, p))
    step = jit(lambda i, state: update(i, grad(loss)(get_params(state)), state))
    state = init(PARAMS)
    for i in range(4):
        state = step(i, state)
    return get_params(state)


@pytest.mark.parametrize("name", sorted(_optimizers(optimizers)))
def test_optimizer_matches_jax(name: str) -> None:
    # sm3's state holds the parameter's shape (ints a jit would trace): it runs eagerly
    eager = name == "sm3"
    with jax.enable_x64(True):
        want = _run(joptimizers, name, (lambda f: f) if eager else jax.jit, jax.grad,
                    jax.tree_util)
    jit = (lambda f: f) if eager else (lambda f: tr.jit(f, backend="interpreter"))
    got = _run(optimizers, name, jit, tr.grad, tr.tree_util)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want),
                    strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13)


def test_clip_grads_l2_norm_and_state_packing_match_jax() -> None:
    grads = {"a": np.array([3.0, 4.0]), "b": np.array([[12.0]])}
    with jax.enable_x64(True):
        want = joptimizers.clip_grads(grads, 6.5), joptimizers.l2_norm(grads)
    got = optimizers.clip_grads(grads, 6.5), optimizers.l2_norm(grads)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want),
                    strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-15)
    init, _, get_params = optimizers.adam(0.1)
    state = init(PARAMS)
    unpacked = optimizers.unpack_optimizer_state(state)
    assert isinstance(unpacked["w"], optimizers.JoinPoint)
    again = optimizers.pack_optimizer_state(unpacked)
    np.testing.assert_array_equal(get_params(again)["w"], PARAMS["w"])


def test_a_gradient_tree_of_another_shape_is_refused() -> None:
    init, update, _ = optimizers.sgd(0.1)
    with pytest.raises(tr.TracerError, match="does not match the parameter tree"):
        update(0, {"w": 1.0}, init(PARAMS))

"""The four training steps `bench_latency` times, written once for tracer and for JAX.

Each model is a function of a framework namespace `fw` (`fw.np`: tracer.numpy or
jax.numpy; `fw.lax`: tracer.ops or jax.lax; `fw.jit`, `fw.grad`, `fw.value_and_grad`,
`fw.vmap`, `fw.tree_map`) and of `edit`: True changes exactly one op of the model (one
activation), as a person editing a notebook cell does. `make(name, fw, edit)` returns
`(step, args)`: a jitted training step and NumPy arguments for it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

LR = 0.01


def framework(name: str) -> SimpleNamespace:
    """The namespace of `name` ('tracer' or 'jax') the models are written against."""
    if name == "tracer":
        import tracer as tr
        import tracer.numpy as tnp
        from tracer import ops
        from tracer.tree_util import tree_map
        return SimpleNamespace(np=tnp, lax=ops, jit=tr.jit, grad=tr.grad,
                               value_and_grad=tr.value_and_grad, vmap=tr.vmap,
                               tree_map=tree_map)
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_platform_name", "cpu")
    return SimpleNamespace(np=jnp, lax=jax.lax, jit=jax.jit, grad=jax.grad,
                           value_and_grad=jax.value_and_grad, vmap=jax.vmap,
                           tree_map=jax.tree_util.tree_map)


def _sgd(fw: SimpleNamespace, params: Any, grads: Any) -> Any:
    return fw.tree_map(lambda p, g: p - LR * g, params, grads)


def _xent(fw: SimpleNamespace, logits: Any, labels: Any) -> Any:
    """Mean softmax cross-entropy of integer labels (one-hot by comparison)."""
    np_ = fw.np
    z = logits - np_.max(logits, axis=-1, keepdims=True)
    logp = z - np_.log(np_.sum(np_.exp(z), axis=-1, keepdims=True))
    onehot = (labels[..., None] == np_.arange(logits.shape[-1])).astype(logits.dtype)
    return -np_.mean(np_.sum(logp * onehot, axis=-1))


def _init(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)


# ------------------------------------------------------------------------------ MLP

def mlp(fw: SimpleNamespace, edit: bool) -> tuple[Callable, tuple]:
    """784-256-128-10, batch 128: value_and_grad of cross-entropy + SGD update."""
    np_ = fw.np
    act2 = np_.sin if edit else np_.tanh  # the edited op

    def loss(params, x, y):
        (w1, b1), (w2, b2), (w3, b3) = params
        h = np_.tanh(x @ w1 + b1)
        h = act2(h @ w2 + b2)
        return _xent(fw, h @ w3 + b3, y)

    @fw.jit
    def step(params, x, y):
        value, grads = fw.value_and_grad(loss)(params, x, y)
        return value, _sgd(fw, params, grads)

    rng = np.random.default_rng(0)
    sizes = [784, 256, 128, 10]
    params = [(_init(rng, a, b), np.zeros(b, np.float32)) for a, b in zip(sizes, sizes[1:])]
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128).astype(np.int32)
    return step, (params, x, y)


# ---------------------------------------------------------------------- transformer

def _layer_norm(np_: Any, x: Any) -> Any:
    mu = np_.mean(x, axis=-1, keepdims=True)
    var = np_.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np_.sqrt(var + 1e-5)


def _attention(fw: SimpleNamespace, p: dict, x: Any, heads: int) -> Any:
    np_ = fw.np
    seq, d = x.shape
    dh = d // heads
    q, k, v = ((x @ p[n]).reshape(seq, heads, dh) for n in ("wq", "wk", "wv"))
    scores = np_.einsum("qhd,khd->hqk", q, k) / np.float32(np.sqrt(dh))
    causal = np_.arange(seq)[:, None] >= np_.arange(seq)[None, :]
    scores = np_.where(causal, scores, np.float32(-1e9))
    scores = scores - np_.max(scores, axis=-1, keepdims=True)
    w = np_.exp(scores)
    w = w / np_.sum(w, axis=-1, keepdims=True)
    return np_.einsum("hqk,khd->qhd", w, v).reshape(seq, d) @ p["wo"]


def transformer(fw: SimpleNamespace, edit: bool, layers: int = 2, heads: int = 2,
                d: int = 32, seq: int = 16, vocab: int = 32, batch: int = 8
                ) -> tuple[Callable, tuple]:
    """A decoder-only transformer's training step; `vmap` over the batch, as the
    public functional-transformer examples write it."""
    np_ = fw.np
    mlp_act = np_.sin if edit else np_.tanh

    def example_loss(params, tokens, targets):
        x = params["emb"][tokens]
        for p in params["layers"]:
            x = x + _attention(fw, p, _layer_norm(np_, x), heads)
            x = x + mlp_act(_layer_norm(np_, x) @ p["w1"]) @ p["w2"]
        return _xent(fw, _layer_norm(np_, x) @ params["emb"].T, targets)

    def loss(params, tokens, targets):
        per_example = fw.vmap(example_loss, in_axes=(None, 0, 0))(params, tokens, targets)
        return np_.mean(per_example)

    @fw.jit
    def step(params, tokens, targets):
        value, grads = fw.value_and_grad(loss)(params, tokens, targets)
        return value, _sgd(fw, params, grads)

    rng = np.random.default_rng(0)
    names = [("wq", d, d), ("wk", d, d), ("wv", d, d), ("wo", d, d), ("w1", d, 4 * d),
             ("w2", 4 * d, d)]
    params = {"emb": _init(rng, vocab, d),
              "layers": [{n: _init(rng, a, b) for n, a, b in names} for _ in range(layers)]}
    tokens = rng.integers(0, vocab, (batch, seq)).astype(np.int32)
    return step, (params, tokens, np.roll(tokens, -1, axis=1))


# --------------------------------------------------------------- DP-SGD convnet

def convnet(fw: SimpleNamespace, edit: bool, batch: int = 16, size: int = 16
            ) -> tuple[Callable, tuple]:
    """Per-example gradients (`vmap(grad)`), clipped and averaged: a DP-SGD step."""
    np_, lax = fw.np, fw.lax
    act2 = np_.tanh if edit else (lambda z: np_.maximum(z, 0.0))

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)))

    def example_loss(params, image, label):
        x = image[None]  # (1, 1, H, W)
        x = np_.maximum(conv(x, params["c1"]), 0.0)
        x = act2(conv(x, params["c2"]))
        n, c, h, w = x.shape
        x = x.reshape(n, c, h // 4, 4, w // 4, 4).mean(axis=(3, 5)).reshape(n, -1)
        return _xent(fw, x @ params["dense"], label[None])

    @fw.jit
    def step(params, images, labels):
        grads = fw.vmap(fw.grad(example_loss), in_axes=(None, 0, 0))(params, images, labels)
        leaves = [g.reshape(g.shape[0], -1) for g in (grads["c1"], grads["c2"], grads["dense"])]
        norm = np_.sqrt(sum(np_.sum(g * g, axis=1) for g in leaves))
        scale = np_.minimum(1.0, 1.0 / (norm + 1e-6))
        mean = fw.tree_map(lambda g: np_.tensordot(scale, g, axes=1) / g.shape[0], grads)
        return _sgd(fw, params, mean)

    rng = np.random.default_rng(0)
    params = {"c1": _init(rng, 8, 1, 3, 3), "c2": _init(rng, 16, 8, 3, 3),
              "dense": _init(rng, 16 * (size // 4) ** 2, 10)}
    images = rng.standard_normal((batch, 1, size, size)).astype(np.float32)
    labels = rng.integers(0, 10, batch).astype(np.int32)
    return step, (params, images, labels)


# ------------------------------------------------------------------------ scan RNN

def rnn(fw: SimpleNamespace, edit: bool, steps: int = 32, batch: int = 32, hidden: int = 64,
        features: int = 16) -> tuple[Callable, tuple]:
    """An Elman RNN over `steps` time steps with `lax.scan`, squared loss on the last state."""
    np_, lax = fw.np, fw.lax
    act = np_.sin if edit else np_.tanh

    def loss(params, xs, y):
        def cell(h, x):
            h = act(h @ params["w"] + x @ params["u"] + params["b"])
            return h, None
        h, _ = lax.scan(cell, np_.zeros((xs.shape[1], hidden), np.float32), xs)
        return np_.mean((h @ params["v"] - y) ** 2)

    @fw.jit
    def step(params, xs, y):
        value, grads = fw.value_and_grad(loss)(params, xs, y)
        return value, _sgd(fw, params, grads)

    rng = np.random.default_rng(0)
    params = {"w": _init(rng, hidden, hidden), "u": _init(rng, features, hidden),
              "b": np.zeros(hidden, np.float32), "v": _init(rng, hidden, 1)}
    xs = rng.standard_normal((steps, batch, features)).astype(np.float32)
    y = rng.standard_normal((batch, 1)).astype(np.float32)
    return step, (params, xs, y)


MODELS = {"mlp": mlp, "transformer": transformer, "convnet": convnet, "rnn": rnn}


def make(name: str, fw: SimpleNamespace, edit: bool = False) -> tuple[Callable, tuple]:
    return MODELS[name](fw, edit)

"""Small programs both backends' tests compile: each has a structure the fusion plan
treats in its own way (row groups, column reductions, a product feeding reductions and an
index op)."""

from __future__ import annotations

import tracer.numpy as tnp
from tracer import ops


def layernorm(x, g):
    mean = tnp.mean(x, axis=-1, keepdims=True)
    var = tnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / tnp.sqrt(var + 1e-5) * g


def logsumexp(x):
    m = tnp.max(x, axis=1, keepdims=True)
    return tnp.log(tnp.sum(tnp.exp(x - m), axis=1)) + m[:, 0]


def columns(x):  # reduces a leading dim: accumulates in memory
    return tnp.sum(x * x, axis=0), tnp.argmax(x, axis=0), tnp.min(x[::-1], axis=(0, 1))


def mixed(x, w, i):
    h = tnp.maximum(x @ w, 0.0)
    centered = h - tnp.mean(h, axis=0)
    top = tnp.argmax(centered, axis=1)
    return tnp.tanh(centered.T)[::-1] * 2.0, top, ops.dynamic_slice(h, [i, i], [2, 2])

"""A host function split into parts computes what the interpreter computes.

Parts are forced small (a few lines), so every program here is cut between almost
every pair of statements: values that cross parts (arrays, scalars, reassigned
names, loop state, values written in one branch of a conditional) are all passed.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer.backend.cpu import split as cpu_split
from tracer.tree_util import tree_leaves

RTOL = {4: 4e-6, 8: 1e-12}


@pytest.fixture
def tiny_parts(monkeypatch):
    monkeypatch.setattr(cpu_split, "SPLIT_LINES", 3)
    monkeypatch.setattr(cpu_split, "SPLIT_MIN_LINES", 6)


def _agree(fn, *args):
    got = tr.jit(fn)(*args)
    want = tr.jit(fn, backend="interpreter")(*args)
    for g, w in zip(tree_leaves(got), tree_leaves(want), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL[g.dtype.itemsize], atol=1e-6)
    return tr.jit(fn).lower(*args).compile().source


def _mlp_grad(w1, w2, x):
    def loss(w1, w2):
        h = tnp.tanh(x @ w1)
        z = h @ w2
        return tnp.mean(tnp.log(tnp.sum(tnp.exp(z - tnp.max(z)), axis=1)))
    return tr.value_and_grad(loss, argnums=(0, 1))(w1, w2)


def test_a_split_gradient_step_matches_the_interpreter(tiny_parts):
    r = np.random.default_rng(0)
    source = _agree(_mlp_grad, r.random((6, 5)), r.random((5, 3)), r.random((4, 6)))
    assert "_part3(" in source


def _control(x, n):
    total = tnp.sum(x)  # a scalar that crosses parts
    y = tr.ops.cond(total > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
    y = tr.ops.fori_loop(0, n, lambda i, v: tnp.sin(v) + i, y)
    h, ys = tr.ops.scan(lambda c, row: (c * 0.5 + row, c.sum()), y[0], y)
    return h, ys, total * 3.0


def test_split_control_flow_and_scalars_match_the_interpreter(tiny_parts):
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    source = _agree(_control, x, 3)
    assert "_part" in source


def test_a_short_host_function_is_not_split():
    source = tr.jit(lambda x: tnp.sin(x) * 2).lower(np.ones(3)).compile().source
    assert "_part" not in source

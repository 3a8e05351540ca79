"""Generated source a person can read: one size symbol per dimension, imports of only
what is used, the host function named after the user's function, temporaries that
read as what they are, and the source still keyed by structure (a new batch size gives
the same text, so it costs no compile)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer.backend.cuda.generate import generate as generate_cuda
from tracer.core import aval_of
from tracer.tracing import trace_flat

RNG = np.random.default_rng(0)


def mlp_loss(w1, w2, x):
    h = tnp.tanh(x @ w1)
    logits = h @ w2
    p = tnp.exp(logits - logits.max(1, keepdims=True))
    return -(tnp.log(p / p.sum(1, keepdims=True))).mean()


def _mlp_args(batch):
    f32 = np.float32
    return (RNG.normal(size=(6, 5)).astype(f32), RNG.normal(size=(5, 3)).astype(f32),
            RNG.normal(size=(batch, 6)).astype(f32))


def _cpu_source(fn, *args):
    return tr.jit(fn).lower(*args).compile().source


def _size_symbols(source):
    return re.findall(r"^\s+(\w+) = dims\[\d+\]$", source, re.MULTILINE)


def test_one_size_symbol_per_dimension():
    """The MLP's gradient has four dimensions (batch, inputs, hidden, classes); before,
    every value's dims had their own symbols (a row width read as n0, n2 and n3)."""
    source = _cpu_source(tr.grad(mlp_loss, argnums=(0, 1)), *_mlp_args(7))
    sizes = [s for s in _size_symbols(source) if re.fullmatch(r"n\d+", s)]
    assert len(sizes) == 4, source


def test_a_new_batch_size_gives_the_same_source():
    grad = tr.grad(mlp_loss, argnums=(0, 1))
    assert _cpu_source(grad, *_mlp_args(7)) == _cpu_source(grad, *_mlp_args(32))


def test_equal_sizes_that_are_not_one_dimension_stay_apart():
    """x @ y with every size 4: rows, depth and columns are still three dimensions, so a
    call with other sizes of the same structure reuses the source."""
    def layer(x, y):
        return tnp.tanh(x @ y)
    square = np.ones((4, 4), np.float32)
    source = _cpu_source(layer, square, square)
    assert len(_size_symbols(source)) == 3, source
    assert source == _cpu_source(layer, np.ones((2, 4), np.float32), np.ones((4, 5), np.float32))


def test_host_function_is_named_after_the_users_function():
    source = _cpu_source(mlp_loss, *_mlp_args(3))
    assert re.search(r"^def mlp_loss\(", source, re.MULTILINE), source
    assert re.search(r"^def lambda_\(", _cpu_source(lambda a: a * 2, np.ones(3)), re.MULTILINE)


def test_only_the_dtype_aliases_and_modules_used_are_imported():
    source = _cpu_source(lambda a: a * 2, np.ones(3, np.float32))
    assert "from numpy import float32 as f32\n" in source, source
    assert "i64" not in source and "import math" not in source
    imported = re.findall(r"^from tracer\.backend\.[\w.]+ import (.+)$", source, re.MULTILINE)
    for names in imported:
        for name in names.split(", "):
            body = source.split("\n\n\n", 1)[1]
            assert re.search(rf"\b{name}\b", body), f"{name} is imported but not used"


def test_temporaries_do_not_read_as_outputs():
    """Views of a product's operands are `<name>_3d`, never `out3_2` beside `out3`
    (a product without batch dims calls BLAS on the operands themselves: no view)."""
    source = _cpu_source(tr.grad(mlp_loss, argnums=(0, 1)), *_mlp_args(5))
    assert not re.search(r"\bout\d+_\d+\b", source), source
    assert re.search(r"\bout0\b", source) and "_3d" not in source
    a = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    batched = _cpu_source(lambda x, y: tnp.tanh(x @ y), a, a.transpose(0, 2, 1))
    assert not re.search(r"\bout\d+_\d+\b", batched), batched
    assert "_3d" in batched, batched


def test_equal_array_constants_are_one_parameter():
    """Each distinct constant array is passed once (vmap spreads a loop body's scalar
    constants into an array per use, and each array parameter costs compile time)."""
    def f(x):
        return x + np.full(3, 2.0), x * np.full(3, 2.0), x - np.full(3, 3.0), \
            x / np.arange(1.0, 4.0)
    x = np.array([1.0, -2.0, 4.0])
    host = _cpu_source(f, x).rsplit("\ndef ", 1)[1]
    assert re.findall(r"\bconst\w*", host.split(":", 1)[0]) == ["const", "const_1", "const_2"]
    for got, want in zip(tr.jit(f)(x), f(x), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("with_dot", [False, True])
def test_cuda_modules_define_only_the_constants_they_use(with_dot):
    x = np.ones((4, 4), np.float32)
    fn = (lambda a: a @ a) if with_dot else (lambda a: tnp.exp(a) + 1)
    graph, _ = trace_flat(lambda a: [fn(a)], [aval_of(x)], "main")
    source = generate_cuda(graph).source
    assert ("TILE_M = " in source) == with_dot, source
    assert "REDUCE_BLOCK" not in source

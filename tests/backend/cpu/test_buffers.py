"""Where nests write (cpu/buffers.py): an element-wise nest may store over a value it
reads last and only at its own index (a product's result, then its activation), and
then computes every value before storing any. Checked against NumPy on programs where
writing in place would be wrong (a transposed, mirrored or shifted read, a later
reader, two stores of one nest; each nest's result feeds another product, so it is an
intermediate, not an output), with the in-place write itself asserted from the source."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp


def _activation(a, w, np_):  # tanh written over the product's buffer
    return (np_.tanh(a @ w) * 2) @ w


def _transposed(a, w, np_):  # the product read at (j, i) too: not in place
    t = a @ w
    return ((t + 1).T * t) @ w


def _reversed(a, w, np_):  # the product read at the mirrored row too
    t = a @ w
    return (t[::-1] * t + 1) @ w


def _shifted(a, w, np_):  # the product read at the next row
    t = a @ w
    return t[1:] - t[:-1]


def _read_later(a, w, np_):  # the product read again by the next product
    t = a @ w
    return np_.tanh(t) @ t


def _two_stores(a, w, np_):  # one nest stores two values read from the product
    t = a @ w
    return np_.tanh(t) @ w, (t * t + 1) @ w


def _siblings(a, w, np_):  # one nest: tanh(u) may go over t before t*2 reads t
    t, u = a @ w, a @ w.T
    return np_.tanh(u) @ w, (t * 2) @ w, (np_.exp(u) - t) @ w


def _gradient_shape(a, w, np_):  # reverse mode's pattern: cotangent times (1 - h*h)
    h = np_.tanh(a @ w)
    g = h @ w.T
    return a.T @ (g @ w * (1 - h * h))


PROGRAMS = [_activation, _transposed, _reversed, _shifted, _read_later, _two_stores, _siblings,
            _gradient_shape]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.__name__.strip("_"))
def test_nests_writing_over_their_operands_match_numpy(program):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((48, 48)).astype(np.float32)
    w = (rng.standard_normal((48, 48)) * 0.2).astype(np.float32)
    got = tr.jit(lambda a, w: program(a, w, tnp))(a, w)
    want = program(a.astype(np.float64), w.astype(np.float64), np)
    for g, x in zip(got if isinstance(got, tuple) else [got],
                    want if isinstance(want, tuple) else [want], strict=True):
        np.testing.assert_allclose(g, x, rtol=1e-4, atol=1e-4)


def test_an_activation_is_written_over_the_product():
    a = np.ones((64, 32), np.float32)
    w = np.ones((32, 16), np.float32)
    source = tr.jit(lambda a, w: tnp.tanh(a @ w) @ w.T).lower(a, w).compile().source
    nest = source[source.index("loop nest"):]
    read = re.search(r"= (\w+)\[i0, i1\]", nest).group(1)  # the product's buffer
    assert re.search(rf"^ *{read}\[i0, i1\] = ", nest, re.MULTILINE)  # written over


# ------------------------------------------------------------------ rows in output buffers
W = np.random.default_rng(8).standard_normal((300, 300)).astype(np.float32) / 20


def _softmax(x, np_):
    e = np_.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _mirrored(x, np_):  # the exponentials read at the mirrored column: a row buffer
    e = np_.exp(x - x.max(1, keepdims=True))
    return e[:, ::-1] / e.sum(1, keepdims=True)


def _two_results(x, np_):  # one nest stores two values from the row held in the first
    e = np_.exp(x - x.max(1, keepdims=True))
    s = e.sum(1, keepdims=True)
    return e / s, e * s - x


def _over_the_product(x, np_):  # the last pass reads the product (an intermediate) too
    t = x @ W
    e = np_.exp(t - t.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True) + t) @ W


ROW_PROGRAMS = {_softmax: True, _mirrored: False, _two_results: True, _over_the_product: True}


@pytest.mark.parametrize("program", ROW_PROGRAMS, ids=lambda f: f.__name__.strip("_"))
def test_row_values_held_in_a_result_buffer_match_numpy(program):
    """A row group's row (the exponentials of a softmax) is held in the row of the
    result its last reader stores, where that reader reads it only at its own index
    and the result's buffer holds no value the group reads; otherwise (a mirrored
    read) in a row buffer. NaN and inf rows included."""
    x = np.random.default_rng(7).standard_normal((33, 300)).astype(np.float32)
    x[2, 5], x[4, :], x[6, 9] = np.nan, -np.inf, np.inf
    f = tr.jit(lambda x: program(x, tnp))
    assert ("_rows" not in f.lower(x).compile().source) == ROW_PROGRAMS[program]
    with np.errstate(invalid="ignore"):
        want = program(x.astype(np.float64), np)
        got = f(x)
    for g, w in zip(got if isinstance(got, tuple) else [got],
                    want if isinstance(want, tuple) else [want], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)

"""Loop carries in buffers allocated once (`cpu/emit/control._LoopBuffers`): where a loop
body computes every array carry in a loop nest of its own, the nest stores each carry into
the first of two buffers made before the loop and the names swap after each step. Checked
against the interpreter on programs where sharing a buffer would be wrong (a
step reading its carry at other indices, a carry passed on as another, a carry a product
computes, a carry that is also a scanned output, nested loops, odd and even and zero trip
counts), with the buffers' presence or absence asserted from the source."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer import ops


def _shifted(x, n):  # each step reads its carry at the neighbouring index too
    return ops.fori_loop(0, n, lambda i, c: c * 0.5 + tnp.roll(c, 1) * 0.25 + 1.0, x)


def _two_shapes(x, n):  # two array carries of different shapes, each a nest's
    def body(i, c):
        a, b = c
        return a * 0.5 + tnp.sum(b) * 0.125, b[::-1] * 0.75 + a[:2] * 0.5
    return ops.fori_loop(0, n, body, (x, x[:2] + 1.0))


def _read_after(x, n):  # the loop's result read again by later nests and returned
    r = ops.fori_loop(0, n, lambda i, c: tnp.sqrt(c * c + 1.0) + c[::-1] * 0.5, x)
    return r * 2.0, r, r[:2] * r[3:]


def _nested(x, n):  # an inner loop inside the outer one's body
    def outer(i, c):
        inner = ops.fori_loop(0, 2, lambda j, d: d * 0.5 - tnp.sqrt(d * d + 0.5), c)
        return inner + c[::-1] * 0.25
    return ops.fori_loop(0, n, outer, x)


def _scan_carry_is_y(x, n):  # the carry is also the stacked output
    def cell(h, r):
        h = tnp.maximum(h * 0.5 + r + h[::-1] * 0.25, -0.5)
        return h, h
    return ops.scan(cell, x, tnp.ones((n, x.shape[0])) * 0.1)


BUFFERED = [_shifted, _two_shapes, _read_after, _nested, _scan_carry_is_y]


def _old_and_new(x, n):  # the body passes the carry it read on as the other carry
    return ops.fori_loop(0, n, lambda i, c: (c[0] * 0.5 + c[1][::-1], c[0]), (x, x * 2.0))


def _product_carry(x, n):  # one carry is a product's result: no buffers for either
    w = np.linspace(-0.5, 0.5, x.shape[0] ** 2).reshape(x.shape[0], -1)
    return ops.fori_loop(0, n, lambda i, c: (c[0] @ w, c[1] * 0.5 + c[0][0]), (x[None], x))


UNBUFFERED = [_old_and_new, _product_carry]


def _check(program, n):
    x = np.linspace(-1.0, 1.0, 5)
    f = tr.jit(program, static_argnums=1)
    got = tr.tree_util.tree_leaves(f(x, n))
    want = tr.tree_util.tree_leaves(tr.jit(program, static_argnums=1,
                                           backend="interpreter")(x, n))
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)  # (a product's order)
    return f.lower(x, n).compile().source


@pytest.mark.parametrize("program", BUFFERED, ids=lambda f: f.__name__.strip("_"))
def test_nest_computed_carries_live_in_two_buffers_made_before_the_loop(program):
    for n in (0, 1, 2, 5):
        source = _check(program, n)
    assert "carry_buf" in source
    innermost = source[source.rindex("while True" if "while True" in source else "for step"):]
    assert "np.empty" not in innermost  # (nothing allocated per step)


@pytest.mark.parametrize("program", UNBUFFERED, ids=lambda f: f.__name__.strip("_"))
def test_carries_that_could_alias_a_buffer_are_allocated_per_step(program):
    for n in (0, 1, 2, 5):
        source = _check(program, n)
    assert "carry_buf" not in source


@settings(max_examples=15, deadline=None)
@given(program=st.sampled_from(BUFFERED + UNBUFFERED), n=st.integers(0, 9))
def test_loops_with_carry_buffers_match_the_interpreter(program, n):
    _check(program, n)

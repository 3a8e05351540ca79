"""Tracers behave like arrays; closures, escapes and concretization are handled."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.core import ShapedArray
from tracer.interpret import run_graph
from tracer.tracing import trace_flat

F32 = ShapedArray((2, 3), np.float32)


def test_tracer_attributes():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, dtype=x.dtype, ndim=x.ndim, size=x.size, T=x.T.shape,
                    r=repr(x), length=len(x))
        return [x]

    trace_flat(f, [F32])
    assert seen == dict(shape=(2, 3), dtype=np.float32, ndim=2, size=6, T=(3, 2),
                        r="Traced<f32[2,3]>", length=2)


def test_tracer_methods_and_operators_match_numpy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(t):
        return [t.sum(axis=0), t.reshape(3, 2), t.astype(np.int32), -t + 1, 2 * t, t ** 2,
                t[1], t[:, ::-1], t @ t.T, t.mean(), abs(t), t > 2]

    graph, _ = trace_flat(f, [F32])
    got = run_graph(graph, [x], check=True)
    want = [x.sum(axis=0), x.reshape(3, 2), x.astype(np.int32), -x + 1, 2 * x, x ** 2, x[1],
            x[:, ::-1], x @ x.T, x.mean(), abs(x), x > 2]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)
        assert np.asarray(g).dtype == w.dtype


def test_numpy_array_on_the_left_defers_to_tracer():
    c = np.ones(3, np.float32)
    graph, _ = trace_flat(lambda t: [c + t, c * t], [ShapedArray((3,), np.float32)])
    out = run_graph(graph, [np.full(3, 2, np.float32)])
    np.testing.assert_array_equal(out[0], [3, 3, 3])
    assert all(isinstance(o, np.ndarray) for o in out)


def test_numpy_constant_is_captured_as_literal():
    table = np.arange(3.0)
    graph, _ = trace_flat(lambda t: [t + table], [ShapedArray((3,), np.float64)])
    assert run_graph(graph, [np.ones(3)])[0].tolist() == [1.0, 2.0, 3.0]


def test_outer_tracer_is_captured_as_extra_input():
    def outer(x):
        inner, captured = trace_flat(lambda y: [y * x], [ShapedArray((), np.float32)])
        assert captured == [x] and len(inner.inputs) == 2
        return [x]

    trace_flat(outer, [ShapedArray((), np.float32)])


def test_every_eqn_records_the_users_line():
    def f(x):
        y = x + 1.0
        return tnp.sin(y)

    graph, _ = trace_flat(lambda x: [f(x)], [ShapedArray((3,), np.float32)])
    lines = [e.source.line for e in graph.eqns]
    first = f.__code__.co_firstlineno
    assert set(lines) <= {first + 1, first + 2} and first + 2 in lines
    assert all(e.source.file == __file__ for e in graph.eqns)


@pytest.mark.parametrize("use", [bool, int, float, lambda t: np.asarray(t),
                                 lambda t: range(t), lambda t: t.item()])
def test_concretization_error(use):
    def f(x):
        use(x)
        return [x]

    with pytest.raises(tr.ConcretizationError) as info:
        trace_flat(f, [ShapedArray((), np.int64)])
    assert isinstance(info.value, TypeError)
    msg = str(info.value)
    assert "s64[]" in msg and "cond" in msg and "static_argnums" in msg
    assert "test_tracing.py" in msg


def test_if_on_tracer_under_jit_names_the_fix():
    @tr.jit
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(tr.ConcretizationError, match="ops.cond"):
        f(1.0)


def test_escaped_tracer_is_an_error():
    leaked = []

    @tr.jit
    def f(x):
        leaked.append(x)
        return x

    f(np.ones(2))
    with pytest.raises(tr.TracerError, match="escaped"):
        ops.add(leaked[0], np.ones(2))


def test_tracer_is_unhashable_and_not_iterable_when_0d():
    def f(x):
        with pytest.raises(tr.TracerTypeError, match="unhashable"):
            hash(x)
        with pytest.raises(tr.TracerTypeError, match="unhashable"):
            {x: 1}
        with pytest.raises(TypeError):
            iter(x)
        return [x]

    trace_flat(f, [ShapedArray((), np.float32)])

"""Tuples, composite, custom_call and optimization_barrier beyond the op table:
errors, HLO spelling, passes, transformations and the cpu backend."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
from tests.opdb_misc import SEED_OUT, X, Y
from tracer import ops
from tracer.passes.pipeline import optimize

BACKENDS = ["interpreter", "cpu"]


# ---------------------------------------------------------------------------- tuples
def test_get_tuple_element_checks_its_index():
    t = ops.tuple(X, Y)
    assert ops.get_tuple_element(t, 0) is X
    with pytest.raises(tr.TracerIndexError, match="index 2 is out of range"):
        ops.get_tuple_element(t, 2)
    with pytest.raises(TypeError, match="static Python int"):
        ops.get_tuple_element(t, np.float32(1))
    with pytest.raises(TypeError, match="must be a tuple"):
        ops.get_tuple_element(X, 0)


def test_multi_result_ops_print_as_tuples_with_get_tuple_element():
    text = str(tr.make_hlo(lambda x: ops.optimization_barrier((x, x + 1)))(X))
    assert "(f32[2], f32[2]) opt-barrier(" in text
    assert "get-tuple-element(opt-barrier" in text and "index=1" in text


# ------------------------------------------------------------------------- composite
def test_composite_hlo_carries_name_attributes_and_version():
    f = lambda x: ops.composite("foo.bar", lambda a: a * 2, x, attributes={"n": 1},  # noqa: E731
                                version=3)
    text = str(tr.make_hlo(f)(X))
    assert "call(Arg_0.1), to_apply=%region_0" in text
    assert ('is_composite=true, frontend_attributes={composite.name="foo.bar", '
            'composite.attributes={n = 1}, composite.version="3"}') in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_composite_transforms_like_its_decomposition(backend):
    def softplus(x):
        return ops.composite("my.softplus", lambda a: ops.log1p(ops.exp(a)), x)

    x = np.linspace(-2, 2, 5)
    loss = lambda x: ops.reduce(softplus(x), 0.0, ops.add, (0,))  # noqa: E731
    np.testing.assert_allclose(tr.jit(tr.grad(loss), backend=backend)(x),
                               1 / (1 + np.exp(-x)), rtol=1e-12)
    np.testing.assert_allclose(tr.jit(tr.vmap(softplus), backend=backend)(x),
                               np.log1p(np.exp(x)), rtol=1e-12)


def test_composite_rejects_bad_parameters():
    with pytest.raises(tr.ParamError, match="non-empty string"):
        ops.composite("", lambda a: a, X)
    with pytest.raises(tr.ParamError, match="version"):
        ops.composite("a.b", lambda a: a, X, version=-1)
    with pytest.raises(tr.ParamError, match="hashable"):
        ops.composite("a.b", lambda a: a, X, attributes={"k": [1, [2]]})


# ----------------------------------------------------------------------- custom_call
def test_custom_call_seed_example_on_every_backend():
    f = lambda x, y: ops.custom_call("seed_myfunc", [x, y],  # noqa: E731
                                     tr.ShapedArray((3, 3), np.float32))
    for backend in BACKENDS:
        np.testing.assert_array_equal(tr.jit(f, backend=backend)(X, Y), SEED_OUT)


def test_cpu_backend_calls_the_target_from_compiled_code():
    f = lambda x, y: ops.custom_call("seed_myfunc", [x, y], np.zeros((3, 3), np.float32))  # noqa
    source = tr.jit(f).lower(X, Y).compile().source
    assert "from tracer.backend.cpu.lib.custom_calls import custom_call_seed_myfunc_" in source
    assert "objmode" not in source


def test_reregistering_affects_code_traced_afterwards_only():
    tr.register_custom_call("versioned", _write_one)
    f = tr.jit(lambda x: ops.custom_call("versioned", [x], x))
    np.testing.assert_array_equal(f(X), [1.0, 1.0])
    tr.register_custom_call("versioned", _write_two)
    np.testing.assert_array_equal(f(X), [1.0, 1.0])  # cached trace: the old target
    np.testing.assert_array_equal(tr.jit(lambda x: ops.custom_call("versioned", [x], x))(X),
                                  [2.0, 2.0])


def _write_one(out, x):
    out[:] = 1.0


def _write_two(out, x):
    out[:] = 2.0


def _writes_its_input(out, x):
    x[0] = 7.0


def _not_numba(out, x):
    out[0] = len({"a": object()})


def test_custom_call_errors():
    with pytest.raises(tr.TracerValueError, match="no custom-call target 'nope'"):
        ops.custom_call("nope", [X], X)
    with pytest.raises(TypeError, match="result_shape"):
        ops.custom_call("seed_myfunc", [X, Y], (3, 3))
    with pytest.raises(tr.ParamError, match="identifier"):
        tr.register_custom_call("not a name", _write_one)
    tr.register_custom_call("writes_input", _writes_its_input)
    with pytest.raises(ValueError, match="read-only"):
        ops.custom_call("writes_input", [X.copy()], X)
    tr.register_custom_call("not_numba", _not_numba)  # numba cannot: a host callback
    assert tr.jit(lambda x: ops.custom_call("not_numba", [x], x))(X)[0] == 1.0
    with pytest.raises(tr.TracerTypeError, match="no derivative rule"):
        tr.grad(lambda x: ops.custom_call("seed_myfunc", [x, Y], X)[0])(X)
    with pytest.raises(tr.UnsupportedOpError, match="float16"):
        tr.jit(lambda x: ops.custom_call("versioned", [x], x))(X.astype(np.float16))


# -------------------------------------------------------------- optimization_barrier
def test_barrier_is_not_folded_or_merged():
    def f():
        a = ops.optimization_barrier(np.float32(2.0))
        return ops.add(ops.exp(a), ops.exp(np.float32(2.0)))

    graph = optimize(tr.jit(f).lower().graph)
    assert [e.op.name for e in graph.eqns].count("optimization_barrier") == 1
    assert [e.op.name for e in graph.eqns].count("exp") == 1  # the other one folded
    np.testing.assert_allclose(tr.jit(f)(), 2 * np.exp(np.float32(2.0)), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_barrier_survives_grad_and_vmap(backend):
    f = lambda x: ops.optimization_barrier(ops.sin(x))  # noqa: E731
    x = np.linspace(0, 1, 4)
    g = tr.jit(tr.vmap(tr.grad(f)), backend=backend)
    np.testing.assert_allclose(g(x), np.cos(x), rtol=1e-12)
    graph = tr.jit(tr.grad(f)).lower(0.5).graph
    assert any(e.op.name == "optimization_barrier" for e in graph.eqns)

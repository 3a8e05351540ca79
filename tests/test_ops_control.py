"""Family tests for `reduce` and control flow (while, conditional, scan, call).

The op table (tests/opdb_reduce.py, tests/opdb_control.py) checks every case's
reference result against its shape rule and against eager mode; here: traced
operands deciding at run time, closures over outer traced values, nesting,
weak-type retracing, hypothesis against plain Python loops, and errors.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tracer import ops
from tracer.core import Eqn, Graph, ShapedArray, Var, count_eqns, typecheck
from tracer.interpret import run_graph
from tracer.ops import control
from tracer.tracing import trace_flat

F32 = np.float32


def _run(fn, *args):
    """Trace `fn` on the avals of `args`, typecheck, run the graph (checked)."""
    avals = [tr.ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args]
    graph, captured = trace_flat(lambda *xs: list(_leaves(fn(*xs))), avals)
    assert not captured
    typecheck(graph)
    return run_graph(graph, [np.asarray(a) for a in args], check=True), graph


def _leaves(x):
    return tr.tree_util.tree_flatten(x)[0]


@contextmanager
def _raises(cls, *parts):
    """pytest.raises(cls), and every one of `parts` (op name, avals) is in the message."""
    with pytest.raises(cls) as info:
        yield
    for part in parts:
        assert part in str(info.value), (part, str(info.value))


def _eqn(graph, name):
    return next(e for e in graph.eqns if e.op.name == name)


# ----------------------------------------------------------------------------- reduce
def test_reduce_graph_and_hlo():
    x = np.ones((4, 2, 3), F32)
    (out,), graph = _run(lambda x: ops.reduce(x, 0.0, ops.add, [2, 0]), x)
    np.testing.assert_array_equal(out, [12, 12])
    eqn = _eqn(graph, "reduce")
    assert eqn.params["dimensions"] == (0, 2)  # stored sorted
    assert [e.op.name for e in eqn.params["to_apply"].eqns] == ["add"]
    text = str(graph)
    assert "reduce(" in text and "dimensions={0,2}" in text and "to_apply=%region_0" in text


@settings(max_examples=30)
@given(shape=st.lists(st.integers(0, 3), min_size=1, max_size=3), data=st.data())
def test_reduce_sum_and_fold_agree_with_numpy(shape, data):
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True))
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    fast = ops.reduce(x, 0.0, ops.add, dims)
    # `acc + 1 * x` is not a single op: the reference's general left fold runs it
    fold = ops.reduce(x, 0.0, lambda a, b: ops.add(a, ops.mul(b, 1.0)), dims)
    want = x.sum(axis=tuple(dims))
    np.testing.assert_allclose(fast, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fold, want, rtol=1e-12, atol=1e-12)
    assert isinstance(fast, np.ndarray) and fast.shape == want.shape


def test_reduce_errors_name_op_and_avals():
    x = np.ones((2, 3), F32)
    with _raises(tr.DTypeError, 'reduce', 'f32[]', 'f64[]'):
        ops.reduce(x, np.float64(0), ops.add, [0])
    with _raises(tr.TracerIndexError, 'reduce', '(2,)', 'f32[2,3]'):
        ops.reduce(x, 0.0, ops.add, [2])
    with _raises(tr.ParamError, 'reduce', 'duplicates'):
        ops.reduce(x, 0.0, ops.add, [1, 1])
    with _raises(tr.ShapeError, 'reduce', 'f32[2,3], f32[3]'):
        ops.reduce([x, x[0]], [0.0, 0.0], lambda a, b, c, d: (ops.add(a, c), ops.add(b, d)),
                   [0])
    with _raises(tr.DTypeError, 'reduce', 'computation results', 'pred[]'):
        ops.reduce(x, 0.0, ops.lt, [0])


def test_reduce_computation_must_be_closed():
    def outer(y):
        return [ops.reduce(np.ones(3, F32), 0.0, lambda a, b: ops.add(a, ops.mul(b, y)), [0])]
    with _raises(tr.TracerTypeError, 'reduce', 'must be closed', 'f32[]'):
        trace_flat(outer, [ShapedArray((), F32)])


# ------------------------------------------------------------------------------ while
def test_while_seed_example_traced():
    v = np.arange(10, dtype=F32)
    (n, acc), graph = _run(lambda v: ops.while_loop(
        lambda c: ops.lt(c[0], 1000), lambda c: (ops.add(c[0], 1), ops.add(c[1], v)),
        (np.int32(0), np.zeros(10, F32))), v)
    assert n == 1000 and n.dtype == np.int32
    np.testing.assert_array_equal(acc, 1000 * v)
    eqn = _eqn(graph, "while")
    assert eqn.params["body_nconsts"] == 1 and eqn.params["cond_nconsts"] == 0
    assert "while(" in str(graph) and "condition=%region" in str(graph)


def test_while_weak_init_is_retraced_with_body_dtype():
    x = np.array([1.5, 2.0], F32)
    # the counter starts as a Python 0 (weak s64) and the body makes it f32
    out = ops.while_loop(lambda c: ops.lt(c[0], 3.0),
                         lambda c: (ops.add(ops.convert_element_type(c[0], F32), 1.0),
                                    ops.mul(c[1], x)), (0, x))
    assert out[0].dtype == F32 and out[0] == 3
    np.testing.assert_allclose(out[1], x ** 4)


def test_while_with_weak_counter_and_closure():
    def outer(x):
        return ops.while_loop(lambda c: ops.lt(c[0], 10),
                              lambda c: (ops.add(c[0], 1), ops.mul(c[1], x)), (0, x))
    x = np.full(3, 1.1, F32)
    (n, y), _ = _run(outer, x)
    want = x.copy()
    for _ in range(10):
        want = want * x
    assert n == 10
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_while_errors():
    x = np.ones(3, F32)
    with _raises(tr.ShapeError, 'while', 'f32[3]', 'f32[4]'):
        ops.while_loop(lambda c: ops.lt(c[0], 3), lambda c: (c[0], np.ones(4, F32)), (0, x))
    with _raises(tr.DTypeError, 'while', 'f32[3]', 'f64[3]'):
        ops.while_loop(lambda c: ops.lt(c[0], 3), lambda c: (c[0], np.ones(3)), (0, x))
    with _raises(tr.TracerTypeError, 'while', 'structure', 'f32[3]'):
        ops.while_loop(lambda c: ops.lt(c[0], 3), lambda c: c[0], (0, x))
    with _raises(tr.TracerTypeError, 'while', 'bool scalar', 's32[]'):
        ops.while_loop(lambda c: c, lambda c: ops.add(c, 1), np.int32(0))
    with _raises(tr.TracerTypeError, 'while', 'bool scalar', 'pred[3]'):
        ops.while_loop(lambda c: ops.lt(c, 1.0), lambda c: c, x)


@settings(max_examples=30)
@given(lo=st.integers(-3, 6), hi=st.integers(-3, 6), start=st.integers(-5, 5))
def test_fori_loop_matches_python(lo, hi, start):
    def body(i, v):
        return ops.add(ops.mul(v, 2), i)
    want = start
    for i in range(lo, hi):
        want = want * 2 + i
    got = ops.fori_loop(lo, hi, body, np.int64(start))
    traced, _ = _run(lambda a, b: ops.fori_loop(a, b, body, np.int64(start)),
                     np.int64(lo), np.int64(hi))
    assert got == want and traced[0] == want and got.dtype == np.int64


def test_fori_loop_counter_dtype():
    seen = []
    ops.fori_loop(0, np.int32(2), lambda i, v: (seen.append(i.dtype), v)[1], 0.0)
    ops.fori_loop(0, 2, lambda i, v: (seen.append(i.dtype), v)[1], 0.0)
    assert seen == [np.int32, np.int64]
    with _raises(tr.TracerTypeError, 'fori_loop', 'f64[]'):
        ops.fori_loop(0.0, 3, lambda i, v: v, 0)


# ------------------------------------------------------------------------ conditional
BRANCHES = [lambda v: ops.neg(v), lambda v: ops.add(v, 1.0), lambda v: ops.mul(v, 10.0)]


@pytest.mark.parametrize("index,branch", [(0, 0), (1, 1), (2, 2), (-1, 2), (3, 2), (7, 2),
                                          (-(2**31), 2)])
def test_switch_out_of_range_runs_last_branch(index, branch):
    x = np.array([1.5, -2.0], F32)
    want = [-x, x + 1, x * 10][branch]
    np.testing.assert_array_equal(ops.switch(np.int32(index), BRANCHES, x), want)
    (got,), _ = _run(lambda i, x: ops.switch(i, BRANCHES, x), np.int32(index), x)
    np.testing.assert_array_equal(got, want)


def test_only_the_chosen_branch_runs(monkeypatch):
    ran = []
    real = control.run_graph
    monkeypatch.setattr(control, "run_graph", lambda g, a: (ran.append(g.name), real(g, a))[1])
    x = np.ones(2, F32)
    for p in (True, False):
        out = ops.cond(np.bool_(p), lambda v: ops.add(v, 1.0), lambda v: ops.neg(v), x)
        np.testing.assert_array_equal(out, x + 1 if p else -x)
    assert ran == ["branch_1", "branch_0"]  # branches are (false_fun, true_fun)


def test_cond_closure_over_outer_tracers_in_each_branch():
    def outer(p, x, y):
        return ops.cond(p, lambda: ops.mul(x, 2.0), lambda: ops.add(y, x))
    x, y = np.array([1., 2.], F32), np.array([10., 20.], F32)
    for p in (True, False):
        (got,), graph = _run(outer, np.bool_(p), x, y)
        np.testing.assert_array_equal(got, x * 2 if p else x + y)
    eqn = _eqn(graph, "conditional")
    # both branches take the union of the captured values: x and y
    assert len(eqn.inputs) == 3
    assert all(len(g.inputs) == 2 for g in eqn.params["branch_computations"])


def test_cond_errors():
    x = np.ones(3, F32)
    with _raises(tr.TracerTypeError, 'cond', 'pred[]', 's32[]'):
        ops.cond(np.int32(1), lambda: x, lambda: x)
    with _raises(tr.TracerTypeError, 'cond', 'pred[]', 'pred[3]'):
        ops.cond(np.ones(3, bool), lambda: x, lambda: x)
    with _raises(tr.ShapeError, 'cond', 'true_fun', 'false_fun', 'f32[3]', 'f32[4]'):
        ops.cond(True, lambda: x, lambda: np.ones(4, F32))
    with _raises(tr.DTypeError, 'cond', 'f32[3]', 's32[3]'):
        ops.cond(True, lambda: np.ones(3, np.int32), lambda: x)
    with _raises(tr.TracerTypeError, 'cond', 'structure', 'f32[3], f32[3]'):
        ops.cond(True, lambda: x, lambda: (x, x))
    with _raises(tr.ShapeError, 'switch', 'branch 2', 'f32[2]', 'f32[]'):
        ops.switch(1, [lambda: F32(0), lambda: F32(1), lambda: np.ones(2, F32)])
    with _raises(tr.TracerTypeError, 'switch', 'integer scalar', 'f32[]'):
        ops.switch(F32(1), BRANCHES, x)


# ------------------------------------------------------------------------------- scan
def _python_scan(f, carry, xs, reverse):
    ys = [None] * len(xs)
    for i in (reversed(range(len(xs))) if reverse else range(len(xs))):
        carry, ys[i] = f(carry, xs[i])
    return carry, np.array(ys, dtype=np.float64).reshape((len(xs),) + np.shape(carry))


@settings(max_examples=30)
@given(n=st.integers(0, 6), reverse=st.booleans())
def test_scan_matches_python_loop(n, reverse):
    xs = np.random.default_rng(n).standard_normal((n, 2))
    w = np.array([0.5, -1.0])

    def f(c, x):
        new = ops.add(ops.mul(c, w), x)
        return new, ops.mul(new, 2.0)
    want = _python_scan(lambda c, x: (c * w + x, (c * w + x) * 2), np.ones(2), xs, reverse)
    got = ops.scan(f, np.ones(2), xs, reverse=reverse)
    (c, ys), _ = _run(lambda xs: ops.scan(f, np.ones(2), xs, reverse=reverse), xs)
    for carry, stacked in (got, (c, ys)):
        np.testing.assert_allclose(carry, want[0], rtol=1e-12)
        np.testing.assert_allclose(stacked, want[1], rtol=1e-12)
        assert stacked.shape == (n, 2)


def test_scan_weak_init_is_retraced():
    xs = np.array([1., 2., 3.], F32)
    carry, ys = ops.scan(lambda c, x: (ops.add(ops.convert_element_type(c, F32), x), c), 0, xs)
    assert carry.dtype == F32 and carry == 6 and ys.dtype == F32
    np.testing.assert_array_equal(ys, [0, 1, 3])


def test_scan_closure_and_nesting():
    def outer(p, xs, w):
        def step(c, x):
            inner = ops.while_loop(lambda k: ops.lt(k[0], 3),
                                   lambda k: (ops.add(k[0], 1), ops.add(k[1], w)),
                                   (np.int32(0), x))
            return ops.add(c, inner[1]), inner[1]
        return ops.cond(p, lambda: ops.scan(step, np.zeros(2, F32), xs),
                        lambda: (w, xs))
    xs, w = np.arange(6, dtype=F32).reshape(3, 2), np.array([1., -1.], F32)
    (c, ys), graph = _run(outer, np.bool_(True), xs, w)
    np.testing.assert_array_equal(ys, xs + 3 * w)
    np.testing.assert_array_equal(c, (xs + 3 * w).sum(0))
    assert count_eqns(graph).by_op.keys() >= {"conditional", "scan", "while"}


def test_scan_errors():
    with _raises(tr.TracerValueError, 'scan', '[3, 4]'):
        ops.scan(lambda c, x: (c, x), 0.0, (np.ones(3), np.ones(4)))
    with _raises(tr.TracerValueError, 'scan', 'length=4', '3'):
        ops.scan(lambda c, x: (c, x), 0.0, np.ones(3), length=4)
    with _raises(tr.TracerValueError, 'scan', 'length must be given'):
        ops.scan(lambda c, x: (c, x), 0.0, None)
    with _raises(tr.ShapeError, 'scan', 'f64[]', 'f64[2]'):
        ops.scan(lambda c, x: (ops.add(x, c), x), 0.0, np.ones((3, 2)))
    with _raises(tr.TracerTypeError, 'scan', 'structure'):
        ops.scan(lambda c, x: ((c, c), x), 0.0, np.ones(3))
    with _raises(tr.TracerTypeError, 'scan', 'pair'):
        ops.scan(lambda c, x: c, 0.0, np.ones(3))


# ------------------------------------------------------------------------------- call
def test_call_pytrees_and_zero_args():
    assert ops.call(lambda: np.float32(2)) == 2
    out = ops.call(lambda d: {"a": ops.neg(d["x"]), "b": d["x"]}, {"x": np.ones(2, F32)})
    np.testing.assert_array_equal(out["a"], -np.ones(2))
    (a, b), graph = _run(lambda x: ops.call(lambda d: (ops.neg(d["x"]), d["x"]), {"x": x}),
                         np.ones(2, F32))
    np.testing.assert_array_equal(a, -b)
    assert "call(" in str(graph) and "to_apply=%region" in str(graph)


def test_shape_rules_recheck_subgraphs():
    """typecheck rejects a control-flow eqn whose sub-graph no longer fits its operands."""
    f32, f64 = ShapedArray((2,), F32), ShapedArray((2,), np.float64)
    body, _ = trace_flat(lambda x: [ops.neg(x)], [f64])
    x = Var(f32)
    out = Var(f32)
    eqn = Eqn(control.call_p, (x,), {"to_apply": body}, (out,))
    with _raises(tr.DTypeError, 'f64[2]', 'f32[2]'):
        typecheck(Graph((x,), (eqn,), (out,)))

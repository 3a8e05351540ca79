"""cpu backend: control flow (`cpu/emit/control.py`).

A large control-flow sub-graph that occurs more than once becomes one njit function of
the generated module, called at each occurrence; one that occurs once stays inline.
Results are bit-for-bit the interpreter's either way. (`OUTLINE_MIN_EQNS` is lowered
here so that small graphs, quick to compile, show the structure.)
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
import tracer.random as trr
from tracer import ops
from tracer.backend.cpu import cache as cpu_cache
from tracer.backend.cpu.emit import control as cpu_emit_control
from tracer.backend.cpu.emit.control import graph_size
from tracer.core import subgraphs
from tests.checks import threaded

COEF = np.linspace(0.1, 0.9, 5)


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(cpu_emit_control, "OUTLINE_MIN_EQNS", 4)


def _body(c):
    x, i = c
    y = tnp.sin(x) * 0.5 + tnp.cos(x) * COEF
    return tnp.where(y > 0, y, -y) + 0.125, i + 1


def _loop(x, n):
    return ops.while_loop(lambda c: c[1] < n, _body, (x, 0))[0]


def _compiled(f, *args):
    return tr.jit(f).lower(*args).compile()


def _same_as_interpreter(f, *args):
    got = tr.jit(f)(*args)
    want = tr.jit(f, backend="interpreter")(*args)
    for g, w in zip(tr.tree_util.tree_leaves(got), tr.tree_util.tree_leaves(want), strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def _defs(source, role):
    return re.findall(rf"^def ({role}_\d+)\(", source, re.MULTILINE)


def test_a_repeated_loop_body_is_one_function_called_twice(small_threshold):
    def f(a, b):
        return _loop(a, 3), _loop(b, 4)
    a, b = np.linspace(-1, 1, 5), np.linspace(2, 3, 5)
    source = _compiled(f, a, b).source
    [name] = _defs(source, "while_body")
    assert source.count(f"= {name}((") == 2  # (called with its sizes first)
    assert not _defs(source, "while_cond")  # (one compare: inline)
    _same_as_interpreter(f, a, b)


def test_a_loop_body_that_occurs_once_stays_inline(small_threshold):
    source = _compiled(lambda a: _loop(a, 3), COEF).source
    assert not _defs(source, "while_body") and source.count("while True:") == 1


def test_the_loops_inside_a_repeated_body_stay_inline_in_its_function(small_threshold):
    def outer(x):
        return ops.while_loop(lambda c: c[1] < 2, lambda c: (_loop(c[0], 3) * 0.5, c[1] + 1),
                              (x, 0))[0]
    def f(a, b):
        return outer(a), outer(b)
    a, b = COEF, COEF[::-1] * 2
    source = _compiled(f, a, b).source
    [name] = _defs(source, "while_body")
    function = source.split(f"def {name}(")[1].split("\n\n\n")[0]
    assert function.count("while True:") == 1  # the inner loop
    _same_as_interpreter(f, a, b)


def test_identical_branches_share_a_function_and_out_of_range_runs_the_last(small_threshold):
    def branch(x):
        return _body((x, 0))[0] * 2.0
    def f(i, x):
        return ops.switch(i, [branch, branch], x)
    source = _compiled(f, np.int32(0), COEF).source
    [name] = _defs(source, "case_branch")
    assert source.count(f"= {name}(") == 2
    for i in (0, 1, 7, -3):
        _same_as_interpreter(f, np.int32(i), COEF)


def test_repeated_scan_bodies_slice_rows_and_scalars_and_fill_ys(small_threshold):
    def step(c, x):
        y = tnp.sin(c * x) + tnp.cos(x) * 0.5
        return c + tnp.sum(y), y * 2.0
    def f(xs, rows):
        c1, ys1 = ops.scan(step, 0.5, xs)
        c2, ys2 = ops.scan(step, 1.5, xs * 2.0, reverse=True)
        c3, ys3 = ops.scan(step, 0.25, rows, reverse=True)
        c4, ys4 = ops.scan(step, 0.75, rows - 1.0)
        return c1, ys1, c2, ys2, c3, ys3, c4, ys4
    xs, rows = np.linspace(0, 1, 4), np.linspace(-1, 1, 12).reshape(4, 3)
    source = _compiled(f, xs, rows).source
    assert len(_defs(source, "scan_body")) == 2  # (scalars of a vector, rows of a matrix)
    _same_as_interpreter(f, xs, rows)


def test_a_graph_called_twice_is_one_function(small_threshold):
    def g(v):
        return tnp.exp(v) * v + tnp.sin(v) * 3.0 - v
    def f(a, b):
        return ops.call(g, a) + ops.call(g, b)
    source = _compiled(f, COEF, COEF * 2).source
    [name] = _defs(source, "called_graph")
    assert source.count(f"= {name}(") == 2
    _same_as_interpreter(f, COEF, COEF * 2)


def test_functions_read_their_sizes_from_the_caller_so_any_shape_reuses_them(small_threshold):
    def body(c):
        return tnp.sin(c[0]) * 0.5 + tnp.cos(c[0]) * 0.25, c[1] + 1
    def f(a, b):
        loop = lambda x: ops.while_loop(lambda c: c[1] < 2, body, (x, 0))[0]  # noqa: E731
        return loop(a), loop(b)
    jitted = tr.jit(f)
    jitted(np.ones(3), np.zeros(3))
    compiles = cpu_cache.STATS.compiles
    for n in (1, 7):
        a, b = np.linspace(0, 1, n), np.linspace(1, 2, n)
        got = jitted(a, b)
        want = tr.jit(f, backend="interpreter")(a, b)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert cpu_cache.STATS.compiles == compiles


def test_a_parallel_kernel_inside_a_function_keeps_a_module_wide_name(small_threshold):
    def body(c):
        x, i = c
        return tnp.sqrt(x * x + 0.5) / (1.0 + x * x), i + 1  # (exactly rounded ops)
    def f(a, b):
        loop = lambda x: ops.while_loop(lambda c: c[1] < 2, body, (x, 0))[0]  # noqa: E731
        return loop(a), loop(b)
    a = np.linspace(0, 1, 1 << 15)
    source = _compiled(f, a, a * 2).source
    kernels = re.findall(r"^def (parallel_\w+)\(", source, re.MULTILINE)
    assert bool(kernels) == threaded() and len(set(kernels)) == len(kernels)
    assert len(_defs(source, "while_body")) == 1
    _same_as_interpreter(f, a, a * 2)


def test_the_gamma_rejection_loop_tests_its_condition_once_per_round():
    # The state carries the `rejected` flag: the batched loop's condition (and the copy of
    # it the batched body evaluates to select) reads the flag instead of recomputing it.
    graph = tr.jit(lambda k: trr.gamma(k, 2.0, (3,))).lower(trr.key(0)).graph
    conditions = []

    def visit(g):
        for eqn in g.eqns:
            if eqn.op.name == "while":
                conditions.append(graph_size(eqn.params["condition"]))
            for sub in subgraphs(eqn.params):
                visit(sub)
    visit(graph)
    assert len(conditions) == 2 and max(conditions) <= 3

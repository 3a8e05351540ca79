"""Generic tests driven by the op table (tests/op_db.py).

For every case: the traced graph typechecks, every eqn's reference result has
exactly the shape and dtype its shape rule predicts, traced evaluation equals
eager evaluation, no NumPy warning leaks, and golden cases match the seeds.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.checks import ops_in
from tests.op_db import all_cases
from tracer.core import aval_of, typecheck
from tracer.interpret import run_graph
from tracer.ops import OPS
from tracer.tracing import trace_flat
from tracer.tree_util import tree_flatten

CASES = all_cases()


def _flat(x):
    return tree_flatten(x)[0]


def _trace(case):
    avals = [aval_of(a) for a in case.args]
    graph, captured = trace_flat(lambda *xs: _flat(case.fn(*xs)), avals, name=case.name)
    assert not captured
    return typecheck(graph)


def _inputs(case):
    return [np.asarray(a, dtype=aval_of(a).dtype) for a in case.args]


def _assert_same(got, want, case, exact):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (case.name, got.shape, want.shape)
    assert got.dtype == want.dtype, (case.name, got.dtype, want.dtype)
    if exact or got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=case.name)
    else:
        np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol, err_msg=case.name)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_reference_matches_shape_rule_and_eager(case):
    graph = _trace(case)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        traced = run_graph(graph, _inputs(case), check=True)
        eager = _flat(case.fn(*case.args))
    assert len(traced) == len(eager)
    for got, want in zip(traced, eager, strict=True):
        _assert_same(got, want, case, exact=True)


@pytest.mark.parametrize("case", [c for c in CASES if c.expected is not None],
                         ids=[c.name for c in CASES if c.expected is not None])
def test_golden(case):
    got = _flat(case.fn(*case.args))
    want = _flat(case.expected)
    assert len(got) == len(want), case.name
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        np.testing.assert_allclose(np.asarray(g).astype(w.dtype) if w.dtype.kind != "b" else g,
                                   w, rtol=case.rtol, atol=case.atol, err_msg=case.name)
        assert np.asarray(g).shape == w.shape, case.name


def test_every_op_is_covered_by_the_table():
    found: set[str] = set()
    for case in CASES:
        found |= ops_in(_trace(case))
    missing = sorted(set(OPS) - found)
    assert not missing, f"ops without an op-table case: {missing}"


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_record_is_complete(name):
    op = OPS[name]
    assert op.doc and len(op.doc.strip()) > 20, f"{name}: needs a doc with the seed rule"
    assert op.hlo_name and " " not in op.hlo_name
    assert callable(op.shape_rule) and callable(op.impl)
    assert op.batch is not None, f"{name}: needs a batching rule"
    if op.differentiable:
        assert op.jvp is not None, f"{name}: differentiable, so it needs a JVP rule"
    if op.linear:
        assert op.transpose is not None, f"{name}: linear, so it needs a transpose rule"

"""The C path against `tr.jit` on one op-table case per op (minutes: numba compiles each
case): `TRACER_AOT_C_SWEEP=1 python -m pytest tests/test_aot_c_sweep.py`. A program whose
optimized graph holds only ops of `tracer.aot.c_kernel.C_OPS` must build and match;
any other must be refused at compile time."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tracer as tr
from tests.op_db import all_cases
from tests.test_aot_c import _c_results, _fill
from tracer import aot, export
from tracer.aot.c_kernel import C_OPS
from tracer.core import aval_of, subgraphs
from tracer.tree_util import tree_flatten

pytestmark = pytest.mark.skipif(not os.environ.get("TRACER_AOT_C_SWEEP"),
                                reason="set TRACER_AOT_C_SWEEP=1 (takes minutes)")


def _first_case_per_op():
    seen = {}
    for case in all_cases():
        seen.setdefault(case.covered()[0], case)
    return list(seen.values())


CASES = _first_case_per_op()


def _ops(graph, found):
    for eqn in graph.eqns:
        found.add(eqn.op.name)
        for sub in subgraphs(eqn.params):
            _ops(sub, found)
    return found


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_c_library_matches_jit(case, tmp_path):
    avals = [aval_of(a).strip_weak() for a in case.args]

    def fn(*xs):
        return tree_flatten(case.fn(*xs))[0]
    name = "case_" + "".join(ch if ch.isalnum() else "_" for ch in case.name)[:40]
    try:
        graph = export.export(fn)(*avals).graph
    except tr.TracerError:  # (a Python function in the program: refused at export)
        graph = None
    if graph is None or not _ops(graph, set()) <= C_OPS:
        with pytest.raises(tr.TracerError):
            aot.compile(fn, *avals, name=name, out_dir=str(tmp_path))
        return
    aot.compile(fn, *avals, name=name, out_dir=str(tmp_path))
    want = tr.jit(fn)(*_fill(avals))
    for got, w in zip(_c_results(name, str(tmp_path)), want, strict=True):
        w = np.asarray(w)
        np.testing.assert_allclose(got.reshape(w.shape), w.astype(got.dtype), rtol=1e-5,
                                   atol=1e-6)

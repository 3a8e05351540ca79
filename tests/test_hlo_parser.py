"""The HLO text parser reads back everything `tracer.hlo` prints.

For every op-table case (control-flow sub-computations, tuples, custom calls and
composites included): parse(print(g)) prints the same text and runs, on the NumPy
reference interpreter, to bit-identical values.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
from tests.op_db import all_cases
from tests.test_op_table import _inputs, _trace
from tracer import ops
from tracer.core import subgraphs, typecheck
from tracer.export import HloSyntaxError, parse_hlo
from tracer.export.exported import check_serializable
from tracer.hlo import graph_to_text
from tracer.interpret import run_graph
from tracer.transforms.checkpoint import lower_ad_ops

CASES = all_cases()
# Ops whose params are Python functions (a custom_vjp rule in forward mode): HLO text
# cannot carry them, and export says so.
UNSERIALIZABLE = {"custom_lin"}


def _ops_in(graph, found):
    for eqn in graph.eqns:
        found.add(eqn.op.name)
        for sub in subgraphs(eqn.params):
            _ops_in(sub, found)
    return found


def _graph(case):
    return lower_ad_ops(_trace(case))  # AD-only ops are inlined before any backend sees them


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_parse_print_round_trip(case):
    graph = _graph(case)
    if _ops_in(graph, set()) & UNSERIALIZABLE:
        with pytest.raises(tr.TracerValueError, match="Python function"):
            check_serializable(graph, case.name)
        return
    text = graph_to_text(graph, case.name, full_literals=True)
    parsed, name = parse_hlo(text)
    typecheck(parsed)
    assert name == case.name
    assert graph_to_text(parsed, name, full_literals=True) == text
    assert graph_to_text(parsed, name) == graph_to_text(graph, case.name)
    want = run_graph(graph, _inputs(case))
    got = run_graph(parsed, _inputs(case))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w, err_msg=case.name)


def test_round_trip_covers_the_structures_export_needs():
    found = set()
    for case in CASES:
        _ops_in(_graph(case), found)
    assert {"while", "conditional", "scan", "call", "composite", "custom_call", "reduce",
            "sort", "scatter", "gather", "select_and_scatter", "conv_general_dilated"} <= found


def _module(fn, *args):
    return graph_to_text(lower_ad_ops(tr.make_hlo(fn)(*args).graph), "m", full_literals=True)


def test_elided_constant_is_refused_with_advice():
    big = np.arange(40.0)
    text = graph_to_text(tr.make_hlo(lambda x: ops.add(x, big))(big).graph, "m")
    assert "{...}" in text
    with pytest.raises(HloSyntaxError, match="full_literals=True"):
        parse_hlo(text)


@pytest.mark.parametrize("edit, message", [
    (("f32[3] add(", "f32[4] add("), "not the printed f32\\[4\\]"),
    (("add(", "frobnicate("), "unknown instruction 'frobnicate'"),
    (("Arg_0.1)", "nowhere.9)"), "nowhere.9 is used before it is defined"),
    (("ENTRY main {", "ENTRY main"), "expected a computation title"),
])
def test_corrupt_text_names_the_line(edit, message):
    text = _module(lambda x: ops.add(x, x), np.zeros(3, np.float32))
    assert edit[0] in text
    with pytest.raises(HloSyntaxError, match=message) as info:
        parse_hlo(text.replace(*edit, 1))
    assert isinstance(info.value, tr.TracerError) and isinstance(info.value, ValueError)
    assert "line" in str(info.value)

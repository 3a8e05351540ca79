"""The HLO text parser reads back everything `tracer.hlo` prints.

For every op-table case (control-flow sub-computations, tuples, custom calls and
composites included): parse(print(g)) prints the same text and runs, on the NumPy
reference interpreter, to bit-identical values.
"""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import tracer as tr
from tests.checks import ops_in
from tests.op_db import all_cases
from tests.test_op_table import _inputs, _trace
from tracer import ops
from tracer.core import typecheck
from tracer.export import HloSyntaxError, parse_hlo
from tracer.export.exported import check_serializable
from tracer.hlo import graph_to_text
from tracer.interpret import run_graph
from tracer.transforms.checkpoint import lower_ad_ops

CASES = all_cases()
# Ops whose params are Python functions (a custom_vjp rule in forward mode, host callbacks,
# debug printers): HLO text names them but cannot carry them; export and the parser say so.
UNSERIALIZABLE = {"custom_lin", "pure_callback", "io_callback", "debug_callback", "debug_print"}


def _graph(case):
    return lower_ad_ops(_trace(case))  # AD-only ops are inlined before any backend sees them


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_parse_print_round_trip(case):
    graph = _graph(case)
    held = ops_in(graph) & UNSERIALIZABLE
    if held:
        with pytest.raises(tr.TracerValueError, match="Python function"):
            check_serializable(graph, case.name)
        if held != {"custom_lin"}:
            with pytest.raises(HloSyntaxError, match="holds a Python function"):
                parse_hlo(graph_to_text(graph, case.name, full_literals=True))
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
        found |= ops_in(_graph(case))
    assert {"while", "conditional", "scan", "call", "composite", "custom_call", "reduce",
            "sort", "scatter", "gather", "select_and_scatter", "conv_general_dilated"} <= found


def test_outfeed_pytree_and_tokens_read_back():
    def feed(x):
        token = ops.outfeed({"a": x, "b": [x, None, (x,)]}, ops.create_token())
        return ops.after_all(token, ops.create_token())
    graph = tr.make_hlo(feed)(np.zeros(2, np.float32)).graph
    text = graph_to_text(graph, "feed", full_literals=True)
    assert "token[]" in text and "PyTreeDef(" in text
    parsed, _ = parse_hlo(text)
    assert graph_to_text(parsed, "feed", full_literals=True) == text
    (outfeed,) = [e for e in parsed.eqns if e.op.name == "outfeed"]
    (original,) = [e for e in graph.eqns if e.op.name == "outfeed"]
    assert outfeed.params["tree"] == original.params["tree"]


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


_DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int8, np.int64, np.uint8,
           np.uint64, np.bool_, np.float16]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_constants_of_every_dtype_read_back_bit_exact(data):
    """Constants (NaN, infinities, -0.0, integer extremes, complex) survive print and parse:
    the same values, and the same sign bits (NaN payloads and signs are not kept)."""
    dtype = data.draw(st.sampled_from(_DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    value = data.draw(hnp.arrays(dtype, shape))
    negate = ops.bitwise_not if dtype == np.bool_ else ops.neg
    graph = tr.make_hlo(lambda: negate(value))().graph
    parsed, _ = parse_hlo(graph_to_text(graph, "m", full_literals=True))
    (literal,) = [a for e in parsed.eqns for a in e.inputs]
    assert literal.value.dtype == value.dtype and literal.value.shape == value.shape
    got = literal.value
    np.testing.assert_array_equal(got, value)
    if value.dtype.kind in "fc":
        for part in (np.real, np.imag):
            keep = ~np.isnan(part(value))
            np.testing.assert_array_equal(np.signbit(part(got))[keep],
                                          np.signbit(part(value))[keep])

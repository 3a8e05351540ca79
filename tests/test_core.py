"""IR invariants: ShapedArray, typecheck, the HLO printer."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
from tracer import ops
from tracer.core import Eqn, Graph, Literal, ShapedArray, TypecheckError, Var, typecheck
from tracer.tracing import trace_flat


@pytest.mark.parametrize("shape,dtype,text", [
    ((2, 3), np.float32, "f32[2,3]"), ((), np.int64, "s64[]"), ((4,), np.bool_, "pred[4]"),
    ((8,), np.complex64, "c64[8]"), ((1, 0), np.uint8, "u8[1,0]"), ((), np.float16, "f16[]"),
])
def test_shaped_array_hlo_spelling(shape, dtype, text):
    assert str(ShapedArray(shape, dtype)) == text


def test_shaped_array_equality_and_hash():
    a, b = ShapedArray((2,), np.float32), ShapedArray([2], "float32")
    assert a == b and hash(a) == hash(b)
    assert a != ShapedArray((2,), np.float32, weak_type=True)
    assert a != ShapedArray((2,), np.float64)
    assert len({a, b}) == 1


def test_shaped_array_rejects_bad_shapes_and_dtypes():
    with pytest.raises(tr.TracerError):
        ShapedArray((-1,), np.float32)
    with pytest.raises(TypeError):
        ShapedArray((2,), np.dtype("U3"))


def _graph():
    f32 = ShapedArray((3,), np.float32)
    return trace_flat(lambda x, y: [ops.add(ops.mul(x, y), 1.0)], [f32, f32])[0]


def test_typecheck_accepts_traced_graph():
    assert typecheck(_graph())


def test_typecheck_rejects_use_before_definition():
    g = _graph()
    bad = Graph(g.inputs, tuple(reversed(g.eqns)), g.outputs)
    with pytest.raises(TypecheckError, match="before it is defined"):
        typecheck(bad)


def test_typecheck_rejects_wrong_output_aval():
    g = _graph()
    eqn = g.eqns[0]
    wrong = Eqn(eqn.op, eqn.inputs, eqn.params, (Var(ShapedArray((4,), np.float32)),), eqn.source)
    bad = Graph(g.inputs, (wrong,) + g.eqns[1:], g.outputs)
    with pytest.raises(TypecheckError):
        typecheck(bad)


def test_typecheck_rejects_non_ssa():
    g = _graph()
    e0 = g.eqns[0]
    dup = Eqn(e0.op, e0.inputs, e0.params, e0.outputs, e0.source)
    with pytest.raises(TypecheckError, match="twice"):
        typecheck(Graph(g.inputs, (e0, dup) + g.eqns[1:], g.outputs))


def test_hlo_text_one_instruction_a_line_with_source():
    def f(x, y):
        return x + y  # the line recorded as source_line

    text = str(tr.make_hlo(f)(np.ones(3, np.float32), np.ones(3, np.float32)))
    assert "HloModule jit_f" in text
    assert "  Arg_0.1 = f32[3] parameter(0)" in text
    assert "  Arg_1.2 = f32[3] parameter(1)" in text
    assert "ROOT add.3 = f32[3] add(Arg_0.1, Arg_1.2)" in text
    line = f.__code__.co_firstlineno + 1
    assert f'source_file="test_core.py" source_line={line}' in text
    html = tr.make_hlo(f)(np.ones(3), np.ones(3))._repr_html_()
    assert "<pre" in html and "<svg" in html and "add.3 = f64[3]" in html


def test_hlo_text_prints_subcomputations_and_constants():
    def f(x):
        return ops.reduce(x, np.float32(0), ops.add, (0,)) * 2.0

    text = str(tr.make_hlo(f)(np.ones(4, np.float32)))
    assert "region_0" in text and "to_apply=%region_0" in text or "computation=%region_0" in text
    assert "constant(2.0)" in text
    assert "dimensions={0}" in text


def test_literal_keeps_value_and_dtype():
    lit = Literal(np.float32(1.5))
    assert lit.aval == ShapedArray((), np.float32)
    weak = Literal(2)
    assert weak.aval.weak_type and weak.aval.dtype == np.int64

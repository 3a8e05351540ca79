"""Graph passes: simplify, CSE, constant folding, and the pipeline that runs them.

Every pass must keep a graph's meaning bit for bit (NaN, inf and signed zeros
included) and its types (weak_type included), typecheck afterwards, leave its
input untouched, reach into sub-graphs, and actually remove the work it targets.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer import ops
from tracer.config import config
from tracer.core import Eqn, Graph, Literal, ShapedArray, Var, count_eqns, typecheck
from tracer.hlo import graph_to_text
from tracer.interpret import run_graph
from tracer.ops.registry import OPS, Op
from tracer.passes.cse import cse
from tracer.passes.dce import dce
from tracer.passes.fold import MAX_FOLD_ELEMENTS, fold_constants
from tracer.passes.pipeline import PIPELINE, optimize
from tracer.passes.simplify import simplify
from tracer.tracing import trace_flat

F32, F64, I32, C64 = np.float32, np.float64, np.int32, np.complex64
PASSES = {"simplify": simplify, "cse": cse, "fold": fold_constants, "optimize": optimize}


@pytest.fixture(autouse=True)
def _checks_on():
    with config.override(runtime_checks=True):
        yield


def _trace(fn, *avals):
    graph, captured = trace_flat(lambda *xs: list(_as_list(fn(*xs))), avals)
    assert not captured
    return typecheck(graph)


def _as_list(out):
    return out if isinstance(out, (list, tuple)) else [out]


def _aval(shape, dtype, weak=False):
    return ShapedArray(shape, dtype, weak_type=weak)


def _assert_bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind in "fc":  # assert_array_equal treats -0.0 == 0.0
        for part in (np.real, np.imag):
            np.testing.assert_array_equal(np.signbit(part(got)), np.signbit(part(want)))


def _check_pass(run, graph, args):
    """`run(graph)` typechecks, leaves `graph` alone, and computes the same bits."""
    before = graph_to_text(graph)
    new = typecheck(run(graph))
    assert graph_to_text(graph) == before
    assert new.out_avals == graph.out_avals
    for got, want in zip(run_graph(new, args, check=True), run_graph(graph, args, check=True),
                         strict=True):
        _assert_bits_equal(got, want)
    return new


def _count(graph, name=None):
    stats = count_eqns(graph)
    return stats.eqns if name is None else stats.by_op.get(name, 0)


SPECIAL_F32 = np.array([0.0, -0.0, 1.0, -1.5, np.nan, np.inf, -np.inf, 3e38], F32)


# ------------------------------------------------------- random element-wise programs
FLOAT_UNARY = ("neg", "sin", "abs", "exp", "floor")
INT_UNARY = ("neg", "abs")
BINARY = ("add", "sub", "mul", "div", "max", "min")
FLOAT_CONSTS = (0.0, -0.0, 1.0, -1.0, 2.0, np.nan, np.inf)
INT_CONSTS = (0, 1, -1, 7, 2**31 - 1)


@st.composite
def _programs(draw, dtype):
    """Steps of a DAG over inputs x, y: each reads earlier values by index."""
    consts = FLOAT_CONSTS if np.dtype(dtype).kind == "f" else INT_CONSTS
    unary = FLOAT_UNARY if np.dtype(dtype).kind == "f" else INT_UNARY
    steps = []
    for i in range(draw(st.integers(1, 8))):
        value = st.integers(0, i + 1)
        kind = draw(st.sampled_from(("unary", "binary", "const", "fold", "select", "convert")))
        steps.append((kind, draw(st.sampled_from(unary if kind == "unary" else BINARY)),
                      draw(value), draw(value), draw(st.sampled_from(consts)),
                      draw(st.sampled_from(consts)), draw(st.booleans())))
    return steps


def _build(steps, dtype):
    def fn(x, y):
        vals = [x, y]
        for kind, op, a, b, c1, c2, flag in steps:
            k1, k2 = np.asarray(c1, dtype), np.asarray(c2, dtype)
            f = getattr(ops, op)
            if kind == "unary":
                out = f(vals[a])
            elif kind == "binary":
                out = f(vals[a], vals[b])
            elif kind == "const":  # x op c or c op x, the shapes simplify targets
                out = f(vals[a], k1) if flag else f(k1, vals[a])
            elif kind == "fold":  # an all-constant sub-expression
                out = ops.add(vals[a], f(k1, k2))
            elif kind == "select":
                pred = np.bool_(flag) if c1 == c2 else ops.gt(vals[a], vals[b])
                out = ops.select(pred, vals[a], vals[b])
            else:
                out = ops.convert_element_type(vals[a], dtype)
            vals.append(out)
        return [vals[-1], vals[len(vals) // 2]]
    return fn


def _inputs(draw_data, dtype, n=8):
    if np.dtype(dtype).kind == "f":
        elems = st.sampled_from(list(SPECIAL_F32)) | st.floats(-1e3, 1e3, width=32)
    else:
        elems = st.integers(-2**31, 2**31 - 1)
    return [np.array(draw_data.draw(st.lists(elems, min_size=n, max_size=n)), dtype)
            for _ in range(2)]


@settings(max_examples=40)
@given(st.data(), st.sampled_from([F32, F64, I32]), st.sampled_from(sorted(PASSES)))
def test_random_programs_keep_their_bits(data, dtype, pass_name):
    steps = data.draw(_programs(dtype))
    graph = _trace(_build(steps, dtype), _aval((8,), dtype), _aval((8,), dtype))
    new = _check_pass(PASSES[pass_name], graph, _inputs(data, dtype))
    assert _count(new) <= _count(graph)


# ------------------------------------------------------------------------ simplify
@pytest.mark.parametrize("fn", [
    lambda x: ops.add(ops.mul(x, 1), 0),
    lambda x: ops.sub(ops.div(x, 1), 0),
    lambda x: ops.add(0, ops.mul(1, x)),
    lambda x: ops.neg(ops.neg(x)),
    lambda x: ops.convert_element_type(x, I32),
])
def test_integer_identities_leave_no_eqns(fn):
    graph = _trace(fn, _aval((3,), I32))
    new = _check_pass(optimize, graph, [np.array([-(2**31), 0, 7], I32)])
    assert new.eqns == () and new.outputs[0] is graph.inputs[0]


@pytest.mark.parametrize("fn, removed", [
    (lambda x: ops.add(x, np.float32(-0.0)), True),
    (lambda x: ops.add(np.float32(-0.0), x), True),
    (lambda x: ops.add(x, 0.0), False),          # -0.0 + 0.0 is +0.0
    (lambda x: ops.add(np.float32(0.0), x), False),
    (lambda x: ops.sub(x, 0.0), True),
    (lambda x: ops.sub(x, np.float32(-0.0)), False),
    (lambda x: ops.sub(0.0, x), False),
    (lambda x: ops.mul(x, 1.0), True),
    (lambda x: ops.mul(1.0, x), True),
    (lambda x: ops.mul(x, 2.0), False),
    (lambda x: ops.div(x, 1.0), True),
    (lambda x: ops.div(1.0, x), False),
    (lambda x: ops.mul(x, np.array([1, 1, 1, 1, 1, 1, 1, 1], F32)), True),
    (lambda x: ops.mul(x, np.array([1, 1, 1, 1, 1, 1, 1, -1], F32)), False),
])
def test_float_identities_respect_signed_zero(fn, removed):
    graph = _trace(fn, _aval((8,), F32))
    new = _check_pass(simplify, graph, [SPECIAL_F32])
    assert _count(new) == (0 if removed else 1)


def _spread(value):
    return ops.broadcast_in_dim(value, (8,), ())


@pytest.mark.parametrize("fn, op, removed", [
    (lambda x: ops.mul(_spread(np.float32(1)), x), "mul", True),  # a gradient's seed
    (lambda x: ops.mul(x, _spread(np.float32(2))), "mul", False),
    (lambda x: ops.div(x, _spread(np.float32(1))), "div", True),
    (lambda x: ops.add(_spread(np.float32(-0.0)), x), "add", True),
    (lambda x: ops.add(x, _spread(np.float32(0.0))), "add", False),  # -0.0 + 0.0 is +0.0
])
def test_identities_see_through_a_broadcast_constant(fn, op, removed):
    new = _check_pass(simplify, _trace(fn, _aval((8,), F32)), [SPECIAL_F32])
    assert any(e.op.name == op for e in new.eqns) != removed


@pytest.mark.parametrize("fn, removed", [
    (lambda x: ops.mul(x, np.complex64(1)), False),   # (inf+0j)*(1+0j) is not inf+0j
    (lambda x: ops.div(x, np.complex64(1)), False),
    (lambda x: ops.add(x, np.complex64(complex(-0.0, -0.0))), True),
    (lambda x: ops.add(x, np.complex64(complex(-0.0, 0.0))), False),
    (lambda x: ops.sub(x, np.complex64(0)), True),
])
def test_complex_identities(fn, removed):
    x = np.array([complex(np.inf, 0), complex(-0.0, -0.0), complex(np.nan, 1)], C64)
    new = _check_pass(simplify, _trace(fn, _aval((3,), C64)), [x])
    assert _count(new) == (0 if removed else 1)


def test_simplify_never_changes_a_weak_output():
    x = Var(_aval((3,), F32, weak=True))
    one = Literal(np.float32(1), _aval((), F32))
    out = Var(_aval((3,), F32))  # weak * strong is strong: replacing it by x would be wrong
    graph = typecheck(Graph((x,), (Eqn(OPS["mul"], (x, one), {"broadcast_dimensions": None},
                                       (out,)),), (out,)))
    assert simplify(graph) is graph
    weak = _trace(lambda x: ops.convert_element_type(x, F32), _aval((3,), F32, weak=True))
    assert _count(simplify(weak)) == 1  # convert makes the weak value strong


@pytest.mark.parametrize("pred, branch", [(True, 0), (False, 1)])
def test_select_with_constant_predicate(pred, branch):
    graph = _trace(lambda x, y: ops.select(np.bool_(pred), x, y), _aval((2,), F32),
                   _aval((2,), F32))
    new = _check_pass(simplify, graph, [np.array([1, 2], F32), np.array([3, 4], F32)])
    assert new.eqns == () and new.outputs[0] is graph.inputs[branch]


def test_select_of_one_value_and_of_a_varying_predicate():
    graph = _trace(lambda p, x, y: [ops.select(p, x, x), ops.select(p, x, y)],
                   _aval((2,), np.bool_), _aval((2,), F32), _aval((2,), F32))
    new = _check_pass(simplify, graph, [np.array([True, False]), np.ones(2, F32),
                                        np.zeros(2, F32)])
    assert _count(new) == 1 and new.outputs[0] is graph.inputs[1]


SHAPE_NO_OPS = [
    lambda x: ops.transpose(x, (0, 1)),
    lambda x: ops.reshape(x, (2, 3)),
    lambda x: ops.broadcast_in_dim(x, (2, 3), (0, 1)),
    lambda x: ops.slice(x, (0, 0), (2, 3)),
    lambda x: ops.slice(x, (0, 0), (2, 3), (1, 1)),
    lambda x: ops.pad(x, np.float32(7), [(0, 0, 0), (0, 0, 0)]),
    lambda x: ops.concatenate([x], 1),
    lambda x: ops.rev(x, ()),
]
SHAPE_KEPT = [  # (fn, operand shape, the op that must stay)
    (lambda x: ops.transpose(ops.reshape(x, (3, 3)), (1, 0)), (9,), "transpose"),
    (lambda x: ops.reshape(x, (3, 3), (1, 0)), (3, 3), "transpose"),  # its reshape goes
    (lambda x: ops.slice(x, (1, 0), (3, 3)), (3, 3), "slice"),
    (lambda x: ops.slice(x, (0, 0), (3, 3), (2, 1)), (3, 3), "slice"),
    (lambda x: ops.pad(x, np.float32(7), [(1, -1, 0), (0, 0, 0)]), (3, 3), "pad"),
    (lambda x: ops.rev(x, (0,)), (3, 3), "rev"),
]


@pytest.mark.parametrize("fn", SHAPE_NO_OPS)
def test_shape_no_ops_are_removed(fn):
    graph = _trace(fn, _aval((2, 3), F32))
    new = _check_pass(simplify, graph, [np.arange(6, dtype=F32).reshape(2, 3)])
    assert new.eqns == () and new.outputs[0] is graph.inputs[0]


@pytest.mark.parametrize("fn, shape, kept", SHAPE_KEPT)
def test_shape_ops_that_move_data_are_kept(fn, shape, kept):
    graph = _trace(fn, _aval(shape, F32))
    new = _check_pass(simplify, graph, [np.arange(9, dtype=F32).reshape(shape)])
    assert _count(new, kept) == 1


def test_rev_of_size_one_dims_is_removed():
    graph = _trace(lambda x: ops.rev(x, (0, 2)), _aval((1, 3, 1), F32))
    assert simplify(graph).eqns == ()


def test_simplify_keeps_sources_and_returns_unchanged_graphs():
    graph = _trace(lambda x: ops.sin(ops.mul(x, 1.0)), _aval((2,), F32))
    new = simplify(graph)
    assert [e.source for e in new.eqns] == [graph.eqns[1].source]
    assert new.eqns[0].inputs[0] is graph.inputs[0]
    assert simplify(new) is new


# ----------------------------------------------------------------------------- CSE
def test_cse_merges_repeated_work():
    graph = _trace(lambda x: ops.add(ops.sin(x), ops.sin(x)), _aval((4,), F32))
    new = _check_pass(cse, graph, [SPECIAL_F32[:4]])
    assert _count(new, "sin") == 1
    add = new.eqns[-1]
    assert add.inputs[0] is add.inputs[1]
    assert new.eqns[0].source == graph.eqns[0].source


def test_cse_merges_chains_and_literals_of_equal_bits():
    def fn(x):
        a = ops.exp(ops.add(x, np.float32(2)))
        b = ops.exp(ops.add(x, np.float32(2)))
        return ops.mul(a, b)
    new = _check_pass(cse, _trace(fn, _aval((8,), F32)), [SPECIAL_F32])
    assert _count(new) == 3


@pytest.mark.parametrize("fn", [
    lambda x: [ops.add(x, np.float32(0.0)), ops.add(x, np.float32(-0.0))],
    lambda x: [ops.add(x, np.float32(1)), ops.add(x, np.array([1.0], F32))],
    lambda x: [ops.lt(x, x), ops.gt(x, x)],
    lambda x: [ops.lt(x, x), ops.lt(x, x, total_order=True)],
    lambda x: [ops.convert_element_type(x, F64), ops.convert_element_type(x, I32)],
])
def test_cse_keeps_different_computations(fn):
    graph = _trace(fn, _aval((1,), F32))
    new = _check_pass(cse, graph, [np.array([-0.0], F32)])
    assert _count(new) == _count(graph)


def _fake_op(name, effectful):
    op = Op(name, lambda x: x, lambda x: np.asarray(x), "test op")
    op.effectful = effectful
    return op


def _twice(op, x_aval):
    x = Var(x_aval)
    a, b = Var(x_aval), Var(x_aval)
    eqns = (Eqn(op, (x,), {}, (a,)), Eqn(op, (x,), {}, (b,)))
    return typecheck(Graph((x,), eqns, (a, b)))


@pytest.mark.parametrize("effectful", [True, False])
def test_cse_never_merges_effectful_ops(effectful):
    graph = _twice(_fake_op("test_effect", effectful), _aval((2,), F32))
    assert len(cse(graph).eqns) == (2 if effectful else 1)
    assert len(fold_constants(graph).eqns) == 2  # no Literal inputs: nothing to fold


def _while_graph(n_sins):
    def body(c):
        i, v = c
        return ops.add(i, np.int32(1)), ops.add(ops.sin(v), ops.sin(v)) if n_sins == 2 \
            else ops.sin(v)
    return _trace(lambda x: list(ops.while_loop(lambda c: ops.lt(c[0], np.int32(3)), body,
                                                (np.int32(0), x))), _aval((4,), F32))


def test_passes_reach_into_loop_bodies():
    graph = _while_graph(2)
    assert _count(graph, "sin") == 2
    new = _check_pass(optimize, graph, [SPECIAL_F32[:4]])
    assert _count(new, "sin") == 1
    assert new.eqns[0].params["body"] is not graph.eqns[0].params["body"]


def test_cse_merges_loops_sharing_a_body_and_optimizes_it_once():
    graph = _while_graph(2)
    (loop,) = graph.eqns
    again = Eqn(loop.op, loop.inputs, dict(loop.params), tuple(Var(v.aval) for v in loop.outputs),
                loop.source)
    doubled = typecheck(Graph(graph.inputs, (loop, again), graph.outputs + again.outputs))
    new = _check_pass(cse, doubled, [SPECIAL_F32[:4]])
    assert _count(new, "while") == 1 and _count(new, "sin") == 1
    assert new.outputs[2] is new.outputs[0] and new.outputs[3] is new.outputs[1]


def test_shared_sub_graphs_stay_shared():
    graph = _while_graph(2)
    (loop,) = graph.eqns
    other = Eqn(loop.op, (Literal(np.int32(1)), loop.inputs[1]), dict(loop.params),
                tuple(Var(v.aval) for v in loop.outputs), loop.source)
    doubled = typecheck(Graph(graph.inputs, (loop, other), graph.outputs + other.outputs))
    new = _check_pass(simplify, _check_pass(cse, doubled, [SPECIAL_F32[:4]]),
                      [SPECIAL_F32[:4]])
    assert new.eqns[0].params["body"] is new.eqns[1].params["body"]


# ------------------------------------------------------------------ constant folding
def test_fold_replaces_constant_work_by_literals():
    graph = _trace(lambda x: ops.mul(x, ops.add(np.float32(2), np.float32(3))),
                   _aval((2,), F32))
    new = _check_pass(fold_constants, graph, [np.array([1, -0.0], F32)])
    assert _count(new) == 1
    lit = new.eqns[0].inputs[1]
    assert isinstance(lit, Literal) and lit.aval == ShapedArray((), F32) and lit.value == 5


def test_fold_keeps_weak_types_and_quiet_numpy():
    graph = _trace(lambda: [ops.add(2.0, 3.0), ops.div(np.float32(0), np.float32(0)),
                            ops.div(np.int32(1), np.int32(0))])
    with np.errstate(all="raise"):
        new = _check_pass(fold_constants, graph, [])
    assert new.eqns == ()
    assert new.outputs[0].aval == graph.outputs[0].aval and new.outputs[0].aval.weak_type
    assert np.isnan(new.outputs[1].value) and new.outputs[2].value == -1


def test_fold_skips_large_results_loops_and_operandless_ops():
    big = np.ones(MAX_FOLD_ELEMENTS + 1, F32)
    small = np.ones(MAX_FOLD_ELEMENTS, F32)
    graph = _trace(lambda: [ops.add(big, np.float32(1)), ops.add(small, np.float32(1)),
                            ops.iota(I32, (4,), 0)])
    new = _check_pass(fold_constants, graph, [])
    assert [e.op.name for e in new.eqns] == ["add", "iota"]
    loop = _trace(lambda: ops.while_loop(lambda c: ops.lt(c, np.int32(3)),
                                         lambda c: ops.add(c, np.int32(1)), np.int32(0)))
    assert fold_constants(loop) is loop


def test_fold_spreads_constants_at_the_top_level_and_keeps_broadcasts_in_loop_bodies():
    """A loop body's broadcast of a constant stays a broadcast (a literal in its
    function's code, not an array parameter); the same broadcast at the top level folds
    (an array the module takes, whatever its value)."""
    spread = lambda: ops.broadcast_in_dim(np.float32(2), (3,), ())  # noqa: E731

    def f(x):
        return ops.while_loop(lambda c: ops.lt(c[1], np.int32(3)),
                              lambda c: (ops.mul(c[0], spread()), ops.add(c[1], np.int32(1))),
                              (ops.add(x, spread()), np.int32(0)))[0]
    x = np.array([1, -0.0, 3], F32)
    new = _check_pass(fold_constants, _trace(f, _aval((3,), F32)), [x])
    top = [e.op.name for e in new.eqns]
    body = new.eqns[top.index("while")].params["body"]
    assert "broadcast_in_dim" not in top and isinstance(new.eqns[0].inputs[1], Literal)
    assert [e.op.name for e in body.eqns].count("broadcast_in_dim") == 1


# ------------------------------------------------------------------------- pipeline
def test_pipeline_order_and_result():
    assert [name for name, _ in PIPELINE] == ["lower_ad_ops", "simplify", "cse", "fold",
                                              "simplify", "dce"]
    graph = _trace(lambda x: ops.add(ops.mul(ops.sin(x), ops.sub(np.float32(3), np.float32(2))),
                                     ops.sin(x)), _aval((8,), F32))
    new = _check_pass(optimize, graph, [SPECIAL_F32])
    assert sorted(e.op.name for e in new.eqns) == ["add", "sin"]


def test_pipeline_dumps_one_file_per_pass(tmp_path):
    graph = _trace(lambda x: ops.add(x, ops.neg(ops.neg(x))), _aval((2,), F32))
    with config.override(dump_dir=str(tmp_path)):
        optimize(graph, "model")
    names = sorted(n for n in os.listdir(tmp_path) if n.endswith(".hlo.txt"))
    assert names == ["model.00.input.hlo.txt", "model.01.lower_ad_ops.hlo.txt",
                     "model.02.simplify.hlo.txt", "model.03.cse.hlo.txt", "model.04.fold.hlo.txt",
                     "model.05.simplify.hlo.txt", "model.06.dce.hlo.txt"]
    dots = sorted(n for n in os.listdir(tmp_path) if n.endswith(".dot"))  # a graph beside each
    assert dots == [n.replace(".hlo.txt", ".dot") for n in names]
    final = (tmp_path / names[-1]).read_text()
    assert "negate" not in final and "add" in final
    assert "negate" in (tmp_path / names[2]).read_text()  # bypassed, dropped later by dce


def test_dce_after_simplify_drops_bypassed_eqns():
    graph = _trace(lambda x: ops.neg(ops.neg(x)), _aval((2,), F32))
    assert len(simplify(graph).eqns) == 1 and dce(simplify(graph)).eqns == ()

"""JVP, transpose and batching rules of the element-wise ops, tested eagerly and
traced: JVPs against central finite differences in float64 (and complex128),
tangent linearity, transposes by the inner-product identity
Re<ct, L(v)> = Re<L^T(ct), v>, batching against loop-and-stack over batch dims
at every position (negative too) or None, with the seeds' broadcasting."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracer.core import ShapedArray
from tracer.interpret import run_graph
from tracer.ops import OPS
from tracer.ops import elementwise as ew
from tracer.ops.ad import UndefinedPrimal, Zero, aval_of_value
from tracer.ops.elementwise_rules import ELEMENTWISE_OPS
from tracer.tracing import trace_flat

f32, f64, c128, i32 = np.float32, np.float64, np.complex128, np.int32
EPS = 1e-6


def U(rng, shape, dtype=f64):  # test data helpers
    x = rng.uniform(-2, 2, shape)
    return np.asarray(x + 1j * rng.uniform(-2, 2, shape) if dtype == c128 else x, dtype)


def POS(rng, shape, dtype=f64):  # real part in [0.5, 2]
    x = rng.uniform(0.5, 2, shape)
    return np.asarray(x + 1j * rng.uniform(-1, 1, shape) if dtype == c128 else x, dtype)


def AWAY(rng, shape, dtype=f64):  # |x| in [0.5, 2]
    return np.asarray(rng.choice([-1.0, 1.0], shape) * POS(rng, shape, dtype), dtype)


def SMALL(rng, shape, dtype=f64):  # for tan: away from the poles
    return np.asarray(U(rng, shape, dtype) * 0.6, dtype)


# (lhs shape, rhs shape, broadcast_dimensions): every seed broadcasting form
BINARY_SHAPES = [((3, 4), (3, 4), None), ((3, 4), (), None), ((), (3, 4), None),
                 ((3, 4), (4,), (1,)), ((3,), (3, 4), (0,)), ((3, 1), (1, 4), None),
                 ((4,), (1, 2), (0,)), ((), (), None)]
BINARY = {"add": (U, U), "sub": (U, U), "mul": (U, U), "div": (U, AWAY), "rem": (U, AWAY),
          "max": (U, U), "min": (U, U), "pow": (POS, U), "atan2": (AWAY, AWAY),
          "complex": (U, U)}
COMPLEX_BINARY = ("add", "sub", "mul", "div", "pow")
UNARY = {"abs": AWAY, "exp": U, "expm1": U, "log": POS, "log1p": POS, "logistic": U,
         "neg": U, "sin": U, "cos": U, "tan": SMALL, "tanh": U, "sqrt": POS, "rsqrt": POS,
         "cbrt": AWAY, "erf": U, "real": U, "imag": U}
COMPLEX_UNARY = ("abs", "exp", "expm1", "log", "log1p", "logistic", "neg", "sin", "cos",
                 "tan", "tanh", "sqrt", "rsqrt", "real", "imag")


def inner(a, b) -> float:  # the real pairing transposes are defined by
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def traced(fn, args):  # run fn traced, checking impls against avals
    avals = [ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args]
    graph, captured = trace_flat(lambda *xs: list(fn(*xs)), avals)
    assert not captured
    return run_graph(graph, list(args), check=True)


# ---------------------------------------------------------------- JVP

def check_jvp(op, primals, tangents, params, rtol=1e-6, atol=1e-8):
    """The rule's tangent against central differences, eager and traced."""
    out, tan = op.jvp(primals, tangents, **params)
    assert not isinstance(tan, Zero)
    assert aval_of_value(tan).shape == np.shape(out)
    assert aval_of_value(tan).dtype == np.asarray(out).dtype
    inst = [np.zeros_like(p) if isinstance(t, Zero) else t for p, t in zip(primals, tangents)]
    plus = op.bind(*(p + EPS * t for p, t in zip(primals, inst)), **params)
    minus = op.bind(*(p - EPS * t for p, t in zip(primals, inst)), **params)
    np.testing.assert_allclose(tan, (plus - minus) / (2 * EPS), rtol=rtol, atol=atol)
    live = [i for i, t in enumerate(tangents) if not isinstance(t, Zero)]

    def fn(*xs):  # same JVP with traced primals and tangents
        ts = list(tangents)
        for i, x in zip(live, xs[len(primals):]):
            ts[i] = x
        return [op.jvp(list(xs[:len(primals)]), ts, **params)[1]]
    (got,) = traced(fn, [*primals, *(tangents[i] for i in live)])
    np.testing.assert_allclose(got, tan, rtol=1e-12, atol=1e-14)
    return tan


def binary_cases(dtype=f64):
    names = BINARY if dtype == f64 else COMPLEX_BINARY
    for name, (ls, rs, dims) in itertools.product(names, BINARY_SHAPES):
        yield pytest.param(name, ls, rs, dims, dtype,
                           id=f"{name}-{ls}-{rs}-{dims}-{dtype.__name__}")


@pytest.mark.parametrize("name,ls,rs,dims,dtype", [*binary_cases(), *binary_cases(c128)])
def test_binary_jvp(name, ls, rs, dims, dtype) -> None:
    rng = np.random.default_rng(hash((name, ls, rs)) % 2**32)
    gx, gy = BINARY[name]
    x, y = gx(rng, ls, dtype), gy(rng, rs, dtype)
    tx, ty = U(rng, ls, dtype), U(rng, rs, dtype)
    op, params = OPS[name], {"broadcast_dimensions": dims}
    both = check_jvp(op, [x, y], [tx, ty], params)
    lhs = check_jvp(op, [x, y], [tx, Zero(aval_of_value(y))], params)
    rhs = check_jvp(op, [x, y], [Zero(aval_of_value(x)), ty], params)
    np.testing.assert_allclose(both, lhs + rhs, rtol=1e-12, atol=1e-14)  # linear in (tx, ty)
    _, scaled = op.jvp([x, y], [2.5 * tx, 2.5 * ty], **params)
    np.testing.assert_allclose(scaled, 2.5 * both, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,dtype", [*((n, f64) for n in UNARY),
                                        *((n, c128) for n in COMPLEX_UNARY)])
def test_unary_jvp(name, dtype) -> None:
    rng = np.random.default_rng(len(name))
    x = UNARY[name](rng, (2, 5), dtype)
    t1, t2 = U(rng, (2, 5), dtype), U(rng, (2, 5), dtype)
    op = OPS[name]
    a, b = check_jvp(op, [x], [t1], {}), check_jvp(op, [x], [t2], {})
    check_jvp(op, [np.asarray(x[0, 0])], [np.asarray(t1[0, 0])], {})  # a scalar
    _, ab = op.jvp([x], [t1 - 3 * t2])
    np.testing.assert_allclose(ab, a - 3 * b, rtol=1e-10, atol=1e-12)


def test_jvp_matches_jax_formulas_at_special_points() -> None:
    x, y = np.array([0.0, 0.0, 2.0, 3.0]), np.array([0.0, 2.0, 2.0, 3.0])
    t = np.ones(4)
    _, dx = ew.pow_p.jvp([x, y], [t, Zero(aval_of_value(y))], broadcast_dimensions=None)
    np.testing.assert_allclose(dx, [0.0, 0.0, 4.0, 27.0])  # 0**0 and 0**2: derivative 0
    _, dy = ew.pow_p.jvp([x, y], [Zero(aval_of_value(x)), t], broadcast_dimensions=None)
    np.testing.assert_allclose(dy, [0.0, 0.0, 4 * math.log(2), 27 * math.log(3)])
    for op in (ew.max_p, ew.min_p):  # ties split the tangent half and half
        _, tie = op.jvp([x, x], [t, 3 * t], broadcast_dimensions=None)
        np.testing.assert_allclose(tie, 2 * t)
    _, inf_tan = ew.max_p.jvp([np.array([np.inf]), np.array([1.0])], [np.ones(1), np.ones(1)],
                              broadcast_dimensions=None)
    np.testing.assert_array_equal(inf_tan, [1.0])  # no NaN from inf * 0
    _, d = ew.abs_p.jvp([np.array([0j, 3 + 4j])], [np.array([1 + 1j, 1 + 1j])])
    np.testing.assert_allclose(d, [0.0, 7 / 5])


@pytest.mark.parametrize("lo_shape,hi_shape", [((), ()), ((5,), ()), ((), (5,)), ((5,), (5,))])
def test_clamp_jvp(lo_shape, hi_shape) -> None:
    rng = np.random.default_rng(7)
    lo = np.asarray(rng.uniform(-1.0, -0.3, lo_shape))
    hi = np.asarray(rng.uniform(0.3, 1.0, hi_shape))
    x = rng.uniform(-2, 2, (5,))
    ts = [U(rng, lo_shape), U(rng, (5,)), U(rng, hi_shape)]
    check_jvp(ew.clamp_p, [lo, x, hi], ts, {})
    for i in range(3):
        only = [t if j == i else Zero(aval_of_value(p))
                for j, (p, t) in enumerate(zip([lo, x, hi], ts))]
        check_jvp(ew.clamp_p, [lo, x, hi], only, {})
    # min > max gives max everywhere, so only max's tangent passes
    check_jvp(ew.clamp_p, [np.asarray(1.0), x, np.asarray(-1.0)],
              [np.asarray(1.0), np.ones(5), np.asarray(2.0)], {})


@pytest.mark.parametrize("pred_shape", [(), (2, 3)])
def test_select_jvp(pred_shape) -> None:
    rng = np.random.default_rng(3)
    pred = np.asarray(rng.random(pred_shape) < 0.5)
    a, b, ta, tb = (U(rng, (2, 3)) for _ in range(4))
    zero = Zero(ShapedArray((2, 3), np.dtype(f64)))
    _, t = ew.select_p.jvp([pred, a, b], [Zero(ShapedArray(pred_shape, np.dtype(bool))), ta, tb])
    np.testing.assert_array_equal(t, np.where(pred, ta, tb))
    _, t = ew.select_p.jvp([pred, a, b], [None, ta, zero])
    np.testing.assert_array_equal(t, np.where(pred, ta, 0.0))
    assert isinstance(ew.select_p.jvp([pred, a, b], [None, zero, zero])[1], Zero)


@pytest.mark.parametrize("src,dst", [(f64, c128), (c128, f64), (f32, f64), (f64, f64)])
def test_convert_jvp(src, dst) -> None:
    rng = np.random.default_rng(0)
    x, t = U(rng, (4,), src), U(rng, (4,), src)
    _, tan = ew.convert_element_type_p.jvp([x], [t], new_dtype=np.dtype(dst))
    np.testing.assert_array_equal(tan, ew.convert_element_type(t, dst))
    if src != f32:
        check_jvp(ew.convert_element_type_p, [x], [t], {"new_dtype": np.dtype(dst)})


@pytest.mark.parametrize("op,args,params", [
    (ew.add_p, [np.arange(3, dtype=i32)] * 2, {"broadcast_dimensions": None}),
    (ew.mul_p, [np.arange(3, dtype=i32)] * 2, {"broadcast_dimensions": None}),
    (ew.max_p, [np.array([True, False])] * 2, {"broadcast_dimensions": None}),
    (ew.neg_p, [np.arange(3, dtype=i32)], {}),
    (ew.abs_p, [np.arange(3, dtype=i32)], {}),
    (ew.select_p, [np.array(True), np.arange(3, dtype=i32), np.arange(3, dtype=i32)], {}),
    (ew.clamp_p, [np.array(0, i32), np.arange(3, dtype=i32), np.array(1, i32)], {}),
    (ew.convert_element_type_p, [np.arange(3, dtype=i32)], {"new_dtype": np.dtype(f64)}),
    (ew.convert_element_type_p, [np.ones(3)], {"new_dtype": np.dtype(i32)}),
    (ew.floor_p, [np.ones(3)], {}),
    (ew.sign_p, [np.ones(3)], {}),
    (ew.compare_p, [np.ones(3)] * 2, {"direction": "LT", "total_order": False,
                                      "broadcast_dimensions": None}),
    (ew.shift_left_p, [np.ones(3, i32)] * 2, {"broadcast_dimensions": None}),
])
def test_integer_bool_and_flat_outputs_get_zero_tangents(op, args, params) -> None:
    tangents = [np.ones_like(a) for a in args]
    out, tan = op.jvp(args, tangents, **params)
    assert isinstance(tan, Zero) and tan.aval.shape == np.shape(out)


# ---------------------------------------------------------------- transposes

def check_transpose(op, args, params, rng) -> None:
    """Re<ct, L(v)> == sum_i Re<L^T(ct)_i, v_i> over the UndefinedPrimal args."""
    avals = [aval_of_value(a) for a in args]
    vs = [U(rng, a.aval.shape, a.aval.dtype.type) if isinstance(a, UndefinedPrimal) else a
          for a in args]
    # L(v): the op minus its value at v = 0 (add's defined operand is an offset)
    zeros = [np.zeros(a.aval.shape, a.aval.dtype) if isinstance(a, UndefinedPrimal) else v
             for a, v in zip(args, vs)]
    out = op.bind(*vs, **params) - op.bind(*zeros, **params)
    ct = U(rng, np.shape(out), np.asarray(out).dtype.type)
    cts = op.transpose(ct, *args, **params)
    assert len(cts) == len(args)
    total = 0.0
    for a, v, c, av in zip(args, vs, cts, avals):
        if not isinstance(a, UndefinedPrimal):
            assert c is None
            continue
        if isinstance(c, Zero):
            assert c.aval == av
            continue
        assert aval_of_value(c).shape == av.shape and aval_of_value(c).dtype == av.dtype
        total += inner(c, v)
    tol = 1e-5 if any(a.dtype == f32 for a in avals) else 1e-10
    assert math.isclose(inner(ct, out), total, rel_tol=tol, abs_tol=tol)


def undef(x) -> UndefinedPrimal:
    return UndefinedPrimal(aval_of_value(x))


@pytest.mark.parametrize("ls,rs,dims", BINARY_SHAPES)
@pytest.mark.parametrize("name,which,dtype", [
    ("add", "xy", f64), ("add", "x", f64), ("add", "y", f64), ("sub", "xy", f64),
    ("sub", "y", f64), ("mul", "x", f64), ("mul", "y", f64), ("div", "x", f64),
    ("complex", "xy", f64), ("complex", "y", f64), ("mul", "x", c128), ("sub", "xy", c128),
    ("div", "x", c128)])
def test_binary_transpose(name, which, dtype, ls, rs, dims) -> None:
    rng = np.random.default_rng(11)
    x, y = U(rng, ls, dtype), AWAY(rng, rs, dtype)
    args = [undef(x) if "x" in which else x, undef(y) if "y" in which else y]
    check_transpose(OPS[name], args, {"broadcast_dimensions": dims}, rng)


@pytest.mark.parametrize("name,dtype,params", [
    ("neg", f64, {}), ("neg", c128, {}), ("real", c128, {}), ("real", f64, {}),
    ("imag", c128, {}), ("imag", f64, {}),
    ("convert_element_type", f64, {"new_dtype": np.dtype(c128)}),
    ("convert_element_type", c128, {"new_dtype": np.dtype(f64)}),
    ("convert_element_type", f32, {"new_dtype": np.dtype(f64)}),
    ("convert_element_type", i32, {"new_dtype": np.dtype(f64)})])
def test_unary_transpose(name, dtype, params) -> None:
    rng = np.random.default_rng(5)
    x = U(rng, (2, 3), f64).astype(dtype) if dtype == i32 else U(rng, (2, 3), dtype)
    if dtype == i32:  # no cotangent flows into an integer operand
        (c,) = OPS[name].transpose(np.ones((2, 3)), undef(x), **params)
        assert isinstance(c, Zero)
        return
    check_transpose(OPS[name], [undef(x)], params, rng)


@pytest.mark.parametrize("pred_shape", [(), (2, 3)])
@pytest.mark.parametrize("which", ["t", "f", "tf"])
def test_select_transpose(pred_shape, which) -> None:
    rng = np.random.default_rng(2)
    pred = np.asarray(rng.random(pred_shape) < 0.5)
    a, b = U(rng, (2, 3)), U(rng, (2, 3))
    check_transpose(ew.select_p, [pred, undef(a) if "t" in which else a,
                                  undef(b) if "f" in which else b], {}, rng)


def test_transpose_traced_and_zero_cotangent() -> None:
    x, y = np.ones((3, 4)), np.arange(4.0)
    params = {"broadcast_dimensions": (1,)}
    (got,) = traced(lambda ct: [ew.mul_p.transpose(ct, x, undef(y), **params)[1]],
                    [np.ones((3, 4))])
    np.testing.assert_array_equal(got, [3.0] * 4)
    cts = ew.add_p.transpose(Zero(ShapedArray((3, 4), np.dtype(f64))), undef(x), undef(y),
                             **params)
    assert [c.aval.shape for c in cts] == [(3, 4), (4,)]


# ---------------------------------------------------------------- batching

B = 3
INT_BINARY = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
              "shift_right_arithmetic", "shift_right_logical", "rem", "div", "pow")


def sample(rng, name, shape, dtype) -> np.ndarray:
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if np.dtype(dtype).kind == "i":
        lo = 0 if name.startswith("shift") or name == "pow" else -50
        return np.asarray(rng.integers(lo, 40, shape), dtype)
    return U(rng, shape, dtype)


def batch_configs():  # (op, arg shapes, dtypes, params)
    for name in BINARY:
        for ls, rs, dims in BINARY_SHAPES:
            yield name, (ls, rs), (f64, f64), {"broadcast_dimensions": dims}
    for name in INT_BINARY:
        yield name, ((3, 4), (4,)), (i32, i32), {"broadcast_dimensions": (1,)}
        yield name, ((), (3, 1)), (i32, i32), {"broadcast_dimensions": None}
    for d, order in itertools.product(("EQ", "NE", "GE", "GT", "LE", "LT"), (False, True)):
        yield "compare", ((3, 4), (3,)), (f64, f64), \
            {"direction": d, "total_order": order, "broadcast_dimensions": (0,)}
    for name in ("max", "min", "bitwise_xor"):
        yield name, ((2, 3), (2, 3)), (np.bool_, np.bool_), {"broadcast_dimensions": None}
    for name, op in OPS.items():
        if op in ELEMENTWISE_OPS and op.family == "unary" and name != "convert_element_type":
            dtype = i32 if name in ("clz", "population_count", "bitwise_not") else f64
            for shape in ((2, 3), ()):
                yield name, (shape,), (dtype,), {}
            if name in COMPLEX_UNARY:
                yield name, ((2, 3),), (c128,), {}
    for dst in (f32, i32, c128, np.bool_):
        yield "convert_element_type", ((2, 3),), (f64,), {"new_dtype": np.dtype(dst)}
    for ps in ((), (2, 3)):
        yield "select", (ps, (2, 3), (2, 3)), (np.bool_, f64, f64), {}
    yield "select", ((), (), ()), (np.bool_, i32, i32), {}
    for lo, hi in (((), ()), ((2, 3), ()), ((), (2, 3)), ((2, 3), (2, 3))):
        yield "clamp", (lo, (2, 3), hi), (f64, f64, f64), {}
    yield "clamp", ((), (), ()), (i32, i32, i32), {}


CONFIGS = list(batch_configs())


def dim_choices(shapes) -> list[tuple]:
    """Every assignment of None or a batch position (also negative) to the args."""
    options = [[None, *range(-len(s) - 1, len(s) + 1)] for s in shapes]
    return [c for c in itertools.product(*options) if any(d is not None for d in c)]


def run_batch(op, shapes, dtypes, params, dims, rng, trace=False) -> None:
    unbatched = [sample(rng, op.name, s, t) for s, t in zip(shapes, dtypes)]
    per_item = [[sample(rng, op.name, s, t) for _ in range(B)] if d is not None else None
                for s, t, d in zip(shapes, dtypes, dims)]
    args = [np.stack(p, axis=d) if d is not None else u
            for u, p, d in zip(unbatched, per_item, dims)]
    expected = np.stack([op.bind(*(p[i] if p is not None else u
                                   for u, p in zip(unbatched, per_item)), **params)
                         for i in range(B)])
    out, out_dim = op.batch(args, list(dims), **params)
    np.testing.assert_array_equal(np.moveaxis(out, out_dim, 0), expected)
    if trace:
        (got,) = traced(lambda *xs: [op.batch(list(xs), list(dims), **params)[0]], args)
        np.testing.assert_array_equal(got, out)


@pytest.mark.parametrize("name,shapes,dtypes,params", CONFIGS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CONFIGS)])
def test_batch_vs_loop(name, shapes, dtypes, params) -> None:
    rng = np.random.default_rng(abs(hash((name, shapes))) % 2**32)
    choices = dim_choices(shapes)
    picks = rng.permutation(len(choices))[:10]  # a sample, and every choice traced once
    for k in picks:
        run_batch(OPS[name], shapes, dtypes, params, choices[k], rng, trace=k == picks[0])


@pytest.mark.parametrize("ls,rs,dims", BINARY_SHAPES)
def test_batch_binary_every_dim_choice(ls, rs, dims) -> None:
    rng = np.random.default_rng(1)
    for choice in dim_choices((ls, rs)):
        run_batch(ew.sub_p, (ls, rs), (f64, f64), {"broadcast_dimensions": dims}, choice, rng,
                  trace=True)


@given(st.data())
def test_batch_ternary_every_dim_choice(data) -> None:
    name = data.draw(st.sampled_from(["select", "clamp"]))
    scalar = data.draw(st.tuples(st.booleans(), st.booleans()))
    first, last = ((() if s else (2, 3)) for s in scalar)
    shapes = (first, (2, 3), last) if name == "clamp" else (first, (2, 3), (2, 3))
    dtypes = (f64,) * 3 if name == "clamp" else (np.bool_, f64, f64)
    dims = data.draw(st.sampled_from(dim_choices(shapes)))
    rng = np.random.default_rng(data.draw(st.integers(0, 100)))
    run_batch(OPS[name], shapes, dtypes, {}, dims, rng, trace=True)


# ---------------------------------------------------------------- completeness

def test_every_elementwise_op_has_its_rules() -> None:
    names = {op.name for op in ELEMENTWISE_OPS}
    assert {"add", "compare", "select", "clamp", "convert_element_type", "erf"} <= names
    for op in ELEMENTWISE_OPS:
        assert op.jvp is not None, op.name
        assert op.batch is not None, op.name
        if op.linear or op.name in ("mul", "div", "select"):
            assert op.transpose is not None, op.name

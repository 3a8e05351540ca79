"""Family tests for the shape ops and dot / dot_general.

Hypothesis compares each op with an independent NumPy formulation (explicit
index loops rather than the NumPy call the reference implementation uses);
error tests check the exception class and that the message names the op and the
offending shapes.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tracer import ops
from tracer.core import ShapedArray, typecheck
from tracer.errors import DTypeError, ParamError, ShapeError, TracerIndexError
from tracer.interpret import run_graph
from tracer.ops import OPS
from tracer.tracing import trace_flat

F32 = np.float32
EXAMPLES = settings(max_examples=30)


def _traced(fn, *args):
    """Run `fn` traced on `args` through the reference interpreter (checked)."""
    avals = [ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args]
    graph, _ = trace_flat(lambda *xs: [fn(*xs)], avals)
    return run_graph(typecheck(graph), [np.asarray(a) for a in args], check=True)[0]


def _both(fn, *args):
    eager, traced = fn(*args), _traced(fn, *args)
    assert isinstance(eager, np.ndarray)
    np.testing.assert_array_equal(eager, traced)
    assert eager.dtype == traced.dtype
    return eager


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


def _array(shape, seed=0, dtype=np.int32):
    return np.random.default_rng(seed).integers(-50, 50, shape).astype(dtype)


# --------------------------------------------------------------------------- hypothesis
@EXAMPLES
@given(shapes, st.data())
def test_transpose_matches_index_loop(shape, data):
    x = _array(shape)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    got = _both(lambda a: ops.transpose(a, perm), x)
    assert got.shape == tuple(shape[p] for p in perm)
    for idx in itertools.product(*map(range, got.shape)):
        src = [0] * len(shape)
        for k, p in enumerate(perm):
            src[p] = idx[k]
        assert got[idx] == x[tuple(src)]


@EXAMPLES
@given(shapes, st.data())
def test_rev_matches_index_loop(shape, data):
    x = _array(shape, 1)
    dims = data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)), max_size=len(shape)))
    dims = tuple(sorted(dims)) if shape else ()
    got = _both(lambda a: ops.rev(a, dims), x)
    for idx in itertools.product(*map(range, shape)):
        src = tuple(n - 1 - i if d in dims else i for d, (i, n) in enumerate(zip(idx, shape)))
        assert got[idx] == x[src]


@EXAMPLES
@given(shapes, st.data())
def test_slice_with_strides_matches_python_ranges(shape, data):
    x = _array(shape, 2)
    start, limit, strides = [], [], []
    for n in shape:
        lo = data.draw(st.integers(0, n))
        start.append(lo)
        limit.append(data.draw(st.integers(lo, n)))
        strides.append(data.draw(st.integers(1, 3)))
    got = _both(lambda a: ops.slice(a, start, limit, strides), x)
    ranges = [list(range(*t)) for t in zip(start, limit, strides)]
    assert got.shape == tuple(map(len, ranges))
    for idx in itertools.product(*(range(len(r)) for r in ranges)):
        assert got[idx] == x[tuple(r[i] for r, i in zip(ranges, idx))]


def _pad_by_hand(x, value, config):
    """Interior padding by an explicit loop, then edges by np.pad / cropping."""
    for d, (lo, hi, interior) in enumerate(config):
        parts = []
        for i in range(x.shape[d]):
            if i:
                fill_shape = list(x.shape)
                fill_shape[d] = interior
                parts.append(np.full(fill_shape, value, x.dtype))
            parts.append(np.take(x, [i], axis=d))
        if parts:
            x = np.concatenate(parts, axis=d)
        widths = [(0, 0)] * x.ndim
        widths[d] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, widths, constant_values=value)
        crop = [slice(None)] * x.ndim
        crop[d] = slice(max(-lo, 0), x.shape[d] - max(-hi, 0))
        x = x[tuple(crop)]
    return x


@EXAMPLES
@given(shapes, st.data())
def test_pad_matches_interior_then_edges(shape, data):
    x = _array(shape, 3)
    config = []
    for n in shape:
        interior = data.draw(st.integers(0, 2))
        full = n + max(n - 1, 0) * interior
        lo = data.draw(st.integers(-full, 3))
        hi = data.draw(st.integers(-(full + lo) if full + lo > 0 else 0, 3))
        config.append((lo, hi, interior))
    got = _both(lambda a: ops.pad(a, -7, config), x)
    np.testing.assert_array_equal(got, _pad_by_hand(x, -7, config))


@EXAMPLES
@given(nonempty_shapes, st.data())
def test_concatenate_matches_blockwise_assembly(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    xs = [_array(shape[:dim] + (s,) + shape[dim + 1:], i) for i, s in enumerate(sizes)]
    got = _both(lambda *a: ops.concatenate(a, dim), *xs)
    offset = 0
    for x in xs:
        index = [slice(None)] * len(shape)
        index[dim] = slice(offset, offset + x.shape[dim])
        np.testing.assert_array_equal(got[tuple(index)], x)
        offset += x.shape[dim]
    assert got.shape[dim] == offset


@EXAMPLES
@given(shapes, st.data())
def test_broadcast_in_dim_matches_index_loop(out_shape, data):
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(out_shape) - 1, 0)),
                                          max_size=len(out_shape))))) if out_shape else ()
    in_shape = tuple(data.draw(st.sampled_from([1, out_shape[d]])) for d in dims)
    x = _array(in_shape, 4)
    got = _both(lambda a: ops.broadcast_in_dim(a, out_shape, dims), x)
    assert got.shape == out_shape
    for idx in itertools.product(*map(range, out_shape)):
        src = tuple(idx[d] if n != 1 else 0 for d, n in zip(dims, in_shape))
        assert got[idx] == x[src]


@EXAMPLES
@given(nonempty_shapes, st.data())
def test_reshape_with_dimensions_reads_in_dimension_order(shape, data):
    x = _array(shape, 5)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    new = data.draw(st.sampled_from([(x.size,), (1, x.size), (x.size, 1, 1)]))
    got = _both(lambda a: ops.reshape(a, new, dimensions=perm), x)
    # Seed rule: iterate the dims in `perm` order, first = most major.
    flat = []
    for idx in itertools.product(*(range(shape[p]) for p in perm)):
        src = [0] * len(shape)
        for k, p in enumerate(perm):
            src[p] = idx[k]
        flat.append(x[tuple(src)])
    np.testing.assert_array_equal(got, np.array(flat, x.dtype).reshape(new))


def _dot_by_matmul(x, y, lc, rc, lb, rb, dtype):
    """Move batch dims first and contracting dims last, then one batched matmul."""
    lf = [d for d in range(x.ndim) if d not in lc + lb]
    rf = [d for d in range(y.ndim) if d not in rc + rb]
    xt = np.transpose(x, lb + lf + lc).astype(dtype)
    yt = np.transpose(y, rb + rc + rf).astype(dtype)
    bshape = [x.shape[d] for d in lb]
    m, n = [x.shape[d] for d in lf], [y.shape[d] for d in rf]
    k = int(np.prod([x.shape[d] for d in lc], dtype=np.int64))
    xm = xt.reshape([*bshape, int(np.prod(m, dtype=np.int64)), k])
    ym = yt.reshape([*bshape, k, int(np.prod(n, dtype=np.int64))])
    return np.matmul(xm, ym).reshape(bshape + m + n)


@st.composite
def dot_problems(draw):
    nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    lf, rf = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    sizes = draw(st.lists(st.integers(1, 3), min_size=nb + nc, max_size=nb + nc))
    lperm = draw(st.permutations(range(nb + nc + lf)))
    rperm = draw(st.permutations(range(nb + nc + rf)))
    lshape, rshape = [0] * len(lperm), [0] * len(rperm)
    for k, s in enumerate(sizes):
        lshape[lperm[k]] = rshape[rperm[k]] = s
    for k in range(nb + nc, len(lperm)):
        lshape[lperm[k]] = draw(st.integers(1, 3))
    for k in range(nb + nc, len(rperm)):
        rshape[rperm[k]] = draw(st.integers(1, 3))
    lb, lc = tuple(lperm[:nb]), tuple(lperm[nb:nb + nc])
    rb, rc = tuple(rperm[:nb]), tuple(rperm[nb:nb + nc])
    return lshape, rshape, (lc, rc), (lb, rb)


@EXAMPLES
@given(dot_problems(), st.sampled_from(["float32", "float64", "int32", "int8->int32",
                                        "complex64", "float16->float32"]))
def test_dot_general_matches_batched_matmul(problem, kind):
    lshape, rshape, (lc, rc), (lb, rb) = problem
    in_name, _, out_name = kind.partition("->")
    in_dtype, out_dtype = np.dtype(in_name), np.dtype(out_name or in_name)
    x, y = _array(lshape, 6, in_dtype), _array(rshape, 7, in_dtype)
    pref = out_dtype if out_name else None
    got = _both(lambda a, b: ops.dot_general(a, b, ((lc, rc), (lb, rb)),
                                             preferred_element_type=pref), x, y)
    want = _dot_by_matmul(x, y, list(lc), list(rc), list(lb), list(rb), out_dtype)
    assert got.dtype == out_dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5)


# --------------------------------------------------------------------------- behaviour
def test_data_movement_keeps_python_scalars_weak():
    def f(s):
        b = ops.broadcast_in_dim(s, (2, 3), ())
        return ops.slice(ops.transpose(ops.reshape(b, (3, 2)), (1, 0)), (0, 0), (1, 1))
    graph, _ = trace_flat(lambda s: [f(s)], [ShapedArray((), np.float64, weak_type=True)])
    assert all(v.aval.weak_type for e in graph.eqns for v in e.outputs)
    graph, _ = trace_flat(lambda x: [ops.dot(x, x)], [ShapedArray((2,), np.float64, True)])
    assert not graph.outputs[0].aval.weak_type


def test_pad_value_takes_operand_dtype_eager_and_traced():
    x = np.array([1, 2], np.int8)
    assert _both(lambda a: ops.pad(a, 3, [(1, 0, 0)]), x).tolist() == [3, 1, 2]
    out = tr.jit(lambda a, v: ops.pad(a, v, [(0, 1, 0)]))(np.ones(2, F32), 5.0)
    assert out.dtype == F32 and out.tolist() == [1, 1, 5]


def test_eager_results_do_not_alias_inputs():
    x = np.arange(6.0).reshape(2, 3)
    for out in (ops.reshape(x, (6,)), ops.transpose(x, (1, 0)), ops.rev(x, [0]),
                ops.slice(x, (0, 0), (2, 3)), ops.broadcast_in_dim(x, (2, 3), (0, 1))):
        assert not np.shares_memory(out, x)


def test_iota_integer_wraps_and_get_dimension_size_is_static_int32():
    assert ops.iota(np.int8, (200,), 0)[128] == -128
    out = tr.jit(lambda a: ops.get_dimension_size(a, 0))(np.zeros((5, 2)))
    assert out.dtype == np.int32 and out == 5


def test_dot_integer_products_stay_in_dtype():
    x = np.full((1, 2), 100, np.int8)
    assert ops.dot(x, x.T).dtype == np.int8
    assert ops.dot(x, x.T, preferred_element_type=np.int32)[0, 0] == 20000


def test_hlo_text_uses_xla_spellings():
    text = str(tr.make_hlo(lambda a, b: ops.rev(ops.dot(a, b), [0]))(
        np.ones((2, 3), F32), np.ones((3, 4), F32)))
    assert "dot(" in text and "lhs_contracting_dims={1}" in text
    assert "rhs_contracting_dims={0}" in text and "reverse(" in text


def test_op_records_flags():
    for name in ("broadcast_in_dim", "reshape", "transpose", "rev", "slice", "concatenate",
                 "pad", "dot_general"):
        assert OPS[name].linear, name
    assert not OPS["iota"].differentiable and not OPS["get_dimension_size"].differentiable
    assert OPS["broadcast_in_dim"].hlo_name == "broadcast"


# --------------------------------------------------------------------------- errors
A23 = np.zeros((2, 3), F32)
V4 = np.zeros(4, F32)
ERRORS = [
    ("reshape", ShapeError, lambda: ops.reshape(A23, (5,)), ["f32[2,3]", "f32[5]"]),
    ("reshape", ParamError, lambda: ops.reshape(A23, (6,), dimensions=(0, 0)), ["f32[2,3]"]),
    ("reshape", ParamError, lambda: ops.reshape(A23, (6,), dimensions=(0,)), ["f32[2,3]"]),
    ("reshape", ParamError, lambda: ops.reshape(A23, "ab"), []),
    ("collapse", ParamError, lambda: ops.collapse(np.zeros((2, 3, 4), F32), [0, 2]),
     ["f32[2,3,4]"]),
    ("collapse", ParamError, lambda: ops.collapse(np.zeros((2, 3, 4), F32), [1, 0]),
     ["f32[2,3,4]"]),
    ("collapse", TracerIndexError, lambda: ops.collapse(A23, [1, 2]), ["f32[2,3]"]),
    ("broadcast_in_dim", ParamError, lambda: ops.broadcast_in_dim(A23, (3, 2, 4), (1, 0)),
     ["f32[2,3]"]),
    ("broadcast_in_dim", ShapeError, lambda: ops.broadcast_in_dim(A23, (2, 4), (0, 1)),
     ["f32[2,3]", "f32[2,4]"]),
    ("broadcast_in_dim", TracerIndexError, lambda: ops.broadcast_in_dim(V4, (4,), (-1,)),
     ["f32[4]"]),
    ("broadcast_in_dim", ParamError, lambda: ops.broadcast_in_dim(A23, (2, 3), (0,)),
     ["f32[2,3]"]),
    ("broadcast", ParamError, lambda: ops.broadcast(V4, [-1]), ["f32[4]"]),
    ("transpose", ParamError, lambda: ops.transpose(A23, (0,)), ["f32[2,3]"]),
    ("transpose", ParamError, lambda: ops.transpose(A23, (1, 1)), ["f32[2,3]"]),
    ("transpose", TracerIndexError, lambda: ops.transpose(A23, (0, -1)), ["f32[2,3]"]),
    ("rev", TracerIndexError, lambda: ops.rev(A23, [2]), ["f32[2,3]"]),
    ("rev", ParamError, lambda: ops.rev(A23, [0, 0]), ["f32[2,3]"]),
    ("slice", TracerIndexError, lambda: ops.slice(A23, (0, 1), (2, 4)), ["f32[2,3]"]),
    ("slice", TracerIndexError, lambda: ops.slice(A23, (-1, 0), (2, 3)), ["f32[2,3]"]),
    ("slice", ParamError, lambda: ops.slice(A23, (2, 0), (1, 3)), ["f32[2,3]"]),
    ("slice", ParamError, lambda: ops.slice(A23, (0, 0), (2, 3), (1, 0)), ["f32[2,3]"]),
    ("slice", ParamError, lambda: ops.slice(A23, (0,), (2,)), ["f32[2,3]"]),
    ("concatenate", ParamError, lambda: ops.concatenate([], 0), []),
    ("concatenate", ShapeError, lambda: ops.concatenate([np.float32(1), np.float32(2)], 0),
     ["f32[]"]),
    ("concatenate", ShapeError, lambda: ops.concatenate([A23, V4], 0), ["f32[2,3]", "f32[4]"]),
    ("concatenate", ShapeError, lambda: ops.concatenate([A23, np.zeros((2, 2), F32)], 0),
     ["f32[2,3]", "f32[2,2]"]),
    ("concatenate", DTypeError, lambda: ops.concatenate([A23, A23.astype(np.int32)], 0),
     ["f32[2,3]", "s32[2,3]"]),
    ("concatenate", TracerIndexError, lambda: ops.concatenate([A23, A23], 2), ["f32[2,3]"]),
    ("concatenate", ParamError, lambda: ops.concatenate(A23, 0), []),
    ("pad", ParamError, lambda: ops.pad(V4, 0.0, [(0, 0, -1)]), ["f32[4]"]),
    ("pad", ShapeError, lambda: ops.pad(V4, 0.0, [(-5, -4, 1)]), ["f32[4]"]),
    ("pad", ShapeError, lambda: ops.pad(V4, V4, [(0, 0, 0)]), ["f32[4]"]),
    ("pad", DTypeError, lambda: ops.pad(V4, np.int32(0), [(0, 0, 0)]), ["f32[4]", "s32[]"]),
    ("pad", ParamError, lambda: ops.pad(V4, 0.0, [(0, 0)]), []),
    ("pad", ParamError, lambda: ops.pad(A23, 0.0, [(0, 0, 0)]), ["f32[2,3]"]),
    ("iota", DTypeError, lambda: ops.iota(np.bool_, (3,), 0), []),
    ("iota", TracerIndexError, lambda: ops.iota(np.int32, (3,), 1), []),
    ("iota", DTypeError, lambda: ops.iota("float128", (3,), 0), []),
    ("get_dimension_size", TracerIndexError, lambda: ops.get_dimension_size(A23, 2),
     ["f32[2,3]"]),
    ("dot_general", ShapeError, lambda: ops.dot_general(A23, A23, (((1,), (0,)), ((), ()))),
     ["f32[2,3]"]),
    ("dot_general", ParamError, lambda: ops.dot_general(A23, A23, (((1,), ()), ((), ()))),
     ["f32[2,3]"]),
    ("dot_general", ParamError, lambda: ops.dot_general(A23, A23, (((0,), (0,)), ((0,), (0,)))),
     ["f32[2,3]"]),
    ("dot_general", TracerIndexError, lambda: ops.dot_general(A23, A23, (((2,), (0,)), ((), ()))),
     ["f32[2,3]"]),
    ("dot_general", DTypeError, lambda: ops.dot_general(A23 > 0, A23 > 0, (((1,), (1,)), ((), ()))),
     ["pred[2,3]"]),
    ("dot_general", DTypeError, lambda: ops.dot(A23, A23.T.astype(np.float64)),
     ["f32[2,3]", "f64[3,2]"]),
    ("dot_general", DTypeError, lambda: ops.dot(A23, A23.T, preferred_element_type=np.int32),
     ["f32[2,3]"]),
    ("dot_general", ParamError, lambda: ops.dot_general(A23, A23, ((1,), (1,))), []),
    ("dot_general", ParamError, lambda: ops.dot(A23, A23.T, precision="fast"), []),
    ("dot", ShapeError, lambda: ops.dot(np.zeros((2, 3, 4), F32), V4), ["f32[2,3,4]", "f32[4]"]),
    ("dot", ShapeError, lambda: ops.dot(np.float32(1), V4), ["f32[]", "f32[4]"]),
]


@pytest.mark.parametrize("op,cls,call,shown", ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_name_the_op_and_shapes(op, cls, call, shown):
    with pytest.raises(cls) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(op), msg
    assert isinstance(info.value, tr.TracerError)
    for s in shown:
        assert s in msg, (s, msg)


def test_traced_errors_point_at_the_user_line():
    with pytest.raises(ShapeError) as info:
        tr.jit(lambda a: ops.reshape(a, (7,)))(A23)
    assert "test_ops_shape.py" in str(info.value) and "f32[2,3]" in str(info.value)

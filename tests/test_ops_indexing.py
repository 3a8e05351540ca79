"""Family tests for the indexing ops: DynamicSlice, DynamicUpdateSlice, Gather, Scatter.

Gather and Scatter are checked against loop oracles that follow the seeds' formal
index mapping literally (XLA's Gather / Scatter) over random dimension numbers,
including batching dims, every index_vector_dim position and out-of-range indices.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer import errors, ops
from tracer.core import aval_of, typecheck
from tracer.interpret import run_graph
from tracer.tracing import trace_flat

GDN = ops.GatherDimensionNumbers
SDN = ops.ScatterDimensionNumbers
POINT = SDN(update_window_dims=(), inserted_window_dims=(0,),
            scatter_dims_to_operand_dims=(0,), index_vector_dim=1)


def _traced(fn, *args):
    """Trace `fn`, typecheck, run the reference with result checks; return the outputs."""
    graph, captured = trace_flat(lambda *xs: _as_list(fn(*xs)), [aval_of(a) for a in args])
    assert not captured
    return run_graph(typecheck(graph), [np.asarray(a) for a in args], check=True)


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


# ---------------------------------------------------------------- oracles

def _lookup(idx, ivd, g, k):
    """S[k] = start_indices[Combine(G, k)] (seed rule), as a Python int."""
    return int(idx[tuple(g[:ivd]) + (k,) + tuple(g[ivd:])])


def _start(x_shape, idx, ivd, g, index_map, op_batch, idx_batch):
    start = [0] * len(x_shape)
    for k, d in enumerate(index_map):
        start[d] = _lookup(idx, ivd, g, k)
    for od, sd in zip(op_batch, idx_batch, strict=True):
        start[od] = g[sd if sd < ivd else sd - 1]
    return start


def gather_oracle(x, idx, dn, sizes):
    ivd = dn.index_vector_dim
    idx = idx[..., None] if ivd == idx.ndim else idx
    batch_shape = idx.shape[:ivd] + idx.shape[ivd + 1:]
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    remapped = [d for d in range(x.ndim) if d not in dropped]
    offsets = iter([sizes[d] for d in remapped])
    batches = iter(batch_shape)
    out_rank = len(batch_shape) + len(dn.offset_dims)
    out_shape = [next(offsets) if i in dn.offset_dims else next(batches) for i in range(out_rank)]
    batch_dims = [i for i in range(out_rank) if i not in dn.offset_dims]
    out = np.zeros(out_shape, x.dtype)
    for o in np.ndindex(*out_shape):
        g = [o[i] for i in batch_dims]
        start = _start(x.shape, idx, ivd, g, dn.start_index_map, dn.operand_batching_dims,
                       dn.start_indices_batching_dims)
        # clamp so the whole slice is in bounds (the project decision, as XLA)
        start = [min(max(s, 0), n - z) for s, n, z in zip(start, x.shape, sizes, strict=True)]
        for k, i in enumerate(dn.offset_dims):
            start[remapped[k]] += o[i]
        out[o] = x[tuple(start)]
    return out


def scatter_oracle(x, idx, upd, dn, combine):
    """Updates applied one at a time in row-major order; whole windows that do not fit
    are skipped."""
    out, ivd = x.copy(), dn.index_vector_dim
    idx = idx[..., None] if ivd == idx.ndim else idx
    uwd = dn.update_window_dims
    usd = [d for d in range(upd.ndim) if d not in uwd]
    dropped = set(dn.inserted_window_dims) | set(dn.input_batching_dims)
    window_op = [d for d in range(x.ndim) if d not in dropped]
    wshape = [upd.shape[d] for d in uwd]
    for g in np.ndindex(*[upd.shape[d] for d in usd]):
        start = _start(x.shape, idx, ivd, list(g), dn.scatter_dims_to_operand_dims,
                       dn.input_batching_dims, dn.scatter_indices_batching_dims)
        extent = [1] * x.ndim
        for k, d in enumerate(window_op):
            extent[d] = wshape[k]
        if any(s < 0 or s + e > n for s, e, n in zip(start, extent, x.shape, strict=True)):
            continue
        for w in np.ndindex(*wshape):
            u, target = [0] * upd.ndim, list(start)
            for k, d in enumerate(usd):
                u[d] = g[k]
            for k, d in enumerate(uwd):
                u[d] = w[k]
                target[window_op[k]] += w[k]
            out[tuple(target)] = combine(out[tuple(target)], upd[tuple(u)])
    return out


# ---------------------------------------------------------------- random problems

def _size(draw, hi):
    """A size in [0, hi], rarely 0 (empty arrays are an edge case, not the norm)."""
    return draw(st.sampled_from([*range(1, hi + 1)] * 3 + [0]))


@st.composite
def gather_problems(draw):
    """(operand, indices, GatherDimensionNumbers, slice_sizes), all valid, indices may be
    out of range."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    perm = draw(st.permutations(range(rank)))
    op_batch = tuple(sorted(perm[:draw(st.integers(0, 1))]))
    rest = [d for d in range(rank) if d not in op_batch]
    collapsed = tuple(sorted(draw(st.sets(st.sampled_from(rest)) if rest else st.just(set()))))
    index_map = tuple(draw(st.permutations(rest))[:draw(st.integers(0, len(rest)))])
    # index array dims other than the vector dim: the batching ones, then free ones, shuffled
    free = [_size(draw, 3) for _ in range(draw(st.integers(0, 2)))]
    slots = draw(st.permutations([("b", j) for j in range(len(op_batch))] +
                                 [("f", s) for s in free]))
    implicit = len(index_map) == 1 and draw(st.booleans())
    ivd = len(slots) if implicit else draw(st.integers(0, len(slots)))
    idx_shape = [shape[op_batch[v]] if kind == "b" else v for kind, v in slots]
    if not implicit:
        idx_shape.insert(ivd, len(index_map))
    idx_batch = tuple(p if p < ivd or implicit else p + 1
                      for j in range(len(op_batch)) for p, s in enumerate(slots) if s == ("b", j))
    dtype = draw(st.sampled_from([np.int8, np.int32, np.int64]))
    idx = np.asarray(draw(st.lists(st.integers(-3, 7), min_size=int(np.prod(idx_shape)),
                                   max_size=int(np.prod(idx_shape)))), dtype).reshape(idx_shape)
    sizes = tuple(1 if d in collapsed or d in op_batch else _size(draw, shape[d])
                  for d in range(rank))
    n_offsets = rank - len(collapsed) - len(op_batch)
    out_rank = len(slots) + n_offsets
    offset_dims = tuple(sorted(draw(st.permutations(range(out_rank)))[:n_offsets]))
    dn = GDN(offset_dims, collapsed, index_map, ivd, op_batch, idx_batch)
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) * 10 + 1
    return x, idx, dn, sizes


def _as_scatter(dn):
    return SDN(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
               dn.index_vector_dim, dn.operand_batching_dims, dn.start_indices_batching_dims)


@settings(max_examples=50)
@given(gather_problems())
def test_gather_matches_the_seed_index_mapping(problem):
    x, idx, dn, sizes = problem
    want = gather_oracle(x, idx, dn, sizes)
    got = ops.gather(x, idx, dn, sizes)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_traced(lambda a, i: ops.gather(a, i, dn, sizes), x, idx)[0],
                                  want)


def _twice_minus(cur, upd):
    return ops.sub(ops.mul(cur, 2), upd)


@settings(max_examples=40)
@given(gather_problems(), st.sampled_from(["add", "replace", "twice_minus"]))
def test_scatter_matches_the_seed_index_mapping(problem, kind):
    x, idx, gdn, sizes = problem
    dn = _as_scatter(gdn)
    upd = gather_oracle(x, idx, gdn, sizes) + 3  # updates shaped like the matching gather
    comp, oracle = {"add": (ops.add, lambda c, u: c + u),
                    "replace": (None, lambda c, u: u),
                    "twice_minus": (_twice_minus, lambda c, u: 2 * c - u)}[kind]
    want = scatter_oracle(x, idx, upd, dn, oracle)
    got = ops.scatter(x, idx, upd, comp, dn)
    np.testing.assert_array_equal(got, want)
    traced = _traced(lambda a, i, u: ops.scatter(a, i, u, comp, dn), x, idx, upd)
    np.testing.assert_array_equal(traced[0], want)


@settings(max_examples=30)
@given(st.integers(1, 3).flatmap(lambda r: st.tuples(
    st.lists(st.integers(1, 5), min_size=r, max_size=r), st.integers(0, r - 1))),
       st.lists(st.integers(-8, 8), min_size=1, max_size=6))
def test_gather_as_take_along_an_axis(shape_axis, idx):
    shape, axis = shape_axis
    x = np.random.default_rng(0).standard_normal(shape)
    idx = np.array(idx)
    sizes = tuple(1 if d == axis else n for d, n in enumerate(shape))
    offset_dims = tuple(d for d in range(len(shape)) if d != axis)
    dn = GDN(offset_dims, (axis,), (axis,), 1)
    want = np.take(x, np.clip(idx, 0, shape[axis] - 1), axis=axis)
    np.testing.assert_array_equal(ops.gather(x, idx, dn, sizes), want)


@settings(max_examples=30)
@given(st.integers(1, 5), st.integers(1, 5), st.data())
def test_gather_pointwise_two_index_arrays(n, m, data):
    x = np.arange(n * m, dtype=np.float32).reshape(n, m)
    i = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5)))
    j = np.array(data.draw(st.lists(st.integers(0, m - 1), min_size=len(i), max_size=len(i))))
    dn = GDN((), (0, 1), (0, 1), 1)
    np.testing.assert_array_equal(ops.gather(x, np.stack([i, j], 1), dn, (1, 1)), x[i, j])


@settings(max_examples=40)
@given(st.integers(1, 6), st.lists(st.integers(-4, 9), max_size=8), st.data())
def test_scatter_add_is_add_at_on_in_bounds_indices(n, idx, data):
    x = np.arange(n, dtype=np.int64)
    upd = np.array(data.draw(st.lists(st.integers(-5, 5), min_size=len(idx),
                                      max_size=len(idx))), np.int64)
    idx = np.array(idx, np.int64).reshape(-1)
    want = x.copy()
    ok = (idx >= 0) & (idx < n)
    np.add.at(want, idx[ok], upd[ok])
    np.testing.assert_array_equal(ops.scatter_add(x, idx[:, None], upd, POINT), want)


@settings(max_examples=40)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).flatmap(lambda shape: st.tuples(
    st.just(shape), st.tuples(*[st.integers(0, n) for n in shape]),
    st.tuples(*[st.integers(-6, 9) for _ in shape]))))
def test_dynamic_slice_and_update_clamp(problem):
    shape, sizes, starts = problem
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    begin = [int(np.clip(s, 0, n - z)) for s, n, z in zip(starts, shape, sizes, strict=True)]
    window = tuple(slice(b, b + z) for b, z in zip(begin, sizes, strict=True))
    np.testing.assert_array_equal(ops.dynamic_slice(x, starts, sizes), x[window])
    upd = -np.ones(sizes)
    want = x.copy()
    want[window] = upd
    np.testing.assert_array_equal(ops.dynamic_update_slice(x, upd, starts), want)
    traced = _traced(lambda a, *s: ops.dynamic_slice(a, s, sizes), x,
                     *[np.int32(s) for s in starts])
    np.testing.assert_array_equal(traced[0], x[window])


# ---------------------------------------------------------------- specific behaviour

def test_scatter_skips_a_window_that_only_partly_fits():
    x = np.zeros((3, 4), np.int32)
    dn = SDN((1,), (0,), (0, 1), 1)
    idx = np.array([[0, 0], [1, 3], [2, 2]])  # [1,3] would need cols 3..4: dropped whole
    got = ops.scatter_add(x, idx, np.ones((3, 2), np.int32), dn)
    np.testing.assert_array_equal(got, [[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 1]])


def test_gather_clamps_the_whole_slice_into_bounds():
    x = np.arange(10.0)
    dn = GDN((1,), (), (0,), 1)
    got = ops.gather(x, np.array([[-5], [8], [3]]), dn, (3,))
    np.testing.assert_array_equal(got, [[0, 1, 2], [7, 8, 9], [3, 4, 5]])


def test_variadic_scatter_returns_a_tuple_and_combines_jointly():
    def keep_larger(c0, c1, u0, u1):  # argmax-style update: value and its tag together
        take = ops.gt(u0, c0)
        return ops.select(take, u0, c0), ops.select(take, u1, c1)
    vals, tags = np.zeros(3, np.float32), np.full(3, -1, np.int32)
    idx = np.array([[0], [0], [2]])
    out = ops.scatter((vals, tags), idx, (np.float32([1, 5, 2]), np.int32([7, 8, 9])),
                      keep_larger, POINT)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_array_equal(out[0], [5, 0, 2])
    np.testing.assert_array_equal(out[1], [8, -1, 9])


def test_eager_results_are_ndarrays_and_python_scalars_adapt():
    out = ops.dynamic_update_slice(np.zeros(4, np.float32), np.float32([1]), [np.int8(2)])
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert ops.scatter(np.zeros(3, np.float32), np.array([[1]]), np.float32([2]), None,
                       POINT).dtype == np.float32
    assert isinstance(ops.dynamic_slice([1, 2, 3], [1], [1]), np.ndarray)


def test_start_indices_share_one_integer_dtype_in_the_graph():
    graph, _ = trace_flat(lambda x, i: [ops.dynamic_slice(x, [i, 1, 2], (1, 2, 2))],
                          [aval_of(np.zeros((3, 4, 5), np.float32)), aval_of(np.int16(0))])
    eqn = graph.eqns[-1]
    assert {a.aval.dtype for a in eqn.inputs[1:]} == {np.dtype(np.int16)}


def test_hlo_text_spells_the_params_like_xla():
    dn = GDN([1], [0], [0], 1)
    graph, _ = trace_flat(lambda x, i: [ops.gather(x, i, dn, [1, 3]),
                                        ops.scatter_add(x, i, ops.gather(x, i, dn, [1, 3]),
                                                        SDN([1], [0], [0], 1))],
                          [aval_of(np.zeros((4, 3), np.float32)), aval_of(np.zeros((2, 1), int))])
    text = str(graph)
    assert "gather(" in text and "offset_dims={1}" in text and "slice_sizes={1,3}" in text
    assert "scatter(" in text and "update_window_dims={1}" in text and "to_apply=%region" in text


def test_dimension_numbers_are_canonical_and_hashable():
    a = GDN([1], [0], [0], 1)
    b = GDN((1,), (0,), (0,), np.int64(1))
    assert a == b and hash(a) == hash(b) and a.offset_dims == (1,)
    assert SDN([0], [], [0], 1).input_batching_dims == ()
    with pytest.raises(errors.ParamError, match="GatherDimensionNumbers"):
        GDN([1.5], [0], [0], 1)
    with pytest.raises(errors.ParamError, match="ScatterDimensionNumbers"):
        SDN([0], [], [0], "1")


def test_update_computation_must_be_closed():
    def f(x, s):
        return [ops.scatter(x, np.array([[0]]), np.float32([1]), lambda c, u: ops.add(c, s),
                            POINT)]
    with pytest.raises(errors.TracerTypeError, match="scatter.*closed"):
        trace_flat(f, [aval_of(np.zeros(3, np.float32)), aval_of(np.float32(0))])


# ---------------------------------------------------------------- errors

X23 = np.zeros((2, 3), np.float32)
IDX = np.array([[0], [1]])

ERRORS = [
    ("dynamic_slice", lambda: ops.dynamic_slice(X23, [0], [1, 1]), errors.ShapeError),
    ("dynamic_slice", lambda: ops.dynamic_slice(X23, [0, 0], [3, 1]), errors.ParamError),
    ("dynamic_slice", lambda: ops.dynamic_slice(X23, [0, np.float32(1)], [1, 1]),
     errors.DTypeError),
    ("dynamic_slice", lambda: ops.dynamic_slice(X23, [np.zeros(2, int), 0], [1, 1]),
     errors.ShapeError),
    ("dynamic_slice", lambda: ops.dynamic_slice(X23, [np.uint64(0), np.int32(0)], [1, 1]),
     errors.DTypeError),
    ("dynamic_update_slice", lambda: ops.dynamic_update_slice(X23, np.zeros((3, 1),
                                                              np.float32), [0, 0]),
     errors.ShapeError),
    ("dynamic_update_slice", lambda: ops.dynamic_update_slice(X23, np.zeros((1, 1)), [0, 0]),
     errors.DTypeError),
    ("gather", lambda: ops.gather(X23, IDX.astype(np.float32), GDN((1,), (0,), (0,), 1),
                                  (1, 3)), errors.DTypeError),
    ("gather", lambda: ops.gather(X23, IDX, GDN((1,), (), (0,), 1), (1, 3)), errors.ShapeError),
    ("gather", lambda: ops.gather(X23, IDX, GDN((1,), (0,), (0,), 1), (2, 3)),
     errors.ParamError),
    ("gather", lambda: ops.gather(X23, IDX, GDN((1,), (0,), (0,), 1), (1, 4)),
     errors.ParamError),
    ("gather", lambda: ops.gather(X23, IDX, GDN((5,), (0,), (0,), 1), (1, 3)),
     errors.TracerIndexError),
    ("gather", lambda: ops.gather(X23, IDX, GDN((1,), (0,), (0,), 3), (1, 3)),
     errors.TracerIndexError),
    ("gather", lambda: ops.gather(X23, IDX, GDN((1,), (0,), (0, 1), 1), (1, 3)),
     errors.ShapeError),
    ("gather", lambda: ops.gather(X23, IDX, GDN((1,), (0,), (0,), 1, (0,), (0,)), (1, 3)),
     errors.ParamError),
    ("scatter", lambda: ops.scatter_add(X23, IDX, np.zeros((2, 4), np.float32),
                                        SDN((1,), (0,), (0,), 1)), errors.ShapeError),
    ("scatter", lambda: ops.scatter_add(X23, IDX, np.zeros((3, 3), np.float32),
                                        SDN((1,), (0,), (0,), 1)), errors.ShapeError),
    ("scatter", lambda: ops.scatter_add(X23, IDX, np.zeros((2, 3), np.int32),
                                        SDN((1,), (0,), (0,), 1)), errors.DTypeError),
    ("scatter", lambda: ops.scatter_add(X23, IDX, np.zeros((2, 3), np.float32),
                                        SDN((1,), (1, 0), (0,), 1)), errors.ParamError),
    ("scatter", lambda: ops.scatter(X23, IDX, np.zeros((2, 3), np.float32),
                                    lambda c, u: ops.convert_element_type(u, np.float64),
                                    SDN((1,), (0,), (0,), 1)), errors.DTypeError),
]


@pytest.mark.parametrize("name,call,cls", ERRORS, ids=[f"{n}-{i}" for i, (n, _, _) in
                                                       enumerate(ERRORS)])
def test_errors_name_the_op_and_the_operands(name, call, cls):
    with pytest.raises(cls) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(f"{name}:"), msg
    assert "f32[2,3]" in msg, msg
    assert isinstance(info.value, errors.TracerError)


def test_wrapper_errors_name_the_op():
    with pytest.raises(errors.TracerTypeError, match="scatter: update_computation must return"):
        ops.scatter(X23, IDX, np.zeros((2, 3), np.float32), lambda c, u: (c, u),
                    SDN((1,), (0,), (0,), 1))
    with pytest.raises(errors.ParamError, match="scatter: needs N >= 1"):
        ops.scatter((X23, X23), IDX, np.zeros((2, 3), np.float32), None,
                    SDN((1,), (0,), (0,), 1))
    with pytest.raises(errors.ParamError, match="dynamic_slice: slice_sizes"):
        ops.dynamic_slice(X23, [0, 0], 2)
    with pytest.raises(errors.ParamError, match="dynamic_slice: start index 1000"):
        ops.dynamic_slice(X23, [np.int8(0), 1000], [1, 1])
    with pytest.raises(errors.ParamError, match="gather: dimension_numbers"):
        ops.gather(X23, IDX, "bad", (1, 3))

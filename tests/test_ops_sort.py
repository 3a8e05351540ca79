"""Family tests for sort (XLA's Sort): the default total-order
comparator against `np.lexsort` on total-order integer keys (NaNs of both signs,
signed zeros, duplicates), general comparators against Python's stable `sorted`,
the cpu backend against the reference bit for bit (radix, lexsort and inlined
merge-sort paths), and the wrapper's errors.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tracer import errors, ops
from tracer.backend.cpu.options import PARALLEL_MIN_ELEMENTS
from tracer.core import aval_of, typecheck
from tracer.interpret import run_graph
from tracer.ops.sort import default_comparator, default_num_keys, total_order_key
from tracer.tracing import trace_flat
from tests.checks import threaded

EXAMPLES = settings(max_examples=20, deadline=None)
SPECIALS = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.5, -1.5, 1.5]
DTYPES = ["float32", "float64", "float16", "int8", "int32", "uint16", "int64", "bool"]


def _list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _traced(fn, *args):
    graph, captured = trace_flat(lambda *xs: _list(fn(*xs)), [aval_of(a) for a in args])
    assert not captured
    return run_graph(typecheck(graph), [np.asarray(a) for a in args], check=True)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                  np.ascontiguousarray(want).view(np.uint8))


def _sample(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -4, 5, shape).astype(dtype)
    values = rng.integers(-3, 4, shape).astype(dtype)
    special = rng.random(shape) < 0.3
    values[special] = rng.choice(np.array(SPECIALS, dtype), int(special.sum()))
    return values


def _lexsort_oracle(arrays, num_keys, dimension):
    keys = [total_order_key(a) for a in arrays[:num_keys]]
    order = np.lexsort(keys[::-1], axis=dimension)
    return [np.take_along_axis(a, order, axis=dimension) for a in arrays]


# ---------------------------------------------------------------- default comparator

def test_seed_example_returns_a_tuple():
    out = ops.sort((np.int32([3, 1]), np.int32([42, 50]), np.float32([-3.0, 1.1])),
                   comparator=lambda a, b, *_: ops.lt(a, b))
    assert isinstance(out, tuple) and len(out) == 3
    for got, want in zip(out, (np.int32([1, 3]), np.int32([50, 42]), np.float32([1.1, -3.0])),
                         strict=True):
        _same_bits(got, want)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_total_order_places_signed_nans_and_zeros(dtype):
    x = np.array([np.nan, 1.0, -0.0, -np.inf, 0.0, -np.nan, np.inf, -2.0], dtype)
    want = np.array([-np.nan, -np.inf, -2.0, -0.0, 0.0, 1.0, np.inf, np.nan], dtype)
    _same_bits(ops.sort(x), want)
    _same_bits(tr.jit(ops.sort)(x), want)


@EXAMPLES
@given(st.lists(st.sampled_from(DTYPES), min_size=1, max_size=3),
       st.lists(st.integers(0, 5), min_size=1, max_size=3), st.data())
def test_default_comparator_is_a_lexsort_on_total_order_keys(dtypes, shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    arrays = [_sample(rng, shape, d) for d in dtypes]
    dimension = data.draw(st.integers(-len(shape), len(shape) - 1))
    num_keys = data.draw(st.integers(1, len(dtypes)))
    fn = lambda *xs: ops.sort(xs, dimension=dimension, num_keys=num_keys)  # noqa: E731
    want = _lexsort_oracle(arrays, num_keys, dimension)
    for got in (fn(*arrays), _traced(fn, *arrays)):
        for g, w in zip(got, want, strict=True):
            _same_bits(g, w)


def test_default_comparator_is_recognised_only_when_it_is_the_default():
    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    assert default_num_keys(default_comparator((f32, i32), 2)) == 2
    assert default_num_keys(default_comparator((f32, i32), 1)) == 1
    same = trace_flat(lambda a, b: [ops.lt(a, b, total_order=True)],
                      [aval_of(np.float32(0))] * 2)[0]
    assert default_num_keys(same) == 1  # the same computation, traced by the user
    ieee = trace_flat(lambda a, b: [ops.lt(a, b)], [aval_of(np.float32(0))] * 2)[0]
    assert default_num_keys(ieee) == 0


def test_complex_sorts_by_real_then_imaginary_part():
    x = np.complex64([1 + 2j, -3 + 0j, 1 - 1j, 2 + 0j, 1 - 1j])
    want = np.complex64([-3 + 0j, 1 - 1j, 1 - 1j, 1 + 2j, 2 + 0j])
    _same_bits(ops.sort(x), want)
    _same_bits(tr.jit(ops.sort)(x), want)


# ---------------------------------------------------------------- general comparators

def _abs_descending(a, b):
    return ops.gt(ops.abs(a), ops.abs(b))


@EXAMPLES
@given(st.lists(st.integers(1, 6), min_size=1, max_size=2), st.data())
def test_comparator_gives_pythons_stable_sort(shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    x = rng.integers(-4, 5, shape).astype(np.float64)
    rider = np.arange(x.size, dtype=np.int32).reshape(shape)
    fn = lambda x, r: ops.sort((x, r), comparator=lambda a, b, *_: _abs_descending(a, b),  # noqa
                               dimension=0, is_stable=True)
    cols = [sorted(range(shape[0]), key=lambda j, c=c: -abs(x.reshape(shape[0], -1)[j, c]))
            for c in range(x.size // shape[0])]
    order = np.array(cols, np.int64).T.reshape(shape)
    for got in (fn(x, rider), _traced(fn, x, rider)):
        _same_bits(got[0], np.take_along_axis(x, order, 0))
        _same_bits(got[1], np.take_along_axis(rider, order, 0))


def test_inconsistent_comparator_matches_the_merge_sort_spec_on_cpu():
    """IEEE `lt` with NaNs is not a strict weak order: the result depends on the
    algorithm, so the cpu kernel must run the reference's merge sort exactly."""
    x = np.float32([3, np.nan, 1, -0.0, np.nan, 0.0, 2, -5, np.nan, 1])
    fn = lambda x: ops.sort(x, comparator=lambda a, b: ops.lt(a, b))  # noqa: E731
    _same_bits(tr.jit(fn)(x), fn(x))
    assert "order" in tr.jit(fn).lower(x).compile().source  # the inlined merge sort


def _by_bits(a, b):
    """A comparator that is not element-wise (dynamic_slice): compared one pair at a time."""
    return ops.lt(ops.dynamic_slice(a, [], []), b)


@pytest.mark.parametrize("comparator", [_by_bits, _abs_descending], ids=["one_by_one", "vector"])
def test_comparator_paths_agree(comparator):
    x = np.random.default_rng(3).integers(-3, 4, (3, 9)).astype(np.int16)
    fn = lambda x: ops.sort(x, comparator=comparator, dimension=1)  # noqa: E731
    want = np.stack([sorted(r, key=functools.cmp_to_key(
        lambda u, v: -1 if bool(comparator(u, v)) else int(bool(comparator(v, u)))))
        for r in x]).astype(np.int16)
    _same_bits(fn(x), want)
    _same_bits(tr.jit(fn)(x), want)


# ---------------------------------------------------------------- the cpu kernels

@pytest.mark.parametrize("dtype", DTYPES + ["uint8", "complex64"])
@pytest.mark.parametrize("shape,dimension", [((1000,), 0), ((70, 37), 0), ((2, 45, 5), 1),
                                             ((5000, 3), 0)])
def test_cpu_radix_kernels_match_the_reference(dtype, shape, dimension):
    """A contiguous row and tiles of few long strided rows (radix sort), many short rows
    (the sorting network), and riders moved by the permutation."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 100).astype(dtype) if dtype != "bool" else \
        _sample(rng, shape, dtype)
    if np.dtype(dtype).kind == "f":
        x.flat[::17] = np.nan
        x.flat[3::19] = -np.nan
        x.flat[5::13] = -0.0
    rider = rng.integers(0, 9, shape).astype(np.int16)
    fn = lambda x, r: [ops.sort(x, dimension=dimension),  # noqa: E731
                       *ops.sort((x, r), dimension=dimension)]
    for got, want in zip(tr.jit(fn)(x, rider), fn(x, rider), strict=True):
        _same_bits(got, want)


@pytest.mark.parametrize("n,rows", [(2, 5), (15, 4), (16, 9), (17, 33), (4096, 4), (4097, 4),
                                    (100, 3)])
def test_cpu_network_and_radix_sort_agree_at_their_edges(n, rows):
    """Rows of n keys past a multiple of the network's 16-position blocks, at its
    NETWORK_MAX and NETWORK_MIN_ROWS limits; riders pack their position with the key."""
    rng = np.random.default_rng(n)
    x = rng.integers(-50, 50, (rows, n)).astype(np.float32)
    x[:, ::7] = -0.0
    rider = np.arange(rows * n, dtype=np.int32).reshape(rows, n)
    fn = lambda x, r: [ops.sort(x), *ops.sort((x, r))]  # noqa: E731
    for got, want in zip(tr.jit(fn)(x, rider), fn(x, rider), strict=True):
        _same_bits(got, want)


def test_cpu_int64_keys_with_equal_high_bytes():
    """Radix passes whose byte is the same for every key are skipped."""
    x = np.random.default_rng(1).integers(0, 300, 5000).astype(np.int64) + 2 ** 40
    _same_bits(tr.jit(ops.sort)(x), np.sort(x))


def test_cpu_lexsort_of_three_keys():
    rng = np.random.default_rng(2)
    a, b, c = (rng.integers(0, 3, (4, 200)).astype(t) for t in (np.int8, np.float32, np.uint32))
    fn = lambda a, b, c: ops.sort((a, b, c), num_keys=3)  # noqa: E731
    for got, want in zip(tr.jit(fn)(a, b, c), _lexsort_oracle([a, b, c], 3, -1), strict=True):
        _same_bits(got, want)


# ---------------------------------------------------------------- errors and printing

@pytest.mark.parametrize("call,error", [
    (lambda: ops.sort((np.zeros(3), np.zeros(4))), errors.ShapeError),
    (lambda: ops.sort(np.float32(1)), errors.TracerIndexError),
    (lambda: ops.sort(np.zeros((2, 3)), dimension=2), errors.TracerIndexError),
    (lambda: ops.sort(np.zeros(3), comparator=lambda a, b: ops.add(a, b)), errors.DTypeError),
    (lambda: ops.sort(np.zeros(3), comparator=lambda a, b: (ops.lt(a, b), ops.gt(a, b))),
     errors.TracerTypeError),
    (lambda: ops.sort(np.zeros(3), num_keys=2), errors.ParamError),
    (lambda: ops.sort(np.zeros(3), comparator=ops.lt, num_keys=2), errors.ParamError),
    (lambda: ops.sort([]), errors.ParamError),
    (lambda: ops.sort(np.zeros(3), dimension=0.5), errors.ParamError),
])
def test_errors(call, error):
    with pytest.raises(error, match="sort"):
        call()


def test_comparator_must_be_closed():
    def fn(x, t):
        return ops.sort(x, comparator=lambda a, b: ops.lt(ops.mul(a, t), b))
    with pytest.raises(errors.TracerTypeError, match="closed"):
        tr.jit(fn)(np.zeros(3), np.float64(2))


def test_hlo_text_shows_the_comparator_region():
    text = str(tr.make_hlo(lambda x: ops.sort(x, dimension=0))(np.zeros((2, 3), np.float32)))
    assert "sort(" in text and "to_apply=" in text and "dimension=0" in text
    assert "total_order=true" in text


# ---------------------------------------------------------------- gather at benchmark size

def test_large_gather_runs_its_batch_loop_in_parallel_and_clamps():
    """bench_indexing's x[idx] path: the gather loop is a prange kernel from
    PARALLEL_MIN_ELEMENTS elements, still clamping every start into bounds."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(50_000).astype(np.float32)
    idx = rng.integers(-60_000, 60_000, (PARALLEL_MIN_ELEMENTS, 1))
    dn = ops.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                    start_index_map=(0,), index_vector_dim=1)
    fn = tr.jit(lambda x, i: ops.gather(x, i, dn, (1,)))
    _same_bits(fn(x, idx), x[np.clip(idx[:, 0], 0, x.size - 1)])
    assert ("parallel_gather" in fn.lower(x, idx).compile().source) == threaded()

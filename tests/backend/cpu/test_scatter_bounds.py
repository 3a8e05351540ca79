"""The cpu backend's scatter against the seeds' index mapping (XLA's Scatter: a window
that does not fit entirely is skipped) and against NumPy's `np.add.at` for
`tracer.numpy`'s `.at[...]` updates: random dimension numbers, negative and
out-of-range indices of signed and unsigned dtypes, duplicate indices, empty operands
and index arrays. Several problems are traced into one function, so each example is
one compile."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tests.test_ops_indexing import gather_oracle, gather_problems, scatter_oracle
from tracer import ops
from tracer.backend.cpu.emit.index import SCATTER_AHEAD
from tracer.backend.cpu.lib.gather import SCALAR_MIN_BYTES

SDN = ops.ScatterDimensionNumbers
GDN = ops.GatherDimensionNumbers


def _twice_minus(current, update):
    return ops.sub(ops.mul(current, 2), update)


# combiner -> (its graph, the oracle's scalar rule)
COMBINERS = {"add": (ops.add, lambda c, u: c + u), "replace": (None, lambda c, u: u),
             "twice_minus": (_twice_minus, lambda c, u: 2 * c - u),
             "max": (ops.max, max)}
# unsigned indices: a negative drawn index becomes a huge one (out of range, never wraps)
INDEX_DTYPES = [None, np.uint32, np.uint64]


def _as_scatter(dn: GDN) -> SDN:
    return SDN(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
               dn.index_vector_dim, dn.operand_batching_dims, dn.start_indices_batching_dims)


def _problem(drawn):
    (x, idx, gdn, sizes), kind, index_dtype = drawn
    if index_dtype is not None:
        idx = idx.astype(np.int64).astype(index_dtype)
    updates = gather_oracle(x, idx, gdn, sizes) * 3 - 7  # shaped like the matching gather
    return x, idx, updates, _as_scatter(gdn), kind, gdn, sizes


@settings(max_examples=4, deadline=None)
@given(st.lists(st.tuples(gather_problems(), st.sampled_from(list(COMBINERS)),
                          st.sampled_from(INDEX_DTYPES)), min_size=8, max_size=8))
def test_compiled_scatters_and_gathers_follow_the_seed_mapping(drawn):
    problems = [_problem(d) for d in drawn]

    def every_problem(*arrays):
        outs = []
        for k, (_, _, _, dn, kind, gdn, sizes) in enumerate(problems):
            x, idx, updates = arrays[3 * k: 3 * k + 3]
            outs.append(ops.scatter(x, idx, updates, COMBINERS[kind][0], dn))
            outs.append(ops.gather(x, idx, gdn, sizes))
        return outs
    args = [a for p in problems for a in p[:3]]
    got = tr.jit(every_problem)(*args)
    for k, (x, idx, updates, dn, kind, gdn, sizes) in enumerate(problems):
        want = scatter_oracle(x, idx, updates, dn, COMBINERS[kind][1])
        np.testing.assert_array_equal(got[2 * k], want, err_msg=f"scatter {kind} {dn} {idx}")
        np.testing.assert_array_equal(got[2 * k + 1], gather_oracle(x, idx, gdn, sizes),
                                      err_msg=f"gather {gdn} {sizes} {idx}")


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 40), st.integers(0, 300), st.integers(0, 2 ** 32 - 1),
       st.sampled_from(["float32", "int64"]))
def test_numpy_add_at_with_negative_out_of_range_and_duplicate_indices(n, m, seed, dtype):
    """x.at[idx].add(v) traced: NumPy's negative indices count from the end; an index
    outside [-n, n) is dropped (JAX's update rule); duplicates accumulate as np.add.at."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 100).astype(dtype)
    idx = rng.integers(-2 * n - 2, 2 * n + 2, m)  # about half of them out of range
    v = (rng.standard_normal(m) * 100).astype(dtype)
    inside = (idx >= -n) & (idx < n)
    want = x.copy()
    np.add.at(want, idx[inside], v[inside])
    got = tr.jit(lambda x, i, v: x.at[i].add(v))(x, idx, v)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 9), st.integers(0, 7), st.integers(0, 40), st.integers(0, 2 ** 32 - 1))
def test_row_updates_skip_rows_whose_index_is_out_of_range(rows, cols, m, seed):
    """x.at[idx].set / .add of whole rows (a window per index): NumPy's order for
    duplicates (the last set wins), out-of-range rows dropped."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols))
    idx = rng.integers(-rows - 3, rows + 3, m).astype(np.int32)
    v = rng.standard_normal((m, cols))
    inside = (idx >= -rows) & (idx < rows)
    added, replaced = x.copy(), x.copy()
    np.add.at(added, idx[inside], v[inside])
    replaced[idx[inside]] = v[inside]  # NumPy assigns in order: the last duplicate wins
    got = tr.jit(lambda x, i, v: (x.at[i].add(v), x.at[i].set(v)))(x, idx, v)
    np.testing.assert_allclose(got[0], added, rtol=1e-12)
    np.testing.assert_array_equal(got[1], replaced)


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([0, 1, SCATTER_AHEAD, SCATTER_AHEAD + 1, 1000]),
       st.integers(0, 2 ** 32 - 1), st.sampled_from(["float32", "int64"]))
def test_scatters_into_operands_past_the_l2_size_prefetch_and_match_numpy(m, seed, dtype):
    """A scatter of single elements into an operand of SCALAR_MIN_BYTES and more
    prefetches the target SCATTER_AHEAD updates on: add, set and max still follow
    np.add.at / NumPy assignment / np.maximum.at, with negative, out-of-range and
    duplicate indices, and fewer updates than the prefetch distance."""
    n = SCALAR_MIN_BYTES // np.dtype(dtype).itemsize + 3
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 100).astype(dtype)
    idx = rng.integers(-n - 50, n + 50, m)
    idx[: m // 4] = idx[m // 2: m // 2 + m // 4]  # duplicates
    v = (rng.standard_normal(m) * 100).astype(dtype)
    inside = (idx >= -n) & (idx < n)
    added, replaced, largest = x.copy(), x.copy(), x.copy()
    np.add.at(added, idx[inside], v[inside])
    replaced[idx[inside]] = v[inside]
    np.maximum.at(largest, idx[inside], v[inside])
    f = tr.jit(lambda x, i, v: (x.at[i].add(v), x.at[i].set(v), x.at[i].max(v)))
    if m > SCATTER_AHEAD:
        assert "prefetch_element(" in f.lower(x, idx, v).compile().source
    for got, want in zip(f(x, idx, v), (added, replaced, largest), strict=True):
        np.testing.assert_array_equal(got, want)

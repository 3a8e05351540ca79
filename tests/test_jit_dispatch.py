"""The hot path of cached jit calls (`tracer.dispatch`): a call whose arguments are all
arrays is looked up by (shape, dtype) alone and runs the cpu launcher directly; every
such call must still get the code of its own signature, read its own layout, and see
the settings and the profiler as the full key does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tracer.numpy._eager import EagerArray

DTYPES = ("float32", "float64", "int32", ">f8", ">i4")
SHAPES = ((3,), (4,), (2, 3))
LAYOUTS = ("contiguous", "reversed", "strided", "transposed", "read-only", "eager",
           "unaligned")


def _argument(dtype: str, shape: tuple, layout: str) -> np.ndarray:
    """An array of `dtype` and `shape` laid out as `layout` says (values 0, 1, ...)."""
    n = int(np.prod(shape))
    values = np.arange(n).astype(dtype).reshape(shape)
    if layout == "reversed":
        return np.ascontiguousarray(values[..., ::-1])[..., ::-1]  # negative strides
    if layout == "strided":
        wide = np.zeros(shape[:-1] + (shape[-1] * 2,), dtype)
        wide[..., ::2] = values
        return wide[..., ::2]
    if layout == "transposed":
        return np.ascontiguousarray(values.T).T
    if layout == "read-only":
        values.flags.writeable = False
    if layout == "eager":
        return values.view(EagerArray)
    if layout == "unaligned":
        raw = np.zeros(values.nbytes + 1, np.uint8)[1:]
        out = raw.view(values.dtype).reshape(shape)
        out[...] = values
        return out
    return values


@settings(max_examples=25)
@given(st.lists(st.tuples(st.sampled_from(DTYPES), st.sampled_from(SHAPES),
                          st.sampled_from(LAYOUTS)), min_size=2, max_size=8))
def test_cached_calls_run_their_own_signatures_code_on_any_layout(calls):
    """Each call matches NumPy whatever came before it; one trace per (shape, dtype in
    native order); arguments are never written; results are fresh EagerArrays. (The
    reshape reads the argument as one block: wrong on a layout the launcher let by.)"""
    f = tr.jit(lambda v: v.reshape(-1) * 2 + 1)
    signatures = set()
    for dtype, shape, layout in calls:
        x = _argument(dtype, shape, layout)
        before = x.copy()
        out = f(x)
        assert type(out) is EagerArray
        assert out.dtype == np.dtype(dtype).newbyteorder("=")
        np.testing.assert_array_equal(out, before.reshape(-1) * 2 + 1)
        np.testing.assert_array_equal(x, before)
        assert not np.shares_memory(out, x)
        signatures.add((shape, np.dtype(dtype).newbyteorder("=")))
    info = f.cache_info()
    assert info.traces == len(signatures), info
    assert info.hits + info.misses == len(calls)


def test_argument_order_of_dtypes_picks_the_matching_entry():
    f = tr.jit(lambda a, b: a - b * 2)
    x32, x64 = np.arange(3, dtype=np.float32), np.arange(3.0) + 10
    for _ in range(2):  # the second round is served by the fast index
        np.testing.assert_array_equal(f(x32, x64), x32 - x64 * 2)
        np.testing.assert_array_equal(f(x64, x32), x64 - x32 * 2)
        assert f(x32, x32).dtype == np.float32
    assert f.cache_info().traces == 3


def test_changing_the_default_backend_or_debug_print_reaches_cached_calls(capsys):
    f = tr.jit(lambda v: tr.debug.print("v = {}", v) or v + 1)
    x = np.arange(2.0)
    f(x), f(x)
    assert capsys.readouterr().out.count("v = ") == 2
    with tr.config.override(debug_print=False):
        np.testing.assert_array_equal(f(x), x + 1)
        assert capsys.readouterr().out == ""  # traced again, without the print
    with tr.config.override(default_backend="interpreter"):
        f(x)
        assert capsys.readouterr().out.count("v = ") == 1
    assert f.cache_info().traces == 3
    f(x)  # back to the first entry
    assert f.cache_info().traces == 3


def test_outputs_that_are_arguments_or_repeat_are_copies_on_cached_calls():
    f = tr.jit(lambda v: (v, v * 2, v * 2))
    x = np.arange(3.0)
    for _ in range(2):
        a, b, c = f(x)
        assert not np.shares_memory(a, x) and not np.shares_memory(b, c)
        a[0] = b[0] = 5.0
        assert x[0] == 0.0 and c[0] == 0.0


def test_results_fed_back_are_read_as_arrays():
    step = tr.jit(lambda v: v * 0.5 + 1.0)
    y = np.zeros(4)
    want = y.copy()
    for _ in range(5):
        y, want = step(y), want * 0.5 + 1.0
        np.testing.assert_array_equal(y, want)
    assert step.cache_info().traces == 1


def test_profiler_records_calls_that_the_fast_index_serves(tmp_path):
    import json

    f = tr.jit(lambda v: v + 1)
    x = np.arange(3.0)
    f(x), f(x)
    with tr.profiler.trace(str(tmp_path)):
        np.testing.assert_array_equal(f(x), x + 1)
    path, = tmp_path.rglob("*.trace.json")
    assert "run jit_<lambda>" in [e.get("name") for e in json.loads(path.read_text())]


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_least_recently_used_entry_goes_first_with_fast_hits(backend):
    f = tr.jit(lambda v: v + 1, backend=backend)
    with tr.config.override(jit_cache_size=2):
        a, b, c = np.ones(1), np.ones(2), np.ones(3)
        f(a), f(b)
        f(a)                        # a fast hit: b is now the least recently used
        f(c)                        # evicts b
        traces = f.cache_info().traces
        f(a), f(c)
        assert f.cache_info().traces == traces
        f(b)
        assert f.cache_info().traces == traces + 1


def test_pytrees_of_outputs_on_cached_calls():
    x = np.arange(3.0)
    for f, want in ((tr.jit(lambda v: (v + 1,)), (x + 1,)),
                    (tr.jit(lambda v: (v + 1, v.sum(), v * 2)), (x + 1, x.sum(), x * 2)),
                    (tr.jit(lambda v: ()), ()),
                    (tr.jit(lambda v: {"a": v + 1, "b": [v * 2, v.sum()]}),
                     {"a": x + 1, "b": [x * 2, x.sum()]}),
                    (tr.jit(lambda v: None), None)):
        for _ in range(2):
            out = f(x)
            assert tr.tree_util.tree_structure(out) == tr.tree_util.tree_structure(want)
            for got, expected in zip(tr.tree_util.tree_leaves(out),
                                     tr.tree_util.tree_leaves(want), strict=True):
                assert type(got) is EagerArray
                np.testing.assert_array_equal(got, expected)

"""The hot path of cached jit calls (`tracer.dispatch`): a call whose arguments are all
arrays is looked up by (shape, dtype) alone and runs the cpu launcher directly; every
such call must still get the code of its own signature, read its own layout, and see
the settings and the profiler as the full key does."""

from __future__ import annotations

import re

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
    for _ in range(3):  # full key, fast index, guard
        a, b, c = f(x)
        assert not np.shares_memory(a, x) and not np.shares_memory(b, c)
        a[0] = b[0] = 5.0
        assert x[0] == 0.0 and c[0] == 0.0
    identity = tr.jit(lambda v, w: v)
    for _ in range(3):
        out = identity(x, 1.0)
        assert type(out) is EagerArray and not np.shares_memory(out, x)
        np.testing.assert_array_equal(out, np.arange(3.0))


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


# ------------------------------------------------------------------ pytree arguments

_LEAVES = st.sampled_from([("float32", (2,)), ("float64", (2,)), ("float64", (3,)),
                           (">f8", (2,)), ("int32", (2,))])


def _trees(leaf):
    return st.recursive(leaf, lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from("abc"), kids, max_size=3)), max_leaves=4)


def _build(spec, start=None):
    """Arrays for the leaf specs of a drawn tree, each with values of its own (1, 2, 3,
    ... counted across the leaves: a leaf read in another's place shows)."""
    start = [1] if start is None else start
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        dtype, shape = spec
        size = int(np.prod(shape))
        start[0] += size
        return (np.arange(size) + start[0] - size).astype(dtype).reshape(shape)
    if isinstance(spec, dict):  # (built in reverse order: insertion order is not the key)
        return dict(reversed([(k, _build(v, start)) for k, v in spec.items()]))
    return type(spec)(_build(s, start) for s in spec)


@settings(max_examples=30)
@given(st.lists(st.tuples(_trees(_LEAVES), st.sampled_from(SHAPES[:1])), min_size=2,
                max_size=6))
def test_pytree_arguments_hit_the_entry_of_their_structure_and_signatures(calls):
    """Arrays in dicts, lists and tuples: each call's result is its own tree's (a sum
    weighted by position, so leaves in a wrong order show), one trace per distinct
    (structure, leaf signatures in native order), whatever the dict insertion order."""
    def weighted(tree, x, np_=tr.numpy):
        leaves = tr.tree_util.tree_leaves(tree)
        return sum((k + 1) * np_.sum(leaf.astype("float64")) for k, leaf in
                   enumerate(leaves)) + x
    f = tr.jit(weighted, backend="interpreter")
    keys = set()
    for spec, shape in calls:
        tree, x = _build(spec), np.zeros(shape)
        for _ in range(2):  # the second call is the fast index's
            np.testing.assert_allclose(f(tree, x), weighted(tree, x, np_=np))
        leaves, treedef = tr.tree_util.tree_flatten(tree)
        keys.add((treedef, tuple((a.shape, a.dtype.newbyteorder("=")) for a in leaves)))
    assert f.cache_info().traces == len(keys)


def test_pytree_arguments_on_cached_cpu_calls():
    """The direct runner with a tree's leaves: a dict of a list and a tuple (EagerArray,
    strided and read-only leaves among them); a list where a tuple was is a new trace."""
    f = tr.jit(lambda p, x: p["w"][0] * x + p["w"][1] - p["b"][0])
    w0, w1, b = np.arange(3.0), np.arange(3.0) * 2, np.ones(3)
    x = np.arange(6.0)[::2]
    b.flags.writeable = False
    want = w0 * x + w1 - b
    for p in ({"w": [w0, w1], "b": (b,)}, {"b": (b,), "w": [w0, w1.view(EagerArray)]}):
        for _ in range(2):
            out = f(p, x)
            assert type(out) is EagerArray
            np.testing.assert_array_equal(out, want)
    assert f.cache_info().traces == 1
    np.testing.assert_array_equal(f({"w": (w0, w1), "b": [b]}, x), want)
    assert f.cache_info().traces == 2


# ------------------------------------------------------------------ Python scalars

_SCALAR_VALUES = st.one_of(st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                           st.floats(-1e6, 1e6), st.complex_numbers(max_magnitude=1e3))


@settings(max_examples=25)
@given(st.lists(st.tuples(st.sampled_from(["float32", "float64", "complex64"]),
                          _SCALAR_VALUES), min_size=2, max_size=8))
def test_python_scalar_arguments_are_weak_on_cached_calls(calls):
    """A Python scalar beside an array: NumPy 2's weak promotion and value on every call
    (one trace per array dtype and scalar type); an int beyond int64 is an
    OverflowError naming the argument, as on a first call."""
    f = tr.jit(lambda a, s: a * s)
    for dtype, s in calls:
        x = np.arange(3).astype(dtype)
        if type(s) is int and not -2 ** 63 <= s < 2 ** 63:
            with pytest.raises(tr.TracerError, match="argument s") as info:
                f(x, s)
            assert isinstance(info.value, OverflowError)
            continue
        for _ in range(2):  # the second call is the fast index's
            out = f(x, s)
            want = x * s
            assert out.dtype == want.dtype
            np.testing.assert_allclose(out, want, rtol=1e-6)
    assert f.cache_info().traces == len({(dtype, type(s)) for dtype, s in calls})
    x = np.arange(3.0)
    f(x, 1), f(x, 1)  # an int entry in the fast index: 2**63 must still not use it
    with pytest.raises(tr.TracerError, match="argument s") as info:
        f(x, 2 ** 63)
    assert isinstance(info.value, OverflowError)


# ------------------------------------------------------------------ the last signature's guard

_ARGUMENTS = st.one_of(
    st.tuples(st.just("array"), st.sampled_from(("float32", "float64", "int32", ">f8")),
              st.sampled_from(((), (3,), (2, 3))), st.sampled_from(LAYOUTS)),
    st.tuples(st.just("numpy scalar"), st.sampled_from(("float32", "int64"))),
    st.tuples(st.just("python"), st.sampled_from((True, 3, 2 ** 63, -2 ** 63, 2.5, 1 + 2j))),
    st.tuples(st.just("list"), st.sampled_from(((), (3,)))))


def _drawn(spec: tuple):
    kind = spec[0]
    if kind == "array":
        _, dtype, shape, layout = spec
        if not shape and layout in ("reversed", "strided", "transposed"):
            layout = "contiguous"  # (a 0-d array has no axis to stride)
        return _argument(dtype, shape, layout) + 0 if not shape and layout == "eager" \
            else _argument(dtype, shape, layout)
    if kind == "numpy scalar":
        return np.dtype(spec[1]).type(2)
    if kind == "list":
        return [np.arange(3.0).reshape(spec[1]) if spec[1] else np.float64(1.0)]
    return spec[1]


def _outcome(f, *args, **kwargs):
    """(type, dtype, values) of a call's result, or (exception type, message)."""
    try:
        out = f(*args, **kwargs)
    except Exception as e:  # the slow path's error is the oracle, whatever it is
        # (a keyword argument is named in quotes: 'b')
        return type(e), re.sub(r"'(\w)'", r"\1", str(e))
    return type(out), out.dtype, np.asarray(out).tolist()


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(_ARGUMENTS, _ARGUMENTS), min_size=2, max_size=6))
def test_positional_calls_do_what_calls_by_keyword_do(calls):
    """Positional calls (the guard of the last signature, then the fast index) against
    the same calls by keyword (always the full key): the same results, dtypes, result
    types and errors, and as many traces; arguments are never written. Arrays of
    every layout, 0-d arrays, NumPy scalars, Python scalars (an int beyond int64) and
    lists, in any order: none is taken for another's signature."""
    def body(a, b):
        return tr.numpy.multiply(tr.numpy.asarray(a), 2) - tr.numpy.asarray(b)
    positional, by_keyword = tr.jit(body), tr.jit(body)
    for spec_a, spec_b in calls:
        a, b = _drawn(spec_a), _drawn(spec_b)
        before = [np.array(a, copy=True), np.array(b, copy=True)]
        for _ in range(2):  # the second call is served by the guard
            assert _outcome(positional, a, b) == _outcome(by_keyword, a=a, b=b)
        np.testing.assert_array_equal(np.asarray(a), before[0])
        np.testing.assert_array_equal(np.asarray(b), before[1])
    assert positional.cache_info().traces == by_keyword.cache_info().traces


def test_the_guard_serves_only_its_arity_and_counts_its_hits():
    f = tr.jit(lambda *vs: sum(vs[1:], vs[0] * 2) if vs else tr.numpy.zeros(2))
    x = np.arange(3.0)
    for args in ((x,), (x, x), (x,), (), (x, x, x), ()):
        for _ in range(2):
            np.testing.assert_array_equal(f(*args), sum(args[1:], args[0] * 2) if args
                                          else np.zeros(2))
    info = f.cache_info()
    assert (info.traces, info.hits, info.misses) == (4, 8, 4)


def test_donated_arguments_on_guarded_calls():
    """A donated argument's entry runs the general path from the guard too: the result
    is right on every call and no two live results share memory."""
    f = tr.jit(lambda a, b: a * b + 1, donate_argnums=0)
    b = np.arange(4.0)
    results = []
    for k in range(4):
        a = np.full(4, float(k))
        results.append((f(a, b), k * b + 1))
    for out, want in results:
        np.testing.assert_array_equal(out, want)
    assert not any(np.shares_memory(p[0], q[0]) for i, p in enumerate(results)
                   for q in results[i + 1:])
    np.testing.assert_array_equal(b, np.arange(4.0))
    assert f.cache_info().traces == 1


def test_a_setting_change_or_eviction_forgets_the_last_signature():
    f = tr.jit(lambda v: v + 1)
    x = np.arange(2.0)
    f(x), f(x), f(x)  # the guard serves the third call
    with tr.config.override(default_backend="interpreter"):
        f(x)
    assert f.cache_info().traces == 2
    with tr.config.override(jit_cache_size=1):
        f(np.arange(3.0))  # evicts x's entry
        f(x)
    assert f.cache_info().traces == 4
    f.clear_cache()
    f(x)
    assert f.cache_info().traces == 5


def test_guarded_calls_keep_pooled_results_apart_and_convert_scalars_and_halves():
    """The guard runs the launcher's body itself: large results (from the launcher's
    buffer pool) kept alive never share memory, a Python scalar is converted, and
    float16 is read as its bits."""
    big = tr.jit(lambda v, s: v * s)
    x = np.arange(1 << 18, dtype=np.float32)  # a 1 MiB result: pooled
    kept = [big(x, float(k)) for k in range(4)]
    for k, out in enumerate(kept):
        np.testing.assert_array_equal(out, x * k)
    assert not any(np.shares_memory(a, b) for i, a in enumerate(kept) for b in kept[i + 1:])
    for k in range(3):  # results dropped at once: the pool hands buffers back
        np.testing.assert_array_equal(big(x, 0.5), x * 0.5)
    half = tr.jit(lambda v: v * 2)
    h = np.arange(5, dtype=np.float16)
    for _ in range(3):
        out = half(h)
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out, h * 2)
    assert big.cache_info().traces == half.cache_info().traces == 1


def test_the_guard_follows_the_interpreter_tier_to_compiled_code():
    """Under `compile_mode="async"` the guard of a signature is made while the
    interpreter tier serves it and made again around the launcher once numba's code
    is in: every call right, and the calls after the swap counted as compiled."""
    with tr.config.override(compile_mode="async"):
        f = tr.jit(lambda a, b: a * b - 3.5)
        x, y = np.arange(5.0), np.arange(5.0) + 2
        for _ in range(3):
            np.testing.assert_array_equal(f(x, y), x * y - 3.5)
        f.wait_compiled()
        compiled = f.cache_info().tiers["compiled"]
        for _ in range(3):
            out = f(x, y)
            assert type(out) is EagerArray
            np.testing.assert_array_equal(out, x * y - 3.5)
        info = f.cache_info()
        assert info.tiers["compiled"] == compiled + 3 and info.traces == 1


def test_signatures_called_in_turn_and_evicted_ones():
    """Two signatures called in turn are both served by guards (the last entry's asks
    the one before it); every call gets its own signature's code and counts as a hit;
    an evicted entry serves no call, even as the one before the last."""
    f = tr.jit(lambda v: v * 2 + v.shape[0])  # (the shape is baked into each trace)
    a, b, c = np.arange(2.0), np.arange(3.0), np.arange(4.0)
    for v in (a, b, a, b, a, b):
        np.testing.assert_array_equal(f(v), v * 2 + len(v))
    assert (f.cache_info().traces, f.cache_info().hits) == (2, 4)
    with tr.config.override(jit_cache_size=2):
        for v in (c, b, c, b, c):  # c evicts a (the least recently used)
            np.testing.assert_array_equal(f(v), v * 2 + len(v))
        assert f.cache_info().traces == 3
        np.testing.assert_array_equal(f(a), a * 2 + 2)  # evicts b, the one before c
        for v in (c, a, c, b):
            np.testing.assert_array_equal(f(v), v * 2 + len(v))
        assert f.cache_info().traces == 5  # a and b traced again


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(_trees(_LEAVES), st.booleans()), min_size=2, max_size=6))
def test_pytree_calls_do_what_calls_by_keyword_do(calls):
    """Arrays in dicts, lists and tuples called positionally three times (the full key,
    the fast index, the tree's guard) against the same calls by keyword: the same
    results, types and traces, whatever the dict order, list or tuple, and a strided
    leaf (read by `Entry.run`, not the guard's launcher)."""
    def weighted(tree, x):
        leaves = tr.tree_util.tree_leaves(tree)
        return sum(((k + 1) * tr.numpy.sum(leaf.astype("float64")) for k, leaf in
                    enumerate(leaves)), x)
    positional, by_keyword = tr.jit(weighted), tr.jit(weighted)
    for spec, strided in calls:
        tree = _build(spec)
        if strided:
            tree = tr.tree_util.tree_map(lambda a: np.repeat(a, 2, axis=-1)[..., ::2], tree)
        x = np.zeros(2)
        for _ in range(3):
            assert _outcome(positional, tree, x) == _outcome(by_keyword, tree=tree, x=x)
    assert positional.cache_info().traces == by_keyword.cache_info().traces

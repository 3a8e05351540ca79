"""C guards (`tracer/backend/cpu/c_guard.py`): a cached signature served in machine code
must give what the Python guard gives for every call (NumPy's values, the same cache
statistics), hand every other call to it, and neither leak nor share memory."""

from __future__ import annotations

import sys
import threading

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tracer import guards
from tracer.backend.cpu import c_abi, c_guard
from tracer.backend.cpu.c_guard_ir import ArrayParam
from tracer.backend.cpu.options import thread_count
from tracer.cache import CacheStats
from tracer.dispatch import Entry
from tracer.numpy._eager import EagerArray

from ...checks import threaded
from ...test_jit_dispatch import _argument


@pytest.fixture
def promote_now(monkeypatch):
    """Entries get their C guard at their first guarded call."""
    _promote_after(monkeypatch, 0)


def _promote_after(monkeypatch, calls: int) -> None:
    monkeypatch.setattr(guards, "PROMOTE_AFTER", calls)
    monkeypatch.setattr(guards, "PROMOTE_AFTER_COMPILED", calls)
    monkeypatch.setattr(guards, "PROMOTE_AFTER_THREADED", calls)


def _fma(a, b, c):
    return a * b + c


def _promoted(f, *args):
    """`f` called until its entry for `args` has a C guard (which it asserts)."""
    for _ in range(3):
        f(*args)
    assert f._last.c_guard is not None
    return f._last


def test_this_machine_builds_c_guards():
    """The layouts `c_abi` reads hold here (so the other tests test the C path)."""
    assert c_abi.LAYOUT is not None and c_guard.available()


def test_hits_match_numpy_and_count_like_the_python_guard(promote_now):
    f = tr.jit(_fma)
    x, y, z = (np.arange(4, dtype=np.float32) + k for k in range(3))
    entry = _promoted(f, x, y, z)
    hits = f.cache_info().hits
    for k in range(50):
        out = f(x, y + k, z)
        assert type(out) is EagerArray and out.dtype == np.float32
        np.testing.assert_array_equal(out, x * (y + k) + z)
        assert not np.shares_memory(out, x) and out.flags.writeable
    info = f.cache_info()
    assert info.hits == hits + 50 and entry.used == info.hits
    assert info.misses == 1 and info.tiers["compiled"] == info.hits + 1
    words = dict(entry.c_guard.words)
    assert "@serve" in entry.c_guard.ir and words["arg2.dim0"] == 4


def test_entries_of_one_structure_share_its_code_with_their_own_words(promote_now):
    """Two functions, shapes and dtypes of one structure (three arrays of rank 1 in,
    one out): the second guard reuses the compiled code and reads its own words."""
    f, g = tr.jit(_fma), tr.jit(lambda a, b, c: a - b * c)
    x = np.arange(4, dtype=np.float32)
    first = _promoted(f, x, x, x).c_guard
    y = np.linspace(0, 1, 7)
    parts = c_guard.plan_parts(f._last.compiled.executable, f._last.signature)
    assert c_guard.compiled(parts)
    second = _promoted(g, y, y, y).c_guard
    assert second.ir == first.ir and dict(second.words)["arg0.dim0"] == 7
    for _ in range(3):
        np.testing.assert_array_equal(g(y, y + 1, y), y - (y + 1) * y)
        np.testing.assert_array_equal(f(x, x + 1, x), x * (x + 1) + x)


@pytest.mark.parametrize("dtype", ["float16", "bool", "complex64", "int8", "uint64"])
@pytest.mark.parametrize("shape", [(), (0,), (3, 1, 2)])
def test_dtypes_and_ranks_give_what_the_python_guard_gives(dtype, shape, monkeypatch):
    x = (np.arange(int(np.prod(shape))) % 3).astype(dtype).reshape(shape)
    results = []
    for after in (0, 10**18):
        _promote_after(monkeypatch, after)
        f = tr.jit(lambda v, w: v * w + v)
        outs = [f(x, x) for _ in range(4)]
        assert (f._last.c_guard is not None) == (after == 0)
        results.append(outs)
    for promoted, python in zip(*results):
        assert type(promoted) is type(python) and promoted.dtype == python.dtype
        np.testing.assert_array_equal(promoted, python)


def _mismatches() -> dict[str, tuple]:
    """Calls of a float32[2, 3] signature that the C guard must not serve itself."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    class Sub(np.ndarray):
        pass

    return {"wrong rank": (x.reshape(6), x.reshape(6)), "wrong dim": (x[:1], x[:1]),
            "dtype": (x.astype(np.float64), x), "big-endian": (x.astype(">f4"), x),
            "strided": (np.repeat(x, 2, axis=1)[:, ::2], x), "transposed": (x.T.copy().T, x),
            "unaligned": (_argument("float32", (2, 3), "unaligned"), x),
            "read-only": (_argument("float32", (2, 3), "read-only"), x),
            "eager": (x.view(EagerArray), x), "subclass": (x.view(Sub), x),
            "python scalar": (x, 2.0), "int": (x, 3), "0-d array": (x, np.float32(2.0))}


@pytest.mark.parametrize("case", list(_mismatches()))
def test_calls_it_does_not_serve_get_the_python_guards_answer(case, promote_now):
    f = tr.jit(lambda a, b: a * b - 1)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _promoted(f, x, x)
    a, b = _mismatches()[case]
    np.testing.assert_array_equal(f(a, b), np.asarray(a) * np.asarray(b) - 1)
    np.testing.assert_array_equal(f(x, x), x * x - 1)  # (and the C guard still serves)


def test_a_wrong_argument_count_raises_as_before(promote_now):
    f = tr.jit(lambda a, b: a + b)
    x = np.ones(3)
    _promoted(f, x, x)
    with pytest.raises(TypeError):
        f(x)
    with pytest.raises(TypeError):
        f(x, x, x)
    np.testing.assert_array_equal(f(x, x), 2 * x)


_LAYOUTS = ("contiguous", "reversed", "strided", "read-only", "eager", "unaligned")


@settings(max_examples=15)
@given(st.lists(st.tuples(st.sampled_from(("float32", "float64", ">f8")),
                          st.sampled_from(((3,), (2, 3))), st.sampled_from(_LAYOUTS)),
                min_size=3, max_size=10))
def test_any_call_sequence_gives_what_the_python_path_gives(calls):
    """The same calls with and without C guards: equal results and cache statistics."""
    delays = guards.PROMOTE_AFTER, guards.PROMOTE_AFTER_COMPILED
    infos = []
    for after in (0, 10**18):
        guards.PROMOTE_AFTER = guards.PROMOTE_AFTER_COMPILED = after
        try:
            f = tr.jit(lambda v, w: (v - w) * 2)
            for dtype, shape, layout in calls:
                x, y = _argument(dtype, shape, layout), _argument(dtype, shape, "contiguous")
                np.testing.assert_array_equal(f(x, y), (np.asarray(x) - y) * 2)
            infos.append(f.cache_info()._replace(compiles=0))  # (the 2nd run loads the code)
        finally:
            guards.PROMOTE_AFTER, guards.PROMOTE_AFTER_COMPILED = delays
    assert infos[0] == infos[1]


def test_least_recent_entry_is_evicted_when_c_guards_count_the_hits(promote_now):
    f = tr.jit(lambda v: v + 1)
    a, b, c = np.ones(1), np.ones(2), np.ones(3)
    with tr.config.override(jit_cache_size=2):
        _promoted(f, b)
        _promoted(f, a)  # a's C guard now stamps a's entry as the most recent
        for _ in range(5):
            f(a)
        f(c)  # evicts b
        traces = f.cache_info().traces
        f(a)
        assert f.cache_info().traces == traces
        f(b)
        assert f.cache_info().traces == traces + 1


def test_references_are_neither_leaked_nor_lost(promote_now):
    import gc

    f = tr.jit(_fma)
    x, y, z = (np.full(4, k, np.float32) for k in (1, 2, 3))
    _promoted(f, x, y, z)
    before = [sys.getrefcount(v) for v in (x, y, z)]
    out = f(x, y, z)
    assert sys.getrefcount(out) == sys.getrefcount(np.empty(1))  # (one owner, as fresh)
    del out
    gc.collect()
    rss = _rss_bytes()
    for _ in range(100_000):
        f(x, y, z)
    assert _rss_bytes() - rss < 2 << 20  # (a leaked 4-float EagerArray a call: 12 MB)
    assert [sys.getrefcount(v) for v in (x, y, z)] == before


def _rss_bytes() -> int:
    import os

    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_two_threads_calling_one_function_count_every_hit(promote_now):
    f = tr.jit(_fma)
    x = np.arange(8.0)
    _promoted(f, x, x, x)
    hits = f.cache_info().hits
    errors = []

    def calls(k: float) -> None:
        y = x + k
        for _ in range(2000):
            if not np.array_equal(f(x, y, y), x * y + y):
                errors.append(k)

    threads = [threading.Thread(target=calls, args=(k,)) for k in (1.0, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and f.cache_info().hits == hits + 4000


def test_a_kernel_on_the_thread_pool_is_served_and_sets_its_thread_count(promote_now):
    """A host whose loop runs on numba's pool gets a C guard too (where the pool is
    safe to call); the host itself sets tracer's thread count for the calling thread,
    which nothing in Python does any more."""
    f = tr.jit(lambda x: tr.numpy.exp(x) * 2)
    x = np.linspace(-1.0, 1.0, 1 << 16, dtype=np.float32)  # (a threaded nest: 2^16 exps)
    entry = _promoted(f, x)
    assert entry.compiled.executable.threaded == threaded()
    for k in range(20):
        numba.set_num_threads(1)
        np.testing.assert_allclose(f(x + k), np.exp(x + k) * 2, rtol=2e-6)
        assert numba.get_num_threads() == thread_count()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def _donated(v):
    return v * 2


@pytest.mark.parametrize("make, args", [
    (lambda: tr.jit(lambda v: (v + 1, v * 2)), (np.ones(3),)),           # two outputs
    (lambda: tr.jit(lambda v: {"y": v + 1}), (np.ones(3),)),             # a pytree
    (lambda: tr.jit(lambda v: v), (np.ones(3),)),                        # passed through
    (lambda: tr.jit(_donated, donate_argnums=0), (np.ones(3),)),         # donation
    (lambda: tr.jit(lambda v: v + 1), (np.ones(1 << 18),)),              # a pooled buffer
    (lambda: tr.jit(lambda v: tr.debug.callback(lambda _: None, v) or v + 1),
     (np.ones(3),)),                                                      # a host effect
])
def test_executables_it_would_change_keep_the_python_guard(make, args, promote_now):
    f = make()
    want = f(*[a.copy() for a in args])
    for _ in range(3):
        got = f(*[a.copy() for a in args])
        for g, w in zip(tr.tree_util.tree_leaves(got), tr.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(g, w)
    assert f._last.c_guard is None


def test_an_error_status_hands_the_call_to_the_python_guard():
    """A host that fails (numba's error status) frees what the guard made and lets the
    fallback serve the call (in tracer: the Python guard, which raises the error)."""

    @numba.njit(no_cfunc_wrapper=True)
    def host(a, out, dims):
        if a[0] < 0:
            raise ValueError("negative")
        out[0] = a[0] * dims[0]

    array, index = numba.types.Array(numba.float64, 1, "C"), numba.types.Array(numba.int64, 1, "C")
    host.compile((array, array, index))
    native = host.overloads[(array, array, index)]
    dims = np.array([3], np.int64)
    f64 = np.dtype(np.float64)
    params = (ArrayParam(("input", 0), (1,), 8), ArrayParam(("buffer", id(f64)), (1,), 8),
              ArrayParam(("const", dims.ctypes.data), (1,), 8))
    stats, entry = CacheStats(), Entry.__new__(Entry)
    entry.used = 0
    served = []
    fallbacks = (lambda args: served.append(args) or "python", lambda args: "plain")
    counters = (stats, c_abi.check_slot(stats, CacheStats.hits),
                entry, c_abi.check_slot(entry, Entry.used))
    inputs = (((1,), id(f64)),)
    built = c_guard.build((inputs, params, 1, native), counters, fallbacks, (dims,))
    out = built.guard((np.array([2.0]),))
    assert type(out) is EagerArray and out[0] == 6.0 and stats.hits == entry.used == 1
    bad = (np.array([-1.0]),)
    assert built.guard(bad) == "python" and served == [bad] and stats.hits == 1
    assert built.plain((np.array([2.0]), np.array([2.0]))) == "plain"


def test_a_dropped_function_frees_its_c_guard(promote_now):
    """The builtins, the entry and its words form a cycle the collector frees."""
    import gc
    import weakref

    f = tr.jit(lambda v: v * 3)
    entry = _promoted(f, np.ones(3))
    words, jitted = weakref.ref(entry.c_guard.guard.__self__[0]), weakref.ref(f)
    del f, entry
    gc.collect()
    assert words() is None and jitted() is None


def test_a_first_strided_call_after_promotion_keeps_the_c_guard(promote_now):
    f = tr.jit(lambda v: v * 3)
    x = np.arange(8.0)
    entry = _promoted(f, x)
    built = entry.c_guard
    np.testing.assert_array_equal(f(x[::2]), x[::2] * 3)  # (the entry's first `run`)
    assert entry.c_guard is built and entry.guard is built.guard
    np.testing.assert_array_equal(f(x), x * 3)

"""Resources: results too large for the machine are refused while tracing, naming the
op, the shape and the user's line; tr.clear_caches() lets go of compiled modules."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp


@pytest.mark.parametrize("make, args", [
    (lambda: tnp.zeros((2**40,)), ()),
    (lambda x: tnp.broadcast_to(x, (2**20, 2**20)) + 1.0, (np.ones(2**20, np.float32),)),
    (lambda: tnp.ones((2**62,), np.int8), ()),          # numba: "array is too big"
])
def test_too_large_result_is_a_tracer_memory_error_at_trace_time(make, args):
    f = tr.jit(make)
    with pytest.raises(tr.TracerMemoryError) as info:
        f.lower(*args)                                   # nothing runs
    assert isinstance(info.value, MemoryError)
    text = str(info.value)
    assert "broadcast_in_dim" in text and "GiB" in text
    assert "[1099511627776]" in text or "[1048576,1048576]" in text or "s8[" in text
    assert __file__ in text                              # the user's line
    with pytest.raises(tr.TracerMemoryError):
        f(*args)


def test_clear_caches_releases_generated_modules():
    from tracer.backend.cpu import cache
    f = tr.jit(lambda x: x * 3.0 - 1.0)
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])
    names = [e.module.__name__ for e in cache._MODULES.values()]
    assert names and all(n in sys.modules for n in names)
    tr.clear_caches()
    assert not cache._MODULES and not any(n in sys.modules for n in names)
    assert f.cache_info().size == 0
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])  # compiled again (from disk)

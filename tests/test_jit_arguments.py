"""jit's argument checks and in-memory cache: donate_argnums validated as
static_argnums are, masked arrays refused, the signature cache bounded (LRU)."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp


def two(x, y):
    return x + y


@pytest.mark.parametrize("kw, match", [
    ({"donate_argnums": 2}, "donate_argnums"),
    ({"donate_argnums": -3}, "donate_argnums"),
    ({"donate_argnums": (0, 1), "static_argnums": 1}, "both static"),
    ({"donate_argnums": -1, "static_argnames": "y"}, "both static"),
    ({"donate_argnums": 1.5}, "donate_argnums"),
])
def test_invalid_donate_argnums_raise_like_static_argnums(kw, match):
    with pytest.raises(tr.TracerError, match=match) as info:
        tr.jit(two, **kw)
    assert isinstance(info.value, (ValueError, TypeError))


def test_valid_donate_argnums_are_resolved_and_inputs_kept():
    f = tr.jit(two, donate_argnums=-1, backend="interpreter")
    assert f.donate_argnums == (1,)
    x = np.ones(3)
    np.testing.assert_array_equal(f(x, x), 2 * x)
    np.testing.assert_array_equal(x, np.ones(3))  # a donated NumPy input is never mutated
    assert tr.jit(lambda *a: a[0], donate_argnums=5).donate_argnums == (5,)


@pytest.mark.parametrize("call", ["jit", "eager", "ops", "closure"])
def test_masked_array_is_a_type_error_not_its_data(call):
    m = np.ma.array([1.0, 2.0, 100.0], mask=[0, 0, 1])  # NumPy's sum is 3.0
    run = {"jit": lambda: tr.jit(tnp.sum, backend="interpreter")(m),
           "eager": lambda: tnp.sum(m),
           "ops": lambda: tr.ops.add(m, m),
           "closure": lambda: tr.jit(lambda x: x + m, backend="interpreter")(np.ones(3))}[call]
    with pytest.raises(tr.TracerError, match="MaskedArray") as info:
        run()
    assert isinstance(info.value, TypeError)


def test_an_array_passes_while_another_thread_is_importing_numpy_ma(monkeypatch):
    """numpy.ma half imported (in sys.modules, its classes not defined yet: another
    thread is running its import): no value can be a MaskedArray, the call runs."""
    import sys
    import types
    for name in ("numpy.ma", "numpy.ma.core"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    out = tr.jit(lambda x: x + 1, backend="interpreter")(np.ones(3))
    np.testing.assert_array_equal(out, np.full(3, 2.0))


def test_jit_cache_keeps_the_most_recently_used_signatures():
    f = tr.jit(lambda x: x * 2, backend="interpreter")
    with tr.config.override(jit_cache_size=3):
        for n in range(1, 6):           # shapes 1..5: only 3, 4, 5 stay
            f(np.ones(n))
        assert f.cache_info().size == 3
        f(np.ones(3))                   # a hit moves 3 to the back
        f(np.ones(6))                   # evicts 4, the least recently used
        traces = f.cache_info().traces
        f(np.ones(3)), f(np.ones(5)), f(np.ones(6))
        assert f.cache_info().traces == traces  # all still cached
        f(np.ones(4))
        assert f.cache_info().traces == traces + 1  # 4 was dropped: traced again
        assert f.cache_info().size == 3

"""`jit(donate_argnums=...)` on the cpu backend (cpu/donation.py, cpu/launch.py): an
output may be written into a donated input's buffer, and whatever the program reads
and however the caller's arrays alias (the same array twice, overlapping or disjoint
views of one base, read-only or strided inputs), every result equals NumPy's, no two
results share memory, and only donated, writable inputs change (then they hold a
result: NumPy arrays cannot be deleted as JAX deletes a donated array, so a donated
array is documented as overwritten)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp

N = 24


def _map(x, y, np_):
    return np_.tanh(x) * 2 + y


def _transposed(x, y, np_):  # x read at (j, i) while the output is written at (i, j)
    return x.T * 2 + y


def _reversed(x, y, np_):
    return x[::-1] + y


def _passed_through(x, y, np_):  # x itself is a result: it keeps its value
    return x, x + y


def _product_after(x, y, np_):  # the product reads x after the element-wise nest
    return x * y, x @ y


def _three_outputs(x, y, np_):
    return x + 1, y * 2, x * y


def _broadcast_row(x, y, np_):  # y's first row read for every row
    return x + y[0], y - 1


def _row_normalized(x, y, np_):  # a row group: reduce, then map over the row
    return x / np_.sum(np_.abs(x), axis=1, keepdims=True) + y


PROGRAMS = [_map, _transposed, _reversed, _passed_through, _product_after, _three_outputs,
            _broadcast_row, _row_normalized]


def _distinct(rng):
    return rng.standard_normal((N, N)).astype(np.float32), \
        rng.standard_normal((N, N)).astype(np.float32)


def _same(rng):
    x = rng.standard_normal((N, N)).astype(np.float32)
    return x, x


def _overlapping_views(rng):
    base = rng.standard_normal((N + 1, N)).astype(np.float32)
    return base[:N], base[1:]


def _disjoint_views(rng):
    base = rng.standard_normal((2 * N, N)).astype(np.float32)
    return base[:N], base[N:]


def _read_only(rng):
    x, y = _distinct(rng)
    x.flags.writeable = False
    return x, y


def _strided(rng):
    base = rng.standard_normal((N, 2 * N)).astype(np.float32)
    return base[:, ::2], base[:, 1::2]


ARGUMENTS = [_distinct, _same, _overlapping_views, _disjoint_views, _read_only, _strided]
_JITTED: dict = {}


def _jitted(program, donate):
    key = (program, donate)
    if key not in _JITTED:
        _JITTED[key] = tr.jit(lambda x, y: program(x, y, tnp), donate_argnums=donate)
    return _JITTED[key]


def _as_list(out):
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("donate", [(0,), (0, 1)], ids=["x", "x,y"])
@pytest.mark.parametrize("arguments", ARGUMENTS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.__name__.strip("_"))
def test_donated_calls_match_numpy_and_change_only_donated_inputs(program, arguments, donate):
    x, y = arguments(np.random.default_rng(0))
    before = [x.copy(), y.copy()]
    want = _as_list(program(before[0].copy(), before[1].copy(), np))
    got = _as_list(_jitted(program, donate)(x, y))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    for i, a in enumerate(got):
        assert not any(np.shares_memory(a, b) for b in got[i + 1:]), "two results alias"
    for k, (arg, old) in enumerate(zip((x, y), before, strict=True)):
        if np.array_equal(arg, old):
            continue
        assert k in donate, f"argument {k} was not donated but changed"
        assert arg.flags.writeable, f"read-only argument {k} changed"
        assert any(np.shares_memory(arg, r) for r in got), f"donated argument {k} " \
            "changed without holding a result"


def test_an_element_wise_result_is_written_into_the_donated_input():
    f = tr.jit(lambda x, y: tnp.tanh(x) * 2 + y, donate_argnums=0)
    x, y = _distinct(np.random.default_rng(1))
    want = np.tanh(x) * 2 + y
    out = f(x, y)
    assert out is x
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    kept = tr.jit(lambda x, y: tnp.tanh(x) * 2 + y)(y, x)
    assert not np.shares_memory(kept, x) and not np.shares_memory(kept, y)


def test_the_threaded_nest_writes_in_place_and_matches_numpy():
    """Large enough for the parallel (prange) kernel: its one parameter is read and
    written at the same index."""
    f = tr.jit(lambda x: 0.5 * x * (1.0 + tnp.tanh(0.8 * (x + 0.044715 * x ** 3))),
               donate_argnums=0)
    x = np.random.default_rng(2).standard_normal(1 << 20).astype(np.float32)
    want = 0.5 * x * (1.0 + np.tanh(np.float32(0.8) * (x + np.float32(0.044715) * x ** 3)))
    source = f.lower(x).compile().source
    assert "out0" not in source and re.search(r"arg0\[(u64\()?i0\)?\] = ", source)
    out = f(x)
    assert out is x
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=1e-6)


def test_donation_of_a_pytree_argument_and_a_non_matching_output():
    """Every leaf of a donated pytree is donated; an output of another shape or dtype
    gets a fresh buffer (JAX: the donation is unused)."""
    f = tr.jit(lambda p, z: ({"w": p["w"] - 0.1 * z, "b": p["b"].sum()}, z.astype(np.float64)),
               donate_argnums=0)
    rng = np.random.default_rng(3)
    p = {"w": rng.standard_normal((N, N)).astype(np.float32),
         "b": rng.standard_normal(N).astype(np.float32)}
    z = rng.standard_normal((N, N)).astype(np.float32)
    want_w, want_b = p["w"] - np.float32(0.1) * z, p["b"].sum()
    out, z64 = f(p, z)
    assert out["w"] is p["w"]
    np.testing.assert_allclose(out["w"], want_w, rtol=1e-6)
    np.testing.assert_allclose(out["b"], want_b, rtol=1e-5)
    np.testing.assert_array_equal(z64, z.astype(np.float64))

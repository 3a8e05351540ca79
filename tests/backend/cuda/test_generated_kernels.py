"""The shape of the cuda backend's generated kernels (on numba's CUDA simulator, see
conftest.py): reductions and element kernels over several dims step their index without
dividing per element, a literal cube is two multiplies, the GEMM indexes with unsigned
ints. Each test checks the values against the interpreter and the property of the
generated source.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tracer.backend.cuda.backend", reason="numba-cuda is not installed "
                    "(pip install 'numba-cuda[cu13]')", exc_type=ImportError)

import tracer as tr  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from tracer import ops  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("simulator_threads")]
RTOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}


def _run(fn, *args, host=None):
    """(cuda results, interpreter results, generated source) of `fn` on `args` (`host`:
    the arguments as NumPy arrays, where a device view cannot be copied back: numba
    copies no negative strides to the host)."""
    if host is None:
        host = [np.asarray(a.copy_to_host() if hasattr(a, "copy_to_host") else a) for a in args]
    with np.errstate(all="ignore"):
        want = tr.jit(fn, backend="interpreter")(*host)
        jitted = tr.jit(fn, backend="cuda")
        got = jitted(*args)
    source = jitted.lower(*host).compile().source
    return list(got), list(want), source


def _check(fn, *args, host=None) -> str:
    got, want, source = _run(fn, *args, host=host)
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g.copy_to_host() if hasattr(g, "copy_to_host") else g)
        w = np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=RTOL[w.dtype], atol=1e-6, equal_nan=True)
    return source


def _loops(source: str, var: str = "col") -> list[str]:
    """The bodies of the kernels' loops `for <var>_N in range(...)`: over the columns of
    a row (col), over every element (flat)."""
    lines = source.splitlines()
    bodies = []
    for n, line in enumerate(lines):
        if re.match(rf"\s*for {var}_\d+ in range", line):
            indent = len(line) - len(line.lstrip())
            body = []
            for inner in lines[n + 1:]:
                if inner.strip() and len(inner) - len(inner.lstrip()) <= indent:
                    break
                body.append(inner)
            bodies.append("\n".join(body))
    return bodies


def _argmax_rows(v):
    """Index of the last maximum over the dims after the first (an order-keeping fold)."""
    k = ops.iota(np.int32, v.shape, v.ndim - 1) + ops.iota(np.int32, v.shape, 1) * 100
    take = lambda m, am, x, i: (ops.select(ops.ge(x, m), x, m),  # noqa: E731
                                ops.select(ops.ge(x, m), i, am))
    return tuple(ops.reduce((v, k), (np.float32(-np.inf), np.int32(0)), take,
                            list(range(1, v.ndim))))


# Trailing sizes below, at and above the simulator's block (8 threads), size-1 dims, and
# rows long enough to be cut into chunks (more than 16 elements).
SHAPES = [(2, 3, 4), (1, 5, 6), (3, 1, 7), (2, 7, 1), (1, 9, 9), (2, 3, 4, 5), (6, 2, 17)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_reductions_over_several_dims_step_their_index_without_dividing(shape):
    x = np.round(np.random.default_rng(len(shape)).standard_normal(shape) * 4).astype(np.float32)
    rows = tuple(range(1, x.ndim))

    def f(a):
        m = tnp.max(a, axis=rows, keepdims=True)
        e = tnp.exp(a - m)
        return (tnp.sum(a), tnp.mean(a * 2, axis=rows), e / tnp.sum(e, axis=rows, keepdims=True),
                *_argmax_rows(a), tnp.sum(a.astype(np.int32) % 5, axis=rows))
    source = _check(f, x)
    _assert_no_division(_loops(source), source)


def _assert_no_division(loops: list[str], source: str) -> None:
    assert loops and not any(re.search(r"[^/]//[^/]|%", body) for body in loops), source


@pytest.mark.parametrize("shape", [(1,), (1, 1), (3,), (2, 1)], ids=str)
def test_a_reduce_over_no_dims_applies_the_computation_once(shape):
    """A reduce with `dimensions=[]` is f(init, x) per element; with one element per row
    it crashed the code generator (a row reduction of zero columns)."""
    x = np.arange(1, 1 + np.prod(shape), dtype=np.float32).reshape(shape)
    take = lambda m, am, v, i: (ops.select(ops.ge(v, m), v, m),  # noqa: E731
                                ops.select(ops.ge(v, m), i, am))
    _check(lambda a: (ops.reduce(a, np.float32(10), ops.add, []),
                      *ops.reduce((a, a.astype(np.int32)), (np.float32(2), np.int32(-1)), take,
                                  [])), x)


def test_several_dim_reductions_of_strided_device_and_empty_operands():
    x = np.random.default_rng(1).standard_normal((3, 4, 6)).astype(np.float32)
    f = lambda a: (tnp.sum(a[:, ::-1, ::2] * 2, axis=(1, 2)), tnp.max(a, axis=(0, 2)),  # noqa: E731
                   tnp.argmax(a.reshape(3, -1), axis=1))
    _check(f, x)
    _check(f, tr.device_put(x, "cuda"))
    _check(f, np.asarray(x.transpose(0, 2, 1)).transpose(0, 2, 1))  # (a non-contiguous input)
    for empty in (np.zeros((2, 0, 3), np.float32), np.zeros((0, 4, 3), np.float32)):
        _check(lambda a: (tnp.sum(a, axis=(1, 2)), tnp.sum(a), tnp.prod(a, axis=(1, 2))), empty)


def test_element_kernels_over_several_dims_step_their_index_without_dividing():
    """gather, scatter, dynamic_update_slice and the GEMM's operand transpose: one thread
    per element of a 3-D shape, out-of-range indices clamped (reads) or dropped (updates)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    i = np.array([0, 3, -1, 7, 2], np.int32)

    def f(x, i):
        return (x[i], x.at[i].add(2.0), x.at[i].set(x[0] * 3),
                ops.dynamic_update_slice(x, x[:2, :2] * 0, [i[3], i[2], i[1]]),
                tnp.einsum("abc,adc->bd", x, x * 2))
    source = _check(f, x, i)
    _check(f, tr.device_put(x, "cuda")[:, ::-1], i, host=[x[:, ::-1], i])  # (a strided view)
    _check(lambda x, i: (x[i], x.at[i].add(1.0)), np.zeros((0, 3, 5), np.float32),
           np.zeros(0, np.int32))
    _assert_no_division(_loops(source, "flat"), source)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_a_literal_cube_is_two_multiplies(dtype):
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 3e12, -2.5, 1e-20, 0.75], dtype)

    def gelu(v):
        return 0.5 * v * (1.0 + tnp.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))
    source = _check(lambda v: (v ** 3, gelu(v), v ** 3.5, v ** 2), x)
    assert re.search(r"(\w+) \* \1 \* \1", source)
    assert re.search(r"\*\* (f\d+\()?3\.5", source)  # (3.5: pow)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_gemm_reads_and_writes_with_unsigned_indices(dtype):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((3, 5, 7)) * 6).astype(dtype)
    b = (rng.standard_normal((3, 6, 7)) * 6).astype(dtype)
    source = _check(lambda a, b: (a @ b.transpose(0, 2, 1), a[0].T @ a[1]), a, b)
    gemm = source[source.index("def gemm_"):source.rindex("\ndef ")]  # (up to the host function)
    assert re.search(r"sa_\d+\[u64\(q_\d+\), u64\(ty_\d+ \+", gemm), gemm
    assert re.search(r"c3_\d+\[u64\(bb_\d+\), u64\(row_\d+\), u64\(col_\d+\)\] = ", gemm), gemm

"""Loops that evaluate `fastmath`'s polynomials run with 512-bit vectors
(`cpu/lib/vectors.py`): which loops ask for them, that the request reaches LLVM (and
the machine code, where the host has AVX-512), and that the row reductions it speeds
up (logsumexp, softmax, their NaN / infinity rules) still match the reference
interpreter, serial and on threads, for row lengths around the vector widths."""

from __future__ import annotations

from typing import Any

import llvmlite.binding as llvm
import numba
import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tests.backend.cpu.test_backend import _compare, _trace
from tracer.backend.cpu.backend import NumbaCpuBackend
from tracer.backend.cpu.lib.fastmath import exp_f32
from tracer.backend.cpu.lib.vectors import prefer_wide_vectors
from tests.checks import threaded

CPU = NumbaCpuBackend()
CALL = "prefer_wide_vectors()"


def _source(fn: Any, *args: Any) -> str:
    return CPU.compile(_trace(fn, args)).source


def _logsumexp(x: Any) -> Any:
    m = tnp.max(x, axis=-1, keepdims=True)
    return tnp.log(tnp.sum(tnp.exp(x - m), axis=-1)) + m[..., 0]


def _softmax(x: Any) -> Any:
    e = tnp.exp(x - tnp.max(x, axis=-1, keepdims=True))
    return e / tnp.sum(e, axis=-1, keepdims=True)


def _wide_exp(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        prefer_wide_vectors()
        out[i] = exp_f32(x[i])


def test_only_loops_evaluating_polynomials_ask_for_wide_vectors() -> None:
    """The exp loop of a logsumexp asks, first thing in its body; the max loop before
    it and a loop of adds do not."""
    x = np.zeros((8, 300), np.float32)
    code = _source(_logsumexp, x)
    lines = [line.strip() for line in code.splitlines()]
    assert lines.count(CALL) == 1
    assert lines[lines.index(CALL) - 1].startswith("for i1 in") and \
        "exp_f32" in "".join(lines[lines.index(CALL):])
    assert CALL not in _source(lambda v: tnp.sum(v + 1, axis=-1), x)


def test_a_loop_body_function_asks_inside_its_own_loops(monkeypatch: Any) -> None:
    """A while loop run twice has its body in a function of its own
    (`emit.control.FunctionScope`): its exp loop asks there too (a scope without
    `wide_vectors` raised while emitting)."""
    from tracer import ops
    from tracer.backend.cpu.emit import control
    monkeypatch.setattr(control, "OUTLINE_MIN_EQNS", 1)  # (this body is small)
    x = np.linspace(-3, 3, 4096).astype(np.float32)

    def f(a: Any, b: Any) -> Any:
        body = lambda c: (tnp.exp(c[0] * np.float32(0.5)), c[1] + 1)  # noqa: E731
        loop = lambda v: ops.while_loop(lambda c: c[1] < 3, body, (v, 0))[0]  # noqa: E731
        return loop(a), loop(b)
    code = _source(f, x, x[::-1].copy())
    body = code[code.index("def while_body"):]
    assert CALL in body[:body.index("\n\n\n")]
    _compare(f, [x, x[::-1].copy()], CPU)


def test_the_request_reaches_llvm_and_the_machine_code() -> None:
    """The function holding the call carries LLVM's prefer-vector-width attribute; on a
    host with AVX-512 its loop uses the 512-bit registers."""
    kernel = numba.njit(error_model="numpy")(_wide_exp)
    x, out = np.linspace(-3, 3, 1000, dtype=np.float32), np.empty(1000, np.float32)
    kernel(x, out)
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)), rtol=1e-6)
    signature = kernel.signatures[0]
    assert '"prefer-vector-width"="512"' in kernel.inspect_llvm(signature)
    if "+avx512f" in llvm.get_host_cpu_features().flatten().split(","):
        assert "zmm" in kernel.inspect_asm(signature)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_row_reductions_with_wide_vectors_match_the_interpreter(dtype: Any) -> None:
    """logsumexp and softmax over rows of 1, 15, 17, 64 and 1,100 elements (below, at
    and past the vector widths and their unrolled steps), with rows holding NaN, +inf,
    -inf and only -inf (NaN results where the reference gives them)."""
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((6, n)).astype(dtype) for n in (1, 15, 17, 64, 1100)]
    for x in xs[1:]:
        x[1, 3], x[2, 5], x[3, :], x[4, 7] = np.nan, np.inf, -np.inf, -np.inf
    with np.errstate(invalid="ignore"):
        _compare(lambda *xs: [f(x) for x in xs for f in (_logsumexp, _softmax)], xs, CPU)


def test_rows_on_threads_ask_inside_each_thread_s_loop() -> None:
    """Rows split across threads (a `prange` kernel): the call is inside the kernel's
    loops, so the function numba makes of the loop body gets the attribute too."""
    x = np.random.default_rng(8).standard_normal((2048, 512)).astype(np.float32)
    x[7, 9] = np.inf
    with tr.config.override(num_threads=2):
        code = _source(_softmax, x)
        assert ("def parallel_nest" in code) == threaded()
        if threaded():  # (else numba's pool has one thread: no kernel to look into)
            kernel = code[code.index("def parallel_nest"):]
            assert CALL in kernel[:kernel.index("\n\n\n") if "\n\n\n" in kernel else None]
        _compare(_softmax, [x], CPU)

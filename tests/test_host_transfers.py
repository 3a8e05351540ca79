"""Tokens, infeed/outfeed, send/recv, and custom-call targets numba cannot compile.

Oracles: the values the host queued (a round trip must give them back unchanged, in
FIFO order), SciPy for a SciPy custom-call target, the numba-compiled path for a
target that numba compiles.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import scipy.special

import tracer as tr
from tracer import ops

BACKENDS = ["interpreter", "cpu"]
F32_3 = tr.ShapedArray((3,), np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_infeed_reads_what_the_host_queued_in_fifo_order(backend):
    def fun(x):
        a, token = ops.infeed(F32_3)
        b, token = ops.infeed({"v": F32_3, "n": tr.ShapedArray((), np.int32)}, token)
        return a * x, b["v"] + b["n"]

    values = [np.float32([1, 2, 3]), {"v": np.float32([4, 5, 6]), "n": np.int32(10)}]
    for v in values:
        tr.transfer_to_infeed(v)
    a, b = tr.jit(fun, backend=backend)(np.float32(2))
    np.testing.assert_array_equal(a, [2, 4, 6])
    np.testing.assert_array_equal(b, [14, 15, 16])


@pytest.mark.parametrize("backend", BACKENDS)
def test_outfeed_values_come_back_in_program_order(backend):
    def fun(x):
        def body(i, c):
            ops.outfeed({"step": i, "value": c})
            return c * 2
        return ops.fori_loop(0, 3, body, x)

    tr.jit(fun, backend=backend)(np.float32([1, 2, 3]))
    shape = {"step": tr.ShapedArray((), np.int64), "value": F32_3}
    got = [tr.transfer_from_outfeed(shape, timeout=5.0) for _ in range(3)]
    assert [int(g["step"]) for g in got] == [0, 1, 2]
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g["value"], np.float32([1, 2, 3]) * 2 ** k)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_program_waits_for_infeed_fed_from_another_thread(backend):
    f = tr.jit(lambda: ops.infeed(F32_3)[0] + 1, backend=backend)
    feeder = threading.Timer(0.2, tr.transfer_to_infeed, args=(np.float32([7, 8, 9]),))
    feeder.start()
    np.testing.assert_array_equal(f(), [8, 9, 10])
    feeder.join()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_empty_infeed_read_with_a_timeout_raises_and_the_function_keeps_working(backend):
    f = tr.jit(lambda: ops.infeed(F32_3, timeout=0.05)[0], backend=backend)
    start = time.perf_counter()
    with pytest.raises(tr.TracerValueError, match="infeed: nothing arrived within"):
        f()
    assert time.perf_counter() - start < 5
    tr.transfer_to_infeed(np.float32([1, 2, 3]))
    np.testing.assert_array_equal(f(), [1, 2, 3])


def test_transfer_from_outfeed_with_nothing_queued_raises_after_its_timeout():
    with pytest.raises(tr.TracerError, match="transfer_from_outfeed: nothing arrived"):
        tr.transfer_from_outfeed(F32_3, timeout=0.05)
    with pytest.raises(tr.TracerValueError, match="device must be one of"):
        tr.transfer_to_infeed(np.ones(3), device="tpu")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_infeed_value_of_the_wrong_shape_raises_naming_both(backend):
    f = tr.jit(lambda: ops.infeed(F32_3, timeout=1.0)[0], backend=backend)
    tr.transfer_to_infeed(np.zeros(4, np.float32))
    with pytest.raises(tr.ShapeError, match=r"\(4,\).*declared f32\[3\]"):
        f()


@pytest.mark.parametrize("backend", BACKENDS)
def test_send_and_recv_pair_by_channel(backend):
    def fun(x, y):
        t = ops.create_token()
        t1 = ops.send(x, t, channel_id=11)
        t2 = ops.send(y, t, channel_id=12)
        b, _ = ops.recv(F32_3, t2, channel_id=12, timeout=5.0)
        a, _ = ops.recv(F32_3, t1, channel_id=11, timeout=5.0)
        return a - b

    x, y = np.float32([5, 6, 7]), np.float32([1, 1, 2])
    np.testing.assert_array_equal(tr.jit(fun, backend=backend)(x, y), x - y)


def test_hlo_text_spells_the_token_ops_as_xla_does():
    def fun(x):
        v, t = ops.infeed(F32_3)
        t = ops.outfeed(v + x, t)
        t = ops.send(x, t, channel_id=3)
        r, t = ops.recv(F32_3, ops.after_all(t, ops.create_token()), channel_id=3)
        return r

    text = str(tr.make_hlo(fun)(np.ones(3, np.float32)))
    for piece in ("token[] after-all()", "(f32[3], token[]) infeed(", "token[] outfeed(",
                  "token[] send(", "(f32[3], token[]) recv(", "channel_id=3"):
        assert piece in text, (piece, text)


def test_a_token_where_a_value_is_expected_is_a_clear_error():
    with pytest.raises(tr.DTypeError, match="expected a token"):
        tr.jit(lambda x: ops.outfeed(x, x))(np.ones(3, np.float32))


# ------------------------------------------------------------------ custom calls
def erf_target(out, x):
    """A SciPy function: numba cannot compile it, so it runs as a host callback."""
    out[...] = scipy.special.erf(x)


def twice_target(out, x):
    for i in range(x.shape[0]):
        out[i] = 2 * x[i]


tr.register_custom_call("host_erf", erf_target)
tr.register_custom_call("native_twice", twice_target)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_custom_call_target_numba_cannot_compile_runs_as_a_host_callback(backend):
    x = np.linspace(-2, 2, 7)
    f = tr.jit(lambda x: ops.custom_call("host_erf", [x], tr.ShapedArray(x.shape, x.dtype)),
               backend=backend)
    np.testing.assert_allclose(f(x), scipy.special.erf(x), rtol=1e-15)


def test_a_numba_compilable_target_still_runs_natively():
    x = np.arange(5.0)
    f = tr.jit(lambda x: ops.custom_call("native_twice", [x], tr.ShapedArray((5,), x.dtype)))
    np.testing.assert_array_equal(f(x), 2 * x)
    source = f.lower(x).compile().source
    assert "objmode" not in source and "custom_call_native_twice" in source
    g = tr.jit(lambda x: ops.custom_call("host_erf", [x], tr.ShapedArray((5,), x.dtype)))
    assert "numba.objmode" in g.lower(x).compile().source

"""Host callbacks and host transfers on the cuda backend: they run on the host between
kernels (numba's CUDA simulator here; `TRACER_CUDA_REAL=1` on a GPU). Oracle: the
same program on the interpreter, its results and its log of host calls."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tracer.backend.cuda.backend", reason="numba-cuda is not installed",
                    exc_type=ImportError)

import tracer as tr  # noqa: E402
from tracer import ops  # noqa: E402
from tracer.backend.cuda.backend import NumbaCudaBackend  # noqa: E402

try:
    NumbaCudaBackend()
except tr.TracerError as e:  # numba-cuda without a GPU and without the simulator
    pytest.skip(str(e), allow_module_level=True)

pytestmark = pytest.mark.usefixtures("simulator_threads")
F32_3 = tr.ShapedArray((3,), np.float32)


def _program(log):
    def note(tag):
        return lambda *vals: log.append((tag, *(np.asarray(v).tolist() for v in vals)))

    def fun(x):
        tr.debug.print("cuda x={}", x, ordered=True)
        y = tr.pure_callback(lambda a: np.cos(a), F32_3, x * 2)
        tr.io_callback(note("start"), None, y, ordered=True)

        def body(i, c):
            tr.io_callback(note("step"), None, i, c.sum(), ordered=True)
            return c * 2
        c = ops.fori_loop(0, 3, body, y)
        ops.outfeed(c)
        total = tr.pure_callback(lambda a: np.float32(a.sum()), tr.ShapedArray((), np.float32), c)
        return c + 1, total
    return fun


def test_callbacks_and_outfeed_run_between_kernels_in_program_order(capsys):
    x = np.float32([0.0, 0.5, 1.0])
    runs = {}
    for backend in ("interpreter", "cuda"):
        log = []
        out = tr.jit(_program(log), backend=backend)(x)
        fed = tr.transfer_from_outfeed(F32_3, timeout=5.0,
                                       device="cuda" if backend == "cuda" else "cpu")
        runs[backend] = ([np.asarray(o) for o in out], log, fed, capsys.readouterr().out)
    (ref_out, ref_log, ref_fed, ref_text), (out, log, fed, text) = runs.values()
    for got, want in zip(out, ref_out, strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-6)
    assert [entry[0] for entry in log] == ["start", "step", "step", "step"]
    assert [entry[1] for entry in log[1:]] == [0, 1, 2]
    np.testing.assert_allclose(np.array(log[0][1]), np.array(ref_log[0][1]), rtol=2e-6)
    np.testing.assert_allclose(fed, ref_fed, rtol=2e-6)
    assert text == ref_text == "cuda x=[0.  0.5 1. ]\n"


def test_infeed_and_a_callback_error_on_cuda():
    f = tr.jit(lambda x: ops.infeed(F32_3, timeout=0.2)[0] * x, backend="cuda")
    tr.transfer_to_infeed(np.float32([1, 2, 3]))  # the host's queue: not the GPU's
    with pytest.raises(tr.TracerValueError, match="nothing arrived"):
        f(np.float32(2))
    tr.transfer_to_infeed(np.float32([4, 5, 6]), device="cuda")
    np.testing.assert_allclose(np.asarray(f(np.float32(2))), [8, 10, 12])
    host = tr.jit(lambda: ops.infeed(F32_3, timeout=1.0)[0], backend="interpreter")
    np.testing.assert_array_equal(host(), [1, 2, 3])  # still queued for the host

    g = tr.jit(lambda x: tr.pure_callback(lambda a: a[:2], F32_3, x), backend="cuda")
    with pytest.raises(tr.ShapeError, match=r"\(2,\).*declared f32\[3\]"):
        g(np.ones(3, np.float32))


def _erf_target(out, x):
    """A SciPy custom-call target: numba cannot compile it."""
    import scipy.special
    out[...] = scipy.special.erf(x)


def test_a_python_custom_call_target_runs_between_kernels():
    import scipy.special
    tr.register_custom_call("cuda_host_erf", _erf_target)
    x = np.linspace(-1, 1, 5)
    f = tr.jit(lambda x: ops.custom_call("cuda_host_erf", [x * 2], tr.ShapedArray((5,), x.dtype))
               + 1, backend="cuda")
    np.testing.assert_allclose(np.asarray(f(x)), scipy.special.erf(2 * x) + 1, rtol=1e-15)

"""The cpu backend's fft on Intel MKL's DFTI (`cpu/lib/fft_mkl.py`, MKL loaded by
`cpu/lib/mkl.py`) against NumPy's `np.fft`: every kind, precision, 1-3 axes, batches,
odd and even lengths, threads, NumPy's norms through `tracer.numpy.fft`; the descriptor
table past its size, from several threads and in a forked child; DUCC0 when
`config.use_mkl` is off or MKL does not load; and MKL loaded only by the first FFT,
never by `import tracer`.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer.backend.cpu.lib import mkl

# (asked without loading MKL: collection must not load it into every test worker)
pytestmark = pytest.mark.skipif(mkl.library_path() is None or not tr.config.use_mkl,
                                reason="needs the mkl wheel (the test extra installs it)")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
KERNELS = {"FFT": "fft_forward", "IFFT": "fft_inverse", "RFFT": "fft_real_forward",
           "IRFFT": "fft_real_inverse"}
RANK = 4  # every kernel test array has 4 dims (a kernel compiles once per rank and dtype)


def _lib() -> Any:
    from tracer.backend.cpu.lib import fft_mkl
    return fft_mkl


def _numpy(kind: str, x: np.ndarray, lengths: list[int]) -> np.ndarray:
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    if kind == "IRFFT":
        return np.fft.irfftn(x, s=lengths, axes=axes)
    return {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn}[kind](x, axes=axes)


def _random(rng: np.random.Generator, shape: tuple[int, ...], real: bool,
            double: bool) -> np.ndarray:
    x = rng.standard_normal(shape)
    if real:
        return x.astype(np.float64 if double else np.float32)
    return (x + 1j * rng.standard_normal(shape)).astype(np.complex128 if double else
                                                        np.complex64)


def _close(got: np.ndarray, want: np.ndarray, double: bool) -> None:
    """Within the precision's rounding, relative to the largest value."""
    tol = (1e-12 if double else 2e-5) * max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)


def _run_kernel(kind: str, x: np.ndarray, lengths: list[int], threads: int) -> np.ndarray:
    double = x.dtype in (np.float64, np.complex128)
    shape = x.shape[:x.ndim - len(lengths)] + tuple(lengths)
    if kind == "RFFT":
        shape = shape[:-1] + (lengths[-1] // 2 + 1,)
    if kind == "IRFFT":
        dtype = np.float64 if double else np.float32
    else:
        dtype = np.complex128 if double else np.complex64
    out = np.empty(shape, dtype)
    getattr(_lib(), KERNELS[kind])(x, out, len(lengths), threads)
    return out


@st.composite
def transforms(draw: Any, kind: str, rank: int) -> tuple[list[int], tuple[int, ...], bool, int]:
    """(lengths, input shape, double, threads) of a `kind` transform over `rank` axes."""
    lengths = draw(st.lists(st.integers(1, 12), min_size=rank, max_size=rank))
    batch = draw(st.lists(st.integers(1, 3), min_size=RANK - rank, max_size=RANK - rank))
    inner = list(lengths)
    if kind == "IRFFT":  # its input holds the n // 2 + 1 bins of the innermost axis
        inner[-1] = lengths[-1] // 2 + 1
    return lengths, tuple(batch + inner), draw(st.booleans()), draw(st.sampled_from([1, 2]))


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("kind", list(KERNELS))
def test_kernels_match_numpy_and_leave_their_input(kind: str, rank: int) -> None:
    """Random complex input also to IRFFT: its bins that must be Hermitian are not, and
    NumPy's irfftn keeps only their Hermitian part (DFTI would mirror half of them)."""
    @settings(max_examples=12)
    @given(transforms(kind, rank), st.integers(0, 2 ** 32 - 1))
    def check(case: Any, seed: int) -> None:
        lengths, shape, double, threads = case
        x = _random(np.random.default_rng(seed), shape, kind == "RFFT", double)
        before = x.copy()
        got = _run_kernel(kind, x, lengths, threads)
        _close(got, _numpy(kind, x, lengths), double)
        np.testing.assert_array_equal(x, before)
    check()


def test_a_strided_input_is_transformed_as_its_values() -> None:
    x = _random(np.random.default_rng(1), (2, 3, 4, 16), False, True)[..., ::2]
    _close(_run_kernel("FFT", x, [4, 8], 1), np.fft.fftn(x, axes=(2, 3)), True)


def _spectra(fft: Any, x: Any, r: Any) -> list[Any]:
    """NumPy's fft functions with their norms, axes and lengths, from namespace `fft`
    (tnp.fft or np.fft) on x complex and r real."""
    return [fft.fft(x, norm="ortho"), fft.ifft2(x, norm="forward"), fft.fftn(x, axes=(0, 2)),
            fft.ifftn(x, s=(3, 5, 6), axes=(0, 1, 2)), fft.rfft(r, n=10, norm="forward"),
            fft.rfftn(r, norm="ortho"), fft.irfft(x, n=9), fft.irfft2(x, s=(4, 6), norm="ortho"),
            fft.irfftn(x, axes=(0, 1, 2), norm="forward"), fft.hfft(x, axis=1)]


def test_numpy_fft_functions_under_jit_call_mkl_and_match_numpy() -> None:
    """One program, both precisions (a compile each would double the test's time)."""
    rng = np.random.default_rng(2)
    x, r = _random(rng, (3, 4, 7), False, True), _random(rng, (2, 5, 8), True, False)
    f = tr.jit(lambda x, r: _spectra(tnp.fft, x, r))
    for got, want in zip(f(x, r), _spectra(np.fft, x, r), strict=True):
        got = np.asarray(got)
        assert got.dtype == want.dtype
        _close(got, want, got.dtype in (np.float64, np.complex128))
    assert "cpu.lib.fft_mkl import" in f.lower(x, r).compile().source


def test_use_mkl_off_generates_the_ducc0_kernels() -> None:
    """`config.use_mkl` (TRACER_USE_MKL=0) switches MKL off for what is compiled then."""
    x = _random(np.random.default_rng(3), (4, 6), False, True)
    with tr.config.override(use_mkl=False):
        f = tr.jit(lambda x: tnp.fft.irfft2(tnp.fft.fft2(x)))
        source = f.lower(x).compile().source
        got = f(x)
    assert "cpu.lib.fft import" in source and "cpu.lib.fft_mkl" not in source
    _close(got, np.fft.irfft2(np.fft.fft2(x)), True)


def test_shapes_past_the_table_are_committed_per_call() -> None:
    lib, rng = _lib(), np.random.default_rng(4)
    for n in range(1, lib.PLANS + 5):
        x = _random(rng, (1, 1, 2, n), False, True)
        _close(_run_kernel("FFT", x, [n], 1), np.fft.fft(x), True)
    assert lib.cached_plans() == lib.PLANS


def test_threads_share_the_descriptor_table() -> None:
    rng = np.random.default_rng(5)
    cases = [(kind, _random(rng, (1, 2, n, n + 1), kind == "RFFT", True), [n, n + 1])
             for n in (3, 4, 5, 6) for kind in ("FFT", "RFFT")]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        runs = [pool.submit(_run_kernel, kind, x, lengths, 1)
                for _ in range(4) for kind, x, lengths in cases]
    for run, (kind, x, lengths) in zip(runs, cases * 4, strict=True):
        _close(run.result(), _numpy(kind, x, lengths), True)


def _child(script: str) -> Any:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=REPO), capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_FORKED = """
    import json, os, time
    import numpy as np
    from tracer.backend.cpu.lib import fft_mkl
    x = np.random.default_rng(0).standard_normal((16, 1 << 14)).astype(np.complex128)
    out = np.empty_like(x)
    fft_mkl.fft_forward(x, out, 1, 2)
    pid = os.fork()
    if pid == 0:
        fft_mkl.fft_forward(x, out, 1, 2)
        os._exit(0 if np.allclose(out, np.fft.fft(x)) else 1)
    for _ in range(600):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        status = "hung"
    print(json.dumps(status))
"""


def test_a_child_forked_after_threaded_transforms_runs_them_on_one_thread() -> None:
    """libgomp's pool does not survive a fork: without the cap the child hangs."""
    assert _child(_FORKED) == 0


_FIRST_USE = """
    import json, sys
    import numpy as np
    import tracer as tr, tracer.numpy as tnp
    def mapped():
        with open("/proc/self/maps") as maps:
            return "libmkl_rt" in maps.read()
    x = np.arange(8.0)
    steps = [mapped()]
    tr.jit(lambda x: tnp.tanh(x) * 2)(x)
    steps.append(mapped())
    tr.jit(tnp.fft.rfft)(x)
    steps.append(mapped())
    print(json.dumps(steps))
"""


def test_mkl_is_loaded_by_the_first_fft_not_before() -> None:
    assert _child(_FIRST_USE) == [False, False, True]


_BROKEN = """
    import json, warnings
    import numpy as np
    import tracer as tr, tracer.numpy as tnp
    from tracer.backend.cpu.lib import mkl
    mkl.library_path = lambda: mkl.__file__  # installed, but not a library
    x = np.arange(8.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = tr.jit(tnp.fft.rfft)
        ok = bool(np.allclose(f(x), np.fft.rfft(x)))
    source = f.lower(x).compile().source
    print(json.dumps([ok, "cpu.lib.fft import" in source,
                      [str(w.message)[:40] for w in caught]]))
"""


def test_an_mkl_that_does_not_load_warns_and_leaves_fft_on_ducc0() -> None:
    ok, ducc0, warned = _child(_BROKEN)
    assert ok and ducc0 and warned == ["tracer: MKL is installed but does not lo"]


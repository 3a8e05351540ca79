"""The cpu lowering of conv_general_dilated (tracer/backend/cpu_emit_conv.py and the
library behind it, cpu_lib_conv*.py) against the NumPy reference: every plan forced
on random configurations (layouts, paddings with negative ones, strides, dilations,
groups, dtypes), the Winograd plans with inf and NaN inputs, the plan AUTO picks,
generated code (shape-generic, no literal sizes), bounds under numba's checks, and
the disk cache.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tracer as tr
from tests.test_ops_conv import EXAMPLES, conv_configs, conv_of, operands
from tracer import ops


# --------------------------------------------------------------------------- configs
@st.composite
def winograd_configs(draw: Any) -> dict[str, Any]:
    """A convolution the Winograd plan takes (2 spatial dims, a 3x3 window, unit
    strides, no dilation), canonical layouts; random sizes, paddings (negative too)
    and groups."""
    kind = draw(st.sampled_from(["none", "feature", "batch"]))
    groups = 1 if kind == "none" else draw(st.integers(2, 3))
    fgc, bgc = (groups, 1) if kind == "feature" else (1, groups) if kind == "batch" else (1, 1)
    batch, cg, og = (draw(st.integers(1, 2)) * bgc, draw(st.integers(1, 4)),
                     draw(st.integers(1, 3)))
    ins, pads = [], []
    for _ in range(2):
        ins.append(draw(st.integers(1, 9)))
        lo, hi = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
        pads.append((lo, hi + max(0, 3 - (ins[-1] + lo + hi))))
    return dict(lhs_shape=(batch, cg * fgc, *ins), rhs_shape=(og * groups, cg, 3, 3),
                strides=(1, 1), padding=tuple(pads), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
                dimension_numbers=ops.ConvDimensionNumbers(*[tuple(range(4))] * 3),
                feature_group_count=fgc, batch_group_count=bgc)


@st.composite
def winograd_t_configs(draw: Any) -> dict[str, Any]:
    """A convolution the transposed Winograd plan takes: 2 spatial dims, a 3x3 output
    (as of a kernel gradient), unit strides, no dilation; random windows (odd sizes
    too), paddings (negative too) and groups."""
    cfg = draw(winograd_configs())
    window = (draw(st.integers(1, 8)), draw(st.integers(1, 8)))
    ins = tuple(k + 2 - lo - hi for k, (lo, hi) in zip(window, cfg["padding"], strict=True))
    assume(min(ins) >= 1)
    return dict(cfg, lhs_shape=cfg["lhs_shape"][:2] + ins,
                rhs_shape=cfg["rhs_shape"][:2] + window)


@st.composite
def phased_configs(draw: Any) -> dict[str, Any]:
    """A convolution the phased plan takes (2 spatial dims, strides, no lhs dilation),
    canonical layouts; random windows, strides up to 3 (a stride of 1 in one dim too),
    rhs dilations, paddings (negative too), groups, batch sizes 1 and 2."""
    cfg = draw(winograd_configs())
    window = tuple(draw(st.integers(1, 4)) for _ in range(2))
    strides = (draw(st.integers(2, 3)), draw(st.integers(1, 3)))
    rd = tuple(draw(st.integers(1, 2)) for _ in range(2))
    pads, ins = [], []
    for k, d in zip(window, rd, strict=True):
        ins.append(draw(st.integers(1, 12)))
        lo, hi = draw(st.integers(-1, 3)), draw(st.integers(-1, 3))
        pads.append((lo, hi + max(0, (k - 1) * d + 1 - (ins[-1] + lo + hi))))
    return dict(cfg, lhs_shape=cfg["lhs_shape"][:2] + tuple(ins),
                rhs_shape=cfg["rhs_shape"][:2] + window, strides=strides,
                padding=tuple(pads), rhs_dilation=rd)


# --------------------------------------------------------------------------- plans
def _geometry(cfg: dict[str, Any], out_shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The kernel's spatial tuples for a canonical-layout config (one 1-wide dim if none)."""
    if len(out_shape) == 2:
        return (1,), (1,), (1,), (1,), (0,), (1,), (1,)
    return tuple(tuple(int(v) for v in values) for values in (
        cfg["lhs_shape"][2:], cfg["rhs_shape"][2:], out_shape[2:], cfg["strides"],
        [lo for lo, _ in cfg["padding"]], cfg["lhs_dilation"], cfg["rhs_dilation"]))


def _flat3(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.reshape(a.shape[0], a.shape[1], -1))


def run_plan(mode: int, x: np.ndarray, w: np.ndarray, out: np.ndarray, geo: tuple,
             groups: tuple[int, int]) -> None:
    """cpu_lib_conv's kernel with its plan forced."""
    from tracer.backend.cpu.lib.conv_entry import run_plan as run
    run(mode, x, w, out, geo, *groups)


@EXAMPLES
@given(conv_configs(canonical=True), st.integers(0, 2 ** 31),
       st.sampled_from([np.float64, np.float32, np.int32]))
def test_every_kernel_plan_matches_the_reference(cfg: dict[str, Any], seed: int,
                                                 dtype: Any) -> None:
    from tracer.backend.cpu.lib import conv as lib
    x, w = operands(cfg, np.random.default_rng(seed), dtype)
    want = conv_of(cfg)(x, w)
    geo = _geometry(cfg, want.shape)
    modes = [lib.IM2COL, lib.WINDOW, lib.AUTO]
    if all(s == 1 for s in geo[3]):
        modes.append(lib.SHIFTED)
    if len(geo[0]) == 2 and cfg["lhs_dilation"] == (1, 1):
        modes.append(lib.PHASED)
    if _winograd_takes(cfg) and dtype != np.int32:
        modes += [lib.WINOGRAD, lib.WINOGRAD4]
    for mode in modes:
        out = np.full(_flat3(want).shape, 77, dtype)  # every element must be written
        run_plan(mode, _flat3(x), _flat3(w), out, geo,
                 (cfg["feature_group_count"], cfg["batch_group_count"]))
        np.testing.assert_allclose(out.reshape(want.shape), want,
                                   rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=_atol(want, dtype))


def _atol(want: np.ndarray, dtype: Any) -> float:
    """1e-5, of the largest output in float32: F(4x4) Winograd's rounding is about 1e-6
    of the largest output (cpu.lib.conv_winograd4), not of each output."""
    finite = np.abs(want[np.isfinite(want)]) if dtype == np.float32 else np.ones(1)
    return 1e-5 * max(1.0, float(finite.max(initial=1.0)))


def _winograd_takes(cfg: dict[str, Any]) -> bool:
    """Unit strides, no dilation, a 3x3 window: the Winograd plan's convolutions."""
    return (cfg["rhs_shape"][2:] == (3, 3) and cfg["strides"] == (1, 1)
            and cfg["lhs_dilation"] == (1, 1) and cfg["rhs_dilation"] == (1, 1))


@EXAMPLES
@given(st.one_of(winograd_configs(), winograd_t_configs()), st.integers(0, 2 ** 31),
       st.sampled_from([np.float32, np.float64]), st.sampled_from(["finite", "inf", "nan"]))
def test_winograd_plans_match_the_reference(cfg: dict[str, Any], seed: int, dtype: Any,
                                            special: str) -> None:
    """All four, forced (AUTO takes them for larger convolutions): 2x2 and 4x4 tiles
    (blocks of the window, for the transposed ones) cut by the edges, negative
    padding, groups of both kinds. An inf or NaN in the
    input gives what the direct sum gives: the plans see a non-finite output and
    compute again."""
    from tracer.backend.cpu.lib import conv as lib
    rng = np.random.default_rng(seed)
    x, w = operands(cfg, rng, dtype)
    if special != "finite":
        x[tuple(int(rng.integers(0, n)) for n in x.shape)] = np.inf if special == "inf" \
            else np.nan
    with np.errstate(invalid="ignore"):
        want = conv_of(cfg)(x, w)
    plans = [lib.WINOGRAD, lib.WINOGRAD4] if _winograd_takes(cfg) else [lib.WINOGRAD_T,
                                                                          lib.WINOGRAD4_T]
    assert plans[0] != lib.WINOGRAD_T or want.shape[2:] == (3, 3)
    for plan in plans:
        out = np.full(_flat3(want).shape, 77, dtype)
        run_plan(plan, _flat3(x), _flat3(w), out, _geometry(cfg, want.shape),
                 (cfg["feature_group_count"], cfg["batch_group_count"]))
        np.testing.assert_allclose(out.reshape(want.shape), want,
                                   rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=_atol(want, dtype))


@EXAMPLES
@given(phased_configs(), st.integers(0, 2 ** 31), st.sampled_from([np.float32, np.int32]))
def test_phased_plan_matches_the_reference(cfg: dict[str, Any], seed: int, dtype: Any) -> None:
    """Forced: phases cut by padding (negative too) and by the input's end, strides
    that do and do not divide the sizes, dilated windows, groups of both kinds."""
    from tracer.backend.cpu.lib import conv as lib
    x, w = operands(cfg, np.random.default_rng(seed), dtype)
    want = conv_of(cfg)(x, w)
    out = np.full(_flat3(want).shape, 77, dtype)  # every element must be written
    run_plan(lib.PHASED, _flat3(x), _flat3(w), out, _geometry(cfg, want.shape),
             (cfg["feature_group_count"], cfg["batch_group_count"]))
    np.testing.assert_allclose(out.reshape(want.shape), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_winograd4_over_several_passes_of_its_transforms(dtype: Any) -> None:
    """Enough channels and tiles that F(4x4)'s transforms run in several chunks (of
    channels, of features), two feature groups, odd sizes, uneven padding."""
    from tracer.backend.cpu.lib import conv as lib
    cfg = dict(lhs_shape=(1, 80, 27, 30), rhs_shape=(90, 40, 3, 3), strides=(1, 1),
               padding=((1, 2), (0, 1)), lhs_dilation=(1, 1), rhs_dilation=(1, 1),
               dimension_numbers=ops.ConvDimensionNumbers(*[tuple(range(4))] * 3),
               feature_group_count=2, batch_group_count=1)
    x, w = operands(cfg, np.random.default_rng(5), dtype)
    want = conv_of(cfg)(x.astype(np.float64), w.astype(np.float64))
    out = np.full(_flat3(want).shape, 77, dtype)
    run_plan(lib.WINOGRAD4, _flat3(x), _flat3(w), out, _geometry(cfg, want.shape), (2, 1))
    np.testing.assert_allclose(out.reshape(want.shape), want, rtol=0,
                               atol=(1e-5 if dtype == np.float32 else 1e-12) * np.abs(want).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposed_winograd4_over_several_passes_and_chunks(dtype: Any) -> None:
    """F(3x3, 4x4) on a kernel gradient's operands, exchanged in memory as jit hands
    them over: 50 images in two passes (`conv_winograd4_t.sizes`: 48 and 2, 128
    blocks a GEMM), 5 features in GEMM chunks of 2, 4x4 blocks cut by an odd window's
    edges, uneven padding, 19 kernels (off the 16-lane step); then with two batch
    groups; then with an inf in the input (the plan falls back to the window one, on
    canonical copies of the exchanged operands: the direct sum's inf and NaN)."""
    from tracer.backend.cpu.lib import conv as lib
    from tracer.backend.cpu.lib.conv_entry import run_plan as run
    for groups, kernels, inf in ((1, 19, False), (2, 6, False), (1, 3, True)):
        cfg = dict(lhs_shape=(50, 5, 29, 31), rhs_shape=(kernels * groups, 5, 29, 31),
                   strides=(1, 1), padding=((1, 1), (2, 0)), lhs_dilation=(1, 1),
                   rhs_dilation=(1, 1), feature_group_count=1, batch_group_count=groups,
                   dimension_numbers=ops.ConvDimensionNumbers(*[tuple(range(4))] * 3))
        x, w = operands(cfg, np.random.default_rng(groups), dtype)
        if inf:
            x[7, 2, 11, 5] = np.inf
        with np.errstate(invalid="ignore"):
            want = conv_of(cfg)(x.astype(np.float64), w.astype(np.float64))
        assert want.shape[2:] == (3, 3) and np.isfinite(want).all() != inf
        out = np.full(_flat3(want).shape, 77, dtype)
        swapped = [np.ascontiguousarray(_flat3(a).transpose(1, 0, 2)) for a in (x, w)]
        run(lib.WINOGRAD4_T, *swapped, out, _geometry(cfg, want.shape), 1, groups, (True, True))
        finite = np.abs(want[np.isfinite(want)]).max()
        np.testing.assert_allclose(out.reshape(want.shape), want, rtol=0, atol=(
            1e-5 if dtype == np.float32 else 1e-12) * finite)


def test_auto_takes_winograd_for_a_resnet_like_layer() -> None:
    """3x3, stride 1, float, enough tiles and channels: Winograd (F(4x4); F(2x2) where
    too few 4x4 tiles make small GEMMs or too many make large operands), and the
    transposed one for the kernel gradient, with the direct sum's results; integers,
    strides and other windows keep the direct plans."""
    from tracer.backend.cpu.lib import conv as lib
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 8, 20, 24)).astype(np.float32)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)

    def plan(x: np.ndarray, w: np.ndarray, stride: int) -> int:
        out = np.empty((2, 8, *((n - 1) // stride + 1 for n in x.shape[2:])), x.dtype)
        geo = [np.array(v, np.int64) for v in (x.shape[2:], w.shape[2:], out.shape[2:],
                                                  (stride, stride), (1, 1), (1, 1), (1, 1))]
        return lib._choose(lib.AUTO, _flat3(x), _flat3(w), _flat3(out), tuple(geo), 1)
    assert plan(x, w, 1) == lib.WINOGRAD4
    assert plan(np.ascontiguousarray(x[:, :, :16, :17]), w, 1) == lib.WINOGRAD
    large = np.zeros((1, 8, 400, 400), np.float32)  # F(4x4)'s whole-image operands: 6M
    assert plan(large, w, 1) == lib.WINOGRAD
    assert plan(x.astype(np.int32), w.astype(np.int32), 1) == lib.SHIFTED
    assert plan(x, w, 2) == lib.PHASED
    assert plan(x, w[:, :, :2], 1) == lib.SHIFTED
    gradient = np.empty((2, 2, 3, 3), np.float32)  # a kernel gradient: a 3x3 output
    geo = [np.array(v, np.int64) for v in (x.shape[2:], x.shape[2:], (3, 3), (1, 1), (1, 1),
                                           (1, 1), (1, 1))]
    assert lib._choose(lib.AUTO, _flat3(x), _flat3(x), _flat3(gradient), tuple(geo),
                       1) == lib.WINOGRAD_T
    # 32 kernels over a window of 8 4x4 blocks a row: F(4x4)'s transpose
    images, kernels = np.empty((2, 8, 30, 32), np.float32), np.empty((32, 8, 30, 32), np.float32)
    geo = [np.array(v, np.int64) for v in ((30, 32), (30, 32), (3, 3), (1, 1), (1, 1), (1, 1),
                                           (1, 1))]
    assert lib._choose(lib.AUTO, _flat3(images), _flat3(kernels),
                       _flat3(np.empty((2, 32, 3, 3), np.float32)), tuple(geo),
                       1) == lib.WINOGRAD4_T
    got = tr.jit(lambda x, w: ops.conv(x, w, (1, 1), "SAME"))(x, w)
    want = np.asarray(ops.conv(x.astype(np.float64), w.astype(np.float64), (1, 1), "SAME"))
    # F(4x4)'s float32 rounding: about 1e-6 of the largest output (cpu.lib.conv_winograd4)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
    grad = tr.grad(lambda x, w: (ops.conv(x, w, (1, 1), "SAME") ** 2).sum(), argnums=(0, 1))
    for got, want in zip(tr.jit(grad)(x, w), grad(x, w), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@settings(max_examples=15, deadline=None)
@given(conv_configs(spatial=2, canonical=True), st.integers(0, 2 ** 31))
def test_cpu_backend_matches_reference_with_one_compiled_module(cfg: dict[str, Any],
                                                                seed: int) -> None:
    """Sizes, strides, padding, dilations and groups are all run-time values: every
    example reuses the module compiled for the first."""
    x, w = operands(cfg, np.random.default_rng(seed))
    got = tr.jit(conv_of(cfg), backend="cpu")(x, w)
    np.testing.assert_allclose(got, conv_of(cfg)(x, w), rtol=1e-12, atol=1e-12)


STRUCTURES = {
    "nhwc_f32": ((2, 9, 8, 6), (3, 3, 6, 4), ("NHWC", "HWIO", "NHWC"), (1, 2), "SAME",
                 np.float32),
    "to_nhwc_f16": ((2, 3, 7, 6), (4, 3, 2, 2), ("NCHW", "OIHW", "NHWC"), (1, 1),
                    [(1, -1), (0, 2)], np.float16),
    "int8_wraps": ((2, 3, 6, 6), (4, 3, 3, 3), None, (1, 1), "SAME", np.int8),
    "complex64_1d": ((2, 3, 9), (4, 3, 3), None, (2,), [(2, 0)], np.complex64),
    "volume_f64": ((1, 2, 4, 5, 6), (2, 3, 2, 2, 3), ("NCDHW", "DHWIO", "NDHWC"), (1, 1, 1),
                   "SAME", np.float64),
    "no_spatial": ((3, 4), (5, 4), None, (), (), np.float64),
}


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_cpu_backend_layouts_and_dtypes(name: str) -> None:
    lhs, rhs, dn, strides, padding, dtype = STRUCTURES[name]
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(lhs) * (100 if dtype == np.int8 else 1)).astype(dtype)
    w = (rng.standard_normal(rhs) * (100 if dtype == np.int8 else 1)).astype(dtype)
    fn = lambda x, w: ops.conv_general_dilated(x, w, strides, padding,  # noqa: E731
                                               dimension_numbers=dn)
    got, want = tr.jit(fn, backend="cpu")(x, w), tr.jit(fn, backend="interpreter")(x, w)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = {np.float16: 2e-3, np.float32: 1e-5, np.complex64: 1e-5}.get(dtype, 1e-12)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_generated_code_has_no_literal_sizes_and_calls_the_library_kernel() -> None:
    x, w = np.ones((9, 5, 17, 19), np.float32), np.ones((7, 5, 6, 4), np.float32)
    fn = lambda x, w: ops.conv_general_dilated(x, w, (5, 4), [(4, 1), (-2, 6)],  # noqa: E731
                                               dimension_numbers=("NCHW", "OIHW", "NHWC"))
    source = tr.jit(fn).lower(x, w).compile().source
    code = "\n".join(line.split("#")[0] for line in source.split('"""')[-1].splitlines())
    assert "convolution(lhs_3d" in code and "cpu.lib.conv_entry import convolution" in code
    literals = set(re.findall(r"(?<![\w\[])\d+(?![\w\]])", code))
    assert literals <= {"0", "1", "2", "3"}, literals  # axis numbers of the transposes only


def _boundscheck_cache() -> str:
    """numba's cache for bounds-checked builds of the library: its own directory (the
    regular cache holds builds without checks), named by the library's sources, so a
    change compiles everything again and an unchanged library is not compiled twice."""
    import glob
    import hashlib
    import os
    import tempfile
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tracer", "backend")
    digest = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(here, "cpu", "lib", "conv*.py"))) + [
            os.path.join(here, "numba", "lib", "scalar_math.py")]:
        with open(path, "rb") as f:
            digest.update(f.read())
    return os.path.join(tempfile.gettempdir(), f"tracer-boundscheck-{digest.hexdigest()[:16]}")


def test_kernels_never_index_out_of_bounds() -> None:
    """The plans under numba's bounds checking, on configurations with negative padding
    and holes: all of them in int32 (whose GEMM is loops: its extents are checked too;
    the rest of a plan's code is the same for every dtype), then the float-only
    Winograd plans on their own (with the direct plans they fall back to), in float64;
    the transposed one reads its lhs from memory with dims 0 and 1 exchanged."""
    import os
    import subprocess
    import sys
    script = (
        "from hypothesis import given, settings, strategies as st\n"
        "import numpy as np\n"
        "import tests.test_ops_conv_cpu as t\n"
        "from tracer.backend.cpu.lib import conv as lib\n"
        "once = settings(max_examples=40, deadline=None, derandomize=True)\n"
        "once(given(t.conv_configs(canonical=True), st.integers(0, 2 ** 31), st.just(np.int32))(\n"
        "    t.test_every_kernel_plan_matches_the_reference.hypothesis.inner_test))()\n"
        "def run_plan(mode, x, w, out, geo, groups):\n"
        "    geo = tuple(np.array(v, np.int64) for v in geo)\n"
        "    if mode in (lib.WINOGRAD, lib.WINOGRAD4):\n"
        "        run = lib.run_winograd if mode == lib.WINOGRAD else lib.run_winograd4\n"
        "        return run(x, w, out, geo, *groups)\n"
        "    swapped = np.ascontiguousarray(x.transpose(1, 0, 2)).reshape(x.shape)\n"
        "    lib.run_winograd_t(swapped, w, out, geo, *groups, True, False,\n"
        "                       mode == lib.WINOGRAD4_T)\n"
        "t.run_plan = run_plan\n"
        "once(given(st.one_of(t.winograd_configs(), t.winograd_t_configs()),\n"
        "           st.integers(0, 2 ** 31), st.just(np.float64),\n"
        "           st.sampled_from(['finite', 'inf']))(\n"
        "    t.test_winograd_plans_match_the_reference.hypothesis.inner_test))()\n")
    # (the library's machine code lives under TRACER_CACHE_DIR: a shared one would
    # hand the child the builds without checks)
    cache = _boundscheck_cache()
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=cache, TRACER_CACHE_DIR=cache)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=900, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert done.returncode == 0, done.stderr[-3000:]


def test_compiled_module_reloads_from_the_disk_cache(tmp_path: Any) -> None:
    """A second process loads the generated module from the cache directory, finds the
    library's entry point it calls (by name, loaded from numba's cache) and gets the
    same result, compiling nothing."""
    import os
    import subprocess
    import sys
    script = (
        "import numpy as np, tracer as tr\n"
        "from tracer import ops\n"
        "from tracer.backend.cpu.backend import compile_count\n"
        "x = np.arange(2 * 3 * 9 * 8, dtype=np.float32).reshape(2, 3, 9, 8) % 7\n"
        "w = np.arange(4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3) % 5\n"
        "f = lambda x, w: ops.conv(x, w, (1, 1), 'SAME')\n"
        "got = tr.jit(f)(x, w)\n"
        "assert np.array_equal(got, f(x, w))\n"
        "print(compile_count())\n")
    env = dict(os.environ, TRACER_CACHE_DIR=str(tmp_path))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=900, cwd=root) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    assert runs[1].stdout.split()[-1] == "0"  # nothing compiled the second time

#!/usr/bin/env bash
# The cuda backend on a real GPU, in one run (device time is scarce, so everything is here):
# the environment, every CUDA test on the device (TRACER_CUDA_REAL=1), bench_cuda, and the
# GEMM with a few tile shapes. Run from the repository root on the GPU machine:
#
#     OUT=/tmp/out bash bench/cuda_device_run.sh [TESTS_SECONDS] [BENCH_SECONDS] [PYTEST_ARGS...]
#
# WORKLOADS="gelu sum" runs only those bench workloads; GEMM_TILES="" skips the tile sweep.
#
# Writes env.txt, tests.log, bench.txt, dispatch.txt and gemm_tiles.txt under $OUT. Wheels in .whl/ are
# installed into a private folder ahead of the image's packages: rocket-fft, which the GPU
# image lacks, and NumPy 2.4 (the image's NumPy 2.5 removed np.row_stack, which its own
# numba-cuda 0.30.4 still registers, so numba.cuda cannot compile a kernel there).
set -u
OUT=${OUT:-/tmp/tracer-gpu}
mkdir -p "$OUT"
TESTS_SECONDS=${1:-240}
BENCH_SECONDS=${2:-170}
shift $(( $# < 2 ? $# : 2 ))
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 TRACER_CACHE_DIR=/tmp/tracer-cache XLA_PYTHON_CLIENT_PREALLOCATE=false
SITE=/tmp/tracer-site
if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" .whl/*.whl
fi
export PYTHONPATH=$PWD:$SITE

# atol: libdevice's tanhf is an ulp or two off NumPy's, which 2 * t + 1 magnifies near t = -0.5.
smoke() {
    $PY -c "
import numpy as np, tracer as tr
f = tr.jit(lambda x: tr.numpy.tanh(x) * 2 + 1, backend='cuda')
x = np.linspace(-2, 2, 1000, dtype=np.float32)
np.testing.assert_allclose(np.asarray(f(x)), np.tanh(x) * 2 + 1, rtol=1e-6, atol=1e-6)
print('smoke test passed')"
}

{
    date -u
    nvidia-smi
    $PY - <<'EOF'
import importlib, sys
print("python", sys.version.split()[0])
for name in ("numpy", "numba", "numba_cuda", "llvmlite", "scipy", "rocket_fft", "cupy",
             "torch", "jax", "hypothesis", "pytest"):
    try:
        module = importlib.import_module(name)
        print(f"{name:<12} {getattr(module, '__version__', '?')}")
    except Exception as error:  # a report: any failure is printed, not fatal
        print(f"{name:<12} absent ({type(error).__name__}: {error})")
EOF
    smoke
} >"$OUT/env.txt" 2>&1
echo "PYTHONPATH=$PYTHONPATH" >>"$OUT/env.txt"

# pytest-timeout (on the GPU image) stops a test that hangs; without it the run's limit does.
PER_TEST=$($PY -c "import pytest_timeout" 2>/dev/null && echo "--timeout=90")
# One line per test as it finishes (so a run cut off by the timeout still says what passed).
TRACER_CUDA_REAL=1 timeout "$TESTS_SECONDS" $PY -m pytest -o addopts="" -p no:cacheprovider \
    -v -n "${WORKERS:-14}" $PER_TEST --tb=short -rfE --durations=15 \
    "${@:-tests/backend/cuda}" >"$OUT/tests.log" 2>&1
echo "tests exit status $?" >>"$OUT/env.txt"

timeout "$BENCH_SECONDS" $PY -m bench.bench_cuda ${WORKLOADS:-} >"$OUT/bench.txt" 2>&1
echo "bench exit status $?" >>"$OUT/env.txt"
timeout 60 $PY -m bench.bench_cuda_dispatch --profile >"$OUT/dispatch.txt" 2>&1
echo "dispatch bench exit status $?" >>"$OUT/env.txt"

# The GEMM with other tile shapes (tile_m,tile_n,tile_k,thread_m,thread_n); GEMM_TILES="" skips.
for tiles in ${GEMM_TILES-128,128,16,8,8 64,64,8,4,4 128,64,8,8,8}; do
    echo "== TRACER_CUDA_GEMM_TILES=$tiles" >>"$OUT/gemm_tiles.txt"
    TRACER_CUDA_GEMM_TILES=$tiles timeout 35 $PY -m bench.bench_cuda matmul \
        >>"$OUT/gemm_tiles.txt" 2>&1
done
echo "done" >>"$OUT/env.txt"

"""Launch configuration of the CUDA kernels, chosen from the static shapes.

Every kernel loops grid-stride, so any grid is correct; the numbers here only
decide speed. Under numba's CUDA simulator (`NUMBA_ENABLE_CUDASIM=1`, the tests
without a GPU) each thread is a Python thread, so blocks and grids are tiny
there, which still runs every loop with several blocks and several turns.

Sizes that kernels need at compile time (shared-memory arrays, GEMM tiles) are
module constants of the generated source, written from `CONFIG` by the code
generator; the launch functions below read the same `CONFIG`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings
from dataclasses import dataclass

from numba import cuda
from numba.cuda.core import config as _cuda_config

from ....config import ConfigWarning

SIMULATED = bool(_cuda_config.ENABLE_CUDASIM)


@dataclass(frozen=True)
class LaunchConfig:
    block: int          # threads per block of element-wise kernels
    reduce_block: int   # the most threads of a reducing block (a power of two)
    blocks_per_sm: int  # resident blocks per multiprocessor a grid-stride grid aims for
    min_split: int      # elements per block below which a reduction does not split a row
    tile_m: int         # GEMM: rows and columns of C per block,
    tile_n: int
    tile_k: int         # the depth of the shared-memory tiles of A and B,
    thread_m: int       # and rows and columns of C per thread
    thread_n: int


# GEMM: 128 x 128 tiles of C, 8 deep, 8 x 8 values of C per thread (256 threads): the
# classic register-blocked SGEMM shape (16 shared loads per 64 multiply-adds).
GPU = LaunchConfig(block=256, reduce_block=512, blocks_per_sm=8, min_split=8192,
                   tile_m=128, tile_n=128, tile_k=8, thread_m=8, thread_n=8)
SIMULATOR = LaunchConfig(block=4, reduce_block=8, blocks_per_sm=1, min_split=16,
                         tile_m=4, tile_n=4, tile_k=2, thread_m=2, thread_n=2)


def _with_gemm_tiles(config: LaunchConfig, spec: str) -> LaunchConfig:
    """`config` with the GEMM shape `spec` = "tile_m,tile_n,tile_k,thread_m,thread_n"
    (TRACER_CUDA_GEMM_TILES: bench_cuda tries several shapes on the card at hand); a
    malformed one warns and keeps `config`, as tracer's other settings do."""
    try:
        tm, tn, tk, rm, rn = (int(part) for part in spec.split(","))
        valid = min(tm, tn, tk, rm, rn) >= 1 and tm % rm == 0 and tn % rn == 0 and (
            (tm // rm) * (tn // rn) <= 1024)
    except ValueError:
        valid = False
    if not valid:
        warnings.warn(f"TRACER_CUDA_GEMM_TILES={spec!r} ignored: expected five positive "
                      "integers tile_m,tile_n,tile_k,thread_m,thread_n, thread_m dividing "
                      "tile_m, thread_n tile_n, at most 1024 threads", ConfigWarning)
        return config
    return dataclasses.replace(config, tile_m=tm, tile_n=tn, tile_k=tk, thread_m=rm,
                               thread_n=rn)


CONFIG = SIMULATOR if SIMULATED else GPU
if os.environ.get("TRACER_CUDA_GEMM_TILES"):
    CONFIG = _with_gemm_tiles(CONFIG, os.environ["TRACER_CUDA_GEMM_TILES"])


@functools.cache
def _multiprocessors() -> int:
    if SIMULATED:
        return 2
    return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


def max_blocks() -> int:
    return _multiprocessors() * CONFIG.blocks_per_sm


def grid(n: int, block: int = CONFIG.block) -> int:
    """Blocks for `n` elements at `block` threads (grid-stride beyond a full device)."""
    return max(1, min(-(-n // block), max_blocks()))


def tiles(rows: int, cols: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(grid, block) of a 2-D element-wise kernel: threads x along the last dim (as many
    as it has, up to a block), y along the rows (the other dims, flattened)."""
    bx = min(CONFIG.block, 1 << max(0, (max(cols, 1) - 1).bit_length()))
    by = CONFIG.block // bx
    gx = max(1, min(-(-cols // bx), max_blocks()))
    gy = max(1, min(-(-rows // by), max(1, max_blocks() // gx), 65535))
    return (gx, gy), (bx, by)


def row_block(cols: int) -> int:
    """Threads of a block that reduces (or normalizes) rows of `cols` elements: a power
    of two, at least a warp, at most CONFIG.reduce_block."""
    want = 1 << max(0, (max(cols, 1) - 1).bit_length())
    return max(min(32, CONFIG.reduce_block), min(want, CONFIG.reduce_block))


def few_long_sums(outputs: int, terms: int) -> bool:
    """Whether outputs that are each a sum of `terms` products (a convolution) go one
    to a block rather than one to a thread: when a thread each cannot fill the device
    and a block's threads each get several terms. (A weight gradient of a small convnet
    on an H200, 18,432 outputs of 131,072 terms, took 40 ms one to a thread.)"""
    return outputs < max_blocks() * CONFIG.block and terms >= 4 * CONFIG.reduce_block


# The largest column matrix a convolution writes to run as a matrix product (bytes).
IM2COL_MAX_BYTES = 1 << 31


def conv_as_gemm(features: int, columns: int, depth: int, itemsize: int) -> bool:
    """Whether a convolution runs as im2col and the tiled GEMM (C = kernel (features,
    depth) @ columns (depth, columns)) rather than a thread per output: each output a sum
    of several terms, features enough to use a tile's rows, and columns that fit. (A 3x3
    convolution of 32x64x56x56 float32 on an H200 took 11.4 ms a thread per output.)"""
    return depth >= 8 and features >= 8 and depth * columns * itemsize <= IM2COL_MAX_BYTES


def splits(rows: int, cols: int) -> tuple[int, int]:
    """(splits, chunk): a row of `cols` elements is cut into `splits` chunks of `chunk`
    (each non-empty), reduced by separate blocks and combined by a second pass, when
    there are too few rows to fill the device and the rows are long."""
    if cols <= CONFIG.min_split or rows >= max_blocks():
        return 1, max(cols, 1)
    want = min(-(-max_blocks() // rows), cols // CONFIG.min_split)
    chunk = -(-cols // max(want, 1))
    return -(-cols // chunk), chunk


def gemm_grid(m: int, n: int, batch: int) -> tuple[int, int, int]:
    """Blocks of the GEMM kernel: one per tile of C (x: columns, y: rows, z: batch)."""
    return (max(1, -(-n // CONFIG.tile_n)), max(1, min(-(-m // CONFIG.tile_m), 65535)),
            max(1, min(batch, 65535)))


def gemm_block() -> int:
    return (CONFIG.tile_m // CONFIG.thread_m) * (CONFIG.tile_n // CONFIG.thread_n)

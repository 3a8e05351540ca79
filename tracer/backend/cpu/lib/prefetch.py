"""Software prefetch for the innermost loop of a nest that streams large arrays.

Measured on this project's machines (a virtualized Sapphire Rapids): a GELU over 2^24
float32 took 11 ms out of place and 30 ms in place (a donated input, or a buffer
reused in place), against 9 ms for a plain copy, because the hardware prefetcher does
not keep up with a loop that computes much per element; the same loop cut into chunks
of `CHUNK` elements, each asking for the lines `AHEAD` elements further on, took 9.6
ms and 7.8 ms (gcc's code for the same C loop behaves the same way). A prefetch never
faults, so asking beyond an array's end, or for a strided view's wrong bytes, is
harmless. A loop over a row shorter than a chunk (a reduction over rows of 64) asks
instead, once per row, for the whole row `ROWS_AHEAD` rows on (`prefetch_rows_ahead`).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["CHUNK", "ROWS_AHEAD", "prefetch_ahead", "prefetch_chunk", "prefetch_element",
           "prefetch_rows_ahead"]

CHUNK = 256       # elements of the innermost loop between two rounds of prefetches
AHEAD = 2 * CHUNK  # how many elements past the chunk's start the prefetched lines begin
LINE = 64         # bytes of a cache line
# rows past the one a loop over short rows reads whose lines `prefetch_rows_ahead` asks for
# (rows of 64 float32 in a vmap'd cosine over 10^4 rows: 8-16 ahead ran 65 -> 61 us)
ROWS_AHEAD = 8


def _element_address(context, builder, signature, args, rows_ahead: int = 0):
    """The address (i64) of `array[index]` (args[0], args[1]), `rows_ahead` rows on."""
    ndim = signature.args[0].ndim
    ary = context.make_array(signature.args[0])(context, builder, args[0])
    i64 = ir.IntType(64)
    strides = cgutils.unpack_tuple(builder, ary.strides, ndim)
    offset = builder.mul(ir.Constant(i64, rows_ahead), strides[-2]) if rows_ahead else \
        ir.Constant(i64, 0)
    for k, ty in enumerate(signature.args[1]):
        i = context.cast(builder, builder.extract_value(args[1], k), ty, types.int64)
        offset = builder.add(offset, builder.mul(i, strides[k]))
    return builder.add(builder.ptrtoint(ary.data, i64), offset)


def _prefetch_line(builder, address) -> None:
    """Ask for the line holding `address` (for reading, kept in every cache level)."""
    i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
        "llvm.prefetch.p0i8")
    builder.call(fn, [builder.inttoptr(address, i8p), ir.Constant(i32, 0),
                      ir.Constant(i32, 3), ir.Constant(i32, 1)])


def _indexes(array, index) -> bool:
    return isinstance(array, types.Array) and isinstance(index, types.BaseTuple) and \
        len(index) == array.ndim


def _prefetcher(ahead: int, count: int = CHUNK):
    """An intrinsic prefetching the `count` elements' lines that start `ahead` elements
    past `array[index]` in memory order."""
    def typer(typingctx, array, index):
        if not _indexes(array, index):
            return None
        itemsize = array.dtype.bitwidth // 8

        def codegen(context, builder, signature, args):
            base = _element_address(context, builder, signature, args)
            for line in range(ahead * itemsize, (ahead + count) * itemsize, LINE):
                _prefetch_line(builder, builder.add(base, ir.Constant(base.type, line)))
            return context.get_dummy_value()

        return types.none(array, index), codegen
    return intrinsic(typer)


@intrinsic
def prefetch_rows_ahead(typingctx, array, index, count):
    """`prefetch_rows_ahead(a, (i, 0), n)`: the lines of the `count` elements from
    a[i + ROWS_AHEAD, 0] on in memory order, for a loop over the short row a[i, :] (its
    own lines are too few for `prefetch_ahead`'s chunks)."""
    if not _indexes(array, index) or array.ndim < 2 or not isinstance(count, types.Integer):
        return None
    itemsize = array.dtype.bitwidth // 8

    def codegen(context, builder, signature, args):
        base = _element_address(context, builder, signature, args, ROWS_AHEAD)
        i64 = base.type
        n = context.cast(builder, args[2], signature.args[2], types.int64)
        lines = builder.udiv(builder.add(builder.mul(n, ir.Constant(i64, itemsize)),
                                         ir.Constant(i64, LINE - 1)), ir.Constant(i64, LINE))
        with cgutils.for_range(builder, lines) as loop:
            _prefetch_line(builder, builder.add(base, builder.mul(loop.index,
                                                                  ir.Constant(i64, LINE))))
        return context.get_dummy_value()

    return types.none(array, index, count), codegen


# `prefetch_ahead(a, (i, j))`: the lines `AHEAD` elements past a[i, j], for a loop that
# streams a; `prefetch_chunk(a, (i + 1, j))`: the lines at a[i + 1, j], for a later pass
# of a row group over a row already in cache (the next row arrives while it computes).
prefetch_ahead = _prefetcher(AHEAD)
prefetch_chunk = _prefetcher(0)
# `prefetch_element(a, (i,))`: the line of a[i] (a scatter's target some updates ahead)
prefetch_element = _prefetcher(0, 1)

"""Linear combinations of rows in explicit 256-bit vectors (`VECTOR_BYTES`), for the Winograd
transforms of `cpu.lib.conv_winograd4` and `cpu.lib.conv_winograd4_t`.

`rows_map(formula, inputs)` makes an intrinsic `combine(src, starts, out, at, stride,
count)`: for i < count, out[at + q * stride + i] = formula(src[starts[0] + i], ...)[q].
The formula is a Python function of the input values returning the output values
(sums, differences and products by constants), evaluated once at compile time on LLVM
values: each loop step loads every input once (`VECTOR_BYTES` of lanes), forms every
output from them and stores it; a scalar loop takes the last elements.

Why not numba's loops: LLVM vectorizes a loop only after run-time checks that its
stores overlap none of its loads, and gives up past 8 such checks, so a loop per
output row was needed (26 loads for the six rows of B^T, where one loop needs 6);
the rows of the transposed plans' transforms are short runs (256 elements), where
each loop's setup counts too. Against those loops, one call over 6 rows of 2,025
float32: 1.23 us against 1.65; of 256: 0.100 against 0.189 (the conv grad step:
docs/performance.md, `bench_conv`).

`interleave4(src, starts, out, at, count)` writes out[at + 4 b + j] = src[starts[j] + b]
for b < count, j < 4: four rows interleaved (the F(4x4) output tiles' rows, `j` the
column in a tile), by vector shuffles where a scalar loop took a cycle an element;
`deinterleave4(src, start, out, spots, count)` the reverse, out[spots[j] + b] =
src[start + 4 b + j] (an input row split by column modulo 4).

`transpose8(src, start, apart, out, spots, lane)` moves an 8x8 block:
out[spots[m] + lane + k] = src[start + k * apart + m] for k, m < 8 (8 rows of 8
elements `apart` from each other become 8 runs of 8, by shuffles where a scalar loop
took a load and a store an element).

The caller guarantees that the output rows overlap no input row (each step loads
before it stores, so an overlap would read values of this call's own outputs).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["deinterleave4", "interleave4", "rows_map", "transpose8"]
# bytes a vector: 256-bit vectors beat 512-bit ones on these transforms (a call over
# 6 rows of 2,025 float32: 1.23 us against 1.83; 256 elements: 0.100 against 0.081)
VECTOR_BYTES = 32


def _flat(kind: types.Type) -> bool:
    """Whether `kind` is a 1-D C-contiguous array (the intrinsics index raw memory)."""
    return isinstance(kind, types.Array) and kind.ndim == 1 and kind.layout == "C"


def _float_rows(src: types.Type, out: types.Type, offsets: types.Type, count: int) -> bool:
    """The types every intrinsic here takes: `src` and `out` flat arrays of one float
    dtype, `offsets` a tuple of `count` ints (the rows' starts or spots)."""
    return (_flat(src) and _flat(out) and src.dtype == out.dtype
            and src.dtype in (types.float32, types.float64)
            and isinstance(offsets, types.BaseTuple) and len(offsets) == count)


def _cast_int64(context: Any, builder: ir.IRBuilder, value: ir.Value,
                kind: types.Type) -> ir.Value:
    """An argument of numba type `kind` as an int64 (offsets and counts)."""
    return context.cast(builder, value, kind, types.int64)


class _Value:
    """An LLVM value under construction: +, - and * by a Python number emit IR."""

    def __init__(self, builder: ir.IRBuilder, value: ir.Value) -> None:
        self.builder, self.value = builder, value

    def _constant(self, number: float) -> ir.Value:
        kind = self.value.type
        if isinstance(kind, ir.VectorType):
            return ir.Constant(kind, [ir.Constant(kind.element, number)] * kind.count)
        return ir.Constant(kind, number)

    def __add__(self, other: _Value) -> _Value:
        return _Value(self.builder, self.builder.fadd(self.value, other.value))

    def __sub__(self, other: _Value) -> _Value:
        return _Value(self.builder, self.builder.fsub(self.value, other.value))

    def __mul__(self, number: float) -> _Value:
        return _Value(self.builder, self.builder.fmul(self.value, self._constant(number)))


def _step(builder: ir.IRBuilder, formula: Callable[..., tuple], inputs: list[ir.Value],
          outputs: list[ir.Value], i: ir.Value, kind: ir.Type, align: int) -> None:
    """One loop step at element i: every input loaded as `kind` (a vector or a scalar),
    the formula's outputs stored."""
    def at(base: ir.Value) -> ir.Value:
        return builder.bitcast(builder.gep(base, [i]), kind.as_pointer())

    values = [_Value(builder, builder.load(at(p), align=align)) for p in inputs]
    for target, result in zip(outputs, formula(*values), strict=True):
        builder.store(result.value, at(target), align=align)


def rows_map(formula: Callable[..., tuple], inputs: int) -> Any:
    """The intrinsic `combine(src, starts, out, at, stride, count)` of `formula` (a
    function of `inputs` values; `starts` a tuple of as many int offsets into src)."""
    def typer(typingctx: Any, src: types.Type, starts: types.Type, out: types.Type,
              at: types.Type, stride: types.Type, count: types.Type) -> Any:
        if not _float_rows(src, out, starts, inputs):
            return None

        def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: list) -> Any:
            int64 = partial(_cast_int64, context, builder)
            src_data = context.make_array(src)(context, builder, args[0]).data
            out_data = context.make_array(out)(context, builder, args[2]).data
            begin = [builder.gep(src_data, [int64(v, t)])
                     for v, t in zip(cgutils.unpack_tuple(builder, args[1]), starts)]
            first, pitch, n = (int64(args[k], signature.args[k]) for k in (3, 4, 5))
            rows = len(formula(*[_Probe()] * inputs))
            targets = [builder.gep(out_data, [builder.add(first, builder.mul(
                pitch, ir.Constant(ir.IntType(64), q)))]) for q in range(rows)]
            size = src.dtype.bitwidth // 8
            _by_vectors(builder, n, context.get_value_type(src.dtype), size,
                        lambda i, kind: _step(builder, formula, begin, targets, i, kind, size))
            return context.get_dummy_value()

        return types.void(src, starts, out, at, stride, count), codegen
    return intrinsic(typer)


def _by_vectors(builder: ir.IRBuilder, n: ir.Value, element: ir.Type, size: int,
                step: Callable[[ir.Value, ir.Type], None]) -> None:
    """`step(i, kind)` over the whole vectors of n elements (kind: a vector of
    `VECTOR_BYTES`), then over the elements left one at a time (kind: the element)."""
    i64 = ir.IntType(64)
    lanes = VECTOR_BYTES // size
    whole = builder.mul(builder.sdiv(n, ir.Constant(i64, lanes)), ir.Constant(i64, lanes))
    with cgutils.for_range_slice(builder, ir.Constant(i64, 0), whole,
                                 ir.Constant(i64, lanes)) as (i, _):
        step(i, ir.VectorType(element, lanes))
    with cgutils.for_range_slice(builder, whole, n, ir.Constant(i64, 1)) as (i, _):
        step(i, element)


class _Probe:
    """A stand-in value: counting a formula's outputs without emitting IR."""

    def __add__(self, other: _Probe) -> _Probe:
        return self

    __sub__ = __add__

    def __mul__(self, number: float) -> _Probe:
        return self


@intrinsic
def interleave4(typingctx: Any, src: types.Type, starts: types.Type, out: types.Type,
                at: types.Type, count: types.Type) -> Any:
    """out[at + 4 b + j] = src[starts[j] + b] for b < count, j < 4 (see the module)."""
    if not _float_rows(src, out, starts, 4):
        return None

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: list) -> Any:
        int64 = partial(_cast_int64, context, builder)
        src_data = context.make_array(src)(context, builder, args[0]).data
        out_data = context.make_array(out)(context, builder, args[2]).data
        rows = [builder.gep(src_data, [int64(v, t)])
                for v, t in zip(cgutils.unpack_tuple(builder, args[1]), starts)]
        target = builder.gep(out_data, [int64(args[3], signature.args[3])])
        size = src.dtype.bitwidth // 8
        _by_vectors(builder, int64(args[4], signature.args[4]),
                    context.get_value_type(src.dtype), size,
                    lambda b, kind: _interleave_step(builder, rows, target, b, kind, size))
        return context.get_dummy_value()

    return types.void(src, starts, out, at, count), codegen


def _interleave_step(builder: ir.IRBuilder, rows: list[ir.Value], target: ir.Value,
                     b: ir.Value, kind: ir.Type, size: int) -> None:
    """out[4 (b + k) + j] = row j's element b + k, for every lane k of `kind` (a vector
    or a scalar): pairs of rows interleaved, then the two pairs, one store."""
    def load(row: ir.Value) -> ir.Value:
        return builder.load(builder.bitcast(builder.gep(row, [b]), kind.as_pointer()),
                            align=size)

    values = [load(row) for row in rows]
    start = builder.gep(target, [builder.mul(b, ir.Constant(ir.IntType(64), 4))])
    if not isinstance(kind, ir.VectorType):
        for j, value in enumerate(values):
            builder.store(value, builder.gep(start, [ir.Constant(ir.IntType(64), j)]),
                          align=size)
        return
    lanes = kind.count
    zip_two = [x for k in range(lanes) for x in (k, lanes + k)]
    pairs = [_shuffle(builder, values[0], values[1], zip_two),
             _shuffle(builder, values[2], values[3], zip_two)]
    order = [x for k in range(lanes) for x in (2 * k, 2 * k + 1, 2 * lanes + 2 * k,
                                                2 * lanes + 2 * k + 1)]
    whole = _shuffle(builder, pairs[0], pairs[1], order)
    builder.store(whole, builder.bitcast(start, whole.type.as_pointer()), align=size)


def _shuffle(builder: ir.IRBuilder, a: ir.Value, b: ir.Value, order: list[int]) -> ir.Value:
    mask = ir.Constant(ir.VectorType(ir.IntType(32), len(order)), order)
    return builder.shuffle_vector(a, b, mask)


@intrinsic
def transpose8(typingctx: Any, src: types.Type, start: types.Type, apart: types.Type,
               out: types.Type, spots: types.Type, lane: types.Type) -> Any:
    """out[spots[m] + lane + k] = src[start + k * apart + m] for k, m < 8 (the module)."""
    if not _float_rows(src, out, spots, 8):
        return None

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: list) -> Any:
        int64 = partial(_cast_int64, context, builder)
        size = src.dtype.bitwidth // 8
        kind = ir.VectorType(context.get_value_type(src.dtype), 8)
        src_data = context.make_array(src)(context, builder, args[0]).data
        out_data = context.make_array(out)(context, builder, args[3]).data
        first, pitch = int64(args[1], signature.args[1]), int64(args[2], signature.args[2])
        rows = []
        for k in range(8):
            at = builder.add(first, builder.mul(pitch, ir.Constant(ir.IntType(64), k)))
            pointer = builder.bitcast(builder.gep(src_data, [at]), kind.as_pointer())
            rows.append(builder.load(pointer, align=size))
        lane = int64(args[5], signature.args[5])
        columns = _transposed(builder, rows)
        for spot, column, spot_kind in zip(cgutils.unpack_tuple(builder, args[4]), columns,
                                           spots):
            at = builder.add(int64(spot, spot_kind), lane)
            pointer = builder.bitcast(builder.gep(out_data, [at]), kind.as_pointer())
            builder.store(column, pointer, align=size)
        return context.get_dummy_value()

    return types.void(src, start, apart, out, spots, lane), codegen


def _transposed(builder: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """The 8 columns of the 8 vectors `rows`: rows zipped in pairs, pairs of pairs, then
    all (element 8 m + k of the last is rows[k][m]), cut into its 8 columns."""
    pairs = [_shuffle(builder, rows[2 * j], rows[2 * j + 1],
                      [x for m in range(8) for x in (m, 8 + m)]) for j in range(4)]
    fours = [_shuffle(builder, pairs[2 * j], pairs[2 * j + 1],
                      [x for m in range(8) for x in (2 * m, 2 * m + 1, 16 + 2 * m, 17 + 2 * m)])
             for j in range(2)]
    whole = _shuffle(builder, fours[0], fours[1],
                     [x for m in range(8) for x in (*range(4 * m, 4 * m + 4),
                                                    *range(32 + 4 * m, 36 + 4 * m))])
    return [_shuffle(builder, whole, whole, list(range(8 * m, 8 * m + 8))) for m in range(8)]


@intrinsic
def deinterleave4(typingctx: Any, src: types.Type, start: types.Type, out: types.Type,
                  spots: types.Type, count: types.Type) -> Any:
    """out[spots[j] + b] = src[start + 4 b + j] for b < count, j < 4 (see the module)."""
    if not _float_rows(src, out, spots, 4):
        return None

    def codegen(context: Any, builder: ir.IRBuilder, signature: Any, args: list) -> Any:
        int64 = partial(_cast_int64, context, builder)
        src_data = context.make_array(src)(context, builder, args[0]).data
        out_data = context.make_array(out)(context, builder, args[2]).data
        source = builder.gep(src_data, [int64(args[1], signature.args[1])])
        rows = [builder.gep(out_data, [int64(v, t)])
                for v, t in zip(cgutils.unpack_tuple(builder, args[3]), spots)]
        size = src.dtype.bitwidth // 8
        _by_vectors(builder, int64(args[4], signature.args[4]),
                    context.get_value_type(src.dtype), size,
                    lambda b, kind: _deinterleave_step(builder, source, rows, b, kind, size))
        return context.get_dummy_value()

    return types.void(src, start, out, spots, count), codegen


def _deinterleave_step(builder: ir.IRBuilder, source: ir.Value, rows: list[ir.Value],
                       b: ir.Value, kind: ir.Type, size: int) -> None:
    """rows[j][b + k] = source[4 (b + k) + j] for every lane k of `kind` (a vector or a
    scalar): four vectors loaded, each row's elements picked by one shuffle."""
    i64 = ir.IntType(64)
    start = builder.gep(source, [builder.mul(b, ir.Constant(i64, 4))])
    if not isinstance(kind, ir.VectorType):
        for j, row in enumerate(rows):
            value = builder.load(builder.gep(start, [ir.Constant(i64, j)]), align=size)
            builder.store(value, builder.gep(row, [b]), align=size)
        return
    lanes = kind.count
    parts = [builder.load(builder.bitcast(builder.gep(start, [ir.Constant(i64, lanes * p)]),
                                          kind.as_pointer()), align=size) for p in range(4)]
    halves = [_shuffle(builder, parts[0], parts[1], list(range(2 * lanes))),
              _shuffle(builder, parts[2], parts[3], list(range(2 * lanes)))]
    for j, row in enumerate(rows):
        picked = _shuffle(builder, halves[0], halves[1], list(range(j, 4 * lanes, 4)))
        builder.store(picked, builder.bitcast(builder.gep(row, [b]), kind.as_pointer()),
                      align=size)

"""`conv_general_dilated` on the device: kernels for each way to run it, the host picking
one per call from the sizes (so one module serves every shape):

- few outputs of long sums (a weight gradient, whose sums run over the batch and the
  image; `launch.few_long_sums`): a block per output (`conv_direct.block_kernel`);
- a float convolution without groups whose column matrix fits (`launch.conv_as_gemm`):
  as a matrix product. `im2col` writes the columns once, K = input features x window
  taps rows by N = batch x output positions columns (zeros where padding or a hole
  puts a tap off the operand); the tiled GEMM multiplies the kernel, a (O, K) matrix,
  by them; a last kernel moves the (O, batch, positions) product into the output's
  layout. The sums run in another order than the reference's;
- else a thread per output (`conv_direct.thread_kernel`), in the reference's order.
"""

from __future__ import annotations

import numpy as np

from ....core import Eqn
from ...numba.codegen import Ref
from ...numba.scalar import literal
from ..emitter import DeviceGraphEmitter, Kernel
from ..nests import advance_index, product, split_index
from .conv_direct import block_kernel, tap_position, thread_kernel
from .gemm import GemmSizes, Operand, emit_gemm, transposed
from .index import launch_over, over_elements, read, write


def emit_conv(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    dn = eqn.params["dimension_numbers"]
    rhs, out = eqn.inputs[1], eqn.outputs[0]
    result = ge.new_ref(out)
    outputs = product([ge.dim(out, d) for d in range(out.aval.ndim)])
    terms = product([ge.dim(rhs, d) for d in dn.rhs_spec[1:]])
    by_thread, by_block = thread_kernel(ge, eqn, result), block_kernel(ge, eqn, result)
    with ge.w.block(f"if launch.few_long_sums({outputs}, {terms})"):
        by_block.launch(f"launch.grid({outputs}, 1)", f"launch.row_block({terms})",
                        "conv_general_dilated: one output element per block")
    if as_gemm_applies(eqn):
        features = ge.dim(rhs, dn.rhs_spec[0])
        columns = product([ge.dim(out, d) for d in (dn.out_spec[0], *dn.out_spec[2:])])
        with ge.w.block(f"elif launch.conv_as_gemm({features}, {columns}, {terms}, "
                        f"{out.aval.dtype.itemsize})"):
            _as_gemm(ge, eqn, result)
    with ge.w.block("else"):
        launch_over(by_thread, out, "conv_general_dilated: one output element per thread")


def as_gemm_applies(eqn: Eqn) -> bool:
    """Whether the convolution has the im2col + GEMM kernels: float32 or float64
    throughout, no feature or batch groups."""
    p = eqn.params
    dtypes = {a.aval.dtype for a in (*eqn.inputs, *eqn.outputs)}
    return (p["feature_group_count"] == 1 and p["batch_group_count"] == 1
            and dtypes in ({np.dtype(np.float32)}, {np.dtype(np.float64)}))


def _as_gemm(ge: DeviceGraphEmitter, eqn: Eqn, result: Ref) -> None:
    """Host code: the kernel as a (1, O, K) matrix, the columns, the product, the layout."""
    dn = eqn.params["dimension_numbers"]
    rhs, out = eqn.inputs[1], eqn.outputs[0]
    dtype = out.aval.dtype
    aval3 = out.aval.update(shape=(1, 1, 1))
    depth = [ge.dim(rhs, d) for d in dn.rhs_spec[1:]]
    columns = [ge.dim(out, d) for d in (dn.out_spec[0], *dn.out_spec[2:])]
    features = ge.dim(rhs, dn.rhs_spec[0])
    order = list(dn.rhs_spec)  # (O, I, taps...): the rows of A, each one K long
    plain = order == list(range(rhs.aval.ndim))
    source = ge.array_of(ge.ref(rhs)) if plain else transposed(ge, rhs, order)
    a = ge.view(f"{source}.reshape((1, {features}, {product(depth)}))", aval3, "kernel_3d")
    cols = ge.view(f"rt.empty((1, {product(depth)}, {product(columns)}), np.{dtype.name})",
                   aval3, "columns")
    _im2col(ge, eqn, cols, depth, columns)
    c = ge.view(f"rt.empty((1, {features}, {product(columns)}), np.{dtype.name})", aval3,
                "product")
    emit_gemm(ge, dtype, (Operand(a.name, False, aval3), Operand(cols.name, False, aval3),
                          c.name), GemmSizes([], [features], depth, columns))
    by_feature = ge.view(f"{c.name}.reshape(({features}, {', '.join(columns)}))",
                         out.aval.update(shape=(1,) * out.aval.ndim), "product_nd")
    _to_layout(ge, eqn, by_feature, result)


def _im2col(ge: DeviceGraphEmitter, eqn: Eqn, cols: Ref, depth: list[str],
            columns: list[str]) -> None:
    """columns[0, (i, taps), (b, positions)] = lhs at batch b, input feature i, each
    spatial position * stride + tap * rhs dilation - low padding (0 off the operand); a
    thread per element, stepping a mixed-radix index (no division per element)."""
    dn = eqn.params["dimension_numbers"]
    lhs = eqn.inputs[0]
    flat_cols = ge.view(f"{cols.name}.reshape(({product([*depth, *columns])},))",
                        lhs.aval.update(shape=(1,)), "columns_flat").name
    k = Kernel(ge, "im2col")
    sizes = [k.outer(s) for s in (*depth, *columns)]
    spatial = len(dn.out_spec) - 2
    ci, b = k.fresh("ci"), k.fresh("b")
    taps = [k.fresh(f"t{j}") for j in range(spatial)]
    positions = [k.fresh(f"o{j}") for j in range(spatial)]
    digits = [ci, *taps, b, *positions]
    total, flat = k.fresh("total"), k.fresh("flat")
    k.w.line(f"{total} = {product(sizes)}")
    loop = ("cuda.grid(1)", total, "cuda.gridsize(1)")
    steps = split_index(k, loop, sizes, digits)
    x_at = [""] * lhs.aval.ndim
    x_at[dn.lhs_spec[0]], x_at[dn.lhs_spec[1]] = b, ci
    with k.w.block(f"for {flat} in range({', '.join(loop)})"):
        checks: list[str] = []
        for j in range(spatial):
            x_at[dn.lhs_spec[2 + j]], more = tap_position(k, eqn, j, positions[j], taps[j])
            checks += more
        x = read(k, ge.ref(lhs), x_at)
        if checks:  # (padding and holes are zeros)
            x = f"{x} if {' and '.join(checks)} else {literal(0, lhs.aval.dtype)}"
        k.w.line(f"{k.outer(flat_cols)}[{flat}] = {x}")
        advance_index(k, digits, steps, sizes)
    k.launch(f"launch.grid({product([*depth, *columns])})", "launch.CONFIG.block",
             "im2col: the columns of conv_general_dilated as a matrix product")


def _to_layout(ge: DeviceGraphEmitter, eqn: Eqn, by_feature: Ref, result: Ref) -> None:
    """result = the (O, batch, positions) product in the output's layout."""
    dn = eqn.params["dimension_numbers"]
    out = eqn.outputs[0]
    k = Kernel(ge, "conv_layout")
    with over_elements(k, out) as (index, _):
        source = [index[d] for d in (dn.out_spec[1], dn.out_spec[0], *dn.out_spec[2:])]
        write(k, result, index, read(k, by_feature, source))
    launch_over(k, out, "the product's (O, batch, positions) into the output's layout")

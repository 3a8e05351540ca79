"""cpu emitter of `conv_general_dilated` (also bound by conv_with_general_padding, conv).

The generated code brings both operands to the canonical layout (N, C, spatial...) /
(O, I, window...), one transpose each when their dimension numbers differ from it,
except where only the first two dims are exchanged, as in the operands of a kernel
gradient ((C, N, spatial...) and (O, N, spatial...)): the library takes those as they
are (its transposed Winograd plan reads them in place, the others copy them). It
flattens the spatial dims and calls `cpu.lib.conv_entry.convolution`, the spatial
geometry given as tuples of `dims` symbols (never literal sizes). That call reaches
the library (`cpu.lib.conv`) through a C entry point compiled once per dtype, so a
generated module does not compile the library's code again. The output buffer is
written directly when the output layout is canonical; otherwise a canonical
temporary is filled and one transposed copy puts it in place. float16 operands are
widened to float32 and the result rounded once, as the reference does; a rank-2
convolution (no spatial dim) runs as one with a 1-wide spatial dim and a 1-tap
window.
"""

from __future__ import annotations

import math
from contextlib import ExitStack
from typing import Any, Sequence

import numpy as np

from ....core import Atom, Eqn
from ...numba.codegen import GraphEmitter, Ref, copy_array
from ...numba.scalar import HALVES
from ..lib.conv_threads import NO_SPLIT, PARALLEL_MIN_PRODUCTS, split_axis

_LIB = "cpu.lib.conv"
_ENTRY = "cpu.lib.conv_entry"  # (the library behind a C entry point: not compiled per module)
_THREADS = "cpu.lib.conv_threads"


def _tuple(items: Sequence[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _product(items: Sequence[str]) -> str:
    return " * ".join(items) or "1"


def _canonical(ge: GraphEmitter, atom: Atom, spec: tuple[int, ...],
               hint: str) -> tuple[str, bool]:
    """A 3-D (dim spec[0], dim spec[1], flattened spatial) C-contiguous array of `atom`,
    float32 for float16 operands; or, where `atom` has those two dims exchanged and is
    no float16, `atom` itself (3-D, spec[1] first) and True."""
    ref = ge.ref(atom)
    source = ref.name
    rank = len(spec)
    if tuple(spec) == (1, 0, *range(2, rank)) and atom.aval.dtype not in HALVES:
        sizes = [ge.dim(atom, d) for d in range(rank)]
        name = ge.fresh(f"{hint}_3d")
        ge.w.line(f"{name} = {source}.reshape(({sizes[0]}, {sizes[1]}, "
                  f"{_product(sizes[2:])}))")
        return name, True
    if tuple(spec) != tuple(range(rank)):
        source = _permuted(ge, ref.name, [ge.dim(atom, d) for d in range(len(spec))], spec,
                           f"{hint}_canonical")
    if atom.aval.dtype in HALVES:
        wide = ge.fresh(f"{hint}_f32")
        ge.w.line(f"{wide} = {ge.mod.use(HALVES[atom.aval.dtype].widen)}({source})")
        source = wide
    sizes = [ge.dim(atom, d) for d in spec]
    name = ge.fresh(f"{hint}_3d")
    ge.w.line(f"{name} = {source}.reshape(({sizes[0]}, {sizes[1]}, {_product(sizes[2:])}))")
    return name, False


def _permuted(ge: GraphEmitter, source: str, sizes: Sequence[str], perm: Sequence[int],
              hint: str, into: str | None = None) -> str:
    """A C-contiguous array (`into`, else a new one) whose dim k is dim perm[k] of the
    array `source` of `sizes`: a loop nest (numba takes seconds, per rank and dtype, to
    compile np.ascontiguousarray of a transposed array)."""
    target = into or ge.fresh(hint)
    if into is None:
        ge.w.line(f"{target} = np.empty({_tuple([sizes[d] for d in perm])}, {source}.dtype)")
    index = [ge.fresh(f"t{k}") for k in range(len(perm))]
    at = [""] * len(perm)
    for k, d in enumerate(perm):
        at[d] = index[k]
    with ExitStack() as loops:
        for k, d in enumerate(perm):
            loops.enter_context(ge.w.block(f"for {index[k]} in range({sizes[d]})"))
        ge.w.line(f"{target}[{', '.join(index)}] = {source}[{', '.join(at)}]")
    return target


def _geometry(ge: GraphEmitter, eqn: Eqn) -> list[str]:
    """The kernel's spatial tuples: in sizes, window, out sizes, strides, low padding,
    lhs and rhs dilation (a 1-wide dim with a 1-tap window when there is none)."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    if len(lhs_spec) == 2:
        return ["(1,)", "(1,)", "(1,)", "(1,)", "(0,)", "(1,)", "(1,)"]

    def param(name: str, values: Sequence[int], hint: str) -> str:
        return _tuple([ge.mod.size(("conv", id(eqn), name, d), v, hint)
                       for d, v in enumerate(values)])

    return [_tuple([ge.dim(lhs, d) for d in lhs_spec[2:]]),
            _tuple([ge.dim(rhs, d) for d in rhs_spec[2:]]),
            _tuple([ge.dim(out, d) for d in out_spec[2:]]),
            param("window_strides", p["window_strides"], "stride"),
            param("pad_low", [lo for lo, _ in p["padding"]], "pad"),
            param("lhs_dilation", p["lhs_dilation"], "lhs_dilation"),
            param("rhs_dilation", p["rhs_dilation"], "rhs_dilation")]


def _conv(ge: GraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    out_spec = tuple(p["dimension_numbers"].out_spec)
    x3, x_swapped = _canonical(ge, lhs, p["dimension_numbers"].lhs_spec, "lhs")
    w3, w_swapped = _canonical(ge, rhs, p["dimension_numbers"].rhs_spec, "rhs")
    buffer = ge.alloc(out)
    sizes = [ge.dim(out, d) for d in out_spec]
    shape3 = f"({sizes[0]}, {sizes[1]}, {_product(sizes[2:])})"
    direct = out_spec == tuple(range(len(out_spec))) and out.aval.dtype not in HALVES
    result = ge.fresh("conv3")
    if direct:
        ge.w.line(f"{result} = {buffer}.reshape({shape3})")
    else:
        work = np.float32 if out.aval.dtype in HALVES else out.aval.dtype
        ge.w.line(f"{result} = np.empty({shape3}, np.{np.dtype(work).name})")
    args = [x3, w3, result, *_geometry(ge, eqn), ge.mod.size(
        ("conv", id(eqn), "fgc"), p["feature_group_count"], "feature_groups"), ge.mod.size(
        ("conv", id(eqn), "bgc"), p["batch_group_count"], "batch_groups"),
        f"bool({x_swapped})", f"bool({w_swapped})"]  # (run-time bools: one compile for all)
    ge.w.comment("(x, w, out, in sizes, window, out sizes, strides, low padding, lhs and rhs "
                 "dilation, feature groups, batch groups, x and w with dims 0, 1 exchanged)")
    kernel = ge.mod.use("convolution_parallel", _THREADS) \
        if _threads_pay(ge, eqn, x_swapped, w_swapped) else ge.mod.use("convolution", _ENTRY)
    ge.w.line(f"{kernel}({', '.join(args)})")
    if not direct:
        _store(ge, eqn, result, buffer, sizes)
    ge.bind(out, Ref(buffer, out.aval))


def _threads_pay(ge: GraphEmitter, eqn: Eqn, x_swapped: bool, w_swapped: bool) -> bool:
    """Whether the convolution runs in parts on threads (`cpu.lib.conv_threads`, which
    checks again at run time): in graphs that may use threads, where its parts can be
    cut and its direct sum is large (numba takes seconds to compile a parallel loop,
    so small convolutions never pay for it)."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    lhs_spec, rhs_spec, _ = p["dimension_numbers"]
    axis = split_axis(x_swapped, w_swapped, p["feature_group_count"], p["batch_group_count"])
    first = lhs.aval.shape[lhs_spec[1] if x_swapped else lhs_spec[0]]  # (in memory)
    products = eqn.outputs[0].aval.size * math.prod(rhs.aval.shape[d] for d in rhs_spec[1:])
    return ge.mod.parallel_ok and axis != NO_SPLIT and first > 1 and \
        products >= PARALLEL_MIN_PRODUCTS


def _store(ge: GraphEmitter, eqn: Eqn, result: str, buffer: str, sizes: list[str]) -> None:
    """Put the canonical `result` in the output buffer: transposed, float16-rounded."""
    out = eqn.outputs[0]
    out_spec = tuple(eqn.params["dimension_numbers"].out_spec)
    value = ge.fresh("conv_view")
    ge.w.line(f"{value} = {result}.reshape({_tuple(sizes)})")
    if out_spec != tuple(range(len(out_spec))):
        inverse = [int(d) for d in np.argsort(out_spec)]
        if out.aval.dtype not in HALVES:
            _permuted(ge, value, sizes, inverse, "", into=buffer)
            return
        value = _permuted(ge, value, sizes, inverse, "conv_out")
    if out.aval.dtype in HALVES:
        ge.w.line(f"{ge.mod.use(HALVES[out.aval.dtype].narrow)}({value}, {buffer})")
    else:
        copy_array(ge, buffer, value, out.aval.ndim)


EMITTERS: dict[str, Any] = {"conv_general_dilated": _conv}

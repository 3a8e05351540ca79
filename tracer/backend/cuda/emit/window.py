"""Kernels of the windowed ops: reduce_window (pooling) and select_and_scatter (its
gradient).

- reduce_window: one thread per output element folds its window's taps in
  row-major order from the init values, in registers, exactly the reference's
  left fold. A tap's position in the padded, base-dilated operand is
  `o * stride + k * window_dilation - low`; where padding or a base dilation can
  put it outside the operand or on a hole, the code checks it and folds the
  init value instead (the seed rule), so nothing is read out of bounds.
- select_and_scatter: two kernels, no atomics, deterministic. The first picks,
  per window (one thread each), the element select() keeps while scanning the
  window's real elements in row-major order, and writes its flat index (-1:
  the window holds only padding). The second runs one thread per operand
  element: from init_value it combines, with scatter(), the source value of
  every window that picked it, in row-major order of the windows, which is the
  order in which the reference applies them. The windows containing element i
  along a dim are those o with `o * stride + k * window_dilation = i * base_dilation
  + low` for a tap k: k runs down, so o runs up.

Sizes, strides, paddings and dilations come from `dims`; only which checks a
dimension needs (non-zero padding, a base dilation, a stride or window above 1)
shapes the code. A computation that is not element-wise scalar code runs on the
host (`cuda.emit.table.HOST_FALLBACKS`).
"""

from __future__ import annotations

from contextlib import ExitStack

from ....core import Atom, Eqn
from ...numba.codegen import Ref
from ...numba.scalar import literal
from ..emitter import DeviceGraphEmitter, Kernel
from ..nests import emit_scalar_graph
from .host import run_on_host
from .index import element_wise_graph, kernel_scalar, launch_over, over_elements, read, write


class _Geometry:
    """The window params of one eqn as kernel symbols (static ints from `dims`)."""

    def __init__(self, k: Kernel, eqn: Eqn):
        self.k, self.eqn, self.p = k, eqn, eqn.params

    def param(self, name: str, d: int, part: int = -1) -> str:
        value = self.p[name][d] if part < 0 else self.p[name][d][part]
        hint = {"window_dimensions": "window", "window_strides": "stride", "padding": "pad",
                "base_dilation": "bdil", "window_dilation": "wdil"}[name]
        return self.k.size(("param", id(self.eqn), name, d, part), value, hint)

    def term(self, name: str, d: int, factor: str) -> str:
        """`factor * param` (just `factor` when the param is 1)."""
        return factor if self.p[name][d] == 1 else f"{factor} * {self.param(name, d)}"

    def taps(self, stack: ExitStack, operand: Atom, outer: list[str]) -> tuple[list[str],
                                                                                 list[str]]:
        """Open the tap loops (row-major); return per operand dim the index expression
        and the bounds checks (padding, holes) a tap needs."""
        k, index, checks = self.k, [], []
        for d, o in enumerate(outer):
            terms = [self.term("window_strides", d, o)]
            if self.p["window_dimensions"][d] != 1:
                tap = k.fresh(f"k{d}")
                stack.enter_context(k.w.block(
                    f"for {tap} in range({self.param('window_dimensions', d)})"))
                terms.append(self.term("window_dilation", d, tap))
            low, high = self.p["padding"][d]
            position = " + ".join(terms) + (f" - {self.param('padding', d, 0)}" if low else "")
            size, dil = k.dim(operand, d), self.p["base_dilation"][d]
            if low <= 0 and high <= 0 and dil == 1:
                index.append(position)
                continue
            q = k.fresh(f"q{d}")
            k.w.line(f"{q} = {position}")
            if dil == 1:
                checks += [f"{q} >= 0"] * (low > 0) + [f"{q} < {size}"] * (high > 0)
                index.append(q)
                continue
            b = self.param("base_dilation", d)
            checks.append(f"{q} >= 0 and {q} % {b} == 0 and {q} // {b} < {size}")
            index.append(f"{q} // {b}")
        return index, checks


def _fallback(ge: DeviceGraphEmitter, eqn: Eqn, *graphs: str) -> bool:
    """Run `eqn` on the host if one of its computations is not element-wise scalar code."""
    if all(element_wise_graph(eqn.params[g]) for g in graphs):
        return False
    run_on_host(ge, eqn)
    return True


# ------------------------------------------------------------------ reduce_window

def _reduce_window(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    if _fallback(ge, eqn, "to_apply"):
        return
    n = len(eqn.outputs)
    results = [ge.new_ref(v) for v in eqn.outputs]
    k = Kernel(ge, "reduce_window")
    geo = _Geometry(k, eqn)
    inits = [kernel_scalar(k, a) for a in eqn.inputs[n:]]
    accs = [k.fresh("acc") for _ in range(n)]
    with over_elements(k, eqn.outputs[0]) as (index, _):
        k.w.line(f"{', '.join(accs)} = {', '.join(inits)}")
        with ExitStack() as stack:
            taps, checks = geo.taps(stack, eqn.inputs[0], list(index))
            xs = [k.fresh("x") for _ in range(n)]
            loads = ", ".join(read(k, ge.ref(a), taps) for a in eqn.inputs[:n])
            if checks:  # (a tap on padding or a hole folds the init value)
                pad = ", ".join(inits)
                loads, pad = (loads, pad) if n == 1 else (f"({loads})", f"({pad})")
                k.w.line(f"{', '.join(xs)} = {loads} if {' and '.join(checks)} else {pad}")
            else:
                k.w.line(f"{', '.join(xs)} = {loads}")
            new = emit_scalar_graph(k, eqn.params["to_apply"], accs + xs)
            k.w.line(f"{', '.join(accs)} = {', '.join(new)}")
        for r, acc in zip(results, accs, strict=True):
            write(k, r, index, acc)
    launch_over(k, eqn.outputs[0], "reduce_window: the fold of each output's window")


# ------------------------------------------------------------------ select_and_scatter

def _select_and_scatter(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    if _fallback(ge, eqn, "select", "scatter"):
        return
    source = eqn.inputs[1]
    total = " * ".join(ge.dim(source, d) for d in range(source.aval.ndim)) or "1"
    picks = ge.view(f"rt.empty(({total},), np.int64)",
                    source.aval.update(shape=(1,), dtype="int64"), "picks")
    _pick(ge, eqn, picks)
    _scatter_picked(ge, eqn, picks)


def _flat(k: Kernel, atom: Atom, index: list[str]) -> str:
    """The row-major flat index of `index` in `atom`'s shape."""
    flat = index[0] if index else "0"
    for d in range(1, len(index)):
        flat = f"{flat if flat.isidentifier() else f'({flat})'} * {k.dim(atom, d)} + {index[d]}"
    return flat


def _pick(ge: DeviceGraphEmitter, eqn: Eqn, picks: Ref) -> None:
    """picks[window] = the flat operand index select() keeps in the window, or -1."""
    operand, source = eqn.inputs[:2]
    k = Kernel(ge, "select")
    geo = _Geometry(k, eqn)
    have, best, pick = k.fresh("have"), k.fresh("best"), k.fresh("pick")
    with over_elements(k, source) as (index, flat):
        k.w.line(f"{have}, {best}, {pick} = False, {literal(0, operand.aval.dtype)}, i64(-1)")
        with ExitStack() as stack:
            taps, checks = geo.taps(stack, operand, list(index))
            if checks:
                stack.enter_context(k.w.block(f"if {' and '.join(checks)}"))
            candidate = k.fresh("candidate")
            k.w.line(f"{candidate} = {read(k, ge.ref(operand), taps)}")
            [keep] = emit_scalar_graph(k, eqn.params["select"], [best, candidate])
            with k.w.block(f"if not {have} or not {keep}"):
                k.w.line(f"{have}, {best}, {pick} = True, {candidate}, "
                         f"i64({_flat(k, operand, taps)})")
        k.w.line(f"{k.outer(picks.name)}[{flat}] = {pick}")
    launch_over(k, source, "select_and_scatter: each window's pick (row-major scan)")


def _scatter_picked(ge: DeviceGraphEmitter, eqn: Eqn, picks: Ref) -> None:
    """out[i] = init, combined with every source value whose window picked i, in order."""
    operand, source, init = eqn.inputs
    result = ge.new_ref(eqn.outputs[0])
    k = Kernel(ge, "scatter_picked")
    geo = _Geometry(k, eqn)
    value = k.fresh("value")
    with over_elements(k, operand) as (index, flat):
        k.w.line(f"{value} = {kernel_scalar(k, init)}")
        with ExitStack() as stack:
            windows = [_windows_along(k, geo, stack, source, d, i) for d, i in enumerate(index)]
            with k.w.block(f"if {k.outer(picks.name)}[{_flat(k, source, windows)}] == {flat}"):
                [new] = emit_scalar_graph(k, eqn.params["scatter"],
                                          [value, read(k, ge.ref(source), windows)])
                k.w.line(f"{value} = {new}")
        write(k, result, index, value)
    launch_over(k, operand, "select_and_scatter: each element gathers the windows that "
                            "picked it")


def _windows_along(k: Kernel, geo: _Geometry, stack: ExitStack, source: Atom, d: int,
                   i: str) -> str:
    """Open the loop over the windows holding operand index `i` along dim d, in increasing
    order; return the window's index (the body runs only for real windows)."""
    p = geo.p
    position = geo.term("base_dilation", d, i)
    if p["padding"][d][0]:
        position = f"{position} + {geo.param('padding', d, 0)}"
    q, o = k.fresh(f"q{d}"), k.fresh(f"o{d}")
    if p["window_dimensions"][d] == 1:
        k.w.line(f"{q} = {position}")
    else:
        tap = k.fresh(f"k{d}")
        stack.enter_context(k.w.block(
            f"for {tap} in range({geo.param('window_dimensions', d)} - 1, -1, -1)"))
        k.w.line(f"{q} = {position} - {geo.term('window_dilation', d, tap)}")
    stride = p["window_strides"][d]
    if stride == 1:
        k.w.line(f"{o} = {q}")
        checks = f"{q} >= 0 and {o} < {k.dim(source, d)}"
    else:
        s = geo.param("window_strides", d)
        k.w.line(f"{o} = {q} // {s}")
        checks = f"{q} >= 0 and {q} % {s} == 0 and {o} < {k.dim(source, d)}"
    stack.enter_context(k.w.block(f"if {checks}"))
    return o


EMITTERS = {"reduce_window": _reduce_window, "select_and_scatter": _select_and_scatter}

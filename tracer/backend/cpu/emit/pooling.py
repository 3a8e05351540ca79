"""cpu emitters for pooling: reduce_window and select_and_scatter unrolled over a small
window (no base dilation, at most `UNROLL_TAPS` taps, any padding, strides and window
dilation); every other geometry takes `window`'s general loop nests.

The window's taps, strides, dilations and padding are literals in the source (the code
is specialised to the window geometry; sizes still come from `dims`), so a tap is an
offset the compiler folds, and the innermost loop runs along the last dim from 0 with
a literal stride and no bounds checks: LLVM vectorizes it.

- reduce_window of an add, max or min: per row of outputs (every index but the last),
  `col[i]` = the computation over the taps of the dims before the last at spot i of
  the (padded) row (one pass over the operand rows the windows cover; a tap on the
  padding reads a row of init values), then
  `out[o] = f(init, f(col[o * stride], col[o * stride + dilation], ...))`. Without
  taps before the last dim or padding along it the row is read in place; without a
  window, stride or padding along the last dim `col` is the output row itself.
- select_and_scatter: per row of windows, first the picks of the whole row, branch
  free: the first tap, then each tap in row-major order replaces the pick unless
  select(pick, tap) (XLA's rule, exactly as the general code applies it); windows that
  reach into the padding check each tap instead. Then the row's source values are
  scattered onto the picks in row-major order. The output is filled with init_value
  per slab (the leading dims the windows do not span) right before that slab's
  scatter, so the fill and the scattered updates meet in cache.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from ....core import Eqn
from ...numba.codegen import GraphEmitter, Ref, load, store_value
from ...numba.scalar import alias, literal
from ...numba.source import SourceWriter
from . import window
from .epilogue import Epilogue, epilogue_nest
from .window import _emit, _inline, _named, _nested, _parallel, _scalar, fold_kind

UNROLL_TAPS = 32  # larger windows keep the general loops (the unrolled body grows with taps)


def unrollable(eqn: Eqn, padded: bool = False) -> bool:
    """No base dilation, a non-scalar result, at most UNROLL_TAPS taps, and (unless
    `padded`) no padding."""
    p = eqn.params
    return (eqn.outputs[0].aval.ndim > 0
            and (padded or all(lo == 0 and hi == 0 for lo, hi in p["padding"]))
            and all(b == 1 for b in p["base_dilation"])
            and math.prod(p["window_dimensions"]) <= UNROLL_TAPS)


def _position(o: str, stride: int, offset: int) -> str:
    """`o * stride + offset` as short source text."""
    text = o if stride == 1 else f"{o} * {stride}"
    return text if offset == 0 else f"{text} + {offset}" if offset > 0 else f"{text} - {-offset}"


def _taps(eqn: Eqn, o: list[str], dims: range) -> list[tuple[list[str], list[int]]]:
    """Per tap of the window over `dims` (row-major): the operand index of each of those
    dims at window position `o`, and the tap's offsets (tap * window_dilation)."""
    p = eqn.params
    taps = []
    for tap in itertools.product(*(range(p["window_dimensions"][d]) for d in dims)):
        offsets = [k * p["window_dilation"][d] for k, d in zip(tap, dims, strict=True)]
        taps.append(([_position(o[d], p["window_strides"][d], off)
                      for d, off in zip(dims, offsets, strict=True)], offsets))
    return taps


def _chain(ge: GraphEmitter, w: SourceWriter, graph: Any, values: list[Ref]) -> Ref:
    """graph(...graph(graph(v0, v1), v2)..., vn)."""
    acc = values[0]
    for value in values[1:]:
        [acc] = _inline(ge, w, graph, [acc, value])
    return acc


# ------------------------------------------------------------------ reduce_window
def _reduce_window(ge: GraphEmitter, eqn: Eqn) -> None:
    if not (unrollable(eqn, padded=True) and fold_kind(eqn)):
        window.EMITTERS["reduce_window"](ge, eqn)
        return
    x, init = ge.ref(eqn.inputs[0]), ge.ref(eqn.inputs[1])
    out = eqn.outputs[0]
    nest = epilogue_nest(ge, eqn)  # (an average pool's divide: computed at the stores)
    epilogue = Epilogue(ge, nest, out) if nest is not None else None
    target = Ref(ge.alloc(out), out.aval) if epilogue is None else None
    o = [ge.fresh(f"o{d}") for d in range(out.aval.ndim)]
    parallel = len(o) > 1 and _parallel(
        ge, out.aval.size * math.prod(eqn.params["window_dimensions"]))
    host = [x.name] + ([target.name] if target else [])

    def write(w: SourceWriter) -> None:
        _ReduceRows(ge, eqn, x, init, target or epilogue, o).write(w, parallel)
        host.extend(epilogue.free if epilogue else ())  # (read by a parallel kernel)
    _emit(ge, parallel, "reduce_window", host, write)
    if target is not None:
        ge.bind(out, target)


class _ReduceRows:
    """The loops of one unrolled add, max or min reduce_window (see the module doc). Each
    tap before the last dim reads a row of the operand (a view), or, where padding puts
    the tap off the operand for this row of outputs, a row of init values: the loops
    along the row never check bounds. Padding along the last dim: the spots of `col` off
    the operand take the computation over the init values of all those taps."""

    def __init__(self, ge: GraphEmitter, eqn: Eqn, x: Ref, init: Ref, target: Ref | Epilogue,
                 o: list[str]):
        self.ge, self.eqn, self.x, self.init, self.target, self.o = ge, eqn, x, init, target, o
        last = len(o) - 1
        p = eqn.params
        self.window, self.stride, self.dilation = (
            p["window_dimensions"][last], p["window_strides"][last], p["window_dilation"][last])
        self.low, self.high = p["padding"][last]
        self.taps = _taps(eqn, o, range(last))  # the taps before the last dim
        self.rows = [ge.fresh("row") for _ in self.taps]
        self.row_aval = x.aval.update(shape=(x.aval.shape[-1],))
        self.pad_row = ge.fresh("pad_row") if any(
            lo > 0 or hi > 0 for lo, hi in p["padding"][:last]) else None
        self.graph = p["to_apply"]
        self.n = {k: ge.fresh(k) for k in ("spots", "real", "past", "padded")}

    def write(self, w: SourceWriter, parallel: bool) -> None:
        ge, o = self.ge, self.o
        loops = [(i, ge.dim(self.eqn.outputs[0], d)) for d, i in enumerate(o)]
        padded = self.low != 0 or self.high != 0
        in_place = self.window == 1 and self.stride == 1 and not padded  # col: the output
        col = None if in_place or (len(self.taps) == 1 and not padded) else ge.fresh("col")

        def per_row() -> None:
            self.open_rows(w)
            if in_place:
                self.fold_rows(w, loops[-1])
                return
            if col is not None:
                self.fill_col(w, col, padded)
            self.fold_row(w, loops[-1][1], col)
        if len(loops) == 1:
            self.scratch(w, col, padded)
            per_row()
            return
        _nested(w, loops[:1], lambda: (self.scratch(w, col, padded),
                                       _nested(w, loops[1:-1], per_row)), parallel)

    def scratch(self, w: SourceWriter, col: str | None, padded: bool) -> None:
        """Per thread: `col`, the row of init values, the spans along the last dim."""
        n, size = self.n, self.ge.dim(self.eqn.inputs[0], len(self.o) - 1)
        out = self.ge.dim(self.eqn.outputs[0], len(self.o) - 1)
        # (no spots without outputs: the operand may be shorter than one window)
        w.line(f"{n['spots']} = ({out} - 1) * {self.stride} + "
               f"{(self.window - 1) * self.dilation + 1} if {out} else 0")
        if col is not None:
            w.line(f"{col} = np.empty({n['spots']}, {alias(self.x.aval.dtype)})")
        if self.pad_row is not None:
            w.line(f"{self.pad_row} = np.empty({size}, {self.x.name}.dtype)")
            w.line(f"{self.pad_row}[:] = "
                   f"{store_value(self.init.name, self.x.aval.dtype, self.ge.mod)}")
        if padded:  # the operand's spots of the padded row: [real, past)
            w.line(f"{n['real']} = min(max({self.low}, 0), {n['spots']})")
            w.line(f"{n['past']} = min(max({self.low} + {size}, {n['real']}), {n['spots']})")
            inits = [self.init] * len(self.taps)
            w.line(f"{n['padded']} = {_chain(self.ge, w, self.graph, inits).name}")

    def open_rows(self, w: SourceWriter) -> None:
        """row_t = the operand row tap t reads for this row of outputs (or init values)."""
        p, last = self.eqn.params, len(self.o) - 1
        for row, (index, _) in zip(self.rows, self.taps, strict=True):
            checks, at = [], []
            for d, position in enumerate(index):
                lo, hi = p["padding"][d]
                at.append(position if lo == 0 else
                          f"{position} - {lo}" if lo > 0 else f"{position} + {-lo}")
                if lo > 0 or hi > 0:
                    size = self.ge.dim(self.eqn.inputs[0], d)
                    checks.append(f"0 <= {at[-1]} < {size}" if lo > 0 and hi > 0 else
                                  f"{at[-1]} >= 0" if lo > 0 else f"{at[-1]} < {size}")
            view = f"{self.x.name}[{', '.join(at)}]" if last else self.x.name
            w.line(f"{row} = {view} if {' and '.join(checks)} else {self.pad_row}"
                   if checks else f"{row} = {view}")

    def tap_values(self, w: SourceWriter, spot: str) -> Ref:
        """f over the rows' elements at `spot`."""
        values = [_named(self.ge, w, load(Ref(row, self.row_aval), [spot], self.ge.mod),
                         self.x.aval, "x") for row in self.rows]
        return _chain(self.ge, w, self.graph, values)

    def fill_col(self, w: SourceWriter, col: str, padded: bool) -> None:
        """col[i] = f over the taps before the last dim at spot i of the padded row."""
        n, i = self.n, self.ge.fresh("i")
        if not padded:
            with w.block(f"for {i} in range({n['spots']})"):
                w.line(f"{col}[{i}] = {self.tap_values(w, i).name}")
            return
        for span in (n["real"], f"{n['past']}, {n['spots']}"):
            with w.block(f"for {i} in range({span})"):
                w.line(f"{col}[{i}] = {n['padded']}")
        # (unsigned: numba's fix-up of negative indices would keep this from vectorizing)
        with w.block(f"for {i} in range({n['past']} - {n['real']})"):
            value = self.tap_values(w, f"u64({n['real']} - {self.low} + {i})")
            w.line(f"{col}[u64({n['real']} + {i})] = {value.name}")

    def fold_rows(self, w: SourceWriter, loop: tuple[str, str]) -> None:
        """The output row = f(init, f over the taps before the last dim)."""
        i, bound = loop
        with w.block(f"for {i} in range({bound})"):
            self.store(w, _inline(self.ge, w, self.graph, [self.init, self.tap_values(w, i)])[0])

    def fold_row(self, w: SourceWriter, bound: str, col: str | None) -> None:
        """out[o] = f(init, f over the last dim's taps of col (or the one row))."""
        ge, o = self.ge, self.o[-1]
        spots = [_position(o, self.stride, k * self.dilation) for k in range(self.window)]
        with w.block(f"for {o} in range({bound})"):
            loads = ([load(Ref(self.rows[0], self.row_aval), [spot], ge.mod) for spot in spots]
                     if col is None else [f"{col}[{spot}]" for spot in spots])
            values = [_named(ge, w, text, self.x.aval, "x") for text in loads]
            acc = _chain(ge, w, self.graph, values)
            self.store(w, _inline(ge, w, self.graph, [self.init, acc])[0])

    def store(self, w: SourceWriter, value: Ref) -> None:
        """The result at `o`: into its array, or into the epilogue nest's values."""
        if isinstance(self.target, Epilogue):
            self.target.store(w, self.o, value.name)
            return
        w.line(f"{self.target.name}[{', '.join(self.o)}] = "
               f"{store_value(value.name, self.target.aval.dtype, self.ge.mod)}")


# ------------------------------------------------------------------ select_and_scatter
def _select_and_scatter(ge: GraphEmitter, eqn: Eqn) -> None:
    if not unrollable(eqn, padded=True):
        window.EMITTERS["select_and_scatter"](ge, eqn)
        return
    operand, source, init = (ge.ref(a) for a in eqn.inputs)
    out = eqn.outputs[0]
    target = Ref(ge.alloc(out), out.aval)
    p = eqn.params
    slab = next((d for d, (k, s, pad) in enumerate(zip(
        p["window_dimensions"], p["window_strides"], p["padding"], strict=True))
        if k != 1 or s != 1 or pad != (0, 0)),
        out.aval.ndim)  # dims [0, slab): windows of different indices never meet
    fill = f"{store_value(init.name, out.aval.dtype, ge.mod)}"
    if not slab:
        ge.w.line(f"{target.name}[...] = {fill}")
    work = eqn.inputs[1].aval.size * math.prod(p["window_dimensions"])
    parallel = p["window_dimensions"][0] == 1 and _parallel(ge, work)
    scan = _ScatterRows(ge, eqn, operand, source, target)
    _emit(ge, parallel, "select_and_scatter", [operand.name, source.name, target.name],
          lambda w: scan.write(w, parallel, slab, fill))
    ge.bind(out, target)


class _ScatterRows:
    """The loops of one unrolled select_and_scatter (see the module doc). A pick is the
    picked element's index in the flattened operand: one select per tap, one flat index
    per scattered value. With padding, the windows of a row that lie on the operand
    take the branch-free picks, the others (at the borders, or the whole row where a
    tap before the last dim is off the operand) check each tap and skip the padding,
    and a window entirely on the padding picks nothing (-1)."""

    def __init__(self, ge: GraphEmitter, eqn: Eqn, operand: Ref, source: Ref, target: Ref):
        self.ge, self.eqn, self.operand, self.source, self.target = (
            ge, eqn, operand, source, target)
        rank, p = operand.aval.ndim, eqn.params
        self.o = [ge.fresh(f"o{d}") for d in range(rank)]
        self.lows = [lo for lo, _ in p["padding"]]
        self.taps = [([_position(o, p["window_strides"][d], off - self.lows[d])
                       for d, (o, off) in enumerate(zip(self.o, offsets, strict=True))],
                      offsets) for _, offsets in _taps(eqn, self.o, range(rank))]
        self.padded = any(lo != 0 or hi != 0 for lo, hi in p["padding"])
        self.strides = [ge.fresh(f"elements{d}") for d in range(rank)]  # per step along d
        self.picks, self.flat = ge.fresh("pick"), ge.fresh("flat")
        self.tap_offsets = [ge.fresh("tap") for _ in self.taps]

    def write(self, w: SourceWriter, parallel: bool, slab: int, fill: str) -> None:
        ge, rank, target = self.ge, len(self.o), self.target.name
        loops = [(i, ge.dim(self.eqn.inputs[1], d)) for d, i in enumerate(self.o)]
        if slab == rank:  # every window is one element of its own
            _nested(w, loops, lambda: (w.line(f"{target}[{', '.join(self.o)}] = {fill}"),
                                       self.scatter_one(w, self.o)), parallel)
            return
        w.line(f"{self.strides[-1]} = 1")
        for d in reversed(range(rank - 1)):
            w.line(f"{self.strides[d]} = {self.strides[d + 1]} * "
                   f"{ge.dim(self.eqn.inputs[0], d + 1)}")
        w.line(f"{self.flat} = {target}.reshape({target}.size)")
        for name, (_, offsets) in zip(self.tap_offsets, self.taps, strict=True):
            w.line(f"{name} = {self.offset([str(k) for k in offsets])}")

        def body(depth: int) -> None:
            if depth == min(1, rank - 1):  # (per thread: inside the parallel loop)
                w.line(f"{self.picks} = np.empty({loops[-1][1]}, np.int64)")
            if slab and depth == slab:  # the slab's indices are all set
                w.line(f"{target}[{', '.join(self.o[:slab])}][...] = {fill}")
            if depth < rank - 1:
                _nested(w, loops[depth:depth + 1], lambda: body(depth + 1),
                        parallel and not depth)
                return
            self.pick_row(w, loops[-1])
            self.scatter_row(w, loops[-1])
        body(0)

    def offset(self, terms: list[str]) -> str:
        """sum(terms[d] * elements_d): a flat index from one term per dim."""
        return " + ".join(f"({t}) * {e}" for t, e in zip(terms, self.strides, strict=True)
                          if t != "0") or "0"

    def pick_row(self, w: SourceWriter, loop: tuple[str, str]) -> None:
        """pick[o] for each window of the row (see the class doc)."""
        ge, p, last = self.ge, self.eqn.params, len(self.o) - 1
        o, bound = loop
        base = ge.fresh("base")  # the flat index of tap 0 of window 0 of the row
        w.line(f"{base} = " + self.offset(
            [_position(self.o[d], p["window_strides"][d], -self.lows[d]) for d in range(last)]
            + [str(-self.lows[last])]))
        if not self.padded:
            with w.block(f"for {o} in range({bound})"):
                self.pick_on_operand(w, base)
            return
        first, stop, j = ge.fresh("first"), ge.fresh("stop"), ge.fresh("j")
        lo, stride = self.lows[last], p["window_strides"][last]
        span = (p["window_dimensions"][last] - 1) * p["window_dilation"][last] + 1
        w.line(f"{first} = min({max(0, -(-lo // stride))}, {bound})")
        w.line(f"{stop} = max({first}, min({bound}, ({ge.dim(self.eqn.inputs[0], last)} - "
               f"{span} + {lo}) // {stride} + 1))")
        inside = self.row_inside()
        if inside:
            w.line(f"{first}, {stop} = ({first}, {stop}) if {inside} else (0, 0)")
        with w.block(f"for {j} in range({stop} - {first})"):
            w.line(f"{o} = {first} + {j}")
            self.pick_on_operand(w, base)
        with w.block(f"for {j} in range({bound} - ({stop} - {first}))"):  # the borders
            w.line(f"{o} = {j} if {j} < {first} else {j} + {stop} - {first}")
            self.pick_checked(w)

    def row_inside(self) -> str:
        """The condition that every tap before the last dim is on the operand."""
        p, checks = self.eqn.params, []
        for d in range(len(self.o) - 1):
            lo, hi = p["padding"][d]
            start = _position(self.o[d], p["window_strides"][d], -lo)
            span = (p["window_dimensions"][d] - 1) * p["window_dilation"][d]
            if lo > 0:
                checks.append(f"{start} >= 0")
            if hi > 0:
                checks.append(f"{start} + {span} < {self.ge.dim(self.eqn.inputs[0], d)}")
        return " and ".join(checks)

    def pick_on_operand(self, w: SourceWriter, base: str) -> None:
        """Every tap of window `o` is on the operand: branch-free selects, in row-major order."""
        ge, aval, o = self.ge, self.operand.aval, self.o[-1]
        best, pick = ge.fresh("best"), ge.fresh("k")
        for t, (index, _) in enumerate(self.taps):
            at = [f"u64({i})" if lo else i for i, lo in zip(index, self.lows, strict=True)]
            value = load(self.operand, at, ge.mod)
            if not t:
                w.line(f"{best} = {value}")
                w.line(f"{pick} = {self.tap_offsets[0]}")
                continue
            candidate = _named(ge, w, value, aval, "candidate")
            [keep] = _inline(ge, w, self.eqn.params["select"], [Ref(best, _scalar(aval)),
                                                                candidate])
            w.line(f"{best} = {best} if {keep.name} else {candidate.name}")
            w.line(f"{pick} = {pick} if {keep.name} else {self.tap_offsets[t]}")
        stride = self.eqn.params["window_strides"][-1]
        w.line(f"{self.picks}[{o}] = {base} + {_position(o, stride, 0)} + {pick}")

    def pick_checked(self, w: SourceWriter) -> None:
        """Window `o` at a border: taps on the padding are skipped (the general rule)."""
        ge, aval, p = self.ge, self.operand.aval, self.eqn.params
        have, best, pick = ge.fresh("have"), ge.fresh("best"), ge.fresh("k")
        w.line(f"{have}, {best}, {pick} = False, {literal(0, aval.dtype)}, -1")
        for index, _ in self.taps:
            checks = []
            for d, q in enumerate(index):
                lo, hi = p["padding"][d]
                checks += [f"{q} >= 0"] * (lo > 0) + \
                    [f"{q} < {ge.dim(self.eqn.inputs[0], d)}"] * (hi > 0)
            with w.block(f"if {' and '.join(checks) or 'True'}"):
                value = _named(ge, w, load(self.operand, index, ge.mod), aval, "candidate")
                [keep] = _inline(ge, w, p["select"], [Ref(best, _scalar(aval)), value])
                with w.block(f"if not {have} or not {keep.name}"):
                    w.line(f"{have}, {best}, {pick} = True, {value.name}, "
                           f"{self.offset(index)}")
        w.line(f"{self.picks}[{self.o[-1]}] = {pick}")

    def scatter_row(self, w: SourceWriter, loop: tuple[str, str]) -> None:
        """The row's source values onto the picks, in order (unsigned flat indices: no
        negative-index fix-up); a window entirely on the padding picked nothing."""
        o = loop[0]
        with w.block(f"for {o} in range({loop[1]})"):
            if not self.padded:
                self.scatter_one(w, [f"u64({self.picks}[{o}])"], self.flat)
                return
            with w.block(f"if {self.picks}[{o}] >= 0"):
                self.scatter_one(w, [f"u64({self.picks}[{o}])"], self.flat)

    def scatter_one(self, w: SourceWriter, picked: list[str], target: str = "") -> None:
        """target[picked] = scatter(target[picked], source[o])."""
        ge, aval = self.ge, self.operand.aval
        out = Ref(target or self.target.name, self.target.aval)
        current = _named(ge, w, load(out, picked, ge.mod), aval, "current")
        value = _named(ge, w, load(self.source, self.o, ge.mod), aval, "source")
        [new] = _inline(ge, w, self.eqn.params["scatter"], [current, value])
        w.line(f"{out.at(picked)} = {store_value(new.name, aval.dtype, ge.mod)}")


EMITTERS: dict[str, Any] = {"reduce_window": _reduce_window,
                            "select_and_scatter": _select_and_scatter}

"""cpu emitters for reduce_window, select_and_scatter and map.

Each is one loop nest with its scalar sub-computation inlined per element
(`emit_graph` of the computation on scalar refs):

- reduce_window of an add, max or min (pooling; `_run_kind`): per row of outputs,
  the taps of the dims before the last are folded into each spot of the padded
  operand row the row's windows cover, then the last dim's taps into each spot, and
  output o takes spot o * stride: loops along the row with unit stride, which
  vectorize (strided taps do not). Any other computation: per row of outputs (every
  index but the last) the row is filled with the init values, then each window tap
  is folded into the whole row in memory, so the innermost loop runs along the row
  with independent iterations; rank <= 1 keeps accumulators in registers around the
  taps. The seeds leave the evaluation order to the backend. A tap's position in
  the padded, base-dilated operand is `o * stride + k * window_dilation - low`;
  where padding or a base dilation can put it outside the operand or on a hole,
  the code checks it and folds the init value instead (the seed rule), so
  nothing is ever read out of bounds.
- select_and_scatter: the output is filled with init_value; then per source
  position the window's real elements are scanned in row-major order (the first
  one, then a candidate replaces the current one unless select(current,
  candidate)), and the source value is combined into the output at the pick.
- map: one loop over every element.

Sizes, strides, paddings and dilations come from `dims`; only whether a dimension
needs a bounds check (non-zero padding, base dilation) or a window loop (window
size above 1) shapes the code. The outermost loop is a `numba.prange` in a
`parallel=True` kernel when the work is large (for select_and_scatter only when
the windows cannot overlap across it: window size 1 in dimension 0).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ....core import Eqn, Graph, ShapedArray
from ...numba.codegen import GraphEmitter, Ref, load, store_value
from ...numba.scalar import HALVES, alias, literal
from ...numba.source import SourceWriter
from ..options import NJIT_OPTIONS, PARALLEL_MIN_ELEMENTS

Loops = list[tuple[str, str]]
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


# ------------------------------------------------------------------ shared pieces
def _nested(w: SourceWriter, loops: Loops, inside: Callable[[], None],
            parallel: bool = False) -> None:
    if not loops:
        inside()
        return
    var, bound = loops[0]
    with w.block(f"for {var} in {'numba.prange' if parallel else 'range'}({bound})"):
        _nested(w, loops[1:], inside)


def _emit(ge: GraphEmitter, parallel: bool, hint: str, host_names: list[str],
          write: Callable[[SourceWriter], None]) -> None:
    """Run `write` here, or (parallel) into a `parallel=True` kernel it then calls; the
    kernel's parameters are the host names its code reads (sizes, arrays, scalars)."""
    if not parallel:
        write(ge.w)
        return
    w = SourceWriter()
    write(w)
    host = set(ge.mod.size_names.values()) | {p.name for p in ge.mod.params} | set(host_names)
    params = list(dict.fromkeys(n for n in _NAME.findall(w.text()) if n in host))
    name = ge.mod.kernel(f"parallel_{hint}", f"@numba.njit({NJIT_OPTIONS}, parallel=True)",
                         params, w)
    ge.w.line(f"{name}({', '.join(params)})")


def _parallel(ge: GraphEmitter, work: int) -> bool:
    return ge.mod.parallel_ok and work >= PARALLEL_MIN_ELEMENTS


def _scalar(aval: ShapedArray) -> ShapedArray:
    return aval.update(shape=())


def _param(ge: GraphEmitter, eqn: Eqn, name: str, d: int, hint: str, part: int = -1) -> str:
    value = eqn.params[name][d] if part < 0 else eqn.params[name][d][part]
    return ge.mod.size(("param", id(eqn), name, d, part), value, hint)


def _named(ge: GraphEmitter, w: SourceWriter, expr: str, aval: ShapedArray, hint: str) -> Ref:
    name = ge.fresh(hint)
    w.line(f"{name} = {expr}")
    return Ref(name, _scalar(aval))


def _inline(ge: GraphEmitter, w: SourceWriter, graph: Graph, refs: list[Ref]) -> list[Ref]:
    return ge.sub_emitter(w).emit_graph(graph, refs)


def _assign(w: SourceWriter, names: list[str], refs: list[Ref]) -> None:
    w.line(f"{', '.join(names)} = {', '.join(r.name for r in refs)}")


class _Taps:
    """Window tap positions of one eqn: loops over the taps, and per operand dim the
    index expression and (where padding or base dilation needs one) a bounds check."""

    def __init__(self, ge: GraphEmitter, eqn: Eqn, outer: list[str]):
        p = eqn.params
        self.loops: Loops = []
        self.index: list[str] = []
        self.checks: list[str] = []
        self.prelude: list[str] = []
        for d, o in enumerate(outer):
            terms = [o if p["window_strides"][d] == 1 else
                     f"{o} * {_param(ge, eqn, 'window_strides', d, 'stride')}"]
            if p["window_dimensions"][d] != 1:
                k = ge.fresh(f"k{d}")
                self.loops.append((k, _param(ge, eqn, "window_dimensions", d, "window")))
                terms.append(k if p["window_dilation"][d] == 1 else
                             f"{k} * {_param(ge, eqn, 'window_dilation', d, 'wdil')}")
            low, high = p["padding"][d]
            position = " + ".join(terms) + ("" if low == 0 else
                                            f" - {_param(ge, eqn, 'padding', d, 'low', 0)}")
            self.index.append(self._checked(ge, eqn, d, position, low, high))

    def _checked(self, ge: GraphEmitter, eqn: Eqn, d: int, position: str, low: int,
                 high: int) -> str:
        size, dil = ge.dim(eqn.inputs[0], d), eqn.params["base_dilation"][d]
        if low <= 0 and high <= 0 and dil == 1:
            return position
        q = ge.fresh(f"q{d}")
        self.prelude.append(f"{q} = {position}")
        if dil == 1:
            self.checks.append(f"0 <= {q} < {size}" if low > 0 and high > 0 else
                               f"{q} >= 0" if low > 0 else f"{q} < {size}")
            return q
        b = _param(ge, eqn, "base_dilation", d, "bdil")
        self.checks.append(f"{q} >= 0 and {q} % {b} == 0 and {q} // {b} < {size}")
        return f"{q} // {b}"

    def open(self, w: SourceWriter, inside: Callable[[], None], inner: Loops = ()) -> None:
        """The tap loops, then the `inner` loops, the index prelude and `inside()`."""
        def body() -> None:
            for line in self.prelude:
                w.line(line)
            inside()
        _nested(w, self.loops + list(inner), body)


# ------------------------------------------------------------------ reduce_window
def _reduce_window(ge: GraphEmitter, eqn: Eqn) -> None:
    n = len(eqn.outputs)
    refs = [ge.ref(a) for a in eqn.inputs]
    out = eqn.outputs[0]
    rank = out.aval.ndim
    fold = _Fold(ge, eqn, refs[:n], refs[n:],
                 [Ref(ge.alloc(v), v.aval) for v in eqn.outputs] if rank else [],
                 [ge.fresh(f"o{d}") for d in range(rank)],
                 [Ref(ge.fresh("acc"), _scalar(v.aval)) for v in eqn.outputs])
    taps = math.prod(eqn.params["window_dimensions"])
    kind = _run_kind(eqn)
    # (`runs` loops over rows of outputs: a rank-1 one has no outer loop to thread)
    parallel = rank > (1 if kind else 0) and _parallel(ge, out.aval.size * taps)
    write = ((lambda w: fold.runs(w, parallel, kind)) if kind else
             (lambda w: (fold.rows if rank >= 2 else fold.registers)(w, parallel)))
    _emit(ge, parallel, "reduce_window", [r.name for r in refs + fold.targets], write)
    for v, result in zip(eqn.outputs, fold.targets or fold.accs, strict=True):
        ge.bind(v, Ref(result.name, v.aval))


def _run_kind(eqn: Eqn) -> str | None:
    """`fold_kind`, when the last dim also has a window or a stride but no base dilation
    (what `_Fold.runs` needs); None otherwise."""
    kind, p = fold_kind(eqn), eqn.params
    if kind is None:  # (rank 0 included: it has no last dim)
        return None
    last = len(p["window_dimensions"]) - 1
    moves = p["window_dimensions"][last] > 1 or p["window_strides"][last] > 1
    return kind if moves and p["base_dilation"][last] == 1 else None


def fold_kind(eqn: Eqn) -> str | None:
    """"add", "max" or "min" when the reduce_window has one operand, of numbers, and
    its computation is that op of its two parameters (associative and commutative, and
    the evaluation order is the backend's to choose); None otherwise."""
    graph, aval = eqn.params["to_apply"], eqn.outputs[0].aval
    if len(eqn.outputs) != 1 or len(graph.eqns) != 1 or not aval.ndim:
        return None
    [op] = graph.eqns
    same = len(op.inputs) == 2 and {id(a) for a in op.inputs} == {id(v) for v in graph.inputs}
    if op.op.name not in ("add", "max", "min") or not same or graph.outputs[0] is not \
            op.outputs[0] or (aval.dtype.kind not in "iuf" and aval.dtype not in HALVES):
        return None
    return op.op.name


@dataclass
class _Fold:
    """The loops of one reduce_window: `o` indexes the output, `accs` are registers."""

    ge: GraphEmitter
    eqn: Eqn
    xs: list[Ref]
    inits: list[Ref]
    targets: list[Ref]
    o: list[str]
    accs: list[Ref]

    def loops(self) -> Loops:
        return [(i, self.ge.dim(self.eqn.outputs[0], d)) for d, i in enumerate(self.o)]

    def rows(self, w: SourceWriter, parallel: bool) -> None:
        """Rank >= 2: per row of outputs (every index but the last), fill the row with the
        init values, then fold each tap into the whole row in memory: the innermost loop
        runs along the row with independent iterations."""
        taps, loops = _Taps(self.ge, self.eqn, self.o), self.loops()

        def fold_in_row() -> None:
            current = [_named(self.ge, w, load(t, self.o, self.ge.mod), t.aval, "acc")
                       for t in self.targets]
            self.store(w, self.step(w, taps, current))

        def per_row() -> None:
            _nested(w, loops[-1:], lambda: self.store(w, self.inits))
            taps.open(w, fold_in_row, loops[-1:])
        _nested(w, loops[:-1], per_row, parallel)

    def runs(self, w: SourceWriter, parallel: bool, kind: str) -> None:
        """An add, max or min (see `_run_kind`): per row of outputs, `col` folds the taps
        of every dim but the last into each spot of the padded operand row under the
        row's windows, `run` then the last dim's taps into each spot, and output o takes
        spot o * stride. The folds run along the row with unit stride (they vectorize,
        strided taps do not); `col` starts at the identity (the init value for max and
        min, which may be folded in again), so the init value is folded in once."""
        ge, eqn, last = self.ge, self.eqn, len(self.o) - 1
        p, aval = eqn.params, self.targets[0].aval
        window, stride, dilation = (
            _param(ge, eqn, name, last, hint) for name, hint in (
                ("window_dimensions", "window"), ("window_strides", "stride"),
                ("window_dilation", "wdil")))
        low = _param(ge, eqn, "padding", last, "low", 0) if p["padding"][last][0] else "0"
        n = self._spans(w, window, stride, dilation, low)
        register = np.dtype(np.float32) if aval.dtype in HALVES else aval.dtype
        start = self.inits[0].name if kind != "add" else \
            literal(-0.0 if register.kind == "f" else 0, register)  # (-0.0 + x is x)
        taps = _Taps(ge, eqn, self.o[:-1])

        def scratch() -> None:
            for name, size in ((n["col"], n["spots"]), (n["run"], n["starts"])):
                w.line(f"{name} = np.empty({size}, {alias(aval.dtype)})")

        def per_row() -> None:
            with w.block(f"for {n['i']} in range({n['spots']})"):
                w.line(f"{n['col']}[{n['i']}] = {start}")
            taps.open(w, lambda: self._fold_col(w, taps, n, low))
            self._fold_run(w, n, dilation, window)
            with w.block(f"for {self.o[-1]} in range({ge.dim(eqn.outputs[0], last)})"):
                spot = Ref(f"{n['run']}[u64({self.o[-1]} * {stride})]", _scalar(aval))
                self.store(w, _inline(ge, w, p["to_apply"], [self.inits[0], spot]))

        outer = self.loops()[:-1]
        if not outer:
            scratch()
            per_row()
            return
        _nested(w, outer[:1], lambda: (scratch(), _nested(w, outer[1:], per_row)), parallel)

    def _spans(self, w: SourceWriter, window: str, stride: str, dilation: str,
               low: str) -> dict[str, str]:
        """The names `runs` uses, and the spans along the last dim: `spots` of the padded
        row under a row of windows, the first `starts` of them where windows start, the
        operand's spots [real, past)."""
        ge, last = self.ge, len(self.o) - 1
        n = {k: ge.fresh(k) for k in ("spots", "starts", "real", "past", "col", "run", "i", "k")}
        # (an empty output row still gets one start: scratch sizes must not go negative)
        w.line(f"{n['starts']} = max({ge.dim(self.eqn.outputs[0], last)} - 1, 0) * {stride} + 1")
        w.line(f"{n['spots']} = {n['starts']} + ({window} - 1) * {dilation}")
        size = ge.dim(self.eqn.inputs[0], last)
        if low == "0":
            n["real"] = "0"
            w.line(f"{n['past']} = min({size}, {n['spots']})  # the operand's spots: [0, past)")
        else:
            w.line(f"{n['real']} = min(max({low}, 0), {n['spots']})  # the operand's spots")
            w.line(f"{n['past']} = min(max({low} + {size}, {n['real']}), {n['spots']})")
        return n

    def _fold_col(self, w: SourceWriter, taps: _Taps, n: dict[str, str], low: str) -> None:
        """col[i] = f(col[i], padded operand row at spot i) for one tap of the dims
        before the last: the init value on the padding (and on the whole row when the
        tap is off the operand: no operand spots, `on` = `off`), the operand's spots
        [on, off). Computed indices are unsigned (`u64`): numba's fix-up of a negative
        index would keep the loops from vectorizing, and these never are."""
        ge, i = self.ge, n["i"]
        on, off = n["real"], n["past"]
        if taps.checks:
            on, off = ge.fresh("on"), ge.fresh("off")
            w.line(f"{on}, {off} = ({n['real']}, {n['past']}) if "
                   f"{' and '.join(taps.checks)} else (0, 0)")
        last = self.eqn.params["padding"][-1]
        if taps.checks or last[0] > 0 or last[1] > 0:  # spots on the padding, if any
            spot = ge.fresh("spot")
            with w.block(f"for {i} in range({n['spots']} - ({off} - {on}))"):
                w.line(f"{spot} = {i} if {i} < {on} else {i} + {off} - {on}")
                self._fold_into(w, n["col"], f"u64({spot})", self.inits[0])
        with w.block(f"for {i} in range({off})" if on == "0" else
                     f"for {i} in range({on}, {off})"):
            where = i if low == "0" else f"u64({i} - {low})"
            value = Ref(load(self.xs[0], taps.index + [where], ge.mod), self.xs[0].aval)
            self._fold_into(w, n["col"], i if on == "0" else f"u64({i})", value)

    def _fold_run(self, w: SourceWriter, n: dict[str, str], dilation: str,
                  window: str) -> None:
        """run[i] = f(col[i], col[i + dilation], ...): the last dim's taps at spot i."""
        i, k = n["i"], n["k"]
        with w.block(f"for {i} in range({n['starts']})"):
            w.line(f"{n['run']}[{i}] = {n['col']}[{i}]")
        if self.eqn.params["window_dimensions"][-1] == 1:
            return
        with w.block(f"for {k} in range(1, {window})"):
            with w.block(f"for {i} in range({n['starts']})"):
                value = Ref(f"{n['col']}[u64({i} + {k} * {dilation})]", self.xs[0].aval)
                self._fold_into(w, n["run"], i, value)

    def _fold_into(self, w: SourceWriter, array: str, i: str, value: Ref) -> None:
        """array[i] = computation(array[i], value)."""
        ge, aval = self.ge, _scalar(self.xs[0].aval)
        current = _named(ge, w, f"{array}[{i}]", aval, "acc")
        [new] = _inline(ge, w, self.eqn.params["to_apply"], [current, Ref(value.name, aval)])
        w.line(f"{array}[{i}] = {new.name}")

    def registers(self, w: SourceWriter, parallel: bool) -> None:
        """Rank <= 1: accumulators in registers around the tap loops."""
        taps, names = _Taps(self.ge, self.eqn, self.o), [a.name for a in self.accs]

        def per_output() -> None:
            _assign(w, names, self.inits)
            taps.open(w, lambda: _assign(w, names, self.step(w, taps, self.accs)))
            if self.targets:
                self.store(w, self.accs)
        _nested(w, self.loops(), per_output, parallel)

    def store(self, w: SourceWriter, values: list[Ref]) -> None:
        for t, value in zip(self.targets, values, strict=True):
            w.line(f"{t.name}[{', '.join(self.o)}] = "
                   f"{store_value(value.name, t.aval.dtype, self.ge.mod)}")

    def step(self, w: SourceWriter, taps: _Taps, accs: list[Ref]) -> list[Ref]:
        """computation(accs, elements) for one tap (the init values off the operand)."""
        ge = self.ge
        values = [ge.fresh("x") for _ in self.xs]
        loads = [Ref(load(x, taps.index, ge.mod), x.aval) for x in self.xs]
        if taps.checks:
            with w.block(f"if {' and '.join(taps.checks)}"):
                _assign(w, values, loads)
            with w.block("else"):
                _assign(w, values, self.inits)
        else:
            _assign(w, values, loads)
        elements = [Ref(v, a.aval) for v, a in zip(values, accs, strict=True)]
        return _inline(ge, w, self.eqn.params["to_apply"], accs + elements)


# ------------------------------------------------------------------ select_and_scatter
def _select_and_scatter(ge: GraphEmitter, eqn: Eqn) -> None:
    operand, source, init = (ge.ref(a) for a in eqn.inputs)
    out = eqn.outputs[0]
    if not out.aval.ndim:  # one window holding the one element: it is picked
        new = _inline(ge, ge.w, eqn.params["scatter"], [init, source])
        ge.bind(out, _named(ge, ge.w, new[0].name, out.aval, "scattered"))
        return
    target = ge.alloc(out)
    ge.w.line(f"{target}[...] = {store_value(init.name, out.aval.dtype, ge.mod)}")
    src = eqn.inputs[1]
    o = [ge.fresh(f"o{d}") for d in range(src.aval.ndim)]
    work = src.aval.size * math.prod(eqn.params["window_dimensions"])
    parallel = eqn.params["window_dimensions"][0] == 1 and _parallel(ge, work)

    def write(w: SourceWriter) -> None:
        tap = _Taps(ge, eqn, o)
        _nested(w, [(o[d], ge.dim(src, d)) for d in range(len(o))],
                lambda: _scatter_window(ge, w, eqn, tap, operand, source, target, o),
                parallel)
    _emit(ge, parallel, "select_and_scatter", [operand.name, source.name, target], write)
    ge.bind(out, Ref(target, out.aval))


def _scatter_window(ge: GraphEmitter, w: SourceWriter, eqn: Eqn, tap: _Taps, operand: Ref,
                    source: Ref, target: str, o: list[str]) -> None:
    dtype = operand.aval.dtype
    have, best = ge.fresh("have"), ge.fresh("best")
    picked = [ge.fresh(f"pick{d}") for d in range(len(o))]
    w.line(f"{have} = False")
    w.line(f"{best} = {literal(0, dtype)}")
    # (int64 throughout: numba would unify a prange index with an int literal to float)
    _assign(w, picked, [Ref("i64(0)", operand.aval)] * len(picked))

    def candidate() -> None:
        value = _named(ge, w, load(operand, tap.index, ge.mod), operand.aval, "candidate")
        [keep] = _inline(ge, w, eqn.params["select"], [Ref(best, value.aval), value])
        with w.block(f"if not {have} or not {keep.name}"):
            w.line(f"{have} = True")
            w.line(f"{best} = {value.name}")
            _assign(w, picked, [Ref(f"i64({i})", operand.aval) for i in tap.index])

    def each_tap() -> None:
        if tap.checks:
            with w.block(f"if {' and '.join(tap.checks)}"):
                candidate()
        else:
            candidate()
    tap.open(w, each_tap)
    with w.block(f"if {have}"):
        out_ref = Ref(target, operand.aval)
        current = _named(ge, w, load(out_ref, picked, ge.mod), operand.aval, "current")
        value = _named(ge, w, load(source, o, ge.mod), operand.aval, "source")
        [new] = _inline(ge, w, eqn.params["scatter"], [current, value])
        w.line(f"{target}[{', '.join(picked)}] = {store_value(new.name, dtype, ge.mod)}")


# ------------------------------------------------------------------ map
def _map(ge: GraphEmitter, eqn: Eqn) -> None:
    refs = [ge.ref(a) for a in eqn.inputs]
    out = eqn.outputs[0]
    graph = eqn.params["to_apply"]
    if not out.aval.ndim:
        for v, r in zip(eqn.outputs, _inline(ge, ge.w, graph, refs), strict=True):
            ge.bind(v, r)
        return
    targets = [ge.alloc(v) for v in eqn.outputs]
    index = [ge.fresh(f"i{d}") for d in range(out.aval.ndim)]
    parallel = _parallel(ge, out.aval.size)

    def write(w: SourceWriter) -> None:
        def element() -> None:
            args = [_named(ge, w, load(r, index, ge.mod), r.aval, "x") for r in refs]
            for v, t, r in zip(eqn.outputs, targets, _inline(ge, w, graph, args), strict=True):
                w.line(f"{t}[{', '.join(index)}] = {store_value(r.name, v.aval.dtype, ge.mod)}")
        _nested(w, [(i, ge.dim(out, d)) for d, i in enumerate(index)], element, parallel)
    _emit(ge, parallel, "map", [r.name for r in refs] + targets, write)
    for v, t in zip(eqn.outputs, targets, strict=True):
        ge.bind(v, Ref(t, v.aval))


EMITTERS: dict[str, Any] = {
    "reduce_window": _reduce_window, "select_and_scatter": _select_and_scatter, "map": _map,
}

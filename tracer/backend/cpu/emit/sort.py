"""cpu emitter for sort.

Every operand is viewed as (outer, n, inner) around the sorted dimension, so one
code path serves every rank and dimension. Two strategies:

- The default comparator (ascending, total order, `num_keys` keys; recognised by
  `tracer.ops.sort.default_num_keys`) never calls a comparator. One operand of 32 or
  64 bits (16 where NumPy sorts those with SIMD: `sort_numpy.ITEMSIZES`; not complex,
  not float16) in rows of at least `sort_numpy.MIN_LENGTH` is sorted by
  NumPy's SIMD sort (`cpu.lib.sort_numpy`, which repairs NaN and signed-zero order;
  rows on threads, and one long row in parts on threads, then merged), except in
  code for a C library. Otherwise the kernels of
  `cpu.lib.sort` (a vectorized sorting network for many short rows, else a radix
  sort) sort total-order integer keys, in parallel over rows. One key
  sorts its values directly (`sort_rows`, with the permutation when other operands
  ride along); several keys, and complex keys (real part, then imaginary part), are
  a least-significant-key-first lexsort of a permutation (`refine_rows`). The
  riders are then moved by the permutation (`permute_rows`). A sort with
  `nan_keys` (the cpu lowering folded `tnp.sort`'s NaN-to-+NaN select into it)
  tells NumPy's kernel to write +NaN over the NaN tail; the other kernels sort a
  copy with its NaNs made +NaN (`canonical_nans`).
- Any other comparator: a stable bottom-up merge sort of a permutation, inlined
  here with the comparator's graph emitted at its one comparison point: the right
  run's head is taken only when comparator(right, left) holds, exactly as the
  reference `tracer.ops.sort.merge_sort_order` does.
"""

from __future__ import annotations

import math
from typing import Any

from ....core import Eqn, ShapedArray
from ....ops.sort import default_num_keys
from ...numba.codegen import GraphEmitter, Ref, load
from ...numba.scalar import HALVES
from ..lib.sort import PARALLEL_MIN_ELEMENTS
from ..lib.sort_numpy import ITEMSIZES, MIN_LENGTH, VECTOR_PARALLEL_MIN_BYTES

_LIB = "cpu.lib.sort"
_NUMPY_LIB = "cpu.lib.sort_numpy"


def _kernel(ge: GraphEmitter, eqn: Eqn, name: str, across_inner: bool = True,
            lib: str = _LIB) -> str:
    """The library kernel `name`, its `_parallel` form for large arrays of several rows
    (threads take the (outer, inner) positions, or the outer ones only when not
    `across_inner`) in graphs that may use threads: numba takes seconds to compile a
    parallel loop, so small arrays never pay for it."""
    shape, dim = eqn.inputs[0].aval.shape, eqn.params["dimension"]
    parts = math.prod(shape[:dim]) * (math.prod(shape[dim + 1:]) if across_inner else 1)
    parallel = ge.mod.parallel_ok and parts > 1 and \
        eqn.inputs[0].aval.size >= PARALLEL_MIN_ELEMENTS
    return ge.mod.use(f"{name}_parallel" if parallel else name, lib)


def _numpy_kernel(ge: GraphEmitter, eqn: Eqn) -> str:
    """NumPy's sort kernel: one long row (a single (outer, inner) position) in parts
    on threads and merged, many rows on threads, or serial."""
    aval, dim = eqn.inputs[0].aval, eqn.params["dimension"]
    if ge.mod.parallel_ok and aval.size == aval.shape[dim] and \
            aval.size * aval.dtype.itemsize >= VECTOR_PARALLEL_MIN_BYTES:
        return ge.mod.use("numpy_sort_vector_parallel", _NUMPY_LIB)
    return _kernel(ge, eqn, "numpy_sort_rows", lib=_NUMPY_LIB)


def _views(ge: GraphEmitter, eqn: Eqn) -> tuple[list[str], list[str], str]:
    """(3-D views of the operands, of fresh outputs, the shape tuple text)."""
    first, dim = eqn.inputs[0], eqn.params["dimension"]
    rank = first.aval.ndim
    outer = " * ".join(ge.dim(first, d) for d in range(dim)) or "1"
    inner = " * ".join(ge.dim(first, d) for d in range(dim + 1, rank)) or "1"
    shape = f"({outer}, {ge.dim(first, dim)}, {inner})"
    ins, outs = [], []
    for atom, var in zip(eqn.inputs, eqn.outputs, strict=True):
        out = ge.alloc(var)
        ge.bind(var, Ref(out, var.aval))
        for names, source, hint in ((ins, ge.ref(atom).name, "operand3"), (outs, out, "sorted3")):
            name = ge.fresh(hint)
            ge.w.line(f"{name} = {source}.reshape({shape})")
            names.append(name)
    return ins, outs, shape


def _sort(ge: GraphEmitter, eqn: Eqn) -> None:
    keys = default_num_keys(eqn.params["to_apply"])
    if keys:
        _key_sort(ge, eqn, keys)
    else:
        _merge_sort(ge, eqn)


def _half(atom: Any) -> str:
    return "True" if atom.aval.dtype in HALVES else "False"  # (bf16 bits order like f16's)


def _by_numpy(ge: GraphEmitter, eqn: Eqn) -> bool:
    """Whether NumPy's sort takes this key sort (see the module docstring): rows of at
    least MIN_LENGTH (shorter ones: the sorting network), in a module that runs in a
    Python process (`objmode_ok`): the kernels call NumPy's C sort, which a C library
    does not have."""
    first = eqn.inputs[0].aval
    return ge.mod.objmode_ok and len(eqn.inputs) == 1 and first.dtype.kind in "iuf" and \
        first.dtype not in HALVES and first.dtype.itemsize in ITEMSIZES and \
        first.shape[eqn.params["dimension"]] >= MIN_LENGTH


def _key_sort(ge: GraphEmitter, eqn: Eqn, keys: int) -> None:
    ins, outs, shape = _views(ge, eqn)
    first = eqn.inputs[0]
    nan_keys = bool(eqn.params.get("nan_keys"))
    if _by_numpy(ge, eqn):
        # (a run-time bool: a literal would be a compile of the kernel of its own)
        ge.w.line(f"{_numpy_kernel(ge, eqn)}({ins[0]}, {outs[0]}, bool({nan_keys}))")
        return
    if nan_keys:
        canonical = ge.fresh("nan_keys")
        ge.w.line(f"{canonical} = np.empty({shape}, {ins[0]}.dtype)")
        ge.w.line(f"{ge.mod.use('canonical_nans', _LIB)}({ins[0]}, {canonical})")
        ins[0] = canonical
    # a rank-1 operand is one row: sort_vector, whatever its size (never in parallel)
    sort_rows = ge.mod.use("sort_vector", _LIB) if first.aval.ndim == 1 else \
        _kernel(ge, eqn, "sort_rows")
    if len(ins) == 1 and first.aval.dtype.kind != "c":
        ge.w.line(f"{sort_rows}({ins[0]}, {outs[0]}, np.empty((0, 0, 0), np.int64), "
                  f"{_half(first)}, False)")
        return
    perm = ge.fresh("perm")
    ge.w.line(f"{perm} = np.empty({shape}, np.int64)")
    moved = list(range(len(ins)))
    if keys == 1 and first.aval.dtype.kind != "c":
        ge.w.line(f"{sort_rows}({ins[0]}, {outs[0]}, {perm}, {_half(first)}, True)")
        moved = moved[1:]
    else:
        _lexsort(ge, eqn, ins, keys, perm)
    permute = _kernel(ge, eqn, "permute_rows", across_inner=False)
    for k in moved:
        ge.w.line(f"{permute}({ins[k]}, {perm}, {outs[k]})")


def _lexsort(ge: GraphEmitter, eqn: Eqn, ins: list[str], keys: int, perm: str) -> None:
    """perm = the stable order by keys 0..keys-1: the least significant key first."""
    refine = _kernel(ge, eqn, "refine_rows")
    columns = []
    for k in range(keys):
        atom = eqn.inputs[k]
        parts = [".real", ".imag"] if atom.aval.dtype.kind == "c" else [""]
        columns += [(f"{ins[k]}{part}", _half(atom)) for part in parts]
    for j, (column, half) in enumerate(reversed(columns)):
        ge.w.line(f"{refine}({column}, {perm}, {half}, {j == 0})")


# ------------------------------------------------------------------ general comparators

def _merge_sort(ge: GraphEmitter, eqn: Eqn) -> None:
    ins, outs, _ = _views(ge, eqn)
    first, dim = eqn.inputs[0], eqn.params["dimension"]
    n = ge.dim(first, dim)
    o, i, k = ge.fresh("o"), ge.fresh("i"), ge.fresh("k")
    order, merged = ge.fresh("order"), ge.fresh("merged")
    ge.w.line(f"{order} = np.empty({n}, np.int64)")
    ge.w.line(f"{merged} = np.empty({n}, np.int64)")
    with ge.w.block(f"for {o} in range({ins[0]}.shape[0])"):
        with ge.w.block(f"for {i} in range({ins[0]}.shape[2])"):
            with ge.w.block(f"for {k} in range({n})"):
                ge.w.line(f"{order}[{k}] = {k}")
            _merge_passes(ge, eqn, ins, (o, i, n), (order, merged))
            with ge.w.block(f"for {k} in range({n})"):
                for x, out in zip(ins, outs, strict=True):
                    ge.w.line(f"{out}[{o}, {k}, {i}] = {x}[{o}, {order}[{k}], {i}]")


def _merge_passes(ge: GraphEmitter, eqn: Eqn, ins: list[str], row: tuple[str, str, str],
                  buffers: tuple[str, str]) -> None:
    """Merge runs of width 1, 2, 4, ... of `order` into `merged`, then swap the two."""
    n = row[2]
    order, merged = buffers
    width, lo, mid, hi = (ge.fresh(h) for h in ("width", "lo", "mid", "hi"))
    ge.w.line(f"{width} = 1")
    with ge.w.block(f"while {width} < {n}"):
        ge.w.line(f"{lo} = 0")
        with ge.w.block(f"while {lo} < {n}"):
            ge.w.line(f"{mid} = min({lo} + {width}, {n})")
            ge.w.line(f"{hi} = min({lo} + 2 * {width}, {n})")
            _merge(ge, eqn, ins, row, buffers, (lo, mid, hi))
            ge.w.line(f"{lo} = {hi}")
        ge.w.line(f"{order}, {merged} = {merged}, {order}")
        ge.w.line(f"{width} *= 2")


def _merge(ge: GraphEmitter, eqn: Eqn, ins: list[str], row: tuple[str, str, str],
           buffers: tuple[str, str], bounds: tuple[str, str, str]) -> None:
    o, i, _ = row
    order, merged = buffers
    lo, mid, hi = bounds
    a, b, k, take = ge.fresh("left"), ge.fresh("right"), ge.fresh("k"), ge.fresh("take_right")
    ge.w.line(f"{a}, {b} = {lo}, {mid}")
    with ge.w.block(f"for {k} in range({lo}, {hi})"):
        ge.w.line(f"{take} = {a} >= {mid}")
        with ge.w.block(f"if {a} < {mid} and {b} < {hi}"):
            params = []
            for x, atom in zip(ins, eqn.inputs, strict=True):
                scalar = ShapedArray((), atom.aval.dtype)
                for side, pos in (("lhs", b), ("rhs", a)):  # lhs: the right run's head
                    name = ge.fresh(side)
                    view = Ref(x, atom.aval.update(shape=(0, 0, 0)))
                    ge.w.line(f"{name} = {load(view, [o, f'{order}[{pos}]', i], ge.mod)}")
                    params.append(Ref(name, scalar))
            [less] = ge.sub_emitter().emit_graph(eqn.params["to_apply"], params)
            ge.w.line(f"{take} = {less.name}")
        with ge.w.block(f"if {take}"):
            ge.w.line(f"{merged}[{k}] = {order}[{b}]")
            ge.w.line(f"{b} += 1")
        with ge.w.block("else"):
            ge.w.line(f"{merged}[{k}] = {order}[{a}]")
            ge.w.line(f"{a} += 1")


EMITTERS: dict[str, Any] = {"sort": _sort}

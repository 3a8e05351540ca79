"""Index maps: how element `i` of an index op's result reads its operands, as data.

One record per index op in `INDEX_MAPS` (and `ELEMENTWISE` for the element-wise
families, which read their operands through the seeds' broadcasting). Both users
read the same record:

- the fusion plan (`reads`): which result index entry each operand dim follows, to
  know which elements of a materialized value a nest reads (None: an offset, a
  reversal, a broadcast or a choice: not one entry of the result's index);
- loop bodies (`index`): the operand's index expressions in generated code; `choose`
  for pad and concatenate, which pick per element which operand to read (or the
  padding value); `scalar` for iota, a function of the index alone.

A loop body passed as `body` is a `numba.loops.LoopBody`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ...core import Eqn
from .scalar import cast

Index = tuple[str, ...]        # index expressions of generated code, one per dim
Positions = tuple[Any, ...]    # per dim: an entry of the result's index, or None


@dataclass(frozen=True)
class IndexMap:
    """How an op's result element at an index reads its operands."""

    reads: Callable[[Eqn, int, Positions], Positions]
    index: Callable[[Any, Eqn, int, Index], Index] | None = None
    choose: Callable[[Any, Eqn, Index], str] | None = None
    scalar: Callable[[Any, Eqn, Index], str] | None = None


# ------------------------------------------------------------------ broadcasting

def _explicit_dims(eqn: Eqn, k: int) -> tuple[int, ...]:
    """broadcast_in_dim: operand dim j is result dim broadcast_dimensions[j]."""
    return tuple(eqn.params["broadcast_dimensions"])


def _implicit_dims(eqn: Eqn, k: int) -> tuple[int, ...]:
    """An element-wise op: a lower-rank operand follows its broadcast_dimensions (the
    seeds' broadcasting), an operand of the result's rank follows dim for dim."""
    ndim, rank = eqn.inputs[k].aval.ndim, eqn.outputs[0].aval.ndim
    dims = eqn.params.get("broadcast_dimensions") if ndim < rank else None
    return tuple(dims) if dims else tuple(range(ndim))


def _broadcast(dims_of: Callable[[Eqn, int], tuple[int, ...]]) -> IndexMap:
    """Operand dim j reads result dim dims[j]; a size-1 dim that broadcasts reads one
    element (None in `reads`, index 0 in code)."""
    def read(eqn: Eqn, k: int, out: Sequence[Any], fixed: Any) -> tuple[Any, ...]:
        shape, result = eqn.inputs[k].aval.shape, eqn.outputs[0].aval.shape
        return tuple(fixed if shape[j] == 1 and result[d] != 1 else out[d]
                     for j, d in enumerate(dims_of(eqn, k)))
    return IndexMap(reads=lambda eqn, k, out: read(eqn, k, out, None),
                    index=lambda body, eqn, k, index: read(eqn, k, index, "0"))


ELEMENTWISE = _broadcast(_implicit_dims)


# ------------------------------------------------------------------ permutations, reshapes

def _transposed(eqn: Eqn, k: int, out: Sequence[Any]) -> tuple[Any, ...]:
    perm = eqn.params["permutation"]
    return tuple(out[perm.index(d)] for d in range(len(perm)))


def _unit_reshaped(eqn: Eqn, k: int, out: Sequence[Any], fixed: Any) -> tuple[Any, ...]:
    """A reshape that adds or drops size-1 dims: the other dims keep their index."""
    big = iter(i for i, n in zip(out, eqn.outputs[0].aval.shape, strict=True) if n != 1)
    return tuple(fixed if n == 1 else next(big) for n in eqn.inputs[k].aval.shape)


def _rev_index(body: Any, eqn: Eqn, k: int, index: Index) -> Index:
    operand = eqn.inputs[k]
    return tuple(f"{body.dim(operand, d)} - 1 - ({i})" if d in eqn.params["dimensions"] else i
                 for d, i in enumerate(index))


# ------------------------------------------------------------------ slices

def _offsets(eqn: Eqn, k: int, out: Sequence[Any]) -> tuple[Any, ...]:
    """Every dim of the operand read at an offset (the start operands are scalars)."""
    return (None,) * eqn.inputs[k].aval.ndim


def _slice_index(body: Any, eqn: Eqn, k: int, index: Index) -> Index:
    """start + i * stride (a unit stride or a zero start is structure, not a size)."""
    out = []
    for d, i in enumerate(index):
        at = i
        if eqn.params["strides"][d] != 1:
            at = f"({i}) * {body.static_param(eqn, 'strides', d, 'stride')}"
        if eqn.params["start_indices"][d]:
            start = body.static_param(eqn, "start_indices", d, "start")
            at = body.shifted(f"{start} + {at}", at, "+", start)
        out.append(at)
    return tuple(out)


def _dynamic_slice_index(body: Any, eqn: Eqn, k: int, index: Index) -> Index:
    """The start clamped into [0, dim - size], plus i."""
    return tuple(f"{body.dynamic_start(eqn, d)} + {i}" for d, i in enumerate(index))


# ------------------------------------------------------------------ choices

def _pad_reads(eqn: Eqn, k: int, out: Sequence[Any]) -> tuple[Any, ...]:
    """An unpadded dim follows the result; the padding value is a scalar."""
    config = eqn.params["padding_config"] if k == 0 else ()
    return tuple(out[d] if tuple(c) == (0, 0, 0) else None for d, c in enumerate(config))


def _pad_choose(body: Any, eqn: Eqn, index: Index) -> str:
    """The operand where `index` falls on one of its elements, else the padding value."""
    operand, padding = eqn.inputs
    fill = body.value(padding, ())
    inner, tests, split = [], [], False
    for d, (i, (low, _, interior)) in enumerate(zip(index, eqn.params["padding_config"],
                                                   strict=True)):
        if (low, interior) == (0, 0) and operand.aval.shape[d] == eqn.outputs[0].aval.shape[d]:
            inner.append(i)
            continue
        low, size = body.param_at(eqn, "padding_config", (d, 0), "low"), body.dim(operand, d)
        if interior:
            step = f"({body.param_at(eqn, 'padding_config', (d, 2), 'interior')} + 1)"
            tests.append(f"{i} - {low} >= 0 and ({i} - {low}) % {step} == 0 and "
                         f"({i} - {low}) // {step} < {size}")
            inner.append(f"({i} - {low}) // {step}")
            continue
        at = body.shifted(f"{i} - {low}", i, "-", low)
        choice = None if split else body.site(eqn, index, i, [low, f"{low} + {size}"], [1, 0, 1])
        split = split or i in body.unit
        if choice == 1:
            return fill
        if choice is None:
            tests.append(f"0 <= {at} < {size}")
        inner.append(at)
    if not tests:
        return body.value(operand, tuple(inner))
    return body.choose("pad", [(" and ".join(tests), operand, tuple(inner)), (None, fill, ())])


def _concatenate_reads(eqn: Eqn, k: int, out: Sequence[Any]) -> tuple[Any, ...]:
    axis = eqn.params["dimension"]
    return tuple(None if d == axis else out[d] for d in range(eqn.inputs[k].aval.ndim))


def _concatenate_choose(body: Any, eqn: Eqn, index: Index) -> str:
    """The operand whose span along the axis holds the index."""
    axis = eqn.params["dimension"]
    i, start, ends, options = index[axis], "", [], []
    for k, operand in enumerate(eqn.inputs):
        size = body.dim(operand, axis)
        at = body.shifted(f"{i} - ({start})", i, "-", f"({start})") if k else i
        ends.append(f"{start} + {size}" if k else size)
        options.append((f"{i} < {ends[-1]}" if k < len(eqn.inputs) - 1 else None, operand,
                        index[:axis] + (at,) + index[axis + 1:]))
        start = ends[-1]
    if len(options) == 1:
        return body.value(*options[0][1:])
    choice = body.site(eqn, index, i, ends[:-1], list(range(len(options))))
    if choice is not None:
        return body.value(*options[choice][1:])
    return body.choose("concatenate", options)


# ------------------------------------------------------------------ the table

INDEX_MAPS: dict[str, IndexMap] = {
    "broadcast_in_dim": _broadcast(_explicit_dims),
    "transpose": IndexMap(reads=_transposed,
                          index=lambda body, eqn, k, index: _transposed(eqn, k, index)),
    "reshape": IndexMap(reads=lambda eqn, k, out: _unit_reshaped(eqn, k, out, None),
                        index=lambda body, eqn, k, index: _unit_reshaped(eqn, k, index, "0")),
    "rev": IndexMap(reads=lambda eqn, k, out: tuple(
                        None if d in eqn.params["dimensions"] else o for d, o in enumerate(out)),
                    index=_rev_index),
    "slice": IndexMap(reads=_offsets, index=_slice_index),
    "dynamic_slice": IndexMap(reads=_offsets, index=_dynamic_slice_index),
    "pad": IndexMap(reads=_pad_reads, choose=_pad_choose),
    "concatenate": IndexMap(reads=_concatenate_reads, choose=_concatenate_choose),
    "iota": IndexMap(reads=_offsets, scalar=lambda body, eqn, index: cast(
        body, index[eqn.params["dimension"]], eqn.outputs[0].aval.dtype)),
}
INDEX_OPS = frozenset(INDEX_MAPS)
ELEMENTWISE_FAMILIES = frozenset({"unary", "binary", "compare", "ternary"})


def index_map(eqn: Eqn) -> IndexMap | None:
    """The index map of a loop op (None: not an index op nor element-wise)."""
    if eqn.op.family in ELEMENTWISE_FAMILIES:
        return ELEMENTWISE
    return INDEX_MAPS.get(eqn.op.name)

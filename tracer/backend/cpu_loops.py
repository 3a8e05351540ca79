"""Loop bodies: the scalar code a loop nest computes, generated on demand.

Asking for a value at an index (a tuple of index expressions) either loads it
from memory, or emits the scalar code of its producer after asking for the
producer's operands at their mapped indices (`operand_index`: broadcasting,
transpose, reverse, slices, clamped dynamic slices, size-1 reshapes). Values are
cached per (value, index), so a value used twice at one index is computed once.
The loops themselves are written by `cpu_nests`.
"""

from __future__ import annotations

from typing import Sequence

from ..core import Atom, Eqn, Literal, Var
from .cpu_codegen import GraphEmitter, load, where
from .cpu_fusion import ELEMENTWISE_FAMILIES, Plan
from .cpu_scalar import SCALAR_EMITTERS, cast, literal
from .source import SourceWriter

Index = tuple[str, ...]


class LoopBody:
    """Scalar code for the values a loop nest needs, emitted into `w` on demand."""

    def __init__(self, ge: GraphEmitter, plan: Plan, w: SourceWriter, own: set[int],
                 free: dict[str, None], local: set[str]):
        self.ge = ge
        self.plan = plan
        self.w = w
        self.cache: dict[tuple[int, Index], str] = {}
        self.free = free    # outer names the body reads (parameters, if it becomes a kernel)
        self.local = local  # names defined by the loops themselves (shared by a row group)
        self.own = own      # values this nest stores: computed here, never loaded

    def use(self, helper: str) -> str:
        return self.ge.mod.use(helper)

    def outer(self, name: str) -> str:
        if name not in self.local:
            self.free[name] = None
        return name

    def define(self, name: str) -> str:
        """A name the nest's own code defines (never a parameter of its kernel)."""
        self.local.add(name)
        return name

    def dim(self, atom: Atom, axis: int) -> str:
        return self.outer(self.ge.dim(atom, axis))

    def value(self, atom: Atom, index: Index) -> str:
        """A scalar expression for `atom` at `index`."""
        if isinstance(atom, Literal) and atom.aval.ndim == 0:
            return literal(atom.value, atom.aval.dtype)
        key = (id(atom), index)
        if key not in self.cache:
            self.cache[key] = self._compute(atom, index)
        return self.cache[key]

    def remember(self, atom: Atom, index: Index, name: str) -> None:
        self.cache[(id(atom), index)] = name

    def _compute(self, atom: Atom, index: Index) -> str:
        if isinstance(atom, Literal) or (id(atom) in self.plan.materialized and
                                         id(atom) not in self.own):
            ref = self.ge.ref(atom)
            if ref.scalar and isinstance(atom, Literal):
                return ref.name
            self.outer(ref.name)
            if ref.scalar:
                return ref.name
            name = self.ge.mod.namer.fresh(f"{ref.name}_v", numbered=False)
            self.w.line(f"{name} = {load(ref, index, self.ge.mod)}")
            return name
        eqn = self.plan.producers[id(atom)]
        if eqn.op.family not in ELEMENTWISE_FAMILIES and eqn.op.name != "iota":
            return self.value(eqn.inputs[0], self.operand_index(eqn, 0, index))
        args = [self.value(a, self.operand_index(eqn, k, index))
                for k, a in enumerate(eqn.inputs)]
        expr = (cast(self, index[eqn.params["dimension"]], atom.aval.dtype)
                if eqn.op.name == "iota" else SCALAR_EMITTERS[eqn.op.name](self, eqn, args))
        name = self.ge.fresh(eqn.op.hlo_name)
        self.w.line(f"{name} = {expr}{_comment(eqn)}")
        return name

    def operand_index(self, eqn: Eqn, k: int, index: Index) -> Index:
        """The index of operand `k` that output element `index` of `eqn` reads."""
        operand, out = eqn.inputs[k], eqn.outputs[0]
        if operand.aval.ndim == 0:
            return ()
        name = eqn.op.name
        if eqn.op.family in ELEMENTWISE_FAMILIES:
            dims = eqn.params.get("broadcast_dimensions") if operand.aval.ndim < out.aval.ndim \
                else None
            return _broadcast(operand, out, dims or tuple(range(operand.aval.ndim)), index)
        if name == "broadcast_in_dim":
            return _broadcast(operand, out, eqn.params["broadcast_dimensions"], index)
        if name == "transpose":
            perm = eqn.params["permutation"]
            return tuple(index[perm.index(d)] for d in range(len(perm)))
        if name == "reshape":
            return _unit_reshape(operand.aval.shape, out.aval.shape, index)
        return self._mapped(eqn, operand, index)

    def _mapped(self, eqn: Eqn, operand: Atom, index: Index) -> Index:
        """rev, slice and dynamic_slice: per-dimension offsets from static/runtime values."""
        name, out = eqn.op.name, []
        for d, i in enumerate(index):
            if name == "rev":
                out.append(f"{self.dim(operand, d)} - 1 - ({i})" if d in eqn.params["dimensions"]
                           else i)
            elif name == "slice":
                start = self._static(eqn, "start_indices", d, "start")
                step = self._static(eqn, "strides", d, "stride")
                out.append(f"{start} + ({i}) * {step}")
            else:  # dynamic_slice: start clamped into [0, dim - size]
                out.append(f"{self._dynamic_start(eqn, d)} + {i}")
        return tuple(out)

    def _static(self, eqn: Eqn, param: str, d: int, hint: str) -> str:
        return self.outer(self.ge.mod.size(("param", id(eqn), param, d), eqn.params[param][d],
                                           hint))

    def _dynamic_start(self, eqn: Eqn, d: int) -> str:
        key = (id(eqn), ("start", str(d)))
        if key not in self.cache:
            start = self.value(eqn.inputs[1 + d], ())
            high = f"{self.dim(eqn.inputs[0], d)} - {self.dim(eqn.outputs[0], d)}"
            name = self.ge.fresh("start")
            self.w.line(f"{name} = {self.use('clamp_index')}({start}, {high})")
            self.cache[key] = name
        return self.cache[key]


def _broadcast(operand: Atom, out: Var, dims: Sequence[int], index: Index) -> Index:
    """Operand dim j reads output dim dims[j]; a size-1 dim that broadcasts reads 0."""
    return tuple("0" if operand.aval.shape[j] == 1 and out.aval.shape[d] != 1 else index[d]
                 for j, d in enumerate(dims))


def _unit_reshape(src: tuple[int, ...], dst: tuple[int, ...], index: Index) -> Index:
    big = iter(i for i, n in zip(index, dst, strict=True) if n != 1)
    return tuple("0" if n == 1 else next(big) for n in src)


def _comment(eqn: Eqn) -> str:
    text = where(eqn).strip()
    return f"  # {text[1:-1]}" if text else ""

"""Loop nests: one explicit loop nest per `LoopNest` of the fusion plan.

The body is generated on demand: asking for a value at an index (a tuple of
index expressions) either loads it from memory, or emits the scalar code of
its producer after asking for the producer's operands at their mapped indices
(`operand_index`). Values are cached per (value, index), so a value used twice
at one index is computed once.

Reductions: when the reduced dims come after every kept dim, the loop runs
kept dims outside and reduced dims inside with scalar accumulators; otherwise
the loop keeps the array's own order and accumulates in the output array. The
outermost loop becomes a `numba.prange` (in a separate `parallel=True` kernel)
when the nest is large and the graph calls no BLAS.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from ..core import Atom, Eqn, Literal, Var
from .cpu_codegen import PARALLEL_MIN_ELEMENTS, GraphEmitter, Ref, load, store_value, where
from .cpu_fusion import ELEMENTWISE_FAMILIES, LoopNest, Plan
from .cpu_scalar import SCALAR_EMITTERS, cast, literal
from .source import SourceWriter

Index = tuple[str, ...]


class LoopBody:
    """Scalar code for the values a loop nest needs, emitted into `w` on demand."""

    def __init__(self, ge: GraphEmitter, plan: Plan, w: SourceWriter):
        self.ge = ge
        self.plan = plan
        self.w = w
        self.cache: dict[tuple[int, Index], str] = {}
        self.free: dict[str, None] = {}  # outer names the body reads (kernel parameters)
        self.own: set[int] = set()       # values this nest stores: computed, never loaded

    def use(self, helper: str) -> str:
        return self.ge.mod.use(helper)

    def outer(self, name: str) -> str:
        self.free[name] = None
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
                out.append(f"{self.dim(operand, d)} - 1 - {i}" if d in eqn.params["dimensions"]
                           else i)
            elif name == "slice":
                start = self._static(eqn, "start_indices", d, "start")
                step = self._static(eqn, "strides", d, "stride")
                out.append(f"{start} + {i} * {step}")
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


# ------------------------------------------------------------------ nests

def emit_nest(ge: GraphEmitter, plan: Plan, nest: LoopNest) -> None:
    names = ", ".join(dict.fromkeys(e.op.hlo_name for e in nest.eqns))
    ge.w.comment(f"loop nest over {_shape_text(nest)}: {names}")
    if not nest.shape:
        _emit_scalars(ge, plan, nest)
        return
    outs = _allocate(ge, nest)
    parallel = _parallel(ge, nest)
    w = SourceWriter() if parallel else ge.w
    body = LoopBody(ge, plan, w)
    body.own = {id(v) for v in nest.stores}
    for name in outs.values():
        body.outer(name)
    _emit_loops(body, nest, outs, parallel)
    if parallel:
        _as_kernel(ge, body, w)


def _shape_text(nest: LoopNest) -> str:
    dims = ",".join(map(str, nest.shape))
    reduced = f", reducing dims {list(nest.reduce_dims)}" if nest.reduces else ""
    return f"[{dims}]{reduced}"


def _emit_scalars(ge: GraphEmitter, plan: Plan, nest: LoopNest) -> None:
    body = LoopBody(ge, plan, ge.w)
    body.own = {id(v) for v in nest.stores}
    for store in nest.stores:
        ge.bind(store, Ref(_named(body, store, ()), store.aval))
    for eqn in nest.reduces:  # reducing no dims of a scalar: one application
        n = len(eqn.outputs)
        inits = [ge.ref(a) for a in eqn.inputs[n:]]
        xs = [Ref(body.value(a, ()), eqn.outputs[j].aval) for j, a in enumerate(eqn.inputs[:n])]
        for v, r in zip(eqn.outputs, ge.sub_emitter().emit_graph(eqn.params["to_apply"],
                                                                 inits + xs), strict=True):
            ge.bind(v, r)


def _named(body: LoopBody, atom: Atom, index: Index) -> str:
    """The value as a variable (not a literal expression), so it can be bound."""
    value = body.value(atom, index)
    if value.isidentifier():
        return value
    name = body.ge.fresh("value")
    body.w.line(f"{name} = {value}")
    return name


def _allocate(ge: GraphEmitter, nest: LoopNest) -> dict[int, str]:
    """Arrays for the nest's stored values and its non-scalar reduce results."""
    outs = {}
    for v in nest.stores:
        outs[id(v)] = ge.alloc(v)
        ge.bind(v, Ref(outs[id(v)], v.aval))
    for eqn in nest.reduces:
        for v in eqn.outputs:
            if v.aval.ndim:
                outs[id(v)] = ge.alloc(v)
                ge.bind(v, Ref(outs[id(v)], v.aval))
    return outs


def _parallel(ge: GraphEmitter, nest: LoopNest) -> bool:
    if not ge.mod.parallel_ok or math.prod(nest.shape) < PARALLEL_MIN_ELEMENTS:
        return False
    return 0 not in nest.reduce_dims  # the outer loop must not be a reduced dim


def _emit_loops(body: LoopBody, nest: LoopNest, outs: dict[int, str], parallel: bool) -> None:
    rank = len(nest.shape)
    shape_atom = nest.stores[0] if nest.stores else nest.reduces[0].inputs[0]
    index = tuple(f"i{d}" for d in range(rank))
    kept = [d for d in range(rank) if d not in nest.reduce_dims]
    if not nest.reduces:
        _loops(body, shape_atom, list(range(rank)), parallel,
               lambda: _emit_body(body, nest, outs, index, kept, None))
    elif all(k < r for k in kept for r in nest.reduce_dims):
        def per_output() -> None:  # scalar accumulators around the reduced loops
            accs = _init_accumulators(body, nest)
            _loops(body, shape_atom, list(nest.reduce_dims), False,
                   lambda: _emit_body(body, nest, outs, index, kept, accs))
            _store_accumulators(body, nest, outs, tuple(index[d] for d in kept), accs)
        _loops(body, shape_atom, kept, parallel, per_output)
    else:  # reduced dims before kept ones: keep memory order, accumulate in the outputs
        _init_in_memory(body, nest, outs, kept, shape_atom, parallel)
        _loops(body, shape_atom, list(range(rank)), parallel,
               lambda: _emit_body(body, nest, outs, index, kept, None))


def _loops(body: LoopBody, shape_atom: Atom, dims: list[int], parallel: bool,
           inside: Callable[[], None]) -> None:
    """`for i<d> in range(n)` for each of `dims`, outermost first, around `inside()`."""
    if not dims:
        inside()
        return
    loop = "numba.prange" if parallel else "range"
    with body.w.block(f"for i{dims[0]} in {loop}({body.dim(shape_atom, dims[0])})"):
        _loops(body, shape_atom, dims[1:], False, inside)


def _emit_body(body: LoopBody, nest: LoopNest, outs: dict[int, str], index: Index,
               kept: list[int], accs: list[list[str]] | None) -> None:
    kept_index = tuple(index[d] for d in kept)
    reduces = iter(range(len(nest.reduces)))
    for root in _ordered_roots(nest):
        if isinstance(root, Var):
            value = body.value(root, index)
            body.w.line(f"{outs[id(root)]}[{', '.join(index)}] = "
                        f"{store_value(value, root.aval.dtype, body.ge.mod)}")
            continue
        k = next(reduces)
        n = len(root.outputs)
        scalars = [v.aval.update(shape=()) for v in root.outputs]
        xs = [Ref(body.value(a, index), s) for a, s in zip(root.inputs[:n], scalars, strict=True)]
        if accs is not None:
            current = [Ref(a, s) for a, s in zip(accs[k], scalars, strict=True)]
        else:
            current = [Ref(_load_acc(body, outs, v, kept_index), s)
                       for v, s in zip(root.outputs, scalars, strict=True)]
        new = body.ge.sub_emitter(body.w).emit_graph(root.params["to_apply"], current + xs)
        if accs is not None:
            body.w.line(f"{', '.join(accs[k])} = {', '.join(r.name for r in new)}")
            continue
        for v, r in zip(root.outputs, new, strict=True):
            body.w.line(f"{outs[id(v)]}[{', '.join(kept_index)}] = "
                        f"{store_value(r.name, v.aval.dtype, body.ge.mod)}")


def _ordered_roots(nest: LoopNest) -> list[Var | Eqn]:
    position = {id(e): i for i, e in enumerate(nest.eqns)}
    roots: list[tuple[int, Var | Eqn]] = []
    for v in nest.stores:
        producer = next(e for e in nest.eqns if any(o is v for o in e.outputs))
        roots.append((position[id(producer)], v))
    roots += [(position[id(e)], e) for e in nest.reduces]
    return [r for _, r in sorted(roots, key=lambda p: p[0])]


def _load_acc(body: LoopBody, outs: dict[int, str], v: Var, kept_index: Index) -> str:
    name = body.ge.fresh("acc")
    ref = Ref(outs[id(v)], v.aval)
    body.w.line(f"{name} = {load(ref, kept_index, body.ge.mod)}")
    return name


def _init_accumulators(body: LoopBody, nest: LoopNest) -> list[list[str]]:
    accs = []
    for eqn in nest.reduces:
        n = len(eqn.outputs)
        names = [body.ge.fresh("acc") for _ in range(n)]
        for name, init in zip(names, eqn.inputs[n:], strict=True):
            body.w.line(f"{name} = {body.value(init, ())}")
        accs.append(names)
    return accs


def _store_accumulators(body: LoopBody, nest: LoopNest, outs: dict[int, str],
                        kept_index: Index, accs: list[list[str]]) -> None:
    for eqn, names in zip(nest.reduces, accs, strict=True):
        for v, name in zip(eqn.outputs, names, strict=True):
            if v.aval.ndim:
                body.w.line(f"{outs[id(v)]}[{', '.join(kept_index)}] = "
                            f"{store_value(name, v.aval.dtype, body.ge.mod)}")
            else:
                body.ge.bind(v, Ref(name, v.aval))


def _init_in_memory(body: LoopBody, nest: LoopNest, outs: dict[int, str], kept: list[int],
                    shape_atom: Atom, parallel: bool) -> None:
    """Fill the reduce outputs with their init values (accumulation happens in memory)."""
    index = ", ".join(f"i{d}" for d in kept)

    def fill() -> None:
        for eqn in nest.reduces:
            n = len(eqn.outputs)
            for v, init in zip(eqn.outputs, eqn.inputs[n:], strict=True):
                value = store_value(body.value(init, ()), v.aval.dtype, body.ge.mod)
                body.w.line(f"{outs[id(v)]}[{index}] = {value}")
    _loops(body, shape_atom, kept, parallel, fill)


def _as_kernel(ge: GraphEmitter, body: LoopBody, w: SourceWriter) -> None:
    """Move a parallel loop nest into its own `parallel=True` function and call it."""
    name = ge.mod.namer.fresh("parallel_nest")
    params = ", ".join(body.free)
    kernel = SourceWriter()
    kernel.line('@numba.njit(cache=True, error_model="numpy", parallel=True)')
    with kernel.block(f"def {name}({params})"):
        kernel.embed(w)
    ge.mod.kernels.append(kernel)
    ge.mod.uses_parallel = True
    ge.w.line(f"{name}({params})")

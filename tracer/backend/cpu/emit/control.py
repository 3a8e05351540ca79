"""Emitters for control flow: `while`, `conditional`, `scan` and `call`.

Each becomes native Python control flow in the generated code, its sub-graphs
(loop condition and body, branches, the called graph) written inline, except a
large sub-graph that occurs more than once in the module's graph (the rejection
loops of `tracer.random.beta`'s two gamma samplers, a function called twice):
that one becomes its own `@numba.njit` function of the generated module, written
and compiled once. It is called with the sizes and array constants its code reads
and its inputs, and returns its outputs (arrays by reference).

Why only repeated ones: numba's compile time grows about linearly with the length
of the code (~10 ms a line), and a function called from another is optimized and
turned into machine code a second time, linked into its caller. So a function
pays for itself only by replacing copies of the same code: `beta(key, 2.0, 0.5,
(1000,))` compiles in 15 s instead of 28 s, while outlining the loop bodies of a
single gamma sampler made it slower (7.9 s instead of 7.4 s).
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

from ....core import Eqn, Graph, ShapedArray, Var, subgraphs
from ....hlo import graph_to_text
from ...numba.codegen import (
    GraphEmitter,
    ModuleBuilder,
    Param,
    Ref,
    copy_array,
    load,
    spell,
    store_value,
)
from ...numba.fusion import OpStep, RowGroup, plan_graph
from ...numba.scalar import DTYPE_ALIASES
from ...numba.source import Namer, SourceWriter
from ..options import NJIT_OPTIONS

# A repeated sub-graph of at least this many equations (nested ones included) becomes a
# function; a smaller one costs less to compile twice than to call.
OUTLINE_MIN_EQNS = 40
CONTROL_OPS = frozenset({"while", "conditional", "scan", "call"})

# Hints of the functions' names: they come from the module's namer even in a function, so
# they stay unique in the module and no local variable shadows them.
_MODULE_HINTS = ("while_cond", "while_body", "scan_body", "case_branch", "called_graph")
_DEF = re.compile(r"^def (\w+)\(", re.MULTILINE)


@dataclass
class _Survey:
    """Per module: which large control-flow sub-graphs repeat, and the functions so far."""

    repeated: set[str]                                   # their structures (HLO text)
    structures: dict[int, str] = field(default_factory=dict)  # id(graph) -> HLO text
    functions: dict[str, str] = field(default_factory=dict)   # function text -> name


_SURVEYS: weakref.WeakKeyDictionary[ModuleBuilder, _Survey] = weakref.WeakKeyDictionary()


def graph_size(graph: Graph) -> int:
    """Equations in `graph`, those of its nested sub-graphs included."""
    return sum(1 + sum(graph_size(g) for g in subgraphs(e.params)) for e in graph.eqns)


def _structure(survey: _Survey, graph: Graph) -> str:
    """The graph's HLO text, less its name (`branch_0`, `branch_1`, ...)."""
    if id(graph) not in survey.structures:
        text = graph_to_text(graph, "sub", metadata=False)
        survey.structures[id(graph)] = text.replace(f"ENTRY {graph.name} {{", "ENTRY {", 1)
    return survey.structures[id(graph)]


def _survey(mod: ModuleBuilder) -> _Survey:
    """Count the large control-flow sub-graphs by structure, as the code will hold them:
    the parts of a repeated one once (its function holds them once)."""
    if mod not in _SURVEYS:
        survey = _SURVEYS[mod] = _Survey(set())
        seen: set[str] = set()

        def visit(graph: Graph) -> None:
            for eqn in graph.eqns:
                for g in subgraphs(eqn.params):
                    if eqn.op.name in CONTROL_OPS and graph_size(g) >= OUTLINE_MIN_EQNS:
                        key = _structure(survey, g)
                        if key in seen:
                            survey.repeated.add(key)
                            continue
                        seen.add(key)
                    visit(g)
        if mod.graph is not None:
            visit(mod.graph)
    return _SURVEYS[mod]


class _ScopeNamer(Namer):
    """A function's local names (its `parallel=True` kernels' names too, until it is
    defined), except the names of functions (see `_MODULE_HINTS`)."""

    def __init__(self, module: Namer):
        super().__init__(reserved=["np", "numba", "math", "dims", "sizes",
                                   *DTYPE_ALIASES.values()])
        self.module = module

    def fresh(self, hint: str, numbered: bool = True) -> str:
        if hint.startswith(_MODULE_HINTS):
            return self.reserve(self.module.fresh(hint, numbered))
        return super().fresh(hint, numbered)


class FunctionScope:
    """What the emitters of a generated function's code see as `ge.mod`: the module's
    state (`ModuleBuilder`), but local names, and every size (`dims` symbol) and array
    constant the code reads becomes an argument the caller passes. The `parallel=True`
    kernels its code calls wait in `kernels` until the function is defined."""

    def __init__(self, parent: ModuleBuilder | FunctionScope):
        self.parent = parent
        self.root: ModuleBuilder = parent.root if isinstance(parent, FunctionScope) else parent
        self.namer = _ScopeNamer(self.root.namer)
        self.size_names: dict[tuple, str] = {}
        self.size_args: list[str] = []    # the caller's symbol of each size, in order
        self.params: list[Param] = []      # array constants, by their local names
        self.param_args: list[str] = []    # ... and by the caller's names
        self.kernels: list[SourceWriter] = []
        self.kernel_names: dict[str, str] = {}

    kernel = ModuleBuilder.kernel  # (into this function's `kernels`, by local names)

    @property
    def parallel_ok(self) -> bool:
        return self.root.parallel_ok

    @property
    def fuse(self) -> bool:
        return self.root.fuse

    @property
    def fallbacks(self) -> list[Any] | None:
        return self.root.fallbacks

    def use(self, helper: str, module: str | None = None) -> str:
        return self.root.use(helper, module)

    def wide_vectors(self, loop_body: str) -> str | None:
        return self.root.wide_vectors(loop_body)

    def size(self, key: tuple, value: int, hint: str = "n") -> str:
        if key not in self.size_names:
            self.size_args.append(self.parent.size(key, value, hint))
            self.size_names[key] = self.namer.reserve(f"{hint}{len(self.size_names)}")
        return self.size_names[key]

    def dim(self, atom: Any, axis: int) -> str:
        return self.size(("dim", *self.root.dimensions.key(atom, axis)), atom.aval.shape[axis])

    def param(self, hint: str, kind: str, **fields: Any) -> str:
        self.param_args.append(self.parent.param(hint, kind, **fields))
        self.params.append(Param(self.namer.fresh(hint), kind, **fields))
        return self.params[-1].name

    def fallback(self, eqn: Eqn, run: Any = None) -> tuple[str, int]:
        _, index = self.parent.fallback(eqn, run)
        return self.size(("fallback table",), 0, "fallback_table"), index


def _inlined(ge: GraphEmitter, graph: Graph) -> bool:
    """Whether `graph` is written inline (not a function: small, or not repeated)."""
    survey = _survey(ge.mod.root if isinstance(ge.mod, FunctionScope) else ge.mod)
    return graph_size(graph) < OUTLINE_MIN_EQNS or _structure(survey, graph) not in survey.repeated


def _apply_graph(ge: GraphEmitter, graph: Graph, role: str, refs: Sequence[Ref],
                 hints: Sequence[str], into: Sequence[Ref] | None = None,
                 buffers: dict[int, str] | None = None) -> list[Ref]:
    """Emit `graph` applied to `refs` (inline, or as a call of its function when it is large
    and repeated); its outputs, assigned to `into` if given. `buffers`: where the nests of
    an inline graph store the outputs it names (`_LoopBuffers`)."""
    if _inlined(ge, graph):
        sub = ge.sub_emitter()
        sub.carry_buffers = dict(buffers or {})
        outs = sub.emit_graph(graph, refs)
        if into:
            ge.w.line(f"{_names(into)} = {_names(outs)}")
        return list(into) if into is not None else outs
    call = _function_call(ge, graph, role, refs, hints)
    outs = list(into) if into is not None else [Ref(ge.fresh("out"), a)
                                                  for a in graph.out_avals]
    ge.w.line(f"{_names(outs)} = {call}" if outs else call)
    return outs


def _function_call(ge: GraphEmitter, graph: Graph, role: str, refs: Sequence[Ref],
                   hints: Sequence[str]) -> str:
    """Write `graph` as a function of the module (or find its twin); the call expression."""
    scope = FunctionScope(ge.mod)
    inputs = [Ref(scope.namer.fresh(h), r.aval) for r, h in zip(refs, hints, strict=True)]
    fallbacks = len(scope.fallbacks or ())
    code = SourceWriter()
    outs = type(ge)(scope, code).emit_graph(graph, inputs)
    code.line(f"return {_names(outs) or None}")
    body = SourceWriter()
    body.line(f'"""{role.replace("_", " ")}: ({", ".join(map(spell, graph.in_avals))}) -> '
              f'({", ".join(map(spell, graph.out_avals))})."""')
    names = list(scope.size_names.values())
    if names:
        body.line(f"{names[0]} = sizes[0]" if len(names) == 1 else f"{', '.join(names)} = sizes")
    body.embed(code)
    params = (["sizes"] if scope.size_args else []) + [p.name for p in scope.params]
    # (object mode, for an op run by its reference, cannot release the GIL)
    nogil = len(scope.fallbacks or ()) == fallbacks
    options = NJIT_OPTIONS if nogil else NJIT_OPTIONS.replace(", nogil=True", "")
    name = _define(scope, role, options, params + [r.name for r in inputs], body)
    sizes = ", ".join(scope.size_args) + ("," if len(scope.size_args) == 1 else "")
    args = ([f"({sizes})"] if scope.size_args else []) + scope.param_args
    return f"{name}({', '.join(args + [r.name for r in refs])})"


def _define(scope: FunctionScope, role: str, options: str, params: list[str],
            body: SourceWriter) -> str:
    """The name of the module's function with this text and kernels (written now if new,
    its kernels renamed to names unique in the module)."""
    mod = scope.root
    functions = _survey(mod).functions
    kernels = "".join(k.text() for k in scope.kernels)
    key = f"{options}\n{params}\n{body.text()}{kernels}"
    if key not in functions:
        functions[key] = mod.namer.fresh(role)
        names = {k: mod.namer.fresh(k.rstrip("0123456789").rstrip("_"))
                 for k in _DEF.findall(kernels)}
        w = SourceWriter()
        w.line(f"@numba.njit({options})")
        with w.block(f"def {functions[key]}({', '.join(params)})"):
            w.embed(body)
        for text in [k.text() for k in scope.kernels] + [w.text()]:
            mod.kernels.append(_writer(_renamed(text, names)))
    return functions[key]


def _renamed(text: str, names: dict[str, str]) -> str:
    if not names:
        return text
    return re.sub(rf"\b({'|'.join(map(re.escape, names))})\b", lambda m: names[m[1]], text)


def _writer(text: str) -> SourceWriter:
    w = SourceWriter()
    for line in text.splitlines():
        w.line(line)  # (indented already)
    return w


def _names(refs: Sequence[Ref]) -> str:
    return ", ".join(r.name for r in refs)


def _refs(ge: GraphEmitter, eqn: Eqn) -> list[Ref]:
    return [ge.ref(a) for a in eqn.inputs]


def _bind_all(ge: GraphEmitter, eqn: Eqn, refs: Sequence[Ref]) -> None:
    for v, r in zip(eqn.outputs, refs, strict=True):
        ge.bind(v, r)


def _carry(ge: GraphEmitter, eqn: Eqn, init: Sequence[Ref]) -> list[Ref]:
    """Fresh loop variables holding `init`, typed like the eqn's outputs."""
    refs = [Ref(ge.fresh("carry"), v.aval) for v in eqn.outputs[:len(init)]]
    if refs:
        ge.w.line(f"{_names(refs)} = {_names(init)}")
    return refs


class _LoopBuffers:
    """Two buffers per array carry of a loop, allocated once before it, when the body
    computes every array carry it returns in a loop nest of its own: the nest stores the
    carry into the first buffer, and the two names swap after each step. A step then
    never writes the buffer it reads, and the loop allocates nothing per step (an
    `np.empty` per step was a fifth of a 1,000-step loop over 16 elements). Any other
    array carry (a pass-through, an op's result, a view) could alias the buffer a step
    writes, so then no carry gets buffers."""

    def __init__(self, ge: GraphEmitter, body: Graph, carries: Sequence[Any],
                 results: Sequence[Any]):
        self.ge, self.by_var, self.pairs = ge, {}, []
        if not _carried_by_nests(ge, body, carries):
            return
        for out, result in zip(carries, results, strict=True):
            if out.aval.ndim:  # (local names: the swaps must not rename a parameter)
                pair = (ge.fresh("carry_buf"), ge.fresh("carry_buf"))
                ge.w.line(f"{', '.join(pair)} = {ge.alloc(result, 'carry_buf')}, "
                          f"{_second_buffer(ge, result)}")
                self.by_var[id(out)] = pair[0]
                self.pairs.append(pair)

    def swap(self) -> None:
        """After a step: its carries' buffers hold the carries, the others are free."""
        if self.pairs:
            firsts = ", ".join(a for a, _ in self.pairs)
            seconds = ", ".join(b for _, b in self.pairs)
            self.ge.w.line(f"{firsts}, {seconds} = {seconds}, {firsts}")


def _carried_by_nests(ge: GraphEmitter, body: Graph, carries: Sequence[Any]) -> bool:
    """Whether an inline `body` returns array carries, each a distinct value that one of
    its loop nests stores (planned as `emit_graph` will plan it)."""
    arrays = [a for a in carries if a.aval.ndim]
    if not arrays or not _inlined(ge, body) or not hasattr(ge, "carry_buffers"):
        return False
    plan = plan_graph(body, ge.mod.fuse, getattr(ge, "inline_indices", False))
    stored = {id(v) for step in plan.steps if not isinstance(step, OpStep)
              for nest in (step.nests if isinstance(step, RowGroup) else [step])
              for v in nest.stores}
    inputs = {id(v) for v in body.inputs}
    return all(isinstance(a, Var) and id(a) in stored and id(a) not in inputs
               and sum(b is a for b in carries) == 1 for a in arrays)


def _second_buffer(ge: GraphEmitter, var: Var) -> str:
    """Another buffer for `var`'s value (at the top level `alloc` may give the output's)."""
    if ge.top:
        return ge.mod.param("carry_buf", "buffer", value=var.aval)
    return ge.alloc(var, "carry_buf")


# ------------------------------------------------------------------ the emitters

def _while(ge: GraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    refs = _refs(ge, eqn)
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts = refs[:nc], refs[nc:nc + nb]
    carry = _carry(ge, eqn, refs[nc + nb:])
    buffers = _LoopBuffers(ge, p["body"], p["body"].outputs, eqn.outputs)
    with ge.w.block("while True"):
        [pred] = _apply_graph(ge, p["condition"], "while_cond", cconsts + carry,
                           ["x"] * nc + ["carry"] * len(carry))
        with ge.w.block(f"if not {pred.name}"):
            ge.w.line("break")
        _apply_graph(ge, p["body"], "while_body", bconsts + carry,
                  ["x"] * nb + ["carry"] * len(carry), into=carry, buffers=buffers.by_var)
        buffers.swap()
    _bind_all(ge, eqn, carry)


def _conditional(ge: GraphEmitter, eqn: Eqn) -> None:
    index, *operands = _refs(ge, eqn)
    branches = eqn.params["branch_computations"]
    results = [Ref(ge.fresh("result"), v.aval) for v in eqn.outputs]
    hints = ["operand"] * len(operands)
    if len(branches) == 1:
        _apply_graph(ge, branches[0], "case_branch", operands, hints, into=results)
    for k, graph in enumerate(branches if len(branches) > 1 else ()):
        last = k == len(branches) - 1
        header = "else" if last else f"{'if' if k == 0 else 'elif'} {index.name} == {k}"
        with ge.w.block(header):  # seed rule: an index out of range runs the last branch
            _apply_graph(ge, graph, "case_branch", operands, hints, into=results)
    _bind_all(ge, eqn, results)


def _scan(ge: GraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    refs = _refs(ge, eqn)
    nconsts, ncarry = p["num_consts"], p["num_carry"]
    consts, xs = refs[:nconsts], refs[nconsts + ncarry:]
    carry = _carry(ge, eqn, refs[nconsts:nconsts + ncarry])
    ys = [Ref(ge.alloc(v, "ys"), v.aval) for v in eqn.outputs[ncarry:]]
    buffers = _LoopBuffers(ge, p["body"], p["body"].outputs[:ncarry], eqn.outputs[:ncarry])
    length = ge.mod.size(("param", id(eqn), "length"), p["length"], "length")
    step, i = ge.fresh("step"), ge.fresh("i")
    with ge.w.block(f"for {step} in range({length})"):
        ge.w.line(f"{i} = {length} - 1 - {step}" if p["reverse"] else f"{i} = {step}")
        slices = [_slice_of(ge, x, i, p["body"].in_avals[nconsts + ncarry + k])
                  for k, x in enumerate(xs)]
        outs = _apply_graph(ge, p["body"], "scan_body", consts + carry + slices,
                         ["x"] * nconsts + ["carry"] * ncarry + ["row"] * len(xs),
                         buffers=buffers.by_var)
        for y, out in zip(ys, outs[ncarry:], strict=True):  # before the carry moves on
            if out.scalar:
                ge.w.line(f"{y.name}[{i}] = {store_value(out.name, y.aval.dtype, ge.mod)}")
            else:
                copy_array(ge, y.name, out.name, y.aval.ndim - 1, lead=[i])
        if carry:
            ge.w.line(f"{_names(carry)} = {_names(outs[:ncarry])}")
        buffers.swap()
    _bind_all(ge, eqn, carry + ys)


def _slice_of(ge: GraphEmitter, x: Ref, i: str, aval: ShapedArray) -> Ref:
    """Slice i of a scanned array: a scalar for a vector, else a view of its row."""
    name = ge.fresh(f"{x.name}_row")
    ge.w.line(f"{name} = {load(x, [i], ge.mod)}" if x.aval.ndim == 1 else f"{name} = {x.name}[{i}]")
    return Ref(name, aval)


def _call(ge: GraphEmitter, eqn: Eqn) -> None:
    graph = eqn.params["to_apply"]
    _bind_all(ge, eqn, _apply_graph(ge, graph, "called_graph", _refs(ge, eqn),
                                 ["arg"] * len(eqn.inputs)))


EMITTERS: dict[str, Any] = {"while": _while, "conditional": _conditional, "scan": _scan,
                            "call": _call}

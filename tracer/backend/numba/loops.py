"""Loop bodies: the scalar code a loop nest computes, generated on demand.

Asking for a value at an index (a tuple of index expressions) either loads it
from memory, or emits the scalar code of its producer after asking for the
producer's operands at their mapped indices (`operand_index`: broadcasting,
transpose, reverse, slices, clamped dynamic slices, size-1 reshapes). A pad or
concatenate picks by the index which operand to read (or the padding value),
reading only the one chosen. Values are cached per (value, index), so a value
used twice at one index is computed once. The loops themselves are written by
`cpu.nests`; the innermost one by `inner_loop` here, which computes what does not
depend on its variable in front of it, and cuts its range into runs where every
pad / concatenate choice made by its variable is fixed, each run with a body free
of tests. Loads and stores index with unsigned ints, so that numba adds no
negative-index correction, which would keep LLVM from vectorizing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product
from typing import Callable

from ...core import Atom, Eqn, Literal
from .codegen import GraphEmitter, load, where
from .fusion import Plan
from .index_maps import ELEMENTWISE, Index, index_map
from .scalar import SCALAR_EMITTERS, literal
from .source import SourceWriter

_LOOP_VAR = re.compile(r"i\d+")
Offset = tuple[tuple[str, str], ...]  # ("+" | "-", term) terms added to a loop variable


@dataclass(frozen=True)
class RowsAhead:
    """Arrays an earlier nest of a row group streamed, so the row a later nest reads is
    in cache: that nest's chunks prefetch the same columns of the next row instead
    (`helper` from `module`; the group's outer `depth` dims index the rows), so the next
    row's first pass, bound by memory, finds it there."""

    helper: str
    module: str
    depth: int
    names: frozenset[str]


@dataclass
class Site:
    """A pad / concatenate choice that the innermost loop's variable decides: with `q` the
    variable plus `offset`, it takes `branches[k]` while q < cuts[k] (and the last one
    beyond every cut)."""

    key: tuple[int, Index]
    offset: Offset
    cuts: list[str]
    branches: list[int]

    def at(self, var: str) -> str:
        return var + "".join(f" {sign} {term}" for sign, term in self.offset)

    def reaching(self, cut: str) -> str:
        """The variable's value at which q reaches `cut`."""
        return cut + "".join(f" {'-' if sign == '+' else '+'} {term}"
                             for sign, term in self.offset)


@dataclass
class SiteGroup:
    """Sites cut at the same places (same offset and cuts: the concatenates or pads of
    equal pieces a fused loop reads): between two cuts they all take one branch each, so
    one test serves them. `options`: the distinct tuples of their branches, one per run
    of iterations (a pad's two borders may take the same branch)."""

    sites: list[Site]
    options: list[tuple[int, ...]]

    @property
    def lead(self) -> Site:
        return self.sites[0]

    def option(self, k: int) -> int:
        """The option the sites take between cut k - 1 and cut k."""
        return self.options.index(tuple(s.branches[k] for s in self.sites))


def site_groups(sites: list[Site]) -> list[SiteGroup]:
    """`sites` grouped by where they cut the loop, in the order they were met."""
    groups: dict[tuple, list[Site]] = {}
    for site in sites:
        groups.setdefault((site.offset, tuple(site.cuts)), []).append(site)
    return [SiteGroup(g, sorted({tuple(s.branches[k] for s in g)
                                 for k in range(len(g[0].cuts) + 1)})) for g in groups.values()]


class LoopBody:
    """Scalar code for the values a loop nest needs, emitted into `w` on demand."""

    SCALARS = SCALAR_EMITTERS  # op name -> scalar expression writer

    def __init__(self, ge: GraphEmitter, plan: Plan, w: SourceWriter, own: set[int],
                 free: dict[str, None], local: set[str]):
        self.ge = ge
        self.plan = plan
        self.w = w
        self.cache: dict[tuple[int, Index], str] = {}
        self.free = free    # outer names the body reads (parameters, if it becomes a kernel)
        self.local = local  # names defined by the loops themselves (shared by a row group)
        self.own = own      # values this nest stores: computed here, never loaded
        self.unit: dict[str, Offset] = {}  # index expression -> its offset from the split variable
        self.sites: list[Site] | None = None  # choices found while surveying a loop
        self.assume: dict[tuple[int, Index], int] = {}  # choice -> branch in this loop copy
        self.run_var: str | None = None  # the variable of a run's loop (may start above 0)
        # The innermost loop's variable, and where values that do not depend on it go
        # (in front of the loop) with what was put there.
        self.inner: str | None = None
        self.hoist: SourceWriter | None = None
        self.hoisted: dict[tuple[int, Index], str] = {}
        # Arrays the innermost loop loads at the nest's own index, each element once in
        # memory order (name -> index), which `inner_loop` may prefetch.
        self.streams: dict[str, Index] | None = None
        self.streamed: set[str] = set()  # every array a loop of this body prefetched
        self.rows_ahead: RowsAhead | None = None

    def use(self, helper: str, module: str | None = None) -> str:
        return self.ge.mod.use(helper, module)

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

    def unsigned(self, index: Index) -> Index:
        """`index` for a load or store, its computed entries as unsigned ints: numba
        corrects a negative signed index (Python's `a[-1]`) with a select that keeps
        LLVM from vectorizing the loop, and ours are never negative. A plain loop
        variable counting up from 0 needs no cast (LLVM proves it is not negative)."""
        return tuple(i if i == "0" or (_LOOP_VAR.fullmatch(i) and i != self.run_var)
                     else f"u64({i})" for i in index)

    def value(self, atom: Atom, index: Index) -> str:
        """A scalar expression for `atom` at `index`."""
        if isinstance(atom, Literal) and atom.aval.ndim == 0:
            return literal(atom.value, atom.aval.dtype)
        key = (id(atom), index)
        if key in self.cache:
            return self.cache[key]
        hoist = self.hoist is not None and \
            not any(re.search(rf"\b{self.inner}\b", i) for i in index)
        w, self.w = self.w, (self.hoist if hoist else self.w)
        saved, self.hoist = self.hoist, (None if hoist else self.hoist)
        try:  # (in front of the innermost loop, if it does not depend on its variable)
            eqn = self._chooser(atom)
            self.cache[key] = self._compute(atom, index) if eqn is None else \
                index_map(eqn).choose(self, eqn, index)
        finally:
            self.w, self.hoist = w, saved
        if hoist:
            self.hoisted[key] = self.cache[key]
        return self.cache[key]

    def product(self, atom: Atom, index: Index) -> tuple[str, str] | None:
        """The factors of `atom` at `index` when the nest computes it as a product it
        has not computed yet (a sum can then add it with one fused multiply-add)."""
        if self._loaded(atom) or (id(atom), index) in self.cache:
            return None
        eqn = self.plan.producers[id(atom)]
        if eqn.op.name != "mul":
            return None
        lhs, rhs = (self.value(a, self.operand_index(eqn, k, index))
                    for k, a in enumerate(eqn.inputs))
        return lhs, rhs

    def _chooser(self, atom: Atom) -> Eqn | None:
        """The op computing `atom` here if it chooses an operand per element (pad,
        concatenate)."""
        if self._loaded(atom):
            return None
        eqn = self.plan.producers[id(atom)]
        mapping = index_map(eqn)
        return eqn if mapping is not None and mapping.choose is not None else None

    def _loaded(self, atom: Atom) -> bool:
        return isinstance(atom, Literal) or (id(atom) in self.plan.materialized and
                                             id(atom) not in self.own)

    def _expression(self, atom: Atom, index: Index) -> str | None:
        """`atom` at `index` as one expression, when it is a load (or already computed):
        what a conditional expression may hold, evaluated only when chosen."""
        if isinstance(atom, Literal) and atom.aval.ndim == 0:
            return literal(atom.value, atom.aval.dtype)
        if (id(atom), index) in self.cache:
            return self.cache[(id(atom), index)]
        if not self._loaded(atom):
            return None
        ref = self.ge.ref(atom)
        self.outer(ref.name)
        return ref.name if ref.scalar else load(ref, self.unsigned(index), self.ge.mod)

    def choose(self, hint: str, options: list[tuple[str | None, Atom | str, Index]]) -> str:
        """The first option whose test holds (the last has none): an operand at an index,
        or a scalar expression. Each is computed only when chosen (elsewhere its index
        may be out of bounds): one conditional expression when they are all loads,
        else if / elif / else blocks."""
        name = self.ge.fresh(hint)
        exprs = [v if isinstance(v, str) else self._expression(v, at) for _, v, at in options]
        if all(e is not None for e in exprs):
            text = exprs[-1]
            for (test, _, _), expr in zip(reversed(options[:-1]), reversed(exprs[:-1])):
                text = f"{expr} if {test} else {text}"
            self.w.line(f"{name} = {text}")
            return name
        hoist, self.hoist = self.hoist, None  # (nothing leaves a branch)
        for k, (test, v, at) in enumerate(options):
            saved = dict(self.cache)  # what a branch computes only exists there
            with self.w.block("else" if test is None else f"{'elif' if k else 'if'} {test}"):
                self.w.line(f"{name} = {v if isinstance(v, str) else self.value(v, at)}")
            self.cache = saved
        self.hoist = hoist
        return name

    # ---- splitting the innermost loop where pads / concatenates choose

    def shifted(self, new: str, i: str, sign: str, term: str) -> str:
        """Index expression `new`, which is `i` plus or minus `term`: if `i` is the split
        loop's variable plus an offset, so is `new`."""
        if i in self.unit:
            self.unit[new] = (*self.unit[i], (sign, term))
        return new

    def site(self, eqn: Eqn, index: Index, at: str, cuts: list[str],
              branches: list[int]) -> int | None:
        """The branch this loop copy takes for a choice by `at` (None: test it). While
        the loop is surveyed, records the choice if `at` is the loop variable plus an
        offset: the choice is then one branch over a run of iterations."""
        if at not in self.unit:
            return None
        key = (id(eqn), index)
        if self.sites is not None and all(s.key != key for s in self.sites):
            self.sites.append(Site(key, self.unit[at], cuts, branches))
        return self.assume.get(key)

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
            self.w.line(f"{name} = {load(ref, self.unsigned(index), self.ge.mod)}")
            if self.streams is not None and not ref.lead and index and \
                    index[-1] == self.inner and all(map(_LOOP_VAR.fullmatch, index)):
                self.streams.setdefault(ref.name, index)
            return name
        eqn = self.plan.producers[id(atom)]
        mapping = index_map(eqn)
        if mapping.scalar is not None:  # (a function of the index alone: iota)
            expr = mapping.scalar(self, eqn, index)
        elif mapping is not ELEMENTWISE:  # an index op: its operand, read elsewhere
            return self.value(eqn.inputs[0], self.operand_index(eqn, 0, index))
        else:
            expr = self.SCALARS[eqn.op.name](self, eqn, [
                self.value(a, self.operand_index(eqn, k, index)) for k, a in enumerate(eqn.inputs)])
        name = self.ge.fresh(eqn.op.hlo_name)
        self.w.line(f"{name} = {expr}{_comment(eqn)}")
        return name

    def operand_index(self, eqn: Eqn, k: int, index: Index) -> Index:
        """The index of operand `k` that output element `index` of `eqn` reads."""
        if eqn.inputs[k].aval.ndim == 0:
            return ()
        return index_map(eqn).index(self, eqn, k, index)

    def static_param(self, eqn: Eqn, param: str, d: int, hint: str) -> str:
        """The symbol of static int `eqn.params[param][d]`."""
        return self.outer(self.ge.mod.size(("param", id(eqn), param, d), eqn.params[param][d],
                                           hint))

    def param_at(self, eqn: Eqn, param: str, at: tuple[int, int], hint: str) -> str:
        """The symbol of static int `eqn.params[param][at[0]][at[1]]`."""
        value = eqn.params[param][at[0]][at[1]]
        return self.outer(self.ge.mod.size(("param", id(eqn), param, at), value, hint))

    def dynamic_start(self, eqn: Eqn, d: int) -> str:
        key = (id(eqn), ("start", str(d)))
        if key not in self.cache:
            start = self.value(eqn.inputs[1 + d], ())
            high = f"{self.dim(eqn.inputs[0], d)} - {self.dim(eqn.outputs[0], d)}"
            name = self.ge.fresh("start")
            # (of scalars alone: in front of the innermost loop, with the values hoisted)
            (self.hoist or self.w).line(f"{name} = {self.use('clamp_index')}({start}, {high})")
            self.cache[key] = name
            if self.hoist is not None:
                self.hoisted[key] = name
        return self.cache[key]


def _comment(eqn: Eqn) -> str:
    text = where(eqn).strip()
    return f"  # {text[1:-1]}" if text else ""


MAX_LOOP_COPIES = 8  # more combinations of choices than this keep their tests


def inner_loop(body: LoopBody, var: str, size: str, inside: Callable[[], None],
               prefetch: tuple[str, int] | None = None, parallel: bool = False) -> None:
    """`for var in range(size): inside()`, the innermost loop of a nest. What does not
    depend on `var` is computed in front of the loop. When pads / concatenates choose
    by `var` (a roll, a padded border), the range is cut into runs over which each
    choice is fixed, and each run gets a copy of the body without the tests, which
    LLVM can vectorize. `prefetch`: (helper, chunk), for a nest too large for the caches:
    the loop runs in chunks of `chunk` elements, each first calling the helper
    (`cpu.lib.prefetch.prefetch_ahead`) on every array the loop streams; chunk 0: the
    loop over a short row first calls it (`prefetch_rows_ahead`) with the row's start
    and length. `parallel`: the
    loop is a `numba.prange` (its chunks, when it prefetches), never cut into runs."""
    w, cache = body.w, dict(body.cache)
    body.w, body.unit, body.sites = SourceWriter(), {var: ()}, []
    body.inner, body.hoist, body.hoisted = var, SourceWriter(), {}
    body.streams = {} if prefetch else None
    inside()  # the survey: written aside, kept if nothing is to be split
    wide = body.ge.mod.wide_vectors(body.w.text())
    if wide is not None:  # (first in the loop's body: it reaches a prange's function too)
        inside = _first(body, wide, inside)
        surveyed, body.w = body.w, SourceWriter()
        body.w.line(wide)
        body.w.embed(surveyed)
    surveyed, sites, front, streams = body.w, body.sites, body.hoist, body.streams
    body.w, body.sites, body.hoist, body.streams = w, None, None, None
    w.embed(front)
    cache.update(body.hoisted)
    groups = site_groups(sites)
    combos = list(product(*(range(len(g.options)) for g in groups)))
    to_prefetch = streams if prefetch and not sites else {}
    if to_prefetch and prefetch[1]:
        _prefetched(body, var, size, to_prefetch, prefetch, cache, inside, parallel)
    elif not sites or len(combos) > MAX_LOOP_COPIES or parallel:
        for name, index in to_prefetch.items():  # (chunk 0: short rows, some rows ahead)
            w.line(f"{prefetch[0]}({name}, ({', '.join((*index[:-1], '0'))}), {size})")
        with w.block(f"for {var} in {'numba.prange' if parallel else 'range'}({size})"):
            w.embed(surveyed)
    else:
        _runs(body, var, size, groups, combos, cache, inside)
    body.cache, body.unit, body.assume, body.inner = cache, {}, {}, None


def _first(body: LoopBody, statement: str, inside: Callable[[], None]) -> Callable[[], None]:
    """`inside`, writing `statement` first."""
    def both() -> None:
        body.w.line(statement)
        inside()
    return both


def _prefetched(body: LoopBody, var: str, size: str, streams: dict[str, Index],
                prefetch: tuple[str, int], cache: dict, inside: Callable[[], None],
                parallel: bool) -> None:
    """The loop in chunks, each first prefetching the lines ahead of every stream (the
    chunk's loop starts above 0: its index is cast unsigned, as a run's is); with
    `parallel`, the chunks are a `numba.prange`."""
    (helper, chunk), w = prefetch, body.w
    start = body.ge.fresh(f"{var}_chunk")
    if parallel:
        k = body.ge.fresh(f"{var}_chunks")
        header = f"for {k} in numba.prange(({size} + {chunk - 1}) // {chunk})"
    else:
        header = f"for {start} in range(0, {size}, {chunk})"
    with w.block(header):
        if parallel:
            w.line(f"{start} = {k} * {chunk}")
        for name, index in streams.items():
            w.line(_prefetch_call(body, name, index, start, helper))
        body.streamed.update(streams)
        body.cache, body.unit, body.run_var = dict(cache), {var: ()}, var
        with w.block(f"for {var} in range({start}, min({start} + {chunk}, {size}))"):
            inside()
    body.run_var = None


def _prefetch_call(body: LoopBody, name: str, index: Index, start: str, helper: str) -> str:
    """The prefetch of a chunk's lines: ahead in this row, or (`RowsAhead`) in the next."""
    ahead, outer = body.rows_ahead, index[:-1]
    if ahead is None or name not in ahead.names or len(outer) < ahead.depth or \
            outer[:ahead.depth] != tuple(f"i{d}" for d in range(ahead.depth)):
        return f"{helper}({name}, ({', '.join((*outer, start))},))"
    row = ahead.depth - 1
    outer = (*outer[:row], f"{outer[row]} + 1", *outer[row + 1:])
    return f"{body.use(ahead.helper, ahead.module)}({name}, ({', '.join((*outer, start))},))"


def _runs(body: LoopBody, var: str, size: str, groups: list[SiteGroup],
          combos: list[tuple[int, ...]], cache: dict, inside: Callable[[], None]) -> None:
    w, ge = body.w, body.ge
    start, stop = ge.fresh(f"{var}_from"), ge.fresh(f"{var}_to")
    w.line(f"{start} = 0")
    with w.block(f"while {start} < {size}"):
        chosen, ends = [], []
        for group in groups:  # the option each group takes at `start`, and until where
            chosen.append(ge.fresh("branch"))
            ends.append(ge.fresh("until"))
            site = group.lead
            for k, cut in enumerate([*site.cuts, None]):
                with w.block("else" if cut is None else
                             f"{'elif' if k else 'if'} {site.at(start)} < {cut}"):
                    w.line(f"{chosen[-1]} = {group.option(k)}")
                    w.line(f"{ends[-1]} = {size if cut is None else site.reaching(cut)}")
        w.line(f"{stop} = min({size}, {', '.join(ends)})")
        for n, combo in enumerate(combos):
            test = " and ".join(f"{b} == {c}" for b, c in zip(chosen, combo, strict=True))
            last = n and n == len(combos) - 1
            with w.block("else" if last else f"{'elif' if n else 'if'} {test}"):
                body.cache = dict(cache)
                body.assume = {s.key: b for g, c in zip(groups, combo, strict=True)
                               for s, b in zip(g.sites, g.options[c], strict=True)}
                body.unit, body.run_var = {var: ()}, var
                with w.block(f"for {var} in range({start}, {stop})"):
                    inside()
        w.line(f"{start} = {stop}")
    body.run_var = None

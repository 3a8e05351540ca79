"""Helpers of `tests/test_ad_table.py`: the derivatives of every op-table case
against central finite differences, in float64.

`plan(name)` prepares a case once: its float inputs are widened to float64 /
complex128 (when the case has float32 constants of its own, it stays at its own
precision and the differences take a step and a tolerance fitted to it) and moved
to a random point near the case's own values — so the domain the case chose
(positive for log, SPD for cholesky) is kept, while ties and integer-valued floats
sitting on the kinks of max / sort / floor are broken. Random tangents v, w (each
element scaled like its input, so one relative step suits every element) and
cotangents u come from a seed derived from the case name (zlib.crc32).

The checks: `tr.jvp` against central differences on the output elements where the
function is differentiable (finite, and the two one-sided differences agree);
Re⟨vjp(u), v⟩ = Re⟨u, jvp(v)⟩ (the real pairing also holds for the R-linear maps
of complex numbers: conj, real, imag, abs); second order: the jvp of the jvp
against differences of the (exact) jvp, and the jvp of the vjp against the jvp of
the jvp through the same pairing.
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from tests.op_db import OpCase, all_cases
from tracer import jvp, vjp
from tracer.core import Graph, aval_of, subgraphs
from tracer.errors import TracerError
from tracer.ops import OPS
from tracer.tracing import trace_flat
from tracer.tree_util import tree_flatten

WIDE = {"f": np.float64, "c": np.complex128}
F64 = float(np.finfo(np.float64).eps)

# Ops whose JVP is deliberately not the derivative of their values (like JAX): the
# quantizer reduce_precision passes tangents straight through, while its values
# are piecewise constant. Outputs they feed are not compared with differences.
STRAIGHT_THROUGH = {"reduce_precision"}


def leaves(x: Any) -> list[Any]:
    return tree_flatten(x)[0]


def inexact(x: Any) -> bool:
    return np.asarray(x).dtype.kind in "fc"


def flat(fn: Callable[..., Any]) -> Callable[..., list[Any]]:
    return lambda *xs: leaves(fn(*xs))


def trace(fn: Callable[..., Any], args: Sequence[Any], name: str) -> Graph:
    graph, captured = trace_flat(flat(fn), [aval_of(a) for a in args], name)
    assert not captured
    return graph


def graph_ops(graph: Graph, found: set[str] | None = None) -> set[str]:
    found = set() if found is None else found
    for eqn in graph.eqns:
        found.add(eqn.op.name)
        for sub in subgraphs(eqn.params):
            graph_ops(sub, found)
    return found


def graph_dtypes(graph: Graph, found: set[np.dtype] | None = None) -> set[np.dtype]:
    """Every dtype a value of `graph` (or of its sub-graphs) has."""
    found = set() if found is None else found
    found.update(v.aval.dtype for v in graph.inputs)
    for eqn in graph.eqns:
        found.update(v.aval.dtype for v in eqn.outputs if v is not None)
        for sub in subgraphs(eqn.params):
            graph_dtypes(sub, found)
    return found


def paths(graph: Graph, diff_in: Sequence[bool]) -> tuple[list[bool], list[bool]]:
    """Per output: (a differentiable path reaches it from a float input, one of the
    paths runs through a STRAIGHT_THROUGH op). An op marked `differentiable=False`
    (stop_gradient, the rounding ops, rng) cuts the path: its tangent is zero."""
    carry = {id(v): (d, False) for v, d in zip(graph.inputs, diff_in, strict=True)}
    for eqn in graph.eqns:
        ins = [carry.get(id(a), (False, False)) for a in eqn.inputs]
        on = eqn.op.differentiable and any(c for c, _ in ins)
        through = on and (eqn.op.name in STRAIGHT_THROUGH or any(s for c, s in ins if c))
        for v in eqn.outputs:
            if v is not None:
                carry[id(v)] = (on, through)
    outs = [carry.get(id(a), (False, False)) for a in graph.outputs]
    return [c for c, _ in outs], [s for _, s in outs]


@functools.lru_cache(maxsize=None)
def zero_derivative_reason(name: str) -> str | None:
    """Why the derivative of case `name` is zero (None: it has one to check against
    finite differences). A graph without ops (a tuple of its inputs) has the identity's."""
    case = CASES[name]
    graph = trace(case.fn, case.args, case.name)
    found = graph_ops(graph)
    if found and not any(OPS[n].differentiable for n in found):
        return f"no differentiable op among {sorted(found)}"
    if not any(inexact(a) for a in case.args):
        return "no float input"
    if not any(a.dtype.kind in "fc" for a in graph.out_avals):
        return "no float output"
    return None


# ------------------------------------------------------------------------ planning
def seed_of(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def widen(x: Any) -> np.ndarray:
    a = np.asarray(x)
    return a.astype(WIDE[a.dtype.kind]) if a.dtype.kind in WIDE else a


def normal_like(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    out = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        out = out + 1j * rng.standard_normal(x.shape)
    return out.astype(x.dtype)


def near(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """A random point 2% (relative) and 0.01 (absolute) away from `x`."""
    moved = x * (1 + 0.02 * normal_like(rng, x).real) + 0.01 * normal_like(rng, x)
    return moved.astype(x.dtype)


def direction(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """A random tangent, each element as large as the input's (at least 1)."""
    size = np.where(np.isfinite(x), np.abs(x), 1)
    return (normal_like(rng, x) * np.maximum(1, size)).astype(x.dtype)


@dataclass
class Plan:
    """A case ready for checking. Integer and bool leaves keep their values and get
    zero tangents. `vp` (None: v itself) is v with zeros where vjp(u) is not finite
    (the inputs of NaN outputs, where u is zero): the pairings use it. `diffs`: the
    first-order differences along v. Tangents are scaled like the inputs, so the
    differences take one relative step."""

    case: OpCase
    fn: Callable[..., list[Any]]
    args: list[np.ndarray]
    v: list[np.ndarray]
    w: list[np.ndarray]
    u: list[np.ndarray]
    vp: list[np.ndarray] | None
    diff_in: list[bool]
    diff_out: list[bool]        # float outputs
    carried: list[bool]         # reached by a differentiable path (else: zero tangent)
    straight: list[bool]        # fed by a STRAIGHT_THROUGH op
    unit: float                 # the roundoff of the narrowest float dtype computed
    native: str                 # why the case is not widened ("" when it is)
    diffs: list[Diff] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.case.name

    @property
    def label(self) -> str:
        return f"{self.name} ({self.native})" if self.native else self.name

    @property
    def steps(self) -> tuple[float, float]:
        """Relative steps of the first- and second-order differences."""
        return (1e-6, 1e-5) if self.unit <= F64 else (self.unit ** (1 / 3),) * 2

    @property
    def rtol(self) -> tuple[float, float, float]:
        """Tolerances: jvp vs differences, second order vs differences, pairings."""
        if self.unit <= F64:
            return 1e-5, 1e-4, 1e-9
        # the roundoff of long float32 loops (while: 1000 adds) reaches the differences
        first = min(0.3, 100 * self.unit ** (2 / 3))
        return first, 3 * first, 100 * self.unit


def widened(case: OpCase) -> tuple[list[np.ndarray], Graph, str]:
    """The case's arguments in float64, or in their own dtypes with the reason."""
    wide = [widen(a) for a in case.args]
    try:
        return wide, trace(case.fn, wide, case.name), ""
    except TracerError as e:
        first = str(e).splitlines()[0]
        native = [np.asarray(a) for a in case.args]
        return native, trace(case.fn, native, case.name), f"kept its own dtypes: {first}"


@functools.lru_cache(maxsize=None)
def plan(name: str, reverse: bool = True) -> Plan:
    """The plan of the case called `name` (`reverse=False`: its vjp raises)."""
    case = CASES[name]
    rng = seed_of(name)
    start, graph, native = widened(case)
    args = [near(rng, a) if inexact(a) else a for a in start]
    diff_in = [inexact(a) for a in args]
    fn = flat(case.fn)
    with np.errstate(all="ignore"):
        outs = [np.asarray(o) for o in fn(*args)]
    diff_out = [inexact(o) for o in outs]
    zero = np.zeros_like
    v = [direction(rng, a) if d else zero(a) for a, d in zip(args, diff_in)]
    w = [direction(rng, a) if d else zero(a) for a, d in zip(args, diff_in)]
    u = [np.where(np.isfinite(o), normal_like(rng, o), 0).astype(o.dtype) if d else zero(o)
         for o, d in zip(outs, diff_out)]
    vp = None
    if reverse:
        with np.errstate(all="ignore"):
            cts = vjp(fn, *args)[1](u)
        if not all(np.isfinite(c).all() for c in cts):
            vp = [np.where(np.isfinite(c), x, 0).astype(x.dtype) for c, x in zip(cts, v)]
    carried, straight = paths(graph, diff_in)
    units = [np.finfo(d).eps for d in graph_dtypes(graph) if d.kind in "fc"]
    p = Plan(case, fn, args, v, w, u, vp, diff_in, diff_out, carried, straight,
             float(max(units)), native)
    p.diffs = differences(fn, p, v, p.steps[0])
    return p


CASES = {c.name: c for c in all_cases()}


# ------------------------------------------------------------------ the derivatives
def first_order(p: Plan, args: Sequence[Any], v: Sequence[Any], vp: Sequence[Any] | None,
                u: Sequence[Any] | None) -> tuple[list[Any], list[Any], list[Any] | None]:
    """(jvp along v, jvp along vp, vjp of u) at args by the public transformations
    (vp None: the same as v; u None: no reverse mode); traceable, so `jit` compiles it."""
    tans = jvp(p.fn, tuple(args), tuple(v))[1]
    tans_p = tans if vp is None else jvp(p.fn, tuple(args), tuple(vp))[1]
    cts = None if u is None else list(vjp(p.fn, *args)[1](list(u)))
    return tans, tans_p, cts


def tangent_fn(p: Plan) -> Callable[..., list[Any]]:
    """x ↦ the float outputs' jvp along vp (or v) at x."""
    v = tuple(p.v if p.vp is None else p.vp)

    def g(*xs: Any) -> list[Any]:
        tans = jvp(p.fn, xs, v)[1]
        return [t for t, d in zip(tans, p.diff_out) if d]
    return g


def cotangent_fn(p: Plan) -> Callable[..., list[Any]]:
    """x ↦ the float inputs' vjp of u at x."""
    def h(*xs: Any) -> list[Any]:
        cts = vjp(p.fn, *xs)[1](p.u)
        return [c for c, d in zip(cts, p.diff_in) if d]
    return h


def pairing(a: Sequence[Any], b: Sequence[Any]) -> tuple[float, float]:
    """(Re Σ a·b, Σ |a||b|): the real pairing and the size of its terms; a zero
    factor cancels a non-finite one (u is zero at NaN outputs)."""
    total, size = 0.0, 0.0
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x, np.complex128), np.asarray(y, np.complex128)
        with np.errstate(all="ignore"):
            prod = np.where((x == 0) | (y == 0), 0, x * y)
        total += float(np.sum(prod).real)
        size += float(np.sum(np.abs(prod)))
    return total, size


def assert_pairs(a: tuple[float, float], b: tuple[float, float], rtol: float,
                 what: str) -> None:
    assert abs(a[0] - b[0]) <= rtol * (a[1] + b[1]) + 1e-300, (what, a, b)


# -------------------------------------------------------------- finite differences
@dataclass
class Diff:
    """Central differences of one output, where they are meaningful (`mask`: finite,
    and both one-sided differences agree), and their roundoff (`atol`)."""

    fd: np.ndarray
    mask: np.ndarray
    atol: float


def differences(g: Callable[..., list[Any]], p: Plan, dirs: Sequence[np.ndarray], h: float
                ) -> list[Diff]:
    """The differences of each output of g at p.args along dirs, with step h."""
    def at(t: float) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            xs = [(a + t * d).astype(a.dtype) if f else a
                  for a, d, f in zip(p.args, dirs, p.diff_in)]
            return [np.asarray(o, np.complex128) for o in g(*xs)]

    out = []
    with np.errstate(all="ignore"):
        for m, hi, lo in zip(at(0.0), at(h), at(-h), strict=True):
            fwd, bwd, central = (hi - m) / h, (m - lo) / h, (hi - lo) / (2 * h)
            finite = np.isfinite(m) & np.isfinite(hi) & np.isfinite(lo)
            big = np.max(np.abs(np.where(finite, central, 0)), initial=0.0)
            noise = 8 * p.unit * np.max(np.abs(np.where(finite, m, 0)), initial=0.0) / h
            smooth = np.abs(fwd - bwd) <= 1e-2 * (np.abs(fwd) + np.abs(bwd)) + 1e-4 * big + noise
            out.append(Diff(central, finite & smooth, noise))
    return out


def assert_close(got: Any, want: Diff, rtol: float, what: str) -> None:
    got = np.asarray(got, np.complex128)
    assert got.shape == want.fd.shape, (what, got.shape, want.fd.shape)
    if not want.mask.any():
        return
    g, w = got[want.mask], want.fd[want.mask]
    bad = ~(np.abs(g - w) <= rtol * (np.abs(w) + np.max(np.abs(w))) + want.atol)
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {g.size} checked elements differ; "
                           f"got {g[bad][:4]} want {w[bad][:4]}")


# ------------------------------------------------------------------------ the checks
def only(xs: Sequence[Any], keep: Sequence[bool]) -> list[Any]:
    return [x for x, k in zip(xs, keep, strict=True) if k]


def check_first_order(p: Plan, result: tuple[list[Any], list[Any], list[Any] | None],
                      what: str, unchecked: Sequence[int] = ()) -> None:
    """jvp against the differences (outputs with no differentiable path: exactly
    zero), then the pairing of vjp and jvp (not through a STRAIGHT_THROUGH op, whose
    tangent map quantizes). `unchecked`: outputs whose values are not a function of
    the input (LAPACK picks one of many answers), so no differences."""
    tans, tans_p, cts = result
    rtol, _, rtol_pair = p.rtol
    for i, (t, float_out) in enumerate(zip(tans, p.diff_out, strict=True)):
        if not float_out:
            continue
        if not p.carried[i]:
            assert not np.any(np.asarray(t)), f"{what}: output {i} has no differentiable path"
        elif not p.straight[i] and i not in unchecked:
            assert_close(t, p.diffs[i], rtol, f"{what}: jvp of output {i}")
    if cts is not None and not any(p.straight):  # a quantized tangent is not linear
        vp = p.v if p.vp is None else p.vp
        assert_pairs(pairing(only(cts, p.diff_in), only(vp, p.diff_in)),
                     pairing(only(p.u, p.diff_out), only(tans_p, p.diff_out)),
                     rtol_pair, f"{what}: <vjp(u), v> != <u, jvp(v)>")


def check_second_order(p: Plan, reverse: bool, unchecked: Sequence[int] = ()) -> None:
    """jvp of the jvp against differences of the jvp; then jvp of the vjp paired with
    v against u paired with the jvp of the jvp (both are u·D²f[w, v])."""
    _, rtol, rtol_pair = p.rtol
    g = tangent_fn(p)
    gg = jvp(g, tuple(p.args), tuple(p.w))[1]
    floats = [i for i, d in enumerate(p.diff_out) if d]
    for i, t, diff in zip(floats, gg, differences(g, p, p.w, p.steps[1]), strict=True):
        if i not in unchecked:
            assert_close(t, diff, rtol, f"{p.label}: jvp of jvp of output {i}")
    if reverse:
        hh = jvp(cotangent_fn(p), tuple(p.args), tuple(p.w))[1]
        vp = p.v if p.vp is None else p.vp
        assert_pairs(pairing(hh, only(vp, p.diff_in)), pairing(only(p.u, p.diff_out), gg),
                     rtol_pair * 10, f"{p.label}: <jvp of vjp(u), v> != <u, jvp of jvp(v)>")

"""Derivatives of every op-table case (tests/op_db.py): for each case whose graph
has a differentiable op and a float input, in float64 at a random point near the
case's values (tests/ad_table_support.py says how it is chosen):

- `tr.jvp` against central differences, where the function is differentiable;
  outputs no differentiable path reaches have exactly zero tangents;
- ⟨vjp(u), v⟩ = ⟨u, jvp(v)⟩ to 1e-9 (relative to the terms);
- second order: jvp of jvp against differences of the jvp, and jvp of vjp
  against jvp of jvp through the same pairing;
- first order again under `jit(backend="interpreter")` (the optimized graphs) and,
  for one case per differentiable op, `jit(backend="cpu")`, six cases per compile
  (TRACER_AD_TABLE_CPU=all: every case, several minutes of numba compiles).

Derivatives that raise on purpose are asserted to raise a `TracerError`. A case with
no differentiable op, no float input or no float output has a zero derivative: random
tangents move no output and random cotangents reach no input.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import tracer as tr
from tests.ad_table_support import (CASES, Plan, check_first_order, check_second_order,
                                    first_order, graph_ops, plan, seed_of, trace,
                                    zero_derivative_reason)
from tests.checks import random_array
from tracer.errors import TracerError
from tracer.ops import OPS
from tracer.tree_util import tree_leaves, tree_map

# case -> (the first derivative that raises on purpose, why)
RAISES = {
    "custom_call:seed": ("jvp", "a custom-call target has no derivative rule"),
    "custom_call:two_results": ("jvp", "a custom-call target has no derivative rule"),
    "pure_callback:pytree_sequential": ("jvp", "a host callback is opaque Python: use "
                                               "custom_jvp (as pure_callback:custom_jvp_sin)"),
    "io_callback:result": ("jvp", "an io_callback with float results has no derivative"),
    "custom_lin": ("jvp", "custom_lin is already the forward mode of a custom_vjp, whose bwd "
                          "supports one reverse pass"),
    "custom_vjp_call": ("second", "a custom_vjp bwd supports one reverse pass only"),
    "reduce:sum_of_squares_fold": ("jvp", "reduce of a general computation (acc + x*x)"),
    "scatter:one_by_one": ("jvp", "scatter of a general computation (dynamic_slice)"),
    "scatter:variadic": ("jvp", "variadic scatter combining with (add, max)"),
    "reduce_window:seed_argmax_variadic": ("vjp", "a general window computation "
                                                  "(compare, select) is not transposable"),
    "reduce_window:non_elementwise_computation": ("vjp", "a general window computation "
                                                         "(reshape) is not transposable"),
    "select_and_scatter:non_elementwise_select": ("vjp", "a general select computation"),
}

# case -> (outputs whose values are not a function of the input, why): differences
# would measure LAPACK's choice among equally valid answers, not a derivative.
NON_UNIQUE = {
    "eigh:upper_no_symmetrize_c64": ((0,), "complex eigenvectors: any phase is valid"),
    "svd:full_tall": ((0,), "u's columns beyond the rank: any basis of the complement"),
    "svd:reduced_wide_c128": ((0, 2), "complex singular vectors: any phase is valid"),
}

# Bugs in rule files of other groups, reported to the lead (not fixed here).
KNOWN_BUGS: dict[str, str] = {}

ALL = list(CASES.values())


def _stage(name: str) -> str:
    return RAISES.get(name, ("", ""))[0]


def _mark(case: Any) -> Any:
    if case.name in KNOWN_BUGS:
        return pytest.param(case, id=case.name,
                            marks=pytest.mark.xfail(reason=KNOWN_BUGS[case.name], strict=True))
    return pytest.param(case, id=case.name)


def _inputs(p: Plan) -> tuple[Any, ...]:
    """first_order's arguments: no cotangents where reverse mode raises on purpose."""
    return p.args, p.v, p.vp, (p.u if _stage(p.name) != "vjp" else None)


@pytest.mark.parametrize("case", [_mark(c) for c in ALL])
def test_derivatives_match_finite_differences(case: Any) -> None:
    if zero_derivative_reason(case.name) is not None:
        _assert_zero_derivative(case)
        return
    stage = _stage(case.name)
    if stage == "jvp":
        _assert_raises(case)
        return
    p = plan(case.name, reverse=stage != "vjp")
    unchecked = NON_UNIQUE.get(p.name, ((),))[0]
    check_first_order(p, first_order(p, *_inputs(p)), p.label, unchecked)
    if stage == "vjp":
        with pytest.raises(TracerError):
            first_order(p, p.args, p.v, None, p.u)
    if stage == "second":
        with pytest.raises(TracerError):
            check_second_order(p, reverse=False)
        return
    check_second_order(p, stage != "vjp", unchecked)


def _random_like(rng: np.random.Generator, x: Any) -> np.ndarray:
    """Random values of x's shape and float dtype; zeros of any other dtype (what
    tracer takes as the tangent of an integer or a bool)."""
    x = np.asarray(x)
    return random_array(rng, x.shape, x.dtype) if x.dtype.kind in "fc" else np.zeros_like(x)


def _assert_zero_derivative(case: Any) -> None:
    """A case whose derivative is zero (`zero_derivative_reason`): random tangents of its
    float inputs move no output, random cotangents of its float outputs reach no input."""
    rng = seed_of(case.name)
    args = tuple(np.asarray(a) for a in case.args)
    _, tangents = tr.jvp(case.fn, args, tuple(_random_like(rng, a) for a in args))
    assert not any(np.any(np.asarray(t)) for t in tree_leaves(tangents)), tangents
    out, pullback = tr.vjp(case.fn, *args)
    cotangents = pullback(tree_map(lambda o: _random_like(rng, o), out))
    assert not any(np.any(np.asarray(c)) for c in tree_leaves(cotangents)), cotangents


def _assert_raises(case: Any) -> None:
    args = [np.asarray(a) for a in case.args]
    zeros = tuple(np.zeros_like(a) for a in args)
    with pytest.raises(TracerError):
        tr.jvp(case.fn, tuple(args), zeros)
    with pytest.raises(TracerError):
        tr.vjp(case.fn, *args)


def test_the_exception_tables_name_cases() -> None:
    assert set(RAISES) | set(NON_UNIQUE) | set(KNOWN_BUGS) <= set(CASES)


# ------------------------------------------------------------------ under jit
def _checkable() -> list[str]:
    return [c.name for c in ALL if zero_derivative_reason(c.name) is None
            and _stage(c.name) != "jvp" and c.name not in KNOWN_BUGS]


def _one_per_op(names: list[str]) -> list[str]:
    """The first case of each differentiable op (by the ops its graph holds)."""
    covered: set[str] = set()
    picked = []
    for name in names:
        case = CASES[name]
        found = {n for n in graph_ops(trace(case.fn, case.args, name)) if OPS[n].differentiable}
        if found - covered:
            picked.append(name)
            covered |= found
    return picked


def _batches(names: list[str], size: int) -> list[Any]:
    groups = [names[i:i + size] for i in range(0, len(names), size)]
    return [pytest.param(g, id=f"{g[0]}..{g[-1]}") for g in groups]


CHECKABLE = _checkable()
# numba compiles dominate: the cpu backend gets one case per differentiable op, six
# per compile (compile time grows faster than the graph); TRACER_AD_TABLE_CPU=all
# compiles every case (minutes).
ON_CPU = CHECKABLE if os.environ.get("TRACER_AD_TABLE_CPU") == "all" else _one_per_op(CHECKABLE)


def _run_jitted(names: list[str], backend: str) -> None:
    plans = [plan(n, reverse=_stage(n) != "vjp") for n in names]
    packed = [_inputs(p) for p in plans]

    def all_first_orders(packed: list[Any]) -> list[Any]:
        return [first_order(p, *a) for p, a in zip(plans, packed, strict=True)]

    results = tr.jit(all_first_orders, backend=backend)(packed)
    for p, result in zip(plans, results, strict=True):
        check_first_order(p, result, f"{p.label} under jit({backend})",
                          NON_UNIQUE.get(p.name, ((),))[0])


@pytest.mark.parametrize("names", _batches(CHECKABLE, 25))
def test_first_order_under_jit_interpreter(names: list[str]) -> None:
    _run_jitted(names, "interpreter")


@pytest.mark.skipif("cpu" not in tr.devices(), reason="no cpu backend (numba)")
@pytest.mark.parametrize("names", _batches(ON_CPU, 6))
def test_first_order_under_jit_cpu(names: list[str]) -> None:
    _run_jitted(names, "cpu")


def test_every_differentiable_op_is_checked_on_cpu() -> None:
    covered: set[str] = set()
    for name in ON_CPU:
        covered |= graph_ops(trace(CASES[name].fn, CASES[name].args, name))
    missing = {n for n, op in OPS.items() if op.differentiable} - covered
    assert missing <= {"custom_call", "custom_lin"}, sorted(missing)  # they raise: RAISES

"""Derivatives at operand positions no op-table case reaches (issue #5).

An instrumented run of the suite (the ops' jvp / transpose rules wrapped to record which
operands carried tangents or were undefined) showed every differentiable op checked by
tests/test_ad_table.py, but some operands never differentiated: the update of a 0-d
dynamic_update_slice, the second operand of a custom_vjp call, the consts, extra carries
and xs of scan / while / cond bodies, the operands of a checkpoint beyond the first. The
cases in tests/operand_cases.py reach them; here they go through the table's own checks
(tests/ad_table_support.py): jvp against central differences in float64, the pairing
<vjp(u), v> = <u, jvp(v)>, second order (jvp of jvp against differences, jvp of vjp
through the pairing), and first order again under jit on the interpreter and cpu.
"""

from __future__ import annotations

from typing import Any

import pytest

import tracer as tr
from tests import ad_table_support as support
from tests import operand_cases
from tracer.errors import TracerError

CASES = {c.name: c for c in operand_cases.CASES}
# the table's own reason: a custom_vjp bwd supports one reverse pass only
FIRST_ORDER_ONLY = {"custom_vjp_call:two_operands"}
NOT_DIFFERENTIABLE = {"rng_normal:array_sigma"}
# cpu: the call-like ops and the 0-d / array-start updates in one compile (~10 s);
# tests/test_ad_table.py already compiles scan / while / conditional / reduce /
# reduce_window derivatives on cpu, and numba compiles of loop derivatives are slow
ON_CPU = ["custom_vjp_call:two_operands", "checkpoint:three_operands_and_closure",
          "dynamic_update_slice:scalar", "dynamic_update_slice:array_starts_3d"]


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operand cases in the table support's registry (where `plan` and
    `zero_derivative_reason` look)."""
    for name, case in CASES.items():
        monkeypatch.setitem(support.CASES, name, case)


def test_names_are_new() -> None:
    assert not set(CASES) & set(support.CASES)


@pytest.mark.parametrize("name", [n for n in CASES if n not in NOT_DIFFERENTIABLE])
def test_derivatives_match_finite_differences(name: str, registered: None) -> None:
    assert support.zero_derivative_reason(name) is None
    p = support.plan(name)
    support.check_first_order(p, support.first_order(p, p.args, p.v, p.vp, p.u), p.label)
    if name in FIRST_ORDER_ONLY:
        with pytest.raises(TracerError):
            support.check_second_order(p, reverse=False)
        return
    support.check_second_order(p, reverse=True)


def test_rng_normal_has_a_zero_derivative(registered: None) -> None:
    reason = support.zero_derivative_reason("rng_normal:array_sigma")
    assert reason is not None and "no differentiable op" in reason


def _jitted(names: list[str], backend: str) -> None:
    plans = [support.plan(n) for n in names]
    packed = [(p.args, p.v, p.vp, p.u) for p in plans]

    def all_first_orders(packed: list[Any]) -> list[Any]:
        return [support.first_order(p, *a) for p, a in zip(plans, packed, strict=True)]

    results = tr.jit(all_first_orders, backend=backend)(packed)
    for p, result in zip(plans, results, strict=True):
        support.check_first_order(p, result, f"{p.label} under jit({backend})")


def test_first_order_under_jit_interpreter(registered: None) -> None:
    _jitted([n for n in CASES if n not in NOT_DIFFERENTIABLE], "interpreter")


@pytest.mark.skipif("cpu" not in tr.devices(), reason="no cpu backend (numba)")
def test_first_order_under_jit_cpu(registered: None) -> None:
    _jitted(ON_CPU, "cpu")

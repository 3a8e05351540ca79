"""Rules of sort (tracer/ops/sort_rules.py): the JVP against central finite
differences (values drawn distinct, so a small step keeps the permutation), with
integer riders and symbolic-zero tangents; batching against loop-and-stack for
every batch axis (unbatched operands broadcast); gradients through jit and vmap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.ops.sort_rules  # noqa: F401  # installs the rules under test
from tests.test_rules_shape import aval, bdims, check_batch, check_jvp, eqn_for, seeded
from tracer import ops
from tracer.ops import OPS
from tracer.ops.ad import Zero

EXAMPLES = settings(max_examples=15, deadline=None)


def distinct(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values whose absolute values are at least 1 apart, of random signs."""
    size = int(np.prod(shape))
    signs = rng.choice([-1.0, 1.0], size)
    return (signs * (rng.permutation(size) + 1) * 1.5).reshape(shape)


def _abs_descending(a: Any, b: Any, *_: Any) -> Any:
    return ops.gt(ops.abs(a), ops.abs(b))


@st.composite
def sorts(draw: Any) -> dict[str, Any]:
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    custom = draw(st.booleans())
    return dict(shape=shape, dimension=draw(st.integers(-len(shape), len(shape) - 1)),
                comparator=_abs_descending if custom else None,
                riders=draw(st.integers(0, 2)), stable=draw(st.booleans()))


def _sort_fn(case: dict[str, Any]) -> Any:
    return lambda *xs: ops.sort(xs, comparator=case["comparator"],
                                dimension=case["dimension"], is_stable=case["stable"])


def _operands(rng: np.random.Generator, case: dict[str, Any]) -> list[np.ndarray]:
    """The float key, float riders, and an int rider (it never carries a tangent)."""
    shape = case["shape"]
    floats = [distinct(rng, shape)] + [rng.standard_normal(shape) for _ in range(case["riders"])]
    return floats + [rng.integers(0, 9, shape).astype(np.int32)]


@EXAMPLES
@given(sorts(), st.data())
def test_sort_jvp(case: dict[str, Any], data: Any) -> None:
    rng = seeded(data)
    args = _operands(rng, case)
    op, params = eqn_for("sort", _sort_fn(case), *args)
    diff = set(range(len(args) - 1))  # the int rider gets a Zero tangent
    check_jvp(op, params, args, diff, rng)
    check_jvp(op, params, args, set(range(1, len(args) - 1)), rng)  # riders only


@EXAMPLES
@given(sorts(), st.data())
def test_sort_batch(case: dict[str, Any], data: Any) -> None:
    rng = seeded(data)
    args = _operands(rng, case)
    op, params = eqn_for("sort", _sort_fn(case), *args)
    make = lambda r: _operands(r, case)  # noqa: E731
    check_batch(op, params, make, bdims(data, args), rng)


def test_all_zero_tangents_stay_zero() -> None:
    x = np.float64([3.0, 1.0, 2.0])
    op, params = eqn_for("sort", ops.sort, x)
    out, tangents = op.jvp([x], [Zero(aval(x))], **params)
    np.testing.assert_array_equal(out[0], [1.0, 2.0, 3.0])
    assert isinstance(tangents[0], Zero)


def test_grad_of_sorted_weights_under_jit_and_vmap() -> None:
    """d/dx sum(sort(x) * w) puts w[rank(x_i)] at i; vmap maps it over rows."""
    x = np.float64([[0.5, -2.0, 3.0, 1.0], [4.0, 3.0, 2.0, 1.0]])
    w = np.float64([1.0, 10.0, 100.0, 1000.0])
    loss = lambda row: ops.reduce(ops.mul(ops.sort(row), w), 0.0, ops.add, [0])  # noqa
    want = np.float64([[10.0, 1.0, 1000.0, 100.0], [1000.0, 100.0, 10.0, 1.0]])
    for fn in (tr.vmap(tr.grad(loss)), tr.jit(tr.vmap(tr.grad(loss)))):
        np.testing.assert_array_equal(fn(x), want)


def test_sort_has_its_rules() -> None:
    op = OPS["sort"]
    assert op.jvp is not None and op.batch is not None
    assert not op.linear and op.differentiable

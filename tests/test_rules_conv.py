"""Rules of conv_general_dilated (tracer/ops/conv_rules.py), checked like the shape
rules: the JVP against central finite differences (float64), both transposes through
<ct, L(v)> = <L^T(ct), v>, batching against loop-and-stack for every combination of
mapped operands, each rule also run traced. Configurations are random: layouts,
negative padding, strides, both dilations, feature and batch groups, 0 to 3 spatial
dimensions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer.ops.conv_rules  # noqa: F401  # installs the rules under test
from tests.test_ops_conv import conv_configs, conv_of, operands
from tests.test_rules_shape import (bdims, check_batch, check_jvp, check_transpose, eqn_for,
                                    seeded)
from tracer import ops
from tracer.ops import OPS
from tracer.ops.ad import UndefinedPrimal

EXAMPLES = settings(max_examples=25, deadline=None)


@EXAMPLES
@given(conv_configs(), st.data())
def test_jvp(cfg: dict[str, Any], data: Any) -> None:
    rng = seeded(data)
    x, w = operands(cfg, rng)
    op, params = eqn_for("conv_general_dilated", conv_of(cfg), x, w)
    check_jvp(op, params, [x, w], data.draw(st.sampled_from([{0, 1}, {0}, {1}])), rng)


@EXAMPLES
@given(conv_configs(), st.data())
def test_transpose_lhs_and_rhs(cfg: dict[str, Any], data: Any) -> None:
    rng = seeded(data)
    x, w = operands(cfg, rng)
    op, params = eqn_for("conv_general_dilated", conv_of(cfg), x, w)
    check_transpose(op, params, [x, w], {0}, rng)
    check_transpose(op, params, [x, w], {1}, rng)


@EXAMPLES
@given(conv_configs(max_spatial=2), st.data())
def test_batch(cfg: dict[str, Any], data: Any) -> None:
    rng = seeded(data)
    x, w = operands(cfg, rng)
    op, params = eqn_for("conv_general_dilated", conv_of(cfg), x, w)
    check_batch(op, params, lambda r: operands(cfg, r), bdims(data, [x, w]), rng)


GROUPED = {"plain": dict(fgc=1, bgc=1), "feature": dict(fgc=2, bgc=1),
           "batch": dict(fgc=1, bgc=2)}


@pytest.mark.parametrize("groups", sorted(GROUPED))
@pytest.mark.parametrize("dims", [(0, None), (3, None), (None, 0), (None, 2), (1, 3), (0, 0)])
def test_batch_every_mapped_operand_and_group_kind(groups: str,
                                                   dims: tuple[int | None, int | None]) -> None:
    g = GROUPED[groups]
    rng = np.random.default_rng(len(groups) + 7 * sum(d or 0 for d in dims))
    x = rng.standard_normal((2 * g["bgc"], 3 * g["fgc"], 5))
    w = rng.standard_normal((4, 3, 2))
    dn = ("NCH", "OIH", "NHC")  # a non-default output layout moves the out spec around
    fn = lambda a, b: ops.conv_general_dilated(  # noqa: E731
        a, b, (2,), [(1, 0)], dimension_numbers=dn, feature_group_count=g["fgc"],
        batch_group_count=g["bgc"])
    op, params = eqn_for("conv_general_dilated", fn, x, w)
    make = lambda r: [r.standard_normal(x.shape), r.standard_normal(w.shape)]  # noqa: E731
    check_batch(op, params, make, list(dims), rng)


@pytest.mark.parametrize("dims", [(0, None), (None, 2), (1, 0)])
def test_batch_of_zero_examples(dims: tuple[int | None, int | None]) -> None:
    x, w = np.ones((2, 3, 5)), np.ones((4, 3, 2))
    op, params = eqn_for("conv_general_dilated",
                         lambda a, b: ops.conv(a, b, (1,), "VALID"), x, w)
    args = [np.ones(a.shape[:d] + (0,) + a.shape[d:]) if d is not None else a
            for a, d in zip((x, w), dims)]
    out, out_dim = op.batch(args, list(dims), **params)
    assert np.shape(out) == (0, 2, 4, 4) and out_dim == 0


def test_transpose_with_empty_operand_is_zero() -> None:
    x, w = np.ones((0, 3, 5)), np.ones((4, 3, 2))
    op, params = eqn_for("conv_general_dilated",
                         lambda a, b: ops.conv(a, b, (1,), "VALID"), x, w)
    ct = np.ones((0, 4, 4))
    _, dw = op.transpose(ct, x, UndefinedPrimal(tracer_aval(w)), **params)
    np.testing.assert_array_equal(dw, np.zeros_like(w))


def tracer_aval(x: np.ndarray) -> Any:
    from tracer.core import ShapedArray
    return ShapedArray(x.shape, x.dtype)


def test_op_has_all_its_rules() -> None:
    op = OPS["conv_general_dilated"]
    assert op.linear and op.jvp and op.transpose and op.batch

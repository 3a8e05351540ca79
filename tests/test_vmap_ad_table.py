"""vmap of every op-table case's derivatives against loop-and-stack (issue #5:
`jit(vmap(grad(f)))` for every op, not only for hand-picked functions).

For each case tests/test_ad_table.py checks (same plans, tests/ad_table_support.py):
`first_order` — the jvp along v and the vjp of u — evaluated under
`jit(vmap(...), backend="interpreter")` on a batch of two points, two tangents and two
cotangents, equals the two un-batched evaluations stacked. This runs the batching rules
of every op the JVP and transpose rules emit (the pads, select_and_scatters, gathers
and scatters of a reduce_window's or a sort's derivative, ...), which the op table alone
never batches. Twenty-five cases per jit, as in tests/test_ad_table.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tracer as tr
from tests import ad_table_support as support
from tests.test_ad_table import CHECKABLE, _batches, _stage
from tracer.transforms.api_vmap import vmap
from tracer.tree_util import tree_flatten


def _batched_inputs(p: support.Plan) -> tuple[list[Any], list[Any], list[Any] | None]:
    """Two points (the plan's and one 2% away), two tangents, two cotangents; integer
    inputs stay the same in both."""
    rng = support.seed_of("batched " + p.name)
    args = [np.stack([a, support.near(rng, a) if d else a]) for a, d in zip(p.args, p.diff_in)]
    vs = [np.stack([v, support.direction(rng, a) if d else v])
          for v, a, d in zip(p.v, p.args, p.diff_in)]
    us = None if _stage(p.name) == "vjp" else [np.stack([u, 2 * u]) for u in p.u]
    return args, vs, us


def _first_order(p: support.Plan) -> Any:
    return lambda a, v, u: support.first_order(p, a, v, None, u)


@pytest.mark.parametrize("names", _batches(CHECKABLE, 25))
def test_jit_vmap_of_derivatives_matches_loop_and_stack(names: list[str]) -> None:
    plans = [support.plan(n, reverse=_stage(n) != "vjp") for n in names]
    inputs = [_batched_inputs(p) for p in plans]

    def all_cases(inputs: list[Any]) -> list[Any]:
        return [vmap(_first_order(p))(*i) for p, i in zip(plans, inputs, strict=True)]

    with np.errstate(all="ignore"):
        got = tr.jit(all_cases, backend="interpreter")(inputs)
        for p, (a, v, u), g in zip(plans, inputs, got, strict=True):
            per = [tree_flatten(_first_order(p)([x[k] for x in a], [x[k] for x in v],
                                                None if u is None else [x[k] for x in u]))[0]
                   for k in range(2)]
            leaves = tree_flatten(g)[0]
            assert len(leaves) == len(per[0]), p.name
            for i, leaf in enumerate(leaves):
                np.testing.assert_allclose(np.asarray(leaf), np.stack([per[0][i], per[1][i]]),
                                           rtol=1e-9, atol=1e-12, equal_nan=True,
                                           err_msg=f"{p.label}: leaf {i} of (jvp, jvp, vjp)")

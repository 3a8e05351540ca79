"""vmap against loop-and-stack for every op-table case with several array operands, with
each operand batched ALONE and then with all of them batched (issue #5).

tests/test_vmap.py maps a random subset of the operands (each with probability 0.6, two
trials per case); an instrumented run of the suite showed operand positions that no test
ever batched on their own (the second operand of call / checkpoint / composite /
custom_vjp_call, rng_normal's sigma, map's first operand, the last start index of
dynamic_slice / dynamic_update_slice, reduce_window's init values). Here every operand
gets its turn, at a random axis (negative axes included), with `config.vmap_fallback`
off (the default), so each batching rule meets every operand alone; tests/operand_cases.py
adds cases whose start indices, init values and sigma are arrays, not literals.
"""

from __future__ import annotations

import zlib
import numpy as np
import pytest

from tests import operand_cases
from tests.op_db import OpCase, all_cases
from tests.test_vmap import BATCH, _assert_close, _missing_rules, _stack, _variant
from tracer import config
from tracer.transforms.api_vmap import vmap
from tracer.tree_util import tree_flatten, tree_unflatten


def _arrays(case: OpCase) -> list[int]:
    return [i for i, a in enumerate(case.args) if isinstance(a, (np.ndarray, np.generic))]


CASES = [c for c in all_cases() + operand_cases.CASES if len(_arrays(c)) >= 2]


def _check_mapping(case: OpCase, mapped: list[int], rng: np.random.Generator) -> None:
    """vmap(case.fn) with `mapped` operands batched at random axes == the per-example
    results stacked at random out_axes."""
    in_axes, batched = [], []
    for i, a in enumerate(case.args):
        if i not in mapped:
            in_axes.append(None)
            batched.append(a)
            continue
        axis = int(rng.integers(-(np.ndim(a) + 1), np.ndim(a) + 1))
        in_axes.append(axis)
        batched.append(np.stack([np.asarray(_variant(a, k)) for k in range(BATCH)], axis))
    outs = [tree_flatten(case.fn(*[_variant(a, k) if i in mapped else a
                                   for i, a in enumerate(case.args)])) for k in range(BATCH)]
    out_axes = [int(rng.integers(-np.ndim(y) - 1, np.ndim(y) + 1)) for y in outs[0][0]]
    expected = [np.moveaxis(y, 0, d) for y, d in
                zip(_stack([leaves for leaves, _ in outs]), out_axes, strict=True)]
    got = tree_flatten(vmap(case.fn, in_axes=tuple(in_axes), axis_size=BATCH,
                            out_axes=tree_unflatten(outs[0][1], out_axes))(*batched))[0]
    assert len(got) == len(expected)
    for g, w in zip(got, expected, strict=True):
        _assert_close(g, w, case.rtol, case.atol,
                      f"{case.name} in_axes={in_axes} out_axes={out_axes}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_operand_batched_alone_and_all_together(case: OpCase) -> None:
    assert not config.vmap_fallback
    missing = _missing_rules(case)
    assert not missing, f"no batching rule for {missing}"
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    arrays = _arrays(case)
    for mapped in [[i] for i in arrays] + [arrays]:
        _check_mapping(case, mapped, rng)

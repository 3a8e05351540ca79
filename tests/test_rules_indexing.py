"""Rules of dynamic_slice, dynamic_update_slice, gather and scatter
(tracer/ops/indexing_rules.py), checked like the shape rules: JVPs against central
finite differences (float64), transposes through <ct, L(v)> = <L^T(ct), v>,
batching against loop-and-stack, each rule also run traced. Random indices reach
out of bounds on purpose (clamped by the slices and gather, dropped by scatter)
and repeat (colliding scatter updates).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer.ops.indexing_rules  # noqa: F401  # installs the rules under test
from tests.test_rules_shape import (aval, bdims, check_batch, check_jvp, check_transpose,
                                    eqn_for, seeded)
from tracer import ops
from tracer.errors import TracerTypeError
from tracer.ops import OPS, GatherDimensionNumbers, ScatterDimensionNumbers
from tracer.ops.ad import UndefinedPrimal, Zero

EXAMPLES = settings(max_examples=20)
I32 = np.int32


def rand_starts(rng: np.random.Generator, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [I32(rng.integers(-2, n + 2)) for n in shape]


# --------------------------------------------------------------------------- dynamic_slice
@st.composite
def windows(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    return shape, tuple(draw(st.integers(0, n)) for n in shape)


@EXAMPLES
@given(windows(), st.data())
def test_dynamic_slice(case: Any, data: Any) -> None:
    shape, sizes = case
    rng = seeded(data)
    x, starts = rng.standard_normal(shape), rand_starts(rng, shape)
    fn = lambda x, *s: ops.dynamic_slice(x, s, sizes)  # noqa: E731
    op, params = eqn_for("dynamic_slice", fn, x, *starts)
    check_jvp(op, params, [x, *starts], {0}, rng)
    check_transpose(op, params, [x, *starts], {0}, rng)
    make = lambda r: [r.standard_normal(shape), *rand_starts(r, shape)]  # noqa: E731
    check_batch(op, params, make, bdims(data, [x, *starts]), rng)


@EXAMPLES
@given(windows(), st.sampled_from([{0, 1}, {0}, {1}]), st.data())
def test_dynamic_update_slice(case: Any, linear: set[int], data: Any) -> None:
    shape, sizes = case
    rng = seeded(data)
    x, u = rng.standard_normal(shape), rng.standard_normal(sizes)
    starts = rand_starts(rng, shape)
    op, params = eqn_for("dynamic_update_slice",
                         lambda x, u, *s: ops.dynamic_update_slice(x, u, s), x, u, *starts)
    args = [x, u, *starts]
    check_jvp(op, params, args, linear, rng)
    zeroed = [a if i in linear or i > 1 else np.zeros_like(a) for i, a in enumerate(args)]
    check_transpose(op, params, zeroed, linear, rng)
    make = lambda r: [r.standard_normal(shape), r.standard_normal(sizes),  # noqa: E731
                      *rand_starts(r, shape)]
    check_batch(op, params, make, bdims(data, args), rng)


# --------------------------------------------------------------------------- gather configs
@st.composite
def gathers(draw: Any) -> dict[str, Any]:
    """A random valid gather: operand shape, index layout, dimension numbers, sizes."""
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 4)) for _ in range(rank)]
    dims = list(range(rank))
    op_batch = sorted(draw(st.sets(st.sampled_from(dims), max_size=1)))
    rest = [d for d in dims if d not in op_batch]
    collapsed = sorted(draw(st.sets(st.sampled_from(rest), max_size=len(rest)))) if rest else []
    index_map = draw(st.permutations(rest).flatmap(
        lambda p: st.integers(min(1, len(p)), len(p)).map(lambda k: list(p[:k]))))
    sizes = [1 if d in op_batch or d in collapsed else draw(st.integers(0, shape[d]))
             for d in dims]
    labels = draw(st.permutations([("op", d) for d in op_batch]
                                  + [("extra", i) for i in range(draw(st.integers(0, 2)))]))
    batch = [shape[lab[1]] if lab[0] == "op" else draw(st.integers(1, 3)) for lab in labels]
    implicit = len(index_map) == 1 and draw(st.booleans())
    ivd = len(batch) if implicit else draw(st.integers(0, len(batch)))
    idx_shape = batch if implicit else batch[:ivd] + [len(index_map)] + batch[ivd:]
    position = lambda j: j if implicit or j < ivd else j + 1  # noqa: E731
    idx_batch = [position(labels.index(("op", d))) for d in op_batch]
    n_offsets = rank - len(op_batch) - len(collapsed)
    offsets = sorted(draw(st.permutations(range(len(batch) + n_offsets)))[:n_offsets])
    dn = GatherDimensionNumbers(tuple(offsets), tuple(collapsed), tuple(index_map), ivd,
                                tuple(op_batch), tuple(idx_batch))
    return dict(shape=tuple(shape), idx_shape=tuple(idx_shape), dn=dn, sizes=tuple(sizes),
                top=max(shape) + 1)


def rand_indices(rng: np.random.Generator, g: dict[str, Any]) -> np.ndarray:
    return rng.integers(-2, g["top"] + 1, g["idx_shape"]).astype(I32)


@EXAMPLES
@given(gathers(), st.data())
def test_gather(g: dict[str, Any], data: Any) -> None:
    rng = seeded(data)
    x, idx = rng.standard_normal(g["shape"]), rand_indices(rng, g)
    op, params = eqn_for("gather", lambda x, i: ops.gather(x, i, g["dn"], g["sizes"]), x, idx)
    check_jvp(op, params, [x, idx], {0}, rng)
    check_transpose(op, params, [x, idx], {0}, rng)
    make = lambda r: [r.standard_normal(g["shape"]), rand_indices(r, g)]  # noqa: E731
    check_batch(op, params, make, bdims(data, [x, idx]), rng)


# --------------------------------------------------------------------------- scatter
COMBINERS: dict[str, Callable[..., Any] | None] = {
    "add": ops.add, "replace": None, "mul": ops.mul, "max": ops.max, "min": ops.min}


def scatter_numbers(g: dict[str, Any]) -> ScatterDimensionNumbers:
    d = g["dn"]
    return ScatterDimensionNumbers(d.offset_dims, d.collapsed_slice_dims, d.start_index_map,
                                   d.index_vector_dim, d.operand_batching_dims,
                                   d.start_indices_batching_dims)


def scatter_case(g: dict[str, Any], kind: str, rng: np.random.Generator,
                 unique: bool = False) -> tuple[Any, dict[str, Any], list[Any]]:
    x, idx = rng.standard_normal(g["shape"]), rand_indices(rng, g)
    u = ops.gather(x, idx, g["dn"], g["sizes"])  # the updates have the gather's shape
    u = rng.standard_normal(u.shape)
    if kind == "mul" and u.size:  # exact zeros, some colliding
        u.flat[rng.choice(u.size, min(2, u.size), replace=False)] = 0
    fn = lambda x, i, u: ops.scatter(x, i, u, COMBINERS[kind], scatter_numbers(g),  # noqa
                                     unique_indices=unique)
    op, params = eqn_for("scatter", fn, x, idx, u)
    return op, params, [x, idx, u]


@pytest.mark.parametrize("kind", sorted(COMBINERS))
@EXAMPLES
@given(gathers(), st.data())
def test_scatter_jvp_and_batch(kind: str, g: dict[str, Any], data: Any) -> None:
    rng = seeded(data)
    op, params, args = scatter_case(g, kind, rng)
    check_jvp(op, params, args, {0, 2}, rng, rtol=1e-5)
    check_jvp(op, params, args, {data.draw(st.sampled_from([0, 2]))}, rng, rtol=1e-5)
    make = lambda r: [r.standard_normal(np.shape(args[0])), rand_indices(r, g),  # noqa: E731
                      r.standard_normal(np.shape(args[2]))]
    check_batch(op, params, make, bdims(data, args), rng)


@pytest.mark.parametrize("linear", [{0, 2}, {0}, {2}], ids=["both", "operand", "updates"])
@pytest.mark.parametrize("kind", ["add", "replace"])
@EXAMPLES
@given(gathers(), st.data())
def test_scatter_transpose(kind: str, linear: set[int], g: dict[str, Any], data: Any) -> None:
    rng = seeded(data)
    op, params, args = scatter_case(g, kind, rng)
    args = [a if i in linear or i == 1 else np.zeros_like(a) for i, a in enumerate(args)]
    check_transpose(op, params, args, linear, rng)


def _rows(unique: bool) -> tuple[Any, dict[str, Any], list[Any]]:
    dn = ScatterDimensionNumbers((1,), (0,), (0,), 1)
    rng = np.random.default_rng(0)
    x, u = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    idx = np.array([[3], [0], [4]] if unique else [[3], [0], [3]], I32)
    fn = lambda x, i, u: ops.scatter(x, i, u, None, dn, unique_indices=unique)  # noqa: E731
    op, params = eqn_for("scatter", fn, x, idx, u)
    return op, params, [x, idx, u]


@pytest.mark.parametrize("unique", [True, False])
def test_scatter_replace_rows(unique: bool) -> None:
    op, params, args = _rows(unique)
    rng = np.random.default_rng(1)
    t = check_jvp(op, params, args, {0, 2}, rng)[0]
    assert np.all(t[[1, 2]] != 0) and np.all(t[[0, 3, 4]] != 0)
    check_transpose(op, params, [np.zeros((5, 3)), args[1], args[2]], {2}, rng)
    check_transpose(op, params, [args[0], args[1], np.zeros((3, 3))], {0}, rng)


def test_scatter_variadic_replace() -> None:
    dn = ScatterDimensionNumbers((), (0,), (0,), 1)
    rng = np.random.default_rng(2)
    xs, us = [rng.standard_normal(4) for _ in range(2)], [rng.standard_normal(3) for _ in range(2)]
    idx = np.array([[1], [1], [6]], I32)
    fn = lambda a, b, i, c, d: ops.scatter((a, b), i, (c, d), None, dn)  # noqa: E731
    op, params = eqn_for("scatter", fn, *xs, idx, *us)
    check_jvp(op, params, [*xs, idx, *us], {0, 1, 3, 4}, rng)
    check_jvp(op, params, [*xs, idx, *us], {3}, rng)
    check_transpose(op, params, [*xs, idx, *us], {0, 1, 3, 4}, rng)
    make = lambda r: [r.standard_normal(4), r.standard_normal(4), idx,  # noqa: E731
                      r.standard_normal(3), r.standard_normal(3)]
    check_batch(op, params, make, [0, None, None, 0, None], rng)


def test_scatter_max_ties_split_evenly() -> None:
    dn = ScatterDimensionNumbers((), (0,), (0,), 1)
    x, idx, u = np.array([1.0, 0.0]), np.array([[0], [0], [1]], I32), np.array([1.0, 1.0, -1.0])
    op, params = eqn_for("scatter", lambda x, i, u: ops.scatter_max(x, i, u, dn), x, idx, u)
    _, (t,) = op.jvp([x, idx, u], [np.array([3.0, 5.0]), Zero(aval(idx)),
                                   np.array([6.0, 9.0, 7.0])], **params)
    np.testing.assert_allclose(t, [6.0, 5.0])  # (3 + 6 + 9) / 3 at 0; the operand wins at 1


def test_scatter_mul_repeated_zero_updates() -> None:
    dn = ScatterDimensionNumbers((), (0,), (0,), 1)
    x, idx = np.array([2.0, 3.0, 5.0]), np.array([[0], [0], [1], [1], [1], [2]], I32)
    u = np.array([0.0, 4.0, 0.0, 0.0, 7.0, 0.0])
    op, params = eqn_for("scatter", lambda x, i, u: ops.scatter_mul(x, i, u, dn), x, idx, u)
    t = check_jvp(op, params, [x, idx, u], {0, 2}, np.random.default_rng(3))[0]
    _, (tu,) = op.jvp([x, idx, u], [Zero(aval(x)), Zero(aval(idx)), np.eye(6)[0]], **params)
    np.testing.assert_allclose(tu, [8.0, 0.0, 0.0])  # d/du0 of 2*u0*u1 = 2*4
    assert t.shape == (3,)


def test_scatter_unsupported_combiner_names_its_ops() -> None:
    dn = ScatterDimensionNumbers((), (0,), (0,), 1)
    x, idx, u = np.ones(3), np.array([[0]], I32), np.ones(1)
    op, params = eqn_for("scatter", lambda x, i, u: ops.scatter(
        x, i, u, lambda a, b: ops.add(ops.mul(a, b), b), dn), x, idx, u)
    with pytest.raises(TracerTypeError, match=r"scatter.*\[add, mul\]"):
        op.jvp([x, idx, u], [np.ones(3), Zero(aval(idx)), Zero(aval(u))], **params)
    with pytest.raises(TracerTypeError, match="scatter.*transpose"):
        op.transpose([np.ones(3)], UndefinedPrimal(aval(x)), idx, u, **params)


def test_every_op_here_has_its_rules() -> None:
    for name in ["dynamic_slice", "dynamic_update_slice", "gather", "scatter"]:
        op = OPS[name]
        assert op.jvp is not None and op.batch is not None and op.transpose is not None, name

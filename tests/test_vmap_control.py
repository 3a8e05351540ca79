"""vmap of control flow (batched predicates, carries, xs, branches) and of the
collectives over a named mapped axis, against loop-and-stack / a replica simulation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracer as tr
from tracer import ops
from tracer.errors import ParamError, ShapeError, TracerIndexError, TracerValueError
from tracer.ops import collectives as coll
from tracer.transforms.api_vmap import vmap

RNG = np.random.default_rng(0)


def _loop(f, *args, in_axes):
    """Reference: f on each batch element (in_axes ints or None), stacked on axis 0."""
    size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
    outs = [f(*[a if d is None else np.take(a, i, axis=d) for a, d in zip(args, in_axes)])
            for i in range(size)]
    flat = [tr.tree_util.tree_flatten(o)[0] for o in outs]
    return [np.stack(col) for col in zip(*flat)]


def _check(f, *args, in_axes):
    got = tr.tree_util.tree_flatten(vmap(f, in_axes=in_axes)(*args))[0]
    want = _loop(f, *args, in_axes=in_axes)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-12)


# ------------------------------------------------------------------------------ while
def _double_until(x, limit):
    return ops.while_loop(lambda c: ops.lt(c[1], limit),
                          lambda c: (ops.add(c[0], 1), ops.mul(c[1], 2.0)), (np.int32(0), x))


def test_while_batched_predicate_runs_each_element_its_own_trip_count():
    x = np.array([1.0, 3.0, 20.0, 0.5])
    n, y = vmap(_double_until, in_axes=(0, None))(x, np.float64(10.0))
    np.testing.assert_array_equal(n, [4, 2, 0, 5])
    np.testing.assert_allclose(y, [16.0, 12.0, 20.0, 16.0])
    _check(_double_until, x, np.array([5.0, 10.0, 1.0, 100.0]), in_axes=(0, 0))


def test_while_carry_made_batched_by_a_batched_const():
    def f(step):  # the init is unbatched; the body's const makes the carry batched
        return ops.fori_loop(0, 3, lambda i, c: ops.add(c, step), np.float64(0.0))
    np.testing.assert_allclose(vmap(f)(np.array([1.0, 2.0])), [3.0, 6.0])


def test_while_batched_bounds_of_fori_loop():
    def f(n, x):
        return ops.fori_loop(0, n, lambda i, c: ops.mul(c, x), np.float64(1.0))
    _check(f, np.array([0, 1, 2, 5], np.int64), np.array([2.0, 3.0, 0.5, 1.5]), in_axes=(0, 0))
    _check(f, np.array([0, 1, 2, 5], np.int64), np.float64(3.0), in_axes=(0, None))


def test_while_unbatched_predicate_keeps_unbatched_carries_unbatched():
    def f(x):
        return ops.fori_loop(0, 4, lambda i, c: (ops.add(c[0], 1.0), ops.mul(c[1], x)),
                             (np.float64(0.0), np.ones(2)))
    count, prod = vmap(f, out_axes=(None, 0))(np.array([[1.0, 2.0], [3.0, 0.5]]))
    assert np.asarray(count).shape == () and count == 4.0
    np.testing.assert_allclose(prod, [[1.0, 16.0], [81.0, 0.0625]])


@settings(max_examples=25)
@given(st.lists(st.floats(0.01, 50.0), min_size=1, max_size=5), st.integers(0, 1),
       st.floats(1.0, 60.0))
def test_while_hypothesis_against_loop(xs, axis, limit):
    x = np.array(xs).reshape(-1, 1).repeat(2, 1) * [1.0, 2.0]
    x = x if axis == 0 else x.T

    def f(v):  # doubles v until its largest entry reaches the limit
        return ops.while_loop(lambda c: ops.lt(ops.reduce(c, -np.inf, ops.max, [0]), limit),
                              lambda c: ops.mul(c, 2.0), v)
    _check(f, x, in_axes=(axis,))


# ----------------------------------------------------------------------- conditional
def _branchy(p, x, y):
    return ops.cond(p, lambda a, b: {"s": ops.add(a, b), "k": ops.mul(a, 2.0)},
                    lambda a, b: {"s": ops.sub(a, b), "k": a}, x, y)


def test_cond_batched_predicate_selects_per_element():
    p = np.array([True, False, True])
    x, y = RNG.normal(size=(3, 2)), RNG.normal(size=2)
    _check(_branchy, p, x, y, in_axes=(0, 0, None))
    _check(_branchy, p, np.float64(1.5), x, in_axes=(0, None, 0))


def test_cond_unbatched_predicate_batched_operands_stays_a_conditional():
    x = RNG.normal(size=(4, 3))
    graph = tr.make_hlo(lambda x: vmap(lambda v: _branchy(np.bool_(True), v, v))(x))(x)
    assert "conditional" in str(graph) and "select" not in str(graph)
    _check(_branchy, np.bool_(False), x, np.float64(2.0), in_axes=(None, 0, None))


def test_cond_one_branch_batched_output_batches_the_other():
    def f(p, x):
        return ops.cond(p, lambda: x, lambda: np.float64(0.0))
    np.testing.assert_allclose(vmap(f, in_axes=(None, 0))(np.bool_(False), np.ones(3)),
                               np.zeros(3))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8])
def test_switch_batched_index_out_of_range_runs_the_last_branch(dtype):
    branches = [lambda v: ops.neg(v), lambda v: ops.add(v, 1.0), lambda v: ops.mul(v, 10.0)]
    idx = np.array([0, 1, 2, 3, 200] if dtype == np.uint8 else [0, 1, 2, -1, 7], dtype)
    x = np.arange(1.0, 6.0)
    got = vmap(lambda i, v: ops.switch(i, branches, v))(idx, x)
    np.testing.assert_allclose(got, [-1.0, 3.0, 30.0, 40.0, 50.0])


def test_switch_in_jit_vmap():
    f = tr.jit(vmap(lambda i, v: ops.switch(i, [ops.sin, ops.cos], v)))
    np.testing.assert_allclose(f(np.array([0, 1, 5], np.int32), np.ones(3)),
                               [np.sin(1.0), np.cos(1.0), np.cos(1.0)])


# ------------------------------------------------------------------------------- scan
def _rnn(w, h0, xs):
    return ops.scan(lambda h, x: (ops.tanh(ops.add(ops.mul(h, w), x)), h), h0, xs)


@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, None), (None, None, 1),
                                     (None, None, 0), (0, 0, 2), (None, None, -1)])
def test_scan_batched_consts_carries_and_xs(in_axes):
    w, h0, xs = np.array([0.5, -0.3]), np.array([0.1, 0.2]), RNG.normal(size=(4, 2))
    args = [w, h0, xs]
    for i, d in enumerate(in_axes):
        if d is not None:
            base = args[i]
            args[i] = np.stack([base * (1 + 0.1 * k) for k in range(3)], d % (base.ndim + 1))
    _check(_rnn, *args, in_axes=in_axes)


def test_scan_reverse_with_batched_xs_and_unbatched_carry_output():
    def f(xs):
        return ops.scan(lambda c, x: (ops.add(c, 1.0), ops.mul(x, c)), np.float64(0.0), xs,
                        reverse=True)
    c, ys = vmap(f, in_axes=1, out_axes=(None, 1))(np.arange(8.0).reshape(4, 2))
    assert c == 4.0
    np.testing.assert_allclose(ys, np.arange(8.0).reshape(4, 2) * [[3.0], [2.0], [1.0], [0.0]])


def test_call_and_nested_vmap_of_control_flow():
    f = lambda x: ops.call(lambda v: _double_until(v, np.float64(8.0)), x)  # noqa: E731
    n, y = vmap(vmap(f))(np.array([[1.0, 3.0], [9.0, 0.25]]))
    np.testing.assert_array_equal(n, [[3, 2], [0, 5]])
    np.testing.assert_allclose(y, [[8.0, 12.0], [9.0, 8.0]])


# ------------------------------------------------------------------------ collectives
def _members(r, groups, n):
    groups = groups or [list(range(n))]
    return next(g for g in groups if r in g)


def _sim(name, X, groups=None, **kw):
    """Each replica r's result, from the seeds' rules (X[r] is replica r's operand)."""
    n, outs = len(X), []
    for r in range(n):
        g = _members(r, groups, n)
        pos, parts = g.index(r), [X[m] for m in g]
        if name == "all_reduce":
            outs.append(kw.get("np_op", np.add).reduce(parts))
        elif name == "all_gather":
            outs.append(np.concatenate(parts, kw["dim"]))
        elif name == "reduce_scatter":
            outs.append(np.split(np.sum(parts, 0), len(g), kw["dim"])[pos])
        else:  # all_to_all
            outs.append(np.concatenate([np.split(p, len(g), kw["s"])[pos] for p in parts],
                                       kw["c"]))
    return np.stack(outs)


GROUPS = [None, [[0, 2], [1, 3]], [[3, 1], [0, 2]]]


@pytest.mark.parametrize("groups", GROUPS)
@pytest.mark.parametrize("comp,np_op", [(ops.add, np.add), (ops.max, np.maximum),
                                        (lambda a, b: ops.add(a, ops.mul(b, 1.0)), np.add)])
def test_all_reduce(groups, comp, np_op):
    X = RNG.normal(size=(4, 2, 3))
    got = vmap(lambda v: coll.all_reduce(v, comp, groups, axis_name="i"), axis_name="i")(X)
    np.testing.assert_allclose(got, _sim("all_reduce", X, groups, np_op=np_op), rtol=1e-12)


@pytest.mark.parametrize("groups", GROUPS)
@pytest.mark.parametrize("dim", [0, 1])
def test_all_gather_and_reduce_scatter(groups, dim):
    X = RNG.normal(size=(4, 4, 2))
    f = vmap(lambda v: coll.all_gather(v, dim, axis_name="i", replica_groups=groups),
             axis_name="i")
    np.testing.assert_allclose(f(X), _sim("all_gather", X, groups, dim=dim))
    X = RNG.normal(size=(4, 8, 4))
    f = vmap(lambda v: coll.reduce_scatter(v, scatter_dimension=dim, replica_groups=groups,
                                           axis_name="i"), axis_name="i")
    np.testing.assert_allclose(f(X), _sim("reduce_scatter", X, groups, dim=dim), rtol=1e-12)


@pytest.mark.parametrize("groups", GROUPS)
@pytest.mark.parametrize("s,c", [(1, 0), (0, 1), (0, 0), (2, 1)])
def test_all_to_all(groups, s, c):
    X = RNG.normal(size=(4, 4, 8, 4))
    got = vmap(lambda v: coll.all_to_all(v, s, c, replica_groups=groups, axis_name="i"),
               axis_name="i", in_axes=1)(np.moveaxis(X, 0, 1))
    np.testing.assert_allclose(got, _sim("all_to_all", X, groups, s=s, c=c))


def test_seed_examples():
    f = lambda op: vmap(op, axis_name="r")  # noqa: E731
    X = np.array([[1.0, 2.5], [3.0, 5.25]])
    np.testing.assert_allclose(f(lambda v: coll.all_reduce(v, axis_name="r"))(X),
                               [[4.0, 7.75]] * 2)
    np.testing.assert_allclose(f(lambda v: coll.all_gather(v, 0, axis_name="r"))(X),
                               [[1.0, 2.5, 3.0, 5.25]] * 2)
    np.testing.assert_allclose(
        f(lambda v: coll.reduce_scatter(v, axis_name="r"))(np.array([[1.0, 2.25], [3, 5.25]])),
        [[4.0], [7.5]])
    got = f(lambda v: coll.all_to_all(v, 1, 0, axis_name="r"))(np.ones((4, 4, 16), np.float32))
    assert got.shape == (4, 16, 4)


def test_collective_permute_and_replica_id():
    x = np.array([5.0, 7.0, 9.0, 11.0])
    pairs = [(0, 1), (1, 2), (3, 0)]
    got = vmap(lambda v: coll.collective_permute(v, pairs, axis_name="i"), axis_name="i")(x)
    np.testing.assert_allclose(got, [11.0, 5.0, 7.0, 0.0])
    ids = vmap(lambda v: coll.replica_id("i"), axis_name="i")(x)
    assert ids.dtype == np.uint32
    np.testing.assert_array_equal(ids, [0, 1, 2, 3])


def test_collective_of_an_unbatched_value_and_outputs_unbatched():
    y = vmap(lambda v, w: (coll.all_reduce(w, axis_name="i"), v), in_axes=(0, None),
             out_axes=(None, 0), axis_name="i")(np.ones(3), np.float64(2.0))
    assert y[0] == 6.0


def test_nested_named_axes_reduce_over_the_named_one():
    X = RNG.normal(size=(2, 3))
    over_j = vmap(vmap(lambda v: coll.all_reduce(v, axis_name="j"), axis_name="i"),
                  axis_name="j")(X)
    np.testing.assert_allclose(over_j, np.broadcast_to(X.sum(0), X.shape))
    over_i = vmap(vmap(lambda v: coll.all_gather(ops.broadcast(v, [1]), 0, axis_name="i"),
                       axis_name="i"), axis_name="j")(X)
    np.testing.assert_allclose(over_i, np.broadcast_to(X[:, None, :], (2, 3, 3)))
    ids = vmap(vmap(lambda v: coll.replica_id("j"), axis_name="i"), axis_name="j")(X)
    np.testing.assert_array_equal(ids, [[0, 0, 0], [1, 1, 1]])


def test_collectives_inside_control_flow_and_jit():
    def f(p, x):
        s = ops.cond(p, lambda: coll.all_reduce(x, axis_name="i"), lambda: x)
        _, ys = ops.scan(lambda c, e: (c, coll.all_reduce(e, axis_name="i")), 0.0, x)
        return s, ys
    x = np.arange(6.0).reshape(3, 2)
    s, ys = tr.jit(vmap(f, in_axes=(None, 0), axis_name="i"))(np.bool_(True), x)
    np.testing.assert_allclose(s, np.broadcast_to(x.sum(0), (3, 2)))
    np.testing.assert_allclose(ys, np.broadcast_to(x.sum(0), (3, 2)))
    s, _ = vmap(f, in_axes=(None, 0), axis_name="i")(np.bool_(False), x)
    np.testing.assert_allclose(s, x)


def test_single_replica_identities_outside_vmap():
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(coll.all_reduce(x), x)
    np.testing.assert_array_equal(coll.all_gather(x, 0), x)
    np.testing.assert_array_equal(coll.reduce_scatter(x), x)
    np.testing.assert_array_equal(coll.all_to_all(x, 0, 0), x)
    np.testing.assert_array_equal(coll.collective_permute(x, [(0, 0)]), x)
    np.testing.assert_array_equal(coll.collective_permute(x, []), [0.0, 0.0])
    assert coll.replica_id() == 0 and coll.replica_id().dtype == np.uint32
    a, b = coll.all_reduce((x, np.int32(3)))
    np.testing.assert_array_equal(a, x)
    assert b == 3


def test_collective_errors():
    with pytest.raises(TracerValueError, match="unbound axis name 'k'"):
        coll.all_reduce(np.ones(2), axis_name="k")
    with pytest.raises(TracerValueError, match="'k'"):
        vmap(lambda v: coll.all_reduce(v, axis_name="k"), axis_name="i")(np.ones(2))
    with pytest.raises(TracerIndexError, match=r"all_gather.*f64\[2\]"):
        coll.all_gather(np.ones(2), 1)
    with pytest.raises(ShapeError, match=r"reduce_scatter.*f64\[3\]"):
        vmap(lambda v: coll.reduce_scatter(ops.broadcast(v, [3]), axis_name="i"),
             axis_name="i")(np.ones(2))
    with pytest.raises(ParamError, match="replica_groups"):
        vmap(lambda v: coll.all_reduce(v, replica_groups=[[0, 1], [2]], axis_name="i"),
             axis_name="i")(np.ones(3))
    with pytest.raises(ParamError, match="share a target"):
        vmap(lambda v: coll.collective_permute(v, [(0, 1), (1, 1)], axis_name="i"),
             axis_name="i")(np.ones(2))
    with pytest.raises(ParamError, match="outside 0..0"):
        coll.collective_permute(np.ones(2), [(0, 1)])
    with pytest.raises(ParamError, match="shard_count"):
        coll.all_gather(np.ones(2), 0, shard_count=2)


# ------------------------------------------------------------------ collectives and AD
def _total(v):
    return ops.reduce(v, 0.0, ops.add, list(range(v.ndim)))


AD_CASES = {
    "all_reduce": lambda v: coll.all_reduce(ops.sin(v), axis_name="i"),
    "all_reduce_max": lambda v: coll.all_reduce(ops.sin(v), ops.max, axis_name="i"),
    "all_reduce_groups": lambda v: coll.all_reduce(ops.sin(v), replica_groups=[[0, 2], [1, 3]],
                                                   axis_name="i"),
    "all_gather": lambda v: coll.all_gather(ops.sin(v), 1, axis_name="i"),
    "reduce_scatter": lambda v: coll.reduce_scatter(ops.sin(v), axis_name="i"),
    "all_to_all": lambda v: coll.all_to_all(ops.sin(v), 0, 1, axis_name="i"),
    "collective_permute": lambda v: coll.collective_permute(ops.sin(v), [(0, 1), (1, 2)],
                                                            axis_name="i"),
}


@pytest.mark.parametrize("name", sorted(AD_CASES))
def test_collective_derivatives_commute_with_vmap(name):
    from tracer.transforms import grad, jvp
    f, x, t = AD_CASES[name], RNG.normal(size=(4, 4, 2)), RNG.normal(size=(4, 4, 2))
    mapped = vmap(f, axis_name="i")
    eps = 1e-6
    fd = (mapped(x + eps * t) - mapped(x - eps * t)) / (2 * eps)
    _, t_inner = vmap(lambda a, b: jvp(f, (a,), (b,)), axis_name="i")(x, t)
    _, t_outer = jvp(mapped, (x,), (t,))
    np.testing.assert_allclose(t_inner, fd, atol=1e-6)
    np.testing.assert_allclose(t_outer, fd, atol=1e-6)
    # the per-replica gradient is the gradient of the sum of every replica's output
    g_inner = vmap(grad(lambda v: _total(f(v))), axis_name="i")(x)
    g_outer = grad(lambda xs: _total(mapped(xs)))(x)
    np.testing.assert_allclose(g_inner, g_outer, rtol=1e-10)


def test_collective_gradients_with_one_replica():
    from tracer.transforms import grad
    x = np.array([0.5, -1.0])
    for f in (coll.all_reduce, lambda v: coll.all_gather(v, 0),
              lambda v: coll.all_to_all(v, 0, 0), coll.reduce_scatter):
        np.testing.assert_allclose(grad(lambda v: _total(ops.mul(f(v), v)))(x), 2 * x)
    np.testing.assert_allclose(grad(lambda v: _total(coll.collective_permute(v, [])))(x), 0 * x)

"""vmap: the op table against loop-and-stack, and the `vmap` API (in_axes/out_axes
forms, pytrees, nested vmap, axis_size, errors, jit composition)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import tracer as tr
from tests.checks import ops_in
from tests.op_db import all_cases
from tracer import ops
from tracer.core import aval_of, typecheck
from tracer.errors import TracerTypeError, TracerValueError
from tracer.ops import OPS
from tracer.tracing import trace_flat
from tracer.transforms.api_vmap import vmap
from tracer.transforms.batching import loop_and_stack, vmap_graph
from tracer.tree_util import tree_flatten, tree_unflatten

CASES = all_cases()
BATCH = 3


# ------------------------------------------------------------ op table vs loop-and-stack
def _missing_rules(case) -> list[str]:
    avals = [aval_of(a) for a in case.args]
    graph, _ = trace_flat(lambda *xs: tree_flatten(case.fn(*xs))[0], avals)
    return sorted(n for n in ops_in(graph) if OPS[n].batch is None)


def _variant(x, k: int):
    """Batch element k of argument x: distinct values that keep x's domain (positive
    scaling of floats, reversed int/bool arrays, shifted int and negated bool scalars)."""
    a = np.asarray(x)
    if k == 0:
        return x
    if a.dtype.kind in "fc":
        return (a * (1 - 0.2 * k)).astype(a.dtype)
    if a.ndim:
        return np.flip(a).copy() if k % 2 else a
    if a.dtype.kind == "b":
        return np.logical_not(a) if k % 2 else a
    return np.array(int(a) + k).astype(a.dtype)


def _stack(outs: list, axis: int = 0):
    return [np.stack(col, axis) for col in zip(*outs, strict=True)]


def _assert_close(got, want, case_rtol=1e-6, case_atol=0.0, msg=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (msg, got.shape, want.shape)
    assert got.dtype == want.dtype, (msg, got.dtype, want.dtype)
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=msg)
    else:
        np.testing.assert_allclose(got, want, rtol=max(case_rtol, 1e-6) * 10,
                                   atol=max(case_atol, 1e-12), err_msg=msg)


def _check_case(case, seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrays = [i for i, a in enumerate(case.args) if isinstance(a, (np.ndarray, np.generic))]
    mapped = [i for i in arrays if rng.random() < 0.6] or arrays[:1]
    in_axes, batched_args = [], []
    for i, a in enumerate(case.args):
        if i not in mapped:
            in_axes.append(None)
            batched_args.append(a)
            continue
        ndim = np.ndim(a)
        axis = int(rng.integers(-(ndim + 1), ndim + 1))
        in_axes.append(axis)
        batched_args.append(np.stack([np.asarray(_variant(a, k)) for k in range(BATCH)], axis))
    outs = [tree_flatten(case.fn(*[_variant(a, k) if i in mapped else a
                                   for i, a in enumerate(case.args)])) for k in range(BATCH)]
    out_axes = [int(rng.integers(-np.ndim(y) - 1, np.ndim(y) + 1)) for y in outs[0][0]]
    expected = [np.moveaxis(y, 0, d) for y, d in
                zip(_stack([leaves for leaves, _ in outs]), out_axes, strict=True)]
    vmapped = vmap(case.fn, in_axes=tuple(in_axes), axis_size=BATCH,
                   out_axes=tree_unflatten(outs[0][1], out_axes))
    got = tree_flatten(vmapped(*batched_args))[0]
    assert len(got) == len(expected)
    for g, w in zip(got, expected, strict=True):
        _assert_close(g, w, case.rtol, case.atol,
                      f"{case.name} in_axes={in_axes} out_axes={out_axes}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_vmap_matches_loop_and_stack(case):
    missing = _missing_rules(case)
    if missing:
        pytest.skip(f"no batching rule yet for {missing}")
    for trial in range(2):
        _check_case(case, zlib.crc32(case.name.encode()) + trial)


def test_every_op_has_a_batching_rule():
    missing = sorted(name for name, op in OPS.items() if op.batch is None)
    assert not missing, f"ops without a batching rule: {missing}"


# ------------------------------------------------------------------------ in/out axes
X = np.arange(12.0).reshape(3, 4)


def test_in_axes_forms():
    f = lambda a, b: ops.add(a, b)  # noqa: E731
    np.testing.assert_allclose(vmap(f)(X, X), X + X)
    np.testing.assert_allclose(vmap(f, in_axes=(0, None))(X, X[0]), X + X[0])
    np.testing.assert_allclose(vmap(f, in_axes=[1, 1])(X, X), (X + X).T)
    np.testing.assert_allclose(vmap(f, in_axes=(-1, 1))(X, X), (X + X).T)
    np.testing.assert_allclose(vmap(f, in_axes=(None, 0))(X[:, 0], X.T), X.T + X[:, 0])


def test_pytree_in_axes_prefix_and_outputs():
    def f(p, x):
        return {"y": ops.add(ops.mul(p["w"], x), p["b"]), "x": x}
    p = {"w": np.arange(4.0), "b": np.float64(1.0)}
    out = vmap(f, in_axes=({"w": None, "b": None}, 0))(p, X)
    np.testing.assert_allclose(out["y"], X * p["w"] + 1.0)
    np.testing.assert_allclose(out["x"], X)
    out = vmap(f, in_axes=(None, 1), out_axes={"y": 1, "x": 0})(p, X.T)
    np.testing.assert_allclose(out["y"], (X * p["w"] + 1.0).T)
    np.testing.assert_allclose(out["x"], X)


def test_out_axes_forms_and_broadcast_of_unmapped_outputs():
    f = lambda a, b: (ops.mul(a, 2.0), b)  # noqa: E731
    y, b = vmap(f, in_axes=(0, None), out_axes=(1, 0))(X, np.float64(5.0))
    np.testing.assert_allclose(y, (2 * X).T)
    np.testing.assert_allclose(b, np.full(3, 5.0))
    y, b = vmap(f, in_axes=(0, None), out_axes=(-1, None))(X, np.float64(5.0))
    np.testing.assert_allclose(y, (2 * X).T)
    assert np.asarray(b).shape == () and b == 5.0
    with pytest.raises(TracerValueError, match="out_axes is None"):
        vmap(f, in_axes=(0, None), out_axes=None)(X, np.float64(5.0))


def test_kwargs_are_mapped_over_axis_0():
    out = vmap(lambda a, *, b: ops.sub(a, b))(X, b=X[:, :1].repeat(4, 1))
    np.testing.assert_allclose(out, X - X[:, :1])


def test_axis_size_without_mapped_inputs():
    out = vmap(lambda: ops.iota(np.int32, (2,), 0), in_axes=(), axis_size=4)()
    np.testing.assert_array_equal(out, np.tile(np.arange(2, dtype=np.int32), (4, 1)))
    out = vmap(lambda a: ops.add(a, 1.0), in_axes=None, axis_size=2)(np.float32(1))
    np.testing.assert_array_equal(out, np.full(2, 2.0, np.float32))


def test_nested_vmap_is_an_outer_product():
    outer = vmap(vmap(lambda a, b: ops.mul(a, b), in_axes=(None, 0)), in_axes=(0, None))
    a, b = np.arange(3.0), np.arange(4.0) + 1
    np.testing.assert_allclose(outer(a, b), np.outer(a, b))
    inner_axis = vmap(vmap(ops.sin, in_axes=1), in_axes=0)(np.ones((2, 3, 5)))
    assert inner_axis.shape == (2, 5, 3)


def test_closure_over_outer_values_under_jit():
    @tr.jit
    def f(w, xs):
        return vmap(lambda x: ops.mul(x, w))(xs)
    np.testing.assert_allclose(f(np.float64(3.0), X), 3 * X)
    assert f.cache_info().traces == 1


def test_jit_of_vmap_and_vmap_of_jit_agree_with_eager():
    g = lambda x: ops.tanh(ops.mul(x, x))  # noqa: E731
    want = np.tanh(X * X)
    np.testing.assert_allclose(tr.jit(vmap(g, in_axes=1, out_axes=1))(X), want)
    np.testing.assert_allclose(vmap(tr.jit(g))(X), want)
    np.testing.assert_allclose(vmap(g)(X), want)


@pytest.mark.parametrize("backend", tr.devices())
def test_compositions_with_grad_and_jit(backend):
    from tracer.transforms import grad, jacrev
    f = lambda x: ops.reduce(ops.mul(ops.sin(x), x), 0.0, ops.add, [0])  # noqa: E731
    want = np.sin(X) + X * np.cos(X)
    np.testing.assert_allclose(vmap(grad(f))(X), want)
    np.testing.assert_allclose(tr.jit(vmap(grad(f)), backend=backend)(X), want)
    total = lambda xs: ops.reduce(vmap(f)(xs), 0.0, ops.add, [0])  # noqa: E731
    np.testing.assert_allclose(grad(total)(X), want)
    jac = vmap(jacrev(ops.sin))(X)
    np.testing.assert_allclose(jac, np.stack([np.diag(np.cos(r)) for r in X]))


def test_batched_eqns_keep_the_users_source_line():
    def f(a):
        return ops.exp(a)  # the line batched eqns must point at
    text = tr.make_hlo(vmap(f, in_axes=1))(X).__str__()
    line = f.__code__.co_firstlineno + 1
    assert f'source_line={line}' in text and 'op_name="f"' in text


def test_python_scalar_outputs_and_passthrough_are_arrays():
    a, b = vmap(lambda x, s: (s, 1.5), in_axes=(0, None), out_axes=None)(X, 2.0)
    assert isinstance(a, np.ndarray) and a == 2.0
    assert isinstance(b, np.ndarray) and b == 1.5


# ----------------------------------------------------------------------------- errors
def test_mismatched_sizes_name_both_sizes_and_args():
    with pytest.raises(ValueError, match=r"3.*5|5.*3") as e:
        vmap(ops.add)(np.ones(3), np.ones(5))
    assert isinstance(e.value, tr.TracerError)
    assert "args[0]" in str(e.value) and "args[1]" in str(e.value)
    with pytest.raises(TracerValueError, match="axis_size=4"):
        vmap(ops.neg, axis_size=4)(np.ones(3))


def test_bad_in_axes():
    with pytest.raises(TracerValueError, match="axis_size must be given"):
        vmap(ops.neg, in_axes=None)(np.ones(3))
    with pytest.raises(TracerValueError, match="rank"):
        vmap(ops.neg)(np.float32(1))
    with pytest.raises(TracerValueError, match="out of range"):
        vmap(ops.neg, in_axes=2)(np.ones((2, 2)))
    with pytest.raises(TracerValueError, match="len\\(in_axes\\)=1"):
        vmap(ops.add, in_axes=(0,))(np.ones(2), np.ones(2))
    with pytest.raises(TracerValueError, match="tree prefix"):
        vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": np.ones(2)})
    with pytest.raises(TracerTypeError, match="in_axes"):
        vmap(ops.neg, in_axes="x")
    with pytest.raises(TracerTypeError, match="in_axes"):
        vmap(ops.neg, in_axes=True)


def test_out_axes_out_of_range():
    with pytest.raises(TracerValueError, match="out_axes"):
        vmap(ops.neg, out_axes=3)(np.ones((2, 2)))


def test_op_without_rule_is_named(monkeypatch):
    monkeypatch.setattr(OPS["neg"], "batch", None)
    with pytest.raises(TracerTypeError, match="'neg' has no batching rule"):
        vmap(ops.neg)(np.ones(3))


def test_loop_and_stack_fallback(monkeypatch):
    monkeypatch.setattr(OPS["atan2"], "batch", None)
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    graph, _ = trace_flat(lambda a, b: [ops.atan2(a, b)], [aval_of(x[0]), aval_of(x[0])])
    eqn = graph.eqns[0]
    with pytest.warns(UserWarning, match="no batching rule"):
        (out,), dims = loop_and_stack(eqn, [x, x.T], [0, 1], 2)
    assert dims == [0]
    np.testing.assert_allclose(out, np.arctan2(x, x))


# ------------------------------------------------------------------------- vmap_graph
def test_vmap_graph_keeps_unbatched_eqns_and_typechecks():
    avals = [aval_of(np.ones(3)), aval_of(np.ones(3))]
    graph, _ = trace_flat(lambda a, b: [ops.mul(ops.exp(b), a), ops.sin(b)], avals)
    batched, dims = vmap_graph(graph, [1, None], 5)
    typecheck(batched)
    assert dims[1] is None and batched.out_avals[0].shape[dims[0]] == 5
    assert batched.in_avals[0].shape == (3, 5) and batched.in_avals[1].shape == (3,)
    assert batched.out_avals[1].shape == (3,)
    fixed, dims = vmap_graph(graph, [1, None], 5, out_axes=[1, 0])
    assert dims == [1, 0] and [a.shape for a in fixed.out_avals] == [(3, 5), (5, 3)]
    names = [e.op.name for e in batched.eqns]
    assert names.count("exp") == 1 and names.count("sin") == 1

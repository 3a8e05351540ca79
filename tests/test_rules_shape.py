"""Rules of the shape ops, dot_general and reduce (tracer/ops/shape_rules.py, reduce_rules.py).

JVPs against central finite differences in float64, transposes through the
inner-product identity <ct, L(v)> = <L^T(ct), v> on random v and ct, batching
rules against a loop over examples stacked along the rule's output axis. Every
rule also runs traced, and the traced graph (typechecked, impls checked against
their shape rules) must agree with the eager run.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tracer.ops.shape_rules  # noqa: F401  # installs the rules under test
from tracer import ops
from tracer.core import ShapedArray, typecheck
from tracer.errors import TracerTypeError
from tracer.interpret import run_graph
from tracer.ops import OPS
from tracer.ops.ad import UndefinedPrimal, Zero
from tracer.tracing import trace_flat

EXAMPLES = settings(max_examples=20)
EPS = 1e-6


# --------------------------------------------------------------------------- harness
def aval(x: Any) -> ShapedArray:
    return ShapedArray(np.shape(x), np.asarray(x).dtype)


def leaves(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def eqn_for(name: str, fn: Callable[..., Any], *args: Any) -> tuple[Any, dict[str, Any]]:
    """(op, canonical params) of the last `name` eqn of `fn` traced on `args`' avals."""
    graph, _ = trace_flat(lambda *xs: leaves(fn(*xs)), [aval(a) for a in args])
    eqn = [e for e in graph.eqns if e.op.name == name][-1]
    return eqn.op, eqn.params


def run_both(fn: Callable[..., Any], arrays: Sequence[Any]) -> list[Any]:
    """`fn(*arrays)` eagerly (Zero / None leaves kept), checked against a traced run."""
    eager = leaves(fn(*arrays))
    real = lambda outs: [o for o in outs if o is not None and not isinstance(o, Zero)]  # noqa
    graph, _ = trace_flat(lambda *xs: real(leaves(fn(*xs))), [aval(a) for a in arrays])
    traced = run_graph(typecheck(graph), [np.asarray(a) for a in arrays], check=True)
    for e, t in zip(real(eager), traced, strict=True):
        np.testing.assert_allclose(np.asarray(e), t, rtol=1e-12, atol=1e-12)
    return eager


def check_jvp(op: Any, params: dict[str, Any], primals: Sequence[Any], diff: set[int],
              rng: np.random.Generator, rtol: float = 1e-6, atol: float = 1e-7) -> list[Any]:
    """op.jvp against (f(x + eps v) - f(x - eps v)) / 2 eps with v random on `diff`."""
    n = len(primals)
    tans = [rng.standard_normal(np.shape(p)) for p in primals]

    def jvp(*xs: Any) -> list[Any]:
        tangents = [xs[n + i] if i in diff else Zero(aval(primals[i])) for i in range(n)]
        out, t_out = op.jvp(list(xs[:n]), tangents, **params)
        return leaves(out) + leaves(t_out)

    got = run_both(jvp, list(primals) + tans)
    m = len(got) // 2
    f = lambda e: leaves(op.bind(*[p + e * t if i in diff else p for i, (p, t) in  # noqa
                                   enumerate(zip(primals, tans, strict=True))], **params))
    for out, t, plus, minus in zip(got[:m], got[m:], f(EPS), f(-EPS), strict=True):
        fd = (plus.astype(np.float64) - minus) / (2 * EPS)
        assert aval(out) == aval(plus)
        if isinstance(t, Zero):
            assert t.aval.shape == np.shape(out)
            np.testing.assert_allclose(fd, 0, atol=atol)
        else:
            assert np.shape(t) == np.shape(out)
            np.testing.assert_allclose(t, fd, rtol=rtol, atol=atol)
    return got[m:]


def check_transpose(op: Any, params: dict[str, Any], args: Sequence[Any], linear: set[int],
                    rng: np.random.Generator, rtol: float = 1e-9) -> None:
    """<ct, L(v)> == <L^T(ct), v> for random v on the `linear` args and random ct."""
    vs = {i: rng.standard_normal(np.shape(args[i])).astype(aval(args[i]).dtype) for i in linear}
    out = leaves(op.bind(*[vs.get(i, a) for i, a in enumerate(args)], **params))
    cts = [rng.standard_normal(np.shape(o)).astype(o.dtype) for o in out]
    defined = [i for i in range(len(args)) if i not in linear]

    def transpose(*xs: Any) -> list[Any]:
        ct = list(xs[:len(cts)]) if op.multiple_results else xs[0]
        spec = [UndefinedPrimal(aval(a)) for a in args]
        for i, x in zip(defined, xs[len(cts):], strict=True):
            spec[i] = x
        res = op.transpose(ct, *spec, **params)
        assert len(res) == len(args) and all(res[i] is None for i in defined)
        return [res[i] for i in sorted(linear)]

    got = run_both(transpose, cts + [args[i] for i in defined])
    lhs = sum(np.vdot(c, o) for c, o in zip(cts, out, strict=True))
    rhs = 0.0
    for i, g in zip(sorted(linear), got, strict=True):
        if isinstance(g, Zero):
            continue
        assert aval(g).shape == np.shape(args[i]) and aval(g).dtype == aval(args[i]).dtype
        rhs += np.vdot(g, vs[i])
    np.testing.assert_allclose(rhs, lhs, rtol=rtol, atol=1e-9)


def random_like(rng: np.random.Generator, args: Sequence[Any]) -> list[Any]:
    """Fresh random float arrays shaped like `args` (integer args kept)."""
    return [rng.standard_normal(np.shape(a)).astype(aval(a).dtype) if aval(a).dtype.kind == "f"
            else a for a in args]


def check_batch(op: Any, params: dict[str, Any], make: Callable[[Any], Sequence[Any]],
                dims: Sequence[int | None], rng: np.random.Generator, size: int = 3) -> None:
    """op.batch on examples stacked at `dims` == the op per example, stacked at out_dim."""
    per = [list(make(rng)) for _ in range(size)]
    for example in per[1:]:
        for i, d in enumerate(dims):
            if d is None:
                example[i] = per[0][i]
    batched = [per[0][i] if d is None else np.stack([p[i] for p in per], axis=d)
               for i, d in enumerate(dims)]
    out, out_dims = op.batch(batched, list(dims), **params)
    got = run_both(lambda *xs: op.batch(list(xs), list(dims), **params)[0], batched)
    expected = [leaves(op.bind(*p, **params)) for p in per]
    for k, (g, od) in enumerate(zip(got, leaves(out_dims), strict=True)):
        for j, e in enumerate(expected):
            value = g if od is None else np.take(g, j, axis=od)
            assert aval(value) == aval(e[k])
            np.testing.assert_allclose(value, e[k], rtol=1e-12, atol=1e-12)


def bdims(data: Any, args: Sequence[Any], allow_none: bool = True) -> list[int | None]:
    """A random batch axis per arg (None = unbatched), at least one batched."""
    forced = data.draw(st.integers(0, len(args) - 1))
    return [data.draw(st.integers(0, np.ndim(a)) if i == forced or not allow_none else
                      st.one_of(st.none(), st.integers(0, np.ndim(a))))
            for i, a in enumerate(args)]


def seeded(data: Any) -> np.random.Generator:
    return np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))


def check_linear_op(name: str, fn: Callable[..., Any], args: Sequence[Any], data: Any,
                    linear: set[int] | None = None) -> None:
    """JVP, transpose and batching of an op linear in all of `args` jointly."""
    rng = seeded(data)
    op, params = eqn_for(name, fn, *args)
    linear = set(range(len(args))) if linear is None else linear
    check_jvp(op, params, args, linear, rng)
    check_transpose(op, params, args, linear, rng)
    check_batch(op, params, lambda r: random_like(r, args), bdims(data, args), rng)


shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


# --------------------------------------------------------------------------- broadcast_in_dim
@st.composite
def broadcasts(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    shape = draw(shapes)
    dims = tuple(sorted(draw(st.sets(st.sampled_from(range(len(shape))))))) if shape else ()
    operand = tuple(draw(st.sampled_from([1, shape[d]])) for d in dims)
    return operand, shape, dims


@EXAMPLES
@given(broadcasts(), st.data())
def test_broadcast_in_dim(case: Any, data: Any) -> None:
    operand, shape, dims = case
    x = np.random.default_rng(0).standard_normal(operand)
    check_linear_op("broadcast_in_dim", lambda x: ops.broadcast_in_dim(x, shape, dims), [x],
                    data)


# ------------------------------------------------------------------------- reshape, transpose, rev
@EXAMPLES
@given(st.lists(st.sampled_from([1, 2, 3]), max_size=4), st.data())
def test_reshape(factors: list[int], data: Any) -> None:
    shape = tuple(data.draw(st.permutations(factors)))
    new = tuple(data.draw(st.permutations(factors)))
    split = data.draw(st.integers(0, len(new)))
    new = (int(np.prod(new[:split], dtype=int)),) + new[split:]
    x = np.random.default_rng(1).standard_normal(shape)
    check_linear_op("reshape", lambda x: ops.reshape(x, new), [x], data)


@EXAMPLES
@given(shapes, st.data())
def test_transpose(shape: tuple[int, ...], data: Any) -> None:
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = np.random.default_rng(2).standard_normal(shape)
    check_linear_op("transpose", lambda x: ops.transpose(x, perm), [x], data)


@EXAMPLES
@given(shapes, st.data())
def test_rev(shape: tuple[int, ...], data: Any) -> None:
    dims = tuple(data.draw(st.sets(st.sampled_from(range(len(shape)))))) if shape else ()
    x = np.random.default_rng(3).standard_normal(shape)
    check_linear_op("rev", lambda x: ops.rev(x, dims), [x], data)


# ------------------------------------------------------------------------- slice, concatenate, pad
@EXAMPLES
@given(st.lists(st.integers(0, 5), min_size=1, max_size=3), st.data())
def test_slice(shape: list[int], data: Any) -> None:
    start = [data.draw(st.integers(0, n)) for n in shape]
    limit = [data.draw(st.integers(s, n)) for s, n in zip(start, shape, strict=True)]
    strides = [data.draw(st.integers(1, 3)) for _ in shape]
    x = np.random.default_rng(4).standard_normal(shape)
    check_linear_op("slice", lambda x: ops.slice(x, start, limit, strides), [x], data)


@EXAMPLES
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.data())
def test_concatenate(shape: list[int], data: Any) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(shape[:dim] + [s] + shape[dim + 1:]) for s in sizes]
    linear = data.draw(st.sets(st.sampled_from(range(len(xs))), min_size=1))
    args = [x if i in linear else np.zeros_like(x) for i, x in enumerate(xs)]
    fn = lambda *xs: ops.concatenate(list(xs), dim)  # noqa: E731
    check_linear_op("concatenate", fn, args, data, linear)


@st.composite
def pads(draw: Any) -> tuple[list[int], list[tuple[int, int, int]]]:
    shape = draw(st.lists(st.integers(0, 3), max_size=2))
    config = [(draw(st.integers(-2, 3)), draw(st.integers(-2, 3)), draw(st.integers(0, 2)))
              for _ in shape]
    assume(all(lo + hi + n + max(n - 1, 0) * i >= 0 for (lo, hi, i), n in
               zip(config, shape, strict=True)))
    return shape, config


@EXAMPLES
@given(pads(), st.sampled_from([{0, 1}, {0}, {1}]), st.data())
def test_pad(case: Any, linear: set[int], data: Any) -> None:
    shape, config = case
    x = np.random.default_rng(6).standard_normal(shape) if 0 in linear else np.zeros(shape)
    value = np.float64(0.5 if 1 in linear else 0.0)
    check_linear_op("pad", lambda x, v: ops.pad(x, v, config), [x, value], data, linear)


# ------------------------------------------------------------------------ iota, get_dimension_size
def test_iota_rules() -> None:
    op, params = eqn_for("iota", lambda: ops.iota(np.float64, (2, 3), 1))
    out, t = op.jvp([], [], **params)
    assert isinstance(t, Zero) and t.aval == aval(out)
    value, dim = op.batch([], [], **params)
    assert dim is None and np.array_equal(value, out)
    assert op.batch is not None and op.jvp is not None


@EXAMPLES
@given(shapes.filter(bool), st.data())
def test_get_dimension_size_rules(shape: tuple[int, ...], data: Any) -> None:
    rng = seeded(data)
    dim = data.draw(st.integers(0, len(shape) - 1))
    x = rng.standard_normal(shape)
    op, params = eqn_for("get_dimension_size", lambda x: ops.get_dimension_size(x, dim), x)
    check_jvp(op, params, [x], {0}, rng)
    check_batch(op, params, lambda r: [r.standard_normal(shape)], bdims(data, [x], False), rng)


# --------------------------------------------------------------------------- dot_general
@st.composite
def dots(draw: Any) -> tuple[np.ndarray, np.ndarray, Any]:
    """Random operands and dimension numbers: each side's dims in a random order."""
    roles = {r: draw(st.lists(st.integers(1, 3), max_size=2)) for r in "bclr"}
    lhs_dims = draw(st.permutations([(r, i) for r in "bcl" for i in range(len(roles[r]))]))
    rhs_dims = draw(st.permutations([(r, i) for r in "bcr" for i in range(len(roles[r]))]))
    where = lambda dims, r: tuple(dims.index((r, i)) for i in range(len(roles[r])))  # noqa
    rng = np.random.default_rng(7)
    lhs = rng.standard_normal([roles[r][i] for r, i in lhs_dims])
    rhs = rng.standard_normal([roles[r][i] for r, i in rhs_dims])
    dn = ((where(lhs_dims, "c"), where(rhs_dims, "c")), (where(lhs_dims, "b"),
                                                         where(rhs_dims, "b")))
    return lhs, rhs, dn


@EXAMPLES
@given(dots(), st.data())
def test_dot_general(case: Any, data: Any) -> None:
    lhs, rhs, dn = case
    rng = seeded(data)
    op, params = eqn_for("dot_general", lambda a, b: ops.dot_general(a, b, dn), lhs, rhs)
    check_jvp(op, params, [lhs, rhs], {0, 1}, rng)
    check_jvp(op, params, [lhs, rhs], {data.draw(st.sampled_from([0, 1]))}, rng)
    check_transpose(op, params, [lhs, rhs], {0}, rng)
    check_transpose(op, params, [lhs, rhs], {1}, rng)
    check_batch(op, params, lambda r: random_like(r, [lhs, rhs]), bdims(data, [lhs, rhs]), rng)


def test_dot_general_transpose_with_preferred_element_type() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(
        np.float32)
    op, params = eqn_for("dot_general", lambda a, b: ops.dot(
        a, b, preferred_element_type=np.float64), a, b)
    for side in (0, 1):
        check_transpose(op, params, [a, b], {side}, rng, rtol=1e-5)


# --------------------------------------------------------------------------- reduce
INITS = {"add": 0.0, "mul": 1.0, "max": -10.0, "min": 10.0}
COMBINE = {"add": ops.add, "mul": ops.mul, "max": ops.max, "min": ops.min}


@st.composite
def reductions(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
    dims = tuple(sorted(draw(st.sets(st.sampled_from(range(len(shape)))))))
    return shape, dims


def _reduce(kind: str, dims: tuple[int, ...], flip: bool = False) -> Callable[..., Any]:
    combine = COMBINE[kind]
    fn = (lambda a, x: combine(x, a)) if flip else combine
    return lambda x, init: ops.reduce(x, init, fn, dims)


@EXAMPLES
@given(reductions(), st.sampled_from(sorted(INITS)), st.booleans(), st.data())
def test_reduce_jvp(case: Any, kind: str, flip: bool, data: Any) -> None:
    shape, dims = case
    rng = seeded(data)
    x = rng.standard_normal(shape)
    if kind == "mul":  # exact zeros: the product rule must not divide by them
        x.flat[rng.choice(x.size, data.draw(st.integers(0, min(2, x.size))), replace=False)] = 0
    init = np.float64(INITS[kind])
    op, params = eqn_for("reduce", _reduce(kind, dims, flip), x, init)
    check_jvp(op, params, [x, init], {0, 1}, rng)
    check_jvp(op, params, [x, init], {data.draw(st.sampled_from([0, 1]))}, rng)
    check_batch(op, params, lambda r: [r.standard_normal(shape), init],
                bdims(data, [x, init]), rng)


def test_reduce_max_ties_split_evenly() -> None:
    x, init = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]), np.float64(-np.inf)
    op, params = eqn_for("reduce", _reduce("max", (1,)), x, init)
    t = np.array([[5.0, 1.0, 2.0], [4.0, 7.0, 8.0]])
    _, (tangent,) = op.jvp([x, init], [t, Zero(aval(init))], **params)
    np.testing.assert_allclose(tangent, [1.5, 6.0])


def test_reduce_max_chosen_init_takes_its_tangent() -> None:
    x, init = np.array([1.0, 2.0]), np.float64(5.0)
    op, params = eqn_for("reduce", _reduce("max", (0,)), x, init)
    check_jvp(op, params, [x, init], {0, 1}, np.random.default_rng(9))


@pytest.mark.parametrize("kind", ["mul", "add", "max"])
def test_reduce_jvp_over_empty_dims(kind: str) -> None:
    x, init = np.zeros((0, 2)), np.float64(INITS[kind])
    op, params = eqn_for("reduce", _reduce(kind, (0,)), x, init)
    check_jvp(op, params, [x, init], {0, 1}, np.random.default_rng(10))


def _argmax(acc_v: Any, acc_i: Any, x_v: Any, x_i: Any) -> tuple[Any, Any]:
    take = ops.bitwise_or(ops.gt(x_v, acc_v), ops.bitwise_and(ops.eq(x_v, acc_v),
                                                             ops.lt(x_i, acc_i)))
    return ops.select(take, x_v, acc_v), ops.select(take, x_i, acc_i)


@EXAMPLES
@given(reductions(), st.data())
def test_reduce_argmax_style(case: Any, data: Any) -> None:
    shape, dims = case
    rng = seeded(data)
    x = rng.standard_normal(shape)
    index = np.broadcast_to(np.arange(x.size).reshape(shape), shape).astype(np.int64)
    inits = [np.float64(-np.inf), np.int64(2 ** 62)]
    fn = lambda x, i, a, b: ops.reduce((x, i), (a, b), _argmax, dims)  # noqa: E731
    op, params = eqn_for("reduce", fn, x, index, *inits)
    tangents = check_jvp(op, params, [x, index, *inits], {0}, rng)
    assert isinstance(tangents[1], Zero)
    check_batch(op, params, lambda r: [r.standard_normal(shape), index, *inits],
                bdims(data, [x, index, *inits]), rng)


def test_reduce_unsupported_computation_names_its_ops() -> None:
    x, init = np.ones((2, 3)), np.float64(0.0)
    op, params = eqn_for("reduce", lambda x, i: ops.reduce(
        x, i, lambda a, b: ops.add(ops.mul(a, a), b), (1,)), x, init)
    with pytest.raises(TracerTypeError, match=r"reduce.*\[add, mul\]"):
        op.jvp([x, init], [np.ones((2, 3)), Zero(aval(init))], **params)
    out, t = op.jvp([x, init], [Zero(aval(x)), Zero(aval(init))], **params)
    assert isinstance(t[0], Zero)  # nothing to differentiate: no error
    with pytest.raises(TracerTypeError, match="reduce.*transpose"):
        op.transpose([np.ones(2)], UndefinedPrimal(aval(x)), init, **params)


@EXAMPLES
@given(reductions(), st.sampled_from([{0, 1}, {0}, {1}]), st.data())
def test_reduce_sum_transpose(case: Any, linear: set[int], data: Any) -> None:
    shape, dims = case
    x = np.random.default_rng(11).standard_normal(shape) if 0 in linear else np.zeros(shape)
    init = np.float64(0.0)
    op, params = eqn_for("reduce", _reduce("add", dims), x, init)
    check_transpose(op, params, [x, init], linear, seeded(data))


@EXAMPLES
@given(reductions(), st.sampled_from(sorted(INITS)), st.data())
def test_reduce_batched_init_values(case: Any, kind: str, data: Any) -> None:
    shape, dims = case
    rng = seeded(data)
    x = rng.standard_normal(shape)
    init = np.float64(INITS[kind])
    op, params = eqn_for("reduce", _reduce(kind, dims), x, init)
    dims_ = [data.draw(st.one_of(st.none(), st.integers(0, len(shape)))), 0]
    # Per-example inits must each be an identity of the computation (the seed rule).
    check_batch(op, params, lambda r: [r.standard_normal(shape), init], dims_, rng)


def test_every_op_here_has_its_rules() -> None:
    names = ["broadcast_in_dim", "reshape", "transpose", "rev", "slice", "concatenate", "pad",
             "iota", "get_dimension_size", "dot_general", "reduce"]
    for name in names:
        op = OPS[name]
        assert op.jvp is not None and op.batch is not None, name
        if op.linear:
            assert op.transpose is not None, name

"""The cpu fusion plan and loops against the interpreter: a row group's per-row values,
random graphs of reductions / broadcasts / transposes / rolls / pads (and the plan's own
invariants), transposed matmul operands folded into BLAS calls, pads and concatenates
inside loops split at their borders, small products as fused loops, threads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.numba.fusion import OpStep, RowGroup, nest_reads, plan_graph
from tracer.backend.numba.lower import fold_transposes_into_dots
from tracer.core import ShapedArray, Var, typecheck
from tracer.interpret import run_graph
from tracer.passes.pipeline import optimize
from tracer.tracing import trace_flat
from tests.checks import threaded


def _agree(fn, *args, rtol=1e-12, atol=1e-12):
    got = tr.jit(fn)(*args)
    want = tr.jit(fn, backend="interpreter")(*args)
    if not isinstance(got, (tuple, list)):
        got, want = [got], [want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# ------------------------------------------------------------------ row group scratch

def _pinv_like(s, x, y):
    large = s > 0.5 * tnp.max(s)
    c = tnp.where(large, 1 / tnp.where(large, s, 1), 0)
    return c[:, None] * x.T, c[:, None] * (y @ y.T).T


def test_a_row_value_read_by_a_later_nest_is_kept_in_memory():
    # `c` is computed per row in the first row group (with `c[:, None] * x.T`), and the
    # nest after the matmul reads it through the same broadcast: it needs every row.
    rng = np.random.default_rng(0)
    s, x, y = np.array([3.0, 0.1, 2.0]), rng.random((4, 3)), rng.random((3, 2))
    _agree(_pinv_like, s, x, y)
    graph, _ = trace_flat(lambda *a: list(_pinv_like(*a)),
                          [ShapedArray(a.shape, a.dtype) for a in (s, x, y)])
    graph = optimize(graph)
    plan = plan_graph(graph)
    c = next(e.outputs[0] for e in reversed(graph.eqns) if e.op.name == "select")
    groups = [step for step in plan.steps if isinstance(step, RowGroup)]
    assert not any(id(c) in g.scratch for g in groups)


# ------------------------------------------------------------------ random graphs

# Values have symbolic shapes over the dims "m" and "n" (sizes drawn separately, often
# equal, which is when unlinked nests may join), so every program is well-typed. Steps
# mostly read the latest value of the rank they need (chains, as in real code) and
# sometimes an older one: a value read by several nests must stay in memory.
UNARY = {"neg": lambda x: -x, "tanh": tnp.tanh, "abs": tnp.abs,
         "sqrt": lambda x: tnp.sqrt(tnp.abs(x))}
BINARY = {"add": tnp.add, "mul": tnp.multiply, "max": tnp.maximum,
          "div": lambda a, b: a / (1.0 + tnp.abs(b))}
KINDS = ["vector", "map", "scale", "scale", "scale", "combine", "reduce", "reduce", "transpose",
         "matmul", "matmul", "matmul", "outer", "threshold", "roll", "shift"]


def _pick(draw, shapes, fits, first=0):
    found = [k for k, s in enumerate(shapes) if k >= first and fits(s)]
    return found[-1] if draw(st.integers(0, 3)) else draw(st.sampled_from(found))


def _inverse_of_large(v):  # what pinv does to singular values
    large = v > 0.5 * tnp.max(v)
    return tnp.where(large, 1 / tnp.where(large, v, 1), 0)


def _step(draw, shapes):
    """One random step `(kind, operands, option)` and its result's symbolic shape."""
    kind = draw(st.sampled_from(KINDS))
    k = _pick(draw, shapes, lambda s: len(s) == (1 if kind in ("vector", "outer") else 2))
    xs = shapes[k]
    if kind in ("vector", "map"):
        return (kind, (k,), draw(st.sampled_from([*sorted(UNARY), "pinv"]))), xs
    if kind == "scale":  # a matrix times a vector along one of its dims, often a computed one
        derived = draw(st.integers(0, 3)) and any(len(s) == 1 for s in shapes[3:])
        j = _pick(draw, shapes, lambda s: len(s) == 1, 3 if derived else 0)
        if shapes[j][0] not in xs:
            k = _pick(draw, shapes, lambda s: len(s) == 2 and shapes[j][0] in s)
        return (kind, (k, j), draw(st.sampled_from(sorted(BINARY)))), shapes[k]
    if kind == "combine":
        j = _pick(draw, shapes, lambda s: s == xs)
        return (kind, (k, j), draw(st.sampled_from(sorted(BINARY)))), xs
    if kind == "reduce":
        axis = draw(st.sampled_from([None, 0, 1]))
        return (kind, (k,), (axis, draw(st.booleans()))), \
            () if axis is None else (xs[1 - axis],)
    if kind == "transpose":
        return (kind, (k,), None), xs[::-1]
    if kind == "matmul":  # with a matching matrix, or a Gram matrix x @ x.T / x.T @ x
        def fits(s):
            return len(s) == 2 and s[0] == xs[1]
        gram = draw(st.sampled_from([None, "left", "right"] if any(map(fits, shapes))
                                    else ["left", "right"]))
        j = _pick(draw, shapes, fits) if gram is None else k
        return (kind, (k, j), gram), \
            (xs[0], shapes[j][1]) if gram is None else (xs[gram == "right"],) * 2
    if kind == "outer":
        j = _pick(draw, shapes, lambda s: len(s) == 1)
        return (kind, (k, j), None), xs + shapes[j]
    if kind in ("roll", "shift"):  # along an axis by one, either way (shift: zeros in)
        return (kind, (k,), (draw(st.sampled_from([0, 1])), draw(st.sampled_from([1, -1])))), xs
    return (kind, (k,), None), xs  # threshold


@st.composite
def programs(draw):
    """(steps, output positions) over the inputs x (m, n), u (n,), v (m,)."""
    shapes = [("m", "n"), ("n",), ("m",)]
    steps = []
    for _ in range(draw(st.integers(8, 20))):
        step, shape = _step(draw, shapes)
        steps.append((*step, shape))
        shapes.append(shape)
    # Matrix outputs are held in memory, which splits nests (and makes row groups).
    extra = [k for k in range(3, len(shapes) - 1)
             if len(shapes[k]) == 2 and not draw(st.integers(0, 2))]
    return steps, [*extra, len(shapes) - 1]


def _apply(kind, args, shapes, option, shape):
    a = args[0]
    if kind in ("vector", "map"):
        return _inverse_of_large(a) if option == "pinv" else UNARY[option](a)
    if kind == "scale":
        along = shapes[1][0] == shape[0]
        return BINARY[option](a, args[1][:, None] if along else args[1][None, :])
    if kind == "combine":
        return BINARY[option](a, args[1])
    if kind == "reduce":
        axis, use_max = option
        return (tnp.max if use_max else tnp.sum)(a, axis=axis)
    if kind == "transpose":
        return a.T
    if kind == "matmul":
        return {None: lambda: a @ args[1], "left": lambda: a @ a.T,
                "right": lambda: a.T @ a}[option]()
    if kind == "outer":
        return a[:, None] * args[1][None, :]
    if kind == "roll":
        return tnp.roll(a, option[1], axis=option[0])
    if kind == "shift":
        axis, by = option
        cut = slice(None, -1) if by > 0 else slice(1, None)
        kept = tuple(cut if d == axis else slice(None) for d in range(2))
        return tnp.pad(a[kept], [(max(by, 0), max(-by, 0)) if d == axis else (0, 0)
                                 for d in range(2)])
    return tnp.where(a > 0.5 * tnp.max(a), a, 0.0)


def _program(steps, outs):
    def fn(x, u, v):
        vals, shapes = [x, u, v], [("m", "n"), ("n",), ("m",)]
        for kind, operands, option, shape in steps:
            vals.append(_apply(kind, [vals[k] for k in operands], [shapes[k] for k in operands],
                               option, shape))
            shapes.append(shape)
        return [vals[i] for i in outs]
    return fn


SIZES = st.sampled_from([(3, 3), (4, 4), (2, 5), (5, 3), (1, 4)])


@settings(max_examples=20, deadline=None)
@given(programs(), SIZES, st.integers(0, 99))
def test_random_graphs_of_reductions_broadcasts_and_transposes(program, sizes, seed):
    rng = np.random.default_rng(seed)
    m, n = sizes
    args = [rng.uniform(-1, 2, (m, n)), rng.uniform(-1, 2, n), rng.uniform(-1, 2, m)]
    _agree(_program(*program), *args, rtol=1e-10)


def _reads(plan, step):
    """Ids of the materialized values a step reads."""
    if isinstance(step, OpStep):
        return {id(a) for a in step.eqn.inputs if isinstance(a, Var)}
    nests = step.nests if isinstance(step, RowGroup) else [step]
    return set().union(*(nest_reads(plan, n) for n in nests))


def _written(step):
    if isinstance(step, OpStep):
        return {id(v) for v in step.eqn.outputs}
    nests = step.nests if isinstance(step, RowGroup) else [step]
    return {id(v) for n in nests for v in [*n.stores, *(o for e in n.reduces for o in e.outputs)]}


@settings(max_examples=200, deadline=None)
@given(programs(), SIZES)
def test_random_plans_read_only_what_earlier_steps_keep(program, sizes):
    """Each step reads values an earlier step wrote (or inputs), and a row group's
    per-row values are read by no other step (they hold one row at a time)."""
    m, n = sizes
    graph, _ = trace_flat(_program(*program), [ShapedArray(s, np.float64)
                                               for s in ((m, n), (n,), (m,))])
    plan = plan_graph(optimize(graph))
    ready = plan.materialized - set().union(*(_written(s) for s in plan.steps))  # inputs
    for step in plan.steps:
        assert _reads(plan, step) <= ready | _written(step), step
        ready |= _written(step)
        if isinstance(step, RowGroup):
            others = set().union(*(_reads(plan, s) for s in plan.steps if s is not step))
            assert not step.scratch & others


# ------------------------------------------------------------------ a.T @ b

def _dot_inputs(graph):
    return [e for e in graph.eqns if e.op.name in ("dot_general", "transpose")]


@pytest.mark.parametrize("fn", [
    lambda a, b: a.T @ b,
    lambda a, b: tnp.dot(tnp.swapaxes(a, 0, 1), b),
    lambda a, b: ops.dot_general(ops.transpose(a, (1, 0)), b, (((1,), (0,)), ((), ()))),
    lambda a, b: ops.dot_general(a, ops.transpose(b, (1, 0)), (((0,), (1,)), ((), ()))),
], ids=["matmul", "swapaxes", "ops", "rhs"])
def test_a_transposed_matmul_operand_is_read_by_blas_not_copied(fn):
    rng = np.random.default_rng(1)
    a, b = rng.random((50, 40)), rng.random((50, 36))  # large enough for BLAS
    compiled = tr.jit(fn).lower(a, b).compile()
    body = compiled.source.rsplit("@numba.njit(", 1)[1]  # (the host function, last)
    assert "loop nest" not in body and ".T," in body  # blas_matmul(a.T, b, ...): no copy of a.T
    np.testing.assert_allclose(compiled(a, b), fn(a, b), rtol=1e-12)


def test_folding_transposes_keeps_the_output_order_and_the_values():
    rng = np.random.default_rng(2)
    cases = [  # (function, args, transposes left)
        (lambda x, y: tnp.matmul(tnp.transpose(x, (0, 2, 1)), y),  # batched: folded
         [rng.random((2, 4, 3)), rng.random((2, 4, 5))], 0),
        (lambda x, y: tnp.matmul(tnp.transpose(x, (2, 1, 0)), y),  # free dims swap: kept
         [rng.random((2, 3, 4)), rng.random((2, 5))], 1),
        (lambda x, y: tnp.transpose(x, (1, 0)) @ y + tnp.transpose(x, (1, 0)),  # still read
         [rng.random((3, 3)), rng.random((3, 3))], 1),
        (lambda x, y: tnp.einsum("bij,kjb->bik", x, y),  # int64 loops read any layout
         [rng.integers(-3, 3, (2, 3, 4)), rng.integers(-3, 3, (5, 4, 2))], 0),
    ]
    for fn, args, left in cases:
        graph, _ = trace_flat(lambda *xs: [fn(*xs)],
                              [ShapedArray(a.shape, a.dtype) for a in args])
        folded = typecheck(fold_transposes_into_dots(optimize(graph)))
        assert sum(e.op.name == "transpose" for e in folded.eqns) == left
        np.testing.assert_allclose(run_graph(folded, args, check=True)[0], fn(*args))
        np.testing.assert_allclose(tr.jit(fn)(*args), fn(*args), rtol=1e-12)


# ------------------------------------------------------------------ pad and concatenate in loops

def _source(fn, *args):
    source = tr.jit(fn).lower(*args).compile().source
    return source.rsplit("@numba.njit(", 1)[1].split("\n", 1)[1]  # the host function, last


def test_concatenates_cut_at_the_same_place_share_their_runs():
    """Two concatenates of pieces of equal widths, read in one loop, switch pieces at the
    same column: one test per run and a loop copy per piece (2), not one per combination
    of their pieces (4)."""
    rng = np.random.default_rng(8)
    a, b = rng.random((6, 3)), rng.random((6, 5))

    def f(a, b):
        return tnp.concatenate([a, b], axis=1) * tnp.concatenate([tnp.exp(a), b * 2.0], axis=1)
    body = _source(f, a, b)
    assert body.count("branch_") == 3 and body.count("in range(i1_from") == 2, body
    _agree(f, a, b)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.integers(-2, 3), st.integers(-2, 3), st.integers(0, 2)),
                min_size=2, max_size=2),
       st.sampled_from([(0, 5), (1, 1), (3, 4), (6, 2)]), st.integers(-3, 3),
       st.sampled_from([np.float64, np.float32, np.int32, np.float16]))
def test_pads_and_concatenates_inside_loops_match_the_interpreter(config, shape, shift, dtype):
    x = (np.arange(np.prod(shape)).reshape(shape) % 7 - 3).astype(dtype)
    if any(n + lo + hi + max(n - 1, 0) * i < 0 for n, (lo, hi, i) in zip(shape, config)):
        return  # (a negative padding larger than the array is an error)

    def fn(x):
        padded = ops.pad(x * 2, np.zeros((), dtype) + 1, config)
        both = ops.concatenate([x, x + 1, ops.rev(x, (1,))], 1)
        return padded + 1, tnp.roll(both, shift, axis=1) - 1, tnp.roll(x, shift, axis=0)[::-1, 1:]
    _agree(fn, x, rtol=1e-3 if dtype == np.float16 else 1e-12)


def test_a_stencil_step_is_one_loop_nest_split_at_its_borders():
    def heat(u):
        lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        rolled = tnp.roll(u, 1, axis=1) + tnp.roll(u, -1, axis=1)
        return tnp.pad(u[1:-1, 1:-1] + 0.1 * lap, 1), u + 0.1 * rolled
    u = np.random.default_rng(3).random((40, 30))
    body = _source(heat, u)  # (the two results: one pass, both over [40, 30])
    assert body.count("loop nest over") == 1 and "# pad" not in body
    assert "while i1_from" in body and body.count("for i1 in range(i1_from") > 1
    _agree(heat, u)
    assert _source(heat, np.zeros((1237, 573))) == body  # no sizes in it


def test_a_chain_of_stencil_steps_recomputes_nothing_and_reuses_two_buffers():
    def steps(u):
        for _ in range(12):
            u = u + 0.1 * (tnp.roll(u, 1, axis=0) + tnp.roll(u, -1, axis=0) - 2.0 * u)
        return u
    u = np.random.default_rng(4).random((50, 20))
    graph, _ = trace_flat(lambda x: [steps(x)], [ShapedArray(u.shape, u.dtype)])
    nests = [s for s in plan_graph(optimize(graph)).steps]
    assert len(nests) == 12  # one per step: a step read at shifted rows is stored
    signature = _source(steps, u).splitlines()[0]
    assert signature.count("buf") == 2  # ping-pong: a buffer is reused once read
    _agree(steps, u)


# ------------------------------------------------------------------ small products as loops

def test_small_products_fuse_with_their_neighbours():
    rng = np.random.default_rng(5)
    x, c = rng.normal(size=(5000, 16)), rng.normal(size=(8, 16))

    def assign(x, c):  # k-means: distances straight into an argmin, one-hot never built
        d2 = tnp.sum(x * x, axis=1)[:, None] - 2.0 * (x @ c.T) + tnp.sum(c * c, axis=1)
        labels = tnp.argmin(d2, axis=1)
        onehot = (labels[:, None] == tnp.arange(8)[None, :]).astype(x.dtype)
        return onehot.T @ x / tnp.maximum(tnp.sum(onehot, axis=0), 1.0)[:, None]
    body = _source(assign, x, c)
    assert "blas_matmul" not in body
    assert body.splitlines()[0].count("buf") <= 3  # no distance matrix, no one-hot
    _agree(assign, x, c, rtol=1e-10)
    big = rng.normal(size=(40, 40))
    assert "blas_matmul" in _source(lambda a, b: a @ b, big, big)


def test_nests_bound_by_computing_run_in_threads_and_those_bound_by_memory_do_not():
    x = np.random.default_rng(6).random((400, 200))
    assert "parallel_nest" not in _source(lambda x: x * 2.0 + 1.0, x)
    assert ("parallel_nest" in _source(lambda x: tnp.exp(x) * 2.0, x)) == threaded()
    def distances(x, y):  # each row of x against each row of y: cheap ops, read often
        d = x[:, None] - y[None]
        return tnp.min(tnp.sum(d * d, axis=-1), axis=1)
    assert ("parallel_nest" in _source(distances, x[:, :8], x[:90, :8])) == threaded()
    _agree(distances, x[:, :8], x[:90, :8])


def test_layers_of_the_same_code_share_one_parallel_kernel():
    """Two layers that differ only in their arrays (and sizes) give the same nest: one
    `parallel=True` function, called twice (numba spends seconds on each)."""
    rng = np.random.default_rng(7)
    x, y = rng.random((400, 200)), rng.random((300, 200))

    def layers(x, y):
        return tnp.exp(x) * 2.0, tnp.exp(y) * 2.0
    source = tr.jit(layers).lower(x, y).compile().source
    assert source.count("def parallel_nest") == threaded()
    assert source.count("parallel_nest_1(") == 3 * threaded()  # (defined, called twice)
    _agree(layers, x, y)


@pytest.mark.parametrize("spec, shapes, dtype, loops", [
    ("ik,jk->ij", [(600, 16), (70, 16)], np.float64, False),  # stored: BLAS is faster
    ("ik,jk->ij", [(256, 10), (512, 10)], np.float32, False),
    ("ij,jk->ik", [(256, 512), (512, 10)], np.float32, False),
    ("ki,kj->ij", [(5000, 12), (5000, 3)], np.float32, True),  # small result: contraction outer
    ("bij,bjk->bik", [(40, 30, 9), (40, 9, 50)], np.float64, True),  # a batch of small products
    ("ij,ijk->ik", [(60, 700), (60, 700, 3)], np.complex128, True),
    ("i,ij->j", [(5000,), (5000, 20)], np.float32, True),
    ("i,ij->j", [(3000,), (3000, 20)], np.float32, False),  # too short to beat BLAS
])
def test_small_products_as_loops_match_the_interpreter(spec, shapes, dtype, loops):
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if dtype == np.complex128:
        args = [a + 1j * rng.standard_normal(a.shape) for a in args]
    fn = lambda a, b: tnp.einsum(spec, a, b)  # noqa: E731
    assert ("blas_matmul" not in _source(fn, *args)) == loops
    _agree(fn, *args, rtol=1e-10, atol=1e-2 if dtype == np.float32 else 1e-10)  # sums of 5000

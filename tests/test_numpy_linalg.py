"""tracer.numpy linear algebra vs NumPy, eagerly and traced."""

from __future__ import annotations

import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tests.checks import like_numpy
from tracer.core import aval_of, typecheck
from tracer.errors import ParamError, ShapeError, TracerError, TracerIndexError
from tracer.interpret import run_graph
from tracer.tracing import trace_flat

RNG = np.random.default_rng(0)


def sample(shape, dtype=np.float64, rng=RNG):
    """Small integer values, so sums of products are exact in every dtype."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    vals = rng.integers(-3, 4, shape)
    if dtype.kind == "u":
        vals = np.abs(vals)
    if dtype.kind == "c":
        return (vals + 1j * rng.integers(-3, 4, shape)).astype(dtype)
    return vals.astype(dtype)


def run_both(fn, *args):
    """(eager result, traced result): the traced graph typechecks and every eqn's
    reference result matches its shape rule (`check=True`)."""
    eager = fn(*args)
    graph, captured = trace_flat(lambda *xs: [fn(*xs)], [aval_of(a) for a in args])
    assert not captured
    traced = run_graph(typecheck(graph), [np.asarray(a) for a in args], check=True)[0]
    return eager, traced


def check(fn, *args, want, rtol=1e-6):
    want = np.asarray(want)
    for got in run_both(fn, *args):
        assert isinstance(got, np.ndarray)
        assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-9)


def check_np(name, *args, **kw):
    """tnp.<name> equals np.<name> on `args`, eagerly and traced."""
    fn = lambda *xs: getattr(tnp, name)(*xs, **kw)  # noqa: E731
    check(fn, *args, want=getattr(np, name)(*args, **kw))


# ----------------------------------------------------------------------------- matmul

MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
    ((5, 1, 2, 3), (4, 3, 2)), ((1, 2, 3), (6, 3, 1)), ((3,), (2, 3, 4)),
    ((2, 2, 3), (3,)), ((0, 3), (3, 2)), ((2, 0), (0, 4)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes(sa, sb):
    check_np("matmul", sample(sa), sample(sb))


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "int8", "uint8", "bool",
                                   "complex64"])
def test_matmul_dtypes(dtype):
    a, b = sample((2, 3, 4), dtype), sample((4, 5), dtype)
    check_np("matmul", a, b)
    check(lambda x, y: x @ y, a, b, want=a @ b)


def test_matmul_promotes_nep50():
    a, b = sample((2, 3), np.int32), sample((3, 2), np.float32)
    check_np("matmul", a, b)  # int32 @ float32 -> float64 (NumPy)


@st.composite
def _matmul_shapes(draw):
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=3))
    ba = [draw(st.sampled_from([d, 1])) for d in batch][draw(st.integers(0, len(batch))):]
    bb = [draw(st.sampled_from([d, 1])) for d in batch][draw(st.integers(0, len(batch))):]
    sa = (k,) if draw(st.booleans()) and not ba else tuple(ba) + (n, k)
    sb = (k,) if draw(st.booleans()) and not bb else tuple(bb) + (k, m)
    return sa, sb


@settings(max_examples=40)
@given(_matmul_shapes(), st.sampled_from(["float64", "int64", "bool"]))
def test_matmul_hypothesis(shapes, dtype):
    sa, sb = shapes
    check_np("matmul", sample(sa, dtype), sample(sb, dtype))


def test_matmul_errors_name_shapes():
    with pytest.raises(ShapeError, match=r"matmul.*core dimension.*f64\[2,3\].*f64\[4,5\]"):
        tnp.matmul(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ShapeError, match=r"matmul.*not have enough dimensions"):
        tnp.matmul(np.ones(()), np.ones((2,)))
    with pytest.raises(ShapeError, match=r"matmul.*\(2,\).*\(3,\).*f64\[2,2,3\]"):
        tnp.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 5)))
    with pytest.raises(ValueError, match="matmul"):  # ShapeError is a ValueError, like NumPy
        run_both(lambda a, b: a @ b, np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))


# ----------------------------------------------------------------------------- dot & co


@pytest.mark.parametrize("sa,sb", [((), (3,)), ((3,), ()), ((3,), (3,)), ((2, 3), (3,)),
                                   ((3,), (3, 4)), ((2, 3), (3, 4)), ((2, 3), (4, 3, 5)),
                                   ((2, 2, 3), (2, 3, 4))])
def test_dot(sa, sb):
    check_np("dot", sample(sa), sample(sb))


def test_dot_weak_scalar_and_errors():
    x = sample((3,), np.float32)
    # API.md: Python scalars are weak everywhere (np.dot itself would give float64 here)
    check(lambda a: tnp.dot(2, a), x, want=np.multiply(2, x))
    with pytest.raises(ShapeError, match=r"dot: shapes \(2, 3\) and \(4, 5\) not aligned.*"
                                         r"f64\[2,3\]"):
        tnp.dot(np.ones((2, 3)), np.ones((4, 5)))


@pytest.mark.parametrize("dtype", ["float64", "complex128", "int32", "bool"])
def test_vdot_inner_outer(dtype):
    a, b = sample((2, 3), dtype), sample((6,), dtype)
    check_np("vdot", a, b)
    check_np("inner", sample((2, 3), dtype), sample((4, 3), dtype))
    check_np("inner", sample((), dtype), sample((4, 3), dtype))
    check_np("outer", a, b)
    with pytest.raises(ShapeError, match=r"vdot.*\[2,3\].*\[5\]"):
        tnp.vdot(a, b[:5])
    with pytest.raises(ShapeError, match=r"inner.*\[2,3\].*\[3,2\]"):
        tnp.inner(sample((2, 3), dtype), sample((3, 2), dtype))


@pytest.mark.parametrize("sa,sb,axes", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4, 5), 0),
    ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((2, 3, 4), (5, 2), (0, 1)),
    ((3, 4), (4, 3), ((-1, 0), (0, -1))),
])
def test_tensordot(sa, sb, axes):
    check_np("tensordot", sample(sa), sample(sb), axes=axes)


def test_tensordot_errors():
    with pytest.raises(ShapeError, match=r"tensordot: shape-mismatch.*f64\[2,3\]"):
        tnp.tensordot(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ParamError, match="tensordot"):
        tnp.tensordot(np.ones((2, 3)), np.ones((3, 5)), axes=3)
    with pytest.raises(TracerIndexError, match="tensordot: axis 5"):
        tnp.tensordot(np.ones((2, 3)), np.ones((3, 5)), axes=([5], [0]))


@settings(max_examples=30)
@given(st.data())
def test_tensordot_hypothesis(data):
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=5))
    ra = data.draw(st.integers(0, len(sizes)))
    a_axes, b_axes = list(range(ra)), list(range(ra, len(sizes)))
    n = data.draw(st.integers(0, min(len(a_axes), len(b_axes))))
    pa = data.draw(st.permutations(a_axes))
    pb = data.draw(st.permutations(b_axes))
    # contract the first n of each permutation: give them the same sizes
    shape_a = [sizes[i] for i in a_axes]
    shape_b = [sizes[i] for i in b_axes]
    for i in range(n):
        shape_b[pb[i] - ra] = shape_a[pa[i]]
    axes = ([pa[i] for i in range(n)], [pb[i] - ra for i in range(n)])
    check_np("tensordot", sample(tuple(shape_a)), sample(tuple(shape_b)), axes=axes)


# ----------------------------------------------------------------------------- einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("i,i", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]), ("...ii->...i", [(2, 3, 3)]),
    ("i...->...", [(2, 3, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 4)]), ("ij,jk", [(2, 1), (3, 4)]), (",i->i", [(), (3,)]),
    ("Ba", [(2, 3)]), ("a b , b c -> a c", [(2, 3), (3, 2)]), ("iii->i", [(2, 2, 2)]),
    ("...,...", [(2, 1), (3,)]), ("ijk,ikj->", [(2, 3, 4), (2, 4, 3)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUM_CASES)
def test_einsum_cases(spec, shapes):
    args = [sample(s) for s in shapes]
    check(lambda *xs: tnp.einsum(spec, *xs), *args, want=np.einsum(spec, *args))


@pytest.mark.parametrize("dtype", ["int8", "int32", "bool", "complex64", "float32"])
def test_einsum_dtypes(dtype):
    a, b = sample((2, 3), dtype), sample((3, 4), dtype)
    check(lambda x, y: tnp.einsum("ij,jk->ik", x, y), a, b, want=np.einsum("ij,jk->ik", a, b))
    check(lambda x: tnp.einsum("ij->", x), a, want=np.einsum("ij->", a))


@st.composite
def _einsum_problem(draw):
    letters = "abcd"
    size = {c: draw(st.integers(1, 3)) for c in letters}
    n_ops = draw(st.integers(1, 3))
    ell = draw(st.lists(st.integers(1, 3), max_size=2))
    terms, shapes = [], []
    for _ in range(n_ops):
        term = draw(st.lists(st.sampled_from(letters), max_size=3))
        use_ell = bool(ell) and draw(st.booleans())
        shape = [size[c] for c in term]
        if use_ell:
            k = draw(st.integers(0, len(ell)))
            e_shape = [draw(st.sampled_from([d, 1])) for d in ell[len(ell) - k:]]
            pos = draw(st.integers(0, len(term)))
            term = term[:pos] + ["..."] + term[pos:]
            shape = shape[:pos] + e_shape + shape[pos:]
        terms.append("".join(term))
        shapes.append(tuple(shape))
    spec = ",".join(terms)
    if draw(st.booleans()):
        used = sorted({c for t in terms for c in t if c.isalpha()})
        out = draw(st.permutations(used))[:draw(st.integers(0, len(used)))]
        if any("..." in t for t in terms):
            out.insert(draw(st.integers(0, len(out))), "...")
        spec += "->" + "".join(out)
    return spec, shapes


@settings(max_examples=50)
@given(_einsum_problem())
def test_einsum_hypothesis(problem):
    spec, shapes = problem
    args = [sample(s) for s in shapes]
    try:
        want = np.einsum(spec, *args)
    except ValueError:
        with pytest.raises(TracerError):
            tnp.einsum(spec, *args)
        return
    check(lambda *xs: tnp.einsum(spec, *xs), *args, want=want)


def test_einsum_errors():
    with pytest.raises(ShapeError, match=r"einsum.*'j'.*size 4.*f64\[4,4\].*size 3"):
        tnp.einsum("ij,jk", np.ones((2, 3)), np.ones((4, 4)))
    with pytest.raises(ParamError, match="einsum.*2 operands but 1"):
        tnp.einsum("ij,jk", np.ones((2, 3)))
    with pytest.raises(ParamError, match="einsum.*'z'"):
        tnp.einsum("ij->z", np.ones((2, 3)))
    with pytest.raises(ShapeError, match="einsum.*operand 0 has 3 dimensions"):
        tnp.einsum("ij", np.ones((2, 3, 4)))
    with pytest.raises(ShapeError, match=r"einsum.*repeats label 'i'"):
        tnp.einsum("ii", np.ones((2, 3)))


# ----------------------------------------------------------------------------- diagonals


@pytest.mark.parametrize("offset", [-3, -1, 0, 1, 2, 5])
def test_diagonal_trace(offset):
    a = sample((3, 4))
    check_np("diagonal", a, offset=offset)
    check_np("trace", a, offset=offset)
    b = sample((2, 3, 4), np.int32)
    check_np("diagonal", b, offset=offset, axis1=2, axis2=0)
    check_np("trace", b, offset=offset, axis1=-1, axis2=1)  # int32 widens, like np.sum
    check_np("diag", sample((4,)), k=offset)
    check_np("diag", a, k=offset)


def test_diag_empty_and_errors():
    check_np("diag", np.zeros((0,)), k=2)
    with pytest.raises(ShapeError, match=r"diag.*f64\[2,2,2\]"):
        tnp.diag(np.ones((2, 2, 2)))
    with pytest.raises(ParamError, match=r"diagonal: axis1 and axis2.*f64\[2,2\]"):
        tnp.diagonal(np.ones((2, 2)), 0, 1, -1)
    with pytest.raises(TracerIndexError, match="diagonal: axis 2"):
        tnp.diagonal(np.ones((2, 2)), 0, 0, 2)


def test_letters_are_all_valid_einsum_labels():
    spec = string.ascii_letters[:6]
    a = sample((1,) * 6)
    check(lambda x: tnp.einsum(spec, x), a, want=np.einsum(spec, a))


def test_transposed_operand_is_read_by_blas_not_copied():
    a, b = sample((5, 3)), sample((5, 4))
    for fn in (lambda x, y: x.T @ y, lambda x, y: tnp.dot(tnp.swapaxes(x, 0, 1), y)):
        compiled = tr.jit(fn).lower(a, b).compile()
        assert "loop nest" not in compiled.source  # folded into the dot: no transpose copy
        np.testing.assert_allclose(compiled(a, b), a.T @ b, rtol=1e-12)
    # A permutation that would reorder the free dims keeps its transpose (and is right).
    c, d = sample((2, 3, 4)), sample((2, 5))
    check(lambda x: tnp.matmul(tnp.transpose(x, (2, 1, 0)), d), c,
          want=np.matmul(np.transpose(c, (2, 1, 0)), d))


@pytest.mark.parametrize("spec,shapes", [
    ("i->", [(0,)]), ("ij,jk->ik", [(2, 0), (0, 3)]), ("ij,ij->ij", [(1, 0), (3, 1)]),
    ("i,i->", [(0,), (1,)]), ("ij,jk", [(2, 1), (0, 3)]), ("...i,...i", [(0, 2), (1, 2)]),
])
def test_einsum_size_0_labels_win_over_broadcast_1(spec, shapes):
    arrays = [np.ones(s) for s in shapes]
    like_numpy(lambda *a: tnp.einsum(spec, *a), lambda *a: np.einsum(spec, *a), *arrays)

"""The ndarray face of Tracer: operators (NEP 50 dtypes), properties, methods."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import tracer.numpy  # noqa: F401  (installs the methods)
from tests.test_numpy_linalg import sample
from tracer.core import ShapedArray, aval_of, typecheck
from tracer.interpret import run_graph
from tracer.errors import ShapeError, TracerTypeError
from tracer.tracing import trace_flat


def check(fn, *args, want):
    """`fn` traced on Tracers (eagerly it would just be NumPy's own ndarray method)."""
    graph, _ = trace_flat(lambda *xs: [fn(*xs)], [aval_of(a) for a in args])
    got = run_graph(typecheck(graph), [np.asarray(a) for a in args], check=True)[0]
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def out_aval(fn, *avals):
    graph, _ = trace_flat(lambda *xs: [fn(*xs)], avals)
    return graph.out_avals[0]


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.eq, operator.ne, operator.lt, operator.le,
          operator.gt, operator.ge]
BITWISE = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift]


@pytest.mark.parametrize("op", BINARY + BITWISE, ids=lambda f: f.__name__)
def test_binary_operators_match_numpy(op):
    dtype = np.int32 if op in BITWISE else np.float32
    a, b = sample((2, 3), dtype), np.abs(sample((3,), dtype)) + 1
    check(op, a, b, want=op(a, b))
    check(lambda x: op(x, 2), a, want=op(a, 2))          # Python scalar on the right
    check(lambda x: op(3, x), b, want=op(3, b))          # reflected
    check(lambda y: op(a, y), b, want=op(a, b))          # ndarray op tracer -> __r*__


def test_divmod_and_unary():
    a = sample((4,), np.int64)
    b = np.array([1, 2, -3, 4])
    check(lambda x, y: divmod(x, y)[0], a, b, want=np.floor_divide(a, b))
    check(lambda x, y: divmod(x, y)[1], a, b, want=np.remainder(a, b))
    check(lambda x: divmod(7, x)[1], b, want=np.remainder(7, b))
    check(operator.neg, a, want=-a)
    check(operator.pos, a, want=+a)
    check(abs, a, want=np.abs(a))
    check(operator.invert, a, want=~a)
    check(operator.invert, a > 0, want=~(a > 0))


def test_matmul_operator():
    a, b = sample((2, 3)), sample((3, 4))
    check(operator.matmul, a, b, want=a @ b)
    check(lambda y: a @ y, b, want=a @ b)


@pytest.mark.parametrize("fn,aval,want", [
    (lambda x: x + 1, ShapedArray((2,), np.int8), np.int8),
    (lambda x: 2.0 * x, ShapedArray((2,), np.float32), np.float32),
    (lambda x: x / 2, ShapedArray((2,), np.int64), np.float64),
    (lambda x: x // 2, ShapedArray((2,), np.uint8), np.uint8),
    (lambda x: x + np.float64(1), ShapedArray((2,), np.float32), np.float64),
    (lambda x: x * 1j, ShapedArray((2,), np.float32), np.complex64),
    (lambda x: x < 1.5, ShapedArray((2,), np.int16), np.bool_),
    (lambda x: x @ x, ShapedArray((2, 2), np.int32), np.int32),
])
def test_operator_dtypes_nep50(fn, aval, want):
    out = out_aval(fn, aval)
    assert out.dtype == want and not out.weak_type


def test_properties():
    a = sample((2, 3, 4))
    c = sample((2, 3), np.complex64)
    check(lambda x: x.T, a, want=a.T)
    check(lambda x: x.mT, a, want=a.mT)
    check(lambda x: x.real, c, want=c.real)
    check(lambda x: x.imag, c, want=c.imag)
    with pytest.raises(ShapeError, match=r"mT.*f64\[3\]"):
        trace_flat(lambda x: [x.mT], [ShapedArray((3,), np.float64)])


@pytest.mark.parametrize("name,args,kwargs", [
    ("sum", (), {}), ("sum", (0,), {"keepdims": True}), ("prod", (1,), {}),
    ("mean", (), {"axis": -1}), ("var", (), {}), ("std", (0,), {}), ("max", (1,), {}),
    ("min", (), {}), ("argmax", (1,), {}), ("argmin", (), {}), ("all", (), {}),
    ("any", (0,), {}), ("cumsum", (1,), {}), ("cumprod", (), {}),
    ("reshape", (3, 2), {}), ("reshape", ((6,),), {}), ("reshape", (-1,), {}),
    ("transpose", (), {}), ("transpose", (1, 0), {}), ("transpose", ((1, 0),), {}),
    ("swapaxes", (0, 1), {}), ("ravel", (), {}), ("flatten", (), {}),
    ("clip", (-1, 1), {}), ("round", (), {}), ("conj", (), {}), ("conjugate", (), {}),
    ("take", ([0, 2],), {"axis": 1}), ("repeat", (2,), {"axis": 0}), ("trace", (), {}),
    ("diagonal", (), {}), ("copy", (), {}), ("dot", (np.ones((3, 2)),), {}),
])
def test_methods_match_numpy(name, args, kwargs):
    a = sample((2, 3)) / 2
    check(lambda x: getattr(x, name)(*args, **kwargs), a, want=getattr(a, name)(*args, **kwargs))


def test_squeeze_astype_at_getitem():
    a = sample((1, 3, 1))
    check(lambda x: x.squeeze(), a, want=a.squeeze())
    check(lambda x: x.squeeze(0), a, want=a.squeeze(0))
    check(lambda x: x.astype(np.int8), a, want=a.astype(np.int8))
    check(lambda x: x.astype("float32"), a, want=a.astype("float32"))
    check(lambda x: x[0, 1:, None], a, want=a[0, 1:, None])
    check(lambda x: x.at[0, 1].set(9.0), a, want=np.where(np.arange(3)[None, :, None] == 1,
                                                          9.0, a))


def test_setitem_and_concretization_errors():
    def assign(x):
        x[0] = 1.0
        return [x]
    with pytest.raises(TracerTypeError, match=r"f64\[3\].*x.at\[idx\].set"):
        trace_flat(assign, [ShapedArray((3,), np.float64)])
    with pytest.raises(TypeError):
        trace_flat(lambda x: [x.tolist()], [ShapedArray((3,), np.float64)])


def test_ndarray_operand_defers_to_tracer():
    # ndarray + tracer runs np.add, which Tracer.__array_ufunc__ routes to tnp.add.
    out = out_aval(lambda x: np.ones(3, np.float32) + x, ShapedArray((3,), np.float32))
    assert out == ShapedArray((3,), np.float32)
    with pytest.raises(TypeError):  # unknown operand types get NotImplemented
        trace_flat(lambda x: [x + object()], [aval_of(np.ones(2))])

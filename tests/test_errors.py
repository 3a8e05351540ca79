"""The API contract: errors derive from TracerError and the matching built-in, and name the
op, the avals and the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tests.checks import raises
from tracer import ops

HERE = "test_errors.py"
I = "interpreter"
X = np.arange(3.0)


@pytest.mark.parametrize("cls,builtin", [
    (tr.ShapeError, ValueError), (tr.DTypeError, TypeError), (tr.ParamError, ValueError),
    (tr.TracerIndexError, IndexError), (tr.ConcretizationError, TypeError),
    (tr.TracerTypeError, TypeError), (tr.TracerValueError, ValueError),
])
def test_hierarchy(cls, builtin):
    assert issubclass(cls, tr.TracerError) and issubclass(cls, builtin)


def test_shape_error_under_jit_names_op_avals_and_line():
    @tr.jit
    def f(x, y):
        return ops.add(x, y)  # the failing line

    with pytest.raises(tr.ShapeError) as info:
        f(np.ones((2, 3), np.float32), np.ones((4,), np.float32))
    msg = str(info.value)
    assert msg.startswith("add:")
    assert "f32[2,3]" in msg and "f32[4]" in msg
    assert f"{HERE}:{f.fun.__code__.co_firstlineno + 2}" in msg


def test_dtype_error_eager_names_both_dtypes():
    with pytest.raises(tr.DTypeError) as info:
        ops.mul(np.ones(3, np.float32), np.ones(3, np.int32))
    msg = str(info.value)
    assert "mul:" in msg and "f32[3]" in msg and "s32[3]" in msg and HERE in msg


def test_numpy_broadcast_error_is_a_value_error_with_shapes():
    with pytest.raises(ValueError) as info:
        tr.jit(lambda a, b: a + b)(np.ones((2, 3)), np.ones((4, 5)))
    assert isinstance(info.value, tr.TracerError)
    assert "(2, 3)" in str(info.value) or "f64[2,3]" in str(info.value)


def test_static_index_out_of_range_is_an_index_error():
    with pytest.raises(IndexError) as info:
        tr.jit(lambda a: a[5])(np.ones(3))
    assert isinstance(info.value, tr.TracerError)


def test_bad_param_is_a_value_error():
    with pytest.raises(ValueError) as info:
        ops.transpose(np.ones((2, 3)), (0, 0))
    assert isinstance(info.value, tr.TracerError) and "transpose" in str(info.value)


def test_reshape_mismatch_shows_both_shapes():
    with pytest.raises(tr.TracerError) as info:
        tnp.reshape(np.ones((2, 3)), (4, 2))
    assert "6" in str(info.value) or "(2, 3)" in str(info.value)


def test_concretization_error_says_what_to_use():
    @tr.jit
    def f(x):
        return x if x > 0 else -x

    with pytest.raises(tr.ConcretizationError) as info:
        f(np.float32(1))
    msg = str(info.value)
    assert "ops.cond" in msg and "static_argnums" in msg and HERE in msg


def test_unknown_dtype_argument():
    with pytest.raises(TypeError) as info:
        tr.jit(lambda x: x)(np.array(["a", "b"]))
    assert isinstance(info.value, tr.TracerError)


# ------------------------------------------------------------------ transformations
@pytest.mark.parametrize("call", [
    lambda: tr.grad(lambda x: x * 2)(X),                                  # non-scalar output
    lambda: tr.grad(lambda x: x.sum())(np.arange(3)),                     # integer input
    lambda: tr.grad(lambda x: x.sum(), argnums=1)(X),                     # argnums range
    lambda: tr.vmap(lambda x, y: x + y)(np.ones(2), np.ones(3)),          # batch sizes
    lambda: tr.vmap(lambda x: x, in_axes=2)(np.ones((2, 3))),             # axis range
    lambda: tr.vmap(lambda x: x * 2, out_axes=None)(np.ones(2)),          # out_axes None
    lambda: tr.jacfwd(lambda x: x)(np.arange(3)),
    lambda: tr.vjp(lambda x: x, X, has_aux=True),
    lambda: tr.jit(lambda x: len(x), backend=I)(1.0),                     # len of 0-d
], ids=["grad-nonscalar", "grad-int", "argnums", "vmap-sizes", "vmap-axis", "out-axes",
        "jacfwd-int", "vjp-aux", "len-0d"])
def test_transformation_errors_name_the_users_line(call):
    msg = raises(Exception, call)
    assert HERE in msg, msg


def test_custom_vjp_rule_error_names_the_line():
    @tr.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (x * 2.0, None), lambda res, g: (g[:2],))
    msg = raises(TypeError, lambda: tr.grad(lambda x: f(x).sum())(X))
    assert "custom_vjp f" in msg and HERE in msg


def test_line_is_added_once_and_op_errors_keep_theirs():
    @tr.jit
    def f(x):
        return ops.add(x, np.ones(4))  # the failing line

    msg = raises(ValueError, lambda: tr.grad(lambda x: f(x).sum())(X))
    assert msg.count(" at ") == 1 and f"{HERE}:{f.fun.__code__.co_firstlineno + 2}" in msg


def test_jacrev_rejects_integer_outputs():
    msg = raises(TypeError, lambda: tr.jacrev(lambda x: x > 1.0)(X))
    assert "jacrev" in msg and "pred[3]" in msg


# ------------------------------------------------------------------ user computations, operands
_ADD = lambda a, b: a + b  # noqa: E731


@pytest.mark.parametrize("op,call", [
    ("reduce", lambda: ops.reduce(np.ones((2, 3)), 0.0, lambda a: a, (0,))),
    ("sort", lambda: ops.sort(X, comparator=lambda a: a)),
    ("map", lambda: ops.map(lambda a: a, [X, X])),
    ("scatter", lambda: ops.scatter(np.ones(3), np.zeros((1, 1), np.int32), np.ones(1),
                                    lambda a: a, ops.ScatterDimensionNumbers((), (0,), (0,), 1))),
    ("while", lambda: ops.while_loop(lambda c: c < 3, lambda a, b: a, 0)),
    ("cond", lambda: ops.cond(True, lambda x, y: x, lambda x: x, X)),
    ("cond", lambda: ops.cond(True, 1, lambda x: x, X)),
    ("switch", lambda: ops.switch(0, [lambda: X, lambda x: x], X)),
    ("fori_loop", lambda: ops.fori_loop(0, 3, lambda c: c, 0)),
    ("scan", lambda: ops.scan(lambda c: (c, c), 0.0, X)),
    ("call", lambda: ops.call(lambda a, b: a, X)),
    ("composite", lambda: ops.composite("arity.f", lambda a, b: a, X)),
    ("reduce_window", lambda: ops.reduce_window(X, 0.0, lambda a: a, (1,))),
    ("all_reduce", lambda: tr.vmap(lambda x: ops.all_reduce(x, computation=lambda a: a,
                                                             axis_name="i"), axis_name="i")(X)),
])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_user_computation_arity_is_checked(op, call, jit):
    run = tr.jit(lambda: call(), backend=I) if jit else call
    msg = raises(TypeError, run)
    assert msg.startswith(f"{op}:") and HERE in msg, msg


def test_builtin_computations_still_work():
    import operator
    np.testing.assert_allclose(ops.reduce(np.ones((2, 3)), 0.0, operator.add, (0,)), [2.0] * 3)
    np.testing.assert_allclose(ops.reduce(np.ones((2, 3)), 0.0, _ADD, (1,)), [3.0, 3.0])


@pytest.mark.parametrize("bad", ["a", None], ids=["str", "None"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_non_array_operand_names_op_and_line(bad, jit):
    call = lambda: ops.add(X, bad)  # noqa: E731
    msg = raises(TypeError, tr.jit(call, backend=I) if jit else call)
    assert msg.startswith("add:") and HERE in msg, msg


def test_wrapper_param_errors_name_the_line():
    msg = raises(ValueError, lambda: ops.add(np.ones((2, 3)), X, broadcast_dimensions=("a",)))
    assert HERE in msg
    msg = raises(TypeError, lambda: ops.convert_element_type(X, "foo"))
    assert HERE in msg


def test_custom_call_target_arity_and_operands_are_checked():
    tr.register_custom_call("twice_the_operand", lambda out, a: out.__setitem__(Ellipsis, a * 2))
    tr.register_custom_call("takes_no_output", lambda a: None)
    spec = tr.ShapedArray((3,), np.float64)
    np.testing.assert_allclose(ops.custom_call("twice_the_operand", [X], spec), X * 2)
    msg = raises(TypeError, lambda: ops.custom_call("takes_no_output", [X], spec))
    assert msg.startswith("custom_call:") and "fn(*outs, *ins)" in msg and HERE in msg
    msg = raises(TypeError, lambda: ops.custom_call("twice_the_operand", X, spec))
    assert "list or tuple" in msg


@pytest.mark.parametrize("op,call", [
    ("cond", lambda: ops.cond(True, lambda: "a", lambda: "b")),
    ("scan", lambda: ops.scan(lambda c, x: (c, "s"), 0.0, X)),
    ("while", lambda: ops.while_loop(lambda c: False, lambda c: "s", 0.0)),
    ("call", lambda: ops.call(lambda: None or object())),
])
def test_control_flow_bodies_must_return_arrays(op, call):
    msg = raises(TypeError, call)
    assert msg.startswith(f"{op}:") and "returned a" in msg and HERE in msg


def test_an_eager_op_on_an_out_of_range_python_int_is_an_overflow_error():
    with pytest.raises(tr.TracerOverflowError, match=r"neg: .*outside its dtype's range"):
        ops.neg(2**63)

"""Regressions from the s6a API bug hunt: bad input to jit / grad / vmap / ops raises a
TracerError that is also the matching built-in and names the user's line; unusual
but valid calls give the right answer."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
from tracer import ops

HERE = "test_s6a_regressions.py"
I = "interpreter"
X = np.arange(3.0)


def _raises(cls, fn):
    with pytest.raises(cls) as info:
        fn()
    assert isinstance(info.value, tr.TracerError), type(info.value)
    return str(info.value)


# --------------------------------------------------- transformation errors name the line
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
    msg = _raises(Exception, call)
    assert HERE in msg, msg


def test_custom_vjp_rule_error_names_the_line():
    @tr.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (x * 2.0, None), lambda res, g: (g[:2],))
    msg = _raises(TypeError, lambda: tr.grad(lambda x: f(x).sum())(X))
    assert "custom_vjp f" in msg and HERE in msg


def test_line_is_added_once_and_op_errors_keep_theirs():
    @tr.jit
    def f(x):
        return ops.add(x, np.ones(4))  # the failing line

    msg = _raises(ValueError, lambda: tr.grad(lambda x: f(x).sum())(X))
    assert msg.count(" at ") == 1 and f"{HERE}:{f.fun.__code__.co_firstlineno + 2}" in msg


# ------------------------------------------------------------------ jit call checking
@pytest.mark.parametrize("args,kwargs", [((X,), {}), ((X, X, X), {}), ((X, X), {"z": 1})],
                         ids=["missing", "extra", "unknown-kw"])
def test_jit_wrong_arguments_are_tracer_type_errors(args, kwargs):
    f = tr.jit(lambda x, y: x * y, backend=I)
    msg = _raises(TypeError, lambda: f(*args, **kwargs))
    assert "jit(<lambda>)" in msg and "(x, y)" in msg and HERE in msg


def test_type_error_inside_the_function_is_not_rewritten():
    def f(x):
        raise TypeError("mine")

    with pytest.raises(TypeError, match="^mine$"):
        tr.jit(f, backend=I)(X)


def test_static_argument_specs_are_validated():
    _raises(ValueError, lambda: tr.jit(lambda x: x, static_argnums=3))
    _raises(ValueError, lambda: tr.jit(lambda x: x, static_argnames="n"))
    _raises(TypeError, lambda: tr.jit(lambda x: x, static_argnums=1.0))
    _raises(TypeError, lambda: tr.jit(lambda x: x, static_argnums=True))
    # *args / **kwargs functions may name any position or keyword
    f = tr.jit(lambda *xs, **kw: xs[0] * xs[1] * kw["k"], static_argnums=1,
               static_argnames="k", backend=I)
    np.testing.assert_allclose(f(X, 2, k=3), X * 6)
    g = tr.jit(lambda x, *, n: x * n, static_argnames="n", backend=I)  # keyword-only
    np.testing.assert_allclose(g(X, n=2), X * 2)


def test_compiled_rejects_other_static_values():
    jitted = tr.jit(lambda x, n: x * n, static_argnames="n", backend=I)
    compiled = jitted.lower(X, n=2).compile()
    np.testing.assert_allclose(compiled(X, n=2), X * 2)
    msg = _raises(ValueError, lambda: compiled(X, n=3))
    assert "n=2" in msg and "n=3" in msg


def test_python_int_overflow_is_an_overflow_error():
    msg = _raises(OverflowError, lambda: tr.jit(lambda x: x, backend=I)(2 ** 70))
    assert "argument x" in msg and "int64" in msg and HERE in msg


def test_non_array_output_names_the_output():
    msg = _raises(TypeError, lambda: tr.jit(lambda x: {"a": (x, "hi")}, backend=I)(X))
    assert "output['a'][1]" in msg and "str" in msg


def test_unsupported_argument_dtype_names_the_argument():
    msg = _raises(TypeError, lambda: tr.jit(lambda x, s: x, backend=I)(X, np.array(["a"])))
    assert "argument s" in msg


def test_big_endian_arguments_are_read_correctly():
    be = np.arange(4, dtype=">f8")
    np.testing.assert_array_equal(tr.jit(lambda x: x * 2.0)(be), np.arange(4.0) * 2)
    np.testing.assert_array_equal(tr.jit(lambda x: x * 2.0, backend=I)(be), np.arange(4.0) * 2)


# ------------------------------------------------------------ results never alias
@pytest.mark.parametrize("backend", ["cpu", I])
def test_results_do_not_alias_arguments_or_each_other(backend):
    x = np.arange(3.0)
    out = tr.jit(lambda v: v, backend=backend)(x)
    out[0] = 7.0
    assert x[0] == 0.0
    a, b = tr.jit(lambda v: (v * 2, v * 2, v.reshape(3))[:2], backend=backend)(x)
    a[0] = 7.0
    assert b[0] == 0.0
    compiled = tr.jit(lambda v: (v, v), backend=backend).lower(x).compile()
    c, d = compiled(x)
    assert c is not x and d is not x and c is not d


# ------------------------------------------------------------- transforms: valid calls
def test_checkpoint_passes_keyword_arguments():
    f = tr.checkpoint(lambda x, s=1.0: (ops.sin(x) * s).sum())
    np.testing.assert_allclose(tr.grad(lambda x: f(x, s=2.0))(X), 2 * np.cos(X))
    np.testing.assert_allclose(f(X, s=3.0), 3 * np.sin(X).sum())


def test_jacrev_rejects_integer_outputs():
    msg = _raises(TypeError, lambda: tr.jacrev(lambda x: x > 1.0)(X))
    assert "jacrev" in msg and "pred[3]" in msg


# ------------------------------------------------ ops: user computations, operands
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
    ("composite", lambda: ops.composite("s6a.f", lambda a, b: a, X)),
    ("reduce_window", lambda: ops.reduce_window(X, 0.0, lambda a: a, (1,))),
    ("all_reduce", lambda: tr.vmap(lambda x: ops.all_reduce(x, computation=lambda a: a,
                                                             axis_name="i"), axis_name="i")(X)),
])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_user_computation_arity_is_checked(op, call, jit):
    run = tr.jit(lambda: call(), backend=I) if jit else call
    msg = _raises(TypeError, run)
    assert msg.startswith(f"{op}:") and HERE in msg, msg


def test_builtin_computations_still_work():
    import operator
    np.testing.assert_allclose(ops.reduce(np.ones((2, 3)), 0.0, operator.add, (0,)), [2.0] * 3)
    np.testing.assert_allclose(ops.reduce(np.ones((2, 3)), 0.0, _ADD, (1,)), [3.0, 3.0])


@pytest.mark.parametrize("bad", ["a", None], ids=["str", "None"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_non_array_operand_names_op_and_line(bad, jit):
    call = lambda: ops.add(X, bad)  # noqa: E731
    msg = _raises(TypeError, tr.jit(call, backend=I) if jit else call)
    assert msg.startswith("add:") and HERE in msg, msg


def test_wrapper_param_errors_name_the_line():
    msg = _raises(ValueError, lambda: ops.add(np.ones((2, 3)), X, broadcast_dimensions=("a",)))
    assert HERE in msg
    msg = _raises(TypeError, lambda: ops.convert_element_type(X, "foo"))
    assert HERE in msg


def test_custom_call_target_arity_and_operands_are_checked():
    tr.register_custom_call("s6a_double", lambda out, a: out.__setitem__(Ellipsis, a * 2))
    tr.register_custom_call("s6a_bad", lambda a: None)
    spec = tr.ShapedArray((3,), np.float64)
    np.testing.assert_allclose(ops.custom_call("s6a_double", [X], spec), X * 2)
    msg = _raises(TypeError, lambda: ops.custom_call("s6a_bad", [X], spec))
    assert msg.startswith("custom_call:") and "fn(*outs, *ins)" in msg and HERE in msg
    msg = _raises(TypeError, lambda: ops.custom_call("s6a_double", X, spec))
    assert "list or tuple" in msg


# --------------------------------------------------------------------------- tree_util
def test_leaf_types_cannot_be_registered_as_nodes():
    from tracer import tree_util as tu
    _raises(TypeError, lambda: tu.register_dataclass(int, ["real"], []))
    _raises(TypeError, lambda: tu.register_pytree_node(np.ndarray, lambda x: ((), None),
                                                       lambda a, c: None))
    _raises(TypeError, lambda: tu.register_pytree_node(3, lambda x: ((), None),
                                                       lambda a, c: None))
    assert tu.tree_leaves((1, 2.0)) == [1, 2.0]  # ints and floats are still leaves


def test_tree_util_bad_arguments():
    from tracer import tree_util as tu

    class Node:
        pass

    tu.register_pytree_node(Node, lambda n: 5, lambda aux, children: Node())
    msg = _raises(TypeError, lambda: tu.tree_flatten(Node()))
    assert "flatten_fn must return (children, aux_data)" in msg
    _raises(TypeError, lambda: tu.tree_unflatten((1, 2), [1, 2]))
    _raises(TypeError, lambda: tu.tree_map(3, (1, 2)))


def test_static_tuples_of_different_element_types_retrace():
    f = tr.jit(lambda x, c: x * c[0], static_argnums=1, backend=I)
    assert f(np.arange(3), (2,)).dtype == np.int64
    assert f(np.arange(3), (2.0,)).dtype == np.float64  # (2,) == (2.0,), but not the trace
    np.testing.assert_array_equal(f(np.arange(3), (True,)), [0, 1, 2])
    assert f.cache_info().traces == 3
    f(np.arange(3), (2,))
    assert f.cache_info().hits == 1


def test_register_dataclass_checks_field_names():
    import dataclasses

    from tracer import tree_util as tu

    @dataclasses.dataclass
    class P:
        a: float

    msg = _raises(ValueError, lambda: tu.register_dataclass(P, ["b"], []))
    assert "'b'" in msg


@pytest.mark.parametrize("op,call", [
    ("cond", lambda: ops.cond(True, lambda: "a", lambda: "b")),
    ("scan", lambda: ops.scan(lambda c, x: (c, "s"), 0.0, X)),
    ("while", lambda: ops.while_loop(lambda c: False, lambda c: "s", 0.0)),
    ("call", lambda: ops.call(lambda: None or object())),
])
def test_control_flow_bodies_must_return_arrays(op, call):
    msg = _raises(TypeError, call)
    assert msg.startswith(f"{op}:") and "returned a" in msg and HERE in msg


def test_eager_transformation_results_do_not_alias_arguments():
    a = np.ones((2, 3))
    t = np.full((2, 3), 2.0)
    const = np.ones(3)
    results = [
        tr.vmap(lambda x: x)(a), tr.vmap(lambda x: x.reshape(3))(a), tr.vmap(lambda x: x.T)(a),
        *tr.jvp(lambda x: x, (a,), (t,)), tr.vjp(lambda x: x, a)[0],
        tr.vjp(lambda x: x, a)[1](t)[0], tr.jvp(lambda x: const, (a,), (t,))[0],
        tr.grad(lambda x: (x.sum(), x), has_aux=True)(a)[1],
    ]
    for r in results:
        assert not any(np.shares_memory(r, x) for x in (a, t, const))


def test_call_check_uses_the_wrappers_own_signature():
    import functools

    def f(x, y):
        return x * y

    @functools.wraps(f)
    def g(x):  # claims f's signature (x, y) through __wrapped__, but takes one argument
        return f(x, 2.0)

    np.testing.assert_allclose(tr.jit(g, backend=I)(X), X * 2)
    h = tr.jit(tr.grad(lambda x, n: (x * n).sum()), static_argnames="n", backend=I)
    np.testing.assert_allclose(h(X, n=3), [3.0] * 3)


def test_an_eager_op_on_an_out_of_range_python_int_is_an_overflow_error():
    with pytest.raises(tr.TracerOverflowError, match=r"neg: .*outside its dtype's range"):
        ops.neg(2**63)

"""Host callbacks: pure_callback, io_callback, debug.print / debug.callback.

Oracles: the callback's own NumPy result (called directly), call logs (how many
times, in which order, with which values), finite differences for custom_jvp.
Every behaviour is checked on the interpreter and on the cpu backend (compiled code
calling Python from numba object mode); tests/backend/cuda/test_callbacks.py does the cuda side.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracer as tr
from tracer import ops

BACKENDS = ["interpreter", "cpu"]
X = np.array([0.5, -1.0, 2.0], np.float32)
F32_3 = tr.ShapedArray((3,), np.float32)


def _jit(fun, backend):
    return tr.jit(fun, backend=backend)


# ------------------------------------------------------------------ pure_callback
@pytest.mark.parametrize("backend", BACKENDS)
def test_pure_callback_returns_what_the_function_computes(backend):
    def fun(x, y):
        out = tr.pure_callback(lambda a, b, scale: {"p": a * b * scale, "n": np.linalg.norm(a)},
                               {"p": F32_3, "n": tr.ShapedArray((), np.float32)},
                               x, y, scale=np.float32(2.0))
        return out["p"] + 1, out["n"]

    y = np.float32([3, 4, 5])
    p, n = _jit(fun, backend)(X, y)
    np.testing.assert_allclose(p, X * y * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(n, np.linalg.norm(X), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unused_pure_callback_is_removed_and_equal_calls_merge(backend):
    calls = []

    def record(a):
        calls.append(1)
        return a

    def fun(x):
        tr.pure_callback(record, F32_3, x)  # unused: DCE drops it
        a = tr.pure_callback(record, F32_3, x)
        b = tr.pure_callback(record, F32_3, x)  # same callback, same operand: CSE
        return a + b

    np.testing.assert_allclose(_jit(fun, backend)(X), 2 * X)
    assert len(calls) == 1


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_calls_the_callback_as_vmap_method_says(method, backend):
    shapes = []

    def host(a, b):
        shapes.append((a.shape, b.shape))
        return np.asarray(a * b, np.float32)

    def fun(x, b):
        out_shape = tr.ShapedArray(np.broadcast_shapes(x.shape, b.shape), np.float32)
        return tr.pure_callback(host, out_shape, x, b, vmap_method=method)

    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.float32([1, 2, 3])
    got = _jit(tr.vmap(fun, in_axes=(0, None)), backend)(xs, b)
    np.testing.assert_allclose(got, xs * b)
    expected = {"sequential": [((3,), (3,))] * 2, "expand_dims": [((2, 3), (1, 3))],
                "broadcast_all": [((2, 3), (2, 3))]}[method]
    assert shapes == expected


def test_vmap_without_a_vmap_method_names_the_callback_and_the_options():
    def my_host_fn(a):
        return a

    with pytest.raises(tr.TracerValueError, match="my_host_fn.*vmap_method.*sequential") as e:
        tr.vmap(lambda x: tr.pure_callback(my_host_fn, F32_3, x))(np.ones((2, 3), np.float32))
    assert "test_callbacks.py" in str(e.value)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.sampled_from(["sequential", "expand_dims",
                                                               "broadcast_all"]),
       st.integers(0, 1))
def test_vmap_of_a_callback_matches_calling_it_per_element(batch, n, method, axis):
    """Property: vmap(f) == stack(f(x_i)) for an elementwise NumPy callback."""
    rng = np.random.default_rng(batch * 10 + n)
    xs = rng.standard_normal((batch, n) if axis == 0 else (n, batch))
    fun = lambda x: tr.pure_callback(np.tanh, tr.ShapedArray(x.shape, x.dtype), x,  # noqa: E731
                                     vmap_method=method)
    got = tr.jit(tr.vmap(fun, in_axes=axis), backend="interpreter")(xs)
    np.testing.assert_allclose(got, np.tanh(np.moveaxis(xs, axis, 0)), rtol=1e-12)


# ------------------------------------------------------------------ derivatives
def test_grad_through_pure_callback_says_to_use_custom_jvp():
    fun = lambda x: tr.pure_callback(np.sin, tr.ShapedArray((), np.float32), x)  # noqa: E731
    with pytest.raises(tr.TracerTypeError, match="custom_jvp or tr.custom_vjp") as e:
        tr.grad(fun)(np.float32(1.0))
    assert "'sin'" in str(e.value) and "test_callbacks.py" in str(e.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_works_when_the_callback_is_wrapped_in_custom_vjp(backend):
    @tr.custom_vjp
    def host_exp(x):
        return tr.pure_callback(np.exp, tr.ShapedArray(x.shape, x.dtype), x)

    host_exp.defvjp(lambda x: (host_exp(x), host_exp(x)), lambda e, g: (g * e,))
    x = np.array([0.1, 0.7, -0.3])
    g = _jit(tr.grad(lambda x: (host_exp(x) ** 2).sum()), backend)(x)
    h = 1e-6
    fd = [((np.exp(x + h * e) ** 2).sum() - (np.exp(x - h * e) ** 2).sum()) / (2 * h)
          for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_callback_under_grad_sees_the_primal_values_once(backend):
    seen = []

    def loss(x):
        tr.debug.callback(lambda v: seen.append(v.copy()), x)
        tr.io_callback(lambda v: seen.append(v.copy()), None, x * 2)
        return (x * x).sum()

    g = _jit(tr.grad(loss), backend)(np.float64([1, 2]))
    np.testing.assert_allclose(g, [2, 4])
    assert len(seen) == 2
    np.testing.assert_allclose(seen[0], [1, 2])
    np.testing.assert_allclose(seen[1], [2, 4])


@pytest.mark.parametrize("backend", ["interpreter"])  # (a graph rewrite: any backend)
def test_checkpoint_never_runs_a_host_effect_twice(backend):
    log = []

    def block(x):
        tr.io_callback(lambda v: log.append("io"), None, x)
        tr.debug.callback(lambda v: log.append("debug"), x)
        return ops.fori_loop(0, 2, lambda i, c: _logged_sin(c, log), x)

    g = _jit(tr.grad(lambda x: tr.checkpoint(block)(x).sum()), backend)(np.float64([0.5, 1]))
    np.testing.assert_allclose(g, np.cos(np.sin([0.5, 1])) * np.cos([0.5, 1]))
    assert sorted(log) == ["debug", "io", "loop", "loop"]


def _logged_sin(c, log):
    tr.debug.callback(lambda v: log.append("loop"), c)
    return ops.sin(c)


# ------------------------------------------------------------------ effects
@pytest.mark.parametrize("backend", BACKENDS)
def test_effects_in_dead_code_still_run(backend):
    log = []

    def fun(x):
        tr.io_callback(lambda v: log.append(("io", float(v))), None, x)
        ops.fori_loop(0, 3, lambda i, c: _log_step(log, i, c), x)  # result unused
        tr.io_callback(lambda v: log.append(("io", float(v))), None, x)  # same call again
        return x

    _jit(fun, backend)(np.float32(1.5))
    assert sorted(log) == [("io", 1.5), ("io", 1.5), ("step", 0), ("step", 1), ("step", 2)]


def _log_step(log, i, c):
    tr.io_callback(lambda i: log.append(("step", int(i))), None, i)
    return c + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_ordered_callbacks_run_in_program_order_through_loops_and_branches(backend):
    log = []

    def note(tag):
        return lambda *vals: log.append((tag, *(float(v) for v in vals)))

    def fun(x):
        tr.io_callback(note("start"), None, x, ordered=True)

        def body(carry):
            i, c = carry
            tr.io_callback(note("while"), None, i, ordered=True)
            return i + 1, c * 2
        _, c = ops.while_loop(lambda carry: carry[0] < 2, body, (0, x))

        def step(c, y):
            tr.io_callback(note("scan"), None, y, ordered=True)
            return c + y, c
        c, _ = ops.scan(step, c, np.float32([10, 20]))
        ops.cond(c > 0, lambda v: tr.io_callback(note("pos"), None, v, ordered=True),
                 lambda v: tr.io_callback(note("neg"), None, v, ordered=True), c)
        tr.io_callback(note("end"), None, c, ordered=True)
        return c

    _jit(fun, backend)(np.float32(1.0))
    assert log == [("start", 1.0), ("while", 0), ("while", 1), ("scan", 10), ("scan", 20),
                   ("pos", 34.0), ("end", 34.0)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_print_prints_runtime_values_and_config_switches_it_off(backend, capsys):
    def fun(x):
        tr.debug.print("x={} sum={s}", x, s=x.sum())
        return x * 2

    f = _jit(fun, backend)
    f(np.float32([1, 2]))
    f(np.float32([3, 4]))
    assert capsys.readouterr().out == "x=[1. 2.] sum=3.0\nx=[3. 4.] sum=7.0\n"
    with tr.config.override(debug_print=False):
        np.testing.assert_allclose(f(np.float32([1, 2])), [2, 4])
        assert "custom-call" not in str(tr.make_hlo(fun)(np.float32([1, 2])))
    assert capsys.readouterr().out == ""
    f(np.float32([5, 6]))
    assert capsys.readouterr().out == "x=[5. 6.] sum=11.0\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_print_under_vmap_prints_each_element(backend, capsys):
    _jit(tr.vmap(lambda x: tr.debug.print("row {}", x)), backend)(np.float32([[1, 2], [3, 4]]))
    assert capsys.readouterr().out == "row [1. 2.]\nrow [3. 4.]\n"


def test_hlo_spells_callbacks_as_xla_custom_calls_with_a_token_chain():
    def fun(x):
        tr.io_callback(print, None, x, ordered=True)
        return tr.pure_callback(np.sin, F32_3, x)

    text = str(tr.make_hlo(fun)(X))
    assert "token[] after-all()" in text
    assert "token[] custom-call(after-all" in text and 'callback="print"' in text
    assert 'f32[3] custom-call(Arg_0' in text and 'callback="sin"' in text


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_wrong_result_shape_or_dtype_names_callback_shapes_and_line(backend):
    def bad_shape(a):
        return a[:2]

    f = _jit(lambda x: tr.pure_callback(bad_shape, F32_3, x), backend)
    with pytest.raises(tr.ShapeError) as e:
        f(X)
    msg = str(e.value)
    assert isinstance(e.value, ValueError)
    assert "bad_shape" in msg and "(2,)" in msg and "f32[3]" in msg
    assert "test_callbacks.py" in msg

    g = _jit(lambda x: tr.pure_callback(lambda a: a.astype(np.float64), F32_3, x), backend)
    with pytest.raises(tr.DTypeError, match="float64.*declared f32\\[3\\]") as e:
        g(X)
    assert isinstance(e.value, TypeError)


class CallbackFailed(KeyError):
    pass


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_exception_in_the_callback_reaches_the_caller_and_the_function_keeps_working(
        backend):
    def host(a):
        if a[0] < 0:
            raise CallbackFailed("negative input")
        return a * 2

    f = _jit(lambda x: tr.pure_callback(host, F32_3, x) + 1, backend)
    with pytest.raises(CallbackFailed, match="negative input") as e:
        f(-X)
    assert any(entry.name == "host" for entry in e.traceback)  # the callback's own frame
    np.testing.assert_allclose(f(np.abs(X)), np.abs(X) * 2 + 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_calling_one_jitted_function_with_a_callback_at_once(backend):
    f = _jit(lambda x: tr.pure_callback(lambda a: a * a, tr.ShapedArray((64,), np.float64),
                                        x) + x, backend)
    f(np.zeros(64))  # compile once, then hammer it
    inputs = [np.random.default_rng(k).standard_normal(64) for k in range(8)]
    results: dict[int, np.ndarray] = {}

    def work(k):
        for _ in range(20):
            results[k] = f(inputs[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, x in enumerate(inputs):
        np.testing.assert_allclose(results[k], x * x + x)


def test_the_ordered_token_is_carried_through_loops_and_branches():
    def fun(x):
        tr.io_callback(print, None, x, ordered=True)
        c = ops.fori_loop(0, 2, lambda i, c: _ordered_note(c) * 2, x)
        c, _ = ops.scan(lambda c, y: (_ordered_note(c) + y, c), c, np.float32([1, 2]))
        c = ops.cond(c > 0, lambda v: _ordered_note(v), lambda v: v, c)
        tr.io_callback(print, None, c, ordered=True)
        return c

    text = str(tr.make_hlo(fun)(np.float32(1)))
    for piece in ("token[] get-tuple-element(while", "token[] get-tuple-element(scan",
                  "token[] get-tuple-element(conditional"):
        assert piece in text, piece
    last = [line for line in text.splitlines() if 'callback="print"' in line][-1]
    assert "custom-call(get-tuple-element" in last  # the final call consumes the cond's token


def _ordered_note(v):
    tr.debug.print("{}", v, ordered=True)
    return v


@pytest.mark.parametrize("backend", ["interpreter"])  # (a graph rewrite: any backend)
def test_grad_and_vmap_of_a_loop_with_ordered_prints(backend, capsys):
    def fun(x):
        return ops.fori_loop(0, 2, lambda i, c: _ordered_note(ops.sin(c)), x)

    g = _jit(tr.grad(fun), backend)(np.float64(0.5))
    np.testing.assert_allclose(g, np.cos(np.sin(0.5)) * np.cos(0.5))
    assert capsys.readouterr().out == f"{np.sin(0.5)}\n{np.sin(np.sin(0.5))}\n"
    _jit(tr.vmap(fun), backend)(np.float64([0.5, 1.0]))
    rows = capsys.readouterr().out.split()
    assert [float(r) for r in rows] == pytest.approx([np.sin(0.5), np.sin(1.0),
                                                      np.sin(np.sin(0.5)), np.sin(np.sin(1.0))])


# A random program of ordered calls, loops and branches, and the log Python would write.
_STATEMENTS = st.recursive(
    st.tuples(st.just("call"), st.integers(0, 9)),
    lambda inner: st.one_of(
        st.tuples(st.just("loop"), st.integers(0, 3), st.lists(inner, max_size=3)),
        st.tuples(st.just("cond"), st.booleans(), st.lists(inner, max_size=3),
                  st.lists(inner, max_size=3))),
    max_leaves=8)


def _expected(program, log, depth=0):
    for stmt in program:
        if stmt[0] == "call":
            log.append((stmt[1], depth))
        elif stmt[0] == "loop":
            for _ in range(stmt[1]):
                _expected(stmt[2], log, depth + 1)
        else:
            _expected(stmt[2] if stmt[1] else stmt[3], log, depth)
    return log


def _traced(program, log, x, depth=0):
    for stmt in program:
        if stmt[0] == "call":
            tag = (stmt[1], depth)
            tr.io_callback(lambda v, tag=tag: log.append(tag), None, x, ordered=True)
        elif stmt[0] == "loop":
            x = ops.fori_loop(0, stmt[1], lambda i, c, s=stmt: _traced(s[2], log, c, depth + 1),
                              x)
        else:
            x = ops.cond(x > 0 if stmt[1] else x < 0,
                         lambda c, s=stmt: _traced(s[2], log, c, depth),
                         lambda c, s=stmt: _traced(s[3], log, c, depth), x)
    return x


@settings(max_examples=30, deadline=None)
@given(st.lists(_STATEMENTS, max_size=4))
def test_ordered_calls_run_in_the_order_python_would_run_them(program):
    """Property: ordered io_callbacks in any nest of loops and branches log exactly what
    running the program as plain Python logs (the optimizing passes run before)."""
    log: list = []
    tr.jit(lambda x: _traced(program, log, x), backend="interpreter")(np.float32(1))
    assert log == _expected(program, [])

"""jit: caching by signature, statics, pytrees, weak scalars, stages, config; the call
checked against the function's signature (errors name the user's line); results that
never alias the arguments or each other."""

from __future__ import annotations

import logging
from collections import namedtuple

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tests.checks import raises
from tracer import ops

HERE = "test_jit.py"
I = "interpreter"
X = np.arange(3.0)


def counting(fun):
    """Wrap `fun` so the test can count how often Python ran it (= traces)."""
    calls = []

    def wrapped(*args, **kwargs):
        calls.append(1)
        return fun(*args, **kwargs)

    wrapped.calls = calls
    wrapped.__name__ = fun.__name__
    return wrapped


def test_same_signature_traces_once_and_matches_numpy():
    body = counting(lambda w, b, x: tnp.tanh(x @ w + b))
    predict = tr.jit(body)
    rng = np.random.default_rng(0)
    w, b, x = (rng.standard_normal(s).astype(np.float32) for s in [(3, 2), (2,), (4, 3)])
    for _ in range(3):
        y = predict(w, b, x)
    assert len(body.calls) == 1
    np.testing.assert_allclose(y, np.tanh(x @ w + b), rtol=1e-6)
    # a NumPy array (an ndarray subclass with JAX's .at and .block_until_ready())
    assert isinstance(y, np.ndarray) and type(np.asarray(y)) is np.ndarray
    assert y.dtype == np.float32 and y.block_until_ready() is y
    info = predict.cache_info()
    assert (info.hits, info.misses, info.traces, info.size) == (2, 1, 1, 1)
    assert info.compiles <= 1  # 0 when this structure's machine code was already compiled


@pytest.mark.parametrize("change", ["shape", "dtype", "rank"])
def test_new_shape_or_dtype_retraces(change):
    body = counting(lambda x: x * 2)
    f = tr.jit(body)
    x = np.ones(3, np.float32)
    other = {"shape": np.ones(4, np.float32), "dtype": np.ones(3, np.float64),
             "rank": np.ones((3, 1), np.float32)}[change]
    f(x), f(other), f(x), f(other)
    assert len(body.calls) == 2 and f.cache_info().size == 2


def test_python_scalars_are_traced_weakly_and_share_a_trace():
    body = counting(lambda x, s: x * s)
    f = tr.jit(body)
    x = np.ones(3, np.float32)
    a, b = f(x, 1.5), f(x, 2.5)
    assert len(body.calls) == 1
    assert a.dtype == np.float32 and b.tolist() == [2.5] * 3
    assert tr.eval_shape(lambda s: s + 1, 2.0) == tr.ShapedArray((), np.float64, weak_type=True)
    assert f(np.ones(2, np.int8), 3).dtype == np.int8  # weak int takes int8


def test_static_argnums_and_argnames():
    body = counting(lambda x, n: x * n if n > 1 else x)
    f = tr.jit(body, static_argnums=1)
    x = np.ones(2)
    assert f(x, 3).tolist() == [3, 3] and f(x, 3).tolist() == [3, 3]
    assert f(x, 1).tolist() == [1, 1]
    assert len(body.calls) == 2
    g = tr.jit(counting(lambda x, *, n: x + n), static_argnames="n")
    assert g(x, n=2).tolist() == [3, 3]
    h = tr.jit(lambda x, n: x * n, static_argnames=("n",))
    assert h(x, 4).tolist() == [4, 4] and h(x, n=5).tolist() == [5, 5]


def test_decorator_with_options():
    @tr.jit(static_argnames="k")
    def f(x, k):
        return x[:k]

    assert f(np.arange(5), k=2).tolist() == [0, 1]


def test_unhashable_static_argument_names_it():
    f = tr.jit(lambda x, cfg: x, static_argnums=1)
    with pytest.raises(TypeError, match="'cfg'.*unhashable.*list") as info:
        f(np.ones(2), [1, 2])
    assert isinstance(info.value, tr.TracerError)


def test_pytrees_in_and_out():
    Point = namedtuple("Point", "x y")

    @tr.jit
    def f(params, batch):
        return {"out": params["w"] * batch.x + batch.y, "aux": (batch.y, None)}

    p = {"w": np.float32(2.0)}
    out = f(p, Point(np.ones(3, np.float32), np.zeros(3, np.float32)))
    assert set(out) == {"out", "aux"} and out["aux"][1] is None
    np.testing.assert_array_equal(out["out"], [2, 2, 2])


def test_constant_and_passthrough_outputs():
    f = tr.jit(lambda x: (x, 3.0, np.arange(2)))
    a, b, c = f(np.ones(2))
    assert a.tolist() == [1, 1] and float(b) == 3.0 and c.tolist() == [0, 1]
    assert all(isinstance(v, np.ndarray) and type(np.asarray(v)) is np.ndarray
               for v in (a, b, c))


def test_jit_results_have_at_updates_and_feed_back_into_jit():
    f = tr.jit(lambda x: (x * 2, x.sum()))
    a, b = f(np.arange(3.0))
    updated = a.at[1].set(10.0)
    np.testing.assert_array_equal(updated, [0.0, 10.0, 4.0])
    np.testing.assert_array_equal(a, [0.0, 2.0, 4.0])  # .at makes a new array
    assert a.at[2].add(1.0)[2] == 5.0 and float(b.block_until_ready()) == 3.0
    assert repr(a) == repr(np.asarray(a))  # shown as the NumPy array it is
    f(a)  # a result passed back in hits the same cache entry
    assert (f.cache_info().hits, f.cache_info().misses) == (1, 1)


def test_clear_cache_and_clear_caches():
    body = counting(lambda x: x + 1)
    f = tr.jit(body)
    f(np.ones(1))
    f.clear_cache()
    assert f.cache_info().size == 0
    f(np.ones(1))
    tr.clear_caches()
    f(np.ones(1))
    assert len(body.calls) == 3


def test_jit_inside_jit_inlines():
    inner = tr.jit(lambda x: x * 2)
    outer = tr.jit(lambda x: inner(x) + 1)
    assert outer(np.ones(2)).tolist() == [3, 3]
    assert "multiply" in tr.make_hlo(outer)(np.ones(2)).as_text()


def test_lower_compile_stages():
    f = tr.jit(lambda a, b: tnp.dot(a, b) + 1.0)
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    lowered = f.lower(a, tr.ShapedArray((3, 4), np.float32))
    assert "parameter(1)" in lowered.as_text()
    compiled = lowered.compile()
    assert "f32[2,4]" in compiled.as_text()
    assert isinstance(compiled.source, str) and compiled.source
    cost = compiled.cost_analysis()
    assert cost["flops"] >= 2 * 2 * 3 * 4 and cost["bytes_accessed"] > 0
    np.testing.assert_array_equal(compiled(a, b), np.full((2, 4), 4.0, np.float32))
    with pytest.raises(TypeError, match="compiled for"):
        compiled(np.ones((2, 2), np.float32), b)


def test_a_compiled_call_takes_arrays_of_its_signature_in_any_form():
    """`Compiled.__call__` serves NumPy arrays of exactly its signature without its
    general checks; the same call with strided or Fortran-ordered views or array
    subclasses gives the same values, and a mismatch still raises (keywords for
    positional parameters included: the structure it was compiled for, as in JAX)."""
    f = tr.jit(lambda a, b: (a, a * b + 1.0))
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 2, np.float32)
    compiled = f.lower(a, b).compile()
    want = [a, a * b + 1.0]
    longer = np.repeat(a, 2, axis=1)  # a strided view of a's values: [:, ::2]
    for call in (lambda: compiled(a, b), lambda: compiled(longer[:, ::2], b),
                 lambda: compiled(tnp.asarray(a), b), lambda: compiled(np.asfortranarray(a), b)):
        got = call()
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == np.float32
        got[0][0, 0] = 99.0  # a passed-through input comes back as a copy
        assert a[0, 0] == 0.0
    for bad in ((a.astype(np.float64), b), (a[:1], b[:1]), (a,), (a, b, b)):
        with pytest.raises(TypeError):
            compiled(*bad)
    message = raises(TypeError, lambda: compiled(a=a, b=b))  # as JAX: the same structure
    assert "structured as PyTreeDef(((*, *), {}))" in message and "'a': *" in message


def test_eval_shape_pytree():
    out = tr.eval_shape(lambda x: {"s": x.sum(), "t": x.T}, np.ones((2, 3), np.int32))
    assert out == {"s": tr.ShapedArray((), np.int64), "t": tr.ShapedArray((3, 2), np.int32)}


def test_explain_cache_misses(caplog):
    f = tr.jit(lambda x, n: x * n, static_argnames="n")
    with tr.config.override(explain_cache_misses=True), \
            caplog.at_level(logging.WARNING, "tracer.jit"):
        f(np.ones(3, np.float32), n=2)
        f(np.ones(4, np.float32), n=2)
        f(np.ones(4, np.float64), n=2)
        f(np.ones(4, np.float64), n=3)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "first call" in text
    assert "argument x changed from f32[3] to f32[4]" in text
    assert "argument x changed from f32[4] to f64[4]" in text
    assert "static argument n changed from 2 to 3" in text


def test_backend_selection_and_config():
    f = tr.jit(lambda x: x + 1, backend="interpreter")
    assert f(np.ones(1)).tolist() == [2]
    with pytest.raises(ValueError, match="unknown backend"):
        tr.jit(lambda x: x, backend="tpu")
    assert "interpreter" in tr.devices()
    assert "TRACER_BACKEND" in tr.config.help() and "TRACER_DUMP_DIR" in tr.config.help()
    with pytest.raises(ValueError, match="no setting"):
        tr.config.update("no_such_setting", 1)


def test_dump_dir_writes_each_stage(tmp_path):
    with tr.config.override(dump_dir=str(tmp_path)):
        tr.jit(lambda x: x + 1)(np.ones(2))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any("input" in n for n in names) and any("dce" in n for n in names)


def test_non_array_argument_is_a_type_error():
    f = tr.jit(lambda x: x)
    with pytest.raises(TypeError, match="not an array"):
        f(object())


def test_ops_and_tnp_run_eagerly_outside_jit():
    out = ops.add(np.ones(2, np.float32), 1.0)
    assert type(out) is np.ndarray and out.dtype == np.float32
    s = tnp.sum(np.arange(4))  # an ndarray (subclass with JAX's .at / block_until_ready)
    assert isinstance(s, np.ndarray) and s.shape == () and s == 6


# ------------------------------------------------------------------ call checking
@pytest.mark.parametrize("args,kwargs", [((X,), {}), ((X, X, X), {}), ((X, X), {"z": 1})],
                         ids=["missing", "extra", "unknown-kw"])
def test_jit_wrong_arguments_are_tracer_type_errors(args, kwargs):
    f = tr.jit(lambda x, y: x * y, backend=I)
    msg = raises(TypeError, lambda: f(*args, **kwargs))
    assert "jit(<lambda>)" in msg and "(x, y)" in msg and HERE in msg


def test_type_error_inside_the_function_is_not_rewritten():
    def f(x):
        raise TypeError("mine")

    with pytest.raises(TypeError, match="^mine$"):
        tr.jit(f, backend=I)(X)


def test_static_argument_specs_are_validated():
    raises(ValueError, lambda: tr.jit(lambda x: x, static_argnums=3))
    raises(ValueError, lambda: tr.jit(lambda x: x, static_argnames="n"))
    raises(TypeError, lambda: tr.jit(lambda x: x, static_argnums=1.0))
    raises(TypeError, lambda: tr.jit(lambda x: x, static_argnums=True))
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
    msg = raises(ValueError, lambda: compiled(X, n=3))
    assert "n=2" in msg and "n=3" in msg


def test_python_int_overflow_is_an_overflow_error():
    msg = raises(OverflowError, lambda: tr.jit(lambda x: x, backend=I)(2 ** 70))
    assert "argument x" in msg and "int64" in msg and HERE in msg


def test_non_array_output_names_the_output():
    msg = raises(TypeError, lambda: tr.jit(lambda x: {"a": (x, "hi")}, backend=I)(X))
    assert "output['a'][1]" in msg and "str" in msg


def test_unsupported_argument_dtype_names_the_argument():
    msg = raises(TypeError, lambda: tr.jit(lambda x, s: x, backend=I)(X, np.array(["a"])))
    assert "argument s" in msg


def test_big_endian_arguments_are_read_correctly():
    be = np.arange(4, dtype=">f8")
    np.testing.assert_array_equal(tr.jit(lambda x: x * 2.0)(be), np.arange(4.0) * 2)
    np.testing.assert_array_equal(tr.jit(lambda x: x * 2.0, backend=I)(be), np.arange(4.0) * 2)


def test_every_kind_of_array_argument_shares_one_cache_entry():
    """ndarray, EagerArray (a jit result), big-endian and keyword arguments of one
    signature hit the entry the first call made (the hot path's one-pass signatures
    and the general flattening agree on the key)."""
    f = tr.jit(lambda x, y: x * 2.0 + y)
    x = np.arange(4.0)
    want = x * 3.0
    for a, b in ((x, x), (tr.jit(lambda v: v + 0.0)(x), x), (x.astype(">f8"), x),
                 (x, x.astype(">f8"))):
        np.testing.assert_array_equal(f(a, b), want)
    np.testing.assert_array_equal(f(x, y=x), want)
    info = f.cache_info()
    assert info.traces == 2 and info.hits == 3, info  # the keyword call is its own entry

# ------------------------------------------------------------------ results never alias
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


def test_static_tuples_of_different_element_types_retrace():
    f = tr.jit(lambda x, c: x * c[0], static_argnums=1, backend=I)
    assert f(np.arange(3), (2,)).dtype == np.int64
    assert f(np.arange(3), (2.0,)).dtype == np.float64  # (2,) == (2.0,), but not the trace
    np.testing.assert_array_equal(f(np.arange(3), (True,)), [0, 1, 2])
    assert f.cache_info().traces == 3
    f(np.arange(3), (2,))
    assert f.cache_info().hits == 1


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

"""`tracer.export`: Exported programs call like the jitted function, serialize, and load
in a new process; newer or corrupt data raises a TracerValueError that says which."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import export, ops

RNG = np.random.default_rng(0)
PARAMS = (RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal(4).astype(np.float32),
          RNG.standard_normal((4, 2)).astype(np.float32))
X = RNG.standard_normal((5, 3)).astype(np.float32)


@tr.jit
def mlp(params, x, scale):
    w1, b1, w2 = params
    h = tnp.tanh(x @ w1 + b1) * scale
    return {"out": h @ w2, "h": h}


def _loop(x):
    return ops.fori_loop(0, 3, lambda i, v: tnp.sin(v) + tnp.sum(v), x)


def test_exported_avals_and_call_match_jit():
    exp = export.export(mlp)(PARAMS, tr.ShapedArray((5, 3), np.float32), 2.0)
    assert exp.in_avals[:4] == tuple(tr.ShapedArray(p.shape, p.dtype) for p in PARAMS + (X,))
    assert [str(a) for a in exp.out_avals] == ["f32[5,4]", "f32[5,2]"]
    got, want = exp.call(PARAMS, X, 2.0), mlp(PARAMS, X, 2.0)
    assert sorted(got) == ["h", "out"]
    for k in got:
        np.testing.assert_array_equal(got[k], want[k])


def test_deserialized_calls_equal_with_control_flow():
    x = np.linspace(-1, 1, 6)
    exp = export.deserialize(export.export(_loop)(x).serialize())
    np.testing.assert_array_equal(exp.call(x), tr.jit(_loop)(x))


def test_a_call_with_arrays_of_the_signature_in_any_form_gives_the_same_values():
    """Positional NumPy arrays of exactly the exported signature skip the general
    checks; views, Fortran order, subclasses and Python scalars take those checks and
    give the same values, and a mismatch raises, whichever path."""
    a, b = X, np.float32(2.0) * X
    exp = export.deserialize(export.export(lambda a, b: (a, a * b - 1.0))(a, b).serialize())
    want = [a, a * b - 1.0]
    longer = np.repeat(a, 2, axis=1)
    for args in ((a, b), (longer[:, ::2], b), (np.asfortranarray(a), b), (tnp.asarray(a), b)):
        got = exp.call(*args)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        got[0][0, 0] = 99.0  # a passed-through input comes back as a copy
        assert a[0, 0] != 99.0
    for bad in ((a.astype(np.float64), b), (a[:2], b[:2]), (a,), (a, b, b)):
        with pytest.raises(TypeError):
            exp.call(*bad)


def test_static_arguments_are_baked_in():
    @tr.jit(static_argnums=1)
    def power(x, n):
        return x ** n
    exp = export.deserialize(export.export(power)(X, 3).serialize())
    np.testing.assert_allclose(exp.call(X), X ** 3, rtol=1e-6)


def test_wrong_arguments_name_both_signatures():
    exp = export.export(mlp)(PARAMS, X, 2.0)
    message = r"exported for .*f32\[5,3\].* but called with .*f32\[2,3\]"
    with pytest.raises(TypeError, match=message):
        exp.call(PARAMS, X[:2], 2.0)


def test_loads_in_a_new_process(tmp_path):
    data = export.export(mlp)(PARAMS, X, 2.0).serialize()
    (tmp_path / "mlp.tracer").write_bytes(data)
    np.savez(tmp_path / "args.npz", *PARAMS, X)
    want = mlp(PARAMS, X, 2.0)
    script = textwrap.dedent("""
        import sys, numpy as np
        from tracer import export
        exp = export.deserialize(open(sys.argv[1] + "/mlp.tracer", "rb").read())
        a = np.load(sys.argv[1] + "/args.npz")
        out = exp.call((a["arr_0"], a["arr_1"], a["arr_2"]), a["arr_3"], 2.0)
        np.savez(sys.argv[1] + "/out.npz", **out)
    """)
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=300)
    got = np.load(tmp_path / "out.npz")
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def _corrupt(data: bytes, how: str) -> bytes:
    if how == "newer":
        return data.replace(b'"format_version": 1', b'"format_version": 7')
    if how == "edited":
        return data.replace(b"tanh(", b"sine(")
    if how == "truncated":
        return data[: len(data) // 2]
    if how == "header":
        return data.replace(b'{"format_version"', b'["format_version"', 1)
    return b"PK\x03\x04" + data


@pytest.mark.parametrize("how, message", [
    ("newer", "format version 7 was written by a newer tracer"),
    ("edited", "SHA-256"), ("truncated", "SHA-256"), ("header", "corrupt header"),
    ("magic", "not a serialized tracer export")])
def test_newer_or_corrupt_data_is_refused(how, message):
    data = export.export(mlp)(PARAMS, X, 2.0).serialize()
    with pytest.raises(tr.TracerValueError, match=message):
        export.deserialize(_corrupt(data, how))


def test_python_function_params_are_refused_at_export():
    @tr.custom_vjp
    def f(x):
        return tnp.sin(x)
    f.defvjp(lambda x: (tnp.sin(x), x), lambda x, g: (g * tnp.cos(x),))
    with pytest.raises(tr.TracerValueError, match="Python function"):
        export.export(lambda x, v: tr.jvp(f, (x,), (v,))[1])(X, X)


def test_unsupported_pytree_node_is_refused():
    from collections import namedtuple
    Pair = namedtuple("Pair", "a b")
    with pytest.raises(TypeError, match="cannot serialize a pytree node of type Pair"):
        export.export(lambda p: p.a + p.b)(Pair(X, X)).serialize()


def test_custom_call_targets_must_be_registered_where_loaded():
    import tests.opdb_misc  # noqa: F401  (registers seed_myfunc)
    x, y = np.array([1.0, 2.0], np.float32), np.ones((2, 3), np.float32)

    def fn(a, b):
        return ops.custom_call("seed_myfunc", [a, b], tr.ShapedArray((3, 3), np.float32))
    data = export.export(fn)(x, y).serialize()
    assert export.deserialize(data).call(x, y)[0, 0] == 3.0
    targets = tr.ops.misc.CUSTOM_CALL_TARGETS
    saved = targets.pop("seed_myfunc")
    try:
        with pytest.raises(tr.TracerValueError, match="'seed_myfunc' .* is not registered"):
            export.deserialize(data)
    finally:
        targets["seed_myfunc"] = saved

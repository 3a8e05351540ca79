"""The API contract: errors derive from TracerError and the matching built-in, and name the
op, the avals and the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops

HERE = "test_errors.py"


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

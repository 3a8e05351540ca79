"""The cpu lowering of an LU of a transposed matrix (`backend/numba/lower_lu.py`): `lu`
with `transposed=True` on the matrix as it lies, the triangular solves that read its
factor with their flags flipped; against the interpreter, which runs the graph as
written."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.numba.lower import lower


def _solves(flags: dict[str, bool]):  # noqa: ANN202
    def fn(a, b):  # noqa: ANN001, ANN202
        factor, _, _ = ops.lu(tnp.swapaxes(a, -1, -2))
        first = ops.triangular_solve(factor, b, **flags)
        return first, ops.triangular_solve(factor, first, **{**flags, "lower": True})
    return fn


def _ops(graph) -> list[str]:  # noqa: ANN001
    return [e.op.name for e in graph.eqns]


def test_solve_factors_a_where_it_lies():
    """`solve`'s lowered graph: no transpose, an lu with `transposed`, solves on its
    factor as stored."""
    a, b = np.eye(4) * 2.0, np.ones((4, 2))
    graph = lower(tr.jit(tnp.linalg.solve).lower(a, b).graph)
    lus = [e for e in graph.eqns if e.op.name == "lu"]
    assert "transpose" not in _ops(graph)
    assert len(lus) == 1 and lus[0].params["transposed"] and lus[0].inputs[0] is graph.inputs[0]
    solves = [e for e in graph.eqns if e.op.name == "triangular_solve"]
    assert [e.params["transpose_a"] for e in solves] == [False, False]


@settings(max_examples=8, deadline=None)
@given(left_side=st.booleans(), lower_=st.booleans(), transpose_a=st.booleans(),
       conjugate_a=st.booleans(), unit_diagonal=st.booleans(),
       dtype=st.sampled_from([np.float64, np.complex128]), n=st.sampled_from([5, 200]))
def test_flipped_solves_match_the_interpreter(left_side, lower_, transpose_a, conjugate_a,
                                              unit_diagonal, dtype, n):
    """Every flag set of the solves reading the factor (both triangles, both sides,
    transposed, conjugated, unit diagonal), small and LAPACK-sized factors."""
    flags = dict(left_side=left_side, lower=lower_, transpose_a=transpose_a,
                 conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((2, n, n)) + n * np.eye(n)).astype(dtype)
    if dtype == np.complex128:
        a = a + 1j * rng.standard_normal((2, n, n))
    b = rng.standard_normal((2, n, 3) if left_side else (2, 3, n)).astype(dtype)
    fn = _solves(flags)
    assert "transpose" not in _ops(lower(tr.jit(fn).lower(a, b).graph))
    got, want = tr.jit(fn)(a, b), tr.jit(fn, backend="interpreter")(a, b)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


def test_a_factor_read_elsewhere_keeps_the_lu_as_written():
    """The factor is also returned: the lu stays an lu of the transpose (no flipped
    reader could stand for it), and the results are the interpreter's."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((6, 6)) + 6 * np.eye(6), rng.standard_normal((6, 2))

    def fn(a, b):  # noqa: ANN001, ANN202
        factor, _, _ = ops.lu(tnp.swapaxes(a, -1, -2))
        return factor, ops.triangular_solve(factor, b, left_side=True, lower=False)

    graph = lower(tr.jit(fn).lower(a, b).graph)
    assert "transpose" in _ops(graph)
    assert not any(e.params.get("transposed") for e in graph.eqns if e.op.name == "lu")
    for g, w in zip(tr.jit(fn)(a, b), tr.jit(fn, backend="interpreter")(a, b), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)

"""Names JAX users type daily, with JAX's semantics: `tr.tree`,
`register_pytree_node_class`, `make_jaxpr`, `jacobian`, `block_until_ready`,
`test_util.check_grads`, `grad(holomorphic=True)`, `custom_jvp.defjvps`, `precision=`,
the `ops.*_in_dim` and shape-tuple helpers, `conv_transpose`, checkpoint policies and
`print_saved_residuals`, and the traced-index-into-a-NumPy-constant error. Oracles:
JAX (lax helpers), calculus, NumPy. Eager or interpreter: cheap."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops


def test_tree_namespace() -> None:
    tree = {"b": (1.0, 2.0), "a": [3.0]}
    assert tr.tree.leaves(tree) == [3.0, 1.0, 2.0]
    assert tr.tree.map(lambda x, y: x * y, tree, tree) == {"b": (1.0, 4.0), "a": [9.0]}
    leaves, treedef = tr.tree.flatten(tree)
    assert tr.tree.unflatten(treedef, leaves) == tree
    assert tr.tree.structure(tree) == treedef
    assert tr.tree.reduce(lambda a, b: a + b, tree, 0.0) == 6.0


@tr.register_pytree_node_class
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def tree_flatten(self):
        return (self.x, self.y), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def test_register_pytree_node_class_under_grad_and_jit() -> None:
    g = tr.grad(lambda p: p.x * p.y)(Point(2.0, 3.0))
    assert isinstance(g, Point) and (float(g.x), float(g.y)) == (3.0, 2.0)
    out = tr.jit(lambda p: Point(p.y, p.x), backend="interpreter")(Point(1.0, 2.0))
    assert (float(out.x), float(out.y)) == (2.0, 1.0)


def test_make_jaxpr_jacobian_block_until_ready() -> None:
    text = str(tr.make_jaxpr(lambda x: tnp.sin(x) * 2.0)(1.0))
    assert "sine" in text and "multiply" in text
    np.testing.assert_array_equal(tr.jacobian(lambda x: x * x)(np.arange(3.0)),
                                  np.diag([0.0, 2.0, 4.0]))
    x = {"a": np.ones(2)}
    assert tr.block_until_ready(x) is x


def test_check_grads_accepts_right_and_rejects_wrong_rules() -> None:
    tr.test_util.check_grads(lambda x: tnp.sin(x) * x ** 2, (np.array([0.3, 1.2]),), order=2)

    wrong = tr.custom_jvp(lambda x: tnp.sin(x))
    wrong.defjvp(lambda p, t: (wrong(p[0]), 2.0 * t[0]))
    with pytest.raises(AssertionError):
        tr.test_util.check_grads(wrong, (np.array([0.3, 1.2]),), order=1, modes=("fwd",))


def test_holomorphic_grad_and_defjvps() -> None:
    assert complex(tr.grad(lambda z: z * z, holomorphic=True)(1.0 + 1.0j)) == 2.0 + 2.0j
    with pytest.raises(TypeError, match="complex"):
        tr.grad(lambda z: z * z, holomorphic=True)(1.0)

    f = tr.custom_jvp(lambda x, y: tnp.sin(x) * y)
    f.defjvps(lambda g, ans, x, y: tnp.cos(x) * g * y, lambda g, ans, x, y: tnp.sin(x) * g)
    gx, gy = tr.grad(f, argnums=(0, 1))(0.5, 2.0)
    np.testing.assert_allclose([gx, gy], [2 * np.cos(0.5), np.sin(0.5)], rtol=1e-15)


def test_precision_is_accepted_and_checked() -> None:
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    want = a @ a.T
    for fn in (lambda: tnp.dot(a, a.T, precision="highest"),
               lambda: tnp.matmul(a, a.T, precision=("HIGH", "HIGH")),
               lambda: tnp.einsum("ij,kj", a, a, precision="DEFAULT"),
               lambda: ops.dot_general(a, a, (((1,), (1,)), ((), ())), precision="HIGHEST")):
        np.testing.assert_array_equal(fn(), want)
    assert tnp.matmul(a, a.T, preferred_element_type=np.float64).dtype == np.float64
    with pytest.raises(tr.TracerError, match="precision"):
        tnp.dot(a, a.T, precision="fastest")


jax = pytest.importorskip("jax")


def test_in_dim_helpers_match_lax() -> None:
    x = np.arange(24.0).reshape(4, 6)
    lax = jax.lax
    pairs = [(ops.dynamic_slice_in_dim(x, 1, 2, 1), lax.dynamic_slice_in_dim(x, 1, 2, 1)),
             (ops.dynamic_update_slice_in_dim(x, np.ones((4, 2)), 3, 1),
              lax.dynamic_update_slice_in_dim(x, np.ones((4, 2)), 3, 1)),
             (ops.dynamic_index_in_dim(x, 2, 0, False), lax.dynamic_index_in_dim(x, 2, 0, False)),
             (ops.index_in_dim(x, -1, 1), lax.index_in_dim(x, -1, 1))]
    for got, want in pairs:
        np.testing.assert_array_equal(got, np.asarray(want))
    dn = ("NCHW", "OIHW", "NCHW")
    assert ops.conv_general_shape_tuple((2, 3, 9, 9), (4, 3, 3, 3), (2, 2), [(1, 1), (1, 1)],
                                        dn) == tuple(lax.conv_general_shape_tuple(
                                            (2, 3, 9, 9), (4, 3, 3, 3), (2, 2),
                                            [(1, 1), (1, 1)], dn))
    assert ops.reduce_window_shape_tuple((2, 9, 9), (1, 3, 3), (1, 2, 2), "VALID") == \
        tuple(lax.reduce_window_shape_tuple((2, 9, 9), (1, 3, 3), (1, 2, 2), ((0, 0),) * 3))


def test_checkpoint_policies_and_saved_residuals(capsys: pytest.CaptureFixture) -> None:
    def f(x):
        return tnp.sin(tr.checkpoint_name(tnp.sin(x), "inner"))

    for policy in (None, tr.checkpoint_policies.dots_saveable,
                   tr.checkpoint_policies.everything_saveable,
                   tr.checkpoint_policies.save_only_these_names("inner")):
        g = tr.grad(tr.checkpoint(f, policy=policy))(1.0)
        assert float(g) == pytest.approx(np.cos(np.sin(1.0)) * np.cos(1.0), rel=1e-15)
    tr.print_saved_residuals(f, np.ones(3))
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines and all("f64[3]" in line for line in lines)


def test_traced_index_into_a_numpy_constant_says_how() -> None:
    table = np.arange(5.0)
    with pytest.raises(tr.ConcretizationError, match=r"tnp\.take\(table, i, axis=0\)") as info:
        tr.jit(lambda i: table[i], backend="interpreter")(np.int64(2))
    assert "test_jax_names.py" in str(info.value)
    assert float(tr.jit(lambda i: tnp.take(table, i, axis=0), backend="interpreter")(
        np.int64(2))) == 2.0


CONV_TRANSPOSE = [
    dict(strides=(2, 2), padding="SAME"),
    dict(strides=(1, 2), padding="VALID", rhs_dilation=(2, 1)),
    dict(strides=(2, 1), padding=((1, 0), (2, 1))),
    dict(strides=(2, 2), padding=((1, 1), (0, 2)), use_consistent_padding=True),
    dict(strides=(3, 1), padding="SAME", transpose_kernel=True),
    dict(strides=(2, 2), padding="VALID", dimension_numbers=("NCHW", "OIHW", "NCHW")),
]


@pytest.mark.parametrize("kwargs", CONV_TRANSPOSE, ids=range(len(CONV_TRANSPOSE)))
def test_conv_transpose_matches_jax(kwargs: dict) -> None:
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    lhs, rhs = rng.standard_normal((2, 5, 6, 3)), rng.standard_normal((3, 2, 3, 4))
    if "dimension_numbers" in kwargs:
        lhs, rhs = lhs.transpose(0, 3, 1, 2), rhs.transpose(3, 2, 0, 1)
    if kwargs.get("transpose_kernel"):  # the kernel's I and O trade places
        rhs = rhs.transpose(0, 1, 3, 2)
    with jax.enable_x64(True):
        want = jax.lax.conv_transpose(lhs, rhs, **kwargs)
    got = ops.conv_transpose(lhs, rhs, **kwargs)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    if not any(k in kwargs for k in ("rhs_dilation", "transpose_kernel", "use_consistent_"
                                     "padding")):
        assert ops.conv_transpose_shape_tuple(
            lhs.shape, rhs.shape, kwargs["strides"], kwargs["padding"],
            kwargs.get("dimension_numbers", ("NHWC", "HWIO", "NHWC"))) == want.shape

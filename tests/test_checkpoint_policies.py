"""`checkpoint(fun, policy=...)` with JAX's `checkpoint_policies`: the forward pass
saves what the policy allows (matrix products, values named by `checkpoint_name`), the
backward pass recomputes only the rest (counted in the backward graph), gradients equal
the un-checkpointed ones, and the saved values are those JAX saves
(`print_saved_residuals` beside JAX's)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer.core import ShapedArray, subgraphs
from tracer.tracing import trace_flat
from tracer.transforms.vjp import vjp_graph

P = tr.checkpoint_policies
RNG = np.random.default_rng(0)
W1, W2, X = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2)), RNG.standard_normal((5, 3))


def mlp(lib, w1, w2, x):
    """Two products with a named hidden layer, written once for tracer and for JAX."""
    h = lib.numpy.sin(lib.ad_checkpoint.checkpoint_name(x @ w1, "hidden"))
    return lib.numpy.sum(lib.numpy.cos(h @ w2))


def _f(w1, w2, x):
    return mlp(tr, w1, w2, x)


POLICIES = {
    "default": None, "nothing_saveable": P.nothing_saveable, "dots_saveable": P.dots_saveable,
    "dots_with_no_batch_dims_saveable": P.dots_with_no_batch_dims_saveable,
    "save_only_these_names": P.save_only_these_names("hidden"),
    "save_any_names_but_these": P.save_any_names_but_these("hidden"),
    "save_anything_except_these_names": P.save_anything_except_these_names("hidden"),
    "save_from_both_policies": P.save_from_both_policies(
        P.save_only_these_names("hidden"), P.nothing_saveable),
}
# The backward pass needs both products (the cotangent of cos(h @ w2) reads h @ w2,
# h = sin(x @ w1) reads x @ w1); it recomputes those the policy did not save.
RECOMPUTED_DOTS = {"default": 2, "nothing_saveable": 2, "dots_saveable": 0,
                   "dots_with_no_batch_dims_saveable": 0, "save_only_these_names": 1,
                   "save_any_names_but_these": 2, "save_anything_except_these_names": 0,
                   "save_from_both_policies": 1}
TRANSPOSED_DOTS = 4  # the cotangents of w1, w2, x and h
# the residuals: the three arguments and the saved products (everything-like policies
# save sin and cos values instead of recomputing them too)
RESIDUALS = {name: 5 - n for name, n in RECOMPUTED_DOTS.items()}
RESIDUALS["save_anything_except_these_names"] = 6


def _count(graph, name: str) -> int:
    return sum((e.op.name == name) + sum(_count(g, name) for g in subgraphs(e.params))
               for e in graph.eqns)


def _backward(fun, *args):
    graph, _ = trace_flat(lambda *xs: [fun(*xs)], [ShapedArray(a.shape, a.dtype) for a in args])
    return vjp_graph(graph, [True] * len(args))


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_policy_decides_what_the_backward_pass_recomputes(name: str) -> None:
    v = _backward(tr.checkpoint(_f, policy=POLICIES[name]), W1, W2, X)
    assert _count(v.backward, "dot_general") == TRANSPOSED_DOTS + RECOMPUTED_DOTS[name]
    assert v.num_res == RESIDUALS[name]


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_policy_gradients_equal_the_uncheckpointed(name: str) -> None:
    want = tr.grad(_f, argnums=(0, 1, 2))(W1, W2, X)
    fun = tr.grad(tr.checkpoint(_f, policy=POLICIES[name]), argnums=(0, 1, 2))
    for got in (fun(W1, W2, X), tr.jit(fun, backend="interpreter")(W1, W2, X)):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


def test_policy_gradients_compile_on_the_cpu_backend() -> None:
    want = tr.grad(_f, argnums=(0, 1))(W1, W2, X)
    got = tr.jit(tr.grad(tr.checkpoint(_f, policy=P.dots_saveable), argnums=(0, 1)))(W1, W2, X)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_batched_products_are_not_saved_by_the_no_batch_dims_policy() -> None:
    def f(a, b):
        return tnp.sum(tnp.sin(tnp.einsum("bij,bjk->bik", a, b)))
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 5))
    for policy, recomputed in ((P.dots_saveable, 0), (P.dots_with_no_batch_dims_saveable, 1)):
        v = _backward(tr.checkpoint(f, policy=policy), a, b)
        assert _count(v.backward, "dot_general") == 2 + recomputed
        np.testing.assert_allclose(tr.grad(tr.checkpoint(f, policy=policy))(a, b),
                                   tr.grad(f)(a, b), rtol=1e-13)


def test_second_derivatives_through_a_policy() -> None:
    def f(x):
        return tnp.sum(tnp.sin(tr.checkpoint_name(tnp.outer(x, x), "outer")) @ x)
    x = RNG.standard_normal(3)
    for policy in (P.save_only_these_names("outer"), P.dots_saveable):
        np.testing.assert_allclose(tr.hessian(tr.checkpoint(f, policy=policy))(x),
                                   tr.hessian(f)(x), rtol=1e-12)


def test_vmap_of_grad_through_a_policy() -> None:
    fun = tr.grad(tr.checkpoint(_f, policy=P.save_only_these_names("hidden")))
    xs = RNG.standard_normal((4, 5, 3))
    got = tr.vmap(fun, in_axes=(None, None, 0))(W1, W2, xs)
    np.testing.assert_allclose(got, np.stack([tr.grad(_f)(W1, W2, x) for x in xs]), rtol=1e-13)


def _saved(text: str) -> list[str]:
    """What a print_saved_residuals line says, without its source location or the
    argument's name (JAX names it, tracer numbers the leaf)."""
    out = []
    for line in text.strip().splitlines():
        kind = re.sub(r" from .*", "", line)
        out.append(re.sub(r"from the argument.*", "argument", line) if "argument" in line
                   else kind)
    return sorted(out)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_saved_residuals_are_those_jax_saves(name: str, capsys: pytest.CaptureFixture) -> None:
    jax = pytest.importorskip("jax")
    ad_checkpoint = pytest.importorskip("jax.ad_checkpoint")  # (mlp reads jax.ad_checkpoint)
    tr.print_saved_residuals(tr.checkpoint(_f, policy=POLICIES[name]), W1, W2, X)
    ours = capsys.readouterr().out
    policy = getattr(jax.checkpoint_policies, name, None) if name != "default" else None
    if name in ("save_only_these_names", "save_any_names_but_these",
                "save_anything_except_these_names"):
        policy = policy("hidden")
    elif name == "save_from_both_policies":
        policy = policy(jax.checkpoint_policies.save_only_these_names("hidden"),
                        jax.checkpoint_policies.nothing_saveable)
    with jax.enable_x64(True):
        ad_checkpoint.print_saved_residuals(
            jax.checkpoint(lambda *a: mlp(jax, *a), policy=policy), W1, W2, X)
    assert _saved(ours) == _saved(capsys.readouterr().out)

"""`tracer.test_util.check_grads`: JAX's derivative checker. Forward mode is compared
with central finite differences along random directions, reverse mode with forward
mode by the identity <vjp(u), v> == <u, jvp(v)>, recursively up to `order`."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .transforms import jvp, vjp
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["check_grads", "check_jvp", "check_vjp"]

_DEFAULT_EPS = {np.dtype(np.float32): 1e-2, np.dtype(np.float64): 1e-4}
_DEFAULT_TOL = {np.dtype(np.float32): 2e-2, np.dtype(np.float64): 1e-5}


def _directions(args: Sequence[Any], rng: np.random.Generator) -> list[Any]:
    leaves, tree = tree_flatten(tuple(args))
    out = []
    for x in leaves:
        x = np.asarray(x)
        v = rng.standard_normal(x.shape)
        if x.dtype.kind == "c":
            v = v + 1j * rng.standard_normal(x.shape)
        out.append(v.astype(x.dtype))
    return list(tree_unflatten(tree, out))


def _inner(a: Any, b: Any) -> float:
    return float(sum(np.real(np.vdot(np.asarray(x), np.asarray(y)))
                     for x, y in zip(tree_flatten(a)[0], tree_flatten(b)[0], strict=True)))


def _shift(args: Sequence[Any], dirs: Sequence[Any], h: float) -> list[Any]:
    return [tree_unflatten(tree_flatten(a)[1], [np.asarray(x) + h * np.asarray(d) for x, d in
                                                 zip(tree_flatten(a)[0], tree_flatten(v)[0],
                                                     strict=True)])
            for a, v in zip(args, dirs, strict=True)]


def _close(got: Any, want: Any, atol: float, rtol: float, what: str) -> None:
    for g, w in zip(tree_flatten(got)[0], tree_flatten(want)[0], strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=atol, rtol=rtol,
                                   err_msg=what)


def _dtype(args: Sequence[Any]) -> np.dtype:
    leaves = tree_flatten(tuple(args))[0]
    return min((np.asarray(x).real.dtype for x in leaves), key=lambda d: d.itemsize,
               default=np.dtype(np.float64))


def check_jvp(f: Callable[..., Any], args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, eps: float | None = None,
              rng: np.random.Generator | None = None) -> None:
    """jvp(f) along a random direction against central differences."""
    rng = np.random.default_rng(0) if rng is None else rng
    dt = _dtype(args)
    eps = _DEFAULT_EPS.get(dt, 1e-4) if eps is None else eps
    atol = _DEFAULT_TOL.get(dt, 1e-5) if atol is None else atol
    rtol = _DEFAULT_TOL.get(dt, 1e-5) if rtol is None else rtol
    dirs = _directions(args, rng)
    _, tangent = jvp(f, tuple(args), tuple(dirs))
    plus, minus = f(*_shift(args, dirs, eps)), f(*_shift(args, dirs, -eps))
    numeric = [(np.asarray(p) - np.asarray(m)) / (2 * eps)
               for p, m in zip(tree_flatten(plus)[0], tree_flatten(minus)[0], strict=True)]
    _close(tree_flatten(tangent)[0], numeric, atol, rtol, "JVP against finite differences")


def check_vjp(f: Callable[..., Any], args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, rng: np.random.Generator | None = None) -> None:
    """<u, jvp(v)> == <vjp(u), v> for random u, v."""
    rng = np.random.default_rng(1) if rng is None else rng
    dt = _dtype(args)
    atol = _DEFAULT_TOL.get(dt, 1e-5) if atol is None else atol
    rtol = _DEFAULT_TOL.get(dt, 1e-5) if rtol is None else rtol
    dirs = _directions(args, rng)
    out, tangent = jvp(f, tuple(args), tuple(dirs))
    u = _directions([out], rng)[0]
    _, pullback = vjp(f, *args)
    cts = pullback(u)
    _close(_inner(u, tangent), _inner(cts, dirs), atol, rtol, "VJP against JVP")


def check_grads(f: Callable[..., Any], args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None) -> None:
    """Check `f`'s derivatives up to `order` (JAX's signature): AssertionError on a
    mismatch."""
    args = tuple(args)
    if "fwd" in modes:
        check_jvp(f, args, atol, rtol, eps)
    if "rev" in modes:
        check_vjp(f, args, atol, rtol)
    if order > 1:
        dirs = _directions(args, np.random.default_rng(order))
        if "fwd" in modes:
            check_grads(lambda *a: jvp(f, a, tuple(dirs))[1], args, order - 1, ("fwd",),
                        atol, rtol, eps)
        if "rev" in modes:
            u = _directions([f(*args)], np.random.default_rng(order + 10))[0]
            check_grads(lambda *a: vjp(f, *a)[1](u), args, order - 1, ("rev",), atol, rtol,
                        eps)

"""Calling Python from traced code: `tr.pure_callback` and `tr.io_callback` (JAX's names
and signatures). `tr.debug.print` / `tr.debug.callback` live in `tracer.debug`.

The callback receives NumPy arrays (the runtime values, a pytree as passed) and returns
arrays of the declared shapes and dtypes (`result_shape_dtypes`: a ShapedArray, anything
with `.shape` and `.dtype`, or a pytree of them). Under `jit` the cpu backend calls it from
compiled code, the cuda backend on the host between kernels, the interpreter directly.

    def host_erf(x):
        return scipy.special.erf(x)          # anything Python: SciPy, I/O, a simulator

    @tr.jit
    def f(x):
        y = tr.pure_callback(host_erf, tr.ShapedArray(x.shape, x.dtype), x,
                             vmap_method="expand_dims")
        return y * 2
"""

from __future__ import annotations

from typing import Any, Callable

from .errors import TracerTypeError, TracerValueError, names_user_line
from .ops.callbacks import VMAP_METHODS, io_callback_p, pure_callback_p
from .ops.common import wrapper_error
from .ops.feeds import flat_avals
from .ops.host_callback import HostCallback
from .ops.tokens import ordered_token, set_ordered_token
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["pure_callback", "io_callback"]


def _prepare(op: str, callback: Callable[..., Any], result_shape_dtypes: Any,
             args: tuple, kwargs: dict) -> tuple[list[Any], HostCallback, Any]:
    """(flat operands, the HostCallback, the results' treedef)."""
    if not callable(callback):
        raise wrapper_error(TracerTypeError, op, f"callback must be callable, got "
                            f"{type(callback).__name__}")
    if result_shape_dtypes is None:
        avals, out_tree = [], tree_flatten(None)[1]
    else:
        avals, out_tree = flat_avals(op, result_shape_dtypes)
    leaves, in_tree = tree_flatten((args, kwargs))
    return leaves, HostCallback(callback, in_tree, out_tree, avals, op), out_tree


@names_user_line
def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  vmap_method: str | None = None, **kwargs: Any) -> Any:
    """`callback(*args, **kwargs)` on the runtime values; it must be free of side
    effects (an unused call may be removed, equal calls merged).

    `vmap_method` says what `vmap` does: `"sequential"` calls it once per batch
    element, `"expand_dims"` once with a new leading batch axis (size 1 where an
    argument is not batched), `"broadcast_all"` once with every argument broadcast to
    the batch; `None` makes `vmap` raise. It has no derivative: wrap the function in
    `tr.custom_jvp` / `tr.custom_vjp` to differentiate.

    >>> tr.jit(lambda x: tr.pure_callback(np.sinc, tr.ShapedArray((3,), np.float32), x))(
    ...     np.ones(3, np.float32))
    """
    if vmap_method not in VMAP_METHODS:
        raise wrapper_error(TracerValueError, "pure_callback", f"vmap_method must be one "
                            f"of {VMAP_METHODS}, got {vmap_method!r}")
    leaves, cb, out_tree = _prepare("pure_callback", callback, result_shape_dtypes,
                                    args, kwargs)
    outs = pure_callback_p.bind(*leaves, callback=cb, vmap_method=vmap_method)
    return tree_unflatten(out_tree, list(outs))


@names_user_line
def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                ordered: bool = False, **kwargs: Any) -> Any:
    """`callback(*args, **kwargs)` with side effects (logging, I/O, a simulator's
    state): never removed, merged or run twice by `checkpoint`. With `ordered=True`
    the ordered callbacks of one program run in program order (a token chain);
    `result_shape_dtypes` may be None for a callback that returns nothing.

    >>> seen = []
    >>> tr.jit(lambda x: tr.io_callback(seen.append, None, x, ordered=True))(1.0)
    """
    leaves, cb, out_tree = _prepare("io_callback", callback, result_shape_dtypes,
                                    args, kwargs)
    ordered = bool(ordered)
    token = [ordered_token()] if ordered else []
    outs = list(io_callback_p.bind(*token, *leaves, callback=cb, ordered=ordered))
    if ordered:
        set_ordered_token(outs.pop(0))
    return tree_unflatten(out_tree, outs)

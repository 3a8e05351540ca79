"""`tr.debug.print` and `tr.debug.callback`: look at runtime values from traced code.

    @tr.jit
    def step(x):
        tr.debug.print("x = {}, mean = {m}", x, m=x.mean())
        return x * 2

They work under `jit`, `vmap` (once per batch element), `grad` (the primal values,
once), and inside loops and branches; with `ordered=True` they run in program order
with the other ordered effects. `tr.config.update("debug_print", False)` (or
`TRACER_DEBUG_PRINT=0`) makes `tr.debug.print` record nothing in functions traced
afterwards: no cost at all in compiled code.
"""

from __future__ import annotations

from typing import Any, Callable

from .config import config
from .errors import TracerTypeError, names_user_line
from .ops.callbacks import DebugPrinter, debug_callback_p, debug_print_p
from .ops.common import wrapper_error
from .ops.host_callback import HostCallback
from .ops.tokens import ordered_token, set_ordered_token
from .tree_util import tree_flatten

__all__ = ["print", "callback"]


def _bind_effect(op: Any, leaves: list[Any], ordered: bool, **params: Any) -> None:
    token = [ordered_token()] if ordered else []
    outs = op.bind(*token, *leaves, ordered=ordered, **params)
    if ordered:
        set_ordered_token(outs[0])


@names_user_line
def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:  # noqa: A001
    """Print `fmt.format(*args, **kwargs)` with the runtime values of `args`, to stdout.

    >>> tr.jit(lambda x: tr.debug.print("x is {}", x))(np.float32(3))
    x is 3.0
    """
    if not isinstance(fmt, str):
        raise wrapper_error(TracerTypeError, "debug.print", f"fmt must be a str, got "
                            f"{type(fmt).__name__}")
    if not config.debug_print:
        return
    leaves, in_tree = tree_flatten((args, kwargs))
    _bind_effect(debug_print_p, leaves, bool(ordered), printer=DebugPrinter(fmt, in_tree))


@names_user_line
def callback(fn: Callable[..., Any], *args: Any, ordered: bool = False,
             **kwargs: Any) -> None:
    """Call `fn(*args, **kwargs)` with the runtime values (NumPy arrays); its return
    value is ignored.

    >>> seen = []
    >>> tr.jit(lambda x: tr.debug.callback(seen.append, x))(np.ones(2))
    """
    if not callable(fn):
        raise wrapper_error(TracerTypeError, "debug.callback", f"fn must be callable, got "
                            f"{type(fn).__name__}")
    leaves, in_tree = tree_flatten((args, kwargs))
    cb = HostCallback(fn, in_tree, None, (), "debug.callback")
    _bind_effect(debug_callback_p, leaves, bool(ordered), callback=cb)

"""Host callbacks as ops: `pure_callback`, `io_callback`, `debug_callback`, `debug_print`.

Each eqn holds a `HostCallback` (the user's function, the pytree structure of its
arguments and the declared results) and passes its operands as flat arrays. The
reference implementation calls the function: the interpreter does so directly, the
cpu backend from compiled code (numba object mode), the cuda backend on the host
between kernels. XLA spells them all `custom-call`.

- `pure_callback`: no side effects: CSE may merge two calls of one callback on the
  same operands and DCE drops an unused one. No derivative (use custom_jvp/custom_vjp).
- `io_callback`, `debug_callback`, `debug_print`: effectful (`io_effect`): never
  dropped, merged, folded, or run again by `checkpoint`'s recomputation. With
  `ordered=True` the eqn takes the trace's ordered-effect token first and returns the
  next one first (`tokens.ordered_token`): ordered effects run in program order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import TOKEN, ShapedArray
from ..errors import TracerTypeError
from ..tree_util import tree_unflatten
from .host_callback import HostCallback
from .registry import define_op
from .tokens import check_token

VMAP_METHODS = (None, "sequential", "expand_dims", "broadcast_all")


def _split_token(avals: tuple, ordered: bool, what: str) -> tuple:
    if ordered:
        if not avals:
            raise TracerTypeError(f"{what}: an ordered callback takes a token first")
        check_token(what, avals[0])
        return avals[1:]
    return avals


# ------------------------------------------------------------------ pure_callback
def _pure_shape(*avals: ShapedArray, callback: HostCallback, vmap_method: str | None
                ) -> tuple[ShapedArray, ...]:
    return callback.result_avals


def _pure_impl(*args: np.ndarray, callback: HostCallback, vmap_method: str | None
               ) -> list[np.ndarray]:
    return callback(*args)


pure_callback_p = define_op(
    "pure_callback", shape=_pure_shape, impl=_pure_impl, hlo_name="custom-call",
    family="callback", multiple_results=True,
    doc="CustomCall to a host Python function without side effects: the results are "
        "the function's return values on the operands, of the declared shapes (XLA: "
        "custom_call_target=xla_python_cpu_callback). Example: pure_callback(np.sin, "
        "ShapedArray((3,), f32), x) -> sin(x) computed by NumPy.")


# ------------------------------------------------------------------ io_callback
def _io_shape(*avals: ShapedArray, callback: HostCallback, ordered: bool
              ) -> tuple[ShapedArray, ...]:
    _split_token(avals, ordered, "io_callback")
    return ((TOKEN,) if ordered else ()) + callback.result_avals


def _io_impl(*args: np.ndarray, callback: HostCallback, ordered: bool) -> list[np.ndarray]:
    outs = callback(*(args[1:] if ordered else args))
    return ([np.zeros(0, np.bool_)] if ordered else []) + outs


io_callback_p = define_op(
    "io_callback", shape=_io_shape, impl=_io_impl, hlo_name="custom-call", family="callback",
    multiple_results=True, effectful=True, io_effect=True,
    doc="CustomCall to a host Python function with side effects (has_side_effect=true): "
        "never removed or merged; with ordered=True it takes and returns a token so "
        "calls run in program order. Example: io_callback(log.append, None, x) appends "
        "x to log once per run.")


# ------------------------------------------------------------------ debug_callback
def _debug_shape(*avals: ShapedArray, callback: HostCallback, ordered: bool
                 ) -> tuple[ShapedArray, ...]:
    _split_token(avals, ordered, "debug_callback")
    return (TOKEN,) if ordered else ()


def _debug_impl(*args: np.ndarray, callback: HostCallback, ordered: bool
                ) -> list[np.ndarray]:
    callback(*(args[1:] if ordered else args))
    return [np.zeros(0, np.bool_)] if ordered else []


debug_callback_p = define_op(
    "debug_callback", shape=_debug_shape, impl=_debug_impl, hlo_name="custom-call",
    family="callback", multiple_results=True, differentiable=False, effectful=True,
    io_effect=True,
    doc="CustomCall to a host Python function for debugging (has_side_effect=true): "
        "called with the runtime values, returns nothing; under grad it sees primal "
        "values. Example: debug_callback(print, x) prints x each run.")


# ------------------------------------------------------------------ debug_print
class DebugPrinter:
    """`fmt.format(*args, **kwargs)` printed to stdout; the arrays come flat."""

    __slots__ = ("fmt", "in_tree")

    def __init__(self, fmt: str, in_tree: Any):
        self.fmt, self.in_tree = fmt, in_tree

    def __call__(self, *arrays: np.ndarray) -> None:
        args, kwargs = tree_unflatten(self.in_tree, list(arrays))
        print(self.fmt.format(*args, **kwargs), flush=True)

    def __str__(self) -> str:  # (HLO text)
        return repr(self.fmt).replace("'", '"')


def _print_shape(*avals: ShapedArray, printer: DebugPrinter, ordered: bool
                 ) -> tuple[ShapedArray, ...]:
    _split_token(avals, ordered, "debug_print")
    return (TOKEN,) if ordered else ()


def _print_impl(*args: np.ndarray, printer: DebugPrinter, ordered: bool) -> list[np.ndarray]:
    printer(*(args[1:] if ordered else args))
    return [np.zeros(0, np.bool_)] if ordered else []


debug_print_p = define_op(
    "debug_print", shape=_print_shape, impl=_print_impl, hlo_name="custom-call",
    family="callback", multiple_results=True, differentiable=False, effectful=True,
    io_effect=True,
    doc="CustomCall that prints fmt.format(*operands) on the host (has_side_effect=true), "
        "the runtime values, from inside jit, vmap, grad, loops and branches. Example: "
        "debug_print('x={}', x) prints x=[1. 2.].")

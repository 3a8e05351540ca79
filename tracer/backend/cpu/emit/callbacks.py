"""cpu emitters for host callbacks (`pure_callback`, `io_callback`, `debug_callback`,
`debug_print`), the token ops (`after_all`) and the host-communication ops (`infeed`,
`outfeed`, `send`, `recv`), and custom-call targets numba cannot compile.

Compiled code reaches Python through a `numba.objmode` block that calls the op's
reference through the executable's runner table (`numba.fallback.run`). A C callback
pointer (a ctypes `CFUNCTYPE` the kernel calls with its buffers' addresses) was
measured against it: about 11 us per call against about 1 us for object mode (numba
0.6x, one core; `bench/bench_callbacks.py` repeats the comparison), since ctypes
rebuilds every argument and NumPy array view on each call. So the generated code
reads:

    # io_callback  <- (f32[])  (train.py:42)
    # calls "log_step"
    with numba.objmode():
        fallback.run(fallback_table, 0, loss)

Tokens never cross into Python: an op's output token is its input token (the data
dependence is all a token is), or a fresh empty array.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ....core import Eqn, ShapedArray, TokenAval, Var
from ...numba.codegen import GraphEmitter, Ref
from ...numba.fallback import numba_type
from ...numba.scalar import HALVES

_EMPTY_TOKEN = np.zeros(0, np.bool_)


def host_runner(eqn: Eqn) -> Callable[..., tuple[Any, ...]]:
    """The runner-table entry of `eqn`: its value operands as the kernel holds them ->
    its value results as the kernel holds them; tokens are filled in and left out.
    Unlike the generic fallback runner it keeps NumPy's warnings on (they are the
    callback's own) and hands the callback read-only views of the kernel's arrays."""
    op, params = eqn.op, eqn.params
    slots = [None if _is_token(a.aval) else a.aval for a in eqn.inputs]
    results = [None if _is_token(v.aval) else v.aval for v in eqn.outputs]

    def call(*operands: Any) -> tuple[Any, ...]:
        it = iter(operands)
        args = [_EMPTY_TOKEN if a is None else _from_kernel(next(it), a) for a in slots]
        outs = op.impl(*args, **params)
        outs = outs if op.multiple_results else [outs]
        return tuple(_to_kernel(o, a) for o, a in zip(outs, results, strict=True)
                     if a is not None)
    return call


def _from_kernel(x: Any, aval: ShapedArray) -> np.ndarray:
    if not aval.ndim:
        return np.asarray(x, aval.dtype)
    view = x.view(aval.dtype) if aval.dtype in HALVES else x.view()
    view.flags.writeable = False  # the kernel's own buffer
    return view


def _to_kernel(x: np.ndarray, aval: ShapedArray) -> Any:
    if not aval.ndim:
        value = x[()]
        return np.float32(value) if aval.dtype in HALVES else value
    value = np.ascontiguousarray(x)
    return value.view(np.uint16) if aval.dtype in HALVES else value


def _is_token(aval: Any) -> bool:
    return isinstance(aval, TokenAval)




def emit_host_call(ge: GraphEmitter, eqn: Eqn) -> None:
    """The op's reference run in object mode; its tokens stay in compiled code."""
    values_in = tuple(a for a in eqn.inputs if not _is_token(a.aval))
    values_out = tuple(v for v in eqn.outputs if not _is_token(v.aval))
    table, index = ge.mod.fallback(eqn, host_runner(eqn))
    outs = [Ref(ge.fresh("host_out"), v.aval) for v in values_out]
    types = ", ".join(f'{r.name}="{numba_type(r.aval)}"' for r in outs)
    call = f"fallback.run({table}, {index}{''.join(', ' + ge.ref(a).name for a in values_in)})"
    what = eqn.params.get("callback") or eqn.params.get("printer")
    if what is not None:
        ge.w.comment(f"calls {what}")
    with ge.w.block(f"with numba.objmode({types})"):
        ge.w.line(f"{', '.join(r.name for r in outs)}, = {call}" if outs else call)
    it = iter(outs)
    tokens = [a for a in eqn.inputs if _is_token(a.aval)]
    for v in eqn.outputs:
        ge.bind(v, _token_ref(ge, v, tokens) if _is_token(v.aval) else next(it))


def _token_ref(ge: GraphEmitter, out: Var, tokens: Sequence[Any]) -> Ref:
    """An output token: the (first) input token, or a fresh empty array."""
    if tokens:
        return ge.ref(tokens[0])
    return Ref(ge.alloc(out, "token"), out.aval)


def _after_all(ge: GraphEmitter, eqn: Eqn) -> None:
    ge.bind(eqn.outputs[0], _token_ref(ge, eqn.outputs[0], eqn.inputs))


EMITTERS: dict[str, Any] = {
    "after_all": _after_all,
    **{name: emit_host_call for name in ("pure_callback", "io_callback", "debug_callback",
                                         "debug_print", "infeed", "outfeed", "send",
                                         "recv")},
}

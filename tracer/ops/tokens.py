"""Tokens and the host-communication ops of the seeds: AfterAll / CreateToken, Infeed,
Outfeed, Send and Recv.

A token (`core.TOKEN`, HLO `token[]`) carries no data: an op that takes one runs after
the op that produced it, so a chain of tokens fixes the order of side effects. At run
time a token is an empty array. These ops are effectful (passes never drop, merge or
fold them) and have a host effect (checkpoint never recomputes them).

- `infeed` reads the next value that `tr.transfer_to_infeed` queued; `outfeed` queues
  its operand for `tr.transfer_from_outfeed` (`tracer.ops.feeds` holds the queues).
- `send` / `recv` with the same `channel_id` pair up inside this process (a queue per
  channel); with `source_target_pairs` in a job of several processes, replica `s`
  sends to replica `t` through the job's communicator (`tracer.distributed`).

When a wrapper is given no token it takes the current trace's ordered-effect token
(`ordered_token`), so infeeds, outfeeds and ordered callbacks of one function run in
program order.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import TOKEN, Eqn, ShapedArray, TokenAval, Var, user_source
from ..errors import DTypeError, ParamError
from ..tracing import Tracer, current_builder
from ..tree_util import tree_flatten, tree_unflatten
from . import feeds
from .common import wrapper_error
from .registry import define_op
from .replicas import replica_count, replica_transport

__all__ = ["create_token", "after_all", "infeed", "outfeed", "send", "recv"]


def check_token(op: str, aval: ShapedArray) -> None:
    """A token, or the empty bool array that stands for one outside a trace."""
    if not isinstance(aval, TokenAval) and (aval.shape, aval.dtype) != (TOKEN.shape,
                                                                        TOKEN.dtype):
        raise DTypeError(f"expected a token (token[], from ops.create_token or an op "
                         f"that returns one), got {aval}")


def _after_all_shape(*avals: ShapedArray) -> ShapedArray:
    for a in avals:
        check_token("after_all", a)
    return TOKEN


after_all_p = define_op(
    "after_all", shape=_after_all_shape, impl=lambda *tokens: np.zeros(0, np.bool_),
    hlo_name="after-all", family="token", differentiable=False, effectful=True,
    doc="AfterAll(tokens...): a token that is ready once every operand token is; with no "
        "operands it creates a fresh token (CreateToken). Example: after_all(t1, t2) -> "
        "token[] ordered after both.")


def create_token() -> Any:
    """A fresh token (the seeds' CreateToken: AfterAll with no operands).

    >>> value, token = infeed(ShapedArray((2,), np.float32), create_token())
    """
    return after_all_p.bind()


def after_all(*tokens: Any) -> Any:
    """A token ordered after all of `tokens` (seed AfterAll).

    >>> t = after_all(outfeed(x, t1), outfeed(y, t2))
    """
    return after_all_p.bind(*tokens)


# ------------------------------------------------------------------ ordered effects
def ordered_token() -> Any:
    """The token the next ordered effect of the current trace consumes.

    The chain starts with one `after_all()` in the outermost trace; a loop body or
    branch uses the token of the trace around it (a captured operand), so its effects
    run after the ones before the loop. Outside any trace: a fresh token."""
    builder = current_builder()
    if builder is None:
        return create_token()
    b: Any = builder
    while b is not None:
        token = getattr(b, "effect_token", None)
        if token is not None:
            return token
        root, b = b, b.parent
    var = Var(TOKEN)
    root.add_eqn(Eqn(after_all_p, (), {}, (var,), user_source()))
    root.effect_token = Tracer(root, var)
    return root.effect_token


def set_ordered_token(token: Any) -> None:
    """Make `token` (the output of an ordered effect) the current trace's chain head."""
    builder = current_builder()
    if builder is not None:
        builder.effect_token = token


def captured_token(consts: Sequence[Any]) -> Any:
    """The token of the trace around it that a traced loop body or branch used (it
    continued that trace's ordered-effect chain), or None. The loop then carries it,
    starting from that token: a transformation re-tracing a loop (whose eqns name their
    tokens) continues from the same one."""
    return next((c for c in consts if isinstance(getattr(c, "aval", None), TokenAval)), None)


def thread_body(fun: Callable[..., Any], pair: bool = False, splat: bool = False
                ) -> Callable[..., Any]:
    """`fun` taking the ordered-effect token first and returning the chain's last token
    first: a while body `(token, carry) -> (token, carry)`, a scan body (`pair`)
    `((token, carry), x) -> ((token, carry), y)`, a branch (`splat`)
    `(token, *operands) -> (token, result)`."""
    def threaded(*args: Any) -> Any:
        if pair:
            (token, carry), x = args
            set_ordered_token(token)
            carry, y = fun(carry, x)
            return (ordered_token(), carry), y
        token, rest = (args[0], args[1:]) if splat else args[0]
        set_ordered_token(token)
        out = fun(*rest) if splat else fun(rest)
        return ordered_token(), out
    return threaded


def _token_or_current(token: Any) -> tuple[Any, bool]:
    """(token to use, whether it is the trace's ordered chain)."""
    return (ordered_token(), True) if token is None else (token, False)


# ------------------------------------------------------------------ infeed / outfeed
def _infeed_shape(token: ShapedArray, *, result_avals: tuple, timeout: float | None
                  ) -> tuple[ShapedArray, ...]:
    check_token("infeed", token)
    return (*result_avals, TOKEN)


def _infeed_impl(token: np.ndarray, *, result_avals: tuple, timeout: float | None
                 ) -> list[np.ndarray]:
    return [*feeds.read_infeed(result_avals, timeout), np.zeros(0, np.bool_)]


infeed_p = define_op(
    "infeed", shape=_infeed_shape, impl=_infeed_impl, hlo_name="infeed", family="token",
    multiple_results=True, differentiable=False, effectful=True, io_effect=True,
    doc="Infeed(shape, token): reads the next value of the declared shape from the "
        "device's infeed queue (filled by tr.transfer_to_infeed) -> (value, token). "
        "Example: tr.transfer_to_infeed(np.ones(3)); infeed(f64[3]) -> ([1, 1, 1], token).")


def infeed(shape: Any, token: Any = None, *, timeout: float | None = None
           ) -> tuple[Any, Any]:
    """Read a value of `shape` (a ShapedArray or a pytree of them) queued on the host
    with `tr.transfer_to_infeed` -> `(value, token)`. With `timeout` (seconds) a read
    that finds nothing queued raises a TracerError instead of waiting.

    >>> tr.transfer_to_infeed(np.ones(3, np.float32))
    >>> value, token = ops.infeed(tr.ShapedArray((3,), np.float32))
    """
    avals, tree = feeds.flat_avals("infeed", shape)
    token, chained = _token_or_current(token)
    *outs, token = infeed_p.bind(token, result_avals=tuple(avals),
                                 timeout=None if timeout is None else float(timeout))
    if chained:
        set_ordered_token(token)
    return tree_unflatten(tree, outs), token


def _outfeed_shape(*avals: ShapedArray, tree: Any) -> ShapedArray:
    check_token("outfeed", avals[-1])
    return TOKEN


def _outfeed_impl(*args: np.ndarray, tree: Any) -> np.ndarray:
    feeds.write_outfeed(tree, [np.array(a) for a in args[:-1]])
    return np.zeros(0, np.bool_)


outfeed_p = define_op(
    "outfeed", shape=_outfeed_shape, impl=_outfeed_impl, hlo_name="outfeed", family="token",
    differentiable=False, effectful=True, io_effect=True,
    doc="Outfeed(operand, token, shape): queues the operand on the device's outfeed "
        "queue (read with tr.transfer_from_outfeed) -> token. Example: outfeed(x) then "
        "tr.transfer_from_outfeed(ShapedArray(x.shape, x.dtype)) -> x.")


def outfeed(operand: Any, token: Any = None) -> Any:
    """Queue `operand` (an array or a pytree of arrays) for `tr.transfer_from_outfeed`;
    returns a token.

    >>> token = ops.outfeed(loss)   # host: tr.transfer_from_outfeed(ShapedArray((), f32))
    """
    leaves, tree = tree_flatten(operand)
    token, chained = _token_or_current(token)
    out = outfeed_p.bind(*leaves, token, tree=tree)
    if chained:
        set_ordered_token(out)
    return out


# ------------------------------------------------------------------ send / recv
def _channel(op: str, channel_id: Any) -> int:
    if not isinstance(channel_id, (int, np.integer)) or isinstance(channel_id, bool) \
            or channel_id < 0:
        raise wrapper_error(ParamError, op, f"channel_id must be an int >= 0, got "
                            f"{channel_id!r}")
    return int(channel_id)


def _pairs(op: str, pairs: Any) -> tuple[tuple[int, int], ...] | None:
    """Canonical (source, target) replicas of a send/recv across processes."""
    if pairs is None:
        return None
    try:
        canon = tuple((int(s), int(t)) for s, t in pairs)
    except (TypeError, ValueError):
        raise wrapper_error(ParamError, op, f"source_target_pairs must be (source, target) "
                            f"replica pairs, got {pairs!r}") from None
    count = replica_count()
    if any(not 0 <= r < count for p in canon for r in p):
        raise wrapper_error(ParamError, op, f"source_target_pairs {list(canon)} name replicas "
                            f"outside 0..{count - 1}")
    return canon


def _send_shape(operand: ShapedArray, token: ShapedArray, *, channel_id: int,
                source_target_pairs: Any = None) -> ShapedArray:
    check_token("send", token)
    return TOKEN


def _send_impl(operand: np.ndarray, token: np.ndarray, *, channel_id: int,
               source_target_pairs: Any = None) -> np.ndarray:
    if source_target_pairs is not None and replica_count() > 1:
        replica_transport().run("send", (operand,), {"channel_id": channel_id,
                                                     "source_target_pairs": source_target_pairs})
    else:
        feeds.channel(channel_id).put(np.array(operand))
    return np.zeros(0, np.bool_)


send_p = define_op(
    "send", shape=_send_shape, impl=_send_impl, hlo_name="send", family="token",
    differentiable=False, effectful=True, io_effect=True,
    doc="Send(operand, token, channel_handle): sends the operand to the Recv with the same "
        "channel id -> token. Example: send(x, t, channel_id=1); recv(f32[3], t, "
        "channel_id=1) -> (x, token).")


def send(operand: Any, token: Any, channel_id: int, *,
         source_target_pairs: Sequence[tuple[int, int]] | None = None) -> Any:
    """Send `operand` to the `recv` with the same `channel_id` -> token. Across the
    processes of a job, replica `s` sends to `t` for each `(s, t)` in
    `source_target_pairs` (the recv names the same pairs); the send does not wait
    for the receiver.

    >>> t = ops.send(x, ops.create_token(), channel_id=7)
    >>> t = ops.send(x, t, channel_id=8, source_target_pairs=[(0, 1)])  # replica 0 -> 1
    """
    return send_p.bind(operand, token, channel_id=_channel("send", channel_id),
                       source_target_pairs=_pairs("send", source_target_pairs))


def _recv_shape(token: ShapedArray, *, aval: ShapedArray, channel_id: int,
                timeout: float | None, source_target_pairs: Any = None
                ) -> tuple[ShapedArray, ShapedArray]:
    check_token("recv", token)
    return aval, TOKEN


def _recv_impl(token: np.ndarray, *, aval: ShapedArray, channel_id: int,
               timeout: float | None, source_target_pairs: Any = None) -> list[np.ndarray]:
    if source_target_pairs is not None and replica_count() > 1:
        value = replica_transport().run("recv", (), {
            "channel_id": channel_id, "source_target_pairs": source_target_pairs,
            "aval": aval})
    else:
        value = feeds.receive(channel_id, aval, timeout)
    return [value, np.zeros(0, np.bool_)]


recv_p = define_op(
    "recv", shape=_recv_shape, impl=_recv_impl, hlo_name="recv", family="token",
    multiple_results=True, differentiable=False, effectful=True, io_effect=True,
    doc="Recv(shape, token, channel_handle): receives the value the Send with the same "
        "channel id sent -> (value, token). Example: after send(x, t, channel_id=1), "
        "recv(f32[3], t, channel_id=1) -> (x, token).")


def recv(shape: Any, token: Any, channel_id: int, *, timeout: float | None = None,
         source_target_pairs: Sequence[tuple[int, int]] | None = None) -> tuple[Any, Any]:
    """Receive the value of `shape` sent on `channel_id` -> `(value, token)`; with
    `timeout` (seconds) a receive with nothing sent raises instead of waiting. Across
    the processes of a job, replica `t` receives from `s` for each `(s, t)` in
    `source_target_pairs`; a replica no pair targets gets zeros (as CollectivePermute).

    >>> value, t = ops.recv(tr.ShapedArray((3,), np.float32), t, channel_id=7)
    """
    (aval,), _ = feeds.flat_avals("recv", shape)
    value, token = recv_p.bind(token, aval=aval, channel_id=_channel("recv", channel_id),
                               timeout=None if timeout is None else float(timeout),
                               source_target_pairs=_pairs("recv", source_target_pairs))
    return value, token


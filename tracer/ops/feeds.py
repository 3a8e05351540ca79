"""The host side of infeed, outfeed and send/recv: thread-safe FIFO queues.

An infeed and an outfeed queue per device (`"cpu"`: the host, which the cpu and
interpreter backends run on; `"cuda"`: the GPU, whose programs run these ops on the
host between kernels, inside `on_device("cuda")`), and one queue per send/recv channel
of this process. A read with a timeout raises `TracerError` when nothing arrives in
time; values are checked against the declared shape and dtype on the way in and out.

    tr.transfer_to_infeed(np.ones(3, np.float32))       # before or while the program runs
    tr.transfer_from_outfeed(tr.ShapedArray((), np.float32), timeout=5.0)
    tr.transfer_to_infeed(x, device="cuda")             # for a program jitted for cuda
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from typing import Any, Iterator, Sequence

import numpy as np

from ..core import ShapedArray
from ..errors import DTypeError, ShapeError, TracerTypeError, TracerValueError
from ..tree_util import tree_flatten, tree_unflatten
from .common import wrapper_error

DEVICES = ("cpu", "cuda")
_INFEEDS: dict[str, "queue.Queue[list[np.ndarray]]"] = {d: queue.Queue() for d in DEVICES}
_OUTFEEDS: dict[str, "queue.Queue[tuple[Any, list[np.ndarray]]]"] = {
    d: queue.Queue() for d in DEVICES}
_CHANNELS: dict[int, "queue.Queue[np.ndarray]"] = {}
_LOCK = threading.Lock()
# the device whose program is running the op in this thread
_RUNNING_ON: contextvars.ContextVar[str] = contextvars.ContextVar("feed_device", default="cpu")


@contextlib.contextmanager
def on_device(device: str) -> Iterator[None]:
    """Infeeds and outfeeds run inside use `device`'s queues (the cuda backend's host ops)."""
    token = _RUNNING_ON.set(device)
    try:
        yield
    finally:
        _RUNNING_ON.reset(token)


def _device(op: str, device: str | None) -> str:
    if device is None:
        return _RUNNING_ON.get()
    if device not in DEVICES:
        raise TracerValueError(f"{op}: device must be one of {DEVICES}, got {device!r}")
    return device


def flat_avals(op: str, shape: Any) -> tuple[list[ShapedArray], Any]:
    """(leaf avals, treedef) of `shape`: a ShapedArray (anything with .shape and .dtype)
    or a pytree of them."""
    def is_aval(x: Any) -> bool:
        return hasattr(x, "shape") and hasattr(x, "dtype")
    leaves, tree = tree_flatten(shape, is_leaf=is_aval)
    if not leaves or not all(map(is_aval, leaves)):
        raise wrapper_error(TracerTypeError, op, f"shape must be a ShapedArray (or anything "
                            f"with .shape and .dtype) or a pytree of them, got {shape!r:.60}")
    return [ShapedArray(tuple(x.shape), x.dtype) for x in leaves], tree


def _get(q: "queue.Queue[Any]", what: str, timeout: float | None) -> Any:
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        raise TracerValueError(f"{what}: nothing arrived within the timeout of {timeout} s "
                               f"(queue it first, or give a longer timeout)") from None


def _checked(what: str, value: np.ndarray, aval: ShapedArray) -> np.ndarray:
    if value.shape != aval.shape:
        raise ShapeError(f"{what}: the value has shape {value.shape} ({value.dtype}); "
                         f"declared {aval}")
    if value.dtype != aval.dtype:
        raise DTypeError(f"{what}: the value has dtype {value.dtype} (shape {value.shape}); "
                         f"declared {aval}")
    return value


def transfer_to_infeed(value: Any, device: str | None = None) -> None:
    """Queue `value` (an array or a pytree of arrays) for the next `ops.infeed` of the
    same structure that a program on `device` runs (XLA's TransferToInfeed). `device`
    None: the device whose program is calling (from a callback), else `"cpu"`.

    >>> tr.transfer_to_infeed(np.arange(3, dtype=np.float32))
    """
    leaves, _ = tree_flatten(value)
    if not leaves:
        raise TracerTypeError("transfer_to_infeed: value holds no arrays")
    _INFEEDS[_device("transfer_to_infeed", device)].put([np.array(x) for x in leaves])


def read_infeed(avals: Sequence[ShapedArray], timeout: float | None) -> list[np.ndarray]:
    """The next queued infeed value, checked against `avals` (called by the op)."""
    values = _get(_INFEEDS[_RUNNING_ON.get()], "infeed", timeout)
    if len(values) != len(avals):
        raise TracerValueError(f"infeed: the queued value has {len(values)} arrays; the "
                               f"infeed declares {len(avals)} ({', '.join(map(str, avals))})")
    return [_checked("infeed", v, a) for v, a in zip(values, avals, strict=True)]


def write_outfeed(tree: Any, values: list[np.ndarray]) -> None:
    _OUTFEEDS[_RUNNING_ON.get()].put((tree, values))


def transfer_from_outfeed(shape: Any, timeout: float | None = None,
                          device: str | None = None) -> Any:
    """The next value an `ops.outfeed` of a program on `device` queued, as arrays of
    `shape` (a ShapedArray or a pytree of them; XLA's TransferFromOutfeed). With
    `timeout` (seconds), raises a TracerError when nothing arrives in time; without,
    waits. `device` None: the device whose program is calling, else `"cpu"`.

    >>> tr.transfer_from_outfeed(tr.ShapedArray((3,), np.float32), timeout=1.0)
    """
    avals, tree = flat_avals("transfer_from_outfeed", shape)
    sent_tree, values = _get(_OUTFEEDS[_device("transfer_from_outfeed", device)],
                             "transfer_from_outfeed", timeout)
    if len(values) != len(avals):
        raise TracerValueError(f"transfer_from_outfeed: the outfeed value has {len(values)} "
                               f"arrays ({sent_tree}); asked for {len(avals)} "
                               f"({', '.join(map(str, avals))})")
    checked = [_checked("transfer_from_outfeed", v, a)
               for v, a in zip(values, avals, strict=True)]
    return tree_unflatten(tree, checked)


def channel(channel_id: int) -> "queue.Queue[np.ndarray]":
    """The queue of one send/recv channel of this process."""
    with _LOCK:
        return _CHANNELS.setdefault(channel_id, queue.Queue())


def receive(channel_id: int, aval: ShapedArray, timeout: float | None) -> np.ndarray:
    value = _get(channel(channel_id), f"recv on channel {channel_id}", timeout)
    return _checked(f"recv on channel {channel_id}", value, aval)

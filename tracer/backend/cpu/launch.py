"""The launcher of a cpu executable: a Python function written for one module, which
checks the input layouts, finds the buffers, calls the host function and returns the
outputs.

Buffers: a fresh large array costs a page fault per page the kernel first touches
(about as much as GELU's arithmetic on 2^24 floats), so the launcher keeps, per
buffer parameter of at least `POOL_MIN_BYTES`, the last `POOL_DEPTH` arrays it made
(`BufferPool`), and hands one out again only when nothing but the pool references it
(`sys.getrefcount`: no result, view, memoryview or argument of the caller holds it), so
two live results never share memory. glibc's `mallopt(M_MMAP_THRESHOLD)` would warm
every allocation of the process instead; the pool changes nothing outside tracer.

Non-contiguous inputs: copied, or read in place by the module's strided version when
`strided.StridedHost` admits them (see `strided`); the launcher then calls that version.

Donation (`jit(donate_argnums=...)`): an input the module writes an output into
(`Module.donors`) is checked before the call; one that is read-only or overlaps
another input is copied first, so the result is right whatever the caller passed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...numpy._eager import EagerArray
from ..numba.scalar import HALVES
from ..numba.source import SourceWriter
from .generate import Module
from .strided import StridedHost

POOL_MIN_BYTES = 1 << 20  # smaller buffers come from malloc's heap, already warm
POOL_DEPTH = 2            # `y = f(x)` in a loop: the previous result is live during a call


def _sole_reference_count() -> int:
    """What `getrefcount` says of an array only a local variable holds (measured the
    way `BufferPool.take` asks, so it holds on any CPython)."""
    held = [np.empty(0)]
    buf = held.pop()
    return sys.getrefcount(buf)


_SOLE = _sole_reference_count()


class BufferPool:
    """The recent arrays of one buffer parameter, live (a caller holds them) or free."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held: list[np.ndarray] = []

    def take(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A held array nothing else references, or a new one. (`pop` is atomic: two
        threads calling the executable never get the same array.)"""
        held = self.held
        for _ in range(len(held)):
            try:
                buf = held.pop()
            except IndexError:
                break
            if sys.getrefcount(buf) == _SOLE:
                return buf
            held.insert(0, buf)  # still live: look again at a later call
        return np.empty(shape, dtype)

    def give(self, buf: np.ndarray) -> None:
        held = self.held
        held.append(buf)
        if len(held) > POOL_DEPTH:
            try:
                del held[0]
            except IndexError:
                pass


@dataclass(frozen=True)
class TrustedLaunch:
    """`launch_trusted`: the launcher without the layout checks, for a caller that made
    them (every array input an ndarray or EagerArray with `flags.carray`), as a
    function (`call`) and as the lines of its body (`body`, ending in its `return`;
    inputs named a0, a1, ...) with the globals they read (`env`), which
    `dispatch.make_guard` writes into its guard to spare a frame."""

    call: Callable[..., Any]
    body: SourceWriter
    env: dict[str, Any]


def launcher(module: Module, host: Callable[..., Any], dims: np.ndarray, n_inputs: int,
             strided: StridedHost) -> tuple[Callable[..., Any], Callable[..., Any],
                                            TrustedLaunch]:
    """Python functions specialized to this module's parameters, so a call does no more
    than check input layouts, find the buffers and call the host function: `launch`
    returns the list of outputs; `launch_direct`, the same call for jit's hot path,
    returns them as `EagerArray` views, the one view itself when there is one output
    (no list and no frame in between: see `tracer.dispatch`); `TrustedLaunch`, the
    same without the layout checks."""
    env: dict[str, Any] = {"host": host, "dims": dims, "ndarray": np.ndarray, "empty": np.empty,
                           "eager": EagerArray, "uint16": np.uint16, "strided": strided,
                           "asarray": np.asarray, "array": np.array, "np": np,
                           "private": _private}
    args = [f"a{k}" for k in range(n_inputs)]
    outs = _output_names(module, env)
    views = [f"{out}.view(eager)" for out in outs]
    direct = views[0] if len(views) == 1 else f"[{', '.join(views)}]"
    bodies = {name: _launch_body(module, env, args, checked, result) for name, result, checked
              in (("launch", f"[{', '.join(outs)}]", True), ("launch_direct", direct, True),
                  ("launch_trusted", direct, False))}
    w = SourceWriter()
    for name, body in bodies.items():
        with w.block(f"def {name}({', '.join(args)})"):
            w.embed(body)
    exec(compile(w.text(), "<tracer cpu launcher>", "exec"), env)
    trusted = TrustedLaunch(env["launch_trusted"], bodies["launch_trusted"], env)
    return env["launch"], env["launch_direct"], trusted


def _launch_body(module: Module, env: dict[str, Any], args: list[str], checked: bool,
                 result: str) -> SourceWriter:
    """The lines of a launcher: inputs made what the host reads (the layout checks only
    when `checked`), buffers, donors, the host call, `return result`."""
    body = SourceWriter()
    pooled: list[str] = []
    if checked:
        body.line("in_place = False")
    names = [_launch_param(body, env, p, pooled, module.donors, checked) for p in module.params]
    for k in sorted(module.donors):
        others = ", ".join(a for a in args if a != f"a{k}")
        body.line(f"a{k} = private(a{k}, ({others}{',' if others else ''}))")
    call = "(strided.host() if in_place else host)" if checked else "host"
    body.line(f"{call}({', '.join(names + ['dims'])})")
    for name in pooled:
        body.line(f"pool_{name}.give({name})")
    body.line(f"return {result}")
    return body


def _output_names(module: Module, env: dict[str, Any]) -> list[str]:
    outs = []
    for k, (kind, payload) in enumerate(module.outputs):
        if kind == "param":
            p = module.params[payload]
            outs.append(f"{p.name}_f16" if p.value.dtype in HALVES else p.name)
        elif kind == "input":
            outs.append(f"asarray(a{payload})")
        else:
            env[f"literal{k}"] = payload
            outs.append(f"array(literal{k})")
    return outs


def _launch_param(w: SourceWriter, env: dict[str, Any], p: Any, pooled: list[str],
                  donors: Any, checked: bool) -> str:
    """Lines that produce host parameter `p` (an input's layout checked when
    `checked`); returns the name to pass."""
    f16 = p.value.dtype in HALVES  # float16 / bfloat16: the kernel sees uint16 bits
    if p.kind == "const":  # (the host's C-layout code reads it: contiguous, once)
        if p.name not in env:  # (the launcher's versions share one copy)
            value = np.ascontiguousarray(p.value)
            env[p.name] = value.view(np.uint16) if f16 else value
        return p.name
    if p.kind == "input":
        if p.value.ndim == 0:  # a Python scalar from jit's hot path (weakly typed)
            env[f"dtype_a{p.index}"] = np.dtype(p.value.dtype)
            with w.block(f"if type(a{p.index}) is not ndarray and type(a{p.index}) is not eager"):
                w.line(f"a{p.index} = asarray(a{p.index}, dtype_a{p.index})")
        if checked:
            _launch_input(w, f"a{p.index}", p.name, bool(p.value.ndim) and p.index not in donors)
        return f"a{p.index}.view(uint16)" if f16 else f"a{p.index}"
    shape, dtype = tuple(p.value.shape), np.dtype(p.value.dtype)
    array = f"{p.name}_f16" if f16 else p.name
    if shape and int(np.prod(shape)) * dtype.itemsize >= POOL_MIN_BYTES:
        env.setdefault(f"pool_{array}", BufferPool())  # (one pool for every version)
        pooled.append(array)
        w.line(f"{array} = pool_{array}.take({shape!r}, {dtype.name!r})")
    else:  # (a dtype object: NumPy parses a dtype name at every call)
        env[f"dtype_{array}"] = dtype
        w.line(f"{array} = empty({shape!r}, dtype_{array})")
    if f16:
        w.line(f"{p.name} = {array}.view(uint16)")
    return p.name


def _launch_input(w: SourceWriter, a: str, name: str, may_stride: bool) -> None:
    """Input `a` (host parameter `name`) made an aligned C-contiguous ndarray (a copy;
    read-only ones are fine: kernels only write the inputs `_private` vetted), unless
    `may_stride` and `strided` reads it in place. (Unaligned data is copied too: the
    compiled code assumes aligned arrays.) An `EagerArray` (a jit result fed back) is
    an ndarray to the machine code. The common case reads one flags object:
    `carray` is C-contiguous, aligned and writeable; a read-only array is looked at
    again, and is fine as it is."""
    array = f"(type({a}) is ndarray or type({a}) is eager)"
    with w.block(f"if not {array} or not {a}.flags.carray"):
        with w.block(f"if not {array} or not ({a}.flags.c_contiguous and {a}.flags.aligned)"):
            if may_stride:
                with w.block(f"if {array} and strided.admit({a}, {name!r})"):
                    w.line("in_place = True")
                with w.block("else"):
                    w.line(f"{a} = strided.copy({a})")
            else:
                w.line(f"{a} = strided.copy({a})")


def _private(x: np.ndarray, others: tuple) -> np.ndarray:
    """A donated input the kernel may write an output into: `x` itself, or a copy when
    it is read-only or shares memory with another input (the same array passed twice,
    two views of one base), whose reads the writes would change."""
    if not x.flags.writeable or any(np.may_share_memory(x, o) for o in others):
        return x.copy()
    return x

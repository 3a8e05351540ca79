"""The peers besides NumPy, JAX and hand-written numba: PyTorch (eager and
`torch.compile`, CPU) and PyTensor (`pytensor.function(..., mode="NUMBA")`, the
graph compiler closest to tracer: it also lowers a graph to numba).

Each `*_rows` function returns `(name, callable)` rows for a workload's `_run`, or
no rows (and a note printed once) when the peer is not installed: the `bench`
extra installs PyTorch, `docs/performance.md` says how to add PyTensor. Compiling
peers build lazily, so a row's first call (`bench.common.first_call_timed`) is its
compile time plus one run, as a jitted tracer or JAX row's first call is.
"""

from __future__ import annotations

import importlib
import os
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np

from bench.common import first_call_timed

Row = tuple[str, Callable[[], Any]]
_NOTED: set[str] = set()
_INSTALL = {"torch": 'pip install -e ".[bench]"',
            "pytensor": 'pip install -e ".[bench-pytensor]" (docs/performance.md)'}


def _optional(module: str) -> Any:
    """The module, or None with a one-time note saying how to install it."""
    try:
        return importlib.import_module(module)
    except Exception as exc:  # optional peer: any import failure means "absent"
        if module not in _NOTED:
            _NOTED.add(module)
            print(f"note: {module} rows skipped ({type(exc).__name__}: {exc}); "
                  f"{_INSTALL[module]} adds them")
        return None


def try_import_torch() -> Any:
    torch = _optional("torch")
    if torch is not None and "TRACER_BENCH_TORCH_THREADS" in os.environ:
        torch.set_num_threads(int(os.environ["TRACER_BENCH_TORCH_THREADS"]))
    return torch


def try_import_pytensor() -> Any:
    pytensor = _optional("pytensor")
    if pytensor is not None:
        # Python float literals as float32 constants (float64 by default, which would
        # upcast the float32 workloads); float64 inputs stay float64.
        pytensor.config.floatX = "float32"
    return pytensor


# ------------------------------------------------------------------ PyTorch

def torch_numpy(torch: Any) -> SimpleNamespace:
    """The NumPy names the workloads use (`np_.max(x, axis=1, keepdims=True)`, ...),
    spelled in torch, so one workload source serves NumPy, JAX, tracer and torch."""
    def reduction(fn: Callable[..., Any]) -> Callable[..., Any]:
        def reduce(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
            return fn(x) if axis is None else fn(x, dim=axis, keepdim=keepdims)
        return reduce
    def pad(x: Any, widths: Sequence[tuple[int, int]]) -> Any:
        # np.pad's constant zeros; torch's F.pad lists (lo, hi) from the last axis back.
        flat = [w for lo_hi in reversed(widths) for w in lo_hi]
        return torch.nn.functional.pad(x, flat)
    return SimpleNamespace(tanh=torch.tanh, exp=torch.exp, log=torch.log, sqrt=torch.sqrt,
                           sin=torch.sin, dot=torch.dot, maximum=torch.maximum,
                           max=reduction(torch.amax), sum=reduction(torch.sum),
                           mean=reduction(torch.mean), pad=pad,
                           stack=lambda xs, axis=0: torch.stack(xs, dim=axis))


def torch_rows(fn: Callable[..., Any], *args: np.ndarray, compiled: bool = True,
               suffix: str = "") -> list[Row]:
    """Rows calling `fn` (written against torch tensors) eagerly and, with `compiled`,
    through `torch.compile` (compiled at its first call)."""
    torch = try_import_torch()
    if torch is None:
        return []
    tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in args]
    rows = [(f"torch{suffix}", lambda: fn(*tensors))]
    if compiled:
        rows.append(_lazy(f"torch.compile{suffix}", lambda: torch.compile(fn), tensors))
    return rows


def torch_grad_rows(loss: Callable[..., Any], argnums: Sequence[int], *args: np.ndarray,
                    compiled: bool = True, value: bool = True) -> list[Row]:
    """Rows returning (loss, *gradients w.r.t. `argnums`) by autograd (only the
    gradients without `value`), eager and with the loss under `torch.compile`
    (AOTAutograd compiles its backward too)."""
    torch = try_import_torch()
    if torch is None:
        return []
    tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in args]

    def value_and_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
        def step(*xs: Any) -> Any:
            xs = [x.detach().requires_grad_(i in argnums) for i, x in enumerate(xs)]
            loss_value = fn(*xs)
            grads = torch.autograd.grad(loss_value, [xs[i] for i in argnums])
            return (loss_value.detach(), *grads) if value else grads
        return step
    rows = [("torch", lambda: value_and_grad(loss)(*tensors))]
    if compiled:
        rows.append(_lazy("torch.compile", lambda: value_and_grad(torch.compile(loss)),
                          tensors))
    return rows


def _lazy(name: str, build: Callable[[], Callable[..., Any]], args: Sequence[Any]) -> Row:
    """A row that builds (compiles) its function at its first call, timed as such."""
    built: list[Callable[..., Any]] = []

    def call() -> Any:
        if not built:
            built.append(build())
        return built[0](*args)
    return name, first_call_timed(name, call)


# ------------------------------------------------------------------ PyTensor

def pytensor_rows(graph: Callable[..., Any], *args: np.ndarray,
                  grad_argnums: Sequence[int] = (), suffix: str = "") -> list[Row]:
    """A row running `graph(pt, *symbolic_inputs)` (PyTensor's NumPy-like
    `pytensor.tensor` as `pt`) compiled by PyTensor's numba backend; with
    `grad_argnums`, the graph is a scalar loss and the row returns it and its gradients
    (`pytensor.grad`). Inputs have the arguments' static shapes, as jit specializes."""
    pytensor = try_import_pytensor()
    if pytensor is None:
        return []
    import pytensor.tensor as pt

    def build() -> Callable[..., Any]:
        inputs = [pt.tensor(f"x{i}", dtype=str(a.dtype), shape=a.shape)
                  for i, a in enumerate(args)]
        out = graph(pt, *inputs)
        if grad_argnums:
            out = [out, *pytensor.grad(out, [inputs[i] for i in grad_argnums])]
        return pytensor.function(inputs, out, mode="NUMBA")
    return [_lazy(f"pytensor numba{suffix}", build, args)]

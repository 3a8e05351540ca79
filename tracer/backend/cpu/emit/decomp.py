"""cpu emitters for cholesky, triangular_solve, lu, qr, eigh and svd.

Each op is one call into the njit kernels of `cpu.lib.linalg` (lu: `cpu.lib.lu`,
triangular_solve: `cpu.lib.triangular`), on 3-D views
(batch, rows, cols) of its C-contiguous operands and freshly allocated outputs (the
batch dims flattened; an unbatched matrix is a batch of one). Sizes come from
`dims`; the op's static flags are `bool(True)` / `bool(False)` arguments: numba
compiles a kernel called with a literal `True` for that literal, so each flag set was
a compile of its own (a parallel kernel's: 4 s), where a run-time bool is one for all.

lu and triangular_solve of a batch of several matrices, at least PARALLEL_MIN_ELEMENTS
in all, call their kernels' `_parallel` forms in graphs that may use threads: one run
of the batch per thread of numba's pool (`cpu.lib.batches`). Such a graph calls BLAS,
so it may use threads only where MKL runs on the same GNU OpenMP pool
(`backend._threads_ok`): inside the pool's parallel region each MKL call then runs on
its one thread (1000 solves of 32x32 on two threads: see `cpu.lib.triangular`).
"""

from __future__ import annotations

from typing import Any

import math

from ....core import Atom, Eqn
from ...numba.codegen import GraphEmitter, Ref
from ..options import PARALLEL_MIN_ELEMENTS

_LIB = "cpu.lib.linalg"


def _batched(ge: GraphEmitter, atom: Atom, name: str, minor: int) -> str:
    """A view of array `name` (the value of `atom`) as (batch, *its `minor` last dims)."""
    nd = atom.aval.ndim
    batch = " * ".join(ge.dim(atom, d) for d in range(nd - minor)) or "1"
    sizes = ", ".join([batch] + [ge.dim(atom, d) for d in range(nd - minor, nd)])
    view = ge.fresh(f"{name}_{minor + 1}d")
    ge.w.line(f"{view} = {name}.reshape(({sizes}))")
    return view


def _call(ge: GraphEmitter, eqn: Eqn, kernel: str, flags: tuple[str, ...] = (),
          lib: str = _LIB) -> None:
    """kernel(inputs..., outputs..., flags...): every input a matrix batch, each output
    a matrix or vector batch; binds the outputs."""
    args = [_batched(ge, a, ge.ref(a).name, 2) for a in eqn.inputs]
    for var in eqn.outputs:
        target = ge.alloc(var)
        ge.bind(var, Ref(target, var.aval))
        minor = 2 if var.aval.ndim == eqn.inputs[0].aval.ndim else 1
        args.append(_batched(ge, var, target, minor))
    args += [f"{f}=bool({bool(eqn.params[f])})" for f in flags]
    ge.w.line(f"{ge.mod.use(kernel, lib)}({', '.join(args)})")


def _batched_kernel(ge: GraphEmitter, eqn: Eqn, name: str) -> str:
    """`name`, or its `_parallel` form for a large batch of several matrices."""
    a = eqn.inputs[0].aval
    batch = math.prod(a.shape[:-2])
    parallel = ge.mod.parallel_ok and batch > 1 and a.size >= PARALLEL_MIN_ELEMENTS
    return f"{name}_parallel" if parallel else name


def _cholesky(ge: GraphEmitter, eqn: Eqn) -> None:
    _call(ge, eqn, "cholesky_batch", ("lower",))


def _triangular_solve(ge: GraphEmitter, eqn: Eqn) -> None:
    _call(ge, eqn, _batched_kernel(ge, eqn, "triangular_solve_batch"),
          ("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal"),
          "cpu.lib.triangular")


def _lu(ge: GraphEmitter, eqn: Eqn) -> None:
    _call(ge, eqn, _batched_kernel(ge, eqn, "lu_batch"), ("transposed",), "cpu.lib.lu")


def _qr(ge: GraphEmitter, eqn: Eqn) -> None:
    _call(ge, eqn, "qr_batch", ("full_matrices",))


def _eigh(ge: GraphEmitter, eqn: Eqn) -> None:
    _call(ge, eqn, "eigh_batch", ("lower",))


def _svd(ge: GraphEmitter, eqn: Eqn) -> None:
    if eqn.params["compute_uv"]:
        _call(ge, eqn, "svd_batch", ("full_matrices",))
    else:
        _call(ge, eqn, "svdvals_batch")


EMITTERS: dict[str, Any] = {
    "cholesky": _cholesky, "triangular_solve": _triangular_solve, "lu": _lu, "qr": _qr,
    "eigh": _eigh, "svd": _svd,
}

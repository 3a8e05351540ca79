"""Non-contiguous inputs read in place (strided) where the kernel only indexes them.

Every module is compiled for C-contiguous inputs (numba's 'C' layout: constant inner
strides, so LLVM vectorizes the loops). An input that the host function reads only
element by element (`arg0[i0, i1]`, never sliced, reshaped, aliased or handed to a
library kernel such as BLAS, sort or FFT, which need contiguous memory) may also be
read through its strides: the module then gets a second compile, for numba's 'A'
layout at those inputs, made only when a call needs it, so the common C-contiguous
case compiles once (and the source is read for those inputs only then, too). The
launcher calls the version it picked directly (not through numba's dispatcher, which
would compile a third for a read-only array). Donated inputs are never read strided:
outputs are written into them.

Measured on a 2-core machine, 4096x4096 float32, in place against copy + kernel
(`bench/bench_strided.py`, one run at load 2): `x[::2]` (1-d) through `x * 2 + 1`
0.43x, a broadcast row 0.48x, `x.T` 0.87x (a row max over it 0.78x); rows reversed
through a row max 0.97x. A transposed view is walked against its memory order either
way (the copy reads it so too), so it is read in place as well: the same time or
less, without the copy's memory. (Runs under a load of 8-11 gave 0.8-1.0x for `x.T`;
one gave 1.8x, copy faster: noise on this shared machine, not seen again.)
The 'A' kernel of a reduction does not vectorize (19 against 4 ms on contiguous
data), so it runs only for calls that pass a strided view, and inputs a float sum or
product folds are copied (the vectorized fold rounds differently).

A second compile costs far more than one small copy: the 'A' version is compiled once
the copies it would have saved add up to `IN_PLACE_MIN_BYTES` (at once for a view that
large, such as a broadcast view whose copy would not fit in memory), or at once when
this process already has it. With `compile_mode="async"` it compiles in a background
thread while calls go on copying, unless one view alone is that large (its copy may
not even fit in memory): that call waits for the compile.
"""

from __future__ import annotations

import ast
import functools
import threading
import warnings
from typing import Any, Callable

import numpy as np

from ...config import config

# lib/prefetch.py's helpers of streamed arrays, which any layout may be given
PREFETCHERS = frozenset({"prefetch_ahead", "prefetch_rows_ahead"})
IN_PLACE_MIN_BYTES = 64 << 20  # copies saved before the strided version pays its compile


@functools.lru_cache(maxsize=64)  # (a new batch size: the same module, another executable)
def elementwise_inputs(source: str, host: str, params: tuple[tuple[str, int], ...]
                       ) -> frozenset[str]:
    """The input parameters (name, rank) that function `host` of `source` only reads
    element by element: every use is `name[e0, ..., e{rank-1}]`, a load with no slice,
    outside any loop that folds a float sum or product (see `_reassociating`), or passes
    it to a function of the module (a parallel nest's kernel) that does the same."""
    module = _ModuleUses(source)
    return frozenset(name for name, rank in params
                     if module.only_element_reads(host, name, rank))


class _ModuleUses:
    """The names each function of a generated module uses, found in one walk of each."""

    def __init__(self, source: str):
        self.functions = {node.name: node for node in ast.parse(source).body
                          if isinstance(node, ast.FunctionDef)}
        self._uses: dict[str, dict[str, list[tuple[ast.Name, ast.AST, ast.For | None]]]] = {}
        self._folds: dict[int, bool] = {}
        self._decided: dict[tuple[str, str], bool] = {}

    def only_element_reads(self, function: str, param: str, rank: int) -> bool:
        key = (function, param)
        if key not in self._decided:
            self._decided[key] = True  # (a recursive call: decided by the other uses)
            self._decided[key] = all(self._element_use(name, parent, loop, rank)
                                     for name, parent, loop in self.uses(function).get(param, []))
        return self._decided[key]

    def uses(self, function: str) -> dict[str, list[tuple[ast.Name, ast.AST, ast.For | None]]]:
        """Each Name in `function`, with its parent node and innermost enclosing `for`."""
        if function not in self._uses:
            found: dict[str, list] = {}
            stack: list[tuple[ast.AST, Any, Any]] = [(self.functions[function], None, None)]
            while stack:
                node, parent, loop = stack.pop()
                if isinstance(node, ast.Name):
                    found.setdefault(node.id, []).append((node, parent, loop))
                inner = node if isinstance(node, ast.For) else loop
                stack.extend((child, node, inner) for child in ast.iter_child_nodes(node))
            self._uses[function] = found
        return self._uses[function]

    def _element_use(self, name: ast.Name, parent: ast.AST, loop: ast.For | None,
                     rank: int) -> bool:
        if _called(parent, PREFETCHERS):  # (they follow the strides: any layout will do)
            return True
        if (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                and parent.func.id in self.functions and name in parent.args):
            callee = self.functions[parent.func.id].args.args
            position = parent.args.index(name)
            return position < len(callee) and self.only_element_reads(
                parent.func.id, callee[position].arg, rank)
        return _element_load(parent, name, rank) and not (loop and self._reassociating(loop))

    def _reassociating(self, loop: ast.For) -> bool:
        """Whether `loop` updates an accumulator through a reassociating helper
        (`add_reassoc`...): LLVM vectorizes that fold, into several partial sums, only
        over C-contiguous reads, so a strided read would round differently (a sequential
        sum: 1.4% off for 2**21 float32 values where the vectorized one is exact) and
        its result would depend on the input's layout. Such inputs are copied."""
        if id(loop) not in self._folds:
            self._folds[id(loop)] = any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                and n.func.id.endswith("_reassoc") for n in ast.walk(loop))
        return self._folds[id(loop)]


def _called(parent: ast.AST | None, functions: frozenset[str]) -> bool:
    return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and \
        parent.func.id in functions


def _element_load(parent: ast.AST | None, name: ast.Name, rank: int) -> bool:
    if not (isinstance(parent, ast.Subscript) and parent.value is name
            and isinstance(parent.ctx, ast.Load)):
        return False
    index = parent.slice
    indices = index.elts if isinstance(index, ast.Tuple) else [index]
    return len(indices) == rank and not any(isinstance(n, ast.Slice)
                                            for i in indices for n in ast.walk(i))


class StridedHost:
    """The host function compiled for strided inputs, made when calls need it, and
    counters of what the launcher did with non-contiguous inputs (`copies`, `in_place`).

    `inputs`: the host's array inputs (name, rank); which of them the host reads element
    by element is found from `source` at the first non-contiguous input (not at code
    generation: most programs never see one). `signature(names)` is the host's
    signature with those inputs in 'A' layout; `compile(signature)` returns its entry
    point; `in_memory(signature)` says whether this process compiled it already."""

    def __init__(self, source: str, function: str, inputs: tuple[tuple[str, int], ...],
                 signature: Callable[[frozenset[str]], tuple], compile: Callable[[tuple], Any],
                 in_memory: Callable[[tuple], bool]):
        self._module = (source, function, inputs)
        self._signature_of, self._compile_signature = signature, compile
        self._in_memory = in_memory
        self._host: Any = None
        self._failed = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.copied_bytes = 0
        self.copies = 0
        self.in_place = 0

    def readable(self) -> frozenset[str]:
        """The inputs the host only reads element by element (`elementwise_inputs`)."""
        return elementwise_inputs(*self._module)

    def admit(self, a: np.ndarray, name: str) -> bool:
        """Whether non-contiguous ndarray `a`, host input `name`, is read in place;
        False: the caller copies it (`copy`)."""
        if not a.flags.aligned or name not in self.readable():
            return False
        if self._host is None and not self._make_ready(a.nbytes):
            return False
        self.in_place += 1
        return True

    def copy(self, a: Any) -> np.ndarray:
        """An aligned C-contiguous copy of `a`, counted."""
        out = np.array(a, order="C")
        self.copies += 1
        self.copied_bytes += out.nbytes
        return out

    def host(self) -> Any:
        return self._host

    def _make_ready(self, nbytes: int) -> bool:
        """Compile the strided version when it pays (see the module doc); whether it
        serves this call."""
        if self._failed:
            return False
        if self._in_memory(self._signature()):  # (another batch size compiled it: a lookup)
            self._compile()
        elif self.copied_bytes + nbytes < IN_PLACE_MIN_BYTES:
            return False
        elif config.compile_mode == "async" and nbytes < IN_PLACE_MIN_BYTES:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._compile, daemon=True,
                                                    name="tracer strided compile")
                    self._thread.start()
        else:
            self._compile()
        return self._host is not None

    def _signature(self) -> tuple:
        return self._signature_of(self.readable())

    def _compile(self) -> None:
        try:
            self._host = self._compile_signature(self._signature())
        except Exception as e:  # noqa: BLE001 - the contiguous version still serves
            self._failed = True
            warnings.warn(f"tracer: the strided version of a module failed to compile, "
                          f"non-contiguous inputs are copied: {e}", RuntimeWarning, stacklevel=2)

"""`HostCallback`: a user's Python function as a callback op holds it.

The op's operands are flat arrays; the callback rebuilds the user's pytree of
arguments (`args`, `kwargs`), calls the function, flattens what it returns and
checks it against the declared results: the structure, then each leaf's shape
and dtype. A mismatch raises a `TracerError` naming the callback, both shapes and
the line that created it. Every backend calls a `HostCallback` the same way
(`cb(*arrays) -> list of arrays`), so that check is written once.

A `HostCallback` is a hashable param, equal to another for the same function object,
argument structure and declared results: CSE merges two `pure_callback`s of one
function on the same operands (effectful callbacks never merge).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import ShapedArray, SourceInfo, user_source
from ..errors import DTypeError, ShapeError, TracerTypeError
from ..tree_util import tree_flatten, tree_unflatten

_SCALARS = (bool, int, float, complex)


class HostCallback:
    """`fn(*args, **kwargs)` called on arrays; results checked against `result_avals`."""

    __slots__ = ("fn", "in_tree", "out_tree", "result_avals", "source", "what", "_flat_args",
                 "_one_result")

    def __init__(self, fn: Callable[..., Any], in_tree: Any, out_tree: Any,
                 result_avals: Sequence[ShapedArray], what: str,
                 source: SourceInfo | None = None):
        self.fn = fn
        self.in_tree = in_tree            # treedef of (args, kwargs)
        self.out_tree = out_tree          # treedef of the declared results (None: ignored)
        self.result_avals = tuple(result_avals)
        self.what = what                  # "pure_callback", "io_callback", ...
        self.source = source or user_source()
        # the common cases, called without building pytrees: positional array arguments,
        # one array result
        n = in_tree.num_leaves
        self._flat_args = tree_unflatten(in_tree, list(range(n))) == (tuple(range(n)), {})
        self._one_result = out_tree is not None and out_tree == tree_flatten(0)[1]

    @property
    def name(self) -> str:
        return getattr(self.fn, "__qualname__", None) or type(self.fn).__name__

    def _key(self) -> tuple:
        # the function by identity (it may be unhashable, or equal to another function)
        return (id(self.fn), self.in_tree, self.out_tree, self.result_avals, self.what)

    def __eq__(self, other: object) -> bool:
        return type(other) is HostCallback and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:  # (how HLO text shows the param)
        return f'"{self.name}"'

    def __repr__(self) -> str:
        return f"HostCallback({self.what}, {self.name})"

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        if self._flat_args:
            out = self.fn(*arrays)
        else:
            args, kwargs = tree_unflatten(self.in_tree, list(arrays))
            out = self.fn(*args, **kwargs)
        if self.out_tree is None:
            return []
        if self._one_result and type(out) is np.ndarray:
            return [self._leaf(out, self.result_avals[0], 0)]
        return self.check(out)

    def check(self, out: Any) -> list[np.ndarray]:
        """`out` flattened and checked against the declared results."""
        leaves, tree = tree_flatten(out)
        if tree != self.out_tree:
            raise self._error(TracerTypeError, f"returned {tree} where the declared "
                              f"result_shape_dtypes is {self.out_tree}")
        return [self._leaf(x, a, k) for k, (x, a) in
                enumerate(zip(leaves, self.result_avals, strict=True))]

    def _leaf(self, x: Any, aval: ShapedArray, k: int) -> np.ndarray:
        if isinstance(x, _SCALARS) and not aval.ndim:  # a Python number: as NumPy would cast
            return np.asarray(x, dtype=aval.dtype)
        arr = np.asarray(x)
        where = f"result {k}" if len(self.result_avals) > 1 else "a result"
        if arr.shape != aval.shape:
            raise self._error(ShapeError, f"returned {where} of shape {arr.shape} (dtype "
                              f"{arr.dtype}); declared {aval}, shape {aval.shape}")
        if arr.dtype != aval.dtype:
            raise self._error(DTypeError, f"returned {where} of dtype {arr.dtype} (shape "
                              f"{arr.shape}); declared {aval} (convert it, e.g. "
                              f"np.asarray(r, np.{aval.dtype.name}))")
        return arr

    def _error(self, cls: type, msg: str) -> Exception:
        at = f"\n  at {self.source}" if self.source is not None else ""
        return cls(f"{self.what}: callback {self.name!r} {msg}{at}")

"""The op record: everything about an op's meaning in one place.

An `Op` holds its shape rule (raises a clear `TracerError`), its NumPy reference
implementation (the executable spec, following the seeds), its doc, and slots for
the JVP / transpose / batching rules that `tracer.transforms` fills. Backends keep
their own emitter tables keyed by op name.

Calling convention (autodidax): arrays positional, params keyword-only and
hashable (tuples, not lists; sub-computations as `Graph`s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, TracerError, TracerValueError, add_user_line
from ..tracing import Tracer, bind

ShapeRule = Callable[..., "ShapedArray | Sequence[ShapedArray]"]


@dataclass(eq=False)
class Op:
    """One operation of the seeds' Operation Semantics."""

    name: str                      # the public `tracer.ops` name ("add", "dot_general")
    shape_rule: ShapeRule          # (*avals, **params) -> aval(s); raises TracerError
    impl: Callable[..., Any]       # (*ndarrays, **params) -> ndarray(s): the reference
    doc: str                       # the seed rule and a tiny example
    hlo_name: str = ""             # XLA's spelling in HLO text ("multiply", "compare")
    family: str = "other"          # "unary" | "binary" | "compare" | "shape" | ...
    multiple_results: bool = False
    differentiable: bool = True
    linear: bool = False
    effectful: bool = False        # never merged, folded or dropped by passes (RNG, collectives)
    io_effect: bool = False        # talks to the host: kept even inside an unused loop, never
                                   # recomputed by checkpoint (callbacks, infeed/outfeed)
    jvp: Callable[..., Any] | None = None
    transpose: Callable[..., Any] | None = None
    batch: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        self.hlo_name = self.hlo_name or self.name.replace("_", "-")

    def abstract_eval(self, *avals: ShapedArray, **params: Any) -> tuple[ShapedArray, ...]:
        out = self.shape_rule(*avals, **params)
        return tuple(out) if self.multiple_results else (out,)

    def bind(self, *args: Any, **params: Any) -> Any:
        try:
            return bind(self, args, params)
        except TracerError as e:  # e.g. an operand that is not an array: name op and line
            if not getattr(e, "_tracer_context", False) and len(e.args) == 1 \
                    and not str(e.args[0]).startswith(f"{self.name}:"):
                e.args = (f"{self.name}: {e.args[0]}",)
            add_user_line(e)
            raise

    def __repr__(self) -> str:
        return f"Op({self.name})"


OPS: dict[str, Op] = {}


def define_op(name: str, *, shape: ShapeRule, impl: Callable[..., Any], doc: str,
              **fields: Any) -> Op:
    """Create and register an op; names are unique."""
    if name in OPS:
        raise ValueError(f"op {name!r} is already defined")
    op = Op(name, shape, impl, doc, **fields)
    OPS[name] = op
    return op


def dtype_of(x: Any) -> np.dtype | None:
    """dtype of an array/tracer/NumPy scalar; None for a Python scalar (weak)."""
    if dtypes.is_python_scalar(x):
        return None
    if isinstance(x, Tracer) and x.weak_type:
        return None
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def harmonize(*args: Any) -> list[Any]:
    """Give weak operands (Python scalars, weak tracers) the strong operands' dtype.

    `tracer.ops` does not promote: strong operands of different dtypes stay as
    they are and the op's shape rule rejects them. Weak ones just take the
    dtype of the first strong operand (seed rule: "a Python scalar takes the
    other operand's dtype"). When every operand is weak they meet at NEP 50's
    weak result dtype and stay weak.
    """
    if not args:
        return []
    strong = next((d for d in map(dtype_of, args) if d is not None), None)
    if strong is None:
        target, _ = dtypes.result_type(*args)
        return [_as_weak(a, target) for a in args]
    return [_as_dtype(a, strong) if dtype_of(a) is None else a for a in args]


_PY_TYPE = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def _as_weak(x: Any, dtype: np.dtype) -> Any:
    if isinstance(x, Tracer):
        return x if x.dtype == dtype else OPS["convert_element_type"].bind(
            x, new_dtype=dtype, weak_type=True)
    return _PY_TYPE[dtypes.kind(dtype)](x)  # a Python scalar of the target kind stays weak


def _as_dtype(x: Any, dtype: np.dtype) -> Any:
    if isinstance(x, Tracer):
        if x.dtype == dtype:
            return x  # already right: no convert eqn (it stays weak, which only mixes to strong)
        return OPS["convert_element_type"].bind(x, new_dtype=dtype, weak_type=False)
    if dtypes.is_complex(np.asarray(x).dtype) and not dtypes.is_complex(dtype):
        raise DTypeError(f"cannot use complex scalar {x!r} with {dtype} operands")
    try:
        return np.asarray(x, dtype=dtype)
    except OverflowError:
        raise TracerValueError(f"Python scalar {x!r} is out of range for the other "
                               f"operand's dtype {dtype}") from None


def same_dtypes(*avals: ShapedArray) -> np.dtype:
    """The shared dtype of `avals`; DTypeError naming all of them otherwise."""
    first = avals[0].dtype
    if any(a.dtype != first for a in avals[1:]):
        raise DTypeError(f"operands must share a dtype, got "
                         f"{', '.join(str(a) for a in avals)} (cast with "
                         f"convert_element_type, or use tracer.numpy which promotes)")
    return first


def all_weak(*avals: ShapedArray) -> bool:
    return all(a.weak_type for a in avals)

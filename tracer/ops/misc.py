"""Tuples, composites, custom calls and optimization barriers (XLA's Tuple, GetTupleElement,
CompositeCall, CustomCall, OptimizationBarrier).

- Tuples: the IR is flat, as in JAX: a tuple-shaped result is one output var per
  element (multi-result eqns), and the HLO printer shows them as XLA does, a
  tuple shape plus `get-tuple-element`. So `tuple(*xs)` is a Python tuple of its
  elements and `get_tuple_element(t, i)` checks that `i` is a static in-range
  index and takes the element.
- `composite`: a named `call` that carries its decomposition; its semantics are
  the decomposition's (seed CompositeCall), so transformations and backends
  inline it.
- `custom_call`: a user function registered with `register_custom_call(name, fn)`,
  called as `fn(*outs, *ins)` on arrays: the seed's `void f(void* out, void** in)`
  with the buffers as arrays. `fn` is any Python function, free of side effects and
  idempotent: the cpu backend compiles it with numba when it can and calls it from
  compiled code, and otherwise calls it as a host callback (numba object mode); the
  interpreter calls it directly.
- `optimization_barrier`: identity on its operands that passes do not fold or
  look through.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import Graph, ShapedArray
from ..errors import ParamError, TracerIndexError, TracerTypeError, TracerValueError
from ..interpret import run_graph
from ..tree_util import tree_flatten, tree_unflatten
from .common import check_arity, check_avals, wrapper_error
from .control_util import _aval, _cast, _trace
from .registry import define_op

__all__ = ["tuple", "get_tuple_element", "composite", "custom_call", "register_custom_call",
           "optimization_barrier"]

_tuple = tuple  # (this module's `tuple` is the seed op)


# ---------------------------------------------------------------------------- tuples
def tuple(*elements: Any) -> _tuple[Any, ...]:  # the seed's name
    """Tuple(elements...): a tuple of differently shaped values.

    Seed rule: taken apart with GetTupleElement. The IR is flat, so the tuple is a
    Python tuple of its elements. Example: t = tuple(v, s); get_tuple_element(t, 1) -> s.
    """
    return _tuple(elements)


def get_tuple_element(tuple_data: Sequence[Any], index: int) -> Any:
    """GetTupleElement(tuple_data, index): the element at a compile-time-constant index.

    Seed rule: the index is a constant so shape inference knows the result type;
    the output shape is the element's. Example: get_tuple_element((v, s), 1) -> s.
    """
    if not isinstance(tuple_data, (_tuple, list)):
        raise wrapper_error(TracerTypeError, "get_tuple_element",
                            f"tuple_data must be a tuple (from ops.tuple or a multi-result "
                            f"op), got {type(tuple_data).__name__}")
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise wrapper_error(TracerTypeError, "get_tuple_element",
                            f"index must be a static Python int, got {type(index).__name__}")
    if not 0 <= index < len(tuple_data):
        raise wrapper_error(TracerIndexError, "get_tuple_element",
                            f"index {index} is out of range for a tuple of "
                            f"{len(tuple_data)} elements")
    return tuple_data[index]


# ------------------------------------------------------------------------- composite
def _composite_shape(*avals: ShapedArray, to_apply: Graph, name: str,
                     attributes: _tuple, version: int) -> _tuple[ShapedArray, ...]:
    check_avals(f"arguments of composite {name!r}", to_apply.in_avals, avals)
    return to_apply.out_avals


def _composite_impl(*args: np.ndarray, to_apply: Graph, name: str, attributes: _tuple,
                    version: int) -> list[np.ndarray]:
    return _cast(run_graph(to_apply, list(args)), to_apply.out_avals)


composite_p = define_op(
    "composite", shape=_composite_shape, impl=_composite_impl, hlo_name="call",
    family="control", multiple_results=True,
    doc="CompositeCall(inputs, name, composite_attributes, decomposition, version): a "
        "named op whose semantics are exactly its decomposition computation (replacing "
        "it by the decomposition changes nothing). HLO: call ..., is_composite=true. "
        "Example: composite('my.square', lambda x: x * x, 3.) -> 9.")


def _attribute_items(attributes: dict[str, Any] | None) -> _tuple[_tuple[str, Any], ...]:
    items = []
    for key, value in sorted((attributes or {}).items()):
        if isinstance(value, np.ndarray):
            value = _tuple(value.tolist()) if value.ndim else value.item()
        try:
            hash(value)
        except TypeError:
            raise wrapper_error(ParamError, "composite", f"attribute {key!r} = {value!r} "
                                f"must be hashable (a number, string, tuple or array)") from None
        items.append((str(key), value))
    return _tuple(items)


def composite(name: str, fun: Callable[..., Any], *operands: Any,
              attributes: dict[str, Any] | None = None, version: int = 0) -> Any:
    """Call `fun(*operands)` as the composite `name` (seed CompositeCall).

    The decomposition `fun` is traced once and kept in the eqn; `attributes` (a
    dict of hashable values) and `version` are carried into the HLO text.

    >>> composite("my.softplus", lambda x: log1p(exp(x)), x, version=1)
    """
    if not isinstance(name, str) or not name:
        raise wrapper_error(ParamError, "composite", f"name must be a non-empty string, "
                            f"got {name!r}")
    if not isinstance(version, (int, np.integer)) or version < 0:
        raise wrapper_error(ParamError, "composite", f"version must be an int >= 0, "
                            f"got {version!r}")
    check_arity("composite", "fun", fun, len(operands))
    leaves, tree = tree_flatten(operands)
    graph, consts, out_tree = _trace(lambda *xs: fun(*tree_unflatten(tree, xs)),
                                     [_aval(x) for x in leaves], name, "composite", "fun")
    outs = composite_p.bind(*leaves, *consts, to_apply=graph, name=name,
                            attributes=_attribute_items(attributes), version=int(version))
    return tree_unflatten(out_tree, outs)


# ----------------------------------------------------------------------- custom_call
# name -> every function registered under it; an eqn names (target, revision), so code
# traced before a re-registration keeps calling the function it was traced with.
CUSTOM_CALL_TARGETS: dict[str, list[Callable[..., None]]] = {}


def register_custom_call(name: str, fn: Callable[..., None]) -> None:
    """Register `fn` as the custom-call target `name`.

    `fn(*outs, *ins)` receives the result buffers (zero-filled arrays of the declared
    shapes) and then the operands as arrays, and writes the results: the seed's
    `void f(void* out, void** in)`. Any Python callable works: one numba can compile
    runs natively in the cpu backend's code, any other (SciPy, a C extension) runs as
    a host callback, with the same calling convention. It must be free of side
    effects and idempotent. Registering a name again replaces it for code traced
    afterwards.

    >>> def erf_target(out, x):
    ...     out[...] = scipy.special.erf(x)
    >>> tr.register_custom_call("erf", erf_target)
    >>> ops.custom_call("erf", [x], tr.ShapedArray(x.shape, x.dtype))
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise wrapper_error(ParamError, "register_custom_call",
                            f"name must be a Python identifier, got {name!r}")
    if not callable(fn):
        raise wrapper_error(TracerTypeError, "register_custom_call",
                            f"fn must be callable, got {type(fn).__name__}")
    CUSTOM_CALL_TARGETS.setdefault(name, []).append(fn)


def custom_call_target(target: str, revision: int) -> Callable[..., None]:
    return CUSTOM_CALL_TARGETS[target][revision]


def _result_avals(result_shape: Any) -> _tuple[_tuple[ShapedArray, ...], bool]:
    """(avals, single) from a ShapedArray / object with shape and dtype, or a sequence."""
    single = hasattr(result_shape, "shape") and hasattr(result_shape, "dtype")
    items = [result_shape] if single else list(result_shape)
    avals = []
    for item in items:
        if not (hasattr(item, "shape") and hasattr(item, "dtype")):
            raise wrapper_error(TracerTypeError, "custom_call", f"result_shape must be a "
                                f"ShapedArray (or anything with .shape and .dtype) or a "
                                f"sequence of them, got {item!r}")
        avals.append(ShapedArray(_tuple(int(n) for n in item.shape), np.dtype(item.dtype)))
    return _tuple(avals), single


def _custom_call_shape(*avals: ShapedArray, target: str, revision: int,
                       out_avals: _tuple[ShapedArray, ...]) -> _tuple[ShapedArray, ...]:
    return out_avals


def _custom_call_impl(*args: np.ndarray, target: str, revision: int,
                      out_avals: _tuple[ShapedArray, ...]) -> list[np.ndarray]:
    outs = [np.zeros(a.shape, a.dtype) for a in out_avals]
    ins = []
    for x in args:  # read-only views: a target that writes its inputs fails loudly
        view = np.asarray(x).view()
        view.flags.writeable = False
        ins.append(view)
    custom_call_target(target, revision)(*outs, *ins)
    return outs


custom_call_p = define_op(
    "custom_call", shape=_custom_call_shape, impl=_custom_call_impl, hlo_name="custom-call",
    family="other", multiple_results=True,
    doc="CustomCall(target_name, args..., shape): calls the registered function "
        "`target_name` with the result buffer(s) and the argument buffers (`void f(void* "
        "out, void** in)`); it must be side-effect free and idempotent. Example: a target "
        "writing z[0, 0] = x[1] + y[1, 0] on x=[1, 2], y=[[10, 20, 30], [40, 50, 60]] "
        "gives 42 there.")


def custom_call(target: str, operands: Sequence[Any], result_shape: Any) -> Any:
    """Call the function registered as `target` (`register_custom_call`) on `operands`.

    `result_shape` is a ShapedArray (or anything with `.shape` and `.dtype`, such as
    an array) for one result, or a sequence of them for several.

    >>> custom_call("myfunc", [x, y], ShapedArray((3, 3), np.float32))
    """
    if target not in CUSTOM_CALL_TARGETS:
        known = ", ".join(sorted(CUSTOM_CALL_TARGETS)) or "none"
        raise wrapper_error(TracerValueError, "custom_call", f"no custom-call target "
                            f"{target!r} is registered (registered: {known}); use "
                            f"tr.register_custom_call({target!r}, fn) first")
    if hasattr(operands, "shape") or not hasattr(operands, "__len__"):
        raise wrapper_error(TracerTypeError, "custom_call", f"operands must be a list or "
                            f"tuple of arrays, got {type(operands).__name__}")
    out_avals, single = _result_avals(result_shape)
    check_arity("custom_call", f"target {target!r} (called as fn(*outs, *ins))",
                CUSTOM_CALL_TARGETS[target][-1], len(out_avals) + len(operands))
    outs = custom_call_p.bind(*operands, target=target,
                              revision=len(CUSTOM_CALL_TARGETS[target]) - 1,
                              out_avals=out_avals)
    return outs[0] if single else _tuple(outs)


# -------------------------------------------------------------- optimization_barrier
optimization_barrier_p = define_op(
    "optimization_barrier", shape=lambda *avals: avals, impl=lambda *xs: list(xs),
    hlo_name="opt-barrier", family="other", multiple_results=True, effectful=True,
    linear=True,
    doc="OptimizationBarrier(operands...): the identity on its operands that no "
        "optimization moves computations across; all inputs are evaluated before any op "
        "that uses its outputs. Example: optimization_barrier((x, y)) -> (x, y).")


def optimization_barrier(operand: Any) -> Any:
    """The identity on a pytree of arrays that passes neither fold, merge nor move
    computations across (seed OptimizationBarrier)."""
    leaves, tree = tree_flatten(operand)
    return tree_unflatten(tree, optimization_barrier_p.bind(*leaves))

"""An op's params from the attributes `tracer.hlo` printed for it.

The printer leaves out what it can: params that are `None` or `()`, params the
result type already shows (`shape`, `new_sizes`, `new_dtype`), window fields at
their defaults, and it renames `broadcast_dimensions` to XLA's `dimensions`. This
module puts each back, so the rebuilt eqn prints the same text and runs the same.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import Graph, ShapedArray
from ..ops.conv import ConvDimensionNumbers
from ..ops.registry import Op
from ..errors import TracerValueError
from ..tree_util import PyTreeDef, tree_structure
from .hlo_values import DTYPES_BY_HLO_NAME, Cursor, Ref, TreeText, Word

# Params without a default that are None when the printer leaves them out; every other
# omitted param without a default is ().
_NONE_WHEN_OMITTED = frozenset({"axis_name", "replica_groups",
                                "precision", "preferred_element_type", "timeout"})
_DTYPE_PARAMS = frozenset({"dtype", "new_dtype", "preferred_element_type"})
_WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation",
                  "window_dilation")
# Params a shape rule takes through **kwargs, so its signature does not list them.
_KWARG_PARAMS: dict[str, tuple[str, ...]] = {
    "gather": ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim",
               "operand_batching_dims", "start_indices_batching_dims"),
    "scatter": ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
                "index_vector_dim", "input_batching_dims", "scatter_indices_batching_dims"),
    "reduce_window": _WINDOW_PARAMS,
    "select_and_scatter": _WINDOW_PARAMS,
}
_MISSING = inspect.Parameter.empty


def param_defaults(op: Op) -> dict[str, Any]:
    """Every param `op` takes, with its default (`_MISSING` where it has none)."""
    defaults: dict[str, Any] = {}
    for p in inspect.signature(op.shape_rule).parameters.values():
        if p.kind == p.KEYWORD_ONLY:
            defaults[p.name] = p.default
    for name in _KWARG_PARAMS.get(op.name, ()):
        defaults[name] = _MISSING
    return defaults


def build_params(op: Op, attrs: dict[str, Any], out_avals: tuple[ShapedArray, ...],
                 regions: Callable[[str], Graph], cursor: Cursor) -> dict[str, Any]:
    """The params dict: printed attributes first (in printed order), then the rest."""
    defaults = param_defaults(op)
    params: dict[str, Any] = {}
    for key, raw in attrs.items():
        name = "broadcast_dimensions" if key == "dimensions" and \
            "broadcast_dimensions" in defaults else key
        if name not in defaults:
            raise cursor.error(f"{op.name} has no parameter {key!r}")
        params[name] = _convert(name, raw, regions)
    for name, default in defaults.items():
        if name not in params:
            params[name] = _omitted(op, name, default, out_avals)
    return params


def _convert(name: str, raw: Any, regions: Callable[[str], Graph]) -> Any:
    if name in _DTYPE_PARAMS and isinstance(raw, Word):
        return DTYPES_BY_HLO_NAME[raw.text]
    if name == "dimension_numbers":
        return ConvDimensionNumbers(*(_plain(v, regions) for v in raw))
    return _plain(raw, regions)


def _plain(raw: Any, regions: Callable[[str], Graph]) -> Any:
    if isinstance(raw, TreeText):
        return tree_from_text(raw.text)
    if isinstance(raw, Word):
        return raw.text
    if isinstance(raw, Ref):
        return regions(raw.name)
    if isinstance(raw, tuple):
        return tuple(_plain(v, regions) for v in raw)
    return raw


def _omitted(op: Op, name: str, default: Any, out_avals: tuple[ShapedArray, ...]) -> Any:
    """The value of a param the printer did not write."""
    result = out_avals[-1] if op.name == "rng_bit_generator" else out_avals[0]
    if name in ("shape", "new_sizes"):
        return result.shape
    if name == "new_dtype":
        return result.dtype
    if default is not _MISSING:
        return default
    return None if name in _NONE_WHEN_OMITTED else ()


def parse_window(text: str, cursor: Cursor) -> dict[str, tuple]:
    """`size=2x2 stride=1x2 pad=0_1x0_0 lhs_dilate=... rhs_dilate=...` → window params;
    a field left out holds its default (stride and dilations 1, no padding)."""
    fields = dict(f.split("=", 1) for f in text.split())
    if "size" not in fields:
        raise cursor.error("window={...} has no size=")
    size = _dims(fields["size"], cursor)
    ones = (1,) * len(size)
    pad = ((0, 0),) * len(size)
    if "pad" in fields:
        pad = tuple(tuple(_dims(p, cursor, "_")) for p in fields["pad"].split("x"))
    return {"window_dimensions": size,
            "window_strides": _dims(fields["stride"], cursor) if "stride" in fields else ones,
            "padding": pad,
            "base_dilation": _dims(fields["lhs_dilate"], cursor) if "lhs_dilate" in fields
            else ones,
            "window_dilation": _dims(fields["rhs_dilate"], cursor) if "rhs_dilate" in fields
            else ones}


def _dims(text: str, cursor: Cursor, sep: str = "x") -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in text.split(sep)) if text else ()
    except ValueError:
        raise cursor.error(f"window field {text!r} is not {sep}-separated ints") from None


def composite_params(attrs: dict[str, Any], frontend: str, cursor: Cursor,
                     regions: Callable[[str], Graph]) -> dict[str, Any]:
    """A composite's params from `frontend_attributes={composite.name="..", ...}`."""
    inner = Cursor(frontend, cursor.where)
    fields: dict[str, Any] = {}
    while not inner.at_end():
        key = inner.token()
        inner.expect("=")
        if key == "composite.attributes":
            fields[key] = _composite_attributes(inner)
        else:
            fields[key] = inner.quoted()
        inner.accept(",")
    try:
        return {"to_apply": regions(attrs["to_apply"].name), "name": fields["composite.name"],
                "attributes": fields["composite.attributes"],
                "version": int(fields["composite.version"])}
    except (KeyError, AttributeError, ValueError):
        raise cursor.error("a composite needs to_apply=%region and composite.name, "
                           "composite.attributes and composite.version") from None


def _composite_attributes(inner: Cursor) -> tuple[tuple[str, Any], ...]:
    inner.expect("{")
    items = []
    while not inner.accept("}"):
        key = inner.token()
        inner.expect("=")
        items.append((key, _plain(inner.value(), _no_regions)))
        inner.accept(",")
    return tuple(items)


def _no_regions(name: str) -> Graph:
    raise ValueError(f"a composite attribute cannot refer to %{name}")


def tree_from_text(text: str) -> PyTreeDef:
    """The PyTreeDef whose repr is `PyTreeDef(text)`: leaves `*` in tuples, lists, dicts
    with string keys and None (other node types print their class and are refused)."""
    try:
        structure = ast.literal_eval(text.replace("*", "0"))
    except (ValueError, SyntaxError):
        raise TracerValueError(f"HLO parser: cannot rebuild the pytree PyTreeDef({text})") from None
    return tree_structure(structure)


def literal_array(value: Any, aval: ShapedArray, cursor: Cursor) -> np.ndarray:
    """A constant's NumPy value, checked against its printed shape."""
    try:
        arr = np.array(value, dtype=aval.dtype)
        return arr.reshape(aval.shape)
    except (ValueError, TypeError, OverflowError):
        raise cursor.error(f"the constant does not fit {aval}") from None

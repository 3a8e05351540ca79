"""Pytree structures as JSON, for the header of a serialized export.

Tuples, lists, dicts with string keys and None travel; other node types (named
tuples, registered classes) need their Python class and are refused at export.
"""

from __future__ import annotations

from typing import Any

from ..errors import TracerTypeError, TracerValueError
from ..tree_util import PyTreeDef, tree_flatten, tree_unflatten


def encode_tree(treedef: PyTreeDef) -> Any:
    """JSON-ready form of `treedef`: leaves are their index."""
    return _encode(tree_unflatten(treedef, range(treedef.num_leaves)))


def _encode(node: Any) -> Any:
    if node is None or type(node) is int:
        return node
    if type(node) in (tuple, list):
        return {type(node).__name__: [_encode(c) for c in node]}
    if type(node) is dict and all(isinstance(k, str) for k in node):
        return {"dict": [[k, _encode(v)] for k, v in node.items()]}
    raise TracerTypeError(f"export: cannot serialize a pytree node of type "
                          f"{type(node).__name__}; use tuples, lists, dicts with string "
                          f"keys and None for arguments and results")


def decode_tree(data: Any) -> PyTreeDef:
    """The PyTreeDef `encode_tree` wrote."""
    try:
        return tree_flatten(_decode(data))[1]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        raise TracerValueError(f"export: corrupt pytree structure {data!r}") from None


def _decode(data: Any) -> Any:
    if data is None or type(data) is int:
        return data
    (kind, children), = data.items()
    if kind == "tuple":
        return tuple(_decode(c) for c in children)
    if kind == "list":
        return [_decode(c) for c in children]
    if kind == "dict":
        return {str(k): _decode(v) for k, v in children}
    raise ValueError(kind)

"""`tr.tree`: the short names of `tracer.tree_util` (JAX's `jax.tree`)."""

from __future__ import annotations

from typing import Any, Callable

from .tree_util import (IsLeaf, PyTree, tree_flatten, tree_leaves, tree_map, tree_reduce,
                        tree_structure, tree_unflatten)

__all__ = ["map", "leaves", "structure", "flatten", "unflatten", "reduce"]


def map(f: Callable[..., Any], tree: PyTree, *rest: PyTree,  # noqa: A001 - JAX's name
        is_leaf: IsLeaf = None) -> PyTree:
    return tree_map(f, tree, *rest, is_leaf=is_leaf)


def leaves(tree: PyTree, is_leaf: IsLeaf = None) -> list[Any]:
    return tree_leaves(tree, is_leaf)


def structure(tree: PyTree, is_leaf: IsLeaf = None) -> Any:
    return tree_structure(tree, is_leaf)


def flatten(tree: PyTree, is_leaf: IsLeaf = None) -> tuple[list[Any], Any]:
    return tree_flatten(tree, is_leaf)


def unflatten(treedef: Any, leaves: Any) -> PyTree:
    return tree_unflatten(treedef, leaves)


def reduce(function: Callable[[Any, Any], Any], tree: PyTree, *initializer: Any,  # noqa: A001
           is_leaf: IsLeaf = None) -> Any:
    return tree_reduce(function, tree, *initializer, is_leaf=is_leaf)

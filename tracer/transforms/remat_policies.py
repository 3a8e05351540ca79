"""`checkpoint_policies` (JAX's `jax.checkpoint_policies`) and `checkpoint_name`.

A policy is called as `policy(op, *avals, **params)` for each op of the primal
computation that the backward pass needs (directly or through what it recomputes),
and answers whether its result may be saved (a residual stored by the forward pass)
rather than recomputed. `checkpoint` (tracer/transforms/checkpoint.py) asks it while
splitting a checkpointed function into its forward and backward halves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..ops.ad_ops import checkpoint_name_p
from ..ops.registry import Op
from ..tree_util import tree_map

__all__ = ["checkpoint_policies", "checkpoint_name"]

Policy = Callable[..., bool]


def checkpoint_name(x: Any, name: str) -> Any:
    """`x` (any pytree) unchanged, named `name` for the checkpoint policies
    `save_only_these_names` / `save_any_names_but_these` (JAX's `checkpoint_name`)."""
    return tree_map(lambda leaf: checkpoint_name_p.bind(leaf, name=name), x)


def everything_saveable(*_: Any, **__: Any) -> bool:
    """Save every intermediate: as if there were no checkpoint."""
    return True


def nothing_saveable(*_: Any, **__: Any) -> bool:
    """Save nothing but the arguments; recompute the rest (checkpoint's default)."""
    return False


@dataclass(frozen=True)
class DotsSaveable:
    """Save the results of matrix products (dot_general, and convolutions unless
    `only_if_no_batch_dims`, which saves only dot_generals without batch dims)."""
    only_if_no_batch_dims: bool

    def __call__(self, op: Op, *avals: Any, **params: Any) -> bool:
        if self.only_if_no_batch_dims:
            return op.name == "dot_general" and not params.get("lhs_batch_dims") \
                and not params.get("rhs_batch_dims")
        return op.name in ("dot_general", "conv_general_dilated")


@dataclass(frozen=True)
class SaveOnlyTheseNames:
    """Save the values named (by `checkpoint_name`) with one of `names`, nothing else."""
    names: frozenset[str]

    def __call__(self, op: Op, *avals: Any, **params: Any) -> bool:
        return op is checkpoint_name_p and params["name"] in self.names


@dataclass(frozen=True)
class SaveAnyNamesButThese:
    """Save every named value except those named with one of `names`."""
    names: frozenset[str]

    def __call__(self, op: Op, *avals: Any, **params: Any) -> bool:
        return op is checkpoint_name_p and params["name"] not in self.names


@dataclass(frozen=True)
class SaveFromBothPolicies:
    """Save what either policy saves."""
    first: Policy
    second: Policy

    def __call__(self, op: Op, *avals: Any, **params: Any) -> bool:
        return bool(self.first(op, *avals, **params) or self.second(op, *avals, **params))


class checkpoint_policies:  # noqa: N801 - JAX's name for this namespace
    """JAX's policy names, for `checkpoint(fun, policy=...)`."""

    everything_saveable = staticmethod(everything_saveable)
    nothing_saveable = staticmethod(nothing_saveable)
    dots_saveable = checkpoint_dots = DotsSaveable(False)
    dots_with_no_batch_dims_saveable = checkpoint_dots_with_no_batch_dims = DotsSaveable(True)

    @staticmethod
    def save_only_these_names(*names: str) -> Policy:
        return SaveOnlyTheseNames(frozenset(names))

    @staticmethod
    def save_any_names_but_these(*names: str) -> Policy:
        return SaveAnyNamesButThese(frozenset(names))

    @staticmethod
    def save_anything_except_these_names(*names: str) -> Policy:
        """As JAX defines it (jax/_src/ad_checkpoint.py): saves everything, the names
        given included."""
        return everything_saveable

    @staticmethod
    def save_from_both_policies(first: Policy, second: Policy) -> Policy:
        return SaveFromBothPolicies(first, second)

"""Graph → Graph passes, each followed by `typecheck` when checks are on."""

from .pipeline import optimize

__all__ = ["optimize"]

"""`tracer.ad_checkpoint`: JAX's `jax.ad_checkpoint` names in one place."""

from .transforms import checkpoint, checkpoint_name, checkpoint_policies, print_saved_residuals

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals"]

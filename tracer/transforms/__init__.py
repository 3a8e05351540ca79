"""Transformations as Graph -> Graph rewrites: forward mode (`jvp_graph`), partial
evaluation, transposition, reverse mode (`vjp_graph`), batching (`vmap_graph`), and
the user-facing wrappers built on them."""

from . import control_rules, while_rules  # noqa: F401  (attach the control-flow AD rules)
from ..ops.ad_ops import stop_gradient
from .api_ad import grad, hessian, jacfwd, jacrev, jvp, linearize, value_and_grad, vjp
from .api_vmap import vmap
from .batching import vmap_graph
from .checkpoint import checkpoint, checkpoint_name, checkpoint_policies, lower_ad_ops
from .custom import custom_jvp, custom_vjp
from .saved_residuals import print_saved_residuals
from .jvp import jvp_graph
from .transpose import transpose_graph
from .vjp import linearize_graph, vjp_graph

jacobian = jacrev  # JAX's alias

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "custom_jvp", "custom_vjp",
           "grad", "hessian", "jacfwd", "jacobian", "jacrev", "jvp", "print_saved_residuals",
           "jvp_graph", "linearize", "linearize_graph", "lower_ad_ops", "stop_gradient",
           "transpose_graph", "value_and_grad", "vjp", "vjp_graph", "vmap", "vmap_graph"]
